// Log: the process-wide structured log of a controller, as klog/logr lines: text
// ("I1122 08:00:00.000000 controller.go] msg key=value") or one JSON object per line
// ({"ts":..., "level":"info", "msg":..., key: value}). Guarantees: a line is written whole
// with one write to stderr (lines from threads never interleave); values are escaped, so a
// hostile object name cannot forge a line; info(v) lines are dropped when v > verbosity.
// Levels are logr's V(n) (what -v sets): 0 for errors, warnings and lifecycle lines (start,
// stop, leadership), which are always written; 1 for what a reconcile concluded that is
// worth a look (an object gone); 2 for a line per reconcile; higher levels are left for
// finer detail. A JSON info line above V(0) carries its level as "v".
// Keys are controller-runtime's: controller, namespace, name, reconcileID, error.
// set_sink() sends whole lines elsewhere (an embedding program's logger, a test that reads
// what an operator would read); by default they go to stderr.
#pragma once

#include <vck/api/time.hpp>

#include <boost/json.hpp>

#include <fmt/core.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace vck::log {

enum class Format { Text, Json };

namespace detail {
inline std::atomic<int>& verbosity() {
    static std::atomic<int> v{0};
    return v;
}
inline std::atomic<Format>& format() {
    static std::atomic<Format> f{Format::Text};
    return f;
}
using Sink = std::function<void(std::string_view line)>;
struct SinkSlot {
    std::mutex mu;
    std::shared_ptr<const Sink> sink;  // null: stderr
};
inline SinkSlot& sink_slot() {
    static SinkSlot s;
    return s;
}
inline void write(std::string line) {
    std::shared_ptr<const Sink> sink;
    {
        auto& slot = sink_slot();
        std::lock_guard lk(slot.mu);
        sink = slot.sink;
    }
    if (sink) return (*sink)(line);
    line.push_back('\n');
    std::fwrite(line.data(), 1, line.size(), stderr);
}
inline std::string quote_if_needed(std::string_view v) {
    bool plain = !v.empty();
    for (char c : v)
        if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20) plain = false;
    return plain ? std::string(v) : boost::json::serialize(boost::json::value(v));
}
} // namespace detail

using Fields = std::initializer_list<std::pair<std::string_view, std::string_view>>;

inline void set_verbosity(int v) { detail::verbosity() = v; }
inline void set_format(Format f) { detail::format() = f; }
inline int verbosity() { return detail::verbosity(); }
/// Lines (without their newline) go to `sink` instead of stderr, from whichever thread logs,
/// one call per line; an empty sink restores stderr. A sink replaced while a line is being
/// written still receives that line.
inline void set_sink(std::function<void(std::string_view line)> sink) {
    auto& slot = detail::sink_slot();
    std::lock_guard lk(slot.mu);
    slot.sink = sink ? std::make_shared<const detail::Sink>(std::move(sink)) : nullptr;
}

/// Parses "text" or "json"; throws std::invalid_argument otherwise.
inline Format parse_format(std::string_view s) {
    if (s == "text") return Format::Text;
    if (s == "json") return Format::Json;
    throw std::invalid_argument("log format \"" + std::string(s) + "\" is not text or json");
}

/// Whether info(v, ...) lines are written: build costly fields only when this is true.
inline bool enabled(int v) { return v <= detail::verbosity(); }

inline void line(char level, std::string_view msg, Fields fields = {}, int v = 0) {
    auto now = std::chrono::system_clock::now();
    auto t = std::chrono::system_clock::to_time_t(now);
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1'000'000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    if (detail::format() == Format::Json) {
        boost::json::object o;
        o["ts"] = api::format_rfc3339(now, 6);
        o["level"] = level == 'E' ? "error" : level == 'W' ? "warning" : "info";
        o["msg"] = msg;
        if (v > 0) o["v"] = v;
        for (const auto& [k, v] : fields) o[k] = v;
        detail::write(boost::json::serialize(o));
        return;
    }
    char ts[32];
    std::strftime(ts, sizeof ts, "%m%d %H:%M:%S", &tm);
    // Messages are sentences: kept readable, with control characters blanked so a message
    // stays on its line.
    std::string out = fmt::format("{}{}.{:06}] {}", level, ts, us, msg);
    for (auto& c : out)
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    for (const auto& [k, v] : fields) out += fmt::format(" {}={}", k, detail::quote_if_needed(v));
    detail::write(std::move(out));
}

inline void info(int v, std::string_view msg, Fields fields = {}) {
    if (enabled(v)) line('I', msg, fields, v);
}
inline void info(std::string_view msg, Fields fields = {}) { line('I', msg, fields); }
inline void warning(std::string_view msg, Fields fields = {}) { line('W', msg, fields); }
inline void error(std::string_view msg, Fields fields = {}) { line('E', msg, fields); }

/// logr's V(n): `log::V(2).info("Reconcile finished", {...})`.
struct Verbose {
    int level;
    bool enabled() const { return log::enabled(level); }
    void info(std::string_view msg, Fields fields = {}) const { log::info(level, msg, fields); }
};
inline Verbose V(int n) { return Verbose{n}; }

} // namespace vck::log
