// LeaderElector: leader election on a coordination.k8s.io/v1 Lease, with client-go's
// algorithm and defaults (lease 15 s, renew deadline 10 s, retry 2 s). A candidate takes the
// lease when it is free or its holder has not renewed it for a whole lease duration (measured
// on the local monotonic clock from when this process last saw the record change, never from
// the holder's clock); the leader renews every retry period and gives up leadership at once
// when it could not renew within the renew deadline (< lease duration, so it has stopped
// before anyone else may take over). Writes use the Lease's resourceVersion: a conflict
// means someone else wrote first. On stop() a leader releases the lease (holder cleared).
// Leadership is valid only while less than the renew deadline has passed, on the monotonic
// clock, since the start of the last successful acquire or renew (holds_lease_now()): a
// process stopped (SIGSTOP, a long pause) past it sees so the moment it resumes, before its
// renew loop has run, since CLOCK_MONOTONIC keeps counting while a process is stopped.
// The record lives behind a LeaseLock (lease_lock.hpp): the API server's Lease through a
// client (client_lease_lock.hpp) or one in memory (memory_lease_lock.hpp); nothing here does
// I/O of its own. An empty identity becomes hostname_uuid, as client-go's callers make it.
#pragma once

#include <vck/api/coordination_v1.hpp>
#include <vck/api/time.hpp>
#include <vck/client/error.hpp>
#include <vck/runtime/lease_lock.hpp>
#include <vck/runtime/log.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fmt/chrono.h>
#include <fmt/core.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>

#include <unistd.h>

namespace vck::runtime {

namespace asio = boost::asio;

struct LeaderElectionOptions {
    LeaderElectionOptions() {}
    std::string namespace_ = "default";
    std::string name;      // the Lease's name
    std::string identity;  // this candidate; empty: default_identity()
    std::chrono::milliseconds lease_duration{15'000};
    std::chrono::milliseconds renew_deadline{10'000};
    std::chrono::milliseconds retry_period{2'000};
    bool release_on_cancel = true;

    /// Throws std::invalid_argument naming the broken rule (client-go's checks; an empty
    /// identity is allowed: the elector gives it default_identity()).
    void validate() const {
        if (name.empty()) throw std::invalid_argument("leader election: lease name is empty");
        if (lease_duration <= renew_deadline)
            throw std::invalid_argument("leader election: lease duration must be greater than the renew deadline");
        if (renew_deadline <= retry_period)
            throw std::invalid_argument("leader election: renew deadline must be greater than the retry period");
        if (retry_period <= std::chrono::milliseconds::zero())
            throw std::invalid_argument("leader election: retry period must be > 0");
    }

    /// "<hostname>_<random UUID>": unique per process even for two on one host (a pod's
    /// restarted container, a test's two managers), as controller-runtime's default is.
    static std::string default_identity() {
        char host[256] = {};
        if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
        std::random_device rd;
        unsigned char b[16];
        for (auto& c : b) c = static_cast<unsigned char>(rd());
        b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
        b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
        std::string uuid;
        for (int i = 0; i < 16; ++i) {
            if (i == 4 || i == 6 || i == 8 || i == 10) uuid += '-';
            uuid += fmt::format("{:02x}", b[i]);
        }
        return std::string(host) + "_" + uuid;
    }
    /// These options with an empty identity replaced by default_identity().
    LeaderElectionOptions with_identity() const {
        LeaderElectionOptions o = *this;
        if (o.identity.empty()) o.identity = default_identity();
        return o;
    }
};

struct LeaderCallbacks {
    std::function<void()> on_started_leading;
    /// Called the moment leadership ends (lost or released): stop leader-only work now.
    std::function<void()> on_stopped_leading;
    std::function<void(const std::string&)> on_new_leader;
};

class LeaderElector {
public:
    /// Waits on `ex`; reads and writes the record through `lock`.
    LeaderElector(asio::any_io_executor ex, std::shared_ptr<LeaseLock> lock, LeaderElectionOptions o,
                  LeaderCallbacks cb = {})
        : lock_(lock ? std::move(lock) : throw std::invalid_argument("leader election: no lease lock")),
          opts_(o.with_identity()), cb_(std::move(cb)), timer_(std::move(ex)) {
        opts_.validate();
    }

    /// Campaigns until leading, leads until the lease is lost or stop(); then returns.
    asio::awaitable<void> run() {
        while (!stopped_) {
            auto started = std::chrono::steady_clock::now();
            if (co_await attempt()) {
                renewed(started);
                break;
            }
            co_await sleep(opts_.retry_period);
        }
        if (stopped_) co_return;
        leading_ = true;
        if (cb_.on_started_leading) cb_.on_started_leading();
        while (!stopped_) {
            co_await sleep(opts_.retry_period);
            if (stopped_) break;
            // The lease written says "renewed at the start": count from there, never later.
            auto started = std::chrono::steady_clock::now();
            bool ok = false;
            if (!abandoned_) ok = co_await attempt();
            if (ok) {
                renewed(started);
            } else if (since_renew() >= opts_.renew_deadline) {
                lost_ = true;
                break;
            }
        }
        leading_ = false;
        if (cb_.on_stopped_leading) cb_.on_stopped_leading();
        if (stopped_ && !lost_ && !abandoned_ && opts_.release_on_cancel) co_await release();
    }

    /// Ends run(); a leader releases the lease first (if release_on_cancel).
    void stop() {
        stopped_ = true;
        timer_.cancel();
    }
    /// Stops renewing without releasing, as a hung or partitioned process would: leadership
    /// ends after the renew deadline and others take over after the lease duration.
    void abandon() { abandoned_ = true; }

    /// Leads as far as the elector's loop knows: may still be true in the moments after a
    /// pause, before the loop has run again; holds_lease_now() is the one to gate work on.
    bool is_leader() const { return leading_.load(); }
    /// Leads, and renewed the lease less than the renew deadline ago (measured now): no other
    /// candidate can have taken it over yet. Thread-safe.
    bool holds_lease_now() const {
        return leading_.load() && !lost_.load() && since_renew() < opts_.renew_deadline;
    }
    /// Time since the start of the last successful acquire or renew (the maximum before any).
    std::chrono::milliseconds since_renew() const {
        auto last = last_renew_.load();
        if (last == kNever) return std::chrono::milliseconds::max();
        auto d = std::chrono::steady_clock::now().time_since_epoch() - std::chrono::steady_clock::duration(last);
        return std::chrono::duration_cast<std::chrono::milliseconds>(d);
    }
    bool lost() const { return lost_.load(); }
    std::string observed_holder() const {
        std::lock_guard lk(mu_);
        return observed_.holderIdentity;
    }
    const LeaderElectionOptions& options() const { return opts_; }

    /// MicroTime, as Lease timestamps are written.
    static std::string micro_time(std::chrono::system_clock::time_point t) { return api::format_micro_time(t); }

private:
    void renewed(std::chrono::steady_clock::time_point started) { last_renew_ = started.time_since_epoch().count(); }

    /// One try to acquire or renew; false if someone else holds it or a write failed.
    asio::awaitable<bool> attempt() {
        try {
            co_return co_await try_acquire_or_renew();
        } catch (const std::exception& e) {
            log::error("error retrieving or updating the leader election lease",
                       {{"lease", opts_.namespace_ + "/" + opts_.name}, {"identity", opts_.identity}, {"error", e.what()}});
            co_return false;
        }
    }

    asio::awaitable<bool> try_acquire_or_renew() {
        auto now_s = micro_time(std::chrono::system_clock::now());
        std::optional<api::Lease> current = co_await lock_->get(opts_.namespace_, opts_.name);
        if (!current) {
            api::Lease l;
            l.metadata.name = opts_.name;
            l.metadata.namespace_ = opts_.namespace_;
            fill(l.spec, now_s, now_s, 0);
            try {
                auto created = co_await lock_->create(l);
                observe(created.spec);
                co_return true;
            } catch (const client::ApiError& e) {
                if (e.is(client::ErrorKind::AlreadyExists)) co_return false;
                throw;
            }
        }
        auto& spec = current->spec;
        observe(spec);
        auto holder = spec.holderIdentity;
        if (!holder.empty() && holder != opts_.identity) {
            std::lock_guard lk(mu_);
            if (std::chrono::steady_clock::now() < observed_at_ + opts_.lease_duration) co_return false;
        }
        api::Lease next = *current;
        if (holder == opts_.identity) fill(next.spec, spec.acquireTime, now_s, spec.leaseTransitions.value_or(0));
        else fill(next.spec, now_s, now_s, spec.leaseTransitions.value_or(0) + 1);
        try {
            auto written = co_await lock_->update(next);
            observe(written.spec);
            co_return true;
        } catch (const client::ApiError& e) {
            if (e.is(client::ErrorKind::Conflict)) co_return false;
            throw;
        }
    }

    void fill(api::LeaseSpec& s, std::string acquire, std::string renew, std::int64_t transitions) const {
        s.holderIdentity = opts_.identity;
        auto secs = std::chrono::ceil<std::chrono::seconds>(opts_.lease_duration).count();
        s.leaseDurationSeconds = std::max<std::int64_t>(1, secs);
        s.acquireTime = std::move(acquire);
        s.renewTime = std::move(renew);
        s.leaseTransitions = transitions;
    }

    /// Restarts the expiry clock whenever the record changes (any renewal by anyone).
    void observe(const api::LeaseSpec& s) {
        std::string changed_to;
        {
            std::lock_guard lk(mu_);
            if (s.holderIdentity != observed_.holderIdentity || s.renewTime != observed_.renewTime ||
                observed_at_ == std::chrono::steady_clock::time_point{}) {
                if (s.holderIdentity != observed_.holderIdentity) changed_to = s.holderIdentity;
                observed_ = s;
                observed_at_ = std::chrono::steady_clock::now();
            }
        }
        if (!changed_to.empty() && cb_.on_new_leader) cb_.on_new_leader(changed_to);
    }

    asio::awaitable<void> release() {
        try {
            auto l = co_await lock_->get(opts_.namespace_, opts_.name);
            if (!l || l->spec.holderIdentity != opts_.identity) co_return;
            l->spec.holderIdentity.clear();
            l->spec.leaseDurationSeconds = 1;
            l->spec.renewTime = micro_time(std::chrono::system_clock::now());
            co_await lock_->update(*l);
        } catch (const std::exception& e) {
            log::error("failed to release the leader election lease",
                       {{"lease", opts_.namespace_ + "/" + opts_.name}, {"identity", opts_.identity}, {"error", e.what()}});
        }
    }

    asio::awaitable<void> sleep(std::chrono::milliseconds d) {
        if (stopped_) co_return;
        timer_.expires_after(d);
        boost::system::error_code ec;
        co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }

    std::shared_ptr<LeaseLock> lock_;
    LeaderElectionOptions opts_;
    LeaderCallbacks cb_;
    asio::steady_timer timer_;
    mutable std::mutex mu_;
    api::LeaseSpec observed_;
    std::chrono::steady_clock::time_point observed_at_{};
    std::atomic<bool> stopped_{false}, abandoned_{false}, leading_{false}, lost_{false};
    static constexpr std::chrono::steady_clock::rep kNever = std::numeric_limits<std::chrono::steady_clock::rep>::min();
    std::atomic<std::chrono::steady_clock::rep> last_renew_{kNever};  // steady_clock ticks
};

} // namespace vck::runtime
