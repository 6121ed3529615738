// AdmissionHandler: what a webhook path does with a decoded AdmissionRequest, and
// answer_review(), the transport-free part of serving a review (content type, body, decoding,
// the handler, encoding). Builders: validating(f); mutating(f), where f edits a copy of the
// object and the JSONPatch is computed from the difference (controller-runtime's
// PatchResponseFromRaw: no patch when nothing changed); validating_for<T> and mutating_for<T>,
// which hand f the object decoded as an API struct T.
// Guarantees: answer_review never throws; a bad request (content type, empty or malformed
// body, a review that does not decode) is HTTP 400 with a review whose status carries the
// message; a handler that throws yields allowed=false, code 500 and the exception's text; the
// response's uid is the request's and a status without a code gets 200. A typed mutation
// patches only what the handler changed: fields T does not model, or renders differently, stay
// as the API server sent them. No networking here (webhook_server.hpp serves this over HTTPS).
#pragma once

#include <vck/api/json.hpp>
#include <vck/webhook/admission_review.hpp>
#include <vck/webhook/json_patch.hpp>

#include <boost/json.hpp>

#include <cctype>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace vck::webhook {

/// A webhook's logic: a response to one request. It may throw (answered as code 500).
using AdmissionHandler = std::function<AdmissionResponse(const AdmissionRequest&)>;

/// A validating webhook: the request in, a response out (allowed(), denied(...), ...).
inline AdmissionHandler validating(std::function<AdmissionResponse(const AdmissionRequest&)> f) { return f; }

namespace detail {

/// The request's object as T, or a 400 response naming the problem (via `failed`).
template <class T>
bool decode_admitted(const json::value& v, const char* which, T& out, AdmissionResponse& failed) {
    try {
        out = api::from_json<T>(v);
        return true;
    } catch (const api::DecodeError& e) {
        failed = errored(400, std::string("decoding the request's ") + which + ": " + e.what());
    }
    return false;
}

} // namespace detail

/// A mutating webhook: `f` receives the request and a copy of request.object to change; when
/// it allows the request without a patch of its own, the patch is the difference between the
/// object it received and the copy (none when they are equal). For DELETE the object is null:
/// `f` is still called, and a change to the null copy makes no patch.
inline AdmissionHandler mutating(std::function<AdmissionResponse(const AdmissionRequest&, json::value& object)> f) {
    return [f = std::move(f)](const AdmissionRequest& req) {
        json::value object = req.object;
        AdmissionResponse r = f(req, object);
        if (r.allowed && r.patch.empty() && !req.object.is_null()) r.patch = create_json_patch(req.object, object);
        return r;
    };
}

/// A validating webhook on typed objects: `f` gets request.object and request.oldObject
/// decoded as T (nullptr when absent: oldObject on CREATE, object on DELETE). An object that
/// does not decode as T is answered with code 400 and the decoding error; f is not called.
template <class T>
AdmissionHandler validating_for(
    std::function<AdmissionResponse(const AdmissionRequest&, const T* object, const T* old_object)> f) {
    return [f = std::move(f)](const AdmissionRequest& req) {
        AdmissionResponse failed;
        T object{}, old_object{};
        if (!req.object.is_null() && !detail::decode_admitted(req.object, "object", object, failed)) return failed;
        if (!req.oldObject.is_null() && !detail::decode_admitted(req.oldObject, "oldObject", old_object, failed))
            return failed;
        return f(req, req.object.is_null() ? nullptr : &object, req.oldObject.is_null() ? nullptr : &old_object);
    };
}

/// A mutating webhook on typed objects (controller-runtime's defaulter): `f` changes the
/// object decoded as T. DELETE, and a request without an object, are allowed without calling
/// f (there is nothing to default). An object that does not decode as T is answered with code
/// 400. When f allows without a patch of its own, the patch touches only what f changed.
///
/// Why not diff the raw object against T's JSON, as controller-runtime's PatchResponseFromRaw
/// does with the marshalled struct: T's JSON is not the raw object even when f changed nothing
/// (empty values and nulls are omitted, defaults such as a volume's replicas=1 are written,
/// numbers may be spelt differently), so that diff would remove or rewrite fields f never
/// touched. Instead the change is measured between two renderings of T (T before f, T after
/// f), where everything f did not touch renders the same; those operations are replayed on
/// the raw object leniently (a parent the raw object omits is created, a removal of what it
/// lacks is skipped), and the patch sent is the raw object against that result, so it is an
/// exact, valid patch of what the API server sent.
template <class T>
AdmissionHandler mutating_for(std::function<AdmissionResponse(const AdmissionRequest&, T& object)> f) {
    return [f = std::move(f)](const AdmissionRequest& req) {
        if (req.operation == Operation::Delete || req.object.is_null()) return allowed();
        AdmissionResponse failed;
        T object{};
        if (!detail::decode_admitted(req.object, "object", object, failed)) return failed;
        json::value before = api::to_json(object);
        AdmissionResponse r = f(req, object);
        if (!r.allowed || !r.patch.empty()) return r;
        json::array changes = create_json_patch(before, api::to_json(object));
        if (changes.empty()) return r;
        json::value mutated = req.object;
        apply_json_patch_leniently(mutated, changes);
        r.patch = create_json_patch(req.object, mutated);
        return r;
    };
}

/// An HTTP answer to a review: the status code and the JSON body (an AdmissionReview).
struct ReviewAnswer {
    int status = 200;
    std::string body;
};

namespace detail {

inline ReviewAnswer bad_review(int http_status, std::string message) {
    AdmissionResponse r = errored(http_status, std::move(message));
    return {http_status, json::serialize(encode_response_review(r))};
}

/// "application/json", ignoring parameters (charset) and case, as the media type it names.
inline bool is_json_media_type(std::string_view ct) {
    auto semi = ct.find(';');
    auto media = ct.substr(0, semi);
    while (!media.empty() && std::isspace(static_cast<unsigned char>(media.back()))) media.remove_suffix(1);
    while (!media.empty() && std::isspace(static_cast<unsigned char>(media.front()))) media.remove_prefix(1);
    constexpr std::string_view want = "application/json";
    if (media.size() != want.size()) return false;
    for (std::size_t i = 0; i < want.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(media[i])) != want[i]) return false;
    return true;
}

} // namespace detail

/// Serves one review: `content_type` is the request's Content-Type header, `body` its body.
/// The bad-request answers are HTTP 400 (controller-runtime answers them with 200 and the
/// code only inside the review; a real status makes them plain to any client and to
/// requests_total) with the message in response.status.message.
inline ReviewAnswer answer_review(const AdmissionHandler& handler, std::string_view content_type,
                                  std::string_view body) noexcept {
    try {
        if (!detail::is_json_media_type(content_type))
            return detail::bad_review(400, "contentType=" + std::string(content_type) + ", expected application/json");
        if (body.empty()) return detail::bad_review(400, "request body is empty");
        AdmissionRequest req;
        try {
            req = decode_request_review(body);
        } catch (const api::DecodeError& e) {
            return detail::bad_review(400, std::string("decoding the AdmissionReview: ") + e.what());
        }
        AdmissionResponse res;
        try {
            res = handler(req);
        } catch (const std::exception& e) {
            res = errored(500, e.what());
        } catch (...) {
            res = errored(500, "the webhook's handler threw a non-standard exception");
        }
        res.uid = req.uid;
        if (!res.status) res.status.emplace();
        if (res.status->code == 0) res.status->code = 200;
        return {200, json::serialize(encode_response_review(res))};
    } catch (const std::exception& e) {
        return detail::bad_review(500, std::string("serving the review: ") + e.what());
    } catch (...) {
        return {500, "{}"};
    }
}

} // namespace vck::webhook
