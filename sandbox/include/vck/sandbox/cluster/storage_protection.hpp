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
#pragma once

#include <vck/sandbox/storage/object_store.hpp>
#include <vck/sandbox/cluster/sim_loop.hpp>
#include <vck/sandbox/admission/storage_protection_admission.hpp>
#include <vck/sandbox/cluster/workload_pods.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace vck::sandbox {

class StorageProtectionController {
public:
    explicit StorageProtectionController(ObjectStore& store)
        : store_(store), loop_(store, "storage-protection",
                               [](const Change& c) {
                                   return c.group.empty() && (c.resource == "pods" || c.resource == "persistentvolumeclaims" ||
                                                              c.resource == "persistentvolumes");
                               },
                               [this] {
                                   pass();
                                   return std::nullopt;
                               }) {}
    ~StorageProtectionController() { stop(); }
    StorageProtectionController(const StorageProtectionController&) = delete;
    StorageProtectionController& operator=(const StorageProtectionController&) = delete;

    void start() { loop_.start(); }
    void stop() { loop_.stop(); }

    /// One pass over every claim and volume (what the loop runs; tests may call it directly).
    void pass() {
        namespace d = storage_protection_detail;
        auto claims = store_.list(pvcs_id, "");
        std::optional<Json> pods;  // listed once, when a claim being deleted needs it
        for (const auto& c : claims.at("items").as_array()) {
            if (!deleting(c)) {
                if (!d::has_finalizer(c, pvc_protection_finalizer)) change_finalizer(pvcs_id, c, pvc_protection_finalizer, true);
                continue;
            }
            if (!d::has_finalizer(c, pvc_protection_finalizer)) continue;
            if (!pods) pods = store_.list(pods_id, "");
            if (!in_use(c, pods->at("items").as_array())) change_finalizer(pvcs_id, c, pvc_protection_finalizer, false);
        }
        auto volumes = store_.list(pvs_id, "");
        for (const auto& v : volumes.at("items").as_array()) {
            if (!deleting(v)) {
                if (!d::has_finalizer(v, pv_protection_finalizer)) change_finalizer(pvs_id, v, pv_protection_finalizer, true);
                continue;
            }
            if (d::has_finalizer(v, pv_protection_finalizer) &&
                workload_pods::str(workload_pods::at(&v, "status"), "phase") != "Bound")
                change_finalizer(pvs_id, v, pv_protection_finalizer, false);
        }
    }

private:
    using Json = boost::json::value;
    using JsonArray = boost::json::array;
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

    /// The controller owner reference of `claim` names `pod` (ephemeral.VolumeIsForPod).
    static bool owned_by(const Json& claim, const Json& pod) {
        const auto* refs = workload_pods::at(workload_pods::at(&claim, "metadata"), "ownerReferences");
        if (!refs || !refs->is_array()) return false;
        for (const auto& r : refs->get_array()) {
            const auto* ctl = workload_pods::at(&r, "controller");
            if (ctl && ctl->is_bool() && ctl->get_bool()) return workload_pods::str(&r, "uid") == workload_pods::meta(pod, "uid");
        }
        return false;
    }

    static bool in_use(const Json& claim, const JsonArray& pods) {
        const auto ns = workload_pods::meta(claim, "namespace");
        const auto name = workload_pods::meta(claim, "name");
        for (const auto& p : pods) {
            if (workload_pods::meta(p, "namespace") != ns) continue;
            const auto* spec = workload_pods::at(&p, "spec");
            if (workload_pods::str(spec, "nodeName").empty()) continue;  // kubelet never starts it with a deleted claim
            const auto* vols = workload_pods::at(spec, "volumes");
            if (!vols || !vols->is_array()) continue;
            for (const auto& v : vols->get_array()) {
                if (const auto* pvc = workload_pods::at(&v, "persistentVolumeClaim"); pvc && workload_pods::str(pvc, "claimName") == name)
                    return true;
                if (workload_pods::at(&v, "ephemeral") && !shut_down(p) &&
                    workload_pods::meta(p, "name") + "-" + workload_pods::str(&v, "name") == name && owned_by(claim, p))
                    return true;
            }
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
        } catch (const StoreError&) {
            // Changed or gone meanwhile (the body carries its resourceVersion): the next pass looks again.
        }
    }

    ObjectStore& store_;
    SimLoop loop_;
};

} // namespace vck::sandbox
