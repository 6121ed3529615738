// ServiceAllocation: the cluster IPs and node ports kube-apiserver's Service registry hands
// out, over the services already stored (no separate allocator state: a deleted service's
// addresses are free at once, as the real bitmap frees them).
// - The service CIDR is 10.96.0.0/12 (kubeadm's default); a service that asks for no cluster IP
//   gets a free random one (10.96.0.1 is what the `kubernetes` service asks for); "None" stays
//   headless; an address outside the range or in use refuses the create with the real text.
// - NodePort and LoadBalancer ports without a nodePort get a free random one in 30000-32767;
//   a nodePort in use by another service refuses the write.
// - An update that leaves clusterIP (or a nodePort) out keeps the one allocated before; one
//   that changes only clusterIP carries it into clusterIPs, so validation sees the change.
// - Every non-ExternalName service is single-stack IPv4 (ipFamilies [IPv4],
//   ipFamilyPolicy SingleStack).
#pragma once

#include <vck/sandbox/validation/field_error.hpp>
#include <vck/sandbox/validation/service_validation.hpp>
#include <vck/sandbox/storage/store_state.hpp>

#include <arpa/inet.h>
#include <boost/json.hpp>

#include <cstdint>
#include <random>
#include <set>
#include <string>

namespace vck::sandbox {

namespace service_allocation_detail {

namespace json = boost::json;

inline constexpr std::uint32_t cidr_base = (10u << 24) | (96u << 16);  // 10.96.0.0
inline constexpr std::uint32_t cidr_size = 1u << 20;                  // /12
inline constexpr const char* cidr_text = "10.96.0.0/12";

inline std::string ip_text(std::uint32_t ip) {
    return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 255) + "." + std::to_string((ip >> 8) & 255) +
           "." + std::to_string(ip & 255);
}

inline bool parse_ip(const std::string& text, std::uint32_t& out) {
    in_addr a{};
    if (inet_pton(AF_INET, text.c_str(), &a) != 1) return false;
    out = ntohl(a.s_addr);
    return true;
}

inline json::object& spec_of(json::value& svc) {
    auto& spec = svc.as_object()["spec"];
    if (!spec.is_object()) spec = json::object();
    return spec.get_object();
}

inline std::string text_at(const json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

inline std::int64_t int_at(const json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    return v && v->is_int64() ? v->get_int64() : 0;
}

[[noreturn]] inline void refuse(const json::value& svc, FieldError e) {
    const auto* md = svc.as_object().if_contains("metadata");
    std::string name = md && md->is_object() ? text_at(md->get_object(), "name") : "";
    throw StoreError(store_status::invalid("Service", "", name, {std::move(e)}));
}

} // namespace service_allocation_detail

/// Fills in spec.clusterIP(s), ipFamilies, ipFamilyPolicy and nodePorts of `svc` (a create
/// when `old` is null) from what the other stored services use; refuses what it cannot give.
inline void allocate_service_addresses(StoreState& s, const ResourceInfo& r, json::value& svc, const json::value* old) {
    using namespace service_allocation_detail;
    auto& spec = spec_of(svc);
    const auto type = text_at(spec, "type");
    if (type == "ExternalName") return;
    const auto* old_spec = old ? old->as_object().if_contains("spec") : nullptr;
    const auto* olds = old_spec && old_spec->is_object() ? &old_spec->get_object() : nullptr;

    // What the other services hold.
    const auto my_ns = text_at(svc.as_object()["metadata"].as_object(), "namespace");
    const auto my_name = text_at(svc.as_object()["metadata"].as_object(), "name");
    std::set<std::uint32_t> ips_used;
    std::set<std::int64_t> ports_used;
    if (auto b = s.data.find(r.storage_key()); b != s.data.end())
        for (const auto& [key, other] : b->second) {
            const auto& md = other.at("metadata").as_object();
            if (text_at(md, "namespace") == my_ns && text_at(md, "name") == my_name) continue;
            const auto* os = other.as_object().if_contains("spec");
            if (!os || !os->is_object()) continue;
            std::uint32_t ip = 0;
            if (parse_ip(text_at(os->get_object(), "clusterIP"), ip)) ips_used.insert(ip);
            if (const auto* ps = os->get_object().if_contains("ports"); ps && ps->is_array())
                for (const auto& p : ps->get_array())
                    if (p.is_object())
                        if (auto np = int_at(p.get_object(), "nodePort"); np) ports_used.insert(np);
        }

    auto ip = text_at(spec, "clusterIP");
    auto ips = spec.if_contains("clusterIPs");
    const bool ips_given = ips && ips->is_array() && !ips->get_array().empty();
    if (olds) {
        auto old_ip = text_at(*olds, "clusterIP");
        if (ip.empty() && !ips_given && !old_ip.empty() && text_at(*olds, "type") != "ExternalName") {
            spec["clusterIP"] = old_ip;
            if (const auto* oips = olds->if_contains("clusterIPs")) spec["clusterIPs"] = *oips;
            ip = old_ip;
        } else if (!ip.empty() && (!ips_given || (ip != old_ip && olds->contains("clusterIPs") &&
                                                   json::value(*ips) == olds->at("clusterIPs")))) {
            spec["clusterIPs"] = json::array{json::string(ip)};
        }
    } else if (ip.empty() && ips_given && ips->get_array().front().is_string()) {
        ip = std::string(ips->get_array().front().get_string());
        spec["clusterIP"] = ip;
    }
    if (!olds) {
        if (ip.empty()) {
            std::uniform_int_distribution<std::uint32_t> pick(2, cidr_size - 2);
            for (int attempt = 0; attempt < 1000 && ip.empty(); ++attempt)
                if (auto c = cidr_base + pick(s.rng); !ips_used.count(c)) ip = ip_text(c);
            spec["clusterIP"] = ip;
        } else if (std::uint32_t want = 0; ip != "None" && parse_ip(ip, want)) {
            auto bad = [&](const std::string& why) {
                refuse(svc, field::invalid_go("spec.clusterIPs", go::string_slice(std::vector<std::string>{ip}),
                                              "failed to allocate IP " + ip + ": " + why));
            };
            if (want <= cidr_base || want >= cidr_base + cidr_size - 1)
                bad("the provided IP (" + ip + ") is not in the valid range. The range of valid IPs is " + cidr_text);
            if (ips_used.count(want)) bad("provided IP is already allocated");
        }
        spec["clusterIPs"] = json::array{json::string(ip)};
    }
    spec["ipFamilies"] = json::array{"IPv4"};
    if (!spec.contains("ipFamilyPolicy")) spec["ipFamilyPolicy"] = "SingleStack";

    if (type != "NodePort" && type != "LoadBalancer") return;
    auto* ports = spec.if_contains("ports");
    if (!ports || !ports->is_array()) return;
    const json::array* old_ports = nullptr;
    if (olds)
        if (const auto* op = olds->if_contains("ports"); op && op->is_array()) old_ports = &op->get_array();
    std::set<std::int64_t> mine;
    for (std::size_t i = 0; i < ports->get_array().size(); ++i) {
        auto* p = ports->get_array()[i].if_object();
        if (!p) continue;
        auto np = int_at(*p, "nodePort");
        if (np == 0 && old_ports)
            for (const auto& o : *old_ports)
                if (o.is_object() && int_at(o.get_object(), "port") == int_at(*p, "port") &&
                    text_at(o.get_object(), "protocol") == text_at(*p, "protocol"))
                    np = int_at(o.get_object(), "nodePort");
        if (np == 0) {
            std::uniform_int_distribution<std::int64_t> pick(service_validation_detail::node_port_min,
                                                             service_validation_detail::node_port_max);
            for (int attempt = 0; attempt < 10000 && np == 0; ++attempt)
                if (auto c = pick(s.rng); !ports_used.count(c) && !mine.count(c)) np = c;
        } else if (ports_used.count(np)) {
            refuse(svc, field::invalid("spec.ports[" + std::to_string(i) + "].nodePort", json::value(np),
                                       "provided port is already allocated"));
        }
        mine.insert(np);
        (*p)["nodePort"] = np;
    }
}

} // namespace vck::sandbox
