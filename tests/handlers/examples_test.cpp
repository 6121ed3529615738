// Specification of examples/volumemanagers/ and of the reference's manifest shapes
// (tests/handlers/manifests/): each is admitted by crds/volumemanager.yaml as written (nothing
// pruned), decodes, passes validate_spec, and every volume in it passes its handler's validation against a cluster
// that has what the manifest needs (nodes matching its affinity, the Secret it names), and
// yields the objects its type makes. The examples cover every built-in source type.
// examples/claims/ (a StorageClass, claims and a StatefulSet): each object is what
// kube-apiserver admits (defaulted, then validated as it validates), each claim gives the
// provisioner a source its handler accepts, and docs/user.md shows each file as it is.
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/handler_registry.hpp>
#include <vck/handlers/spec_validation.hpp>
#include <vck/sandbox/admission/builtin_defaults.hpp>
#include <vck/sandbox/validation/pod_validation.hpp>
#include <vck/sandbox/validation/statefulset_validation.hpp>
#include <vck/sandbox/validation/volume_validation.hpp>
#include <vck/volumes/claim_source.hpp>

#include <doctest.h>

#include "printers.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
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

namespace {

std::vector<std::string> messages(const std::vector<vck::sandbox::FieldError>& errors) {
    std::vector<std::string> out;
    for (const auto& e : errors) out.push_back(e.message);
    return out;
}

/// What kube-apiserver says to creating `object` (defaults first, as it does).
std::vector<std::string> create_errors(json::value object) {
    namespace t = vck::sandbox;
    const auto kind = object.at("kind").as_string();
    if (kind == "StorageClass") return messages(t::validate_storage_class(object));
    if (kind == "PersistentVolumeClaim") return messages(t::validate_persistent_volume_claim(object));
    if (kind == "Pod") {
        t::apply_builtin_defaults("", "pods", object);
        return messages(t::validate_pod_create(object));
    }
    if (kind == "StatefulSet") {
        t::apply_builtin_defaults("apps", "statefulsets", object);
        return messages(t::validate_statefulset(object));
    }
    return {"no check for kind " + std::string(kind)};
}

std::string file_text(const std::filesystem::path& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

TEST_CASE("examples/claims: the StorageClass, claims and StatefulSet of docs/user.md are valid and give the provisioner a source") {
    namespace volumes = vck::volumes;
    const auto dir = source_root() / "examples/claims";
    std::vector<json::value> objects;
    for (const auto& name : {"storageclass.yaml", "claim.yaml", "claim-from-volumemanager.yaml", "statefulset.yaml"}) {
        CAPTURE(name);
        auto docs = vck::api::yaml_file(dir / name);
        for (auto& o : docs) {
            CAPTURE(json::serialize(o.at("kind")));
            auto errors = create_errors(o);
            CHECK_MESSAGE(errors.empty(), join(errors));
            objects.push_back(o);
        }
        // The user guide shows the file as it is, so the two never drift apart.
        CHECK(file_text(source_root() / "docs/user.md").find("```yaml\n" + file_text(dir / name) + "```") != std::string::npos);
    }
    REQUIRE(objects.size() == 5);

    auto sc = api::from_json<api::StorageClass>(objects.at(0));
    CHECK(sc.provisioner == volumes::provisioner_name);
    CHECK(sc.volumeBindingMode == "WaitForFirstConsumer");
    auto vm = api::from_json<api::VolumeManager>(load_yaml(source_root() / "examples/volumemanagers/s3.yaml"));
    auto find_vm = [&](const std::string&, const std::string& name) -> const api::VolumeManager* {
        return name == vm.metadata.name ? &vm : nullptr;
    };
    auto registry = handlers::HandlerRegistry::with_builtin_handlers();
    auto source_of = [&](api::PersistentVolumeClaim c) {
        c.metadata.namespace_ = "default";
        auto source = volumes::claim_source(sc, c, find_vm);
        CHECK(source.error == "");
        REQUIRE(source.config);
        auto found = registry.find(source.config->sourceType);
        REQUIRE(found.handler);
        CHECK(found.handler->validate(*source.config) == std::nullopt);
        return *source.config;
    };
    // The class's source: its sourceURL, into the class's dataPath.
    auto claim = api::from_json<api::PersistentVolumeClaim>(objects.at(1));
    CHECK(claim.spec.storageClassName == sc.metadata.name);
    CHECK(source_of(claim).option("sourceURL") == "s3://datasets/cifar/");
    CHECK(objects.at(2).at("spec").at("volumes").at(0).at("persistentVolumeClaim").at("claimName") == "cifar");
    // The VolumeManager's volume, one replica of it.
    auto copy = source_of(api::from_json<api::PersistentVolumeClaim>(objects.at(3)));
    CHECK(copy.option("sourceURL") == vm.spec.volumeConfigs.at(0).option("sourceURL"));
    CHECK(copy.replicas == 1);
    // Each StatefulSet replica's claim is one of the class's.
    const auto& tmpl = objects.at(4).at("spec").at("volumeClaimTemplates").at(0);
    auto replica_claim = api::from_json<api::PersistentVolumeClaim>(tmpl);
    replica_claim.metadata.name = "data-trainer-0";
    CHECK(replica_claim.spec.storageClassName == sc.metadata.name);
    CHECK(source_of(replica_claim).sourceType == "S3");

    // The checks can fail: a ReadWriteMany claim is not a directory on one node.
    claim.spec.accessModes = {"ReadWriteMany"};
    CHECK(volumes::claim_source(sc, claim, find_vm).error.find("ReadWriteOnce") != std::string::npos);
}
