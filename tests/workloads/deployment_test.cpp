// apps/v1 Deployments in the sandbox: kube-apiserver's validation and defaults, and the
// deployment controller (sandbox/cluster/deployment_controller.hpp) with the replicaset controller,
// their passes run from the test thread over an ObjectStore, pods made Ready by patching
// their status; every step of a rollout is observed.
#include "workloads_support.hpp"

#include <vck/sandbox/server/api_handler.hpp>
#include <vck/sandbox/cluster/deployment_controller.hpp>
#include <vck/sandbox/cluster/replicaset_controller.hpp>
#include <vck/sandbox/eventually.hpp>

#include <doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace vck::sandbox;
using namespace vck::sandbox::workloads_test;
using vck::client::PatchType;

namespace {

/// Whether, within the time allowed, namespace default holds exactly `n` pods not being
/// deleted, all of `image`.
bool eventually_pods_are(ObjectStore& store, std::string_view image, std::size_t n) {
    return vck::sandbox::eventually([&] {
        std::size_t count = 0;
        for (const auto& p : pods_in(store)) {
            if (!text_at(p, {"metadata", "deletionTimestamp"}).empty()) continue;
            if (text_at(p.at("spec").at("containers").at(0), {"image"}) != image) return false;
            ++count;
        }
        return count == n;
    });
}

/// A store with both controllers, driven pass by pass.
struct DeploymentRig {
    ObjectStore store;
    ReplicaSetController rsc{store};
    DeploymentController dc{store};

    void settle() {
        workloads_test::settle(store, {[&] { rsc.sync_all(); }, [&] { dc.sync_all(); }});
    }
    json::value deployment(std::string_view name = "web") { return store.get(deployments, "default", name); }
    /// The ReplicaSets of namespace default, oldest first by name of creation order as listed.
    std::vector<json::value> replica_sets() {
        std::vector<json::value> out;
        auto list = store.list(replicasets, "default");
        for (const auto& rs : list.at("items").as_array()) out.push_back(rs);
        return out;
    }
    /// A Progressing or Available condition of the Deployment.
    json::value condition(std::string_view type, std::string_view name = "web") {
        auto d = deployment(name);
        if (const auto* cs = d.at("status").as_object().if_contains("conditions"))
            for (const auto& c : cs->as_array())
                if (text_at(c, {"type"}) == type) return c;
        return json::object();
    }
    /// Whether kubectl rollout status would say "successfully rolled out".
    bool rolled_out(std::string_view name = "web") {
        auto d = deployment(name);
        auto want = int_at(d, {"spec", "replicas"});
        return int_at(d, {"metadata", "generation"}) <= int_at(d, {"status", "observedGeneration"}) &&
               int_at(d, {"status", "updatedReplicas"}) == want && int_at(d, {"status", "replicas"}) == want &&
               int_at(d, {"status", "availableReplicas"}) == want;
    }
};

json::value deployment_fixture_body(std::string_view strategy, std::int64_t replicas = 4) {
    return workload("web", replicas, "busybox:1", std::string(R"("strategy": )") + std::string(strategy));
}

} // namespace

TEST_CASE("a Deployment is defaulted as kube-apiserver defaults it") {
    ObjectStore store;
    auto body = workload("web", 1);
    body.as_object()["spec"].as_object().erase("replicas");
    auto d = store.create(deployments, "default", body);
    CHECK(int_at(d, {"spec", "replicas"}) == 1);
    CHECK(int_at(d, {"spec", "revisionHistoryLimit"}) == 10);
    CHECK(int_at(d, {"spec", "progressDeadlineSeconds"}) == 600);
    CHECK(text_at(d, {"spec", "strategy", "type"}) == "RollingUpdate");
    CHECK(text_at(d, {"spec", "strategy", "rollingUpdate", "maxSurge"}) == "25%");
    CHECK(text_at(d, {"spec", "strategy", "rollingUpdate", "maxUnavailable"}) == "25%");
    CHECK(text_at(d, {"spec", "template", "spec", "restartPolicy"}) == "Always");
    CHECK(text_at(d, {"spec", "template", "spec", "schedulerName"}) == "default-scheduler");
    CHECK(text_at(d.at("spec").at("template").at("spec").at("containers").at(0), {"imagePullPolicy"}) == "IfNotPresent");
    CHECK(int_at(d, {"metadata", "generation"}) == 1);
    auto recreate = deployment_fixture_body(R"({"type": "Recreate"})");
    recreate.at("metadata").as_object()["name"] = "r";
    d = store.create(deployments, "default", recreate);
    CHECK_FALSE(d.at("spec").at("strategy").as_object().contains("rollingUpdate"));
}

TEST_CASE("a Deployment's invalid spec is refused with kube-apiserver's messages") {
    ObjectStore store;
    auto body = workload("web", 1);
    body.at("spec").as_object().erase("selector");
    auto st = refusal([&] { store.create(deployments, "default", body); });
    CHECK(st.code == 422);
    CHECK(st.message == "Deployment.apps \"web\" is invalid: [spec.selector: Required value, "
                        "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: "
                        "`selector` does not match template `labels`]");
    st = refusal([&] {
        store.create(deployments, "default", deployment_fixture_body(R"({"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}})"));
    });
    CHECK(st.message == "Deployment.apps \"web\" is invalid: spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: "
                        "may not be 0 when `maxSurge` is 0");
    st = refusal([&] {
        store.create(deployments, "default",
                     deployment_fixture_body(R"({"type": "Recreate", "rollingUpdate": {"maxSurge": 1}})"));
    });
    CHECK(st.message == "Deployment.apps \"web\" is invalid: spec.strategy.rollingUpdate: Forbidden: may not be "
                        "specified when strategy `type` is 'Recreate'");
    st = refusal([&] {
        store.create(deployments, "default", deployment_fixture_body(R"({"rollingUpdate": {"maxUnavailable": "120%"}})"));
    });
    CHECK(st.message == "Deployment.apps \"web\" is invalid: spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "
                        "\"120%\": must not be greater than 100%");
    store.create(deployments, "default", workload("web", 1));
    st = refusal([&] {
        store.patch(deployments, "default", "web", PatchType::Merge,
                    parse(R"({"spec": {"selector": {"matchLabels": {"app": "x"}}, "template": {"metadata": {"labels": {"app": "x"}}}}})"));
    });
    CHECK(st.message.find("spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"x\"}") !=
          std::string::npos);
    CHECK(st.message.find("field is immutable") != std::string::npos);
}

TEST_CASE("a Deployment owns a ReplicaSet named after the hash of its template, with the revision annotations") {
    DeploymentRig rig;
    auto d = rig.store.create(deployments, "default", workload("web", 2));
    rig.settle();
    auto sets = rig.replica_sets();
    REQUIRE(sets.size() == 1);
    const auto& rs = sets[0];
    const auto hash = text_at(rs, {"metadata", "labels", "pod-template-hash"});
    CHECK_FALSE(hash.empty());
    CHECK(text_at(rs, {"metadata", "name"}) == "web-" + hash);
    CHECK(text_at(rs, {"spec", "selector", "matchLabels", "pod-template-hash"}) == hash);
    CHECK(text_at(rs, {"spec", "template", "metadata", "labels", "pod-template-hash"}) == hash);
    CHECK(text_at(rs, {"metadata", "annotations", "deployment.kubernetes.io/revision"}) == "1");
    CHECK(text_at(rs, {"metadata", "annotations", "deployment.kubernetes.io/desired-replicas"}) == "2");
    CHECK(text_at(rs, {"metadata", "annotations", "deployment.kubernetes.io/max-replicas"}) == "3");
    CHECK(controller_ref::controller_uid(rs) == text_at(d, {"metadata", "uid"}));
    CHECK(text_at(rig.deployment(), {"metadata", "annotations", "deployment.kubernetes.io/revision"}) == "1");
    for (const auto& p : pods_in(rig.store)) CHECK(text_at(p, {"metadata", "labels", "pod-template-hash"}) == hash);
    CHECK(pods_in(rig.store).size() == 2);
    CHECK(event_messages(rig.store, "web", "ScalingReplicaSet") ==
          std::vector<std::string>{"Scaled up replica set web-" + hash + " to 2"});
    // Stable: more passes keep the same ReplicaSet and name.
    rig.settle();
    rig.dc.sync_all();
    REQUIRE(rig.replica_sets().size() == 1);
    CHECK(text_at(rig.replica_sets()[0], {"metadata", "name"}) == "web-" + hash);
}

TEST_CASE("a Deployment's conditions and counts read as kubectl rollout status reads them") {
    DeploymentRig rig;
    rig.store.create(deployments, "default", workload("web", 2));
    rig.settle();
    auto d = rig.deployment();
    const auto rs_name = text_at(rig.replica_sets()[0], {"metadata", "name"});
    CHECK(int_at(d, {"status", "observedGeneration"}) == 1);
    CHECK(int_at(d, {"status", "replicas"}) == 2);
    CHECK(int_at(d, {"status", "updatedReplicas"}) == 2);
    CHECK(int_at(d, {"status", "unavailableReplicas"}) == 2);
    CHECK(text_at(rig.condition("Available"), {"reason"}) == "MinimumReplicasUnavailable");
    CHECK(text_at(rig.condition("Available"), {"message"}) == "Deployment does not have minimum availability.");
    CHECK(text_at(rig.condition("Progressing"), {"status"}) == "True");
    CHECK_FALSE(rig.rolled_out());

    make_all_ready(rig.store);
    rig.settle();
    CHECK(rig.rolled_out());
    CHECK(text_at(rig.condition("Available"), {"status"}) == "True");
    CHECK(text_at(rig.condition("Available"), {"reason"}) == "MinimumReplicasAvailable");
    CHECK(text_at(rig.condition("Available"), {"message"}) == "Deployment has minimum availability.");
    CHECK(text_at(rig.condition("Progressing"), {"reason"}) == "NewReplicaSetAvailable");
    CHECK(text_at(rig.condition("Progressing"), {"message"}) == "ReplicaSet \"" + rs_name + "\" has successfully progressed.");
    CHECK(int_at(rig.deployment(), {"status", "readyReplicas"}) == 2);
    CHECK(int_at(rig.deployment(), {"status", "unavailableReplicas"}) == 0);
}

TEST_CASE("a Deployment that makes no progress within progressDeadlineSeconds reports ProgressDeadlineExceeded") {
    DeploymentRig rig;
    rig.store.create(deployments, "default", workload("web", 1));
    rig.settle();
    const auto rs_name = text_at(rig.replica_sets()[0], {"metadata", "name"});
    // The last progress an hour ago (600 s allowed).
    auto d = rig.deployment();
    auto& conds = d.at("status").at("conditions").as_array();
    for (auto& c : conds)
        if (text_at(c, {"type"}) == "Progressing")
            c.as_object()["lastUpdateTime"] =
                vck::api::format_rfc3339(std::chrono::system_clock::now() - std::chrono::hours(1));
    rig.store.update(deployments, "default", "web", d, "status");
    rig.dc.sync_all();
    auto c = rig.condition("Progressing");
    CHECK(text_at(c, {"status"}) == "False");
    CHECK(text_at(c, {"reason"}) == "ProgressDeadlineExceeded");
    CHECK(text_at(c, {"message"}) == "ReplicaSet \"" + rs_name + "\" has timed out progressing.");
}

TEST_CASE("a Deployment's rolling update never exceeds replicas + maxSurge pods nor drops below replicas - maxUnavailable available") {
    DeploymentRig rig;
    rig.store.create(deployments, "default",
                     deployment_fixture_body(R"({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}})"));
    rig.settle();
    make_all_ready(rig.store);
    rig.settle();
    REQUIRE(rig.rolled_out());
    const auto first_rs = text_at(rig.replica_sets()[0], {"metadata", "name"});

    rig.store.patch(deployments, "default", "web", PatchType::Merge,
                    parse(R"({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}}})"));
    std::size_t most = 0, fewest_ready = 100;
    auto observe = [&] {
        std::size_t live = 0, ready = 0;
        for (const auto& p : pods_in(rig.store)) {
            if (!text_at(p, {"metadata", "deletionTimestamp"}).empty()) continue;
            ++live;
            if (pod_ready(p)) ++ready;
        }
        most = std::max(most, live);
        fewest_ready = std::min(fewest_ready, ready);
    };
    int steps = 0;
    for (; steps < 100 && !rig.rolled_out(); ++steps) {
        rig.dc.sync_all();
        observe();
        rig.rsc.sync_all();
        observe();
        rig.dc.sync_all();
        observe();
        // One pod becomes Ready per step, as a kubelet would report them one by one.
        for (const auto& p : pods_in(rig.store))
            if (!pod_ready(p)) {
                make_ready(rig.store, p);
                break;
            }
        rig.rsc.sync_all();
        observe();
    }
    CHECK(steps < 100);
    CHECK(most == 5);          // replicas + maxSurge, reached
    CHECK(fewest_ready == 3);  // replicas - maxUnavailable, never below
    auto sets = rig.replica_sets();
    REQUIRE(sets.size() == 2);
    for (const auto& rs : sets) {
        auto name = text_at(rs, {"metadata", "name"});
        CHECK(int_at(rs, {"spec", "replicas"}) == (name == first_rs ? 0 : 4));
        CHECK(text_at(rs, {"metadata", "annotations", "deployment.kubernetes.io/revision"}) == (name == first_rs ? "1" : "2"));
    }
    CHECK(text_at(rig.deployment(), {"metadata", "annotations", "deployment.kubernetes.io/revision"}) == "2");
    CHECK(int_at(rig.deployment(), {"status", "observedGeneration"}) == 2);
    auto scaled = event_messages(rig.store, "web", "ScalingReplicaSet");
    CHECK(std::find(scaled.begin(), scaled.end(), "Scaled down replica set " + first_rs + " to 3 from 4") != scaled.end());
    for (const auto& p : pods_in(rig.store))
        CHECK(text_at(p.at("spec").at("containers").at(0), {"image"}) == "busybox:2");
}

TEST_CASE("a Deployment resolves percentages of maxSurge up and of maxUnavailable down") {
    DeploymentRig rig;
    rig.store.create(deployments, "default", workload("web", 10));
    rig.settle();
    make_all_ready(rig.store);
    rig.settle();
    rig.store.patch(deployments, "default", "web", PatchType::Merge,
                    parse(R"({"spec": {"template": {"metadata": {"labels": {"app": "web", "v": "2"}}}}})"));
    // One pass creates the new ReplicaSet at 10 + ceil(2.5) - 10 and, as availability allows,
    // scales the old one down to 10 - floor(2.5).
    rig.dc.sync_all();
    for (const auto& rs : rig.replica_sets()) {
        bool is_new = text_at(rs, {"spec", "template", "metadata", "labels", "v"}) == "2";
        CHECK(int_at(rs, {"spec", "replicas"}) == (is_new ? 3 : 8));
        if (is_new) CHECK(text_at(rs, {"metadata", "annotations", "deployment.kubernetes.io/max-replicas"}) == "13");
    }
}

TEST_CASE("a Recreate Deployment removes every old pod before it creates a new one") {
    DeploymentRig rig;
    rig.store.create(deployments, "default", deployment_fixture_body(R"({"type": "Recreate"})", 2));
    rig.settle();
    make_all_ready(rig.store);
    rig.settle();
    REQUIRE(rig.rolled_out());
    const auto first_rs = text_at(rig.replica_sets()[0], {"metadata", "name"});
    rig.store.patch(deployments, "default", "web", PatchType::Merge,
                    parse(R"({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}}})"));
    bool mixed = false;
    auto observe = [&] {
        std::set<std::string> images;
        for (const auto& p : pods_in(rig.store)) images.insert(text_at(p.at("spec").at("containers").at(0), {"image"}));
        if (images.size() > 1) mixed = true;
    };
    for (int i = 0; i < 20 && !rig.rolled_out(); ++i) {
        rig.dc.sync_all();
        observe();
        rig.rsc.sync_all();
        observe();
        make_all_ready(rig.store);
        rig.rsc.sync_all();
        observe();
    }
    CHECK(rig.rolled_out());
    CHECK_FALSE(mixed);
    auto scaled = event_messages(rig.store, "web", "ScalingReplicaSet");
    CHECK(std::find(scaled.begin(), scaled.end(), "Scaled down replica set " + first_rs + " to 0 from 2") != scaled.end());
}

TEST_CASE("a Deployment scaled through its scale subresource scales its ReplicaSet and pods up and down") {
    DeploymentRig rig;
    rig.store.create(deployments, "default", workload("web", 2));
    rig.settle();
    const auto rs_name = text_at(rig.replica_sets()[0], {"metadata", "name"});
    auto scale = rig.store.patch(deployments, "default", "web", PatchType::Merge, parse(R"({"spec": {"replicas": 5}})"), "scale");
    CHECK(text_at(scale, {"status", "selector"}) == "app=web");
    rig.settle();
    CHECK(pods_in(rig.store).size() == 5);
    rig.store.patch(deployments, "default", "web", PatchType::Merge, parse(R"({"spec": {"replicas": 1}})"));
    rig.settle();
    CHECK(pods_in(rig.store).size() == 1);
    CHECK(int_at(rig.deployment(), {"metadata", "generation"}) == 3);
    auto scaled = event_messages(rig.store, "web", "ScalingReplicaSet");
    CHECK(scaled == std::vector<std::string>{"Scaled up replica set " + rs_name + " to 2",
                                             "Scaled up replica set " + rs_name + " to 5 from 2",
                                             "Scaled down replica set " + rs_name + " to 1 from 5"});
}

TEST_CASE("a paused Deployment rolls nothing out until it is resumed") {
    DeploymentRig rig;
    rig.store.create(deployments, "default", workload("web", 1));
    rig.settle();
    rig.store.patch(deployments, "default", "web", PatchType::Merge,
                    parse(R"({"spec": {"paused": true, "template": {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}}})"));
    rig.settle();
    CHECK(rig.replica_sets().size() == 1);
    CHECK(text_at(rig.condition("Progressing"), {"reason"}) == "DeploymentPaused");
    CHECK(text_at(rig.condition("Progressing"), {"status"}) == "Unknown");
    rig.store.patch(deployments, "default", "web", PatchType::Merge, parse(R"({"spec": {"paused": false}})"));
    rig.settle();
    CHECK(rig.replica_sets().size() == 2);
}

TEST_CASE("a Deployment keeps revisionHistoryLimit old ReplicaSets, deleting the oldest revisions") {
    DeploymentRig rig;
    rig.store.create(deployments, "default", workload("web", 1, "busybox:1", R"("revisionHistoryLimit": 1)"));
    for (const char* image : {"busybox:2", "busybox:3"}) {
        rig.settle();
        make_all_ready(rig.store);
        rig.settle();
        REQUIRE(rig.rolled_out());
        rig.store.patch(deployments, "default", "web", PatchType::Merge,
                        parse(std::string(R"({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": ")") +
                              image + R"("}]}}}})"));
    }
    for (int i = 0; i < 5; ++i) {
        rig.settle();
        make_all_ready(rig.store);
    }
    rig.settle();
    REQUIRE(rig.rolled_out());
    std::vector<std::string> revisions;
    for (const auto& rs : rig.replica_sets())
        revisions.push_back(text_at(rs, {"metadata", "annotations", "deployment.kubernetes.io/revision"}));
    std::sort(revisions.begin(), revisions.end());
    CHECK(revisions == std::vector<std::string>{"2", "3"});
}

TEST_CASE("a Deployment adopts a matching orphan ReplicaSet, and deleting it deletes its ReplicaSets and pods") {
    DeploymentRig rig;
    auto d = rig.store.create(deployments, "default", workload("web", 2));
    rig.settle();
    REQUIRE(pods_in(rig.store).size() == 2);
    // An orphan ReplicaSet selecting app=web (another template) is adopted as an old one.
    rig.store.create(replicasets, "default", workload("stray", 0));
    auto stray = workload("web", 0, "busybox:9");
    stray.at("metadata").as_object()["name"] = "web-stray";
    stray.at("metadata").as_object()["labels"] = json::object{{"app", "web"}};
    rig.store.create(replicasets, "default", stray);
    rig.dc.sync_all();
    CHECK(controller_ref::controller_uid(rig.store.get(replicasets, "default", "web-stray")) == text_at(d, {"metadata", "uid"}));
    CHECK(controller_ref::controller_uid(rig.store.get(replicasets, "default", "stray")).empty());
    rig.store.remove(deployments, "default", "web");
    rig.settle();
    auto left = rig.replica_sets();
    REQUIRE(left.size() == 1);
    CHECK(text_at(left[0], {"metadata", "name"}) == "stray");
    CHECK(pods_in(rig.store).empty());
}

TEST_CASE("kubectl's requests: deployments/scale through the API handler, and the Table columns of deployments and replicasets") {
    DeploymentRig rig;
    PodLogs logs;
    ApiHandler handler(rig.store, logs);
    auto send = [&](std::string method, std::string path, std::string body = {}, std::string content_type = {},
                    std::string accept = "application/json") {
        ApiRequest req;
        req.method = std::move(method);
        req.path = std::move(path);
        req.content_type = std::move(content_type);
        req.accept = std::move(accept);
        req.body = std::move(body);
        return std::get<ApiReply>(handler.handle(req));
    };
    rig.store.create(deployments, "default", workload("web", 2));
    rig.settle();
    make_all_ready(rig.store);
    rig.settle();

    auto got = send("GET", "/apis/apps/v1/namespaces/default/deployments/web/scale");
    REQUIRE(got.status == 200);
    auto scale = parse(got.body);
    CHECK(text_at(scale, {"kind"}) == "Scale");
    CHECK(int_at(scale, {"spec", "replicas"}) == 2);
    CHECK(int_at(scale, {"status", "replicas"}) == 2);
    CHECK(text_at(scale, {"status", "selector"}) == "app=web");
    // kubectl scale deploy/web --replicas=3 sends this merge patch.
    auto patched = send("PATCH", "/apis/apps/v1/namespaces/default/deployments/web/scale", R"({"spec":{"replicas":3}})",
                        "application/merge-patch+json");
    REQUIRE(patched.status == 200);
    CHECK(int_at(parse(patched.body), {"spec", "replicas"}) == 3);
    rig.settle();
    make_all_ready(rig.store);
    rig.settle();

    const std::string table = "application/json;as=Table;v=v1;g=meta.k8s.io";
    auto columns = [](const json::value& t) {
        std::vector<std::string> names;
        for (const auto& c : t.at("columnDefinitions").as_array())
            if (int_at(c, {"priority"}) == 0) names.push_back(text_at(c, {"name"}));
        return names;
    };
    auto deploys = parse(send("GET", "/apis/apps/v1/namespaces/default/deployments", {}, {}, table).body);
    CHECK(columns(deploys) == std::vector<std::string>{"Name", "Ready", "Up-to-date", "Available", "Age"});
    const auto& drow = deploys.at("rows").at(0).at("cells").as_array();
    CHECK(drow[1] == json::value("3/3"));
    CHECK(drow[2] == json::value(3));
    CHECK(drow[3] == json::value(3));
    CHECK(drow[5] == json::value("c"));
    CHECK(drow[6] == json::value("busybox:1"));
    CHECK(drow[7] == json::value("app=web"));
    auto sets = parse(send("GET", "/apis/apps/v1/namespaces/default/replicasets", {}, {}, table).body);
    CHECK(columns(sets) == std::vector<std::string>{"Name", "Desired", "Current", "Ready", "Age"});
    const auto& srow = sets.at("rows").at(0).at("cells").as_array();
    CHECK(srow[1] == json::value(3));
    CHECK(srow[2] == json::value(3));
    CHECK(srow[3] == json::value(3));
}

TEST_CASE("started, the Deployment and ReplicaSet controllers roll a changed template out from the changes alone") {
    DeploymentRig rig;
    rig.rsc.start();
    rig.dc.start();
    rig.store.create(deployments, "default", workload("web", 2));
    // Pods are made Ready as they come (the kubelet's part), until the rollout is complete.
    auto rolled_out_with = [&](std::size_t sets) {
        return vck::sandbox::eventually([&] {
            make_all_ready(rig.store);
            return rig.replica_sets().size() == sets && rig.rolled_out();
        });
    };
    CHECK(rolled_out_with(1));
    rig.store.patch(deployments, "default", "web", PatchType::Merge,
                    parse(R"({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}}})"));
    CHECK(rolled_out_with(2));
    CHECK(eventually_pods_are(rig.store, "busybox:2", 2));
    rig.dc.stop();
    rig.rsc.stop();
}
