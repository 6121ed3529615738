// JobValidation: kube-apiserver 1.32's validation of batch/v1 Jobs (pkg/apis/batch/validation),
// the parts clients meet, worded as the real server words them: the generated selector and
// template labels (unless spec.manualSelector); parallelism, completions,
// activeDeadlineSeconds, backoffLimit, ttlSecondsAfterFinished not negative; completionMode
// and podReplacementPolicy among their values (Indexed needs completions); the template
// validated as a pod's spec with restartPolicy OnFailure or Never (Always, defaulted from
// nothing, is "Required"); a selector required and matching the template's labels. On update
// (the create rules again, then): completions (except an Indexed Job's, changed together with
// parallelism), selector, completionMode, podFailurePolicy and backoffLimitPerIndex are
// immutable, and so is the template, except its labels, annotations, node selector, node
// affinity, tolerations and scheduling gates while the Job is suspended and has never started.
// Not checked: podFailurePolicy's and successPolicy's rules, managedBy's format, status writes.
// A changed template's value is printed as `core.PodTemplateSpec{...}`, not Go's whole %#v.
#pragma once

#include <vck/sandbox/validation/apps_validation.hpp>
#include <vck/sandbox/validation/field_error.hpp>
#include <vck/sandbox/validation/pod_validation.hpp>
#include <vck/sandbox/validation/spec_validation.hpp>

#include <boost/json.hpp>

#include <string>
#include <vector>

namespace vck::sandbox {

namespace job_validation_detail {

using namespace spec_validation;
using apps_validation_detail::converted;
using apps_validation_detail::go_label_selector;

/// apivalidation.ValidateHasLabel on the template's metadata.
inline Errors has_label(const json::value* tmpl, const std::string& key, const std::string& want) {
    const auto* labels = object_at(at(tmpl, "metadata"), "labels");
    const auto* v = labels ? labels->if_contains(key) : nullptr;
    const std::string path = "spec.template.metadata.labels[" + key + "]";
    if (!v) return {field::required(path, "must be '" + want + "'")};
    if (!v->is_string() || v->get_string() != want)
        return {field::invalid_go(path, go::string_map(labels), "must be '" + want + "'")};
    return {};
}

/// validateGeneratedSelector (RequirePrefixedLabels, as on every create in 1.32).
inline Errors generated_selector(const json::value& job) {
    const auto* spec = at(&job, "spec");
    if (const auto* m = at(spec, "manualSelector"); m && m->is_bool() && m->get_bool()) return {};
    const auto* sel = at(spec, "selector");
    if (!sel || sel->is_null()) return {};
    const auto* md = at(&job, "metadata");
    const auto uid = str(md, "uid"), name = str(md, "name");
    Errors errs;
    if (uid.empty()) errs.push_back(field::required("metadata.uid"));
    const auto* tmpl = at(spec, "template");
    append(errs, has_label(tmpl, "controller-uid", uid));
    append(errs, has_label(tmpl, "job-name", name));
    append(errs, has_label(tmpl, "batch.kubernetes.io/controller-uid", uid));
    append(errs, has_label(tmpl, "batch.kubernetes.io/job-name", name));
    json::object expected{{"batch.kubernetes.io/controller-uid", uid}, {"batch.kubernetes.io/job-name", name},
                          {"controller-uid", uid}, {"job-name", name}};
    if (auto s = converted(sel); s && !s->matches(&expected))
        errs.push_back(field::invalid_go("spec.selector", go_label_selector(sel), "`selector` not auto-generated"));
    return errs;
}

/// validateJobSpec.
inline Errors job_spec(const json::value* spec) {
    Errors errs;
    for (const char* k : {"parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                          "ttlSecondsAfterFinished", "backoffLimitPerIndex", "maxFailedIndexes"})
        append(errs, non_negative(spec, k, "spec"));
    if (has(spec, "maxFailedIndexes") && !has(spec, "backoffLimitPerIndex"))
        errs.push_back(field::required("spec.backoffLimitPerIndex", "when maxFailedIndexes is specified"));
    const auto mode = str(spec, "completionMode");
    if (has(spec, "completionMode")) {
        if (mode != "NonIndexed" && mode != "Indexed")
            errs.push_back(field::not_supported("spec.completionMode", sv(mode), {"NonIndexed", "Indexed"}));
        if (mode == "Indexed" && !has(spec, "completions"))
            errs.push_back(field::required("spec.completions", "when completion mode is Indexed"));
    }
    if (mode != "Indexed") {
        for (const char* k : {"backoffLimitPerIndex", "maxFailedIndexes"})
            if (const auto* v = at(spec, k); v && !v->is_null())
                errs.push_back(field::invalid(std::string("spec.") + k, *v, "requires indexed completion mode"));
    }
    if (has(spec, "podReplacementPolicy")) {
        auto p = str(spec, "podReplacementPolicy");
        if (has(spec, "podFailurePolicy")) {
            if (p != "Failed") errs.push_back(field::not_supported("spec.podReplacementPolicy", sv(p), {"Failed"}));
        } else if (p != "Failed" && p != "TerminatingOrFailed") {
            errs.push_back(field::not_supported("spec.podReplacementPolicy", sv(p), {"Failed", "TerminatingOrFailed"}));
        }
    }
    const auto* tmpl = at(spec, "template");
    append(errs, labels_map(object_at(at(tmpl, "metadata"), "labels"), "spec.template.metadata.labels"));
    const auto* pod_spec = at(tmpl, "spec");
    append(errs, validate_pod_spec(pod_spec, "spec.template.spec"));
    const auto rp = str(pod_spec, "restartPolicy");
    if (rp == "Always" || rp.empty())
        errs.push_back(field::required("spec.template.spec.restartPolicy", "valid values: \"OnFailure\", \"Never\""));
    else if (rp != "OnFailure" && rp != "Never")
        errs.push_back(field::not_supported("spec.template.spec.restartPolicy", sv(rp), {"OnFailure", "Never"}));
    else if (has(spec, "podFailurePolicy") && rp != "Never")
        errs.push_back(field::invalid("spec.template.spec.restartPolicy", sv(rp),
                                      "only \"Never\" is supported when podFailurePolicy is specified"));
    return errs;
}

/// ValidateJobSpec: validateJobSpec, then the selector.
inline Errors job_spec_and_selector(const json::value* spec) {
    Errors errs = job_spec(spec);
    const auto* sel = at(spec, "selector");
    if (!sel || sel->is_null()) {
        errs.push_back(field::required("spec.selector"));
        return errs;
    }
    append(errs, apps_validation_detail::label_selector(sel, "spec.selector"));
    const auto* labels = object_at(at(at(spec, "template"), "metadata"), "labels");
    if (auto s = converted(sel); s && !s->matches(labels))
        errs.push_back(field::invalid_go("spec.template.metadata.labels", go::string_map(labels),
                                         "`selector` does not match template `labels`"));
    return errs;
}

inline bool suspended_and_never_started(const json::value& old) {
    const auto* s = at(at(&old, "spec"), "suspend");
    return s && s->is_bool() && s->get_bool() && !has(at(&old, "status"), "startTime");
}

/// validatePodTemplateUpdate: the template as before, but for the scheduling directives a
/// suspended Job that never started may change.
inline Errors template_update(const json::value& job, const json::value& old) {
    json::value now = at(at(&job, "spec"), "template") ? *at(at(&job, "spec"), "template") : json::value(nullptr);
    json::value before = at(at(&old, "spec"), "template") ? *at(at(&old, "spec"), "template") : json::value(nullptr);
    if (suspended_and_never_started(old)) {
        for (auto* t : {&now, &before}) {
            auto* o = t->if_object();
            if (!o) continue;
            if (auto* md = o->if_contains("metadata"); md && md->is_object()) {
                md->get_object().erase("labels");
                md->get_object().erase("annotations");
            }
            if (auto* ps = o->if_contains("spec"); ps && ps->is_object()) {
                auto& pso = ps->get_object();
                for (const char* k : {"nodeSelector", "tolerations", "schedulingGates"}) pso.erase(k);
                if (auto* aff = pso.if_contains("affinity"); aff && aff->is_object()) {
                    aff->get_object().erase("nodeAffinity");
                    if (aff->get_object().empty()) pso.erase("affinity");
                }
            }
        }
    }
    if (same(&now, &before)) return {};
    return {field::invalid_go("spec.template", "core.PodTemplateSpec{...}", "field is immutable")};
}

/// validateCompletions: an Indexed Job's completions may change with parallelism, to its value.
inline Errors completions_update(const json::value* spec, const json::value* old_spec) {
    const auto* now = at(spec, "completions");
    const auto* before = at(old_spec, "completions");
    if (str(spec, "completionMode") != "Indexed") return immutable(now, before, "spec.completions");
    if (same(now, before) || !now || now->is_null()) return {};
    if (!same(now, at(spec, "parallelism")))
        return {field::invalid("spec.completions", *now, "can only be modified in tandem with spec.parallelism")};
    return {};
}

} // namespace job_validation_detail

/// ValidateJob (create), or ValidateJob and ValidateJobUpdate when `old` is given.
inline std::vector<FieldError> validate_job(const boost::json::value& job, const boost::json::value* old = nullptr) {
    using namespace job_validation_detail;
    const auto* spec = at(&job, "spec");
    Errors errs;
    if (!old) append(errs, generated_selector(job));
    append(errs, job_spec_and_selector(spec));
    if (!old) return errs;
    const auto* old_spec = at(old, "spec");
    append(errs, completions_update(spec, old_spec));
    if (!same(at(spec, "selector"), at(old_spec, "selector")))
        errs.push_back(field::invalid_go("spec.selector", go_label_selector(at(spec, "selector")), "field is immutable"));
    append(errs, template_update(job, *old));
    for (const char* k : {"completionMode", "podFailurePolicy", "backoffLimitPerIndex"})
        append(errs, immutable(at(spec, k), at(old_spec, k), std::string("spec.") + k));
    return errs;
}

} // namespace vck::sandbox
