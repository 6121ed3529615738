// NodeMatch: whether a node satisfies a volume's required node affinity, the way the
// scheduler reads a NodeSelector (terms ORed, a term's requirements ANDed, an empty term
// matches nothing; matchFields knows metadata.name only). Used to count the nodes a volume's
// replicas may land on and to pick the nodes of Local volumes. Taints are not considered.
#pragma once

#include <vck/api/core_v1.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vck::handlers {

/// The well-known label the kubelet sets to the node's hostname.
inline constexpr std::string_view hostname_label = "kubernetes.io/hostname";

inline bool node_requirement_holds(const api::NodeSelectorRequirement& r, const std::optional<std::string>& v) {
    auto in = [&] { return v && std::find(r.values.begin(), r.values.end(), *v) != r.values.end(); };
    auto number = [](std::string_view s) {
        long long n = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
        return ec == std::errc() && p == s.data() + s.size() ? std::optional<long long>(n) : std::nullopt;
    };
    if (r.operator_ == "In") return in();
    if (r.operator_ == "NotIn") return !in();
    if (r.operator_ == "Exists") return v.has_value();
    if (r.operator_ == "DoesNotExist") return !v.has_value();
    if ((r.operator_ == "Gt" || r.operator_ == "Lt") && v && r.values.size() == 1) {
        auto a = number(*v), b = number(r.values[0]);
        return a && b && (r.operator_ == "Gt" ? *a > *b : *a < *b);
    }
    return false;
}

/// Whether `node` satisfies the required part of `affinity` (always, when there is none).
inline bool node_matches(const api::Node& node, const std::optional<api::NodeAffinity>& affinity) {
    if (!affinity || !affinity->requiredDuringSchedulingIgnoredDuringExecution) return true;
    for (const auto& term : affinity->requiredDuringSchedulingIgnoredDuringExecution->nodeSelectorTerms) {
        if (term.matchExpressions.empty() && term.matchFields.empty()) continue;
        bool all = true;
        for (const auto& r : term.matchExpressions) {
            auto it = node.metadata.labels.find(r.key);
            all = all && node_requirement_holds(r, it == node.metadata.labels.end()
                                                       ? std::nullopt
                                                       : std::optional<std::string>(it->second));
        }
        for (const auto& r : term.matchFields)
            all = all && node_requirement_holds(r, r.key == "metadata.name"
                                                       ? std::optional<std::string>(node.metadata.name)
                                                       : std::nullopt);
        if (all) return true;
    }
    return false;
}

/// The nodes of `nodes` that satisfy `affinity`.
inline std::vector<api::Node> matching_nodes(const std::vector<api::Node>& nodes,
                                             const std::optional<api::NodeAffinity>& affinity) {
    std::vector<api::Node> out;
    for (const auto& n : nodes)
        if (node_matches(n, affinity)) out.push_back(n);
    return out;
}

/// The replica-count check of download handlers: the original's message, naming the
/// nodeAffinity when it is what narrowed the nodes down.
inline std::optional<std::string> check_replicas_fit(std::int64_t replicas, const std::vector<api::Node>& nodes,
                                                     const std::optional<api::NodeAffinity>& affinity) {
    auto eligible = matching_nodes(nodes, affinity).size();
    if (replicas <= static_cast<std::int64_t>(eligible)) return std::nullopt;
    std::string msg = "replicas [" + std::to_string(replicas) + "] greater than number of nodes [" +
                      std::to_string(eligible) + "]";
    if (eligible < nodes.size()) msg += " matching the volume's nodeAffinity";
    return msg;
}

} // namespace vck::handlers
