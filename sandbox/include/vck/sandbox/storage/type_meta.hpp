// TypeMeta: whether the apiVersion and kind a write's body declares agree with the resource
// its URL names, refused as kube-apiserver 1.32 refuses a disagreement:
// - absent (or empty) apiVersion / kind are the URL's, as the JSON decoder defaults them;
// - a built-in resource decodes the body through the API server's scheme first: a kind its
//   scheme does not register in that group-version, or one that does not convert to the
//   URL's kind, is the decoder's 400 "<Kind> in version "<v>" cannot be handled as a <Kind>:
//   ..." (a merge or JSON patch that changes them is the patcher's 422 naming the patched
//   object); a body that decodes into the URL's kind but from another version is 400 "the API
//   version in the data (...) does not match the expected API version (...)" (create and
//   update; a patch is not checked for it);
// - a custom resource's body is decoded as is: another apiVersion is that same 400, another
//   kind is the 422 of the custom resource validator (`kind: Invalid value: "X": must be K`,
//   apiVersion likewise after a patch), named by the body's kind.
// Known differences: the scheme below lists the kinds of the 1.32 scheme that a mistaken
// body is likely to carry, not every one (others read as unregistered); a custom resource
// without kind is defaulted here (the real decoder answers "Object 'Kind' is missing"),
// because the sandbox's own components write bare objects; CRD objects are not checked.
#pragma once

#include <vck/sandbox/validation/field_error.hpp>
#include <vck/sandbox/validation/resource_registry.hpp>
#include <vck/sandbox/validation/store_error.hpp>

#include <boost/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

/// The group, version and kind of a body, each defaulted from the URL's when absent.
struct BodyType {
    std::string group, version, kind;

    std::string group_version() const { return group.empty() ? version : group + "/" + version; }
};

namespace type_meta_detail {

inline std::string str(const boost::json::value& body, std::string_view key) {
    const auto* o = body.if_object();
    const auto* v = o ? o->if_contains(key) : nullptr;
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

/// The API server's scheme (pkg/api/legacyscheme) name, as its errors print it.
inline constexpr std::string_view legacy_scheme = "pkg/api/legacyscheme/scheme.go:30";

struct SchemeKind {
    std::string_view group, version, kind;
    std::string_view internal_package;  // the Go package of the internal type it converts to
};

/// Kinds 1.32's scheme registers (a selection: the sandbox's own and the common workloads).
inline const std::vector<SchemeKind>& scheme_kinds() {
    static const std::vector<SchemeKind> kinds = [] {
        std::vector<SchemeKind> k;
        for (std::string_view kind :
             {"Binding", "ConfigMap", "Endpoints", "Event", "LimitRange", "Namespace", "Node", "PersistentVolume",
              "PersistentVolumeClaim", "Pod", "PodTemplate", "ReplicationController", "ResourceQuota", "Secret",
              "Service", "ServiceAccount"})
            k.push_back({"", "v1", kind, "core"});
        for (std::string_view kind : {"ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet"})
            k.push_back({"apps", "v1", kind, "apps"});
        for (std::string_view kind : {"CronJob", "Job"}) k.push_back({"batch", "v1", kind, "batch"});
        for (std::string_view kind : {"CSIDriver", "CSINode", "CSIStorageCapacity", "StorageClass", "VolumeAttachment"})
            k.push_back({"storage.k8s.io", "v1", kind, "storage"});
        k.push_back({"coordination.k8s.io", "v1", "Lease", "coordination"});
        k.push_back({"events.k8s.io", "v1", "Event", "core"});  // converts to the core Event
        for (std::string_view kind : {"Ingress", "IngressClass", "NetworkPolicy"})
            k.push_back({"networking.k8s.io", "v1", kind, "networking"});
        k.push_back({"policy", "v1", "PodDisruptionBudget", "policy"});
        k.push_back({"discovery.k8s.io", "v1", "EndpointSlice", "discovery"});
        for (std::string_view kind : {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"})
            k.push_back({"rbac.authorization.k8s.io", "v1", kind, "rbac"});
        for (std::string_view kind : {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
                                      "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"})
            k.push_back({"admissionregistration.k8s.io", "v1", kind, "admissionregistration"});
        k.push_back({"autoscaling", "v1", "HorizontalPodAutoscaler", "autoscaling"});
        k.push_back({"autoscaling", "v2", "HorizontalPodAutoscaler", "autoscaling"});
        k.push_back({"scheduling.k8s.io", "v1", "PriorityClass", "scheduling"});
        return k;
    }();
    return kinds;
}

inline const SchemeKind* scheme_kind(std::string_view group, std::string_view version, std::string_view kind) {
    for (const auto& k : scheme_kinds())
        if (k.group == group && k.version == version && k.kind == kind) return &k;
    return nullptr;
}

/// CRDs are served by the apiextensions server, with its own scheme: not checked here.
inline bool checked_builtin(const ResourceInfo& r) {
    return !r.custom && r.group != "apiextensions.k8s.io";
}

} // namespace type_meta_detail

/// The type a body declares, with apiVersion and kind defaulted from the URL's resource as
/// the JSON decoder defaults them (a kind alone keeps the URL's group-version).
inline BodyType body_type(const ResourceInfo& r, const boost::json::value& body) {
    BodyType t;
    t.kind = type_meta_detail::str(body, "kind");
    if (t.kind.empty()) t.kind = r.kind;
    auto api_version = type_meta_detail::str(body, "apiVersion");
    if (api_version.empty()) {
        t.group = r.group;
        t.version = r.version;
    } else if (auto slash = api_version.find('/'); slash == std::string::npos) {
        t.version = api_version;
    } else {
        t.group = api_version.substr(0, slash);
        t.version = api_version.substr(slash + 1);
    }
    return t;
}

/// Why a built-in resource's scheme cannot decode a body of type `t` into its kind (the
/// scheme's or the converter's error text), or nothing when it can.
inline std::optional<std::string> builtin_decode_problem(const ResourceInfo& r, const BodyType& t) {
    using namespace type_meta_detail;
    if (!checked_builtin(r)) return std::nullopt;
    const auto* from = scheme_kind(t.group, t.version, t.kind);
    if (!from)
        return "no kind " + go::quote(t.kind) + " is registered for version " + go::quote(t.group_version()) +
               " in scheme " + go::quote(legacy_scheme);
    const auto* to = scheme_kind(r.group, r.version, r.kind);
    if (!to || (from->internal_package == to->internal_package && from->kind == to->kind)) return std::nullopt;
    return "converting (" + t.version + "." + t.kind + ") to (" + std::string(to->internal_package) + "." + r.kind +
           "): unknown conversion";
}

/// A create or update (PUT) body the decoder refuses: 400, as handlers' transformDecodeError
/// words it. Runs before the body's fields are decoded (strict field errors come after).
inline void check_body_decodes(const ResourceInfo& r, const boost::json::value& body) {
    auto t = body_type(r, body);
    if (auto problem = builtin_decode_problem(r, t))
        throw StoreError(store_status::bad_request(t.kind + " in version " + go::quote(t.version) +
                                                   " cannot be handled as a " + r.kind + ": " + *problem));
}

/// A decoded create or update body of another group-version than the URL's: 400. A custom
/// resource's body of the URL's group-version but another kind: the validator's 422.
inline void check_body_type(const ResourceInfo& r, const boost::json::value& body) {
    if (!type_meta_detail::checked_builtin(r) && !r.custom) return;
    auto t = body_type(r, body);
    if (t.group_version() != r.api_version())
        throw StoreError(store_status::bad_request("the API version in the data (" + t.group_version() +
                                                   ") does not match the expected API version (" + r.api_version() +
                                                   ")"));
    if (r.custom && t.kind != r.kind) {
        const auto* md = body.get_object().if_contains("metadata");
        std::string name = md ? type_meta_detail::str(*md, "name") : std::string();
        throw StoreError(store_status::invalid(
            t.kind, t.group, name, {field::invalid("kind", boost::json::string(t.kind), "must be " + r.kind)}));
    }
}

/// A patch that changed the object's apiVersion or kind (`before` is the object patched,
/// `patched` the result, `as_patched` how the patcher names it): a built-in's decoder error,
/// as the patcher's 422 on "patch"; a custom resource's type errors, as its validator's 422.
inline void check_patched_type(const ResourceInfo& r, const boost::json::value& before, const boost::json::value& patched,
                               const boost::json::value& as_patched) {
    using namespace type_meta_detail;
    if (str(before, "apiVersion") == str(patched, "apiVersion") && str(before, "kind") == str(patched, "kind")) return;
    auto t = body_type(r, patched);
    if (auto problem = builtin_decode_problem(r, t))
        throw StoreError(store_status::invalid("", "", "", {field::invalid("patch", as_patched, *problem)}));
    if (!r.custom) return;
    std::vector<FieldError> errs;
    auto kind = str(patched, "kind");
    auto api_version = str(patched, "apiVersion");
    if (kind != r.kind) errs.push_back(field::invalid("kind", boost::json::string(kind), "must be " + r.kind));
    if (api_version != r.api_version())
        errs.push_back(field::invalid("apiVersion", boost::json::string(api_version), "must be " + r.api_version()));
    if (errs.empty()) return;
    const auto* md = patched.get_object().if_contains("metadata");
    throw StoreError(store_status::invalid(kind, t.group, md ? str(*md, "name") : std::string(), errs));
}

} // namespace vck::sandbox
