// Copy progress: how far the downloads of a VolumeManager's copies are, from what vck-fetch
// says about itself (fetch/transfer_counts.hpp), summed per volume and shown as one share in
// `kubectl get` (status.progress, the Progress column). Pure functions, no I/O: the
// reconciler reads the pods' log tails (at most once per interval per VolumeManager) and
// passes them in. Guarantees (tests/volumes/copy_progress_test.cpp):
// - A copy's counts are recorded only from a well-formed report and never go backwards while
//   its totals stay the same (a retry starts from what the last attempt reached); a finished
//   download (Ready) records its summary's exact totals; a serving one, Ready while its pod
//   still runs, its last report's totals as done (its fetch ended whole) until the summary.
// - A volume's counts are the sums over the copies of its current config (the replicas it
//   is placing), a replica yet to report counting as the largest totals reported with
//   nothing done (so a replicas: 3 volume with one replica done reads about 33%, not 99%);
//   absent while none of them has reported.
// - The share is floored, so it reads 100% only when every copying volume is Ready, and
//   below 100% while any download runs; "" when there is no copying volume.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/fetch/transfer_counts.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vck::volumes {

/// The counts a record entry holds, if all four are there and consistent.
inline std::optional<fetch::TransferCounts> recorded_counts(const api::CopyRecord& e) {
    if (!e.filesDone || !e.filesTotal || !e.bytesDone || !e.bytesTotal) return std::nullopt;
    if (*e.filesDone < 0 || *e.bytesDone < 0 || *e.filesDone > *e.filesTotal || *e.bytesDone > *e.bytesTotal)
        return std::nullopt;
    fetch::TransferCounts c{static_cast<std::uint64_t>(*e.filesDone), static_cast<std::uint64_t>(*e.filesTotal),
                            static_cast<std::uint64_t>(*e.bytesDone), static_cast<std::uint64_t>(*e.bytesTotal)};
    if (e.prefixFiles && e.prefixBytes && *e.prefixFiles >= 0 && *e.prefixBytes >= 0 && *e.prefixFiles <= *e.filesDone &&
        *e.prefixBytes <= *e.bytesDone) {
        c.prefix_files = static_cast<std::uint64_t>(*e.prefixFiles);
        c.prefix_bytes = static_cast<std::uint64_t>(*e.prefixBytes);
    }
    return c;
}

inline void record_counts(api::CopyRecord& e, const fetch::TransferCounts& c) {
    e.filesDone = static_cast<std::int64_t>(c.files_done);
    e.filesTotal = static_cast<std::int64_t>(c.files_total);
    e.bytesDone = static_cast<std::int64_t>(c.bytes_done);
    e.bytesTotal = static_cast<std::int64_t>(c.bytes_total);
    if (c.prefix_files && c.prefix_bytes) {
        e.prefixFiles = static_cast<std::int64_t>(*c.prefix_files);
        e.prefixBytes = static_cast<std::int64_t>(*c.prefix_bytes);
    } else {
        e.prefixFiles = e.prefixBytes = std::nullopt;
    }
    // Only a summary says where the bytes came from; progress lines leave it as it was.
    if (c.store_bytes) e.bytesFromStore = static_cast<std::int64_t>(*c.store_bytes);
    if (c.peer_bytes) e.bytesFromPeers = static_cast<std::int64_t>(*c.peer_bytes);
    if (!c.listing_digest.empty()) e.sourceDigest = c.listing_digest;
}

namespace progress_detail {

/// Whether container `name` of `p` runs `vck-fetch fetch` (the one that reports progress).
inline bool runs_fetch(const api::Pod& p, const std::string& name) {
    for (const auto* list : {&p.spec.initContainers, &p.spec.containers})
        for (const auto& c : *list)
            if (c.name == name) {
                bool fetch_cmd = !c.command.empty() && (c.command[0] == "vck-fetch" || c.command[0].ends_with("/vck-fetch"));
                return fetch_cmd && !c.args.empty() && c.args[0] == "fetch";
            }
    return false;
}

} // namespace progress_detail

/// The container of a download pod whose log tail tells its progress: one running
/// `vck-fetch fetch` (an init container for a resync volume), or "" when none runs.
inline std::string progress_container(const api::Pod& p) {
    if (!p.status) return {};
    for (const auto* list : {&p.status->initContainerStatuses, &p.status->containerStatuses})
        for (const auto& cs : *list)
            if (cs.state && cs.state->running && progress_detail::runs_fetch(p, cs.name)) return cs.name;
    return {};
}

/// A download pod's final counts: the summary a `vck-fetch fetch` container that exited 0
/// left as its termination message. Nullopt for another data mover (Pachyderm, a user's).
inline std::optional<fetch::TransferCounts> final_counts(const api::Pod& p) {
    if (!p.status) return std::nullopt;
    for (const auto* list : {&p.status->initContainerStatuses, &p.status->containerStatuses})
        for (const auto& cs : *list)
            if (cs.state && cs.state->terminated && cs.state->terminated->exitCode == 0 &&
                progress_detail::runs_fetch(p, cs.name))
                if (auto c = fetch::summary_counts(cs.state->terminated->message)) return c;
    return std::nullopt;
}

/// The counts to record for a running download: `reported` unless it would move a known
/// count of the same attempt backwards (an older line read late).
inline std::optional<fetch::TransferCounts> advance(const std::optional<fetch::TransferCounts>& recorded,
                                                    const std::optional<fetch::TransferCounts>& reported) {
    if (!reported) return recorded;
    if (recorded && recorded->files_total == reported->files_total && recorded->bytes_total == reported->bytes_total &&
        (reported->files_done < recorded->files_done || reported->bytes_done < recorded->bytes_done))
        return recorded;
    return reported;
}

/// A finished download's bytesFromPeers by peer (its summary's bytesByPeer), largest first,
/// each peer named by `node_of` its URL (the node of the volume's pod serving at that address;
/// "" when none has it any more).
inline std::vector<api::CopyPeerBytes> peer_sources(const fetch::TransferCounts& c,
                                                    const std::function<std::string(const std::string& url)>& node_of) {
    std::vector<api::CopyPeerBytes> out;
    for (const auto& [url, n] : c.bytes_by_peer) {
        api::CopyPeerBytes b;
        b.node = node_of ? node_of(url) : std::string();
        b.address = url;
        b.bytes = static_cast<std::int64_t>(n);
        out.push_back(std::move(b));
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
    return out;
}

/// The counts of a download that ended whole: everything of its totals done and landed.
inline fetch::TransferCounts completed(fetch::TransferCounts c) {
    c.files_done = c.files_total;
    c.bytes_done = c.bytes_total;
    c.prefix_files = c.files_total;
    c.prefix_bytes = c.bytes_total;
    return c;
}

/// A volume's counts: the sums over the replicas below `replicas` of its current `config`
/// (their entries in phase Downloading or Ready); a replica that has not reported yet (or
/// has no copy yet) counts as nothing done of the largest totals a replica reported, so the
/// share is over every replica: nullopt while none of them has counts.
inline std::optional<fetch::TransferCounts> volume_counts(std::span<const api::CopyRecord> entries,
                                                          const std::string& config, std::size_t replicas) {
    std::optional<fetch::TransferCounts> sum;
    std::size_t reported = 0;
    std::uint64_t files_each = 0, bytes_each = 0;
    for (const auto& e : entries) {
        if (e.config != config || e.replica < 0 || static_cast<std::size_t>(e.replica) >= replicas) continue;
        if (e.phase != "Downloading" && e.phase != "Ready") continue;
        auto c = recorded_counts(e);
        if (!c) continue;
        if (!sum) sum.emplace();
        ++reported;
        sum->files_done += c->files_done;
        sum->files_total += c->files_total;
        sum->bytes_done += c->bytes_done;
        sum->bytes_total += c->bytes_total;
        files_each = std::max(files_each, c->files_total);
        bytes_each = std::max(bytes_each, c->bytes_total);
    }
    if (sum && reported < replicas) {
        sum->files_total += (replicas - reported) * files_each;
        sum->bytes_total += (replicas - reported) * bytes_each;
    }
    return sum;
}

inline void set_volume_counts(api::VolumeStatus& st, const std::optional<fetch::TransferCounts>& c) {
    if (!c) {
        st.filesDone = st.filesTotal = st.bytesDone = st.bytesTotal = std::nullopt;
        return;
    }
    st.filesDone = static_cast<std::int64_t>(c->files_done);
    st.filesTotal = static_cast<std::int64_t>(c->files_total);
    st.bytesDone = static_cast<std::int64_t>(c->bytes_done);
    st.bytesTotal = static_cast<std::int64_t>(c->bytes_total);
}

/// One copying volume, as the Progress column sums it.
struct VolumeProgress {
    std::optional<fetch::TransferCounts> counts;
    bool complete = false;  // every replica of its current config is Ready
};

/// The Progress column: "" without copying volumes; "100%" when every one is complete;
/// otherwise the floored share of bytes (of files when no byte is to move), at most 99%.
inline std::string progress_text(std::span<const VolumeProgress> volumes) {
    if (volumes.empty()) return {};
    bool all = true;
    fetch::TransferCounts sum;
    for (const auto& v : volumes) {
        all = all && v.complete;
        if (!v.counts) continue;
        sum.files_done += v.counts->files_done;
        sum.files_total += v.counts->files_total;
        sum.bytes_done += v.counts->bytes_done;
        sum.bytes_total += v.counts->bytes_total;
    }
    if (all) return "100%";
    std::uint64_t share = 0;
    if (sum.bytes_total > 0) share = static_cast<std::uint64_t>((static_cast<long double>(sum.bytes_done) * 100) / sum.bytes_total);
    else if (sum.files_total > 0) share = sum.files_done * 100 / sum.files_total;
    if (share > 99) share = 99;
    return std::to_string(share) + "%";
}

} // namespace vck::volumes
