// OptionValues: the value syntaxes the original Go controller accepted in volume options, so
// old manifests mean the same thing: Go durations ("5m", "1h30m", "1.5s") for
// timeoutForDataDownload and Go's strconv.ParseBool words for resync. Anything else is nullopt.
#pragma once

#include <charconv>
#include <cmath>
#include <optional>
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

} // namespace vck::handlers
