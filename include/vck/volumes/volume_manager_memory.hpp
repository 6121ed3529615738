// VolumeManagerMemory: what VolumeManagerReconciler remembers of one VolumeManager between
// passes, in one place with one lifetime: the Pending grace window, the view its last record
// write was made from, when its downloads were last asked for progress, and the sub-resource
// creates the API server refused (backed off per volume). An entry exists only while
// something in it is pending (a VolumeManager with nothing pending costs nothing) and goes
// whole with forget() once the VolumeManager's deletion completes. Thread-safe: reconciles of
// different VolumeManagers run at once.
#pragma once

#include <vck/api/volume_manager.hpp>
#include <vck/client/error.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>

namespace vck::volumes {

/// 400, 403, 404 and 422 on a create: the same request will be refused again until
/// something changes, so it is backed off instead of retried at once.
inline bool permanent_refusal(const client::ApiError& e) {
    return e.is(client::ErrorKind::Invalid) || e.is(client::ErrorKind::BadRequest) ||
           e.is(client::ErrorKind::Forbidden) || e.is(client::ErrorKind::NotFound);
}

class VolumeManagerMemory {
public:
    using Clock = std::chrono::steady_clock;

    /// A running download pod: when it was first seen running and how many early reads it had.
    struct EarlyReads {
        Clock::time_point seen;
        int reads = 0;
    };
    /// A sub-resource create the API server refused, backed off per volume.
    struct Refusal {
        std::string message;
        int count = 0;
        Clock::time_point retry_at;
    };
    /// The resourceVersion of the view a record write was made from, and when.
    struct WrittenFrom {
        std::string resource_version;
        Clock::time_point at;
    };
    struct Memory {
        std::optional<Clock::time_point> grace_until;  // the Pending grace window
        std::optional<WrittenFrom> written_from;        // the last record write (stale_view)
        std::optional<Clock::time_point> progress_polled;  // the last progress read
        std::map<std::string, EarlyReads> progress_early;  // by download pod uid
        std::map<std::string, Refusal> refusals;           // by volume id
        bool empty() const {
            return !grace_until && !written_from && !progress_polled && progress_early.empty() && refusals.empty();
        }
    };

    /// Runs f(Memory&) on what is remembered of `vm`, under the lock; an entry left empty goes.
    template <class F>
    auto with(const api::VolumeManager& vm, F&& f) -> std::invoke_result_t<F&, Memory&> {
        std::lock_guard lock(mu_);
        auto it = memory_.try_emplace(vm.metadata.uid).first;
        struct Tidy {
            std::map<std::string, Memory>& all;
            std::map<std::string, Memory>::iterator it;
            ~Tidy() {
                if (it->second.empty()) all.erase(it);
            }
        } tidy{memory_, it};
        return f(it->second);
    }

    /// Everything remembered of the VolumeManager of `uid`.
    void forget(const std::string& uid) {
        std::lock_guard lock(mu_);
        memory_.erase(uid);
    }
    /// How many VolumeManagers something is remembered of.
    std::size_t size() const {
        std::lock_guard lock(mu_);
        return memory_.size();
    }

    // ---- the view of the record --------------------------------------------------------------

    /// After a record write from the view at resourceVersion R, the cache is behind until it
    /// shows something else than R (it only moves forward), or `ttl` has passed.
    bool stale_view(const api::VolumeManager& vm, std::chrono::seconds ttl) {
        return with(vm, [&](Memory& m) {
            if (!m.written_from) return false;
            if (m.written_from->resource_version != vm.metadata.resourceVersion || Clock::now() - m.written_from->at > ttl) {
                m.written_from.reset();
                return false;
            }
            return true;
        });
    }
    void wrote_record_from(const api::VolumeManager& vm) {
        with(vm, [&](Memory& m) { m.written_from = WrittenFrom{vm.metadata.resourceVersion, Clock::now()}; });
    }

    // ---- the Pending grace window ---------------------------------------------------------------

    /// How much of the grace window is left for `vm` (starting one of `grace` when this pass
    /// created objects); zero or less when Pending should be written now.
    std::chrono::milliseconds grace_remaining(const api::VolumeManager& vm, bool created_now, std::chrono::milliseconds grace) {
        auto now = Clock::now();
        return with(vm, [&](Memory& m) {
            if (created_now && (!m.grace_until || *m.grace_until < now)) m.grace_until = now + grace;
            if (!m.grace_until) return std::chrono::milliseconds(0);
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*m.grace_until - now);
            if (left.count() <= 0) m.grace_until.reset();
            return left;
        });
    }
    void forget_grace(const api::VolumeManager& vm) {
        with(vm, [](Memory& m) { m.grace_until.reset(); });
    }

    // ---- refusals -------------------------------------------------------------------------------

    /// Records a refusal of volume `id`'s create, backed off from `backoff`, doubled per
    /// refusal in a row up to `cap`. Returns the message the volume reports.
    std::string remember_refusal(const api::VolumeManager& vm, const std::string& id, const std::string& why,
                                 std::chrono::milliseconds backoff, std::chrono::milliseconds cap) {
        return with(vm, [&](Memory& m) {
            auto& r = m.refusals[id];
            ++r.count;
            auto delay = backoff;
            for (int i = 1; i < r.count && delay < cap; ++i) delay *= 2;
            r.retry_at = Clock::now() + std::min(delay, cap);
            r.message = "the API server refused a sub-resource: " + why;
            return r.message;
        });
    }
    void forget_refusal(const api::VolumeManager& vm, const std::string& id) {
        with(vm, [&](Memory& m) { m.refusals.erase(id); });
    }
    /// The message of volume `id`'s last refusal, while it is remembered.
    std::optional<std::string> refused(const api::VolumeManager& vm, const std::string& id) {
        return with(vm, [&](Memory& m) -> std::optional<std::string> {
            auto it = m.refusals.find(id);
            if (it == m.refusals.end()) return std::nullopt;
            return it->second.message;
        });
    }
    /// How long volume `id` (any volume, without one) still backs off after a refusal.
    std::optional<std::chrono::milliseconds> refusal_wait(const api::VolumeManager& vm, const std::string& id = {}) {
        auto now = Clock::now();
        return with(vm, [&](Memory& m) {
            std::optional<std::chrono::milliseconds> out;
            for (const auto& [k, r] : m.refusals) {
                if (!id.empty() && k != id) continue;
                if (r.retry_at <= now) continue;
                auto left = std::chrono::duration_cast<std::chrono::milliseconds>(r.retry_at - now) + std::chrono::milliseconds(1);
                if (!out || left < *out) out = left;
            }
            return out;
        });
    }

private:
    mutable std::mutex mu_;
    std::map<std::string, Memory> memory_;  // by VolumeManager uid
};

} // namespace vck::volumes
