// DownloadLogs: what VolumeManagerReconciler reads from its download pods' logs, at a bounded
// cost in API calls:
// - a failed pod's log tail, read once per pod (`log_tail_lines` lines of its failing
//   container), for the handlers' failure messages (HandlerContext::pod_log_tail); a refused
//   read is also a Warning event Forbidden on the VolumeManager;
// - the progress of a VolumeManager's running `vck-fetch fetch` containers, read together at
//   most once per `progress_interval` (one GET pods/log each: tailLines 2, limitBytes 4096),
//   plus two early reads 1 s and 2 s after a download is first seen running while it has not
//   been seen moving, so a short download shows progress too.
// Both are kept by pod uid, bounded (least recently used first); when each VolumeManager was
// last asked is in its VolumeManagerMemory.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/client/client.hpp>
#include <vck/handlers/download_pods.hpp>
#include <vck/runtime/log.hpp>
#include <vck/runtime/lru_map.hpp>
#include <vck/volumes/copy_progress.hpp>
#include <vck/volumes/reconciler_options.hpp>
#include <vck/volumes/sub_resource_ownership.hpp>
#include <vck/volumes/sub_resource_writer.hpp>
#include <vck/volumes/volume_manager_events.hpp>
#include <vck/volumes/volume_manager_memory.hpp>

#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vck::volumes {

class DownloadLogs {
public:
    using Clock = std::chrono::steady_clock;

    DownloadLogs(client::Client& c, const ReconcilerOptions& opts, VolumeManagerMemory& memory, VolumeManagerEvents& events)
        : client_(c), opts_(opts), memory_(memory), events_(events) {}

    /// The failed pod's log tail read so far ("" when none was).
    std::string log_tail(const api::Pod& p) {
        std::lock_guard lk(mu_);
        auto tail = log_tails_.find(p.metadata.uid);
        return tail ? *tail : std::string();
    }
    /// The counts the running download pod last reported.
    std::optional<fetch::TransferCounts> progress(const api::Pod& p) {
        std::lock_guard lk(mu_);
        auto c = progress_.find(p.metadata.uid);
        return c ? std::optional<fetch::TransferCounts>(*c) : std::nullopt;
    }

    /// Reads the log tail of each failed pod among `pods` not read yet.
    boost::asio::awaitable<void> fetch_failed_logs(const api::VolumeManager& vm, const std::vector<api::Pod>& pods) {
        for (const auto& p : pods) {
            if (!p.status || p.status->phase != "Failed" || p.metadata.uid.empty()) continue;
            {
                std::lock_guard lk(mu_);
                if (log_tails_.find(p.metadata.uid)) continue;
            }
            std::string tail;
            bool refused = false;
            try {
                // The failing container's log (a pod of several needs one named: a resync
                // volume fails in its init container).
                auto lo = client::LogOptions().tail(opts_.log_tail_lines).of(handlers::failed_container(p));
                tail = co_await client_.logs(p.metadata.namespace_, p.metadata.name, lo);
            } catch (const client::ApiError& e) {
                // Gone: the message says what failed without it. Refused (a missing
                // pods/log rule, say): the message says why there is no log to show.
                if (e.is(client::ErrorKind::NotFound)) tail.clear();
                else tail = std::string("its log could not be read: ") + e.what();
                refused = e.is(client::ErrorKind::Forbidden);
            } catch (const std::exception&) {
                continue;  // not reached: the next pass asks again
            }
            if (refused) co_await events_.warn(vm, "Forbidden", "reading the log of failed pod " + p.metadata.name + ": " + tail);
            while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
            std::lock_guard lk(mu_);
            log_tails_.get_or_insert(p.metadata.uid) = std::move(tail);
        }
    }

    /// Reads the progress of `vm`'s running downloads (the pods of its copying volumes, in
    /// `copy_volumes`, with a `vck-fetch fetch` container running) when a read is due.
    /// Returns when the next read is due while downloads run (the reconcile requeues for it),
    /// nullopt when none runs or reading is off.
    boost::asio::awaitable<std::optional<Clock::time_point>> poll_progress(
        const api::VolumeManager& vm, const OwnedObjects& owned, VolumeKeys& keys,
        const std::map<std::string, const api::VolumeConfig*>& copy_volumes) {
        struct Running {
            const api::Pod* pod;
            std::string container;
            bool moving;
        };
        std::vector<Running> running;
        for (const auto& [id, vc] : copy_volumes) {
            auto o = owned.find(keys.of(id));
            if (o == owned.end()) continue;
            for (const auto& p : o->second.pods)
                if (auto c = progress_container(p); !c.empty() && !p.metadata.uid.empty()) {
                    auto known = progress(p);
                    running.push_back({&p, c, known && known->bytes_done > 0});
                }
        }
        if (running.empty() || opts_.progress_interval.count() <= 0) {
            memory_.with(vm, [](VolumeManagerMemory::Memory& m) {
                m.progress_polled.reset();
                m.progress_early.clear();
            });
            co_return std::nullopt;
        }
        auto now = Clock::now();
        auto next = now + opts_.progress_interval;
        if (!read_due(vm, running, now, next)) co_return next;
        for (const auto& r : running) {
            std::optional<fetch::TransferCounts> counts;
            try {
                auto lo = client::LogOptions().tail(2).of(r.container);
                lo.limit_bytes = 4096;
                ++progress_reads_;
                counts = fetch::parse_progress_counts(co_await client_.logs(r.pod->metadata.namespace_, r.pod->metadata.name, lo));
            } catch (const client::ApiError& e) {
                // Gone or not reachable: the record keeps its last counts, and the next
                // interval asks again; progress is never worth failing a reconcile. Refused
                // (RBAC without pods/log get) is said, once per interval, not kept silent.
                if (e.is(client::ErrorKind::Forbidden))
                    log::warning("cannot read a download's progress", {{"pod", r.pod->metadata.name},
                                                                         {"namespace", r.pod->metadata.namespace_},
                                                                         {"error", e.what()}});
            } catch (const std::exception&) {
            }
            if (!counts) continue;
            std::lock_guard lk(mu_);
            progress_.get_or_insert(r.pod->metadata.uid) = *counts;
        }
        co_return next;
    }

    std::uint64_t progress_reads() const { return progress_reads_; }

private:
    static constexpr std::size_t capacity = 4096;
    static constexpr int early_read_count = 2;
    static constexpr std::chrono::milliseconds early_read_step{1000};

    /// Whether `running` (vm's running downloads) are to be read now: the interval has passed
    /// since the last read, or a download not yet seen moving is due an early read. Moves
    /// `next` to the next time one is due. Only the VolumeManager's running pods are kept.
    template <class Running>
    bool read_due(const api::VolumeManager& vm, const std::vector<Running>& running, Clock::time_point now,
                  Clock::time_point& next) {
        return memory_.with(vm, [&](VolumeManagerMemory::Memory& m) {
            std::map<std::string, VolumeManagerMemory::EarlyReads> kept;
            bool early_due = false;
            for (const auto& r : running) {
                auto it = m.progress_early.find(r.pod->metadata.uid);
                auto e = it == m.progress_early.end() ? VolumeManagerMemory::EarlyReads{now, 0} : it->second;
                while (!r.moving && e.reads < early_read_count) {
                    auto due = e.seen + early_read_step * (e.reads + 1);
                    if (due - e.seen >= opts_.progress_interval) break;
                    if (due > now) {
                        next = std::min(next, due);
                        break;
                    }
                    early_due = true;
                    ++e.reads;
                }
                kept.emplace(r.pod->metadata.uid, e);
            }
            m.progress_early = std::move(kept);
            const bool interval_due = !m.progress_polled || now - *m.progress_polled >= opts_.progress_interval;
            if (interval_due) m.progress_polled = now;
            else next = std::min(next, *m.progress_polled + opts_.progress_interval);
            return interval_due || early_due;
        });
    }

    client::Client& client_;
    const ReconcilerOptions& opts_;
    VolumeManagerMemory& memory_;
    VolumeManagerEvents& events_;
    std::mutex mu_;
    // A tail is read again at each pass while its pod stays failed: kept, bounded.
    runtime::LruMap<std::string, std::string> log_tails_{capacity};
    runtime::LruMap<std::string, fetch::TransferCounts> progress_{capacity};
    std::atomic<std::uint64_t> progress_reads_{0};
};

} // namespace vck::volumes
