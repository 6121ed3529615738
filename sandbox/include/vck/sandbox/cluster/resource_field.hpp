// resource_field: the value the kubelet gives a downward API `resourceFieldRef` (an env var's
// valueFrom, or a downwardAPI volume item): a container's resource limit or request, so a
// program learns the limits it runs under. Guarantees, as the kubelet's: `limits.X` is the
// container's limit, or the node's allocatable X when it has none; `requests.X` is its
// request, or its limit when only that is set (kube-apiserver defaults it so), else 0; the
// value is expressed in `divisor` units (default 1), rounded up, as an integer ("50m" CPU is
// "1" core, or "50" with divisor 1m). X is cpu, memory or ephemeral-storage; anything else, or
// a divisor that is not a positive quantity, is an error in the kubelet's words.
#pragma once

#include <vck/api/quantity.hpp>

#include <boost/json.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace vck::sandbox::resource_field {

struct Value {
    std::string text;
};
struct Error {
    std::string message;
};

namespace detail {
/// A quantity as text ("128Mi") or as a number (YAML's `divisor: 1`).
inline std::optional<double> quantity_of(const boost::json::value& v) {
    if (v.is_string()) return api::quantity_value(v.get_string());
    if (v.is_int64()) return static_cast<double>(v.get_int64());
    if (v.is_uint64()) return static_cast<double>(v.get_uint64());
    if (v.is_double()) return v.get_double();
    return std::nullopt;
}
inline std::optional<double> quantity_at(const boost::json::value* obj, const std::string& key) {
    if (!obj || !obj->is_object()) return std::nullopt;
    const auto* v = obj->as_object().if_contains(key);
    return v ? quantity_of(*v) : std::nullopt;
}
} // namespace detail

/// `ref` is the resourceFieldRef object; `resources` the container's spec.resources;
/// `allocatable` the node's status.allocatable (null when unknown: a missing limit is then 0).
inline std::variant<Value, Error> value_of(const boost::json::object& ref, const boost::json::value& resources,
                                           const boost::json::value& allocatable) {
    const auto* r = ref.if_contains("resource");
    std::string resource = r && r->is_string() ? std::string(r->get_string()) : std::string();
    auto dot = resource.find('.');
    std::string kind = dot == std::string::npos ? "" : resource.substr(0, dot);
    std::string name = dot == std::string::npos ? "" : resource.substr(dot + 1);
    if ((kind != "limits" && kind != "requests") || (name != "cpu" && name != "memory" && name != "ephemeral-storage"))
        return Error{"unsupported container resource : " + resource};
    const boost::json::value* limits = nullptr;
    const boost::json::value* requests = nullptr;
    if (resources.is_object()) {
        limits = resources.as_object().if_contains("limits");
        requests = resources.as_object().if_contains("requests");
    }
    std::optional<double> v;
    if (kind == "limits") {
        v = detail::quantity_at(limits, name);
        if (!v) v = detail::quantity_at(&allocatable, name);
    } else {
        v = detail::quantity_at(requests, name);
        if (!v) v = detail::quantity_at(limits, name);
    }
    double divisor = 1;
    if (const auto* dv = ref.if_contains("divisor")) {
        auto d = detail::quantity_of(*dv);
        if (!d || *d <= 0) return Error{"invalid divisor for resource " + resource};
        divisor = *d;
    }
    // Rounded up: a fraction of a unit still needs the whole unit (the kubelet's
    // ConvertResourceCPUToString and ...MemoryToString), with room for the double's error.
    double units = std::ceil(v.value_or(0) / divisor - 1e-9);
    return Value{std::to_string(static_cast<std::int64_t>(units))};
}

} // namespace vck::sandbox::resource_field
