// RunSummary: the one-line JSON result of a vck-fetch run (files, bytes, seconds, errors, and
// the first error's sentence; fetch/transfer_counts.hpp reads a fetch's totals back), written to the pod's termination message file so the
// controller can show it in status and events.
// Guarantee: the line is valid JSON and at most 4096 bytes (the kubelet's limit); the error
// text is shortened, never the counters.
#pragma once

#include <boost/json.hpp>

#include <cstdint>
#include <fstream>
#include <algorithm>
#include <map>
#include <utility>
#include <vector>
#include <string>

namespace vck::fetch {

struct RunSummary {
    std::string command;  // fetch, sync-back, delete, prepare
    std::uint64_t files = 0;    // files written or uploaded
    std::uint64_t skipped = 0;  // unchanged, not transferred
    std::uint64_t skipped_bytes = 0;  // their bytes: files + skipped, bytes + skippedBytes is the dataset
    std::uint64_t bytes = 0;
    /// A fetch's bytes by where they came from: the object store, and peer copies (peer fill).
    std::uint64_t store_bytes = 0, peer_bytes = 0;
    /// peer_bytes by peer (its URL as the run was given it), peers that sent nothing left out;
    /// at most max_peers_listed of them, the largest (a puller is given its few ancestors).
    std::map<std::string, std::uint64_t> bytes_by_peer;
    /// Of the skipped files, those copied from an older version on the disk (--reuse-from).
    std::uint64_t reused = 0, reused_bytes = 0;
    /// A fetch's: the digest of the listing it copied (s3/listing_digest.hpp).
    std::string listing_digest;
    static constexpr std::size_t max_peers_listed = 16;
    double seconds = 0;
    std::uint64_t errors = 0;
    int exit_code = 0;
    std::string error;  // first line of the first error, empty on success

    std::string to_json_line() const {
        const std::string first = error.substr(0, error.find('\n'));
        std::size_t keep = first.size();
        bool cut = false;
        for (;;) {
            boost::json::object o{{"command", command}, {"files", files},     {"skipped", skipped},
                                  {"bytes", bytes},     {"skippedBytes", skipped_bytes}, {"seconds", seconds}, {"errors", errors},
                                  {"exitCode", exit_code}};
            if (command.starts_with("fetch")) {
                o["bytesFromStore"] = store_bytes;
                o["bytesFromPeers"] = peer_bytes;
                std::vector<std::pair<std::string, std::uint64_t>> sent;  // the largest ones
                for (const auto& [url, n] : bytes_by_peer)
                    if (n > 0) sent.emplace_back(url, n);
                std::stable_sort(sent.begin(), sent.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
                if (sent.size() > max_peers_listed) sent.resize(max_peers_listed);
                boost::json::object by;
                for (const auto& [url, n] : sent) by[url] = n;
                if (!by.empty()) o["bytesByPeer"] = std::move(by);
                if (!listing_digest.empty()) o["listingDigest"] = listing_digest;
                if (reused) {
                    o["reused"] = reused;
                    o["reusedBytes"] = reused_bytes;
                }
            }
            if (!first.empty()) o["error"] = cut ? first.substr(0, keep) + "..." : first;
            auto s = boost::json::serialize(o);
            if (s.size() <= 4096 || keep == 0) return s;
            // Escaping can make the error longer on the wire than in memory: cut and re-measure.
            std::size_t over = s.size() - 4096 + 3;
            keep = keep > over ? keep - over : keep / 2;
            cut = true;
        }
    }

    /// False if the file cannot be written (e.g. /dev/termination-log outside a pod).
    bool write_to(const std::string& path) const {
        if (path.empty()) return false;
        std::ofstream out(path, std::ios::trunc);
        out << to_json_line() << "\n";
        return static_cast<bool>(out.flush());
    }
};

} // namespace vck::fetch
