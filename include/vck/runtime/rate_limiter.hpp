// RateLimiter: decides how long an item waits before it is retried (client-go
// workqueue.RateLimiter). when(item) records one more failure and returns the delay;
// forget(item) clears the item's history; num_requeues(item) counts failures since then.
// Provided: per-item exponential backoff, an overall token bucket, and the max-of combinator;
// default_controller_rate_limiter() is client-go's (5 ms doubling to 1000 s, max'd with 10 qps,
// burst 100). All are thread-safe.
#pragma once

#include <vck/client/token_bucket.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace vck::runtime {

template <class Key>
class RateLimiter {
public:
    using duration = std::chrono::nanoseconds;
    virtual ~RateLimiter() = default;
    /// Records a failure of `item`; returns how long it must wait before its retry.
    virtual duration when(const Key& item) = 0;
    /// Clears `item`'s failure history (it succeeded, or is gone).
    virtual void forget(const Key& item) = 0;
    /// Failures recorded for `item` since the last forget().
    virtual int num_requeues(const Key& item) const = 0;
};

/// base * 2^failures, capped at max_delay; independent per item.
template <class Key>
class ItemExponentialFailureRateLimiter final : public RateLimiter<Key> {
public:
    using duration = typename RateLimiter<Key>::duration;

    ItemExponentialFailureRateLimiter(duration base, duration max_delay) : base_(base), max_(max_delay) {
        if (base <= duration::zero()) throw std::invalid_argument("exponential backoff: base delay must be > 0");
        if (max_delay < base) throw std::invalid_argument("exponential backoff: max delay must be >= base delay");
    }

    duration when(const Key& item) override {
        std::lock_guard lk(mu_);
        int exp = failures_[item]++;
        // In floating point: 2^exp overflows any integer long before it reaches the cap test.
        double d = static_cast<double>(base_.count()) * std::pow(2.0, exp);
        if (!(d < static_cast<double>(max_.count()))) return max_;
        return duration(static_cast<duration::rep>(d));
    }
    void forget(const Key& item) override {
        std::lock_guard lk(mu_);
        failures_.erase(item);
    }
    int num_requeues(const Key& item) const override {
        std::lock_guard lk(mu_);
        auto it = failures_.find(item);
        return it == failures_.end() ? 0 : it->second;
    }

private:
    mutable std::mutex mu_;
    duration base_, max_;
    std::map<Key, int> failures_;
};

/// One token bucket shared by all items: bounds the overall retry rate, keeps no per-item state.
template <class Key, class Clock = std::chrono::steady_clock>
class BucketRateLimiter final : public RateLimiter<Key> {
public:
    using duration = typename RateLimiter<Key>::duration;

    BucketRateLimiter(double qps, int burst, Clock clock = Clock{}) : bucket_(qps, burst, std::move(clock)) {}

    duration when(const Key&) override { return bucket_.reserve(); }
    void forget(const Key&) override {}
    int num_requeues(const Key&) const override { return 0; }

private:
    client::TokenBucket<Clock> bucket_;
};

/// The longest delay any of its limiters asks for; every limiter sees every call.
template <class Key>
class MaxOfRateLimiter final : public RateLimiter<Key> {
public:
    using duration = typename RateLimiter<Key>::duration;

    explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter<Key>>> limiters)
        : limiters_(std::move(limiters)) {
        if (limiters_.empty()) throw std::invalid_argument("max-of rate limiter needs at least one limiter");
        for (const auto& l : limiters_)
            if (!l) throw std::invalid_argument("max-of rate limiter: null limiter");
    }

    duration when(const Key& item) override {
        duration d = duration::zero();
        for (auto& l : limiters_) d = std::max(d, l->when(item));
        return d;
    }
    void forget(const Key& item) override {
        for (auto& l : limiters_) l->forget(item);
    }
    int num_requeues(const Key& item) const override {
        int n = 0;
        for (const auto& l : limiters_) n = std::max(n, l->num_requeues(item));
        return n;
    }

private:
    std::vector<std::unique_ptr<RateLimiter<Key>>> limiters_;
};

/// client-go's DefaultControllerRateLimiter: max(5 ms * 2^failures capped at 1000 s, 10 qps burst 100).
template <class Key, class Clock = std::chrono::steady_clock>
std::unique_ptr<RateLimiter<Key>> default_controller_rate_limiter(Clock clock = Clock{}) {
    using namespace std::chrono_literals;
    std::vector<std::unique_ptr<RateLimiter<Key>>> v;
    v.push_back(std::make_unique<ItemExponentialFailureRateLimiter<Key>>(5ms, 1000s));
    v.push_back(std::make_unique<BucketRateLimiter<Key, Clock>>(10.0, 100, std::move(clock)));
    return std::make_unique<MaxOfRateLimiter<Key>>(std::move(v));
}

} // namespace vck::runtime
