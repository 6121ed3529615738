// TransferCounts: files and bytes done out of a transfer's totals, as vck-fetch reports them
// (each progress line ends with them as one JSON object, and the final one-line summary
// carries them) and as the controller reads them back from a download pod's log tail or
// termination message. This header is that wire format, in one place, for both sides.
// Guarantees: a line's counts are the whole dataset's (files unchanged since an earlier
// attempt count as done and in the total), done never exceeds total, and a reader that
// finds no well-formed counts gets nullopt, never a guess.
// The landed prefix (fetch/landed_prefix.hpp: the files, in key order, that are all whole in
// place, and their bytes) rides along as `prefixFiles`/`prefixBytes`; a line of an older
// vck-fetch without them still parses, with the prefix unknown (nullopt). The line a whole
// fetch prints before it goes on serving its peers adds `listingDigest` (read only when the
// counts are complete), so that a copy is known, and may be shared, before its pod ends.
#pragma once

#include <boost/json.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vck::fetch {

struct TransferCounts {
    std::uint64_t files_done = 0, files_total = 0, bytes_done = 0, bytes_total = 0;
    /// The landed prefix in key order; nullopt when the reporter does not tell it.
    std::optional<std::uint64_t> prefix_files = std::nullopt, prefix_bytes = std::nullopt;
    /// Where a finished fetch's bytes came from (its summary's bytesFromStore and
    /// bytesFromPeers); nullopt in progress lines and in summaries of older versions.
    std::optional<std::uint64_t> store_bytes = std::nullopt, peer_bytes = std::nullopt;
    /// peer_bytes by peer URL (the summary's bytesByPeer), in its order; empty when none.
    std::vector<std::pair<std::string, std::uint64_t>> bytes_by_peer = {};
    /// A finished fetch's listingDigest (s3/listing_digest.hpp); empty when not told.
    std::string listing_digest = {};

    bool complete() const { return files_done == files_total && bytes_done == bytes_total; }
    friend bool operator==(const TransferCounts&, const TransferCounts&) = default;
};

/// What a progress line ends with: ` {"filesDone":..,"filesTotal":..,"bytesDone":..,"bytesTotal":..}`.
inline constexpr std::string_view counts_marker = " {\"filesDone\":";

/// The counts as the JSON object a progress line ends with (no leading space).
inline std::string counts_json(const TransferCounts& c) {
    boost::json::object o{{"filesDone", c.files_done},
                          {"filesTotal", c.files_total},
                          {"bytesDone", c.bytes_done},
                          {"bytesTotal", c.bytes_total}};
    if (c.prefix_files && c.prefix_bytes) {
        o["prefixFiles"] = *c.prefix_files;
        o["prefixBytes"] = *c.prefix_bytes;
    }
    if (!c.listing_digest.empty()) o["listingDigest"] = c.listing_digest;
    return boost::json::serialize(o);
}

namespace counts_detail {

inline std::optional<std::uint64_t> count(const boost::json::object& o, std::string_view key) {
    auto* v = o.if_contains(key);
    if (!v) return std::nullopt;
    if (v->is_uint64()) return v->as_uint64();
    if (v->is_int64() && v->as_int64() >= 0) return static_cast<std::uint64_t>(v->as_int64());
    return std::nullopt;
}

inline std::optional<boost::json::object> parse_object(std::string_view text) {
    boost::system::error_code ec;
    auto v = boost::json::parse(text, ec);
    if (ec || !v.is_object()) return std::nullopt;
    return std::move(v.as_object());
}

} // namespace counts_detail

/// The counts of the last complete progress line in `log` (a log tail: several lines, the
/// first possibly cut, the last possibly unfinished), or nullopt when none has them.
inline std::optional<TransferCounts> parse_progress_counts(std::string_view log) {
    while (!log.empty()) {
        auto end = log.rfind('\n');
        // The text after the last newline may be a line still being written: skipped, unless
        // it parses whole (a log read may also end without a newline after a complete line).
        std::string_view line = end == std::string_view::npos ? log : log.substr(end + 1);
        log = end == std::string_view::npos ? std::string_view() : log.substr(0, end);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        auto at = line.rfind(counts_marker);
        if (at == std::string_view::npos || !line.starts_with("vck-fetch: ")) continue;
        auto o = counts_detail::parse_object(line.substr(at + 1));
        if (!o) continue;
        auto fd = counts_detail::count(*o, "filesDone"), ft = counts_detail::count(*o, "filesTotal");
        auto bd = counts_detail::count(*o, "bytesDone"), bt = counts_detail::count(*o, "bytesTotal");
        if (!fd || !ft || !bd || !bt || *fd > *ft || *bd > *bt) continue;
        TransferCounts c{*fd, *ft, *bd, *bt};
        // The prefix only with both halves and within what is done (else it is not trusted).
        auto pf = counts_detail::count(*o, "prefixFiles"), pb = counts_detail::count(*o, "prefixBytes");
        if (pf && pb && *pf <= *fd && *pb <= *bd) {
            c.prefix_files = pf;
            c.prefix_bytes = pb;
        }
        // A whole fetch that goes on serving its peers tells its listing's digest at once.
        if (const auto* d = o->if_contains("listingDigest"); d && d->is_string() && c.complete())
            c.listing_digest = std::string(d->as_string());
        return c;
    }
    return std::nullopt;
}

/// The final counts of a successful fetch (or of another `command`: a `sync-back --once`
/// upload) from its one-line JSON summary (run_summary.hpp): files written plus files
/// unchanged, bytes likewise. Nullopt for anything else (another command, a failure, text
/// that is not a summary).
inline std::optional<TransferCounts> summary_counts(std::string_view summary, std::string_view command_name = "fetch") {
    while (!summary.empty() && (summary.back() == '\n' || summary.back() == '\r' || summary.back() == ' '))
        summary.remove_suffix(1);
    auto o = counts_detail::parse_object(summary);
    if (!o) return std::nullopt;
    auto* command = o->if_contains("command");
    if (!command || !command->is_string() || command->as_string() != command_name)
        return std::nullopt;
    auto exit_code = counts_detail::count(*o, "exitCode");
    if (!exit_code || *exit_code != 0) return std::nullopt;
    auto files = counts_detail::count(*o, "files"), bytes = counts_detail::count(*o, "bytes");
    if (!files || !bytes) return std::nullopt;
    auto skipped = counts_detail::count(*o, "skipped").value_or(0);
    auto skipped_bytes = counts_detail::count(*o, "skippedBytes").value_or(0);
    TransferCounts c;
    c.files_done = c.files_total = *files + skipped;
    c.bytes_done = c.bytes_total = *bytes + skipped_bytes;
    c.prefix_files = c.files_total;  // a finished fetch has everything in place
    c.prefix_bytes = c.bytes_total;
    c.store_bytes = counts_detail::count(*o, "bytesFromStore");
    c.peer_bytes = counts_detail::count(*o, "bytesFromPeers");
    if (const auto* d = o->if_contains("listingDigest"); d && d->is_string()) c.listing_digest = std::string(d->as_string());
    if (const auto* by = o->if_contains("bytesByPeer"); by && by->is_object())
        for (const auto& kv : by->as_object())
            if (auto n = counts_detail::count(by->as_object(), kv.key())) c.bytes_by_peer.emplace_back(std::string(kv.key()), *n);
    return c;
}

} // namespace vck::fetch
