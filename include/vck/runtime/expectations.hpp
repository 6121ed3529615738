// Expectations: objects a controller created that its caches may not show yet, kept as
// kube-controller-manager keeps them. A reconcile woken by the event of one new object counts
// the siblings created in the same pass, not cached yet, as there, and so does not create
// them a second time. Guarantees:
// - expect(owner, obj) records `obj` by its {namespace, name} under `owner` (say the owning
//   object's uid); expecting a key again replaces its record and restarts its time.
// - outstanding(owner, in_cache) is what `owner` still expects: a record whose key the cache
//   shows (in_cache(key) true) is satisfied and dropped, and so is a record older than the
//   ttl, whatever its owner (its event may never come: the object was deleted meanwhile).
// - forget(key) drops one record (the object is being deleted, cached or not);
//   forget_owner(owner) drops every record of an owner (its deletion is complete).
// - Time is the Clock's: std::chrono::steady_clock, or runtime/manual_clock.hpp in tests.
// Not thread-safe: callers lock (as for runtime/lru_map.hpp). No I/O.
#pragma once

#include <vck/runtime/object_key.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace vck::runtime {

template <class T, class Clock = std::chrono::steady_clock>
class Expectations {
public:
    explicit Expectations(typename Clock::duration ttl, Clock clock = Clock()) : ttl_(ttl), clock_(std::move(clock)) {}

    void expect(std::string owner, const T& obj) {
        records_.insert_or_assign(ObjectKey{obj.metadata.namespace_, obj.metadata.name},
                                  Record{std::move(owner), clock_.now(), obj});
    }

    /// `owner`'s records the cache does not show yet, in key order; first drops every record
    /// that is satisfied (`in_cache(const ObjectKey&)` true) or older than the ttl.
    template <class InCache>
    std::vector<T> outstanding(const std::string& owner, InCache&& in_cache) {
        auto now = clock_.now();
        std::vector<T> out;
        for (auto it = records_.begin(); it != records_.end();) {
            if (now - it->second.at > ttl_ || in_cache(it->first)) {
                it = records_.erase(it);
                continue;
            }
            if (it->second.owner == owner) out.push_back(it->second.obj);
            ++it;
        }
        return out;
    }

    void forget(const ObjectKey& key) { records_.erase(key); }

    void forget_owner(const std::string& owner) {
        std::erase_if(records_, [&](const auto& r) { return r.second.owner == owner; });
    }

    /// Records held, satisfied or expired ones not yet dropped included.
    std::size_t size() const { return records_.size(); }

private:
    struct Record {
        std::string owner;
        typename Clock::time_point at;
        T obj;
    };

    typename Clock::duration ttl_;
    Clock clock_;
    std::map<ObjectKey, Record> records_;
};

} // namespace vck::runtime
