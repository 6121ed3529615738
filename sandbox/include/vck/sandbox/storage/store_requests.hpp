// What callers pass to ObjectStore's operations and what they get back besides objects: the
// resource a request addresses, list, watch, delete and write options (read from a request's
// query or body by the front end; in-process callers keep the defaults) and the store's own
// options. Plain values with no behaviour but StoreDeleteOptions::from_json, which refuses a
// malformed DeleteOptions body with the 400 the real server sends. The Store- prefix keeps
// them apart from the client's ListOptions, WatchOptions and DeleteOptions
// (client/request_options.hpp) and from the informer cache's runtime::StoreOptions.
#pragma once

#include <vck/sandbox/validation/field_validation.hpp>
#include <vck/sandbox/validation/store_error.hpp>

#include <boost/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

namespace json = boost::json;

/// Which resource a request addresses, as its URL names it.
struct ResourceId {
    std::string group;     // "" for core
    std::string version;   // "v1"
    std::string resource;  // plural
};

struct StoreListOptions {
    std::string label_selector;
    std::string field_selector;
    std::int64_t limit = 0;       // 0 = everything
    std::string continue_token;
    std::string resource_version;        // "", "0" or a number
    std::string resource_version_match;  // "", "NotOlderThan", "Exact"
};

struct StoreWatchOptions {
    std::string label_selector;
    std::string field_selector;
    std::string resource_version;  // "" or "0": current state first; N: changes after N
    bool allow_bookmarks = false;
};

struct StoreDeleteOptions {
    std::optional<std::string> precondition_uid;
    std::optional<std::string> precondition_resource_version;
    std::string propagation_policy;  // "", "Orphan", "Background", "Foreground"
    /// orphanDependents: false was given (the deprecated spelling of cascading deletion): the
    /// only case in which a deletion left pending answers 202 rather than 200.
    bool orphan_dependents_false = false;
    /// gracePeriodSeconds: how long a pod may take to stop (its spec's
    /// terminationGracePeriodSeconds when unset; 0 deletes it at once).
    std::optional<std::int64_t> grace_period_seconds;
    bool dry_run = false;  // dryRun=All

    /// Reads a meta/v1 DeleteOptions body (null or {} for defaults). Throws StoreError 400.
    static StoreDeleteOptions from_json(const json::value& body) {
        StoreDeleteOptions d;
        if (body.is_null()) return d;
        if (!body.is_object()) throw StoreError(store_status::bad_request("DeleteOptions must be a JSON object"));
        const auto& o = body.get_object();
        auto str = [&](const json::object& from, std::string_view key, std::string_view path) -> std::optional<std::string> {
            const auto* v = from.if_contains(key);
            if (!v || v->is_null()) return std::nullopt;
            if (!v->is_string())
                throw StoreError(store_status::bad_request("DeleteOptions." + std::string(path) + " must be a string"));
            return std::string(v->get_string());
        };
        if (const auto* p = o.if_contains("preconditions"); p && p->is_object()) {
            d.precondition_uid = str(p->get_object(), "uid", "preconditions.uid");
            d.precondition_resource_version = str(p->get_object(), "resourceVersion", "preconditions.resourceVersion");
        }
        if (auto pp = str(o, "propagationPolicy", "propagationPolicy")) d.propagation_policy = *pp;
        if (const auto* od = o.if_contains("orphanDependents"); od && od->is_bool()) {
            d.orphan_dependents_false = !od->get_bool();
            if (d.propagation_policy.empty()) d.propagation_policy = od->get_bool() ? "Orphan" : "Background";
        }
        if (const auto* g = o.if_contains("gracePeriodSeconds"); g && !g->is_null()) {
            if (!g->is_int64() && !g->is_uint64())
                throw StoreError(store_status::bad_request("DeleteOptions.gracePeriodSeconds must be an integer"));
            d.grace_period_seconds = g->to_number<std::int64_t>();
        }
        return d;
    }
};

/// dryRun=All: the write is checked in full and answered, and nothing is stored.
enum class DryRun { No, All };

/// How a write treats the strict decoding errors of its request (fieldValidation): the store
/// finds the unknown fields (it knows the schemas); the front end, which has the request's
/// text, passes the errors the text carries by itself (duplicate fields). Warnings, when
/// `warnings` is given, are appended there for the front end to answer as Warning headers.
/// In-process writers keep the default, Ignore: unknown fields are dropped silently.
/// Where a write stops for admission (admission_webhooks.hpp), as kube-apiserver's handlers
/// call it: `mutate` with the decoded (for a patch: patched) object and the existing one
/// (nullptr on create), both in the request's version, before the strategy; it may replace
/// the object. `validate` with what would be stored and the existing object, after
/// validation and the preconditions, just before the write. Both run under the store's lock,
/// so they must not call the store: they answer from what was decided outside it, or throw
/// (AdmissionNeeded) to have the caller decide and retry the write.
struct AdmissionHooks {
    std::function<void(json::value& obj, const json::value* old)> mutate;
    std::function<void(const json::value& obj, const json::value* old)> validate;
};

struct WriteOptions {
    DryRun dry = DryRun::No;
    FieldValidation validation = FieldValidation::Ignore;
    std::vector<std::string> body_errors;     // "duplicate field \"spec.a\"", in text order
    std::vector<std::string>* warnings = nullptr;
    const AdmissionHooks* admission = nullptr;  // none: the write is not admitted (in-process writers)

    static WriteOptions of(DryRun dry) {
        WriteOptions w;
        w.dry = dry;
        return w;
    }
};

struct DeleteResult {
    json::value object;     // the object as deleted, or as it now waits for its finalizers
    bool finished = false;  // gone from the store rather than held by finalizers
};

struct ObjectStoreOptions {
    std::size_t history = 10000;             // changes kept for watches and paginated lists
    std::size_t watch_queue_limit = 10000;   // live events a watch may lag before it is closed
    std::function<std::chrono::system_clock::time_point()> clock;  // default: the system clock
};

} // namespace vck::sandbox
