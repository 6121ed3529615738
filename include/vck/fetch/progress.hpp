// Progress: counters a transfer updates from any thread, and the loop that prints them on
// stderr every few seconds ("vck-fetch: 120/2000 files, 33.2/268.4 MiB, 12.3 MiB/s").
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace vck::fetch {

struct Progress {
    std::atomic<std::uint64_t> files_total{0}, files_done{0}, bytes_total{0}, bytes_done{0}, errors{0};
    std::atomic<bool> finished{false};
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

    double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    }

    std::string line(std::string_view verb) const {
        constexpr double MiB = 1024.0 * 1024.0;
        double s = seconds();
        return fmt::format("vck-fetch: {} {}/{} files, {:.1f}/{:.1f} MiB, {:.1f} MiB/s, {} errors", verb,
                           files_done.load(), files_total.load(), bytes_done.load() / MiB, bytes_total.load() / MiB,
                           s > 0 ? bytes_done.load() / MiB / s : 0.0, errors.load());
    }
};

/// Prints p.line(verb) every `interval` until p.finished; interval zero prints nothing.
inline boost::asio::awaitable<void> report_progress(Progress& p, std::string verb, std::chrono::milliseconds interval) {
    if (interval.count() <= 0) co_return;
    boost::asio::steady_timer t(co_await boost::asio::this_coro::executor);
    while (!p.finished) {
        t.expires_after(interval);
        co_await t.async_wait(boost::asio::use_awaitable);
        if (!p.finished) std::fprintf(stderr, "%s\n", p.line(verb).c_str());
    }
}

} // namespace vck::fetch
