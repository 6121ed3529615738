// FirstBatch: the volume option `firstBatch` — how much of a volume's data must be on a node,
// as a whole prefix of its files in key order, before that copy is usable while the rest
// still downloads. "25%" is a share of the dataset's bytes (0 < N <= 100, decimals allowed);
// a quantity ("64Mi", "1G", "500000") is an amount of bytes (> 0). Pure: parsing and the
// test whether a reported prefix reaches it (fetch/transfer_counts.hpp).
// Guarantees: a copy reaches its first batch only on a reported prefix (never on counts
// without one); an amount larger than the dataset is reached when everything has landed; a
// dataset of empty files goes by its files' share.
#pragma once

#include <vck/api/quantity.hpp>
#include <vck/fetch/transfer_counts.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace vck::handlers {

inline constexpr std::string_view first_batch_option = "firstBatch";

struct FirstBatch {
    std::optional<double> percent;  // a share of the bytes, or
    std::uint64_t bytes = 0;        // an amount of bytes
    std::string text;               // as written, for messages

    /// Whether `c`'s landed prefix holds this first batch.
    bool reached(const fetch::TransferCounts& c) const {
        if (!c.prefix_files || !c.prefix_bytes) return false;
        if (c.files_total > 0 && *c.prefix_files >= c.files_total) return true;  // everything landed
        if (percent) {
            if (c.bytes_total == 0)
                return c.files_total > 0 && static_cast<double>(*c.prefix_files) * 100 >= *percent * c.files_total;
            return static_cast<long double>(*c.prefix_bytes) * 100 >= static_cast<long double>(*percent) * c.bytes_total;
        }
        return *c.prefix_bytes >= bytes;
    }
};

/// The option's value parsed, or why it is refused (the message names the accepted forms).
inline std::variant<FirstBatch, std::string> parse_first_batch(std::string_view text) {
    const std::string why = "firstBatch has to be a share of the data such as \"25%\" (more than 0, at most 100) or "
                            "an amount of bytes such as \"64Mi\" (more than 0), not \"" + std::string(text) + "\"";
    FirstBatch fb;
    fb.text = std::string(text);
    if (text.ends_with('%')) {
        auto number = text.substr(0, text.size() - 1);
        double v = 0;
        auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
        if (number.empty() || ec != std::errc() || end != number.data() + number.size() || !std::isfinite(v) ||
            !(v > 0) || v > 100 || number.front() == '-' || number.front() == '+')
            return why;
        fb.percent = v;
        return fb;
    }
    auto q = api::quantity_value(text);
    if (!q || !(*q >= 1) || *q >= 9.2e18) return why;
    fb.bytes = static_cast<std::uint64_t>(std::ceil(*q));
    return fb;
}

/// The firstBatch of a volume's options (nullopt when unset or invalid: validation reports it).
template <class VolumeConfig>
std::optional<FirstBatch> first_batch_of(const VolumeConfig& vc) {
    if (!vc.has_option(std::string(first_batch_option))) return std::nullopt;
    auto parsed = parse_first_batch(vc.option(std::string(first_batch_option)));
    if (auto* fb = std::get_if<FirstBatch>(&parsed)) return *fb;
    return std::nullopt;
}

} // namespace vck::handlers
