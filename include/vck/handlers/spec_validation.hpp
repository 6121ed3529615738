// SpecValidation: what a VolumeManager spec must satisfy, whatever its volumes' source types,
// before anything is built from it. validate_spec(spec) returns the first failure or nullopt,
// spec_problems(spec) all of them with their field paths (for an admission webhook);
// it reads the spec only (pure, no cluster), so a reconciler can call it on every pass, and a
// spec it accepts has at least one volume, unique non-empty ids, label keys and values the API
// server accepts on the objects they are copied onto, numbers in their documented ranges, and
// tolerations and required node affinity the API server accepts on a pod. The CRD schema
// refuses most of this at admission already; this is the same rule set for objects that never
// met it (an older CRD without a schema, a bypassed webhook), worded as kube-apiserver words
// it. The checks of one source type (options, access mode) stay in its handler's validate(vc).
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/label_selector.hpp>
#include <vck/api/quantity.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/option_values.hpp>

#include <charconv>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vck::handlers {

/// The longest volume id (the schema's maxLength; ids reach object names only hashed).
inline constexpr std::size_t max_volume_id_length = 253;

namespace spec_validation_detail {

inline std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

inline std::string invalid(std::string_view field, std::string_view value, std::string_view detail) {
    return std::string(field) + ": Invalid value: " + quoted(value) + ": " + std::string(detail);
}

} // namespace spec_validation_detail

/// Why kube-apiserver refuses `key` as a label key, or `value` as a label value, in its
/// words; "" when valid.
inline std::string label_key_problem(std::string_view key) { return api::qualified_name_problem(key); }
using api::label_value_problem;

/// The first label of `labels` the API server would refuse, as `labels: Invalid value: ...`.
inline std::optional<std::string> validate_labels(const api::Labels& labels) {
    for (const auto& [k, v] : labels) {
        if (auto p = label_key_problem(k); !p.empty()) return spec_validation_detail::invalid("labels", k, p);
        if (auto p = label_value_problem(v); !p.empty()) return spec_validation_detail::invalid("labels", v, p);
    }
    return std::nullopt;
}

/// A capacity (when set): a quantity (api/quantity.hpp) greater than zero and below 8Ei
/// (2^63 bytes, the largest a Quantity's int64 value holds).
inline std::optional<std::string> validate_capacity(const std::string& capacity) {
    if (capacity.empty()) return std::nullopt;  // the handler's default (5Gi) applies
    auto q = api::quantity_value(capacity);
    if (!q)
        return spec_validation_detail::invalid("capacity", capacity,
                                               "must be a quantity such as 5Gi, 500Mi, .5Gi or 1e9");
    if (!(*q > 0)) return spec_validation_detail::invalid("capacity", capacity, "must be greater than zero");
    if (*q >= 0x1p63) return spec_validation_detail::invalid("capacity", capacity, "must be less than 8Ei");
    return std::nullopt;
}

/// The tolerations' rules of pod validation: a download pod carrying one it breaks is refused.
inline std::optional<std::string> validate_tolerations(const std::vector<api::Toleration>& tolerations) {
    using spec_validation_detail::invalid;
    for (std::size_t i = 0; i < tolerations.size(); ++i) {
        const auto& t = tolerations[i];
        std::string at = "tolerations[" + std::to_string(i) + "]";
        if (!t.key.empty())
            if (auto p = label_key_problem(t.key); !p.empty()) return invalid(at + ".key", t.key, p);
        if (t.key.empty() && t.operator_ != "Exists")
            return invalid(at + ".operator", t.operator_,
                           "operator must be Exists when `key` is empty, which means \"match all values and all keys\"");
        if (t.tolerationSeconds && t.effect != "NoExecute")
            return invalid(at + ".effect", t.effect, "effect must be 'NoExecute' when `tolerationSeconds` is set");
        if (t.operator_ == "" || t.operator_ == "Equal") {
            if (auto p = label_value_problem(t.value); !p.empty()) return invalid(at + ".value", t.value, p);
        } else if (t.operator_ == "Exists") {
            if (!t.value.empty())
                return invalid(at + ".operator", t.value, "value must be empty when `operator` is 'Exists'");
        } else {
            return at + ".operator: Unsupported value: " + spec_validation_detail::quoted(t.operator_) +
                   ": supported values: \"Equal\", \"Exists\"";
        }
        if (t.effect != "" && t.effect != "NoSchedule" && t.effect != "PreferNoSchedule" && t.effect != "NoExecute")
            return at + ".effect: Unsupported value: " + spec_validation_detail::quoted(t.effect) +
                   ": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"";
    }
    return std::nullopt;
}

/// The required node affinity's rules of pod validation, and Gt/Lt values that are int64
/// integers (the scheduler matches no node otherwise). The preferred terms are kept as
/// given (api::NodeAffinity) and left to the schema.
inline std::optional<std::string> validate_node_affinity(const std::optional<api::NodeAffinity>& affinity) {
    using spec_validation_detail::invalid;
    if (!affinity || !affinity->requiredDuringSchedulingIgnoredDuringExecution) return std::nullopt;
    const std::string base = "nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
    const auto& terms = affinity->requiredDuringSchedulingIgnoredDuringExecution->nodeSelectorTerms;
    if (terms.empty()) return base + ": Required value: must have at least one node selector term";
    for (std::size_t t = 0; t < terms.size(); ++t) {
        const auto& exprs = terms[t].matchExpressions;
        for (std::size_t i = 0; i < exprs.size(); ++i) {
            const auto& r = exprs[i];
            std::string at = base + "[" + std::to_string(t) + "].matchExpressions[" + std::to_string(i) + "]";
            if (r.operator_ == "In" || r.operator_ == "NotIn") {
                if (r.values.empty())
                    return at + ".values: Required value: must be specified when `operator` is 'In' or 'NotIn'";
            } else if (r.operator_ == "Exists" || r.operator_ == "DoesNotExist") {
                if (!r.values.empty())
                    return at + ".values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'";
            } else if (r.operator_ == "Gt" || r.operator_ == "Lt") {
                if (r.values.size() != 1)
                    return at + ".values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'";
                const auto& v = r.values[0];
                std::int64_t n = 0;
                auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
                if (v.empty() || ec != std::errc() || end != v.data() + v.size())
                    return invalid(at + ".values[0]", v, "must be an integer (int64) when `operator` is 'Lt' or 'Gt'");
            } else {
                return invalid(at + ".operator", r.operator_, "not a valid selector operator");
            }
            if (auto p = label_key_problem(r.key); !p.empty()) return invalid(at + ".key", r.key, p);
        }
        const auto& fields = terms[t].matchFields;
        for (std::size_t i = 0; i < fields.size(); ++i) {
            const auto& r = fields[i];
            std::string at = base + "[" + std::to_string(t) + "].matchFields[" + std::to_string(i) + "]";
            if (r.key != "metadata.name") return invalid(at + ".key", r.key, "not a valid field selector key");
            if (r.operator_ != "In" && r.operator_ != "NotIn")
                return invalid(at + ".operator", r.operator_, "not a valid selector operator");
            if (r.values.size() != 1)
                return at + ".values: Required value: must be only one value when `operator` is 'In' or 'NotIn' "
                            "for node field selector";
        }
    }
    return std::nullopt;
}

/// The checks of one volume that hold for every source type, unprefixed ("labels: ..."), for a
/// volume's own status message: id, replicas within [1, max_replicas], capacity, labels,
/// tolerations and required node affinity, each check's first failure, in that order (all of
/// them, for an admission webhook; validate_volume_config keeps the first).
inline std::vector<std::string> volume_config_problems(const api::VolumeConfig& vc) {
    std::vector<std::string> out;
    if (vc.id.empty()) out.push_back("id: Required value");
    if (vc.id.size() > max_volume_id_length)
        out.push_back("id: Too long: may not be more than " + std::to_string(max_volume_id_length) + " bytes");
    if (vc.replicas < 1 || vc.replicas > max_replicas)
        out.push_back("replicas: Invalid value: " + std::to_string(vc.replicas) + ": must be between 1 and " +
                      std::to_string(max_replicas) + ", inclusive");
    for (auto e : {validate_capacity(vc.capacity), validate_labels(vc.labels), validate_tolerations(vc.tolerations),
                   validate_node_affinity(vc.nodeAffinity)})
        if (e) out.push_back(std::move(*e));
    return out;
}

/// The first of volume_config_problems, or nullopt.
inline std::optional<std::string> validate_volume_config(const api::VolumeConfig& vc) {
    auto all = volume_config_problems(vc);
    if (all.empty()) return std::nullopt;
    return std::move(all.front());
}

/// One reason a spec cannot be served.
struct SpecProblem {
    std::string field;    // its full path: "spec.state", "spec.volumeConfigs[1].replicas"
    std::string message;  // without the path: "Invalid value: ...", or the original's words
    std::string text;     // as validate_spec words it (the status message and events)
};

namespace spec_validation_detail {
/// Splits "field: detail" (every message of these checks starts with its field).
inline std::pair<std::string, std::string> split_field(const std::string& m) {
    auto at = m.find(": ");
    if (at == std::string::npos) return {"", m};
    return {m.substr(0, at), m.substr(at + 2)};
}
} // namespace spec_validation_detail

/// Every reason `spec` cannot be served, in validate_spec's order: no volume at all (also the
/// older `spec.volumes` spelling, which is named), an unknown desired state, then each volume
/// in document order: a duplicate id, then volume_config_problems, prefixed with
/// `volume "ID": ` in `text`. Per-type checks are not made here: a caller still asks each
/// volume's handler.
inline std::vector<SpecProblem> spec_problems(const api::VolumeManagerSpec& spec) {
    using spec_validation_detail::split_field;
    std::vector<SpecProblem> out;
    auto add = [&](std::string field_prefix, std::string text, std::string unprefixed) {
        auto [field, message] = split_field(unprefixed);
        out.push_back({field_prefix + (field_prefix.empty() || field.empty() ? "" : ".") + field, message, std::move(text)});
    };
    if (spec.volumeConfigs.empty()) {
        std::string m = spec.unknown.contains("volumes")
                            ? "spec.volumeConfigs: Required value: spec.volumes is the older KVC spelling, rename it to "
                              "spec.volumeConfigs"
                            : "spec.volumeConfigs: Required value: at least one volume config is needed";
        add("", m, m);
    }
    const auto& state = spec.state;
    if (!state.empty() && !api::parse_volume_manager_state(state)) {
        std::string m = "spec.state: Unsupported value: " + spec_validation_detail::quoted(state) +
                        ": supported values: \"Pending\", \"Running\", \"Failed\", \"Completed\"";
        add("", m, m);
    }
    std::set<std::string_view> ids;
    for (std::size_t i = 0; i < spec.volumeConfigs.size(); ++i) {
        const auto& vc = spec.volumeConfigs[i];
        std::string at = "spec.volumeConfigs[" + std::to_string(i) + "]";
        if (!ids.insert(vc.id).second) {
            std::string m = "volume id \"" + vc.id + "\" is used more than once";
            out.push_back({at + ".id", m, m});
        }
        for (const auto& e : volume_config_problems(vc)) add(at, "volume \"" + vc.id + "\": " + e, e);
    }
    return out;
}

/// The first reason `spec` cannot be served (spec_problems' first), or nullopt.
inline std::optional<std::string> validate_spec(const api::VolumeManagerSpec& spec) {
    auto all = spec_problems(spec);
    if (all.empty()) return std::nullopt;
    return std::move(all.front().text);
}

} // namespace vck::handlers
