// Specification of api/time.hpp, the one RFC 3339 formatter and parser of vck.
#include <vck/api/time.hpp>

#include <doctest.h>

#include <chrono>
#include <stdexcept>

using namespace vck;
using namespace std::chrono_literals;
using clock_type = std::chrono::system_clock;

namespace {
// 2030-01-01T00:00:00Z
const clock_type::time_point base = clock_type::from_time_t(1893456000);
} // namespace

TEST_CASE("format_rfc3339 writes UTC with seconds, as metav1.Time, truncating any fraction") {
    CHECK(api::format_rfc3339(base) == "2030-01-01T00:00:00Z");
    CHECK(api::format_rfc3339(base + 1999ms) == "2030-01-01T00:00:01Z");
    CHECK(api::format_rfc3339(clock_type::from_time_t(0)) == "1970-01-01T00:00:00Z");
    CHECK(api::format_rfc3339(clock_type::from_time_t(0) - 1ns) == "1969-12-31T23:59:59Z");
}

TEST_CASE("format_rfc3339 writes a fixed number of fraction digits when asked: MicroTime's 6, the kubelet's 9") {
    auto t = base + 1s + 5ms + 7ns;
    CHECK(api::format_micro_time(t) == "2030-01-01T00:00:01.005000Z");
    CHECK(api::format_rfc3339(t, 6) == api::format_micro_time(t));
    CHECK(api::format_rfc3339(t, 9) == "2030-01-01T00:00:01.005000007Z");
    CHECK(api::format_rfc3339(t, 1) == "2030-01-01T00:00:01.0Z");
    CHECK(api::format_rfc3339(clock_type::from_time_t(0) - 1ns, 9) == "1969-12-31T23:59:59.999999999Z");
    CHECK_THROWS_AS(api::format_rfc3339(t, 10), std::invalid_argument);
    CHECK_THROWS_AS(api::format_rfc3339(t, -1), std::invalid_argument);
}

TEST_CASE("format_unix_rfc3339 carries nanoseconds into seconds as Go's time.Unix and reaches past 2262") {
    CHECK(api::format_unix_rfc3339(1893456000, 1'500'000'000, 6) == "2030-01-01T00:00:01.500000Z");
    CHECK(api::format_unix_rfc3339(1893456000, -1, 9) == "2029-12-31T23:59:59.999999999Z");
    CHECK(api::format_unix_rfc3339(253402300799, 0) == "9999-12-31T23:59:59Z");
    CHECK(api::format_unix_rfc3339(-62135596800, 0) == "0001-01-01T00:00:00Z");
    CHECK_THROWS_AS(api::format_unix_rfc3339(INT64_MAX / 2, 0), std::out_of_range);
}

TEST_CASE("what format_rfc3339 writes, parse_rfc3339 reads back to the same instant at that precision") {
    auto t = base + 1s + 123456789ns;
    CHECK(api::parse_rfc3339(api::format_rfc3339(t)) == base + 1s);
    CHECK(api::parse_rfc3339(api::format_micro_time(t)) == base + 1s + 123456us);
    CHECK(api::parse_rfc3339(api::format_rfc3339(t, 9)) == t);
}

TEST_CASE("parse_rfc3339 reads fractions and offsets, and refuses what is not RFC 3339") {
    CHECK(api::parse_rfc3339("2030-01-01T02:00:00+02:00") == base);
    CHECK(api::parse_rfc3339("2029-12-31T23:00:00.5-01:00") == base + 500ms);
    CHECK_FALSE(api::parse_rfc3339("2030-01-01").has_value());
    CHECK_FALSE(api::parse_rfc3339("2030-01-01T00:00:00").has_value());
    CHECK_FALSE(api::parse_rfc3339("2030-01-01T00:00:00.Z").has_value());
    CHECK_FALSE(api::parse_rfc3339("2030-13-01T00:00:00Z").has_value());
}
