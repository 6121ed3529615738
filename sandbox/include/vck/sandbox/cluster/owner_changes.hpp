// OwnerChanges: which owners of pods (ReplicaSets, Jobs) a workload controller's pass must
// sync, from the store's change feed, so that a pass does the work of what changed instead of
// syncing every owner against a list of every pod (what upstream's controllers do with their
// informers' event handlers and work queue). An owner is due when:
// - it changed (created, modified; a deleted one is dropped, and so are its times);
// - a pod changed whose controller reference, before or after the change, names it by uid;
// - a pod changed that has no controller reference (before or after): every owner of its
//   namespace, since any of them may adopt it;
// - the time it asked for (at()) has come.
// Guarantees: the first take() after start() returns every owner (listed once); after that,
// exactly the owners the rules above name. Keys are (namespace, name). Used from one thread
// (the controller's SimLoop); the feed itself is fed from the store's listeners.
#pragma once

#include <vck/sandbox/cluster/change_feed.hpp>
#include <vck/sandbox/cluster/sim_loop.hpp>
#include <vck/sandbox/cluster/workload_pods.hpp>

#include <boost/json.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace vck::sandbox {

class OwnerChanges {
public:
    using Clock = SimLoop::Clock;
    using Key = std::pair<std::string, std::string>;  // namespace, name

    /// Owners are `owner`, a resource of kind `kind` (as ownerReferences name it).
    OwnerChanges(ObjectStore& store, ResourceId owner, std::string kind)
        : store_(store), owner_(std::move(owner)), kind_(std::move(kind)),
          feed_(store, [group = owner_.group, plural = owner_.resource](const Change& c) {
              return (c.group.empty() && c.resource == "pods") || (c.group == group && c.resource == plural);
          }) {}

    /// Starts following the feed; the next take() lists every owner.
    void start() {
        feed_.start();
        loaded_ = false;
    }
    void stop() {
        feed_.stop();
        loaded_ = false;
    }
    bool started() const { return feed_.started(); }

    /// The owners to sync now, each once.
    std::set<Key> take(Clock::time_point now) {
        std::set<Key> due;
        if (!loaded_) {
            feed_.clear();  // the list below is at least as new
            by_uid_.clear();
            by_ns_.clear();
            const auto list = store_.list(owner_, "");
            for (const auto& o : list.at("items").as_array()) {
                Key k{workload_pods::meta(o, "namespace"), workload_pods::meta(o, "name")};
                remember(k, workload_pods::meta(o, "uid"));
                due.insert(std::move(k));
            }
            loaded_ = true;
        } else {
            for (const auto& c : feed_.take()) {
                if (!c.group.empty() || c.resource != "pods") {
                    owner_changed(c, due);
                    continue;
                }
                for (const auto* pod : {c.previous.get(), c.object.get()})
                    if (pod) pod_names(c.namespace_, *pod, due);
            }
        }
        for (auto it = times_.begin(); it != times_.end();) {
            if (it->second > now) {
                ++it;
                continue;
            }
            due.insert(it->first);
            it = times_.erase(it);
        }
        return due;
    }

    /// One pass of a controller: `sync(owner, list of the pods of its namespace)` for each owner
    /// due (the owner with its apiVersion and kind; one pod list per namespace per pass), and
    /// each time it returns asked for; returns the earliest time asked for.
    template <class Sync>
    std::optional<Clock::time_point> sync_due(const std::string& api_version, Sync&& sync) {
        std::map<std::string, json::value> pods_by_ns;
        for (const auto& key : take(Clock::now())) {
            json::value owner;
            try {
                owner = store_.get(owner_, key.first, key.second);
            } catch (const StoreError&) {
                continue;  // deleted since: its DELETED change drops it
            }
            owner.as_object()["apiVersion"] = api_version;
            owner.as_object()["kind"] = kind_;
            auto [it, fresh] = pods_by_ns.try_emplace(key.first);
            if (fresh) it->second = store_.list(pods_id, key.first);
            if (auto when = sync(owner, it->second)) at(key, *when);
        }
        return next();
    }

    /// Asks for `key` to be due at `when` (the earliest asked wins until it comes).
    void at(const Key& key, Clock::time_point when) {
        auto [it, added] = times_.emplace(key, when);
        if (!added && when < it->second) it->second = when;
    }
    /// The earliest time asked for, if any.
    std::optional<Clock::time_point> next() const {
        std::optional<Clock::time_point> out;
        for (const auto& [k, t] : times_)
            if (!out || t < *out) out = t;
        return out;
    }

private:
    static inline const ResourceId pods_id{"", "v1", "pods"};

    void remember(const Key& k, const std::string& uid) {
        by_uid_[uid] = k;
        by_ns_[k.first].insert(k.second);
    }

    void owner_changed(const Change& c, std::set<Key>& due) {
        Key k{c.namespace_, c.name};
        auto uid = workload_pods::meta(*c.object, "uid");
        if (c.type == "DELETED") {
            by_uid_.erase(uid);
            by_ns_[k.first].erase(k.second);
            times_.erase(k);
            due.erase(k);
            return;
        }
        remember(k, uid);
        due.insert(std::move(k));
    }

    /// The owners a pod state names, or every owner of its namespace when it has no controller.
    void pod_names(const std::string& ns, const json::value& pod, std::set<Key>& due) const {
        const auto* refs = workload_pods::at(workload_pods::at(&pod, "metadata"), "ownerReferences");
        if (refs && refs->is_array())
            for (const auto& ref : refs->get_array()) {
                const auto* controller = ref.is_object() ? ref.get_object().if_contains("controller") : nullptr;
                if (!controller || !controller->is_bool() || !controller->get_bool()) continue;
                if (workload_pods::str(&ref, "kind") != kind_) return;  // another kind's: not adoptable
                if (auto it = by_uid_.find(workload_pods::str(&ref, "uid")); it != by_uid_.end()) due.insert(it->second);
                return;
            }
        if (auto it = by_ns_.find(ns); it != by_ns_.end())
            for (const auto& name : it->second) due.insert(Key{ns, name});
    }

    ObjectStore& store_;
    ResourceId owner_;
    std::string kind_;
    ChangeFeed feed_;
    bool loaded_ = false;
    std::map<std::string, Key> by_uid_;                   // owner uid -> key
    std::map<std::string, std::set<std::string>> by_ns_;  // namespace -> owner names
    std::map<Key, Clock::time_point> times_;              // asked-for syncs
};

} // namespace vck::sandbox
