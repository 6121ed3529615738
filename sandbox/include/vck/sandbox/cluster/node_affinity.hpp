// NodeAffinityMatch: whether a node satisfies a pod's nodeSelector, a required node affinity,
// a PersistentVolume's nodeAffinity, or a set of tolerations for its taints, with the exact
// semantics of Kubernetes' component-helpers: terms are ORed, a term's requirements ANDed, an
// empty term list or empty term matches nothing; Gt/Lt compare integers; matchFields supports
// metadata.name; a toleration with an empty key and operator Exists tolerates every taint.
#pragma once

#include <vck/api/core_v1.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vck::sandbox {

/// The labels and name of a node, as the matchers read them.
struct NodeFacts {
    std::string name;
    std::map<std::string, std::string> labels;
};

namespace node_affinity_detail {

inline std::optional<long long> to_int(const std::string& s) {
    long long v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return v;
}

inline bool requirement_matches(const api::NodeSelectorRequirement& r, const std::optional<std::string>& value) {
    const auto& op = r.operator_;
    auto in = [&] { return value && std::find(r.values.begin(), r.values.end(), *value) != r.values.end(); };
    if (op == "In") return in();
    if (op == "NotIn") return !in();
    if (op == "Exists") return value.has_value();
    if (op == "DoesNotExist") return !value.has_value();
    if (op == "Gt" || op == "Lt") {
        if (!value || r.values.size() != 1) return false;
        auto have = to_int(*value);
        auto want = to_int(r.values.front());
        if (!have || !want) return false;
        return op == "Gt" ? *have > *want : *have < *want;
    }
    return false;  // an unknown operator never matches, as the real validation would refuse it
}

} // namespace node_affinity_detail

inline bool term_matches(const api::NodeSelectorTerm& term, const NodeFacts& node) {
    if (term.matchExpressions.empty() && term.matchFields.empty()) return false;
    for (const auto& r : term.matchExpressions) {
        auto it = node.labels.find(r.key);
        std::optional<std::string> v;
        if (it != node.labels.end()) v = it->second;
        if (!node_affinity_detail::requirement_matches(r, v)) return false;
    }
    for (const auto& r : term.matchFields) {
        if (r.key != "metadata.name") return false;
        if (!node_affinity_detail::requirement_matches(r, node.name)) return false;
    }
    return true;
}

inline bool node_selector_matches(const api::NodeSelector& sel, const NodeFacts& node) {
    for (const auto& t : sel.nodeSelectorTerms)
        if (term_matches(t, node)) return true;
    return false;
}

/// nodeSelector and requiredDuringSchedulingIgnoredDuringExecution, both of which must hold.
inline bool pod_matches_node(const api::PodSpec& spec, const NodeFacts& node) {
    for (const auto& [k, v] : spec.nodeSelector) {
        auto it = node.labels.find(k);
        if (it == node.labels.end() || it->second != v) return false;
    }
    if (spec.affinity && spec.affinity->nodeAffinity && spec.affinity->nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution)
        return node_selector_matches(*spec.affinity->nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution, node);
    return true;
}

inline bool tolerates(const api::Toleration& t, const api::Taint& taint) {
    if (!t.effect.empty() && t.effect != taint.effect) return false;
    if (!t.key.empty() && t.key != taint.key) return false;
    if (t.operator_ == "Exists") return true;
    if (t.operator_.empty() || t.operator_ == "Equal") return t.value == taint.value;
    return false;
}

inline bool tolerated(const std::vector<api::Toleration>& ts, const api::Taint& taint) {
    return std::any_of(ts.begin(), ts.end(), [&](const auto& t) { return tolerates(t, taint); });
}

} // namespace vck::sandbox
