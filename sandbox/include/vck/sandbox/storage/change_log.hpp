// ChangeLog: the object store's bounded history of writes, like etcd's revision history.
// Every write is one StoreChange with a resourceVersion strictly greater than the last; the log
// keeps the newest `capacity` changes. Guarantee: compacted_rv() is the newest revision that
// is no longer kept, so every change after any rv >= compacted_rv() is still in the log
// (watches resume and paginated lists stay consistent from there); older ones get 410.
// Not thread-safe on its own: the ObjectStore guards it with its lock.
#pragma once

#include <boost/json.hpp>

#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>

namespace vck::sandbox {

/// One write. For DELETED, `object` is the last state with the deletion's resourceVersion.
/// Both states are shared, immutable snapshots: the log, the watch hub, every watch that
/// serves the stored version and the listeners hold the same one, so a change is copied once
/// however many hold it.
struct StoreChange {
    std::int64_t rv = 0;
    std::string type;         // "ADDED", "MODIFIED", "DELETED"
    std::string storage_key;  // "<group>/<plural>": every version of a resource shares it
    std::string group;
    std::string resource;     // plural
    std::string namespace_;   // "" for cluster-scoped objects
    std::string name;
    std::shared_ptr<const boost::json::value> object;    // the state after the write; never null
    std::shared_ptr<const boost::json::value> previous;  // the state before it (null for ADDED)
};

class ChangeLog {
public:
    explicit ChangeLog(std::size_t capacity) : capacity_(capacity) {
        if (capacity == 0) throw std::invalid_argument("a change log needs a capacity of at least 1");
    }

    void append(StoreChange c) {
        if (!log_.empty() && c.rv <= log_.back().rv)
            throw std::logic_error("change log: resourceVersion " + std::to_string(c.rv) + " is not after " +
                                   std::to_string(log_.back().rv));
        log_.push_back(std::move(c));
        while (log_.size() > capacity_) {
            compacted_rv_ = log_.front().rv;
            log_.pop_front();
        }
    }

    /// Forgets every change up to and including `rv` (the newest one when rv is absent).
    void compact(std::int64_t rv) {
        while (!log_.empty() && log_.front().rv <= rv) log_.pop_front();
        if (rv > compacted_rv_) compacted_rv_ = rv;
    }

    std::int64_t compacted_rv() const { return compacted_rv_; }
    /// True when every change after `rv` is still kept.
    bool covers(std::int64_t rv) const { return rv >= compacted_rv_; }
    std::size_t size() const { return log_.size(); }
    std::size_t capacity() const { return capacity_; }

    /// Calls f(change) for each change after rv, oldest first.
    template <class F>
    void for_each_after(std::int64_t rv, F&& f) const {
        for (const auto& c : log_)
            if (c.rv > rv) f(c);
    }
    /// Calls f(change) for each change after rv, newest first (to undo them).
    template <class F>
    void for_each_after_newest_first(std::int64_t rv, F&& f) const {
        for (auto it = log_.rbegin(); it != log_.rend() && it->rv > rv; ++it) f(*it);
    }

private:
    std::size_t capacity_;
    std::deque<StoreChange> log_;
    std::int64_t compacted_rv_ = 0;
};

} // namespace vck::sandbox
