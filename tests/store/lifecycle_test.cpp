// ObjectStore: deletion and what follows it: preconditions, finalizers, the three propagation
// policies and garbage collection, deletecollection, namespace and CRD cascades; and the
// garbage-collection planner on its own.
#include "store_support.hpp"

#include <vck/sandbox/storage/object_store.hpp>

#include <doctest.h>

#include <optional>
#include <string>
#include <vector>

using namespace vck::sandbox;
using vck::client::PatchType;
using namespace vck::sandbox::store_test;
namespace json = boost::json;

namespace {

bool exists(ObjectStore& store, const ResourceId& r, std::string_view ns, std::string_view name) {
    try {
        store.get(r, ns, name);
        return true;
    } catch (const StoreError& e) {
        if (e.code() != 404) throw;
        return false;
    }
}

/// A dependent of `owner` (a stored object of kind `kind`).
json::value owned_by(std::string_view name, const json::value& owner, std::string_view kind, bool block = false) {
    json::object ref{{"apiVersion", "v1"}, {"kind", kind}, {"name", owner.at("metadata").at("name")},
                     {"uid", owner.at("metadata").at("uid")}};
    if (block) ref["blockOwnerDeletion"] = true;
    return json::object{{"metadata", json::object{{"name", name}, {"ownerReferences", json::array{ref}}}}};
}

json::value with_finalizer(std::string_view name, std::string_view finalizer) {
    return json::object{{"metadata", json::object{{"name", name}, {"finalizers", json::array{finalizer}}}}};
}

/// `obj` made a pod the server accepts: one container with an image.
json::value widget_crd() {
    return parse(R"({
      "metadata": {"name": "widgets.example.com"},
      "spec": {"group": "example.com", "scope": "Namespaced",
               "names": {"plural": "widgets", "kind": "Widget"},
               "versions": [{"name": "v1", "served": true, "storage": true,
                             "schema": {"openAPIV3Schema": {"type": "object",
                                        "x-kubernetes-preserve-unknown-fields": true}}}]}})");
}

std::vector<std::string> finalizers_of(const json::value& obj) {
    std::vector<std::string> out;
    if (const auto* f = obj.at("metadata").as_object().if_contains("finalizers"))
        for (const auto& e : f->as_array()) out.emplace_back(e.as_string());
    return out;
}

} // namespace

TEST_CASE("delete removes an object without finalizers at once and reports it finished") {
    ObjectStore store;
    store.create(configmaps, "default", named("c"));
    auto res = store.remove(configmaps, "default", "c");
    CHECK(res.finished);
    CHECK(meta_of(res.object, "name") == "c");
    CHECK(meta_of(res.object, "resourceVersion") == std::to_string(store.resource_version()));
    CHECK_FALSE(exists(store, configmaps, "default", "c"));
    auto again = refusal([&] { store.remove(configmaps, "default", "c"); });
    CHECK(again.code == 404);
}

TEST_CASE("delete preconditions on uid and resourceVersion are 409 Conflict") {
    ObjectStore store;
    auto cm = store.create(configmaps, "default", named("c"));
    StoreDeleteOptions wrong_uid;
    wrong_uid.precondition_uid = "not-the-uid";
    auto st = refusal([&] { store.remove(configmaps, "default", "c", wrong_uid); });
    CHECK(st.code == 409);
    CHECK(st.reason == "Conflict");
    CHECK(st.message.rfind("Operation cannot be fulfilled on configmaps \"c\": ", 0) == 0);
    CHECK(st.message.find("Precondition failed: UID in precondition: not-the-uid, UID in object meta: " +
                          meta_of(cm, "uid")) != std::string::npos);
    StoreDeleteOptions wrong_rv;
    wrong_rv.precondition_resource_version = "1";
    CHECK(refusal([&] { store.remove(configmaps, "default", "c", wrong_rv); }).code == 409);
    CHECK(exists(store, configmaps, "default", "c"));
    StoreDeleteOptions right;
    right.precondition_uid = meta_of(cm, "uid");
    right.precondition_resource_version = meta_of(cm, "resourceVersion");
    CHECK(store.remove(configmaps, "default", "c", right).finished);
}

TEST_CASE("DeleteOptions are read from a request body") {
    auto d = StoreDeleteOptions::from_json(parse(R"({"kind": "DeleteOptions", "apiVersion": "v1",
        "propagationPolicy": "Foreground", "preconditions": {"uid": "u1", "resourceVersion": "7"}})"));
    CHECK(d.propagation_policy == "Foreground");
    CHECK(d.precondition_uid == "u1");
    CHECK(d.precondition_resource_version == "7");
    CHECK(StoreDeleteOptions::from_json(parse(R"({"orphanDependents": true})")).propagation_policy == "Orphan");
    CHECK(StoreDeleteOptions::from_json(nullptr).propagation_policy.empty());
    auto st = refusal([] { StoreDeleteOptions::from_json(parse(R"({"propagationPolicy": 3})")); });
    CHECK(st.code == 400);
    ObjectStore store;
    store.create(configmaps, "default", named("c"));
    StoreDeleteOptions bogus;
    bogus.propagation_policy = "Sometimes";
    CHECK(refusal([&] { store.remove(configmaps, "default", "c", bogus); }).code == 422);
}

namespace {

/// A pod bound to `node` (none: unscheduled) in `phase` (none: not reported yet).
json::value pod_on(std::string_view name, std::string_view node, std::string_view phase = "",
                   std::optional<std::int64_t> grace = std::nullopt) {
    json::object spec{{"containers", json::array{json::object{{"name", "c"}, {"image", "busybox"}}}}};
    if (!node.empty()) spec["nodeName"] = node;
    if (grace) spec["terminationGracePeriodSeconds"] = *grace;
    json::object pod{{"metadata", json::object{{"name", name}}}, {"spec", std::move(spec)}};
    if (!phase.empty()) pod["status"] = json::object{{"phase", phase}};
    return pod;
}

StoreDeleteOptions grace(std::int64_t seconds) {
    StoreDeleteOptions o;
    o.grace_period_seconds = seconds;
    return o;
}

} // namespace

TEST_CASE("a pod running on a node is deleted gracefully: Terminating until a delete with grace period 0") {
    ObjectStore store;
    store.create(pods, "default", pod_on("p", "node-1", "Running", 20));
    auto res = store.remove(pods, "default", "p");
    CHECK_FALSE(res.finished);
    CHECK(res.object.at("metadata").at("deletionGracePeriodSeconds") == 20);
    // The deletionTimestamp is the end of the grace period, as the real server writes it.
    auto ts = meta_of(res.object, "deletionTimestamp");
    auto created = meta_of(res.object, "creationTimestamp");
    CHECK(ts > created);
    CHECK(exists(store, pods, "default", "p"));
    SUBCASE("status writes while it stops do not finish the deletion") {
        auto obj = store.get(pods, "default", "p");
        obj.as_object()["status"] = json::object{{"phase", "Running"}, {"message", "stopping"}};
        store.update(pods, "default", "p", obj, "status");
        CHECK(exists(store, pods, "default", "p"));
    }
    SUBCASE("a second delete with a longer grace period changes nothing; a shorter one shortens it") {
        auto again = store.remove(pods, "default", "p", grace(60));
        CHECK(again.object.at("metadata").at("deletionGracePeriodSeconds") == 20);
        auto shorter = store.remove(pods, "default", "p", grace(5));
        CHECK_FALSE(shorter.finished);
        CHECK(shorter.object.at("metadata").at("deletionGracePeriodSeconds") == 5);
        CHECK(meta_of(shorter.object, "deletionTimestamp") < ts);
    }
    // The kubelet's confirmation (or kubectl delete --force --grace-period=0).
    CHECK(store.remove(pods, "default", "p", grace(0)).finished);
    CHECK_FALSE(exists(store, pods, "default", "p"));
}

TEST_CASE("a pod with nothing running goes at once: unscheduled, finished, or deleted with grace period 0") {
    ObjectStore store;
    store.create(pods, "default", pod_on("unscheduled", ""));
    for (std::string phase : {"Succeeded", "Failed"}) {
        // A pod's status is the kubelet's to write, through the status subresource.
        auto made = store.create(pods, "default", pod_on(phase == "Failed" ? "failed" : "succeeded", "node-1"));
        made.as_object()["status"] = json::object{{"phase", phase}};
        store.update(pods, "default", meta_of(made, "name"), made, "status");
    }
    store.create(pods, "default", pod_on("forced", "node-1", "Running"));
    for (std::string name : {"unscheduled", "succeeded", "failed"}) {
        CAPTURE(name);
        CHECK(store.remove(pods, "default", name).finished);
    }
    CHECK(store.remove(pods, "default", "forced", grace(0)).finished);
    // A negative grace period is taken as 1 s, as the pod registry does.
    store.create(pods, "default", pod_on("negative", "node-1", "Running"));
    CHECK(store.remove(pods, "default", "negative", grace(-5)).object.at("metadata").at("deletionGracePeriodSeconds") == 1);
}

TEST_CASE("a gracefully deleted pod with a finalizer waits for both the confirmation and the finalizer") {
    ObjectStore store;
    auto p = pod_on("p", "node-1", "Running");
    p.as_object()["metadata"].as_object()["finalizers"] = json::array{"example.com/keep"};
    store.create(pods, "default", p);
    CHECK_FALSE(store.remove(pods, "default", "p").finished);
    CHECK_FALSE(store.remove(pods, "default", "p", grace(0)).finished);
    CHECK(exists(store, pods, "default", "p"));
    auto obj = store.get(pods, "default", "p");
    obj.as_object()["metadata"].as_object().erase("finalizers");
    store.update(pods, "default", "p", obj);
    CHECK_FALSE(exists(store, pods, "default", "p"));
}

TEST_CASE("DeleteOptions' gracePeriodSeconds is read from a body and must be an integer") {
    CHECK(StoreDeleteOptions::from_json(parse(R"({"gracePeriodSeconds": 0})")).grace_period_seconds == 0);
    CHECK_FALSE(StoreDeleteOptions::from_json(parse(R"({})")).grace_period_seconds.has_value());
    CHECK(refusal([] { StoreDeleteOptions::from_json(parse(R"({"gracePeriodSeconds": "3"})")); }).code == 400);
}

TEST_CASE("an object with finalizers is only marked for deletion until the last finalizer goes") {
    ObjectStore store;
    store.create(configmaps, "default", parse(R"({"metadata": {"name": "c", "finalizers": ["a/x", "b/y"]}})"));
    auto w = store.watch(configmaps, "default", from_rv(std::to_string(store.resource_version())));
    auto res = store.remove(configmaps, "default", "c");
    CHECK_FALSE(res.finished);
    auto marked = store.get(configmaps, "default", "c");
    CHECK_FALSE(meta_of(marked, "deletionTimestamp").empty());
    CHECK(marked.at("metadata").at("deletionGracePeriodSeconds") == 0);

    // Deleting again changes nothing.
    auto twice = store.remove(configmaps, "default", "c");
    CHECK_FALSE(twice.finished);
    CHECK(meta_of(twice.object, "resourceVersion") == meta_of(marked, "resourceVersion"));

    // No new finalizers on an object being deleted.
    auto more = marked;
    more.at("metadata").as_object()["finalizers"] = json::array{"a/x", "b/y", "c/z"};
    auto st = refusal([&] { store.update(configmaps, "default", "c", more); });
    CHECK(st.code == 422);
    CHECK(st.message.find("no new finalizers can be added if the object is being deleted") != std::string::npos);

    auto one = marked;
    one.at("metadata").as_object()["finalizers"] = json::array{"b/y"};
    one = store.update(configmaps, "default", "c", one);
    CHECK(exists(store, configmaps, "default", "c"));
    one.at("metadata").as_object().erase("finalizers");
    store.update(configmaps, "default", "c", one);
    CHECK_FALSE(exists(store, configmaps, "default", "c"));

    std::vector<std::string> types;
    for (const auto& e : w->drain()) types.push_back(e.type);
    CHECK(types == std::vector<std::string>{"MODIFIED", "MODIFIED", "MODIFIED", "DELETED"});
}

TEST_CASE("a patch removing the last finalizer deletes the object") {
    ObjectStore store;
    store.create(configmaps, "default", with_finalizer("c", "example.com/cleanup"));
    store.remove(configmaps, "default", "c");
    store.patch(configmaps, "default", "c", PatchType::Json,
                parse(R"([{"op": "remove", "path": "/metadata/finalizers"}])"));
    CHECK_FALSE(exists(store, configmaps, "default", "c"));
}

TEST_CASE("background deletion garbage-collects dependents, transitively") {
    ObjectStore store;
    auto owner = store.create(configmaps, "default", named("owner"));
    auto child = store.create(secrets, "default", owned_by("child", owner, "ConfigMap"));
    store.create(pods, "default", runnable(owned_by("grandchild", child, "Secret")));
    store.create(configmaps, "default", named("bystander"));
    CHECK(store.remove(configmaps, "default", "owner").finished);
    CHECK_FALSE(exists(store, secrets, "default", "child"));
    CHECK_FALSE(exists(store, pods, "default", "grandchild"));
    CHECK(exists(store, configmaps, "default", "bystander"));
}

TEST_CASE("a dependent with another live owner only loses the reference to the gone one") {
    ObjectStore store;
    auto a = store.create(configmaps, "default", named("a"));
    auto b = store.create(configmaps, "default", named("b"));
    auto dep = owned_by("dep", a, "ConfigMap");
    auto second = owned_by("dep", b, "ConfigMap").at("metadata").at("ownerReferences").at(0);
    dep.at("metadata").at("ownerReferences").as_array().push_back(second);
    store.create(secrets, "default", dep);
    store.remove(configmaps, "default", "a");
    auto left = store.get(secrets, "default", "dep");
    REQUIRE(left.at("metadata").at("ownerReferences").as_array().size() == 1);
    CHECK(left.at("metadata").at("ownerReferences").at(0).at("name") == "b");
}

TEST_CASE("a dependent whose owner never existed is collected") {
    ObjectStore store;
    auto ghost = parse(R"({"metadata": {"name": "ghost", "uid": "00000000-0000-4000-8000-000000000000"}})");
    store.create(secrets, "default", owned_by("orphaned", ghost, "ConfigMap"));
    CHECK_FALSE(exists(store, secrets, "default", "orphaned"));
}

TEST_CASE("foreground deletion keeps the owner until blocking dependents are gone") {
    ObjectStore store;
    auto owner = store.create(configmaps, "default", named("owner"));
    store.create(secrets, "default", owned_by("blocker", owner, "ConfigMap", true));
    // The blocking dependent has a finalizer of its own, so it lingers.
    auto blocker = store.get(secrets, "default", "blocker");
    blocker.at("metadata").as_object()["finalizers"] = json::array{"example.com/slow"};
    store.update(secrets, "default", "blocker", blocker);
    store.create(pods, "default", runnable(owned_by("free", owner, "ConfigMap", false)));

    StoreDeleteOptions fg;
    fg.propagation_policy = "Foreground";
    auto res = store.remove(configmaps, "default", "owner", fg);
    CHECK_FALSE(res.finished);
    auto waiting = store.get(configmaps, "default", "owner");
    CHECK(finalizers_of(waiting) == std::vector<std::string>{"foregroundDeletion"});
    CHECK_FALSE(meta_of(waiting, "deletionTimestamp").empty());
    CHECK_FALSE(exists(store, pods, "default", "free"));
    auto lingering = store.get(secrets, "default", "blocker");
    CHECK_FALSE(meta_of(lingering, "deletionTimestamp").empty());

    lingering.at("metadata").as_object().erase("finalizers");
    store.update(secrets, "default", "blocker", lingering);
    CHECK_FALSE(exists(store, secrets, "default", "blocker"));
    CHECK_FALSE(exists(store, configmaps, "default", "owner"));
}

TEST_CASE("foreground deletion goes down a chain, and the chain lets go from the bottom up") {
    ObjectStore store;
    auto owner = store.create(configmaps, "default", named("owner"));
    auto child = store.create(secrets, "default", owned_by("child", owner, "ConfigMap", true));
    auto grandchild = owned_by("grandchild", child, "Secret", true);
    grandchild.at("metadata").as_object()["finalizers"] = json::array{"example.com/slow"};
    store.create(pods, "default", runnable(grandchild));
    for (int i = 0; i < 50; ++i) store.create(configmaps, "default", named("bystander-" + std::to_string(i)));

    StoreDeleteOptions fg;
    fg.propagation_policy = "Foreground";
    store.remove(configmaps, "default", "owner", fg);
    // The child has a dependent of its own, so it waits in the foreground too.
    CHECK(finalizers_of(store.get(secrets, "default", "child")) == std::vector<std::string>{"foregroundDeletion"});
    CHECK(finalizers_of(store.get(configmaps, "default", "owner")) == std::vector<std::string>{"foregroundDeletion"});
    auto last = store.get(pods, "default", "grandchild");
    CHECK_FALSE(meta_of(last, "deletionTimestamp").empty());

    store.create(configmaps, "default", named("unrelated-write"));  // changes nothing for the chain
    CHECK(exists(store, configmaps, "default", "owner"));

    last.at("metadata").as_object().erase("finalizers");
    store.update(pods, "default", "grandchild", last);
    CHECK_FALSE(exists(store, pods, "default", "grandchild"));
    CHECK_FALSE(exists(store, secrets, "default", "child"));
    CHECK_FALSE(exists(store, configmaps, "default", "owner"));
    CHECK(exists(store, configmaps, "default", "bystander-49"));
}

TEST_CASE("orphan deletion removes the owner and strips dependents' references to it") {
    ObjectStore store;
    auto owner = store.create(configmaps, "default", named("owner"));
    store.create(secrets, "default", owned_by("kept", owner, "ConfigMap", true));
    std::vector<std::string> owner_events;
    store.on_change([&](const StoreChange& c) {
        if (c.name == "owner") owner_events.push_back(c.type + ":" + [&] {
            std::string s;
            for (const auto& f : finalizers_of(*c.object)) s += f;
            return s;
        }());
    });
    StoreDeleteOptions orphan;
    orphan.propagation_policy = "Orphan";
    store.remove(configmaps, "default", "owner", orphan);
    CHECK_FALSE(exists(store, configmaps, "default", "owner"));
    auto kept = store.get(secrets, "default", "kept");
    CHECK_FALSE(kept.at("metadata").as_object().contains("ownerReferences"));
    // The owner went through the orphan finalizer first.
    REQUIRE(owner_events.size() >= 2);
    CHECK(owner_events.front() == "MODIFIED:orphan");
    CHECK(owner_events.back().rfind("DELETED", 0) == 0);
}

TEST_CASE("deletecollection deletes what the selector matches") {
    ObjectStore store;
    store.create(configmaps, "default", parse(R"({"metadata": {"name": "a", "labels": {"x": "1"}}})"));
    store.create(configmaps, "default", parse(R"({"metadata": {"name": "b", "labels": {"x": "1"}}})"));
    store.create(configmaps, "default", parse(R"({"metadata": {"name": "c"}})"));
    StoreListOptions sel;
    sel.label_selector = "x=1";
    auto deleted = store.delete_collection(configmaps, "default", sel);
    CHECK(deleted.at("kind") == "ConfigMapList");
    CHECK(deleted.at("items").as_array().size() == 2);
    CHECK_FALSE(exists(store, configmaps, "default", "a"));
    CHECK_FALSE(exists(store, configmaps, "default", "b"));
    CHECK(exists(store, configmaps, "default", "c"));
}

TEST_CASE("deleting a namespace deletes everything in it, then the namespace") {
    ObjectStore store;
    store.create(namespaces, "", named("team"));
    store.create(configmaps, "team", named("c"));
    store.create(pods, "team", runnable(with_finalizer("p", "example.com/hold")));
    store.create(configmaps, "default", named("c"));
    auto res = store.remove(namespaces, "", "team");
    CHECK_FALSE(res.finished);
    auto ns = store.get(namespaces, "", "team");
    CHECK(ns.at("status").at("phase") == "Terminating");
    CHECK_FALSE(exists(store, configmaps, "team", "c"));
    CHECK(exists(store, configmaps, "default", "c"));

    auto st = refusal([&] { store.create(configmaps, "team", named("late")); });
    CHECK(st.code == 403);
    CHECK(st.reason == "Forbidden");
    CHECK(st.message ==
          R"(configmaps "late" is forbidden: unable to create new content in namespace team because it is being terminated)");

    auto pod = store.get(pods, "team", "p");
    pod.at("metadata").as_object().erase("finalizers");
    store.update(pods, "team", "p", pod);
    CHECK_FALSE(exists(store, namespaces, "", "team"));
}

TEST_CASE("the system namespaces cannot be deleted") {
    ObjectStore store;
    auto st = refusal([&] { store.remove(namespaces, "", "default"); });
    CHECK(st.code == 403);
    CHECK(st.message == R"(namespaces "default" is forbidden: this namespace may not be deleted)");
}

TEST_CASE("deleting a CRD deletes its objects, then stops serving the resource") {
    ObjectStore store;
    store.create(crds, "", widget_crd());
    store.create(widgets, "default", named("w1"));
    store.create(widgets, "default", with_finalizer("w2", "example.com/cleanup"));
    auto watch = store.watch(widgets, "default");

    auto res = store.remove(crds, "", "widgets.example.com");
    CHECK_FALSE(res.finished);
    CHECK_FALSE(exists(store, widgets, "default", "w1"));
    auto crd = store.get(crds, "", "widgets.example.com");
    CHECK(finalizers_of(crd) == std::vector<std::string>{"customresourcecleanup.apiextensions.k8s.io"});
    auto st = refusal([&] { store.create(widgets, "default", named("w3")); });
    CHECK(st.code == 405);
    CHECK(st.message == "create not allowed while custom resource definition is terminating");

    auto w2 = store.get(widgets, "default", "w2");
    w2.at("metadata").as_object().erase("finalizers");
    store.update(widgets, "default", "w2", w2);
    CHECK_FALSE(exists(store, crds, "", "widgets.example.com"));
    CHECK_FALSE(store.find_resource("example.com", "v1", "widgets"));
    CHECK(refusal([&] { store.list(widgets, "default"); }).code == 404);
    CHECK(watch->closed());

    // Creating the CRD again serves an empty resource.
    store.create(crds, "", widget_crd());
    CHECK(store.list(widgets, "default").at("items").as_array().empty());
}

TEST_CASE("the GC planner removes dangling references but keeps objects that have a live owner") {
    std::vector<GcObject> objs{
        {ObjectRef{"/secrets", "ns", "dep"}, "d1", {{"live", false}, {"gone", false}}, false, false, false},
    };
    auto actions = plan_garbage_collection(objs, [](const std::string& uid) {
        return GcOwnerState{uid == "live", false};
    });
    REQUIRE(actions.size() == 1);
    CHECK(actions[0].type == GcAction::Type::RemoveOwnerRefs);
    CHECK(actions[0].owner_uids == std::vector<std::string>{"gone"});
}

TEST_CASE("the GC planner deletes in the foreground a dependent that has dependents of its own") {
    std::vector<GcObject> objs{
        {ObjectRef{"/configmaps", "ns", "owner"}, "o", {}, true, false, true},
        {ObjectRef{"/secrets", "ns", "mid"}, "m", {{"o", true}}, false, false, false},
        {ObjectRef{"/pods", "ns", "leaf"}, "l", {{"m", true}}, false, false, false},
    };
    auto actions = plan_garbage_collection(objs, [](const std::string& uid) {
        return GcOwnerState{uid == "o" || uid == "m", uid == "o"};
    });
    REQUIRE(actions.size() == 1);  // the owner still has a blocking dependent
    CHECK(actions[0].type == GcAction::Type::DeleteForeground);
    CHECK(actions[0].target.name == "mid");
}

TEST_CASE("the GC planner releases an orphaning owner after its dependents let go of it") {
    std::vector<GcObject> objs{
        {ObjectRef{"/configmaps", "ns", "owner"}, "o", {}, true, true, false},
        {ObjectRef{"/secrets", "ns", "dep"}, "d", {{"o", true}}, false, false, false},
    };
    auto actions = plan_garbage_collection(objs, [](const std::string&) { return GcOwnerState{true, false}; });
    REQUIRE(actions.size() == 2);
    CHECK(actions[0].type == GcAction::Type::RemoveOwnerRefs);
    CHECK(actions[0].target.name == "dep");
    CHECK(actions[1].type == GcAction::Type::RemoveFinalizer);
    CHECK(actions[1].finalizer == "orphan");
}
