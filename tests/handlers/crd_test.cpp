// Specification of crds/volumemanager.yaml: every manifest shape of the reference (the
// fixtures in tests/handlers/manifests/) is admitted and decodes into a typed VolumeManager;
// malformed ones are rejected with the field paths the apiserver reports.
#include <vck/api/quantity.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/sandbox/validation/crd_schema.hpp>

#include <doctest.h>

#include "printers.hpp"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "manifest_support.hpp"

namespace json = boost::json;
using namespace vck_handlers_test;

TEST_CASE("the CRD names the original group, kind and plural, namespaced, with a status subresource") {
    auto crd = load_yaml(source_root() / "crds/volumemanager.yaml");
    CHECK(crd.at("apiVersion") == "apiextensions.k8s.io/v1");
    CHECK(crd.at("metadata").at("name") == "volumemanagers.vck.intelai.org");
    const auto& spec = crd.at("spec");
    CHECK(spec.at("group") == "vck.intelai.org");
    CHECK(spec.at("scope") == "Namespaced");
    CHECK(spec.at("names").at("kind") == "VolumeManager");
    CHECK(spec.at("names").at("singular") == "volumemanager");
    const auto& short_names = spec.at("names").at("shortNames").as_array();
    CHECK(std::find(short_names.begin(), short_names.end(), json::value("vckvm")) != short_names.end());
    // "vm" would clash with KubeVirt's VirtualMachine in kubectl.
    CHECK(std::find(short_names.begin(), short_names.end(), json::value("vm")) == short_names.end());
    const auto& v = spec.at("versions").at(0);
    CHECK(v.at("name") == "v1alpha1");
    CHECK(v.at("subresources").at("status").is_object());
    std::vector<std::string> columns;
    for (const auto& c : v.at("additionalPrinterColumns").as_array()) columns.emplace_back(c.at("name").as_string());
    CHECK(columns == std::vector<std::string>{"State", "Ready", "Progress", "Message", "Age", "Volumes", "Nodes", "Observed"});
    // The default columns, then those `kubectl get -o wide` adds.
    for (const auto& c : v.at("additionalPrinterColumns").as_array())
        CHECK(c.as_object().contains("priority") == (c.at("name") == "Volumes" || c.at("name") == "Nodes" || c.at("name") == "Observed"));
    CHECK(vck::api::VolumeManager::resource.plural == "volumemanagers");
}

TEST_CASE("every reference manifest is admitted unchanged and decodes into a VolumeManager") {
    std::size_t count = 0;
    for (const auto& path : yaml_files("tests/handlers/manifests")) {
        ++count;
        CAPTURE(path.filename().string());
        auto object = load_yaml(path);
        auto before = object;
        auto errors = admit(object);
        CHECK_MESSAGE(errors.empty(), join(errors));
        // Nothing the manifest says is pruned away (only defaults are added).
        CHECK(nothing_lost(before, object));
        auto vm = vck::api::from_json<vck::api::VolumeManager>(object);
        CHECK(vm.kind == "VolumeManager");
        CHECK_FALSE(vm.spec.volumeConfigs.empty());
        CHECK_FALSE(vm.spec.volumeConfigs[0].capacity.empty());
    }
    CHECK(count >= 6);
}

TEST_CASE("nodeAffinity and tolerations of the reference decode as core types") {
    auto object = load_yaml(source_root() / "tests/handlers/manifests/s3-distribution.yaml");
    admit(object);
    auto vm = vck::api::from_json<vck::api::VolumeManager>(object);
    const auto& vc = vm.spec.volumeConfigs.at(0);
    REQUIRE(vc.nodeAffinity);
    const auto& term = vc.nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution->nodeSelectorTerms.at(0);
    CHECK(term.matchExpressions.at(0).operator_ == "In");
    CHECK(term.matchExpressions.at(0).values == std::vector<std::string>{"ssd"});
    CHECK(vc.tolerations.size() == 2);
    CHECK(vc.tolerations[1].tolerationSeconds == 300);
    CHECK(vc.option("distributionStrategy") == R"({"train/*.jpg": 2, "val/*.jpg": 1})");
}

TEST_CASE("capacity defaults to 5Gi") {
    auto v = json::parse(R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","metadata":{"name":"x"},
      "spec":{"volumeConfigs":[{"id":"a","replicas":1,"sourceType":"NFS","accessMode":"ReadOnlyMany","labels":{"a":"b"}}]}})");
    CHECK(admit(v).empty());
    CHECK(v.at("spec").at("volumeConfigs").at(0).at("capacity") == "5Gi");
}

TEST_CASE("the older sourceURL field and spec.volumes spelling are pruned, not admitted as data") {
    auto v = json::parse(R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","metadata":{"name":"x"},
      "spec":{"volumes":[],"volumeConfigs":[{"id":"a","replicas":1,"sourceType":"S3","accessMode":"ReadWriteOnce",
      "sourceURL":"s3://b/p","labels":{"a":"b"}}]}})");
    CHECK(admit(v).empty());
    CHECK_FALSE(v.at("spec").as_object().contains("volumes"));
    CHECK_FALSE(v.at("spec").at("volumeConfigs").at(0).as_object().contains("sourceURL"));
}

TEST_CASE("a manifest without volumeConfigs is rejected as a required field") {
    auto errors = admit_text(R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","metadata":{"name":"x"},
      "spec":{"state":"Pending"}})");
    CHECK(mentions(errors, "spec.volumeConfigs: Required value"));
}

TEST_CASE("wrong types, bad enums and replicas below 1 are rejected with field paths") {
    auto errors = admit_text(R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","metadata":{"name":"x"},
      "spec":{"state":"Sleeping","volumeConfigs":[
        {"id":"a","replicas":0,"sourceType":"S3","accessMode":"ReadWriteOnce","labels":{"a":"b"}},
        {"id":"b","replicas":"2","sourceType":"S3","accessMode":"Sometimes"},
        {"id":"c","replicas":1,"sourceType":"NFS","accessMode":"ReadWriteMany","options":{"server":1},"labels":[]}]}})");
    CAPTURE(join(errors));
    CHECK(mentions(errors, R"(spec.state: Unsupported value: "Sleeping")"));
    CHECK(mentions(errors, "spec.volumeConfigs[0].replicas: Invalid value: 0: spec.volumeConfigs[0].replicas in body should be greater than or equal to 1"));
    CHECK(mentions(errors, "spec.volumeConfigs[1].replicas: Invalid value: \"string\""));
    CHECK(mentions(errors, R"(spec.volumeConfigs[1].accessMode: Unsupported value: "Sometimes")"));
    CHECK(mentions(errors, "spec.volumeConfigs[2].options.server: Invalid value: \"integer\""));
    CHECK(mentions(errors, "spec.volumeConfigs[2].labels: Invalid value: \"array\""));
}

TEST_CASE("missing required volume fields are reported per field; replicas is not one of them") {
    auto errors = admit_text(R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","metadata":{"name":"x"},
      "spec":{"volumeConfigs":[{"labels":{"a":"b"}}]}})");
    CAPTURE(join(errors));
    for (auto f : {"id", "sourceType", "accessMode"})
        CHECK(mentions(errors, "spec.volumeConfigs[0]." + std::string(f) + ": Required value"));
    CHECK_FALSE(mentions(errors, "replicas"));
}

TEST_CASE("duplicate volume ids are rejected as a list-map duplicate") {
    auto errors = admit_text(R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","metadata":{"name":"x"},
      "spec":{"volumeConfigs":[
        {"id":"a","replicas":1,"sourceType":"NFS","accessMode":"ReadWriteMany","labels":{"a":"b"}},
        {"id":"a","replicas":1,"sourceType":"NFS","accessMode":"ReadWriteMany","labels":{"a":"b"}}]}})");
    CAPTURE(join(errors));
    CHECK(mentions(errors, "spec.volumeConfigs[1]: Duplicate value"));
}

TEST_CASE("malformed node affinity and tolerations are rejected with field paths") {
    auto errors = admit_text(R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","metadata":{"name":"x"},
      "spec":{"volumeConfigs":[{"id":"a","replicas":1,"sourceType":"S3","accessMode":"ReadWriteOnce",
        "nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
          {"matchExpressions":[{"key":"disk","operator":"Near"}]}]}},
        "tolerations":[{"key":"k","effect":"Sometimes","tolerationSeconds":"soon"}]}]}})");
    CAPTURE(join(errors));
    CHECK(mentions(errors, "spec.volumeConfigs[0].nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                           "nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: \"Near\""));
    CHECK(mentions(errors, "spec.volumeConfigs[0].tolerations[0].effect: Unsupported value: \"Sometimes\""));
    CHECK(mentions(errors, "spec.volumeConfigs[0].tolerations[0].tolerationSeconds: Invalid value: \"string\""));
}

TEST_CASE("a custom sourceType is admitted: handlers, not the schema, decide which types exist") {
    auto errors = admit_text(R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","metadata":{"name":"x"},
      "spec":{"volumeConfigs":[{"id":"a","replicas":1,"sourceType":"Anything","accessMode":"ReadWriteOnce","labels":{"a":"b"}}]}})");
    CHECK(errors.empty());
}

TEST_CASE("a status with volumes, observedGeneration and a Ready condition round-trips through the schema") {
    vck::api::VolumeManager vm;
    vm.metadata.name = "x";
    vck::api::VolumeConfig vc;
    vc.id = "a";
    vc.labels = {{"a", "b"}};
    vc.replicas = 1;
    vc.sourceType = "NFS";
    vc.accessMode = "ReadWriteMany";
    vm.spec.volumeConfigs.push_back(vc);
    vck::api::VolumeManagerStatus st;
    st.state = "Running";
    st.message = "successfully deployed all sub-resources";
    st.readyVolumes = "1/1";
    st.observedGeneration = 3;
    vck::api::Condition ready;
    ready.type = "Ready";
    ready.status = "True";
    ready.reason = "AllVolumesReady";
    ready.lastTransitionTime = "2026-11-22T07:00:00Z";
    st.conditions.push_back(ready);
    vck::api::VolumeStatus vs;
    vs.id = "a";
    vs.message = "success";
    vs.volumeSource = vck::api::VolumeSource{};
    vs.volumeSource->persistentVolumeClaim = vck::api::PersistentVolumeClaimVolumeSource{"claim", std::nullopt};
    st.volumes.push_back(vs);
    vm.status = st;
    auto v = vck::api::to_json(vm);
    auto copy = v;
    CHECK(admit(v).empty());
    CHECK(v.at("status") == copy.at("status"));
    auto back = vck::api::from_json<vck::api::VolumeManager>(v);
    CHECK(back.status->observedGeneration == 3);
    CHECK(back.status->conditions.at(0).type == "Ready");
    CHECK(back.status->volumes.at(0).volumeSource->persistentVolumeClaim->claimName == "claim");
}

TEST_CASE("a status with first-batch fields (copies and volumes) round-trips through the schema, nothing pruned") {
    vck::api::VolumeManager vm;
    vm.metadata.name = "x";
    vck::api::VolumeConfig vc;
    vc.id = "a";
    vc.labels = {{"a", "b"}};
    vc.replicas = 1;
    vc.sourceType = "S3";
    vc.accessMode = "ReadWriteOnce";
    vm.spec.volumeConfigs.push_back(vc);
    vck::api::VolumeManagerStatus st;
    st.state = "Pending";
    st.message = "first batch ready, downloading the rest";
    for (std::string type : {"Ready", "DataComplete"}) {
        vck::api::Condition c;
        c.type = type;
        c.status = type == "Ready" ? "True" : "False";
        c.reason = type == "Ready" ? "FirstBatchReady" : "Downloading";
        c.lastTransitionTime = "2026-11-22T07:00:00Z";
        st.conditions.push_back(c);
    }
    vck::api::CopyRecord e;
    e.volume = "a";
    e.node = "n1";
    e.path = "/var/datasets/x";
    e.config = "c1";
    e.phase = "Downloading";
    e.filesDone = 5;
    e.filesTotal = 10;
    e.bytesDone = 500;
    e.bytesTotal = 1000;
    e.prefixFiles = 4;
    e.prefixBytes = 400;
    e.firstBatchAt = "2026-11-22T07:00:00Z";
    st.copies.push_back(e);
    vck::api::VolumeStatus vs;
    vs.id = "a";
    vs.message = "first batch ready";
    vs.prefixFiles = 4;
    vs.prefixBytes = 400;
    st.volumes.push_back(vs);
    vm.status = st;
    auto v = vck::api::to_json(vm);
    auto copy = v;
    CHECK(admit(v).empty());
    CHECK(v.at("status") == copy.at("status"));
    auto back = vck::api::from_json<vck::api::VolumeManager>(v);
    CHECK(back.status->copies.at(0).firstBatchAt == "2026-11-22T07:00:00Z");
    CHECK(back.status->copies.at(0).prefixBytes == 400);
    CHECK(back.status->volumes.at(0).prefixFiles == 4);
}

TEST_CASE("a copy record's use (inUse, lastUsed) survives the schema's pruning of status") {
    vck::api::VolumeManager vm;
    vm.metadata.name = "x";
    vck::api::VolumeConfig vc;
    vc.id = "a";
    vc.labels = {{"a", "b"}};
    vc.replicas = 1;
    vc.sourceType = "S3";
    vc.accessMode = "ReadWriteOnce";
    vm.spec.volumeConfigs.push_back(vc);
    vck::api::VolumeManagerStatus st;
    st.state = "Running";
    vck::api::CopyRecord e;
    e.volume = "a";
    e.node = "node-1";
    e.path = "/var/datasets/vck-resource-x";
    e.config = "abc";
    e.phase = "Ready";
    e.readyAt = "2026-11-22T07:00:00Z";
    e.inUse = true;
    e.lastUsed = "2026-11-22T08:00:00Z";
    st.copies.push_back(e);
    vm.status = st;
    auto v = vck::api::to_json(vm);
    auto copy = v;
    auto errors = admit(v);
    CHECK_MESSAGE(errors.empty(), (errors.empty() ? std::string() : errors.front()));
    CHECK(v.at("status") == copy.at("status"));
    auto back = vck::api::from_json<vck::api::VolumeManager>(v);
    CHECK(back.status->copies.at(0).inUse == std::optional<bool>(true));
    CHECK(back.status->copies.at(0).lastUsed == "2026-11-22T08:00:00Z");
}

TEST_CASE("a manifest in the older KVC spelling (spec.volumes only) is rejected, not silently emptied") {
    auto errors = admit_text(R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","metadata":{"name":"x"},
      "spec":{"volumes":[{"id":"a","replicas":1,"sourceType":"NFS","accessMode":"ReadWriteMany","labels":{"a":"b"}}]}})");
    CHECK(mentions(errors, "spec.volumeConfigs: Required value"));
}

TEST_CASE("volume ids up to 253 characters are admitted, longer ones and empty ones are not") {
    auto manifest = [](const std::string& id) {
        return R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","metadata":{"name":"x"},
          "spec":{"volumeConfigs":[{"id":")" + id + R"(","replicas":1,"sourceType":"NFS","accessMode":"ReadWriteMany","labels":{"a":"b"}}]}})";
    };
    CHECK(admit_text(manifest(std::string(253, 'v'))).empty());
    auto too_long = admit_text(manifest(std::string(254, 'v')));
    CHECK(mentions(too_long, "spec.volumeConfigs[0].id: Too long"));
    CHECK(mentions(admit_text(manifest("")), "spec.volumeConfigs[0].id: Invalid value"));
}

TEST_CASE("tolerations with core's empty operator and effect are admitted") {
    auto errors = admit_text(R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","metadata":{"name":"x"},
      "spec":{"volumeConfigs":[{"id":"a","replicas":1,"sourceType":"S3","accessMode":"ReadWriteOnce",
        "labels":{"a":"b"},"tolerations":[{"key":"k","operator":"","value":"v","effect":""},{"operator":"Exists"}]}]}})");
    CHECK_MESSAGE(errors.empty(), join(errors));
}

namespace {

std::string one_volume(const std::string& volume_fields) {
    return std::string(R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","metadata":{"name":"x"},
      "spec":{"volumeConfigs":[{"id":"a","sourceType":"NFS","accessMode":"ReadWriteMany")") +
           (volume_fields.find("\"labels\"") == std::string::npos ? R"(,"labels":{"a":"b"})" : "") +
           (volume_fields.empty() ? "" : "," + volume_fields) + "}]}}";
}

} // namespace

TEST_CASE("a VolumeManager without spec, or with no volume configs, is refused") {
    auto no_spec = admit_text(R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","metadata":{"name":"x"}})");
    CHECK(mentions(no_spec, "spec: Required value"));
    auto empty = admit_text(R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","metadata":{"name":"x"},
      "spec":{"volumeConfigs":[]}})");
    CAPTURE(join(empty));
    CHECK(mentions(empty, "spec.volumeConfigs: Invalid value: 0: spec.volumeConfigs in body should have at least 1 items"));
}

TEST_CASE("a volume without replicas is admitted as written; replicas outside 1..10000 are not") {
    auto v = json::parse(one_volume(R"("options":{"server":"10.0.0.5","path":"/exports"})"));
    auto errors = admit(v);
    CHECK_MESSAGE(errors.empty(), join(errors));
    CHECK_FALSE(v.at("spec").at("volumeConfigs").at(0).as_object().contains("replicas"));
    CHECK(vck::api::from_json<vck::api::VolumeManager>(v).spec.volumeConfigs.at(0).replicas == 1);
    CHECK(admit_text(one_volume(R"("replicas":10000)")).empty());
    CHECK(mentions(admit_text(one_volume(R"("replicas":10001)")),
                   "spec.volumeConfigs[0].replicas: Invalid value: 10001: spec.volumeConfigs[0].replicas in body "
                   "should be less than or equal to 10000"));
    CHECK(mentions(admit_text(one_volume(R"("replicas":0)")), "spec.volumeConfigs[0].replicas: Invalid value: 0"));
}

TEST_CASE("capacity admits every non-negative resource.Quantity spelling, as quantity_value reads them") {
    for (std::string q : {"5Gi", ".5Gi", "5.Gi", "1.5Gi", "+1Gi", "0", "10", "500m", "1n", "2u", "1k", "1M", "1G",
                          "1T", "1P", "1E", "1Ki", "1Mi", "1Ti", "1Pi", "1Ei", "1e9", "1E9", "1e+9", "1e-3", ".5e1"}) {
        CAPTURE(q);
        CHECK(vck::api::quantity_value(q));
        auto errors = admit_text(one_volume(R"("capacity":")" + q + R"(")"));
        CHECK_MESSAGE(errors.empty(), join(errors));
    }
    for (std::string q : {"", ".", "Gi", "5GB", "5gi", "1.2.3", "1e", "1e3.5", "1e3Gi", " 5Gi", "5Gi "}) {
        CAPTURE(q);
        CHECK_FALSE(vck::api::quantity_value(q));
        CHECK(mentions(admit_text(one_volume(R"("capacity":")" + q + R"(")")), "spec.volumeConfigs[0].capacity: Invalid value"));
    }
    // A negative quantity is a quantity, but never a capacity: refused at admission already.
    CHECK(vck::api::quantity_value("-1Gi"));
    CHECK(mentions(admit_text(one_volume(R"("capacity":"-1Gi")")), "spec.volumeConfigs[0].capacity: Invalid value"));
}

TEST_CASE("a volume without labels, or with an empty labels map, is refused by the schema alone (no webhook)") {
    auto none = admit_text(R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","metadata":{"name":"x"},
      "spec":{"volumeConfigs":[{"id":"a","sourceType":"NFS","accessMode":"ReadWriteMany"}]}})");
    CAPTURE(join(none));
    CHECK(mentions(none, "spec.volumeConfigs[0].labels: Required value"));
    auto empty = admit_text(one_volume(R"("labels":{})"));
    CAPTURE(join(empty));
    CHECK(mentions(empty, "spec.volumeConfigs[0].labels: Invalid value: 0: spec.volumeConfigs[0].labels in body should have at least 1 properties"));
}

TEST_CASE("every field of the status has a description (kubectl explain volumemanager.status --recursive)") {
    auto crd = load_yaml(source_root() / "crds/volumemanager.yaml");
    const auto& status = crd.at("spec").at("versions").at(0).at("schema").at("openAPIV3Schema").at("properties").at("status");
    std::vector<std::string> missing;
    auto walk = [&](auto&& self, const json::value& node, const std::string& path) -> void {
        if (!node.as_object().contains("description")) missing.push_back(path);
        if (const auto* props = node.as_object().if_contains("properties"))
            for (const auto& [k, v] : props->as_object()) self(self, v, path + "." + std::string(k));
        if (const auto* items = node.as_object().if_contains("items"))
            if (const auto* props = items->as_object().if_contains("properties"))
                for (const auto& [k, v] : props->as_object()) self(self, v, path + "[]." + std::string(k));
    };
    walk(walk, status, "status");
    CHECK_MESSAGE(missing.empty(), join(missing));
}

TEST_CASE("label values the API server would refuse are refused at admission; keys are the controller's to check") {
    CHECK(admit_text(one_volume(R"("labels":{"app":"","tier":"My_value-1.2"})")).empty());
    auto too_long = admit_text(one_volume(R"("labels":{"app":")" + std::string(64, 'v') + R"("})"));
    CHECK(mentions(too_long, "spec.volumeConfigs[0].labels.app: Too long: may not be more than 63 bytes"));
    auto spaced = admit_text(one_volume(R"("labels":{"app":"two words"})"));
    CHECK(mentions(spaced, R"(spec.volumeConfigs[0].labels.app: Invalid value: "two words")"));
    // An OpenAPI schema cannot constrain map keys (apiextensions has no propertyNames).
    CHECK(admit_text(one_volume(R"("labels":{"bad key":"v"})")).empty());
}

TEST_CASE("an output volume's status (a copy Uploading, upload counts per copy and per volume) round-trips through the schema") {
    vck::api::VolumeManager vm;
    vm.metadata.name = "x";
    vck::api::VolumeConfig vc;
    vc.id = "results";
    vc.labels = {{"a", "b"}};
    vc.replicas = 1;
    vc.sourceType = "S3-Output";
    vc.accessMode = "ReadWriteOnce";
    vc.labels = {{"run", "42"}};
    vc.options = {{"sourceURL", "s3://b/runs/42"}, {"awsCredentialsSecretName", "creds"}};
    vm.spec.volumeConfigs.push_back(vc);
    vm.spec.state = "Completed";
    vck::api::VolumeManagerStatus st;
    st.state = "Completed";
    vck::api::CopyRecord uploading;
    uploading.volume = "results";
    uploading.node = "n1";
    uploading.path = "/var/datasets/vck-resource-x";
    uploading.config = "c1";
    uploading.phase = "Uploading";
    uploading.uploadAttempts = 3;
    uploading.message = "upload attempt 2 failed";
    vck::api::CopyRecord uploaded = uploading;
    uploaded.replica = 1;
    uploaded.phase = "Removing";
    uploaded.filesUploaded = 12;
    uploaded.bytesUploaded = 3400;
    st.copies = {uploading, uploaded};
    vck::api::VolumeStatus vs;
    vs.id = "results";
    vs.filesUploaded = 12;
    vs.bytesUploaded = 3400;
    st.volumes.push_back(vs);
    vm.status = st;
    auto v = vck::api::to_json(vm);
    auto copy = v;
    CHECK(admit(v).empty());
    CHECK(v.at("status") == copy.at("status"));  // nothing pruned
    auto back = vck::api::from_json<vck::api::VolumeManager>(v);
    CHECK(back.status->copies.at(0).uploadAttempts == 3);
    CHECK(back.status->copies.at(1).filesUploaded == 12);
    CHECK(back.status->volumes.at(0).bytesUploaded == 3400);
}
