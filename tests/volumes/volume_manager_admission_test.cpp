// What VCK's validating webhook refuses at `kubectl apply` of a VolumeManager
// (include/vck/volumes/volume_manager_admission.hpp): every failure at once, with its field
// path and the original's words, from the reconciler's own rules.
#include <vck/api/yaml.hpp>
#include <vck/volumes/volume_manager_admission.hpp>

#include "../../examples/custom-handler/git_handler.hpp"

#include <doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using namespace vck;
using volumes::AdmissionFailure;

api::VolumeConfig s3_config(std::string id = "vol1") {
    api::VolumeConfig vc;
    vc.id = std::move(id);
    vc.replicas = 2;
    vc.sourceType = "S3";
    vc.accessMode = "ReadWriteOnce";
    vc.labels = {{"key1", "val1"}};
    vc.options = {{"awsCredentialsSecretName", "aws-creds"}, {"sourceURL", "s3://bucket/set/"}};
    return vc;
}

api::VolumeManager vm_of(std::vector<api::VolumeConfig> volumes) {
    api::VolumeManager vm;
    vm.metadata.name = "data";
    vm.metadata.namespace_ = "team";
    vm.spec.volumeConfigs = std::move(volumes);
    return vm;
}

volumes::VolumeManagerReview review(const api::VolumeManager& vm) {
    static const auto registry = handlers::HandlerRegistry::with_builtin_handlers();
    return volumes::review_volume_manager(vm, registry);
}

std::filesystem::path admission_source_root() {
    const char* root = std::getenv("VCK_SOURCE_ROOT");
    REQUIRE_MESSAGE(root, "VCK_SOURCE_ROOT must be set (meson test sets it)");
    return root;
}

} // namespace

TEST_CASE("a valid VolumeManager passes") {
    auto r = review(vm_of({s3_config()}));
    CHECK(r.allowed());
    CHECK(r.failures.empty());
    CHECK(r.message().empty());
}

TEST_CASE("the example and fixture manifests pass (their custom types once registered)") {
    auto registry = handlers::HandlerRegistry::with_builtin_handlers();
    std::size_t checked = 0;
    for (const char* dir : {"examples/volumemanagers", "tests/handlers/manifests"})
        for (const auto& entry : std::filesystem::directory_iterator(admission_source_root() / dir)) {
            if (entry.path().extension() != ".yaml") continue;
            CAPTURE(entry.path().string());
            auto vm = api::from_json<api::VolumeManager>(api::yaml_file(entry.path()).at(0));
            auto r = volumes::review_volume_manager(vm, registry);
            for (const auto& f : r.failures)
                // multi.yaml names a type only its own binary registers.
                CHECK_MESSAGE(f.message.starts_with("unknown sourceType \"MyCustomSource\""), f.text());
            ++checked;
        }
    CHECK(checked >= 10);
}

TEST_CASE("an S3 volume without sourceURL and awsCredentialsSecretName gets both failures, in the original's words") {
    auto vc = s3_config();
    vc.options.clear();
    auto r = review(vm_of({vc}));
    CHECK_FALSE(r.allowed());
    CHECK(r.failures ==
          std::vector<AdmissionFailure>{{"spec.volumeConfigs[0].options.awsCredentialsSecretName",
                                         "awsCredentialsSecretName key has to be set in options"},
                                        {"spec.volumeConfigs[0].options.sourceURL", "sourceURL has to be set in options"}});
    CHECK(r.message() == "VolumeManager.vck.intelai.org \"data\" is invalid: [spec.volumeConfigs[0].options."
                         "awsCredentialsSecretName: awsCredentialsSecretName key has to be set in options, "
                         "spec.volumeConfigs[0].options.sourceURL: sourceURL has to be set in options]");
}

TEST_CASE("resync with replicas above 1 is refused") {
    auto vc = s3_config();
    vc.options["resync"] = "true";
    auto r = review(vm_of({vc}));
    CHECK(r.failures == std::vector<AdmissionFailure>{{"spec.volumeConfigs[0].replicas",
                                                       "replicas cannot be > 1 when resync is set"}});
    CHECK(r.message() == "VolumeManager.vck.intelai.org \"data\" is invalid: spec.volumeConfigs[0].replicas: replicas "
                         "cannot be > 1 when resync is set");
    vc.options["resync"] = "yes";
    CHECK(review(vm_of({vc})).failures ==
          std::vector<AdmissionFailure>{{"spec.volumeConfigs[0].options.resync", "error while parsing resync option"}});
}

TEST_CASE("distributionStrategy counts that do not add up to replicas are refused") {
    auto vc = s3_config();
    vc.replicas = 3;
    vc.options["distributionStrategy"] = R"({"train/*": 1, "val/*": 1})";
    CHECK(review(vm_of({vc})).failures ==
          std::vector<AdmissionFailure>{{"spec.volumeConfigs[0].options.distributionStrategy",
                                         "invalid distributionStrategy: counts add up to 2 but replicas is 3"}});
}

TEST_CASE("a firstBatch that is neither a share nor an amount is refused at admission, at its field") {
    auto vc = s3_config();
    vc.options["firstBatch"] = "150%";
    CHECK(review(vm_of({vc})).failures ==
          std::vector<AdmissionFailure>{{"spec.volumeConfigs[0].options.firstBatch",
                                         "firstBatch has to be a share of the data such as \"25%\" (more than 0, at "
                                         "most 100) or an amount of bytes such as \"64Mi\" (more than 0), not \"150%\""}});
    vc.options["firstBatch"] = "25%";
    CHECK(review(vm_of({vc})).allowed());
}

TEST_CASE("a dataPath outside the allowed roots is refused, with the roots") {
    auto vc = s3_config();
    vc.options["dataPath"] = "/etc";
    CHECK(review(vm_of({vc})).failures ==
          std::vector<AdmissionFailure>{{"spec.volumeConfigs[0].options.dataPath",
                                         "dataPath \"/etc\" is not under an allowed data root (/var/datasets)"}});
    // The controller's roots decide.
    handlers::HandlerContext ctx;
    ctx.options.allowed_data_roots = {"/etc"};
    CHECK(volumes::review_volume_manager(vm_of({vc}), handlers::HandlerRegistry::with_builtin_handlers(), ctx).allowed());
    api::VolumeConfig local;
    local.id = "disk";
    local.sourceType = "Local";
    local.accessMode = "ReadOnlyMany";
    local.labels = {{"k", "v"}};
    local.options = {{"path", "/home/data"}};
    CHECK(review(vm_of({local})).failures ==
          std::vector<AdmissionFailure>{{"spec.volumeConfigs[0].options.path",
                                         "dataPath \"/home/data\" is not under an allowed data root (/var/datasets)"}});
}

TEST_CASE("an unknown sourceType is refused; a registered custom type is known; a deprecated alias warns") {
    api::VolumeConfig git;
    git.id = "repo";
    git.sourceType = "GitRepo";
    git.accessMode = "ReadWriteOnce";
    git.labels = {{"k", "v"}};
    git.options = {{"repository", "https://example.com/r.git"}};
    auto r = review(vm_of({git}));
    CHECK(r.failures == std::vector<AdmissionFailure>{{"spec.volumeConfigs[0].sourceType",
                                                       "unknown sourceType \"GitRepo\": known types are Local, NFS, "
                                                       "Pachyderm, S3, S3-Dev, S3-Output"}});
    auto registry = handlers::HandlerRegistry::with_builtin_handlers();
    registry.add("GitRepo", example::GitHandler("git:test"));
    CHECK(volumes::review_volume_manager(vm_of({git}), registry).allowed());
    // A custom handler without problems() reports its one validate() failure.
    git.options["repository"] = "git://example.com/r.git";
    CHECK(volumes::review_volume_manager(vm_of({git}), registry).failures ==
          std::vector<AdmissionFailure>{{"spec.volumeConfigs[0]", "repository has to be an https:// URL"}});

    auto dev = s3_config();
    dev.sourceType = "S3-Dev";
    auto w = review(vm_of({dev}));
    CHECK(w.allowed());
    CHECK(w.warnings == std::vector<std::string>{"spec.volumeConfigs[0].sourceType: sourceType S3-Dev is deprecated, use S3"});
}

TEST_CASE("every failure of every volume is reported, in document order, spec-wide ones first") {
    auto a = s3_config("a");
    a.replicas = 0;                 // the spec's rule and S3's own
    a.labels.clear();
    api::VolumeConfig nfs;
    nfs.id = "a";                   // a duplicate id
    nfs.sourceType = "NFS";
    nfs.accessMode = "ReadWriteOnce";
    nfs.labels = {{"k", "v"}};
    nfs.options = {{"path", "exports"}};
    api::VolumeConfig pach;
    pach.id = "p";
    pach.sourceType = "Pachyderm";
    pach.accessMode = "ReadWriteOnce";
    pach.labels = {{"k", "v"}};
    pach.options = {{"repo", "r"}, {"outputPath", "/abs"}};
    auto vm = vm_of({a, nfs, pach});
    vm.spec.state = "Sleeping";
    auto r = review(vm);
    std::vector<std::string> texts;
    for (const auto& f : r.failures) texts.push_back(f.text());
    CHECK(texts == std::vector<std::string>{
                       "spec.state: Unsupported value: \"Sleeping\": supported values: \"Pending\", \"Running\", "
                       "\"Failed\", \"Completed\"",
                       "spec.volumeConfigs[0].replicas: Invalid value: 0: must be between 1 and 10000, inclusive",
                       "spec.volumeConfigs[0].labels: labels cannot be empty",
                       "spec.volumeConfigs[0].replicas: replicas has to be at least 1",
                       "spec.volumeConfigs[1].id: volume id \"a\" is used more than once",
                       "spec.volumeConfigs[1].options.server: server has to be set in options",
                       "spec.volumeConfigs[1].accessMode: access mode has to be either ReadWriteMany or ReadOnlyMany",
                       "spec.volumeConfigs[1].options.path: path has to be an absolute path",
                       "spec.volumeConfigs[2].options.branch: branch has to be set in options",
                       "spec.volumeConfigs[2].options.inputPath: inputPath has to be set in options",
                       "spec.volumeConfigs[2].options.outputPath: outputPath has to be a relative path inside the volume",
                   });
    // The reconciler's single message is the first of the same list.
    CHECK(handlers::validate_spec(vm.spec) ==
          "spec.state: Unsupported value: \"Sleeping\": supported values: \"Pending\", \"Running\", \"Failed\", "
          "\"Completed\"");
    auto registry = handlers::HandlerRegistry::with_builtin_handlers();
    CHECK(registry.find("NFS").handler->validate(nfs) == "server has to be set in options");
}

TEST_CASE("a VolumeManager with no volumes is refused, naming the older spelling when used") {
    auto r = review(vm_of({}));
    CHECK(r.failures == std::vector<AdmissionFailure>{
                            {"spec.volumeConfigs", "Required value: at least one volume config is needed"}});
    auto old = vm_of({});
    old.spec.unknown["volumes"] = boost::json::array{};
    CHECK(review(old).failures ==
          std::vector<AdmissionFailure>{{"spec.volumeConfigs", "Required value: spec.volumes is the older KVC spelling, "
                                                               "rename it to spec.volumeConfigs"}});
}
