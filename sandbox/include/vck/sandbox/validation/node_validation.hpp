// NodeValidation: what kube-apiserver 1.32 refuses in Nodes (ValidateNode, ValidateNodeUpdate
// of pkg/apis/core/validation), with its messages and field paths:
// - taints: key a qualified name, value a label value, effect NoSchedule / PreferNoSchedule /
//   NoExecute, one taint per key and effect. The real server reports them under
//   "metadata.taints[i]" (its path quirk, kept);
// - spec.podCIDRs: each a CIDR; two at most, one per IP family, no repeats. spec.podCIDR is
//   the first of them (the v1 conversion keeps the two in step: builtin_defaults.hpp);
// - status.capacity and status.allocatable quantities not negative;
// - on update (spec or status): podCIDRs and providerID never change once set, addresses are
//   unique. A spec update is checked as a create too, as the node strategy does.
// Not checked: the deprecated configSource, the taints and preferAvoidPods annotations, and
// that integer resources (pods, extended resources) hold whole numbers (the real message
// prints a resource.Quantity struct with %#v).
#pragma once

#include <vck/api/quantity.hpp>
#include <vck/sandbox/validation/spec_validation.hpp>

#include <arpa/inet.h>

#include <boost/json.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace vck::sandbox {

namespace node_validation_detail {

using namespace spec_validation;

enum class IpFamily { V4, V6 };

/// net.ParseCIDR (as netutils.ParseCIDRSloppy: IPv4 parts may have leading zeros): the
/// family of a valid CIDR, nothing otherwise.
inline std::optional<IpFamily> cidr_family(std::string_view s) {
    auto slash = s.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    auto ip = s.substr(0, slash), mask = s.substr(slash + 1);
    if (mask.empty() || mask.size() > 3) return std::nullopt;
    int bits = 0;
    for (char c : mask) {
        if (c < '0' || c > '9') return std::nullopt;
        bits = bits * 10 + (c - '0');
    }
    if (ip.find(':') != std::string_view::npos) {
        unsigned char buf[16];
        if (bits > 128 || inet_pton(AF_INET6, std::string(ip).c_str(), buf) != 1) return std::nullopt;
        return IpFamily::V6;
    }
    int parts = 0, value = 0, digits = 0;
    for (std::size_t i = 0; i <= ip.size(); ++i) {
        if (i == ip.size() || ip[i] == '.') {
            if (digits == 0 || value > 255) return std::nullopt;
            ++parts;
            value = digits = 0;
        } else if (ip[i] >= '0' && ip[i] <= '9' && digits < 3) {
            value = value * 10 + (ip[i] - '0');
            ++digits;
        } else {
            return std::nullopt;
        }
    }
    if (parts != 4 || bits > 32) return std::nullopt;
    return IpFamily::V4;
}

inline std::vector<std::string> strings(const json::array* list) {
    std::vector<std::string> out;
    if (list)
        for (const auto& v : *list) out.emplace_back(v.is_string() ? std::string(v.get_string()) : "");
    return out;
}


/// Go's %#v of a core.Taint (a set timeAdded prints as a pointer, whose address is arbitrary).
inline std::string taint_go(const json::value& t) {
    return "core.Taint{Key:" + go::quote(str(&t, "key")) + ", Value:" + go::quote(str(&t, "value")) +
           ", Effect:" + go::quote(str(&t, "effect")) + ", TimeAdded:" +
           (has(&t, "timeAdded") ? "(*v1.Time)(0xc000000000)" : "(*v1.Time)(nil)") + "}";
}

/// validateNodeTaints; `path` is where the real server reports them ("metadata.taints").
inline Errors taints(const json::array* list, const std::string& path) {
    Errors errs;
    if (!list) return errs;
    std::set<std::pair<std::string, std::string>> seen;  // effect, key
    for (std::size_t i = 0; i < list->size(); ++i) {
        const auto& t = (*list)[i];
        auto p = index(path, i);
        auto k = str(&t, "key"), value = str(&t, "value"), effect = str(&t, "effect");
        if (auto problem = api::qualified_name_problem(k); !problem.empty())
            errs.push_back(field::invalid(child(p, "key"), sv(k), problem));
        if (auto problem = api::label_value_problem(value); !problem.empty())
            errs.push_back(field::invalid(child(p, "value"), sv(value), problem));
        append(errs, one_of(&t, "effect", child(p, "effect"), {"NoSchedule", "PreferNoSchedule", "NoExecute"}));
        if (!seen.insert({effect, k}).second) {
            errs.push_back(field::duplicate_go(p, taint_go(t), "taints must be unique by key and effect pair"));
            continue;
        }
    }
    return errs;
}

/// ValidateNodeResources: quantities of status.capacity and status.allocatable not negative.
inline Errors resources(const json::value& node) {
    Errors errs;
    for (const char* list : {"capacity", "allocatable"}) {
        const auto* m = object_at(at(&node, "status"), list);
        if (!m) continue;
        std::map<std::string, const json::value*> sorted;
        for (const auto& kv : *m) sorted.emplace(std::string(kv.key()), &kv.value());
        for (const auto& [name, q] : sorted) {
            auto text = q->is_string() ? std::string(q->get_string()) : json::serialize(*q);
            auto value = q->is_number() ? std::optional<double>(q->to_number<double>()) : api::quantity_value(text);
            if (value && *value < 0)
                errs.push_back(field::invalid("status." + std::string(list) + "." + name, sv(text),
                                              "must be greater than or equal to 0"));
        }
    }
    return errs;
}

inline Errors pod_cidrs(const json::value& node) {
    Errors errs;
    auto cidrs = strings(array_at(at(&node, "spec"), "podCIDRs"));
    const std::string path = "spec.podCIDRs";
    std::vector<std::optional<IpFamily>> families;
    for (std::size_t i = 0; i < cidrs.size(); ++i) {
        families.push_back(cidr_family(cidrs[i]));
        if (!families.back())
            errs.push_back(field::invalid(index(path, i), sv(cidrs[i]),
                                          "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"));
    }
    if (cidrs.size() < 2) return errs;
    bool dual_stack = false;
    if (auto bad = std::find(families.begin(), families.end(), std::nullopt); bad != families.end()) {
        // netutils.IsDualStackCIDRStrings fails on the first unparsable one.
        const auto& s = cidrs[static_cast<std::size_t>(bad - families.begin())];
        auto e = field::invalid(path, json::value(nullptr), "");
        e.reason = "InternalError";
        e.message = path + ": Internal error: invalid PodCIDRs. failed to check with dual stack with error:failed to "
                           "parse cidr value:" + go::quote(s) + " with error:invalid CIDR address: " + s;
        errs.push_back(std::move(e));
    } else {
        bool v4 = false, v6 = false;
        for (const auto& f : families) (*f == IpFamily::V4 ? v4 : v6) = true;
        dual_stack = v4 && v6;
    }
    if (!dual_stack || cidrs.size() > 2)
        errs.push_back(field::invalid_go(path, go::string_slice(cidrs), "may specify no more than one CIDR for each IP family"));
    std::set<std::string> seen;
    for (std::size_t i = 0; i < cidrs.size(); ++i)
        if (!seen.insert(cidrs[i]).second) errs.push_back(field::duplicate(index(path, i), sv(cidrs[i])));
    return errs;
}

/// Go's %#v of a core.NodeAddress.
inline std::string address_go(const json::value& a) {
    return "core.NodeAddress{Type:" + go::quote(str(&a, "type")) + ", Address:" + go::quote(str(&a, "address")) + "}";
}

} // namespace node_validation_detail

/// ValidateNode.
inline std::vector<FieldError> validate_node(const boost::json::value& node) {
    using namespace node_validation_detail;
    Errors errs = taints(array_at(at(&node, "spec"), "taints"), "metadata.taints");
    append(errs, resources(node));
    append(errs, pod_cidrs(node));
    return errs;
}

/// ValidateNodeUpdate: what the status subresource is checked for too.
inline std::vector<FieldError> validate_node_status_update(const boost::json::value& node, const boost::json::value& old) {
    using namespace node_validation_detail;
    Errors errs = resources(node);
    const std::string addresses = "status.addresses";
    if (const auto* list = array_at(at(&node, "status"), "addresses")) {
        std::set<std::pair<std::string, std::string>> seen;
        for (std::size_t i = 0; i < list->size(); ++i) {
            const auto& a = (*list)[i];
            if (!seen.insert({str(&a, "type"), str(&a, "address")}).second)
                errs.push_back(field::duplicate_go(index(addresses, i), address_go(a)));
        }
    }
    auto before = strings(array_at(at(&old, "spec"), "podCIDRs"));
    auto now = strings(array_at(at(&node, "spec"), "podCIDRs"));
    const char* cidr_change = "node updates may not change podCIDR except from \"\" to valid";
    if (!before.empty()) {
        if (before.size() != now.size()) errs.push_back(field::forbidden("spec.podCIDRs", cidr_change));
        else
            for (std::size_t i = 0; i < before.size(); ++i)
                if (before[i] != now[i]) errs.push_back(field::forbidden("spec.podCIDRs", cidr_change));
    }
    auto provider = str(at(&old, "spec"), "providerID");
    if (!provider.empty() && provider != str(at(&node, "spec"), "providerID"))
        errs.push_back(field::forbidden("spec.providerID", "node updates may not change providerID except from \"\" to valid"));
    append(errs, taints(array_at(at(&node, "spec"), "taints"), "metadata.taints"));
    if (str(at(&node, "spec"), "externalID") != str(at(&old, "spec"), "externalID"))
        errs.push_back(field::forbidden("spec.externalID", "may not be updated"));
    return errs;
}

/// The node strategy's update: ValidateNode, then ValidateNodeUpdate.
inline std::vector<FieldError> validate_node_update(const boost::json::value& node, const boost::json::value& old) {
    auto errs = validate_node(node);
    spec_validation::append(errs, validate_node_status_update(node, old));
    return errs;
}

} // namespace vck::sandbox
