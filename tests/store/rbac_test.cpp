// RBAC as the sandbox enforces it (rbac_authorizer.hpp over an ObjectStore, rbac_reviews.hpp,
// rbac_validation.hpp): which requests a set of Roles, ClusterRoles and bindings allows, how
// kube-apiserver 1.32 words the refusal, how it refuses invalid RBAC objects, and which roles
// and bindings a user may write (escalation prevention, rbac_escalation.hpp).
#include "store_support.hpp"

#include <vck/sandbox/auth/rbac_authorizer.hpp>
#include <vck/sandbox/auth/rbac_escalation.hpp>
#include <vck/sandbox/auth/rbac_reviews.hpp>

#include <doctest.h>

#include <string>
#include <vector>

using namespace vck::sandbox;
using namespace vck::sandbox::store_test;
namespace json = boost::json;

namespace {

const ResourceId rbac_roles{"rbac.authorization.k8s.io", "v1", "roles"};
const ResourceId rbac_cluster_roles{"rbac.authorization.k8s.io", "v1", "clusterroles"};
const ResourceId rbac_role_bindings{"rbac.authorization.k8s.io", "v1", "rolebindings"};
const ResourceId rbac_cluster_role_bindings{"rbac.authorization.k8s.io", "v1", "clusterrolebindings"};

/// A store holding the policy every case below is judged against.
void rbac_policy_into(ObjectStore& store) {
    store.create(namespaces, "", named("dev"));
    store.create(rbac_roles, "dev", parse(R"({"metadata":{"name":"pod-reader","namespace":"dev"},"rules":[
        {"apiGroups":[""],"resources":["pods","pods/log"],"verbs":["get","list","watch"]}]})"));
    store.create(rbac_roles, "dev", parse(R"({"metadata":{"name":"one-config","namespace":"dev"},"rules":[
        {"apiGroups":[""],"resources":["configmaps"],"resourceNames":["app"],"verbs":["get","update","list","create"]}]})"));
    store.create(rbac_cluster_roles, "", parse(R"({"metadata":{"name":"node-viewer"},"rules":[
        {"apiGroups":[""],"resources":["nodes"],"verbs":["get","list"]},
        {"apiGroups":["*"],"resources":["*/scale"],"verbs":["*"]},
        {"nonResourceURLs":["/metrics","/logs/*"],"verbs":["get"]}]})"));
    store.create(rbac_cluster_roles, "", parse(R"({"metadata":{"name":"secret-reader"},"rules":[
        {"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}]})"));
    // jane reads pods in dev; the group dev-team reads one config map there.
    store.create(rbac_role_bindings, "dev", parse(R"({"metadata":{"name":"jane-pods","namespace":"dev"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"pod-reader"},
        "subjects":[{"kind":"User","name":"jane"},{"kind":"Group","name":"dev-team"}]})"));
    store.create(rbac_role_bindings, "dev", parse(R"({"metadata":{"name":"team-config","namespace":"dev"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"one-config"},
        "subjects":[{"kind":"Group","name":"dev-team"}]})"));
    // A ClusterRole bound in one namespace grants in that namespace only; the service account
    // subject without a namespace is the binding's.
    store.create(rbac_role_bindings, "dev", parse(R"({"metadata":{"name":"sa-secrets","namespace":"dev"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"secret-reader"},
        "subjects":[{"kind":"ServiceAccount","name":"builder"}]})"));
    store.create(rbac_cluster_role_bindings, "", parse(R"({"metadata":{"name":"ops-nodes"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"node-viewer"},
        "subjects":[{"kind":"Group","name":"ops"},{"kind":"ServiceAccount","name":"watcher","namespace":"kube-system"}]})"));
}

struct RbacCase {
    const char* user;
    std::vector<std::string> groups;
    const char* verb;
    const char* group;
    const char* resource;
    const char* subresource;
    const char* name;
    const char* ns;
    bool allowed;
};

AuthorizationAttributes rbac_attributes(const RbacCase& c) {
    AuthorizationAttributes a;
    a.user = c.user;
    a.groups = authenticated_groups(c.user, c.groups);
    a.verb = c.verb;
    a.api_group = c.group;
    a.api_version = "v1";
    a.resource = c.resource;
    a.subresource = c.subresource;
    a.name = c.name;
    a.namespace_ = c.ns;
    return a;
}

AuthorizationAttributes rbac_path_request(const char* user, std::vector<std::string> groups, const char* verb, const char* path) {
    AuthorizationAttributes a;
    a.user = user;
    a.groups = authenticated_groups(user, std::move(groups));
    a.verb = verb;
    a.resource_request = false;
    a.path = path;
    return a;
}

} // namespace

TEST_CASE("the RBAC authorizer allows exactly what the bound rules grant, per verb, resource, subresource, name and scope") {
    ObjectStore store;
    rbac_policy_into(store);
    auto policy = RbacPolicy::from_store(store);
    const std::vector<RbacCase> cases = {
        // verbs
        {"jane", {}, "get", "", "pods", "", "p", "dev", true},
        {"jane", {}, "list", "", "pods", "", "", "dev", true},
        {"jane", {}, "watch", "", "pods", "", "", "dev", true},
        {"jane", {}, "delete", "", "pods", "", "p", "dev", false},
        {"jane", {}, "create", "", "pods", "", "", "dev", false},
        // namespace: a Role grants in its namespace only
        {"jane", {}, "list", "", "pods", "", "", "default", false},
        {"jane", {}, "list", "", "pods", "", "", "", false},
        // resource and API group
        {"jane", {}, "get", "", "configmaps", "", "app", "dev", false},
        {"jane", {}, "get", "apps", "pods", "", "p", "dev", false},
        // subresources: pods/log is granted, pods/status and pods/exec are not
        {"jane", {}, "get", "", "pods", "log", "p", "dev", true},
        {"jane", {}, "get", "", "pods", "status", "p", "dev", false},
        {"jane", {}, "create", "", "pods", "exec", "p", "dev", false},
        // resourceNames: the named object only; create and an unnamed list never match
        {"bob", {"dev-team"}, "get", "", "configmaps", "", "app", "dev", true},
        {"bob", {"dev-team"}, "update", "", "configmaps", "", "app", "dev", true},
        {"bob", {"dev-team"}, "get", "", "configmaps", "", "other", "dev", false},
        {"bob", {"dev-team"}, "list", "", "configmaps", "", "", "dev", false},
        {"bob", {"dev-team"}, "list", "", "configmaps", "", "app", "dev", true},
        {"bob", {"dev-team"}, "create", "", "configmaps", "", "", "dev", false},
        // groups: dev-team holds the pod reader too
        {"bob", {"dev-team"}, "list", "", "pods", "", "", "dev", true},
        {"bob", {}, "list", "", "pods", "", "", "dev", false},
        // cluster scope through a ClusterRoleBinding, "*" verbs and "*/scale"
        {"ann", {"ops"}, "list", "", "nodes", "", "", "", true},
        {"ann", {"ops"}, "delete", "", "nodes", "", "n1", "", false},
        {"ann", {"ops"}, "list", "", "pods", "", "", "", false},
        {"ann", {"ops"}, "update", "apps", "deployments", "scale", "d", "dev", true},
        {"ann", {"ops"}, "patch", "example.com", "widgets", "scale", "w", "", true},
        {"ann", {"ops"}, "update", "apps", "deployments", "", "d", "dev", false},
        {"ann", {"ops"}, "update", "apps", "deployments", "status", "d", "dev", false},
        // service accounts: by user name, namespace from the binding or the subject
        {"system:serviceaccount:dev:builder", {}, "get", "", "secrets", "", "s", "dev", true},
        {"system:serviceaccount:dev:builder", {}, "get", "", "secrets", "", "s", "default", false},
        {"system:serviceaccount:default:builder", {}, "get", "", "secrets", "", "s", "dev", false},
        {"system:serviceaccount:kube-system:watcher", {}, "get", "", "nodes", "", "n1", "", true},
        {"system:serviceaccount:dev:watcher", {}, "get", "", "nodes", "", "n1", "", false},
        // the self reviews, for everyone authenticated (system:basic-user)
        {"nobody", {}, "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", "", true},
        {"nobody", {}, "create", "authorization.k8s.io", "selfsubjectrulesreviews", "", "", "", true},
        {"nobody", {}, "create", "authentication.k8s.io", "selfsubjectreviews", "", "", "", true},
        {"nobody", {}, "create", "authorization.k8s.io", "subjectaccessreviews", "", "", "", false},
        // system:masters may do anything
        {"root", {"system:masters"}, "deletecollection", "", "secrets", "", "", "kube-system", true},
    };
    for (const auto& c : cases) {
        auto a = rbac_attributes(c);
        CAPTURE(c.user);
        CAPTURE(forbidden_message(a));
        CHECK(authorize(policy, a).allowed == c.allowed);
    }
}

TEST_CASE("non-resource URLs are allowed by exact path, a trailing * or *, and discovery to everyone authenticated") {
    ObjectStore store;
    rbac_policy_into(store);
    auto policy = RbacPolicy::from_store(store);
    struct PathCase {
        const char* user;
        std::vector<std::string> groups;
        const char* verb;
        const char* path;
        bool allowed;
    };
    const std::vector<PathCase> cases = {
        {"jane", {}, "get", "/api", true},
        {"jane", {}, "get", "/api/v1", true},
        {"jane", {}, "get", "/apis", true},
        {"jane", {}, "get", "/apis/apps/v1", true},
        {"jane", {}, "get", "/openapi/v3", true},
        {"jane", {}, "get", "/healthz", true},
        {"jane", {}, "get", "/version", true},
        {"jane", {}, "post", "/api", false},
        {"jane", {}, "get", "/metrics", false},
        {"jane", {}, "get", "/healthz/etcd", false},
        {"ann", {"ops"}, "get", "/metrics", true},
        {"ann", {"ops"}, "get", "/logs/kube-apiserver.log", true},
        {"ann", {"ops"}, "get", "/logs", false},
        {"root", {"system:masters"}, "delete", "/anything", true},
    };
    for (const auto& c : cases) {
        CAPTURE(c.path);
        CHECK(authorize(policy, rbac_path_request(c.user, c.groups, c.verb, c.path)).allowed == c.allowed);
    }
}

TEST_CASE("an aggregated ClusterRole holds the rules of the ClusterRoles its selectors pick, as they change") {
    ObjectStore store;
    store.create(rbac_cluster_roles, "", parse(R"({"metadata":{"name":"monitoring"},"aggregationRule":{"clusterRoleSelectors":[
        {"matchLabels":{"rbac.example.com/aggregate-to-monitoring":"true"}}]},"rules":[]})"));
    store.create(rbac_cluster_roles, "", parse(R"({"metadata":{"name":"monitoring-endpoints",
        "labels":{"rbac.example.com/aggregate-to-monitoring":"true"}},
        "rules":[{"apiGroups":[""],"resources":["endpoints"],"verbs":["list"]}]})"));
    store.create(rbac_cluster_roles, "", parse(R"({"metadata":{"name":"unlabelled"},
        "rules":[{"apiGroups":[""],"resources":["services"],"verbs":["list"]}]})"));
    store.create(rbac_cluster_role_bindings, "", parse(R"({"metadata":{"name":"mon"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"monitoring"},
        "subjects":[{"kind":"User","name":"prom"}]})"));
    auto can_list = [&](const char* resource) {
        return authorize(RbacPolicy::from_store(store), rbac_attributes({"prom", {}, "list", "", resource, "", "", "", false})).allowed;
    };
    CHECK(can_list("endpoints"));
    CHECK_FALSE(can_list("services"));
    store.patch(rbac_cluster_roles, "", "unlabelled", vck::client::PatchType::Merge,
                parse(R"({"metadata":{"labels":{"rbac.example.com/aggregate-to-monitoring":"true"}}})"));
    CHECK(can_list("services"));
    auto rules = RbacPolicy::from_store(store).cluster_role_rules("monitoring");
    REQUIRE(rules);
    CHECK(rules->size() == 2);
}

TEST_CASE("a binding to a missing role grants nothing and the denial says so, as the RBAC authorizer's reason") {
    ObjectStore store;
    store.create(rbac_role_bindings, "default", parse(R"({"metadata":{"name":"dangling"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"gone"},"subjects":[{"kind":"User","name":"jane"}]})"));
    store.create(rbac_cluster_role_bindings, "", parse(R"({"metadata":{"name":"dangling-cluster"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"nope"},"subjects":[{"kind":"User","name":"jane"}]})"));
    auto a = rbac_attributes({"jane", {}, "list", "", "pods", "", "", "default", false});
    auto d = authorize(RbacPolicy::from_store(store), a);
    CHECK_FALSE(d.allowed);
    CHECK(d.reason == R"(RBAC: [clusterrole.rbac.authorization.k8s.io "nope" not found, role.rbac.authorization.k8s.io "gone" not found])");
    CHECK(forbidden_status(a, d.reason).message ==
          R"(pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "default": )"
          R"(RBAC: [clusterrole.rbac.authorization.k8s.io "nope" not found, role.rbac.authorization.k8s.io "gone" not found])");
    // Elsewhere only the cluster-wide binding is looked at.
    a.namespace_ = "";
    CHECK(authorize(RbacPolicy::from_store(store), a).reason == R"(RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found)");
}

TEST_CASE("a refusal is worded as kube-apiserver's 403: resource with group, subresource, name, scope, or path") {
    auto st = forbidden_status(rbac_attributes({"jane", {}, "list", "", "pods", "", "", "default", false}));
    CHECK(st.code == 403);
    CHECK(st.reason == "Forbidden");
    CHECK(st.message == R"(pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "default")");
    REQUIRE(st.details);
    CHECK(st.details->kind == "pods");
    CHECK(st.details->group == "");
    CHECK(st.details->name == "");
    CHECK(forbidden_status(rbac_attributes({"jane", {}, "list", "", "nodes", "", "", "", false})).message ==
          R"(nodes is forbidden: User "jane" cannot list resource "nodes" in API group "" at the cluster scope)");
    CHECK(forbidden_status(rbac_attributes({"jane", {}, "get", "", "pods", "log", "p", "dev", false})).message ==
          R"(pods "p" is forbidden: User "jane" cannot get resource "pods/log" in API group "" in the namespace "dev")");
    auto named_st = forbidden_status(rbac_attributes({"jane", {}, "get", "", "configmaps", "", "x", "dev", false}));
    CHECK(named_st.message ==
          R"(configmaps "x" is forbidden: User "jane" cannot get resource "configmaps" in API group "" in the namespace "dev")");
    CHECK(named_st.details->name == "x");
    auto grouped = forbidden_status(rbac_attributes({"jane", {}, "create", "rbac.authorization.k8s.io", "clusterroles", "", "", "", false}));
    CHECK(grouped.message == R"(clusterroles.rbac.authorization.k8s.io is forbidden: User "jane" cannot create resource )"
                             R"("clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope)");
    CHECK(grouped.details->group == "rbac.authorization.k8s.io");
    CHECK(forbidden_status(rbac_path_request("jane", {}, "get", "/metrics")).message ==
          R"(forbidden: User "jane" cannot get path "/metrics")");
}

TEST_CASE("authentication's groups are held: system:authenticated by everyone, the service account groups by service accounts") {
    CHECK(authenticated_groups("jane", {"dev"}) == std::vector<std::string>{"dev", "system:authenticated"});
    CHECK(authenticated_groups("jane", {"system:authenticated"}) == std::vector<std::string>{"system:authenticated"});
    CHECK(authenticated_groups("system:serviceaccount:ns1:sa", {}) ==
          std::vector<std::string>{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"});
    CHECK(authenticated_groups("system:serviceaccount:bad", {}) == std::vector<std::string>{"system:authenticated"});
}

TEST_CASE("RBAC objects are validated as kube-apiserver 1.32 validates them; a binding's roleRef cannot change") {
    ObjectStore store;
    auto message = [&](auto&& write) { return std::string(refusal(write).message); };
    CHECK(message([&] {
              store.create(rbac_roles, "default", parse(R"({"metadata":{"name":"r"},"rules":[{"apiGroups":[""],"resources":["pods"]}]})"));
          }) == R"(Role.rbac.authorization.k8s.io "r" is invalid: rules[0].verbs: Required value: verbs must contain at least one value)");
    CHECK(message([&] {
              store.create(rbac_roles, "default", parse(R"({"metadata":{"name":"r"},"rules":[{"verbs":["get"]}]})"));
          }) == R"(Role.rbac.authorization.k8s.io "r" is invalid: [rules[0].apiGroups: Required value: resource rules must supply )"
                R"(at least one api group, rules[0].resources: Required value: resource rules must supply at least one resource])");
    CHECK(message([&] {
              store.create(rbac_roles, "default", parse(R"({"metadata":{"name":"r"},"rules":[{"verbs":["get"],"nonResourceURLs":["/x"]}]})"));
          }) == R"(Role.rbac.authorization.k8s.io "r" is invalid: rules[0].nonResourceURLs: Invalid value: []string{"/x"}: )"
                "namespaced rules cannot apply to non-resource URLs");
    CHECK(message([&] {
              store.create(rbac_cluster_roles, "", parse(R"({"metadata":{"name":"c"},"rules":[{"verbs":["get"],"nonResourceURLs":["/x"],"resources":["pods"]}]})"));
          }) == R"(ClusterRole.rbac.authorization.k8s.io "c" is invalid: rules[0].nonResourceURLs: Invalid value: []string{"/x"}: )"
                "rules cannot apply to both regular resources and non-resource URLs");
    CHECK(message([&] { store.create(rbac_cluster_roles, "", parse(R"({"metadata":{"name":"c"},"aggregationRule":{}})")); }) ==
          R"(ClusterRole.rbac.authorization.k8s.io "c" is invalid: aggregationRule.clusterRoleSelectors: Required value: )"
          "at least one clusterRoleSelector required if aggregationRule is non-nil");
    // RBAC names are path segments: "a:b" is a valid name, "a/b" is not.
    store.create(rbac_cluster_roles, "", parse(R"({"metadata":{"name":"system:thing"},"rules":[]})"));
    CHECK(message([&] {
              store.create(rbac_cluster_role_bindings, "", parse(R"({"metadata":{"name":"b"},
                  "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r"},"subjects":[{"kind":"ServiceAccount","name":"sa"}]})"));
          }) == R"(ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: [roleRef.kind: Unsupported value: "Role": )"
                R"(supported values: "ClusterRole", subjects[0].namespace: Required value])");
    CHECK(message([&] {
              store.create(rbac_role_bindings, "default", parse(R"({"metadata":{"name":"b"},"roleRef":{"kind":"Role","name":"r"},
                  "subjects":[{"kind":"Robot","name":"x"}]})"));
          }) == R"(RoleBinding.rbac.authorization.k8s.io "b" is invalid: [roleRef.apiGroup: Unsupported value: "": supported )"
                R"(values: "rbac.authorization.k8s.io", subjects[0].kind: Unsupported value: "Robot": supported values: )"
                R"("ServiceAccount", "User", "Group"])");
    auto b = store.create(rbac_role_bindings, "default", parse(R"({"metadata":{"name":"b"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"User","name":"jane"}]})"));
    // v1's defaults: a User's (and a Group's) apiGroup.
    CHECK(b.at("subjects").at(0).at("apiGroup") == "rbac.authorization.k8s.io");
    CHECK(message([&] {
              store.patch(rbac_role_bindings, "default", "b", vck::client::PatchType::Merge, parse(R"({"roleRef":{"name":"edit"}})"));
          }) == R"(RoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef: Invalid value: rbac.RoleRef{APIGroup:)"
                R"("rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: cannot change roleRef)");
    store.patch(rbac_role_bindings, "default", "b", vck::client::PatchType::Merge, parse(R"({"subjects":[{"kind":"Group","name":"g"}]})"));
}

TEST_CASE("the self reviews answer for the requester: can-i, the rules held in a namespace, and who it is") {
    ObjectStore store;
    rbac_policy_into(store);
    auto policy = RbacPolicy::from_store(store);
    auto jane = rbac_attributes({"jane", {"qa"}, "", "", "", "", "", "", false});
    auto review = self_subject_access_review(policy, jane, parse(R"({"apiVersion":"authorization.k8s.io/v1",
        "kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"namespace":"dev","verb":"list","resource":"pods"}}})"));
    CHECK(review.at("status").at("allowed") == true);
    CHECK(review.at("spec").at("resourceAttributes").at("resource") == "pods");
    CHECK(self_subject_access_review(policy, jane, parse(R"({"spec":{"resourceAttributes":{"namespace":"default","verb":"list",
        "resource":"pods"}}})")).at("status").at("allowed") == false);
    CHECK(self_subject_access_review(policy, jane, parse(R"({"spec":{"nonResourceAttributes":{"path":"/apis","verb":"get"}}})"))
              .at("status").at("allowed") == true);
    CHECK(refusal([&] { self_subject_access_review(policy, jane, parse(R"({"spec":{}})")); }).message ==
          R"(SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": )"
          "exactly one of nonResourceAttributes or resourceAttributes must be specified");

    auto rules = self_subject_rules_review(policy, jane, parse(R"({"spec":{"namespace":"dev"}})"));
    const auto& status = rules.at("status");
    CHECK(status.at("incomplete") == false);
    bool pods = false;
    for (const auto& r : status.at("resourceRules").as_array())
        if (r.at("resources") == json::array{"pods", "pods/log"}) pods = r.at("verbs") == json::array{"get", "list", "watch"};
    CHECK(pods);
    bool discovery = false;
    for (const auto& r : status.at("nonResourceRules").as_array())
        if (r.at("nonResourceURLs").as_array().size() == 11) discovery = true;
    CHECK(discovery);
    auto elsewhere = self_subject_rules_review(policy, jane, parse(R"({"spec":{"namespace":"default"}})"));
    for (const auto& r : elsewhere.at("status").at("resourceRules").as_array()) CHECK(r.at("resources") != json::array{"pods", "pods/log"});

    auto me = self_subject_review(jane, parse(R"({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"})"));
    CHECK(me.at("status").at("userInfo") == parse(R"({"username":"jane","groups":["qa","system:authenticated"]})"));
}

namespace {

/// A write of `plural` in `ns` by `user` (with `groups`), as the handler asks about it.
AuthorizationAttributes rbac_writer(const char* user, std::vector<std::string> groups, const char* plural, const char* ns) {
    AuthorizationAttributes a;
    a.user = user;
    a.groups = authenticated_groups(user, std::move(groups));
    a.verb = "create";
    a.api_group = "rbac.authorization.k8s.io";
    a.api_version = "v1";
    a.resource = plural;
    a.namespace_ = ns;
    return a;
}

} // namespace

TEST_CASE("a user may write a Role with the rules it holds, and is refused one granting more, unless it may escalate") {
    ObjectStore store;
    rbac_policy_into(store);
    auto jane = rbac_writer("jane", {}, "roles", "dev");
    auto held = parse(R"({"metadata":{"name":"r","namespace":"dev"},"rules":[
        {"apiGroups":[""],"resources":["pods"],"verbs":["get","list"]},{"apiGroups":[""],"resources":["pods/log"],"verbs":["get"]}]})");
    CHECK_FALSE(refuse_escalation(RbacPolicy::from_store(store), jane, held));
    auto more = parse(R"({"metadata":{"name":"r","namespace":"dev"},"rules":[
        {"apiGroups":[""],"resources":["pods"],"verbs":["get","delete"]},
        {"apiGroups":[""],"resources":["secrets","configmaps"],"verbs":["get","list"]},
        {"nonResourceURLs":["/metrics"],"verbs":["get"]}]})");
    auto refused = refuse_escalation(RbacPolicy::from_store(store), jane, more);
    REQUIRE(refused);
    CHECK(refused->code == 403);
    CHECK(refused->reason == "Forbidden");
    CHECK(refused->message == "roles.rbac.authorization.k8s.io \"r\" is forbidden: user \"jane\" (groups=[\"system:authenticated\"]) "
                              "is attempting to grant RBAC permissions not currently held:\n"
                              "{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"get\" \"list\"]}\n"
                              "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\"]}\n"
                              "{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}\n"
                              "{NonResourceURLs:[\"/metrics\"], Verbs:[\"get\"]}");
    REQUIRE(refused->details);
    CHECK(refused->details->kind == "roles");
    CHECK(refused->details->name == "r");
    // Held in dev only: the same Role in default is an escalation.
    CHECK(refuse_escalation(RbacPolicy::from_store(store), rbac_writer("jane", {}, "roles", "default"), held));
    // A named rule does not cover the whole resource; "*/scale" covers every scale.
    auto team = rbac_writer("bob", {"dev-team"}, "roles", "dev");
    CHECK_FALSE(refuse_escalation(RbacPolicy::from_store(store), team, parse(R"({"metadata":{"name":"r"},"rules":[
        {"apiGroups":[""],"resources":["configmaps"],"resourceNames":["app"],"verbs":["get"]}]})")));
    CHECK(refuse_escalation(RbacPolicy::from_store(store), team, parse(R"({"metadata":{"name":"r"},"rules":[
        {"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]})")));
    CHECK_FALSE(refuse_escalation(RbacPolicy::from_store(store), rbac_writer("ann", {"ops"}, "clusterroles", ""),
                                  parse(R"({"metadata":{"name":"c"},"rules":[{"apiGroups":["apps"],"resources":["deployments/scale"],
                                  "verbs":["update"]},{"nonResourceURLs":["/logs/x"],"verbs":["get"]}]})")));
    // escalate on roles in dev lifts the check there.
    store.create(rbac_roles, "dev", parse(R"({"metadata":{"name":"escalator"},"rules":[
        {"apiGroups":["rbac.authorization.k8s.io"],"resources":["roles"],"verbs":["escalate"]}]})"));
    store.create(rbac_role_bindings, "dev", parse(R"({"metadata":{"name":"jane-escalates"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"escalator"},"subjects":[{"kind":"User","name":"jane"}]})"));
    CHECK_FALSE(refuse_escalation(RbacPolicy::from_store(store), jane, more));
    // system:masters holds everything.
    CHECK_FALSE(refuse_escalation(RbacPolicy::from_store(store), rbac_writer("root", {"system:masters"}, "roles", "default"), more));
}

TEST_CASE("an aggregationRule needs full authority; a binding needs the bound role's rules or bind on it") {
    ObjectStore store;
    rbac_policy_into(store);
    auto ann = rbac_writer("ann", {"ops"}, "clusterroles", "");
    auto aggregated = refuse_escalation(RbacPolicy::from_store(store), ann, parse(R"({"metadata":{"name":"agg"},
        "aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"a":"b"}}]}})"));
    REQUIRE(aggregated);
    CHECK(aggregated->message == R"(clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin )"
                                 "privileges to use the aggregationRule");

    auto jane = rbac_writer("jane", {}, "rolebindings", "dev");
    auto to_pod_reader = parse(R"({"metadata":{"name":"b"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role",
        "name":"pod-reader"},"subjects":[{"kind":"User","name":"tom"}]})");
    CHECK_FALSE(refuse_escalation(RbacPolicy::from_store(store), jane, to_pod_reader));
    auto to_secrets = parse(R"({"metadata":{"name":"b"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole",
        "name":"secret-reader"},"subjects":[{"kind":"User","name":"tom"}]})");
    auto refused = refuse_escalation(RbacPolicy::from_store(store), jane, to_secrets);
    REQUIRE(refused);
    CHECK(refused->message == "rolebindings.rbac.authorization.k8s.io \"b\" is forbidden: user \"jane\" "
                              "(groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n"
                              "{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}");
    auto missing = refuse_escalation(RbacPolicy::from_store(store), jane, parse(R"({"metadata":{"name":"b"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"gone"},"subjects":[]})"));
    REQUIRE(missing);
    CHECK(missing->code == 404);
    CHECK(missing->message == R"(roles.rbac.authorization.k8s.io "gone" not found)");
    // bind on that ClusterRole, in dev, lets jane bind it there (and nowhere else).
    store.create(rbac_roles, "dev", parse(R"({"metadata":{"name":"binder"},"rules":[{"apiGroups":["rbac.authorization.k8s.io"],
        "resources":["clusterroles"],"resourceNames":["secret-reader"],"verbs":["bind"]}]})"));
    store.create(rbac_role_bindings, "dev", parse(R"({"metadata":{"name":"jane-binds"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"binder"},"subjects":[{"kind":"User","name":"jane"}]})"));
    CHECK_FALSE(refuse_escalation(RbacPolicy::from_store(store), jane, to_secrets));
    CHECK(refuse_escalation(RbacPolicy::from_store(store), rbac_writer("jane", {}, "rolebindings", "default"), to_secrets));
}
