// ResourceRegistry: the resources the emulated API server serves, as discovery describes them
// (group, version, plural, kind, scope, verbs, short names, subresources), the built-in ones
// plus those a CustomResourceDefinition adds. Guarantees: (group, version, plural) is unique;
// the built-ins are always present; resources_from_crd() turns a CRD into what it serves.
// Not thread-safe on its own: the ObjectStore guards it with its lock.
#pragma once

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

class StructuralSchema;  // crd_schema.hpp; only the store that validates needs it complete

/// What the server serves at /apis/<group>/<version>/<plural> (or /api/v1/<plural>).
struct ResourceInfo {
    std::string group;     // "" for core
    std::string version;
    std::string plural;
    std::string singular;
    std::string kind;
    std::string list_kind;
    bool namespaced = true;
    std::vector<std::string> verbs;
    std::vector<std::string> short_names;
    std::vector<std::string> categories;
    std::vector<std::string> subresources;  // "status", "log", "binding", ...
    bool custom = false;                    // served from a CRD
    std::shared_ptr<const StructuralSchema> schema;  // custom resources with a schema
    boost::json::array printer_columns;               // a CRD version's additionalPrinterColumns

    std::string api_version() const { return group.empty() ? version : group + "/" + version; }
    bool has_subresource(std::string_view s) const {
        return std::find(subresources.begin(), subresources.end(), s) != subresources.end();
    }
    bool has_status() const { return has_subresource("status"); }
    /// The apiVersion its objects are stored in when they live in another group's storage
    /// ("v1" for events.k8s.io/v1 events, stored as core/v1 Events and converted on every
    /// read and write: version_conversion.hpp); "" when stored in the version written.
    std::string storage_api_version;

    /// Objects of every version of a resource share one storage, named by group and plural
    /// (the storage group's when the resource lives in another's).
    std::string storage_key() const { return storage_group() + "/" + plural; }
    std::string storage_group() const {
        if (storage_api_version.empty()) return group;
        auto slash = storage_api_version.find('/');
        return slash == std::string::npos ? std::string() : storage_api_version.substr(0, slash);
    }
    /// Written in another version than the one it is stored in.
    bool converts_on_write() const { return !storage_api_version.empty() && storage_api_version != api_version(); }
};

/// The self reviews (v1, cluster-scoped, create only): answered for the requester, never
/// stored (rbac_reviews.hpp).
struct ReviewResource {
    std::string_view group, plural, singular, kind;
};
inline constexpr ReviewResource review_resources[] = {
    {"authentication.k8s.io", "selfsubjectreviews", "selfsubjectreview", "SelfSubjectReview"},
    {"authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectaccessreview", "SelfSubjectAccessReview"},
    {"authorization.k8s.io", "selfsubjectrulesreviews", "selfsubjectrulesreview", "SelfSubjectRulesReview"},
};

/// The verbs of a resource with full CRUD, as discovery lists them.
inline std::vector<std::string> standard_verbs() {
    return {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"};
}

class ResourceRegistry {
public:
    /// A registry holding the built-in resources only.
    ResourceRegistry() {
        auto add_builtin = [&](std::string group, std::string version, std::string plural, std::string singular,
                               std::string kind, bool namespaced, std::vector<std::string> short_names,
                               std::vector<std::string> subresources, std::vector<std::string> categories = {}) {
            ResourceInfo r;
            r.group = std::move(group);
            r.version = std::move(version);
            r.plural = std::move(plural);
            r.singular = std::move(singular);
            r.kind = std::move(kind);
            r.list_kind = r.kind + "List";
            r.namespaced = namespaced;
            r.verbs = standard_verbs();
            r.short_names = std::move(short_names);
            r.subresources = std::move(subresources);
            r.categories = std::move(categories);
            resources_.push_back(std::move(r));
        };
        add_builtin("", "v1", "namespaces", "namespace", "Namespace", false, {"ns"}, {"status", "finalize"});
        // Namespaces cannot be deletecollection'ed on a real server.
        resources_.back().verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
        add_builtin("", "v1", "nodes", "node", "Node", false, {"no"}, {"status"});
        add_builtin("", "v1", "pods", "pod", "Pod", true, {"po"}, {"status", "log", "binding"}, {"all"});
        add_builtin("", "v1", "persistentvolumes", "persistentvolume", "PersistentVolume", false, {"pv"}, {"status"});
        add_builtin("", "v1", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", true,
                    {"pvc"}, {"status"});
        add_builtin("", "v1", "secrets", "secret", "Secret", true, {}, {});
        add_builtin("", "v1", "configmaps", "configmap", "ConfigMap", true, {"cm"}, {});
        add_builtin("", "v1", "events", "event", "Event", true, {"ev"}, {});
        // The same Events, in their newer shape (event_conversion.hpp).
        add_builtin("events.k8s.io", "v1", "events", "event", "Event", true, {"ev"}, {});
        resources_.back().storage_api_version = "v1";
        add_builtin("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", true, {"sa"}, {"token"});
        add_builtin("", "v1", "services", "service", "Service", true, {"svc"}, {"status"}, {"all"});
        add_builtin("", "v1", "endpoints", "endpoints", "Endpoints", true, {"ep"}, {});
        add_builtin("discovery.k8s.io", "v1", "endpointslices", "endpointslice", "EndpointSlice", true, {}, {});
        add_builtin("apps", "v1", "deployments", "deployment", "Deployment", true, {"deploy"}, {"status", "scale"}, {"all"});
        add_builtin("apps", "v1", "replicasets", "replicaset", "ReplicaSet", true, {"rs"}, {"status", "scale"}, {"all"});
        add_builtin("apps", "v1", "statefulsets", "statefulset", "StatefulSet", true, {"sts"}, {"status", "scale"}, {"all"});
        add_builtin("batch", "v1", "jobs", "job", "Job", true, {}, {"status"}, {"all"});
        add_builtin("coordination.k8s.io", "v1", "leases", "lease", "Lease", true, {}, {});
        add_builtin("storage.k8s.io", "v1", "storageclasses", "storageclass", "StorageClass", false, {"sc"}, {});
        add_builtin("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
                    "CustomResourceDefinition", false, {"crd", "crds"}, {"status"}, {"api-extensions"});
        add_builtin("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
                    "mutatingwebhookconfiguration", "MutatingWebhookConfiguration", false, {}, {}, {"api-extensions"});
        add_builtin("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                    "validatingwebhookconfiguration", "ValidatingWebhookConfiguration", false, {}, {}, {"api-extensions"});
        add_builtin("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "clusterrolebinding",
                    "ClusterRoleBinding", false, {}, {});
        add_builtin("rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole", false, {}, {});
        add_builtin("rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding", true, {}, {});
        add_builtin("rbac.authorization.k8s.io", "v1", "roles", "role", "Role", true, {}, {});
        for (const auto& review : review_resources) {
            add_builtin(std::string(review.group), "v1", std::string(review.plural), std::string(review.singular),
                        std::string(review.kind), false, {}, {});
            resources_.back().verbs = {"create"};
        }
    }

    /// The resource served at group/version/plural, if any.
    const ResourceInfo* find(std::string_view group, std::string_view version, std::string_view plural) const {
        for (const auto& r : resources_)
            if (r.group == group && r.version == version && r.plural == plural) return &r;
        return nullptr;
    }
    /// Any served version of group/plural (they share storage, scope and kind).
    const ResourceInfo* find_any_version(std::string_view group, std::string_view plural) const {
        for (const auto& r : resources_)
            if (r.group == group && r.plural == plural) return &r;
        return nullptr;
    }
    /// The resource of a kind in an apiVersion ("v1", "vck.intelai.org/v1alpha1").
    const ResourceInfo* find_kind(std::string_view api_version, std::string_view kind) const {
        for (const auto& r : resources_)
            if (r.kind == kind && r.api_version() == api_version) return &r;
        return nullptr;
    }

    const std::vector<ResourceInfo>& all() const { return resources_; }

    /// Adds or replaces (same group, version, plural).
    void add(ResourceInfo info) {
        for (auto& r : resources_)
            if (r.group == info.group && r.version == info.version && r.plural == info.plural) {
                r = std::move(info);
                return;
            }
        resources_.push_back(std::move(info));
    }

    /// Stops serving every version of group/plural; returns how many versions were removed.
    std::size_t remove(std::string_view group, std::string_view plural) {
        auto before = resources_.size();
        std::erase_if(resources_, [&](const ResourceInfo& r) { return r.group == group && r.plural == plural; });
        return before - resources_.size();
    }

private:
    std::vector<ResourceInfo> resources_;
};

namespace resource_registry_detail {
inline std::string str(const boost::json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
}
inline std::vector<std::string> strs(const boost::json::object& o, std::string_view key) {
    std::vector<std::string> out;
    if (const auto* v = o.if_contains(key); v && v->is_array())
        for (const auto& e : v->get_array())
            if (e.is_string()) out.emplace_back(e.get_string());
    return out;
}
inline std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}
} // namespace resource_registry_detail

/// What a (valid) CRD serves: one ResourceInfo per served version, without schemas (the store
/// compiles those). Missing optional names get the real server's defaults (singular =
/// lowercase kind, listKind = kind + "List").
inline std::vector<ResourceInfo> resources_from_crd(const boost::json::value& crd) {
    using namespace resource_registry_detail;
    std::vector<ResourceInfo> out;
    const auto* spec = crd.is_object() ? crd.get_object().if_contains("spec") : nullptr;
    if (!spec || !spec->is_object()) return out;
    const auto& s = spec->get_object();
    const auto* names_v = s.if_contains("names");
    boost::json::object names = names_v && names_v->is_object() ? names_v->get_object() : boost::json::object();
    const auto* versions = s.if_contains("versions");
    if (!versions || !versions->is_array()) return out;
    for (const auto& ver : versions->get_array()) {
        if (!ver.is_object()) continue;
        const auto& v = ver.get_object();
        const auto* served = v.if_contains("served");
        if (served && served->is_bool() && !served->get_bool()) continue;
        ResourceInfo r;
        r.group = str(s, "group");
        r.version = str(v, "name");
        r.plural = str(names, "plural");
        r.kind = str(names, "kind");
        r.singular = str(names, "singular");
        if (r.singular.empty()) r.singular = lower(r.kind);
        r.list_kind = str(names, "listKind");
        if (r.list_kind.empty()) r.list_kind = r.kind + "List";
        r.namespaced = str(s, "scope") != "Cluster";
        r.verbs = standard_verbs();
        r.short_names = strs(names, "shortNames");
        r.categories = strs(names, "categories");
        r.custom = true;
        if (const auto* sub = v.if_contains("subresources"); sub && sub->is_object()) {
            if (sub->get_object().contains("status")) r.subresources.push_back("status");
            if (sub->get_object().contains("scale")) r.subresources.push_back("scale");
        }
        if (const auto* cols = v.if_contains("additionalPrinterColumns"); cols && cols->is_array())
            r.printer_columns = cols->get_array();
        out.push_back(std::move(r));
    }
    return out;
}

} // namespace vck::sandbox
