// NfsHandler: sourceType "NFS". Exposes an NFS export (options server, path) as a
// PersistentVolume pre-bound to one PersistentVolumeClaim (claimRef on the PV, volumeName on
// the claim, both with no storage class), so no other claim can take it. Status gives the
// claim once bound. The PV is cluster-scoped, so cleanup deletes it explicitly (or, with the
// option reclaimPolicy Retain, leaves it Released: handlers/reclaim_policy.hpp).
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/data_handler.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/handlers/reclaim_policy.hpp>
#include <vck/handlers/sub_resource.hpp>

#include <optional>
#include <string>
#include <vector>

namespace vck::handlers {

inline constexpr std::string_view default_capacity = "5Gi";

class NfsHandler {
public:
    /// Every reason the options refuse `vc`, in the original's order and words.
    std::vector<VolumeProblem> problems(const api::VolumeConfig& vc) const {
        std::vector<VolumeProblem> out;
        if (vc.labels.empty()) out.push_back({"labels", "labels cannot be empty"});
        if (!vc.has_option("server")) out.push_back({"options.server", "server has to be set in options"});
        if (!vc.has_option("path")) out.push_back({"options.path", "path has to be set in options"});
        if (vc.accessMode != "ReadWriteMany" && vc.accessMode != "ReadOnlyMany")
            out.push_back({"accessMode", "access mode has to be either ReadWriteMany or ReadOnlyMany"});
        if (vc.has_option("path") && (vc.option("path").empty() || vc.option("path").front() != '/'))
            out.push_back({"options.path", "path has to be an absolute path"});
        if (auto why = reclaim_policy_problem(vc)) out.push_back({"options.reclaimPolicy", *why});
        return out;
    }
    std::vector<VolumeProblem> problems(const HandlerContext&, const api::VolumeManager&, const api::VolumeConfig& vc) const {
        return problems(vc);
    }
    std::optional<std::string> validate(const api::VolumeConfig& vc) const { return first_problem(problems(vc)); }
    std::optional<std::string> validate(const HandlerContext&, const api::VolumeManager&, const api::VolumeConfig& vc) const {
        return validate(vc);
    }

    static std::string volume_name(const api::VolumeManager& vm, const api::VolumeConfig& vc) {
        return naming::object_name(vm.metadata.uid, vc.id, "pv");
    }
    static std::string claim_name(const api::VolumeManager& vm, const api::VolumeConfig& vc) {
        return naming::object_name(vm.metadata.uid, vc.id, "claim");
    }

    DesiredObjects desired(const HandlerContext&, const api::VolumeManager& vm, const api::VolumeConfig& vc) const {
        DesiredObjects out;
        if (validate(vc)) return out;
        std::string capacity = vc.capacity.empty() ? std::string(default_capacity) : vc.capacity;
        api::PersistentVolume pv;
        pv.metadata = sub_resource_meta(vm, vc, volume_name(vm, vc), false);
        pv.spec.capacity = {{"storage", capacity}};
        pv.spec.accessModes = {vc.accessMode};
        pv.spec.persistentVolumeReclaimPolicy = "Retain";  // VCK deletes it; NFS has no deleter plugin
        pv.spec.nfs = api::NFSVolumeSource{vc.option("server"), vc.option("path"),
                                           vc.accessMode == "ReadOnlyMany" ? std::optional<bool>(true) : std::nullopt};
        api::ObjectReference ref;
        ref.apiVersion = "v1";
        ref.kind = "PersistentVolumeClaim";
        ref.namespace_ = vm.metadata.namespace_;
        ref.name = claim_name(vm, vc);
        pv.spec.claimRef = std::move(ref);
        out.persistent_volumes.push_back(std::move(pv));

        api::PersistentVolumeClaim pvc;
        pvc.metadata = sub_resource_meta(vm, vc, claim_name(vm, vc));
        pvc.spec.accessModes = {vc.accessMode};
        pvc.spec.resources.requests = {{"storage", capacity}};
        pvc.spec.volumeName = volume_name(vm, vc);
        pvc.spec.storageClassName = std::string();  // "": no class, so no default class is injected
        out.claims.push_back(std::move(pvc));
        return out;
    }

    VolumeOutcome status(const HandlerContext&, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                         const ObservedObjects& observed) const {
        if (auto e = validate(vc)) return failed_volume(vc, *e);
        for (const auto& pv : observed.persistent_volumes)
            if (pv.metadata.name == volume_name(vm, vc) && pv.status && pv.status->phase == "Failed")
                return failed_volume(vc, "persistent volume " + pv.metadata.name + " failed: " + pv.status->message);
        for (const auto& c : observed.claims) {
            if (c.metadata.name != claim_name(vm, vc) || !c.status || c.status->phase != "Bound") continue;
            VolumeOutcome out;
            out.phase = VolumePhase::Ready;
            out.status.id = vc.id;
            out.status.message = "success";
            api::VolumeSource src;
            src.persistentVolumeClaim = api::PersistentVolumeClaimVolumeSource{c.metadata.name, std::nullopt};
            out.status.volumeSource = std::move(src);
            return out;
        }
        return pending_volume(vc, "waiting for claim " + claim_name(vm, vc) + " to bind");
    }

    CleanupPlan cleanup_objects(const HandlerContext&, const api::VolumeManager&, const api::VolumeConfig&,
                                const ObservedObjects& observed) const {
        CleanupPlan plan;
        for (const auto& c : observed.claims) plan.claims_to_delete.push_back(c.metadata.name);
        for (const auto& pv : observed.persistent_volumes) plan.persistent_volumes_to_delete.push_back(pv.metadata.name);
        plan.done = plan.claims_to_delete.empty() && plan.persistent_volumes_to_delete.empty();
        return plan;
    }
};

} // namespace vck::handlers
