// VolumeBinder: the sandbox's PersistentVolume controller. Level-triggered over all PVs and
// PVCs: a new PV becomes Available; a PVC and a PV that name each other (spec.volumeName,
// spec.claimRef) both become Bound (the PVC with the PV's capacity and access modes); a
// pre-bound side gets the other side filled in; an unbound claim of an Immediate class (or of
// no class object) is bound to the smallest matching Available PV (class, access modes,
// capacity, volume mode, selector); a bound PV whose claim is gone becomes Released, and then
// is deleted when its policy is Delete and no external provisioner made it (that provisioner
// deletes its own). WaitForFirstConsumer claims are left to the scheduler, which binds pre-made PVs
// by setting their claimRef, or names the node for a new volume (selected-node). A claim that
// no pre-made PV satisfies, of a class with a provisioner (Immediate, or WaitForFirstConsumer
// once a node is selected), is handed to that provisioner as kube-controller-manager does:
// annotations volume.kubernetes.io/storage-provisioner (and the beta spelling) and an
// ExternalProvisioning event; a WaitForFirstConsumer claim without a node gets a
// WaitForFirstConsumer event. Writes use resourceVersion preconditions, so a concurrent
// change is never overwritten; the pass is simply repeated. Work per change, not per object:
// decoded copies of every PV and claim are kept current by the store's change feed, and a pass
// looks only at what changed since the last one, with what a change can affect (the claim a PV
// names and the claims naming it; the PVs naming a claim and the one it names; on any PV
// change, the claims still waiting for one; everything when a StorageClass changes). Not
// started (tests calling sync() by hand), every sync looks at everything it listed.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/label_selector.hpp>
#include <vck/api/quantity.hpp>
#include <vck/sandbox/cluster/event_emitter.hpp>
#include <vck/sandbox/cluster/sim_loop.hpp>

#include <boost/json.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace vck::sandbox {

namespace json = boost::json;

/// The storage class a claim asks for: its storageClassName, or when absent the class marked
/// storageclass.kubernetes.io/is-default-class, or "".
inline std::string claim_class(const api::PersistentVolumeClaim& pvc, const json::value& class_list) {
    if (pvc.spec.storageClassName) return *pvc.spec.storageClassName;
    if (const auto* items = class_list.as_object().if_contains("items"))
        for (const auto& sc : items->as_array())
            if (const auto* md = sc.as_object().if_contains("metadata"))
                if (const auto* ann = md->as_object().if_contains("annotations"); ann && ann->is_object())
                    if (const auto* d = ann->as_object().if_contains("storageclass.kubernetes.io/is-default-class");
                        d && d->is_string() && d->get_string() == "true")
                        return std::string(sc.at("metadata").at("name").as_string());
    return "";
}

/// The volumeBindingMode of a class ("Immediate" when the class or the field is absent).
inline std::string binding_mode(const std::string& class_name, const json::value& class_list) {
    if (class_name.empty()) return "Immediate";
    if (const auto* items = class_list.as_object().if_contains("items"))
        for (const auto& sc : items->as_array())
            if (sc.at("metadata").at("name").as_string() == class_name) {
                if (const auto* m = sc.as_object().if_contains("volumeBindingMode"); m && m->is_string())
                    return std::string(m->get_string());
                return "Immediate";
            }
    return "Immediate";
}

/// The class object named `class_name` in `class_list`, or nullptr.
inline const json::object* find_class(const std::string& class_name, const json::value& class_list) {
    if (class_name.empty()) return nullptr;
    if (const auto* items = class_list.as_object().if_contains("items"))
        for (const auto& sc : items->as_array())
            if (sc.at("metadata").at("name").as_string() == class_name) return &sc.as_object();
    return nullptr;
}

/// The provisioner that makes volumes for claims of `class_name`: "" when there is no such
/// class or it provisions nothing (kubernetes.io/no-provisioner, for pre-made PVs).
inline std::string dynamic_provisioner(const std::string& class_name, const json::value& class_list) {
    const auto* sc = find_class(class_name, class_list);
    if (!sc) return "";
    const auto* p = sc->if_contains("provisioner");
    if (!p || !p->is_string() || p->get_string() == "kubernetes.io/no-provisioner") return "";
    return std::string(p->get_string());
}

/// The annotations kube-controller-manager's PV controller puts on a claim it hands to an
/// external provisioner, and the one kube-scheduler sets on a WaitForFirstConsumer claim.
inline constexpr const char* storage_provisioner_annotation = "volume.kubernetes.io/storage-provisioner";
inline constexpr const char* beta_storage_provisioner_annotation = "volume.beta.kubernetes.io/storage-provisioner";
inline constexpr const char* selected_node_annotation = "volume.kubernetes.io/selected-node";

/// Whether an external provisioner made `pv` (and so deletes it itself when its reclaim
/// policy is Delete): annotation pv.kubernetes.io/provisioned-by naming an out-of-tree one.
inline bool externally_provisioned(const api::PersistentVolume& pv) {
    auto it = pv.metadata.annotations.find("pv.kubernetes.io/provisioned-by");
    return it != pv.metadata.annotations.end() && !it->second.empty() && !it->second.starts_with("kubernetes.io/");
}

/// Whether `pv` could satisfy `pvc` (asking for class `cls`), ignoring node topology: the PV
/// is Available (or pre-bound to this very claim), and class, access modes, volume mode,
/// capacity and selector fit.
inline bool pv_fits_claim(const api::PersistentVolume& pv, const api::PersistentVolumeClaim& pvc, const std::string& cls) {
    if (!pv.metadata.deletionTimestamp.empty()) return false;
    if (pv.spec.claimRef) {
        const auto& ref = *pv.spec.claimRef;
        if (ref.name != pvc.metadata.name || ref.namespace_ != pvc.metadata.namespace_) return false;
        if (!ref.uid.empty() && ref.uid != pvc.metadata.uid) return false;
    } else if (pv.status && !pv.status->phase.empty() && pv.status->phase != "Available" && pv.status->phase != "Pending") {
        return false;
    }
    if (pv.spec.storageClassName != cls) return false;
    for (const auto& m : pvc.spec.accessModes)
        if (std::find(pv.spec.accessModes.begin(), pv.spec.accessModes.end(), m) == pv.spec.accessModes.end())
            return false;
    auto mode = [](const std::string& m) { return m.empty() ? std::string("Filesystem") : m; };
    if (mode(pv.spec.volumeMode) != mode(pvc.spec.volumeMode)) return false;
    if (auto want = pvc.spec.resources.requests.find("storage"); want != pvc.spec.resources.requests.end()) {
        auto have = pv.spec.capacity.find("storage");
        if (have == pv.spec.capacity.end()) return false;
        auto w = api::quantity_value(want->second);
        auto h = api::quantity_value(have->second);
        if (!w || !h || *h < *w) return false;
    }
    if (pvc.spec.selector) {
        try {
            auto sel = api::LabelSelector::from_json(api::to_json(*pvc.spec.selector));
            if (!sel.matches(pv.metadata.labels)) return false;
        } catch (const std::exception&) {
            return false;
        }
    }
    return true;
}

inline const api::PersistentVolume& pv_ref(const api::PersistentVolume& pv) { return pv; }
inline const api::PersistentVolume& pv_ref(const api::PersistentVolume* pv) { return *pv; }
inline const api::PersistentVolume& pv_ref(const std::pair<const std::string, api::PersistentVolume>& e) { return e.second; }

/// Among `pvs` (PVs, pointers to them or a map of them by name), the smallest that fits the claim and passes `where`
/// (e.g. a node's topology).
template <class PVs, class Where>
const api::PersistentVolume* best_pv_for(const PVs& pvs, const api::PersistentVolumeClaim& pvc, const std::string& cls,
                                         Where&& where) {
    const api::PersistentVolume* best = nullptr;
    double best_size = 0;
    for (const auto& item : pvs) {
        const api::PersistentVolume& pv = pv_ref(item);
        if (!pv_fits_claim(pv, pvc, cls) || !where(pv)) continue;
        // A PV pre-bound to this claim wins over any other.
        if (pv.spec.claimRef) return &pv;
        double size = 0;
        if (auto it = pv.spec.capacity.find("storage"); it != pv.spec.capacity.end())
            size = api::quantity_value(it->second).value_or(0);
        if (!best || size < best_size || (size == best_size && pv.metadata.name < best->metadata.name)) {
            best = &pv;
            best_size = size;
        }
    }
    return best;
}

/// The claimRef a PV gets when bound to `pvc`.
inline json::value claim_ref_for(const api::PersistentVolumeClaim& pvc) {
    return json::object{{"kind", "PersistentVolumeClaim"}, {"apiVersion", "v1"}, {"namespace", pvc.metadata.namespace_},
                        {"name", pvc.metadata.name}, {"uid", pvc.metadata.uid},
                        {"resourceVersion", pvc.metadata.resourceVersion}};
}

class VolumeBinder {
public:
    explicit VolumeBinder(ObjectStore& store)
        : store_(store), events_(store, "persistentvolume-controller"),
          loop_(store, "volume-binder",
                [](const StoreChange& c) { return c.group == "storage.k8s.io" && c.resource == "storageclasses"; },
                [this] { return pass(); }) {}
    ~VolumeBinder() { stop(); }

    void start() {
        if (!listener_) {
            // Registered before the first list, so no change falls between the two.
            listener_ = store_.on_change([this](const StoreChange& c) {
                if (c.group == "storage.k8s.io" && c.resource == "storageclasses") {
                    {
                        std::lock_guard lock(feed_mu_);
                        classes_changed_ = true;  // binding modes and provisioners may differ now: look at everything
                    }
                    loop_.wake();
                    return;
                }
                if (!c.group.empty() || (c.resource != "persistentvolumes" && c.resource != "persistentvolumeclaims")) return;
                {
                    std::lock_guard lock(feed_mu_);
                    feed_.push_back(FeedItem{c.rv, c.resource == "persistentvolumes", c.type == "DELETED",
                                             mirror_key(c.namespace_, c.name), c.object});
                }
                loop_.wake();  // after the push: the pass it causes sees this change
            });
        }
        loop_.start();
    }
    void stop() {
        loop_.stop();
        if (listener_) store_.remove_listener(std::exchange(listener_, 0));
        // Changes from now on go unseen: a restart lists afresh.
        pvs_.loaded = pvcs_.loaded = false;
        std::lock_guard lock(feed_mu_);
        feed_.clear();
    }

    /// One reconciliation of what changed (of every PV and claim when not started); returns
    /// whether it wrote anything.
    bool sync() {
        refresh();
        auto classes = store_.list(classes_id, "");
        if (!listener_ || all_dirty_) {
            for (const auto& [name, e] : pvs_.objects) dirty_pvs_.insert(name);
            for (const auto& [key, e] : pvcs_.objects) dirty_claims_.insert(key);
            all_dirty_ = false;
        }
        bool wrote = false;
        for (const auto& name : std::exchange(dirty_pvs_, {}))
            if (auto it = pvs_.objects.find(name); it != pvs_.objects.end()) wrote |= sync_pv(it->second.object);
        std::vector<const api::PersistentVolume*> candidates;  // for unbound claims, built once when one needs it
        for (const auto& key : std::exchange(dirty_claims_, {}))
            if (auto it = pvcs_.objects.find(key); it != pvcs_.objects.end())
                wrote |= sync_claim(key, it->second.object, classes, candidates);
        return wrote;
    }

private:
    bool sync_pv(const api::PersistentVolume& pv) {
        bool wrote = false;
        std::string phase = pv.status ? pv.status->phase : "";
        if (!pv.spec.claimRef) {
            if (phase != "Available" && phase != "Failed") wrote |= set_pv_phase(pv, "Available");
            return wrote;
        }
        const auto& ref = *pv.spec.claimRef;
        auto it = pvcs_.objects.find(mirror_key(ref.namespace_, ref.name));
        bool claim_present = it != pvcs_.objects.end() && (ref.uid.empty() || ref.uid == it->second.object.metadata.uid);
        if (!claim_present) {
            if (ref.uid.empty()) {  // pre-bound to a claim that does not exist yet
                if (phase != "Available") wrote |= set_pv_phase(pv, "Available");
            } else if (phase != "Released" && phase != "Failed") {
                wrote |= set_pv_phase(pv, "Released");
            } else if (phase == "Released" && pv.spec.persistentVolumeReclaimPolicy == "Delete" &&
                       !externally_provisioned(pv) && pv.metadata.deletionTimestamp.empty()) {
                // Released first, as kube-controller-manager does (so pv-protection lets it
                // go), then reclaimed. An external provisioner's PV is left to it: it
                // removes the storage, then the PV.
                wrote |= delete_pv(pv);
            }
            return wrote;
        }
        const auto& pvc = it->second.object;
        if (pvc.spec.volumeName.empty()) {
            wrote |= set_claim_volume(pvc, pv.metadata.name);
            return wrote;
        }
        if (pvc.spec.volumeName != pv.metadata.name) return wrote;  // the claim went elsewhere
        if (ref.uid.empty()) {
            wrote |= set_claim_ref(pv, pvc);
            return wrote;
        }
        if (phase != "Bound") wrote |= set_pv_phase(pv, "Bound");
        wrote |= set_claim_bound(pvc, pv);
        return wrote;
    }

    bool sync_claim(const std::string& key, const api::PersistentVolumeClaim& pvc, const json::value& classes,
                    std::vector<const api::PersistentVolume*>& candidates) {
        bool wrote = false;
        unbound_.erase(key);
        if (!pvc.metadata.deletionTimestamp.empty()) return wrote;
        std::string phase = pvc.status ? pvc.status->phase : "";
        if (!pvc.spec.volumeName.empty()) {
            auto found = pvs_.objects.find(pvc.spec.volumeName);
            const api::PersistentVolume* pv = found == pvs_.objects.end() ? nullptr : &found->second.object;
            if (!pv) {
                if (phase == "Bound") {
                    wrote |= set_claim_phase(pvc, "Lost");
                    events_.emit(api::to_json(pvc), "Warning", "ClaimLost",
                                 "Bound claim has lost its PersistentVolume. Data on the volume is lost!");
                }
            } else if (!pv->spec.claimRef) {
                wrote |= set_claim_ref(*pv, pvc);
            }
            return wrote;
        }
        unbound_.insert(key);  // looked at again when any PV changes
        auto cls = claim_class(pvc, classes);
        if (binding_mode(cls, classes) == "WaitForFirstConsumer") {
            // The scheduler binds pre-made PVs itself, and names the node a volume is to
            // be provisioned on; until it has, the claim waits for its first consumer.
            if (!pvc.metadata.annotations.contains(selected_node_annotation)) {
                once(pvc, "WaitForFirstConsumer", [&] {
                    events_.emit(api::to_json(pvc), "Normal", "WaitForFirstConsumer",
                                 "waiting for first consumer to be created before binding");
                });
                return wrote;
            }
        } else {
            if (candidates.empty())
                for (const auto& [name, e] : pvs_.objects) candidates.push_back(&e.object);
            if (auto* pv = best_pv_for(candidates, pvc, cls, [](const api::PersistentVolume&) { return true; })) {
                wrote |= set_claim_ref(*pv, pvc);
                return wrote;
            }
        }
        auto provisioner = dynamic_provisioner(cls, classes);
        if (provisioner.empty()) return wrote;
        wrote |= hand_to_provisioner(pvc, provisioner);
        return wrote;
    }

    static inline const ResourceId pvs_id{"", "v1", "persistentvolumes"};
    static inline const ResourceId pvcs_id{"", "v1", "persistentvolumeclaims"};
    static inline const ResourceId classes_id{"storage.k8s.io", "v1", "storageclasses"};

    /// PVs by name, claims by namespace/name.
    static std::string mirror_key(const std::string& ns, const std::string& name) {
        return ns.empty() ? name : ns + "/" + name;
    }

    /// A decoded copy of every object of one resource, by mirror_key, with the resourceVersion
    /// each was last set at.
    template <class T>
    struct Mirror {
        struct Entry {
            std::int64_t rv = 0;
            T object;
        };
        std::map<std::string, Entry> objects;
        std::int64_t listed_at = 0;  // the list it was loaded from
        bool loaded = false;

        void load(const json::value& list) {
            objects.clear();
            auto rv = json::value_to<std::string>(list.at("metadata").at("resourceVersion"));
            listed_at = std::stoll(rv);
            for (const auto& item : list.at("items").as_array()) {
                auto o = api::from_json<T>(item);
                auto key = mirror_key(o.metadata.namespace_, o.metadata.name);
                auto at = std::stoll(o.metadata.resourceVersion);
                objects.insert_or_assign(std::move(key), Entry{at, std::move(o)});
            }
            loaded = true;
        }
        /// Applies a change unless the list (or a later change) already holds it.
        void apply(std::int64_t rv, bool deleted, const std::string& key, const json::value& object) {
            if (rv <= listed_at) return;
            auto it = objects.find(key);
            if (it != objects.end() && it->second.rv >= rv) return;
            if (deleted) {
                if (it != objects.end()) objects.erase(it);
                return;
            }
            objects.insert_or_assign(key, Entry{rv, api::from_json<T>(object)});
        }
    };
    struct FeedItem {
        std::int64_t rv;
        bool pv;  // else a claim
        bool deleted;
        std::string key;
        std::shared_ptr<const json::value> object;
    };

    /// Brings both mirrors up to date: the first time from lists, then from the change feed.
    void refresh() {
        std::vector<FeedItem> feed;
        {
            std::lock_guard lock(feed_mu_);
            feed.swap(feed_);
        }
        {
            std::lock_guard lock(feed_mu_);
            if (std::exchange(classes_changed_, false)) all_dirty_ = true;
        }
        try {
            if (!pvs_.loaded || !pvcs_.loaded) {
                pvs_.load(store_.list(pvs_id, ""));
                pvcs_.load(store_.list(pvcs_id, ""));
                index_all();
                all_dirty_ = true;
            }
            for (const auto& f : feed) {
                if (f.pv) {
                    unindex_pv(f.key);
                    pvs_.apply(f.rv, f.deleted, f.key, *f.object);
                    index_pv(f.key);
                    dirty_pvs_.insert(f.key);
                    // A PV that changed may be what a waiting claim needs.
                    dirty_claims_.insert(unbound_.begin(), unbound_.end());
                } else {
                    unindex_claim(f.key);
                    pvcs_.apply(f.rv, f.deleted, f.key, *f.object);
                    index_claim(f.key);
                    dirty_claims_.insert(f.key);
                    if (f.deleted) unbound_.erase(f.key);
                }
            }
        } catch (...) {
            // An object that does not decode: the rest of this feed is gone, so list afresh next time.
            pvs_.loaded = pvcs_.loaded = false;
            throw;
        }
    }

    // Which objects a change to another can affect, both ways: PV name -> the claim its
    // claimRef names, and claim key -> the PV its volumeName names. Kept as the mirrors change;
    // unindex marks what the old state pointed at dirty, index what the new one does.
    std::map<std::string, std::set<std::string>> pvs_naming_claim_;  // claim key -> PVs whose claimRef names it
    std::map<std::string, std::set<std::string>> claims_naming_pv_;  // PV name -> claims whose volumeName names it

    static std::string claim_of(const api::PersistentVolume& pv) {
        return pv.spec.claimRef ? mirror_key(pv.spec.claimRef->namespace_, pv.spec.claimRef->name) : std::string();
    }
    static void link(std::map<std::string, std::set<std::string>>& index, const std::string& to, const std::string& from) {
        if (!to.empty()) index[to].insert(from);
    }
    static void unlink(std::map<std::string, std::set<std::string>>& index, const std::string& to, const std::string& from) {
        if (auto it = index.find(to); it != index.end()) {
            it->second.erase(from);
            if (it->second.empty()) index.erase(it);
        }
    }
    /// Marks `key`'s claim, and the claims naming the PV, dirty (before and after a change).
    void touch_pv(const std::string& name) {
        if (auto it = pvs_.objects.find(name); it != pvs_.objects.end())
            if (auto claim = claim_of(it->second.object); !claim.empty()) dirty_claims_.insert(claim);
        if (auto it = claims_naming_pv_.find(name); it != claims_naming_pv_.end())
            dirty_claims_.insert(it->second.begin(), it->second.end());
    }
    void touch_claim(const std::string& key) {
        if (auto it = pvcs_.objects.find(key); it != pvcs_.objects.end() && !it->second.object.spec.volumeName.empty())
            dirty_pvs_.insert(it->second.object.spec.volumeName);
        if (auto it = pvs_naming_claim_.find(key); it != pvs_naming_claim_.end())
            dirty_pvs_.insert(it->second.begin(), it->second.end());
    }
    void unindex_pv(const std::string& name) {
        touch_pv(name);
        if (auto it = pvs_.objects.find(name); it != pvs_.objects.end()) unlink(pvs_naming_claim_, claim_of(it->second.object), name);
    }
    void index_pv(const std::string& name) {
        if (auto it = pvs_.objects.find(name); it != pvs_.objects.end()) link(pvs_naming_claim_, claim_of(it->second.object), name);
        touch_pv(name);
    }
    void unindex_claim(const std::string& key) {
        touch_claim(key);
        if (auto it = pvcs_.objects.find(key); it != pvcs_.objects.end())
            unlink(claims_naming_pv_, it->second.object.spec.volumeName, key);
    }
    void index_claim(const std::string& key) {
        if (auto it = pvcs_.objects.find(key); it != pvcs_.objects.end())
            link(claims_naming_pv_, it->second.object.spec.volumeName, key);
        touch_claim(key);
    }
    void index_all() {
        pvs_naming_claim_.clear();
        claims_naming_pv_.clear();
        unbound_.clear();
        for (const auto& [name, e] : pvs_.objects) link(pvs_naming_claim_, claim_of(e.object), name);
        for (const auto& [key, e] : pvcs_.objects) link(claims_naming_pv_, e.object.spec.volumeName, key);
    }

    std::optional<SimLoop::Clock::time_point> pass() {
        if (sync()) loop_.wake();
        return std::nullopt;
    }

    /// A write that may lose a race with another writer: the next pass sees the new state.
    template <class F>
    bool attempt(F&& f) {
        try {
            f();
            return true;
        } catch (const StoreError& e) {
            if (e.code() == 409 || e.code() == 404) return true;  // changed under us: look again
            throw;
        }
    }

    bool set_pv_phase(const api::PersistentVolume& pv, const std::string& phase) {
        return attempt([&] {
            json::value patch = json::object{
                {"metadata", json::object{{"resourceVersion", pv.metadata.resourceVersion}}},
                {"status", json::object{{"phase", phase}}}};
            store_.patch(pvs_id, "", pv.metadata.name, client::PatchType::Merge, patch, "status");
        });
    }

    bool set_claim_phase(const api::PersistentVolumeClaim& pvc, const std::string& phase) {
        return attempt([&] {
            json::value patch = json::object{
                {"metadata", json::object{{"resourceVersion", pvc.metadata.resourceVersion}}},
                {"status", json::object{{"phase", phase}}}};
            store_.patch(pvcs_id, pvc.metadata.namespace_, pvc.metadata.name, client::PatchType::Merge, patch, "status");
        });
    }

    bool delete_pv(const api::PersistentVolume& pv) {
        return attempt([&] {
            StoreDeleteOptions opts;
            opts.precondition_resource_version = pv.metadata.resourceVersion;
            store_.remove(pvs_id, "", pv.metadata.name, opts);
        });
    }

    bool set_claim_ref(const api::PersistentVolume& pv, const api::PersistentVolumeClaim& pvc) {
        return attempt([&] {
            json::value patch = json::object{
                {"metadata", json::object{{"resourceVersion", pv.metadata.resourceVersion},
                                          {"annotations", json::object{{"pv.kubernetes.io/bound-by-controller", "yes"}}}}},
                {"spec", json::object{{"claimRef", claim_ref_for(pvc)}}}};
            store_.patch(pvs_id, "", pv.metadata.name, client::PatchType::Merge, patch);
        });
    }

    bool set_claim_volume(const api::PersistentVolumeClaim& pvc, const std::string& volume) {
        return attempt([&] {
            json::value patch = json::object{
                {"metadata", json::object{{"resourceVersion", pvc.metadata.resourceVersion},
                                          {"annotations", json::object{{"pv.kubernetes.io/bind-completed", "yes"},
                                                                       {"pv.kubernetes.io/bound-by-controller", "yes"}}}}},
                {"spec", json::object{{"volumeName", volume}}}};
            store_.patch(pvcs_id, pvc.metadata.namespace_, pvc.metadata.name, client::PatchType::Merge, patch);
        });
    }

    /// Runs `emit` once per claim and reason (kube-controller-manager repeats them at each
    /// resync; once is what a reader of `kubectl describe` needs).
    template <class F>
    void once(const api::PersistentVolumeClaim& pvc, const std::string& reason, F&& emit) {
        if (emitted_.insert(pvc.metadata.uid + "/" + reason).second) emit();
    }

    /// An external provisioner's claim: annotated with its name (both spellings, as 1.32
    /// still writes the beta one), with an ExternalProvisioning event; the provisioner then
    /// creates a PV pre-bound to the claim, which the PV loop binds.
    bool hand_to_provisioner(const api::PersistentVolumeClaim& pvc, const std::string& provisioner) {
        once(pvc, "ExternalProvisioning", [&] {
            events_.emit(api::to_json(pvc), "Normal", "ExternalProvisioning",
                         "Waiting for a volume to be created either by the external provisioner '" + provisioner +
                             "' or manually by the system administrator. If volume creation is delayed, please verify "
                             "that your external provisioner is running and correctly registered.");
        });
        auto has = [&](const char* key) {
            auto it = pvc.metadata.annotations.find(key);
            return it != pvc.metadata.annotations.end() && it->second == provisioner;
        };
        if (has(storage_provisioner_annotation) && has(beta_storage_provisioner_annotation)) return false;
        return attempt([&] {
            json::value patch = json::object{
                {"metadata", json::object{{"resourceVersion", pvc.metadata.resourceVersion},
                                          {"annotations", json::object{{storage_provisioner_annotation, provisioner},
                                                                       {beta_storage_provisioner_annotation, provisioner}}}}}};
            store_.patch(pvcs_id, pvc.metadata.namespace_, pvc.metadata.name, client::PatchType::Merge, patch);
        });
    }

    bool set_claim_bound(const api::PersistentVolumeClaim& pvc, const api::PersistentVolume& pv) {
        if (pvc.status && pvc.status->phase == "Bound" && pvc.status->accessModes == pv.spec.accessModes &&
            pvc.status->capacity == pv.spec.capacity)
            return false;  // the usual case, checked before building anything
        json::object status{{"phase", "Bound"}, {"accessModes", api::to_json(pv.spec.accessModes)},
                            {"capacity", api::to_json(pv.spec.capacity)}};
        return attempt([&] {
            json::value patch = json::object{
                {"metadata", json::object{{"resourceVersion", pvc.metadata.resourceVersion}}},
                {"status", status}};
            store_.patch(pvcs_id, pvc.metadata.namespace_, pvc.metadata.name, client::PatchType::Merge, patch, "status");
        });
    }

    ObjectStore& store_;
    EventEmitter events_;
    std::mutex feed_mu_;
    std::vector<FeedItem> feed_;  // PV and claim changes not yet applied to the mirrors
    std::size_t listener_ = 0;
    Mirror<api::PersistentVolume> pvs_;
    Mirror<api::PersistentVolumeClaim> pvcs_;
    std::set<std::string> emitted_;  // "claim uid/reason" of the events emitted once
    bool classes_changed_ = false;   // under feed_mu_: a StorageClass changed since the last pass
    bool all_dirty_ = true;          // look at everything at the next pass
    std::set<std::string> dirty_pvs_, dirty_claims_;  // to look at in the next pass
    std::set<std::string> unbound_;  // claims waiting for a volume
    SimLoop loop_;
};

} // namespace vck::sandbox
