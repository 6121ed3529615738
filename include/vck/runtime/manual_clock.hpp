// ManualClock: a std::chrono-style clock whose time moves only when advance() is called, so
// tests of backoff, delays and token buckets count instead of sleeping. Copies share one time
// line. Whoever keeps time-based state (the work queue's delayed items) subscribes to be told
// after each advance. Thread-safe.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace vck::runtime {

class ManualClock {
public:
    using duration = std::chrono::nanoseconds;
    using rep = duration::rep;
    using period = duration::period;
    using time_point = std::chrono::time_point<ManualClock, duration>;
    static constexpr bool is_steady = true;

    /// Keeps a subscription alive; dropping it unsubscribes.
    using Subscription = std::shared_ptr<std::function<void()>>;

    ManualClock() : s_(std::make_shared<State>()) {}

    time_point now() const {
        std::lock_guard lk(s_->mu);
        return s_->now;
    }

    /// Moves time forward (never back), then calls every live subscriber, outside the lock so a
    /// subscriber may read the clock.
    void advance(duration d) {
        std::vector<Subscription> live;
        {
            std::lock_guard lk(s_->mu);
            s_->now += std::max(d, duration::zero());
            for (auto& w : s_->subscribers)
                if (auto sp = w.lock()) live.push_back(std::move(sp));
            std::erase_if(s_->subscribers, [](const auto& w) { return w.expired(); });
        }
        for (auto& f : live) (*f)();
    }

    Subscription subscribe(std::function<void()> on_advance) const {
        auto sub = std::make_shared<std::function<void()>>(std::move(on_advance));
        std::lock_guard lk(s_->mu);
        s_->subscribers.push_back(sub);
        return sub;
    }

private:
    struct State {
        std::mutex mu;
        time_point now{duration(1'000'000'000)};  // not the epoch, so "zero" never means "unset"
        std::vector<std::weak_ptr<std::function<void()>>> subscribers;
    };
    std::shared_ptr<State> s_;
};

} // namespace vck::runtime
