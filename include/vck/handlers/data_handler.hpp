// DataHandler: what a data source type (S3, NFS, ...) must provide so the VolumeManager
// reconciler can serve it. The contract is pure: a handler never calls the API server; it reads
// the cluster only through the HandlerContext (informer caches) and returns objects and plans.
// Guarantees asked of every handler: validate() words failures as the original VCK did;
// desired() is deterministic (same inputs, same names and specs), so the reconciler creates
// only what is missing; status() and cleanup_objects() depend only on what they observe, so a
// restart at any point converges instead of duplicating work.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/storage_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/data_path.hpp>
#include <vck/handlers/option_values.hpp>
#include <vck/handlers/peer_plan.hpp>

#include <chrono>
#include <concepts>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace vck::handlers {

/// Controller flags that shape sub-resources.
struct HandlerOptions {
    std::string data_mover_image = "vck-fetch:latest";  // --data-mover-image
    // --pachctl-image: /bin/sh and a pachctl 1.x or 2.x on its PATH (see pachyderm_handler.hpp).
    std::string pachctl_image = "pachyderm/pachctl:1.9.8";
    std::vector<std::string> allowed_data_roots = default_allowed_data_roots;  // --allowed-data-roots
    std::string local_storage_class = "vck-local";  // StorageClass of Local volumes
    /// How often a download pod's vck-fetch prints its progress line (--progress-interval),
    /// which the controller reads back (ReconcilerOptions::progress_interval).
    std::chrono::milliseconds progress_interval{5'000};
    /// Whether a volume's replicas fill each other (handlers/peer_fill.hpp; --peer-fill). A
    /// volume can still turn it off with options.peerFill.
    bool peer_fill = true;
    /// Whether volumes of equal source configs share one copy per node (volumes/shared_copies.hpp;
    /// --share-copies). Off unless the controller can prove a joiner's access
    /// (ReconcilerOptions::list_source): vck-controller turns both on.
    bool share_copies = false;
};

/// Whether `vc`'s copies go to the shared directory of their config: sharing is on, and the
/// volume is an S3 dataset that does not write back to its source (resync).
inline bool shares_copies(const api::VolumeConfig& vc, const HandlerOptions& o) {
    if (!o.share_copies || (vc.sourceType != "S3" && vc.sourceType != "S3-Dev")) return false;
    return !(vc.has_option("resync") && parse_go_bool(vc.option("resync")).value_or(false));
}

/// What the reconciler lends a handler: its options and read-only lookups into its caches.
/// Every lookup may be left empty; a handler then behaves as if nothing were found. The VCK
/// controller's caches are slim (ControllerOptions::slim_caches, on by default): a Secret
/// comes with its key names but empty values (a pod reads the value through secretKeyRef),
/// and a node's status without its image list and the other fields not modelled in
/// api::NodeStatus.
struct HandlerContext {
    HandlerOptions options;
    std::function<std::vector<api::Node>()> nodes;
    std::function<std::optional<api::Secret>(const std::string& ns, const std::string& name)> secret;
    /// The last lines of a pod's log (for failure messages); "" when unavailable.
    std::function<std::string(const api::Pod&)> pod_log_tail;

    std::vector<api::Node> list_nodes() const { return nodes ? nodes() : std::vector<api::Node>{}; }
    std::optional<api::Secret> find_secret(const std::string& ns, const std::string& name) const {
        return secret ? secret(ns, name) : std::nullopt;
    }
    std::string log_tail(const api::Pod& p) const { return pod_log_tail ? pod_log_tail(p) : std::string(); }
};

/// One reason a volume's handler refuses it: `field` relative to the volume ("options.sourceURL",
/// "accessMode"; "" when it is about the volume as a whole), `message` in the original's words.
/// A handler may list all its reasons (problems(vc), problems(ctx, vm, vc)) for an admission
/// webhook; validate() is then the first of them.
struct VolumeProblem {
    std::string field;
    std::string message;
    bool operator==(const VolumeProblem&) const = default;
};

/// The first problem's message, or nullopt: validate() from problems().
inline std::optional<std::string> first_problem(const std::vector<VolumeProblem>& problems) {
    if (problems.empty()) return std::nullopt;
    return problems.front().message;
}

/// A label the reconciler keeps on a node while the volume's data is there.
struct NodeLabel {
    std::string node;
    std::string key;
    std::string value;
    bool operator==(const NodeLabel&) const = default;
};

/// Everything a volume should have in the cluster. Namespaced objects are in the
/// VolumeManager's namespace with it as controlling owner; cluster-scoped ones (PVs, storage
/// classes) carry the vckname/vcid labels only, since a namespaced owner cannot own them.
struct DesiredObjects {
    std::vector<api::Pod> pods;
    std::vector<api::PersistentVolume> persistent_volumes;
    std::vector<api::PersistentVolumeClaim> claims;
    std::vector<api::StorageClass> storage_classes;
};

/// The sub-resources of one volume that exist now, from the caches (selected by labels).
struct ObservedObjects {
    std::vector<api::Pod> pods;
    std::vector<api::PersistentVolume> persistent_volumes;
    std::vector<api::PersistentVolumeClaim> claims;
};

enum class VolumePhase { Pending, Ready, Failed };

/// A volume's state as observed: `status.message` is "success" exactly when Ready and not
/// `partial` (a partial volume's message says how much of its data is there).
struct VolumeOutcome {
    VolumePhase phase = VolumePhase::Pending;
    api::VolumeStatus status;
    std::vector<NodeLabel> node_labels;  // to ensure on nodes now holding data
    bool partial = false;  // Ready with its first batch only: the rest still downloads
};

/// How to remove a volume. The reconciler creates `pods` (idempotent: fixed names), deletes
/// the named objects, removes the labels, and repeats until `done`.
struct CleanupPlan {
    std::vector<api::Pod> pods;
    std::vector<std::string> pods_to_delete;  // download pods, in the VolumeManager's namespace
    std::vector<std::string> persistent_volumes_to_delete;
    std::vector<std::string> claims_to_delete;
    std::vector<NodeLabel> node_labels_to_remove;
    bool done = false;
    std::string message;  // why not done yet, or why cleanup failed
};

/// The contract. validate(ctx, vm, vc) adds the checks that need the cluster or the options
/// (allowed data roots, node count, referenced Secrets) to the option checks of validate(vc).
/// status() applies whichever checks still matter for what it observes: download handlers
/// check node count and Secret only while some replica pod is missing, so data already in
/// place is not failed (and cleaned up) because a Secret was rotated or a node went away.
/// A reconciler should therefore gate creation on validate(ctx, ...) but take a volume's
/// outcome from status(), not fail it on validate(ctx, ...) alone.
template <class H>
concept DataHandler = requires(const H& h, const HandlerContext& ctx, const api::VolumeManager& vm,
                               const api::VolumeConfig& vc, const ObservedObjects& observed) {
    { h.validate(vc) } -> std::same_as<std::optional<std::string>>;
    { h.validate(ctx, vm, vc) } -> std::same_as<std::optional<std::string>>;
    { h.desired(ctx, vm, vc) } -> std::same_as<DesiredObjects>;
    { h.status(ctx, vm, vc, observed) } -> std::same_as<VolumeOutcome>;
    { h.cleanup_objects(ctx, vm, vc, observed) } -> std::same_as<CleanupPlan>;
};

/// How the volumes of a copying handler (one that downloads data onto nodes) lie on nodes:
/// `replicas` copies, each on a node of its own, in a directory of their own below
/// `where.path` per source config (`config`, a digest of what the copies hold). The
/// reconciler picks the nodes, keeps the durable record of every copy (api::CopyRecord) and
/// removes copies; the handler only says how one copy's pod looks.
struct CopyLayout {
    std::size_t replicas = 0;
    DataPathCheck where;        // the accepted data path and the allowed root it lies under
    std::string config;         // naming::source_config_digest of the volume
    bool long_running = false;  // ready while Running (resync), instead of when Succeeded
    /// Peer fill (handlers/peer_fill.hpp): per replica, the key of the group it fills with
    /// (replicas downloading the same objects share one); empty: every replica reads the store.
    std::vector<std::string> peer_groups;
};

/// One copy to make: replica `replica` on `node`, into `path` (below the layout's data path).
struct CopyTarget {
    std::size_t replica = 0;
    std::string node;
    std::string path;
    std::string config;
    std::string pod_name;
    PeerPlan peer;  // its part in peer fill (handlers/peer_fill.hpp; none: it reads the store alone)
    /// The directory of a complete older copy of the volume on the same node (another config,
    /// kept until this one is Ready): its unchanged files are copied, not downloaded.
    std::string reuse_from = {};
};

/// A DataHandler whose volumes are copies on nodes. copy_layout() is nullopt for a volume it
/// cannot lay out (validate() says why); copy_pod() is the download pod of one copy, pinned
/// to its node, writing only into its path (download_pods.hpp's copy_download_pod).
template <class H>
concept CopyingHandler = DataHandler<H> && requires(const H& h, const HandlerContext& ctx, const api::VolumeManager& vm,
                                                    const api::VolumeConfig& vc, const CopyTarget& t) {
    { h.copy_layout(ctx, vc) } -> std::same_as<std::optional<CopyLayout>>;
    { h.copy_pod(ctx, vm, vc, t) } -> std::same_as<api::Pod>;
};

/// A failed outcome for a volume, with the message users see in status.volumes[].message.
inline VolumeOutcome failed_volume(const api::VolumeConfig& vc, std::string message) {
    VolumeOutcome out;
    out.phase = VolumePhase::Failed;
    out.status.id = vc.id;
    out.status.message = std::move(message);
    return out;
}

inline VolumeOutcome pending_volume(const api::VolumeConfig& vc, std::string message) {
    VolumeOutcome out;
    out.status.id = vc.id;
    out.status.message = std::move(message);
    return out;
}

} // namespace vck::handlers
