// ReplicaSetController: kube-controller-manager's replicaset controller for the sandbox, one
// SimLoop pass over every apps/v1 ReplicaSet. Guarantees, per ReplicaSet:
// - it claims the active pods (not Succeeded/Failed, not being deleted) of its namespace
//   (controller_ref.hpp: adopts matching orphans, releases pods that no longer match);
// - fewer than spec.replicas: creates the missing pods from the template, named
//   <rs>-<5 random> (generateName), with the template's labels and annotations and the
//   ReplicaSet as controller (a failed or deleted pod is so replaced); more: deletes the
//   surplus, ranked as the real controller ranks them, simplified to: unscheduled before
//   scheduled, Pending before Unknown before Running, not ready before ready, more restarts
//   before fewer, newer before older; a ReplicaSet being deleted creates and deletes nothing;
// - events SuccessfulCreate "Created pod: <pod>", SuccessfulDelete "Deleted pod: <pod>",
//   FailedCreate "Error creating: <reason>" (Warning);
// - status (written only when it changes): replicas (claimed active pods),
//   fullyLabeledReplicas (those carrying all template labels), readyReplicas (Ready=True),
//   availableReplicas (Ready for minReadySeconds), observedGeneration; a pass is scheduled for
//   when a ready pod becomes available.
// Deleting a ReplicaSet deletes its pods: the store's garbage collector follows the owner
// references. sync_all() runs one pass over every ReplicaSet from the caller's thread (tests
// drive it directly). Started, a pass syncs only the ReplicaSets a change names
// (owner_changes.hpp: the changed ones, the controller of a changed pod, every one of the
// namespace of a changed orphan pod, those whose asked-for time has come), each against a list
// of its namespace's pods, as upstream's does from its informers; a failed create is retried
// after a second.
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
#include <tuple>
#include <vector>

namespace vck::sandbox {


class ReplicaSetController {
public:
    using Clock = SimLoop::Clock;

    explicit ReplicaSetController(ObjectStore& store)
        : store_(store), events_(store, "replicaset-controller"), changes_(store, replicasets_id, "ReplicaSet"),
          loop_(store, "replicaset-controller",
                [](const StoreChange& c) {
                    return (c.group.empty() && c.resource == "pods") || (c.group == "apps" && c.resource == "replicasets");
                },
                [this] { return pass(); }) {}
    ~ReplicaSetController() { stop(); }

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

    /// The loop's pass: the ReplicaSets changes name (every one when not started).
    std::optional<Clock::time_point> pass() {
        if (!changes_.started()) return sync_all();
        return changes_.sync_due("apps/v1", [this](const json::value& rs) {
            return sync_one(rs, changes_.pods_in(workload_pods::meta(rs, "namespace")));
        });
    }

    /// One pass over every ReplicaSet; returns when a pod becomes available, if one will.
    std::optional<Clock::time_point> sync_all() {
        auto rs_list = store_.list(replicasets_id, "");
        auto pod_list = store_.list(pods_id, "");
        std::optional<Clock::time_point> next;
        for (auto rs : rs_list.at("items").as_array()) {
            rs.as_object()["apiVersion"] = "apps/v1";
            rs.as_object()["kind"] = "ReplicaSet";
            auto when = sync_one(rs, pod_list);
            if (when && (!next || *when < *next)) next = when;
        }
        return next;
    }

private:
    static inline const ResourceId pods_id{"", "v1", "pods"};
    static inline const ResourceId replicasets_id{"apps", "v1", "replicasets"};

    std::optional<Clock::time_point> sync_one(const json::value& rs, const json::value& pod_list) {
        using namespace workload_pods;
        const auto* md = at(&rs, "metadata");
        const auto* spec = at(&rs, "spec");
        const auto ns = str(md, "namespace");
        std::optional<api::LabelSelector> selector;
        try {
            if (const auto* sel = at(spec, "selector")) selector = api::LabelSelector::from_json(*sel);
        } catch (const std::exception&) {
        }
        if (!selector) return std::nullopt;  // refused by validation; nothing to manage
        std::vector<json::value> candidates;
        for (const auto& p : controller_ref::items_in(pod_list, ns))
            if (active(p)) candidates.push_back(p);
        auto pods = controller_ref::claim(store_, pods_id, rs, *selector, candidates);

        const auto want = spec_validation::integer(spec, "replicas").value_or(1);
        std::optional<Clock::time_point> retry;
        if (!controller_ref::deleting(rs)) {
            auto have = static_cast<std::int64_t>(pods.size());
            if (have < want && !create_pods(rs, want - have)) retry = Clock::now() + std::chrono::seconds(1);
            else if (have > want) delete_pods(rs, pods, have - want);
        }
        auto next = update_status(rs, pods);
        return retry && (!next || *retry < *next) ? retry : next;
    }

    /// Whether every pod was created.
    bool create_pods(const json::value& rs, std::int64_t count) {
        using namespace workload_pods;
        const auto ns = str(at(&rs, "metadata"), "namespace");
        for (std::int64_t i = 0; i < count; ++i) {
            auto pod = controller_ref::pod_from_template(rs);
            try {
                auto created = create_pod_(ns, std::move(pod));
                events_.emit(rs, "Normal", "SuccessfulCreate", "Created pod: " + str(at(&created, "metadata"), "name"));
            } catch (const StoreError& e) {
                events_.emit(rs, "Warning", "FailedCreate", "Error creating: " + e.status().message);
                return false;  // as the real slow start: a failure ends the batch
            }
        }
        return true;
    }

    /// The deletion rank (smaller goes first); see the header comment.
    static std::tuple<int, int, int, std::int64_t> rank(const json::value& pod) {
        using namespace workload_pods;
        const auto* status = at(&pod, "status");
        int scheduled = str(at(&pod, "spec"), "nodeName").empty() ? 0 : 1;
        auto phase = str(status, "phase");
        int phase_rank = phase == "Pending" ? 0 : phase == "Running" ? 2 : 1;
        int ready = ready_since(pod) ? 1 : 0;
        std::int64_t restarts = 0;
        if (const auto* cs = spec_validation::array_at(status, "containerStatuses"))
            for (const auto& c : *cs) restarts += spec_validation::integer(&c, "restartCount").value_or(0);
        return {scheduled, phase_rank, ready, -restarts};  // ties: newer first (delete_pods)
    }

    void delete_pods(const json::value& rs, std::vector<json::value> pods, std::int64_t count) {
        using namespace workload_pods;
        std::stable_sort(pods.begin(), pods.end(), [](const json::value& a, const json::value& b) {
            auto ra = rank(a), rb = rank(b);
            if (ra != rb) return ra < rb;
            // RFC 3339 timestamps order as text: the newer pod goes first.
            return str(at(&a, "metadata"), "creationTimestamp") > str(at(&b, "metadata"), "creationTimestamp");
        });
        for (std::int64_t i = 0; i < count && i < static_cast<std::int64_t>(pods.size()); ++i) {
            const auto* pmd = at(&pods[i], "metadata");
            try {
                store_.remove(pods_id, str(pmd, "namespace"), str(pmd, "name"));
                events_.emit(rs, "Normal", "SuccessfulDelete", "Deleted pod: " + str(pmd, "name"));
            } catch (const StoreError&) {
            }
        }
    }

    std::optional<Clock::time_point> update_status(const json::value& rs, const std::vector<json::value>& pods) {
        using namespace workload_pods;
        const auto* spec = at(&rs, "spec");
        const auto min_ready = spec_validation::integer(spec, "minReadySeconds").value_or(0);
        const auto* tlabels = controller_ref::labels_of(*at(spec, "template"));
        auto now = std::chrono::system_clock::now();
        std::int64_t fully = 0, ready = 0, avail = 0;
        std::optional<Clock::time_point> next;
        for (const auto& p : pods) {
            const auto* labels = controller_ref::labels_of(p);
            bool all = true;
            if (tlabels)
                for (const auto& kv : *tlabels) {
                    const auto* v = labels ? labels->if_contains(kv.key()) : nullptr;
                    if (!v || *v != kv.value()) all = false;
                }
            if (all) ++fully;
            if (auto since = ready_since(p)) {
                ++ready;
                if (available(p, min_ready, now)) ++avail;
                else {
                    auto when = Clock::now() + (*since + std::chrono::seconds(min_ready) - now);
                    if (!next || when < *next) next = when;
                }
            }
        }
        json::object status{{"replicas", static_cast<std::int64_t>(pods.size())}};
        // Zero counts are omitted, as the real status (omitempty) serializes them.
        if (fully) status["fullyLabeledReplicas"] = fully;
        if (ready) status["readyReplicas"] = ready;
        if (avail) status["availableReplicas"] = avail;
        status["observedGeneration"] = spec_validation::integer(at(&rs, "metadata"), "generation").value_or(0);
        const json::value wanted = status;
        if (const auto* old = at(&rs, "status"); old && spec_validation::same(old, &wanted)) return next;
        json::value body = rs;
        body.as_object()["status"] = std::move(status);
        const auto* md = at(&rs, "metadata");
        try {
            store_.update(replicasets_id, str(md, "namespace"), str(md, "name"), std::move(body), "status");
        } catch (const StoreError&) {
            // Changed meanwhile: that change brings another pass.
        }
        return next;
    }

    ObjectStore& store_;
    PodCreator create_pod_ = store_pod_creator(store_);
    EventEmitter events_;
    OwnerChanges changes_;
    SimLoop loop_;
};

} // namespace vck::sandbox
