// S3Error: the one error type of the S3 client, made from an S3 XML <Error> body, an HTTP
// status, or a transport failure. Callers branch on kind(); what() opens with a sentence a
// user can act on ("bucket \"x\" does not exist at http://...") and ends with S3's own words.
// retryable() is true exactly for throttling, 5xx and transport failures.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace vck::s3 {

enum class S3ErrorKind {
    NoSuchBucket,
    NoSuchKey,        // also a 404 without a body (HEAD)
    AccessDenied,     // 403 AccessDenied / AllAccessDisabled
    BadCredentials,   // InvalidAccessKeyId, SignatureDoesNotMatch, ExpiredToken, ...
    InvalidRange,     // 416
    SlowDown,         // 503 SlowDown, 429, RequestLimitExceeded
    ServerError,      // other 5xx
    BadRequest,       // other 4xx
    Network,          // refused, reset, timeout, DNS, cut mid-body
    InvalidResponse,  // a body that is not the XML S3 sends
};

constexpr std::string_view to_string(S3ErrorKind k) {
    switch (k) {
    case S3ErrorKind::NoSuchBucket: return "NoSuchBucket";
    case S3ErrorKind::NoSuchKey: return "NoSuchKey";
    case S3ErrorKind::AccessDenied: return "AccessDenied";
    case S3ErrorKind::BadCredentials: return "BadCredentials";
    case S3ErrorKind::InvalidRange: return "InvalidRange";
    case S3ErrorKind::SlowDown: return "SlowDown";
    case S3ErrorKind::ServerError: return "ServerError";
    case S3ErrorKind::BadRequest: return "BadRequest";
    case S3ErrorKind::Network: return "Network";
    case S3ErrorKind::InvalidResponse: return "InvalidResponse";
    }
    return "Unknown";
}

class S3Error : public std::runtime_error {
public:
    S3Error(S3ErrorKind kind, std::string message, std::string code = {}, unsigned status = 0)
        : std::runtime_error(std::move(message)), kind_(kind), code_(std::move(code)), status_(status) {}

    S3ErrorKind kind() const { return kind_; }
    const std::string& code() const { return code_; }  // S3's <Code>, empty if none
    unsigned status() const { return status_; }         // HTTP status, 0 for transport errors
    bool retryable() const {
        return kind_ == S3ErrorKind::SlowDown || kind_ == S3ErrorKind::ServerError || kind_ == S3ErrorKind::Network;
    }

private:
    S3ErrorKind kind_;
    std::string code_;
    unsigned status_;
};

/// The kind an S3 <Code> (possibly empty) and HTTP status mean.
inline S3ErrorKind kind_from_code(std::string_view code, unsigned status) {
    if (code == "NoSuchBucket") return S3ErrorKind::NoSuchBucket;
    if (code == "NoSuchKey" || code == "NoSuchUpload") return S3ErrorKind::NoSuchKey;
    if (code == "AccessDenied" || code == "AllAccessDisabled" || code == "AccountProblem")
        return S3ErrorKind::AccessDenied;
    if (code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "ExpiredToken" ||
        code == "InvalidToken" || code == "TokenRefreshRequired" || code == "AuthorizationHeaderMalformed" ||
        code == "RequestTimeTooSkewed" || code == "MissingSecurityHeader")
        return S3ErrorKind::BadCredentials;
    if (code == "InvalidRange" || status == 416) return S3ErrorKind::InvalidRange;
    if (code == "SlowDown" || code == "RequestLimitExceeded" || code == "Throttling" || status == 429)
        return S3ErrorKind::SlowDown;
    if (status >= 500 || code == "InternalError" || code == "ServiceUnavailable") return S3ErrorKind::ServerError;
    if (status == 404) return S3ErrorKind::NoSuchKey;
    if (status == 401) return S3ErrorKind::BadCredentials;
    if (status == 403) return S3ErrorKind::AccessDenied;
    return S3ErrorKind::BadRequest;
}

/// What failed, in the user's terms: the sentence that opens every S3Error message.
/// `where` is the endpoint URL, `bucket`/`key` the object (key may be empty).
inline std::string explain(S3ErrorKind kind, std::string_view where, std::string_view bucket, std::string_view key) {
    std::string obj = "s3://" + std::string(bucket) + (key.empty() ? "" : "/" + std::string(key));
    switch (kind) {
    case S3ErrorKind::NoSuchBucket:
        return "bucket \"" + std::string(bucket) + "\" does not exist at " + std::string(where) +
               "; check the bucket name in the source URL and the endpoint";
    case S3ErrorKind::NoSuchKey:
        return obj + " does not exist at " + std::string(where) + "; check the key (a prefix needs a trailing /)";
    case S3ErrorKind::AccessDenied:
        return "access to " + obj + " was denied; the credentials are valid but not allowed to read/write it";
    case S3ErrorKind::BadCredentials:
        return "the S3 server rejected the credentials for " + obj +
               "; check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) and the region";
    case S3ErrorKind::InvalidRange:
        return "the requested byte range of " + obj + " is outside the object (it changed during the transfer?)";
    case S3ErrorKind::SlowDown:
        return "the S3 server at " + std::string(where) + " kept asking us to slow down; retry later or lower --parallel";
    case S3ErrorKind::ServerError:
        return "the S3 server at " + std::string(where) + " kept failing with server errors for " + obj;
    case S3ErrorKind::BadRequest:
        return "the S3 server at " + std::string(where) + " rejected the request for " + obj;
    case S3ErrorKind::Network:
        return "cannot reach the S3 server at " + std::string(where) + " for " + obj +
               "; check the endpoint URL and the network";
    case S3ErrorKind::InvalidResponse:
        return "the server at " + std::string(where) + " sent a response that is not S3's for " + obj +
               "; is the endpoint an S3 service?";
    }
    return "S3 request failed";
}

} // namespace vck::s3
