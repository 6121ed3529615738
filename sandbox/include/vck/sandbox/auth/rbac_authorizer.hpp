// RbacAuthorizer: allows or denies one request's attributes (user, groups, verb, API group,
// resource, subresource, name, namespace; or a non-resource path) from the RBAC objects of
// an ObjectStore, as kube-apiserver 1.32's RBAC authorizer does. Pure: no I/O, no Beast.
// Guarantees:
// - a rule matches as rbac/v1's helpers match it: verbs and apiGroups with "*"; resources
//   "*", "pods/log" (resource/subresource) and "*/scale"; resourceNames (empty: every name,
//   so a create, or a list without a name, never matches a rule naming resources);
//   nonResourceURLs exact, "*", or a prefix ending in "*" ("/api/*");
// - subjects: User by name, Group by membership, ServiceAccount as the user
//   "system:serviceaccount:NS:NAME" (a RoleBinding's subject without namespace is in the
//   binding's namespace); ClusterRoleBindings grant everywhere, a RoleBinding grants in its
//   namespace only, also when it refers to a ClusterRole;
// - the groups authentication adds are held: every user is in system:authenticated, a
//   service account also in system:serviceaccounts and system:serviceaccounts:NS;
// - system:masters is allowed everything (the privileged-group authorizer);
// - the bootstrap policy is built in (not stored; a stored ClusterRole of the same name wins):
//   ClusterRoles cluster-admin, system:discovery, system:basic-user and
//   system:public-info-viewer with 1.32's rules, bound as 1.32 binds them (system:masters,
//   system:authenticated, system:unauthenticated);
// - ClusterRole aggregation is computed at evaluation time: a ClusterRole with an
//   aggregationRule holds the rules of every other ClusterRole its clusterRoleSelectors
//   select (transitively), in place of what its own rules say (the rules
//   kube-controller-manager would write there);
// - a denial carries the reason the real authorizer gives: "" or, when a binding refers to
//   a role that does not exist, `RBAC: role.rbac.authorization.k8s.io "x" not found`;
// - forbidden_status() is the 403 the real server answers, message and details word for word.
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/api/meta.hpp>
#include <vck/sandbox/server/api_request.hpp>
#include <vck/sandbox/storage/object_store.hpp>
#include <vck/sandbox/validation/rbac_validation.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

/// What a request asks for, as the real server's RequestInfo and user.Info describe it.
struct AuthorizationAttributes {
    std::string user;
    std::vector<std::string> groups;
    std::string verb;  // get, list, watch, create, ...; a non-resource request's lowercase method
    bool resource_request = true;
    std::string api_group;
    std::string api_version;
    std::string resource;
    std::string subresource;
    std::string name;
    std::string namespace_;
    std::string path;  // non-resource requests
};

/// Whether a rule's nonResourceURL covers a path: equal, "*", or a prefix ending in "*".
inline bool non_resource_url_covers(std::string_view rule_url, std::string_view path) {
    return rule_url == "*" || rule_url == path ||
           (rule_url.ends_with('*') && path.starts_with(rule_url.substr(0, rule_url.find_last_not_of('*') + 1)));
}

/// An rbac/v1 PolicyRule.
struct PolicyRule {
    std::vector<std::string> verbs, api_groups, resources, resource_names, non_resource_urls;

    static PolicyRule from_json(const boost::json::value& v) {
        auto list = [&](std::string_view key) {
            std::vector<std::string> out;
            if (const auto* a = rbac_detail::member(&v, key); a && a->is_array())
                for (const auto& s : a->get_array())
                    if (s.is_string()) out.emplace_back(s.get_string());
            return out;
        };
        return {list("verbs"), list("apiGroups"), list("resources"), list("resourceNames"), list("nonResourceURLs")};
    }

    boost::json::object to_json() const {
        boost::json::object o;
        auto put = [&](const char* key, const std::vector<std::string>& v) {
            if (v.empty()) return;
            boost::json::array a;
            for (const auto& s : v) a.emplace_back(s);
            o[key] = std::move(a);
        };
        put("verbs", verbs);
        put("apiGroups", api_groups);
        put("resources", resources);
        put("resourceNames", resource_names);
        put("nonResourceURLs", non_resource_urls);
        return o;
    }

    /// RuleAllows.
    bool allows(const AuthorizationAttributes& a) const {
        if (!has_or_star(verbs, a.verb)) return false;
        if (!a.resource_request) {
            return std::any_of(non_resource_urls.begin(), non_resource_urls.end(),
                               [&](const std::string& u) { return non_resource_url_covers(u, a.path); });
        }
        if (!has_or_star(api_groups, a.api_group)) return false;
        const std::string combined = a.subresource.empty() ? a.resource : a.resource + "/" + a.subresource;
        bool resource = false;
        for (const auto& r : resources)
            if (r == "*" || r == combined ||
                (!a.subresource.empty() && r.size() == a.subresource.size() + 2 && r.starts_with("*/") && r.ends_with(a.subresource)))
                resource = true;
        if (!resource) return false;
        return resource_names.empty() || std::find(resource_names.begin(), resource_names.end(), a.name) != resource_names.end();
    }

private:
    static bool has_or_star(const std::vector<std::string>& v, const std::string& x) {
        return std::find_if(v.begin(), v.end(), [&](const std::string& s) { return s == "*" || s == x; }) != v.end();
    }
};

/// The groups a user holds once authenticated: its own, system:authenticated, and for a
/// service account system:serviceaccounts and system:serviceaccounts:NS.
inline std::vector<std::string> authenticated_groups(std::string_view user, std::vector<std::string> groups) {
    auto add = [&](std::string g) {
        if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(std::move(g));
    };
    constexpr std::string_view sa = "system:serviceaccount:";
    if (user.starts_with(sa)) {
        auto rest = user.substr(sa.size());
        if (auto colon = rest.find(':'); colon != std::string_view::npos && colon > 0 && colon + 1 < rest.size()) {
            add("system:serviceaccounts");
            add("system:serviceaccounts:" + std::string(rest.substr(0, colon)));
        }
    }
    if (!user.empty() && user != "system:anonymous") add("system:authenticated");
    return groups;
}

/// The RBAC objects an authorization reads: a snapshot of the store (or given directly).
class RbacPolicy {
public:
    RbacPolicy(boost::json::array cluster_roles, boost::json::array roles, boost::json::array cluster_role_bindings,
               boost::json::array role_bindings)
        : cluster_roles_(std::move(cluster_roles)), roles_(std::move(roles)),
          cluster_role_bindings_(std::move(cluster_role_bindings)), role_bindings_(std::move(role_bindings)) {}

    static RbacPolicy from_store(const ObjectStore& store) {
        auto items = [&](const char* plural) {
            return store.list(ResourceId{std::string(rbac_group), "v1", plural}, "").at("items").as_array();
        };
        return RbacPolicy(items("clusterroles"), items("roles"), items("clusterrolebindings"), items("rolebindings"));
    }

    /// VisitRulesFor: every rule granted to the user in `ns` (ClusterRoleBindings first, then
    /// the RoleBindings of `ns` when it is not ""), or the error of a binding whose role is
    /// missing. `visit` returns false to stop.
    void visit_rules_for(const std::string& user, const std::vector<std::string>& groups, const std::string& ns,
                         const std::function<bool(const PolicyRule*, const std::string* error)>& visit) const {
        auto walk = [&](const boost::json::value& binding, const std::string& binding_ns) {
            if (!applies(user, groups, binding, binding_ns)) return true;
            std::string error;
            auto rules = role_reference_rules(binding, binding_ns, error);
            if (!error.empty()) return visit(nullptr, &error);
            for (const auto& r : rules)
                if (!visit(&r, nullptr)) return false;
            return true;
        };
        for (const auto& b : bootstrap_bindings())
            if (!walk(b, "")) return;
        for (const auto& b : cluster_role_bindings_)
            if (!walk(b, "")) return;
        if (ns.empty()) return;
        for (const auto& b : role_bindings_)
            if (namespace_of(b) == ns && !walk(b, ns)) return;
    }

    /// The rules a roleRef {kind, name} refers to from a binding in `binding_ns` ("" for a
    /// ClusterRoleBinding); "" in `error` unless the role is missing (the listers' message)
    /// or the kind unsupported.
    std::vector<PolicyRule> role_reference_rules(const boost::json::value& binding, const std::string& binding_ns,
                                                 std::string& error) const {
        const auto* ref = rbac_detail::member(&binding, "roleRef");
        auto kind = rbac_detail::str(ref, "kind"), name = rbac_detail::str(ref, "name");
        if (kind == "Role") {
            for (const auto& r : roles_)
                if (name_of(r) == name && namespace_of(r) == binding_ns) return rules_of(r);
            error = "role.rbac.authorization.k8s.io " + go::quote(name) + " not found";
            return {};
        }
        if (kind == "ClusterRole") {
            if (auto rules = cluster_role_rules(name)) return std::move(*rules);
            error = "clusterrole.rbac.authorization.k8s.io " + go::quote(name) + " not found";
            return {};
        }
        error = "unsupported role reference kind: " + go::quote(kind);
        return {};
    }

    /// The rules of a ClusterRole (aggregated ones computed), or nothing when there is none.
    std::optional<std::vector<PolicyRule>> cluster_role_rules(const std::string& name) const {
        std::set<std::string> seen;
        return cluster_role_rules(name, seen);
    }

private:
    static std::string namespace_of(const boost::json::value& o) {
        return rbac_detail::str(rbac_detail::member(&o, "metadata"), "namespace");
    }
    static std::string name_of(const boost::json::value& o) { return rbac_detail::str(rbac_detail::member(&o, "metadata"), "name"); }

    /// appliesTo: one of the binding's subjects is the user.
    static bool applies(const std::string& user, const std::vector<std::string>& groups, const boost::json::value& binding,
                        const std::string& binding_ns) {
        const auto* subjects = rbac_detail::member(&binding, "subjects");
        if (!subjects || !subjects->is_array()) return false;
        for (const auto& s : subjects->get_array()) {
            auto kind = rbac_detail::str(&s, "kind"), name = rbac_detail::str(&s, "name");
            if (kind == "User" && name == user) return true;
            if (kind == "Group" && std::find(groups.begin(), groups.end(), name) != groups.end()) return true;
            if (kind == "ServiceAccount") {
                auto sa_ns = rbac_detail::str(&s, "namespace");
                if (sa_ns.empty()) sa_ns = binding_ns;
                if (!sa_ns.empty() && user == "system:serviceaccount:" + sa_ns + ":" + name) return true;
            }
        }
        return false;
    }

    static std::vector<PolicyRule> rules_of(const boost::json::value& role) {
        std::vector<PolicyRule> out;
        if (const auto* rules = rbac_detail::member(&role, "rules"); rules && rules->is_array())
            for (const auto& r : rules->get_array()) out.push_back(PolicyRule::from_json(r));
        return out;
    }

    const boost::json::value* find_cluster_role(const std::string& name) const {
        for (const auto& r : cluster_roles_)
            if (name_of(r) == name) return &r;
        for (const auto& r : bootstrap_cluster_roles())
            if (name_of(r) == name) return &r;
        return nullptr;
    }

    std::optional<std::vector<PolicyRule>> cluster_role_rules(const std::string& name, std::set<std::string>& seen) const {
        const auto* role = find_cluster_role(name);
        if (!role) return std::nullopt;
        seen.insert(name);
        const auto* agg = rbac_detail::member(role, "aggregationRule");
        const auto* selectors = rbac_detail::member(agg, "clusterRoleSelectors");
        if (!selectors || !selectors->is_array()) return rules_of(*role);
        std::vector<PolicyRule> out;
        for (const auto& other : cluster_roles_) {
            auto other_name = name_of(other);
            if (seen.contains(other_name)) continue;
            const auto* md = rbac_detail::member(&other, "metadata");
            const auto* labels = rbac_detail::member(md, "labels");
            const boost::json::object* label_map = labels && labels->is_object() ? &labels->get_object() : nullptr;
            bool selected = false;
            for (const auto& sel : selectors->get_array()) {
                try {
                    if (api::LabelSelector::from_json(sel).matches(label_map)) selected = true;
                } catch (const std::exception&) {
                    // An invalid selector selects nothing (validation refuses it on write).
                }
            }
            if (!selected) continue;
            auto more = cluster_role_rules(other_name, seen);
            if (more) out.insert(out.end(), more->begin(), more->end());
        }
        return out;
    }

    static const boost::json::array& bootstrap_cluster_roles() {
        static const boost::json::array roles = boost::json::parse(R"([
          {"metadata":{"name":"cluster-admin"},"rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]},
                                                        {"nonResourceURLs":["*"],"verbs":["*"]}]},
          {"metadata":{"name":"system:discovery"},"rules":[{"nonResourceURLs":["/api","/api/*","/apis","/apis/*","/healthz",
              "/livez","/openapi","/openapi/*","/readyz","/version","/version/"],"verbs":["get"]}]},
          {"metadata":{"name":"system:basic-user"},"rules":[
              {"apiGroups":["authorization.k8s.io"],"resources":["selfsubjectaccessreviews","selfsubjectrulesreviews"],"verbs":["create"]},
              {"apiGroups":["authentication.k8s.io"],"resources":["selfsubjectreviews"],"verbs":["create"]}]},
          {"metadata":{"name":"system:public-info-viewer"},"rules":[{"nonResourceURLs":["/healthz","/livez","/readyz",
              "/version","/version/"],"verbs":["get"]}]}
        ])").as_array();
        return roles;
    }
    static const boost::json::array& bootstrap_bindings() {
        static const boost::json::array bindings = [] {
            boost::json::array out;
            auto bind = [&](const char* role, std::vector<const char*> groups) {
                boost::json::array subjects;
                for (const auto* g : groups)
                    subjects.push_back(boost::json::object{{"kind", "Group"}, {"apiGroup", rbac_group}, {"name", g}});
                out.push_back(boost::json::object{
                    {"metadata", boost::json::object{{"name", role}}},
                    {"roleRef", boost::json::object{{"apiGroup", rbac_group}, {"kind", "ClusterRole"}, {"name", role}}},
                    {"subjects", std::move(subjects)}});
            };
            bind("cluster-admin", {"system:masters"});
            bind("system:discovery", {"system:authenticated"});
            bind("system:basic-user", {"system:authenticated"});
            bind("system:public-info-viewer", {"system:authenticated", "system:unauthenticated"});
            return out;
        }();
        return bindings;
    }

    boost::json::array cluster_roles_, roles_, cluster_role_bindings_, role_bindings_;
};

struct AuthorizationDecision {
    bool allowed = false;
    std::string reason;  // why not, as the real authorizer words it ("" when it has nothing to say)
};

/// The RBAC authorizer behind the privileged group system:masters.
inline AuthorizationDecision authorize(const RbacPolicy& policy, const AuthorizationAttributes& a) {
    if (std::find(a.groups.begin(), a.groups.end(), "system:masters") != a.groups.end()) return {true, ""};
    AuthorizationDecision d;
    std::vector<std::string> errors;  // as utilerrors.Aggregate prints them: repeats dropped
    policy.visit_rules_for(a.user, a.groups, a.namespace_, [&](const PolicyRule* rule, const std::string* error) {
        if (rule && rule->allows(a)) {
            d.allowed = true;
            return false;
        }
        if (error && std::find(errors.begin(), errors.end(), *error) == errors.end()) errors.push_back(*error);
        return true;
    });
    if (!d.allowed && !errors.empty()) {
        std::string joined;
        for (const auto& e : errors) joined += (joined.empty() ? "" : ", ") + e;
        d.reason = "RBAC: " + (errors.size() == 1 ? joined : "[" + joined + "]");
    }
    return d;
}

/// forbiddenMessage (endpoints/handlers/responsewriters), with the authorizer's reason.
inline std::string forbidden_message(const AuthorizationAttributes& a, const std::string& reason = {}) {
    std::string msg;
    if (!a.resource_request) {
        msg = "User " + go::quote(a.user) + " cannot " + a.verb + " path " + go::quote(a.path);
    } else {
        std::string resource = a.subresource.empty() ? a.resource : a.resource + "/" + a.subresource;
        msg = "User " + go::quote(a.user) + " cannot " + a.verb + " resource " + go::quote(resource) + " in API group " +
              go::quote(a.api_group) +
              (a.namespace_.empty() ? std::string(" at the cluster scope") : " in the namespace " + go::quote(a.namespace_));
    }
    return reason.empty() ? msg : msg + ": " + reason;
}

/// apierrors.NewForbidden(GroupResource{group, resource}, name, err): the 403 Status.
inline api::Status new_forbidden(const std::string& group, const std::string& resource, const std::string& name,
                                 const std::string& err) {
    api::Status st = failure_status(403, "", "Forbidden");
    std::string qualified = group.empty() ? resource : resource + "." + group;
    if (qualified.empty()) st.message = "forbidden: " + err;
    else if (name.empty()) st.message = qualified + " is forbidden: " + err;
    else st.message = qualified + " " + go::quote(name) + " is forbidden: " + err;
    api::StatusDetails details;
    details.name = name;
    details.group = group;
    details.kind = resource;
    st.details = details;
    return st;
}

/// The 403 the real server answers a request the authorizers did not allow.
inline api::Status forbidden_status(const AuthorizationAttributes& a, const std::string& reason = {}) {
    return new_forbidden(a.api_group, a.resource, a.name, forbidden_message(a, reason));
}

} // namespace vck::sandbox
