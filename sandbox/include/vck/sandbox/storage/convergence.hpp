// Convergence: what kube-controller-manager's garbage collector and the namespace and
// apiextensions finalizers do after a write, done at once, under the same lock, before the
// write returns. It repeats until a round changes nothing:
// - garbage collection (garbage_collector.hpp plans it) over the objects the writes touched
//   (StoreState's owner index): dependents of gone owners are deleted, references to gone
//   owners dropped, the orphan and foregroundDeletion finalizers removed when their work is done;
// - a terminating namespace with no finalizers left is removed once nothing is left in it;
// - a terminating CRD loses its cleanup finalizer once its objects are gone (and is then
//   removed, with the resources it served, if nothing else holds it).
// An action that finds its object changed since the plan is planned again after the next
// round that makes progress. Used under ObjectStore's lock; never in a dry run.
#pragma once

#include <vck/sandbox/storage/crd_registration.hpp>
#include <vck/sandbox/storage/garbage_collector.hpp>
#include <vck/sandbox/storage/object_deletion.hpp>
#include <vck/sandbox/storage/store_state.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace vck::sandbox {

class Convergence {
public:
    Convergence(StoreState& state, ObjectDeletion& deletions) : s(state), deletion(deletions) {}

    /// Runs the collectors until nothing moves.
    void settle() {
        using namespace stored_object;
        std::map<std::string, bool> retry;  // targets of actions that changed nothing
        for (int round = 0; round < 100000; ++round) {
            bool progress = false;
            std::map<std::string, bool> touched;
            touched.swap(s.gc_touched);
            auto candidates = gc_candidates(touched);
            if (!candidates.empty()) {
                auto actions = plan_garbage_collection(candidates, [&](const std::string& uid) {
                    GcOwnerState st;
                    auto it = s.uids.find(uid);
                    if (it == s.uids.end()) return st;
                    const auto* obj = s.stored(it->second);
                    if (!obj) return st;
                    st.exists = true;
                    auto fs = finalizers(*obj);
                    st.waiting_for_dependents =
                        deleting(*obj) && std::find(fs.begin(), fs.end(), foreground_finalizer) != fs.end();
                    return st;
                });
                for (const auto& a : actions) {
                    bool done = apply_gc(a);
                    progress |= done;
                    if (!done)
                        if (const auto* obj = s.stored(a.target))
                            if (auto uid = meta_str(*obj, "uid"); !uid.empty()) retry[uid] = true;
                }
            }
            progress |= finalize_namespaces();
            progress |= finalize_crds();
            if (!progress) break;
            // Something moved: the failed ones are planned again in the next round.
            for (auto& [uid, changed] : retry) s.gc_touched[uid] = changed;
            retry.clear();
        }
        for (auto& [uid, changed] : retry) s.gc_touched[uid] = changed;
    }

private:
    /// What the collector needs to know of a stored object, or nullopt when it has nothing
    /// to decide about it (no owners, and not deleting with a collector's finalizer).
    std::optional<GcObject> gc_object(const ObjectRef& ref, const json::value& obj) const {
        using namespace stored_object;
        const auto* m = meta(obj);
        if (!m) return std::nullopt;
        const auto* refs = m->if_contains("ownerReferences");
        bool has_refs = refs && refs->is_array() && !refs->get_array().empty();
        bool del = deleting(obj);
        auto fs = del ? finalizers(obj) : std::vector<std::string>{};
        bool orphan = std::find(fs.begin(), fs.end(), orphan_finalizer) != fs.end();
        bool fg = std::find(fs.begin(), fs.end(), foreground_finalizer) != fs.end();
        if (!has_refs && !orphan && !fg) return std::nullopt;
        GcObject g;
        g.ref = ref;
        g.uid = str(m, "uid");
        g.deleting = del;
        g.orphan_finalizer = orphan;
        g.foreground_finalizer = fg;
        g.has_dependents = !g.uid.empty() && s.dependents.count(g.uid) > 0;
        if (has_refs)
            for (const auto& r : refs->get_array()) {
                if (!r.is_object()) continue;
                const auto* b = r.get_object().if_contains("blockOwnerDeletion");
                g.owners.push_back({str(&r.get_object(), "uid"), b && b->is_bool() && b->get_bool()});
            }
        return g;
    }

    /// The candidates for one plan: the objects the touched uids name (see StoreState's owner index).
    std::vector<GcObject> gc_candidates(const std::map<std::string, bool>& touched) const {
        std::set<ObjectRef> refs;
        auto add_dependents = [&](const std::string& uid) {
            if (auto d = s.dependents.find(uid); d != s.dependents.end()) refs.insert(d->second.begin(), d->second.end());
        };
        for (const auto& [uid, changed] : touched) {
            if (auto it = s.uids.find(uid); it != s.uids.end()) refs.insert(it->second);
            if (changed) add_dependents(uid);
        }
        std::vector<GcObject> out;
        std::set<ObjectRef> more;
        for (const auto& ref : refs) {
            const auto* obj = s.stored(ref);
            if (!obj) continue;
            auto g = gc_object(ref, *obj);
            if (!g) continue;
            if ((g->orphan_finalizer || g->foreground_finalizer) && !touched.count(g->uid))
                if (auto d = s.dependents.find(g->uid); d != s.dependents.end())
                    for (const auto& dep : d->second)
                        if (!refs.count(dep)) more.insert(dep);
            out.push_back(std::move(*g));
        }
        for (const auto& ref : more)
            if (const auto* obj = s.stored(ref))
                if (auto g = gc_object(ref, *obj)) out.push_back(std::move(*g));
        return out;
    }

    bool apply_gc(const GcAction& a) {
        using namespace stored_object;
        const auto* cur = s.stored(a.target);
        if (!cur) return false;
        try {
            return apply_gc_to(a, *cur);
        } catch (const StoreError&) {
            return false;  // the object changed under the plan; the next round plans again
        }
    }

    bool apply_gc_to(const GcAction& a, const json::value& current) {
        using namespace stored_object;
        const auto* cur = &current;
        auto r = s.info_for_storage(a.target.storage_key);
        switch (a.type) {
        case GcAction::Type::DeleteBackground:
        case GcAction::Type::DeleteForeground: {
            StoreDeleteOptions d;
            d.propagation_policy = a.type == GcAction::Type::DeleteForeground ? "Foreground" : "Background";
            deletion.remove(r, a.target.namespace_, a.target.name, d);
            return true;
        }
        case GcAction::Type::RemoveOwnerRefs: {
            json::value obj = *cur;
            auto& md = meta(obj);
            if (auto* refs = md.if_contains("ownerReferences"); refs && refs->is_array()) {
                auto& arr = refs->get_array();
                json::array kept;
                for (const auto& ref : arr) {
                    auto uid = ref.is_object() ? str(&ref.get_object(), "uid") : std::string();
                    if (std::find(a.owner_uids.begin(), a.owner_uids.end(), uid) == a.owner_uids.end()) kept.push_back(ref);
                }
                if (kept.size() == arr.size()) return false;
                if (kept.empty()) md.erase("ownerReferences");
                else md["ownerReferences"] = std::move(kept);
            }
            s.commit(r, a.target.namespace_, a.target.name, std::move(obj));
            return true;
        }
        case GcAction::Type::RemoveFinalizer: {
            json::value obj = *cur;
            auto fs = finalizers(obj);
            if (std::erase(fs, a.finalizer) == 0) return false;
            set_finalizers(obj, fs);
            s.commit(r, a.target.namespace_, a.target.name, std::move(obj));
            return true;
        }
        }
        return false;
    }

    /// A terminating namespace goes away once nothing is left in it.
    bool finalize_namespaces() {
        using namespace stored_object;
        auto nsr = *s.registry.find("", "v1", "namespaces");
        auto done = names_where(nsr, [&](const json::value& obj, const std::string& name) {
            if (!deleting(obj) || !finalizers(obj).empty()) return false;
            for (const auto& [sk, bucket] : s.data) {
                auto it = bucket.lower_bound(name + "/");
                if (it != bucket.end() && it->first.starts_with(name + "/")) return false;
            }
            return true;
        });
        for (const auto& name : done) s.erase(nsr, "", name);
        return !done.empty();
    }

    /// A terminating CRD loses its cleanup finalizer once its objects are gone.
    bool finalize_crds() {
        using namespace stored_object;
        auto crdr = *s.registry.find("apiextensions.k8s.io", "v1", "customresourcedefinitions");
        auto done = names_where(crdr, [&](const json::value& obj, const std::string&) {
            if (!deleting(obj)) return false;
            auto fs = finalizers(obj);
            if (std::find(fs.begin(), fs.end(), crd_cleanup_finalizer) == fs.end()) return false;
            auto bucket = s.data.find(crd_storage_key(obj));
            return bucket == s.data.end() || bucket->second.empty();
        });
        for (const auto& name : done) {
            json::value obj = *s.find(crdr, "", name);
            auto fs = finalizers(obj);
            std::erase(fs, std::string(crd_cleanup_finalizer));
            set_finalizers(obj, fs);
            s.commit(crdr, "", name, std::move(obj));
        }
        return !done.empty();
    }

    /// The names of the objects of r (cluster-scoped) that `pick(object, name)` picks.
    template <class Pick>
    std::vector<std::string> names_where(const ResourceInfo& r, Pick pick) const {
        std::vector<std::string> out;
        auto b = s.data.find(r.storage_key());
        if (b == s.data.end()) return out;
        for (const auto& [name, obj] : b->second)
            if (pick(obj, name)) out.push_back(name);
        return out;
    }

    StoreState& s;  // the store's state, named short: nearly every line uses it
    ObjectDeletion& deletion;
};

} // namespace vck::sandbox
