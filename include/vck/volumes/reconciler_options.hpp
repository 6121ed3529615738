// Caches and ReconcilerOptions: what VolumeManagerReconciler (volume_manager_reconciler.hpp)
// is built from: the informer caches it reads (never the API server, for reads) and its
// tunables, with the defaults vck-controller runs with.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/storage_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/data_handler.hpp>
#include <vck/runtime/informer.hpp>
#include <vck/volumes/copy_planner.hpp>
#include <vck/volumes/node_disk_ledger.hpp>
#include <vck/volumes/source_refresh.hpp>

#include <chrono>
#include <cstdint>
#include <memory>

namespace vck::volumes {

/// The caches the reconciler reads. Secrets and storage classes may be null (no RBAC for
/// them): the Secret check is then left to the pod, and storage classes are always created.
struct Caches {
    std::shared_ptr<runtime::Informer<api::VolumeManager>> volume_managers;
    std::shared_ptr<runtime::Informer<api::Pod>> pods;
    std::shared_ptr<runtime::Informer<api::PersistentVolume>> persistent_volumes;
    std::shared_ptr<runtime::Informer<api::PersistentVolumeClaim>> claims;
    std::shared_ptr<runtime::Informer<api::Node>> nodes;
    std::shared_ptr<runtime::Informer<api::Secret>> secrets;
    std::shared_ptr<runtime::Informer<api::StorageClass>> storage_classes;
    /// Pods that name a VolumeManager (pod injection): their gates are lifted here. Optional.
    std::shared_ptr<runtime::Informer<api::Pod>> injected_pods;
    /// The bytes of the copies on each node, fed from the VolumeManager cache
    /// (node_disk_ledger.hpp). Optional: without it placement does not look at disks.
    std::shared_ptr<NodeDiskLedger> disk;
};

struct ReconcilerOptions {
    ReconcilerOptions() {}
    handlers::HandlerOptions handler;
    /// How soon a VolumeManager still in progress is looked at again without any event
    /// (download timeouts are noticed this way too).
    std::chrono::milliseconds pending_recheck{5'000};
    /// How soon cleanup is looked at again while cleanup pods run.
    std::chrono::milliseconds cleanup_recheck{2'000};
    /// For how long after this controller created a VolumeManager's objects a Pending status
    /// is not written: objects that bind or finish within it (an NFS claim binding to its
    /// pre-bound volume) go straight to Running, one status write instead of two.
    std::chrono::milliseconds pending_grace{2'000};
    /// Lines of a failed pod's log quoted in the volume's message.
    std::int64_t log_tail_lines = 10;
    /// Placement, node loss and retries of the copies of downloading handlers.
    CopyPlannerOptions copies;
    /// The shortest options.refreshInterval honoured (a shorter one counts as this), and how
    /// a refresh lists a source (volumes/source_refresh.hpp; null: nothing is refreshed;
    /// vck-controller passes volumes/s3_source_listing.hpp's list_s3_source).
    std::chrono::milliseconds min_refresh_interval{60'000};
    SourceLister list_source;
    /// How often a VolumeManager's running downloads are asked for their progress (their log
    /// tails read, then the status written if it moved); zero: never while they run (the
    /// totals still land when they finish). handlers::HandlerOptions::progress_interval is
    /// how often vck-fetch prints, and should be no longer.
    std::chrono::milliseconds progress_interval{10'000};
    /// Backoff after the API server refused to create a sub-resource (400, 403, 404, 422):
    /// doubled per refusal in a row, from `refusal_backoff` up to `refusal_backoff_cap`.
    std::chrono::milliseconds refusal_backoff{1'000};
    std::chrono::milliseconds refusal_backoff_cap{300'000};
};

} // namespace vck::volumes
