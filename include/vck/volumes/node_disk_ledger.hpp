// NodeDiskLedger: the bytes of the copies this controller placed on each node, summed over
// every VolumeManager's record (status.copies) as the VolumeManager cache shows it, for
// placement that knows the disk (copy_planner.hpp).
// Guarantees:
// - Fed every change of the VolumeManager cache (observe), it holds exactly what the cached
//   records say: a VolumeManager's entries replace its earlier ones, and go with it.
// - Every entry counts until its directory is removed (the record keeps it until then),
//   whatever its phase: a Removing or Lost copy's bytes are still on its node's disk.
// - A copy's bytes are its listed size (bytesTotal) once its download has listed the source,
//   else the `capacity` of its volume in the spec (a quantity: "500Mi"), else 0 (a volume gone
//   from the spec that never listed: unknown).
// - A shared copy's directory (volumes/shared_copies.hpp) counts once per node, however many
//   VolumeManagers record it.
// - Thread-safe; O(copies of one VolumeManager) per change, O(log nodes) per question.
// It lags the API by the cache's delay: two VolumeManagers placed in the same moment may both
// count on the same free space; a disk that fills anyway fails the copy (ENOSPC) and it is
// placed elsewhere.
#pragma once

#include <vck/api/quantity.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/runtime/change.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vck::volumes {

/// The bytes `capacity` (a quantity) stands for, or nullopt when it is unset or unreadable.
inline std::optional<std::int64_t> capacity_bytes(const std::string& capacity) {
    auto v = api::quantity_value(capacity);
    if (!v || *v < 0) return std::nullopt;
    return static_cast<std::int64_t>(*v);
}

class NodeDiskLedger {
public:
    void observe(const runtime::Change<api::VolumeManager>& ch) {
        if (!ch.object || ch.is_resync()) return;
        std::lock_guard lock(mu_);
        const auto& uid = ch.object->metadata.uid;
        if (auto it = by_manager_.find(uid); it != by_manager_.end()) {
            for (const auto& c : it->second) release(c);
            by_manager_.erase(it);
        }
        if (ch.type == runtime::ChangeType::Deleted) return;
        auto held = copies_of(*ch.object);
        for (const auto& c : held) hold(c);
        if (!held.empty()) by_manager_.emplace(uid, std::move(held));
    }

    /// The bytes of the copies on `node`.
    std::int64_t used(const std::string& node) const {
        std::lock_guard lock(mu_);
        auto it = totals_.find(node);
        return it == totals_.end() ? 0 : it->second;
    }

    /// A copy's bytes as the ledger counts them (see the top), given its volume's capacity.
    static std::int64_t copy_bytes(const api::CopyRecord& e, const std::string& capacity) {
        if (e.bytesTotal && *e.bytesTotal > 0) return *e.bytesTotal;
        return capacity_bytes(capacity).value_or(0);
    }

private:
    struct Held {
        std::string node;
        std::string shared;  // the directory of a shared copy, else ""
        std::int64_t bytes = 0;
    };

    static std::vector<Held> copies_of(const api::VolumeManager& vm) {
        std::vector<Held> out;
        if (!vm.status) return out;
        for (const auto& e : vm.status->copies) {
            std::string capacity;
            for (const auto& vc : vm.spec.volumeConfigs)
                if (vc.id == e.volume) capacity = vc.capacity;
            if (auto bytes = copy_bytes(e, capacity); bytes > 0 && !e.node.empty())
                out.push_back({e.node, handlers::naming::is_shared_directory(e.path) ? e.path : std::string(), bytes});
        }
        return out;
    }
    void hold(const Held& c) {
        if (!c.shared.empty()) {
            auto& s = shared_[{c.node, c.shared}];
            if (s.first++ > 0) return;  // counted for its first holder
            s.second = c.bytes;
        }
        add(c.node, c.bytes);
    }
    void release(const Held& c) {
        if (!c.shared.empty()) {
            auto it = shared_.find({c.node, c.shared});
            if (it == shared_.end()) return;
            if (--it->second.first > 0) return;
            add(c.node, -it->second.second);
            shared_.erase(it);
            return;
        }
        add(c.node, -c.bytes);
    }
    void add(const std::string& node, std::int64_t bytes) {
        auto& total = totals_[node];
        total += bytes;
        if (total == 0) totals_.erase(node);
    }

    mutable std::mutex mu_;
    std::map<std::string, std::vector<Held>> by_manager_;  // by uid
    std::map<std::pair<std::string, std::string>, std::pair<int, std::int64_t>> shared_;  // (node, dir) -> holders, bytes
    std::map<std::string, std::int64_t> totals_;                                            // by node
};

} // namespace vck::volumes
