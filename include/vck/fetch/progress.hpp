// Progress: counters a transfer updates from any thread, and the loop that prints them on
// stderr every few seconds. A line reads for people first and ends with the dataset's counts
// for programs (fetch/transfer_counts.hpp, which the controller parses from a pod's log):
//   vck-fetch: fetched 120/2000 files, 33.2/268.4 MiB, 12.3 MiB/s, 0 errors {"filesDone":120,...}
// The people's part counts what this run transfers; the counts add the files an earlier
// attempt left unchanged, so that they are the whole dataset's. Once a fetch has listed its
// source, one line is printed at once (totals are known before any byte moves), the next one
// a second later (the first bytes moved, which the controller reads early: a short download
// shows progress too), then one per interval.
#pragma once

#include <vck/fetch/transfer_counts.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace vck::fetch {

struct Progress {
    std::atomic<std::uint64_t> files_total{0}, files_done{0}, bytes_total{0}, bytes_done{0}, errors{0};
    /// Files an earlier attempt already fetched (skipped as unchanged), and their bytes.
    std::atomic<std::uint64_t> files_unchanged{0}, bytes_unchanged{0};
    std::atomic<bool> listed{false};  // the totals are known
    /// The landed prefix in key order (fetch/landed_prefix.hpp), unchanged files included;
    /// told only once `prefix_known` (a fetch sets it when it has listed).
    std::atomic<std::uint64_t> prefix_files{0}, prefix_bytes{0};
    std::atomic<bool> prefix_known{false};
    std::atomic<bool> finished{false};
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

    double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    }

    /// The whole dataset's counts: this run's plus what was unchanged.
    TransferCounts counts() const {
        TransferCounts c;
        c.files_total = files_total.load() + files_unchanged.load();
        c.bytes_total = bytes_total.load() + bytes_unchanged.load();
        c.files_done = std::min(files_done.load() + files_unchanged.load(), c.files_total);
        c.bytes_done = std::min(bytes_done.load() + bytes_unchanged.load(), c.bytes_total);
        if (prefix_known) {
            c.prefix_files = std::min(prefix_files.load(), c.files_done);
            c.prefix_bytes = std::min(prefix_bytes.load(), c.bytes_done);
        }
        return c;
    }

    /// `listing_digest`: a whole fetch's, told on the line it prints before it serves on.
    std::string line(std::string_view verb, std::string_view listing_digest = {}) const {
        constexpr double MiB = 1024.0 * 1024.0;
        double s = seconds();
        auto c = counts();
        c.listing_digest = listing_digest;
        return fmt::format("vck-fetch: {} {}/{} files, {:.1f}/{:.1f} MiB, {:.1f} MiB/s, {} errors {}", verb,
                           files_done.load(), files_total.load(), bytes_done.load() / MiB, bytes_total.load() / MiB,
                           s > 0 ? bytes_done.load() / MiB / s : 0.0, errors.load(), counts_json(c));
    }
};

/// Prints p.line(verb) every `interval` until p.finished, once as soon as p.listed (the
/// totals known) and once a second after that (at most `interval` after); interval zero
/// prints nothing.
inline boost::asio::awaitable<void> report_progress(Progress& p, std::string verb, std::chrono::milliseconds interval) {
    if (interval.count() <= 0) co_return;
    boost::asio::steady_timer t(co_await boost::asio::this_coro::executor);
    // Until the listing is done, look often: its line is the first the controller can show.
    constexpr std::chrono::milliseconds listing_poll{100};
    constexpr std::chrono::milliseconds first_move{1000};
    auto next = std::chrono::steady_clock::now() + interval;
    bool told_totals = false;
    while (!p.finished) {
        auto wake = told_totals ? next : std::min(next, std::chrono::steady_clock::now() + listing_poll);
        t.expires_at(wake);
        co_await t.async_wait(boost::asio::use_awaitable);
        if (p.finished) break;
        bool first = !told_totals && p.listed;
        if (first || std::chrono::steady_clock::now() >= next) {
            std::fprintf(stderr, "%s\n", p.line(verb).c_str());
            told_totals = told_totals || p.listed;
            next = std::chrono::steady_clock::now() + (first ? std::min(interval, first_move) : interval);
        }
    }
}

} // namespace vck::fetch
