// StoreError: a request the emulated API server's object store refuses, carrying the complete
// metav1.Status kube-apiserver sends for the same refusal (code, reason, message, details).
// Guarantee: the constructors below word messages and fill details exactly as the real
// server's apimachinery errors do, so the HTTP front end can serialize status() unchanged.
#pragma once

#include <vck/api/meta.hpp>
#include <vck/sandbox/validation/field_error.hpp>

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vck::sandbox {

class StoreError : public std::runtime_error {
public:
    explicit StoreError(api::Status status) : std::runtime_error(status.message), status_(std::move(status)) {}

    const api::Status& status() const noexcept { return status_; }
    int code() const noexcept { return static_cast<int>(status_.code); }
    const std::string& reason() const noexcept { return status_.reason; }

private:
    api::Status status_;
};

/// How the apiserver names a resource in messages: "pods", "volumemanagers.vck.intelai.org".
inline std::string qualified_resource(std::string_view group, std::string_view resource) {
    std::string s(resource);
    if (!group.empty()) s += "." + std::string(group);
    return s;
}

/// Status constructors named after k8s.io/apimachinery/pkg/api/errors.
namespace store_status {

namespace detail {
inline api::Status failure(std::int64_t code, std::string reason, std::string message) {
    api::Status st;
    st.status = "Failure";
    st.code = code;
    st.reason = std::move(reason);
    st.message = std::move(message);
    return st;
}
inline api::StatusDetails details(std::string_view group, std::string_view resource, std::string_view name) {
    api::StatusDetails d;
    d.name = std::string(name);
    d.group = std::string(group);
    d.kind = std::string(resource);  // the apiserver puts the resource here, not the Kind
    return d;
}
} // namespace detail

inline api::Status not_found(std::string_view group, std::string_view resource, std::string_view name) {
    auto st = detail::failure(404, "NotFound", qualified_resource(group, resource) + " " + go::quote(name) + " not found");
    st.details = detail::details(group, resource, name);
    return st;
}

/// A path the server does not serve (unknown resource or subresource).
inline api::Status no_such_resource() {
    auto st = detail::failure(404, "NotFound", "the server could not find the requested resource");
    st.details = api::StatusDetails{};
    return st;
}

inline api::Status already_exists(std::string_view group, std::string_view resource, std::string_view name) {
    auto st = detail::failure(409, "AlreadyExists",
                              qualified_resource(group, resource) + " " + go::quote(name) + " already exists");
    st.details = detail::details(group, resource, name);
    return st;
}

inline api::Status conflict(std::string_view group, std::string_view resource, std::string_view name,
                            std::string_view why) {
    auto st = detail::failure(409, "Conflict", "Operation cannot be fulfilled on " + qualified_resource(group, resource) +
                                                   " " + go::quote(name) + ": " + std::string(why));
    st.details = detail::details(group, resource, name);
    return st;
}

/// The optimistic-concurrency failure every controller retries on.
inline api::Status modified_conflict(std::string_view group, std::string_view resource, std::string_view name) {
    return conflict(group, resource, name,
                    "the object has been modified; please apply your changes to the latest version and try again");
}

inline api::Status forbidden(std::string_view group, std::string_view resource, std::string_view name,
                             std::string_view why) {
    std::string msg = qualified_resource(group, resource);
    if (!name.empty()) msg += " " + go::quote(name);
    auto st = detail::failure(403, "Forbidden", msg + " is forbidden: " + std::string(why));
    st.details = detail::details(group, resource, name);
    return st;
}

inline api::Status bad_request(std::string message) { return detail::failure(400, "BadRequest", std::move(message)); }

inline api::Status expired(std::string message) { return detail::failure(410, "Expired", std::move(message)); }

inline api::Status method_not_allowed(std::string_view group, std::string_view resource, std::string message) {
    auto st = detail::failure(405, "MethodNotAllowed", std::move(message));
    st.details = detail::details(group, resource, "");
    return st;
}

inline api::Status unsupported_media_type(std::string message) {
    return detail::failure(415, "UnsupportedMediaType", std::move(message));
}

/// A list or watch asked for a resourceVersion the server has not reached yet.
inline api::Status too_large_resource_version(std::int64_t asked, std::int64_t current) {
    auto st = detail::failure(504, "Timeout", "Too large resource version: " + std::to_string(asked) +
                                                  ", current: " + std::to_string(current));
    api::StatusDetails d;
    d.causes.push_back(api::StatusCause{"ResourceVersionTooLarge", "Too large resource version", ""});
    d.retryAfterSeconds = 1;
    st.details = std::move(d);
    return st;
}

/// 422 Invalid; `kind` is the Kind ("Pod"), unlike the other constructors' resource.
inline api::Status invalid(std::string_view kind, std::string_view group, std::string_view name,
                           const std::vector<FieldError>& errors) {
    return invalid_status(kind, group, name, errors);
}

} // namespace store_status

} // namespace vck::sandbox
