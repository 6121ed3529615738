// The decisions of VCK's pod webhook and of ungating (include/vck/volumes/pod_injection.hpp),
// on pods as JSON and VolumeManagers built by hand: no API server, no socket.
#include <vck/volumes/pod_injection.hpp>

#include <doctest.h>

#include <boost/json.hpp>

#include <string>
#include <vector>

namespace {

using namespace vck;
namespace json = boost::json;
using volumes::PodDataAction;

const handlers::HandlerRegistry& builtin() {
    static const auto r = handlers::HandlerRegistry::with_builtin_handlers();
    return r;
}

api::VolumeConfig s3_volume(std::string id, std::int64_t replicas = 2) {
    api::VolumeConfig vc;
    vc.id = std::move(id);
    vc.replicas = replicas;
    vc.sourceType = "S3";
    vc.accessMode = "ReadWriteOnce";
    vc.labels = {{"key1", "val1"}};
    vc.options = {{"awsCredentialsSecretName", "aws-creds"}, {"sourceURL", "s3://bucket/" + vc.id + "/"}};
    return vc;
}

api::VolumeConfig nfs_volume(std::string id, std::string mode) {
    api::VolumeConfig vc;
    vc.id = std::move(id);
    vc.sourceType = "NFS";
    vc.accessMode = std::move(mode);
    vc.labels = {{"key1", "val1"}};
    vc.options = {{"server", "10.0.0.1"}, {"path", "/exports/data"}};
    return vc;
}

/// VolumeManager "data" in namespace "team": S3 volumes train and test, NFS volume shared.
api::VolumeManager data_vm() {
    api::VolumeManager vm;
    vm.metadata.name = "data";
    vm.metadata.namespace_ = "team";
    vm.metadata.uid = "uid-1";
    vm.metadata.generation = 1;
    vm.spec.volumeConfigs = {s3_volume("train"), s3_volume("test"), nfs_volume("shared", "ReadOnlyMany")};
    vm.status = api::VolumeManagerStatus{};
    vm.status->state = "Pending";
    vm.status->observedGeneration = 1;
    return vm;
}

const api::VolumeConfig& config_of(const api::VolumeManager& vm, const std::string& id) {
    for (const auto& vc : vm.spec.volumeConfigs)
        if (vc.id == id) return vc;
    throw std::logic_error("no volume " + id);
}

/// Where the copy planner puts the copies of a volume of `vm` (data path /var/datasets).
std::string copy_path(const api::VolumeManager& vm, const std::string& id) {
    return handlers::naming::copy_directory("/var/datasets", vm.metadata.uid, id,
                                            handlers::naming::source_config_digest(config_of(vm, id)));
}

std::string data_key(const std::string& id) { return handlers::naming::node_label_key("team", "data", id); }

api::VolumeStatus& status_entry(api::VolumeManager& vm, const std::string& id) {
    for (auto& v : vm.status->volumes)
        if (v.id == id) return v;
    vm.status->volumes.push_back({});
    vm.status->volumes.back().id = id;
    return vm.status->volumes.back();
}

/// Marks a copied volume Ready on `nodes`, as the reconciler reports it.
void copies_ready(api::VolumeManager& vm, const std::string& id, std::vector<std::string> nodes) {
    auto config = handlers::naming::source_config_digest(config_of(vm, id));
    std::int64_t r = 0;
    for (const auto& n : nodes) {
        api::CopyRecord c;
        c.volume = id;
        c.replica = r++;
        c.node = n;
        c.path = copy_path(vm, id);
        c.config = config;
        c.phase = "Ready";
        vm.status->copies.push_back(c);
    }
    auto& st = status_entry(vm, id);
    st.message = "success";
    st.volumeSource = api::VolumeSource{};
    st.volumeSource->hostPath = api::HostPathVolumeSource{copy_path(vm, id), ""};
    st.nodeAffinity = handlers::data_node_affinity(data_key(id));
    st.nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution->nodeSelectorTerms[0].matchExpressions[0].values = {
        config};
}

void claim_ready(api::VolumeManager& vm, const std::string& id) {
    auto& st = status_entry(vm, id);
    st.message = "success";
    st.volumeSource = api::VolumeSource{};
    st.volumeSource->persistentVolumeClaim =
        api::PersistentVolumeClaimVolumeSource{handlers::naming::object_name("uid-1", id, "claim"), std::nullopt};
}

api::VolumeManager all_ready() {
    auto vm = data_vm();
    copies_ready(vm, "train", {"node-1", "node-2"});
    copies_ready(vm, "test", {"node-2", "node-3"});
    claim_ready(vm, "shared");
    vm.status->state = "Running";
    return vm;
}

/// A pod labelled for VolumeManager "data" (no name yet: generateName), with `extra` merged
/// into its metadata.annotations and spec.
json::value labelled_pod(json::object annotations = {}, json::object spec_extra = {}) {
    json::value pod = json::parse(R"({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": "trainer-", "labels": {"vck.intelai.org/volume-manager": "data", "app": "t"}},
        "spec": {
            "initContainers": [{"name": "prep", "image": "busybox"}],
            "containers": [
                {"name": "main", "image": "trainer", "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]},
                {"name": "sidecar", "image": "logger"}
            ],
            "volumes": [{"name": "cache", "emptyDir": {}}],
            "futureField": {"kept": true}
        }
    })");
    if (!annotations.empty()) pod.at("metadata").as_object()["annotations"] = annotations;
    for (const auto& kv : spec_extra) pod.at("spec").as_object()[kv.key()] = kv.value();
    return pod;
}

volumes::PodInjection inject(const json::value& pod, const api::VolumeManager* vm) {
    return volumes::inject_pod(pod, "team", vm, builtin());
}

const json::object* find_named(const json::value& list, const std::string& name) {
    for (const auto& v : list.as_array())
        if (v.at("name").as_string() == name) return &v.as_object();
    return nullptr;
}

const json::object* container(const json::value& pod, const std::string& list, const std::string& name) {
    return find_named(pod.at("spec").at(list), name);
}

std::vector<std::string> mount_paths(const json::object* c) {
    std::vector<std::string> out;
    if (!c || !c->contains("volumeMounts")) return out;
    for (const auto& m : c->at("volumeMounts").as_array()) out.emplace_back(m.at("mountPath").as_string());
    return out;
}

json::value required_terms(const json::value& pod) {
    return pod.at("spec").at("affinity").at("nodeAffinity").at("requiredDuringSchedulingIgnoredDuringExecution").at(
        "nodeSelectorTerms");
}

json::value requirement(const std::string& key, const std::string& value) {
    return json::object{{"key", key}, {"operator", "In"}, {"values", json::array{json::value(value)}}};
}

json::value data_requirement(const api::VolumeManager& vm, const std::string& id) {
    return requirement(data_key(id), handlers::naming::source_config_digest(config_of(vm, id)));
}

bool gated(const json::value& pod) {
    const auto* g = pod.at("spec").as_object().if_contains("schedulingGates");
    if (!g) return false;
    for (const auto& x : g->as_array())
        if (x.at("name").as_string() == "vck.intelai.org/data") return true;
    return false;
}

} // namespace

TEST_CASE("a pod without the volume-manager label is allowed unchanged") {
    auto vm = all_ready();
    auto pod = labelled_pod();
    pod.at("metadata").at("labels").as_object().erase("vck.intelai.org/volume-manager");
    auto r = inject(pod, &vm);
    CHECK(r.allowed);
    CHECK_FALSE(r.changed);
    CHECK(r.pod == pod);
    CHECK_FALSE(volumes::requested_volume_manager(pod));
    CHECK(volumes::requested_volume_manager(labelled_pod()) == std::optional<std::string>("data"));
}

TEST_CASE("a pod naming a VolumeManager that does not exist is refused with what to fix") {
    auto r = inject(labelled_pod(), nullptr);
    CHECK_FALSE(r.allowed);
    CHECK(r.message == "volumemanager \"data\" not found in namespace \"team\": create it first or fix the label "
                       "vck.intelai.org/volume-manager");
    // A VolumeManager of the same name in another namespace is not the pod's.
    auto elsewhere = all_ready();
    elsewhere.metadata.namespace_ = "other";
    CHECK(inject(labelled_pod(), &elsewhere).message == r.message);
}

TEST_CASE("a pod naming a VolumeManager being deleted, or one whose desired state is Completed, is refused") {
    auto vm = all_ready();
    vm.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
    auto r = inject(labelled_pod(), &vm);
    CHECK_FALSE(r.allowed);
    CHECK(r.message == "volumemanager \"data\" in namespace \"team\" is being deleted and its data removed: create the "
                       "pod with another VolumeManager");
    auto done = all_ready();
    done.spec.state = "Completed";
    auto c = inject(labelled_pod(), &done);
    CHECK_FALSE(c.allowed);
    CHECK(c.message.find("has spec.state Completed, so it serves no data") != std::string::npos);
}

TEST_CASE("an unknown volume id is refused with the ids that exist") {
    auto vm = all_ready();
    auto r = inject(labelled_pod({{"vck.intelai.org/volumes", "train,imagenet"}}), &vm);
    CHECK_FALSE(r.allowed);
    CHECK(r.message == "volume \"imagenet\" named in vck.intelai.org/volumes does not exist in volumemanager \"data\": "
                       "its volumes are \"train\", \"test\", \"shared\"");
}

TEST_CASE("a volume that failed is refused with its status message") {
    auto vm = data_vm();
    copies_ready(vm, "train", {"node-1", "node-2"});
    vm.status->state = "Failed";
    status_entry(vm, "test").message = "replicas [2] greater than number of nodes [1]";
    auto r = inject(labelled_pod({{"vck.intelai.org/volumes", "train,test"}}), &vm);
    CHECK_FALSE(r.allowed);
    CHECK(r.message == "volume \"test\" of volumemanager \"data\" failed: replicas [2] greater than number of nodes [1]");
    // The Ready volume of the same Failed VolumeManager still serves.
    CHECK(inject(labelled_pod({{"vck.intelai.org/volumes", "train"}}), &vm).allowed);
    // A status older than the spec may be about to change: the pod waits instead.
    vm.metadata.generation = 2;
    auto waits = inject(labelled_pod({{"vck.intelai.org/volumes", "train,test"}}), &vm);
    CHECK(waits.allowed);
    CHECK(waits.gated);
}

TEST_CASE("a volume whose options are invalid is refused with the handler's message") {
    auto vm = data_vm();
    vm.spec.volumeConfigs[0].options.erase("sourceURL");
    auto r = inject(labelled_pod({{"vck.intelai.org/volumes", "train"}}), &vm);
    CHECK_FALSE(r.allowed);
    CHECK(r.message == "volume \"train\" of volumemanager \"data\" failed: sourceURL has to be set in options");
}

TEST_CASE("a mount path that is not absolute is refused") {
    auto vm = all_ready();
    auto r = inject(labelled_pod({{"vck.intelai.org/mount-path", "datasets"}}), &vm);
    CHECK_FALSE(r.allowed);
    CHECK(r.message == "vck.intelai.org/mount-path \"datasets\" has to be an absolute path");
    auto o = inject(labelled_pod({{"vck.intelai.org/mount-paths", "train=data/train"}}), &vm);
    CHECK_FALSE(o.allowed);
    CHECK(o.message == "vck.intelai.org/mount-paths path \"data/train\" of volume \"train\" has to be an absolute path");
    auto m = inject(labelled_pod({{"vck.intelai.org/mount-paths", "train"}}), &vm);
    CHECK_FALSE(m.allowed);
    CHECK(m.message == "vck.intelai.org/mount-paths entry \"train\" has to be <volume id>=<absolute path>");
    auto same = inject(labelled_pod({{"vck.intelai.org/mount-paths", "train=/d,test=/d/"}}), &vm);
    CHECK_FALSE(same.allowed);
    CHECK(same.message == "volumes \"train\" and \"test\" would both be mounted at \"/d\": give one another path in "
                          "vck.intelai.org/mount-paths");
}

TEST_CASE("a container name that does not exist is refused with the containers the pod has") {
    auto vm = all_ready();
    auto r = inject(labelled_pod({{"vck.intelai.org/containers", "main,trainer"}}), &vm);
    CHECK_FALSE(r.allowed);
    CHECK(r.message == "container \"trainer\" named in vck.intelai.org/containers does not exist in the pod: its "
                       "containers are \"main\", \"sidecar\", \"prep\"");
}

TEST_CASE("a volume name or mount path the pod already uses is refused") {
    auto vm = all_ready();
    auto pod = labelled_pod();
    pod.at("spec").at("volumes").as_array().push_back(
        json::object{{"name", volumes::pod_volume_name("train")}, {"emptyDir", json::object()}});
    auto r = inject(pod, &vm);
    CHECK_FALSE(r.allowed);
    CHECK(r.message == "the pod already has a volume named \"" + volumes::pod_volume_name("train") +
                           "\", the name VCK gives volume \"train\": rename the pod's volume");
    auto m = inject(labelled_pod({{"vck.intelai.org/mount-path", "/"}, {"vck.intelai.org/mount-paths", "train=/cache/"}}),
                    &vm);
    CHECK_FALSE(m.allowed);
    CHECK(m.message == "container \"main\" already mounts something at \"/cache\", where volume \"train\" would go: "
                       "choose another vck.intelai.org/mount-path or vck.intelai.org/mount-paths");
}

TEST_CASE("by default every volume is mounted read-only at /var/datasets/<id> in every container, not init containers") {
    auto vm = all_ready();
    auto r = inject(labelled_pod(), &vm);
    REQUIRE(r.allowed);
    CHECK(r.changed);
    CHECK_FALSE(r.gated);
    CHECK(r.warnings.empty());
    CHECK(r.volumes == std::vector<std::string>{"train", "test", "shared"});
    const auto& pod = r.pod;
    // The pod's own fields, known or not, are kept.
    CHECK(pod.at("spec").at("futureField") == json::parse(R"({"kept": true})"));
    CHECK(find_named(pod.at("spec").at("volumes"), "cache"));
    const auto* train = find_named(pod.at("spec").at("volumes"), volumes::pod_volume_name("train"));
    REQUIRE(train);
    CHECK(train->at("hostPath") == json::value(json::object{{"path", copy_path(vm, "train")}, {"type", "Directory"}}));
    const auto* shared = find_named(pod.at("spec").at("volumes"), volumes::pod_volume_name("shared"));
    REQUIRE(shared);
    CHECK(shared->at("persistentVolumeClaim").at("claimName").as_string() == handlers::naming::object_name("uid-1", "shared", "claim"));
    for (const char* c : {"main", "sidecar"}) {
        auto paths = mount_paths(container(pod, "containers", c));
        CHECK(std::count(paths.begin(), paths.end(), "/var/datasets/train") == 1);
        CHECK(std::count(paths.begin(), paths.end(), "/var/datasets/test") == 1);
        CHECK(std::count(paths.begin(), paths.end(), "/var/datasets/shared") == 1);
        for (const auto& m : container(pod, "containers", c)->at("volumeMounts").as_array())
            if (m.at("name").as_string().starts_with("vck-")) CHECK(m.at("readOnly") == true);
    }
    CHECK(mount_paths(container(pod, "initContainers", "prep")).empty());
    CHECK(pod.at("metadata").at("annotations").at("vck.intelai.org/injected-volumes") == "train,test,shared");
    CHECK_FALSE(gated(pod));
}

TEST_CASE("annotations choose the volumes, the base directory, per-volume paths and the containers") {
    auto vm = all_ready();
    auto r = inject(labelled_pod({{"vck.intelai.org/volumes", " test , shared"},
                                  {"vck.intelai.org/mount-path", "/data/"},
                                  {"vck.intelai.org/mount-paths", "shared=/mnt/shared"},
                                  {"vck.intelai.org/containers", "sidecar,prep"}}),
                    &vm);
    REQUIRE(r.allowed);
    CHECK(r.volumes == std::vector<std::string>{"test", "shared"});
    CHECK_FALSE(find_named(r.pod.at("spec").at("volumes"), volumes::pod_volume_name("train")));
    CHECK(mount_paths(container(r.pod, "containers", "main")) == std::vector<std::string>{"/cache"});
    CHECK(mount_paths(container(r.pod, "containers", "sidecar")) == std::vector<std::string>{"/data/test", "/mnt/shared"});
    CHECK(mount_paths(container(r.pod, "initContainers", "prep")) == std::vector<std::string>{"/data/test", "/mnt/shared"});
}

TEST_CASE("a volume id that is no directory name needs a per-volume mount path") {
    auto vm = data_vm();
    vm.spec.volumeConfigs = {s3_volume("set/a")};
    copies_ready(vm, "set/a", {"node-1", "node-2"});
    auto r = inject(labelled_pod(), &vm);
    CHECK_FALSE(r.allowed);
    CHECK(r.message == "volume id \"set/a\" cannot be a directory name under /var/datasets: give it a mount path in "
                       "vck.intelai.org/mount-paths (\"set/a=/some/path\")");
    auto ok = inject(labelled_pod({{"vck.intelai.org/mount-paths", "set/a=/data/a"}}), &vm);
    CHECK(ok.allowed);
    CHECK(volumes::pod_volume_name("set/a").starts_with("vck-set-a-"));
    CHECK(volumes::pod_volume_name("set/a") != volumes::pod_volume_name("set.a"));
    CHECK(volumes::pod_volume_name(std::string(200, 'x')).size() <= 63);
}

TEST_CASE("a pod without node affinity gets the data's required term") {
    auto vm = all_ready();
    auto r = inject(labelled_pod({{"vck.intelai.org/volumes", "train"}}), &vm);
    REQUIRE(r.allowed);
    CHECK(required_terms(r.pod) ==
          json::value(json::array{json::object{{"matchExpressions", json::array{data_requirement(vm, "train")}}}}));
}

TEST_CASE("a pod's one required term is ANDed with the data's; preferred terms and pod affinity are kept") {
    auto vm = all_ready();
    json::value affinity = json::parse(R"({
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}]
        },
        "podAntiAffinity": {"x": 1}
    })");
    auto r = inject(labelled_pod({{"vck.intelai.org/volumes", "train,test"}}, {{"affinity", affinity}}), &vm);
    REQUIRE(r.allowed);
    json::array expected{json::object{{"matchExpressions", json::array{json::parse(R"({"key": "gpu", "operator": "Exists"})"),
                                                                      data_requirement(vm, "train"),
                                                                      data_requirement(vm, "test")}}}};
    CHECK(required_terms(r.pod) == json::value(expected));
    const auto& a = r.pod.at("spec").at("affinity");
    CHECK(a.at("nodeAffinity").at("preferredDuringSchedulingIgnoredDuringExecution") ==
          affinity.at("nodeAffinity").at("preferredDuringSchedulingIgnoredDuringExecution"));
    CHECK(a.at("podAntiAffinity") == affinity.at("podAntiAffinity"));
}

TEST_CASE("each of a pod's two required terms is ANDed with the data's term (terms stay ORed)") {
    auto vm = all_ready();
    json::value affinity = json::parse(R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["big-node"]}]}]}}})");
    auto r = inject(labelled_pod({{"vck.intelai.org/volumes", "train"}}, {{"affinity", affinity}}), &vm);
    REQUIRE(r.allowed);
    auto terms = required_terms(r.pod).as_array();
    REQUIRE(terms.size() == 2);
    CHECK(terms[0].at("matchExpressions") ==
          json::value(json::array{json::parse(R"({"key": "gpu", "operator": "Exists"})"), data_requirement(vm, "train")}));
    CHECK(terms[1].at("matchFields") == affinity.at("nodeAffinity")
                                            .at("requiredDuringSchedulingIgnoredDuringExecution")
                                            .at("nodeSelectorTerms")
                                            .at(1)
                                            .at("matchFields"));
    CHECK(terms[1].at("matchExpressions") == json::value(json::array{data_requirement(vm, "train")}));
}

TEST_CASE("data with two terms multiplies a pod's two terms into four") {
    // A user handler may report several terms: (p1 or p2) and (d1 or d2).
    json::object spec{{"affinity", json::parse(R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "p1", "operator": "Exists"}]},
                              {"matchExpressions": [{"key": "p2", "operator": "Exists"}]}]}}})")}};
    api::NodeAffinity data;
    data.requiredDuringSchedulingIgnoredDuringExecution = api::NodeSelector{
        {api::NodeSelectorTerm{{api::NodeSelectorRequirement{"d1", "Exists", {}}}, {}},
         api::NodeSelectorTerm{{api::NodeSelectorRequirement{"d2", "Exists", {}}}, {}}}};
    REQUIRE(volumes::injection_detail::merge_required_affinity(spec, {data}, false));
    auto keys = [](const json::value& term) {
        std::string out;
        for (const auto& r : term.at("matchExpressions").as_array()) out += std::string(r.at("key").as_string()) + " ";
        return out;
    };
    const auto& terms = spec.at("affinity").at("nodeAffinity").at("requiredDuringSchedulingIgnoredDuringExecution").at(
        "nodeSelectorTerms").as_array();
    REQUIRE(terms.size() == 4);
    CHECK(keys(terms[0]) == "p1 d1 ");
    CHECK(keys(terms[1]) == "p1 d2 ");
    CHECK(keys(terms[2]) == "p2 d1 ");
    CHECK(keys(terms[3]) == "p2 d2 ");
    // On a gated pod only requirements may be added: several data terms cannot be.
    CHECK_FALSE(volumes::injection_detail::merge_required_affinity(spec, {data}, true));
}

TEST_CASE("a pod whose data is still downloading is gated, mounts the directory the data will have, and is warned") {
    auto vm = data_vm();
    status_entry(vm, "train").message = "downloading: 0 of 2 replicas done";
    auto r = inject(labelled_pod({{"vck.intelai.org/volumes", "train"}}), &vm);
    REQUIRE(r.allowed);
    CHECK(r.gated);
    CHECK(gated(r.pod));
    CHECK(r.warnings == std::vector<std::string>{"volume \"train\" is not ready yet (downloading: 0 of 2 replicas "
                                                 "done); the pod waits for it (scheduling gate vck.intelai.org/data)"});
    const auto* train = find_named(r.pod.at("spec").at("volumes"), volumes::pod_volume_name("train"));
    REQUIRE(train);
    CHECK(train->at("hostPath").at("path").as_string() == copy_path(vm, "train"));
    CHECK(train->at("hostPath").at("type") == "Directory");
    // No node holds it yet: the affinity comes with the ungating.
    CHECK_FALSE(r.pod.at("spec").as_object().contains("affinity"));
    // Without any status yet, the same.
    auto fresh = data_vm();
    fresh.status.reset();
    auto f = inject(labelled_pod({{"vck.intelai.org/volumes", "train"}}), &fresh);
    CHECK(f.gated);
    CHECK(find_named(f.pod.at("spec").at("volumes"), volumes::pod_volume_name("train"))->at("hostPath").at("path").as_string() ==
          copy_path(vm, "train"));
}

TEST_CASE("while a changed source downloads, a new pod waits for the new data instead of the old directory") {
    auto vm = all_ready();
    vm.spec.volumeConfigs[0].options["sourceURL"] = "s3://bucket/train-v2/";  // the status still names v1
    auto r = inject(labelled_pod({{"vck.intelai.org/volumes", "train"}}), &vm);
    REQUIRE(r.allowed);
    CHECK(r.gated);
    CHECK(find_named(r.pod.at("spec").at("volumes"), volumes::pod_volume_name("train"))->at("hostPath").at("path").as_string() ==
          copy_path(vm, "train"));
    CHECK(r.warnings.at(0).find("its previous source config still serves") != std::string::npos);
}

TEST_CASE("a pod bound to a node is refused when the node has no copy, or when the data is not ready") {
    auto vm = all_ready();
    auto bad = inject(labelled_pod({{"vck.intelai.org/volumes", "train"}}, {{"nodeName", "node-3"}}), &vm);
    CHECK_FALSE(bad.allowed);
    CHECK(bad.message == "the pod is bound to node \"node-3\" (spec.nodeName), which does not hold volume \"train\": its "
                         "data is on \"node-1\", \"node-2\": remove spec.nodeName or pick one of those nodes");
    CHECK(inject(labelled_pod({{"vck.intelai.org/volumes", "train"}}, {{"nodeName", "node-2"}}), &vm).allowed);
    auto pending = data_vm();
    status_entry(pending, "train").message = "downloading: 0 of 2 replicas done";
    auto w = inject(labelled_pod({{"vck.intelai.org/volumes", "train"}}, {{"nodeName", "node-2"}}), &pending);
    CHECK_FALSE(w.allowed);
    CHECK(w.message == "volume \"train\" is not ready (downloading: 0 of 2 replicas done) and the pod is bound to node "
                       "\"node-2\" (spec.nodeName), so it cannot wait for the data: remove spec.nodeName or create the "
                       "pod once the volume is Ready");
}

TEST_CASE("an S3-Output volume is mounted writable: the job writes its output into it") {
    auto vm = data_vm();
    auto out = s3_volume("results", 1);
    out.sourceType = "S3-Output";
    vm.spec.volumeConfigs = {out, s3_volume("train", 1)};
    auto r = inject(labelled_pod(), &vm);
    REQUIRE(r.allowed);
    for (const auto& m : container(r.pod, "containers", "main")->at("volumeMounts").as_array()) {
        if (m.at("name").as_string() == volumes::pod_volume_name("results")) CHECK_FALSE(m.as_object().contains("readOnly"));
        if (m.at("name").as_string() == volumes::pod_volume_name("train")) CHECK(m.at("readOnly") == true);
    }
}

TEST_CASE("NFS volumes are mounted through their claim, read-only only when ReadOnlyMany, and gated until bound") {
    auto vm = data_vm();
    vm.spec.volumeConfigs = {nfs_volume("shared", "ReadOnlyMany"), nfs_volume("scratch", "ReadWriteMany")};
    claim_ready(vm, "shared");
    status_entry(vm, "scratch").message = "waiting for claim x to bind";
    auto r = inject(labelled_pod({{"vck.intelai.org/containers", "main"}}), &vm);
    REQUIRE(r.allowed);
    CHECK(r.gated);
    const auto* scratch = find_named(r.pod.at("spec").at("volumes"), volumes::pod_volume_name("scratch"));
    REQUIRE(scratch);
    CHECK(scratch->at("persistentVolumeClaim").at("claimName").as_string() == handlers::naming::object_name("uid-1", "scratch", "claim"));
    for (const auto& m : container(r.pod, "containers", "main")->at("volumeMounts").as_array()) {
        if (m.at("name").as_string() == volumes::pod_volume_name("shared")) CHECK(m.at("readOnly") == true);
        if (m.at("name").as_string() == volumes::pod_volume_name("scratch")) CHECK_FALSE(m.as_object().contains("readOnly"));
    }
    // Claims carry no node affinity of their own: the PV's is the scheduler's business.
    CHECK_FALSE(r.pod.at("spec").as_object().contains("affinity"));
}

TEST_CASE("an S3 volume with resync is mounted writable: local changes are synced back") {
    auto vm = data_vm();
    vm.spec.volumeConfigs = {s3_volume("train", 1)};
    vm.spec.volumeConfigs[0].options["resync"] = "true";
    copies_ready(vm, "train", {"node-1"});
    auto r = inject(labelled_pod({{"vck.intelai.org/containers", "sidecar"}}), &vm);
    REQUIRE(r.allowed);
    CHECK_FALSE(container(r.pod, "containers", "sidecar")->at("volumeMounts").at(0).as_object().contains("readOnly"));
}

TEST_CASE("a pod injected already is left as it is (a reinvoked webhook changes nothing)") {
    auto vm = all_ready();
    auto first = inject(labelled_pod(), &vm);
    auto again = inject(first.pod, &vm);
    CHECK(again.allowed);
    CHECK_FALSE(again.changed);
    CHECK(again.pod == first.pod);
}

TEST_CASE("a gated pod is ungated once its data is ready, its terms narrowed to the nodes holding it") {
    auto vm = data_vm();
    json::value affinity = json::parse(R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
                              {"matchExpressions": [{"key": "big", "operator": "Exists"}]}]}}})");
    auto admitted = inject(labelled_pod({{"vck.intelai.org/volumes", "train,shared"}}, {{"affinity", affinity}}), &vm);
    REQUIRE(admitted.gated);
    auto pod = admitted.pod;
    pod.at("metadata").as_object()["name"] = "trainer-x1";
    pod.at("spec").at("schedulingGates").as_array().push_back(json::object{{"name", "other.io/gate"}});

    auto wait = volumes::ungate(pod, &vm, builtin());
    CHECK(wait.action == PodDataAction::Wait);
    CHECK(wait.message.starts_with("pod \"trainer-x1\" waits for its data: volume \"train\": "));

    copies_ready(vm, "train", {"node-1", "node-2"});
    auto half = volumes::ungate(pod, &vm, builtin());
    CHECK(half.action == PodDataAction::Wait);
    CHECK(half.message.find("volume \"shared\"") != std::string::npos);

    claim_ready(vm, "shared");
    auto go = volumes::ungate(pod, &vm, builtin());
    REQUIRE(go.action == PodDataAction::Ungate);
    CHECK(go.pod.at("spec").at("schedulingGates") == json::value(json::array{json::object{{"name", "other.io/gate"}}}));
    auto terms = required_terms(go.pod).as_array();
    REQUIRE(terms.size() == 2);  // the same terms, each with the data's requirement added
    CHECK(terms[0].at("matchExpressions") ==
          json::value(json::array{json::parse(R"({"key": "gpu", "operator": "Exists"})"), data_requirement(vm, "train")}));
    CHECK(terms[1].at("matchExpressions") ==
          json::value(json::array{json::parse(R"({"key": "big", "operator": "Exists"})"), data_requirement(vm, "train")}));
    // Everything else of the pod is as it was.
    auto before = pod.at("spec").as_object(), after = go.pod.at("spec").as_object();
    before.erase("affinity"), before.erase("schedulingGates"), after.erase("affinity"), after.erase("schedulingGates");
    CHECK(before == after);
}

TEST_CASE("a gated pod without affinity gets the data's term when ungated, and its gate list goes when empty") {
    auto vm = data_vm();
    auto admitted = inject(labelled_pod({{"vck.intelai.org/volumes", "train"}}), &vm);
    copies_ready(vm, "train", {"node-1", "node-2"});
    auto go = volumes::ungate(admitted.pod, &vm, builtin());
    REQUIRE(go.action == PodDataAction::Ungate);
    CHECK_FALSE(go.pod.at("spec").as_object().contains("schedulingGates"));
    CHECK(required_terms(go.pod) ==
          json::value(json::array{json::object{{"matchExpressions", json::array{data_requirement(vm, "train")}}}}));
}

TEST_CASE("a gated pod is ungated onto copies that hold their first batch, not onto ones still short of it") {
    auto vm = data_vm();
    auto admitted = inject(labelled_pod({{"vck.intelai.org/volumes", "train"}}), &vm);
    copies_ready(vm, "train", {"node-1", "node-2"});
    for (auto& c : vm.status->copies) c.phase = "Downloading";  // no first batch marked yet
    CHECK(volumes::ungate(admitted.pod, &vm, builtin()).action == PodDataAction::Wait);
    for (auto& c : vm.status->copies) c.firstBatchAt = "2026-11-27T10:00:00Z";
    auto go = volumes::ungate(admitted.pod, &vm, builtin());
    REQUIRE(go.action == PodDataAction::Ungate);
    CHECK(required_terms(go.pod) ==
          json::value(json::array{json::object{{"matchExpressions", json::array{data_requirement(vm, "train")}}}}));
}

TEST_CASE("a gated pod whose data is lost before it starts stays gated while the copy is made again") {
    auto vm = data_vm();
    auto admitted = inject(labelled_pod({{"vck.intelai.org/volumes", "train"}}), &vm);
    copies_ready(vm, "train", {"node-1"});
    vm.status->copies[0].phase = "Lost";
    vm.status->copies[0].message = "node node-1 was deleted";
    auto& st = status_entry(vm, "train");
    st.volumeSource.reset();
    st.nodeAffinity.reset();
    st.message = "downloading: 0 of 2 replicas done (node node-1 was deleted)";
    auto d = volumes::ungate(admitted.pod, &vm, builtin());
    CHECK(d.action == PodDataAction::Wait);
    CHECK(d.message.find("lost: node node-1 was deleted") != std::string::npos);
}

TEST_CASE("a gated pod that can never be served is Stuck, with why") {
    auto vm = data_vm();
    auto admitted = inject(labelled_pod({{"vck.intelai.org/volumes", "train"}}), &vm);
    auto changed = vm;
    changed.spec.volumeConfigs[0].options["sourceURL"] = "s3://bucket/other/";
    auto s = volumes::ungate(admitted.pod, &changed, builtin());
    CHECK(s.action == PodDataAction::Stuck);
    CHECK(s.message.find("changed its source since the pod was made") != std::string::npos);
    auto g = volumes::ungate(admitted.pod, nullptr, builtin());
    CHECK(g.action == PodDataAction::Stuck);
    CHECK(g.message.ends_with("volumemanager \"data\" no longer exists"));
    auto removed = vm;
    removed.spec.volumeConfigs.erase(removed.spec.volumeConfigs.begin());
    CHECK(volumes::ungate(admitted.pod, &removed, builtin()).message.ends_with(
        "volume \"train\" is no longer in volumemanager \"data\""));
    auto failed = vm;
    failed.status->state = "Failed";
    status_entry(failed, "train").message = "error during data download using pod x: 403";
    auto f = volumes::ungate(admitted.pod, &failed, builtin());
    CHECK(f.action == PodDataAction::Stuck);
    CHECK(f.message.ends_with("volume \"train\" failed: error during data download using pod x: 403"));
}

TEST_CASE("a running pod whose node lost its copy is reported, not touched; one whose copy is there is left alone") {
    auto vm = all_ready();
    auto admitted = inject(labelled_pod({{"vck.intelai.org/volumes", "train"}}, {{"nodeName", "node-1"}}), &vm);
    REQUIRE(admitted.allowed);
    auto pod = admitted.pod;
    pod.at("metadata").as_object()["name"] = "trainer-x1";
    CHECK(volumes::ungate(pod, &vm, builtin()).action == PodDataAction::None);
    for (auto& c : vm.status->copies)
        if (c.node == "node-1") {
            c.phase = "Lost";
            c.message = "node node-1 NotReady for 400s";
        }
    auto d = volumes::ungate(pod, &vm, builtin());
    CHECK(d.action == PodDataAction::DataLost);
    CHECK(d.message == "pod \"trainer-x1\" on node \"node-1\" mounts " + copy_path(vm, "train") +
                           ", but that node no longer holds volume \"train\" (Lost: node node-1 NotReady for 400s)");
    CHECK(d.pod.is_null());
    auto gone = volumes::ungate(pod, nullptr, builtin());
    CHECK(gone.action == PodDataAction::DataLost);
    // Pods the webhook never touched are none of ungate's business.
    CHECK(volumes::ungate(labelled_pod(), &vm, builtin()).action == PodDataAction::None);
}

TEST_CASE("a running pod whose copy is kept for it loses nothing, whatever its VolumeManager became; a finished pod is never told") {
    auto vm = all_ready();
    auto admitted = inject(labelled_pod({{"vck.intelai.org/volumes", "train"}}, {{"nodeName", "node-1"}}), &vm);
    REQUIRE(admitted.allowed);
    auto pod = admitted.pod;
    pod.at("metadata").as_object()["name"] = "trainer-x1";
    pod.as_object()["status"] = boost::json::object{{"phase", "Running"}};
    // The copy planner keeps the copy a running pod mounts (Removing, waiting for it).
    for (auto& c : vm.status->copies)
        if (c.node == "node-1") {
            c.phase = "Removing";
            c.message = "kept while pod trainer-x1 uses it";
        }
    SUBCASE("its source changed") { vm.spec.volumeConfigs[0].options["sourceURL"] = "s3://data/other/"; }
    SUBCASE("the volume left the spec") { vm.spec.volumeConfigs.clear(); }
    SUBCASE("the VolumeManager is being deleted") { vm.metadata.deletionTimestamp = "2026-01-01T00:00:00Z"; }
    SUBCASE("the VolumeManager is Completed") { vm.spec.state = "Completed"; }
    CHECK(volumes::ungate(pod, &vm, builtin()).action == PodDataAction::None);
    // Lost with its node: reported, unless the pod has finished.
    for (auto& c : vm.status->copies)
        if (c.node == "node-1") c.phase = "Lost";
    CHECK(volumes::ungate(pod, &vm, builtin()).action == PodDataAction::DataLost);
    pod.as_object()["status"] = boost::json::object{{"phase", "Succeeded"}};
    CHECK(volumes::ungate(pod, &vm, builtin()).action == PodDataAction::None);
    CHECK(volumes::ungate(pod, nullptr, builtin()).action == PodDataAction::None);
}

TEST_CASE("the directory a gated pod mounts is the one the copy planner downloads into, and the one it serves") {
    // The reconciler's way: the handler's layout, then the planner (include/vck/volumes/
    // volume_manager_reconciler.hpp), with a non-default data path.
    auto vm = data_vm();
    vm.spec.volumeConfigs = {s3_volume("train", 1)};
    vm.spec.volumeConfigs[0].options["dataPath"] = "/var/datasets/team//a/";
    auto admitted = inject(labelled_pod(), &vm);
    REQUIRE(admitted.gated);
    const auto& vc = vm.spec.volumeConfigs[0];
    volumes::VolumeCopyInput in;
    in.vm_uid = vm.metadata.uid;
    in.volume_id = vc.id;
    in.label_key = data_key(vc.id);
    in.config = &vc;
    in.layout = builtin().find("S3").handler->copy_layout(handlers::HandlerContext{}, vc);
    REQUIRE(in.layout);
    api::Node n;
    n.metadata.name = "node-1";
    api::NodeStatus ns;
    api::Condition ready;
    ready.type = "Ready";
    ready.status = "True";
    ns.conditions.push_back(ready);
    n.status = ns;
    auto plan = volumes::plan_volume_copies(in, std::vector<api::Node>{n}, std::chrono::system_clock::now());
    REQUIRE(plan.downloads.size() == 1);
    const auto* train = find_named(admitted.pod.at("spec").at("volumes"), volumes::pod_volume_name("train"));
    CHECK(train->at("hostPath").at("path").as_string() == plan.downloads[0].path);

    // The download finishes: the planner's record and status make the pod ready to go.
    in.entries = plan.entries;
    for (auto& e : in.entries) e.phase = "Ready";
    in.serving = "";
    auto done = volumes::plan_volume_copies(in, std::vector<api::Node>{n}, std::chrono::system_clock::now());
    vm.status->copies = done.entries;
    vm.status->volumes = {done.outcome.status};
    auto go = volumes::ungate(admitted.pod, &vm, builtin());
    REQUIRE(go.action == PodDataAction::Ungate);
    CHECK(required_terms(go.pod) ==
          json::value(json::array{json::object{{"matchExpressions", json::array{data_requirement(vm, "train")}}}}));
}

TEST_CASE("with shared copies, a pod made before any copy mounts its config's shared directory, as the copy planner will") {
    auto vm = data_vm();
    vm.status.reset();
    handlers::HandlerOptions sharing;
    sharing.share_copies = true;
    const auto shared = handlers::naming::shared_copy_directory(
        "/var/datasets", handlers::naming::source_config_digest(config_of(vm, "train")));
    auto r = volumes::inject_pod(labelled_pod({{"vck.intelai.org/volumes", "train"}}), "team", &vm, builtin(), sharing);
    REQUIRE(r.allowed);
    CHECK(r.gated);
    CHECK(find_named(r.pod.at("spec").at("volumes"), volumes::pod_volume_name("train"))->at("hostPath").at("path").as_string() ==
          shared);
    // Ready in the shared directory (joined, or made here): the gate lifts for that pod.
    vm = data_vm();
    copies_ready(vm, "train", {"node-1", "node-2"});
    for (auto& c : vm.status->copies) c.path = shared;
    status_entry(vm, "train").volumeSource->hostPath->path = shared;
    auto d = volumes::ungate(r.pod, &vm, builtin(), sharing);
    CHECK(d.action == PodDataAction::Ungate);
    // Without sharing, the volume's own directory, as before.
    auto own = volumes::inject_pod(labelled_pod({{"vck.intelai.org/volumes", "train"}}), "team", &vm, builtin());
    CHECK(find_named(own.pod.at("spec").at("volumes"), volumes::pod_volume_name("train"))->at("hostPath").at("path").as_string() ==
          shared);  // the record names where its copies are, whatever the option
}

TEST_CASE("after a refresh, a new pod mounts the new version's directory and runs once it serves") {
    auto vm = all_ready();
    // Version 1 of train's data serves: its copies are in the directory of the versioned config.
    const auto config = handlers::naming::versioned_config(handlers::naming::source_config_digest(config_of(vm, "train")), 1);
    const auto path = handlers::naming::copy_directory("/var/datasets", vm.metadata.uid, "train", config);
    for (auto& c : vm.status->copies)
        if (c.volume == "train") c.config = config, c.path = path;
    auto& st = status_entry(vm, "train");
    st.volumeSource->hostPath->path = path;
    st.nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution->nodeSelectorTerms[0].matchExpressions[0].values = {config};
    api::SourceRefresh refreshed;
    refreshed.volume = "train";
    refreshed.version = 1;
    vm.status->refreshes.push_back(refreshed);
    auto r = inject(labelled_pod({{"vck.intelai.org/volumes", "train"}}), &vm);
    REQUIRE(r.allowed);
    CHECK_FALSE(r.gated);
    CHECK(find_named(r.pod.at("spec").at("volumes"), volumes::pod_volume_name("train"))->at("hostPath").at("path").as_string() ==
          path);
}
