// meta.k8s.io/v1 types every object carries: ObjectMeta, OwnerReference, ListMeta, and the
// Status body the server returns for errors. Fields keep the API's JSON names; whatever the
// server sends that is not modelled here (managedFields, ...) is kept in `unknown`.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/string_map.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vck::api {

using Labels = StringMap;

struct OwnerReference {
    std::string apiVersion;
    std::string kind;
    std::string name;
    std::string uid;
    std::optional<bool> controller;
    std::optional<bool> blockOwnerDeletion;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(OwnerReference, (), (apiVersion, kind, name, uid, controller, blockOwnerDeletion))

struct ObjectMeta {
    std::string name;
    std::string generateName;
    std::string namespace_;
    std::string uid;
    std::string resourceVersion;
    std::optional<std::int64_t> generation;
    std::string creationTimestamp;
    std::string deletionTimestamp;
    std::optional<std::int64_t> deletionGracePeriodSeconds;
    Labels labels;
    Labels annotations;
    std::vector<OwnerReference> ownerReferences;
    std::vector<std::string> finalizers;
    json::object unknown;

    /// The owner reference with controller=true, if any.
    const OwnerReference* controller_ref() const {
        for (const auto& r : ownerReferences)
            if (r.controller.value_or(false)) return &r;
        return nullptr;
    }
    bool has_finalizer(std::string_view f) const {
        for (const auto& x : finalizers)
            if (x == f) return true;
        return false;
    }
};
BOOST_DESCRIBE_STRUCT(ObjectMeta, (),
    (name, generateName, namespace_, uid, resourceVersion, generation, creationTimestamp,
     deletionTimestamp, deletionGracePeriodSeconds, labels, annotations, ownerReferences, finalizers))

struct ListMeta {
    std::string resourceVersion;
    std::string continue_;
    std::optional<std::int64_t> remainingItemCount;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(ListMeta, (), (resourceVersion, continue_, remainingItemCount))

struct StatusCause {
    std::string reason;
    std::string message;
    std::string field;
};
BOOST_DESCRIBE_STRUCT(StatusCause, (), (reason, message, field))

struct StatusDetails {
    std::string name;
    std::string group;
    std::string kind;
    std::string uid;
    std::vector<StatusCause> causes;
    std::optional<std::int64_t> retryAfterSeconds;
};
BOOST_DESCRIBE_STRUCT(StatusDetails, (), (name, group, kind, uid, causes, retryAfterSeconds))

/// metav1.Status: the body of every error response (and of some successful deletes).
struct Status {
    std::string kind = "Status";  // first, as kube-apiserver writes a Status
    std::string apiVersion = "v1";
    ListMeta metadata;
    std::string status;  // "Success" or "Failure"
    std::string message;
    std::string reason;  // NotFound, AlreadyExists, Conflict, Invalid, Expired, ...
    std::optional<StatusDetails> details;
    std::int64_t code = 0;
};
BOOST_DESCRIBE_STRUCT(Status, (), (kind, apiVersion, metadata, status, message, reason, details, code))

/// Erases an object's metadata.managedFields from its JSON (anything else is left as it is,
/// in its order: erase() would move the last member into the gap, and an object decoded
/// through the DOM would then write its unknown metadata keys back in another order than the
/// same object decoded by decode_json, which never sees managedFields).
inline void erase_managed_fields(json::value& object) {
    if (auto* o = object.if_object())
        if (auto* m = o->if_contains("metadata"); m && m->is_object()) m->get_object().stable_erase("managedFields");
}

} // namespace vck::api
