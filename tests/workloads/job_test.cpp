// batch/v1 Jobs in the sandbox: kube-apiserver's defaults, generated selector and validation,
// and the job controller's pass (sandbox/cluster/job_controller.hpp) run from the test thread over an
// ObjectStore, pods finished by patching their status as the kubelet reports it.
#include "workloads_support.hpp"

#include <vck/sandbox/cluster/job_controller.hpp>

#include <doctest.h>

#include <string>

using namespace vck::sandbox;
using namespace vck::sandbox::workloads_test;
using vck::client::PatchType;

namespace job_spec_test {

const ResourceId jobs{"batch", "v1", "jobs"};

/// A Job named `name` with one container and restartPolicy `restart` ("" leaves it out);
/// `extra_spec` is more of the spec's members, as JSON text.
json::value job(std::string_view name, std::string_view extra_spec = "", std::string_view restart = "Never") {
    std::string rp = restart.empty() ? "" : R"("restartPolicy": ")" + std::string(restart) + R"(", )";
    return parse(R"({"metadata": {"name": ")" + std::string(name) + R"("}, "spec": {)" + std::string(extra_spec) +
                 (extra_spec.empty() ? "" : ", ") + R"("template": {"spec": {)" + rp +
                 R"("containers": [{"name": "c", "image": "busybox:1"}]}}}})");
}

/// Ends the pod as the kubelet reports it: phase Succeeded or Failed.
void finish(ObjectStore& store, const json::value& pod, std::string_view phase) {
    store.patch(pods, "default", text_at(pod, {"metadata", "name"}), PatchType::Merge,
                json::object{{"status", json::object{{"phase", phase}}}}, "status");
}

/// The pods of the Job that are neither finished nor being deleted.
std::vector<json::value> running(ObjectStore& store, const json::value& j) {
    std::vector<json::value> out;
    for (auto& p : pods_in(store, text_at(j, {"metadata", "uid"})))
        if (workload_pods::active(p)) out.push_back(p);
    return out;
}

/// The condition of `type` of the stored Job ("" fields when it has none).
json::value condition(ObjectStore& store, std::string_view name, std::string_view type) {
    auto j = store.get(jobs, "default", name);
    if (const auto* conds = j.at("status").as_object().if_contains("conditions"))
        for (const auto& c : conds->as_array())
            if (text_at(c, {"type"}) == type) return c;
    return json::object();
}

} // namespace job_spec_test

using namespace job_spec_test;

TEST_CASE("a Job is defaulted as kube-apiserver 1.32 defaults it, with a selector generated from its uid") {
    ObjectStore store;
    auto j = store.create(jobs, "default", job("pi"));
    const auto uid = text_at(j, {"metadata", "uid"});
    REQUIRE_FALSE(uid.empty());
    CHECK(int_at(j, {"spec", "completions"}) == 1);
    CHECK(int_at(j, {"spec", "parallelism"}) == 1);
    CHECK(int_at(j, {"spec", "backoffLimit"}) == 6);
    CHECK(text_at(j, {"spec", "completionMode"}) == "NonIndexed");
    CHECK(j.at("spec").at("suspend") == json::value(false));
    CHECK(text_at(j, {"spec", "podReplacementPolicy"}) == "TerminatingOrFailed");
    CHECK_FALSE(j.at("spec").as_object().contains("manualSelector"));
    CHECK(j.at("spec").at("selector") == parse(R"({"matchLabels": {"batch.kubernetes.io/controller-uid": ")" + uid + R"("}})"));
    const auto labels = parse(R"({"batch.kubernetes.io/controller-uid": ")" + uid + R"(", "batch.kubernetes.io/job-name": "pi",
                                  "controller-uid": ")" + uid + R"(", "job-name": "pi"})");
    CHECK(j.at("spec").at("template").at("metadata").at("labels") == labels);
    CHECK(j.at("metadata").at("labels") == labels);
    CHECK(text_at(j, {"spec", "template", "spec", "restartPolicy"}) == "Never");
    CHECK(text_at(j, {"spec", "template", "spec", "dnsPolicy"}) == "ClusterFirst");
    CHECK(int_at(j, {"metadata", "generation"}) == 1);
    // The strategy starts it empty, and kube-apiserver's encoder writes it so: `status: {}`.
    CHECK(j.at("status") == json::value(json::object()));
    // Only parallelism given: completions stays unset (a work queue).
    auto q = store.create(jobs, "default", job("queue", R"("parallelism": 3)"));
    CHECK_FALSE(q.at("spec").as_object().contains("completions"));
    CHECK(int_at(q, {"spec", "parallelism"}) == 3);
}

TEST_CASE("a Job is refused as kube-apiserver refuses it: restartPolicy, negative counts, a selector of its own") {
    ObjectStore store;
    auto st = refusal([&] { store.create(jobs, "default", job("pi", "", "")); });
    CHECK(st.code == 422);
    CHECK(st.message == "Job.batch \"pi\" is invalid: spec.template.spec.restartPolicy: Required value: valid values: "
                        "\"OnFailure\", \"Never\"");
    st = refusal([&] { store.create(jobs, "default", job("pi", "", "Always")); });
    CHECK(st.message == "Job.batch \"pi\" is invalid: spec.template.spec.restartPolicy: Required value: valid values: "
                        "\"OnFailure\", \"Never\"");
    st = refusal([&] { store.create(jobs, "default", job("pi", R"("parallelism": -1, "backoffLimit": -2)")); });
    CHECK(st.message == "Job.batch \"pi\" is invalid: [spec.parallelism: Invalid value: -1: must be greater than or equal "
                        "to 0, spec.backoffLimit: Invalid value: -2: must be greater than or equal to 0]");
    st = refusal([&] { store.create(jobs, "default", job("pi", R"("completionMode": "Sometimes")")); });
    CHECK(st.message == "Job.batch \"pi\" is invalid: spec.completionMode: Unsupported value: \"Sometimes\": supported "
                        "values: \"NonIndexed\", \"Indexed\"");
    // A selector the user chose without manualSelector is not the generated one.
    st = refusal([&] { store.create(jobs, "default", job("pi", R"("selector": {"matchLabels": {"app": "pi"}})")); });
    CHECK(st.message.find("spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"pi\", "
                          "\"batch.kubernetes.io/controller-uid\":") != std::string::npos);
    CHECK(st.message.find("`selector` not auto-generated") != std::string::npos);
    CHECK(st.message.find("spec.template.metadata.labels: Invalid value: map[string]string{") != std::string::npos);
    // With manualSelector the selector is the user's, and must match the template's labels.
    auto body = job("manual", R"("manualSelector": true, "selector": {"matchLabels": {"app": "x"}})");
    st = refusal([&] { store.create(jobs, "default", body); });
    CHECK(st.message == "Job.batch \"manual\" is invalid: spec.template.metadata.labels: Invalid value: "
                        "map[string]string(nil): `selector` does not match template `labels`");
    body.at("spec").at("template").as_object()["metadata"] = parse(R"({"labels": {"app": "x"}})");
    auto made = store.create(jobs, "default", body);
    CHECK(made.at("spec").at("selector") == parse(R"({"matchLabels": {"app": "x"}})"));
}

TEST_CASE("a Job's completions, selector and template are immutable, its parallelism is not") {
    ObjectStore store;
    store.create(jobs, "default", job("pi", R"("completions": 3)"));
    auto st = refusal([&] { store.patch(jobs, "default", "pi", PatchType::Merge, parse(R"({"spec": {"completions": 4}})")); });
    CHECK(st.message == "Job.batch \"pi\" is invalid: spec.completions: Invalid value: 4: field is immutable");
    st = refusal([&] {
        store.patch(jobs, "default", "pi", PatchType::Merge,
                    parse(R"({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}}})"));
    });
    CHECK(st.message == "Job.batch \"pi\" is invalid: spec.template: Invalid value: core.PodTemplateSpec{...}: field is immutable");
    auto j = store.patch(jobs, "default", "pi", PatchType::Merge, parse(R"({"spec": {"parallelism": 2}})"));
    CHECK(int_at(j, {"spec", "parallelism"}) == 2);
    CHECK(int_at(j, {"metadata", "generation"}) == 2);
}

TEST_CASE("a suspended Job that never started may change its template's labels and node selector") {
    ObjectStore store;
    store.create(jobs, "default", job("pi", R"("suspend": true)"));
    auto j = store.patch(jobs, "default", "pi", PatchType::Merge,
                         parse(R"({"spec": {"template": {"metadata": {"labels": {"queue": "a"}},
                                   "spec": {"nodeSelector": {"zone": "a"}}}}})"));
    CHECK(text_at(j, {"spec", "template", "spec", "nodeSelector", "zone"}) == "a");
}

TEST_CASE("a Job with parallelism 2 and completions 3 runs two pods at a time until three succeeded, then is Complete") {
    ObjectStore store;
    JobController jc(store);
    auto j = store.create(jobs, "default", job("work", R"("parallelism": 2, "completions": 3)"));
    jc.sync_all();
    auto pods_now = running(store, j);
    REQUIRE(pods_now.size() == 2);
    for (const auto& p : pods_now) {
        CHECK(text_at(p, {"metadata", "name"}).starts_with("work-"));
        CHECK(text_at(p, {"metadata", "labels", "job-name"}) == "work");
        const auto& ref = p.at("metadata").at("ownerReferences").at(0);
        CHECK(text_at(ref, {"kind"}) == "Job");
        CHECK(text_at(ref, {"apiVersion"}) == "batch/v1");
        CHECK(ref.at("controller") == json::value(true));
        CHECK(ref.at("blockOwnerDeletion") == json::value(true));
    }
    auto stored = store.get(jobs, "default", "work");
    CHECK(int_at(stored, {"status", "active"}) == 2);
    CHECK_FALSE(text_at(stored, {"status", "startTime"}).empty());
    CHECK(event_messages(store, "work", "SuccessfulCreate").size() == 2);

    finish(store, pods_now[0], "Succeeded");
    finish(store, pods_now[1], "Succeeded");
    jc.sync_all();
    pods_now = running(store, j);
    CHECK(pods_now.size() == 1);  // one completion left: one pod, not two
    stored = store.get(jobs, "default", "work");
    CHECK(int_at(stored, {"status", "succeeded"}) == 2);
    CHECK(int_at(stored, {"status", "active"}) == 1);

    finish(store, pods_now.at(0), "Succeeded");
    settle(store, {[&] { jc.sync_all(); }});
    stored = store.get(jobs, "default", "work");
    CHECK(int_at(stored, {"status", "succeeded"}) == 3);
    CHECK_FALSE(stored.at("status").as_object().contains("active"));
    CHECK(text_at(condition(store, "work", "SuccessCriteriaMet"), {"reason"}) == "CompletionsReached");
    auto complete = condition(store, "work", "Complete");
    CHECK(text_at(complete, {"status"}) == "True");
    CHECK(text_at(complete, {"reason"}) == "CompletionsReached");
    CHECK(text_at(complete, {"message"}) == "Reached expected number of succeeded pods");
    CHECK_FALSE(text_at(stored, {"status", "completionTime"}).empty());
    CHECK(event_messages(store, "work", "Completed") == std::vector<std::string>{"Job completed"});
    CHECK(running(store, j).empty());
}

TEST_CASE("a Job whose failed pods exceed backoffLimit fails with BackoffLimitExceeded") {
    ObjectStore store;
    JobController jc(store);
    auto j = store.create(jobs, "default", job("flaky", R"("backoffLimit": 1)"));
    jc.sync_all();
    finish(store, running(store, j).at(0), "Failed");
    jc.sync_all();
    // One failure is within the limit: a replacement runs.
    REQUIRE(running(store, j).size() == 1);
    CHECK(int_at(store.get(jobs, "default", "flaky"), {"status", "failed"}) == 1);
    CHECK(text_at(condition(store, "flaky", "Failed"), {"status"}).empty());
    finish(store, running(store, j).at(0), "Failed");
    settle(store, {[&] { jc.sync_all(); }});
    auto failed = condition(store, "flaky", "Failed");
    CHECK(text_at(failed, {"status"}) == "True");
    CHECK(text_at(failed, {"reason"}) == "BackoffLimitExceeded");
    CHECK(text_at(failed, {"message"}) == "Job has reached the specified backoff limit");
    CHECK(text_at(condition(store, "flaky", "FailureTarget"), {"reason"}) == "BackoffLimitExceeded");
    CHECK(int_at(store.get(jobs, "default", "flaky"), {"status", "failed"}) == 2);
    CHECK(running(store, j).empty());
    CHECK(event_messages(store, "flaky", "BackoffLimitExceeded") ==
          std::vector<std::string>{"Job has reached the specified backoff limit"});
}

TEST_CASE("under restartPolicy OnFailure a Job's container restarts count toward its backoffLimit") {
    ObjectStore store;
    JobController jc(store);
    auto j = store.create(jobs, "default", job("crashy", R"("backoffLimit": 2)", "OnFailure"));
    jc.sync_all();
    auto pod = running(store, j).at(0);
    store.patch(pods, "default", text_at(pod, {"metadata", "name"}), PatchType::Merge,
                parse(R"({"status": {"phase": "Running", "containerStatuses": [{"name": "c", "restartCount": 2,
                         "ready": false, "image": "busybox:1", "imageID": "", "started": false,
                         "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}})"),
                "status");
    settle(store, {[&] { jc.sync_all(); }});
    CHECK(text_at(condition(store, "crashy", "Failed"), {"reason"}) == "BackoffLimitExceeded");
    CHECK(running(store, j).empty());
}

TEST_CASE("suspending a Job deletes its active pods and sets Suspended; resuming runs them again") {
    ObjectStore store;
    JobController jc(store);
    auto j = store.create(jobs, "default", job("batch", R"("parallelism": 2, "completions": 4)"));
    jc.sync_all();
    REQUIRE(running(store, j).size() == 2);
    store.patch(jobs, "default", "batch", PatchType::Merge, parse(R"({"spec": {"suspend": true}})"));
    settle(store, {[&] { jc.sync_all(); }});
    CHECK(running(store, j).empty());
    auto suspended = condition(store, "batch", "Suspended");
    CHECK(text_at(suspended, {"status"}) == "True");
    CHECK(text_at(suspended, {"reason"}) == "JobSuspended");
    CHECK(text_at(suspended, {"message"}) == "Job suspended");
    CHECK_FALSE(store.get(jobs, "default", "batch").at("status").as_object().contains("active"));
    store.patch(jobs, "default", "batch", PatchType::Merge, parse(R"({"spec": {"suspend": false}})"));
    jc.sync_all();
    CHECK(running(store, j).size() == 2);
    auto resumed = condition(store, "batch", "Suspended");
    CHECK(text_at(resumed, {"status"}) == "False");
    CHECK(text_at(resumed, {"reason"}) == "JobResumed");
    CHECK(event_messages(store, "batch", "Resumed") == std::vector<std::string>{"Job resumed"});
}

TEST_CASE("a Job created suspended creates no pods and has no startTime") {
    ObjectStore store;
    JobController jc(store);
    auto j = store.create(jobs, "default", job("later", R"("suspend": true)"));
    settle(store, {[&] { jc.sync_all(); }});
    CHECK(pods_in(store).empty());
    auto stored = store.get(jobs, "default", "later");
    CHECK(text_at(stored, {"status", "startTime"}).empty());
    CHECK(text_at(condition(store, "later", "Suspended"), {"status"}) == "True");
}

TEST_CASE("a Job active for longer than activeDeadlineSeconds fails with DeadlineExceeded and loses its pods") {
    ObjectStore store;
    JobController jc(store);
    auto j = store.create(jobs, "default", job("slow", R"("activeDeadlineSeconds": 30)"));
    auto next = jc.sync_all();
    CHECK(next.has_value());  // a pass is due when the deadline runs out
    REQUIRE(running(store, j).size() == 1);
    // Started an hour ago, as far as the status says.
    auto start = vck::api::format_rfc3339(std::chrono::system_clock::now() - std::chrono::hours(1));
    store.patch(jobs, "default", "slow", PatchType::Merge, json::object{{"status", json::object{{"startTime", start}}}},
                "status");
    settle(store, {[&] { jc.sync_all(); }});
    auto failed = condition(store, "slow", "Failed");
    CHECK(text_at(failed, {"status"}) == "True");
    CHECK(text_at(failed, {"reason"}) == "DeadlineExceeded");
    CHECK(text_at(failed, {"message"}) == "Job was active longer than specified deadline");
    CHECK(running(store, j).empty());
    CHECK(text_at(store.get(jobs, "default", "slow"), {"status", "completionTime"}).empty());
}

TEST_CASE("deleting a Job deletes its pods") {
    ObjectStore store;
    JobController jc(store);
    auto j = store.create(jobs, "default", job("gone", R"("parallelism": 2, "completions": 2)"));
    jc.sync_all();
    REQUIRE(pods_in(store).size() == 2);
    store.remove(jobs, "default", "gone");
    jc.sync_all();
    CHECK(pods_in(store).empty());
}
