// Output uploads: what the copy planner needs to carry an output volume's copy (an empty
// directory a job writes into, handlers/s3_output_handler.hpp) through phase Uploading before
// its directory is removed: the upload pod's name per attempt, the counts its `vck-fetch
// sync-back --once` summary reports, and the annotation that gives the data up.
// Guarantees: an attempt's pod name is stable (a restart creates nothing twice) and differs
// per attempt (a failed pod stays, readable, while the next one runs); counts come only from
// a successful upload's summary.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/fetch/transfer_counts.hpp>
#include <vck/handlers/naming.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace vck::volumes {

/// Set to "true" on a VolumeManager, it gives up output that could not be uploaded: copies
/// waiting in phase Uploading are removed without upload (a Warning event says so each time).
inline constexpr std::string_view discard_output_annotation = "vck.intelai.org/discard-output";

inline bool discards_output(const api::VolumeManager& vm) {
    auto it = vm.metadata.annotations.find(std::string(discard_output_annotation));
    return it != vm.metadata.annotations.end() && it->second == "true";
}

/// The pod of upload attempt `attempt` of the copy in `path` on `node`.
inline std::string output_upload_pod_name(std::string_view vm_uid, std::string_view volume_id, std::string_view node,
                                          std::string_view path, std::int64_t attempt) {
    return handlers::naming::object_name(
        vm_uid, volume_id, "u" + handlers::naming::short_hash(std::string(node) + "/" + std::string(path) + "/" +
                                                                  std::to_string(attempt), 10));
}

/// The totals of a finished upload: the whole directory (files uploaded now plus files an
/// earlier attempt had uploaded), from the termination message of the pod's `vck-fetch
/// sync-back` container when it exited 0; nullopt otherwise.
inline std::optional<fetch::TransferCounts> upload_counts(const api::Pod& p) {
    if (!p.status) return std::nullopt;
    for (const auto& cs : p.status->containerStatuses)
        if (cs.state && cs.state->terminated && cs.state->terminated->exitCode == 0)
            if (auto c = fetch::summary_counts(cs.state->terminated->message, "sync-back")) return c;
    return std::nullopt;
}

/// Why a failed upload pod failed, in words, from its termination `message`: the `error` of
/// the summary vck-fetch left there, else the message as it is (a crash, the kubelet's reason).
inline std::string upload_failure(const std::string& message) {
    boost::system::error_code ec;
    auto v = boost::json::parse(message, ec);
    if (!ec && v.is_object())
        if (const auto* e = v.as_object().if_contains("error"); e && e->is_string() && !e->as_string().empty())
            return std::string(e->as_string());
    return message;
}

/// An event an output copy's step asks for: Normal OutputUploaded, Warning OutputUploadFailed
/// or OutputDiscarded.
struct OutputEvent {
    std::string type;
    std::string reason;
    std::string message;
};

/// The output part of the status of a VolumeManager whose spec.state is Completed (`st`, its
/// record of copies set): per output volume a status entry with what its copies uploaded, and
/// the reason of the first upload waiting for a retry, added to the message. The totals are
/// `previous`'s plus the counts of the copies whose upload is new since (a copy's counts are
/// written once, with its record): the copies finish and go at different times, so a total
/// is never recomputed from the copies still listed.
inline void note_output_status(api::VolumeManagerStatus& st, const std::optional<api::VolumeManagerStatus>& previous) {
    std::map<std::string, api::VolumeStatus> out;
    if (previous)
        for (const auto& v : previous->volumes)
            if (v.filesUploaded) out[v.id] = v;
    auto counted = [&](const api::CopyRecord& e) {
        if (!previous) return false;
        return std::any_of(previous->copies.begin(), previous->copies.end(), [&](const api::CopyRecord& p) {
            return p.filesUploaded && p.volume == e.volume && p.replica == e.replica && p.node == e.node && p.path == e.path;
        });
    };
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> sums;
    std::string waiting;
    for (const auto& e : st.copies) {
        if (e.filesUploaded && !counted(e)) {
            sums[e.volume].first += *e.filesUploaded;
            sums[e.volume].second += e.bytesUploaded.value_or(0);
        }
        if (waiting.empty() && e.phase == "Uploading" && e.message.starts_with("upload attempt"))
            waiting = "output of volume " + e.volume + " replica " + std::to_string(e.replica) + " not uploaded yet: " +
                      e.message;
    }
    for (const auto& [id, sum] : sums) {
        auto& v = out[id];
        v.id = id;
        v.filesUploaded = v.filesUploaded.value_or(0) + sum.first;
        v.bytesUploaded = v.bytesUploaded.value_or(0) + sum.second;
    }
    for (auto& [id, v] : out) {
        v.unknown.clear();
        v.message = "output uploaded: " + std::to_string(*v.filesUploaded) + " files (" +
                    std::to_string(v.bytesUploaded.value_or(0)) + " bytes)";
        st.volumes.push_back(v);
    }
    if (!waiting.empty()) st.message += " (" + waiting + ")";
}

} // namespace vck::volumes
