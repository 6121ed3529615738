// The apiVersion and kind of a write's body against the resource of its URL, as
// kube-apiserver 1.32 answers them: absent ones are the URL's; a built-in's body that does not
// decode into the URL's kind is the decoder's 400, one of another version the handler's 400;
// a custom resource's body of another version is that 400, of another kind its validator's
// 422; a patch that changes them is refused as the patcher and the validators refuse it.
#include "store_support.hpp"

#include <vck/sandbox/storage/object_store.hpp>

#include <doctest.h>

#include <cstdint>
#include <string>

using namespace vck::sandbox;
using vck::client::PatchType;
using namespace vck::sandbox::store_test;
namespace json = boost::json;

namespace {


/// Serves VolumeManagers (vck.intelai.org/v1alpha1) from a CRD that keeps every field.
void serve_volume_managers(ObjectStore& store) {
    store.create(crds, "", parse(R"({
      "metadata": {"name": "volumemanagers.vck.intelai.org"},
      "spec": {"group": "vck.intelai.org", "scope": "Namespaced",
        "names": {"plural": "volumemanagers", "singular": "volumemanager", "kind": "VolumeManager"},
        "versions": [{"name": "v1alpha1", "served": true, "storage": true,
          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})"));
}

/// {"apiVersion": .., "kind": .., "metadata": {"name": name}}, without the empty ones.
json::value typed(std::string_view api_version, std::string_view kind, std::string_view name = "x") {
    auto v = named(name);
    if (!api_version.empty()) v.as_object()["apiVersion"] = api_version;
    if (!kind.empty()) v.as_object()["kind"] = kind;
    return v;
}

struct TypeMetaCase {
    const char* what;
    ResourceId url;
    const char* api_version;
    const char* kind;
    std::int64_t code;
    const char* message;
};

const char* const legacy = R"(in scheme "pkg/api/legacyscheme/scheme.go:30")";

} // namespace

TEST_CASE("type meta: a body that is not of the URL's resource is refused on create and update as 1.32 refuses it") {
    const std::string no_pod_in_apps = std::string(R"(Pod in version "v1" cannot be handled as a Pod: no kind "Pod" is registered for version "apps/v1" )") + legacy;
    const std::string lower_pod = std::string(R"(pod in version "v1" cannot be handled as a Pod: no kind "pod" is registered for version "v1" )") + legacy;
    const std::string vm_as_pod = std::string(R"(VolumeManager in version "v1alpha1" cannot be handled as a Pod: no kind "VolumeManager" is registered for version "vck.intelai.org/v1alpha1" )") + legacy;
    const TypeMetaCase cases[] = {
        {"a ConfigMap to secrets", secrets, "v1", "ConfigMap", 400,
         R"(ConfigMap in version "v1" cannot be handled as a Secret: converting (v1.ConfigMap) to (core.Secret): unknown conversion)"},
        {"a Deployment to configmaps", configmaps, "apps/v1", "Deployment", 400,
         R"(Deployment in version "v1" cannot be handled as a ConfigMap: converting (v1.Deployment) to (core.ConfigMap): unknown conversion)"},
        {"a Pod of apps/v1", pods, "apps/v1", "Pod", 400, no_pod_in_apps.c_str()},
        {"a lower-case kind", pods, "v1", "pod", 400, lower_pod.c_str()},
        {"a custom resource to pods", pods, "vck.intelai.org/v1alpha1", "VolumeManager", 400, vm_as_pod.c_str()},
        {"an events.k8s.io Event to the core events", core_events, "events.k8s.io/v1", "Event", 400,
         "the API version in the data (events.k8s.io/v1) does not match the expected API version (v1)"},
        {"a Pod to volumemanagers", volumemanagers, "v1", "Pod", 400,
         "the API version in the data (v1) does not match the expected API version (vck.intelai.org/v1alpha1)"},
        {"another version of the custom resource", volumemanagers, "vck.intelai.org/v2", "VolumeManager", 400,
         "the API version in the data (vck.intelai.org/v2) does not match the expected API version (vck.intelai.org/v1alpha1)"},
        {"another kind of the custom resource's version", volumemanagers, "vck.intelai.org/v1alpha1", "SomethingElse", 422,
         R"(SomethingElse.vck.intelai.org "x" is invalid: kind: Invalid value: "SomethingElse": must be VolumeManager)"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.what);
        ObjectStore store;
        serve_volume_managers(store);
        auto body = typed(c.api_version, c.kind);
        auto created = refusal([&] { store.create(c.url, "default", body); });
        CHECK(created.code == c.code);
        CHECK(created.message == c.message);
        CHECK(refusal([&] { store.create(c.url, "default", body, DryRun::All); }).message == c.message);
        // The same body PUT over an object of the URL's own kind.
        auto resource = store.find_resource(c.url.group, c.url.version, c.url.resource);
        REQUIRE(resource);
        if (c.url.resource == "events") continue;  // Events are validated elsewhere
        auto own = typed(resource->api_version(), resource->kind);
        if (c.url.resource == "pods")
            own.as_object()["spec"] = parse(R"({"containers": [{"name": "c", "image": "busybox"}]})");
        store.create(c.url, "default", own);
        auto updated = refusal([&] { store.update(c.url, "default", "x", body); });
        CHECK(updated.code == c.code);
        CHECK(updated.message == c.message);
    }
}

TEST_CASE("type meta: an absent apiVersion or kind is the URL's") {
    ObjectStore store;
    serve_volume_managers(store);
    CHECK(store.create(configmaps, "default", named("a")).at("kind") == "ConfigMap");
    CHECK(store.create(configmaps, "default", typed("", "ConfigMap", "b")).at("apiVersion") == "v1");
    CHECK(store.create(configmaps, "default", typed("v1", "", "c")).at("kind") == "ConfigMap");
    CHECK(store.create(volumemanagers, "default", typed("", "VolumeManager", "d")).at("apiVersion") == "vck.intelai.org/v1alpha1");
    CHECK(store.create(volumemanagers, "default", typed("vck.intelai.org/v1alpha1", "", "e")).at("kind") == "VolumeManager");
    // A kind alone keeps the URL's version, so it is checked against the URL's kind.
    CHECK(refusal([&] { store.create(secrets, "default", typed("", "ConfigMap", "f")); }).message ==
          R"(ConfigMap in version "v1" cannot be handled as a Secret: converting (v1.ConfigMap) to (core.Secret): unknown conversion)");
    CHECK(refusal([&] { store.create(configmaps, "default", typed("apps/v1", "", "g")); }).message ==
          std::string(R"(ConfigMap in version "v1" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "apps/v1" )") + legacy);
}

TEST_CASE("type meta: a patch that changes apiVersion or kind is refused as the patcher and validators refuse it") {
    ObjectStore store;
    serve_volume_managers(store);
    store.create(secrets, "default", named("s"));
    auto r = refusal([&] { store.patch(secrets, "default", "s", PatchType::Merge, parse(R"({"kind": "ConfigMap"})")); });
    CHECK(r.code == 422);
    // The patcher names the patched object (its JSON) and no kind.
    CHECK(r.message.rfind(R"( "" is invalid: patch: Invalid value: "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\")", 0) == 0);
    CHECK(r.message.find(R"(: converting (v1.ConfigMap) to (core.Secret): unknown conversion)") != std::string::npos);
    CHECK(r.details->causes.at(0).field == "patch");
    auto j = refusal([&] {
        store.patch(secrets, "default", "s", PatchType::Json, parse(R"([{"op": "replace", "path": "/apiVersion", "value": "apps/v1"}])"));
    });
    CHECK(j.code == 422);
    CHECK(j.message.find(std::string(R"(: no kind "Secret" is registered for version "apps/v1" )") + legacy) != std::string::npos);

    store.create(volumemanagers, "default", named("v"));
    auto k = refusal([&] { store.patch(volumemanagers, "default", "v", PatchType::Merge, parse(R"({"kind": "Other"})")); });
    CHECK(k.code == 422);
    CHECK(k.message == R"(Other.vck.intelai.org "v" is invalid: kind: Invalid value: "Other": must be VolumeManager)");
    auto v = refusal([&] {
        store.patch(volumemanagers, "default", "v", PatchType::Merge, parse(R"({"apiVersion": "vck.intelai.org/v9"})"));
    });
    CHECK(v.message == R"(VolumeManager.vck.intelai.org "v" is invalid: apiVersion: Invalid value: "vck.intelai.org/v9": must be vck.intelai.org/v1alpha1)");
    // Patches that leave them alone go through.
    CHECK_NOTHROW(store.patch(secrets, "default", "s", PatchType::Merge, parse(R"({"metadata": {"labels": {"a": "b"}}})")));
    CHECK_NOTHROW(store.patch(volumemanagers, "default", "v", PatchType::Merge, parse(R"({"spec": {"a": 1}})")));
}
