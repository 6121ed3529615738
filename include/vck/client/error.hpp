// The one error type of the client: ApiError, built from the server's metav1.Status or from
// a transport failure. Callers branch on kind() (NotFound, Conflict, Gone, ...), never on
// message text. what() names the request ("GET /api/v1/namespaces/a/pods/b") and the
// server's own words; retry_after() carries a 429/503's Retry-After.
#pragma once

#include <vck/api/meta.hpp>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace vck::client {

enum class ErrorKind {
    // From the server (HTTP status + metav1.Status reason).
    BadRequest,          // 400
    Unauthorized,        // 401
    Forbidden,           // 403
    NotFound,            // 404
    MethodNotAllowed,    // 405
    NotAcceptable,       // 406
    AlreadyExists,       // 409, reason AlreadyExists
    Conflict,            // 409, any other reason
    Gone,                // 410 (reason Expired or Gone): resourceVersion too old
    RequestTooLarge,     // 413
    UnsupportedMediaType,// 415
    Invalid,             // 422
    TooManyRequests,     // 429
    InternalError,       // 500
    ServiceUnavailable,  // 503
    ServerTimeout,       // 504, or reason ServerTimeout/Timeout
    OtherStatus,         // any other non-2xx
    // From the transport.
    ConnectionRefused,
    TlsVerification,     // the server's certificate did not verify (CA or hostname)
    Timeout,             // connect or request timeout
    Network,             // any other transport failure (reset, DNS, closed mid-response)
    Decode,              // a 2xx body that is not the JSON expected
    Config,              // bad client configuration (kubeconfig, credentials)
    // Refused on this side, never sent.
    Fenced,              // the client's write gate refused a mutating request (not the leader)
};

constexpr std::string_view to_string(ErrorKind k) {
    switch (k) {
    case ErrorKind::BadRequest: return "BadRequest";
    case ErrorKind::Unauthorized: return "Unauthorized";
    case ErrorKind::Forbidden: return "Forbidden";
    case ErrorKind::NotFound: return "NotFound";
    case ErrorKind::MethodNotAllowed: return "MethodNotAllowed";
    case ErrorKind::NotAcceptable: return "NotAcceptable";
    case ErrorKind::AlreadyExists: return "AlreadyExists";
    case ErrorKind::Conflict: return "Conflict";
    case ErrorKind::Gone: return "Gone";
    case ErrorKind::RequestTooLarge: return "RequestEntityTooLarge";
    case ErrorKind::UnsupportedMediaType: return "UnsupportedMediaType";
    case ErrorKind::Invalid: return "Invalid";
    case ErrorKind::TooManyRequests: return "TooManyRequests";
    case ErrorKind::InternalError: return "InternalError";
    case ErrorKind::ServiceUnavailable: return "ServiceUnavailable";
    case ErrorKind::ServerTimeout: return "ServerTimeout";
    case ErrorKind::OtherStatus: return "OtherStatus";
    case ErrorKind::ConnectionRefused: return "ConnectionRefused";
    case ErrorKind::TlsVerification: return "TlsVerification";
    case ErrorKind::Timeout: return "Timeout";
    case ErrorKind::Network: return "Network";
    case ErrorKind::Decode: return "Decode";
    case ErrorKind::Config: return "Config";
    case ErrorKind::Fenced: return "Fenced";
    }
    return "Unknown";
}

/// The kind a server response means, from its HTTP code and Status reason.
constexpr ErrorKind kind_from_status(int code, std::string_view reason) {
    switch (code) {
    case 400: return ErrorKind::BadRequest;
    case 401: return ErrorKind::Unauthorized;
    case 403: return ErrorKind::Forbidden;
    case 404: return ErrorKind::NotFound;
    case 405: return ErrorKind::MethodNotAllowed;
    case 406: return ErrorKind::NotAcceptable;
    case 409: return reason == "AlreadyExists" ? ErrorKind::AlreadyExists : ErrorKind::Conflict;
    case 410: return ErrorKind::Gone;
    case 413: return ErrorKind::RequestTooLarge;
    case 415: return ErrorKind::UnsupportedMediaType;
    case 422: return ErrorKind::Invalid;
    case 429: return ErrorKind::TooManyRequests;
    case 500: return reason == "ServerTimeout" || reason == "Timeout" ? ErrorKind::ServerTimeout
                                                                       : ErrorKind::InternalError;
    case 503: return ErrorKind::ServiceUnavailable;
    case 504: return ErrorKind::ServerTimeout;
    default: return ErrorKind::OtherStatus;
    }
}

class ApiError : public std::runtime_error {
public:
    /// An error answered by the server.
    ApiError(std::string verb, std::string path, api::Status status,
             std::optional<std::chrono::seconds> retry_after = std::nullopt)
        : std::runtime_error(describe(verb, path, status.message.empty() ? status.reason : status.message,
                                      static_cast<int>(status.code))),
          kind_(kind_from_status(static_cast<int>(status.code), status.reason)),
          verb_(std::move(verb)), path_(std::move(path)), status_(std::move(status)),
          retry_after_(retry_after) {}

    /// A transport or client-side error (no server Status).
    ApiError(ErrorKind kind, std::string verb, std::string path, std::string message)
        : std::runtime_error(describe(verb, path, message, 0)), kind_(kind), verb_(std::move(verb)),
          path_(std::move(path)) {
        status_.status = "Failure";
        status_.message = std::move(message);
        status_.reason = std::string(to_string(kind));
    }

    ErrorKind kind() const noexcept { return kind_; }
    int code() const noexcept { return static_cast<int>(status_.code); }
    const std::string& reason() const noexcept { return status_.reason; }
    /// The server's own message (or the transport's), without the request prefix.
    const std::string& server_message() const noexcept { return status_.message; }
    const api::Status& status() const noexcept { return status_; }
    const std::string& verb() const noexcept { return verb_; }
    const std::string& path() const noexcept { return path_; }
    std::optional<std::chrono::seconds> retry_after() const noexcept { return retry_after_; }

    bool is(ErrorKind k) const noexcept { return kind_ == k; }
    /// A transport failure (no HTTP answer was received).
    bool is_transport() const noexcept { return kind_ >= ErrorKind::ConnectionRefused && kind_ < ErrorKind::Fenced; }

private:
    static std::string describe(std::string_view verb, std::string_view path, std::string_view msg, int code) {
        std::string s(verb);
        s += ' ';
        s += path;
        if (code) {
            s += " (";
            s += std::to_string(code);
            s += ')';
        }
        s += ": ";
        s += msg;
        return s;
    }

    ErrorKind kind_;
    std::string verb_;
    std::string path_;
    api::Status status_;
    std::optional<std::chrono::seconds> retry_after_;
};

inline bool is_not_found(const std::exception& e) {
    auto* a = dynamic_cast<const ApiError*>(&e);
    return a && a->is(ErrorKind::NotFound);
}

} // namespace vck::client
