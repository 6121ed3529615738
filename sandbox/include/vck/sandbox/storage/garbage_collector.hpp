// Garbage collection as kube-controller-manager's garbage collector decides it, as a pure
// planning step: given the objects that have owners or are being deleted with the orphan or
// foregroundDeletion finalizer, it lists the next actions. The store applies them and plans
// again until nothing is left to do. Guarantees (for owners identified by uid):
// - a dependent whose owners are all gone is deleted (background), or in the foreground when
//   an owner waits for it and it has dependents of its own;
// - a dependent that still has a live owner only loses its references to gone owners;
// - an owner deleted in the foreground keeps `foregroundDeletion` until no dependent with
//   blockOwnerDeletion=true remains; an orphaning owner first strips its dependents'
//   references to it, then loses its `orphan` finalizer.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace vck::sandbox {

inline constexpr const char* orphan_finalizer = "orphan";
inline constexpr const char* foreground_finalizer = "foregroundDeletion";

/// Where an object lives in the store.
struct ObjectRef {
    std::string storage_key;  // "<group>/<plural>"
    std::string namespace_;
    std::string name;
    friend bool operator==(const ObjectRef&, const ObjectRef&) = default;
    friend auto operator<=>(const ObjectRef&, const ObjectRef&) = default;
};

struct GcOwnerLink {
    std::string uid;
    bool block_owner_deletion = false;
};

/// What the collector needs to know of one object.
struct GcObject {
    ObjectRef ref;
    std::string uid;
    std::vector<GcOwnerLink> owners;
    bool deleting = false;  // deletionTimestamp is set
    bool orphan_finalizer = false;
    bool foreground_finalizer = false;
    // Some object names this one as owner, whether or not it is among the candidates (a store
    // that plans over only the objects a write touched knows this from its owner index).
    bool has_dependents = false;
};

/// An owner as the collector sees it.
struct GcOwnerState {
    bool exists = false;
    bool waiting_for_dependents = false;  // deleting with foregroundDeletion
};

struct GcAction {
    enum class Type { DeleteBackground, DeleteForeground, RemoveOwnerRefs, RemoveFinalizer };
    Type type;
    ObjectRef target;
    std::vector<std::string> owner_uids;  // RemoveOwnerRefs
    std::string finalizer;                // RemoveFinalizer
};

/// The next actions. `candidates` must hold every object whose situation changed (and has owner
/// references, or is deleting with the orphan or foregroundDeletion finalizer), together with
/// every dependent of each such deleting candidate; objects left out get no action. Planning
/// over every object with owners or those finalizers is always correct; a store plans over
/// what a write touched. `owner` looks up any uid.
inline std::vector<GcAction> plan_garbage_collection(const std::vector<GcObject>& candidates,
                                                     const std::function<GcOwnerState(const std::string&)>& owner) {
    std::vector<GcAction> actions;
    // owner uid -> dependents (indices into candidates)
    std::map<std::string, std::vector<std::size_t>> dependents;
    for (std::size_t i = 0; i < candidates.size(); ++i)
        for (const auto& o : candidates[i].owners) dependents[o.uid].push_back(i);
    auto has_dependents = [&](const GcObject& o) {
        return o.has_dependents || (!o.uid.empty() && dependents.count(o.uid) > 0);
    };

    std::set<ObjectRef> touched;  // one action per dependent per plan keeps the plan consistent
    for (const auto& obj : candidates) {
        if (obj.owners.empty() || obj.deleting) continue;
        std::vector<std::string> solid, dangling, waiting;
        for (const auto& link : obj.owners) {
            auto st = owner(link.uid);
            if (!st.exists) dangling.push_back(link.uid);
            else if (st.waiting_for_dependents) waiting.push_back(link.uid);
            else solid.push_back(link.uid);
        }
        if (!solid.empty()) {
            if (dangling.empty() && waiting.empty()) continue;
            std::vector<std::string> drop = dangling;
            drop.insert(drop.end(), waiting.begin(), waiting.end());
            actions.push_back({GcAction::Type::RemoveOwnerRefs, obj.ref, std::move(drop), {}});
        } else if (!waiting.empty() && has_dependents(obj)) {
            actions.push_back({GcAction::Type::DeleteForeground, obj.ref, {}, {}});
        } else {
            actions.push_back({GcAction::Type::DeleteBackground, obj.ref, {}, {}});
        }
        touched.insert(obj.ref);
    }

    for (const auto& obj : candidates) {
        if (!obj.deleting) continue;
        auto deps = dependents.find(obj.uid);
        if (obj.orphan_finalizer) {
            if (deps != dependents.end())
                for (auto i : deps->second)
                    if (!touched.count(candidates[i].ref))
                        actions.push_back({GcAction::Type::RemoveOwnerRefs, candidates[i].ref, {obj.uid}, {}});
            if (deps == dependents.end() || std::all_of(deps->second.begin(), deps->second.end(), [&](std::size_t i) {
                    return !touched.count(candidates[i].ref);
                }))
                actions.push_back({GcAction::Type::RemoveFinalizer, obj.ref, {}, orphan_finalizer});
        } else if (obj.foreground_finalizer) {
            bool blocked = false;
            if (deps != dependents.end())
                for (auto i : deps->second)
                    for (const auto& link : candidates[i].owners)
                        if (link.uid == obj.uid && link.block_owner_deletion) blocked = true;
            if (!blocked) actions.push_back({GcAction::Type::RemoveFinalizer, obj.ref, {}, foreground_finalizer});
        }
    }
    return actions;
}

} // namespace vck::sandbox
