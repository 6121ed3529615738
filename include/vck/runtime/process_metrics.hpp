// Process metrics: the Prometheus Go client's process collector, read from /proc/self at
// each scrape: process_cpu_seconds_total, process_resident_memory_bytes,
// process_virtual_memory_bytes, process_start_time_seconds (Unix time), process_open_fds and
// process_max_fds. Guarantees: a figure /proc does not give (another OS, a sandbox without
// /proc) is left out rather than written as a wrong value.
#pragma once

#include <vck/runtime/metrics.hpp>

#include <fmt/core.h>

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>

namespace vck::runtime {

struct ProcessFigures {
    std::optional<double> cpu_seconds, resident_bytes, virtual_bytes, start_time_seconds, open_fds, max_fds;

    /// Reads this process's figures now.
    static ProcessFigures read() {
        ProcessFigures f;
        const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
        const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
        std::ifstream stat("/proc/self/stat");
        std::string line;
        if (stat && std::getline(stat, line)) {
            // The command name (field 2) may hold spaces: fields are counted after its ')'.
            auto close = line.rfind(')');
            if (close != std::string::npos) {
                std::istringstream in(line.substr(close + 2));
                std::string field[22];
                for (auto& x : field) in >> x;
                // field[0] is stat's field 3 (state): utime 14, stime 15, starttime 22, vsize 23, rss 24.
                if (in) {
                    double utime = std::stod(field[11]), stime = std::stod(field[12]);
                    f.cpu_seconds = (utime + stime) / ticks;
                    f.virtual_bytes = std::stod(field[20]);
                    f.resident_bytes = std::stod(field[21]) * page;
                    if (auto boot = boot_time()) f.start_time_seconds = *boot + std::stod(field[19]) / ticks;
                }
            }
        }
        std::error_code ec;
        std::size_t fds = 0;
        for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) ++fds;
        if (!ec) f.open_fds = static_cast<double>(fds);
        rlimit rl{};
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0) f.max_fds = static_cast<double>(rl.rlim_cur);
        return f;
    }

    /// Appends the process_* families.
    void render(std::string& out) const {
        auto one = [&](const char* n, const char* type, const char* help, const std::optional<double>& v) {
            if (v) out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", n, help, n, type, n, MetricsRegistry::number(*v));
        };
        one("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", cpu_seconds);
        one("process_max_fds", "gauge", "Maximum number of open file descriptors.", max_fds);
        one("process_open_fds", "gauge", "Number of open file descriptors.", open_fds);
        one("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", resident_bytes);
        one("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
            start_time_seconds);
        one("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", virtual_bytes);
    }

private:
    static std::optional<double> boot_time() {
        std::ifstream in("/proc/stat");
        std::string key;
        double v = 0;
        while (in >> key) {
            if (key == "btime" && in >> v) return v;
            in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
        }
        return std::nullopt;
    }
};

/// Registers the process collector on `m`.
inline void add_process_collector(MetricsRegistry& m) {
    m.add_collector([](std::string& out) { ProcessFigures::read().render(out); });
}

} // namespace vck::runtime
