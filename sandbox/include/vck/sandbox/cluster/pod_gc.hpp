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
// Cost: work per change. Started, it follows the store's change feed with the set of nodes and
// the node each pod is bound to (listed once): a pod change looks at that pod, a node's
// deletion or return at the pods bound to it. Not started (tests calling pass() by hand), each
// pass lists every node and pod.
#pragma once

#include <vck/api/time.hpp>
#include <vck/sandbox/storage/object_store.hpp>
#include <vck/sandbox/cluster/change_feed.hpp>
#include <vck/sandbox/cluster/sim_loop.hpp>
#include <vck/sandbox/cluster/workload_pods.hpp>

#include <boost/json.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace vck::sandbox {

class PodGarbageCollector {
public:
    using Clock = SimLoop::Clock;

    explicit PodGarbageCollector(ObjectStore& store, std::chrono::milliseconds quarantine = std::chrono::seconds(40))
        : store_(store), quarantine_(quarantine),
          loop_(store, "pod-garbage-collector",
                [](const StoreChange& c) { return c.group.empty() && (c.resource == "pods" || c.resource == "nodes"); },
                [this] { return pass(); }) {}
    ~PodGarbageCollector() { stop(); }
    PodGarbageCollector(const PodGarbageCollector&) = delete;
    PodGarbageCollector& operator=(const PodGarbageCollector&) = delete;

    void start() {
        feed_.start();  // before the first pass lists, so no change falls between the two
        loop_.start();
    }
    void stop() {
        loop_.stop();
        feed_.stop();
        loaded_ = false;  // changes from now on go unseen: a restart lists afresh
    }

    /// One pass (what the loop runs; tests may call it directly): when it wants to run again.
    std::optional<Clock::time_point> pass() {
        if (!feed_.started()) return full_pass();
        if (!loaded_) load();
        else take_feed();
        auto now = Clock::now();
        std::optional<Clock::time_point> next;
        for (auto it = suspects_.begin(); it != suspects_.end();) {
            const auto& [uid, s] = *it;
            if (now - s.since < quarantine_) {
                if (!next || s.since + quarantine_ < *next) next = s.since + quarantine_;
                ++it;
                continue;
            }
            try {
                auto p = store_.get(pods_id, s.ns, s.name);
                if (workload_pods::meta(p, "uid") == uid &&
                    !nodes_.contains(workload_pods::str(workload_pods::at(&p, "spec"), "nodeName")))
                    collect(p);
            } catch (const StoreError&) {
                // Gone already.
            }
            it = suspects_.erase(it);
        }
        return next;
    }

private:
    struct Bound {
        std::string uid, node;
    };
    struct Suspect {
        Clock::time_point since;  // when its node was first seen missing
        std::string ns, name;
    };
    using Key = std::pair<std::string, std::string>;  // pod namespace, name

    /// The set of nodes and every bound pod's node, from lists; a pod on a missing node is a suspect.
    void load() {
        feed_.clear();  // the lists below are at least as new
        nodes_.clear();
        pods_.clear();
        by_node_.clear();
        // Suspects keep their time across a reload (bind() keeps an entry it finds).
        const auto node_list = store_.list(nodes_id, "");
        for (const auto& n : node_list.at("items").as_array()) nodes_.insert(workload_pods::meta(n, "name"));
        const auto pod_list = store_.list(pods_id, "");
        for (const auto& p : pod_list.at("items").as_array())
            bind(Key{workload_pods::meta(p, "namespace"), workload_pods::meta(p, "name")}, &p);
        loaded_ = true;
    }

    void take_feed() {
        for (const auto& c : feed_.take()) {
            if (c.resource == "pods") {
                bind(Key{c.namespace_, c.name}, c.type == "DELETED" ? nullptr : c.object.get());
                continue;
            }
            bool gone = c.type == "DELETED";
            if (gone) nodes_.erase(c.name);
            else nodes_.insert(c.name);
            if (auto it = by_node_.find(c.name); it != by_node_.end())
                for (const auto& key : it->second) suspect(key, pods_.at(key), gone);
        }
    }

    /// Records where pod `key` is bound (`pod` null: deleted).
    void bind(const Key& key, const json::value* pod) {
        std::string uid = pod ? workload_pods::meta(*pod, "uid") : std::string();
        std::string node = pod ? workload_pods::str(workload_pods::at(pod, "spec"), "nodeName") : std::string();
        if (auto it = pods_.find(key); it != pods_.end()) {
            if (it->second.uid == uid && it->second.node == node) {
                suspect(key, it->second, !nodes_.contains(node));  // a suspect keeps its time
                return;
            }
            suspects_.erase(it->second.uid);
            if (auto b = by_node_.find(it->second.node); b != by_node_.end()) {
                b->second.erase(key);
                if (b->second.empty()) by_node_.erase(b);
            }
            pods_.erase(it);
        }
        if (node.empty()) return;
        const auto& b = pods_[key] = Bound{uid, node};
        by_node_[node].insert(key);
        suspect(key, b, !nodes_.contains(node));
    }

    void suspect(const Key& key, const Bound& b, bool node_missing) {
        if (node_missing) suspects_.try_emplace(b.uid, Suspect{Clock::now(), key.first, key.second});
        else suspects_.erase(b.uid);
    }

    /// Without the change feed: every node and pod listed.
    std::optional<Clock::time_point> full_pass() {
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
            StoreDeleteOptions o;
            o.precondition_uid = uid;
            o.grace_period_seconds = 0;
            store_.remove(pods_id, ns, name, o);
        } catch (const StoreError&) {
            // Gone already or made again meanwhile: the next pass sees the new state.
        }
    }

    ObjectStore& store_;
    std::chrono::milliseconds quarantine_;
    std::map<std::string, Clock::time_point> orphaned_;  // pod uid -> when it was first seen orphaned (full passes)
    ChangeFeed feed_{store_, [](const StoreChange& c) {
        return c.group.empty() && (c.resource == "pods" || c.resource == "nodes");
    }};
    bool loaded_ = false;
    std::set<std::string> nodes_;
    std::map<Key, Bound> pods_;                       // bound pods
    std::map<std::string, std::set<Key>> by_node_;    // node -> pods bound to it
    std::map<std::string, Suspect> suspects_;         // pod uid -> on a missing node since
    SimLoop loop_;
};

} // namespace vck::sandbox
