// StatefulSetValidation: what kube-apiserver 1.32 refuses in an apps/v1 StatefulSet
// (ValidateStatefulSet[Update] of pkg/apis/apps/validation), with its messages and paths:
// - spec.replicas and spec.minReadySeconds not negative; podManagementPolicy OrderedReady or
//   Parallel; updateStrategy RollingUpdate (partition not negative) or OnDelete (without
//   rollingUpdate); persistentVolumeClaimRetentionPolicy's whenDeleted/whenScaled Retain or
//   Delete;
// - spec.selector required and not empty, and it selects the template's labels; the template's
//   pod spec valid as a pod's (validate_pod_spec), its restartPolicy Always;
// - on update only replicas, ordinals, template, updateStrategy, revisionHistoryLimit,
//   persistentVolumeClaimRetentionPolicy and minReadySeconds may change.
// Not checked: the claim templates' own specs, ordinals.start.
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/sandbox/validation/pod_validation.hpp>
#include <vck/sandbox/validation/spec_validation.hpp>

#include <boost/json.hpp>

#include <string>
#include <vector>

namespace vck::sandbox {

namespace statefulset_validation_detail {

using namespace spec_validation;

inline Errors selector_and_template(const json::value* spec) {
    Errors errs;
    const auto* sel = at(spec, "selector");
    const auto* tmpl = at(spec, "template");
    const auto* tmpl_labels = object_at(at(tmpl, "metadata"), "labels");
    if (!sel || sel->is_null()) {
        errs.push_back(field::required("spec.selector"));
    } else {
        const auto* ml = object_at(sel, "matchLabels");
        const auto* me = array_at(sel, "matchExpressions");
        if ((!ml || ml->empty()) && (!me || me->empty())) {
            errs.push_back(field::invalid_go("spec.selector",
                                             "&v1.LabelSelector{MatchLabels:" + go::string_map(ml) +
                                                 ", MatchExpressions:[]v1.LabelSelectorRequirement(nil)}",
                                             "empty selector is invalid for statefulset"));
        } else {
            append(errs, labels_map(ml, "spec.selector.matchLabels"));
            try {
                if (!api::LabelSelector::from_json(*sel).matches(tmpl_labels))
                    errs.push_back(field::invalid_go("spec.template.metadata.labels", go::string_map(tmpl_labels),
                                                     "`selector` does not match template `labels`"));
            } catch (const std::exception& e) {
                errs.push_back(field::invalid("spec.selector", *sel, e.what()));
            }
        }
    }
    if (!tmpl) {
        errs.push_back(field::required("spec.template"));
        return errs;
    }
    append(errs, labels_map(tmpl_labels, "spec.template.labels"));
    const auto* pod_spec = at(tmpl, "spec");
    // Containers mount the claim templates by name without a volume of that name (the
    // controller adds one per claim): kube-apiserver does not refuse those mounts, so the
    // template is checked as if the claims' volumes were there.
    boost::json::value with_claims;
    if (const auto* vcts = at(spec, "volumeClaimTemplates"); vcts && vcts->is_array() && pod_spec && pod_spec->is_object()) {
        with_claims = *pod_spec;
        auto& vols = with_claims.as_object()["volumes"];
        if (!vols.is_array()) vols = boost::json::array();
        for (const auto& vct : vcts->get_array()) {
            auto name = str(at(&vct, "metadata"), "name");
            if (name.empty()) continue;
            bool named = false;
            for (const auto& v : vols.get_array()) named = named || str(&v, "name") == name;
            if (!named)
                vols.get_array().push_back(boost::json::object{
                    {"name", name}, {"persistentVolumeClaim", boost::json::object{{"claimName", name}}}});
        }
        pod_spec = &with_claims;
    }
    append(errs, validate_pod_spec(pod_spec, "spec.template.spec"));
    if (auto rp = str(pod_spec, "restartPolicy"); rp != "Always")
        errs.push_back(field::not_supported("spec.template.spec.restartPolicy", sv(rp), {"Always"}));
    if (has(pod_spec, "activeDeadlineSeconds"))
        errs.push_back(field::forbidden("spec.template.spec.activeDeadlineSeconds", "activeDeadlineSeconds in StatefulSet is not Supported"));
    return errs;
}

} // namespace statefulset_validation_detail

inline std::vector<FieldError> validate_statefulset(const boost::json::value& sts, const boost::json::value* old = nullptr) {
    using namespace statefulset_validation_detail;
    Errors errs;
    const auto* spec = at(&sts, "spec");
    if (auto p = str(spec, "podManagementPolicy"); p.empty()) errs.push_back(field::required("spec.podManagementPolicy"));
    else if (p != "OrderedReady" && p != "Parallel")
        errs.push_back(field::invalid("spec.podManagementPolicy", sv(p), "must be 'OrderedReady' or 'Parallel'"));
    const auto* us = at(spec, "updateStrategy");
    auto type = str(us, "type");
    if (type.empty()) errs.push_back(field::required("spec.updateStrategy"));
    else if (type == "OnDelete" && has(us, "rollingUpdate"))
        errs.push_back(field::invalid("spec.updateStrategy.rollingUpdate", *at(us, "rollingUpdate"),
                                      "only allowed for updateStrategy 'RollingUpdate'"));
    else if (type != "RollingUpdate" && type != "OnDelete")
        errs.push_back(field::invalid("spec.updateStrategy", *us, "must be 'RollingUpdate' or 'OnDelete'"));
    append(errs, non_negative(at(us, "rollingUpdate"), "partition", "spec.updateStrategy.rollingUpdate"));
    const auto* policy = at(spec, "persistentVolumeClaimRetentionPolicy");
    for (const char* k : {"whenDeleted", "whenScaled"})
        append(errs, one_of(policy, k, "spec.persistentVolumeClaimRetentionPolicy." + std::string(k), {"Retain", "Delete"}));
    append(errs, non_negative(spec, "replicas", "spec"));
    append(errs, non_negative(spec, "minReadySeconds", "spec"));
    append(errs, selector_and_template(spec));
    if (old) {
        // Everything but the mutable fields must be as before.
        auto strip = [](const json::value* s) {
            json::object o = s && s->is_object() ? s->get_object() : json::object();
            for (const char* k : {"replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit",
                                  "persistentVolumeClaimRetentionPolicy", "minReadySeconds"})
                o.erase(k);
            return json::value(std::move(o));
        };
        if (strip(spec) != strip(at(old, "spec")))
            errs.push_back(field::forbidden(
                "spec", "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                        "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and "
                        "'minReadySeconds' are forbidden"));
    }
    return errs;
}

} // namespace vck::sandbox
