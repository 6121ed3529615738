// JobController: kube-controller-manager 1.32's job controller for the sandbox (NonIndexed
// Jobs), one SimLoop pass over every batch/v1 Job. Guarantees, per Job not yet finished:
// - it claims the pods its selector matches (controller_ref.hpp), finished ones included, and
//   counts them: status.succeeded and status.failed (pods in phase Succeeded, Failed; a count
//   never decreases, so a finished pod deleted later stays counted), active (neither finished
//   nor being deleted), ready (active and Ready), terminating (being deleted, not finished);
// - unsuspended, it sets startTime and keeps min(parallelism, completions - succeeded) pods
//   active (parallelism while no pod has succeeded when completions is unset), creating them
//   from the template as <job>-<5 random> with the Job as controller, deleting the surplus;
// - it finishes as 1.32 does, in two steps: a SuccessCriteriaMet (CompletionsReached) or
//   FailureTarget condition first, the active pods deleted, then, once none is left running
//   or terminating, Complete (with completionTime) or Failed with the same reason and message.
//   It fails with BackoffLimitExceeded when more pods failed than spec.backoffLimit, or under
//   restartPolicy OnFailure when the restarts of its running pods plus its failures reach it;
//   with DeadlineExceeded once it has been active activeDeadlineSeconds (a pass is scheduled
//   for then); it succeeds when succeeded reaches completions (without completions: one pod
//   succeeded and none active);
// - spec.suspend: true deletes the active pods and sets Suspended=True (JobSuspended);
//   resuming sets Suspended=False (JobResumed) and restarts startTime (and so the deadline);
// - events as the real controller's: SuccessfulCreate, SuccessfulDelete, FailedCreate,
//   Suspended, Resumed, Completed "Job completed", BackoffLimitExceeded and DeadlineExceeded
//   (Warning); status is written only when it changes.
// Not modelled: Indexed Jobs' indexes, podFailurePolicy, successPolicy, backoffLimitPerIndex,
// the exponential delay before replacing a failed pod (the replacement is created at once),
// the job-tracking finalizer on pods, ttlSecondsAfterFinished, managedBy.
// Deleting a Job deletes its pods: the store's garbage collector follows the owner references.
// sync_all() runs one pass over every Job from the caller's thread (tests drive it directly).
// Started, a pass syncs only the Jobs a change names (owner_changes.hpp, as the replicaset
// controller does); a failed create is retried after a second.
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/api/time.hpp>
#include <vck/sandbox/cluster/controller_ref.hpp>
#include <vck/sandbox/cluster/event_emitter.hpp>
#include <vck/sandbox/cluster/owner_changes.hpp>
#include <vck/sandbox/cluster/pod_creator.hpp>
#include <vck/sandbox/cluster/sim_loop.hpp>
#include <vck/sandbox/validation/spec_validation.hpp>
#include <vck/sandbox/cluster/workload_pods.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace vck::sandbox {

class JobController {
public:
    using Clock = SimLoop::Clock;

    explicit JobController(ObjectStore& store)
        : store_(store), events_(store, "job-controller"), changes_(store, jobs_id, "Job"),
          loop_(store, "job-controller",
                [](const StoreChange& c) {
                    return (c.group.empty() && c.resource == "pods") || (c.group == "batch" && c.resource == "jobs");
                },
                [this] { return pass(); }) {}
    ~JobController() { stop(); }

    /// How pods are created (before start(); default: into the store, see pod_creator.hpp).
    void set_pod_creator(PodCreator c) { create_pod_ = std::move(c); }
    void start() {
        changes_.start();  // before the loop, so no change falls between its first list and the feed
        loop_.start();
    }
    void stop() {
        loop_.stop();
        changes_.stop();
    }

    /// The loop's pass: the Jobs changes name (every one when not started).
    std::optional<Clock::time_point> pass() {
        if (!changes_.started()) return sync_all();
        return changes_.sync_due("batch/v1", [this](const json::value& job) {
            return sync_one(job, changes_.pods_in(workload_pods::meta(job, "namespace")));
        });
    }

    /// One pass over every Job; returns when an active deadline runs out, if one will.
    std::optional<Clock::time_point> sync_all() {
        auto job_list = store_.list(jobs_id, "");
        auto pod_list = store_.list(pods_id, "");
        std::optional<Clock::time_point> next;
        for (auto job : job_list.at("items").as_array()) {
            job.as_object()["apiVersion"] = "batch/v1";
            job.as_object()["kind"] = "Job";
            auto when = sync_one(job, pod_list);
            if (when && (!next || *when < *next)) next = when;
        }
        return next;
    }

private:
    static inline const ResourceId pods_id{"", "v1", "pods"};
    static inline const ResourceId jobs_id{"batch", "v1", "jobs"};

    /// A condition's state as the Job's status holds it.
    static const json::value* condition(const json::value& status, std::string_view type) {
        if (const auto* conds = spec_validation::array_at(&status, "conditions"))
            for (const auto& c : *conds)
                if (workload_pods::str(&c, "type") == type) return &c;
        return nullptr;
    }
    static bool condition_true(const json::value& status, std::string_view type) {
        const auto* c = condition(status, type);
        return c && workload_pods::str(c, "status") == "True";
    }
    /// Adds the condition, or changes the one of its type when its status differs.
    static void set_condition(json::value& status, std::string_view type, std::string_view value, std::string_view reason,
                              std::string_view message, const std::string& now) {
        json::object cond{{"type", type}, {"status", value}, {"lastProbeTime", now}, {"lastTransitionTime", now},
                          {"reason", reason}, {"message", message}};
        auto& conds = status.as_object()["conditions"];
        if (!conds.is_array()) conds = json::array();
        for (auto& c : conds.as_array())
            if (workload_pods::str(&c, "type") == type) {
                if (workload_pods::str(&c, "status") != value) c = std::move(cond);
                return;
            }
        conds.as_array().push_back(std::move(cond));
    }

    static std::int64_t restarts(const json::value& pod) {
        std::int64_t n = 0;
        const auto* status = workload_pods::at(&pod, "status");
        for (const char* list : {"initContainerStatuses", "containerStatuses"})
            if (const auto* cs = spec_validation::array_at(status, list))
                for (const auto& c : *cs) n += spec_validation::integer(&c, "restartCount").value_or(0);
        return n;
    }

    std::optional<Clock::time_point> sync_one(const json::value& job, const json::value& pod_list) {
        using namespace workload_pods;
        const auto* md = at(&job, "metadata");
        const auto* spec = at(&job, "spec");
        const auto ns = str(md, "namespace");
        const json::value old_status = at(&job, "status") ? *at(&job, "status") : json::value(json::object());
        if (condition_true(old_status, "Complete") || condition_true(old_status, "Failed")) return std::nullopt;
        std::optional<api::LabelSelector> selector;
        try {
            if (const auto* sel = at(spec, "selector")) selector = api::LabelSelector::from_json(*sel);
        } catch (const std::exception&) {
        }
        if (!selector) return std::nullopt;  // refused by validation; nothing to manage
        auto pods = controller_ref::claim(store_, pods_id, job, *selector, controller_ref::items_in(pod_list, ns));

        std::vector<json::value> active;
        std::int64_t succeeded = 0, failed = 0, terminating = 0, active_restarts = 0;
        for (const auto& p : pods) {
            auto phase = str(at(&p, "status"), "phase");
            if (phase == "Succeeded") ++succeeded;
            else if (phase == "Failed") ++failed;
            else if (terminating_pod(p)) ++terminating;
            else {
                active.push_back(p);
                active_restarts += restarts(p);
            }
        }
        succeeded = std::max(succeeded, spec_validation::integer(&old_status, "succeeded").value_or(0));
        failed = std::max(failed, spec_validation::integer(&old_status, "failed").value_or(0));

        const auto now_tp = std::chrono::system_clock::now();
        const auto now = api::format_rfc3339(now_tp);
        json::value status = old_status;
        const auto* suspend_v = at(spec, "suspend");
        const bool suspended = suspend_v && suspend_v->is_bool() && suspend_v->get_bool();
        const bool deleting = controller_ref::deleting(job);
        const auto parallelism = spec_validation::integer(spec, "parallelism").value_or(1);
        const auto completions = spec_validation::integer(spec, "completions");
        const auto backoff_limit = spec_validation::integer(spec, "backoffLimit").value_or(6);
        const auto deadline = spec_validation::integer(spec, "activeDeadlineSeconds");
        std::optional<Clock::time_point> next;

        // The outcome decided on an earlier pass, or now.
        std::string outcome = condition_true(status, "FailureTarget")        ? "Failed"
                              : condition_true(status, "SuccessCriteriaMet") ? "Complete"
                                                                             : "";
        std::string reason, message;
        if (const auto* c = condition(status, outcome == "Failed" ? "FailureTarget" : "SuccessCriteriaMet"); c && !outcome.empty()) {
            reason = str(c, "reason");
            message = str(c, "message");
        }
        if (outcome.empty() && !suspended && !deleting) {
            if (!spec_validation::has(&status, "startTime")) status.as_object()["startTime"] = now;
            const bool on_failure = str(at(at(spec, "template"), "spec"), "restartPolicy") == "OnFailure";
            const bool past_on_failure =
                on_failure && (backoff_limit == 0 ? active_restarts > 0 : active_restarts + failed >= backoff_limit);
            std::optional<std::chrono::system_clock::time_point> ends;
            if (deadline)
                if (auto start = api::parse_rfc3339(str(&status, "startTime")))
                    ends = *start + std::chrono::seconds(*deadline);
            if (completions ? succeeded >= *completions : (succeeded > 0 && active.empty())) {
                outcome = "Complete";
                reason = "CompletionsReached";
                message = "Reached expected number of succeeded pods";
                set_condition(status, "SuccessCriteriaMet", "True", reason, message, now);
            } else if (failed > backoff_limit || past_on_failure) {
                outcome = "Failed";
                reason = "BackoffLimitExceeded";
                message = "Job has reached the specified backoff limit";
                set_condition(status, "FailureTarget", "True", reason, message, now);
            } else if (ends && *ends <= now_tp) {
                outcome = "Failed";
                reason = "DeadlineExceeded";
                message = "Job was active longer than specified deadline";
                set_condition(status, "FailureTarget", "True", reason, message, now);
            } else if (ends) {
                next = Clock::now() + (*ends - now_tp);
            }
        }

        std::int64_t deleted = 0, created = 0;
        if (!outcome.empty()) {
            deleted = delete_pods(job, active, active.size());
            if (active.size() == static_cast<std::size_t>(deleted) && terminating + deleted == 0) {
                set_condition(status, outcome, "True", reason, message, now);
                if (outcome == "Complete") {
                    status.as_object()["completionTime"] = now;
                    events_.emit(job, "Normal", "Completed", "Job completed");
                } else {
                    events_.emit(job, "Warning", reason, message);
                }
            }
        } else if (suspended) {
            deleted = delete_pods(job, active, active.size());
            if (!condition_true(status, "Suspended")) {
                set_condition(status, "Suspended", "True", "JobSuspended", "Job suspended", now);
                events_.emit(job, "Normal", "Suspended", "Job suspended");
            }
        } else if (!deleting) {
            if (condition_true(status, "Suspended")) {
                set_condition(status, "Suspended", "False", "JobResumed", "Job resumed", now);
                status.as_object()["startTime"] = now;
                events_.emit(job, "Normal", "Resumed", "Job resumed");
            }
            std::int64_t want = completions ? std::min(parallelism, *completions - succeeded) : succeeded > 0 ? 0 : parallelism;
            want = std::max<std::int64_t>(want, 0);
            const auto have = static_cast<std::int64_t>(active.size());
            if (have < want) {
                created = create_pods(job, want - have);
                if (created < want - have) {
                    auto retry = Clock::now() + std::chrono::seconds(1);
                    if (!next || retry < *next) next = retry;
                }
            }
            else if (have > want) deleted = delete_pods(job, active, static_cast<std::size_t>(have - want));
        }

        std::int64_t ready = 0;
        for (const auto& p : active)
            if (workload_pods::ready(p)) ++ready;
        auto& so = status.as_object();
        const auto now_active = static_cast<std::int64_t>(active.size()) + created - deleted;
        // Zero counts are omitted (omitempty), ready and terminating are pointers: always there.
        auto set_count = [&](const char* key, std::int64_t n) {
            if (n) so[key] = n;
            else so.erase(key);
        };
        set_count("active", now_active);
        set_count("succeeded", succeeded);
        set_count("failed", failed);
        so["ready"] = deleted ? std::int64_t(0) : ready;
        so["terminating"] = terminating + deleted;
        so["uncountedTerminatedPods"] = json::object();
        if (!spec_validation::same(&old_status, &status)) {
            json::value body = job;
            body.as_object()["status"] = std::move(status);
            try {
                store_.update(jobs_id, ns, str(md, "name"), std::move(body), "status");
            } catch (const StoreError&) {
                // Changed meanwhile: that change brings another pass.
            }
        }
        return next;
    }

    static bool terminating_pod(const json::value& pod) { return workload_pods::terminating(pod); }

    std::int64_t create_pods(const json::value& job, std::int64_t count) {
        using namespace workload_pods;
        const auto ns = str(at(&job, "metadata"), "namespace");
        std::int64_t created = 0;
        for (std::int64_t i = 0; i < count; ++i) {
            auto pod = controller_ref::pod_from_template(job);
            try {
                auto made = create_pod_(ns, std::move(pod));
                ++created;
                events_.emit(job, "Normal", "SuccessfulCreate", "Created pod: " + str(at(&made, "metadata"), "name"));
            } catch (const StoreError& e) {
                events_.emit(job, "Warning", "FailedCreate", "Error creating: " + e.status().message);
                break;
            }
        }
        return created;
    }

    /// Deletes `count` of the active pods, the newest first; returns how many it deleted.
    std::int64_t delete_pods(const json::value& job, std::vector<json::value> pods, std::size_t count) {
        using namespace workload_pods;
        std::stable_sort(pods.begin(), pods.end(), [](const json::value& a, const json::value& b) {
            return meta(a, "creationTimestamp") > meta(b, "creationTimestamp");
        });
        std::int64_t deleted = 0;
        for (std::size_t i = 0; i < count && i < pods.size(); ++i) {
            const auto name = meta(pods[i], "name");
            try {
                store_.remove(pods_id, meta(pods[i], "namespace"), name);
                ++deleted;
                events_.emit(job, "Normal", "SuccessfulDelete", "Deleted pod: " + name);
            } catch (const StoreError&) {
            }
        }
        return deleted;
    }

    ObjectStore& store_;
    PodCreator create_pod_ = store_pod_creator(store_);
    EventEmitter events_;
    OwnerChanges changes_;
    SimLoop loop_;
};

} // namespace vck::sandbox
