// AppsValidation: kube-apiserver 1.32's validation of apps/v1 Deployments and ReplicaSets
// (pkg/apis/apps/validation), the parts that matter to clients, worded as the real server
// words them: spec.replicas, minReadySeconds, revisionHistoryLimit and
// progressDeadlineSeconds not negative (the deadline greater than minReadySeconds); a
// selector required, not empty, matching the template's labels; the template validated as a
// pod's spec (pod_validation.hpp) with restartPolicy Always and no activeDeadlineSeconds;
// the Deployment strategy (RollingUpdate with int-or-percent maxSurge/maxUnavailable, not
// both 0, maxUnavailable at most 100%; Recreate without rollingUpdate). On update the
// selector is immutable (apps/v1).
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/sandbox/validation/field_error.hpp>
#include <vck/sandbox/validation/pod_validation.hpp>
#include <vck/sandbox/validation/spec_validation.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

namespace apps_validation_detail {

using namespace spec_validation;

/// %#v of a metav1.LabelSelector (matchExpressions abbreviated to their count when present).
inline std::string go_label_selector(const json::value* sel) {
    std::string exprs = "[]v1.LabelSelectorRequirement(nil)";
    if (const auto* e = array_at(sel, "matchExpressions"); e && !e->empty()) {
        exprs = "[]v1.LabelSelectorRequirement{";
        for (std::size_t i = 0; i < e->size(); ++i) {
            const auto* r = &(*e)[i];
            exprs += std::string(i ? ", " : "") + "v1.LabelSelectorRequirement{Key:" + go::quote(str(r, "key")) +
                     ", Operator:" + go::quote(str(r, "operator")) + ", Values:" + go::string_slice(at(r, "values")) + "}";
        }
        exprs += "}";
    }
    return "v1.LabelSelector{MatchLabels:" + go::string_map(object_at(sel, "matchLabels")) + ", MatchExpressions:" + exprs + "}";
}

/// ValidateLabelSelector: label keys and values, operators and their values.
inline Errors label_selector(const json::value* sel, const std::string& path) {
    Errors errs = labels_map(object_at(sel, "matchLabels"), child(path, "matchLabels"));
    if (const auto* exprs = array_at(sel, "matchExpressions"))
        for (std::size_t i = 0; i < exprs->size(); ++i) {
            const auto* r = &(*exprs)[i];
            auto p = index(child(path, "matchExpressions"), i);
            auto op = str(r, "operator");
            const auto* values = array_at(r, "values");
            bool has_values = values && !values->empty();
            if (op == "In" || op == "NotIn") {
                if (!has_values)
                    errs.push_back(field::required(child(p, "values"), "must be specified when `operator` is 'In' or 'NotIn'"));
            } else if (op == "Exists" || op == "DoesNotExist") {
                if (has_values)
                    errs.push_back(field::forbidden(child(p, "values"),
                                                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
            } else {
                errs.push_back(field::invalid(child(p, "operator"), sv(op), "not a valid selector operator"));
            }
            if (auto problem = api::qualified_name_problem(str(r, "key")); !problem.empty())
                errs.push_back(field::invalid(child(p, "key"), sv(str(r, "key")), problem));
        }
    return errs;
}

/// The selector as a LabelSelector; nullopt when it does not convert (its errors are reported).
inline std::optional<api::LabelSelector> converted(const json::value* sel) {
    try {
        return api::LabelSelector::from_json(*sel);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

/// ValidatePodTemplateSpecForReplicaSet.
inline Errors pod_template(const json::value* tmpl, const std::optional<api::LabelSelector>& selector,
                           const std::string& path) {
    if (!tmpl || tmpl->is_null()) return {field::required(path)};
    Errors errs;
    const auto* labels = object_at(at(tmpl, "metadata"), "labels");
    if (selector && !selector->empty() && (selector->selects_nothing() || !selector->matches(labels)))
        errs.push_back(field::invalid_go(child(child(path, "metadata"), "labels"), go::string_map(labels),
                                         "`selector` does not match template `labels`"));
    append(errs, labels_map(labels, child(child(path, "metadata"), "labels")));
    const auto* spec = at(tmpl, "spec");
    auto spec_path = child(path, "spec");
    append(errs, validate_pod_spec(spec, spec_path));
    if (auto rp = str(spec, "restartPolicy"); !rp.empty() && rp != "Always")
        errs.push_back(field::not_supported(child(spec_path, "restartPolicy"), sv(rp), {"Always"}));
    if (has(spec, "activeDeadlineSeconds"))
        errs.push_back(field::forbidden(child(spec_path, "activeDeadlineSeconds"),
                                        "activeDeadlineSeconds in ReplicaSet is not Supported"));
    return errs;
}

/// The selector and template rules Deployments and ReplicaSets share.
inline Errors selector_and_template(const json::value* spec, std::string_view kind) {
    Errors errs;
    const auto* sel = at(spec, "selector");
    std::optional<api::LabelSelector> selector;
    if (!sel || sel->is_null()) {
        errs.push_back(field::required("spec.selector"));
        selector = api::LabelSelector::nothing();  // LabelSelectorAsSelector(nil): matches no labels
    } else {
        append(errs, label_selector(sel, "spec.selector"));
        const auto* ml = object_at(sel, "matchLabels");
        const auto* me = array_at(sel, "matchExpressions");
        if ((!ml || ml->empty()) && (!me || me->empty()))
            errs.push_back(field::invalid_go("spec.selector", go_label_selector(sel),
                                             "empty selector is invalid for " + std::string(kind)));
        selector = converted(sel);
    }
    append(errs, pod_template(at(spec, "template"), selector, "spec.template"));
    return errs;
}

/// ValidatePositiveIntOrPercent (+ IsNotMoreThan100Percent when `at_most_100`).
inline Errors int_or_percent(const json::value* parent, std::string_view name, const std::string& path, bool at_most_100) {
    const auto* v = at(parent, name);
    if (!v) return {};
    auto p = child(path, name);
    if (v->is_string()) {
        std::string s(v->get_string());
        bool ok = s.size() >= 2 && s.back() == '%' &&
                  std::all_of(s.begin(), s.end() - 1, [](char c) { return c >= '0' && c <= '9'; });
        if (!ok)
            return {field::invalid(p, *v, "a valid percent string must be a numeric string followed by an ending '%' "
                                          "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")};
        if (at_most_100 && std::stoll(s.substr(0, s.size() - 1)) > 100)
            return {field::invalid(p, *v, "must not be greater than 100%")};
        return {};
    }
    if (v->is_int64() && v->get_int64() < 0) return {field::invalid(p, *v, "must be greater than or equal to 0")};
    return {};
}

inline bool zero_int_or_percent(const json::value* v) {
    if (!v) return false;
    if (v->is_int64()) return v->get_int64() == 0;
    if (v->is_string()) return v->get_string() == "0%";
    return false;
}

inline Errors strategy(const json::value* spec) {
    Errors errs;
    const auto* st = at(spec, "strategy");
    auto type = str(st, "type");
    const auto* ru = at(st, "rollingUpdate");
    if (type == "Recreate") {
        if (ru && !ru->is_null())
            errs.push_back(field::forbidden("spec.strategy.rollingUpdate",
                                            "may not be specified when strategy `type` is 'Recreate'"));
    } else if (type == "RollingUpdate") {
        if (!ru || ru->is_null()) {
            errs.push_back(field::required("spec.strategy.rollingUpdate", "this should be defaulted and never be nil"));
        } else {
            const std::string p = "spec.strategy.rollingUpdate";
            append(errs, int_or_percent(ru, "maxUnavailable", p, true));
            append(errs, int_or_percent(ru, "maxSurge", p, false));
            if (zero_int_or_percent(at(ru, "maxUnavailable")) && zero_int_or_percent(at(ru, "maxSurge")))
                errs.push_back(field::invalid(p + ".maxUnavailable", *at(ru, "maxUnavailable"),
                                              "may not be 0 when `maxSurge` is 0"));
        }
    } else if (type.empty()) {
        errs.push_back(field::required("spec.strategy.type"));
    } else {
        errs.push_back(field::not_supported("spec.strategy.type", sv(type), {"Recreate", "RollingUpdate"}));
    }
    return errs;
}

inline Errors selector_immutable(const json::value& obj, const json::value& old) {
    const auto* now = at(at(&obj, "spec"), "selector");
    const auto* before = at(at(&old, "spec"), "selector");
    if (same(now, before)) return {};
    return {field::invalid_go("spec.selector", go_label_selector(now), "field is immutable")};
}

} // namespace apps_validation_detail

/// ValidateReplicaSet (create), or ValidateReplicaSetUpdate when `old` is given.
inline std::vector<FieldError> validate_replica_set(const boost::json::value& rs, const boost::json::value* old = nullptr) {
    using namespace apps_validation_detail;
    const auto* spec = at(&rs, "spec");
    Errors errs = non_negative(spec, "replicas", "spec");
    append(errs, non_negative(spec, "minReadySeconds", "spec"));
    append(errs, selector_and_template(spec, "deployment"));
    if (old) append(errs, selector_immutable(rs, *old));
    return errs;
}

/// ValidateDeployment (create), or ValidateDeploymentUpdate when `old` is given.
inline std::vector<FieldError> validate_deployment(const boost::json::value& d, const boost::json::value* old = nullptr) {
    using namespace apps_validation_detail;
    const auto* spec = at(&d, "spec");
    Errors errs = non_negative(spec, "replicas", "spec");
    append(errs, selector_and_template(spec, "deployment"));
    append(errs, strategy(spec));
    append(errs, non_negative(spec, "minReadySeconds", "spec"));
    append(errs, non_negative(spec, "revisionHistoryLimit", "spec"));
    if (auto pds = integer(spec, "progressDeadlineSeconds")) {
        append(errs, non_negative(spec, "progressDeadlineSeconds", "spec"));
        if (*pds <= integer(spec, "minReadySeconds").value_or(0))
            errs.push_back(field::invalid("spec.progressDeadlineSeconds", json::value(*pds),
                                          "must be greater than minReadySeconds"));
    }
    if (old) append(errs, selector_immutable(d, *old));
    return errs;
}

} // namespace vck::sandbox
