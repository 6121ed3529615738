// ObjectStore: create, get, update, patch and the registry strategies (names, namespaces,
// conflicts, status subresource, generation, secrets, binding, CRDs and their schemas).
#include "store_support.hpp"

#include <vck/sandbox/storage/object_store.hpp>

#include <doctest.h>

#include <regex>
#include <string>

using namespace vck::sandbox;
using vck::client::PatchType;
using namespace vck::sandbox::store_test;
namespace json = boost::json;

namespace {

/// A pod the server accepts (it needs a container with an image) named `name`.
json::value pod_named(std::string_view name) {
    return json::object{{"metadata", json::object{{"name", name}}},
                        {"spec", json::object{{"containers", json::array{json::object{{"name", "c"}, {"image", "busybox"}}}}}}};
}

json::value volume_manager_crd() {
    return parse(R"({
      "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
      "metadata": {"name": "volumemanagers.vck.intelai.org"},
      "spec": {
        "group": "vck.intelai.org", "scope": "Namespaced",
        "names": {"plural": "volumemanagers", "singular": "volumemanager", "kind": "VolumeManager",
                  "shortNames": ["vm"]},
        "versions": [{
          "name": "v1alpha1", "served": true, "storage": true,
          "subresources": {"status": {}},
          "additionalPrinterColumns": [{"name": "State", "type": "string", "jsonPath": ".status.state"}],
          "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {
              "spec": {"type": "object", "required": ["volumeConfigs"], "properties": {
                "state": {"type": "string", "default": "Pending"},
                "volumeConfigs": {"type": "array", "items": {"type": "object", "properties": {
                  "id": {"type": "string"}, "replicas": {"type": "integer", "minimum": 1}}}}}},
              "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}
        }]
      }
    })");
}

/// The same CRD served as v1beta1 too (v1alpha1 stays the storage version).
json::value volume_manager_crd_with_beta() {
    auto crd = volume_manager_crd();
    auto v2 = crd.at("spec").at("versions").at(0);
    v2.as_object()["name"] = "v1beta1";
    v2.as_object()["storage"] = false;
    crd.at("spec").at("versions").as_array().push_back(v2);
    return crd;
}

} // namespace

TEST_CASE("the four standard namespaces exist from the start") {
    ObjectStore store;
    for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
        auto obj = store.get(namespaces, "", ns);
        CHECK(obj.at("status").at("phase") == "Active");
        CHECK(obj.at("kind") == "Namespace");
    }
}

TEST_CASE("create fills in uid, creationTimestamp, resourceVersion and the namespace") {
    ObjectStore store;
    auto before = store.resource_version();
    auto cm = store.create(configmaps, "default", named("settings"));
    CHECK(meta_of(cm, "namespace") == "default");
    CHECK(std::regex_match(meta_of(cm, "uid"),
                           std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
    CHECK(std::regex_match(meta_of(cm, "creationTimestamp"), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
    CHECK(std::stoll(meta_of(cm, "resourceVersion")) == before + 1);
    CHECK_FALSE(cm.at("metadata").as_object().contains("generation"));  // a ConfigMap has none on 1.32
    CHECK(cm.at("apiVersion") == "v1");
    CHECK(cm.at("kind") == "ConfigMap");
    CHECK(store.get(configmaps, "default", "settings") == cm);
}

TEST_CASE("generateName appends five random characters from [a-z0-9]") {
    ObjectStore store;
    auto a = store.create(configmaps, "default", parse(R"({"metadata": {"generateName": "job-"}})"));
    auto b = store.create(configmaps, "default", parse(R"({"metadata": {"generateName": "job-"}})"));
    CHECK(std::regex_match(meta_of(a, "name"), std::regex("job-[a-z0-9]{5}")));
    CHECK(meta_of(a, "name") != meta_of(b, "name"));
    auto long_prefix = std::string(70, 'a');
    auto c = store.create(configmaps, "default", json::object{{"metadata", json::object{{"generateName", long_prefix}}}});
    CHECK(meta_of(c, "name").size() == 63);
}

TEST_CASE("creating an object twice is 409 AlreadyExists with the real message") {
    ObjectStore store;
    store.create(pods, "default", pod_named("web"));
    auto st = refusal([&] { store.create(pods, "default", pod_named("web")); });
    CHECK(st.code == 409);
    CHECK(st.reason == "AlreadyExists");
    CHECK(st.message == R"(pods "web" already exists)");
    REQUIRE(st.details);
    CHECK(st.details->name == "web");
    CHECK(st.details->kind == "pods");
}

TEST_CASE("creating in a namespace that does not exist is 404 namespaces not found") {
    ObjectStore store;
    auto st = refusal([&] { store.create(pods, "nowhere", pod_named("web")); });
    CHECK(st.code == 404);
    CHECK(st.reason == "NotFound");
    CHECK(st.message == R"(namespaces "nowhere" not found)");
    CHECK(st.details->kind == "namespaces");
}

TEST_CASE("a body whose namespace differs from the URL's is 400 BadRequest") {
    ObjectStore store;
    auto st = refusal([&] {
        store.create(pods, "default", parse(R"({"metadata": {"name": "web", "namespace": "kube-system"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})"));
    });
    CHECK(st.code == 400);
    CHECK(st.reason == "BadRequest");
    CHECK(st.message == "the namespace of the provided object does not match the namespace sent on the request");
}

TEST_CASE("an invalid name is 422 Invalid worded like the apiserver") {
    ObjectStore store;
    auto st = refusal([&] { store.create(configmaps, "default", named("Bad_Name")); });
    CHECK(st.code == 422);
    CHECK(st.reason == "Invalid");
    CHECK(st.message ==
          "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 "
          "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
          "alphanumeric character (e.g. 'example.com', regex used for validation is "
          "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
    REQUIRE(st.details);
    CHECK(st.details->kind == "ConfigMap");
    REQUIRE(st.details->causes.size() == 1);
    CHECK(st.details->causes[0].reason == "FieldValueInvalid");
    CHECK(st.details->causes[0].field == "metadata.name");

    auto too_long = refusal([&] { store.create(configmaps, "default", named(std::string(254, 'a'))); });
    CHECK(too_long.message.find("must be no more than 253 characters") != std::string::npos);

    auto no_name = refusal([&] { store.create(configmaps, "default", json::object{}); });
    CHECK(no_name.message ==
          "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required");

    auto ns = refusal([&] { store.create(namespaces, "", named("a.b")); });
    CHECK(ns.message.find("a lowercase RFC 1123 label must consist of") != std::string::npos);
}

TEST_CASE("cluster-scoped objects drop the namespace they were sent with") {
    ObjectStore store;
    auto node = store.create(nodes, "", parse(R"({"metadata": {"name": "n1", "namespace": "default"}})"));
    CHECK_FALSE(node.at("metadata").as_object().contains("namespace"));
    CHECK(store.get(nodes, "", "n1").at("metadata").at("name") == "n1");
}

TEST_CASE("get of a missing object is 404 with the resource and name") {
    ObjectStore store;
    auto st = refusal([&] { store.get(pods, "default", "ghost"); });
    CHECK(st.code == 404);
    CHECK(st.message == R"(pods "ghost" not found)");
    auto crd = refusal([&] { store.get(crds, "", "ghosts.example.com"); });
    CHECK(crd.message == R"(customresourcedefinitions.apiextensions.k8s.io "ghosts.example.com" not found)");
    CHECK(crd.details->group == "apiextensions.k8s.io");
}

TEST_CASE("an unknown resource is 404 the server could not find the requested resource") {
    ObjectStore store;
    auto st = refusal([&] { store.get({"", "v1", "gadgets"}, "default", "x"); });
    CHECK(st.code == 404);
    CHECK(st.message == "the server could not find the requested resource");
}

TEST_CASE("an update with a stale resourceVersion is 409 Conflict with the real message") {
    ObjectStore store;
    auto cm = store.create(configmaps, "default", named("c"));
    auto first = cm;
    first.as_object()["data"] = json::object{{"a", "1"}};
    store.update(configmaps, "default", "c", first);
    auto stale = cm;
    stale.as_object()["data"] = json::object{{"a", "2"}};
    auto st = refusal([&] { store.update(configmaps, "default", "c", stale); });
    CHECK(st.code == 409);
    CHECK(st.reason == "Conflict");
    CHECK(st.message == "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please "
                        "apply your changes to the latest version and try again");
    CHECK(store.get(configmaps, "default", "c").at("data").at("a") == "1");
}

TEST_CASE("an update without a resourceVersion is unconditional") {
    ObjectStore store;
    store.create(configmaps, "default", named("c"));
    auto body = parse(R"({"metadata": {"name": "c"}, "data": {"k": "v"}})");
    auto out = store.update(configmaps, "default", "c", body);
    CHECK(out.at("data").at("k") == "v");
}

TEST_CASE("updating a missing object is 404") {
    ObjectStore store;
    auto st = refusal([&] { store.update(configmaps, "default", "nope", named("nope")); });
    CHECK(st.code == 404);
    CHECK(st.message == R"(configmaps "nope" not found)");
}

TEST_CASE("an update whose body names another object is 400") {
    ObjectStore store;
    store.create(configmaps, "default", named("c"));
    auto st = refusal([&] { store.update(configmaps, "default", "c", named("d")); });
    CHECK(st.code == 400);
    CHECK(st.message == "the name of the object (d) does not match the name on the URL (c)");
}

TEST_CASE("every write bumps the one global resourceVersion, and a no-op update writes nothing") {
    ObjectStore store;
    auto a = store.create(configmaps, "default", named("a"));
    auto b = store.create(secrets, "default", named("b"));
    CHECK(std::stoll(meta_of(b, "resourceVersion")) == std::stoll(meta_of(a, "resourceVersion")) + 1);
    auto same = store.update(configmaps, "default", "a", a);
    CHECK(meta_of(same, "resourceVersion") == meta_of(a, "resourceVersion"));
    CHECK(store.resource_version() == std::stoll(meta_of(b, "resourceVersion")));
}

TEST_CASE("system metadata cannot be overwritten by an update") {
    ObjectStore store;
    auto cm = store.create(configmaps, "default", named("c"));
    auto body = cm;
    body.at("metadata").as_object()["creationTimestamp"] = "1999-01-01T00:00:00Z";
    body.at("metadata").as_object()["generation"] = 42;
    body.as_object()["data"] = json::object{{"x", "y"}};
    auto out = store.update(configmaps, "default", "c", body);
    CHECK(meta_of(out, "creationTimestamp") == meta_of(cm, "creationTimestamp"));
    CHECK_FALSE(out.at("metadata").as_object().contains("generation"));
    CHECK(meta_of(out, "uid") == meta_of(cm, "uid"));
}

TEST_CASE("built-in kinds get kube-apiserver's defaults on create and update; what the client set is kept") {
    ObjectStore store;
    const ResourceId pvs{"", "v1", "persistentvolumes"}, pvcs{"", "v1", "persistentvolumeclaims"},
        storageclasses{"storage.k8s.io", "v1", "storageclasses"};
    auto pod = store.create(pods, "default", parse(R"({"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "a", "image": "busybox"}, {"name": "b", "image": "registry:5000/x:1.2"},
                       {"name": "c", "image": "x:latest", "imagePullPolicy": "Never"}],
        "initContainers": [{"name": "i", "image": "x@sha256:0123"}]}})"));
    const auto& spec = pod.at("spec");
    CHECK(spec.at("restartPolicy") == "Always");
    CHECK(spec.at("dnsPolicy") == "ClusterFirst");
    CHECK(spec.at("schedulerName") == "default-scheduler");
    CHECK(spec.at("terminationGracePeriodSeconds") == 30);
    CHECK(spec.at("enableServiceLinks") == true);
    CHECK(spec.at("securityContext") == json::object());
    CHECK(spec.at("containers").at(0).at("imagePullPolicy") == "Always");        // no tag
    CHECK(spec.at("containers").at(1).at("imagePullPolicy") == "IfNotPresent");  // a tag (the port is none)
    CHECK(spec.at("containers").at(2).at("imagePullPolicy") == "Never");         // set by the client
    CHECK(spec.at("initContainers").at(0).at("imagePullPolicy") == "IfNotPresent");  // a digest
    for (const auto& c : spec.at("containers").as_array()) {
        CHECK(c.at("terminationMessagePath") == "/dev/termination-log");
        CHECK(c.at("terminationMessagePolicy") == "File");
    }
    auto never = store.create(pods, "default", parse(R"({"metadata": {"name": "n"}, "spec": {"restartPolicy": "Never",
        "containers": [{"name": "a", "image": "a:1"}]}})"));
    CHECK(never.at("spec").at("restartPolicy") == "Never");
    // Probes: thresholds and timings, and an httpGet's path and scheme.
    auto probed = store.create(pods, "default", parse(R"({"metadata": {"name": "probed"}, "spec": {"containers": [{
        "name": "a", "image": "a:1", "readinessProbe": {"httpGet": {"port": 80}},
        "livenessProbe": {"tcpSocket": {"port": 80}, "periodSeconds": 3}}]}})"));
    const auto& readiness = probed.at("spec").at("containers").at(0).at("readinessProbe");
    CHECK(readiness == parse(R"({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
        "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})"));
    CHECK(probed.at("spec").at("containers").at(0).at("livenessProbe").at("periodSeconds") == 3);

    auto ns = store.create(namespaces, "", named("team-a"));
    CHECK(ns.at("metadata").at("labels").at("kubernetes.io/metadata.name") == "team-a");
    auto relabelled = ns;
    relabelled.at("metadata").as_object()["labels"] = json::object{{"kubernetes.io/metadata.name", "other"}};
    CHECK(store.update(namespaces, "", "team-a", relabelled).at("metadata").at("labels").at(
              "kubernetes.io/metadata.name") == "team-a");

    auto pv = store.create(pvs, "", parse(R"({"metadata": {"name": "pv"}, "spec": {"capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/x"}}})"));
    CHECK(pv.at("spec").at("persistentVolumeReclaimPolicy") == "Retain");
    CHECK(pv.at("spec").at("volumeMode") == "Filesystem");
    auto pvc = store.create(pvcs, "default", parse(R"({"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}}}})"));
    CHECK(pvc.at("spec").at("volumeMode") == "Filesystem");
    auto sc = store.create(storageclasses, "", parse(R"({"metadata": {"name": "sc"}, "provisioner": "x"})"));
    CHECK(sc.at("reclaimPolicy") == "Delete");
    CHECK(sc.at("volumeBindingMode") == "Immediate");
    auto wait = store.create(storageclasses, "", parse(R"({"metadata": {"name": "wait"}, "provisioner": "x",
        "volumeBindingMode": "WaitForFirstConsumer"})"));
    CHECK(wait.at("volumeBindingMode") == "WaitForFirstConsumer");
}

TEST_CASE("generation increments only when something other than metadata and status changes") {
    ObjectStore store;
    store.create(crds, "", volume_manager_crd());
    auto vm = store.create(volumemanagers, "default",
                           parse(R"({"metadata": {"name": "v"}, "spec": {"volumeConfigs": [{"id": "a", "replicas": 1}]}})"));
    CHECK(vm.at("metadata").at("generation") == 1);
    auto labelled = vm;
    labelled.at("metadata").as_object()["labels"] = json::object{{"x", "y"}};
    labelled = store.update(volumemanagers, "default", "v", labelled);
    CHECK(labelled.at("metadata").at("generation") == 1);
    auto status = labelled;
    status.as_object()["status"] = json::object{{"state", "Running"}};
    status = store.update(volumemanagers, "default", "v", status, "status");
    CHECK(status.at("metadata").at("generation") == 1);
    auto spec = status;
    spec.at("spec").at("volumeConfigs").as_array()[0].as_object()["replicas"] = 2;
    spec = store.update(volumemanagers, "default", "v", spec);
    CHECK(spec.at("metadata").at("generation") == 2);
}

TEST_CASE("generation exists only on the kinds that keep it on a 1.32 server") {
    ObjectStore store;
    auto crd = store.create(crds, "", volume_manager_crd());
    CHECK(crd.at("metadata").at("generation") == 1);
    auto vm = store.create(volumemanagers, "default", named("v"));
    CHECK(vm.at("metadata").at("generation") == 1);
    auto pod = store.create(pods, "default",
                            parse(R"({"metadata": {"name": "p", "generation": 7}, "spec": {"containers": [{"name": "c", "image": "a"}]}})"));
    CHECK_FALSE(pod.at("metadata").as_object().contains("generation"));
    auto changed = pod;
    changed.at("spec").at("containers").as_array()[0].as_object()["image"] = "b";
    changed = store.update(pods, "default", "p", changed);
    CHECK_FALSE(changed.at("metadata").as_object().contains("generation"));
    CHECK_FALSE(store.create(secrets, "default", named("o")).at("metadata").as_object().contains("generation"));
    CHECK_FALSE(store.create(nodes, "", named("o")).at("metadata").as_object().contains("generation"));
}

TEST_CASE("metadata the server refuses is refused on create, update and patch, worded as kube-apiserver words it") {
    struct Case {
        const char* what;
        const char* metadata;  // merged into {"name": "x"}
        const char* message;
    };
    const Case cases[] = {
        {"a label value over 63 characters", R"({"labels": {"k": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}})",
         R"(metadata.labels: Invalid value: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": must be no more than 63 characters)"},
        {"a label value with a space", R"({"labels": {"k": "a b"}})",
         R"(metadata.labels: Invalid value: "a b": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'))"},
        {"a label key with two slashes", R"({"labels": {"a/b/c": "v"}})",
         R"(metadata.labels: Invalid value: "a/b/c": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName'))"},
        {"a label key with an upper-case prefix", R"({"labels": {"Example.com/k": "v"}})",
         R"(metadata.labels: Invalid value: "Example.com/k": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'))"},
        {"an empty label key", R"({"labels": {"": "v"}})",
         R"(metadata.labels: Invalid value: "": name part must be non-empty)"},
        {"an annotation key that is no qualified name", R"({"annotations": {"not valid": "v"}})",
         R"(metadata.annotations: Invalid value: "not valid": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'))"},
        {"an owner reference without a uid", R"({"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p"}]})",
         R"(metadata.ownerReferences.uid: Invalid value: "": uid must not be empty)"},
        {"an owner reference without a version", R"({"ownerReferences": [{"apiVersion": "apps/", "kind": "Pod", "name": "p", "uid": "u"}]})",
         R"(metadata.ownerReferences.apiVersion: Invalid value: "apps/": version must not be empty)"},
        {"a finalizer that is no qualified name", R"({"finalizers": ["a/b/c"]})",
         R"(metadata.finalizers: Invalid value: "a/b/c": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName'))"},
        {"a finalizer without a domain on a built-in kind", R"({"finalizers": ["cleanup"]})",
         R"(metadata.finalizers[0]: Invalid value: "cleanup": name is neither a standard finalizer name nor is it fully qualified)"},
        {"orphan and foregroundDeletion together", R"({"finalizers": ["orphan", "foregroundDeletion"]})",
         R"(metadata.finalizers: Invalid value: []string{"orphan", "foregroundDeletion"}: finalizer orphan and foregroundDeletion cannot be both set)"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.what);
        ObjectStore store;
        auto body = parse(R"({"metadata": {"name": "x"}})");
        const auto metadata = parse(c.metadata);
        for (const auto& [k, v] : metadata.as_object()) body.at("metadata").as_object()[k] = v;
        auto st = refusal([&] { store.create(configmaps, "default", body); });
        CHECK(st.code == 422);
        CHECK(st.message == std::string(R"(ConfigMap "x" is invalid: )") + c.message);
        // The same metadata on an update and a patch of a valid object.
        auto ok = store.create(configmaps, "default", named("x"));
        auto changed = ok;
        for (const auto& [k, v] : metadata.as_object()) changed.at("metadata").as_object()[k] = v;
        CHECK(refusal([&] { store.update(configmaps, "default", "x", changed); }).message == st.message);
        auto patch = json::value{{"metadata", metadata}};
        CHECK(refusal([&] { store.patch(configmaps, "default", "x", PatchType::Merge, patch); }).message == st.message);
        CHECK(store.get(configmaps, "default", "x") == ok);  // nothing of it kept
    }
    // Custom resources and CRDs take finalizers without a domain (a warning on a real server).
    ObjectStore store;
    store.create(crds, "", volume_manager_crd());
    CHECK_NOTHROW(store.create(volumemanagers, "default", parse(R"({"metadata": {"name": "v", "finalizers": ["cleanup"]}})")));
    CHECK(refusal([&] {
              store.create(volumemanagers, "default", parse(R"({"metadata": {"name": "w", "labels": {"k": "a b"}}})"));
          }).code == 422);
    // Annotations: capitals in the key are fine (checked lowercased), 256 KiB in total is not.
    CHECK_NOTHROW(store.create(configmaps, "default", parse(R"({"metadata": {"name": "caps", "annotations": {"Example.com/Key": "v"}}})")));
    auto big = parse(R"({"metadata": {"name": "big"}})");
    big.at("metadata").as_object()["annotations"] = json::object{{"k", std::string(256 * 1024, 'x')}};
    auto st = refusal([&] { store.create(configmaps, "default", big); });
    CHECK(st.message == R"(ConfigMap "big" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes)");
}

TEST_CASE("a main-resource update ignores status changes where a status subresource exists") {
    ObjectStore store;
    auto pod = store.create(pods, "default", pod_named("p"));
    CHECK(pod.at("status").at("phase") == "Pending");
    auto body = pod;
    body.as_object()["status"] = json::object{{"phase", "Running"}};
    body.at("spec").at("containers").at(0).as_object()["image"] = "busybox:1.37";  // a spec change pods allow
    auto out = store.update(pods, "default", "p", body);
    CHECK(out.at("status").at("phase") == "Pending");
    CHECK(out.at("spec").at("containers").at(0).at("image") == "busybox:1.37");
}

TEST_CASE("a status update ignores everything but status") {
    ObjectStore store;
    auto pod = store.create(pods, "default", pod_named("p"));
    auto body = pod;
    body.as_object()["status"] = json::object{{"phase", "Running"}};
    body.as_object()["spec"] = json::object{{"nodeName", "n1"}};
    body.at("metadata").as_object()["labels"] = json::object{{"sneaky", "yes"}};
    auto out = store.update(pods, "default", "p", body, "status");
    CHECK(out.at("status").at("phase") == "Running");
    CHECK(out.at("spec") == pod.at("spec"));
    CHECK_FALSE(out.at("metadata").as_object().contains("labels"));
}

TEST_CASE("a status update on a resource without a status subresource is 404") {
    ObjectStore store;
    auto cm = store.create(configmaps, "default", named("c"));
    auto st = refusal([&] { store.update(configmaps, "default", "c", cm, "status"); });
    CHECK(st.code == 404);
}

TEST_CASE("merge, JSON and strategic patches apply to the stored object") {
    ObjectStore store;
    store.create(pods, "default", parse(R"({"metadata": {"name": "p", "labels": {"a": "1"}},
        "spec": {"containers": [{"name": "main", "image": "x"}, {"name": "side", "image": "y"}]}})"));
    auto merged = store.patch(pods, "default", "p", PatchType::Merge, parse(R"({"metadata": {"labels": {"b": "2"}}})"));
    CHECK(merged.at("metadata").at("labels").at("a") == "1");
    CHECK(merged.at("metadata").at("labels").at("b") == "2");
    auto jp = store.patch(pods, "default", "p", PatchType::Json,
                          parse(R"([{"op": "remove", "path": "/metadata/labels/a"}])"));
    CHECK_FALSE(jp.at("metadata").at("labels").as_object().contains("a"));
    auto smp = store.patch(pods, "default", "p", PatchType::StrategicMerge,
                           parse(R"({"spec": {"containers": [{"name": "side", "image": "z"}]}})"));
    REQUIRE(smp.at("spec").at("containers").as_array().size() == 2);
    CHECK(smp.at("spec").at("containers").at(1).at("image") == "z");
}

TEST_CASE("a patch carrying a stale resourceVersion is a conflict") {
    ObjectStore store;
    store.create(configmaps, "default", named("c"));
    auto st = refusal([&] {
        store.patch(configmaps, "default", "c", PatchType::Merge, parse(R"({"metadata": {"resourceVersion": "1"}})"));
    });
    CHECK(st.code == 409);
}

TEST_CASE("a failing JSON patch is 422 and changes nothing") {
    ObjectStore store;
    auto cm = store.create(configmaps, "default", named("c"));
    auto st = refusal([&] {
        store.patch(configmaps, "default", "c", PatchType::Json,
                    parse(R"([{"op": "test", "path": "/metadata/name", "value": "other"}])"));
    });
    CHECK(st.code == 422);
    CHECK_FALSE(st.message.empty());
    CHECK(store.get(configmaps, "default", "c") == cm);
}

TEST_CASE("a status patch changes only status") {
    ObjectStore store;
    auto pod = store.create(pods, "default", pod_named("p"));
    auto out = store.patch(pods, "default", "p", PatchType::Merge,
                           parse(R"({"status": {"phase": "Running"}, "spec": {"nodeName": "n9"}})"), "status");
    CHECK(out.at("status").at("phase") == "Running");
    CHECK(out.at("spec") == pod.at("spec"));
}

TEST_CASE("secret stringData is merged into base64 data and not stored") {
    ObjectStore store;
    auto s = store.create(secrets, "default", parse(R"({"metadata": {"name": "s"},
        "data": {"keep": "a2VlcA=="}, "stringData": {"user": "admin", "keep": "over"}})"));
    CHECK(s.at("data").at("user") == "YWRtaW4=");
    CHECK(s.at("data").at("keep") == "b3Zlcg==");
    CHECK(s.at("type") == "Opaque");
    CHECK_FALSE(s.as_object().contains("stringData"));
    auto upd = s;
    upd.as_object()["stringData"] = json::object{{"pass", "pw"}};
    upd = store.update(secrets, "default", "s", upd);
    CHECK(upd.at("data").at("pass") == "cHc=");
    CHECK(upd.at("data").at("user") == "YWRtaW4=");
}

TEST_CASE("spec.nodeName can be set on create, and binding assigns an unbound pod once") {
    ObjectStore store;
    auto direct = store.create(pods, "default", parse(R"({"metadata": {"name": "a"}, "spec": {"nodeName": "n1",
        "containers": [{"name": "c", "image": "busybox"}]}})"));
    CHECK(direct.at("spec").at("nodeName") == "n1");

    store.create(pods, "default", pod_named("b"));
    auto st = store.bind("default", "b", parse(R"({"metadata": {"name": "b"}, "target": {"kind": "Node", "name": "n2"}})"));
    CHECK(st.at("status") == "Success");
    auto bound = store.get(pods, "default", "b");
    CHECK(bound.at("spec").at("nodeName") == "n2");
    CHECK(bound.at("status").at("conditions").at(0).at("type") == "PodScheduled");
    CHECK(bound.at("status").at("conditions").at(0).at("status") == "True");

    auto again = refusal([&] { store.bind("default", "b", parse(R"({"target": {"name": "n3"}})")); });
    CHECK(again.code == 409);
    CHECK(again.message == R"(Operation cannot be fulfilled on pods/binding "b": pod b is already assigned to node "n2")");
    auto missing = refusal([&] { store.bind("default", "zz", parse(R"({"target": {"name": "n3"}})")); });
    CHECK(missing.code == 404);
}

TEST_CASE("a pod stored with scheduling gates says it is gated, cannot be bound, and can once they are removed") {
    ObjectStore store;
    auto created = store.create(pods, "default", parse(R"({"metadata": {"name": "g"}, "spec": {
        "schedulingGates": [{"name": "vck.intelai.org/data"}], "containers": [{"name": "c", "image": "busybox"}]}})"));
    const auto& cond = created.at("status").at("conditions").at(0);
    CHECK(cond.at("type") == "PodScheduled");
    CHECK(cond.at("status") == "False");
    CHECK(cond.at("reason") == "SchedulingGated");
    CHECK(cond.at("message") == "Scheduling is blocked due to non-empty scheduling gates");
    CHECK_FALSE(store.create(pods, "default", pod_named("free")).at("status").as_object().contains("conditions"));

    auto gated = refusal([&] { store.bind("default", "g", parse(R"({"target": {"name": "n1"}})")); });
    CHECK(gated.code == 409);
    CHECK(gated.message == R"(Operation cannot be fulfilled on pods/binding "g": pod g has non-empty .spec.schedulingGates)");
    CHECK(store.get(pods, "default", "g").at("spec").as_object().if_contains("nodeName") == nullptr);

    store.patch(pods, "default", "g", PatchType::Merge, parse(R"({"spec": {"schedulingGates": null}})"));
    store.bind("default", "g", parse(R"({"target": {"name": "n1"}})"));
    auto bound = store.get(pods, "default", "g");
    CHECK(bound.at("spec").at("nodeName") == "n1");
    CHECK(bound.at("status").at("conditions").at(0).at("status") == "True");
    CHECK(bound.at("status").at("conditions").at(0).as_object().if_contains("reason") == nullptr);
}

TEST_CASE("creating a CRD serves its resource at once and reports it Established") {
    ObjectStore store;
    auto crd = store.create(crds, "", volume_manager_crd());
    const auto& conds = crd.at("status").at("conditions").as_array();
    bool established = false, accepted = false;
    for (const auto& c : conds) {
        if (c.at("type") == "Established") established = c.at("status") == "True";
        if (c.at("type") == "NamesAccepted") accepted = c.at("status") == "True";
    }
    CHECK(established);
    CHECK(accepted);
    CHECK(crd.at("status").at("acceptedNames").at("kind") == "VolumeManager");
    CHECK(crd.at("status").at("acceptedNames").at("listKind") == "VolumeManagerList");
    CHECK(crd.at("status").at("storedVersions").at(0) == "v1alpha1");

    auto info = store.find_resource("vck.intelai.org", "v1alpha1", "volumemanagers");
    REQUIRE(info);
    CHECK(info->kind == "VolumeManager");
    CHECK(info->namespaced);
    CHECK(info->custom);
    CHECK(info->has_status());
    CHECK(info->short_names == std::vector<std::string>{"vm"});
    CHECK(info->printer_columns.size() == 1);
    CHECK(store.find_kind("vck.intelai.org/v1alpha1", "VolumeManager"));

    auto vm = store.create(volumemanagers, "default", parse(R"({"metadata": {"name": "vm1"},
        "spec": {"volumeConfigs": [{"id": "a", "replicas": 1}]}, "status": {"state": "ignored"}})"));
    CHECK(vm.at("apiVersion") == "vck.intelai.org/v1alpha1");
    CHECK(vm.at("spec").at("state") == "Pending");  // schema default
    CHECK_FALSE(vm.as_object().contains("status"));  // status subresource: dropped on create
}

TEST_CASE("custom resources are pruned and validated by the CRD schema") {
    ObjectStore store;
    store.create(crds, "", volume_manager_crd());
    auto vm = store.create(volumemanagers, "default", parse(R"({"metadata": {"name": "vm1"},
        "spec": {"volumeConfigs": [], "unknownField": 1}})"));
    CHECK_FALSE(vm.at("spec").as_object().contains("unknownField"));

    auto st = refusal([&] {
        store.create(volumemanagers, "default", parse(R"({"metadata": {"name": "vm2"},
            "spec": {"volumeConfigs": [{"id": "a", "replicas": 0}]}})"));
    });
    CHECK(st.code == 422);
    CHECK(st.reason == "Invalid");
    CHECK(st.message.rfind("VolumeManager.vck.intelai.org \"vm2\" is invalid: ", 0) == 0);
    CHECK(st.message.find("spec.volumeConfigs[0].replicas") != std::string::npos);
    REQUIRE(st.details);
    CHECK(st.details->kind == "VolumeManager");
    CHECK(st.details->group == "vck.intelai.org");

    auto missing = refusal([&] {
        store.create(volumemanagers, "default", parse(R"({"metadata": {"name": "vm3"}, "spec": {}})"));
    });
    CHECK(missing.message.find("spec.volumeConfigs: Required value") != std::string::npos);

    auto bad_update = vm;
    bad_update.at("spec").as_object()["volumeConfigs"] = json::array{json::object{{"replicas", -1}}};
    CHECK(refusal([&] { store.update(volumemanagers, "default", "vm1", bad_update); }).code == 422);
}

TEST_CASE("a strategic merge patch on a custom resource is 415 as on the real server") {
    ObjectStore store;
    store.create(crds, "", volume_manager_crd());
    store.create(volumemanagers, "default", parse(R"({"metadata": {"name": "vm1"}, "spec": {"volumeConfigs": []}})"));
    auto st = refusal([&] {
        store.patch(volumemanagers, "default", "vm1", PatchType::StrategicMerge, parse(R"({"spec": {"state": "x"}})"));
    });
    CHECK(st.code == 415);
    CHECK(st.reason == "UnsupportedMediaType");
    CHECK(st.message == "the body of the request was in an unknown format - accepted media types include: "
                        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml");
    auto ok = store.patch(volumemanagers, "default", "vm1", PatchType::Merge, parse(R"({"spec": {"state": "x"}})"));
    CHECK(ok.at("spec").at("state") == "x");
}

TEST_CASE("an invalid CRD is refused with 422 and serves nothing") {
    ObjectStore store;
    auto crd = volume_manager_crd();
    crd.at("metadata").as_object()["name"] = "wrong.name.io";
    auto st = refusal([&] { store.create(crds, "", crd); });
    CHECK(st.code == 422);
    CHECK(st.message.find(R"(metadata.name: Invalid value: "wrong.name.io": must be spec.names.plural+"."+spec.group)") !=
          std::string::npos);
    CHECK_FALSE(store.find_resource("vck.intelai.org", "v1alpha1", "volumemanagers"));

    auto no_storage = volume_manager_crd();
    no_storage.at("spec").at("versions").at(0).as_object()["storage"] = false;
    auto st2 = refusal([&] { store.create(crds, "", no_storage); });
    CHECK(st2.message.find("must have exactly one version marked as storage version") != std::string::npos);

    auto bad_schema = volume_manager_crd();
    bad_schema.at("spec").at("versions").at(0).at("schema").as_object()["openAPIV3Schema"] =
        parse(R"({"type": "string"})");
    CHECK(refusal([&] { store.create(crds, "", bad_schema); }).code == 422);
}

TEST_CASE("a CRD version served under several versions shares one storage") {
    ObjectStore store;
    store.create(crds, "", volume_manager_crd_with_beta());
    store.create(volumemanagers, "default", parse(R"({"metadata": {"name": "vm1"}, "spec": {"volumeConfigs": []}})"));
    auto other = store.get({"vck.intelai.org", "v1beta1", "volumemanagers"}, "default", "vm1");
    CHECK(other.at("apiVersion") == "vck.intelai.org/v1beta1");
}

TEST_CASE("a change's snapshot is shared by the watches of its version and by listeners, not copied per watch") {
    ObjectStore store;
    store.create(crds, "", volume_manager_crd_with_beta());
    const ResourceId beta{"vck.intelai.org", "v1beta1", "volumemanagers"};
    StoreWatchOptions from_now;
    from_now.resource_version = std::to_string(store.resource_version());
    auto a = store.watch(volumemanagers, "default", from_now);
    auto b = store.watch(volumemanagers, "default", from_now);
    auto in_beta = store.watch(beta, "default", from_now);
    std::shared_ptr<const json::value> heard;
    auto id = store.on_change([&](const StoreChange& c) {
        if (c.resource == "volumemanagers") heard = c.object;
    });
    store.create(volumemanagers, "default", parse(R"({"metadata": {"name": "vm1"}, "spec": {"volumeConfigs": []}})"));
    store.remove_listener(id);
    auto ea = a->drain(), eb = b->drain(), ebeta = in_beta->drain();
    REQUIRE(ea.size() == 1);
    REQUIRE(eb.size() == 1);
    REQUIRE(ebeta.size() == 1);
    CHECK(ea[0].object == eb[0].object);  // one snapshot, not a copy per watch
    CHECK(ea[0].object == heard);
    CHECK(ea[0].object->at("apiVersion") == "vck.intelai.org/v1alpha1");
    // Another version is served from its own copy, and the shared snapshot is left as stored.
    CHECK(ebeta[0].object != ea[0].object);
    CHECK(ebeta[0].object->at("apiVersion") == "vck.intelai.org/v1beta1");
    CHECK(meta_of(*ebeta[0].object, "uid") == meta_of(*ea[0].object, "uid"));
}

TEST_CASE("a dry run is refused exactly as the write would be, and answers what it would store without storing it") {
    ObjectStore store;
    store.create(crds, "", volume_manager_crd());
    StoreWatchOptions from_now;
    from_now.resource_version = std::to_string(store.resource_version());
    auto watch = store.watch(pods, "", from_now);
    const auto rv = store.resource_version();
    const auto dry = DryRun::All;

    SUBCASE("create: refusals") {
        auto bad_label = parse(R"({"metadata": {"name": "p", "labels": {"a b": "x"}}, "spec": {"containers": []}})");
        auto real = refusal([&] { store.create(pods, "default", bad_label); });
        auto dry_st = refusal([&] { store.create(pods, "default", bad_label, dry); });
        CHECK(dry_st.code == 422);
        CHECK(dry_st.message == real.message);
        CHECK(refusal([&] { store.create(pods, "nowhere", named("p"), dry); }).message == "namespaces \"nowhere\" not found");
        auto vm = parse(R"({"metadata": {"name": "vm"}, "spec": {"volumeConfigs": "not a list"}})");
        CHECK(refusal([&] { store.create(volumemanagers, "default", vm, dry); }).code == 422);
    }
    SUBCASE("create: the answer is defaulted and has a uid, and nothing is stored") {
        auto out = store.create(pods, "default",
                                parse(R"({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}})"), dry);
        CHECK(out.at("spec").at("restartPolicy") == "Always");
        CHECK_FALSE(out.at("metadata").at("uid").as_string().empty());
        CHECK_FALSE(out.at("metadata").as_object().contains("resourceVersion"));
        CHECK(refusal([&] { store.get(pods, "default", "p"); }).code == 404);
        // A dry-run CRD serves nothing.
        auto crd = volume_manager_crd();
        crd.at("metadata").as_object()["name"] = "widgets.vck.intelai.org";
        crd.at("spec").at("names").as_object()["plural"] = "widgets";
        crd.at("spec").at("names").as_object()["kind"] = "Widget";
        crd.at("spec").at("names").as_object()["singular"] = "widget";
        crd.at("spec").at("names").as_object()["listKind"] = "WidgetList";
        store.create(crds, "", crd, dry);
        CHECK(refusal([&] { store.list(ResourceId{"vck.intelai.org", "v1alpha1", "widgets"}, "default"); }).code == 404);
    }
    SUBCASE("update, patch and delete: checked, answered, not stored") {
        store.create(configmaps, "default", parse(R"({"metadata": {"name": "c"}, "data": {"k": "1"}})"));
        auto before = store.get(configmaps, "default", "c");
        auto rv_before = store.resource_version();
        auto stale = before;
        stale.at("metadata").as_object()["resourceVersion"] = "1";
        CHECK(refusal([&] { store.update(configmaps, "default", "c", stale, {}, dry); }).code == 409);
        auto changed = before;
        changed.at("data").as_object()["k"] = "2";
        auto answered = store.update(configmaps, "default", "c", changed, {}, dry);
        CHECK(answered.at("data").at("k") == "2");
        auto patched = store.patch(configmaps, "default", "c", PatchType::Merge, parse(R"({"data": {"k": "3"}})"), {}, dry);
        CHECK(patched.at("data").at("k") == "3");
        CHECK(refusal([&] {
                  store.patch(configmaps, "default", "c", PatchType::Merge, parse(R"({"metadata": {"labels": {"-x": "y"}}})"), {}, dry);
              }).code == 422);
        StoreDeleteOptions o;
        o.dry_run = true;
        CHECK(store.remove(configmaps, "default", "c", o).object.at("metadata").at("name") == "c");
        CHECK(refusal([&] { store.remove(namespaces, "", "default", o); }).code == 403);
        CHECK(store.get(configmaps, "default", "c") == before);
        CHECK(store.resource_version() == rv_before);
    }
    SUBCASE("deleting a namespace dry leaves it and its content") {
        store.create(namespaces, "", named("team"));
        store.create(configmaps, "team", named("c"));
        StoreDeleteOptions o;
        o.dry_run = true;
        auto out = store.remove(namespaces, "", "team", o);
        CHECK(out.object.at("status").at("phase") == "Terminating");
        CHECK(store.get(namespaces, "", "team").at("status").at("phase") == "Active");
        CHECK(store.get(configmaps, "team", "c").at("metadata").at("name") == "c");
    }
    // Nothing a watch could see happened (no pod was ever stored).
    CHECK(watch->drain().empty());
    if (store.resource_version() != rv) CHECK(store.list(pods, "").at("items").as_array().empty());
}
