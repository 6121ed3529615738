// StorageProtectionController: kube-controller-manager's pvc-protection and pv-protection
// controllers, the other half of the admission plugin StorageObjectInUseProtection
// (storage_protection_admission.hpp), so that a claim or a volume still in use is never
// removed under a pod. A claim being deleted keeps its finalizer while a pod of its namespace
// that is scheduled (has a nodeName) names it in a persistentVolumeClaim volume, whatever the
// pod's phase (a finished pod holds it until the pod is deleted), or is the not-shut-down
// owner of it as the claim of an ephemeral volume (`<pod>-<volume>`); then the finalizer goes,
// and the claim with it. A volume being deleted keeps its finalizer while it is Bound. An
// object not being deleted that lacks its finalizer gets it (as one made before the plugin).
// Each change is an update carrying the object's resourceVersion: a concurrent change is never
// overwritten; the next pass looks again.
// Cost: work per change, not per object. Started, it follows the store's change feed: a pass
// looks only at the claims and volumes that changed, and at the claims a changed pod stopped
// holding; which pods hold which claim is an index kept from the same feed (listed once, at
// the first pass). Not started (tests calling pass() by hand), each pass lists everything.
#pragma once

#include <vck/sandbox/storage/object_store.hpp>
#include <vck/sandbox/cluster/change_feed.hpp>
#include <vck/sandbox/cluster/sim_loop.hpp>
#include <vck/sandbox/admission/storage_protection_admission.hpp>
#include <vck/sandbox/cluster/workload_pods.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vck::sandbox {

class StorageProtectionController {
public:
    explicit StorageProtectionController(ObjectStore& store)
        : store_(store), loop_(store, "storage-protection",
                               [](const StoreChange& c) {
                                   return c.group.empty() && (c.resource == "pods" || c.resource == "persistentvolumeclaims" ||
                                                              c.resource == "persistentvolumes");
                               },
                               [this] { return pass(); }) {}
    ~StorageProtectionController() { stop(); }
    StorageProtectionController(const StorageProtectionController&) = delete;
    StorageProtectionController& operator=(const StorageProtectionController&) = delete;

    void start() {
        feed_.start();  // before the first pass lists, so no change falls between the two
        loop_.start();
    }
    void stop() {
        loop_.stop();
        feed_.stop();
        loaded_ = false;  // changes from now on go unseen: a restart lists afresh
    }

    /// One pass (what the loop runs; tests may call it directly): over what changed since the
    /// last one when started, else over every claim and volume. Returns when to look again at
    /// objects whose write failed.
    std::optional<SimLoop::Clock::time_point> pass() {
        if (!feed_.started()) loaded_ = false;
        if (!loaded_) load();
        else take_feed();
        auto claims = std::exchange(dirty_claims_, {});
        auto volumes = std::exchange(dirty_volumes_, {});
        for (const auto& [ns, name] : claims)
            if (auto c = get(pvcs_id, ns, name)) sync_claim(*c);
        for (const auto& name : volumes)
            if (auto v = get(pvs_id, "", name)) sync_volume(*v);
        if (dirty_claims_.empty() && dirty_volumes_.empty()) return std::nullopt;
        return SimLoop::Clock::now() + std::chrono::seconds(1);  // failed writes: again soon
    }

private:
    using Json = boost::json::value;
    using JsonArray = boost::json::array;
    using Key = std::pair<std::string, std::string>;  // namespace, name

    /// A claim a pod names: plainly, or as its ephemeral volume's (held only while the pod is
    /// not shut down, and only by the pod that owns the claim).
    struct Hold {
        std::string claim;
        std::string pod_uid;  // set for an ephemeral volume's claim
        bool operator<(const Hold& o) const { return std::tie(claim, pod_uid) < std::tie(o.claim, o.pod_uid); }
    };
    struct PodHolds {
        std::int64_t rv = 0;
        std::set<Hold> holds;
    };
    std::optional<Json> get(const ResourceId& id, const std::string& ns, const std::string& name) {
        try {
            return store_.get(id, ns, name);
        } catch (const StoreError&) {
            return std::nullopt;  // gone: nothing to protect
        }
    }

    static std::int64_t rv_of(const Json& obj) {
        auto rv = workload_pods::meta(obj, "resourceVersion");
        return rv.empty() ? 0 : std::stoll(rv);
    }

    /// Everything afresh: the pod index from a list of pods, every claim and volume to look at.
    void load() {
        feed_.clear();  // the lists below are at least as new
        pods_.clear();
        holders_.clear();
        // (Each list held in a variable: a range over a temporary's member would outlive it.)
        const auto pods = store_.list(pods_id, "");
        for (const auto& p : pods.at("items").as_array())
            set_holds(Key{workload_pods::meta(p, "namespace"), workload_pods::meta(p, "name")}, rv_of(p), holds_of(p));
        const auto claims = store_.list(pvcs_id, "");
        for (const auto& c : claims.at("items").as_array())
            dirty_claims_.emplace(workload_pods::meta(c, "namespace"), workload_pods::meta(c, "name"));
        const auto volumes = store_.list(pvs_id, "");
        for (const auto& v : volumes.at("items").as_array())
            dirty_volumes_.insert(workload_pods::meta(v, "name"));
        loaded_ = true;
    }

    /// The changes since the last pass: claims and volumes to look at, pods' holds updated.
    void take_feed() {
        for (const auto& c : feed_.take()) {
            if (c.resource == "persistentvolumeclaims") dirty_claims_.emplace(c.namespace_, c.name);
            else if (c.resource == "persistentvolumes") dirty_volumes_.insert(c.name);
            else set_holds(Key{c.namespace_, c.name}, c.rv, c.type == "DELETED" ? std::set<Hold>{} : holds_of(*c.object));
        }
    }

    /// Records what pod `key` holds as of `rv`; a claim it no longer holds is looked at again.
    void set_holds(const Key& key, std::int64_t rv, std::set<Hold> holds) {
        auto& entry = pods_[key];
        if (entry.rv > rv) return;  // an older state than the one known
        for (const auto& h : entry.holds) {
            if (holds.contains(h)) continue;
            Key claim{key.first, h.claim};
            if (auto it = holders_.find(claim); it != holders_.end()) {
                it->second.erase({key.second, h.pod_uid});
                if (it->second.empty()) holders_.erase(it);
            }
            dirty_claims_.insert(claim);
        }
        for (const auto& h : holds) holders_[Key{key.first, h.claim}].insert({key.second, h.pod_uid});
        entry.rv = rv;
        entry.holds = std::move(holds);
        if (entry.holds.empty()) pods_.erase(key);
    }

    /// The claims `pod` holds (pvc-protection's podUsesPVC): none before it is scheduled.
    static std::set<Hold> holds_of(const Json& pod) {
        std::set<Hold> out;
        const auto* spec = workload_pods::at(&pod, "spec");
        if (workload_pods::str(spec, "nodeName").empty()) return out;  // kubelet never starts it with a deleted claim
        const auto* vols = workload_pods::at(spec, "volumes");
        if (!vols || !vols->is_array()) return out;
        for (const auto& v : vols->get_array()) {
            if (const auto* pvc = workload_pods::at(&v, "persistentVolumeClaim"))
                out.insert({workload_pods::str(pvc, "claimName"), ""});
            else if (workload_pods::at(&v, "ephemeral") && !shut_down(pod))
                out.insert({workload_pods::meta(pod, "name") + "-" + workload_pods::str(&v, "name"), workload_pods::meta(pod, "uid")});
        }
        return out;
    }

    bool in_use(const Json& claim) const {
        auto it = holders_.find(Key{workload_pods::meta(claim, "namespace"), workload_pods::meta(claim, "name")});
        if (it == holders_.end()) return false;
        for (const auto& [pod, uid] : it->second)
            if (uid.empty() || owned_by(claim, uid)) return true;
        return false;
    }

    void sync_claim(const Json& c) {
        namespace d = storage_protection_detail;
        if (!deleting(c)) {
            if (!d::has_finalizer(c, pvc_protection_finalizer)) change_finalizer(pvcs_id, c, pvc_protection_finalizer, true);
            return;
        }
        if (d::has_finalizer(c, pvc_protection_finalizer) && !in_use(c))
            change_finalizer(pvcs_id, c, pvc_protection_finalizer, false);
    }

    void sync_volume(const Json& v) {
        namespace d = storage_protection_detail;
        if (!deleting(v)) {
            if (!d::has_finalizer(v, pv_protection_finalizer)) change_finalizer(pvs_id, v, pv_protection_finalizer, true);
            return;
        }
        if (d::has_finalizer(v, pv_protection_finalizer) && workload_pods::str(workload_pods::at(&v, "status"), "phase") != "Bound")
            change_finalizer(pvs_id, v, pv_protection_finalizer, false);
    }
    static inline const ResourceId pods_id{"", "v1", "pods"};
    static inline const ResourceId pvcs_id{"", "v1", "persistentvolumeclaims"};
    static inline const ResourceId pvs_id{"", "v1", "persistentvolumes"};

    static bool deleting(const Json& obj) { return !workload_pods::meta(obj, "deletionTimestamp").empty(); }

    /// Kubelet is done with the pod, or it was force-deleted: being deleted with a grace period of 0.
    static bool shut_down(const Json& pod) {
        if (!deleting(pod)) return false;
        const auto* g = workload_pods::at(workload_pods::at(&pod, "metadata"), "deletionGracePeriodSeconds");
        return g && g->is_number() && g->to_number<double>() == 0;
    }

    /// The controller owner reference of `claim` names the pod of `pod_uid` (ephemeral.VolumeIsForPod).
    static bool owned_by(const Json& claim, const std::string& pod_uid) {
        const auto* refs = workload_pods::at(workload_pods::at(&claim, "metadata"), "ownerReferences");
        if (!refs || !refs->is_array()) return false;
        for (const auto& r : refs->get_array()) {
            const auto* ctl = workload_pods::at(&r, "controller");
            if (ctl && ctl->is_bool() && ctl->get_bool()) return workload_pods::str(&r, "uid") == pod_uid;
        }
        return false;
    }

    void change_finalizer(const ResourceId& id, const Json& obj, std::string_view f, bool add) {
        Json next = obj;
        auto& md = next.get_object()["metadata"].get_object();
        if (add) {
            storage_protection_detail::add_finalizer(next, f);
        } else if (auto* fins = md.if_contains("finalizers"); fins && fins->is_array()) {
            auto& a = fins->get_array();
            a.erase(std::remove_if(a.begin(), a.end(), [&](const Json& v) { return v.is_string() && v.get_string() == f; }),
                    a.end());
        }
        try {
            store_.update(id, workload_pods::meta(obj, "namespace"), workload_pods::meta(obj, "name"), std::move(next));
        } catch (const StoreError& e) {
            // Changed meanwhile (the body carries its resourceVersion): that change brings it back
            // through the feed; anything else is tried again soon. Gone: nothing to do.
            if (e.code() != 404 && e.code() != 409) {
                if (id.resource == "persistentvolumes") dirty_volumes_.insert(workload_pods::meta(obj, "name"));
                else dirty_claims_.emplace(workload_pods::meta(obj, "namespace"), workload_pods::meta(obj, "name"));
            }
        }
    }

    ObjectStore& store_;
    ChangeFeed feed_{store_, [](const StoreChange& c) {
        return c.group.empty() &&
               (c.resource == "pods" || c.resource == "persistentvolumeclaims" || c.resource == "persistentvolumes");
    }};
    bool loaded_ = false;
    std::map<Key, PodHolds> pods_;                              // pod -> the claims it holds
    std::map<Key, std::set<std::pair<std::string, std::string>>> holders_;  // claim -> (pod name, uid if ephemeral)
    std::set<Key> dirty_claims_;
    std::set<std::string> dirty_volumes_;
    SimLoop loop_;
};

} // namespace vck::sandbox
