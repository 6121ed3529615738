// OptionValues: the value syntaxes the original Go controller accepted in volume options, so
// old manifests mean the same thing: Go durations ("5m", "1h30m", "1.5s") for
// timeoutForDataDownload and Go's strconv.ParseBool words for resync. Anything else is nullopt.
// Also the ranges the numbers of a volume config must keep before anything is built from them
// (replicas, the download timeout, ports), so a count never sizes an allocation unchecked and a
// timeout never wraps when it becomes a pod's activeDeadlineSeconds.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vck::handlers {

/// Seconds in a Go duration string (time.ParseDuration): optional sign, then one or more
/// <decimal><unit> with unit ns, us, µs, ms, s, m, h; "0" alone is zero.
inline std::optional<double> parse_go_duration(std::string_view s) {
    if (s.empty()) return std::nullopt;
    double sign = 1;
    if (s.front() == '-' || s.front() == '+') {
        if (s.front() == '-') sign = -1;
        s.remove_prefix(1);
    }
    if (s == "0") return 0.0;
    if (s.empty()) return std::nullopt;
    double total = 0;
    while (!s.empty()) {
        std::size_t i = 0;
        while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
        if (i == 0) return std::nullopt;
        double number = 0;
        auto [end, ec] = std::from_chars(s.data(), s.data() + i, number);
        if (ec != std::errc() || end != s.data() + i) return std::nullopt;
        s.remove_prefix(i);
        static constexpr std::pair<std::string_view, double> units[] = {
            {"ns", 1e-9}, {"us", 1e-6}, {"\xC2\xB5s", 1e-6}, {"\xCE\xBCs", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"m", 60}, {"h", 3600}};
        bool found = false;
        for (const auto& [unit, factor] : units) {
            // "ms" before "m": longest unit first among those sharing a prefix.
            if (s.substr(0, unit.size()) == unit && !(unit == "m" && s.substr(0, 2) == "ms")) {
                total += number * factor;
                s.remove_prefix(unit.size());
                found = true;
                break;
            }
        }
        if (!found) return std::nullopt;
    }
    // Go counts nanoseconds in an int64 and refuses a duration beyond it ("invalid duration").
    if (!(total <= 9223372036.854775807)) return std::nullopt;
    return sign * total;
}

/// Go's strconv.ParseBool: 1 t T TRUE true True / 0 f F FALSE false False.
inline std::optional<bool> parse_go_bool(std::string_view s) {
    for (auto t : {"1", "t", "T", "TRUE", "true", "True"})
        if (s == t) return true;
    for (auto f : {"0", "f", "F", "FALSE", "false", "False"})
        if (s == f) return false;
    return std::nullopt;
}

/// The most replicas a volume may ask for (each is a pod and, for S3, a node).
inline constexpr std::int64_t max_replicas = 10000;

/// The longest timeoutForDataDownload: 8760h, a year. It becomes a download pod's
/// activeDeadlineSeconds, which must be a positive int64.
inline constexpr std::int64_t max_download_timeout_seconds = 8760LL * 3600;
inline constexpr std::string_view max_download_timeout_text = "8760h";

/// timeoutForDataDownload as whole seconds, rounded up (activeDeadlineSeconds), when it is a
/// Go duration greater than zero and at most max_download_timeout_seconds; nullopt otherwise.
inline std::optional<std::int64_t> download_timeout_seconds(std::string_view s) {
    auto t = parse_go_duration(s);
    if (!t || !(*t > 0) || *t > static_cast<double>(max_download_timeout_seconds)) return std::nullopt;
    return static_cast<std::int64_t>(std::ceil(*t));
}

/// Why download_timeout_seconds refuses `s`, in the original's words ("error while parsing
/// timeout for data download", which scripts match on as a prefix), or nullopt when it accepts.
inline std::optional<std::string> download_timeout_problem(std::string_view s) {
    static const std::string words = "error while parsing timeout for data download";
    if (download_timeout_seconds(s)) return std::nullopt;
    if (!parse_go_duration(s)) return words;
    return words + ": \"" + std::string(s) + "\" has to be greater than 0 and at most " +
           std::string(max_download_timeout_text);
}

/// A TCP port: decimal digits only, from 1 to 65535.
inline std::optional<int> parse_port(std::string_view s) {
    if (s.empty() || s.size() > 5) return std::nullopt;
    int port = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        port = port * 10 + (c - '0');
    }
    if (port < 1 || port > 65535) return std::nullopt;
    return port;
}

/// The port text of an address `[scheme://]host[:port][/path]` (host may be a bracketed IPv6
/// literal): what follows the host's ':', possibly empty; nullopt when no port is written.
inline std::optional<std::string_view> port_of(std::string_view address) {
    if (auto scheme = address.find("://"); scheme != std::string_view::npos) address.remove_prefix(scheme + 3);
    address = address.substr(0, address.find_first_of("/?#"));
    if (auto at = address.rfind('@'); at != std::string_view::npos) address.remove_prefix(at + 1);
    auto colon = address.rfind(':');
    auto bracket = address.rfind(']');
    if (colon == std::string_view::npos || (bracket != std::string_view::npos && bracket > colon)) return std::nullopt;
    return address.substr(colon + 1);
}

} // namespace vck::handlers
