// The PV binder and the scheduler's volume topology: pre-bound and Immediate binding,
// Released/Delete reclaim, WaitForFirstConsumer binding on the chosen node, and pods following
// the node affinity of their bound PVs.
#include "cluster_fixture.hpp"

using namespace vck::sandbox;
using namespace cluster_test;

namespace {

json::value pv(const std::string& name, const std::string& size, const std::string& cls,
               const std::string& reclaim = "Retain", json::object extra = {}) {
    json::object spec{{"capacity", json::object{{"storage", size}}},
                      {"accessModes", json::array{"ReadWriteOnce"}},
                      {"persistentVolumeReclaimPolicy", reclaim},
                      {"storageClassName", cls},
                      {"hostPath", json::object{{"path", "/pv/" + name}}}};
    for (auto& kv : extra) spec[kv.key()] = kv.value();
    return json::object{{"metadata", json::object{{"name", name}}}, {"spec", std::move(spec)}};
}

json::value pvc(const std::string& name, const std::string& size, const std::string& cls, json::object extra = {}) {
    json::object spec{{"accessModes", json::array{"ReadWriteOnce"}},
                      {"resources", json::object{{"requests", json::object{{"storage", size}}}}},
                      {"storageClassName", cls}};
    for (auto& kv : extra) spec[kv.key()] = kv.value();
    return json::object{{"metadata", json::object{{"name", name}, {"namespace", "default"}}}, {"spec", std::move(spec)}};
}

json::object on_node(const std::string& node) {
    return json::object{{"nodeAffinity", json::object{{"required", json::object{{"nodeSelectorTerms", json::array{
        json::object{{"matchExpressions", json::array{json::object{
            {"key", "kubernetes.io/hostname"}, {"operator", "In"}, {"values", json::array{node}}}}}}}}}}}}};
}

json::value pod_with_claim(const std::string& name, const std::string& claim) {
    json::object spec{{"volumes", json::array{json::object{
        {"name", "data"}, {"persistentVolumeClaim", json::object{{"claimName", claim}}}}}}};
    auto p = pod(name, "app", spec);
    p.as_object()["spec"].as_object()["containers"].as_array()[0].as_object()["volumeMounts"] =
        json::array{json::object{{"name", "data"}, {"mountPath", "/data"}}};
    return p;
}

std::string pv_phase(Sandbox& sb, const std::string& name) { return str(sb.store().get(pvs, "", name), "status.phase"); }
std::string pvc_phase(Sandbox& sb, const std::string& name) {
    return str(sb.store().get(pvcs, "default", name), "status.phase");
}

} // namespace

TEST_CASE("a new PV becomes Available") {
    Sandbox sb(quiet_options(1));
    sb.store().create(pvs, "", pv("lonely", "1Gi", "manual"));
    CHECK(eventually([&] { return pv_phase(sb, "lonely") == "Available"; }));
}

TEST_CASE("a pre-bound PV and PVC both become Bound, the claim with the volume's capacity") {
    Sandbox sb(quiet_options(1));
    auto v = pv("pv-a", "5Gi", "", "Retain");
    v.as_object()["spec"].as_object()["claimRef"] = json::object{{"namespace", "default"}, {"name", "claim-a"}};
    sb.store().create(pvs, "", v);
    sb.store().create(pvcs, "default", pvc("claim-a", "1Gi", "", {{"volumeName", "pv-a"}}));
    REQUIRE(eventually([&] { return pv_phase(sb, "pv-a") == "Bound" && pvc_phase(sb, "claim-a") == "Bound"; }));
    auto claim = sb.store().get(pvcs, "default", "claim-a");
    CHECK(str(claim, "status.capacity.storage") == "5Gi");
    CHECK(str(claim, "status.accessModes[0]") == "ReadWriteOnce");
    CHECK(str(sb.store().get(pvs, "", "pv-a"), "spec.claimRef.uid") == str(claim, "metadata.uid"));

    // A claim that names a free PV by volumeName gets it too.
    sb.store().create(pvs, "", pv("pv-b", "2Gi", ""));
    sb.store().create(pvcs, "default", pvc("claim-b", "1Gi", "", {{"volumeName", "pv-b"}}));
    REQUIRE(eventually([&] { return pv_phase(sb, "pv-b") == "Bound" && pvc_phase(sb, "claim-b") == "Bound"; }));
    CHECK(str(sb.store().get(pvs, "", "pv-b"), "spec.claimRef.name") == "claim-b");
}

TEST_CASE("an Immediate claim binds to the smallest matching Available PV") {
    Sandbox sb(quiet_options(1));
    sb.store().create(classes, "", json::object{{"metadata", json::object{{"name", "manual"}}},
                                                {"provisioner", "kubernetes.io/no-provisioner"},
                                                {"volumeBindingMode", "Immediate"}});
    sb.store().create(pvs, "", pv("small", "1Gi", "manual"));
    sb.store().create(pvs, "", pv("big", "10Gi", "manual"));
    sb.store().create(pvs, "", pv("right", "5Gi", "manual"));
    sb.store().create(pvs, "", pv("other-class", "4Gi", "fast"));
    sb.store().create(pvcs, "default", pvc("claim", "3Gi", "manual"));
    REQUIRE(eventually([&] { return pvc_phase(sb, "claim") == "Bound"; }));
    CHECK(str(sb.store().get(pvcs, "default", "claim"), "spec.volumeName") == "right");
    CHECK(pv_phase(sb, "right") == "Bound");
    CHECK(pv_phase(sb, "small") == "Available");
    CHECK(pv_phase(sb, "big") == "Available");
}

TEST_CASE("a PV whose claim is deleted is Released (Retain) or deleted (Delete)") {
    Sandbox sb(quiet_options(1));
    sb.store().create(pvs, "", pv("keep", "1Gi", "", "Retain"));
    sb.store().create(pvs, "", pv("drop", "1Gi", "", "Delete"));
    sb.store().create(pvcs, "default", pvc("c-keep", "1Gi", "", {{"volumeName", "keep"}}));
    sb.store().create(pvcs, "default", pvc("c-drop", "1Gi", "", {{"volumeName", "drop"}}));
    REQUIRE(eventually([&] { return pv_phase(sb, "keep") == "Bound" && pv_phase(sb, "drop") == "Bound"; }));
    sb.store().remove(pvcs, "default", "c-keep");
    sb.store().remove(pvcs, "default", "c-drop");
    CHECK(eventually([&] { return pv_phase(sb, "keep") == "Released"; }));
    CHECK(eventually([&] {
        try {
            sb.store().get(pvs, "", "drop");
            return false;
        } catch (const StoreError& e) {
            return e.code() == 404;
        }
    }));
}

TEST_CASE("a claim a pod uses stays Terminating, and its PV Bound, until the pod is deleted; then the PV can go") {
    Sandbox sb(quiet_options(1));
    auto gone = [&](const ResourceId& id, const std::string& ns, const std::string& name) {
        try {
            sb.store().get(id, ns, name);
            return false;
        } catch (const StoreError& e) {
            return e.code() == 404;
        }
    };
    sb.store().create(pvs, "", pv("held", "1Gi", "", "Retain"));
    auto claim = sb.store().create(pvcs, "default", pvc("c-held", "1Gi", "", {{"volumeName", "held"}}));
    CHECK(json::serialize(at(claim, "metadata.finalizers")) == R"(["kubernetes.io/pvc-protection"])");
    CHECK(json::serialize(at(sb.store().get(pvs, "", "held"), "metadata.finalizers")) == R"(["kubernetes.io/pv-protection"])");
    REQUIRE(eventually([&] { return pvc_phase(sb, "c-held") == "Bound"; }));
    sb.store().create(pods, "default", pod_with_claim("user", "c-held"));
    REQUIRE(eventually([&] { return phase(sb, "user") == "Succeeded"; }));

    // Deleted while a pod (even a finished one) names it: Terminating, its PV still Bound.
    sb.store().remove(pvcs, "default", "c-held");
    sb.store().remove(pvs, "", "held");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK_FALSE(str(sb.store().get(pvcs, "default", "c-held"), "metadata.deletionTimestamp").empty());
    CHECK(pvc_phase(sb, "c-held") == "Bound");
    CHECK(pv_phase(sb, "held") == "Bound");
    CHECK_FALSE(str(sb.store().get(pvs, "", "held"), "metadata.deletionTimestamp").empty());

    // The pod gone, the claim goes; its PV, Released, goes too (it was deleted meanwhile).
    sb.store().remove(pods, "default", "user");
    CHECK(eventually([&] { return gone(pvcs, "default", "c-held"); }));
    CHECK(eventually([&] { return gone(pvs, "", "held"); }));
}

TEST_CASE("a WaitForFirstConsumer claim is bound by the scheduler to a PV on the chosen node") {
    Sandbox sb(quiet_options(3));
    sb.store().create(classes, "", json::object{{"metadata", json::object{{"name", "local"}}},
                                                {"provisioner", "kubernetes.io/no-provisioner"},
                                                {"volumeBindingMode", "WaitForFirstConsumer"}});
    sb.store().create(pvs, "", pv("local-2", "10Gi", "local", "Retain", on_node("node-2")));
    sb.store().create(pvcs, "default", pvc("wffc", "1Gi", "local"));
    // Not bound before a consumer exists.
    CHECK(pvc_phase(sb, "wffc") == "Pending");
    sb.store().create(pods, "default", pod_with_claim("consumer", "wffc"));
    REQUIRE(eventually([&] { return pvc_phase(sb, "wffc") == "Bound"; }));
    // The claim may be Bound a moment before the scheduler's binding of the pod lands.
    CHECK(eventually([&] { return node_of(sb, "consumer") == "node-2"; }));
    CHECK(str(sb.store().get(pvcs, "default", "wffc"), "spec.volumeName") == "local-2");
    REQUIRE(eventually([&] { return phase(sb, "consumer") == "Succeeded"; }));
    CHECK(std::filesystem::is_directory(sb.node_dir("node-2") / "pv" / "local-2"));

    // With its only PV taken, another consumer of another claim cannot be placed.
    sb.store().create(pvcs, "default", pvc("wffc-2", "1Gi", "local"));
    sb.store().create(pods, "default", pod_with_claim("second", "wffc-2"));
    REQUIRE(eventually([&] { return !events_for(sb, "second", "FailedScheduling").empty(); }));
    CHECK(str(events_for(sb, "second", "FailedScheduling").front(), "message") ==
          "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind. preemption: 0/3 "
          "nodes are available: 3 Preemption is not helpful for scheduling.");

    // Nothing the binder, the scheduler, the kubelet (node and pod status, leases, events)
    // wrote carried a field the 1.32 API lacks: a real apiserver would have dropped it.
    CHECK(sb.store().unknown_fields_seen() == std::vector<std::string>{});
}

TEST_CASE("an external provisioner's WaitForFirstConsumer claim: a node selected within allowedTopologies, the pod waits for the provisioned PV") {
    Sandbox sb(quiet_options(3));
    auto topology = [](const std::string& node) {
        return json::array{json::object{{"matchLabelExpressions", json::array{json::object{
            {"key", "kubernetes.io/hostname"}, {"values", json::array{node}}}}}}};
    };
    sb.store().create(classes, "", json::object{{"metadata", json::object{{"name", "made"}}},
                                                {"provisioner", "example.com/maker"},
                                                {"volumeBindingMode", "WaitForFirstConsumer"},
                                                {"allowedTopologies", topology("node-3")}});
    sb.store().create(pvcs, "default", pvc("dyn", "1Gi", "made"));
    // No consumer yet: the PV controller says so, and hands nothing to the provisioner.
    REQUIRE(eventually([&] { return !events_for(sb, "dyn", "WaitForFirstConsumer").empty(); }));
    CHECK(str(events_for(sb, "dyn", "WaitForFirstConsumer").front(), "message") ==
          "waiting for first consumer to be created before binding");
    auto annotation = [&](const std::string& key) {
        auto c = sb.store().get(pvcs, "default", "dyn");
        const auto* a = c.at("metadata").as_object().if_contains("annotations");
        const auto* v = a ? a->as_object().if_contains(key) : nullptr;
        return v ? std::string(v->as_string()) : std::string();
    };
    CHECK(annotation("volume.kubernetes.io/storage-provisioner") == "");

    sb.store().create(pods, "default", pod_with_claim("consumer", "dyn"));
    // The scheduler names the one node the class allows; the PV controller hands the claim over.
    REQUIRE(eventually([&] { return annotation("volume.kubernetes.io/selected-node") == "node-3"; }));
    REQUIRE(eventually([&] { return annotation("volume.kubernetes.io/storage-provisioner") == "example.com/maker"; }));
    CHECK(annotation("volume.beta.kubernetes.io/storage-provisioner") == "example.com/maker");
    REQUIRE(eventually([&] { return !events_for(sb, "dyn", "ExternalProvisioning").empty(); }));
    CHECK(str(events_for(sb, "dyn", "ExternalProvisioning").front(), "message").starts_with(
        "Waiting for a volume to be created either by the external provisioner 'example.com/maker'"));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(node_of(sb, "consumer") == "");  // waits for its volume, unbound
    CHECK(events_for(sb, "consumer", "FailedScheduling").empty());

    // The provisioner's part: a PV on that node, pre-bound to the claim.
    auto claim = sb.store().get(pvcs, "default", "dyn");
    auto made = pv("pvc-" + str(claim, "metadata.uid"), "1Gi", "made", "Delete", on_node("node-3"));
    made.as_object()["spec"].as_object()["claimRef"] =
        json::object{{"namespace", "default"}, {"name", "dyn"}, {"uid", str(claim, "metadata.uid")}};
    made.as_object()["metadata"].as_object()["annotations"] = json::object{{"pv.kubernetes.io/provisioned-by", "example.com/maker"}};
    std::string made_name = str(made, "metadata.name");
    sb.store().create(pvs, "", made);
    REQUIRE(eventually([&] { return pvc_phase(sb, "dyn") == "Bound"; }));
    CHECK(eventually([&] { return node_of(sb, "consumer") == "node-3"; }));
    REQUIRE(eventually([&] { return phase(sb, "consumer") == "Succeeded"; }));

    // Its claim gone, a Delete PV of an external provisioner is Released and left to it.
    sb.store().remove(pods, "default", "consumer");
    sb.store().remove(pvcs, "default", "dyn");
    REQUIRE(eventually([&] { return pv_phase(sb, made_name) == "Released"; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(pv_phase(sb, made_name) == "Released");

    // A class whose topologies admit no node: no node can provision, as kube-scheduler words it.
    sb.store().create(classes, "", json::object{{"metadata", json::object{{"name", "nowhere"}}},
                                                {"provisioner", "example.com/maker"},
                                                {"volumeBindingMode", "WaitForFirstConsumer"},
                                                {"allowedTopologies", topology("node-9")}});
    sb.store().create(pvcs, "default", pvc("stuck", "1Gi", "nowhere"));
    sb.store().create(pods, "default", pod_with_claim("stuck-pod", "stuck"));
    REQUIRE(eventually([&] { return !events_for(sb, "stuck-pod", "FailedScheduling").empty(); }));
    CHECK(str(events_for(sb, "stuck-pod", "FailedScheduling").front(), "message") ==
          "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind. preemption: 0/3 "
          "nodes are available: 3 Preemption is not helpful for scheduling.");
    CHECK(sb.store().unknown_fields_seen() == std::vector<std::string>{});
}

TEST_CASE("a pod using a claim bound to a PV with node affinity goes where the PV is") {
    Sandbox sb(quiet_options(3));
    sb.store().create(pvs, "", pv("pinned", "1Gi", "", "Retain", on_node("node-3")));
    sb.store().create(pvcs, "default", pvc("c", "1Gi", "", {{"volumeName", "pinned"}}));
    REQUIRE(eventually([&] { return pvc_phase(sb, "c") == "Bound"; }));
    for (int i = 0; i < 3; ++i) sb.store().create(pods, "default", pod_with_claim("user-" + std::to_string(i), "c"));
    for (int i = 0; i < 3; ++i) CHECK(eventually([&] { return node_of(sb, "user-" + std::to_string(i)) == "node-3"; }));
}

TEST_CASE("a pod whose Immediate claim is unbound or missing is unschedulable") {
    Sandbox sb(quiet_options(3));
    sb.store().create(pvcs, "default", pvc("unmatched", "100Gi", "nothing"));
    sb.store().create(pods, "default", pod_with_claim("waits", "unmatched"));
    sb.store().create(pods, "default", pod_with_claim("orphan", "missing"));
    REQUIRE(eventually([&] { return !events_for(sb, "waits", "FailedScheduling").empty(); }));
    CHECK(str(events_for(sb, "waits", "FailedScheduling").front(), "message") ==
          "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/3 nodes are "
          "available: 3 Preemption is not helpful for scheduling.");
    REQUIRE(eventually([&] { return !events_for(sb, "orphan", "FailedScheduling").empty(); }));
    CHECK(str(events_for(sb, "orphan", "FailedScheduling").front(), "message") ==
          "0/3 nodes are available: persistentvolumeclaim \"missing\" not found. preemption: 0/3 nodes are "
          "available: 3 Preemption is not helpful for scheduling.");
}

TEST_CASE("the PV binder acts on objects made before it started, on every change after, and on what changed while it was stopped") {
    ObjectStore store;
    StorageProtectionController protection(store);  // lets a deleted claim go, as on a cluster
    protection.start();
    auto pair = [&](const std::string& name) {
        auto v = pv(name, "1Gi", "", "Retain");
        v.as_object()["spec"].as_object()["claimRef"] = json::object{{"namespace", "default"}, {"name", name + "-c"}};
        store.create(pvs, "", v);
        store.create(pvcs, "default", pvc(name + "-c", "1Gi", "", {{"volumeName", name}}));
    };
    auto phase = [&](const ResourceId& id, const std::string& ns, const std::string& name) {
        return str(store.get(id, ns, name), "status.phase");
    };
    auto bound = [&](const std::string& name) {
        return phase(pvs, "", name) == "Bound" && phase(pvcs, "default", name + "-c") == "Bound";
    };
    pair("early");
    VolumeBinder binder(store);
    binder.start();
    CHECK(eventually([&] { return bound("early"); }));  // from its first list
    pair("late");
    CHECK(eventually([&] { return bound("late"); }));  // from the change feed

    binder.stop();
    pair("unseen");
    store.remove(pvcs, "default", "early-c");
    binder.start();  // lists afresh: what changed meanwhile is not missed
    CHECK(eventually([&] { return bound("unseen"); }));
    CHECK(eventually([&] { return phase(pvs, "", "early") == "Released"; }));
    CHECK(bound("late"));
    binder.stop();
}
