// WorkloadPods: how the sandbox's kube-controller-manager controllers (endpoints, endpoint
// slices, statefulsets) read pods and point at their owners, as the real ones read them:
// a pod is ready when its Ready condition is True (podutil.IsPodReady), active while it is
// neither Succeeded, Failed nor being deleted; a selector is a metav1.LabelSelector (or a
// Service's plain map); an owner reference is the controller one the real controllers set.
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/testing/spec_validation.hpp>

#include <boost/json.hpp>

#include <string>
#include <string_view>

namespace vck::testing::workload_pods {

namespace json = boost::json;

// Reading decoded JSON: at(v, key) and str(v, key) ("" when absent), as validation reads it.
using spec_validation::at;
using spec_validation::str;

inline std::string meta(const json::value& obj, std::string_view key) { return str(at(&obj, "metadata"), key); }

inline bool ready(const json::value& pod) {
    const auto* conds = at(at(&pod, "status"), "conditions");
    if (!conds || !conds->is_array()) return false;
    for (const auto& c : conds->get_array())
        if (str(&c, "type") == "Ready") return str(&c, "status") == "True";
    return false;
}

inline bool terminating(const json::value& pod) { return !meta(pod, "deletionTimestamp").empty(); }

inline bool finished(const json::value& pod) {
    auto phase = str(at(&pod, "status"), "phase");
    return phase == "Succeeded" || phase == "Failed";
}

/// Whether the labels of `obj` match a metav1.LabelSelector (an empty one matches all).
inline bool selected_by(const json::value& obj, const json::value& label_selector) {
    const auto* labels = at(at(&obj, "metadata"), "labels");
    try {
        return api::LabelSelector::from_json(label_selector).matches(labels ? labels->if_object() : nullptr);
    } catch (const std::exception&) {
        return false;
    }
}

/// The controller ownerReference the real controllers put on what they create (list items
/// carry no kind, so the owner's apiVersion and kind are given).
inline json::object controller_ref(const json::value& owner, std::string_view api_version, std::string_view kind) {
    return json::object{{"apiVersion", api_version}, {"kind", kind},
                        {"name", meta(owner, "name")},         {"uid", meta(owner, "uid")},
                        {"controller", true},                  {"blockOwnerDeletion", true}};
}

/// Whether `obj` is controlled by the object with uid `owner_uid`.
inline bool controlled_by(const json::value& obj, std::string_view owner_uid) {
    const auto* refs = at(at(&obj, "metadata"), "ownerReferences");
    if (!refs || !refs->is_array()) return false;
    for (const auto& r : refs->get_array())
        if (str(&r, "uid") == owner_uid) {
            const auto* c = at(&r, "controller");
            return c && c->is_bool() && c->get_bool();
        }
    return false;
}

} // namespace vck::testing::workload_pods
