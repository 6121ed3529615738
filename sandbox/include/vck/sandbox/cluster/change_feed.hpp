// ChangeFeed: the store's changes to some resources, kept for a simulated controller's next
// pass, so that the pass does the work of what changed instead of listing whole kinds.
// Guarantees: between start() and stop() every change `wanted` accepts is kept, in write order,
// until take() hands it over; the store's listener only appends under a lock of its own (it
// never waits on a pass) and holds only that shared block, never this object. Start the feed
// before the SimLoop it serves: listeners run in the order they were added, so a change is in
// the feed before the loop is woken for it.
#pragma once

#include <vck/sandbox/storage/object_store.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace vck::sandbox {

class ChangeFeed {
public:
    using Filter = std::function<bool(const StoreChange&)>;

    ChangeFeed(ObjectStore& store, Filter wanted) : store_(store), shared_(std::make_shared<Shared>()) {
        shared_->wanted = std::move(wanted);
    }
    ~ChangeFeed() { stop(); }
    ChangeFeed(const ChangeFeed&) = delete;
    ChangeFeed& operator=(const ChangeFeed&) = delete;

    void start() {
        if (listener_) return;
        listener_ = store_.on_change([shared = shared_](const StoreChange& c) {
            if (!shared->wanted(c)) return;
            std::lock_guard lock(shared->mu);
            shared->changes.push_back(c);
        });
    }
    /// Stops keeping changes and drops those kept: a restarted controller lists afresh.
    void stop() {
        if (listener_) store_.remove_listener(std::exchange(listener_, 0));
        clear();
    }
    bool started() const { return listener_ != 0; }

    /// The changes kept since the last take(), oldest first.
    std::vector<StoreChange> take() {
        std::vector<StoreChange> out;
        std::lock_guard lock(shared_->mu);
        out.swap(shared_->changes);
        return out;
    }
    /// Drops the changes kept (a list about to be read is at least as new).
    void clear() {
        std::lock_guard lock(shared_->mu);
        shared_->changes.clear();
    }

private:
    struct Shared {
        std::mutex mu;
        std::vector<StoreChange> changes;
        Filter wanted;
    };
    ObjectStore& store_;
    std::shared_ptr<Shared> shared_;
    std::size_t listener_ = 0;
};

} // namespace vck::sandbox
