// VolumeManager (vck.intelai.org/v1alpha1): a namespaced request for datasets on nodes. The
// spec lists volume configs (one data source each); the status reports per volume where the
// data is (hostPath + node affinity, or a claim). Guarantees: field names and meanings are the
// original VCK's, so its manifests still decode; status adds observedGeneration and a Ready
// condition. Unsupported older spellings (`spec.volumes`, a volume's `sourceURL` field) are not
// modelled: the CRD prunes them (a spec with `volumes` and no `volumeConfigs` is refused), and
// without the CRD's schema they land in `unknown`. What a spec must satisfy beyond its shape is
// handlers/spec_validation.hpp's.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/json.hpp>
#include <vck/api/meta.hpp>
#include <vck/api/resource.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vck::api {

/// One data source of a VolumeManager, identified by `id` (unique within the VolumeManager).
struct VolumeConfig {
    std::string id;
    // Absent means 1, for every type: NFS and Local never needed it (their count is the
    // cluster's), and the original's manifests omit it there.
    std::int64_t replicas = 1;
    std::string sourceType;  // S3, S3-Dev, S3-Output, NFS, Pachyderm, Local, or a user handler's type
    std::string accessMode;  // ReadWriteOnce, ReadOnlyMany, ReadWriteMany
    std::string capacity;    // quantity, e.g. "5Gi"
    Labels labels;
    StringMap options;
    std::optional<NodeAffinity> nodeAffinity;
    std::vector<Toleration> tolerations;
    json::object unknown;

    /// The option's value, or "" when it is not set.
    const std::string& option(const std::string& key) const {
        static const std::string none;
        auto it = options.find(key);
        return it == options.end() ? none : it->second;
    }
    bool has_option(const std::string& key) const { return options.contains(key); }
};
BOOST_DESCRIBE_STRUCT(VolumeConfig, (),
    (id, replicas, sourceType, accessMode, capacity, labels, options, nodeAffinity, tolerations))

/// The states of a VolumeManager, desired (spec.state) and observed (status.state). On the
/// wire a state is its name; the fields stay strings so that a spec.state outside these still
/// decodes and is reported (handlers/spec_validation.hpp) rather than failing the object.
enum class VolumeManagerState { Pending, Running, Failed, Completed };

inline constexpr std::string_view to_string(VolumeManagerState s) {
    switch (s) {
        case VolumeManagerState::Pending: return "Pending";
        case VolumeManagerState::Running: return "Running";
        case VolumeManagerState::Failed: return "Failed";
        case VolumeManagerState::Completed: return "Completed";
    }
    return "Pending";
}

/// The state `name` spells (exactly, as on the wire), or nullopt: empty (unset) or unknown.
inline constexpr std::optional<VolumeManagerState> parse_volume_manager_state(std::string_view name) {
    for (auto s : {VolumeManagerState::Pending, VolumeManagerState::Running, VolumeManagerState::Failed,
                   VolumeManagerState::Completed})
        if (name == to_string(s)) return s;
    return std::nullopt;
}

struct VolumeManagerSpec {
    std::vector<VolumeConfig> volumeConfigs;
    std::string state;  // desired: a VolumeManagerState, or empty
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(VolumeManagerSpec, (), (volumeConfigs, state))

/// Where one volume's data is, or why it is not there yet. `message` is "success" when ready.
struct VolumeStatus {
    std::string id;
    std::optional<VolumeSource> volumeSource;
    std::optional<NodeAffinity> nodeAffinity;
    std::string message;
    // Download progress of a copying volume (S3, Pachyderm...): the sums over the copies of
    // its current config, absent until a copy has reported (volumes/copy_progress.hpp).
    std::optional<std::int64_t> filesDone, filesTotal, bytesDone, bytesTotal;
    // An output volume's uploads once spec.state is Completed: the sums over its copies'
    // (volumes/output_upload.hpp).
    std::optional<std::int64_t> filesUploaded, bytesUploaded;
    // With options.firstBatch (volumes/first_batch.hpp): the files (the first prefixFiles in
    // key order) and bytes that are whole on every replica the status selects.
    std::optional<std::int64_t> prefixFiles, prefixBytes;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(VolumeStatus, (), (id, volumeSource, nodeAffinity, message, filesDone, filesTotal, bytesDone, bytesTotal,
                                         filesUploaded, bytesUploaded, prefixFiles, prefixBytes))

/// Bytes a copy's download took from one peer copy (peer fill): the node that copy is on ("" when
/// no pod of the volume had the address any more when the download ended) and the address it
/// was reached at.
struct CopyPeerBytes {
    std::string node;
    std::string address;
    std::int64_t bytes = 0;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(CopyPeerBytes, (), (node, address, bytes))

/// One copy of a volume's data on one node: the durable record the controller keeps of every
/// copy it places (see volumes/copy_planner.hpp). An entry is written before its download
/// pod exists and stays until the copy's directory has been removed from its node, so no
/// crash, pod deletion or spec change loses track of data on a node.
struct CopyRecord {
    std::string volume;         // the volume's id
    std::int64_t replica = 0;   // which replica (distributionStrategy gives replicas different subsets)
    std::string node;
    std::string path;           // the host directory holding it (one per source config)
    std::string config;         // digest of the source config it holds
    std::string phase;          // Downloading, Ready, Failed, Removing, Lost, Uploading (CopyPhase)
    std::int64_t attempts = 0;  // download attempts made, the current one included
    std::string retryAt;        // RFC 3339: the next attempt starts no earlier (after a failure)
    std::string readyAt;        // RFC 3339: when it became Ready
    std::string message;        // why it failed, is waiting, or was lost
    // The download's progress, the whole dataset's (files unchanged since an earlier attempt
    // count as done): read from its pod every few seconds while it runs, exact once Ready.
    // Absent until the download has listed its source.
    std::optional<std::int64_t> filesDone, filesTotal, bytesDone, bytesTotal;
    // An output volume's copy: upload attempts made (the current one included), and what the
    // successful one uploaded (the whole directory's files and bytes).
    std::optional<std::int64_t> uploadAttempts;
    std::optional<std::int64_t> filesUploaded, bytesUploaded;
    // The landed prefix: the first prefixFiles files in key order, whole in place (as its
    // pod reported it); and, with options.firstBatch, when it first reached the first batch
    // (RFC 3339): from then on a Downloading copy is usable (volumes/first_batch.hpp).
    std::optional<std::int64_t> prefixFiles, prefixBytes;
    std::string firstBatchAt;
    // Use by pods (volumes/disk_pressure_eviction.hpp), written only when it flips: `inUse`
    // true while a pod the controller watches mounts the copy on its node (absent otherwise);
    // `lastUsed` (RFC 3339) when that last flipped, or when a pod that mounted it last finished.
    std::optional<bool> inUse;
    std::string lastUsed;
    // A Removing copy: when it became Removing (RFC 3339, milliseconds). Its cleanup pod is
    // named after it, so a cleanup pod left from an earlier removal of the same directory
    // never stands for this one.
    std::string removingAt;
    // Where a finished download's bytes came from (its vck-fetch summary): read from the
    // object store, and taken from the volume's other copies (peer fill). Absent until its
    // download pod has ended.
    std::optional<std::int64_t> bytesFromStore, bytesFromPeers;
    // bytesFromPeers by peer copy, largest first.
    std::vector<CopyPeerBytes> bytesByPeer;
    // The digest of the source listing its finished download copied (s3/listing_digest.hpp):
    // what a refresh compares a new listing with (volumes/source_refresh.hpp).
    std::string sourceDigest;
    // A copy this volume joined rather than made (volumes/shared_copies.hpp): the VolumeManager
    // ("namespace/name") whose Ready copy in the shared directory it joined.
    std::string sharedFrom;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(CopyRecord, (), (volume, replica, node, path, config, phase, attempts, retryAt, readyAt, message,
                                       filesDone, filesTotal, bytesDone, bytesTotal, uploadAttempts, filesUploaded,
                                       bytesUploaded, prefixFiles, prefixBytes, firstBatchAt, inUse, lastUsed,
                                       removingAt, bytesFromStore, bytesFromPeers, bytesByPeer, sourceDigest,
                                       sharedFrom))

/// The phases of a copy (CopyRecord::phase on the wire): what volumes/copy_planner.hpp moves
/// each copy through.
enum class CopyPhase { Downloading, Ready, Failed, Removing, Lost, Uploading };

inline constexpr std::string_view to_string(CopyPhase p) {
    switch (p) {
        case CopyPhase::Downloading: return "Downloading";
        case CopyPhase::Ready: return "Ready";
        case CopyPhase::Failed: return "Failed";
        case CopyPhase::Removing: return "Removing";
        case CopyPhase::Lost: return "Lost";
        case CopyPhase::Uploading: return "Uploading";
    }
    return "Removing";
}

/// The phase a record entry says; an entry whose phase is unreadable (edited by hand) is
/// treated as Removing: its directory is removed rather than trusted or forgotten.
inline CopyPhase copy_phase(const api::CopyRecord& e) {
    for (auto p : {CopyPhase::Downloading, CopyPhase::Ready, CopyPhase::Failed, CopyPhase::Removing, CopyPhase::Lost,
                   CopyPhase::Uploading})
        if (e.phase == to_string(p)) return p;
    return CopyPhase::Removing;
}

/// Whether a job may read the copy: Ready, or Downloading with its first batch landed.
inline bool copy_usable(const api::CopyRecord& e) {
    auto p = copy_phase(e);
    return p == CopyPhase::Ready || (p == CopyPhase::Downloading && !e.firstBatchAt.empty());
}

/// The refreshes of one volume whose copies follow their source (volumes/source_refresh.hpp):
/// its version (each refresh that found the source changed makes the next one, in new
/// directories), when the source was last compared with the copies, and the refresh request
/// (annotation vck.intelai.org/refresh) last answered.
struct SourceRefresh {
    std::string volume;
    std::int64_t version = 0;
    std::string checkedAt;  // RFC 3339
    std::string request;    // the annotation's value it answered
    std::string message;    // why the last check failed; empty when it did not
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(SourceRefresh, (), (volume, version, checkedAt, request, message))

struct VolumeManagerStatus {
    std::string state;    // a VolumeManagerState: Pending, Running, Failed or Completed
    std::string message;  // e.g. "successfully deployed all sub-resources"
    std::vector<VolumeStatus> volumes;
    std::string readyVolumes;  // "x/y", for the Ready printer column
    std::optional<std::int64_t> observedGeneration;
    std::vector<Condition> conditions;  // type Ready, for `kubectl wait --for=condition=Ready`
    std::vector<CopyRecord> copies;     // every copy of data on a node, until it is removed
    std::string progress;  // e.g. "37%": downloads of all copying volumes, for the Progress column
    std::vector<SourceRefresh> refreshes;  // volumes that were refreshed or checked
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(VolumeManagerStatus, (), (state, message, volumes, readyVolumes, observedGeneration, conditions, copies,
                                                progress, refreshes))

struct VolumeManager {
    static constexpr ResourceType resource{"vck.intelai.org", "v1alpha1", "volumemanagers", "VolumeManager", true};
    std::string apiVersion = "vck.intelai.org/v1alpha1";
    std::string kind = "VolumeManager";
    ObjectMeta metadata;
    VolumeManagerSpec spec;
    std::optional<VolumeManagerStatus> status;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(VolumeManager, (), (apiVersion, kind, metadata, spec, status))

} // namespace vck::api
