// Escalation prevention, as kube-apiserver 1.32's RBAC registries enforce it on writes of
// Roles, ClusterRoles and bindings by anyone outside system:masters. Pure: no I/O.
// Guarantees:
// - a Role or ClusterRole whose rules the writer does not hold (in the request's namespace;
//   cluster-wide for a ClusterRole) is refused with 403 `... is attempting to grant RBAC
//   permissions not currently held:` and the missing rules, compacted and sorted as the real
//   server lists them, unless the writer may `escalate` that resource; an aggregationRule
//   needs full authority ("must have cluster-admin privileges to use the aggregationRule");
// - a binding is refused the same way when the writer does not hold the referred role's
//   rules, unless the writer may `bind` that role (resource roles or clusterroles, named by
//   roleRef.name, in the binding's namespace); a binding to a missing role is a 404;
// - coverage is Covers(): each requested rule broken into one verb, group, resource and
//   name, each covered by one held rule ("*", "*/sub", resourceNames, URL prefixes).
#pragma once

#include <vck/sandbox/auth/rbac_authorizer.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace vck::sandbox {

namespace rbac_escalation_detail {
inline bool has(const std::vector<std::string>& set, const std::string& x) { return std::find(set.begin(), set.end(), x) != set.end(); }
inline bool has_all(const std::vector<std::string>& set, const std::vector<std::string>& xs) {
    return std::all_of(xs.begin(), xs.end(), [&](const std::string& x) { return has(set, x); });
}
inline bool resources_cover(const std::vector<std::string>& owner, const std::vector<std::string>& wanted) {
    if (has(owner, "*") || has_all(owner, wanted)) return true;
    for (const auto& path : wanted) {
        if (has(owner, path)) continue;
        auto slash = path.find('/');
        if (slash == std::string::npos || !has(owner, "*/" + path.substr(slash + 1))) return false;
    }
    return true;
}
inline bool urls_cover(const std::vector<std::string>& owner, const std::vector<std::string>& wanted) {
    for (const auto& path : wanted) {
        bool covered = std::any_of(owner.begin(), owner.end(), [&](const std::string& o) { return non_resource_url_covers(o, path); });
        if (!covered) return false;
    }
    return true;
}
/// ruleCovers: `sub` holds at most one verb, group, resource and name.
inline bool rule_covers(const PolicyRule& owner, const PolicyRule& sub) {
    bool names = sub.resource_names.empty() ? owner.resource_names.empty()
                                            : owner.resource_names.empty() || has_all(owner.resource_names, sub.resource_names);
    return (has(owner.verbs, "*") || has_all(owner.verbs, sub.verbs)) &&
           (has(owner.api_groups, "*") || has_all(owner.api_groups, sub.api_groups)) &&
           resources_cover(owner.resources, sub.resources) && urls_cover(owner.non_resource_urls, sub.non_resource_urls) && names;
}
/// %q of a []string: ["a" "b"].
inline std::string quoted_list(const std::vector<std::string>& v) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? " " : "") + go::quote(v[i]);
    return out + "]";
}
/// rbacv1helpers.CompactString.
inline std::string compact_string(const PolicyRule& r) {
    std::vector<std::string> parts;
    if (!r.api_groups.empty()) parts.push_back("APIGroups:" + quoted_list(r.api_groups));
    if (!r.resources.empty()) parts.push_back("Resources:" + quoted_list(r.resources));
    if (!r.non_resource_urls.empty()) parts.push_back("NonResourceURLs:" + quoted_list(r.non_resource_urls));
    if (!r.resource_names.empty()) parts.push_back("ResourceNames:" + quoted_list(r.resource_names));
    if (!r.verbs.empty()) parts.push_back("Verbs:" + quoted_list(r.verbs));
    std::string out = "{";
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
    return out + "}";
}
} // namespace rbac_escalation_detail

/// BreakdownRule: one rule per group, resource, verb (and name); per URL and verb.
inline std::vector<PolicyRule> breakdown_rule(const PolicyRule& rule) {
    std::vector<PolicyRule> out;
    for (const auto& g : rule.api_groups)
        for (const auto& r : rule.resources)
            for (const auto& v : rule.verbs) {
                if (rule.resource_names.empty()) out.push_back(PolicyRule{{v}, {g}, {r}, {}, {}});
                for (const auto& n : rule.resource_names) out.push_back(PolicyRule{{v}, {g}, {r}, {n}, {}});
            }
    for (const auto& u : rule.non_resource_urls)
        for (const auto& v : rule.verbs) out.push_back(PolicyRule{{v}, {}, {}, {}, {u}});
    return out;
}

/// Covers: the broken-down rules of `wanted` that no rule of `owner` covers.
inline std::vector<PolicyRule> uncovered_rules(const std::vector<PolicyRule>& owner, const std::vector<PolicyRule>& wanted) {
    std::vector<PolicyRule> out;
    for (const auto& w : wanted)
        for (const auto& sub : breakdown_rule(w))
            if (std::none_of(owner.begin(), owner.end(), [&](const PolicyRule& o) { return rbac_escalation_detail::rule_covers(o, sub); }))
                out.push_back(sub);
    return out;
}

/// ConfirmNoEscalation: "" when the user's rules in `ns` cover `rules`, else its error text.
inline std::string escalation_error(const RbacPolicy& policy, const std::string& user, const std::vector<std::string>& groups,
                                    const std::string& ns, const std::vector<PolicyRule>& rules) {
    using namespace rbac_escalation_detail;
    std::vector<PolicyRule> held;
    std::vector<std::string> errors;
    policy.visit_rules_for(user, groups, ns, [&](const PolicyRule* rule, const std::string* error) {
        if (rule) held.push_back(*rule);
        if (error) errors.push_back(*error);
        return true;
    });
    auto missing = uncovered_rules(held, rules);
    if (missing.empty()) return {};
    // CompactRules: the rules of one group and resource (and at most one name) gather their verbs.
    std::vector<PolicyRule> compacted;
    std::map<std::tuple<std::string, std::string, bool, std::string>, std::size_t> simple;
    for (const auto& m : missing) {
        bool is_simple = m.non_resource_urls.empty() && m.resource_names.size() <= 1 && m.api_groups.size() == 1 && m.resources.size() == 1;
        if (!is_simple) {
            compacted.push_back(m);
            continue;
        }
        auto key = std::tuple{m.api_groups[0], m.resources[0], !m.resource_names.empty(),
                              m.resource_names.empty() ? std::string() : m.resource_names[0]};
        if (auto it = simple.find(key); it != simple.end()) {
            auto& verbs = compacted[it->second].verbs;
            verbs.insert(verbs.end(), m.verbs.begin(), m.verbs.end());
        } else {
            simple.emplace(key, compacted.size());
            compacted.push_back(m);
        }
    }
    std::set<std::string> descriptions;
    for (const auto& c : compacted) descriptions.insert(compact_string(c));
    std::string msg = "user " + go::quote(user) + " (groups=" + quoted_list(groups) +
                      ") is attempting to grant RBAC permissions not currently held:";
    for (const auto& d : descriptions) msg += "\n" + d;
    if (!errors.empty()) {
        std::string joined;
        for (const auto& e : errors) joined += (joined.empty() ? "" : ", ") + e;
        msg += "; resolution errors: [" + (errors.size() == 1 ? joined : "[" + joined + "]") + "]";
    }
    return msg;
}

/// Why a write of `object` (a Role, ClusterRole, RoleBinding or ClusterRoleBinding, as it
/// would be stored) by the requester of `request` (its user, groups, resource, name and
/// namespace) must be refused, as a Status; nothing when it may go ahead.
inline std::optional<api::Status> refuse_escalation(const RbacPolicy& policy, const AuthorizationAttributes& request,
                                                    const boost::json::value& object) {
    if (std::find(request.groups.begin(), request.groups.end(), "system:masters") != request.groups.end()) return std::nullopt;
    const std::string& plural = request.resource;
    const std::string& ns = request.namespace_;
    auto name = rbac_detail::str(rbac_detail::member(&object, "metadata"), "name");
    auto forbidden = [&](const std::string& why) { return new_forbidden(std::string(rbac_group), plural, name, why); };
    auto allowed = [&](const char* verb, const std::string& resource, const std::string& resource_name) {
        AuthorizationAttributes a;
        a.user = request.user;
        a.groups = request.groups;
        a.verb = verb;
        a.api_group = std::string(rbac_group);
        a.api_version = "*";
        a.resource = resource;
        a.name = resource_name;
        a.namespace_ = ns;
        return authorize(policy, a).allowed;
    };
    if (plural == "roles" || plural == "clusterroles") {
        if (allowed("escalate", plural, request.name)) return std::nullopt;
        std::vector<PolicyRule> rules;
        if (const auto* rs = rbac_detail::member(&object, "rules"); rs && rs->is_array())
            for (const auto& r : rs->get_array()) rules.push_back(PolicyRule::from_json(r));
        if (auto e = escalation_error(policy, request.user, request.groups, ns, rules); !e.empty()) return forbidden(e);
        const auto* agg = rbac_detail::member(&object, "aggregationRule");
        if (plural == "clusterroles" && agg && agg->is_object()) {
            std::vector<PolicyRule> full{PolicyRule{{"*"}, {"*"}, {"*"}, {}, {}}, PolicyRule{{"*"}, {}, {}, {}, {"*"}}};
            if (!escalation_error(policy, request.user, request.groups, ns, full).empty())
                return forbidden("must have cluster-admin privileges to use the aggregationRule");
        }
        return std::nullopt;
    }
    if (plural == "rolebindings" || plural == "clusterrolebindings") {
        const auto* ref = rbac_detail::member(&object, "roleRef");
        auto kind = rbac_detail::str(ref, "kind");
        if ((kind == "Role" || kind == "ClusterRole") &&
            allowed("bind", kind == "Role" ? "roles" : "clusterroles", rbac_detail::str(ref, "name")))
            return std::nullopt;
        std::string error;
        auto rules = policy.role_reference_rules(object, ns, error);
        if (!error.empty()) {
            if (kind != "Role" && kind != "ClusterRole") return failure_status(500, error);
            auto st = failure_status(404, (kind == "Role" ? "roles." : "clusterroles.") + std::string(rbac_group) + " " +
                                              go::quote(rbac_detail::str(ref, "name")) + " not found",
                                     "NotFound");
            api::StatusDetails d;
            d.name = rbac_detail::str(ref, "name");
            d.group = std::string(rbac_group);
            d.kind = kind == "Role" ? "roles" : "clusterroles";
            st.details = d;
            return st;
        }
        if (auto e = escalation_error(policy, request.user, request.groups, ns, rules); !e.empty()) return forbidden(e);
    }
    return std::nullopt;
}

} // namespace vck::sandbox
