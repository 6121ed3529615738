// ServiceValidation: what kube-apiserver 1.32 refuses in a core/v1 Service (ValidateService and
// ValidateServiceUpdate of pkg/apis/core/validation), with its messages and field paths, for a
// single-stack IPv4 cluster:
// - spec.type one of ClusterIP, ExternalName, LoadBalancer, NodePort; sessionAffinity ClientIP
//   or None;
// - spec.ports required unless the service is headless (clusterIP None) or ExternalName; each
//   port 1-65535, protocol SCTP/TCP/UDP, a name (a DNS label) required when there is more
//   than one port and unique, targetPort a port number or an IANA name; a nodePort only
//   for NodePort and LoadBalancer services, in 30000-32767;
// - spec.clusterIP "", "None" or an IPv4 address; "None" is refused for NodePort and
//   LoadBalancer; spec.selector's labels valid;
// - on update the primary cluster IP never changes once set ("may not change once set").
// Allocation (service_allocation.hpp) has filled in the cluster IP and node ports before this
// runs, so an update that leaves them out keeps them.
#pragma once

#include <vck/sandbox/validation/pod_validation.hpp>
#include <vck/sandbox/validation/spec_validation.hpp>

#include <arpa/inet.h>
#include <boost/json.hpp>

#include <set>
#include <string>
#include <vector>

namespace vck::sandbox {

namespace service_validation_detail {

using namespace spec_validation;

/// The node port range of a default kube-apiserver (--service-node-port-range).
inline constexpr std::int64_t node_port_min = 30000;
inline constexpr std::int64_t node_port_max = 32767;

inline bool is_ipv4(const std::string& ip) {
    unsigned char buf[4];
    return inet_pton(AF_INET, ip.c_str(), buf) == 1;
}

inline Errors service_ports(const json::value* spec, const std::string& type) {
    Errors errs;
    const auto* list = array_at(spec, "ports");
    if (!list) return errs;
    const bool require_name = list->size() > 1;
    std::set<std::string> names;
    for (std::size_t i = 0; i < list->size(); ++i) {
        const auto& port = (*list)[i];
        auto p = index("spec.ports", i);
        auto name = str(&port, "name");
        if (name.empty()) {
            if (require_name) errs.push_back(field::required(child(p, "name")));
        } else {
            // A service port's name is a DNS label (unlike a container port's IANA name).
            auto problems = validate_dns1123_label(name, child(p, "name"));
            append(errs, problems);
            if (problems.empty() && !names.insert(name).second)
                errs.push_back(field::duplicate(child(p, "name"), sv(name)));
        }
        append(errs, one_of(&port, "protocol", child(p, "protocol"), {"SCTP", "TCP", "UDP"}));
        append(errs, port_number(integer(&port, "port").value_or(0), child(p, "port")));
        if (const auto* target = at(&port, "targetPort"); target && target->is_string()) {
            std::string t(target->get_string());
            for (const auto& m : pod_validation_detail::port_name_problems(t))
                errs.push_back(field::invalid(child(p, "targetPort"), sv(t), m));
        } else {
            append(errs, port_number(integer(&port, "targetPort").value_or(0), child(p, "targetPort")));
        }
        if (auto np = integer(&port, "nodePort").value_or(0); np != 0) {
            if (type != "NodePort" && type != "LoadBalancer")
                errs.push_back(field::forbidden(child(p, "nodePort"), "may not be used when `type` is '" + type + "'"));
            else if (np < node_port_min || np > node_port_max)
                errs.push_back(field::invalid(child(p, "nodePort"), json::value(np),
                                              "provided port is not in the valid range. The range of valid ports is 30000-32767"));
        }
    }
    return errs;
}

inline std::vector<std::string> cluster_ips(const json::value* spec) {
    std::vector<std::string> out;
    if (const auto* ips = array_at(spec, "clusterIPs"))
        for (const auto& ip : *ips) out.push_back(ip.is_string() ? std::string(ip.get_string()) : "");
    return out;
}

} // namespace service_validation_detail

inline std::vector<FieldError> validate_service(const boost::json::value& svc, const boost::json::value* old = nullptr) {
    using namespace service_validation_detail;
    Errors errs;
    const auto* spec = at(&svc, "spec");
    auto type = str(spec, "type");
    append(errs, one_of(spec, "type", "spec.type", {"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"}));
    append(errs, one_of(spec, "sessionAffinity", "spec.sessionAffinity", {"ClientIP", "None"}));
    auto cluster_ip = str(spec, "clusterIP");
    const bool headless = cluster_ip == "None";
    if (type != "ExternalName") {
        const auto* ports = array_at(spec, "ports");
        if ((!ports || ports->empty()) && !headless) errs.push_back(field::required("spec.ports"));
        if (headless && (type == "NodePort" || type == "LoadBalancer"))
            errs.push_back(field::invalid("spec.clusterIPs[0]", sv(cluster_ip), "may not be set to 'None' for " + type + " services"));
        else if (!cluster_ip.empty() && !headless && !is_ipv4(cluster_ip))
            errs.push_back(field::invalid("spec.clusterIPs[0]", sv(cluster_ip),
                                          "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"));
    } else if (str(spec, "externalName").empty()) {
        errs.push_back(field::required("spec.externalName"));
    }
    append(errs, service_ports(spec, type));
    append(errs, labels_map(object_at(spec, "selector"), "spec.selector"));
    if (old) {
        auto before = cluster_ips(at(old, "spec"));
        auto now = cluster_ips(spec);
        if (!before.empty() && !before.front().empty() && str(at(old, "spec"), "type") != "ExternalName" &&
            type != "ExternalName" && (now.empty() || now.front() != before.front()))
            errs.push_back(field::invalid_go("spec.clusterIPs[0]", go::string_slice(now), "may not change once set"));
    }
    return errs;
}

} // namespace vck::sandbox
