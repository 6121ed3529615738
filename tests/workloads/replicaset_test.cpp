// apps/v1 ReplicaSets in the sandbox: kube-apiserver's validation and defaults, the scale
// subresource, and the replicaset controller's pass (sandbox/cluster/replicaset_controller.hpp) run
// from the test thread over an ObjectStore, pods made Ready by patching their status.
#include "workloads_support.hpp"

#include <vck/sandbox/cluster/replicaset_controller.hpp>

#include <doctest.h>

#include <algorithm>
#include <set>
#include <string>

using namespace vck::sandbox;
using namespace vck::sandbox::workloads_test;
using vck::client::PatchType;

TEST_CASE("a ReplicaSet is defaulted to one replica and its template's pod spec as a pod's") {
    ObjectStore store;
    auto body = workload("web", 1);
    body.as_object()["spec"].as_object().erase("replicas");
    auto rs = store.create(replicasets, "default", body);
    CHECK(int_at(rs, {"spec", "replicas"}) == 1);
    CHECK(text_at(rs, {"spec", "template", "spec", "restartPolicy"}) == "Always");
    CHECK(text_at(rs, {"spec", "template", "spec", "dnsPolicy"}) == "ClusterFirst");
    CHECK(int_at(rs, {"metadata", "generation"}) == 1);
    // Started empty; `replicas` has no omitempty, so kube-apiserver returns it as 0.
    CHECK(rs.at("status") == parse(R"({"replicas": 0})"));
}

TEST_CASE("a ReplicaSet whose selector does not match its template's labels is refused as kube-apiserver refuses it") {
    ObjectStore store;
    auto body = workload("web", 1);
    body.at("spec").at("selector").at("matchLabels").as_object()["app"] = "other";
    auto st = refusal([&] { store.create(replicasets, "default", body); });
    CHECK(st.code == 422);
    CHECK(st.message == "ReplicaSet.apps \"web\" is invalid: spec.template.metadata.labels: Invalid value: "
                        "map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`");
}

TEST_CASE("a ReplicaSet with negative replicas or a template restartPolicy other than Always is refused") {
    ObjectStore store;
    auto st = refusal([&] { store.create(replicasets, "default", workload("web", -1)); });
    CHECK(st.message == "ReplicaSet.apps \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0");
    auto body = workload("web", 1);
    body.at("spec").at("template").at("spec").as_object()["restartPolicy"] = "Never";
    st = refusal([&] { store.create(replicasets, "default", body); });
    CHECK(st.message == "ReplicaSet.apps \"web\" is invalid: spec.template.spec.restartPolicy: Unsupported value: "
                        "\"Never\": supported values: \"Always\"");
}

TEST_CASE("a ReplicaSet's selector may not change, and a spec change bumps its generation") {
    ObjectStore store;
    store.create(replicasets, "default", workload("web", 1));
    auto st = refusal([&] {
        store.patch(replicasets, "default", "web", PatchType::Merge,
                    parse(R"({"spec": {"selector": {"matchLabels": {"app": "web", "x": "y"}},
                              "template": {"metadata": {"labels": {"app": "web", "x": "y"}}}}})"));
    });
    CHECK(st.message.find("spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web\", "
                          "\"x\":\"y\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable") !=
          std::string::npos);
    auto rs = store.patch(replicasets, "default", "web", PatchType::Merge, parse(R"({"spec": {"replicas": 3}})"));
    CHECK(int_at(rs, {"metadata", "generation"}) == 2);
    rs = store.patch(replicasets, "default", "web", PatchType::Merge, parse(R"({"status": {"replicas": 3}})"), "status");
    CHECK(int_at(rs, {"metadata", "generation"}) == 2);
}

TEST_CASE("a ReplicaSet's scale subresource reads and writes spec.replicas as an autoscaling/v1 Scale") {
    ObjectStore store;
    store.create(replicasets, "default", workload("web", 2));
    auto scale = store.patch(replicasets, "default", "web", PatchType::Merge, parse(R"({"spec": {"replicas": 5}})"), "scale");
    CHECK(text_at(scale, {"kind"}) == "Scale");
    CHECK(text_at(scale, {"apiVersion"}) == "autoscaling/v1");
    CHECK(int_at(scale, {"spec", "replicas"}) == 5);
    CHECK(text_at(scale, {"status", "selector"}) == "app=web");
    CHECK(int_at(store.get(replicasets, "default", "web"), {"spec", "replicas"}) == 5);
    scale.as_object()["spec"].as_object()["replicas"] = 1;
    scale = store.update(replicasets, "default", "web", scale, "scale");
    CHECK(int_at(store.get(replicasets, "default", "web"), {"spec", "replicas"}) == 1);
    scale.as_object()["spec"].as_object()["replicas"] = -2;
    auto st = refusal([&] { store.update(replicasets, "default", "web", scale, "scale"); });
    CHECK(st.message == "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -2: must be greater than or equal to 0");
    // A stale resourceVersion in the Scale is a conflict.
    scale.as_object()["spec"].as_object()["replicas"] = 2;
    scale.at("metadata").as_object()["resourceVersion"] = "1";
    CHECK(refusal([&] { store.update(replicasets, "default", "web", scale, "scale"); }).code == 409);
}

TEST_CASE("a ReplicaSet creates its missing pods from its template, named after it and controlled by it") {
    ObjectStore store;
    ReplicaSetController rsc(store);
    auto rs = store.create(replicasets, "default", workload("web", 3));
    const auto uid = text_at(rs, {"metadata", "uid"});
    rsc.sync_all();
    auto pods_now = pods_in(store, uid);
    REQUIRE(pods_now.size() == 3);
    for (const auto& p : pods_now) {
        auto name = text_at(p, {"metadata", "name"});
        CHECK(name.rfind("web-", 0) == 0);
        CHECK(name.size() == 4 + 5);
        CHECK(text_at(p, {"metadata", "labels", "app"}) == "web");
        const auto& ref = p.at("metadata").at("ownerReferences").at(0);
        CHECK(text_at(ref, {"kind"}) == "ReplicaSet");
        CHECK(text_at(ref, {"apiVersion"}) == "apps/v1");
        CHECK(ref.at("controller").as_bool());
        CHECK(ref.at("blockOwnerDeletion").as_bool());
        CHECK(text_at(p.at("spec").at("containers").at(0), {"image"}) == "busybox:1");
    }
    auto created = event_messages(store, "web", "SuccessfulCreate");
    REQUIRE(created.size() == 3);
    CHECK(created[0].rfind("Created pod: web-", 0) == 0);
    // A second pass creates nothing more.
    rsc.sync_all();
    CHECK(pods_in(store, uid).size() == 3);
}

TEST_CASE("a ReplicaSet reports replicas, fullyLabeledReplicas, readyReplicas, availableReplicas and observedGeneration") {
    ObjectStore store;
    ReplicaSetController rsc(store);
    auto rs = store.create(replicasets, "default", workload("web", 3, "busybox:1", R"("minReadySeconds": 30)"));
    rsc.sync_all();
    auto ps = pods_in(store, text_at(rs, {"metadata", "uid"}));
    REQUIRE(ps.size() == 3);
    make_ready(store, ps[0], std::chrono::seconds(60));  // ready long enough: available
    make_ready(store, ps[1]);                            // ready, not yet available
    auto next = rsc.sync_all();
    CHECK(next.has_value());  // a pass is due when the second pod becomes available
    auto st = store.get(replicasets, "default", "web").at("status");
    CHECK(int_at(st, {"replicas"}) == 3);
    CHECK(int_at(st, {"fullyLabeledReplicas"}) == 3);
    CHECK(int_at(st, {"readyReplicas"}) == 2);
    CHECK(int_at(st, {"availableReplicas"}) == 1);
    CHECK(int_at(st, {"observedGeneration"}) == 1);
}

TEST_CASE("a ReplicaSet scaled down deletes unscheduled and not-ready pods before ready ones, newest first") {
    ObjectStore store;
    ReplicaSetController rsc(store);
    auto rs = store.create(replicasets, "default", workload("web", 3));
    const auto uid = text_at(rs, {"metadata", "uid"});
    rsc.sync_all();
    auto ps = pods_in(store, uid);
    REQUIRE(ps.size() == 3);
    make_ready(store, ps[0]);
    make_ready(store, ps[2]);
    const auto not_ready = text_at(ps[1], {"metadata", "name"});
    store.patch(replicasets, "default", "web", PatchType::Merge, parse(R"({"spec": {"replicas": 1}})"));
    rsc.sync_all();
    auto left = pods_in(store, uid);
    REQUIRE(left.size() == 1);
    CHECK(text_at(left[0], {"metadata", "name"}) != not_ready);
    CHECK(pod_ready(left[0]));
    auto deleted = event_messages(store, "web", "SuccessfulDelete");
    REQUIRE(deleted.size() == 2);
    CHECK(deleted[0] == "Deleted pod: " + not_ready);
}

TEST_CASE("a ReplicaSet adopts a matching orphan pod and releases a pod whose labels no longer match") {
    ObjectStore store;
    ReplicaSetController rsc(store);
    store.create(pods, "default",
                 parse(R"({"metadata": {"name": "orphan", "labels": {"app": "web"}},
                           "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}})"));
    auto rs = store.create(replicasets, "default", workload("web", 2));
    const auto uid = text_at(rs, {"metadata", "uid"});
    rsc.sync_all();
    auto mine = pods_in(store, uid);
    REQUIRE(mine.size() == 2);  // the orphan and one created
    CHECK(controller_ref::controller_uid(store.get(pods, "default", "orphan")) == uid);
    CHECK(event_messages(store, "web", "SuccessfulCreate").size() == 1);

    store.patch(pods, "default", "orphan", PatchType::Merge, parse(R"({"metadata": {"labels": {"app": "elsewhere"}}})"));
    rsc.sync_all();
    auto released = store.get(pods, "default", "orphan");
    CHECK(controller_ref::controller_uid(released).empty());
    CHECK(pods_in(store, uid).size() == 2);  // a replacement was created in the same pass
}

TEST_CASE("a ReplicaSet replaces a failed pod and does not count it") {
    ObjectStore store;
    ReplicaSetController rsc(store);
    auto rs = store.create(replicasets, "default", workload("web", 1));
    const auto uid = text_at(rs, {"metadata", "uid"});
    rsc.sync_all();
    auto ps = pods_in(store, uid);
    REQUIRE(ps.size() == 1);
    store.patch(pods, "default", text_at(ps[0], {"metadata", "name"}), PatchType::Merge,
                parse(R"({"status": {"phase": "Failed"}})"), "status");
    rsc.sync_all();
    auto after = pods_in(store, uid);
    CHECK(after.size() == 2);
    CHECK(std::count_if(after.begin(), after.end(), [](const json::value& p) {
              return text_at(p, {"status", "phase"}) == "Pending";
          }) == 1);
    rsc.sync_all();
    CHECK(int_at(store.get(replicasets, "default", "web"), {"status", "replicas"}) == 1);
}

TEST_CASE("deleting a ReplicaSet deletes its pods") {
    ObjectStore store;
    ReplicaSetController rsc(store);
    auto rs = store.create(replicasets, "default", workload("web", 2));
    rsc.sync_all();
    REQUIRE(pods_in(store).size() == 2);
    store.remove(replicasets, "default", "web");
    rsc.sync_all();
    CHECK(pods_in(store).empty());
}
