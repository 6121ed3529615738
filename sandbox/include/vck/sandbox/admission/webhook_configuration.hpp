// WebhookConfiguration: what kube-apiserver 1.32 fills in and checks on a
// MutatingWebhookConfiguration or ValidatingWebhookConfiguration (admissionregistration/v1's
// SetDefaults_* and ValidateMutating/ValidatingWebhookConfiguration), for the fields
// admission_webhooks.hpp acts on. Defaults: failurePolicy Fail, matchPolicy Equivalent,
// namespaceSelector and objectSelector {}, timeoutSeconds 10, reinvocationPolicy Never, a
// rule's scope "*", a service's port 443. Validation: the 422 field errors of the real
// server, with its update leniency: sideEffects, admissionReviewVersions and unique names are
// only required of an update whose old object already met them. Not checked: matchConditions
// (CEL), label selector syntax beyond what the selector parser refuses at call time.
#pragma once

#include <vck/sandbox/validation/field_error.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

namespace webhook_configuration_detail {
namespace json = boost::json;

inline void set_absent(json::object& o, std::string_view key, json::value v) {
    if (const auto* f = o.if_contains(key); !f || f->is_null()) o[key] = std::move(v);
}
inline std::vector<json::object*> hooks(json::value& obj) {
    std::vector<json::object*> out;
    auto* o = obj.if_object();
    auto* hs = o ? o->if_contains("webhooks") : nullptr;
    if (hs && hs->is_array())
        for (auto& h : hs->get_array())
            if (h.is_object()) out.push_back(&h.get_object());
    return out;
}
inline std::string str(const json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
}
inline bool present(const json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    return v && !v->is_null();
}

/// The checks kube-apiserver relaxes on update for objects that never met them.
struct Strictness {
    bool side_effects = true, review_versions = true, unique_names = true;
};

inline std::vector<FieldError> validate(bool mutating, const json::value& obj, Strictness strict) {
    std::vector<FieldError> errs;
    const auto* o = obj.if_object();
    const auto* hs = o ? o->if_contains("webhooks") : nullptr;
    if (!hs || !hs->is_array()) return errs;
    std::set<std::string> names;
    for (std::size_t i = 0; i < hs->get_array().size(); ++i) {
        const auto& hv = hs->get_array()[i];
        if (!hv.is_object()) continue;
        const auto& h = hv.get_object();
        const std::string at = "webhooks[" + std::to_string(i) + "]";
        const std::string name = str(h, "name");
        if (name.empty()) {
            errs.push_back(field::required(at + ".name"));
        } else {
            std::size_t dots = 0;
            for (char c : name) dots += c == '.';
            if (dots < 2) errs.push_back(field::invalid(at + ".name", json::value(name), "should be a domain with at least three segments separated by dots"));
        }
        // Rules.
        if (const auto* rs = h.if_contains("rules"); rs && rs->is_array())
            for (std::size_t j = 0; j < rs->get_array().size(); ++j) {
                const auto* r = rs->get_array()[j].if_object();
                if (!r) continue;
                const std::string rat = at + ".rules[" + std::to_string(j) + "]";
                for (const char* list : {"operations", "apiGroups", "apiVersions", "resources"}) {
                    const auto* l = r->if_contains(list);
                    if (!l || !l->is_array() || l->get_array().empty()) errs.push_back(field::required(rat + "." + list));
                }
                if (const auto* ops = r->if_contains("operations"); ops && ops->is_array())
                    for (std::size_t k = 0; k < ops->get_array().size(); ++k) {
                        const auto& op = ops->get_array()[k];
                        if (op.is_string() && (op == "*" || op == "CREATE" || op == "UPDATE" || op == "DELETE" || op == "CONNECT")) continue;
                        errs.push_back(field::not_supported(rat + ".operations[" + std::to_string(k) + "]", op,
                                                            {"*", "CONNECT", "CREATE", "DELETE", "UPDATE"}));
                    }
                if (auto scope = str(*r, "scope"); present(*r, "scope") && scope != "*" && scope != "Cluster" && scope != "Namespaced")
                    errs.push_back(field::not_supported(rat + ".scope", r->at("scope"), {"*", "Cluster", "Namespaced"}));
            }
        // failurePolicy, matchPolicy, reinvocationPolicy, sideEffects, timeoutSeconds.
        auto one_of = [&](const char* key, std::vector<std::string> allowed) {
            if (!present(h, key)) return;
            const auto& v = h.at(key);
            if (v.is_string() && std::find(allowed.begin(), allowed.end(), std::string(v.get_string())) != allowed.end()) return;
            errs.push_back(field::not_supported(at + "." + key, v, allowed));
        };
        one_of("failurePolicy", {"Fail", "Ignore"});
        one_of("matchPolicy", {"Equivalent", "Exact"});
        if (!present(h, "sideEffects")) {
            errs.push_back(field::required(at + ".sideEffects", strict.side_effects ? "must specify one of None, NoneOnDryRun"
                                                                                    : "must specify one of None, NoneOnDryRun, Some, Unknown"));
        } else if (strict.side_effects) {
            one_of("sideEffects", {"None", "NoneOnDryRun"});
        } else {
            one_of("sideEffects", {"None", "NoneOnDryRun", "Some", "Unknown"});
        }
        if (const auto* t = h.if_contains("timeoutSeconds"); t && t->is_number()) {
            auto n = t->to_number<double>();
            if (n < 1 || n > 30)
                errs.push_back(field::invalid(at + ".timeoutSeconds", *t, "the timeout value must be between 1 and 30 seconds"));
        }
        if (mutating) one_of("reinvocationPolicy", {"IfNeeded", "Never"});
        // clientConfig: exactly one of url or service; an https URL without user, query or fragment.
        const auto* cc = h.if_contains("clientConfig");
        const json::object empty;
        const auto& c = cc && cc->is_object() ? cc->get_object() : empty;
        const bool has_url = present(c, "url"), has_service = present(c, "service");
        const std::string cat = at + ".clientConfig";
        if (has_url == has_service) {
            errs.push_back(field::required(cat, "exactly one of url or service is required"));
        } else if (has_url) {
            std::string url = str(c, "url");
            // ValidateWebhookURL names each offending part of the URL, not the URL.
            auto sep = url.find("://");
            std::string scheme = sep == std::string::npos ? "" : url.substr(0, sep);
            std::string rest = sep == std::string::npos ? url : url.substr(sep + 3);
            std::string authority = rest.substr(0, rest.find_first_of("/?#"));
            std::string user, host = authority;
            if (auto at_sign = authority.rfind('@'); at_sign != std::string::npos) {
                user = authority.substr(0, at_sign);
                host = authority.substr(at_sign + 1);
            }
            auto hash = url.find('#');
            std::string fragment = hash == std::string::npos ? "" : url.substr(hash + 1);
            auto q = url.find('?');
            std::string query = q == std::string::npos ? "" : url.substr(q + 1, hash == std::string::npos || hash < q ? std::string::npos : hash - q - 1);
            if (scheme != "https") errs.push_back(field::invalid(cat + ".url", json::value(scheme), "'https' is the only allowed URL scheme"));
            if (host.empty()) errs.push_back(field::invalid(cat + ".url", json::value(host), "host must be specified"));
            if (!user.empty()) errs.push_back(field::invalid(cat + ".url", json::value(user), "user information is not permitted in the URL"));
            if (!fragment.empty()) errs.push_back(field::invalid(cat + ".url", json::value(fragment), "fragments are not permitted in the URL"));
            if (!query.empty()) errs.push_back(field::invalid(cat + ".url", json::value(query), "query parameters are not permitted in the URL"));
        } else if (const auto* s = c.at("service").if_object()) {
            if (str(*s, "namespace").empty()) errs.push_back(field::required(cat + ".service.namespace", "service namespace is required"));
            if (str(*s, "name").empty()) errs.push_back(field::required(cat + ".service.name", "service name is required"));
            if (auto path = str(*s, "path"); !path.empty() && !path.starts_with("/"))
                errs.push_back(field::invalid(cat + ".service.path", json::value(path), "must start with a '/'"));
            if (const auto* p = s->if_contains("port"); p && p->is_number()) {
                auto n = p->to_number<double>();
                if (n < 1 || n > 65535)
                    errs.push_back(field::invalid(cat + ".service.port", *p, "port is not valid: must be between 1 and 65535, inclusive"));
            }
        }
        // admissionReviewVersions.
        const auto* versions = h.if_contains("admissionReviewVersions");
        if (!versions || !versions->is_array() || versions->get_array().empty()) {
            if (strict.review_versions)
                errs.push_back(field::required(at + ".admissionReviewVersions", "must specify one of v1, v1beta1"));
        } else if (strict.review_versions) {
            bool known = false;
            for (const auto& v : versions->get_array()) known = known || v == "v1" || v == "v1beta1";
            if (!known)
                errs.push_back(field::invalid(at + ".admissionReviewVersions", *versions, "must include at least one of v1, v1beta1"));
        }
        if (strict.unique_names && !name.empty() && !names.insert(name).second)
            errs.push_back(field::duplicate(at + ".name", json::value(name)));
    }
    return errs;
}

} // namespace webhook_configuration_detail

/// SetDefaults for every webhook of a configuration (`mutating`: a MutatingWebhookConfiguration).
inline void webhook_configuration_defaults(bool mutating, boost::json::value& obj) {
    using namespace webhook_configuration_detail;
    for (auto* h : hooks(obj)) {
        set_absent(*h, "failurePolicy", "Fail");
        set_absent(*h, "matchPolicy", "Equivalent");
        set_absent(*h, "namespaceSelector", json::object());
        set_absent(*h, "objectSelector", json::object());
        set_absent(*h, "timeoutSeconds", 10);
        if (mutating) set_absent(*h, "reinvocationPolicy", "Never");
        if (auto* rs = h->if_contains("rules"); rs && rs->is_array())
            for (auto& r : rs->get_array())
                if (r.is_object()) set_absent(r.get_object(), "scope", "*");
        if (auto* cc = h->if_contains("clientConfig"); cc && cc->is_object())
            if (auto* s = cc->get_object().if_contains("service"); s && s->is_object()) set_absent(s->get_object(), "port", 443);
    }
}

/// The field errors of a configuration; `old` is the stored one on update (nullptr on create).
inline std::vector<FieldError> validate_webhook_configuration(bool mutating, const boost::json::value& obj,
                                                              const boost::json::value* old) {
    using namespace webhook_configuration_detail;
    Strictness strict;
    if (old) {
        // What the old object already broke stays allowed (kube-apiserver's update leniency).
        for (const auto& e : validate(mutating, *old, Strictness{})) {
            if (e.message.find(".sideEffects:") != std::string::npos) strict.side_effects = false;
            if (e.message.find(".admissionReviewVersions:") != std::string::npos) strict.review_versions = false;
            if (e.message.find(".name: Duplicate") != std::string::npos) strict.unique_names = false;
        }
    }
    return validate(mutating, obj, strict);
}

} // namespace vck::sandbox
