// WorkloadPods: how the sandbox's kube-controller-manager controllers (endpoints, endpoint
// slices, statefulsets) read pods and point at their owners, as the real ones read them:
// a pod is ready when its Ready condition is True (podutil.IsPodReady), available once it has
// been ready for minReadySeconds, active while it is neither Succeeded, Failed nor being
// deleted (FilterActivePods); a selector is a metav1.LabelSelector (or a Service's plain map).
// Owner references: controller_ref.hpp.
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/api/time.hpp>
#include <vck/sandbox/validation/spec_validation.hpp>

#include <boost/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vck::sandbox::workload_pods {

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
/// FilterActivePods: neither finished nor being deleted.
inline bool active(const json::value& pod) { return !finished(pod) && !terminating(pod); }

/// The Ready condition's transition time when it is True.
inline std::optional<std::chrono::system_clock::time_point> ready_since(const json::value& pod) {
    const auto* conds = at(at(&pod, "status"), "conditions");
    if (conds && conds->is_array())
        for (const auto& c : conds->get_array())
            if (str(&c, "type") == "Ready" && str(&c, "status") == "True") {
                auto t = api::parse_rfc3339(str(&c, "lastTransitionTime"));
                return t ? *t : std::chrono::system_clock::time_point{};
            }
    return std::nullopt;
}

/// Ready for at least minReadySeconds at `now` (podutil.IsPodAvailable).
inline bool available(const json::value& pod, std::int64_t min_ready_seconds, std::chrono::system_clock::time_point now) {
    auto since = ready_since(pod);
    return since && (min_ready_seconds == 0 || *since + std::chrono::seconds(min_ready_seconds) <= now);
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

} // namespace vck::sandbox::workload_pods
