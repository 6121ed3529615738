// ApiRequest and ApiReply: one HTTP exchange with the emulated API server as plain values
// (no socket types), so request handling can be specified and tested without TLS.
// Guarantee: every error reply carries a metav1.Status JSON body, as kube-apiserver's do.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/meta.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace vck::sandbox {

/// Who is calling, as authentication established it.
struct Identity {
    std::string user;
    std::vector<std::string> groups;
    bool authenticated() const { return !user.empty(); }
};

struct ApiRequest {
    std::string method;        // "GET", "POST", ...
    std::string path;          // percent-decoded, without the query
    std::map<std::string, std::string> query;  // decoded; a repeated key keeps its last value
    std::string content_type;  // without parameters ("application/merge-patch+json")
    std::string accept;        // the raw Accept header
    std::string body;
    Identity who;
    /// Impersonate-User, Impersonate-Group (each), Impersonate-Uid: whom the caller asks to act
    /// as (the API handler authorizes and applies it).
    std::string impersonate_user;
    std::vector<std::string> impersonate_groups;
    std::string impersonate_uid;
    bool impersonates() const { return !impersonate_user.empty() || !impersonate_groups.empty() || !impersonate_uid.empty(); }

    std::string param(const std::string& key) const {
        auto it = query.find(key);
        return it == query.end() ? std::string{} : it->second;
    }
    bool has(const std::string& key) const { return query.count(key) != 0; }
};

/// One answered request, as an audit log would record it (for RBAC and request-count tests).
struct AuditRecord {
    std::string user;
    std::string verb;       // get, list, watch, create, update, patch, delete, deletecollection
    std::string api_group;  // "" for the core group
    std::string resource;   // "pods", "pods/log"; "" for non-resource paths
    std::string namespace_;
    std::string path;       // for non-resource requests
    int code = 0;
};

struct ApiReply {
    int status = 200;
    std::string body;
    std::string content_type = "application/json";
    std::vector<std::pair<std::string, std::string>> headers;
};

/// The canonical reason phrase kube-apiserver puts in a Status for an HTTP code it made up.
inline std::string reason_for(int code) {
    switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 406: return "NotAcceptable";
    case 409: return "Conflict";
    case 410: return "Expired";
    case 413: return "RequestEntityTooLarge";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 500: return "InternalError";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return "Unknown";
    }
}

inline api::Status failure_status(int code, std::string message, std::string reason = {}) {
    api::Status st;
    st.status = "Failure";
    st.code = code;
    st.message = std::move(message);
    st.reason = reason.empty() ? reason_for(code) : std::move(reason);
    return st;
}

inline ApiReply json_reply(int code, const boost::json::value& body) {
    ApiReply r;
    r.status = code;
    // kube-apiserver's JSON encoder ends every body with a newline; clients that compare or
    // frame bodies (curl's output, a test reading it line by line) see the same here.
    r.body = boost::json::serialize(body);
    r.body += '\n';
    return r;
}

/// A Status reply; `metadata: {}` is always present because some clients index it blindly.
inline ApiReply status_reply(const api::Status& st) {
    auto v = api::to_json(st);
    v.as_object()["metadata"] = boost::json::object{};
    return json_reply(static_cast<int>(st.code), v);
}

inline ApiReply error_reply(int code, std::string message, std::string reason = {}) {
    return status_reply(failure_status(code, std::move(message), std::move(reason)));
}

} // namespace vck::sandbox
