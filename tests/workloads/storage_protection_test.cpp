// Storage object in-use protection (sandbox/admission/storage_protection_admission.hpp and
// sandbox/cluster/storage_protection.hpp), pass by pass: created claims and volumes carry their
// protection finalizers; a claim a scheduled pod names, or a Bound volume, stays Terminating
// until that use ends, then goes; the PV binder releases a volume before it reclaims it.
#include "workloads_support.hpp"

#include <vck/sandbox/cluster/storage_protection.hpp>
#include <vck/sandbox/cluster/volume_binder.hpp>
#include <vck/sandbox/eventually.hpp>

#include <doctest.h>

#include <string>

namespace {

using namespace vck::sandbox;
using namespace vck::sandbox::workloads_test;

const ResourceId pvs{"", "v1", "persistentvolumes"};
const ResourceId namespaces{"", "v1", "namespaces"};

json::value claim(std::string_view name, std::string_view extra_meta = "") {
    return parse(R"({"metadata":{"name":")" + std::string(name) + R"(")" + std::string(extra_meta) +
                 R"(},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}})");
}

json::value volume(std::string_view name, std::string_view policy = "Retain") {
    return parse(R"({"metadata":{"name":")" + std::string(name) +
                 R"("},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/data"},)"
                 R"("persistentVolumeReclaimPolicy":")" + std::string(policy) + R"("}})");
}

/// A pod naming claim `claim_name`, on `node` ("" for not yet scheduled).
void pod_using(ObjectStore& store, std::string_view name, std::string_view claim_name, std::string_view node) {
    std::string node_field = node.empty() ? "" : R"("nodeName":")" + std::string(node) + R"(",)";
    store.create(pods, "default",
                 parse(R"({"metadata":{"name":")" + std::string(name) + R"("},"spec":{)" + node_field +
                       R"("containers":[{"name":"main","image":"busybox:1"}],)"
                       R"("volumes":[{"name":"data","persistentVolumeClaim":{"claimName":")" + std::string(claim_name) + R"("}}]}})"));
}

std::vector<std::string> finalizers_of(const json::value& obj) {
    std::vector<std::string> out;
    if (const auto* f = obj.at("metadata").as_object().if_contains("finalizers"))
        for (const auto& v : f->as_array()) out.emplace_back(v.as_string());
    return out;
}

bool terminating(ObjectStore& store, const ResourceId& id, std::string_view ns, std::string_view name) {
    return exists(store, id, ns, name) && store.get(id, ns, name).at("metadata").as_object().contains("deletionTimestamp");
}

void remove_now(ObjectStore& store, const ResourceId& id, std::string_view ns, std::string_view name) {
    StoreDeleteOptions o;
    o.grace_period_seconds = 0;
    store.remove(id, ns, name, o);
}

} // namespace

TEST_CASE("a created claim and volume carry their protection finalizers, after any the client gave") {
    ObjectStore store;
    auto c = store.create(pvcs, "default", claim("plain"));
    CHECK(finalizers_of(c) == std::vector<std::string>{"kubernetes.io/pvc-protection"});
    auto mine = store.create(pvcs, "default", claim("mine", R"(,"finalizers":["example.com/keep"])"));
    CHECK(finalizers_of(mine) == std::vector<std::string>{"example.com/keep", "kubernetes.io/pvc-protection"});
    auto already = store.create(pvcs, "default", claim("already", R"(,"finalizers":["kubernetes.io/pvc-protection"])"));
    CHECK(finalizers_of(already) == std::vector<std::string>{"kubernetes.io/pvc-protection"});
    CHECK(finalizers_of(store.create(pvs, "", volume("v"))) == std::vector<std::string>{"kubernetes.io/pv-protection"});
    // Other kinds are not touched.
    pod_using(store, "p", "plain", "");
    CHECK(finalizers_of(store.get(pods, "default", "p")).empty());
}

TEST_CASE("a claim a scheduled pod names stays Terminating until that pod is deleted, whatever its phase") {
    ObjectStore store;
    StorageProtectionController ctl(store);
    store.create(pvcs, "default", claim("used"));
    store.create(pvcs, "default", claim("pending-only"));
    store.create(pvcs, "default", claim("free"));
    pod_using(store, "runner", "used", "node-1");
    pod_using(store, "waiter", "pending-only", "");  // not scheduled: kubelet never starts it with a deleted claim
    for (auto name : {"used", "pending-only", "free"}) store.remove(pvcs, "default", name);
    ctl.pass();
    CHECK(terminating(store, pvcs, "default", "used"));
    CHECK_FALSE(exists(store, pvcs, "default", "pending-only"));
    CHECK_FALSE(exists(store, pvcs, "default", "free"));

    // Finished, the pod still holds it: only deleting the pod lets the claim go.
    auto pod = store.get(pods, "default", "runner");
    pod.as_object()["status"] = json::object{{"phase", "Succeeded"}};
    store.update(pods, "default", "runner", std::move(pod), "status");
    ctl.pass();
    CHECK(terminating(store, pvcs, "default", "used"));
    remove_now(store, pods, "default", "runner");
    ctl.pass();
    CHECK_FALSE(exists(store, pvcs, "default", "used"));
}

TEST_CASE("a pod of another namespace, or naming another claim, does not hold a claim") {
    ObjectStore store;
    StorageProtectionController ctl(store);
    store.create(namespaces, "", parse(R"({"metadata":{"name":"other"}})"));
    store.create(pvcs, "default", claim("c"));
    pod_using(store, "elsewhere", "d", "node-1");
    store.create(pods, "other",
                 parse(R"({"metadata":{"name":"o"},"spec":{"nodeName":"node-1","containers":[{"name":"m","image":"busybox:1"}],)"
                       R"("volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"c"}}]}})"));
    store.remove(pvcs, "default", "c");
    ctl.pass();
    CHECK_FALSE(exists(store, pvcs, "default", "c"));
}

TEST_CASE("an ephemeral volume's claim is held by the pod that owns it; one the pod does not own is not") {
    ObjectStore store;
    StorageProtectionController ctl(store);
    auto ephemeral_pod = [&](std::string_view name) {
        return store.create(pods, "default",
                            parse(R"({"metadata":{"name":")" + std::string(name) + R"("},"spec":{"nodeName":"node-1",)"
                                  R"("containers":[{"name":"m","image":"busybox:1"}],"volumes":[{"name":"scratch","ephemeral":)"
                                  R"({"volumeClaimTemplate":{"spec":{"accessModes":["ReadWriteOnce"],)"
                                  R"("resources":{"requests":{"storage":"1Gi"}}}}}}]}})"));
    };
    auto pod = ephemeral_pod("app");
    std::string uid(pod.at("metadata").at("uid").as_string());
    store.create(pvcs, "default",
                 claim("app-scratch", R"(,"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"app","uid":")" + uid +
                                          R"(","controller":true}])"));
    ephemeral_pod("other");
    store.create(pvcs, "default", claim("other-scratch"));  // the right name, but not made for that pod
    store.remove(pvcs, "default", "app-scratch");
    store.remove(pvcs, "default", "other-scratch");
    ctl.pass();
    CHECK(terminating(store, pvcs, "default", "app-scratch"));
    CHECK_FALSE(exists(store, pvcs, "default", "other-scratch"));
    remove_now(store, pods, "default", "app");
    ctl.pass();
    CHECK_FALSE(exists(store, pvcs, "default", "app-scratch"));
}

TEST_CASE("a Bound volume stays Terminating until it is no longer Bound") {
    ObjectStore store;
    StorageProtectionController ctl(store);
    store.create(pvs, "", volume("held"));
    auto v = store.get(pvs, "", "held");
    v.as_object()["status"] = json::object{{"phase", "Bound"}};
    store.update(pvs, "", "held", std::move(v), "status");
    store.create(pvs, "", volume("loose"));
    store.remove(pvs, "", "held");
    store.remove(pvs, "", "loose");
    ctl.pass();
    CHECK(terminating(store, pvs, "", "held"));
    CHECK_FALSE(exists(store, pvs, "", "loose"));
    v = store.get(pvs, "", "held");
    v.as_object()["status"] = json::object{{"phase", "Released"}};
    store.update(pvs, "", "held", std::move(v), "status");
    ctl.pass();
    CHECK_FALSE(exists(store, pvs, "", "held"));
}

TEST_CASE("a claim or volume not being deleted that lost its finalizer gets it back") {
    ObjectStore store;
    StorageProtectionController ctl(store);
    auto c = store.create(pvcs, "default", claim("c"));
    c.as_object()["metadata"].as_object()["finalizers"] = json::array{};
    store.update(pvcs, "default", "c", std::move(c));
    CHECK(finalizers_of(store.get(pvcs, "default", "c")).empty());
    ctl.pass();
    CHECK(finalizers_of(store.get(pvcs, "default", "c")) == std::vector<std::string>{"kubernetes.io/pvc-protection"});
}

TEST_CASE("the PV binder releases a Delete volume whose claim is gone before it deletes it, and protection lets it go") {
    ObjectStore store;
    // One pass of a binder that lists afresh (a binder not started sees no change feed).
    auto binder_pass = [&] { VolumeBinder(store).sync(); };
    StorageProtectionController ctl(store);
    store.create(pvcs, "default", claim("c"));
    auto pv = volume("pv-c", "Delete");
    pv.as_object()["spec"].as_object()["claimRef"] = json::object{{"namespace", "default"}, {"name", "c"}};
    store.create(pvs, "", std::move(pv));
    for (int i = 0; i < 4; ++i) binder_pass();
    REQUIRE(text_at(store.get(pvs, "", "pv-c"), {"status", "phase"}) == "Bound");
    store.remove(pvcs, "default", "c");
    ctl.pass();  // no pod uses it: the claim goes
    REQUIRE_FALSE(exists(store, pvcs, "default", "c"));
    binder_pass();
    CHECK(text_at(store.get(pvs, "", "pv-c"), {"status", "phase"}) == "Released");
    CHECK_FALSE(terminating(store, pvs, "", "pv-c"));
    binder_pass();
    CHECK(terminating(store, pvs, "", "pv-c"));
    ctl.pass();
    CHECK_FALSE(exists(store, pvs, "", "pv-c"));
}

TEST_CASE("started, it follows the change feed: a claim is held by a pod scheduled before or after the start, "
          "let go when that pod goes; a volume when it is no longer Bound; a lost finalizer comes back") {
    ObjectStore store;
    store.create(pvcs, "default", claim("early"));
    store.create(pvcs, "default", claim("late"));
    store.create(pvcs, "default", claim("free"));
    pod_using(store, "before", "early", "node-1");  // in the index from the first list
    StorageProtectionController ctl(store);
    ctl.start();
    pod_using(store, "after", "late", "node-2");  // in the index from the feed
    for (auto name : {"early", "late", "free"}) store.remove(pvcs, "default", name);
    REQUIRE(vck::sandbox::eventually([&] { return !exists(store, pvcs, "default", "free"); }, std::chrono::seconds(10)));
    CHECK(terminating(store, pvcs, "default", "early"));
    CHECK(terminating(store, pvcs, "default", "late"));

    // A pod rescheduled to name another claim stops holding the first.
    auto after = store.get(pods, "default", "after");
    remove_now(store, pods, "default", "after");
    CHECK(vck::sandbox::eventually([&] { return !exists(store, pvcs, "default", "late"); }, std::chrono::seconds(10)));
    CHECK(terminating(store, pvcs, "default", "early"));
    remove_now(store, pods, "default", "before");
    CHECK(vck::sandbox::eventually([&] { return !exists(store, pvcs, "default", "early"); }, std::chrono::seconds(10)));

    store.create(pvs, "", volume("held"));
    auto v = store.get(pvs, "", "held");
    v.as_object()["status"] = json::object{{"phase", "Bound"}};
    store.update(pvs, "", "held", std::move(v), "status");
    store.remove(pvs, "", "held");
    auto c = store.create(pvcs, "default", claim("c"));
    c.as_object()["metadata"].as_object()["finalizers"] = json::array{};
    store.update(pvcs, "default", "c", std::move(c));
    CHECK(vck::sandbox::eventually([&] {
        return finalizers_of(store.get(pvcs, "default", "c")) == std::vector<std::string>{"kubernetes.io/pvc-protection"};
    }, std::chrono::seconds(10)));
    CHECK(terminating(store, pvs, "", "held"));
    v = store.get(pvs, "", "held");
    v.as_object()["status"] = json::object{{"phase", "Released"}};
    store.update(pvs, "", "held", std::move(v), "status");
    CHECK(vck::sandbox::eventually([&] { return !exists(store, pvs, "", "held"); }, std::chrono::seconds(10)));
    ctl.stop();
}
