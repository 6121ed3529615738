// command_line.hpp: what vck's binaries share on their command lines (CLI11).
//  - `--version` prints "NAME VERSION" from the one generated <vck/version.hpp> and exits 0;
//  - a usage error (unknown flag or subcommand, bad or missing value, missing argument)
//    prints one line "NAME: MESSAGE" and a --help hint on stderr and exits 2 (`usage_error`),
//    the status scripts and kubelets can tell from a failure of the work itself;
//  - numeric flags check their range with a message a person can read,
//    "--nodes: -1 is not in [0, 1000]" (CLI11's own NonNegativeNumber prints a 309-digit bound).
// Private to bin/: the library itself never parses command lines.
#pragma once

#include <vck/version.hpp>

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace vck::cli {

/// The exit status of a usage error (as BSD's EX_USAGE is for some, 2 is for getopt's users).
inline constexpr int usage_error = 2;

/// "NAME VERSION" for `--version`.
inline void add_version_flag(CLI::App& app, std::string_view name) {
    app.set_version_flag("--version", std::string(name) + " " + std::string(vck::version));
}

/// Parses the command line. Returns the status to exit with when the program should stop
/// here: 0 after --help or --version (printed on stdout), usage_error after a usage error.
inline std::optional<int> parse(CLI::App& app, std::string_view name, int argc, char** argv) {
    try {
        app.parse(argc, argv);
        return std::nullopt;
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
        // One line, whatever CLI11 composed.
        std::string message = e.what();
        for (auto& c : message)
            if (c == '\n' || c == '\r') c = ' ';
        std::cerr << name << ": " << message << "\nRun with --help for more information." << std::endl;
        return usage_error;
    }
}

namespace detail {

/// A bound as a person writes it: 1000, 0.5, 1e+06 (no trailing zeros, no 309 digits).
template <class T>
std::string show(T v) {
    if constexpr (std::is_floating_point_v<T>) {
        if (std::abs(v) < 1e15 && v == std::floor(v)) return std::to_string(static_cast<long long>(v));
    }
    std::ostringstream out;
    out << v;
    return out.str();
}

/// The whole of `text` as a T, or nullopt.
template <class T>
std::optional<T> read(const std::string& text) {
    T v{};
    const char* end = text.data() + text.size();
    auto [p, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc() || p != end) return std::nullopt;
    return v;
}

template <class T>
CLI::Validator range(T lo, T hi, bool open_below) {
    std::string interval = (open_below ? "(" : "[") + show(lo) + ", " + show(hi) + "]";
    const char* kind = std::is_integral_v<T> ? "an integer" : "a number";
    return CLI::Validator(
        [=](std::string& input) -> std::string {
            auto v = read<T>(input);
            if (!v) return input + " is not " + kind + " in " + interval;
            bool inside = (open_below ? *v > lo : *v >= lo) && *v <= hi;
            return inside ? std::string() : input + " is not in " + interval;
        },
        "in " + interval);
}

} // namespace detail

/// Accepts numbers in [lo, hi]; T is the flag's type (int, double, ...).
template <class T>
CLI::Validator in_range(T lo, T hi) { return detail::range(lo, hi, false); }

/// Accepts numbers in (0, hi]: durations and rates that must be positive.
template <class T>
CLI::Validator positive_up_to(T hi) { return detail::range(T{0}, hi, true); }

} // namespace vck::cli
