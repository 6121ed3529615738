// Eviction under disk pressure, the pure part: which copy of data on a node reporting
// DiskPressure=True goes next, and how a copy's use by pods is kept in its record.
// Guarantees (each a test in tests/volumes/disk_pressure_eviction_test.cpp):
// - A copy is in use while a pod on its node that has not finished (phase neither Succeeded
//   nor Failed) mounts a hostPath that is the copy's directory or under it. A copy in use is
//   never chosen.
// - Only Ready copies are chosen, never one that is the only place of its data (an output
//   volume's, before its upload), the least recently used first: by `lastUsed`, else
//   `readyAt` (a copy with neither is the oldest); ties go by namespace, name, volume.
// - One at a time: while a copy on the node is being evicted (Removing, with the eviction
//   message) nothing else is chosen; the condition is looked at again once it is gone.
// - The use record (`inUse`, `lastUsed`) changes only when a copy's use flips or a pod that
//   mounted it finished later than recorded, so keeping it costs no write per pass.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/time.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/volumes/copy_planner.hpp>

#include <algorithm>
#include <chrono>
#include <concepts>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace vck::volumes {

/// The message prefix of an entry marked Removing by an eviction.
inline constexpr std::string_view evicted_prefix = "evicted: ";
/// The reason of the events an eviction records on the VolumeManager and on the Node.
inline constexpr std::string_view evicted_reason = "DataEvicted";

inline bool under_disk_pressure(const api::Node& n) { return copy_detail::disk_pressure(n); }

/// When a finished pod that mounted `e` last ended (its containers' latest finishedAt), if any.
inline std::optional<std::chrono::system_clock::time_point> last_finished_use(const api::CopyRecord& e,
                                                                              std::span<const api::Pod* const> pods) {
    std::optional<std::chrono::system_clock::time_point> out;
    for (const api::Pod* p : pods) {
        if (!pod_finished(*p) || !pod_mounts_copy(*p, e) || !p->status) continue;
        for (const auto& cs : p->status->containerStatuses)
            if (cs.state && cs.state->terminated)
                if (auto t = api::parse_rfc3339(cs.state->terminated->finishedAt); t && (!out || *t > *out)) out = t;
    }
    return out;
}

/// Brings the use record of `entries` (one volume's, or any) up to date from `pods` (those
/// the controller watches); returns whether an entry changed. Only Ready copies are tracked.
inline bool refresh_copy_use(std::vector<api::CopyRecord>& entries, std::span<const api::Pod* const> pods,
                             std::chrono::system_clock::time_point now) {
    bool changed = false;
    for (auto& e : entries) {
        if (copy_phase(e) != CopyPhase::Ready) continue;
        bool used = copy_in_use(e, pods);
        if (used != e.inUse.value_or(false)) {
            e.inUse = used ? std::optional<bool>(true) : std::nullopt;
            e.lastUsed = api::format_rfc3339(now);
            changed = true;
        }
        if (auto ended = last_finished_use(e, pods)) {
            auto recorded = api::parse_rfc3339(e.lastUsed);
            if (!recorded || *ended > *recorded) {
                e.lastUsed = api::format_rfc3339(*ended);
                changed = true;
            }
        }
    }
    return changed;
}

/// The time a copy was last used for the eviction order: lastUsed, else readyAt, else none.
inline std::string last_use_of(const api::CopyRecord& e) { return e.lastUsed.empty() ? e.readyAt : e.lastUsed; }

struct EvictionCandidate {
    std::string vm_namespace, vm_name;
    api::CopyRecord entry;
    std::string last_use;  // RFC 3339, or "" when unknown
};

struct EvictionChoice {
    std::optional<EvictionCandidate> evict;
    /// Set when nothing is chosen: why (no pressure, an eviction in progress, all in use...).
    std::string why_none;
    /// An earlier eviction on the node is still being cleaned up: look again soon.
    bool in_progress = false;
};

/// The next copy on `node` to evict. `vms` are the VolumeManagers with copies on it, `pods`
/// the pods on the node (listed live: a user's pod that mounts the hostPath by hand counts).
/// Whether a volume's copies are the only place its data is (an output volume's, before its
/// upload): such copies are never evicted.
using SoleCopyCheck = std::function<bool(const api::VolumeManager&, const std::string& volume)>;

/// The SoleCopyCheck of the source types whose copies are uploaded before they go
/// (`uploads(sourceType)`). A volume no longer in the spec counts as sole too: its copies are
/// on their way out (an output volume's through its upload), never evicted meanwhile.
template <class Uploads>
    requires std::predicate<const Uploads&, const std::string&>
SoleCopyCheck sole_copies(Uploads uploads) {
    return [uploads = std::move(uploads)](const api::VolumeManager& vm, const std::string& volume) {
        for (const auto& vc : vm.spec.volumeConfigs)
            if (vc.id == volume) return static_cast<bool>(uploads(vc.sourceType));
        return true;
    };
}

inline EvictionChoice choose_eviction(const api::Node& node, std::span<const api::VolumeManager* const> vms,
                                      std::span<const api::Pod* const> pods, const SoleCopyCheck& sole_copy = {}) {
    EvictionChoice out;
    const std::string& name = node.metadata.name;
    if (!under_disk_pressure(node)) {
        out.why_none = "node " + name + " is not under DiskPressure";
        return out;
    }
    std::vector<EvictionCandidate> candidates;
    std::size_t in_use = 0;
    for (const api::VolumeManager* vm : vms) {
        if (!vm->status) continue;
        for (const auto& e : vm->status->copies) {
            if (e.node != name) continue;
            if (copy_phase(e) == CopyPhase::Removing && e.message.starts_with(evicted_prefix)) {
                out.in_progress = true;
                out.why_none = "the eviction of volume " + e.volume + " of " + vm->metadata.namespace_ + "/" +
                               vm->metadata.name + " is still being cleaned up";
                return out;
            }
            if (copy_phase(e) != CopyPhase::Ready) continue;
            if (sole_copy && sole_copy(*vm, e.volume)) continue;
            if (copy_in_use(e, pods)) {
                ++in_use;
                continue;
            }
            candidates.push_back({vm->metadata.namespace_, vm->metadata.name, e, last_use_of(e)});
        }
    }
    if (candidates.empty()) {
        out.why_none = in_use ? "every Ready copy on node " + name + " is in use (" + std::to_string(in_use) + ")"
                              : "no Ready copy on node " + name;
        return out;
    }
    auto when = [](const EvictionCandidate& c) {
        auto t = api::parse_rfc3339(c.last_use);
        return t ? *t : std::chrono::system_clock::time_point::min();
    };
    auto best = std::min_element(candidates.begin(), candidates.end(), [&](const auto& a, const auto& b) {
        return std::make_tuple(when(a), a.vm_namespace, a.vm_name, a.entry.volume, a.entry.path) <
               std::make_tuple(when(b), b.vm_namespace, b.vm_name, b.entry.volume, b.entry.path);
    });
    out.evict = *best;
    return out;
}

/// The eviction message of an entry, naming the node and the copy's last use.
inline std::string eviction_message(const EvictionCandidate& c) {
    return std::string(evicted_prefix) + "node " + c.entry.node + " under DiskPressure (last used " +
           (c.last_use.empty() ? std::string("never") : c.last_use) + ")";
}

/// `copies` with the candidate's entry marked Removing by eviction; false when the entry is
/// no longer there as chosen (the record moved on: choose again from a fresh view).
inline bool mark_evicted(std::vector<api::CopyRecord>& copies, const EvictionCandidate& c) {
    for (auto& e : copies) {
        if (e.volume != c.entry.volume || e.node != c.entry.node || e.path != c.entry.path) continue;
        if (copy_phase(e) != CopyPhase::Ready) return false;
        e.phase = std::string(to_string(CopyPhase::Removing));
        e.message = eviction_message(c);
        e.inUse.reset();
        return true;
    }
    return false;
}

} // namespace vck::volumes
