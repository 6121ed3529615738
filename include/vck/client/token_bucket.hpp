// TokenBucket: client-side rate limiting as client-go's flowcontrol limiter: `qps` tokens per
// second refill a bucket of `burst`. reserve() takes a token now or books the next free one
// and returns how long the caller must wait for it, so concurrent callers queue fairly
// instead of busy-polling. Thread-safe. qps <= 0 disables limiting.
#pragma once

#include <algorithm>
#include <chrono>
#include <mutex>

namespace vck::client {

template <class Clock = std::chrono::steady_clock>
class BasicTokenBucket {
public:
    using duration = std::chrono::nanoseconds;

    BasicTokenBucket(double qps, int burst)
        : qps_(qps), burst_(std::max(1, burst)), tokens_(static_cast<double>(std::max(1, burst))),
          last_(Clock::now()) {}

    /// Takes one token; returns the wait before the token is really ours (zero if available).
    duration reserve() { return reserve_at(Clock::now()); }

    /// Takes a token only if one is available now.
    bool try_take() {
        std::lock_guard lk(mu_);
        if (qps_ <= 0) return true;
        refill(Clock::now());
        if (tokens_ < 1.0) return false;
        tokens_ -= 1.0;
        return true;
    }

    duration reserve_at(typename Clock::time_point now) {
        std::lock_guard lk(mu_);
        if (qps_ <= 0) return duration::zero();
        refill(now);
        tokens_ -= 1.0;  // may go negative: the debt is what later callers wait for
        if (tokens_ >= 0) return duration::zero();
        return std::chrono::duration_cast<duration>(std::chrono::duration<double>(-tokens_ / qps_));
    }

    double qps() const { return qps_; }
    int burst() const { return burst_; }

private:
    void refill(typename Clock::time_point now) {
        if (now > last_) {
            std::chrono::duration<double> dt = now - last_;
            tokens_ = std::min<double>(burst_, tokens_ + dt.count() * qps_);
            last_ = now;
        }
    }

    std::mutex mu_;
    double qps_;
    int burst_;
    double tokens_;
    typename Clock::time_point last_;
};

using TokenBucket = BasicTokenBucket<>;

} // namespace vck::client
