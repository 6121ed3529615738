// Which owners a started ReplicaSet or Job controller syncs (sandbox/cluster/owner_changes.hpp):
// the work of what changed, not a pass over every owner against every pod. Then the two
// controllers started, their loops driven by the store's changes alone.
#include "workloads_support.hpp"

#include <vck/sandbox/cluster/job_controller.hpp>
#include <vck/sandbox/cluster/owner_changes.hpp>
#include <vck/sandbox/eventually.hpp>

#include <doctest.h>

#include <set>
#include <string>

using namespace vck::sandbox;
using namespace vck::sandbox::workloads_test;
using vck::client::PatchType;
using Key = OwnerChanges::Key;

namespace {

json::value pod_body(std::string_view name, std::string_view app, const json::value* owner = nullptr,
                     std::string_view kind = "ReplicaSet") {
    auto body = parse(R"({"metadata": {"name": ")" + std::string(name) + R"(", "labels": {"app": ")" + std::string(app) +
                      R"("}}, "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}})");
    if (owner)
        body.at("metadata").as_object()["ownerReferences"] = json::array{json::object{
            {"apiVersion", "apps/v1"}, {"kind", kind}, {"name", text_at(*owner, {"metadata", "name"})},
            {"uid", text_at(*owner, {"metadata", "uid"})}, {"controller", true}}};
    return body;
}

std::set<Key> keys(std::initializer_list<Key> k) { return k; }

}  // namespace

TEST_CASE("started, the owners to sync are every owner first, then exactly those a change names") {
    ObjectStore store;
    store.create(ResourceId{"", "v1", "namespaces"}, "", parse(R"({"metadata": {"name": "other"}})"));
    store.create(replicasets, "default", workload("web", 1));
    auto api = store.create(replicasets, "default", workload("api", 1));
    store.create(replicasets, "other", workload("web", 1));
    OwnerChanges changes(store, replicasets, "ReplicaSet");
    changes.start();
    auto now = OwnerChanges::Clock::now();
    CHECK(changes.take(now) == keys({{"default", "api"}, {"default", "web"}, {"other", "web"}}));
    CHECK(changes.take(now).empty());  // nothing changed

    // A pod its controller reference names: that owner only.
    store.create(pods, "default", pod_body("p1", "api", &api));
    CHECK(changes.take(now) == keys({{"default", "api"}}));
    // An orphan: every owner of its namespace may adopt it; the other namespace's are not named.
    store.create(pods, "default", pod_body("orphan", "nothing"));
    CHECK(changes.take(now) == keys({{"default", "api"}, {"default", "web"}}));
    // A pod controlled by another kind is nobody's to adopt.
    store.create(pods, "default", pod_body("theirs", "web", &api, "VolumeManager"));
    CHECK(changes.take(now).empty());
    // Released (its controller reference removed): the former owner and, as an orphan now, all.
    store.patch(pods, "default", "p1", PatchType::Merge, parse(R"({"metadata": {"ownerReferences": null}})"));
    CHECK(changes.take(now) == keys({{"default", "api"}, {"default", "web"}}));
    // An owner that changed names itself.
    store.patch(replicasets, "other", "web", PatchType::Merge, parse(R"({"spec": {"replicas": 2}})"));
    CHECK(changes.take(now) == keys({{"other", "web"}}));

    // A time asked for comes due once, and a deleted owner is dropped with its time.
    changes.at({"default", "web"}, now + std::chrono::seconds(5));
    changes.at({"other", "web"}, now + std::chrono::seconds(7));
    CHECK(changes.next() == now + std::chrono::seconds(5));
    CHECK(changes.take(now).empty());
    CHECK(changes.take(now + std::chrono::seconds(6)) == keys({{"default", "web"}}));
    store.remove(replicasets, "other", "web");
    CHECK(changes.take(now + std::chrono::seconds(8)).empty());
    CHECK_FALSE(changes.next().has_value());
    store.create(pods, "other", pod_body("orphan", "web"));  // no owner left in its namespace
    CHECK(changes.take(now).empty());

    // Stopped and started again, it lists afresh.
    changes.stop();
    changes.start();
    CHECK(changes.take(now) == keys({{"default", "api"}, {"default", "web"}}));
}

TEST_CASE("a started ReplicaSet controller keeps its pods from the changes alone: creates, replaces a deleted "
          "pod, adopts an orphan, scales down") {
    ObjectStore store;
    ReplicaSetController rsc(store);
    rsc.start();
    auto rs = store.create(replicasets, "default", workload("web", 2));
    const auto uid = text_at(rs, {"metadata", "uid"});
    REQUIRE(eventually([&] { return pods_in(store, uid).size() == 2; }));
    auto first = text_at(pods_in(store, uid)[0], {"metadata", "name"});
    store.remove(pods, "default", first);  // not bound to a node: gone at once
    REQUIRE(eventually([&] {
        auto now = pods_in(store, uid);
        return now.size() == 2 && text_at(now[0], {"metadata", "name"}) != first &&
               text_at(now[1], {"metadata", "name"}) != first;
    }));
    store.patch(replicasets, "default", "web", PatchType::Merge, parse(R"({"spec": {"replicas": 3}})"));
    REQUIRE(eventually([&] { return pods_in(store, uid).size() == 3; }));
    // An orphan that matches is adopted; the surplus it makes is deleted.
    store.create(pods, "default", pod_body("orphan", "web"));
    REQUIRE(eventually([&] { return pods_in(store, uid).size() == 3; }));
    CHECK(eventually([&] {
        return int_at(store.get(replicasets, "default", "web"), {"status", "replicas"}) == 3 &&
               pods_in(store).size() == 3;
    }));
    rsc.stop();
}

TEST_CASE("a started Job controller runs its Job to Complete from the changes alone") {
    const ResourceId jobs{"batch", "v1", "jobs"};
    ObjectStore store;
    JobController jc(store);
    jc.start();
    store.create(jobs, "default",
                 parse(R"({"metadata": {"name": "once"}, "spec": {"completions": 2, "parallelism": 1,
                           "template": {"spec": {"restartPolicy": "Never",
                                                 "containers": [{"name": "c", "image": "busybox:1"}]}}}})"));
    auto succeed_one = [&] {
        for (const auto& p : pods_in(store))
            if (text_at(p, {"status", "phase"}) != "Succeeded") {
                store.patch(pods, "default", text_at(p, {"metadata", "name"}), PatchType::Merge,
                            parse(R"({"status": {"phase": "Succeeded"}})"), "status");
                return true;
            }
        return false;
    };
    REQUIRE(eventually([&] { return pods_in(store).size() == 1; }));
    REQUIRE(succeed_one());
    REQUIRE(eventually([&] { return pods_in(store).size() == 2; }));  // the second, after the first succeeded
    REQUIRE(succeed_one());
    CHECK(eventually([&] {
        const auto job = store.get(jobs, "default", "once");
        return int_at(job, {"status", "succeeded"}) == 2 && !text_at(job, {"status", "completionTime"}).empty();
    }));
    jc.stop();
}
