// The self reviews of kube-apiserver 1.32, answered from the RBAC authorizer
// (rbac_authorizer.hpp) for the requesting identity, never stored:
// - authorization.k8s.io/v1 SelfSubjectAccessReview (`kubectl auth can-i`): status.allowed
//   for spec.resourceAttributes or spec.nonResourceAttributes, with the denial's reason;
// - authorization.k8s.io/v1 SelfSubjectRulesReview (`kubectl auth can-i --list`): the
//   resource and non-resource rules granted in spec.namespace, incomplete with the errors of
//   bindings to missing roles;
// - authentication.k8s.io/v1 SelfSubjectReview (`kubectl auth whoami`): the user and groups.
// Each answer is the request with its status set (201), as the real registries answer a create.
#pragma once

#include <vck/sandbox/validation/field_error.hpp>
#include <vck/sandbox/auth/rbac_authorizer.hpp>
#include <vck/sandbox/validation/store_error.hpp>

#include <boost/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace vck::sandbox {

namespace rbac_review_detail {
inline boost::json::object answer(const boost::json::value& body, std::string_view group, std::string_view kind) {
    boost::json::object o = body.is_object() ? body.get_object() : boost::json::object{};
    o["apiVersion"] = std::string(group) + "/v1";
    o["kind"] = kind;
    auto& md = o["metadata"];
    if (!md.is_object()) md = boost::json::object{};
    md.get_object()["creationTimestamp"] = nullptr;
    return o;
}
} // namespace rbac_review_detail

/// A SelfSubjectAccessReview's answer for `who` (only user and groups are read). Throws
/// StoreError (422) when neither attribute set is given.
inline boost::json::object self_subject_access_review(const RbacPolicy& policy, const AuthorizationAttributes& who,
                                                      const boost::json::value& body) {
    using rbac_detail::member;
    using rbac_detail::str;
    const auto* spec = member(&body, "spec");
    const auto* res = member(spec, "resourceAttributes");
    const auto* non = member(spec, "nonResourceAttributes");
    if ((!res || !res->is_object()) && (!non || !non->is_object()))
        throw StoreError(invalid_status("SelfSubjectAccessReview", "authorization.k8s.io", "",
                                        {field::invalid("spec.resourceAttributes", boost::json::value("null"),
                                                        "exactly one of nonResourceAttributes or resourceAttributes must be specified")}));
    AuthorizationAttributes a;
    a.user = who.user;
    a.groups = who.groups;
    if (res && res->is_object()) {
        a.verb = str(res, "verb");
        a.api_group = str(res, "group");
        a.api_version = str(res, "version");
        a.resource = str(res, "resource");
        a.subresource = str(res, "subresource");
        a.name = str(res, "name");
        a.namespace_ = str(res, "namespace");
    } else {
        a.resource_request = false;
        a.verb = str(non, "verb");
        a.path = str(non, "path");
    }
    auto d = authorize(policy, a);
    auto out = rbac_review_detail::answer(body, "authorization.k8s.io", "SelfSubjectAccessReview");
    boost::json::object status{{"allowed", d.allowed}};
    if (!d.reason.empty()) status["reason"] = d.reason;
    out["status"] = std::move(status);
    return out;
}

/// A SelfSubjectRulesReview's answer: the rules granted to `who` in spec.namespace.
inline boost::json::object self_subject_rules_review(const RbacPolicy& policy, const AuthorizationAttributes& who,
                                                     const boost::json::value& body) {
    auto ns = rbac_detail::str(rbac_detail::member(&body, "spec"), "namespace");
    boost::json::array resource_rules, non_resource_rules;
    std::string errors;
    policy.visit_rules_for(who.user, who.groups, ns, [&](const PolicyRule* rule, const std::string* error) {
        if (error) errors += (errors.empty() ? "" : ", ") + *error;
        if (!rule) return true;
        if (!rule->resources.empty()) {
            PolicyRule r = *rule;
            r.non_resource_urls.clear();
            resource_rules.push_back(r.to_json());
        }
        if (!rule->non_resource_urls.empty())
            non_resource_rules.push_back(PolicyRule{rule->verbs, {}, {}, {}, rule->non_resource_urls}.to_json());
        return true;
    });
    auto out = rbac_review_detail::answer(body, "authorization.k8s.io", "SelfSubjectRulesReview");
    boost::json::object status{{"resourceRules", std::move(resource_rules)},
                               {"nonResourceRules", std::move(non_resource_rules)},
                               {"incomplete", !errors.empty()}};
    if (!errors.empty()) status["evaluationError"] = errors;
    out["status"] = std::move(status);
    return out;
}

/// A SelfSubjectReview's answer: who the request came from.
inline boost::json::object self_subject_review(const AuthorizationAttributes& who, const boost::json::value& body) {
    auto out = rbac_review_detail::answer(body, "authentication.k8s.io", "SelfSubjectReview");
    boost::json::array groups;
    for (const auto& g : who.groups) groups.emplace_back(g);
    boost::json::object user{{"username", who.user}};
    if (!groups.empty()) user["groups"] = std::move(groups);
    out["status"] = boost::json::object{{"userInfo", std::move(user)}};
    return out;
}

} // namespace vck::sandbox
