// AdmissionWebhooks: kube-apiserver's MutatingAdmissionWebhook and ValidatingAdmissionWebhook
// plugins over the MutatingWebhookConfigurations and ValidatingWebhookConfigurations in the
// store. Given a request's attributes it finds the webhooks whose rules, namespaceSelector,
// objectSelector and matchPolicy select it, posts each an admission.k8s.io/v1 AdmissionReview
// through a WebhookCaller (webhook_client.hpp does HTTPS), and answers as the real plugins do:
// - mutating webhooks in order (configurations by name, webhooks as listed), each JSONPatch
//   applied to the object; reinvocationPolicy IfNeeded calls a webhook once more when a later
//   one changed the object; validating webhooks all called, the first refusal wins;
// - refusals, call failures under failurePolicy Fail, invalid responses and dry runs of
//   webhooks with side effects throw StoreError with kube-apiserver's Status and wording;
//   failurePolicy Ignore continues past a failed call; `warnings` become Warning headers.
// No sockets here, and nothing runs under the store's lock: the store is only read (the
// configurations, a namespace's labels, a Service and its Endpoints) through its public calls.
// matchConditions (CEL) are not evaluated: a webhook that has some is called as if they held.
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/client/base64.hpp>
#include <vck/sandbox/storage/object_store.hpp>
#include <vck/sandbox/storage/patch.hpp>
#include <vck/sandbox/storage/version_conversion.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace vck::sandbox {

/// A request as the admission plugins see it (admission.Attributes).
struct AdmissionAttributes {
    std::string operation;  // CREATE, UPDATE, DELETE
    std::string group, version, resource, subresource;  // as the request addressed them
    std::string kind;                                   // the object's kind in that version
    std::string namespace_;  // "" for cluster-scoped objects; a Namespace's own name for it
    std::string name;
    bool namespaced = true;  // the resource's scope
    std::string user;
    std::vector<std::string> groups;
    bool dry_run = false;
    json::value object;      // null on DELETE
    json::value old_object;  // null on CREATE
    json::value options;     // the request's Create/Update/Patch/StoreDeleteOptions
};

/// Where one AdmissionReview is posted: `url` is how errors name it (kube-apiserver's
/// "https://host:port/path?timeout=10s"); the connection goes to `address`:`port` with TLS
/// for `server_name`, trusting `ca_pem` (none: the system's roots), for `timeout` in all.
struct WebhookEndpoint {
    std::string url;
    std::string address;
    std::uint16_t port = 443;
    std::string target;  // path and query
    std::string server_name;
    std::string ca_pem;
    std::chrono::seconds timeout{10};
};

/// What a call gave: an error worded as Go's HTTP client words it (`Post "URL": ...`), or an
/// HTTP status and body.
struct WebhookCallResult {
    std::string error;
    int status = 0;
    std::string body;
};
using WebhookCaller = std::function<WebhookCallResult(const WebhookEndpoint&, const std::string& body)>;

namespace admission_detail {

inline std::vector<std::string> strings(const json::value* v) {
    std::vector<std::string> out;
    if (v && v->is_array())
        for (const auto& s : v->get_array())
            if (s.is_string()) out.emplace_back(s.get_string());
    return out;
}
inline std::string str(const json::object& o, std::string_view key, std::string fallback = {}) {
    const auto* v = o.if_contains(key);
    return v && v->is_string() ? std::string(v->get_string()) : fallback;
}
inline bool has(const std::vector<std::string>& list, const std::string& v) {
    return std::find(list.begin(), list.end(), v) != list.end() || std::find(list.begin(), list.end(), "*") != list.end();
}
inline const json::object* labels_of(const json::value& obj) {
    const auto* o = obj.if_object();
    const auto* md = o ? o->if_contains("metadata") : nullptr;
    const auto* l = md && md->is_object() ? md->get_object().if_contains("labels") : nullptr;
    return l && l->is_object() ? &l->get_object() : nullptr;
}
/// A selector as configured: absent or null selects everything (the default {}).
inline api::LabelSelector selector(const json::object& hook, std::string_view key) {
    const auto* v = hook.if_contains(key);
    if (!v || v->is_null()) return {};
    return api::LabelSelector::from_json(*v);
}

} // namespace admission_detail

/// One webhook of a configuration, with kube-apiserver's defaults filled in.
struct WebhookRule {
    std::vector<std::string> operations, api_groups, api_versions, resources;
    std::string scope = "*";
};
struct AdmissionWebhook {
    bool mutating = false;
    std::string configuration;
    std::string name;
    std::vector<WebhookRule> rules;
    json::object hook;  // as stored, for its clientConfig and selectors
    std::string failure_policy = "Fail";
    std::string match_policy = "Equivalent";
    std::string side_effects;  // "" when unset
    std::string reinvocation_policy = "Never";
    int timeout_seconds = 10;
    std::vector<std::string> review_versions;

    static AdmissionWebhook from_json(bool mutating, std::string configuration, const json::object& h) {
        using namespace admission_detail;
        AdmissionWebhook w;
        w.mutating = mutating;
        w.configuration = std::move(configuration);
        w.hook = h;
        w.name = str(h, "name");
        w.failure_policy = str(h, "failurePolicy", "Fail");
        w.match_policy = str(h, "matchPolicy", "Equivalent");
        w.side_effects = str(h, "sideEffects");
        w.reinvocation_policy = str(h, "reinvocationPolicy", "Never");
        if (const auto* t = h.if_contains("timeoutSeconds"); t && t->is_int64()) w.timeout_seconds = static_cast<int>(t->get_int64());
        w.review_versions = strings(h.if_contains("admissionReviewVersions"));
        if (const auto* rs = h.if_contains("rules"); rs && rs->is_array())
            for (const auto& r : rs->get_array()) {
                if (!r.is_object()) continue;
                const auto& ro = r.get_object();
                WebhookRule rule;
                rule.operations = strings(ro.if_contains("operations"));
                rule.api_groups = strings(ro.if_contains("apiGroups"));
                rule.api_versions = strings(ro.if_contains("apiVersions"));
                rule.resources = strings(ro.if_contains("resources"));
                rule.scope = str(ro, "scope", "*");
                w.rules.push_back(std::move(rule));
            }
        return w;
    }

    /// Whether a rule selects (operation, group/version/resource/subresource) in the scope
    /// of the request (rules.Matcher): "*" in any list, "pods/status", "*/status", "*/*";
    /// Namespaced excludes Namespace objects and cluster-scoped ones, Cluster keeps them.
    bool rules_match(const std::string& op, const std::string& group, const std::string& version,
                     const std::string& resource, const std::string& sub, const std::string& ns) const {
        using admission_detail::has;
        for (const auto& r : rules) {
            if (!has(r.operations, op) || !has(r.api_groups, group) || !has(r.api_versions, version)) continue;
            bool res = false;
            for (const auto& entry : r.resources) {
                auto slash = entry.find('/');
                std::string er = entry.substr(0, slash), es = slash == std::string::npos ? "" : entry.substr(slash + 1);
                if ((er == "*" || er == resource) && (es == "*" || es == sub)) res = true;
            }
            if (!res) continue;
            const bool namespace_object = group.empty() && resource == "namespaces";
            if (r.scope == "Namespaced" && (namespace_object || ns.empty())) continue;
            if (r.scope == "Cluster" && !(namespace_object || ns.empty())) continue;
            return true;
        }
        return false;
    }
};

/// The version a webhook is called in: the request's, or under matchPolicy Equivalent
/// another version of the same resource its rules name.
struct WebhookInvocation {
    std::string group, version, resource, kind;
};

class AdmissionWebhooks {
public:
    explicit AdmissionWebhooks(ObjectStore& store) : store_(store) {}

    /// The HTTPS call (webhook_client.hpp's post_admission_review in the API server). Without
    /// one every call fails as a refused connection would.
    void set_caller(WebhookCaller c) {
        std::lock_guard lock(mu_);
        caller_ = std::move(c);
    }

    /// The webhooks of every configuration: mutating ones first, each kind by configuration
    /// name, then in the order listed.
    std::vector<AdmissionWebhook> webhooks() const {
        std::vector<AdmissionWebhook> out;
        for (bool mutating : {true, false}) {
            ResourceId id{"admissionregistration.k8s.io", "v1",
                          mutating ? "mutatingwebhookconfigurations" : "validatingwebhookconfigurations"};
            auto list = store_.list(id, "");
            std::vector<const json::object*> configs;
            for (const auto& c : list.at("items").as_array())
                if (c.is_object()) configs.push_back(&c.get_object());
            std::sort(configs.begin(), configs.end(), [](const json::object* a, const json::object* b) {
                return api::string_at(json::value(*a), {"metadata", "name"}) < api::string_at(json::value(*b), {"metadata", "name"});
            });
            for (const auto* c : configs) {
                std::string cname(api::string_at(json::value(*c), {"metadata", "name"}));
                if (const auto* hs = c->if_contains("webhooks"); hs && hs->is_array())
                    for (const auto& h : hs->get_array())
                        if (h.is_object()) out.push_back(AdmissionWebhook::from_json(mutating, cname, h.get_object()));
            }
        }
        return out;
    }

    /// Whether any webhook's rules select the request, in its version or (Equivalent) in
    /// another: what decides that a write goes through admission at all.
    bool any_selects(const std::string& op, const std::string& group, const std::string& version,
                     const std::string& resource, const std::string& sub, const std::string& ns) const {
        auto hooks = webhooks();
        if (hooks.empty()) return false;
        auto versions = equivalent_versions(group, version, resource);
        for (const auto& h : hooks) {
            if (h.rules_match(op, group, version, resource, sub, ns)) return true;
            if (h.match_policy != "Exact")
                for (const auto& v : versions)
                    if (h.rules_match(op, group, v.version, resource, sub, ns)) return true;
        }
        return false;
    }

    /// The mutating webhooks on `a` (a.object replaced by the mutated object, in the request's
    /// version). Throws StoreError as kube-apiserver refuses. Warnings are appended (once each).
    void mutate(AdmissionAttributes& a, std::vector<std::string>& warnings) const {
        auto hooks = webhooks();
        std::vector<const AdmissionWebhook*> mutating;
        for (const auto& h : hooks)
            if (h.mutating) mutating.push_back(&h);
        std::optional<json::object> ns_labels;
        std::vector<bool> invoked(mutating.size(), false);
        std::ptrdiff_t last_change = -1;
        auto run = [&](std::size_t i) {
            const auto& h = *mutating[i];
            auto inv = invocation(h, a, ns_labels);
            if (!inv) return;
            invoked[i] = true;
            if (auto patched = call(h, *inv, a, warnings); patched && !json_equal(*patched, a.object)) {
                a.object = std::move(*patched);
                last_change = static_cast<std::ptrdiff_t>(i);
            }
        };
        for (std::size_t i = 0; i < mutating.size(); ++i) run(i);
        // Reinvocation: once, for IfNeeded webhooks that ran before the object last changed.
        const auto first_round_change = last_change;
        for (std::ptrdiff_t i = 0; i < first_round_change; ++i)
            if (invoked[static_cast<std::size_t>(i)] && mutating[static_cast<std::size_t>(i)]->reinvocation_policy == "IfNeeded")
                run(static_cast<std::size_t>(i));
    }

    /// The validating webhooks on `a` (the object as it would be stored). Throws StoreError.
    void validate(const AdmissionAttributes& a, std::vector<std::string>& warnings) const {
        auto hooks = webhooks();
        std::optional<json::object> ns_labels;
        std::optional<StoreError> first;
        for (const auto& h : hooks) {
            if (h.mutating) continue;
            try {
                if (auto inv = invocation(h, a, ns_labels)) call(h, *inv, a, warnings);
            } catch (const StoreError& e) {
                // kube-apiserver calls them all (in parallel) and answers the first error.
                if (!first) first = e;
            }
        }
        if (first) throw *first;
    }

private:
    struct Equivalent {
        std::string version, kind;
    };
    std::vector<Equivalent> equivalent_versions(const std::string& group, const std::string& version,
                                                const std::string& resource) const {
        std::vector<Equivalent> out;
        for (const auto& r : store_.resources())
            if (r.group == group && r.plural == resource && r.version != version) out.push_back({r.version, r.kind});
        return out;
    }

    /// Whether `h` is called for `a`, and in which version (ShouldCallHook): its rules (then,
    /// under Equivalent, in another version), the namespaceSelector against the labels of the
    /// object's namespace (a Namespace's own; a cluster-scoped object always matches), and
    /// the objectSelector against the object's or the old object's labels.
    std::optional<WebhookInvocation> invocation(const AdmissionWebhook& h, const AdmissionAttributes& a,
                                                std::optional<json::object>& ns_labels) const {
        std::optional<WebhookInvocation> inv;
        if (h.rules_match(a.operation, a.group, a.version, a.resource, a.subresource, a.namespace_))
            inv = WebhookInvocation{a.group, a.version, a.resource, a.kind};
        else if (h.match_policy != "Exact")
            for (const auto& e : equivalent_versions(a.group, a.version, a.resource))
                if (h.rules_match(a.operation, a.group, e.version, a.resource, a.subresource, a.namespace_)) {
                    inv = WebhookInvocation{a.group, e.version, a.resource, e.kind};
                    break;
                }
        if (!inv) return std::nullopt;
        try {
            auto ns_selector = admission_detail::selector(h.hook, "namespaceSelector");
            const bool namespace_object = a.group.empty() && a.resource == "namespaces" && a.subresource.empty();
            if (namespace_object) {
                const auto& subject = a.object.is_null() ? a.old_object : a.object;
                if (!ns_selector.matches(admission_detail::labels_of(subject))) return std::nullopt;
            } else if (a.namespaced && !a.namespace_.empty() && !ns_selector.empty()) {
                if (!ns_labels) {
                    ns_labels.emplace();
                    try {
                        auto nso = store_.get({"", "v1", "namespaces"}, "", a.namespace_);
                        if (const auto* l = admission_detail::labels_of(nso)) *ns_labels = *l;
                    } catch (const StoreError&) {
                    }
                }
                if (!ns_selector.matches(&*ns_labels)) return std::nullopt;
            }
            auto obj_selector = admission_detail::selector(h.hook, "objectSelector");
            if (!obj_selector.empty() && !obj_selector.matches(admission_detail::labels_of(a.object)) &&
                !obj_selector.matches(admission_detail::labels_of(a.old_object)))
                return std::nullopt;
        } catch (const api::SelectorError&) {
            return std::nullopt;  // a configuration's validation refuses such selectors
        }
        return inv;
    }

    static std::string new_uid() {
        static thread_local std::mt19937_64 rng{std::random_device{}()};
        std::uniform_int_distribution<int> byte(0, 255);
        unsigned char b[16];
        for (auto& x : b) x = static_cast<unsigned char>(byte(rng));
        b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
        b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
        static constexpr char hex[] = "0123456789abcdef";
        std::string s;
        for (int i = 0; i < 16; ++i) {
            if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
            s += hex[b[i] >> 4];
            s += hex[b[i] & 15];
        }
        return s;
    }

    static json::object gvk(const std::string& g, const std::string& v, const std::string& k) {
        return {{"group", g}, {"version", v}, {"kind", k}};
    }
    static json::object gvr(const std::string& g, const std::string& v, const std::string& r) {
        return {{"group", g}, {"version", v}, {"resource", r}};
    }

    /// The AdmissionReview v1 of `a` for an invocation (objects in its version).
    static json::object review(const WebhookInvocation& inv, const AdmissionAttributes& a, const std::string& uid) {
        const std::string api_version = inv.group.empty() ? inv.version : inv.group + "/" + inv.version;
        auto in_version = [&](const json::value& o) { return o.is_null() ? o : convert_to_version(o, api_version); };
        json::object req{{"uid", uid},
                         {"kind", gvk(inv.group, inv.version, inv.kind)},
                         {"resource", gvr(inv.group, inv.version, inv.resource)}};
        if (!a.subresource.empty()) req["subResource"] = a.subresource;
        req["requestKind"] = gvk(a.group, a.version, a.kind);
        req["requestResource"] = gvr(a.group, a.version, a.resource);
        if (!a.subresource.empty()) req["requestSubResource"] = a.subresource;
        if (!a.name.empty()) req["name"] = a.name;
        if (!a.namespace_.empty()) req["namespace"] = a.namespace_;
        req["operation"] = a.operation;
        json::object user{{"username", a.user}};
        if (!a.groups.empty()) {
            json::array g;
            for (const auto& x : a.groups) g.emplace_back(x);
            user["groups"] = std::move(g);
        }
        req["userInfo"] = std::move(user);
        req["object"] = in_version(a.object);
        req["oldObject"] = in_version(a.old_object);
        req["dryRun"] = a.dry_run;
        req["options"] = a.options;
        return {{"kind", "AdmissionReview"}, {"apiVersion", "admission.k8s.io/v1"}, {"request", std::move(req)}};
    }

    /// Errors of kube-apiserver's webhook plugins (apimachinery errors and webhook/errors).
    static StoreError internal_error(const std::string& message) {
        auto st = store_status::detail::failure(500, "InternalError", "Internal error occurred: " + message);
        st.details = api::StatusDetails{};
        st.details->causes.push_back(api::StatusCause{"", message, ""});
        return StoreError(std::move(st));
    }
    static StoreError rejection(const std::string& webhook, const json::value* result) {
        api::Status st;
        st.status = "Failure";
        const json::object* r = result ? result->if_object() : nullptr;
        std::string message, reason;
        if (r) {
            message = admission_detail::str(*r, "message");
            reason = admission_detail::str(*r, "reason");
            st.reason = reason;
            if (const auto* c = r->if_contains("code"); c && c->is_number()) st.code = c->to_number<std::int64_t>();
            if (const auto* s = r->if_contains("status"); s && s->is_string() && s->get_string() != "Success")
                st.status = std::string(s->get_string());
            if (const auto* d = r->if_contains("details"); d && d->is_object()) {
                st.details = api::StatusDetails{};
                st.details->name = admission_detail::str(d->get_object(), "name");
                st.details->group = admission_detail::str(d->get_object(), "group");
                st.details->kind = admission_detail::str(d->get_object(), "kind");
            }
        }
        if (st.code < 400) st.code = 400;
        const std::string denied = "admission webhook \"" + webhook + "\" denied the request";
        if (!message.empty()) st.message = denied + ": " + message;
        else if (!reason.empty()) st.message = denied + ": " + reason;
        else st.message = denied + " without explanation";
        return StoreError(std::move(st));
    }

    /// Where `h` is posted: its url, or its Service resolved to a ready endpoint (pods in the
    /// sandbox have addresses of their own; a ClusterIP leads nowhere), TLS for
    /// <name>.<namespace>.svc. Empty `address` with `error` set when it cannot be resolved.
    WebhookEndpoint endpoint(const AdmissionWebhook& h, std::string& error) const {
        WebhookEndpoint e;
        e.timeout = std::chrono::seconds(h.timeout_seconds);
        const std::string timeout_param = "timeout=" + std::to_string(h.timeout_seconds) + "s";
        const json::object empty;
        const auto* cc = h.hook.if_contains("clientConfig");
        const json::object& config = cc && cc->is_object() ? cc->get_object() : empty;
        if (auto ca = admission_detail::str(config, "caBundle"); !ca.empty()) e.ca_pem = client::base64_decode(ca).value_or("");
        if (auto url = admission_detail::str(config, "url"); !url.empty()) {
            e.url = url + (url.find('?') == std::string::npos ? "?" : "&") + timeout_param;
            // https://host[:port][/path][?query]
            std::string rest = url.starts_with("https://") ? url.substr(8) : url;
            auto slash = rest.find_first_of("/?");
            std::string hostport = rest.substr(0, slash);
            std::string target = slash == std::string::npos ? "/" : rest.substr(slash);
            if (target.starts_with("?")) target = "/" + target;
            e.target = target + (target.find('?') == std::string::npos ? "?" : "&") + timeout_param;
            std::string host = hostport;
            if (hostport.starts_with("[")) {
                auto close = hostport.find(']');
                host = hostport.substr(1, close - 1);
                if (close + 1 < hostport.size() && hostport[close + 1] == ':') e.port = parse_port(hostport.substr(close + 2));
            } else if (auto colon = hostport.rfind(':'); colon != std::string::npos) {
                host = hostport.substr(0, colon);
                e.port = parse_port(hostport.substr(colon + 1));
            }
            e.address = host;
            e.server_name = host;
            return e;
        }
        const auto* svc = config.if_contains("service");
        if (!svc || !svc->is_object()) {
            error = "webhook has no url or service";
            return e;
        }
        const auto& so = svc->get_object();
        std::string ns = admission_detail::str(so, "namespace"), name = admission_detail::str(so, "name");
        std::string path = admission_detail::str(so, "path");
        std::int64_t port = 443;
        if (const auto* p = so.if_contains("port"); p && p->is_number()) port = p->to_number<std::int64_t>();
        e.server_name = name + "." + ns + ".svc";
        e.url = "https://" + e.server_name + ":" + std::to_string(port) + path + "?" + timeout_param;
        e.target = (path.empty() ? "/" : path) + "?" + timeout_param;
        json::value service, endpoints;
        try {
            service = store_.get({"", "v1", "services"}, ns, name);
        } catch (const StoreError&) {
            error = "service \"" + name + "\" not found";
            return e;
        }
        std::string port_name;
        bool port_found = false;
        if (const auto* ports = table_at(service, "spec", "ports"); ports && ports->is_array())
            for (const auto& p : ports->get_array())
                if (p.is_object() && p.get_object().contains("port") && p.get_object().at("port").is_number() &&
                    p.get_object().at("port").to_number<std::int64_t>() == port) {
                    port_name = admission_detail::str(p.get_object(), "name");
                    port_found = true;
                }
        if (!port_found) {
            error = "no service port " + std::to_string(port) + " found for service \"" + name + "\"";
            return e;
        }
        try {
            endpoints = store_.get({"", "v1", "endpoints"}, ns, name);
        } catch (const StoreError&) {
            error = "no endpoints available for service \"" + name + "\"";
            return e;
        }
        if (const auto* subsets = endpoints.as_object().if_contains("subsets"); subsets && subsets->is_array())
            for (const auto& s : subsets->get_array()) {
                if (!s.is_object()) continue;
                const auto* addrs = s.get_object().if_contains("addresses");
                const auto* ports = s.get_object().if_contains("ports");
                if (!addrs || !addrs->is_array() || addrs->get_array().empty() || !ports || !ports->is_array()) continue;
                for (const auto& p : ports->get_array()) {
                    if (!p.is_object() || admission_detail::str(p.get_object(), "name") != port_name) continue;
                    const auto& first = addrs->get_array().front();
                    if (!first.is_object()) continue;
                    e.address = admission_detail::str(first.get_object(), "ip");
                    if (const auto* n = p.get_object().if_contains("port"); n && n->is_number())
                        e.port = static_cast<std::uint16_t>(n->to_number<std::int64_t>());
                    return e;
                }
            }
        error = "no endpoints available for service \"" + name + "\"";
        return e;
    }
    static const json::value* table_at(const json::value& v, const char* a, const char* b) {
        const auto* o = v.if_object();
        const auto* x = o ? o->if_contains(a) : nullptr;
        return x && x->is_object() ? x->get_object().if_contains(b) : nullptr;
    }
    static std::uint16_t parse_port(const std::string& s) {
        int n = 0;
        for (char c : s) {
            if (c < '0' || c > '9') return 443;
            n = n * 10 + (c - '0');
            if (n > 65535) return 443;
        }
        return s.empty() ? 443 : static_cast<std::uint16_t>(n);
    }

    /// One call of `h`: the refusal or failure thrown (failurePolicy Ignore swallows
    /// failures); for a mutating webhook, the object patched (in a's version), if it sent a patch.
    std::optional<json::value> call(const AdmissionWebhook& h, const WebhookInvocation& inv, const AdmissionAttributes& a,
                                    std::vector<std::string>& warnings) const {
        const bool ignore = h.failure_policy == "Ignore";
        auto failed = [&](const std::string& reason) -> std::optional<json::value> {
            if (ignore) return std::nullopt;
            throw internal_error("failed calling webhook \"" + h.name + "\": " + reason);
        };
        if (a.dry_run) {
            if (h.side_effects.empty()) return failed("Webhook SideEffects is nil");
            if (h.side_effects != "None" && h.side_effects != "NoneOnDryRun")
                throw StoreError(store_status::bad_request("admission webhook \"" + h.name + "\" does not support dry run"));
        }
        if (std::find(h.review_versions.begin(), h.review_versions.end(), "v1") == h.review_versions.end())
            return failed("could not create admission objects: webhook does not accept known AdmissionReview versions");
        std::string error;
        auto e = endpoint(h, error);
        const std::string uid = new_uid();
        const std::string body = json::serialize(review(inv, a, uid));
        WebhookCallResult res;
        if (!error.empty()) {
            res.error = "Post \"" + e.url + "\": " + error;
        } else {
            WebhookCaller caller;
            {
                std::lock_guard lock(mu_);
                caller = caller_;
            }
            if (caller) res = caller(e, body);
            else res.error = "Post \"" + e.url + "\": dial tcp " + e.address + ":" + std::to_string(e.port) + ": connect: connection refused";
        }
        if (!res.error.empty()) return failed("failed to call webhook: " + res.error);
        if (res.status < 200 || res.status > 299)
            return failed("failed to call webhook: the server responded with the status code " + std::to_string(res.status) +
                          " but did not return more information");
        json::value reply;
        try {
            reply = json::parse(res.body);
        } catch (const std::exception&) {
            std::string first;
            for (char c : res.body)
                if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
                    first = c;
                    break;
                }
            return failed("failed to call webhook: couldn't get version/kind; json parse error: " +
                          (first.empty() ? std::string("unexpected end of JSON input")
                                         : "invalid character '" + first + "' looking for beginning of value"));
        }
        const auto* ro = reply.if_object();
        const auto* response = ro ? ro->if_contains("response") : nullptr;
        auto invalid = [&](const std::string& why) { return failed("received invalid webhook response: " + why); };
        if (!response || !response->is_object()) return invalid("webhook response was absent");
        const auto& r = response->get_object();
        if (auto got = admission_detail::str(r, "uid"); got != uid)
            return invalid("expected response.uid=\"" + uid + "\", got \"" + got + "\"");
        const std::string got_gvk = [&] {
            std::string av = admission_detail::str(*ro, "apiVersion"), k = admission_detail::str(*ro, "kind");
            auto slash = av.find('/');
            std::string g = slash == std::string::npos ? "" : av.substr(0, slash);
            std::string v = slash == std::string::npos ? av : av.substr(slash + 1);
            return g + "/" + v + ", Kind=" + k;
        }();
        if (got_gvk != "admission.k8s.io/v1, Kind=AdmissionReview")
            return invalid("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got " + got_gvk);
        std::string patch = admission_detail::str(r, "patch");
        const bool has_patch_type = r.contains("patchType") && !r.at("patchType").is_null();
        if (h.mutating) {
            if (!patch.empty() && !has_patch_type) return invalid("webhook returned response.patch but not response.patchType");
            if (patch.empty() && has_patch_type) return invalid("webhook returned response.patchType but not response.patch");
        } else if (!patch.empty() || has_patch_type) {
            return invalid("validating webhooks may not return patches");
        }
        for (const auto& w : admission_detail::strings(r.if_contains("warnings")))
            if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
        const auto* allowed = r.if_contains("allowed");
        if (!allowed || !allowed->is_bool() || !allowed->get_bool()) throw rejection(h.name, r.if_contains("status"));
        if (patch.empty()) return std::nullopt;
        if (auto pt = admission_detail::str(r, "patchType"); pt != "JSONPatch")
            return invalid("webhook returned invalid response.patchType of \"" + pt + "\"");
        auto decoded = client::base64_decode(patch);
        json::value ops;
        try {
            if (!decoded) throw std::runtime_error("illegal base64 data");
            ops = json::parse(*decoded);
        } catch (const std::exception& ex) {
            return failed(std::string("received undecodable patch in webhook response: ") + ex.what());
        }
        const std::string api_version = inv.group.empty() ? inv.version : inv.group + "/" + inv.version;
        const std::string request_version = a.group.empty() ? a.version : a.group + "/" + a.version;
        try {
            auto patched = apply_json_patch(convert_to_version(a.object, api_version), ops);
            return convert_to_version(patched, request_version);
        } catch (const PatchError& ex) {
            throw internal_error(ex.what());
        }
    }

    ObjectStore& store_;
    mutable std::mutex mu_;
    WebhookCaller caller_;
};

} // namespace vck::sandbox
