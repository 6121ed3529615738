// Time: the API's RFC 3339 timestamps ("2030-01-02T03:04:05Z") as std::chrono time points.
// The one formatter and parser of them in vck. Guarantees: format_rfc3339 writes UTC with
// second precision by default, as metav1.Time serialises, or a fixed number of fraction digits
// (format_micro_time: 6, as metav1.MicroTime); parse_rfc3339 reads those and the other RFC 3339
// forms (fractions, offsets), and says nullopt rather than guessing for anything else.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace vck::api {

/// `seconds` and `nanos` since the Unix epoch (nanos outside [0, 1e9) carried into the seconds,
/// as Go's time.Unix does) as RFC 3339 in UTC with exactly `fraction_digits` (0 to 9) digits
/// of the second, truncated: 0 as metav1.Time writes, 6 as metav1.MicroTime, 9 as the
/// kubelet's log timestamps (RFC3339NanoFixed). Reaches years a time_point cannot (protobuf
/// bodies carry any int64 seconds); std::out_of_range beyond what gmtime represents.
inline std::string format_unix_rfc3339(std::int64_t seconds, std::int64_t nanos, int fraction_digits = 0) {
    if (fraction_digits < 0 || fraction_digits > 9)
        throw std::invalid_argument("format_rfc3339: " + std::to_string(fraction_digits) + " fraction digits (0 to 9)");
    seconds += nanos / 1'000'000'000;
    nanos %= 1'000'000'000;
    if (nanos < 0) {
        nanos += 1'000'000'000;
        --seconds;
    }
    std::time_t t = static_cast<std::time_t>(seconds);
    std::tm tm{};
    if (!gmtime_r(&t, &tm)) throw std::out_of_range("a time of " + std::to_string(seconds) + " seconds is out of range");
    char buf[64];
    int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                          tm.tm_hour, tm.tm_min, tm.tm_sec);
    std::string out(buf, static_cast<std::size_t>(n));
    if (fraction_digits > 0) {
        std::snprintf(buf, sizeof buf, ".%09lld", static_cast<long long>(nanos));
        out.append(buf, static_cast<std::size_t>(fraction_digits) + 1);
    }
    out += 'Z';
    return out;
}

/// `t` as RFC 3339 in UTC with `fraction_digits` digits of the second (see above).
inline std::string format_rfc3339(std::chrono::system_clock::time_point t, int fraction_digits = 0) {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    return format_unix_rfc3339(ns / 1'000'000'000, ns % 1'000'000'000, fraction_digits);
}

/// `t` as metav1.MicroTime writes it (Lease and Event times): microseconds, always 6 digits.
inline std::string format_micro_time(std::chrono::system_clock::time_point t) { return format_rfc3339(t, 6); }

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
