// Validation of the built-in kinds' specs and their immutability, as kube-apiserver 1.32
// refuses them: each invalid write answers 422 with the real message and field path, the same
// write with dryRun=All is refused identically, valid writes go through, and what may not
// change on update may not change through a patch either.
#include "store_support.hpp"

#include <vck/sandbox/storage/object_store.hpp>

#include <doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace vck::sandbox;
using vck::client::PatchType;
using namespace vck::sandbox::store_test;
namespace json = boost::json;

namespace {

/// The first cause's field, and the message, of a 422.
struct Refused {
    std::int64_t code;
    std::string message;
    std::string field;
};
template <class F>
Refused refused(F&& f) {
    auto st = refusal(std::forward<F>(f));
    std::string fld = st.details && !st.details->causes.empty() ? st.details->causes.front().field : "";
    return {st.code, st.message, fld};
}

/// Merges `patch` (an RFC 7386 merge patch) into `base`.
json::value merged(json::value base, std::string_view patch) {
    return vck::sandbox::apply_merge_patch(base, parse(patch));
}

const char* const valid_pod = R"({"metadata": {"name": "p"}, "spec": {
  "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "1"],
                  "ports": [{"containerPort": 80, "name": "http"}],
                  "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
  "initContainers": [{"name": "init", "image": "busybox:1.36"}],
  "volumes": [{"name": "data", "emptyDir": {}}],
  "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}]}})";

struct ValidationCase {
    const char* what;
    const char* patch;    // merged into the valid object
    const char* message;  // after `Kind "name" is invalid: `
    const char* field;    // the first cause's field
};

} // namespace

TEST_CASE("pods: an invalid spec is refused on create with the real message and path, dry run alike") {
    const ValidationCase cases[] = {
        {"no containers", R"({"spec": {"containers": null}})", "spec.containers: Required value", "spec.containers"},
        {"a container without an image", R"({"spec": {"containers": [{"name": "c"}]}})",
         "spec.containers[0].image: Required value", "spec.containers[0].image"},
        {"a container without a name", R"({"spec": {"containers": [{"image": "i"}]}})",
         "spec.containers[0].name: Required value", "spec.containers[0].name"},
        {"a container name that is no DNS label", R"({"spec": {"containers": [{"name": "C_1", "image": "i"}]}})",
         R"(spec.containers[0].name: Invalid value: "C_1": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'))",
         "spec.containers[0].name"},
        {"two containers of one name",
         R"({"spec": {"containers": [{"name": "c", "image": "i"}, {"name": "c", "image": "i"}]}})",
         R"(spec.containers[1].name: Duplicate value: "c")", "spec.containers[1].name"},
        {"an init container named like a container", R"({"spec": {"initContainers": [{"name": "c", "image": "i"}]}})",
         R"(spec.initContainers[0].name: Duplicate value: "c")", "spec.initContainers[0].name"},
        {"an init container without an image", R"({"spec": {"initContainers": [{"name": "i"}]}})",
         "spec.initContainers[0].image: Required value", "spec.initContainers[0].image"},
        {"restartPolicy Sometimes", R"({"spec": {"restartPolicy": "Sometimes"}})",
         R"(spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never")",
         "spec.restartPolicy"},
        {"an unknown dnsPolicy", R"({"spec": {"dnsPolicy": "Google"}})",
         R"(spec.dnsPolicy: Unsupported value: "Google": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")",
         "spec.dnsPolicy"},
        {"an unknown imagePullPolicy",
         R"({"spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicy": "Sometimes"}]}})",
         R"(spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never")",
         "spec.containers[0].imagePullPolicy"},
        {"a volume without a source", R"({"spec": {"volumes": [{"name": "data"}]}})",
         "spec.volumes[0]: Required value: must specify a volume type", "spec.volumes[0]"},
        {"a volume with two sources", R"({"spec": {"volumes": [{"name": "data", "emptyDir": {}, "hostPath": {"path": "/x"}}]}})",
         "spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type", "spec.volumes[0].hostPath"},
        {"two volumes of one name",
         R"({"spec": {"volumes": [{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]}})",
         R"(spec.volumes[1].name: Duplicate value: "data")", "spec.volumes[1].name"},
        {"a volume name that is no DNS label", R"({"spec": {"volumes": [{"name": "Data", "emptyDir": {}}],
           "containers": [{"name": "c", "image": "i"}]}})",
         R"(spec.volumes[0].name: Invalid value: "Data": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'))",
         "spec.volumes[0].name"},
        {"a claim volume without its claim", R"({"spec": {"volumes": [{"name": "data", "emptyDir": null, "persistentVolumeClaim": {}}]}})",
         "spec.volumes[0].persistentVolumeClaim.claimName: Required value", "spec.volumes[0].persistentVolumeClaim.claimName"},
        {"a mount of a volume that does not exist",
         R"({"spec": {"containers": [{"name": "c", "image": "i", "volumeMounts": [{"name": "other", "mountPath": "/o"}]}]}})",
         R"(spec.containers[0].volumeMounts[0].name: Not found: "other")", "spec.containers[0].volumeMounts[0].name"},
        {"a mount without a path",
         R"({"spec": {"containers": [{"name": "c", "image": "i", "volumeMounts": [{"name": "data"}]}]}})",
         "spec.containers[0].volumeMounts[0].mountPath: Required value",
         "spec.containers[0].volumeMounts[0].mountPath"},
        {"a container port out of range",
         R"({"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 70000}]}]}})",
         "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
         "spec.containers[0].ports[0].containerPort"},
        {"a container port of 0", R"({"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"hostPort": 8080}]}]}})",
         "spec.containers[0].ports[0].containerPort: Required value", "spec.containers[0].ports[0].containerPort"},
        {"an unknown port protocol",
         R"({"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "protocol": "HTTP"}]}]}})",
         R"(spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP")",
         "spec.containers[0].ports[0].protocol"},
        {"a nodeSelector value with a space", R"({"spec": {"nodeSelector": {"disk": "fast ssd"}}})",
         R"(spec.nodeSelector: Invalid value: "fast ssd": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'))",
         "spec.nodeSelector"},
        {"a toleration without key or Exists", R"({"spec": {"tolerations": [{"operator": "Equal"}]}})",
         R"(spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all keys")",
         "spec.tolerations[0].operator"},
        {"a toleration with an unknown operator", R"({"spec": {"tolerations": [{"key": "k", "operator": "In"}]}})",
         R"(spec.tolerations[0].operator: Unsupported value: "In": supported values: "Equal", "Exists")",
         "spec.tolerations[0].operator"},
        {"an Exists toleration with a value", R"({"spec": {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}})",
         R"(spec.tolerations[0].operator: Invalid value: core.Toleration{Key:"k", Operator:"Exists", Value:"v", Effect:"", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists')",
         "spec.tolerations[0].operator"},
        {"tolerationSeconds without NoExecute",
         R"({"spec": {"tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]}})",
         R"(spec.tolerations[0].effect: Invalid value: "NoSchedule": effect must be 'NoExecute' when `tolerationSeconds` is set)",
         "spec.tolerations[0].effect"},
        {"an unknown toleration effect", R"({"spec": {"tolerations": [{"key": "k", "operator": "Exists", "effect": "Never"}]}})",
         R"(spec.tolerations[0].effect: Unsupported value: "Never": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute")",
         "spec.tolerations[0].effect"},
        {"activeDeadlineSeconds of 0", R"({"spec": {"activeDeadlineSeconds": 0}})",
         "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive",
         "spec.activeDeadlineSeconds"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.what);
        ObjectStore store;
        auto body = merged(parse(valid_pod), c.patch);
        auto r = refused([&] { store.create(pods, "default", body); });
        CHECK(r.code == 422);
        CHECK(r.message == std::string(R"(Pod "p" is invalid: )") + c.message);
        CHECK(r.field == c.field);
        auto dry = refused([&] { store.create(pods, "default", body, DryRun::All); });
        CHECK(dry.message == r.message);
        CHECK(store.list(pods, "default").at("items").as_array().empty());
    }
}

TEST_CASE("pods: a valid pod is accepted, with the protocol of its ports defaulted to TCP") {
    ObjectStore store;
    auto created = store.create(pods, "default", parse(valid_pod));
    CHECK(created.at("spec").at("containers").at(0).at("ports").at(0).at("protocol") == "TCP");
    // Several errors come in the real server's order, all of them.
    auto r = refused([&] {
        store.create(pods, "default", parse(R"({"metadata": {"name": "q"}, "spec": {"containers": [{"name": "c"}],
                                              "restartPolicy": "Sometimes"}})"));
    });
    CHECK(r.message == R"(Pod "q" is invalid: [spec.containers[0].image: Required value, spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"])");
}

TEST_CASE("pods: the spec is immutable on update and patch but for images, activeDeadlineSeconds and added tolerations") {
    const std::string forbidden_start =
        "Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields other than "
        "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
        "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it "
        "was previously negative)\n";
    struct Change {
        const char* what;
        const char* patch;    // a merge patch of the stored pod
        const char* message;  // "" for the spec's Forbidden; else the whole message after the prefix
    };
    const Change refused_changes[] = {
        {"the command", R"({"spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "2"]}]}})", ""},
        {"the nodeName (pods/binding sets it)", R"({"spec": {"nodeName": "node-1"}})", ""},
        {"the restartPolicy", R"({"spec": {"restartPolicy": "Never"}})", ""},
        {"a removed toleration", R"({"spec": {"tolerations": []}})",
         "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"},
        {"an added container", R"({"spec": {"containers": [{"name": "c", "image": "i"}, {"name": "d", "image": "i"}]}})",
         "spec.containers: Forbidden: pod updates may not add or remove containers"},
        {"a raised activeDeadlineSeconds", R"({"spec": {"activeDeadlineSeconds": 200}})",
         "spec.activeDeadlineSeconds: Invalid value: 200: must be less than or equal to previous value"},
        {"a removed activeDeadlineSeconds", R"({"spec": {"activeDeadlineSeconds": null}})",
         R"(spec.activeDeadlineSeconds: Invalid value: "null": must not update from a positive integer to nil value)"},
    };
    const char* const allowed_changes[] = {
        R"({"spec": {"containers": [{"name": "c", "image": "busybox:1.37", "command": ["sleep", "1"],
             "ports": [{"containerPort": 80, "name": "http"}], "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}})",
        R"({"spec": {"initContainers": [{"name": "init", "image": "alpine:3"}]}})",
        R"({"spec": {"activeDeadlineSeconds": 50}})",
        R"({"spec": {"tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
                                     {"key": "x", "operator": "Exists"}]}})",
        R"({"metadata": {"labels": {"a": "b"}}})",
    };
    // Without the service-account mount admission adds: the merge patches below replace whole
    // container lists, which would drop that mount, a change a real server refuses too.
    auto fresh = [](ObjectStore& store) {
        return store.create(pods, "default", merged(parse(valid_pod),
                                                     R"({"spec": {"activeDeadlineSeconds": 100, "automountServiceAccountToken": false}})"));
    };
    for (const auto& c : refused_changes) {
        CAPTURE(c.what);
        ObjectStore store;
        auto stored = fresh(store);
        auto changed = merged(stored, c.patch);
        auto upd = refused([&] { store.update(pods, "default", "p", changed); });
        CHECK(upd.code == 422);
        if (*c.message) {
            CHECK(upd.message == std::string("Pod \"p\" is invalid: ") + c.message);
        } else {
            CHECK(upd.message.rfind(forbidden_start, 0) == 0);
            CHECK(upd.field == "spec");
        }
        auto pat = refused([&] { store.patch(pods, "default", "p", PatchType::Merge, parse(c.patch)); });
        CHECK(pat.message == upd.message);
        auto dry = refused([&] { store.patch(pods, "default", "p", PatchType::Merge, parse(c.patch), {}, DryRun::All); });
        CHECK(dry.message == upd.message);
        CHECK(store.get(pods, "default", "p") == stored);
    }
    for (const char* patch : allowed_changes) {
        CAPTURE(patch);
        ObjectStore store;
        auto stored = fresh(store);
        CHECK_NOTHROW(store.update(pods, "default", "p", merged(stored, patch)));
        ObjectStore again;
        fresh(again);
        CHECK_NOTHROW(again.patch(pods, "default", "p", PatchType::Merge, parse(patch)));
    }
}

TEST_CASE("pods: while gated, a pod's nodeSelector may gain keys and its required node affinity may narrow, in the update that removes the gate too") {
    const std::string gated = R"({"spec": {"schedulingGates": [{"name": "vck.intelai.org/data"}], "nodeSelector": {"a": "b"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["x"]}]}]}}}}})";
    const std::string terms = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
    struct Change {
        const char* what;
        const char* patch;
        std::string message;  // "" when allowed
    };
    const Change changes[] = {
        {"a key added to the nodeSelector", R"({"spec": {"nodeSelector": {"c": "d"}}})", ""},
        {"a requirement added to a term",
         R"({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
             {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["x"]},
                                   {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-2"]}]}]}}}}})",
         ""},
        {"a preferred term added", R"({"spec": {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
             {"weight": 1, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}}]}}}})",
         ""},
        {"the gate removed and a key added at once", R"({"spec": {"schedulingGates": null, "nodeSelector": {"c": "d"}}})", ""},
        {"a nodeSelector value changed", R"({"spec": {"nodeSelector": {"a": "z", "c": "d"}}})",
         R"(spec.nodeSelector: Invalid value: map[string]string{"a":"z", "c":"d"}: only additions to spec.nodeSelector are allowed (no mutations or deletions))"},
        {"a requirement changed",
         R"({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
             {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["y"]}]}]}}}}})",
         terms + R"([0]: Invalid value: core.NodeSelectorTerm{MatchExpressions:[]core.NodeSelectorRequirement{core.NodeSelectorRequirement{Key:"zone", Operator:"In", Values:[]string{"y"}}}, MatchFields:[]core.NodeSelectorRequirement(nil)}: only additions are allowed (no mutations or deletions))"},
        {"a term added (that widens)",
         R"({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
             {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["x"]}]},
             {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}]}}}}})",
         terms + R"(: Invalid value: []core.NodeSelectorTerm{core.NodeSelectorTerm{MatchExpressions:[]core.NodeSelectorRequirement{core.NodeSelectorRequirement{Key:"zone", Operator:"In", Values:[]string{"x"}}}, MatchFields:[]core.NodeSelectorRequirement(nil)}, core.NodeSelectorTerm{MatchExpressions:[]core.NodeSelectorRequirement{core.NodeSelectorRequirement{Key:"disk", Operator:"Exists", Values:[]string(nil)}}, MatchFields:[]core.NodeSelectorRequirement(nil)}}: no additions/deletions to non-empty NodeSelectorTerms list are allowed)"},
    };
    for (const auto& c : changes) {
        CAPTURE(c.what);
        ObjectStore store;
        auto stored = store.create(pods, "default", merged(parse(valid_pod), gated));
        if (c.message.empty()) {
            CHECK_NOTHROW(store.update(pods, "default", "p", merged(stored, c.patch)));
        } else {
            auto r = refused([&] { store.patch(pods, "default", "p", PatchType::Merge, parse(c.patch)); });
            CHECK(r.code == 422);
            CHECK(r.message == "Pod \"p\" is invalid: " + c.message);
        }
    }
    // Once the gate is gone, the same nodeSelector addition is a change like any other.
    ObjectStore store;
    auto stored = store.create(pods, "default", parse(valid_pod));
    auto r = refused([&] { store.patch(pods, "default", "p", PatchType::Merge, parse(R"({"spec": {"nodeSelector": {"c": "d"}}})")); });
    CHECK(r.field == "spec");
}

TEST_CASE("pods: the diff after the Forbidden names the changed field") {
    ObjectStore store;
    auto stored = store.create(pods, "default", parse(valid_pod));
    auto r = refused([&] { store.patch(pods, "default", "p", PatchType::Merge, parse(R"({"spec": {"nodeName": "n1"}})")); });
    CHECK(r.message.find("+ \tNodeName: \"n1\",") != std::string::npos);
}

TEST_CASE("pods: binding sets the nodeName, and status writes keep working on a bound pod") {
    ObjectStore store;
    store.create(pods, "default", parse(valid_pod));
    store.bind("default", "p", parse(R"({"target": {"name": "node-1"}})"));
    CHECK(store.get(pods, "default", "p").at("spec").at("nodeName") == "node-1");
    CHECK_NOTHROW(store.patch(pods, "default", "p", PatchType::Merge, parse(R"({"status": {"phase": "Running"}})"), "status"));
    CHECK(store.get(pods, "default", "p").at("status").at("phase") == "Running");
    // An update that sends the stored pod back (labels changed) is no spec change.
    auto got = store.get(pods, "default", "p");
    got.at("metadata").as_object()["labels"] = json::object{{"a", "b"}};
    CHECK_NOTHROW(store.update(pods, "default", "p", got));
}

namespace {

const char* const valid_pv = R"({"metadata": {"name": "p"}, "spec": {
  "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}})";
const char* const valid_pvc = R"({"metadata": {"name": "p"}, "spec": {
  "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})";
const char* const valid_sc = R"({"metadata": {"name": "p"}, "provisioner": "example.com/nfs",
  "parameters": {"server": "a"}})";
const char* const valid_cm = R"({"metadata": {"name": "p"}, "data": {"a.conf": "x"}})";
const char* const valid_secret = R"({"metadata": {"name": "p"}, "data": {"user": "YWRtaW4="}})";

struct KindCases {
    ResourceId id;
    std::string_view ns;
    std::string kind;  // as the message names it: "PersistentVolume", "StorageClass.storage.k8s.io"
    const char* valid;
    std::vector<ValidationCase> cases;
};

/// Each case refused on create with its message and first field, dry run alike, nothing stored.
void check_create_refusals(const KindCases& k) {
    ObjectStore probe;
    CHECK_NOTHROW(probe.create(k.id, k.ns, parse(k.valid)));
    for (const auto& c : k.cases) {
        CAPTURE(c.what);
        ObjectStore store;
        auto body = merged(parse(k.valid), c.patch);
        auto r = refused([&] { store.create(k.id, k.ns, body); });
        CHECK(r.code == 422);
        CHECK(r.message == k.kind + R"( "p" is invalid: )" + c.message);
        CHECK(r.field == c.field);
        CHECK(refused([&] { store.create(k.id, k.ns, body, DryRun::All); }).message == r.message);
        CHECK(store.list(k.id, k.ns).at("items").as_array().empty());
    }
}

/// Each change of a stored valid object refused on update and on patch (dry run alike), with
/// its message and first field, the stored object untouched.
void check_update_refusals(const KindCases& k, const char* stored_patch = "{}") {
    for (const auto& c : k.cases) {
        CAPTURE(c.what);
        ObjectStore store;
        auto stored = store.create(k.id, k.ns, merged(parse(k.valid), stored_patch));
        auto upd = refused([&] { store.update(k.id, k.ns, "p", merged(stored, c.patch)); });
        CHECK(upd.code == 422);
        CHECK(upd.message.rfind(k.kind + R"( "p" is invalid: )" + c.message, 0) == 0);
        CHECK(upd.field == c.field);
        CHECK(refused([&] { store.patch(k.id, k.ns, "p", PatchType::Merge, parse(c.patch)); }).message == upd.message);
        CHECK(refused([&] { store.patch(k.id, k.ns, "p", PatchType::Merge, parse(c.patch), {}, DryRun::All); }).message ==
              upd.message);
        CHECK(store.get(k.id, k.ns, "p") == stored);
    }
}

} // namespace

TEST_CASE("persistent volumes: capacity, access modes and one source are required; the source never changes") {
    check_create_refusals({pvs, "", "PersistentVolume", valid_pv, {
        {"no access modes", R"({"spec": {"accessModes": null}})", "spec.accessModes: Required value", "spec.accessModes"},
        {"an unknown access mode", R"({"spec": {"accessModes": ["ReadWriteSometimes"]}})",
         R"(spec.accessModes: Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")",
         "spec.accessModes"},
        {"ReadWriteOncePod with another mode", R"({"spec": {"accessModes": ["ReadWriteOncePod", "ReadOnlyMany"]}})",
         "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes", "spec.accessModes"},
        {"no capacity", R"({"spec": {"capacity": null}})",
         R"([spec.capacity: Required value, spec.capacity: Unsupported value: core.ResourceList(nil): supported values: "storage"])",
         "spec.capacity"},
        {"a capacity of 0", R"({"spec": {"capacity": {"storage": "0"}}})",
         R"(spec.capacity[storage]: Invalid value: "0": must be greater than zero)", "spec.capacity[storage]"},
        {"no source", R"({"spec": {"hostPath": null}})", "spec: Required value: must specify a volume type", "spec"},
        {"two sources", R"({"spec": {"nfs": {"server": "s", "path": "/e"}}})",
         "spec.nfs: Forbidden: may not specify more than 1 volume type", "spec.nfs"},
        {"a hostPath without a path", R"({"spec": {"hostPath": {"path": ""}}})", "spec.hostPath.path: Required value",
         "spec.hostPath.path"},
        {"a local volume without node affinity", R"({"spec": {"hostPath": null, "local": {"path": "/mnt/disk"}}})",
         "spec.nodeAffinity: Required value: Local volume requires node affinity", "spec.nodeAffinity"},
        {"an unknown reclaim policy", R"({"spec": {"persistentVolumeReclaimPolicy": "Keep"}})",
         R"(spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", "Retain")",
         "spec.persistentVolumeReclaimPolicy"},
        {"an unknown volumeMode", R"({"spec": {"volumeMode": "Raw"}})",
         R"(spec.volumeMode: Unsupported value: "Raw": supported values: "Block", "Filesystem")", "spec.volumeMode"},
    }});
    const char* with_affinity = R"({"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}}}})";
    check_update_refusals({pvs, "", "PersistentVolume", valid_pv, {
        {"another hostPath", R"({"spec": {"hostPath": {"path": "/other"}}})",
         "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n",
         "spec.persistentvolumesource"},
        {"another volumeMode", R"({"spec": {"volumeMode": "Block"}})",
         R"(volumeMode: Invalid value: "Block": field is immutable)", "volumeMode"},
        {"another node affinity", R"({"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}]}]}}}})",
         "nodeAffinity: Invalid value: ", "nodeAffinity"},
    }}, with_affinity);
    // What may change: capacity, the reclaim policy, a claimRef, node affinity where there was none.
    ObjectStore store;
    store.create(pvs, "", parse(valid_pv));
    CHECK_NOTHROW(store.patch(pvs, "", "p", PatchType::Merge, parse(R"({"spec": {"capacity": {"storage": "2Gi"},
        "persistentVolumeReclaimPolicy": "Delete", "claimRef": {"namespace": "default", "name": "c"}}})")));
    CHECK_NOTHROW(store.patch(pvs, "", "p", PatchType::Merge, parse(with_affinity)));
}

TEST_CASE("persistent volume claims: access modes and storage are required; the spec changes only as binding needs") {
    check_create_refusals({pvcs, "default", "PersistentVolumeClaim", valid_pvc, {
        {"no access modes", R"({"spec": {"accessModes": []}})",
         "spec.accessModes: Required value: at least 1 access mode is required", "spec.accessModes"},
        {"no storage request", R"({"spec": {"resources": {"requests": null}}})",
         "spec.resources[storage]: Required value", "spec.resources[storage]"},
        {"a storage request of 0", R"({"spec": {"resources": {"requests": {"storage": "0"}}}})",
         R"(spec.resources[storage]: Invalid value: "0": must be greater than zero)", "spec.resources[storage]"},
    }});
    check_update_refusals({pvcs, "default", "PersistentVolumeClaim", valid_pvc, {
        {"other access modes", R"({"spec": {"accessModes": ["ReadWriteMany"]}})",
         "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName "
         "for bound claims\n",
         "spec"},
        {"more storage for an unbound claim", R"({"spec": {"resources": {"requests": {"storage": "2Gi"}}}})",
         "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName "
         "for bound claims\n",
         "spec"},
        {"another volume name once set", R"({"spec": {"volumeName": "pv-2"}})",
         "spec: Forbidden: spec is immutable after creation", "spec"},
    }}, R"({"spec": {"volumeName": "pv-1", "storageClassName": "fast"}})");
    // The binder's writes: volumeName set once from empty; a bound claim may grow, never shrink.
    ObjectStore store;
    store.create(pvcs, "default", parse(valid_pvc));
    CHECK_NOTHROW(store.patch(pvcs, "default", "p", PatchType::Merge, parse(R"({"spec": {"volumeName": "pv-1"}})")));
    CHECK_NOTHROW(store.patch(pvcs, "default", "p", PatchType::Merge, parse(R"({"status": {"phase": "Bound"}})"), "status"));
    CHECK_NOTHROW(store.patch(pvcs, "default", "p", PatchType::Merge,
                              parse(R"({"spec": {"resources": {"requests": {"storage": "2Gi"}}}})")));
    auto r = refused([&] {
        store.patch(pvcs, "default", "p", PatchType::Merge, parse(R"({"spec": {"resources": {"requests": {"storage": "1Gi"}}}})"));
    });
    CHECK(r.message == R"(PersistentVolumeClaim "p" is invalid: spec.resources.requests.storage: Forbidden: field can not be less than previous value)");
}

TEST_CASE("storage classes: a provisioner and known policies are required; none of them changes") {
    check_create_refusals({storageclasses, "", "StorageClass.storage.k8s.io", valid_sc, {
        {"no provisioner", R"({"provisioner": null})", "provisioner: Required value", "provisioner"},
        {"a provisioner that is no qualified name", R"({"provisioner": "a b"})",
         R"(provisioner: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'))",
         "provisioner"},
        {"an unknown reclaimPolicy", R"({"reclaimPolicy": "Recycle"})",
         R"(reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain")", "reclaimPolicy"},
        {"an unknown volumeBindingMode", R"({"volumeBindingMode": "Later"})",
         R"(volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer")",
         "volumeBindingMode"},
    }});
    check_update_refusals({storageclasses, "", "StorageClass.storage.k8s.io", valid_sc, {
        {"other parameters", R"({"parameters": {"server": "b"}})", "parameters: Forbidden: updates to parameters are forbidden.",
         "parameters"},
        {"another provisioner", R"({"provisioner": "example.com/other"})",
         "provisioner: Forbidden: updates to provisioner are forbidden.", "provisioner"},
        {"another reclaimPolicy", R"({"reclaimPolicy": "Retain"})",
         "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.", "reclaimPolicy"},
        {"another volumeBindingMode", R"({"volumeBindingMode": "WaitForFirstConsumer"})",
         R"(volumeBindingMode: Invalid value: "WaitForFirstConsumer": field is immutable)", "volumeBindingMode"},
    }});
    ObjectStore store;
    store.create(storageclasses, "", parse(valid_sc));
    CHECK_NOTHROW(store.patch(storageclasses, "", "p", PatchType::Merge, parse(R"({"allowVolumeExpansion": true})")));
}

TEST_CASE("config maps: keys are config keys, unique across data and binaryData; immutable freezes them") {
    check_create_refusals({configmaps, "default", "ConfigMap", valid_cm, {
        {"a key with a slash", R"({"data": {"a/b": "x"}})",
         R"(data[a/b]: Invalid value: "a/b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+'))",
         "data[a/b]"},
        {"the key ..", R"({"data": {"..": "x"}})", R"(data[..]: Invalid value: "..": must not be '..')", "data[..]"},
        {"a key starting with ..", R"({"binaryData": {"..x": "eA=="}})",
         R"(binaryData[..x]: Invalid value: "..x": must not start with '..')", "binaryData[..x]"},
        {"a key in data and binaryData", R"({"binaryData": {"a.conf": "eA=="}})",
         R"(data[a.conf]: Invalid value: "a.conf": duplicate of key present in binaryData)", "data[a.conf]"},
    }});
    check_update_refusals({configmaps, "default", "ConfigMap", valid_cm, {
        {"data of an immutable map", R"({"data": {"a.conf": "y"}})",
         "data: Forbidden: field is immutable when `immutable` is set", "data"},
        {"binaryData of an immutable map", R"({"binaryData": {"b": "eA=="}})",
         "binaryData: Forbidden: field is immutable when `immutable` is set", "binaryData"},
        {"immutable itself", R"({"immutable": false})",
         "immutable: Forbidden: field is immutable when `immutable` is set", "immutable"},
    }}, R"({"immutable": true})");
    ObjectStore store;
    // The values together may hold 1 MiB; the error names no field.
    auto big = parse(valid_cm);
    big.at("data").as_object()["big"] = std::string(1024 * 1024, 'x');
    auto r = refused([&] { store.create(configmaps, "default", big); });
    CHECK(r.message == R"(ConfigMap "p" is invalid: : Too long: may not be more than 1048576 bytes)");
    CHECK(r.field == "");
    store.create(configmaps, "default", merged(parse(valid_cm), R"({"immutable": true})"));
    CHECK_NOTHROW(store.patch(configmaps, "default", "p", PatchType::Merge, parse(R"({"metadata": {"labels": {"a": "b"}}})")));
}

TEST_CASE("secrets: keys, size and the keys of their type; the type never changes, immutable freezes data") {
    check_create_refusals({secrets, "default", "Secret", valid_secret, {
        {"a key with a space", R"({"data": {"a b": "eA=="}})",
         R"(data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+'))",
         "data[a b]"},
        {"a TLS secret without its key", R"({"type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}})",
         "data[tls.key]: Required value", "data[tls.key]"},
        {"a TLS secret without anything", R"({"type": "kubernetes.io/tls", "data": null})",
         "[data[tls.crt]: Required value, data[tls.key]: Required value]", "data[tls.crt]"},
        {"a basic-auth secret without username and password", R"({"type": "kubernetes.io/basic-auth"})",
         "[data[username]: Required value, data[password]: Required value]", "data[username]"},
        {"an ssh-auth secret without its key", R"({"type": "kubernetes.io/ssh-auth"})",
         "data[ssh-privatekey]: Required value", "data[ssh-privatekey]"},
        {"a dockerconfigjson secret without its key", R"({"type": "kubernetes.io/dockerconfigjson"})",
         "data[.dockerconfigjson]: Required value", "data[.dockerconfigjson]"},
        {"a service account token without its account", R"({"type": "kubernetes.io/service-account-token"})",
         "metadata.annotations[kubernetes.io/service-account.name]: Required value",
         "metadata.annotations[kubernetes.io/service-account.name]"},
    }});
    check_update_refusals({secrets, "default", "Secret", valid_secret, {
        {"another type", R"({"type": "example.com/custom"})",
         R"(type: Invalid value: "example.com/custom": field is immutable)", "type"},
        {"data of an immutable secret", R"({"data": {"user": "cm9vdA=="}})",
         "data: Forbidden: field is immutable when `immutable` is set", "data"},
        {"stringData of an immutable secret", R"({"stringData": {"user": "root"}})",
         "data: Forbidden: field is immutable when `immutable` is set", "data"},
        {"immutable itself", R"({"immutable": null})",
         "immutable: Forbidden: field is immutable when `immutable` is set", "immutable"},
    }}, R"({"immutable": true})");
    // A type-less update keeps Opaque (the server defaults it on every write).
    ObjectStore store;
    auto s = store.create(secrets, "default", parse(valid_secret));
    s.as_object().erase("type");
    CHECK_NOTHROW(store.update(secrets, "default", "p", s));
}

TEST_CASE("custom resources: an integer field takes only what Go reads as an integer (1e23 is a number)") {
    ObjectStore store;
    store.create({"apiextensions.k8s.io", "v1", "customresourcedefinitions"}, "", parse(R"({
      "metadata": {"name": "volumemanagers.vck.intelai.org"},
      "spec": {"group": "vck.intelai.org", "scope": "Namespaced",
        "names": {"plural": "volumemanagers", "singular": "volumemanager", "kind": "VolumeManager"},
        "versions": [{"name": "v1alpha1", "served": true, "storage": true,
          "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}}}]}})"));
    const ResourceId vms{"vck.intelai.org", "v1alpha1", "volumemanagers"};
    for (const char* number : {"1e23", "18446744073709551615", "9007199254740993.0", "1.5"}) {
        CAPTURE(number);
        auto body = parse(std::string(R"({"metadata": {"name": "v"}, "spec": {"replicas": )") + number + "}}");
        auto r = refused([&] { store.create(vms, "default", body); });
        CHECK(r.code == 422);
        CHECK(r.message == R"(VolumeManager.vck.intelai.org "v" is invalid: spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: "number")");
        CHECK(r.field == "spec.replicas");
    }
    for (const char* integer : {"3", "9223372036854775807", "1e2", "4.0"}) {
        CAPTURE(integer);
        auto body = parse(std::string(R"({"metadata": {"name": "v"}, "spec": {"replicas": )") + integer + "}}");
        CHECK_NOTHROW(store.create(vms, "default", body, DryRun::All));
    }
}

namespace {

const ResourceId leases{"coordination.k8s.io", "v1", "leases"};
const char* const valid_node = R"({"metadata": {"name": "p"}, "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
  "status": {"capacity": {"cpu": "4", "pods": "110"}, "allocatable": {"cpu": "4"}}})";
const char* const valid_lease = R"({"metadata": {"name": "p"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
  "leaseTransitions": 0}})";

} // namespace

TEST_CASE("nodes: taints, pod CIDRs and capacities are checked; pod CIDRs and the provider ID never change once set") {
    check_create_refusals({nodes, "", "Node", valid_node, {
        {"a taint key with a space", R"({"spec": {"taints": [{"key": "a b", "effect": "NoSchedule"}]}})",
         R"(metadata.taints[0].key: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'))",
         "metadata.taints[0].key"},
        {"a taint value with a space", R"({"spec": {"taints": [{"key": "k", "value": "a b", "effect": "NoSchedule"}]}})",
         R"(metadata.taints[0].value: Invalid value: "a b": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'))",
         "metadata.taints[0].value"},
        {"a taint without effect", R"({"spec": {"taints": [{"key": "k"}]}})", "metadata.taints[0].effect: Required value",
         "metadata.taints[0].effect"},
        {"an unknown taint effect", R"({"spec": {"taints": [{"key": "k", "effect": "Never"}]}})",
         R"(metadata.taints[0].effect: Unsupported value: "Never": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute")",
         "metadata.taints[0].effect"},
        {"two taints of one key and effect",
         R"({"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}, {"key": "k", "value": "v", "effect": "NoSchedule"}]}})",
         R"(metadata.taints[1]: Duplicate value: core.Taint{Key:"k", Value:"v", Effect:"NoSchedule", TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and effect pair)",
         "metadata.taints[1]"},
        {"a pod CIDR that is an address", R"({"spec": {"podCIDRs": ["10.0.0.1"]}})",
         R"(spec.podCIDRs[0]: Invalid value: "10.0.0.1": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64))",
         "spec.podCIDRs[0]"},
        {"a podCIDR alone is checked as the first of podCIDRs", R"({"spec": {"podCIDR": "10.0.0.0/33"}})",
         R"(spec.podCIDRs[0]: Invalid value: "10.0.0.0/33": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64))",
         "spec.podCIDRs[0]"},
        {"two IPv4 pod CIDRs", R"({"spec": {"podCIDRs": ["10.0.0.0/24", "10.1.0.0/24"]}})",
         R"(spec.podCIDRs: Invalid value: []string{"10.0.0.0/24", "10.1.0.0/24"}: may specify no more than one CIDR for each IP family)",
         "spec.podCIDRs"},
        {"three pod CIDRs", R"({"spec": {"podCIDRs": ["10.0.0.0/24", "fd00::/64", "10.1.0.0/24"]}})",
         R"(spec.podCIDRs: Invalid value: []string{"10.0.0.0/24", "fd00::/64", "10.1.0.0/24"}: may specify no more than one CIDR for each IP family)",
         "spec.podCIDRs"},
        {"a repeated pod CIDR", R"({"spec": {"podCIDRs": ["10.0.0.0/24", "10.0.0.0/24"]}})",
         R"([spec.podCIDRs: Invalid value: []string{"10.0.0.0/24", "10.0.0.0/24"}: may specify no more than one CIDR for each IP family, spec.podCIDRs[1]: Duplicate value: "10.0.0.0/24"])",
         "spec.podCIDRs"},
        {"a negative capacity", R"({"status": {"capacity": {"memory": "-1Gi"}}})",
         R"(status.capacity.memory: Invalid value: "-1Gi": must be greater than or equal to 0)", "status.capacity.memory"},
    }});
    check_update_refusals({nodes, "", "Node", valid_node, {
        {"other pod CIDRs", R"({"spec": {"podCIDRs": ["10.1.0.0/24"]}})",
         R"(spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid)", "spec.podCIDRs"},
        {"no pod CIDR", R"({"spec": {"podCIDR": null, "podCIDRs": null}})",
         R"(spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid)", "spec.podCIDRs"},
        {"another provider ID", R"({"spec": {"providerID": "sim://b"}})",
         R"(spec.providerID: Forbidden: node updates may not change providerID except from "" to valid)", "spec.providerID"},
        {"an invalid taint", R"({"spec": {"taints": [{"key": "k", "effect": "Never"}]}})",
         R"(metadata.taints[0].effect: Unsupported value: "Never")", "metadata.taints[0].effect"},
    }}, R"({"spec": {"podCIDR": "10.0.0.0/24", "providerID": "sim://a"}})");

    ObjectStore store;
    // Dual stack is one CIDR per family; podCIDR reads as the first of podCIDRs.
    auto dual = store.create(nodes, "", merged(parse(valid_node), R"({"spec": {"podCIDRs": ["10.0.0.0/24", "fd00::/64"]}})"));
    CHECK(dual.at("spec").at("podCIDR") == "10.0.0.0/24");
    auto single = store.create(nodes, "", merged(parse(valid_node), R"({"metadata": {"name": "q"}, "spec": {"podCIDR": "10.2.0.0/24"}})"));
    CHECK(single.at("spec").at("podCIDRs") == json::array{"10.2.0.0/24"});
    // Pod CIDRs and a provider ID may be set once; taints and unschedulable change freely.
    store.create(nodes, "", merged(parse(valid_node), R"({"metadata": {"name": "r"}})"));
    CHECK_NOTHROW(store.patch(nodes, "", "r", PatchType::Merge,
                              parse(R"({"spec": {"podCIDR": "10.3.0.0/24", "providerID": "sim://r", "unschedulable": true, "taints": null}})")));
}

TEST_CASE("nodes: a status write checks capacities and unique addresses") {
    ObjectStore store;
    auto node = store.create(nodes, "", parse(valid_node));
    auto dup = merged(node, R"({"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"},
                                                         {"type": "Hostname", "address": "p"},
                                                         {"type": "InternalIP", "address": "10.0.0.1"}]}})");
    auto r = refused([&] { store.update(nodes, "", "p", dup, "status"); });
    CHECK(r.code == 422);
    CHECK(r.message == R"(Node "p" is invalid: status.addresses[2]: Duplicate value: core.NodeAddress{Type:"InternalIP", Address:"10.0.0.1"})");
    CHECK(r.field == "status.addresses[2]");
    auto negative = refused([&] {
        store.patch(nodes, "", "p", PatchType::Merge, parse(R"({"status": {"allocatable": {"cpu": "-500m"}}})"), "status");
    });
    CHECK(negative.message == R"(Node "p" is invalid: status.allocatable.cpu: Invalid value: "-500m": must be greater than or equal to 0)");
    CHECK_NOTHROW(store.patch(nodes, "", "p", PatchType::Merge,
                              parse(R"({"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}})"), "status"));
}

TEST_CASE("namespaces: finalizers are standard or qualified; only finalize changes them; the phase follows deletion") {
    ObjectStore store;
    auto r = refused([&] { store.create(namespaces, "", parse(R"({"metadata": {"name": "p"}, "spec": {"finalizers": ["x"]}})")); });
    CHECK(r.code == 422);
    CHECK(r.message == R"(Namespace "p" is invalid: spec.finalizers: Invalid value: "x": name is neither a standard finalizer name nor is it fully qualified)");
    CHECK(r.field == "spec.finalizers");
    // The kubernetes finalizer joins the body's own.
    auto ns = store.create(namespaces, "", parse(R"({"metadata": {"name": "p"}, "spec": {"finalizers": ["example.com/f"]}})"));
    CHECK(ns.at("spec").at("finalizers") == json::array{"example.com/f", "kubernetes"});
    // An update of the namespace keeps its finalizers.
    auto updated = store.update(namespaces, "", "p", merged(ns, R"({"spec": {"finalizers": null}, "metadata": {"labels": {"a": "b"}}})"));
    CHECK(updated.at("spec").at("finalizers") == json::array{"example.com/f", "kubernetes"});
    CHECK(updated.at("metadata").at("labels").at("a") == "b");
    // A status write: Active while not deleted (an empty phase defaults to it).
    auto st = refused([&] { store.patch(namespaces, "", "p", PatchType::Merge, parse(R"({"status": {"phase": "Terminating"}})"), "status"); });
    CHECK(st.code == 422);
    CHECK(st.message == R"(Namespace "p" is invalid: status.Phase: Invalid value: "Terminating": may only be 'Active' if `deletionTimestamp` is empty)");
    CHECK(st.field == "status.Phase");
    auto emptied = store.update(namespaces, "", "p", merged(updated, R"({"status": {"phase": null}})"), "status");
    CHECK(emptied.at("status").at("phase") == "Active");
}

TEST_CASE("leases: a duration above 0 and transitions not negative; strategy and preferredHolder are dropped (off in 1.32)") {
    check_create_refusals({leases, "default", "Lease.coordination.k8s.io", valid_lease, {
        {"a duration of 0", R"({"spec": {"leaseDurationSeconds": 0}})",
         "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0", "spec.leaseDurationSeconds"},
        {"negative transitions", R"({"spec": {"leaseTransitions": -1}})",
         "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0", "spec.leaseTransitions"},
    }});
    check_update_refusals({leases, "default", "Lease.coordination.k8s.io", valid_lease, {
        {"a negative duration", R"({"spec": {"leaseDurationSeconds": -5}})",
         "spec.leaseDurationSeconds: Invalid value: -5: must be greater than 0", "spec.leaseDurationSeconds"},
    }});
    ObjectStore store;
    auto lease = store.create(leases, "default", merged(parse(valid_lease), R"({"spec": {"strategy": "OldestEmulationVersion", "preferredHolder": "b"}})"));
    CHECK_FALSE(lease.at("spec").as_object().contains("strategy"));
    CHECK_FALSE(lease.at("spec").as_object().contains("preferredHolder"));
    CHECK_NOTHROW(store.patch(leases, "default", "p", PatchType::Merge, parse(R"({"spec": {"holderIdentity": "b", "leaseTransitions": 1}})")));
}

TEST_CASE("pods: a negative terminationGracePeriodSeconds becomes 1, on create and update") {
    ObjectStore store;
    auto pod = store.create(pods, "default", merged(parse(valid_pod), R"({"spec": {"terminationGracePeriodSeconds": -5}})"));
    CHECK(pod.at("spec").at("terminationGracePeriodSeconds") == 1);
    auto again = store.update(pods, "default", "p", merged(pod, R"({"spec": {"terminationGracePeriodSeconds": -1}})"));
    CHECK(again.at("spec").at("terminationGracePeriodSeconds") == 1);
}
