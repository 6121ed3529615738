// RBAC objects as kube-apiserver 1.32 defaults and validates them (rbac.authorization.k8s.io/v1
// Role, ClusterRole, RoleBinding, ClusterRoleBinding; pkg/apis/rbac/validation). Guarantees,
// with the real server's messages word for word:
// - a subject's apiGroup defaults to rbac.authorization.k8s.io for User and Group ("" for a
//   ServiceAccount), as v1's SetDefaults_Subject does;
// - a rule needs verbs; a resource rule needs apiGroups and resources; nonResourceURLs are
//   refused in a Role and beside resources;
// - a ClusterRole's aggregationRule needs a clusterRoleSelector;
// - a binding's roleRef names a Role or ClusterRole (only a ClusterRole for a
//   ClusterRoleBinding) of rbac.authorization.k8s.io, and never changes on an update;
// - subjects are User, Group or ServiceAccount with a name (a ServiceAccount of a
//   ClusterRoleBinding with a namespace).
// Object names are path segment names (ValidateRBACName); object_writer.hpp checks them.
#pragma once

#include <vck/sandbox/validation/field_error.hpp>
#include <vck/sandbox/validation/object_name.hpp>

#include <boost/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

inline constexpr std::string_view rbac_group = "rbac.authorization.k8s.io";

namespace rbac_detail {
inline std::string str(const boost::json::value* o, std::string_view key) {
    if (!o || !o->is_object()) return {};
    const auto* v = o->get_object().if_contains(key);
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
}
inline const boost::json::value* member(const boost::json::value* o, std::string_view key) {
    return o && o->is_object() ? o->get_object().if_contains(key) : nullptr;
}
inline bool non_empty_array(const boost::json::value* v) { return v && v->is_array() && !v->get_array().empty(); }
} // namespace rbac_detail

/// Whether `plural` of `group` is one of the four RBAC kinds.
inline bool is_rbac_resource(std::string_view group, std::string_view plural) {
    return group == rbac_group &&
           (plural == "roles" || plural == "clusterroles" || plural == "rolebindings" || plural == "clusterrolebindings");
}

/// v1's defaults: subjects' apiGroup.
inline void rbac_defaults(std::string_view plural, boost::json::value& obj) {
    if (plural != "rolebindings" && plural != "clusterrolebindings") return;
    auto* subjects = obj.get_object().if_contains("subjects");
    if (!subjects || !subjects->is_array()) return;
    for (auto& s : subjects->get_array()) {
        if (!s.is_object()) continue;
        auto& o = s.get_object();
        const auto* g = o.if_contains("apiGroup");
        if (g && g->is_string() && !g->get_string().empty()) continue;
        auto kind = rbac_detail::str(&s, "kind");
        if (kind == "User" || kind == "Group") o["apiGroup"] = rbac_group;
    }
}

/// ValidatePolicyRule.
inline std::vector<FieldError> validate_policy_rule(const boost::json::value& rule, bool namespaced, const std::string& path) {
    using namespace rbac_detail;
    std::vector<FieldError> errs;
    if (!non_empty_array(member(&rule, "verbs")))
        errs.push_back(field::required(path + ".verbs", "verbs must contain at least one value"));
    const auto* urls = member(&rule, "nonResourceURLs");
    if (non_empty_array(urls)) {
        auto rendered = go::string_slice(urls);
        if (namespaced)
            errs.push_back(field::invalid_go(path + ".nonResourceURLs", rendered, "namespaced rules cannot apply to non-resource URLs"));
        if (non_empty_array(member(&rule, "apiGroups")) || non_empty_array(member(&rule, "resources")) ||
            non_empty_array(member(&rule, "resourceNames")))
            errs.push_back(field::invalid_go(path + ".nonResourceURLs", rendered,
                                             "rules cannot apply to both regular resources and non-resource URLs"));
        return errs;
    }
    if (!non_empty_array(member(&rule, "apiGroups")))
        errs.push_back(field::required(path + ".apiGroups", "resource rules must supply at least one api group"));
    if (!non_empty_array(member(&rule, "resources")))
        errs.push_back(field::required(path + ".resources", "resource rules must supply at least one resource"));
    return errs;
}

/// ValidateRole / ValidateClusterRole (their rules and aggregationRule).
inline std::vector<FieldError> validate_rbac_role(const boost::json::value& role, bool namespaced) {
    using namespace rbac_detail;
    std::vector<FieldError> errs;
    if (const auto* rules = member(&role, "rules"); rules && rules->is_array())
        for (std::size_t i = 0; i < rules->get_array().size(); ++i) {
            auto more = validate_policy_rule(rules->get_array()[i], namespaced, "rules[" + std::to_string(i) + "]");
            errs.insert(errs.end(), more.begin(), more.end());
        }
    if (const auto* agg = member(&role, "aggregationRule"); !namespaced && agg && agg->is_object())
        if (!non_empty_array(member(agg, "clusterRoleSelectors")))
            errs.push_back(field::required("aggregationRule.clusterRoleSelectors",
                                           "at least one clusterRoleSelector required if aggregationRule is non-nil"));
    return errs;
}

/// %#v of the internal rbac.RoleRef, as "cannot change roleRef" shows it.
inline std::string rbac_role_ref_go(const boost::json::value& binding) {
    const auto* ref = rbac_detail::member(&binding, "roleRef");
    return "rbac.RoleRef{APIGroup:" + go::quote(rbac_detail::str(ref, "apiGroup")) +
           ", Kind:" + go::quote(rbac_detail::str(ref, "kind")) + ", Name:" + go::quote(rbac_detail::str(ref, "name")) + "}";
}

/// ValidateRoleBinding / ValidateClusterRoleBinding, and their updates (`old`).
inline std::vector<FieldError> validate_rbac_binding(const boost::json::value& b, bool namespaced, const boost::json::value* old) {
    using namespace rbac_detail;
    using boost::json::value;
    std::vector<FieldError> errs;
    const auto* ref = member(&b, "roleRef");
    auto group = str(ref, "apiGroup"), kind = str(ref, "kind"), name = str(ref, "name");
    if (group != rbac_group) errs.push_back(field::not_supported("roleRef.apiGroup", value(group), {std::string(rbac_group)}));
    if (namespaced && kind != "Role" && kind != "ClusterRole")
        errs.push_back(field::not_supported("roleRef.kind", value(kind), {"Role", "ClusterRole"}));
    if (!namespaced && kind != "ClusterRole") errs.push_back(field::not_supported("roleRef.kind", value(kind), {"ClusterRole"}));
    if (name.empty()) errs.push_back(field::required("roleRef.name"));
    else {
        auto more = validate_path_segment_name(name, "roleRef.name");
        errs.insert(errs.end(), more.begin(), more.end());
    }
    if (const auto* subjects = member(&b, "subjects"); subjects && subjects->is_array())
        for (std::size_t i = 0; i < subjects->get_array().size(); ++i) {
            const auto& s = subjects->get_array()[i];
            std::string path = "subjects[" + std::to_string(i) + "]";
            auto sname = str(&s, "name"), skind = str(&s, "kind"), sgroup = str(&s, "apiGroup");
            if (sname.empty()) errs.push_back(field::required(path + ".name"));
            if (skind == "ServiceAccount") {
                if (!sname.empty()) {
                    auto more = validate_dns1123_subdomain(sname, path + ".name");
                    errs.insert(errs.end(), more.begin(), more.end());
                }
                if (!sgroup.empty()) errs.push_back(field::not_supported(path + ".apiGroup", value(sgroup), {""}));
                if (!namespaced && str(&s, "namespace").empty()) errs.push_back(field::required(path + ".namespace"));
            } else if (skind == "User" || skind == "Group") {
                if (sgroup != rbac_group)
                    errs.push_back(field::not_supported(path + ".apiGroup", value(sgroup), {std::string(rbac_group)}));
            } else {
                errs.push_back(field::not_supported(path + ".kind", value(skind), {"ServiceAccount", "User", "Group"}));
            }
        }
    if (old && rbac_role_ref_go(b) != rbac_role_ref_go(*old))
        errs.push_back(field::invalid_go("roleRef", rbac_role_ref_go(b), "cannot change roleRef"));
    return errs;
}

/// The validation of a write of any of the four kinds (`old` on an update).
inline std::vector<FieldError> validate_rbac_object(std::string_view plural, const boost::json::value& obj,
                                                    const boost::json::value* old) {
    if (plural == "roles") return validate_rbac_role(obj, true);
    if (plural == "clusterroles") return validate_rbac_role(obj, false);
    if (plural == "rolebindings") return validate_rbac_binding(obj, true, old);
    if (plural == "clusterrolebindings") return validate_rbac_binding(obj, false, old);
    return {};
}

} // namespace vck::sandbox
