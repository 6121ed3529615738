// ApiHandler: the REST semantics of the emulated kube-apiserver, from an ApiRequest to an
// ApiReply (or a WatchPlan the HTTP front end streams). It routes discovery, health and
// version paths, and every verb on every served resource: namespaced and cluster-scoped
// paths, cross-namespace lists, subresources status/log/binding/scale, query parameters, patch
// content types, StoreDeleteOptions bodies, dry runs and Table output. Objects are created and
// updated from JSON or, for the kinds protobuf_body.hpp decodes, from Kubernetes protobuf.
// Every request of an authenticated identity outside system:masters is authorized by RBAC
// first (rbac_authorizer.hpp; role and binding writes also against escalation,
// rbac_escalation.hpp); the self reviews are answered for the requester (rbac_reviews.hpp).
// Writes (create, update, patch, delete; of objects and their status) that a webhook
// configuration selects go through admission (admission_webhooks.hpp): mutating webhooks
// before validation, validating ones just before the write, never under the store's lock.
// Guarantees: errors are metav1.Status replies with the code and reason the real server
// uses; no socket types here, so every behaviour can be specified without TLS.
#pragma once

#include <vck/api/json.hpp>
#include <vck/sandbox/storage/patch.hpp>
#include <vck/api/time.hpp>
#include <vck/sandbox/server/admission_webhooks.hpp>
#include <vck/sandbox/server/api_path.hpp>
#include <vck/sandbox/server/api_request.hpp>
#include <vck/sandbox/server/content_negotiation.hpp>
#include <vck/sandbox/server/discovery.hpp>
#include <vck/sandbox/storage/object_store.hpp>
#include <vck/sandbox/server/openapi.hpp>
#include <vck/sandbox/cluster/pod_logs.hpp>
#include <vck/sandbox/server/protobuf_body.hpp>
#include <vck/sandbox/auth/rbac_authorizer.hpp>
#include <vck/sandbox/auth/rbac_policy_cache.hpp>
#include <vck/sandbox/auth/rbac_escalation.hpp>
#include <vck/sandbox/auth/rbac_reviews.hpp>
#include <vck/sandbox/server/table.hpp>

#include <charconv>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

namespace vck::sandbox {

/// A watch the front end streams: events are drained from the store's Watch and encoded
/// one JSON object per line (as Tables when the client asked for them).
class WatchPlan {
public:
    WatchPlan(std::shared_ptr<Watch> w, std::optional<std::chrono::seconds> timeout,
              std::function<json::value(const json::value&, bool first)> transform)
        : watch_(std::move(w)), transform_(std::move(transform)), timeout(timeout) {}
    WatchPlan(WatchPlan&&) = default;
    WatchPlan& operator=(WatchPlan&&) = default;
    ~WatchPlan() {
        if (watch_) watch_->stop();
    }

    /// Queued events as lines, about kBatchBytes of them at most: the rest wait in backlog()
    /// for the next call, so that the front end writes a long backlog while it encodes the
    /// next part of it (as kube-apiserver writes each event as it encodes it). `open` turns
    /// false once the store has closed the watch and every event is out.
    std::string drain(bool& open) {
        if (backlog_.empty())
            for (auto& e : watch_->drain()) backlog_.push_back(std::move(e));
        std::string out;
        json::serializer sr;
        auto append = [&](const json::value& v) {  // onto `out` a buffer at a time: no string per event
            char buf[4096];
            sr.reset(&v);
            while (!sr.done()) out += sr.read(buf, sizeof buf);
        };
        while (!backlog_.empty() && out.size() < kBatchBytes) {
            HubEvent e = std::move(backlog_.front());
            backlog_.pop_front();
            bool plain = e.type == "ERROR" || e.type == "BOOKMARK" || !transform_;
            const bool first = first_;
            if (e.type != "ERROR" && e.type != "BOOKMARK") first_ = false;
            // {"type":...,"object":...} written around the object (shared with the change log
            // and every other watch), which is neither copied nor wrapped.
            out += R"({"type":)";
            out += json::serialize(json::string_view(e.type));
            out += R"(,"object":)";
            if (plain) append(*e.object);
            else append(transform_(*e.object, first));
            out += "}\n";
        }
        if (backlog_.empty() && watch_->closed() && watch_->pending() == 0) open = false;
        return out;
    }
    /// Events drained from the store that drain() has not returned yet.
    bool backlog() const { return !backlog_.empty(); }
    /// Whether drain() has something to do now: a backlog, events the store queued since the
    /// last drain, or the store's closing of the watch. The front end sleeps only when this
    /// is false; a wake-up flag alone is not enough: a notify that arrives while drain()
    /// still works through an older backlog is spent before the queue is looked at again.
    bool ready() const { return !backlog_.empty() || watch_->pending() > 0 || watch_->closed(); }
    void set_notify(std::function<void()> f) { watch_->set_notify(std::move(f)); }

    static constexpr std::size_t kBatchBytes = 64 * 1024;

private:
    std::shared_ptr<Watch> watch_;
    std::deque<HubEvent> backlog_;
    std::function<json::value(const json::value&, bool)> transform_;
    bool first_ = true;

public:
    std::optional<std::chrono::seconds> timeout;
};

/// pods/<name>/log?follow=true as the front end streams it (text, chunked): the log so far,
/// then each append, until the container's log is closed (it terminated, or its pod is gone
/// from the kubelet), the watched pod is deleted or says the container terminated, or
/// limitBytes is spent. Same contract as WatchPlan: drain(), ready(), set_notify().
class LogPlan {
public:
    LogPlan(std::unique_ptr<LogFollower> f, std::shared_ptr<Watch> pod_watch, std::string container)
        : follower_(std::move(f)), pod_watch_(std::move(pod_watch)), container_(std::move(container)) {}
    LogPlan(LogPlan&&) = default;
    LogPlan& operator=(LogPlan&&) = default;
    ~LogPlan() {
        if (pod_watch_) pod_watch_->stop();
    }

    /// The text appended since the last call; `open` turns false once the stream must end.
    /// The pod's events are looked at first, then the log read, so that what was written
    /// before the termination was seen still goes out.
    std::string drain(bool& open) {
        if (pod_watch_) {
            for (auto& e : pod_watch_->drain())
                if (e.type == "DELETED" || (e.object && terminated(*e.object))) over_ = true;
            if (pod_watch_->closed() && pod_watch_->pending() == 0) {
                pod_watch_->stop();  // dropped by the store: the log alone says when it ends
                pod_watch_.reset();
            }
        }
        std::string out = follower_->next();
        if (over_ || follower_->ended()) open = false;
        return out;
    }
    bool ready() const {
        return follower_->ready() || (pod_watch_ && (pod_watch_->pending() > 0 || pod_watch_->closed()));
    }
    void set_notify(std::function<void()> f) {
        if (pod_watch_) pod_watch_->set_notify(f);
        follower_->set_notify(std::move(f));
    }

    std::optional<std::chrono::seconds> timeout;  // none: a follow ends with the container

private:
    bool terminated(const json::value& pod) const {
        for (const char* list : {"initContainerStatuses", "containerStatuses"})
            if (const auto* cs = table_detail::at(pod, {"status", list}); cs && cs->is_array())
                for (const auto& c : cs->get_array())
                    if (api::string_at(c, {"name"}) == container_)
                        if (const auto* st = table_detail::at(c, {"state"}); st && st->is_object())
                            return st->as_object().contains("terminated");
        return false;
    }

    std::unique_ptr<LogFollower> follower_;
    std::shared_ptr<Watch> pod_watch_;
    std::string container_;
    bool over_ = false;
};

/// What the fault injector matches a request by.
struct RequestVerb {
    std::string verb;      // get, list, watch, create, update, patch, delete, deletecollection
    std::string resource;  // "pods", "pods/status"; "" for non-resource paths
};

class ApiHandler {
public:
    ApiHandler(ObjectStore& store, PodLogs& logs) : store_(store), logs_(logs) {}

    /// How many times the RBAC policy was rebuilt (tests see it is not once per request).
    std::size_t rbac_policy_builds() const { return policies_.builds(); }

    /// POST serviceaccounts/<name>/token: (namespace, account, TokenRequest body) -> the
    /// TokenRequest answered (service_account_tokens.hpp). Unset, the subresource is 404.
    using TokenRequests = std::function<json::value(const std::string&, const std::string&, const json::value&)>;
    void set_token_requests(TokenRequests f) { token_requests_ = std::move(f); }

    /// What GET /metrics answers (the Prometheus text); unset, /metrics is 404.
    void set_metrics(std::function<std::string()> f) { metrics_ = std::move(f); }

    /// The admission webhooks (set_caller() gives them their HTTPS client).
    AdmissionWebhooks& admission_webhooks() { return webhooks_; }

    /// Whether serving `req` calls an admission webhook: a write of an object or its status
    /// that some webhook configuration's rules select, by an identity (requests without one
    /// act as the server itself and are not admitted). The front end serves those off its
    /// own thread: a webhook may well call this server back while it decides.
    bool calls_webhooks(const ApiRequest& req) const {
        try {
            auto p = parse_api_path(req.path);
            if (!p || p->kind != ApiPath::Kind::Resource) return false;
            return admission_operation(req, *p).has_value();
        } catch (const std::exception&) {
            return false;
        }
    }

    /// The Kubernetes verb and resource of a request, as RBAC and faults name them.
    RequestVerb verb_of(const ApiRequest& req) const {
        auto p = parse_api_path(req.path);
        if (!p || p->kind != ApiPath::Kind::Resource) return {req.method == "GET" ? "get" : req.method, ""};
        return {verb_name(req, *p), p->resource_with_sub()};
    }

    /// What RBAC decides a request by, as the real server's request info resolver reads the
    /// URL: the verb of verb_of(); a namespace's own path is in that namespace; a list or
    /// watch with the field selector metadata.name=N names N; anything that is not a
    /// resource (discovery, health, /openapi, unknown paths) is a non-resource request with
    /// the lowercase method as its verb. The identity's groups are those authentication adds
    /// (authenticated_groups()).
    static AuthorizationAttributes authorization_attributes(const ApiRequest& req) {
        AuthorizationAttributes a;
        a.user = req.who.user;
        a.groups = authenticated_groups(req.who.user, req.who.groups);
        auto p = parse_api_path(req.path);
        if (!p || p->kind != ApiPath::Kind::Resource) {
            a.resource_request = false;
            a.path = req.path;
            for (char c : req.method) a.verb += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            return a;
        }
        a.verb = verb_name(req, *p);
        a.api_group = p->group;
        a.api_version = p->version;
        a.resource = p->resource;
        a.subresource = p->subresource;
        a.name = p->name;
        a.namespace_ = p->namespace_;
        if (p->resource == "namespaces" && p->group.empty() && p->version == "v1" && !p->namespace_scoped) a.namespace_ = p->name;
        if (a.name.empty() && (a.verb == "list" || a.verb == "watch")) {
            auto selector = req.param("fieldSelector");
            std::string_view rest(selector);
            while (!rest.empty()) {
                auto comma = rest.find(',');
                auto term = rest.substr(0, comma);
                rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
                for (std::string_view prefix : {"metadata.name==", "metadata.name="})
                    if (term.starts_with(prefix)) {
                        auto name = term.substr(prefix.size());
                        if (!name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
                            name.find('%') == std::string_view::npos)
                            a.name = std::string(name);
                        break;
                    }
            }
        }
        return a;
    }

    /// Serves one request. An authenticated identity outside system:masters is authorized
    /// first (rbac_authorizer.hpp) and refused with the real server's 403; a request without
    /// identity is not authorized here: the front end has already refused those the real
    /// server refuses (401) and lets only the public health and version paths through, and
    /// in-process callers (tests, the sandbox's own controllers) act as the server itself.
    std::variant<ApiReply, WatchPlan, LogPlan> handle(const ApiRequest& request) {
        // Impersonation first, as kube-apiserver's filter chain runs it: what follows sees the
        // impersonated user only.
        std::optional<ApiRequest> as;
        if (request.impersonates() && request.who.authenticated()) {
            auto who = impersonated(request);
            if (auto* refused = std::get_if<ApiReply>(&who)) return std::move(*refused);
            as = request;
            as->who = std::get<Identity>(std::move(who));
        }
        const ApiRequest& req = as ? *as : request;
        const auto& path = req.path;
        const auto attrs = authorization_attributes(req);
        const bool master = std::find(attrs.groups.begin(), attrs.groups.end(), "system:masters") != attrs.groups.end();
        if (req.who.authenticated() && !master) {
            if (auto d = authorize(*policies_.current(), attrs); !d.allowed)
                return status_reply(forbidden_status(attrs, d.reason));
            if (is_rbac_resource(attrs.api_group, attrs.resource) && attrs.subresource.empty() &&
                (attrs.verb == "create" || attrs.verb == "update" || attrs.verb == "patch"))
                if (auto refused = escalation_refusal(req, attrs)) return std::move(*refused);
        }
        if (auto review = serve_review(req, attrs)) return std::move(*review);
        if (auto health = health_reply(req)) return std::move(*health);
        if ((path == "/metrics" || path == "/metrics/") && metrics_) {
            auto r = text_reply(200, metrics_());
            r.content_type = "text/plain; version=0.0.4; charset=utf-8";
            return r;
        }
        if (path == "/version" || path == "/version/") return json_reply(200, version_info());
        auto resources = store_.resources();
        if (path == "/openapi/v3" || path == "/openapi/v3/") return json_reply(200, openapi_v3_index(resources));
        if (path.starts_with("/openapi/v3/")) {
            auto gv = parse_api_path(path.substr(std::string_view("/openapi/v3").size()));
            if (gv && gv->kind == ApiPath::Kind::ResourceList)
                if (auto doc = openapi_v3_document(resources, gv->group, gv->version,
                                                   custom_resource_schemas(resources, gv->group, gv->version)))
                    return json_reply(200, *doc);
            return not_found_path();
        }
        auto p = parse_api_path(path);
        if (!p) return not_found_path();
        switch (p->kind) {
        case ApiPath::Kind::CoreVersions: return json_reply(200, core_versions("127.0.0.1"));
        case ApiPath::Kind::GroupList: return json_reply(200, group_list(resources));
        case ApiPath::Kind::Group:
            if (auto g = group_document(resources, p->group)) return json_reply(200, *g);
            return not_found_path();
        case ApiPath::Kind::ResourceList:
            if (auto l = resource_list(resources, p->group, p->version)) return json_reply(200, *l);
            return not_found_path();
        case ApiPath::Kind::Resource: break;
        }
        const ResourceInfo* info = nullptr;
        for (const auto& r : resources)
            if (r.group == p->group && r.version == p->version && r.plural == p->resource) info = &r;
        if (!info) return not_found_path();
        try {
            return serve_resource(req, *p, *info);
        } catch (const StoreError& e) {
            return status_reply(e.status());
        } catch (const PatchError& e) {
            return error_reply(422, e.what(), "Invalid");
        } catch (const api::DecodeError& e) {
            return error_reply(400, std::string("the request body is not valid: ") + e.what(), "BadRequest");
        }
    }

private:
    /// A POST to one of the self reviews (rbac_reviews.hpp), answered for the requester;
    /// nothing for any other request. Other verbs on them are not allowed (405).
    std::optional<ApiReply> serve_review(const ApiRequest& req, const AuthorizationAttributes& a) const {
        if (!a.resource_request || a.api_version != "v1" || !a.subresource.empty()) return std::nullopt;
        const ReviewResource* review = nullptr;
        for (const auto& r : review_resources)
            if (r.group == a.api_group && r.plural == a.resource) review = &r;
        if (!review) return std::nullopt;
        if (req.method != "POST" || !a.name.empty() || !a.namespace_.empty()) return method_not_allowed();
        try {
            auto info = store_.find_resource(a.api_group, a.api_version, a.resource);
            auto body = info ? object_body(req, *info) : parse_body(req);
            if (review->plural == "selfsubjectreviews") return json_reply(201, self_subject_review(a, body));
            auto policy = policies_.current();
            if (review->plural == "selfsubjectaccessreviews") return json_reply(201, self_subject_access_review(*policy, a, body));
            return json_reply(201, self_subject_rules_review(*policy, a, body));
        } catch (const StoreError& e) {
            return status_reply(e.status());
        }
    }

    /// The refusal of a Role, ClusterRole or binding write that would grant more than the
    /// requester holds (rbac_escalation.hpp), judged on the object the write would store: the
    /// same request, dry run as the server itself. A write the dry run refuses goes on to be
    /// refused the same way. (kube-apiserver checks escalation before validation; here an
    /// invalid object is refused as invalid first.)
    std::optional<ApiReply> escalation_refusal(const ApiRequest& req, const AuthorizationAttributes& a) {
        ApiRequest dry = req;
        dry.who = {};
        dry.query["dryRun"] = "All";
        dry.accept = "application/json";
        auto out = handle(dry);
        const auto* reply = std::get_if<ApiReply>(&out);
        if (!reply || reply->status >= 300) return std::nullopt;
        if (auto st = refuse_escalation(*policies_.current(), a, json::parse(reply->body))) return status_reply(*st);
        return std::nullopt;
    }

    /// The schemas of the custom resources served in a group-version, from their CRDs.
    std::vector<CustomResourceSchema> custom_resource_schemas(const std::vector<ResourceInfo>& resources,
                                                              const std::string& group, const std::string& version) const {
        std::vector<CustomResourceSchema> out;
        auto served = [&](const std::string& kind) {
            for (const auto& r : resources)
                if (r.custom && r.group == group && r.version == version && r.kind == kind) return true;
            return false;
        };
        auto crds = store_.list(ResourceId{"apiextensions.k8s.io", "v1", "customresourcedefinitions"}, "");
        for (const auto& crd : crds.at("items").as_array()) {
            if (api::string_at(crd, {"spec", "group"}) != group) continue;
            std::string kind(api::string_at(crd, {"spec", "names", "kind"}));
            std::string list_kind(api::string_at(crd, {"spec", "names", "listKind"}));
            if (list_kind.empty()) list_kind = kind + "List";
            if (!served(kind)) continue;
            const auto* versions = table_detail::at(crd, {"spec", "versions"});
            if (!versions || !versions->is_array()) continue;
            for (const auto& v : versions->get_array())
                if (api::string_at(v, {"name"}) == version)
                    if (const auto* s = table_detail::at(v, {"schema", "openAPIV3Schema"}); s && s->is_object())
                        out.push_back(CustomResourceSchema{group, version, kind, list_kind, *s});
        }
        return out;
    }

    static std::string verb_name(const ApiRequest& req, const ApiPath& p) {
        const auto& m = req.method;
        if (m == "GET" || m == "HEAD") {
            if (p.watch_prefix || is_true(req.param("watch"))) return "watch";
            return p.name.empty() ? "list" : "get";
        }
        if (m == "POST") return "create";
        if (m == "PUT") return "update";
        if (m == "PATCH") return "patch";
        if (m == "DELETE") return p.name.empty() ? "deletecollection" : "delete";
        return m;
    }
    /// Go's strconv.ParseBool truths: the Python client sends "True".
    static bool is_true(const std::string& v) {
        return v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True";
    }

    static ApiReply text_reply(int code, std::string text) {
        ApiReply r;
        r.status = code;
        r.body = std::move(text);
        r.content_type = "text/plain; charset=utf-8";
        return r;
    }
    /// The identity `req` asks to act as (Impersonate-User, -Group, -Uid), or the refusal:
    /// the caller needs `impersonate` on users (or serviceaccounts, for a service account's
    /// name), on each group and on uids (authentication.k8s.io), as kube-apiserver's
    /// impersonation filter checks it, with its 403 wording. The impersonated user gets the
    /// groups asked, a service account's two groups, and system:authenticated.
    std::variant<Identity, ApiReply> impersonated(const ApiRequest& req) {
        if (req.impersonate_user.empty())
            return error_reply(400, "requested impersonation of groups or uid without impersonating a user");
        const bool master =
            std::find(req.who.groups.begin(), req.who.groups.end(), "system:masters") != req.who.groups.end();
        auto check = [&](std::string group, std::string resource, std::string ns, std::string name) -> std::optional<ApiReply> {
            AuthorizationAttributes a;
            a.user = req.who.user;
            a.groups = req.who.groups;
            a.verb = "impersonate";
            a.api_group = std::move(group);
            a.resource = std::move(resource);
            a.namespace_ = std::move(ns);
            a.name = std::move(name);
            if (master) return std::nullopt;
            if (auto d = authorize(*policies_.current(), a); !d.allowed) return status_reply(forbidden_status(a, d.reason));
            return std::nullopt;
        };
        Identity out;
        out.user = req.impersonate_user;
        static constexpr std::string_view sa_prefix = "system:serviceaccount:";
        std::optional<ApiReply> refused;
        if (out.user.starts_with(sa_prefix) && out.user.find(':', sa_prefix.size()) != std::string::npos) {
            auto rest = out.user.substr(sa_prefix.size());
            auto colon = rest.find(':');
            auto ns = rest.substr(0, colon);
            refused = check("", "serviceaccounts", ns, rest.substr(colon + 1));
            out.groups = {"system:serviceaccounts", "system:serviceaccounts:" + ns};
        } else {
            refused = check("", "users", "", out.user);
        }
        if (refused) return std::move(*refused);
        for (const auto& g : req.impersonate_groups) {
            if (auto r = check("", "groups", "", g)) return std::move(*r);
            if (std::find(out.groups.begin(), out.groups.end(), g) == out.groups.end()) out.groups.push_back(g);
        }
        if (!req.impersonate_uid.empty())
            if (auto r = check("authentication.k8s.io", "uids", "", req.impersonate_uid)) return std::move(*r);
        const std::string everyone = out.user == "system:anonymous" ? "system:unauthenticated" : "system:authenticated";
        if (std::find(out.groups.begin(), out.groups.end(), everyone) == out.groups.end()) out.groups.push_back(everyone);
        return out;
    }

    /// /healthz, /livez, /readyz as kube-apiserver answers them: "ok", or with ?verbose each
    /// check on a line ("[+]etcd ok") and "<endpoint> check passed"; /readyz/<check> is "ok"
    /// for a check it has and 404 otherwise. nullopt for any other path.
    static std::optional<ApiReply> health_reply(const ApiRequest& req) {
        static const std::vector<std::string> common{"ping", "log", "etcd"};
        static const std::vector<std::string> readyz_only{"etcd-readiness", "informer-sync",
                                                          "poststarthook/start-apiserver-admission-initializer",
                                                          "poststarthook/generic-apiserver-start-informers",
                                                          "poststarthook/crd-informer-synced",
                                                          "poststarthook/rbac/bootstrap-roles", "shutdown"};
        for (std::string endpoint : {"healthz", "livez", "readyz"}) {
            const std::string base = "/" + endpoint;
            if (req.path != base && req.path != base + "/" && !req.path.starts_with(base + "/")) continue;
            std::vector<std::string> checks = common;
            if (endpoint == "readyz") checks.insert(checks.end(), readyz_only.begin(), readyz_only.end());
            auto one = req.path.size() > base.size() + 1 ? req.path.substr(base.size() + 1) : std::string();
            if (!one.empty()) {
                if (std::find(checks.begin(), checks.end(), one) == checks.end()) return not_found_path();
                return text_reply(200, "ok");
            }
            if (!req.has("verbose")) return text_reply(200, "ok");
            std::string out;
            for (const auto& c : checks) out += "[+]" + c + " ok\n";
            return text_reply(200, out + endpoint + " check passed\n");
        }
        return std::nullopt;
    }

    static ApiReply not_found_path() {
        auto st = failure_status(404, "the server could not find the requested resource", "NotFound");
        st.details = api::StatusDetails{};
        return status_reply(st);
    }
    static json::object version_info() {
        return {{"major", "1"},          {"minor", "32"},           {"gitVersion", "v1.32.0-vck-sandbox"},
                {"gitCommit", "vck"},    {"gitTreeState", "clean"}, {"buildDate", "2025-01-01T00:00:00Z"},
                {"goVersion", "go1.23"}, {"compiler", "gc"},        {"platform", "linux/amd64"}};
    }

    /// The reply for an object (or list), as a Table or as its metadata when the client asked
    /// for one (serve_resource has refused an Accept that allows neither with 406).
    ApiReply object_reply(int code, const ApiRequest& req, const ResourceInfo& info, json::value v, bool is_list) {
        auto wanted = negotiate(req.accept, is_list).value_or(Representation::Object);
        if (wanted == Representation::Object || (v.is_object() && string_at(v, "kind") == "Status"))
            return json_reply(code, v);
        if (wanted == Representation::Metadata)
            return json_reply(code, is_list ? as_partial_metadata_list(v) : as_partial_metadata(v));
        auto include = parse_include_object(req.param("includeObject"));
        if (!include) return error_reply(400, "includeObject must be one of None, Metadata, Object");
        json::array items;
        json::object md;
        if (is_list) {
            if (auto* a = v.as_object().if_contains("items"); a && a->is_array()) items = a->get_array();
            if (auto* m = v.as_object().if_contains("metadata"); m && m->is_object()) md = m->get_object();
        } else {
            items.push_back(v);
            md["resourceVersion"] = json::string(api::string_at(v, {"metadata", "resourceVersion"}));
        }
        // A row's object is a whole object, typed as kube-apiserver encodes it, though a list's
        // items are stored without kind and apiVersion (kubectl's --sort-by reads them).
        if (*include == IncludeObject::Object) {
            std::string api_version = info.group.empty() ? info.version : info.group + "/" + info.version;
            for (auto& it : items) {
                if (!it.is_object()) continue;
                auto& o = it.as_object();
                if (!o.contains("kind")) o["kind"] = info.kind;
                if (!o.contains("apiVersion")) o["apiVersion"] = api_version;
            }
        }
        return json_reply(code, make_table(table_columns(info), items, *include, md));
    }
    static std::string_view string_at(const json::value& v, std::string_view key) {
        return api::string_at(v, {key});
    }

    static bool dry_run(const ApiRequest& req) {
        auto d = req.param("dryRun");
        if (d.empty()) return false;
        if (d != "All") throw StoreError(failure_status(400, "unsupported dry run value \"" + d + "\": only All is supported"));
        return true;
    }

    static json::value parse_body(const ApiRequest& req) {
        if (req.body.empty()) throw StoreError(failure_status(400, "the request body is empty", "BadRequest"));
        try {
            return api::parse(req.body);
        } catch (const api::DecodeError& e) {
            throw StoreError(failure_status(400, std::string("the request body is not JSON: ") + e.what()));
        }
    }

    /// The object of a create or update: JSON, or protobuf (serve_resource has refused a
    /// protobuf body for a resource protobuf_body.hpp does not decode).
    static json::value object_body(const ApiRequest& req, const ResourceInfo& info) {
        return object_body(req, info.api_version(), info.kind);
    }
    static json::value object_body(const ApiRequest& req, const std::string& api_version, const std::string& kind) {
        if (!is_protobuf_media_type(req.content_type)) return parse_body(req);
        if (req.body.empty()) throw StoreError(failure_status(400, "the request body is empty", "BadRequest"));
        try {
            return decode_protobuf_body(req.body, api_version, kind);
        } catch (const ProtobufBodyError& e) {
            if (e.kind == ProtobufBodyError::Kind::Unsupported) throw StoreError(failure_status(415, e.what(), "UnsupportedMediaType"));
            throw StoreError(failure_status(400, std::string("the protobuf request body is not valid: ") + e.what(), "BadRequest"));
        }
    }

    std::variant<ApiReply, WatchPlan, LogPlan> serve_resource(const ApiRequest& req, const ApiPath& p, const ResourceInfo& info) {
        if (p.namespace_scoped && !info.namespaced) return not_found_path();
        if (!p.subresource.empty() && !info.has_subresource(p.subresource)) return not_found_path();
        if (info.namespaced && !p.name.empty() && p.namespace_.empty()) return not_found_path();
        auto verb = verb_name(req, p);
        const std::string& ns = p.namespace_;
        // Negotiated before anything is done, as the real server does (pods/log included: it
        // answers text only to an Accept that allows JSON, */* or application/*).
        if (!negotiate(req.accept, verb == "list" || verb == "deletecollection"))
            return error_reply(406, std::string(not_acceptable_message), "NotAcceptable");

        ResourceId id{info.group, info.version, info.plural};
        const bool write = req.method == "POST" || req.method == "PUT";
        const bool protobuf = write && is_protobuf_media_type(req.content_type);
        if (write && !protobuf && !req.content_type.empty() && req.content_type != "application/json" &&
            !req.content_type.ends_with("+json"))
            return error_reply(415, "the body of the request was in an unknown format - accepted media types "
                                    "include: application/json, application/vnd.kubernetes.protobuf",
                               "UnsupportedMediaType");
        // Protobuf for the objects of the kinds decoded (the real server has no protobuf for
        // custom resources either); a subresource's body (binding, status) goes as JSON.
        const bool token_request = info.group.empty() && info.plural == "serviceaccounts" && p.subresource == "token";
        if (protobuf && !token_request && (!p.subresource.empty() || !decodes_protobuf(info.api_version(), info.kind)))
            return error_reply(415, "the body of the request was in an unknown format - the vck sandbox decodes "
                                    "application/vnd.kubernetes.protobuf bodies of " + protobuf_kinds_accepted() +
                                    " only; send " + info.api_version() + " " + info.kind +
                                    (p.subresource.empty() ? std::string() : "/" + p.subresource) + " as application/json",
                               "UnsupportedMediaType");
        const bool dry = dry_run(req);
        const DryRun dry_mode = dry ? DryRun::All : DryRun::No;

        if (verb == "watch") return start_watch(req, p, info);
        if (verb == "list") return object_reply(200, req, info, store_.list(id, ns, validated(list_options(req))), true);
        if (verb == "get") {
            if (p.subresource == "log") {
                auto out = pod_log(req, p, id);
                if (auto* l = std::get_if<LogPlan>(&out)) return std::move(*l);
                return std::move(std::get<ApiReply>(out));
            }
            if (p.subresource == "scale") return json_reply(200, scale_of(store_.get(id, ns, p.name)));
            return object_reply(200, req, info, store_.get(id, ns, p.name), false);
        }
        if (verb == "create") {
            auto w = write_options(req, "CreateOptions", dry_mode, false);
            if (token_request) {
                if (!token_requests_) return not_found_path();
                return json_reply(201, token_requests_(ns, p.name, object_body(req, "authentication.k8s.io/v1", "TokenRequest")));
            }
            auto obj = object_body(req, info);
            if (p.subresource == "binding") {
                if (dry) return status_reply(success(201));
                return json_reply(201, store_.bind(ns, p.name, obj));
            }
            if (!p.name.empty()) return method_not_allowed();
            return with_warnings(w, [&] {
                return object_reply(201, req, info, admitted(req, p, info, w, [&](const WriteOptions& wo) {
                    return store_.create(id, ns, obj, wo);
                }), false);
            });
        }
        if (p.name.empty() && verb != "deletecollection") return method_not_allowed();
        if (verb == "update") {
            auto w = write_options(req, "UpdateOptions", dry_mode, false);
            auto obj = object_body(req, info);
            return with_warnings(w, [&] {
                return object_reply(200, req, info, admitted(req, p, info, w, [&](const WriteOptions& wo) {
                    return store_.update(id, ns, p.name, obj, p.subresource, wo);
                }), false);
            });
        }
        if (verb == "patch") {
            auto w = write_options(req, "PatchOptions", dry_mode,
                                   req.content_type == "application/json-patch+json");
            return with_warnings(w, [&] {
                return object_reply(200, req, info, admitted(req, p, info, w, [&](const WriteOptions& wo) {
                    return patch(req, p, id, wo);
                }), false);
            });
        }
        if (verb == "delete") {
            auto opts = delete_options(req);
            opts.dry_run = dry;
            std::vector<std::string> warnings;
            DeleteResult out;
            try {
                out = admitted_delete(req, p, info, opts, warnings);
            } catch (const StoreError& e) {
                auto reply = status_reply(e.status());
                for (const auto& text : warnings) reply.headers.emplace_back("Warning", warning_header_value(text));
                return reply;
            }
            // kube-apiserver answers 202 for a pending deletion only when orphanDependents is
            // false (handlers/delete.go keeps 200 otherwise, for existing clients).
            bool accepted = !out.finished && opts.orphan_dependents_false;
            auto reply = object_reply(accepted ? 202 : 200, req, info, std::move(out.object), false);
            for (const auto& text : warnings) reply.headers.emplace_back("Warning", warning_header_value(text));
            return reply;
        }
        if (verb == "deletecollection") {
            auto opts = delete_options(req);
            opts.dry_run = dry;
            return object_reply(200, req, info, store_.delete_collection(id, ns, validated(list_options(req)), opts), true);
        }
        return method_not_allowed();
    }

    /// The admission operation of a request a webhook selects (CREATE, UPDATE, DELETE), if
    /// any: writes of an object or its status by an identity. Binding, scale, token and
    /// eviction subresources and deletecollection are not admitted here.
    std::optional<std::string> admission_operation(const ApiRequest& req, const ApiPath& p) const {
        if (!req.who.authenticated()) return std::nullopt;
        if (!p.subresource.empty() && p.subresource != "status") return std::nullopt;
        std::string op;
        if (req.method == "POST" && p.name.empty() && p.subresource.empty()) op = "CREATE";
        else if ((req.method == "PUT" || req.method == "PATCH") && !p.name.empty()) op = "UPDATE";
        else if (req.method == "DELETE" && !p.name.empty() && p.subresource.empty()) op = "DELETE";
        else return std::nullopt;
        std::string ns = p.namespace_;
        if (p.group.empty() && p.resource == "namespaces" && !p.namespace_scoped) ns = p.name;
        if (!webhooks_.any_selects(op, p.group, p.version, p.resource, p.subresource, ns)) return std::nullopt;
        return op;
    }

    /// What the webhooks are told of a request, but its objects.
    static AdmissionAttributes admission_attributes(const ApiRequest& req, const ApiPath& p, const ResourceInfo& info,
                                                    const std::string& op) {
        AdmissionAttributes a;
        a.operation = op;
        a.group = info.group;
        a.version = info.version;
        a.resource = info.plural;
        a.subresource = p.subresource;
        a.kind = info.kind;
        a.namespaced = info.namespaced;
        a.namespace_ = p.namespace_;
        a.name = p.name;
        if (info.group.empty() && info.plural == "namespaces") a.namespace_ = p.name;
        a.user = req.who.user;
        a.groups = authenticated_groups(req.who.user, req.who.groups);
        a.dry_run = req.param("dryRun") == "All";
        const char* kind = op == "CREATE" ? "CreateOptions" : op == "DELETE" ? "DeleteOptions"
                           : req.method == "PATCH"              ? "PatchOptions"
                                                                : "UpdateOptions";
        json::object o{{"kind", kind}, {"apiVersion", "meta.k8s.io/v1"}};
        if (a.dry_run) o["dryRun"] = json::array{"All"};
        if (auto fm = req.param("fieldManager"); !fm.empty() && op != "DELETE") o["fieldManager"] = fm;
        if (op == "DELETE" && !req.param("propagationPolicy").empty()) o["propagationPolicy"] = req.param("propagationPolicy");
        a.options = std::move(o);
        return a;
    }

    /// Thrown by the admission hooks (under the store's lock) to have admitted() run
    /// webhooks outside it and write again.
    struct AdmissionNeeded {
        bool validation = false;  // else mutation
        json::value object, old;
    };
    static bool same_version(const json::value& a, const json::value& b) {
        if (a.is_null() || b.is_null()) return a.is_null() && b.is_null();
        return api::string_at(a, {"metadata", "resourceVersion"}) == api::string_at(b, {"metadata", "resourceVersion"});
    }

    /// A create, update or patch through admission, as GuaranteedUpdate runs it: the write
    /// stops (without writing) where a webhook must be heard, the webhooks are called with the
    /// lock released, and the write runs again with their answers, which hold for as long as
    /// the existing object is the one they saw; when it changed in between (the client gave
    /// no resourceVersion, or its precondition would have refused the write) they are asked
    /// again. Writes no webhook selects go straight through.
    template <class Write>
    json::value admitted(const ApiRequest& req, const ApiPath& p, const ResourceInfo& info, WriteOptions& w, Write&& write) {
        auto op = admission_operation(req, p);
        if (!op) return write(w);
        const auto base = admission_attributes(req, p, info, *op);
        std::vector<std::string> scratch;
        auto& warnings = w.warnings ? *w.warnings : scratch;
        struct Decided {
            bool mutated = false, validated = false;
            json::value input, old, result, validated_old;
            std::string generated_name;
        } d;
        AdmissionHooks hooks;
        hooks.mutate = [&](json::value& obj, const json::value* old) {
            json::value o = old ? *old : json::value();
            if (d.mutated && json_equal(obj, d.input) && same_version(o, d.old)) {
                obj = d.result;
                // The name a validating webhook saw is the one created.
                if (!d.generated_name.empty() && obj.is_object())
                    if (auto* md = obj.get_object().if_contains("metadata"); md && md->is_object())
                        md->get_object()["name"] = d.generated_name;
                return;
            }
            throw AdmissionNeeded{false, obj, std::move(o)};
        };
        hooks.validate = [&](const json::value& obj, const json::value* old) {
            json::value o = old ? *old : json::value();
            if (d.validated && same_version(o, d.validated_old)) return;
            throw AdmissionNeeded{true, obj, std::move(o)};
        };
        WriteOptions wo = w;
        wo.admission = &hooks;
        for (int attempt = 0; attempt < 16; ++attempt) {
            try {
                return write(wo);
            } catch (AdmissionNeeded& n) {
                AdmissionAttributes a = base;
                a.object = n.object;
                a.old_object = n.old;
                if (*op == "CREATE") {
                    a.name = std::string(api::string_at(n.object, {"metadata", "name"}));
                    if (info.group.empty() && info.plural == "namespaces") a.namespace_ = a.name;
                }
                if (!n.validation) {
                    webhooks_.mutate(a, warnings);
                    d = Decided{};
                    d.mutated = true;
                    d.input = std::move(n.object);
                    d.old = std::move(n.old);
                    d.result = std::move(a.object);
                } else {
                    webhooks_.validate(a, warnings);
                    d.validated = true;
                    d.validated_old = std::move(n.old);
                    if (*op == "CREATE" && api::string_at(d.result, {"metadata", "name"}).empty())
                        d.generated_name = std::string(api::string_at(n.object, {"metadata", "name"}));
                }
            }
        }
        throw StoreError(store_status::modified_conflict(info.group, info.plural, p.name));
    }

    /// A delete through admission: the webhooks hear of the object as it is (oldObject), and
    /// it is deleted only if it is still that one (else they are asked again, unless the
    /// client's own precondition refuses it).
    DeleteResult admitted_delete(const ApiRequest& req, const ApiPath& p, const ResourceInfo& info,
                                 const StoreDeleteOptions& opts, std::vector<std::string>& warnings) {
        ResourceId id{info.group, info.version, info.plural};
        auto op = admission_operation(req, p);
        if (!op) return store_.remove(id, p.namespace_, p.name, opts);
        const auto base = admission_attributes(req, p, info, *op);
        for (int attempt = 0; attempt < 16; ++attempt) {
            auto old = store_.get(id, p.namespace_, p.name);
            AdmissionAttributes a = base;
            a.old_object = old;
            webhooks_.mutate(a, warnings);
            a.object = nullptr;
            webhooks_.validate(a, warnings);
            StoreDeleteOptions o = opts;
            if (!o.precondition_resource_version)
                o.precondition_resource_version = std::string(api::string_at(old, {"metadata", "resourceVersion"}));
            try {
                return store_.remove(id, p.namespace_, p.name, o);
            } catch (const StoreError& e) {
                if (e.status().code != 409 || opts.precondition_resource_version) throw;
            }
        }
        throw StoreError(store_status::modified_conflict(info.group, info.plural, p.name));
    }

    /// fieldValidation and the strict decoding errors of the request's text (duplicate fields;
    /// for a JSON patch also unknown members of its operations, which the apiserver prefixes
    /// with "json patch "). An unsupported value is the 422 of Create/Update/PatchOptions'
    /// validation, which comes before the body is read. `warnings` is set by with_warnings.
    static WriteOptions write_options(const ApiRequest& req, std::string_view options_kind, DryRun dry, bool json_patch) {
        auto v = req.param("fieldValidation");
        auto mode = parse_field_validation(v);
        if (!mode) throw StoreError(invalid_field_validation(options_kind, v));
        WriteOptions w;
        w.dry = dry;
        w.validation = *mode;
        // A protobuf body has no duplicate keys to find (its decoder keeps the last of a
        // repeated field, as Go's does).
        if (*mode != FieldValidation::Ignore && !is_protobuf_media_type(req.content_type)) {
            w.body_errors = duplicate_fields(req.body, json_patch);
            if (json_patch)
                for (auto& e : w.body_errors) e = "json patch " + e;
        }
        return w;
    }

    /// Runs a write with warnings collected, and answers them as Warning headers (one per
    /// warning, on a refusal too: the apiserver writes what it recorded before failing).
    template <class F>
    ApiReply with_warnings(WriteOptions& w, F&& write) {
        std::vector<std::string> warnings;
        w.warnings = &warnings;
        ApiReply reply;
        try {
            reply = write();
        } catch (const StoreError& e) {
            reply = status_reply(e.status());
        }
        for (const auto& text : warnings) reply.headers.emplace_back("Warning", warning_header_value(text));
        return reply;
    }

    static ApiReply method_not_allowed() {
        return error_reply(405, "the server does not allow this method on the requested resource", "MethodNotAllowed");
    }
    static api::Status success(int code) {
        api::Status ok;
        ok.status = "Success";
        ok.code = code;
        return ok;
    }

    /// An integer query parameter, read whole as Go's strconv.ParseInt reads it ("5x" is no
    /// integer); absent is nothing, anything else a 400.
    static std::optional<std::int64_t> int_param(const ApiRequest& req, const std::string& key) {
        auto v = req.param(key);
        if (v.empty()) return std::nullopt;
        std::int64_t n = 0;
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (ec != std::errc() || end != v.data() + v.size())
            throw StoreError(failure_status(400, key + " must be an integer, got \"" + v + "\""));
        return n;
    }

    static StoreListOptions list_options(const ApiRequest& req) {
        StoreListOptions o;
        o.label_selector = req.param("labelSelector");
        o.field_selector = req.param("fieldSelector");
        if (auto l = int_param(req, "limit")) {
            if (*l < 0) throw StoreError(failure_status(400, "limit must be an integer, got \"" + req.param("limit") + "\""));
            o.limit = *l;
        }
        o.continue_token = req.param("continue");
        o.resource_version = req.param("resourceVersion");
        o.resource_version_match = req.param("resourceVersionMatch");
        return o;
    }

    /// A list's (or deletecollection's) options as kube-apiserver checks them before it reads:
    /// ValidateListOptions (422 on StoreListOptions.meta.k8s.io), then the storage's refusal of a
    /// resourceVersion beside a continue token (400; the token carries the list's snapshot).
    /// Watches have rules of their own.
    static StoreListOptions validated(StoreListOptions o) {
        std::vector<FieldError> invalid;
        if (const auto& match = o.resource_version_match; !match.empty()) {
            if (o.resource_version.empty())
                invalid.push_back(field::forbidden("resourceVersionMatch",
                                                   "resourceVersionMatch is forbidden unless resourceVersion is provided"));
            if (!o.continue_token.empty())
                invalid.push_back(field::forbidden("resourceVersionMatch",
                                                   "resourceVersionMatch is forbidden when continue is provided"));
            if (match != "Exact" && match != "NotOlderThan")
                invalid.push_back(field::not_supported("resourceVersionMatch", json::value(match), {"Exact", "NotOlderThan", ""}));
            if (match == "Exact" && o.resource_version == "0")
                invalid.push_back(field::forbidden("resourceVersionMatch",
                                                   "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
        }
        if (!invalid.empty()) throw StoreError(store_status::invalid("ListOptions", "meta.k8s.io", "", std::move(invalid)));
        if (!o.continue_token.empty() && !o.resource_version.empty() && o.resource_version != "0")
            throw StoreError(failure_status(400, "specifying resource version is not allowed when using continue"));
        return o;
    }

    /// StoreDeleteOptions from the body (kubectl sends one) and the query (query wins, as in Go).
    static StoreDeleteOptions delete_options(const ApiRequest& req) {
        StoreDeleteOptions o;
        if (!req.body.empty()) o = StoreDeleteOptions::from_json(parse_body(req));
        if (auto q = req.param("orphanDependents"); !q.empty()) {
            // As Go's strconv.ParseBool reads it (the Python client sends "False").
            bool no = q == "false" || q == "False" || q == "FALSE" || q == "f" || q == "F" || q == "0";
            bool yes = q == "true" || q == "True" || q == "TRUE" || q == "t" || q == "T" || q == "1";
            if (!no && !yes)
                throw StoreError(failure_status(400, "orphanDependents must be true or false, got \"" + std::string(q) + "\""));
            o.orphan_dependents_false = no;
            if (o.propagation_policy.empty()) o.propagation_policy = no ? "Background" : "Orphan";
        }
        if (auto q = req.param("propagationPolicy"); !q.empty()) o.propagation_policy = q;
        if (auto g = int_param(req, "gracePeriodSeconds")) o.grace_period_seconds = *g;
        const auto& pp = o.propagation_policy;
        if (!pp.empty() && pp != "Orphan" && pp != "Background" && pp != "Foreground")
            throw StoreError(failure_status(400, "propagationPolicy must be one of Orphan, Background, Foreground; got \"" + pp + "\""));
        return o;
    }

    json::value patch(const ApiRequest& req, const ApiPath& p, const ResourceId& id, const WriteOptions& w) {
        const auto& ct = req.content_type;
        if (ct == "application/apply-patch+yaml" || ct == "application/apply-patch+cbor")
            throw StoreError(failure_status(415,
                "server-side apply (" + ct + ") is not supported by the vck sandbox; use client-side apply "
                "(kubectl apply --server-side=false) or a merge, JSON or strategic merge patch", "UnsupportedMediaType"));
        auto type = client::patch_type_from_content_type(ct);
        if (!type)
            throw StoreError(failure_status(415,
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, "
                "application/strategic-merge-patch+json", "UnsupportedMediaType"));
        auto body = parse_body(req);
        return store_.patch(id, p.namespace_, p.name, *type, body, p.subresource, w);
    }

    /// pods/log, with the registry's container rules (validateContainer: init containers are
    /// named first), PodLogOptions' validation, and the kubelet's choice of instance: previous
    /// asks for the one before the last restart. follow=true on a container that has not
    /// terminated streams (a LogPlan) until it terminates; otherwise the log so far, at once.
    std::variant<ApiReply, LogPlan> pod_log(const ApiRequest& req, const ApiPath& p, const ResourceId& id) {
        auto pod = store_.get(id, p.namespace_, p.name);
        std::string container = req.param("container");
        std::vector<std::string> names;  // in VisitContainers' order: init containers, then containers
        std::vector<std::string> regular;
        for (const char* list : {"initContainers", "containers"})
            if (const auto* cs = table_detail::at(pod, {"spec", list}); cs && cs->is_array())
                for (const auto& c : cs->get_array()) {
                    names.emplace_back(api::string_at(c, {"name"}));
                    if (std::string_view(list) == "containers") regular.push_back(names.back());
                }
        if (container.empty()) {
            if (regular.size() != 1) {
                std::string list;
                for (const auto& n : names) list += (list.empty() ? "" : " ") + n;
                return error_reply(400, "a container name must be specified for pod " + p.name +
                                            (regular.empty() ? std::string() : ", choose one of: [" + list + "]"));
            }
            container = regular.front();
        } else if (std::find(names.begin(), names.end(), container) == names.end()) {
            return error_reply(400, "container " + container + " is not valid for pod " + p.name);
        }
        // sinceTime is a metav1.Time: a value that is not RFC 3339 fails the decoding of the
        // query, a 400 before validation.
        std::optional<std::chrono::system_clock::time_point> since_time;
        if (auto st = req.param("sinceTime"); !st.empty()) {
            since_time = api::parse_rfc3339(st);
            if (!since_time)
                return error_reply(400, "parsing time \"" + st + "\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"" +
                                            st + "\" as RFC 3339");
        }
        std::vector<FieldError> invalid;
        auto num = [&](const char* key, std::int64_t min, const char* why) {
            auto n = int_param(req, key);
            if (n && *n < min) invalid.push_back(field::invalid(key, json::value(*n), why));
            return n;
        };
        LogReadOptions o;
        o.tail_lines = num("tailLines", 0, "must be greater than or equal to 0");
        o.limit_bytes = num("limitBytes", 1, "must be greater than 0");
        auto since_seconds = int_param(req, "sinceSeconds");
        if (since_seconds && since_time)
            invalid.push_back(field::forbidden("", "at most one of `sinceTime` or `sinceSeconds` may be specified"));
        else if (since_seconds && *since_seconds < 1)
            invalid.push_back(field::invalid("sinceSeconds", json::value(*since_seconds), "must be greater than 0"));
        if (!invalid.empty()) throw StoreError(store_status::invalid("PodLogOptions", "", p.name, std::move(invalid)));
        if (since_seconds) {
            // Further back than the epoch (the largest values) means the whole log, not an overflow.
            auto now = std::chrono::system_clock::now();
            auto back = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
            if (*since_seconds < back) o.since = now - std::chrono::seconds(*since_seconds);
        } else {
            o.since = since_time;
        }
        o.timestamps = is_true(req.param("timestamps"));
        o.previous = is_true(req.param("previous"));
        const bool follow = is_true(req.param("follow"));

        // The container's state in the pod, as the kubelet reads it.
        const json::value* state = nullptr;
        for (const char* list : {"initContainerStatuses", "containerStatuses"})
            if (const auto* cs = table_detail::at(pod, {"status", list}); cs && cs->is_array())
                for (const auto& c : cs->get_array())
                    if (api::string_at(c, {"name"}) == container) state = table_detail::at(c, {"state"});
        auto state_of = [](const json::value* st, const char* which) {
            return st && st->is_object() && st->as_object().contains(which);
        };
        if (o.previous) {
            auto text = logs_.read(p.namespace_, p.name, container, o);
            if (!text)
                return error_reply(400, "previous terminated container \"" + container + "\" in pod \"" + p.name + "\" not found");
            return text_reply(200, std::move(*text));
        }
        if (!logs_.open(p.namespace_, p.name, container)) {
            // Nothing logged yet: a container that has not started says why, as the kubelet does.
            std::string waiting;
            if (state_of(state, "waiting")) waiting = api::string_at(*state, {"waiting", "reason"});
            if (waiting.empty() && api::string_at(pod, {"spec", "nodeName"}).empty()) waiting = "ContainerCreating";
            if (!waiting.empty())
                return error_reply(400, "container \"" + container + "\" in pod \"" + p.name + "\" is waiting to start: " + waiting);
        }
        if (!follow || state_of(state, "terminated"))  // terminated: the whole log and the end, at once
            return text_reply(200, logs_.read(p.namespace_, p.name, container, o).value_or(""));
        // The pod is watched from the version read, so that its deletion or the container's
        // termination ends the stream even when no kubelet closes the log.
        StoreWatchOptions wo;
        wo.field_selector = "metadata.name=" + p.name;
        wo.resource_version = api::string_at(pod, {"metadata", "resourceVersion"});
        auto w = store_.watch(id, p.namespace_, wo);
        return LogPlan(logs_.follow(p.namespace_, p.name, container, o), std::move(w), container);
    }

    std::variant<ApiReply, WatchPlan, LogPlan> start_watch(const ApiRequest& req, const ApiPath& p, const ResourceInfo& info) {
        StoreWatchOptions o;
        auto lo = list_options(req);
        o.label_selector = lo.label_selector;
        o.field_selector = lo.field_selector;
        if (!p.name.empty()) {
            // A watch on one object is a watch on its collection filtered by name.
            o.field_selector = o.field_selector.empty() ? "metadata.name=" + p.name
                                                        : o.field_selector + ",metadata.name=" + p.name;
        }
        o.resource_version = lo.resource_version;
        o.allow_bookmarks = is_true(req.param("allowWatchBookmarks"));
        if (is_true(req.param("sendInitialEvents")))
            return error_reply(400, "sendInitialEvents (watch-list) is not supported by the vck sandbox");
        std::optional<std::chrono::seconds> timeout;
        if (auto t = int_param(req, "timeoutSeconds")) timeout = std::chrono::seconds(*t);
        auto w = store_.watch(ResourceId{info.group, info.version, info.plural}, p.namespace_, o);
        std::function<json::value(const json::value&, bool)> transform;
        auto wanted = negotiate(req.accept, false).value_or(Representation::Object);
        if (wanted == Representation::Metadata)
            transform = [](const json::value& obj, bool) { return as_partial_metadata(obj); };
        if (wanted == Representation::Table) {
            auto include = parse_include_object(req.param("includeObject"));
            if (!include) return error_reply(400, "includeObject must be one of None, Metadata, Object");
            auto cols = std::make_shared<std::vector<TableColumn>>(table_columns(info));
            transform = [cols, inc = *include](const json::value& obj, bool first) -> json::value {
                json::array items{obj};
                json::object md{{"resourceVersion", json::string(api::string_at(obj, {"metadata", "resourceVersion"}))}};
                return make_table(*cols, items, inc, md, first);
            };
        }
        return WatchPlan(std::move(w), timeout, std::move(transform));
    }

    ObjectStore& store_;
    PodLogs& logs_;
    RbacPolicyCache policies_{store_};
    TokenRequests token_requests_;
    std::function<std::string()> metrics_;
    AdmissionWebhooks webhooks_{store_};
};

} // namespace vck::sandbox
