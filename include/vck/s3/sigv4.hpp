// AWS Signature Version 4: the canonical request, string to sign, derived signing key and
// Authorization header for one HTTP request, plus query-string presigning.
// Guarantee: for the same inputs the result equals AWS's published examples byte for byte;
// the session token, when present, is signed as x-amz-security-token.
#pragma once

#include <vck/s3/digest.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vck::s3 {

struct Credentials {
    std::string access_key_id;
    std::string secret_access_key;
    std::string session_token;  // empty unless temporary credentials

    /// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN; nullopt when the pair is
    /// incomplete (then requests go unsigned, which only public buckets accept).
    static std::optional<Credentials> from_environment() {
        auto get = [](const char* n) { const char* v = std::getenv(n); return std::string(v ? v : ""); };
        Credentials c{get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY"), get("AWS_SESSION_TOKEN")};
        if (c.access_key_id.empty() || c.secret_access_key.empty()) return std::nullopt;
        return c;
    }
};

/// Where and when a signature is valid.
struct SigningScope {
    std::string amz_date;  // YYYYMMDD'T'HHMMSS'Z'
    std::string region = "us-east-1";
    std::string service = "s3";

    std::string date() const { return amz_date.substr(0, 8); }
    std::string credential_scope() const { return date() + "/" + region + "/" + service + "/aws4_request"; }
};

/// A request as SigV4 sees it. Query names/values are raw (decoded); the path is already
/// URI-encoded exactly as it goes on the wire (S3 does not encode it a second time).
struct SignableRequest {
    std::string method = "GET";
    std::string path = "/";
    std::vector<std::pair<std::string, std::string>> query;
    std::vector<std::pair<std::string, std::string>> headers;  // must include host
    std::string payload_sha256 = "UNSIGNED-PAYLOAD";
};

inline constexpr std::string_view empty_payload_sha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

inline std::string amz_date(std::chrono::system_clock::time_point t) {
    std::time_t tt = std::chrono::system_clock::to_time_t(t);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    char buf[17];
    std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
    return buf;
}

/// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters stay, everything else
/// becomes %XX (uppercase); '/' is kept only for object key paths.
inline std::string uri_encode(std::string_view s, bool keep_slash) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(s.size());
    for (unsigned char c : s) {
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
            c == '.' || c == '~' || (keep_slash && c == '/')) {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 0xf];
        }
    }
    return out;
}

/// name=value pairs, encoded and sorted by encoded name then value, joined with '&'.
inline std::string canonical_query(const std::vector<std::pair<std::string, std::string>>& query) {
    std::vector<std::pair<std::string, std::string>> enc;
    enc.reserve(query.size());
    for (const auto& [k, v] : query) enc.emplace_back(uri_encode(k, false), uri_encode(v, false));
    std::sort(enc.begin(), enc.end());
    std::string out;
    for (const auto& [k, v] : enc) {
        if (!out.empty()) out += '&';
        out += k + "=" + v;
    }
    return out;
}

namespace detail {

inline std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

/// Header values are trimmed and inner runs of spaces collapse to one.
inline std::string trim_value(std::string_view v) {
    std::string out;
    bool space = false;
    for (char c : v) {
        if (c == ' ' || c == '\t') {
            space = !out.empty();
            continue;
        }
        if (space) out += ' ';
        space = false;
        out += c;
    }
    return out;
}

struct CanonicalHeaders {
    std::string block;   // "name:value\n" lines
    std::string signed_names;  // "name;name"
};

inline CanonicalHeaders canonical_headers(const std::vector<std::pair<std::string, std::string>>& headers) {
    std::vector<std::pair<std::string, std::string>> h;
    for (const auto& [k, v] : headers) {
        auto name = lower(k);
        auto it = std::find_if(h.begin(), h.end(), [&](auto& p) { return p.first == name; });
        if (it != h.end()) it->second += "," + trim_value(v);
        else h.emplace_back(name, trim_value(v));
    }
    std::sort(h.begin(), h.end());
    CanonicalHeaders out;
    for (const auto& [k, v] : h) {
        out.block += k + ":" + v + "\n";
        if (!out.signed_names.empty()) out.signed_names += ';';
        out.signed_names += k;
    }
    return out;
}

} // namespace detail

inline std::string canonical_request(const SignableRequest& r) {
    auto h = detail::canonical_headers(r.headers);
    return r.method + "\n" + r.path + "\n" + canonical_query(r.query) + "\n" + h.block + "\n" + h.signed_names +
           "\n" + r.payload_sha256;
}

inline std::string string_to_sign(const SigningScope& scope, std::string_view canonical) {
    return "AWS4-HMAC-SHA256\n" + scope.amz_date + "\n" + scope.credential_scope() + "\n" + api::sha256_hex(canonical);
}

inline Sha256Bytes signing_key(std::string_view secret, const SigningScope& scope) {
    auto k = hmac_sha256("AWS4" + std::string(secret), scope.date());
    k = hmac_sha256(k, scope.region);
    k = hmac_sha256(k, scope.service);
    return hmac_sha256(k, "aws4_request");
}

inline std::string signature(const Credentials& c, const SigningScope& scope, std::string_view canonical) {
    auto sig = hmac_sha256(signing_key(c.secret_access_key, scope), string_to_sign(scope, canonical));
    return api::to_hex(sig.data(), sig.size());
}

/// Adds x-amz-date, x-amz-content-sha256 and (with a session token) x-amz-security-token to
/// r.headers, then returns the Authorization header value covering all of r.headers.
inline std::string sign(SignableRequest& r, const Credentials& c, const SigningScope& scope) {
    r.headers.emplace_back("x-amz-date", scope.amz_date);
    r.headers.emplace_back("x-amz-content-sha256", r.payload_sha256);
    if (!c.session_token.empty()) r.headers.emplace_back("x-amz-security-token", c.session_token);
    auto names = detail::canonical_headers(r.headers).signed_names;
    return "AWS4-HMAC-SHA256 Credential=" + c.access_key_id + "/" + scope.credential_scope() +
           ", SignedHeaders=" + names + ", Signature=" + signature(c, scope, canonical_request(r));
}

/// Query-string authentication (a presigned URL's query, without the leading '?'); r.headers
/// must hold only host. The payload is UNSIGNED-PAYLOAD, as for every presigned S3 URL.
inline std::string presign_query(SignableRequest r, const Credentials& c, const SigningScope& scope,
                                 std::chrono::seconds expires) {
    r.payload_sha256 = "UNSIGNED-PAYLOAD";
    r.query.emplace_back("X-Amz-Algorithm", "AWS4-HMAC-SHA256");
    r.query.emplace_back("X-Amz-Credential", c.access_key_id + "/" + scope.credential_scope());
    r.query.emplace_back("X-Amz-Date", scope.amz_date);
    r.query.emplace_back("X-Amz-Expires", std::to_string(expires.count()));
    if (!c.session_token.empty()) r.query.emplace_back("X-Amz-Security-Token", c.session_token);
    r.query.emplace_back("X-Amz-SignedHeaders", detail::canonical_headers(r.headers).signed_names);
    auto sig = signature(c, scope, canonical_request(r));
    r.query.emplace_back("X-Amz-Signature", sig);
    return canonical_query(r.query);
}

} // namespace vck::s3
