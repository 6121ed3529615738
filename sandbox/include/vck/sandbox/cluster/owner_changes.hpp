// OwnerChanges: which owners (ReplicaSets, Jobs, StatefulSets, Deployments) a workload
// controller's pass must sync, from the store's change feed, so that a pass does the work of
// what changed instead of syncing every owner against a list of every pod (what upstream's
// controllers do with their informers' event handlers and work queue). An owner is due when:
// - it changed (created, modified; a deleted one is dropped, and so are its times);
// - a dependent it controls changed (pods of a ReplicaSet, ReplicaSets of a Deployment): the
//   owner its controller reference names by uid, before or after the change; a dependent with
//   no controller reference names every owner of its namespace, since any of them may adopt
//   it; one controlled by another kind names none;
// - an object it only reads changed (a StatefulSet's claims, a Deployment's pods): every owner
//   of that object's namespace;
// - the time it asked for (at()) has come.
// Guarantees: the first take() after start() returns every owner (listed once); after that,
// exactly the owners the rules above name. Keys are (namespace, name). Used from one thread
// (the controller's SimLoop); the feed itself is fed from the store's listeners.
#pragma once

#include <vck/sandbox/cluster/change_feed.hpp>
#include <vck/sandbox/cluster/sim_loop.hpp>
#include <vck/sandbox/cluster/workload_pods.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace vck::sandbox {

class OwnerChanges {
public:
    using Clock = SimLoop::Clock;
    using Key = std::pair<std::string, std::string>;  // namespace, name

    /// A resource whose changes name owners: by their controller reference, or (not
    /// `controlled`) every owner of their namespace.
    struct Dependent {
        std::string group, resource;
        bool controlled = true;
    };

    /// Owners are `owner`, a resource of kind `kind` (as ownerReferences name it).
    OwnerChanges(ObjectStore& store, ResourceId owner, std::string kind,
                 std::vector<Dependent> dependents = {Dependent{"", "pods", true}})
        : store_(store), owner_(std::move(owner)), kind_(std::move(kind)), dependents_(std::move(dependents)),
          feed_(store, [group = owner_.group, plural = owner_.resource, deps = dependents_](const StoreChange& c) {
              if (c.group == group && c.resource == plural) return true;
              return std::any_of(deps.begin(), deps.end(),
                                 [&](const Dependent& d) { return c.group == d.group && c.resource == d.resource; });
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
                if (c.group == owner_.group && c.resource == owner_.resource) {
                    owner_changed(c, due);
                    continue;
                }
                const auto dep = std::find_if(dependents_.begin(), dependents_.end(), [&](const Dependent& d) {
                    return c.group == d.group && c.resource == d.resource;
                });
                if (dep == dependents_.end()) continue;
                if (!dep->controlled) {
                    everyone_in(c.namespace_, due);
                    continue;
                }
                for (const auto* obj : {c.previous.get(), c.object.get()})
                    if (obj) controller_names(c.namespace_, *obj, due);
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

    /// One pass of a controller: `sync(owner)` for each owner due (with its apiVersion and
    /// kind), and each time it returns asked for; returns the earliest time asked for.
    template <class Sync>
    std::optional<Clock::time_point> sync_due(const std::string& api_version, Sync&& sync) {
        pods_by_ns_.clear();
        for (const auto& key : take(Clock::now())) {
            json::value owner;
            try {
                owner = store_.get(owner_, key.first, key.second);
            } catch (const StoreError&) {
                continue;  // deleted since: its DELETED change drops it
            }
            owner.as_object()["apiVersion"] = api_version;
            owner.as_object()["kind"] = kind_;
            if (auto when = sync(owner)) at(key, *when);
        }
        pods_by_ns_.clear();
        return next();
    }

    /// The list of namespace `ns`'s pods, listed once per sync_due() (for its `sync`).
    const json::value& pods_in(const std::string& ns) {
        auto [it, fresh] = pods_by_ns_.try_emplace(ns);
        if (fresh) it->second = store_.list(pods_id, ns);
        return it->second;
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

    void owner_changed(const StoreChange& c, std::set<Key>& due) {
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

    void everyone_in(const std::string& ns, std::set<Key>& due) const {
        if (auto it = by_ns_.find(ns); it != by_ns_.end())
            for (const auto& name : it->second) due.insert(Key{ns, name});
    }

    /// The owner a dependent's state names, or every owner of its namespace when it has no controller.
    void controller_names(const std::string& ns, const json::value& obj, std::set<Key>& due) const {
        const auto* refs = workload_pods::at(workload_pods::at(&obj, "metadata"), "ownerReferences");
        if (refs && refs->is_array())
            for (const auto& ref : refs->get_array()) {
                const auto* controller = ref.is_object() ? ref.get_object().if_contains("controller") : nullptr;
                if (!controller || !controller->is_bool() || !controller->get_bool()) continue;
                if (workload_pods::str(&ref, "kind") != kind_) return;  // another kind's: not adoptable
                if (auto it = by_uid_.find(workload_pods::str(&ref, "uid")); it != by_uid_.end()) due.insert(it->second);
                return;
            }
        everyone_in(ns, due);
    }

    ObjectStore& store_;
    ResourceId owner_;
    std::string kind_;
    std::vector<Dependent> dependents_;
    ChangeFeed feed_;
    std::map<std::string, json::value> pods_by_ns_;  // this sync_due()'s pod lists
    bool loaded_ = false;
    std::map<std::string, Key> by_uid_;                   // owner uid -> key
    std::map<std::string, std::set<std::string>> by_ns_;  // namespace -> owner names
    std::map<Key, Clock::time_point> times_;              // asked-for syncs
};

} // namespace vck::sandbox
