// WorkQueue: the rate-limited, delaying work queue of a controller (client-go util/workqueue),
// with coroutine workers. Invariants, each tested on its own:
//  - a key waiting in the queue is there once, however often it is added (deduplication);
//  - a key is never handed to two workers at once: between get() and done() it is "processing";
//  - a key added while processing is not handed out then, but queued once more at done();
//  - add_after(k, d) adds k once d has elapsed (of several pending delays, the earliest wins);
//    cancel_delayed(k) drops k's pending delayed add, if any (not k queued or processing);
//  - add_rate_limited(k) = add_after(k, limiter.when(k)); forget(k) resets k's backoff;
//  - after shut_down() adds are ignored and get() returns nullopt (queued keys are dropped);
//    after shut_down_with_drain() adds are ignored, get() still hands out what was queued
//    (and keys re-queued by done()), and the drain completes once nothing is queued or processing.
// Thread-safe: usable from several coroutines on one io_context or on a multi-threaded one.
// Key: copyable and totally ordered (std::string, ObjectKey). Clock: a std::chrono clock, or
// ManualClock for tests (delays then follow its advance(), not real time).
// Caveat: a get() cancelled after a key was handed to it (its completion already posted)
// still completes with the key; if the awaiting code drops it, that key stays processing.
#pragma once

#include <vck/runtime/rate_limiter.hpp>
#include <vck/runtime/work_queue_metrics.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace vck::runtime {

namespace asio = boost::asio;

/// A clock that announces its own advances (ManualClock). The queue then promotes delayed keys
/// when told, instead of arming a real timer.
template <class C>
concept AnnouncingClock = requires(const C& c) { c.subscribe(std::function<void()>{}); };

template <class Key = std::string, class Clock = std::chrono::steady_clock>
class WorkQueue {
public:
    using key_type = Key;
    using duration = std::chrono::nanoseconds;
    using GetSignature = void(boost::system::error_code, std::optional<Key>);
    using DrainSignature = void(boost::system::error_code);

    struct Options {
        std::string name;  // the metrics' "name" label
        /// Null means default_controller_rate_limiter on the queue's clock.
        std::unique_ptr<RateLimiter<Key>> rate_limiter;
    };

    /// `ex` runs the delay timer and is where completions go when a handler names no executor.
    /// Destroy the queue before the io_context it runs on (as any Asio I/O object).
    explicit WorkQueue(asio::any_io_executor ex, Options opts = {}, Clock clock = Clock{})
        : impl_(std::make_shared<Impl>(std::move(ex), std::move(opts), std::move(clock))) {
        if constexpr (AnnouncingClock<Clock>) {
            impl_->subscription = impl_->clock.subscribe([w = std::weak_ptr<Impl>(impl_)] {
                if (auto s = w.lock()) s->on_time_passed();
            });
        }
    }
    ~WorkQueue() {
        if (impl_) impl_->close();
    }
    WorkQueue(const WorkQueue&) = delete;
    WorkQueue& operator=(const WorkQueue&) = delete;

    /// Queues `key` unless it is already queued; if it is processing, it is queued at done().
    void add(const Key& key) { impl_->add(key); }
    /// Adds `key` after `delay` (now, if delay <= 0).
    void add_after(const Key& key, duration delay) { impl_->add_after(key, delay); }
    /// Adds `key` after the rate limiter's delay for it, and counts a retry.
    void add_rate_limited(const Key& key) {
        if (impl_->is_shutting_down()) return;
        auto d = impl_->limiter->when(key);
        impl_->count_retry();
        impl_->add_after(key, d);
    }
    /// Drops `key`'s pending delayed add (add_after, add_rate_limited), if any; a key already
    /// queued or processing is not affected.
    void cancel_delayed(const Key& key) { impl_->cancel_delayed(key); }
    /// Clears `key`'s backoff history (call on success). It does not remove a pending add.
    void forget(const Key& key) { impl_->limiter->forget(key); }
    int num_requeues(const Key& key) const { return impl_->limiter->num_requeues(key); }

    /// Ends the processing of `key` (from get()); re-queues it if it was added meanwhile.
    /// A key that is not processing is ignored.
    void done(const Key& key) { impl_->done(key); }

    /// Waits for a key and marks it processing; completes with nullopt once shut down (drained).
    /// Cancelling a waiting get() completes it with operation_aborted and takes no key.
    template <asio::completion_token_for<GetSignature> Token = asio::default_completion_token_t<asio::any_io_executor>>
    auto async_get(Token&& token = {}) {
        return asio::async_initiate<Token, GetSignature>(
            [impl = impl_](auto handler) { impl->start_get(std::move(handler)); }, token);
    }
    /// The coroutine form of async_get(); suspends the coroutine, never the thread.
    asio::awaitable<std::optional<Key>> get() { co_return co_await async_get(asio::use_awaitable); }

    /// Stops the queue now: adds are ignored, queued and delayed keys are dropped, every
    /// waiting and later get() completes with nullopt. Keys in processing may still be done().
    void shut_down() { impl_->shut_down(); }

    /// Stops accepting adds and lets workers finish: completes when nothing is queued or processing.
    template <asio::completion_token_for<DrainSignature> Token = asio::default_completion_token_t<asio::any_io_executor>>
    auto async_shut_down_with_drain(Token&& token = {}) {
        return asio::async_initiate<Token, DrainSignature>(
            [impl = impl_](auto handler) { impl->start_drain(std::move(handler)); }, token);
    }
    asio::awaitable<void> shut_down_with_drain() { co_await async_shut_down_with_drain(asio::use_awaitable); }

    bool shutting_down() const { return impl_->is_shutting_down(); }
    /// Keys ready to be handed out (not counting delayed or processing ones).
    std::size_t len() const { return impl_->snapshot().depth; }
    /// Keys waiting for their add_after() delay.
    std::size_t delayed() const { return impl_->delayed_count(); }
    WorkQueueMetrics metrics() const { return impl_->snapshot(); }

private:
    using time_point = typename Clock::time_point;
    using GetHandler = asio::any_completion_handler<GetSignature>;
    using DrainHandler = asio::any_completion_handler<DrainSignature>;

    /// Handlers to complete once the lock is released: completing under the lock would let a
    /// handler run inline on another thread while we still hold it.
    struct Completions {
        std::vector<std::pair<GetHandler, std::optional<Key>>> gets;
        std::vector<GetHandler> aborted_gets;
        std::vector<DrainHandler> drains;
        std::vector<DrainHandler> aborted_drains;
    };

    struct Waiter {
        std::uint64_t id;
        GetHandler handler;
    };

    struct Impl : std::enable_shared_from_this<Impl> {
        Impl(asio::any_io_executor e, Options o, Clock c)
            : ex(std::move(e)), clock(std::move(c)), timer(ex) {
            metrics.name = std::move(o.name);
            limiter = o.rate_limiter ? std::move(o.rate_limiter) : default_controller_rate_limiter<Key, Clock>(clock);
        }

        asio::any_io_executor ex;
        Clock clock;
        std::unique_ptr<RateLimiter<Key>> limiter;
        std::shared_ptr<void> subscription;

        mutable std::mutex mu;
        std::deque<Key> queue;
        std::set<Key> dirty;                      // wanted once more: queued, or added while processing
        std::map<Key, time_point> added_at;       // for dirty keys: when they became dirty
        std::map<Key, time_point> processing;     // key -> when get() handed it out
        std::map<Key, time_point> waiting;        // delayed key -> when it becomes ready
        std::set<std::pair<time_point, Key>> waiting_by_time;
        std::deque<Waiter> waiters;
        std::uint64_t next_waiter_id = 0;
        std::vector<DrainHandler> drainers;
        bool shutting_down = false;
        bool draining = false;
        WorkQueueMetrics metrics;
        asio::steady_timer timer;
        std::optional<time_point> armed_for;

        // --- state transitions (all with mu held) ---

        void add_locked(const Key& k, time_point now) {
            if (shutting_down) return;
            if (dirty.contains(k)) return;
            ++metrics.adds_total;
            dirty.insert(k);
            added_at[k] = now;
            if (processing.contains(k)) return;
            queue.push_back(k);
        }

        bool drained_locked() const { return processing.empty() && (queue.empty() || !draining); }
        /// get() answers nullopt: shut down, and (when draining) nothing more can come.
        bool finished_locked() const { return shutting_down && (!draining || drained_locked()); }

        Key take_locked(time_point now) {
            Key k = std::move(queue.front());
            queue.pop_front();
            dirty.erase(k);
            if (auto it = added_at.find(k); it != added_at.end()) {
                metrics.queue_duration_seconds.observe(seconds(now - it->second));
                added_at.erase(it);
            }
            processing[k] = now;
            return k;
        }

        void pump_locked(Completions& c, time_point now) {
            while (!waiters.empty() && !queue.empty()) {
                c.gets.emplace_back(std::move(waiters.front().handler), take_locked(now));
                waiters.pop_front();
            }
            if (finished_locked()) {
                for (auto& w : waiters) c.gets.emplace_back(std::move(w.handler), std::nullopt);
                waiters.clear();
            }
            if (shutting_down && drained_locked()) {
                for (auto& d : drainers) c.drains.push_back(std::move(d));
                drainers.clear();
            }
        }

        void promote_due_locked(time_point now) {
            while (!waiting_by_time.empty() && waiting_by_time.begin()->first <= now) {
                Key k = waiting_by_time.begin()->second;
                waiting_by_time.erase(waiting_by_time.begin());
                waiting.erase(k);
                add_locked(k, now);
            }
        }

        void arm_timer_locked(time_point now) {
            if constexpr (!AnnouncingClock<Clock>) {
                if (waiting_by_time.empty()) {
                    if (armed_for) timer.cancel();
                    armed_for.reset();
                    return;
                }
                auto next = waiting_by_time.begin()->first;
                if (armed_for && *armed_for == next) return;
                armed_for = next;
                auto wait = std::chrono::ceil<asio::steady_timer::duration>(next - now);
                timer.expires_after(wait);  // cancels the previous wait, whose handler then ignores it
                timer.async_wait([w = this->weak_from_this(), next](boost::system::error_code ec) {
                    if (ec) return;
                    if (auto s = w.lock()) s->on_timer(next);
                });
            } else {
                (void)now;
            }
        }

        void clear_delayed_locked() {
            waiting.clear();
            waiting_by_time.clear();
            if constexpr (!AnnouncingClock<Clock>) {
                if (armed_for) timer.cancel();
                armed_for.reset();
            }
        }

        // --- entry points ---

        void add(const Key& k) {
            Completions c;
            {
                std::lock_guard lk(mu);
                auto now = clock.now();
                add_locked(k, now);
                pump_locked(c, now);
                metrics.depth = static_cast<std::int64_t>(queue.size());
            }
            complete(c);
        }

        void add_after(const Key& k, duration d) {
            if (d <= duration::zero()) return add(k);
            std::lock_guard lk(mu);
            if (shutting_down) return;
            auto now = clock.now();
            auto ready = now + std::chrono::duration_cast<typename Clock::duration>(d);
            if (auto it = waiting.find(k); it != waiting.end()) {
                if (it->second <= ready) return;
                waiting_by_time.erase({it->second, k});
                it->second = ready;
            } else {
                waiting.emplace(k, ready);
            }
            waiting_by_time.emplace(ready, k);
            arm_timer_locked(now);
        }

        void cancel_delayed(const Key& k) {
            std::lock_guard lk(mu);
            auto it = waiting.find(k);
            if (it == waiting.end()) return;
            waiting_by_time.erase({it->second, k});
            waiting.erase(it);
            arm_timer_locked(clock.now());
        }

        void on_time_passed() {
            Completions c;
            {
                std::lock_guard lk(mu);
                auto now = clock.now();
                promote_due_locked(now);
                arm_timer_locked(now);
                pump_locked(c, now);
                metrics.depth = static_cast<std::int64_t>(queue.size());
            }
            complete(c);
        }

        void on_timer(time_point fired_for) {
            {
                std::lock_guard lk(mu);
                if (armed_for && *armed_for == fired_for) armed_for.reset();
            }
            on_time_passed();
        }

        void done(const Key& k) {
            Completions c;
            {
                std::lock_guard lk(mu);
                auto it = processing.find(k);
                if (it == processing.end()) return;
                auto now = clock.now();
                metrics.work_duration_seconds.observe(seconds(now - it->second));
                processing.erase(it);
                if (dirty.contains(k)) queue.push_back(k);
                pump_locked(c, now);
                metrics.depth = static_cast<std::int64_t>(queue.size());
            }
            complete(c);
        }

        template <class Handler>
        void start_get(Handler&& handler) {
            auto slot = asio::get_associated_cancellation_slot(handler);
            GetHandler h(std::forward<Handler>(handler));
            Completions c;
            {
                std::lock_guard lk(mu);
                auto now = clock.now();
                if (!queue.empty()) {
                    c.gets.emplace_back(std::move(h), take_locked(now));
                    metrics.depth = static_cast<std::int64_t>(queue.size());
                    pump_locked(c, now);  // a drain may have just finished
                } else if (finished_locked()) {
                    c.gets.emplace_back(std::move(h), std::nullopt);
                } else {
                    auto id = ++next_waiter_id;
                    waiters.push_back(Waiter{id, std::move(h)});
                    if (slot.is_connected()) {
                        slot.assign([w = this->weak_from_this(), id](asio::cancellation_type) {
                            if (auto s = w.lock()) s->cancel_waiter(id);
                        });
                    }
                }
            }
            complete(c);
        }

        void cancel_waiter(std::uint64_t id) {
            Completions c;
            {
                std::lock_guard lk(mu);
                for (auto it = waiters.begin(); it != waiters.end(); ++it)
                    if (it->id == id) {
                        c.aborted_gets.push_back(std::move(it->handler));
                        waiters.erase(it);
                        break;
                    }
            }
            complete(c);
        }

        void shut_down() {
            Completions c;
            {
                std::lock_guard lk(mu);
                shutting_down = true;
                draining = false;
                queue.clear();
                dirty.clear();
                added_at.clear();
                clear_delayed_locked();
                metrics.depth = 0;
                pump_locked(c, clock.now());
            }
            complete(c);
        }

        template <class Handler>
        void start_drain(Handler&& handler) {
            DrainHandler h(std::forward<Handler>(handler));
            Completions c;
            {
                std::lock_guard lk(mu);
                if (!shutting_down) draining = true;  // after shut_down() there is nothing left to drain
                shutting_down = true;
                clear_delayed_locked();
                drainers.push_back(std::move(h));
                pump_locked(c, clock.now());
            }
            complete(c);
        }

        /// For the queue's destructor: like shut_down(), and a drain still waiting is aborted.
        void close() {
            shut_down();
            Completions c;
            {
                std::lock_guard lk(mu);
                for (auto& d : drainers) c.aborted_drains.push_back(std::move(d));
                drainers.clear();
                subscription.reset();
            }
            complete(c);
        }

        bool is_shutting_down() const {
            std::lock_guard lk(mu);
            return shutting_down;
        }
        void count_retry() {
            std::lock_guard lk(mu);
            ++metrics.retries_total;
        }
        std::size_t delayed_count() const {
            std::lock_guard lk(mu);
            return waiting.size();
        }

        WorkQueueMetrics snapshot() const {
            std::lock_guard lk(mu);
            WorkQueueMetrics m = metrics;
            m.depth = static_cast<std::int64_t>(queue.size());
            auto now = clock.now();
            for (const auto& [k, started] : processing) {
                double s = seconds(now - started);
                m.unfinished_work_seconds += s;
                m.longest_running_processor_seconds = std::max(m.longest_running_processor_seconds, s);
            }
            return m;
        }

        void complete(Completions& c) {
            using boost::system::error_code;
            for (auto& [h, k] : c.gets) asio::post(ex, asio::append(std::move(h), error_code{}, std::move(k)));
            for (auto& h : c.aborted_gets)
                asio::post(ex, asio::append(std::move(h), error_code(asio::error::operation_aborted), std::optional<Key>{}));
            for (auto& h : c.drains) asio::post(ex, asio::append(std::move(h), error_code{}));
            for (auto& h : c.aborted_drains)
                asio::post(ex, asio::append(std::move(h), error_code(asio::error::operation_aborted)));
        }

        template <class D>
        static double seconds(D d) {
            return std::chrono::duration<double>(d).count();
        }
    };

    std::shared_ptr<Impl> impl_;
};

} // namespace vck::runtime
