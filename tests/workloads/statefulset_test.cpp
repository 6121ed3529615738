// StatefulSets in the store: what kube-apiserver defaults and refuses, and what the statefulset
// controller (sandbox/cluster/statefulset_controller.hpp) makes of them, pass by pass: pods with stable
// names created in order after their claims, readiness awaited between them, deleted pods
// recreated with their claims, scale-down from the top, rolling updates, status and events.
#include "workloads_support.hpp"

#include <vck/sandbox/eventually.hpp>

#include <vck/sandbox/cluster/statefulset_controller.hpp>
#include <vck/sandbox/cluster/storage_protection.hpp>

#include <doctest.h>

#include <string>

namespace {

using namespace vck::sandbox;
using namespace vck::sandbox::workloads_test;

/// A StatefulSet `web` of `replicas` with claim template `www` and the given policy.
json::value sts_web(int replicas, std::string_view policy = "OrderedReady") {
    auto v = parse(R"({"metadata":{"name":"web"},"spec":{"serviceName":"nginx",
        "selector":{"matchLabels":{"app":"nginx"}},
        "template":{"metadata":{"labels":{"app":"nginx"}},"spec":{"containers":[{"name":"nginx","image":"nginx:1.27"}]}},
        "volumeClaimTemplates":[{"metadata":{"name":"www"},
            "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}})");
    v.at("spec").as_object()["replicas"] = replicas;
    v.at("spec").as_object()["podManagementPolicy"] = policy;
    return v;
}

/// Makes every pod of `web` Running and Ready, giving each an IP.
void sts_run_all(ObjectStore& store, int replicas) {
    for (int i = 0; i < replicas; ++i)
        if (exists(store, pods, "default", "web-" + std::to_string(i)))
            run_pod(store, "default", "web-" + std::to_string(i), "10.244.1." + std::to_string(i + 2));
}

std::string sts_revision_of(ObjectStore& store, std::string_view pod) {
    return text_of(store.get(pods, "default", pod).at("metadata").at("labels").at("controller-revision-hash"));
}

} // namespace

TEST_CASE("a StatefulSet is defaulted as kube-apiserver 1.32 defaults it") {
    ObjectStore store;
    auto s = store.create(statefulsets, "default", parse(R"({"metadata":{"name":"web"},"spec":{
        "selector":{"matchLabels":{"app":"nginx"}},
        "template":{"metadata":{"labels":{"app":"nginx"}},"spec":{"containers":[{"name":"nginx","image":"nginx"}]}}}})"));
    const auto& spec = s.at("spec");
    CHECK(spec.at("replicas") == 1);
    CHECK(spec.at("podManagementPolicy") == "OrderedReady");
    CHECK(spec.at("updateStrategy") == parse(R"({"type":"RollingUpdate","rollingUpdate":{"partition":0}})"));
    CHECK(spec.at("revisionHistoryLimit") == 10);
    CHECK(spec.at("persistentVolumeClaimRetentionPolicy") == parse(R"({"whenDeleted":"Retain","whenScaled":"Retain"})"));
    // The template is defaulted as a pod is.
    CHECK(spec.at("template").at("spec").at("restartPolicy") == "Always");
    CHECK(spec.at("template").at("spec").at("containers").at(0).at("imagePullPolicy") == "Always");
    CHECK(s.at("metadata").at("generation") == 1);
    // Created with the status Go's encoder always writes (no omitempty on these two counts).
    CHECK(s.at("status") == parse(R"({"replicas":0,"availableReplicas":0})"));
}

TEST_CASE("a StatefulSet that kube-apiserver refuses is refused with its words") {
    ObjectStore store;
    SUBCASE("a selector that does not select the template's labels") {
        auto body = sts_web(1);
        body.at("spec").at("template").at("metadata").as_object()["labels"] = parse(R"({"app":"other"})");
        auto st = refusal([&] { store.create(statefulsets, "default", body); });
        CHECK(st.code == 422);
        CHECK(st.message == "StatefulSet.apps \"web\" is invalid: spec.template.metadata.labels: Invalid value: "
                            "map[string]string{\"app\":\"other\"}: `selector` does not match template `labels`");
    }
    SUBCASE("negative replicas and an unknown pod management policy") {
        auto body = sts_web(-1, "Sometimes");
        auto st = refusal([&] { store.create(statefulsets, "default", body); });
        CHECK(st.message == "StatefulSet.apps \"web\" is invalid: [spec.podManagementPolicy: Invalid value: \"Sometimes\": "
                            "must be 'OrderedReady' or 'Parallel', spec.replicas: Invalid value: -1: must be greater than or equal to 0]");
    }
    SUBCASE("a change of a field other than replicas, template and the update strategy") {
        store.create(statefulsets, "default", sts_web(1));
        auto s = store.get(statefulsets, "default", "web");
        s.at("spec").as_object()["serviceName"] = "other";
        auto st = refusal([&] { store.update(statefulsets, "default", "web", s); });
        CHECK(st.message == "StatefulSet.apps \"web\" is invalid: spec: Forbidden: updates to statefulset spec for fields other "
                            "than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', "
                            "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden");
    }
}

TEST_CASE("a template's containers may mount a claim template by name, with no volume of that name") {
    ObjectStore store;
    auto body = sts_web(1);
    body.at("spec").at("template").at("spec").at("containers").at(0).as_object()["volumeMounts"] =
        parse(R"([{"name":"www","mountPath":"/usr/share/nginx/html"}])");
    CHECK_NOTHROW(store.create(statefulsets, "default", body));
    auto stored = store.get(statefulsets, "default", "web");
    CHECK_FALSE(stored.at("spec").at("template").at("spec").as_object().contains("volumes"));  // nothing added
    // A mount naming neither a volume nor a claim template is still refused.
    store.remove(statefulsets, "default", "web");
    body.at("spec").at("template").at("spec").at("containers").at(0).as_object()["volumeMounts"] =
        parse(R"([{"name":"nothing","mountPath":"/x"}])");
    auto st = refusal([&] { store.create(statefulsets, "default", body); });
    CHECK(st.code == 422);
    CHECK(st.message.find("spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"nothing\"") != std::string::npos);
}

TEST_CASE("an OrderedReady StatefulSet creates its claims and pods one at a time, each after the previous is Running and Ready") {
    ObjectStore store;
    StatefulSetController ctl(store);
    store.create(statefulsets, "default", sts_web(3));

    ctl.sync_all();
    REQUIRE(exists(store, pods, "default", "web-0"));
    CHECK(exists(store, pvcs, "default", "www-web-0"));
    CHECK_FALSE(exists(store, pods, "default", "web-1"));
    ctl.sync_all();  // web-0 is not Ready yet: still no web-1
    CHECK_FALSE(exists(store, pods, "default", "web-1"));
    run_pod(store, "default", "web-0", "10.244.1.2", false);
    ctl.sync_all();  // Running but not Ready
    CHECK_FALSE(exists(store, pods, "default", "web-1"));

    run_pod(store, "default", "web-0", "10.244.1.2");
    ctl.sync_all();
    CHECK(exists(store, pods, "default", "web-1"));
    CHECK(exists(store, pvcs, "default", "www-web-1"));
    CHECK_FALSE(exists(store, pods, "default", "web-2"));

    auto pod = store.get(pods, "default", "web-1");
    const auto& labels = pod.at("metadata").at("labels");
    CHECK(labels.at("app") == "nginx");
    CHECK(labels.at("statefulset.kubernetes.io/pod-name") == "web-1");
    CHECK(labels.at("apps.kubernetes.io/pod-index") == "1");
    CHECK(text_of(labels.at("controller-revision-hash")).rfind("web-", 0) == 0);
    CHECK(pod.at("spec").at("hostname") == "web-1");
    CHECK(pod.at("spec").at("subdomain") == "nginx");
    CHECK(pod.at("spec").at("volumes").at(0) ==
          parse(R"({"name":"www","persistentVolumeClaim":{"claimName":"www-web-1"}})"));
    const auto& owner = pod.at("metadata").at("ownerReferences").at(0);
    CHECK(owner.at("kind") == "StatefulSet");
    CHECK(owner.at("controller") == true);
    CHECK(store.get(pvcs, "default", "www-web-1").at("metadata").at("labels").at("app") == "nginx");

    auto messages = event_messages_about(store, "default", "web");
    REQUIRE(messages.size() >= 2);
    CHECK(messages[0] == "create Claim www-web-0 Pod web-0 in StatefulSet web success");
    CHECK(messages[1] == "create Pod web-0 in StatefulSet web successful");

    run_pod(store, "default", "web-1", "10.244.1.3");
    ctl.sync_all();
    run_pod(store, "default", "web-2", "10.244.1.4");
    ctl.sync_all();
    auto status = store.get(statefulsets, "default", "web").at("status");
    CHECK(status.at("replicas") == 3);
    CHECK(status.at("readyReplicas") == 3);
    CHECK(status.at("availableReplicas") == 3);
    CHECK(status.at("currentReplicas") == 3);
    CHECK(status.at("updatedReplicas") == 3);
    CHECK(status.at("observedGeneration") == 1);
    CHECK(status.at("currentRevision") == labels.at("controller-revision-hash"));
    CHECK(status.at("updateRevision") == labels.at("controller-revision-hash"));
}

TEST_CASE("a Parallel StatefulSet creates all its pods at once") {
    ObjectStore store;
    StatefulSetController ctl(store);
    store.create(statefulsets, "default", sts_web(3, "Parallel"));
    ctl.sync_all();
    for (const char* name : {"web-0", "web-1", "web-2"}) CHECK(exists(store, pods, "default", name));
    for (const char* name : {"www-web-0", "www-web-1", "www-web-2"}) CHECK(exists(store, pvcs, "default", name));
    auto status = store.get(statefulsets, "default", "web").at("status");
    CHECK(status.at("replicas") == 3);
    CHECK_FALSE(status.as_object().contains("readyReplicas"));
}

TEST_CASE("a deleted StatefulSet pod comes back with the same name and claim") {
    ObjectStore store;
    StatefulSetController ctl(store);
    store.create(statefulsets, "default", sts_web(2, "Parallel"));
    ctl.sync_all();
    sts_run_all(store, 2);
    auto claim_uid = store.get(pvcs, "default", "www-web-1").at("metadata").at("uid");
    auto pod_uid = store.get(pods, "default", "web-1").at("metadata").at("uid");

    store.remove(pods, "default", "web-1");
    REQUIRE_FALSE(exists(store, pods, "default", "web-1"));
    CHECK(exists(store, pvcs, "default", "www-web-1"));  // Retain: the claim stays
    ctl.sync_all();
    auto again = store.get(pods, "default", "web-1");
    CHECK(again.at("metadata").at("uid") != pod_uid);
    CHECK(again.at("spec").at("volumes").at(0).at("persistentVolumeClaim").at("claimName") == "www-web-1");
    CHECK(store.get(pvcs, "default", "www-web-1").at("metadata").at("uid") == claim_uid);
}

TEST_CASE("a Pending StatefulSet pod whose claim was deleted has it made again; a Running one's is not") {
    // As the real controller does since claims of lost nodes are deleted to be made again.
    ObjectStore store;
    StatefulSetController ctl(store);
    store.create(statefulsets, "default", sts_web(2, "Parallel"));
    ctl.sync_all();
    run_pod(store, "default", "web-0", "10.244.1.2");  // web-1 stays Pending
    auto old_claim = store.get(pvcs, "default", "www-web-1").at("metadata").at("uid");
    store.remove(pvcs, "default", "www-web-1");
    store.remove(pvcs, "default", "www-web-0");
    StorageProtectionController(store).pass();  // neither pod is on a node: both claims go
    ctl.sync_all();
    REQUIRE(exists(store, pvcs, "default", "www-web-1"));
    CHECK(store.get(pvcs, "default", "www-web-1").at("metadata").at("uid") != old_claim);
    CHECK_FALSE(exists(store, pvcs, "default", "www-web-0"));
}

TEST_CASE("a StatefulSet scales down from the highest ordinal (OrderedReady one at a time, Parallel at once), keeping the claims") {
    ObjectStore store;
    StatefulSetController ctl(store);
    store.create(statefulsets, "default", sts_web(3, "Parallel"));
    ctl.sync_all();
    sts_run_all(store, 3);
    auto s = store.get(statefulsets, "default", "web");
    s.at("spec").as_object()["replicas"] = 1;
    store.update(statefulsets, "default", "web", s);
    ctl.sync_all();  // Parallel deletes both at once

    CHECK_FALSE(exists(store, pods, "default", "web-2"));
    CHECK_FALSE(exists(store, pods, "default", "web-1"));
    CHECK(exists(store, pods, "default", "web-0"));

    ObjectStore ordered;
    StatefulSetController octl(ordered);
    ordered.create(statefulsets, "default", sts_web(3));
    for (int i = 0; i < 3; ++i) {
        octl.sync_all();
        sts_run_all(ordered, 3);
    }
    REQUIRE(exists(ordered, pods, "default", "web-2"));
    auto o = ordered.get(statefulsets, "default", "web");
    o.at("spec").as_object()["replicas"] = 1;
    ordered.update(statefulsets, "default", "web", o);
    octl.sync_all();
    CHECK_FALSE(exists(ordered, pods, "default", "web-2"));
    CHECK(exists(ordered, pods, "default", "web-1"));  // one at a time
    octl.sync_all();
    CHECK_FALSE(exists(ordered, pods, "default", "web-1"));
    CHECK(exists(ordered, pods, "default", "web-0"));
    CHECK(exists(ordered, pvcs, "default", "www-web-2"));
    CHECK(exists(ordered, pvcs, "default", "www-web-1"));
    CHECK(ordered.get(statefulsets, "default", "web").at("status").at("replicas") == 1);
    auto messages = event_messages_about(ordered, "default", "web");
    CHECK(messages.back() == "delete Pod web-1 in StatefulSet web successful");
}

TEST_CASE("a changed StatefulSet template replaces the pods from the highest ordinal down, each after the previous is Ready") {
    ObjectStore store;
    StatefulSetController ctl(store);
    store.create(statefulsets, "default", sts_web(3));
    for (int i = 0; i < 3; ++i) {
        ctl.sync_all();
        sts_run_all(store, 3);
    }
    ctl.sync_all();
    const auto old_rev = sts_revision_of(store, "web-0");
    auto s = store.get(statefulsets, "default", "web");
    s.at("spec").at("template").at("spec").at("containers").at(0).as_object()["image"] = "nginx:1.28";
    store.update(statefulsets, "default", "web", s);
    CHECK(store.get(statefulsets, "default", "web").at("metadata").at("generation") == 2);

    ctl.sync_all();  // web-2 goes
    CHECK_FALSE(exists(store, pods, "default", "web-2"));
    CHECK(sts_revision_of(store, "web-1") == old_rev);
    ctl.sync_all();  // web-2 returns with the new template
    REQUIRE(exists(store, pods, "default", "web-2"));
    const auto new_rev = sts_revision_of(store, "web-2");
    CHECK(new_rev != old_rev);
    CHECK(store.get(pods, "default", "web-2").at("spec").at("containers").at(0).at("image") == "nginx:1.28");
    ctl.sync_all();  // web-2 is not Ready: web-1 stays
    CHECK(sts_revision_of(store, "web-1") == old_rev);
    auto mid = store.get(statefulsets, "default", "web").at("status");
    CHECK(text_of(mid.at("currentRevision")) == old_rev);
    CHECK(text_of(mid.at("updateRevision")) == new_rev);
    CHECK(mid.at("updatedReplicas") == 1);
    CHECK(mid.at("observedGeneration") == 2);

    for (int i = 0; i < 6; ++i) {
        sts_run_all(store, 3);
        ctl.sync_all();
    }
    sts_run_all(store, 3);
    ctl.sync_all();
    for (const char* name : {"web-0", "web-1", "web-2"}) CHECK(sts_revision_of(store, name) == new_rev);
    auto done = store.get(statefulsets, "default", "web").at("status");
    CHECK(text_of(done.at("currentRevision")) == new_rev);
    CHECK(done.at("currentReplicas") == 3);
}

TEST_CASE("started, a StatefulSet follows the changes: the next pod once the previous is Ready, a deleted pod made again") {
    ObjectStore store;
    StatefulSetController ctl(store);
    ctl.start();
    store.create(statefulsets, "default", sts_web(2));
    REQUIRE(vck::sandbox::eventually([&] { return exists(store, pods, "default", "web-0"); }));
    CHECK_FALSE(exists(store, pods, "default", "web-1"));
    run_pod(store, "default", "web-0", "10.244.1.2");
    REQUIRE(vck::sandbox::eventually([&] { return exists(store, pods, "default", "web-1"); }));
    run_pod(store, "default", "web-1", "10.244.1.3");
    const auto uid = text_at(store.get(pods, "default", "web-1"), {"metadata", "uid"});
    store.remove(pods, "default", "web-1");  // not bound to a node: gone at once
    CHECK(vck::sandbox::eventually([&] {
        return exists(store, pods, "default", "web-1") &&
               text_at(store.get(pods, "default", "web-1"), {"metadata", "uid"}) != uid;
    }));
    run_pod(store, "default", "web-1", "10.244.1.4");
    CHECK(vck::sandbox::eventually([&] {
        return int_at(store.get(statefulsets, "default", "web"), {"status", "readyReplicas"}) == 2;
    }));
    ctl.stop();
}
