// Quantity: the numeric value of a Kubernetes resource quantity ("500m", "1.5Gi", "2e3", "10").
// Guarantees: binary suffixes (Ki..Ei) are powers of 1024, decimal ones (n, u, m, k, M..E) powers
// of 1000; anything else is refused with nullopt rather than guessed. Values are doubles, which is
// exact enough for comparing requests with capacities.
#pragma once

#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace vck::api {

inline std::optional<double> quantity_value(std::string_view text) {
    if (text.empty()) return std::nullopt;
    std::size_t i = 0;
    if (text[i] == '+' || text[i] == '-') ++i;
    std::size_t digits = 0;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i, ++digits;
    if (digits == 0) return std::nullopt;
    double number = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + i, number);
    if (ec != std::errc() || end != text.data() + i) return std::nullopt;
    std::string_view suffix = text.substr(i);
    static constexpr std::pair<std::string_view, double> suffixes[] = {
        {"", 1},       {"n", 1e-9},   {"u", 1e-6},   {"m", 1e-3},   {"k", 1e3},   {"M", 1e6},
        {"G", 1e9},    {"T", 1e12},   {"P", 1e15},   {"E", 1e18},   {"Ki", 0x1p10}, {"Mi", 0x1p20},
        {"Gi", 0x1p30}, {"Ti", 0x1p40}, {"Pi", 0x1p50}, {"Ei", 0x1p60}};
    for (const auto& [s, factor] : suffixes)
        if (suffix == s) return number * factor;
    if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
        int exp = 0;
        auto [e2, ec2] = std::from_chars(suffix.data() + 1 + (suffix[1] == '+'), suffix.data() + suffix.size(), exp);
        if (ec2 == std::errc() && e2 == suffix.data() + suffix.size()) return number * std::pow(10.0, exp);
    }
    return std::nullopt;
}

} // namespace vck::api
