// Change: one change to a cache of one resource type, the one type everything past the wire
// reads (kube-rs watcher::Event): the store reports what apply_event() and replace() did as
// Changes, the reflector hands them to its listener, the informer to each handler, and a
// controller's predicates and mappings read them. The watch protocol's own types
// (client::WatchEvent, TypedWatchEvent) stay in client/: the reflector converts each once.
// Contract:
// - Added: `object` is the new object; `old` is null.
// - Modified: `object` is the new state and `old` the state it replaced (never null). A
//   resync re-delivers a cached object as a Modified whose `old` and `object` are the same
//   pointer.
// - Deleted: `object` is the last state known (the watch's final state, or the cached one when
//   a relist finds the object gone, or when its new version cannot be decoded); `old` is null.
#pragma once

#include <memory>
#include <string_view>

namespace vck::runtime {

enum class ChangeType { Added, Modified, Deleted };

constexpr std::string_view to_string(ChangeType t) {
    switch (t) {
    case ChangeType::Added: return "ADDED";
    case ChangeType::Modified: return "MODIFIED";
    case ChangeType::Deleted: return "DELETED";
    }
    return "?";
}

template <class T>
struct Change {
    ChangeType type = ChangeType::Added;
    std::shared_ptr<const T> object;
    std::shared_ptr<const T> old;  // Modified only: the state replaced

    /// A resync's re-delivery of an unchanged object (and never a server change).
    bool is_resync() const { return type == ChangeType::Modified && old == object; }
};

} // namespace vck::runtime
