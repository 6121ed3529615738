// BindAddress: controller-runtime's bind address flags ("--metrics-bind-address=:8080"):
// "HOST:PORT", ":PORT" (every interface), "[v6]:PORT", or "0" meaning the server is off.
// Guarantees: parse() throws std::invalid_argument naming the flag's text for anything
// else (no port, port out of range, junk), so a typo stops the process at start-up.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace vck::runtime {

struct BindAddress {
    std::string host;  // "0.0.0.0" for ":PORT"
    std::uint16_t port = 0;

    /// nullopt for "0" (disabled).
    static std::optional<BindAddress> parse(std::string_view text) {
        if (text == "0") return std::nullopt;
        auto bad = [&](const char* why) {
            return std::invalid_argument("bind address \"" + std::string(text) + "\": " + why +
                                         " (expected HOST:PORT, :PORT, or 0 to disable)");
        };
        auto colon = text.rfind(':');
        if (colon == std::string_view::npos) throw bad("no port");
        std::string_view host = text.substr(0, colon), port = text.substr(colon + 1);
        if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
        else if (host.find(':') != std::string_view::npos) throw bad("an IPv6 host needs brackets");
        unsigned value = 0;
        auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535)
            throw bad("port is not a number from 0 to 65535");
        BindAddress a;
        a.host = host.empty() ? "0.0.0.0" : std::string(host);
        a.port = static_cast<std::uint16_t>(value);
        return a;
    }
};

} // namespace vck::runtime
