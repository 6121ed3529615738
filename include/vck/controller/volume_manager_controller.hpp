// VolumeManager controller wiring: registers the informers VCK reads (VolumeManagers, pods,
// PVs, PVCs, nodes, and optionally Secrets and storage classes), the sub-resource indexes,
// and a Controller running VolumeManagerReconciler in a Manager. Guarantees: a pod or claim
// event enqueues its controlling VolumeManager (owner reference); a PV event enqueues the
// VolumeManager named by its owner annotation; a Secret event enqueues the VolumeManagers
// of its namespace; VolumeManager updates that change only status are skipped.
// What it caches, it keeps small (a real cluster holds far more than VCK made), unless
// ControllerOptions::slim_caches is off: of pods, PVs and claims only those carrying the
// volume label (every sub-resource VCK makes does); Secrets with their key names but no
// values (handlers check that a key exists, and pods read the value through secretKeyRef);
// nodes without the status fields no handler reads (the image list, volumes in use);
// VolumeManagers, pods, PVs and claims compressed (StoreOptions::compressed).
// managedFields are dropped from everything either way.
// A VolumeManager that cannot be decoded (a field of the wrong type, left by an older CRD) is
// skipped while every other one is reconciled; it gets a Warning event DecodeFailed naming
// the field, and a log line.
#pragma once

#include <vck/controller/volume_manager_reconciler.hpp>
#include <vck/runtime/decode_failure_events.hpp>
#include <vck/runtime/manager.hpp>

#include <memory>
#include <string>
#include <type_traits>

namespace vck::controller {

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
};

/// Passes a VolumeManager change unless it touched only status (or nothing at all):
/// spec changes move generation; deletion, finalizer and label changes are metadata.
inline runtime::Predicate<api::VolumeManager> spec_or_lifecycle_changed() {
    return [](const runtime::Delta<api::VolumeManager>& d) {
        if (d.type != runtime::ChangeType::Modified || !d.old) return true;
        const auto& a = d.old->metadata;
        const auto& b = d.object->metadata;
        return a.generation != b.generation || a.deletionTimestamp != b.deletionTimestamp ||
               a.finalizers != b.finalizers || a.labels != b.labels;
    };
}

/// The cached form of a Secret: its key names, no values (nor managedFields).
inline void secret_keys_only(api::Secret& s) {
    runtime::StripManagedFields<api::Secret>{}(s);
    for (auto& kv : s.data) kv.second.clear();
    for (auto& kv : s.stringData) kv.second.clear();
}

/// The cached form of a Node: status keeps capacity, allocatable, conditions, addresses and
/// nodeInfo; the rest of it (images, often tens of KB per node, volumesInUse, ...) goes, as
/// do managedFields.
inline void slim_node(api::Node& n) {
    runtime::StripManagedFields<api::Node>{}(n);
    if (n.status) n.status->unknown.clear();
}

struct VolumeManagerController {
    std::shared_ptr<VolumeManagerReconciler> reconciler;
    std::shared_ptr<runtime::Controller<api::VolumeManager>> controller;
    Caches caches;
};

/// Builds the controller into `m` (call before m.run()).
inline VolumeManagerController add_volume_manager_controller(runtime::Manager& m, handlers::HandlerRegistry registry,
                                                             ControllerOptions o = {}) {
    auto& f = m.informers();
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
    install_indexes(c);
    // VCK never reads managedFields; on a real cluster they are often the largest part of
    // every cached object (set here, before the manager starts the informers).
    auto strip = [](auto& informer) {
        using T = typename std::remove_cvref_t<decltype(*informer)>::Object;
        if (informer) informer->set_transform(runtime::strip_managed_fields<T>());  // null without RBAC for it
    };
    strip(c.volume_managers);
    strip(c.pods);
    strip(c.persistent_volumes);
    strip(c.claims);
    strip(c.storage_classes);
    if (o.slim_caches) {
        c.nodes->set_transform(slim_node);
        if (c.secrets) c.secrets->set_transform(secret_keys_only);
    } else {
        strip(c.nodes);
        strip(c.secrets);
    }

    runtime::EventRecorderOptions eo;
    eo.component = "vck-controller";
    auto events = std::make_shared<runtime::EventRecorder>(m.client(), eo);
    c.volume_managers->add_handler(runtime::decode_failure_events<api::VolumeManager>(events, m.client().executor()));
    auto r = std::make_shared<VolumeManagerReconciler>(m.client(), c, std::move(registry), o.reconciler, events);

    auto vms = c.volume_managers;
    auto builder = m.controller_for<api::VolumeManager>("volumemanager");
    builder.owns<api::Pod>()
        .owns<api::PersistentVolumeClaim>()
        .watches<api::PersistentVolume>([](const api::PersistentVolume& pv) { return owner_requests(pv); })
        .with_predicate(spec_or_lifecycle_changed())
        .workers(o.workers);
    if (o.watch_secrets)
        builder.watches<api::Secret>([vms](const api::Secret& s) {
            std::vector<runtime::Request> out;
            for (const auto& k : vms->store().keys_by_index(runtime::namespace_index, s.metadata.namespace_))
                out.push_back(k);
            return out;
        });
    auto ctl = builder.complete(r);
    m.add(ctl);
    return VolumeManagerController{r, ctl, c};
}

} // namespace vck::controller
