// PodGarbageCollector: the sandbox's pod garbage collector (of kube-controller-manager), the
// part a lost node needs. A pod bound to a node that no longer exists (deleted, as a cloud's
// node controller deletes the Node of a machine that is gone) is, once the node has been gone
// for the quarantine (40 s, as the real one waits before it trusts its node cache), marked
// Failed with the condition DisruptionTarget (reason DeletionByPodGC, "PodGC: node no longer
// exists") and deleted at once (grace period 0: no kubelet is left to stop it). Its
// controller (a ReplicaSet, a StatefulSet, a Job) then makes it again elsewhere. A node made
// again within the quarantine keeps its pods.
// Not modelled: terminated pods beyond terminated-pod-gc-threshold, pods of nodes with the
// out-of-service taint.
#pragma once

#include <vck/api/time.hpp>
#include <vck/sandbox/storage/object_store.hpp>
#include <vck/sandbox/cluster/sim_loop.hpp>
#include <vck/sandbox/cluster/workload_pods.hpp>

#include <boost/json.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace vck::sandbox {

class PodGarbageCollector {
public:
    using Clock = SimLoop::Clock;

    explicit PodGarbageCollector(ObjectStore& store, std::chrono::milliseconds quarantine = std::chrono::seconds(40))
        : store_(store), quarantine_(quarantine),
          loop_(store, "pod-garbage-collector",
                [](const Change& c) { return c.group.empty() && (c.resource == "pods" || c.resource == "nodes"); },
                [this] { return pass(); }) {}
    ~PodGarbageCollector() { stop(); }
    PodGarbageCollector(const PodGarbageCollector&) = delete;
    PodGarbageCollector& operator=(const PodGarbageCollector&) = delete;

    void start() { loop_.start(); }
    void stop() { loop_.stop(); }

    /// One pass (what the loop runs; tests may call it directly): when it wants to run again.
    std::optional<Clock::time_point> pass() {
        auto now = Clock::now();
        std::set<std::string> nodes;
        auto node_list = store_.list(nodes_id, "");
        for (const auto& n : node_list.at("items").as_array()) nodes.insert(workload_pods::meta(n, "name"));
        std::map<std::string, Clock::time_point> still_orphaned;
        std::optional<Clock::time_point> next;
        auto pod_list = store_.list(pods_id, "");
        for (const auto& p : pod_list.at("items").as_array()) {
            auto node = workload_pods::str(workload_pods::at(&p, "spec"), "nodeName");
            if (node.empty() || nodes.count(node)) continue;
            auto uid = workload_pods::meta(p, "uid");
            auto since = orphaned_.count(uid) ? orphaned_.at(uid) : now;
            if (now - since < quarantine_) {
                still_orphaned[uid] = since;
                auto due = since + quarantine_;
                if (!next || due < *next) next = due;
                continue;
            }
            collect(p);
        }
        orphaned_ = std::move(still_orphaned);
        return next;
    }

private:
    static inline const ResourceId pods_id{"", "v1", "pods"};
    static inline const ResourceId nodes_id{"", "v1", "nodes"};

    void collect(const json::value& pod) {
        const auto ns = workload_pods::meta(pod, "namespace");
        const auto name = workload_pods::meta(pod, "name");
        const auto uid = workload_pods::meta(pod, "uid");
        try {
            if (!workload_pods::finished(pod)) {
                json::object condition{{"type", "DisruptionTarget"},
                                       {"status", "True"},
                                       {"reason", "DeletionByPodGC"},
                                       {"message", "PodGC: node no longer exists"},
                                       {"lastTransitionTime", api::format_rfc3339(std::chrono::system_clock::now())}};
                json::object status{{"phase", "Failed"}, {"conditions", json::array{condition}}};
                json::object patch{{"metadata", json::object{{"uid", uid}}}, {"status", std::move(status)}};
                store_.patch(pods_id, ns, name, client::PatchType::StrategicMerge, patch, "status");
            }
            DeleteOptions o;
            o.precondition_uid = uid;
            o.grace_period_seconds = 0;
            store_.remove(pods_id, ns, name, o);
        } catch (const StoreError&) {
            // Gone already or made again meanwhile: the next pass sees the new state.
        }
    }

    ObjectStore& store_;
    std::chrono::milliseconds quarantine_;
    std::map<std::string, Clock::time_point> orphaned_;  // pod uid -> when it was first seen orphaned
    SimLoop loop_;
};

} // namespace vck::sandbox
