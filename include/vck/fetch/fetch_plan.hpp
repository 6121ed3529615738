// FetchPlan: which objects of a listing to download, to which local paths, in which byte
// ranges, and which to skip because the local copy is unchanged (size + ETag in the Journal).
// Guarantee: no planned path escapes the destination (keys with `..`, empty or absolute
// segments are rejected with a reason); directory-marker keys (ending in `/`) are skipped.
// The plan is in key order (UTF-8 byte order, S3's listing order, whatever order the listing
// came in): downloads are, and `ordered_sizes` lists every file of the dataset (unchanged
// ones too) in that order, for the landed prefix (fetch/landed_prefix.hpp).
#pragma once

#include <vck/fetch/journal.hpp>
#include <vck/s3/glob.hpp>
#include <vck/s3/s3_xml.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace vck::fetch {

struct PlannedFile {
    std::string key;       // the object key
    std::string relative;  // path under the destination
    std::uint64_t size = 0;
    std::string etag;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;  // [first, last] inclusive; empty for a 0-byte file
    std::size_t position = 0;  // its index in ordered_sizes
};

struct FetchPlan {
    std::vector<PlannedFile> downloads;
    std::size_t skipped_unchanged = 0;
    std::uint64_t bytes_unchanged = 0;  // the skipped files' bytes (they count toward the totals)
    std::size_t filtered_out = 0;
    std::vector<std::string> rejected;  // "key: reason"
    std::uint64_t bytes_to_fetch = 0;
    /// Every file of the dataset in key order (downloads and unchanged ones), and which are
    /// in place already (unchanged).
    std::vector<std::uint64_t> ordered_sizes;
    std::vector<bool> ordered_landed;
};

struct PlanOptions {
    std::string prefix;                  // removed from keys to form relative paths
    std::vector<s3::Glob> includes;      // empty: everything
    // Objects above the threshold are fetched in ranges of part_size. Ranges buy throughput only
    // where one connection is slower than the link (AWS gives ~100 MB/s per connection), and they
    // cost: an MD5 ETag can only be checked in file order, so every range but the first is read
    // back from disk to be hashed, and each range is one more request for the server. Measured
    // against s3rver on two cores, 64 MiB objects came down whole in 0.78 s and in 8 MiB ranges
    // in 0.98 s. Hence a threshold like rclone's multi-thread cutoff (256 MiB).
    std::uint64_t part_size = 32u << 20;
    std::uint64_t multipart_threshold = 256u << 20;
};

/// "" when the relative path is safe to create under the destination, else why not.
inline std::string unsafe_reason(std::string_view rel) {
    if (rel.empty()) return "empty path";
    if (rel.front() == '/') return "absolute path";
    std::size_t start = 0;
    while (start <= rel.size()) {
        auto end = rel.find('/', start);
        if (end == std::string_view::npos) end = rel.size();
        auto seg = rel.substr(start, end - start);
        if (seg.empty()) return "empty path segment";
        if (seg == "." || seg == "..") return "\".\" or \"..\" segment";
        start = end + 1;
    }
    if (rel.find('\0') != std::string_view::npos) return "NUL character";
    return "";
}

/// Splits [0, size) into inclusive ranges of part_size (one range up to the threshold).
inline std::vector<std::pair<std::uint64_t, std::uint64_t>> split_ranges(std::uint64_t size, std::uint64_t part_size,
                                                                         std::uint64_t threshold) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    if (size == 0) return out;
    if (size <= threshold || part_size == 0) return {{0, size - 1}};
    for (std::uint64_t off = 0; off < size; off += part_size) out.emplace_back(off, std::min(size, off + part_size) - 1);
    return out;
}

/// `single_key`: the source named one object (not a prefix); it lands as its base name.
inline FetchPlan make_plan(const std::vector<s3::ObjectInfo>& objects, const PlanOptions& opt,
                           const std::filesystem::path& dest, const Journal& journal, bool single_key = false) {
    FetchPlan plan;
    std::vector<const s3::ObjectInfo*> sorted;
    sorted.reserve(objects.size());
    for (const auto& o : objects) sorted.push_back(&o);
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->key < b->key; });
    for (const auto* op : sorted) {
        const auto& o = *op;
        std::string rel;
        if (single_key) {
            auto slash = o.key.rfind('/');
            rel = slash == std::string::npos ? o.key : o.key.substr(slash + 1);
        } else {
            if (o.key.compare(0, opt.prefix.size(), opt.prefix) != 0) continue;
            rel = o.key.substr(opt.prefix.size());
            if (rel.empty() || rel.back() == '/') continue;  // the prefix itself or a directory marker
        }
        if (auto why = unsafe_reason(rel); !why.empty()) {
            plan.rejected.push_back(o.key + ": " + why);
            continue;
        }
        if (!s3::matches_any(opt.includes, rel)) {
            ++plan.filtered_out;
            continue;
        }
        std::size_t position = plan.ordered_sizes.size();
        plan.ordered_sizes.push_back(o.size);
        if (journal.unchanged(rel, dest / rel, o.size, o.etag)) {
            ++plan.skipped_unchanged;
            plan.bytes_unchanged += o.size;
            plan.ordered_landed.push_back(true);
            continue;
        }
        plan.ordered_landed.push_back(false);
        PlannedFile f{o.key, rel, o.size, o.etag, split_ranges(o.size, opt.part_size, opt.multipart_threshold), position};
        plan.bytes_to_fetch += o.size;
        plan.downloads.push_back(std::move(f));
    }
    return plan;
}

/// True for an ETag that is the MD5 of the content (single-part upload, no SSE-KMS).
inline bool is_md5_etag(std::string_view etag) {
    if (etag.size() != 32) return false;
    for (char c : etag)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

} // namespace vck::fetch
