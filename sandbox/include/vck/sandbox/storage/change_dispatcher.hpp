// ChangeDispatcher: the store's change listeners (ObjectStore::on_change). Changes are
// queued under the store's lock (StoreState::outbox) and handed to the listeners after it is
// released, by one thread at a time, in resourceVersion order; a listener may write to the
// store, and its writes are dispatched by the loop already running. After remove() returns
// the listener is not running and is never called again (unless remove() was called from
// within that listener itself).
// Lock order: the dispatcher's own lock is taken before the store's, never inside it.
#pragma once

#include <vck/sandbox/storage/change_log.hpp>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace vck::sandbox {

class ChangeDispatcher {
public:
    using Listener = std::function<void(const StoreChange&)>;

    /// Calls `l` after every write (in resourceVersion order, outside the store's lock).
    /// Returns an id for remove.
    std::size_t add(Listener l) {
        std::lock_guard lock(outbox_mu_);
        listeners_.emplace(++next_listener_, std::move(l));
        return next_listener_;
    }
    /// After it returns the listener is not running and is never called again (unless called
    /// from within that listener itself), so it may release what the listener uses.
    void remove(std::size_t id) {
        std::unique_lock lock(outbox_mu_);
        listeners_.erase(id);
        if (!dispatching_ || dispatcher_ == std::this_thread::get_id()) return;
        // Another thread may be calling a copy of it in the batch under way: wait that out.
        auto batch = batches_;
        batch_done_.wait(lock, [&] { return !dispatching_ || batches_ != batch; });
    }

    /// Runs listeners for queued changes; only one thread dispatches at a time, so listeners
    /// see changes in order, and a listener's own writes are dispatched by the same loop.
    void dispatch(std::mutex& store_mu, std::vector<StoreChange>& outbox) {
        std::unique_lock lock(outbox_mu_);
        if (dispatching_) return;
        dispatching_ = true;
        dispatcher_ = std::this_thread::get_id();
        while (true) {
            std::vector<StoreChange> batch;
            {
                std::lock_guard l(store_mu);
                batch.swap(outbox);
            }
            if (batch.empty()) break;
            auto listeners = listeners_;
            lock.unlock();
            for (const auto& c : batch)
                for (const auto& [id, l] : listeners) l(c);
            lock.lock();
            ++batches_;
            batch_done_.notify_all();
        }
        dispatching_ = false;
        dispatcher_ = {};
        batch_done_.notify_all();
    }

private:
    std::mutex outbox_mu_;  // guards listeners_ and dispatching_; taken before the store's lock, never inside it
    std::map<std::size_t, Listener> listeners_;
    std::size_t next_listener_ = 0;
    bool dispatching_ = false;
    std::thread::id dispatcher_;
    std::uint64_t batches_ = 0;  // batches dispatched: remove() waits for the next one
    std::condition_variable batch_done_;
};

} // namespace vck::sandbox
