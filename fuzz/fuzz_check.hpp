// What a fuzz target does when a contract is broken: says which one on stderr and aborts, so
// libFuzzer keeps the input as a crash and the standalone smoke driver exits non-zero.
// Exceptions a parser is not documented to throw are left to escape: libFuzzer and the smoke
// driver both report an uncaught exception as a failure.
#pragma once

#include <boost/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace vck::fuzz {

[[noreturn]] inline void fail(std::string_view what, std::string_view detail = {}) {
    std::fprintf(stderr, "fuzz contract broken: %.*s\n%.*s\n", int(what.size()), what.data(), int(detail.size()),
                 detail.data());
    std::abort();
}

inline void check(bool ok, std::string_view what, std::string_view detail = {}) {
    if (!ok) fail(what, detail);
}

/// Parses text as JSON, or nullopt: targets whose input is a JSON document skip the rest.
inline bool parse_json(std::string_view text, boost::json::value& out) {
    boost::system::error_code ec;
    out = boost::json::parse(text, ec);
    return !ec;
}

} // namespace vck::fuzz
