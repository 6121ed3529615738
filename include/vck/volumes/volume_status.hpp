// Volume status: what a VolumeManager's status says after one reconcile pass, decided from
// what the pass found. Pure functions, no I/O: volume_manager_reconciler.hpp writes (and
// announces) what they decide. Guarantees:
// - The messages are the original VCK's, which users and scripts match: with volumes to
//   deploy, Failed "failed to deploy all the sub-resources" when any volume failed, Running
//   "successfully deployed all sub-resources" when every volume is Ready and nothing removed
//   from the spec is left, Pending "Beginning sub-resource deployment" otherwise; a Running
//   pass whose unwanted copies are still being removed is Pending "removing copies no longer
//   wanted".
// - A replacement (a volume's config changed; its previous config's copies serve until every
//   new replica is ready) is Pending "replacing volume <ids>: the previous data serves until
//   the new copies are ready (<the volume's message: how far the new copies are>)", reason
//   Replacing, and READY counts the volume: its previous data is there for the pods using it.
// - A copy no longer wanted that a running pod still mounts is kept (volumes/copy_planner.hpp);
//   the Running message then ends "; an old copy stays until pod <names>, which uses it, ends"
//   (held_copy_note), so `kubectl get` does not read as if the change were over.
// - readyVolumes is "<ready>/<volumes in the spec>"; volume statuses keep the spec's order.
// - The Ready condition is True exactly when the decision is ready, has its reason and the
//   status' message, and keeps its lastTransitionTime for as long as its status is unchanged.
// - First batches (options.firstBatch, volumes/copy_planner.hpp): when every volume is usable
//   but some only with its first batch (partial), the status is Pending "first batch ready,
//   downloading the rest" and Ready is True with reason FirstBatchReady; Running comes when
//   all data has landed. A second condition, DataComplete, is True exactly when the state is
//   Running (reason AllDataLanded), so a job that needs everything waits for it.
#pragma once

#include <vck/api/volume_manager.hpp>
#include <vck/handlers/data_handler.hpp>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace vck::volumes {

/// A status to write, and how its Ready condition reads.
struct StatusDecision {
    api::VolumeManagerState state = api::VolumeManagerState::Pending;
    api::VolumeManagerStatus status;  // state, message, readyVolumes (and what the caller adds)
    bool ready = false;               // the Ready condition's status
    std::string reason;               // the Ready condition's reason
    bool pending = false;             // volumes still in progress: the pass looks again
    std::vector<std::string> failures;  // "<id>: <message>" per failed volume, for the event
};

/// One volume's outcome in a pass, in the spec's order.
struct VolumeFinding {
    std::string id;
    handlers::VolumeOutcome outcome;
    std::vector<std::string> held_by;  // pods whose use keeps an unwanted copy of this volume
};

/// "; an old copy stays until pod <names>, which uses it, ends" for the pods keeping unwanted
/// copies (sorted, unique), or "" when none do.
inline std::string held_copy_note(const std::vector<std::string>& pods) {
    if (pods.empty()) return {};
    std::string names;
    for (const auto& p : pods) names += (names.empty() ? "" : ", ") + p;
    return "; an old copy stays until pod" + std::string(pods.size() > 1 ? "s " : " ") + names +
           (pods.size() > 1 ? ", which use it, end" : ", which uses it, ends");
}

inline constexpr std::string_view first_batch_message = "first batch ready, downloading the rest";
inline constexpr std::string_view first_batch_reason = "FirstBatchReady";
inline constexpr std::string_view data_complete_condition = "DataComplete";
inline constexpr std::string_view replacing_prefix = "replacing volume ";
inline constexpr std::string_view replacing_reason = "Replacing";

namespace volume_status_detail {

inline std::string ready_volumes(std::size_t ready, std::size_t total) {
    return std::to_string(ready) + "/" + std::to_string(total);
}

inline void set_state(StatusDecision& d, api::VolumeManagerState s, std::string message) {
    d.state = s;
    d.status.state = std::string(api::to_string(s));
    d.status.message = std::move(message);
}

} // namespace volume_status_detail

/// The status of a VolumeManager with volumes to deploy: from each volume's outcome, whether
/// the volumes removed from the spec are cleaned up, and whether the copies are settled (no
/// unwanted copy still being removed, but for copies only running pods keep). `removed_held_by`:
/// the pods keeping copies of volumes gone from the spec, named in the message as the volumes'
/// own holders are (such a volume has no status of its own to say it).
inline StatusDecision deployment_status(std::vector<VolumeFinding> volumes, bool removed_clean, bool copies_settled,
                                        std::vector<std::string> removed_held_by = {}) {
    using api::VolumeManagerState;
    StatusDecision d;
    std::size_t ready = 0, failed = 0, partial = 0;
    std::vector<std::string> replacing;  // "<id>" of volumes whose previous config still serves
    std::string replacing_detail;
    std::vector<std::string> held_by = std::move(removed_held_by);
    for (auto& v : volumes) {
        held_by.insert(held_by.end(), v.held_by.begin(), v.held_by.end());
        if (v.outcome.phase == handlers::VolumePhase::Ready) ++ready;
        // Pending, yet its status still names data: the previous config's copies serve while
        // the new config's download (volumes/copy_planner.hpp).
        if (v.outcome.phase == handlers::VolumePhase::Pending && v.outcome.status.volumeSource &&
            v.outcome.status.nodeAffinity) {
            replacing.push_back(v.id);
            if (replacing_detail.empty()) replacing_detail = v.outcome.status.message;
        }
        if (v.outcome.phase == handlers::VolumePhase::Ready && v.outcome.partial) ++partial;
        if (v.outcome.phase == handlers::VolumePhase::Failed) {
            ++failed;
            d.failures.push_back(v.id + ": " + v.outcome.status.message);
        }
        d.status.volumes.push_back(std::move(v.outcome.status));
    }
    if (failed > 0) {
        volume_status_detail::set_state(d, VolumeManagerState::Failed, "failed to deploy all the sub-resources");
    } else if (ready == volumes.size() && removed_clean && partial > 0) {
        volume_status_detail::set_state(d, VolumeManagerState::Pending, std::string(first_batch_message));
    } else if (ready == volumes.size() && removed_clean && copies_settled) {
        std::sort(held_by.begin(), held_by.end());
        held_by.erase(std::unique(held_by.begin(), held_by.end()), held_by.end());
        volume_status_detail::set_state(d, VolumeManagerState::Running,
                                        "successfully deployed all sub-resources" + held_copy_note(held_by));
    } else if (ready == volumes.size() && removed_clean) {
        volume_status_detail::set_state(d, VolumeManagerState::Pending, "removing copies no longer wanted");
    } else if (!replacing.empty() && ready + replacing.size() == volumes.size()) {
        std::string ids;
        for (const auto& id : replacing) ids += (ids.empty() ? "" : ", ") + id;
        volume_status_detail::set_state(
            d, VolumeManagerState::Pending,
            std::string(replacing_prefix) + ids + ": the previous data serves until the new copies are ready" +
                (replacing_detail.empty() ? "" : " (" + replacing_detail + ")"));
    } else {
        volume_status_detail::set_state(d, VolumeManagerState::Pending, "Beginning sub-resource deployment");
    }
    d.pending = d.state == VolumeManagerState::Pending;
    d.ready = d.state == VolumeManagerState::Running;
    d.reason = d.status.state;
    if (d.status.message.starts_with(replacing_prefix)) d.reason = std::string(replacing_reason);
    if (d.status.message == first_batch_message) {
        d.ready = true;
        d.reason = std::string(first_batch_reason);
    }
    // A volume being replaced still serves its previous data: READY counts it.
    d.status.readyVolumes = volume_status_detail::ready_volumes(ready + (failed ? 0 : replacing.size()), volumes.size());
    return d;
}

/// The status of a VolumeManager whose spec.state is Failed (nothing deployed) or Completed
/// (everything removed, the object kept): `clean` says whether removal is complete. Ready
/// only once Completed is.
inline StatusDecision end_state_status(api::VolumeManagerState desired, bool clean, std::size_t volume_count) {
    using api::VolumeManagerState;
    StatusDecision d;
    volume_status_detail::set_state(d, desired,
                                    desired == VolumeManagerState::Failed
                                        ? "desired state is Failed: no sub-resources deployed"
                                        : (clean ? "completed: sub-resources and data removed"
                                                 : "completing: removing sub-resources and data"));
    d.status.readyVolumes = volume_status_detail::ready_volumes(0, volume_count);
    d.ready = desired == VolumeManagerState::Completed && clean;
    d.reason = d.status.state;
    return d;
}

/// The status of a VolumeManager whose spec is invalid (`why`): Failed, everything else of the
/// current status (its volumes, its record of copies) kept.
inline StatusDecision invalid_spec_status(const std::optional<api::VolumeManagerStatus>& current, const std::string& why,
                                          std::size_t volume_count) {
    StatusDecision d;
    d.status = current ? *current : api::VolumeManagerStatus{};
    d.status.unknown.clear();
    volume_status_detail::set_state(d, api::VolumeManagerState::Failed, "invalid spec: " + why);
    d.status.readyVolumes = volume_status_detail::ready_volumes(0, volume_count);
    d.reason = "InvalidSpec";
    return d;
}

/// `st` as written for `vm`: observedGeneration and the Ready condition (status `ready`,
/// `reason`, the status' message) set; `now` (RFC 3339) is the transition time unless
/// `vm`'s current Ready condition already has that status.
inline api::VolumeManagerStatus with_ready_condition(api::VolumeManagerStatus st, bool ready, const std::string& reason,
                                                     const api::VolumeManager& vm, const std::string& now) {
    st.observedGeneration = vm.metadata.generation;
    api::Condition cond;
    cond.type = "Ready";
    cond.status = ready ? "True" : "False";
    cond.reason = reason;
    cond.message = st.message;
    cond.observedGeneration = vm.metadata.generation;
    cond.lastTransitionTime = now;
    if (vm.status)
        for (const auto& c : vm.status->conditions)
            if (c.type == "Ready" && c.status == cond.status) cond.lastTransitionTime = c.lastTransitionTime;
    // DataComplete: everything has landed (Running), or why not (the Ready reason, or
    // Downloading behind a first batch).
    api::Condition complete;
    complete.type = std::string(data_complete_condition);
    bool all = st.state == api::to_string(api::VolumeManagerState::Running);
    complete.status = all ? "True" : "False";
    complete.reason = all ? "AllDataLanded" : (reason == first_batch_reason ? "Downloading" : reason);
    complete.message = all ? "all data has landed on every replica" : st.message;
    complete.observedGeneration = vm.metadata.generation;
    complete.lastTransitionTime = now;
    if (vm.status)
        for (const auto& c : vm.status->conditions)
            if (c.type == complete.type && c.status == complete.status) complete.lastTransitionTime = c.lastTransitionTime;
    st.conditions = {cond, complete};
    return st;
}

} // namespace vck::volumes
