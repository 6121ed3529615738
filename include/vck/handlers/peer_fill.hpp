// Peer fill in the controller: how the download pods of one volume fill each other so that each
// byte leaves the object store once (vck-fetch's side: docs/vck-fetch.md "Peer fill"; the
// topology and its alternatives: docs/arch.md "Peer fill").
// - Replicas that download the same objects (the same distributionStrategy glob, or all of
//   them) form a group; within a group they form a tree of fan-out peer_fan_out in replica
//   order: the first reads the store, position i pulls from position (i - 1) / peer_fan_out,
//   then from that one's ancestors up to the root, then from the store, in that order
//   (peer_ancestors). A copy with children serves them (`--serve`); a leaf only pulls.
// - Both ends hold the volume's peer certificate and key, from one Secret per volume
//   (peer_secret_name) the controller makes (make_peer_secret) and mounts read only; the
//   certificate is its own trust anchor, named as vck-fetch's pullers verify it.
// - A serving pod opens `--ready-port` once its copy is complete, and a tcpSocket readiness
//   probe on it makes the pod Ready while it still serves its pullers: its copy is Ready then
//   (copy_serving_ready), not when its server has lingered out.
// Pure functions and constants: the planner picks peers (volumes/copy_planner.hpp), the
// download handler shapes the pod (apply_peer_plan), the reconciler makes the Secret.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/client/base64.hpp>
#include <vck/handlers/download_pods.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/handlers/peer_plan.hpp>
#include <vck/webhook/certificate_authority.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vck::handlers {

inline constexpr std::uint16_t peer_port = 7443;        // vck-fetch --serve, on the pod's IP
inline constexpr std::uint16_t peer_ready_port = 7444;  // vck-fetch --ready-port: the copy is complete
inline constexpr std::size_t peer_fan_out = 4;
inline constexpr std::string_view peer_mount = "/vck/peer";
/// On a download pod that serves its copy to peers: its copy is Ready when the pod is.
inline constexpr std::string_view peer_serves_annotation = "vck.intelai.org/peer-serves";
/// The name vck-fetch's pullers verify in a peer's certificate (fetch/peer_tls.hpp).
inline constexpr std::string_view peer_certificate_name = "vck-peer";

inline std::string peer_secret_name(std::string_view vm_uid, std::string_view volume_id) {
    return "vck-peer-" + naming::short_hash(std::string(vm_uid) + "/" + std::string(volume_id), 16);
}

inline std::string peer_url(const std::string& ip) {
    bool v6 = ip.find(':') != std::string::npos;
    return "https://" + (v6 ? "[" + ip + "]" : ip) + ":" + std::to_string(peer_port);
}

/// The positions a member at `position` of its group pulls from, nearest first: its parent in
/// the tree, then the parent's ancestors up to the root (position 0).
inline std::vector<std::size_t> peer_ancestors(std::size_t position) {
    std::vector<std::size_t> out;
    while (position > 0) {
        position = (position - 1) / peer_fan_out;
        out.push_back(position);
    }
    return out;
}

/// Whether the member at `position` of a group of `size` has children to serve.
inline bool peer_serves(std::size_t position, std::size_t size) { return position * peer_fan_out + 1 < size; }

/// The Secret holding the volume's peer certificate and key (tls.crt, tls.key): a new
/// self-signed EC P-256 certificate named peer_certificate_name. `meta` names and owns it.
inline api::Secret make_peer_secret(api::ObjectMeta meta) {
    webhook::CertificateAuthority self_signed{std::string(peer_certificate_name)};
    api::Secret s;
    s.metadata = std::move(meta);
    s.type = "kubernetes.io/tls";
    s.data["tls.crt"] = client::base64_encode(self_signed.cert_pem());
    s.data["tls.key"] = client::base64_encode(self_signed.key_pem());
    return s;
}

/// Shapes a download pod for `plan`: its fetch containers get the peer flags, the pod's IP,
/// the Secret mounted read only; a serving pod gets its port, the readiness probe on the ready
/// port and peer_serves_annotation. Nothing changes for an inactive plan.
inline void apply_peer_plan(api::Pod& pod, const PeerPlan& plan) {
    if (!plan.active()) return;
    std::string dir(peer_mount);
    for (auto* list : {&pod.spec.initContainers, &pod.spec.containers})
        for (auto& c : *list) {
            if (!runs_vck_fetch_fetch(c)) continue;
            c.args.push_back("--peer-cert=" + dir + "/tls.crt");
            c.args.push_back("--peer-key=" + dir + "/tls.key");
            for (const auto& url : plan.peers) c.args.push_back("--peer=" + url);
            if (plan.serve) {
                api::EnvVar ip;
                ip.name = "POD_IP";
                ip.valueFrom = api::EnvVarSource{};
                ip.valueFrom->unknown["fieldRef"] = boost::json::object{{"fieldPath", "status.podIP"}};
                c.env.push_back(std::move(ip));
                c.args.push_back("--serve=$(POD_IP):" + std::to_string(peer_port));
                c.args.push_back("--ready-port=" + std::to_string(peer_ready_port));
                c.unknown["ports"] = boost::json::array{
                    boost::json::object{{"name", "peer"}, {"containerPort", peer_port}, {"protocol", "TCP"}}};
                c.unknown["readinessProbe"] = boost::json::object{
                    {"tcpSocket", boost::json::object{{"port", peer_ready_port}}},
                    {"periodSeconds", 1},
                    {"failureThreshold", 1}};
            }
            api::VolumeMount m;
            m.name = "vck-peer";
            m.mountPath = dir;
            m.readOnly = true;
            c.volumeMounts.push_back(std::move(m));
        }
    api::Volume v;
    v.name = "vck-peer";
    v.unknown["secret"] = boost::json::object{{"secretName", plan.secret}, {"defaultMode", 0444}};
    pod.spec.volumes.push_back(std::move(v));
    if (plan.serve) pod.metadata.annotations[std::string(peer_serves_annotation)] = "true";
}

/// Whether `p`, a download pod that serves its copy, says the copy is complete: it is Running
/// and Ready (its readiness probe reaches the ready port vck-fetch opens after the fetch).
inline bool copy_serving_ready(const api::Pod& p) {
    auto a = p.metadata.annotations.find(std::string(peer_serves_annotation));
    if (a == p.metadata.annotations.end() || a->second != "true" || !p.status || p.status->phase != "Running")
        return false;
    for (const auto& c : p.status->conditions)
        if (c.type == "Ready") return c.status == "True";
    return false;
}

} // namespace vck::handlers
