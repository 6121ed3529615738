// AdmissionReview (admission.k8s.io/v1): what kube-apiserver POSTs to an admission webhook
// (a review carrying a request) and what the webhook answers (the same review carrying a
// response). Guarantees: decoding a review refuses anything the API server would not send,
// with a DecodeError naming the field ("request.uid: required value missing", "apiVersion:
// \"admission.k8s.io/v1beta1\" is not admission.k8s.io/v1"); the object and oldObject are kept
// whole as JSON (null when absent). A response's patch is held as JSONPatch operations and
// goes on the wire base64-encoded with patchType "JSONPatch"; the helpers build responses as
// controller-runtime's admission package does (allowed: code 200; denied: 403 Forbidden;
// errored: the given code and message). Both directions are encoded and decoded, so a test
// kit playing the API server can use the same types. No networking here.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/meta.hpp>
#include <vck/client/base64.hpp>

#include <boost/json.hpp>

#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vck::webhook {

namespace json = boost::json;

inline constexpr std::string_view kAdmissionApiVersion = "admission.k8s.io/v1";

struct GroupVersionKind {
    std::string group;
    std::string version;
    std::string kind;
};
BOOST_DESCRIBE_STRUCT(GroupVersionKind, (), (group, version, kind))

struct GroupVersionResource {
    std::string group;
    std::string version;
    std::string resource;
};
BOOST_DESCRIBE_STRUCT(GroupVersionResource, (), (group, version, resource))

/// authentication.k8s.io/v1 UserInfo: who sent the request being admitted.
struct UserInfo {
    std::string username;
    std::string uid;
    std::vector<std::string> groups;
    std::map<std::string, std::vector<std::string>> extra;
};
BOOST_DESCRIBE_STRUCT(UserInfo, (), (username, uid, groups, extra))

enum class Operation { Create, Update, Delete, Connect };

inline constexpr std::string_view to_string(Operation o) {
    switch (o) {
    case Operation::Create: return "CREATE";
    case Operation::Update: return "UPDATE";
    case Operation::Delete: return "DELETE";
    case Operation::Connect: return "CONNECT";
    }
    return "CREATE";
}

inline std::optional<Operation> parse_operation(std::string_view s) {
    if (s == "CREATE") return Operation::Create;
    if (s == "UPDATE") return Operation::Update;
    if (s == "DELETE") return Operation::Delete;
    if (s == "CONNECT") return Operation::Connect;
    return std::nullopt;
}

/// admission.k8s.io/v1 AdmissionRequest. Field names are the wire's (namespace_ for
/// "namespace"). requestKind/requestResource are what the user asked for when the API server
/// converted the object to the version the webhook registered for.
struct AdmissionRequest {
    std::string uid;
    GroupVersionKind kind;
    GroupVersionResource resource;
    std::string subResource;
    std::optional<GroupVersionKind> requestKind;
    std::optional<GroupVersionResource> requestResource;
    std::string requestSubResource;
    std::string name;
    std::string namespace_;
    Operation operation = Operation::Create;
    UserInfo userInfo;
    json::value object;     // null when absent (DELETE)
    json::value oldObject;  // null when absent (CREATE, CONNECT)
    bool dryRun = false;
    json::value options;    // CreateOptions, UpdateOptions, DeleteOptions; null when absent
};

/// admission.k8s.io/v1 AdmissionResponse. `status` is the wire's "status" (Go's Result), a
/// metav1.Status; `patch` holds JSONPatch operations (RFC 6902), sent base64 with patchType
/// "JSONPatch" when not empty.
struct AdmissionResponse {
    std::string uid;
    bool allowed = false;
    std::optional<api::Status> status;
    json::array patch;
    std::vector<std::string> warnings;
    std::map<std::string, std::string> auditAnnotations;

    /// This response with `w` appended to its warnings (shown to the user by kubectl).
    AdmissionResponse with_warnings(std::vector<std::string> w) const& {
        AdmissionResponse r = *this;
        for (auto& s : w) r.warnings.push_back(std::move(s));
        return r;
    }
    AdmissionResponse with_warnings(std::vector<std::string> w) && {
        for (auto& s : w) warnings.push_back(std::move(s));
        return std::move(*this);
    }
};

// ---- controller-runtime's response helpers ----------------------------------------------

/// Allowed: status code 200 and, when given, the message.
inline AdmissionResponse allowed(std::string message = {}) {
    AdmissionResponse r;
    r.allowed = true;
    r.status.emplace();
    r.status->code = 200;
    r.status->message = std::move(message);
    return r;
}

/// Denied: status code 403, reason Forbidden, the message (what kubectl shows the user).
inline AdmissionResponse denied(std::string message) {
    AdmissionResponse r;
    r.allowed = false;
    r.status.emplace();
    r.status->code = 403;
    r.status->reason = "Forbidden";
    r.status->message = std::move(message);
    return r;
}

/// Errored: not allowed, with the given status code and the error's text (no reason).
inline AdmissionResponse errored(std::int32_t code, std::string message) {
    AdmissionResponse r;
    r.allowed = false;
    r.status.emplace();
    r.status->code = code;
    r.status->message = std::move(message);
    return r;
}
inline AdmissionResponse errored(std::int32_t code, const std::exception& e) { return errored(code, e.what()); }

/// Allowed with these JSONPatch operations.
inline AdmissionResponse patched(json::array ops, std::string message = {}) {
    AdmissionResponse r = allowed(std::move(message));
    r.patch = std::move(ops);
    return r;
}

// ---- decoding and encoding ----------------------------------------------------------------

namespace detail {

inline const char* review_kind_name(const json::value& v) { return api::detail::kind_name(v); }

inline const json::object& review_object(const json::value& v, const std::string& path) {
    if (!v.is_object())
        throw api::DecodeError(path, std::string("expected object, got ") + review_kind_name(v));
    return v.get_object();
}

/// The member `key` decoded as T (T{} when absent or null), errors under `path.key`.
template <class T>
T review_member(const json::object& o, std::string_view key, const std::string& path) {
    const json::value* v = o.if_contains(key);
    if (!v || v->is_null()) return T{};
    std::string where = path.empty() ? std::string(key) : path + "." + std::string(key);
    try {
        return api::from_json<T>(*v);
    } catch (const api::DecodeError& e) {
        throw e.within(where);
    }
}

/// The envelope's apiVersion and kind, checked.
inline const json::object& review_envelope(const json::value& review) {
    const auto& o = review_object(review, "");
    auto api_version = review_member<std::string>(o, "apiVersion", "");
    if (api_version != kAdmissionApiVersion)
        throw api::DecodeError("apiVersion", api_version.empty()
                                                 ? "required value missing (expected admission.k8s.io/v1)"
                                                 : "\"" + api_version + "\" is not admission.k8s.io/v1");
    auto kind = review_member<std::string>(o, "kind", "");
    if (kind != "AdmissionReview")
        throw api::DecodeError("kind", kind.empty() ? "required value missing (expected AdmissionReview)"
                                                    : "\"" + kind + "\" is not AdmissionReview");
    return o;
}

inline json::value review_any(const json::object& o, std::string_view key) {
    const json::value* v = o.if_contains(key);
    return v ? *v : json::value();
}

inline json::value review_envelope_for(std::string_view member, json::value body) {
    return json::value{{"kind", "AdmissionReview"}, {"apiVersion", kAdmissionApiVersion}, {member, std::move(body)}};
}

} // namespace detail

/// The request of a review (what a webhook receives). Throws api::DecodeError naming what is
/// wrong: not an object, apiVersion or kind, a missing request or uid, a member of the wrong
/// JSON type, an operation outside CREATE/UPDATE/DELETE/CONNECT.
inline AdmissionRequest decode_request_review(const json::value& review) {
    using detail::review_member;
    const auto& env = detail::review_envelope(review);
    const json::value* rv = env.if_contains("request");
    if (!rv || rv->is_null()) throw api::DecodeError("request", "required value missing");
    const auto& o = detail::review_object(*rv, "request");
    const std::string p = "request";
    AdmissionRequest r;
    r.uid = review_member<std::string>(o, "uid", p);
    if (r.uid.empty()) throw api::DecodeError("request.uid", "required value missing");
    r.kind = review_member<GroupVersionKind>(o, "kind", p);
    r.resource = review_member<GroupVersionResource>(o, "resource", p);
    r.subResource = review_member<std::string>(o, "subResource", p);
    r.requestKind = review_member<std::optional<GroupVersionKind>>(o, "requestKind", p);
    r.requestResource = review_member<std::optional<GroupVersionResource>>(o, "requestResource", p);
    r.requestSubResource = review_member<std::string>(o, "requestSubResource", p);
    r.name = review_member<std::string>(o, "name", p);
    r.namespace_ = review_member<std::string>(o, "namespace", p);
    auto op = review_member<std::string>(o, "operation", p);
    if (op.empty()) throw api::DecodeError("request.operation", "required value missing");
    auto parsed = parse_operation(op);
    if (!parsed)
        throw api::DecodeError("request.operation",
                               "\"" + op + "\" is not one of CREATE, UPDATE, DELETE, CONNECT");
    r.operation = *parsed;
    r.userInfo = review_member<UserInfo>(o, "userInfo", p);
    r.object = detail::review_any(o, "object");
    r.oldObject = detail::review_any(o, "oldObject");
    r.dryRun = review_member<std::optional<bool>>(o, "dryRun", p).value_or(false);
    r.options = detail::review_any(o, "options");
    for (auto [key, v] : {std::pair{"object", &r.object}, {"oldObject", &r.oldObject}, {"options", &r.options}})
        if (!v->is_null() && !v->is_object())
            throw api::DecodeError(std::string("request.") + key,
                                   std::string("expected object, got ") + detail::review_kind_name(*v));
    return r;
}

/// The same, from the body's text ("invalid JSON: ..." when it does not parse).
inline AdmissionRequest decode_request_review(std::string_view text) {
    return decode_request_review(api::parse(text));
}

/// A review carrying `r` (what the API server sends): for test kits playing the API server.
inline json::value encode_request_review(const AdmissionRequest& r) {
    json::object o;
    o["uid"] = r.uid;
    o["kind"] = api::to_json(r.kind);
    o["resource"] = api::to_json(r.resource);
    if (!r.subResource.empty()) o["subResource"] = r.subResource;
    if (r.requestKind) o["requestKind"] = api::to_json(*r.requestKind);
    if (r.requestResource) o["requestResource"] = api::to_json(*r.requestResource);
    if (!r.requestSubResource.empty()) o["requestSubResource"] = r.requestSubResource;
    if (!r.name.empty()) o["name"] = r.name;
    if (!r.namespace_.empty()) o["namespace"] = r.namespace_;
    o["operation"] = to_string(r.operation);
    o["userInfo"] = api::to_json(r.userInfo);
    o["object"] = r.object;  // the API server sends null for an absent object
    o["oldObject"] = r.oldObject;
    o["dryRun"] = r.dryRun;
    o["options"] = r.options;
    return detail::review_envelope_for("request", std::move(o));
}

/// A review carrying `r` (what a webhook answers). The status is written as Go writes a
/// metav1.Status inside a response: no kind or apiVersion.
inline json::value encode_response_review(const AdmissionResponse& r) {
    json::object o;
    o["uid"] = r.uid;
    o["allowed"] = r.allowed;
    if (r.status) {
        json::value s = api::to_json(*r.status);
        auto& so = s.get_object();
        so.erase("kind");
        so.erase("apiVersion");
        so["metadata"] = json::object();  // Go's ListMeta is not omitempty
        o["status"] = std::move(s);
    }
    if (!r.patch.empty()) {
        o["patch"] = client::base64_encode(json::serialize(r.patch));
        o["patchType"] = "JSONPatch";
    }
    if (!r.warnings.empty()) o["warnings"] = api::to_json(r.warnings);
    if (!r.auditAnnotations.empty()) o["auditAnnotations"] = api::to_json(r.auditAnnotations);
    return detail::review_envelope_for("response", std::move(o));
}

/// The response of a review (what the API server reads back). Throws api::DecodeError as
/// decode_request_review does; a patch that is not base64 of a JSON array, or a patchType other
/// than JSONPatch, is refused.
inline AdmissionResponse decode_response_review(const json::value& review) {
    using detail::review_member;
    const auto& env = detail::review_envelope(review);
    const json::value* rv = env.if_contains("response");
    if (!rv || rv->is_null()) throw api::DecodeError("response", "required value missing");
    const auto& o = detail::review_object(*rv, "response");
    const std::string p = "response";
    AdmissionResponse r;
    r.uid = review_member<std::string>(o, "uid", p);
    r.allowed = review_member<bool>(o, "allowed", p);
    r.status = review_member<std::optional<api::Status>>(o, "status", p);
    auto patch = review_member<std::string>(o, "patch", p);
    auto patch_type = review_member<std::string>(o, "patchType", p);
    if (!patch.empty()) {
        if (patch_type != "JSONPatch")
            throw api::DecodeError("response.patchType",
                                   patch_type.empty() ? "required with a patch" : "\"" + patch_type + "\" is not JSONPatch");
        auto bytes = client::base64_decode(patch);
        if (!bytes) throw api::DecodeError("response.patch", "not base64");
        boost::system::error_code ec;
        auto ops = json::parse(*bytes, ec);
        if (ec || !ops.is_array()) throw api::DecodeError("response.patch", "not a JSON array of patch operations");
        r.patch = std::move(ops.get_array());
    }
    r.warnings = review_member<std::vector<std::string>>(o, "warnings", p);
    r.auditAnnotations = review_member<std::map<std::string, std::string>>(o, "auditAnnotations", p);
    return r;
}

inline AdmissionResponse decode_response_review(std::string_view text) {
    return decode_response_review(api::parse(text));
}

} // namespace vck::webhook
