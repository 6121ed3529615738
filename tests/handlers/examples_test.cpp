// Specification of examples/volumemanagers/ and of the reference's manifest shapes
// (tests/handlers/manifests/): each is admitted by crds/volumemanager.yaml as written (nothing
// pruned), decodes, passes validate_spec, and every volume in it passes its handler's validation against a cluster
// that has what the manifest needs (nodes matching its affinity, the Secret it names), and
// yields the objects its type makes. The examples cover every built-in source type.
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/handler_registry.hpp>
#include <vck/handlers/spec_validation.hpp>

#include <doctest.h>

#include "printers.hpp"

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "manifest_support.hpp"

using namespace vck_handlers_test;
namespace api = vck::api;
namespace handlers = vck::handlers;

namespace {

/// Four nodes that every example's and fixture's affinity accepts; any Secret exists.
handlers::HandlerContext cluster() {
    handlers::HandlerContext ctx;
    ctx.nodes = [] {
        std::vector<api::Node> out;
        for (int i = 0; i < 4; ++i) {
            api::Node n;
            n.metadata.name = "node-" + std::to_string(i);
            n.metadata.labels = {{"kubernetes.io/hostname", n.metadata.name}, {"disk", "ssd"},
                                 {"accelerator", "nvidia"}, {"zone", "a"}, {"cpus", "16"}};
            out.push_back(std::move(n));
        }
        return out;
    };
    ctx.secret = [](const std::string& ns, const std::string& name) -> std::optional<api::Secret> {
        api::Secret s;
        s.metadata.name = name;
        s.metadata.namespace_ = ns;
        s.data = {{"awsAccessKeyID", "QUtJQQ=="}, {"awsSecretAccessKey", "c2VjcmV0"}};
        return s;
    };
    return ctx;
}

/// Source types a fixture may use that no built-in handler serves (custom handlers).
const std::set<std::string> custom_types{"MyCustomSource"};

struct Checked {
    std::set<std::string> source_types;
    std::size_t max_volumes = 0;
};

/// Admits, decodes and validates one manifest file; returns what it contained.
Checked check_manifest(const std::filesystem::path& path) {
    CAPTURE(path.string());
    Checked out;
    auto object = load_yaml(path);
    auto before = object;
    auto errors = admit(object);
    CHECK_MESSAGE(errors.empty(), join(errors));
    CHECK(nothing_lost(before, object));
    auto vm = api::from_json<api::VolumeManager>(object);
    vm.metadata.uid = "6c1f7a52-7d5e-4a3c-9b0e-1f2d3c4b5a69";
    CHECK(vm.kind == "VolumeManager");
    CHECK(vm.apiVersion == "vck.intelai.org/v1alpha1");
    out.max_volumes = vm.spec.volumeConfigs.size();

    // What we would write back (e.g. a status update) is admitted too.
    auto again = api::to_json(vm);
    auto rewritten_errors = admit(again);
    CHECK_MESSAGE(rewritten_errors.empty(), join(rewritten_errors));

    CHECK(handlers::validate_spec(vm.spec) == std::nullopt);
    auto registry = handlers::HandlerRegistry::with_builtin_handlers();
    auto ctx = cluster();
    for (const auto& vc : vm.spec.volumeConfigs) {
        CAPTURE(vc.id);
        out.source_types.insert(vc.sourceType);
        auto found = registry.find(vc.sourceType);
        if (!found.handler) {
            CHECK(custom_types.contains(vc.sourceType));
            CHECK(found.error.find("known types are Local, NFS, Pachyderm, S3, S3-Dev") != std::string::npos);
            continue;
        }
        CHECK(found.handler->validate(vc) == std::nullopt);
        CHECK(found.handler->validate(ctx, vm, vc) == std::nullopt);
        auto d = found.handler->desired(ctx, vm, vc);
        if (vc.sourceType == "S3" || vc.sourceType == "S3-Dev" || vc.sourceType == "S3-Output" || vc.sourceType == "Pachyderm") {
            CHECK(d.pods.size() == static_cast<std::size_t>(vc.replicas));
        } else {
            CHECK(d.pods.empty());
            CHECK_FALSE(d.persistent_volumes.empty());
            CHECK(d.claims.size() == 1);
        }
        // Pending (nothing observed yet), never Failed, for a valid volume.
        CHECK(found.handler->status(ctx, vm, vc, {}).phase == handlers::VolumePhase::Pending);
    }
    return out;
}

} // namespace

TEST_CASE("every example VolumeManager is admitted by the CRD and valid for its handlers") {
    std::set<std::string> types;
    std::set<std::string> files;
    std::size_t most_volumes = 0;
    for (const auto& path : yaml_files("examples/volumemanagers")) {
        files.insert(path.filename().string());
        auto c = check_manifest(path);
        types.insert(c.source_types.begin(), c.source_types.end());
        most_volumes = std::max(most_volumes, c.max_volumes);
    }
    for (auto f : {"s3.yaml", "nfs.yaml", "pachyderm.yaml", "local.yaml", "multi.yaml"}) CHECK(files.contains(f));
    for (auto t : {"S3", "S3-Output", "NFS", "Pachyderm", "Local"}) CHECK(types.contains(t));
    CHECK(most_volumes >= 2);  // the multi-volume example
}

TEST_CASE("every manifest shape of the reference is admitted by the CRD and valid for its handlers") {
    std::set<std::string> types;
    std::size_t count = 0;
    for (const auto& path : yaml_files("tests/handlers/manifests")) {
        ++count;
        auto c = check_manifest(path);
        types.insert(c.source_types.begin(), c.source_types.end());
    }
    CHECK(count >= 10);
    for (auto t : {"S3", "S3-Dev", "NFS", "Pachyderm", "Local", "MyCustomSource"}) CHECK(types.contains(t));
}

TEST_CASE("a broken copy of an example is rejected, so the checks above can fail") {
    auto object = load_yaml(source_root() / "examples/volumemanagers/s3.yaml");
    object.at("spec").at("volumeConfigs").at(0).as_object()["replicas"] = 0;
    object.at("spec").at("volumeConfigs").at(0).as_object()["accessMode"] = "ReadWriteSometimes";
    auto errors = admit(object);
    CHECK(mentions(errors, "spec.volumeConfigs[0].replicas: Invalid value: 0"));
    CHECK(mentions(errors, "spec.volumeConfigs[0].accessMode: Unsupported value: \"ReadWriteSometimes\""));

    auto vm = api::from_json<api::VolumeManager>(load_yaml(source_root() / "examples/volumemanagers/s3.yaml"));
    auto vc = vm.spec.volumeConfigs.at(0);
    vc.options.erase("awsCredentialsSecretName");
    CHECK(handlers::HandlerRegistry::with_builtin_handlers().find("S3").handler->validate(vc) ==
          "awsCredentialsSecretName key has to be set in options");
}
