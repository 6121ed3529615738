// Quantity: the numeric value of a Kubernetes resource quantity ("500m", ".5Gi", "1.5e3", "+10").
// Guarantees: text is accepted exactly when it follows resource.Quantity's grammar,
//   [+-]? (digits ['.' digits?] | '.' digits) (binary | decimal | [eE] [+-]? digits)?
// with binary suffixes Ki..Ei (powers of 1024) and decimal ones n, u, m, k, M, G, T, P, E (powers
// of 1000); anything else, and a value beyond a double's range, is nullopt rather than guessed.
// Values are doubles, correctly rounded from the decimal text: exact enough for comparing
// requests with capacities.
#pragma once

#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace vck::api {

inline std::optional<double> quantity_value(std::string_view text) {
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    std::size_t i = 0;
    bool negative = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
    const std::size_t number_begin = i;
    std::size_t whole = 0, fraction = 0;
    while (i < text.size() && digit(text[i])) ++i, ++whole;
    if (i < text.size() && text[i] == '.') {
        ++i;
        while (i < text.size() && digit(text[i])) ++i, ++fraction;
    }
    if (whole == 0 && fraction == 0) return std::nullopt;  // "", ".", "+", "Gi"
    std::string number(text.substr(number_begin, i - number_begin));
    std::string_view suffix = text.substr(i);

    // The number times 10^exponent, read as one decimal text so it is rounded once.
    std::string exponent;
    double binary_factor = 1;
    static constexpr std::pair<std::string_view, std::string_view> decimal[] = {
        {"", "0"}, {"n", "-9"}, {"u", "-6"}, {"m", "-3"}, {"k", "3"},
        {"M", "6"}, {"G", "9"},  {"T", "12"}, {"P", "15"}, {"E", "18"}};
    static constexpr std::pair<std::string_view, double> binary[] = {
        {"Ki", 0x1p10}, {"Mi", 0x1p20}, {"Gi", 0x1p30}, {"Ti", 0x1p40}, {"Pi", 0x1p50}, {"Ei", 0x1p60}};
    for (const auto& [s, e] : decimal)
        if (suffix == s) exponent = e;
    for (const auto& [s, factor] : binary)
        if (suffix == s) exponent = "0", binary_factor = factor;
    if (exponent.empty()) {
        // [eE] [+-]? digits; "E" alone (exa) was matched above.
        if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E')) return std::nullopt;
        std::string_view e = suffix.substr(1);
        bool sign = e.front() == '+' || e.front() == '-';
        if (e.size() == (sign ? 1u : 0u)) return std::nullopt;
        for (std::size_t k = sign ? 1 : 0; k < e.size(); ++k)
            if (!digit(e[k])) return std::nullopt;
        exponent = e.front() == '+' ? std::string(e.substr(1)) : std::string(e);
    }
    if (number.find_first_not_of("0.") == std::string::npos) return negative ? -0.0 : 0.0;
    std::string decimal_text = number + "e" + exponent;
    double value = 0;
    auto [end, ec] = std::from_chars(decimal_text.data(), decimal_text.data() + decimal_text.size(), value);
    if (ec == std::errc::result_out_of_range && exponent.front() == '-') value = 0;  // underflow: as good as zero
    else if (ec != std::errc() || end != decimal_text.data() + decimal_text.size()) return std::nullopt;
    value *= binary_factor;
    if (!std::isfinite(value)) return std::nullopt;
    return negative ? -value : value;
}

} // namespace vck::api
