// ListingDigest: a short text that changes when a dataset's listing changes: the SHA-256 of
// every object of the dataset (its path relative to the prefix, its size and its ETag), in
// path order. vck-fetch reports it in its summary (the listing its copy was made from);
// vck-controller computes it from a listing of its own to tell whether a source changed since
// (volumes/source_refresh.hpp), so both sides use this one function.
// Guarantees: independent of the order the listing came in; keys outside the prefix,
// directory markers (ending in '/') and the prefix itself are left out, as fetch/fetch_plan.hpp
// leaves them out; a single object (not a prefix) counts under its base name.
#pragma once

#include <vck/api/digest.hpp>
#include <vck/s3/s3_xml.hpp>

#include <algorithm>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace vck::s3 {

inline std::string listing_digest(const std::vector<ObjectInfo>& objects, std::string_view prefix, bool single_key = false) {
    std::vector<std::tuple<std::string, std::uint64_t, std::string_view>> entries;
    entries.reserve(objects.size());
    for (const auto& o : objects) {
        std::string rel;
        if (single_key) {
            auto slash = o.key.rfind('/');
            rel = slash == std::string::npos ? o.key : o.key.substr(slash + 1);
        } else {
            if (!std::string_view(o.key).starts_with(prefix)) continue;
            rel = o.key.substr(prefix.size());
            if (rel.empty() || rel.back() == '/') continue;
        }
        entries.emplace_back(std::move(rel), o.size, o.etag);
    }
    std::sort(entries.begin(), entries.end());
    std::string text;
    for (const auto& [rel, size, etag] : entries)
        text += std::to_string(rel.size()) + ":" + rel + " " + std::to_string(size) + " " + std::string(etag) + "\n";
    return api::sha256_hex(text).substr(0, 32);
}

} // namespace vck::s3
