// OwnWrites: the writes a reconciler has made and already acted on, so that the watch events
// they cause do not each cost another reconcile (a finalizer added, a status written, a child
// created: the pass that wrote them went on from the object the server returned).
// Guarantees:
// - record(resource, object) remembers the object's resourceVersion as the server returned it;
//   not_own<T>(resource) is a predicate that drops exactly the change carrying that version
//   (the event of that very write, once) and passes every other change, a deletion included;
//   a change by anyone else has another resourceVersion, so it is never dropped.
// - An entry goes when its event is dropped, or after `ttl` should the event never come (a
//   relist that coalesced it into a later version): memory stays bounded.
// Thread-safe: reconciles record on workers, events are filtered on the informers' thread.
#pragma once

#include <vck/runtime/change.hpp>
#include <vck/runtime/object_key.hpp>

#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

namespace vck::runtime {

class OwnWrites {
public:
    using Clock = std::chrono::steady_clock;

    explicit OwnWrites(std::chrono::seconds ttl = std::chrono::seconds(60)) : ttl_(ttl) {}

    /// Remembers the write of `resource` (its plural) `namespace_/name` at `resource_version`.
    void record(std::string_view resource, std::string_view namespace_, std::string_view name,
                std::string_view resource_version) {
        if (resource_version.empty()) return;
        std::lock_guard lock(mu_);
        auto now = Clock::now();
        expire(now);
        Key key{std::string(resource), std::string(namespace_), std::string(name), std::string(resource_version)};
        written_[key] = now + ttl_;
        by_time_.emplace_back(now + ttl_, std::move(key));
    }
    template <class T>
    void record(std::string_view resource, const T& object) {
        record(resource, object.metadata.namespace_, object.metadata.name, object.metadata.resourceVersion);
    }

    /// Whether the change is the event of a recorded write; if so, the record goes.
    template <class T>
    bool consume(std::string_view resource, const Change<T>& c) {
        if (!c.object || c.type == ChangeType::Deleted || c.is_resync()) return false;
        const auto& m = c.object->metadata;
        std::lock_guard lock(mu_);
        auto it = written_.find(Key{std::string(resource), m.namespace_, m.name, m.resourceVersion});
        if (it == written_.end()) return false;
        written_.erase(it);
        return true;
    }

    /// A predicate for a controller's watch of `resource`: every change but own writes' events.
    template <class T>
    auto not_own(std::string resource) {
        return [this, resource = std::move(resource)](const Change<T>& c) { return !consume(resource, c); };
    }

    /// Writes remembered, for tests.
    std::size_t size() const {
        std::lock_guard lock(mu_);
        return written_.size();
    }

private:
    using Key = std::tuple<std::string, std::string, std::string, std::string>;  // resource, ns, name, rv

    /// Drops what is past its time: oldest first (one ttl for all, so insertion order is
    /// expiry order); an entry consumed or recorded again since is left alone.
    void expire(Clock::time_point now) {
        while (!by_time_.empty() && by_time_.front().first < now) {
            auto it = written_.find(by_time_.front().second);
            if (it != written_.end() && it->second == by_time_.front().first) written_.erase(it);
            by_time_.pop_front();
        }
    }

    std::chrono::seconds ttl_;
    mutable std::mutex mu_;
    std::map<Key, Clock::time_point> written_;
    std::deque<std::pair<Clock::time_point, Key>> by_time_;
};

} // namespace vck::runtime
