// TokenBucket: `qps` tokens per second refill a bucket holding at most `burst` (golang.org/x/time
// rate.Limiter, as client-go uses it for a client's QPS/burst and for the work queue's
// BucketRateLimiter). reserve() always takes a token and
// returns how long to wait until it is really available (the bucket goes into debt, so callers
// are served in order); try_take() takes one only if available now. Thread-safe; the clock is a
// value (std::chrono clocks or ManualClock), so tests advance time instead of sleeping.
#pragma once

#include <algorithm>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>

namespace vck::client {

template <class Clock = std::chrono::steady_clock>
class TokenBucket {
public:
    using duration = std::chrono::nanoseconds;

    /// A full bucket. Throws std::invalid_argument for qps <= 0 or burst < 1.
    TokenBucket(double qps, int burst, Clock clock = Clock{})
        : clock_(std::move(clock)), qps_(qps), burst_(burst), tokens_(burst), last_(clock_.now()) {
        if (!(qps > 0)) throw std::invalid_argument("token bucket: qps must be > 0, got " + std::to_string(qps));
        if (burst < 1) throw std::invalid_argument("token bucket: burst must be >= 1, got " + std::to_string(burst));
    }

    /// Takes one token; returns zero if it was there, else the wait until it will be.
    duration reserve() {
        std::lock_guard lk(mu_);
        refill();
        tokens_ -= 1.0;
        if (tokens_ >= 0) return duration::zero();
        // Round up so that waiting the returned time always finds the token there.
        auto wait = std::chrono::duration<double>(-tokens_ / qps_);
        auto d = std::chrono::duration_cast<duration>(wait);
        return d < wait ? d + duration(1) : d;
    }

    /// Takes a token only if one is available now.
    bool try_take() {
        std::lock_guard lk(mu_);
        refill();
        if (tokens_ < 1.0) return false;
        tokens_ -= 1.0;
        return true;
    }

    /// Tokens available now (negative while in debt).
    double tokens() const {
        std::lock_guard lk(mu_);
        auto now = clock_.now();
        std::chrono::duration<double> dt = now > last_ ? now - last_ : decltype(now - last_){};
        return std::min<double>(burst_, tokens_ + dt.count() * qps_);
    }

    double qps() const { return qps_; }
    int burst() const { return burst_; }

private:
    void refill() {
        auto now = clock_.now();
        if (now > last_) {
            std::chrono::duration<double> dt = now - last_;
            tokens_ = std::min<double>(burst_, tokens_ + dt.count() * qps_);
            last_ = now;
        }
    }

    mutable std::mutex mu_;
    Clock clock_;
    double qps_;
    int burst_;
    double tokens_;
    typename Clock::time_point last_;
};

} // namespace vck::client
