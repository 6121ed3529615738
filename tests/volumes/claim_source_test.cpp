// Specification of what a claim of a vck StorageClass holds and the PV it gets
// (include/vck/volumes/claim_source.hpp): pure functions, no API server.
#include <vck/volumes/claim_source.hpp>

#include <doctest.h>

using namespace vck;
using namespace vck::volumes;

namespace {

api::StorageClass s3_class() {
    api::StorageClass sc;
    sc.metadata.name = "vck-cifar";
    sc.provisioner = std::string(provisioner_name);
    sc.volumeBindingMode = "WaitForFirstConsumer";
    sc.parameters = {{"sourceType", "S3"}, {"sourceURL", "s3://data/cifar/"}, {"awsCredentialsSecretName", "s3-creds"},
                     {"dataPath", "/var/datasets/claims"}};
    return sc;
}

api::PersistentVolumeClaim claim_of(const std::string& cls) {
    api::PersistentVolumeClaim c;
    c.metadata.name = "train-data";
    c.metadata.namespace_ = "ml";
    c.metadata.uid = "0f0e0d0c-1111-2222-3333-444455556666";
    c.spec.storageClassName = cls;
    c.spec.accessModes = {"ReadWriteOnce"};
    c.spec.resources.requests = {{"storage", "20Gi"}};
    return c;
}

api::VolumeManager manager(std::size_t volumes) {
    api::VolumeManager vm;
    vm.metadata.name = "cifar";
    vm.metadata.namespace_ = "ml";
    for (std::size_t i = 0; i < volumes; ++i) {
        api::VolumeConfig vc;
        vc.id = "v" + std::to_string(i);
        vc.replicas = 3;
        vc.sourceType = "S3";
        vc.accessMode = "ReadWriteOnce";
        vc.labels = {{"k", "v"}};
        vc.options = {{"sourceURL", "s3://data/v" + std::to_string(i) + "/"}, {"awsCredentialsSecretName", "creds"}};
        vm.spec.volumeConfigs.push_back(vc);
    }
    return vm;
}

auto no_managers = [](const std::string&, const std::string&) -> const api::VolumeManager* { return nullptr; };

} // namespace

TEST_CASE("a class naming a source gives one replica of it, the type's options from the parameters") {
    auto src = claim_source(s3_class(), claim_of("vck-cifar"), no_managers);
    REQUIRE(src.error == "");
    REQUIRE(src.config);
    CHECK(src.config->sourceType == "S3");
    CHECK(src.config->replicas == 1);
    CHECK(src.config->option("sourceURL") == "s3://data/cifar/");
    CHECK(src.config->option("awsCredentialsSecretName") == "s3-creds");
    CHECK_FALSE(src.config->has_option("sourceType"));
    CHECK(src.data_path == "/var/datasets/claims");
    CHECK(claim_directory(src.data_path + "/", claim_of("x")) ==
          "/var/datasets/claims/vck-claim-0f0e0d0c-1111-2222-3333-444455556666");
}

TEST_CASE("a class with no source gives an empty directory under the default data path") {
    api::StorageClass sc;
    sc.metadata.name = "vck-scratch";
    sc.provisioner = std::string(provisioner_name);
    auto src = claim_source(sc, claim_of("vck-scratch"), no_managers);
    CHECK(src.error == "");
    CHECK_FALSE(src.config);
    CHECK(src.data_path == "/var/datasets");
}

TEST_CASE("a dataSourceRef to a VolumeManager copies its volume: the only one, or the one the annotation names") {
    auto c = claim_of("vck-scratch");
    c.spec.dataSourceRef = api::TypedObjectReference{"vck.intelai.org", "VolumeManager", "cifar", std::nullopt};
    api::StorageClass sc;
    sc.metadata.name = "vck-scratch";
    auto one = manager(1), two = manager(2);
    const api::VolumeManager* found = &one;
    std::string asked;
    auto find = [&](const std::string& ns, const std::string& name) -> const api::VolumeManager* {
        asked = ns + "/" + name;
        return found;
    };
    auto src = claim_source(sc, c, find);
    CHECK(asked == "ml/cifar");  // the claim's own namespace
    REQUIRE(src.config);
    CHECK(src.config->option("sourceURL") == "s3://data/v0/");
    CHECK(src.config->replicas == 1);  // one copy: the claim's
    CHECK(src.config->option("awsCredentialsSecretName") == "creds");

    found = &two;
    CHECK(claim_source(sc, c, find).error ==
          "VolumeManager cifar has 2 volumes: annotation vck.intelai.org/volume names the one to copy");
    c.metadata.annotations["vck.intelai.org/volume"] = "v1";
    CHECK(claim_source(sc, c, find).config->option("sourceURL") == "s3://data/v1/");
    c.metadata.annotations["vck.intelai.org/volume"] = "v9";
    CHECK(claim_source(sc, c, find).error == "VolumeManager cifar has no volume \"v9\"");
    found = nullptr;
    CHECK(claim_source(sc, c, find).error == "VolumeManager \"cifar\" not found in namespace \"ml\"");
}

TEST_CASE("claims it cannot serve are refused with what to change") {
    auto c = claim_of("vck-cifar");
    c.spec.accessModes = {"ReadWriteMany"};
    CHECK(claim_source(s3_class(), c, no_managers).error ==
          "a claim of class vck-cifar is a directory on one node: accessModes ReadWriteOnce or ReadWriteOncePod, not "
          "ReadWriteMany");
    c = claim_of("vck-cifar");
    c.spec.dataSourceRef = api::TypedObjectReference{"", "PersistentVolumeClaim", "other", std::nullopt};
    CHECK(claim_source(s3_class(), c, no_managers).error ==
          "dataSourceRef PersistentVolumeClaim other is not a VolumeManager (apiGroup vck.intelai.org)");
    c.spec.dataSourceRef = api::TypedObjectReference{"vck.intelai.org", "VolumeManager", "cifar", std::string("other-ns")};
    CHECK(claim_source(s3_class(), c, no_managers).error ==
          "dataSourceRef names VolumeManager cifar in namespace other-ns: only the claim's own namespace is read");
}

TEST_CASE("the PV: local, pinned by hostname, pre-bound with the claim's uid, the class's reclaim policy") {
    auto sc = s3_class();
    auto c = claim_of("vck-cifar");
    auto pv = claim_volume(sc, c, "node-2", "node-2.example", "/var/datasets/claims/vck-claim-x");
    CHECK(pv.metadata.name == "pvc-" + c.metadata.uid);
    CHECK(pv.metadata.annotations.at("pv.kubernetes.io/provisioned-by") == "vck.intelai.org/data");
    CHECK(pv.metadata.annotations.at("vck.intelai.org/data") == "node-2:/var/datasets/claims/vck-claim-x");
    CHECK(pv.spec.local->path == "/var/datasets/claims/vck-claim-x");
    const auto& term = pv.spec.nodeAffinity->required->nodeSelectorTerms.at(0).matchExpressions.at(0);
    CHECK(term.key == "kubernetes.io/hostname");
    CHECK(term.values == std::vector<std::string>{"node-2.example"});
    CHECK(pv.spec.claimRef->uid == c.metadata.uid);
    CHECK(pv.spec.claimRef->namespace_ == "ml");
    CHECK(pv.spec.capacity.at("storage") == "20Gi");
    CHECK(pv.spec.storageClassName == "vck-cifar");
    CHECK(pv.spec.persistentVolumeReclaimPolicy == "Delete");
    sc.reclaimPolicy = "Retain";
    CHECK(claim_volume(sc, c, "n", "n", "/p").spec.persistentVolumeReclaimPolicy == "Retain");
    CHECK(parse_data_location("node-2:/a/b") == std::pair<std::string, std::string>{"node-2", "/a/b"});
    CHECK(parse_data_location("garbage") == std::pair<std::string, std::string>{});
}
