// Time: the API's RFC 3339 timestamps ("2030-01-02T03:04:05Z") as std::chrono time points.
// Guarantees: format_rfc3339 writes UTC with second precision, as metav1.Time serialises;
// parse_rfc3339 reads that and the other RFC 3339 forms (fractions, offsets), and says nullopt
// rather than guessing for anything else.
#pragma once

#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

namespace vck::api {

inline std::string format_rfc3339(std::chrono::system_clock::time_point t) {
    std::time_t secs = std::chrono::system_clock::to_time_t(t);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

/// An RFC 3339 time ("2030-01-02T03:04:05Z", "...05.123+02:00"), or nullopt if it is not one.
inline std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view s) {
    std::string text(s);
    int y, mo, d, h, mi, sec, used = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &used) != 6 ||
        used != 19)
        return std::nullopt;
    std::size_t i = 19;
    std::chrono::nanoseconds frac{0};
    if (i < text.size() && text[i] == '.') {
        long long scale = 100'000'000, ns = 0;
        std::size_t start = ++i;
        for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, scale /= 10) ns += (text[i] - '0') * scale;
        if (i == start) return std::nullopt;
        frac = std::chrono::nanoseconds(ns);
    }
    long offset = 0;
    if (i < text.size() && (text[i] == 'Z' || text[i] == 'z')) {
        ++i;
    } else if (i + 6 == text.size() && (text[i] == '+' || text[i] == '-') && text[i + 3] == ':') {
        int oh, om;
        if (std::sscanf(text.c_str() + i + 1, "%2d:%2d", &oh, &om) != 2) return std::nullopt;
        offset = (text[i] == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
        i += 6;
    } else {
        return std::nullopt;
    }
    if (i != text.size() || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return std::nullopt;
    std::tm tm{};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    std::time_t t = ::timegm(&tm) - offset;
    // RFC 3339 runs to year 9999; a time_point in nanoseconds ends in 2262. Times beyond it
    // (a sinceTime of 2999, a malformed object) saturate rather than overflow.
    using clock = std::chrono::system_clock;
    constexpr auto last = std::chrono::duration_cast<std::chrono::seconds>(clock::duration::max()).count() - 1;
    constexpr auto first = std::chrono::duration_cast<std::chrono::seconds>(clock::duration::min()).count() + 1;
    if (t > last) return clock::time_point::max();
    if (t < first) return clock::time_point::min();
    return clock::from_time_t(t) + std::chrono::duration_cast<clock::duration>(frac);
}

} // namespace vck::api
