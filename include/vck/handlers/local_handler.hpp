// LocalHandler: sourceType "Local" (the architecture's local-disk goal). Exposes a directory
// that already exists on the nodes (option `path`, under an allowed data root) as one local
// PersistentVolume per node matching the volume's nodeAffinity (all nodes without one), each
// pinned to its node, plus one claim through a WaitForFirstConsumer storage class: the claim
// binds only when a consumer pod is scheduled, so the scheduler puts pods next to the data.
// The data is the user's: cleanup deletes the claim and PVs (the PVs stay, Released, with the
// option reclaimPolicy Retain: handlers/reclaim_policy.hpp), never the directory.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/storage_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/data_handler.hpp>
#include <vck/handlers/data_path.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/handlers/nfs_handler.hpp>
#include <vck/handlers/node_match.hpp>
#include <vck/handlers/reclaim_policy.hpp>
#include <vck/handlers/sub_resource.hpp>

#include <optional>
#include <string>
#include <vector>

namespace vck::handlers {

class LocalHandler {
public:
    /// Every reason the options refuse `vc`, in the original's order and words.
    std::vector<VolumeProblem> problems(const api::VolumeConfig& vc) const {
        std::vector<VolumeProblem> out;
        if (vc.labels.empty()) out.push_back({"labels", "labels cannot be empty"});
        if (!vc.has_option("path")) out.push_back({"options.path", "path has to be set in options"});
        if (vc.accessMode != "ReadWriteOnce" && vc.accessMode != "ReadOnlyMany" && vc.accessMode != "ReadWriteMany")
            out.push_back({"accessMode", "access mode has to be ReadWriteOnce, ReadOnlyMany or ReadWriteMany"});
        if (auto why = reclaim_policy_problem(vc)) out.push_back({"options.reclaimPolicy", *why});
        return out;
    }
    /// problems(vc), then the path against the allowed data roots (when it is set).
    std::vector<VolumeProblem> problems(const HandlerContext& ctx, const api::VolumeManager&,
                                        const api::VolumeConfig& vc) const {
        auto out = problems(vc);
        if (vc.has_option("path"))
            if (auto dp = check_data_path(vc.option("path"), ctx.options.allowed_data_roots); !dp.ok())
                out.push_back({"options.path", dp.error});
        return out;
    }
    std::optional<std::string> validate(const api::VolumeConfig& vc) const { return first_problem(problems(vc)); }
    std::optional<std::string> validate(const HandlerContext& ctx, const api::VolumeManager& vm,
                                        const api::VolumeConfig& vc) const {
        return first_problem(problems(ctx, vm, vc));
    }

    static std::string claim_name(const api::VolumeManager& vm, const api::VolumeConfig& vc) {
        return naming::object_name(vm.metadata.uid, vc.id, "claim");
    }
    static std::string volume_name(const api::VolumeManager& vm, const api::VolumeConfig& vc, const std::string& node) {
        return naming::object_name(vm.metadata.uid, vc.id, "n" + naming::short_hash(node, 8));
    }

    /// The shared storage class: no provisioner, binding delayed until a consumer is scheduled.
    static api::StorageClass storage_class(const HandlerContext& ctx) {
        api::StorageClass sc;
        sc.metadata.name = ctx.options.local_storage_class;
        sc.metadata.labels = {{"app.kubernetes.io/managed-by", "vck"}};
        sc.provisioner = "kubernetes.io/no-provisioner";
        sc.volumeBindingMode = "WaitForFirstConsumer";
        sc.reclaimPolicy = "Retain";
        return sc;
    }

    DesiredObjects desired(const HandlerContext& ctx, const api::VolumeManager& vm, const api::VolumeConfig& vc) const {
        DesiredObjects out;
        auto dp = check_data_path(vc.option("path"), ctx.options.allowed_data_roots);
        if (!dp.ok() || validate(vc)) return out;
        std::string capacity = vc.capacity.empty() ? std::string(default_capacity) : vc.capacity;
        out.storage_classes.push_back(storage_class(ctx));
        for (const auto& node : ctx.list_nodes()) {
            if (!node_matches(node, vc.nodeAffinity)) continue;
            api::PersistentVolume pv;
            pv.metadata = sub_resource_meta(vm, vc, volume_name(vm, vc, node.metadata.name), false);
            pv.spec.capacity = {{"storage", capacity}};
            pv.spec.accessModes = {vc.accessMode};
            pv.spec.persistentVolumeReclaimPolicy = "Retain";
            pv.spec.storageClassName = ctx.options.local_storage_class;
            pv.spec.local = api::LocalVolumeSource{dp.path, ""};
            // Pinned by the hostname label, as local-static-provisioner does: the volume binder
            // matches a PV's node affinity against node labels only (matchFields never match).
            auto host = node.metadata.labels.find(std::string(hostname_label));
            api::NodeSelectorRequirement here{std::string(hostname_label), "In",
                                              {host == node.metadata.labels.end() ? node.metadata.name : host->second}};
            pv.spec.nodeAffinity = api::VolumeNodeAffinity{api::NodeSelector{{api::NodeSelectorTerm{{here}, {}}}}};
            out.persistent_volumes.push_back(std::move(pv));
        }
        api::PersistentVolumeClaim pvc;
        pvc.metadata = sub_resource_meta(vm, vc, claim_name(vm, vc));
        pvc.spec.accessModes = {vc.accessMode};
        pvc.spec.resources.requests = {{"storage", capacity}};
        pvc.spec.storageClassName = ctx.options.local_storage_class;
        pvc.spec.selector = api::LabelSelectorSpec{volume_selector(vm, vc), {}};  // only this volume's PVs
        out.claims.push_back(std::move(pvc));
        return out;
    }

    /// Ready once the claim and at least one PV exist: binding waits for the first consumer.
    VolumeOutcome status(const HandlerContext& ctx, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                         const ObservedObjects& observed) const {
        if (auto e = validate(ctx, vm, vc)) return failed_volume(vc, *e);
        if (desired(ctx, vm, vc).persistent_volumes.empty())
            return failed_volume(vc, "no node matches the nodeAffinity of volume " + vc.id);
        bool claim = false;
        for (const auto& c : observed.claims) claim = claim || c.metadata.name == claim_name(vm, vc);
        if (!claim || observed.persistent_volumes.empty())
            return pending_volume(vc, "waiting for claim " + claim_name(vm, vc) + " and its local volumes");
        VolumeOutcome out;
        out.phase = VolumePhase::Ready;
        out.status.id = vc.id;
        out.status.message = "success";
        api::VolumeSource src;
        src.persistentVolumeClaim = api::PersistentVolumeClaimVolumeSource{claim_name(vm, vc), std::nullopt};
        out.status.volumeSource = std::move(src);
        return out;
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
