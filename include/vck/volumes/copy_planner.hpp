// CopyPlanner: what to do next with the copies of one volume whose data a CopyingHandler
// downloads onto nodes. Pure: from the volume's durable record (api::CopyRecord entries, kept
// in the VolumeManager's status), the nodes and the volume's pods as the caches show them,
// it returns the new record, the pods to create or delete, the node label each node should
// carry, and the volume's status. The reconciler writes the record first, then acts, so a
// copy is recorded before it can land and forgotten only after its directory is gone.
// Guarantees (each a test in tests/volumes/copy_planner_test.cpp):
// - Replicas go to distinct eligible nodes: Ready, schedulable, matching the volume's
//   nodeAffinity, with every NoSchedule/NoExecute taint tolerated, and (with `node_used`)
//   with room for the copy: the bytes of the copies there plus the new copy's (its listed
//   size where a copy of the same config listed it, else the volume's `capacity`) within
//   `disk_fill_threshold` of the node's allocatable ephemeral-storage. "replicas [N] greater
//   than number of nodes [M]" counts eligible nodes only, and says on how many nodes the
//   data fits when some lack room, before any download starts.
// - One directory per source config: a changed volume gets new copies in new directories
//   while the status keeps naming the old config's ready copies; the status switches when
//   every replica of the new config is Ready; only then do the old copies go.
//   A new config's download on a node that holds a Ready copy of another config of the
//   volume names that copy (CopyTarget::reuse_from): vck-fetch copies its unchanged files
//   (fetch/local_reuse.hpp), so only new and changed objects are downloaded.
// - A copy leaves the record only when its cleanup pod has removed its directory, or (with
//   the VolumeManager being deleted) when its node no longer exists.
// - A node label `key=config` is wanted only where a Ready copy of that config is, and the
//   status' nodeAffinity selects `key In [serving config]`: at every moment the nodes it
//   selects hold the complete data of the directory it names (with firstBatch: at least its
//   first batch, see below).
// - A node deleted, or NotReady for longer than `node_lost_timeout`, loses its copies
//   (phase Lost) and a replacement is placed elsewhere; when the node is back and Ready,
//   the stale copy is removed.
// - A failed download is retried with capped exponential backoff until
//   `max_download_attempts`, then the copy (and the volume) is Failed. A download that failed
//   on a full disk (ENOSPC) is not retried there: its copy is Removing (a cleanup pod removes
//   its partial data) and the replica is placed on another node, with a warning.
// - A running download's entry carries the counts its pod last reported (`progress`), a
//   Ready one its summary's exact totals; the volume's status sums its current copies'
//   (volumes/copy_progress.hpp).
// - An output volume's Ready copy that must go (spec.state Completed, the VolumeManager
//   deleted, the volume out of the spec) passes through Uploading: an upload pod on its node
//   sends the directory to S3, and only then is it Removing. A failed upload keeps the copy
//   (and so the finalizer) with the reason, retried with the same backoff, without limit,
//   unless the VolumeManager discards its output (volumes/output_upload.hpp).
// - A copy that must go (a changed config, fewer replicas, the volume out of the spec, spec.state
//   Completed, the VolumeManager deleted, an eviction) while a pod that has not finished mounts
//   it (`users`) is kept whole: no cleanup or upload pod starts until every such pod has ended;
//   the entry's message, the volume's message and one `RemovalWaits` event name the pods.
//   Only a node that is gone or NotReady past node_lost_timeout drops it regardless.
// - With options.firstBatch (handlers/first_batch.hpp) a Downloading copy whose reported
//   landed prefix reaches the first batch is marked (`firstBatchAt`) and is usable from then
//   on, like a Ready one: it may be labelled and served, and the volume is Ready (`partial`,
//   the status saying how much) once every replica is usable; `complete` stays for when
//   every replica is Ready. Without the option only Ready copies are usable.
// - Peer fill (a layout with peer_groups, handlers/peer_fill.hpp): each download's target says
//   whether it serves its copy and which ancestors' running pods it pulls from, nearest first.
//   A download waits for its parent's pod while that pod is about to be made, or has had no
//   address for less than peer_parent_wait; a parent that is finished, gone, Ready without a
//   running pod, or waiting for a retry is skipped. A serving pod's copy is Ready when the pod
//   is (Running, its readiness probe passing), and takes its summary's totals when it ends.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/time.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/fetch/landed_prefix.hpp>
#include <vck/handlers/data_handler.hpp>
#include <vck/handlers/download_pods.hpp>
#include <vck/handlers/first_batch.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/handlers/node_match.hpp>
#include <vck/handlers/peer_fill.hpp>
#include <vck/volumes/copy_progress.hpp>
#include <vck/volumes/node_disk_ledger.hpp>
#include <vck/volumes/output_upload.hpp>
#include <vck/volumes/volume_status.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vck::volumes {

// The copy phases and their predicates are the record's vocabulary (api/volume_manager.hpp).
using api::copy_phase;
using api::copy_usable;
using api::CopyPhase;

struct CopyPlannerOptions {
    CopyPlannerOptions() {}
    /// A node NotReady for longer than this loses its copies (--node-lost-timeout).
    std::chrono::seconds node_lost_timeout{300};
    /// Download attempts per copy before it is Failed (--max-download-attempts).
    std::int64_t max_download_attempts = 3;
    /// Backoff between attempts: base * 2^(failures - 1), at most cap.
    std::chrono::seconds retry_base{5};
    std::chrono::seconds retry_cap{300};
    /// Peer fill: how long a download waits for its parent's pod to get an address before it
    /// starts without that parent (handlers/peer_fill.hpp).
    std::chrono::seconds peer_parent_wait{60};
    /// Shared copies: how long a volume waits for the listing digest of another's Ready copy
    /// (a serving peer tells it in a progress line, read once per progress interval; an older
    /// vck-fetch only in its summary, when its pod ends) before it takes that node as busy.
    std::chrono::seconds digest_wait{120};
    /// Placement that knows the disk: a new copy goes to a node only while the copies there,
    /// with it, stay within this share of the node's allocatable ephemeral-storage
    /// (--disk-fill-threshold); a node that reports none is not limited.
    double disk_fill_threshold = 0.9;
};

/// Another VolumeManager's entry in a shared copy's directory (volumes/shared_copies.hpp).
struct SharedHold {
    std::string holder;  // "namespace/name"
    std::string uid;
    api::CopyRecord entry;
};

/// One volume's inputs. `layout` is set when the volume is in the spec and valid; without it
/// every copy of the volume is removed (it left the spec, or everything is being removed).
struct VolumeCopyInput {
    std::string vm_uid;
    std::string volume_id;
    std::string label_key;                      // naming::node_label_key of the volume
    const api::VolumeConfig* config = nullptr;  // the volume's spec, with `layout`
    std::optional<handlers::CopyLayout> layout;
    /// Why no new copy may be placed yet (a missing Secret, ...), or "".
    std::string placement_blocker;
    /// Why the volume in the spec cannot be laid out at all (its options or data path are
    /// refused), or "". Then nothing is placed, the copies already there are kept (a broken
    /// edit does not delete data), and the volume is Failed with this message.
    std::string invalid;
    /// The config the status names now (the value in its nodeAffinity), or "".
    std::string serving;
    /// The bytes of the copies already on a node (volumes/node_disk_ledger.hpp); empty: the
    /// disk is not looked at.
    std::function<std::int64_t(const std::string& node)> node_used;
    std::vector<api::CopyRecord> entries;
    std::map<std::string, const api::Pod*> pods;  // the volume's pods by name
    /// The pods that may mount the volume's copies (those injected with its VolumeManager):
    /// a copy that one of them, not finished, mounts is not removed (nor uploaded and then
    /// removed) until it ends; node loss aside.
    std::vector<const api::Pod*> users;
    /// The last lines of a failed pod's log, when fetched ("" otherwise).
    std::function<std::string(const api::Pod&)> log_tail;
    /// The counts a running download pod last reported (read from its log by the caller,
    /// at its own pace), or nullopt: the entry keeps what it had.
    std::function<std::optional<fetch::TransferCounts>(const api::Pod&)> progress;
    /// Set while the VolumeManager is being deleted: copies on nodes that no longer exist are
    /// forgotten (their data went with the node) instead of waiting for the node.
    bool deleting = false;
    /// An output volume (its copies are uploaded before they go), from its handler; and
    /// whether the VolumeManager gives its output up (discard_output_annotation).
    bool output = false;
    bool discard_output = false;
    /// Shared copies (volumes/shared_copies.hpp): the shared directory of the desired config,
    /// or "" when this volume makes copies of its own only.
    std::string shared_path;
    /// The entries other VolumeManagers have at (node, path) of a shared directory.
    std::function<std::vector<SharedHold>(const std::string& node, const std::string& path)> others;
    /// What this volume's own credentials showed of its source (a join needs the digest of
    /// the copy it joins), when it was listed.
    std::optional<std::string> proven_digest;
    std::string proof_failure;  // why that listing failed, or ""
};

struct CleanupTarget {
    std::string node;
    std::string path;
    std::string pod_name;
};

struct VolumeCopyPlan {
    std::vector<api::CopyRecord> entries;         // the volume's new record
    std::vector<handlers::CopyTarget> downloads;  // download pods to create (if missing)
    std::vector<CleanupTarget> cleanups;          // cleanup pods to create (if missing)
    std::vector<std::string> pods_to_delete;
    /// The label value each existing node should carry under label_key ("" = none).
    std::map<std::string, std::string> labels;
    handlers::VolumeOutcome outcome;
    bool settled = false;  // nothing left to do until something changes
    std::optional<std::chrono::system_clock::time_point> due;  // the next time-driven step
    std::vector<std::string> warnings;  // for Warning events (a copy lost, ...)
    /// The pods whose use holds a copy that would otherwise go (sorted, unique).
    std::vector<std::string> held_by;
    /// The volume's download progress (for status.progress); counts also in outcome.status.
    VolumeProgress progress;
    std::vector<handlers::CopyTarget> uploads;  // upload pods to create (output volumes)
    std::vector<OutputEvent> output_events;
    /// A shared copy could be joined once this volume's own credentials list the source:
    /// the caller lists it (shared_copies.hpp) and plans again with the proof.
    bool needs_proof = false;
};

namespace copy_detail {

inline const api::Condition* ready_condition(const api::Node& n) {
    if (!n.status) return nullptr;
    for (const auto& c : n.status->conditions)
        if (c.type == "Ready") return &c;
    return nullptr;
}

inline bool node_ready(const api::Node& n) {
    const auto* c = ready_condition(n);
    return c && c->status == "True";
}

/// Since when the node has not been Ready; none when it is Ready, or when its Ready condition
/// carries no time to go by (it is never declared lost on a guess).
inline std::optional<std::chrono::system_clock::time_point> not_ready_since(const api::Node& n) {
    const auto* c = ready_condition(n);
    if (c && c->status == "True") return std::nullopt;
    return c ? api::parse_rfc3339(c->lastTransitionTime) : std::nullopt;
}

/// A node whose kubelet reports DiskPressure=True gets no new copy: it is evicting them
/// (volumes/disk_pressure_eviction.hpp), and a copy placed there would be next.
inline bool disk_pressure(const api::Node& n) {
    if (!n.status) return false;
    for (const auto& c : n.status->conditions)
        if (c.type == "DiskPressure") return c.status == "True";
    return false;
}

/// Whether `bytes` more fit on `n`, whose copies hold `used`, within `threshold` of its
/// allocatable ephemeral-storage (a node that reports none: yes).
inline bool has_room(const api::Node& n, std::int64_t used, std::int64_t bytes, double threshold) {
    if (!n.status) return true;
    auto it = n.status->allocatable.find("ephemeral-storage");
    if (it == n.status->allocatable.end()) return true;
    auto allocatable = api::quantity_value(it->second);
    if (!allocatable) return true;
    return static_cast<double>(used) + static_cast<double>(bytes) <= threshold * *allocatable;
}

/// Whether a download failed because its node's disk is full (vck-fetch says the OS's words).
inline bool disk_full(std::string_view failure) { return failure.find("No space left on device") != std::string_view::npos; }

/// A size for messages: "500.0 MiB".
inline std::string size_text(std::int64_t bytes) {
    static constexpr const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024 && u < 5) v /= 1024, ++u;
    if (u == 0) return std::to_string(bytes) + " bytes";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
    return buf;
}

inline bool tolerates(const std::vector<api::Toleration>& tolerations, const api::Taint& t) {
    for (const auto& tol : tolerations) {
        if (!tol.effect.empty() && tol.effect != t.effect) continue;
        if (tol.operator_ == "Exists") {
            if (tol.key.empty() || tol.key == t.key) return true;
        } else if (tol.key == t.key && tol.value == t.value) {
            return true;
        }
    }
    return false;
}

} // namespace copy_detail

/// Whether a new copy of `vc` may go to `n`, and if not, why (for messages).
inline std::string ineligibility(const api::Node& n, const api::VolumeConfig& vc) {
    if (!copy_detail::node_ready(n)) return "NotReady";
    if (n.spec.unschedulable.value_or(false)) return "cordoned";
    if (copy_detail::disk_pressure(n)) return "under disk pressure";
    if (!handlers::node_matches(n, vc.nodeAffinity)) return "not matching nodeAffinity";
    for (const auto& t : n.spec.taints)
        if ((t.effect == "NoSchedule" || t.effect == "NoExecute") && !copy_detail::tolerates(vc.tolerations, t))
            return "taint " + t.key + (t.value.empty() ? "" : "=" + t.value) + ":" + t.effect;
    return {};
}

/// The landed prefix every replica of `config` below `replicas` holds: the least of their
/// usable copies' (a Ready copy holds everything).
inline fetch::LandedPrefix::Counts first_batch_landed(std::span<const api::CopyRecord> entries, const std::string& config,
                                                    std::size_t replicas) {
    std::optional<fetch::LandedPrefix::Counts> least;
    for (const auto& e : entries) {
        if (e.config != config || !copy_usable(e) || e.replica < 0 || static_cast<std::size_t>(e.replica) >= replicas)
            continue;
        auto c = recorded_counts(e);
        fetch::LandedPrefix::Counts have;
        if (c && copy_phase(e) == CopyPhase::Ready) have = {c->files_total, c->bytes_total};
        else if (c && c->prefix_files) have = {*c->prefix_files, *c->prefix_bytes};
        if (!least || have.files < least->files) least = have;
    }
    return least.value_or(fetch::LandedPrefix::Counts{});
}

inline bool pod_finished(const api::Pod& p) {
    auto phase = handlers::pod_phase(p);
    return phase == "Succeeded" || phase == "Failed";
}

/// Whether `p` mounts the directory of `e` on e's node (a hostPath that is it or under it),
/// finished or not.
inline bool pod_mounts_copy(const api::Pod& p, const api::CopyRecord& e) {
    if (p.spec.nodeName != e.node || e.path.empty()) return false;
    std::string dir = e.path;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    for (const auto& v : p.spec.volumes) {
        if (!v.hostPath) continue;
        std::string_view path = v.hostPath->path;
        while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
        if (path == dir || (path.starts_with(dir) && path.size() > dir.size() && path[dir.size()] == '/')) return true;
    }
    return false;
}

inline bool copy_in_use(const api::CopyRecord& e, std::span<const api::Pod* const> pods) {
    return std::any_of(pods.begin(), pods.end(), [&](const api::Pod* p) { return !pod_finished(*p) && pod_mounts_copy(*p, e); });
}

/// The names of the pods that have not finished and mount the directory of `e` on its node
/// (sorted): while there is one, the copy is not removed (its removal waits, visibly).
inline std::vector<std::string> copy_users(const api::CopyRecord& e, std::span<const api::Pod* const> pods) {
    std::vector<std::string> out;
    for (const api::Pod* p : pods)
        if (!pod_finished(*p) && pod_mounts_copy(*p, e)) out.push_back(p->metadata.name);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

/// The delay before download attempt `failures + 1`.
inline std::chrono::seconds retry_delay(const CopyPlannerOptions& o, std::int64_t failures) {
    auto d = o.retry_base;
    for (std::int64_t i = 1; i < failures && d < o.retry_cap; ++i) d *= 2;
    return std::min(d, o.retry_cap);
}

/// `nodes` are borrowed (the cache's objects: the reconciler does not copy them), valid for the call.
inline VolumeCopyPlan plan_volume_copies(const VolumeCopyInput& in, std::span<const api::Node* const> nodes,
                                         std::chrono::system_clock::time_point now,
                                         const CopyPlannerOptions& opts = {}) {
    using namespace std::chrono;
    VolumeCopyPlan plan;
    plan.outcome.status.id = in.volume_id;
    std::map<std::string, const api::Node*> node_by_name;
    for (const api::Node* n : nodes) node_by_name[n->metadata.name] = n;
    auto node = [&](const std::string& name) -> const api::Node* {
        auto it = node_by_name.find(name);
        return it == node_by_name.end() ? nullptr : it->second;
    };
    auto due_at = [&](system_clock::time_point t) {
        if (!plan.due || t < *plan.due) plan.due = t;
    };
    auto pod = [&](const std::string& name) -> const api::Pod* {
        auto it = in.pods.find(name);
        return it == in.pods.end() ? nullptr : it->second;
    };
    // The pods that may still write into a copy's directory: its attempts' download pods, and
    // any other non-cleanup pod of the volume on its node that names no other directory (an
    // older controller's download pods carry no path).
    auto writers_of = [&](const api::CopyRecord& e) {
        std::set<std::string> out;
        for (std::int64_t a = 1; a <= std::max<std::int64_t>(e.attempts, 1); ++a) {
            auto name = handlers::naming::copy_pod_name(in.vm_uid, in.volume_id, e.node, e.config, a);
            if (pod(name)) out.insert(name);
        }
        for (const auto& [name, p] : in.pods) {
            auto role = p->metadata.annotations.find(std::string(handlers::copy_role_annotation));
            if (role != p->metadata.annotations.end() && role->second == "cleanup") continue;
            auto path = p->metadata.annotations.find(std::string(handlers::copy_path_annotation));
            bool same_dir = path == p->metadata.annotations.end() || path->second == e.path;
            if (same_dir && p->spec.nodeName == e.node) out.insert(name);
        }
        return std::vector<std::string>(out.begin(), out.end());
    };

    std::vector<api::CopyRecord> entries = in.entries;
    const std::string desired = in.layout ? in.layout->config : std::string();
    const std::size_t replicas = in.layout ? in.layout->replicas : 0;
    auto phase = [](const api::CopyRecord& e) { return copy_phase(e); };
    auto set = [](api::CopyRecord& e, CopyPhase p, std::string message = {}) {
        e.phase = std::string(to_string(p));
        e.message = std::move(message);
    };

    // 1. Nodes lost and nodes back.
    for (auto& e : entries) {
        const api::Node* n = node(e.node);
        auto p = phase(e);
        if (!n && in.deleting) {
            e.phase.clear();  // forgotten: its data went with the node
            plan.warnings.push_back("copy of volume " + in.volume_id + " on node " + e.node +
                                    " forgotten: the node no longer exists");
            continue;
        }
        if (p == CopyPhase::Downloading || p == CopyPhase::Ready || p == CopyPhase::Failed) {
            if (!n) {
                set(e, CopyPhase::Lost, "node " + e.node + " was deleted");
                plan.warnings.push_back("copy of volume " + in.volume_id + " on node " + e.node + " lost: the node was deleted");
            } else if (auto since = copy_detail::not_ready_since(*n)) {
                auto gone = std::chrono::duration_cast<seconds>(now - *since);
                if (gone > opts.node_lost_timeout) {
                    set(e, CopyPhase::Lost, "node " + e.node + " NotReady for " + std::to_string(gone.count()) + "s");
                    plan.warnings.push_back("copy of volume " + in.volume_id + " on node " + e.node +
                                            " lost: NotReady for " + std::to_string(gone.count()) + "s");
                } else {
                    // Looked at again once the timeout has passed: the node may say nothing
                    // more until then (a node that just went NotReady is 0 s into it).
                    due_at(*since + opts.node_lost_timeout + seconds(1));
                }
            }
        } else if (p == CopyPhase::Lost && n && copy_detail::node_ready(*n)) {
            if (in.output && !e.readyAt.empty())  // it may hold a job's output: uploaded first
                set(e, CopyPhase::Uploading, "node " + e.node + " is back: uploading its output");
            else
                set(e, CopyPhase::Removing, "node " + e.node + " is back: removing its stale copy");
        }
    }

    std::erase_if(entries, [](const auto& e) { return e.phase.empty(); });

    // 2. Download progress of the desired config's copies, from their pods.
    auto node_at = [&](const std::string& url) -> std::string {  // whose pod served there
        for (const auto& [name, p] : in.pods)
            if (p && p->status && !p->status->podIP.empty() && handlers::peer_url(p->status->podIP) == url)
                return p->spec.nodeName;
        return {};
    };
    auto record_final = [&](api::CopyRecord& e, const fetch::TransferCounts& c) {
        record_counts(e, c);
        e.bytesByPeer = peer_sources(c, node_at);
    };
    for (auto& e : entries) {
        if (e.config != desired) continue;
        auto name = handlers::naming::copy_pod_name(in.vm_uid, in.volume_id, e.node, e.config, e.attempts);
        const api::Pod* p = pod(name);
        if (phase(e) == CopyPhase::Ready && p && !e.bytesFromStore && handlers::pod_phase(*p) == "Succeeded") {
            // Ready while it served its peers: its summary's totals land when it ends.
            if (auto c = final_counts(*p)) record_final(e, *c);
            continue;
        }
        if (phase(e) == CopyPhase::Ready && p && e.sourceDigest.empty() && in.progress &&
            handlers::copy_serving_ready(*p) && handlers::pod_phase(*p) != "Succeeded") {
            // Serving on: its last progress line tells its listing's digest (the copy may be
            // joined now, not after the linger).
            if (auto c = in.progress(*p); c && !c->listing_digest.empty()) e.sourceDigest = c->listing_digest;
            continue;
        }
        if (phase(e) != CopyPhase::Downloading) continue;
        if (!p) continue;  // created below (or waiting for its retry time)
        std::string pp = handlers::pod_phase(*p);
        std::string failure;
        bool permanent = false;
        if (pp == "Succeeded" || (in.layout->long_running && pp == "Running") || handlers::copy_serving_ready(*p)) {
            if (auto c = final_counts(*p)) {
                record_final(e, *c);
            } else if (pp != "Succeeded" && handlers::copy_serving_ready(*p)) {
                // Its fetch ended whole (its ready port opens only then) and it serves on: the
                // last progress line read may be a second old, but what it holds is its totals.
                auto c = in.progress ? advance(recorded_counts(e), in.progress(*p)) : recorded_counts(e);
                if (c) record_counts(e, completed(*c));
            }
            set(e, CopyPhase::Ready);
            e.readyAt = api::format_rfc3339(now);
            e.retryAt.clear();
            continue;
        }
        if (pp == "Failed") {
            std::string why = p->status && p->status->reason == "DeadlineExceeded" ? " (timed out)" : "";
            std::string tail = in.log_tail ? in.log_tail(*p) : std::string();
            if (tail.empty()) tail = handlers::termination_message(*p);
            failure = "error during data download using pod " + name + why + (tail.empty() ? "" : ": " + tail);
        } else if (auto refused = handlers::subpath_refusal(*p); !refused.empty()) {
            failure = "error during data download using pod " + name + " on node " + e.node + ": " + refused +
                      " (the data path leads out of its allowed data root there: a symlink?)";
            permanent = true;
        }
        if (failure.empty()) {
            e.message = handlers::waiting_reason(*p);
            if (in.progress)
                if (auto c = advance(recorded_counts(e), in.progress(*p))) record_counts(e, *c);
            if (auto fb = in.config ? handlers::first_batch_of(*in.config) : std::nullopt; fb && e.firstBatchAt.empty())
                if (auto c = recorded_counts(e); c && fb->reached(*c)) e.firstBatchAt = api::format_rfc3339(now);
            continue;
        }
        if (copy_detail::disk_full(failure)) {
            // The node's disk filled during the download: its partial data goes (a cleanup
            // pod), and the replica, no longer kept, is placed on another node below (this
            // one holds the directory until then).
            std::string why = "node " + e.node + "'s disk is full: " + failure;
            plan.warnings.push_back("copy of volume " + in.volume_id + " on node " + e.node +
                                    " failed, its disk full: its partial data is removed and the copy placed on another node");
            set(e, CopyPhase::Removing, why);
            continue;
        }
        if (permanent || e.attempts >= opts.max_download_attempts) {
            set(e, CopyPhase::Failed, failure);
            continue;
        }
        // Retry: the next attempt's pod has a name of its own; the failed one goes.
        auto delay = retry_delay(opts, e.attempts);
        e.message = "attempt " + std::to_string(e.attempts) + " of " + std::to_string(opts.max_download_attempts) +
                    " failed, retrying in " + std::to_string(delay.count()) + "s: " + failure;
        e.attempts += 1;
        e.retryAt = api::format_rfc3339(now + delay);
    }

    // 3. Which config the status names: the desired one once every replica is Ready; until
    //    then the one it named before, while that still has a Ready copy.
    auto ready_replicas = [&](const std::string& config) {
        std::set<std::int64_t> out;
        for (const auto& e : entries)
            if (e.config == config && phase(e) == CopyPhase::Ready && e.replica >= 0 &&
                static_cast<std::size_t>(e.replica) < (config == desired ? replicas : SIZE_MAX))
                out.insert(e.replica);
        return out;
    };
    auto usable_replicas = [&](const std::string& config) {
        std::set<std::int64_t> out;
        for (const auto& e : entries)
            if (e.config == config && copy_usable(e) && e.replica >= 0 &&
                static_cast<std::size_t>(e.replica) < (config == desired ? replicas : SIZE_MAX))
                out.insert(e.replica);
        return out;
    };
    bool desired_complete = in.layout && replicas > 0 && ready_replicas(desired).size() == replicas;
    bool desired_usable = in.layout && replicas > 0 && usable_replicas(desired).size() == replicas;
    std::string serving;
    if (desired_usable) serving = desired;
    else if (!in.serving.empty() && (in.layout || !in.invalid.empty()) && !usable_replicas(in.serving).empty())
        serving = in.serving;

    // 4. What goes: every copy without a layout; copies of configs neither desired nor served;
    //    copies of the served old config that are not Ready; replicas beyond the count; a
    //    second copy of one replica; the old config once the desired one serves.
    std::set<std::int64_t> kept_replica;
    auto keep_rank = [&](const api::CopyRecord& e) {
        switch (phase(e)) {
            case CopyPhase::Ready: return 0;
            case CopyPhase::Downloading: return 1;
            case CopyPhase::Failed: return 2;
            default: return 3;
        }
    };
    std::stable_sort(entries.begin(), entries.end(), [&](const auto& a, const auto& b) { return keep_rank(a) < keep_rank(b); });
    for (auto& e : entries) {
        auto p = phase(e);
        if (p == CopyPhase::Removing || p == CopyPhase::Lost || p == CopyPhase::Uploading) continue;
        bool go = false;
        if (!in.layout) go = in.invalid.empty();
        else if (e.config == desired) {
            if (e.replica < 0 || static_cast<std::size_t>(e.replica) >= replicas) go = true;
            else if (!kept_replica.insert(e.replica).second) go = true;
        } else if (e.config == serving) {
            go = !copy_usable(e);
        } else {
            go = true;
        }
        if (go && in.output && p == CopyPhase::Ready) set(e, CopyPhase::Uploading, "no longer wanted: uploading its output");
        else if (go) set(e, CopyPhase::Removing, "no longer wanted");
    }

    // 5. Place the replicas of the desired config that have no copy.
    bool placement_failed = false;
    bool joined = false;
    std::string placement_message;
    if (in.layout) {
        // The directory of the desired config: the one its entries name; else, for a volume
        // that shares, the shared directory (its first copy made here, or joined); else one
        // of its own. What other VolumeManagers hold in the shared directory, per node: a
        // copy to join (Ready, holding the listing this volume's own credentials listed), or
        // a node that is busy (anything else: a download, a removal, another listing).
        std::string path;
        for (const auto& e : entries)
            if (e.config == desired && !e.path.empty()) {
                path = e.path;
                break;
            }
        std::map<std::string, std::vector<SharedHold>> shared_here;  // node -> others' entries
        auto look_at_shared = [&](const std::string& dir) {
            if (!in.others) return;
            for (const api::Node* n : nodes)
                if (auto holds = in.others(n->metadata.name, dir); !holds.empty()) shared_here[n->metadata.name] = std::move(holds);
        };
        auto to_join = [&](const std::string& n) -> const SharedHold* {
            auto it = shared_here.find(n);
            if (it == shared_here.end()) return nullptr;
            const SharedHold* ready = nullptr;
            for (const auto& h : it->second) {
                auto hp = copy_phase(h.entry);
                if (hp != CopyPhase::Ready) return nullptr;
                if (!h.entry.sourceDigest.empty() && in.proven_digest && *in.proven_digest == h.entry.sourceDigest) ready = &h;
            }
            return ready;
        };
        auto unproven_ready = [&] {  // a Ready copy to join once this volume's credentials list the source
            if (in.proven_digest) return false;
            for (const auto& [n, holds] : shared_here)
                for (const auto& h : holds)
                    if (copy_phase(h.entry) == CopyPhase::Ready && !h.entry.sourceDigest.empty()) return true;
            return false;
        };
        // A volume that shares always puts a config's copies in its shared directory, so that
        // a pod admitted before any copy exists mounts the right one (pod_injection.hpp).
        if (path.empty())
            path = !in.shared_path.empty()
                       ? in.shared_path
                       : handlers::naming::copy_directory(in.layout->where.path, in.vm_uid, in.volume_id, desired);
        // (Also when sharing was turned off since: the others are there all the same.)
        if (handlers::naming::is_shared_directory(path)) look_at_shared(path);
        // Before its first copy, a volume whose config others hold waits for what it may join:
        // their downloads, and the proof that its own credentials read the same listing.
        std::string share_wait;
        bool want_proof = false;
        const bool first = std::none_of(entries.begin(), entries.end(), [&](const auto& e) { return e.config == desired; });
        if (!shared_here.empty()) {
            // A copy there that may soon be joinable: downloading, or Ready while its digest is
            // on its way (a serving peer's comes with a progress line; not waited for forever).
            const SharedHold* pending = nullptr;
            for (const auto& [n, holds] : shared_here)
                for (const auto& h : holds) {
                    auto hp = copy_phase(h.entry);
                    auto ready_at = api::parse_rfc3339(h.entry.readyAt);
                    if (hp == CopyPhase::Downloading ||
                        (hp == CopyPhase::Ready && h.entry.sourceDigest.empty() && ready_at && now - *ready_at < opts.digest_wait))
                        pending = &h;
                }
            const SharedHold& some = shared_here.begin()->second.front();
            const std::string maker = some.entry.sharedFrom.empty() ? some.holder : some.entry.sharedFrom;
            if (!in.proof_failure.empty()) {
                // Refused: no node the others hold is joined (nor free); before its first copy
                // the volume says why and places nothing (its own download would be refused too).
                if (first) {
                    placement_failed = true;
                    placement_message = "no access to the copy of this source that " + maker + " shares: " + in.proof_failure;
                }
                due_at(now + seconds(30));
            } else if (unproven_ready()) {
                want_proof = true;
                if (first) share_wait = "checking this volume's access to the shared copy";
                due_at(now + seconds(1));
            } else if (pending) {
                share_wait = "waiting for the shared copy that " + pending->holder +
                             (copy_phase(pending->entry) == CopyPhase::Downloading ? " is downloading" : " has just made") +
                             " on node " + pending->entry.node;
                due_at(now + seconds(2));
            }
        }

        // Before its first copy, a volume whose listing differs from the copies others hold
        // (the source changed since they were made) and that would not find room for its
        // replicas beside them takes a directory of its own: it never waits on another
        // VolumeManager's refresh. (A pod admitted before this pass mounts the shared
        // directory and is reported, pod_gates.hpp.)
        if (first && share_wait.empty() && !want_proof && in.proven_digest && in.proof_failure.empty() &&
            path == in.shared_path && !shared_here.empty()) {
            std::size_t usable = 0;
            bool stale = false;
            for (const api::Node* n : nodes) {
                if (!ineligibility(*n, *in.config).empty()) continue;
                auto it = shared_here.find(n->metadata.name);
                if (it == shared_here.end() || to_join(n->metadata.name)) {
                    ++usable;
                    continue;
                }
                for (const auto& h : it->second)
                    stale |= copy_phase(h.entry) == CopyPhase::Ready && !h.entry.sourceDigest.empty() &&
                             h.entry.sourceDigest != *in.proven_digest;
            }
            if (stale && usable < replicas) {
                path = handlers::naming::copy_directory(in.layout->where.path, in.vm_uid, in.volume_id, desired);
                shared_here.clear();
            }
        }

        std::vector<const api::Node*> eligible;
        std::map<std::string, int> excluded;  // reason -> nodes
        // The new copy's size: listed by a copy of the same config, else the volume's capacity.
        std::int64_t new_bytes = 0;
        for (const auto& e : entries)
            if (e.config == desired && e.bytesTotal) new_bytes = std::max(new_bytes, *e.bytesTotal);
        if (new_bytes == 0) new_bytes = capacity_bytes(in.config->capacity).value_or(0);
        std::size_t without_room = 0;
        for (const api::Node* n : nodes) {
            auto why = ineligibility(*n, *in.config);
            // Joining a copy already there takes no room.
            if (why.empty() && in.node_used && new_bytes > 0 && !to_join(n->metadata.name) &&
                !copy_detail::has_room(*n, in.node_used(n->metadata.name), new_bytes, opts.disk_fill_threshold)) {
                why = "without room for " + copy_detail::size_text(new_bytes);
                ++without_room;
            }
            if (why.empty()) eligible.push_back(n);
            else ++excluded[why.starts_with("taint") ? std::string("tainted") : why];
        }
        // Spread volumes over nodes: each volume walks the nodes in an order of its own; nodes
        // with a shared copy to join come first.
        std::sort(eligible.begin(), eligible.end(), [&](const api::Node* a, const api::Node* b) {
            return handlers::naming::short_hash(in.vm_uid + "/" + in.volume_id + "/" + a->metadata.name) <
                   handlers::naming::short_hash(in.vm_uid + "/" + in.volume_id + "/" + b->metadata.name);
        });
        std::stable_partition(eligible.begin(), eligible.end(),
                              [&](const api::Node* n) { return to_join(n->metadata.name) != nullptr; });
        bool any_desired = std::any_of(entries.begin(), entries.end(), [&](const auto& e) {
            return e.config == desired && (phase(e) == CopyPhase::Downloading || phase(e) == CopyPhase::Ready ||
                                           phase(e) == CopyPhase::Failed);
        });
        std::vector<std::size_t> missing;
        for (std::size_t r = 0; r < replicas; ++r)
            if (!kept_replica.contains(static_cast<std::int64_t>(r))) missing.push_back(r);
        plan.needs_proof = want_proof && !missing.empty();
        std::string excluded_text;
        for (const auto& [why, count] : excluded)
            excluded_text += (excluded_text.empty() ? "" : ", ") + std::to_string(count) + " " + why;
        if (placement_failed || missing.empty()) {
        } else if (!any_desired && eligible.size() < replicas) {
            placement_failed = true;
            placement_message = "replicas [" + std::to_string(replicas) + "] greater than number of nodes [" +
                                std::to_string(eligible.size()) + "]" +
                                (without_room ? "; the data (" + copy_detail::size_text(new_bytes) + ") fits on " +
                                                    std::to_string(eligible.size()) + (eligible.size() == 1 ? " node" : " nodes")
                                              : std::string()) +
                                (excluded_text.empty() ? "" : " (not eligible: " + excluded_text + ")");
        } else if (!any_desired && !in.placement_blocker.empty()) {
            placement_failed = true;
            placement_message = in.placement_blocker;
        } else if (!share_wait.empty()) {
            placement_message = share_wait;
        } else {
            for (std::size_t r : missing) {
                const api::Node* chosen = nullptr;
                for (const auto* n : eligible) {
                    bool taken = std::any_of(entries.begin(), entries.end(), [&](const auto& e) {
                        // A node holding this config (any phase: a Removing copy's directory is
                        // the same directory) is not free for another replica of it.
                        return e.node == n->metadata.name && (e.config == desired || e.path == path);
                    });
                    // Nor is one where another VolumeManager's copy in the shared directory
                    // cannot be joined.
                    if (!taken && shared_here.contains(n->metadata.name) && !to_join(n->metadata.name)) taken = true;
                    if (!taken) {
                        chosen = n;
                        break;
                    }
                }
                if (!chosen) {
                    placement_message = "cannot place replica " + std::to_string(r) + ": no eligible node without a copy" +
                                        (excluded_text.empty() ? "" : " (not eligible: " + excluded_text + ")");
                    continue;
                }
                api::CopyRecord e;
                e.volume = in.volume_id;
                e.replica = static_cast<std::int64_t>(r);
                e.node = chosen->metadata.name;
                e.path = path;
                e.config = desired;
                if (const SharedHold* h = to_join(chosen->metadata.name)) {
                    joined = true;
                    // Joined: Ready at once, with what the copy holds; nothing read for it.
                    e.filesDone = h->entry.filesDone;
                    e.filesTotal = h->entry.filesTotal;
                    e.bytesDone = h->entry.bytesDone;
                    e.bytesTotal = h->entry.bytesTotal;
                    e.sourceDigest = h->entry.sourceDigest;
                    e.bytesFromStore = 0;
                    e.bytesFromPeers = 0;
                    e.sharedFrom = h->entry.sharedFrom.empty() ? h->holder : h->entry.sharedFrom;  // its maker
                    e.readyAt = api::format_rfc3339(now);
                    set(e, CopyPhase::Ready);
                } else {
                    e.attempts = 1;
                    set(e, CopyPhase::Downloading);
                }
                entries.push_back(std::move(e));
            }
        }
    }

    // A joined copy is Ready now: the status may name it in this pass.
    if (joined) {
        desired_complete = ready_replicas(desired).size() == replicas;
        desired_usable = usable_replicas(desired).size() == replicas;
        if (desired_usable) serving = desired;
    }

    // 6b. An output copy's upload: its pod, its outcome, its retries (output_upload.hpp).
    auto upload_step = [&](api::CopyRecord& e) {
        const std::int64_t attempt = std::max<std::int64_t>(e.uploadAttempts.value_or(0), 1);
        e.uploadAttempts = attempt;
        const std::string where = "output of volume " + in.volume_id + " replica " + std::to_string(e.replica) +
                                  " on node " + e.node;
        for (std::int64_t a = 1; a < attempt; ++a) {
            auto old = output_upload_pod_name(in.vm_uid, in.volume_id, e.node, e.path, a);
            if (pod(old)) plan.pods_to_delete.push_back(old);
        }
        auto name = output_upload_pod_name(in.vm_uid, in.volume_id, e.node, e.path, attempt);
        const api::Pod* u = pod(name);
        if (in.discard_output) {
            set(e, CopyPhase::Removing, "output discarded without upload (" + std::string(discard_output_annotation) + ")");
            e.retryAt.clear();
            plan.output_events.push_back({"Warning", "OutputDiscarded",
                                          where + " removed without upload: " + std::string(discard_output_annotation) +
                                              " is set"});
            return;  // its upload pod, if any, is a writer the Removing step stops first
        }
        if (!node(e.node)) {
            if (in.deleting) {
                e.phase.clear();
                plan.warnings.push_back(where + " forgotten without upload: the node no longer exists");
            } else {
                set(e, CopyPhase::Lost, "node " + e.node + " was deleted before its output was uploaded");
            }
            if (u) plan.pods_to_delete.push_back(name);
            return;
        }
        if (!u) {
            if (auto at = api::parse_rfc3339(e.retryAt); at && *at > now) {
                due_at(*at);
                return;
            }
            plan.uploads.push_back({static_cast<std::size_t>(std::max<std::int64_t>(e.replica, 0)), e.node, e.path,
                                    e.config, name, {}});
            return;
        }
        auto up = handlers::pod_phase(*u);
        if (up == "Succeeded") {
            auto c = upload_counts(*u);
            e.filesUploaded = c ? static_cast<std::int64_t>(c->files_done) : 0;
            e.bytesUploaded = c ? static_cast<std::int64_t>(c->bytes_done) : 0;
            std::string counts = std::to_string(*e.filesUploaded) + " files (" + std::to_string(*e.bytesUploaded) + " bytes)";
            set(e, CopyPhase::Removing, "output uploaded: " + counts);
            e.retryAt.clear();
            plan.output_events.push_back({"Normal", "OutputUploaded", where + " uploaded: " + counts});
        } else if (up == "Failed") {
            std::string tail = upload_failure(handlers::termination_message(*u));
            if (tail.empty() && in.log_tail) tail = in.log_tail(*u);
            auto delay = retry_delay(opts, attempt);
            e.message = "upload attempt " + std::to_string(attempt) + " failed (pod " + name + "), retrying in " +
                        std::to_string(delay.count()) + "s" + (tail.empty() ? "" : ": " + tail);
            plan.output_events.push_back({"Warning", "OutputUploadFailed", where + ": " + e.message});
            e.uploadAttempts = attempt + 1;
            e.retryAt = api::format_rfc3339(now + delay);
            due_at(now + delay);
        } else {
            auto waiting = handlers::waiting_reason(*u);
            if (!waiting.empty()) e.message = "uploading: " + waiting;
        }
    };

    // A copy on its way out that a running pod mounts stays, whole and unchanged, until every
    // such pod has ended: its writers keep going, no upload or cleanup pod starts. A node that
    // is gone or NotReady past the timeout holds nothing worth waiting for.
    std::set<std::pair<std::string, std::string>> held;  // (node, path)
    auto hold = [&](api::CopyRecord& e) {
        const api::Node* n = node(e.node);
        if (!n) return false;
        if (auto since = copy_detail::not_ready_since(*n); since && now - *since > opts.node_lost_timeout) return false;
        auto users = copy_users(e, in.users);
        if (users.empty()) return false;
        std::string names;
        for (const auto& u : users) names += (names.empty() ? "" : ", ") + u;
        std::string message = "kept while pod" + std::string(users.size() > 1 ? "s " : " ") + names +
                              (users.size() > 1 ? " use" : " uses") + " it";
        if (e.message != message)
            plan.output_events.push_back({"Normal", "RemovalWaits",
                                          "copy of volume " + in.volume_id + " on node " + e.node + " (" + e.config +
                                              ") is no longer wanted; it is removed when pod" +
                                              (users.size() > 1 ? "s " : " ") + names + " end" +
                                              (users.size() > 1 ? "" : "s")});
        e.message = std::move(message);
        held.insert({e.node, e.path});
        plan.held_by.insert(plan.held_by.end(), users.begin(), users.end());
        return true;
    };

    // Peer fill (handlers/peer_fill.hpp): a download's place in its group's tree, and the
    // addresses of the ancestors whose pods run. Nullopt: wait for the parent, whose pod is
    // about to be made or has no address yet (for at most peer_parent_wait after it was
    // made, so that a parent stuck in Pending delays nobody for long).
    auto peer_plan = [&](const api::CopyRecord& e) -> std::optional<handlers::PeerPlan> {
        handlers::PeerPlan out;
        const auto& groups = in.layout ? in.layout->peer_groups : std::vector<std::string>{};
        if (groups.size() != replicas || e.replica < 0 || static_cast<std::size_t>(e.replica) >= replicas) return out;
        std::vector<std::int64_t> members;
        std::size_t position = 0;
        for (std::size_t r = 0; r < replicas; ++r)
            if (groups[r] == groups[static_cast<std::size_t>(e.replica)]) {
                if (static_cast<std::int64_t>(r) == e.replica) position = members.size();
                members.push_back(static_cast<std::int64_t>(r));
            }
        if (members.size() < 2) return out;
        out.secret = handlers::peer_secret_name(in.vm_uid, in.volume_id);
        out.serve = handlers::peer_serves(position, members.size());
        bool parent = true;
        for (std::size_t a : handlers::peer_ancestors(position)) {
            const api::CopyRecord* anc = nullptr;
            for (const auto& o : entries)
                if (o.config == desired && o.replica == members[a] &&
                    (phase(o) == CopyPhase::Downloading || phase(o) == CopyPhase::Ready))
                    anc = &o;
            const api::Pod* ap = anc ? pod(handlers::naming::copy_pod_name(in.vm_uid, in.volume_id, anc->node,
                                                                           anc->config, anc->attempts))
                                     : nullptr;
            const bool live = ap && ap->metadata.deletionTimestamp.empty() && !pod_finished(*ap);
            if (live && ap->status && !ap->status->podIP.empty()) {
                out.peers.push_back(handlers::peer_url(ap->status->podIP));
            } else if (parent && anc && phase(*anc) == CopyPhase::Downloading) {
                auto retry = api::parse_rfc3339(anc->retryAt);
                if (!ap && !(retry && *retry > now)) return std::nullopt;  // made in this pass
                if (live) {
                    auto made = api::parse_rfc3339(ap->metadata.creationTimestamp);
                    if (made && now - *made < opts.peer_parent_wait) {
                        due_at(*made + opts.peer_parent_wait);
                        return std::nullopt;
                    }
                }
            }
            parent = false;
        }
        return out;
    };

    // A Ready copy of another config on the node of `e`: a new version takes its unchanged
    // files (a config change keeps the old copies until the new ones are all Ready).
    auto older_copy_on = [&](const api::CopyRecord& e) -> std::string {
        for (const auto& o : entries)
            if (o.node == e.node && o.config != e.config && o.path != e.path && phase(o) == CopyPhase::Ready) return o.path;
        return {};
    };

    // 6. Pods: downloads to start, failed attempts and superseded downloads to stop, cleanups.
    for (auto& e : entries) {
        auto p = phase(e);
        // A removal's cleanup pod is named after when it began (recorded before the pod is
        // made): a finished cleanup pod of an earlier removal of this directory, left by a
        // crash between the record's update and the pod's deletion, is not this removal's
        // (taken for it, it would drop a copy whose directory is back), and it is an orphan.
        if (p != CopyPhase::Removing) e.removingAt.clear();
        else if (e.removingAt.empty()) e.removingAt = api::format_rfc3339(now, 3);
        // A shared copy that another VolumeManager keeps is let go of, not removed: once this
        // volume's own download pods there have stopped, its entry goes and the data stays.
        if (p == CopyPhase::Removing && in.others && handlers::naming::is_shared_directory(e.path)) {
            auto holds = in.others(e.node, e.path);
            bool kept = std::any_of(holds.begin(), holds.end(), [](const SharedHold& h) {
                auto hp = copy_phase(h.entry);
                return hp != CopyPhase::Removing && hp != CopyPhase::Lost;
            });
            if (kept) {
                auto running = writers_of(e);
                plan.pods_to_delete.insert(plan.pods_to_delete.end(), running.begin(), running.end());
                if (running.empty()) e.phase.clear();
                continue;
            }
        }
        if ((p == CopyPhase::Uploading || p == CopyPhase::Removing) && hold(e)) continue;
        if (p == CopyPhase::Uploading) {
            upload_step(e);
        } else if (p == CopyPhase::Downloading) {
            for (std::int64_t a = 1; a < e.attempts; ++a) {
                auto old = handlers::naming::copy_pod_name(in.vm_uid, in.volume_id, e.node, e.config, a);
                if (pod(old)) plan.pods_to_delete.push_back(old);
            }
            auto name = handlers::naming::copy_pod_name(in.vm_uid, in.volume_id, e.node, e.config, e.attempts);
            if (pod(name)) continue;
            if (auto at = api::parse_rfc3339(e.retryAt); at && *at > now) {
                due_at(*at);
                continue;
            }
            auto peer = peer_plan(e);
            if (!peer) continue;  // its parent's pod has no address yet: the pod's update brings the next pass
            plan.downloads.push_back({static_cast<std::size_t>(e.replica), e.node, e.path, e.config, name, std::move(*peer),
                                      older_copy_on(e)});
        } else if (p == CopyPhase::Removing) {
            auto running = writers_of(e);
            if (!running.empty()) {
                plan.pods_to_delete.insert(plan.pods_to_delete.end(), running.begin(), running.end());
                continue;
            }
            const api::Node* n = node(e.node);
            auto cname = handlers::naming::copy_cleanup_pod_name(in.vm_uid, in.volume_id, e.node, e.path, e.removingAt);
            if (!n) {
                if (in.deleting) {
                    e.phase.clear();  // forgotten: its data went with the node
                    plan.warnings.push_back("copy of volume " + in.volume_id + " on node " + e.node +
                                            " forgotten: the node no longer exists");
                } else {
                    set(e, CopyPhase::Lost, "node " + e.node + " was deleted before its copy was removed");
                }
                if (pod(cname)) plan.pods_to_delete.push_back(cname);  // it would wait for the node forever
                continue;
            }
            const api::Pod* c = pod(cname);
            if (!c) {
                plan.cleanups.push_back({e.node, e.path, cname});
                continue;
            }
            auto cp = handlers::pod_phase(*c);
            if (cp == "Succeeded" || !handlers::subpath_refusal(*c).empty()) {
                e.phase.clear();  // removed from its node: the entry goes
                plan.pods_to_delete.push_back(cname);
            } else if (cp == "Failed") {
                e.message = "cleanup failed on node " + e.node + " using pod " + cname + ": " +
                            handlers::termination_message(*c);
                plan.pods_to_delete.push_back(cname);  // made again on the next pass
            }
        } else if (p == CopyPhase::Failed || p == CopyPhase::Ready) {
            // A finished attempt's pod stays (its log explains a failure); earlier ones go.
            for (std::int64_t a = 1; a < e.attempts; ++a) {
                auto old = handlers::naming::copy_pod_name(in.vm_uid, in.volume_id, e.node, e.config, a);
                if (pod(old)) plan.pods_to_delete.push_back(old);
            }
        }
    }
    std::erase_if(entries, [](const auto& e) { return e.phase.empty(); });
    std::sort(plan.held_by.begin(), plan.held_by.end());
    plan.held_by.erase(std::unique(plan.held_by.begin(), plan.held_by.end()), plan.held_by.end());
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
        return std::tie(a.config, a.replica, a.node, a.path) < std::tie(b.config, b.replica, b.node, b.path);
    });

    // 7. Labels: where a Ready copy of the served config is, else of the desired one.
    for (const api::Node* n : nodes) {
        std::string value;
        for (const auto& cfg : {serving, desired}) {
            if (cfg.empty() || !value.empty()) continue;
            for (const auto& e : entries)
                if (e.node == n->metadata.name && e.config == cfg && copy_usable(e)) value = cfg;
        }
        plan.labels[n->metadata.name] = value;
    }

    // 8. The volume's status.
    auto& st = plan.outcome.status;
    if (!serving.empty()) {
        for (const auto& e : entries)
            if (e.config == serving && copy_usable(e)) {
                api::VolumeSource src;
                src.hostPath = api::HostPathVolumeSource{e.path, ""};
                st.volumeSource = std::move(src);
                break;
            }
        st.nodeAffinity = handlers::data_node_affinity(in.label_key);
        st.nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution->nodeSelectorTerms[0].matchExpressions[0].values = {serving};
    }
    std::size_t done = ready_replicas(desired).size();
    const api::CopyRecord* failed = nullptr;
    for (const auto& e : entries)
        if (e.config == desired && phase(e) == CopyPhase::Failed && !failed) failed = &e;
    if (!in.invalid.empty()) {
        plan.outcome.phase = handlers::VolumePhase::Failed;
        st.message = in.invalid;
    } else if (!in.layout) {
        plan.outcome.phase = handlers::VolumePhase::Pending;
        st.message = entries.empty() ? "removed" : "removing " + std::to_string(entries.size()) + " copies";
    } else if (placement_failed) {
        plan.outcome.phase = handlers::VolumePhase::Failed;
        st.message = placement_message;
    } else if (failed) {
        plan.outcome.phase = handlers::VolumePhase::Failed;
        st.message = failed->message;
    } else if (desired_complete) {
        plan.outcome.phase = handlers::VolumePhase::Ready;
        st.message = "success";
    } else if (desired_usable) {
        // Every replica holds its first batch: usable, the rest still landing.
        plan.outcome.phase = handlers::VolumePhase::Ready;
        plan.outcome.partial = true;
        auto fb = handlers::first_batch_of(*in.config);
        auto least = first_batch_landed(entries, desired, replicas);
        st.message = "first batch ready (firstBatch " + (fb ? fb->text : std::string("?")) + "): the first " +
                     std::to_string(least.files) + " files in key order (" + std::to_string(least.bytes) +
                     " bytes) are on every replica; downloading the rest: " + std::to_string(done) + " of " +
                     std::to_string(replicas) + " replicas done";
    } else {
        plan.outcome.phase = handlers::VolumePhase::Pending;
        std::string detail;
        for (const auto& e : entries) {
            if (!e.message.empty() && (phase(e) == CopyPhase::Downloading || phase(e) == CopyPhase::Lost)) {
                detail = e.message;
                if (phase(e) == CopyPhase::Lost) break;
            }
        }
        if (!placement_message.empty()) detail = placement_message;
        st.message = "downloading: " + std::to_string(done) + " of " + std::to_string(replicas) + " replicas done" +
                     (serving.empty() || serving == desired ? "" : ", the previous config serves until then") +
                     (detail.empty() ? "" : " (" + detail + ")");
    }
    if (in.layout && in.invalid.empty()) {
        plan.progress.counts = volume_counts(entries, desired, replicas);
        plan.progress.complete = desired_complete;
        set_volume_counts(st, plan.progress.counts);
        if (desired_usable && !desired_complete && handlers::first_batch_of(*in.config)) {
            auto least = first_batch_landed(entries, desired, replicas);
            st.prefixFiles = static_cast<std::int64_t>(least.files);
            st.prefixBytes = static_cast<std::int64_t>(least.bytes);
        }
    }
    st.message += held_copy_note(plan.held_by);
    // Settled: nothing in flight that an event will not announce (a held copy waits for its
    // pods' ending, which is an event).
    plan.settled = std::all_of(entries.begin(), entries.end(), [&](const auto& e) {
        return phase(e) == CopyPhase::Ready || phase(e) == CopyPhase::Failed || phase(e) == CopyPhase::Lost ||
               held.contains({e.node, e.path});
    }) && plan.downloads.empty() && plan.cleanups.empty() && plan.pods_to_delete.empty() && plan.uploads.empty();
    plan.entries = std::move(entries);
    return plan;
}

/// The same, for nodes held by value (the planner's tests).
inline VolumeCopyPlan plan_volume_copies(const VolumeCopyInput& in, const std::vector<api::Node>& nodes,
                                         std::chrono::system_clock::time_point now,
                                         const CopyPlannerOptions& opts = {}) {
    std::vector<const api::Node*> view;
    view.reserve(nodes.size());
    for (const auto& n : nodes) view.push_back(&n);
    return plan_volume_copies(in, std::span<const api::Node* const>(view), now, opts);
}

} // namespace vck::volumes
