// VolumeManager controller wiring: registers the informers VCK reads (VolumeManagers, pods,
// PVs, PVCs, nodes, and optionally Secrets and storage classes), the sub-resource indexes,
// and a Controller running VolumeManagerReconciler in a Manager. Guarantees: a pod or claim
// event enqueues its controlling VolumeManager (owner reference); a PV event enqueues the
// VolumeManager named by its owner annotation; a Secret event enqueues the VolumeManagers
// of its namespace; VolumeManager updates that change only status are skipped. A second
// controller, over nodes, evicts unused copies from nodes under DiskPressure
// (volumes/disk_pressure_evictor.hpp).
// What it caches, it keeps small (a real cluster holds far more than VCK made), unless
// ControllerOptions::slim_caches is off: of pods, PVs and claims only those carrying the
// volume label (every sub-resource VCK makes does); Secrets with their key names but no
// values (handlers check that a key exists, and pods read the value through secretKeyRef);
// nodes without the status fields no handler reads (the image list, volumes in use);
// VolumeManagers, pods, PVs and claims compressed (StoreOptions::compressed).
// managedFields are dropped from everything either way.
// With ControllerOptions::provisioner, a second controller serves claims of StorageClasses
// whose provisioner is vck.intelai.org/data (volumes/claim_provisioner.hpp).
// A VolumeManager that cannot be decoded (a field of the wrong type, left by an older CRD) is
// skipped while every other one is reconciled; it gets a Warning event DecodeFailed naming
// the field, and a log line.
#pragma once

#include <vck/volumes/volume_manager_reconciler.hpp>
#include <vck/volumes/claim_provisioner.hpp>
#include <vck/volumes/data_plane_metrics.hpp>
#include <vck/volumes/disk_pressure_evictor.hpp>
#include <vck/runtime/decode_failure_events.hpp>
#include <vck/runtime/cluster_manager.hpp>

#include <memory>
#include <string>
#include <type_traits>

namespace vck::volumes {

struct ControllerOptions {
    ControllerOptions() {}
    ReconcilerOptions reconciler;
    int workers = 2;
    bool watch_secrets = true;          // needs list/watch on secrets
    bool watch_storage_classes = true;  // needs list/watch on storageclasses
    /// Narrows the Manager's shared caches to what VCK reads: pods, PVs and claims with the
    /// volume label only, Secrets without values, nodes without image lists; and keeps
    /// VolumeManagers, pods, PVs and claims compressed. Every informer of those resources in
    /// the Manager is affected, so turn it off when other controllers in the same Manager need
    /// them whole (or their store reads to share snapshots).
    bool slim_caches = true;
    /// Lifts the scheduling gates of pods that name a VolumeManager (pod injection) once their
    /// data is ready: watches pods labelled vck.intelai.org/volume-manager (an informer of
    /// their own) and needs patch on pods.
    bool pod_gates = true;
    /// Serves claims whose StorageClass names the provisioner vck.intelai.org/data
    /// (volumes/claim_provisioner.hpp): watches every claim (an informer of its own: such claims
    /// carry no VCK label) and needs patch on claims. Needs watch_storage_classes.
    bool provisioner = true;
    /// Evicts unused copies from nodes under DiskPressure (volumes/disk_pressure_evictor.hpp):
    /// needs list on pods (the node's, live) and patch on VolumeManagers' status.
    EvictionOptions eviction;
};

/// Passes a VolumeManager change unless it touched only status (or nothing at all):
/// spec changes move generation; deletion, finalizer and label changes are metadata, and so
/// are the annotations users ask something with (a refresh, discarding output).
inline runtime::Predicate<api::VolumeManager> spec_or_lifecycle_changed() {
    return [](const runtime::Change<api::VolumeManager>& d) {
        if (d.type != runtime::ChangeType::Modified || !d.old) return true;
        const auto& a = d.old->metadata;
        const auto& b = d.object->metadata;
        auto asked = [](const api::ObjectMeta& m, std::string_view key) {
            auto it = m.annotations.find(std::string(key));
            return it == m.annotations.end() ? std::string() : it->second;
        };
        return a.generation != b.generation || a.deletionTimestamp != b.deletionTimestamp ||
               a.finalizers != b.finalizers || a.labels != b.labels ||
               asked(a, refresh_annotation) != asked(b, refresh_annotation) ||
               asked(a, discard_output_annotation) != asked(b, discard_output_annotation);
    };
}

/// spec_or_lifecycle_changed(), or a change of how many volumes are ready or of the state: the
/// pods waiting for a VolumeManager's data are ungated on the pass after its data is ready.
inline runtime::Predicate<api::VolumeManager> spec_lifecycle_or_readiness_changed() {
    return [spec = spec_or_lifecycle_changed()](const runtime::Change<api::VolumeManager>& d) {
        if (spec(d)) return true;
        auto ready = [](const api::VolumeManager& vm) {
            return vm.status ? vm.status->state + " " + vm.status->readyVolumes : std::string();
        };
        return ready(*d.old) != ready(*d.object);
    };
}

/// VolumeManagers by the nodes their copies are on, and those not Running (the ones a node
/// change may unblock: a volume failed or waiting for eligible nodes).
inline constexpr std::string_view copy_node_index = "vck-copy-node";
inline constexpr std::string_view unsettled_index = "vck-unsettled";

/// Whether a node's DiskPressure condition flipped (eviction starts or stops; placement too).
inline bool disk_pressure_changed(const api::Node& a, const api::Node& b) {
    return under_disk_pressure(a) != under_disk_pressure(b);
}

/// Whether a node change can matter to placement or to the copies on it: its labels (other
/// than the data labels VCK sets itself), taints, schedulability, readiness, or DiskPressure.
inline bool node_placement_changed(const api::Node& a, const api::Node& b) {
    auto own = [](const api::Labels& l) {
        api::Labels out;
        for (const auto& [k, v] : l)
            if (!k.starts_with(std::string(handlers::naming::label_domain) + "/")) out[k] = v;
        return out;
    };
    auto ready = [](const api::Node& n) {
        if (n.status)
            for (const auto& c : n.status->conditions)
                if (c.type == "Ready") return c.status;
        return std::string();
    };
    auto taints = [](const api::Node& n) {
        api::NodeSpec only;
        only.taints = n.spec.taints;
        return api::to_json(only);
    };
    return own(a.metadata.labels) != own(b.metadata.labels) || taints(a) != taints(b) ||
           a.spec.unschedulable.value_or(false) != b.spec.unschedulable.value_or(false) || ready(a) != ready(b) ||
           disk_pressure_changed(a, b);
}

/// The cached form of a Secret: its key names, no values.
inline void secret_keys_only(api::Secret& s) {
    for (auto& kv : s.data) kv.second.clear();
    for (auto& kv : s.stringData) kv.second.clear();
}

/// The cached form of a Node: status keeps capacity, allocatable, conditions, addresses and
/// nodeInfo; the rest of it (images, often tens of KB per node, volumesInUse, ...) goes.
inline void slim_node(api::Node& n) {
    if (n.status) n.status->unknown.clear();
}

struct VolumeManagerController {
    std::shared_ptr<VolumeManagerReconciler> reconciler;
    std::shared_ptr<runtime::Controller<api::VolumeManager>> controller;
    Caches caches;
    std::shared_ptr<runtime::Controller<api::PersistentVolumeClaim>> provisioner;  // with ControllerOptions::provisioner
    /// With ControllerOptions::eviction enabled: the per-node eviction under DiskPressure.
    std::shared_ptr<DiskPressureEvictor> evictor;
    std::shared_ptr<runtime::Controller<api::Node>> eviction_controller;
    /// The data-plane series of the manager's /metrics (volumes/data_plane_metrics.hpp).
    std::shared_ptr<DataPlaneMetrics> data_plane_metrics;
};

/// Builds the controller into `m` (call before m.run()).
inline VolumeManagerController add_volume_manager_controller(runtime::ClusterManager& m, handlers::HandlerRegistry registry,
                                                             ControllerOptions o = {}) {
    auto& f = m.informers();
    // VCK never reads managedFields; on a real cluster they are often the largest part of
    // every cached object: its informers drop them before decoding (when this manager has not
    // made them for someone else already, who then decides).
    for (const auto* rt : {&api::VolumeManager::resource, &api::Pod::resource, &api::PersistentVolume::resource,
                           &api::PersistentVolumeClaim::resource, &api::StorageClass::resource, &api::Node::resource,
                           &api::Secret::resource})
        f.configure(*rt, [](runtime::InformerOptions& io) { io.drop_managed_fields = true; });
    // Only VCK's own sub-resources, when this manager has not made these informers for
    // someone else already (sharing an unfiltered one is still correct: reads go through the
    // volume-label index).
    if (o.slim_caches) {
        for (const auto* rt : {&api::Pod::resource, &api::PersistentVolume::resource, &api::PersistentVolumeClaim::resource})
            f.configure(*rt, [](runtime::InformerOptions& io) {
                std::string own(handlers::naming::volume_label);  // "the label exists"
                io.label_selector = io.label_selector.empty() ? own : io.label_selector + "," + own;
            });
        // One VolumeManager's objects are read a few times per reconcile, and kept for its
        // whole life: compressed, they take a tenth of the memory (bench/controller).
        for (const auto* rt : {&api::VolumeManager::resource, &api::Pod::resource, &api::PersistentVolume::resource,
                               &api::PersistentVolumeClaim::resource})
            f.configure(*rt, [](runtime::InformerOptions& io) { io.store.compressed = true; });
    }
    Caches c;
    c.volume_managers = f.informer<api::VolumeManager>();
    c.pods = f.informer<api::Pod>();
    c.persistent_volumes = f.informer<api::PersistentVolume>();
    c.claims = f.informer<api::PersistentVolumeClaim>();
    c.nodes = f.informer<api::Node>();
    if (o.watch_secrets) c.secrets = f.informer<api::Secret>();
    if (o.watch_storage_classes) c.storage_classes = f.informer<api::StorageClass>();
    if (o.pod_gates) c.injected_pods = f.view<api::Pod>(api::Pod::resource, "vck-injected-pods", PodGates::select);
    install_indexes(c);
    // Placement that knows the disk: every VolumeManager change updates the bytes per node.
    c.disk = std::make_shared<NodeDiskLedger>();
    c.volume_managers->add_handler([disk = c.disk](const runtime::Change<api::VolumeManager>& ch) { disk->observe(ch); });
    if (o.slim_caches) {
        c.nodes->set_transform(slim_node);
        if (c.secrets) c.secrets->set_transform(secret_keys_only);
    }

    runtime::EventRecorderOptions eo;
    eo.component = "vck-controller";
    auto events = std::make_shared<runtime::EventRecorder>(m.client(), eo);
    c.volume_managers->add_decode_error_handler(
        runtime::decode_failure_events<api::VolumeManager>(events, m.client().executor()));
    auto r = std::make_shared<VolumeManagerReconciler>(m.client(), c, registry, o.reconciler, events);

    auto vms = c.volume_managers;
    vms->store().add_index(std::string(copy_node_index), [](const api::VolumeManager& vm) {
        std::vector<std::string> out;
        if (vm.status)
            for (const auto& e : vm.status->copies)
                if (std::find(out.begin(), out.end(), e.node) == out.end()) out.push_back(e.node);
        return out;
    });
    vms->store().add_index(std::string(unsettled_index), [](const api::VolumeManager& vm) {
        bool running = vm.status && api::parse_volume_manager_state(vm.status->state) == api::VolumeManagerState::Running;
        return running ? std::vector<std::string>{} : std::vector<std::string>{"true"};
    });
    auto builder = m.controller_for<api::VolumeManager>("volumemanager");
    // The events of the reconciler's own writes (a finalizer added, a status written, a child
    // created) bring no reconcile: the pass that wrote went on from the server's answer.
    auto& own = *r->own_writes();
    builder.owns<api::Pod>(own.not_own<api::Pod>("pods"))
        .owns<api::PersistentVolumeClaim>(own.not_own<api::PersistentVolumeClaim>("persistentvolumeclaims"))
        .watches<api::PersistentVolume>([](const api::PersistentVolume& pv) { return owner_requests(pv); },
                                        own.not_own<api::PersistentVolume>("persistentvolumes"))
        .with_predicate(own.not_own<api::VolumeManager>("volumemanagers"))  // first: it forgets what it drops
        .with_predicate(o.pod_gates ? spec_lifecycle_or_readiness_changed() : spec_or_lifecycle_changed())
        .workers(o.workers);
    if (c.injected_pods)
        builder.watches<api::Pod>(c.injected_pods, [](const api::Pod& p) { return PodGates::request_of(p); });
    builder.watches<api::Node>(
        [vms](const api::Node& n) {
            auto out = vms->store().keys_by_index(copy_node_index, n.metadata.name);
            for (auto& k : vms->store().keys_by_index(unsettled_index, "true")) out.push_back(k);
            return std::vector<runtime::Request>(out.begin(), out.end());
        },
        runtime::update_predicate<api::Node>(node_placement_changed));
    if (o.watch_secrets)
        builder.watches<api::Secret>(
            [vms](const api::Secret& s) {
                std::vector<runtime::Request> out;
                for (const auto& k : vms->store().keys_by_index(runtime::namespace_index, s.metadata.namespace_))
                    out.push_back(k);
                return out;
            },
            own.not_own<api::Secret>("secrets"));
    auto ctl = builder.complete(r);
    m.add(ctl);
    VolumeManagerController out{r, ctl, c, nullptr, nullptr, nullptr, nullptr};
    // Counters count on the replica that writes (the leader): a standby sees the same changes.
    out.data_plane_metrics = std::make_shared<DataPlaneMetrics>(m.metrics(), [&m] { return m.may_write(); });
    vms->add_handler([dp = out.data_plane_metrics](const runtime::Change<api::VolumeManager>& ch) { dp->observe(ch); });
    if (o.eviction.enabled) {
        std::weak_ptr<runtime::Controller<api::VolumeManager>> weak = ctl;
        if (!o.eviction.sole_copy)
            o.eviction.sole_copy = sole_copies([registry](const std::string& type) {
                auto lookup = registry.find(type);
                return lookup.handler && lookup.handler->uploads();
            });
        out.evictor = std::make_shared<DiskPressureEvictor>(
            m.client(), c, events, o.eviction,
            [vms](const std::string& node) { return vms->store().by_index(std::string(copy_node_index), node); },
            [weak](const runtime::Request& req) {
                if (auto s = weak.lock()) s->enqueue(req);
            });
        // A node is looked at when its DiskPressure flips; while it holds, the evictor requeues.
        out.eviction_controller = m.controller_for<api::Node>("disk-pressure-eviction")
                                      .with_predicate(runtime::update_predicate<api::Node>(disk_pressure_changed))
                                      .complete(out.evictor);
    }
    if (o.provisioner && c.storage_classes) {
        ClaimCaches cc;
        cc.claims = f.view<api::PersistentVolumeClaim>(api::PersistentVolumeClaim::resource, "vck-provisioned-claims",
                                                       [](runtime::InformerOptions& io) { io.drop_managed_fields = true; });
        cc.pods = c.pods;
        cc.persistent_volumes = c.persistent_volumes;
        cc.nodes = c.nodes;
        cc.storage_classes = c.storage_classes;
        cc.volume_managers = c.volume_managers;
        cc.secrets = c.secrets;
        ClaimProvisionerOptions po;
        po.handler = o.reconciler.handler;
        po.retries = o.reconciler.copies;
        po.recheck = o.reconciler.cleanup_recheck;
        auto p = std::make_shared<ClaimProvisioner>(m.client(), cc, registry, po, events);
        auto pb = m.controller_for<api::PersistentVolumeClaim>("vck-provisioner");
        pb.primary(cc.claims)
            .watches<api::Pod>([](const api::Pod& pod) { return ClaimProvisioner::request_of_pod(pod); })
            .watches<api::PersistentVolume>([](const api::PersistentVolume& pv) { return ClaimProvisioner::request_of_volume(pv); })
            // A node deleted: the claims whose data was there (the only node event it needs).
            // Weakly: the node informer keeps this mapping, and the provisioner keeps the informer.
            .watches<api::Node>(
                [wp = std::weak_ptr<ClaimProvisioner>(p)](const api::Node& n) {
                    if (auto s = wp.lock()) return s->claims_on(n.metadata.name);
                    return std::vector<runtime::Request>{};
                },
                [](const runtime::Change<api::Node>& ch) { return ch.type == runtime::ChangeType::Deleted; })
            .workers(o.workers);
        out.provisioner = pb.complete(p);
        m.add(out.provisioner);
    }
    return out;
}

} // namespace vck::volumes
