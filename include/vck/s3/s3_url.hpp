// S3Url: an `s3://bucket/key` address as the VolumeManager's sourceURL gives it. A key ending
// in `/` (or no key at all) names a prefix to copy recursively, as the original VCK did.
// Guarantee: parse() accepts only well-formed bucket names and throws std::invalid_argument
// with the reason otherwise.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace vck::s3 {

struct S3Url {
    std::string bucket;
    std::string key;  // may be empty (whole bucket)

    bool recursive() const { return key.empty() || key.back() == '/'; }
    std::string str() const { return "s3://" + bucket + "/" + key; }

    static S3Url parse(std::string_view text) {
        auto bad = [&](std::string_view why) {
            return std::invalid_argument("invalid S3 URL \"" + std::string(text) + "\": " + std::string(why));
        };
        constexpr std::string_view scheme = "s3://";
        if (text.substr(0, scheme.size()) != scheme) throw bad("it must start with s3://");
        auto rest = text.substr(scheme.size());
        auto slash = rest.find('/');
        S3Url u;
        u.bucket = std::string(rest.substr(0, slash));
        if (slash != std::string_view::npos) u.key = std::string(rest.substr(slash + 1));
        if (u.bucket.size() < 3 || u.bucket.size() > 63) throw bad("a bucket name has 3 to 63 characters");
        for (char c : u.bucket)
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'))
                throw bad("a bucket name has only lowercase letters, digits, '-', '.' and '_'");
        return u;
    }
};

} // namespace vck::s3
