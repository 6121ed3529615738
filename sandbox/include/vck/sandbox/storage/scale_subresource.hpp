// ScaleSubresource: the autoscaling/v1 Scale view of any resource whose registry entry
// serves the "scale" subresource with spec.replicas, status.replicas and spec.selector
// (Deployments, ReplicaSets, StatefulSets), as kube-apiserver's scale REST storage answers it.
// scale_of() is what GET/PUT/PATCH .../scale return: metadata (name, namespace, uid,
// resourceVersion, creationTimestamp) of the object, spec.replicas, status.replicas and
// status.selector as a selector string ("app=web"). A write of the Scale changes only the
// object's spec.replicas (validate_scale: not negative, worded as ValidateScale); the object's
// own update strategy then runs (generation, validation), so the object's rules still hold.
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/sandbox/validation/field_error.hpp>
#include <vck/sandbox/validation/spec_validation.hpp>

#include <boost/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace vck::sandbox {

/// The autoscaling/v1 Scale of `obj` (a stored object of a resource with a scale subresource).
inline boost::json::value scale_of(const boost::json::value& obj) {
    namespace json = boost::json;
    using namespace spec_validation;
    const auto* md = at(&obj, "metadata");
    json::object meta;
    for (const char* k : {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"})
        if (const auto* v = at(md, k)) meta[k] = *v;
    const auto* spec = at(&obj, "spec");
    std::string selector;
    if (const auto* sel = at(spec, "selector"); sel && sel->is_object()) {
        try {
            selector = api::LabelSelector::from_json(*sel).to_string();
        } catch (const std::exception&) {
        }
    }
    json::object status{{"replicas", integer(at(&obj, "status"), "replicas").value_or(0)}};
    if (!selector.empty()) status["selector"] = selector;
    return json::object{{"kind", "Scale"},
                        {"apiVersion", "autoscaling/v1"},
                        {"metadata", std::move(meta)},
                        {"spec", json::object{{"replicas", integer(spec, "replicas").value_or(0)}}},
                        {"status", std::move(status)}};
}

/// ValidateScale: spec.replicas not negative.
inline std::vector<FieldError> validate_scale(const boost::json::value& scale) {
    using namespace spec_validation;
    if (auto r = integer(at(&scale, "spec"), "replicas"); r && *r < 0)
        return {field::invalid("spec.replicas", boost::json::value(*r), "must be greater than or equal to 0")};
    return {};
}

/// `obj` with the replicas a (validated) Scale asks for.
inline boost::json::value scaled(boost::json::value obj, const boost::json::value& scale) {
    using namespace spec_validation;
    auto replicas = integer(at(&scale, "spec"), "replicas").value_or(0);
    auto& o = obj.as_object();
    if (!o["spec"].is_object()) o["spec"] = boost::json::object();
    o["spec"].as_object()["replicas"] = replicas;
    return obj;
}

} // namespace vck::sandbox
