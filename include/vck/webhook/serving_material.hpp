// ServingMaterial: the CA and serving certificate a webhook that manages its own TLS keeps in
// one Secret of type kubernetes.io/tls (keys tls.crt, tls.key, ca.crt and ca.key), and the
// pure decisions about it (no cluster): whether stored material can still serve, new material
// that keeps the old CA when it can, the Secret that holds it, and the files a server reads.
// Guarantees:
// - renewal_reason() says why stored material cannot be served (missing key, unreadable, a
//   name of the Service not covered, the CA did not sign it, expiring within renew_before) or
//   nullopt when it can;
// - issue_serving_material() reuses a stored CA that outlives the leaf it signs by the
//   renewal window, so a renewed leaf keeps every caBundle valid;
// - write_serving_files() replaces tls.crt and tls.key by rename, key first, so a server that
//   re-reads them never sees a half-written file.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/client/base64.hpp>
#include <vck/webhook/certificate_authority.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace vck::webhook {

/// What the Secret holds, decoded.
struct ServingMaterial {
    std::string ca_crt, ca_key, tls_crt, tls_key;
};

struct SelfManagedOptions {
    SelfManagedOptions() {}
    std::string namespace_;         // of the Service and the Secret
    std::string service;            // the webhook Service's name
    std::string secret = "vck-webhook-server-cert";
    std::chrono::seconds ca_validity = std::chrono::hours(24 * 365 * 10);
    std::chrono::seconds validity = std::chrono::hours(24 * 365);       // of the serving certificate
    std::chrono::seconds renew_before = std::chrono::hours(24 * 30);    // renew when less is left
};

/// The names a client reaches a Service under: kube-apiserver calls `<svc>.<ns>.svc`.
inline std::vector<std::string> service_dns_names(const std::string& service, const std::string& ns) {
    return {service + "." + ns + ".svc", service, service + "." + ns, service + "." + ns + ".svc.cluster.local"};
}

/// The material in a Secret's data (base64 values), or nullopt when a key is missing or not base64.
inline std::optional<ServingMaterial> read_serving_secret(const api::Secret& s) {
    ServingMaterial m;
    for (auto [key, out] : {std::pair{"ca.crt", &m.ca_crt}, std::pair{"ca.key", &m.ca_key},
                            std::pair{"tls.crt", &m.tls_crt}, std::pair{"tls.key", &m.tls_key}}) {
        auto it = s.data.find(key);
        if (it == s.data.end()) return std::nullopt;
        auto v = client::base64_decode(it->second);
        if (!v || v->empty()) return std::nullopt;
        *out = std::move(*v);
    }
    return m;
}

/// Why `m` cannot serve `names` at `now`, or nullopt when it can.
inline std::optional<std::string> renewal_reason(const ServingMaterial& m, const std::vector<std::string>& names,
                                                 std::chrono::system_clock::time_point now,
                                                 std::chrono::seconds renew_before) {
    CertificateInfo leaf, ca;
    try {
        leaf = certificate_info(m.tls_crt);
        ca = certificate_info(m.ca_crt);
    } catch (const std::exception& e) {
        return std::string("unreadable: ") + e.what();
    }
    if (!ca.is_ca) return std::string("ca.crt is not a CA certificate");
    if (!key_matches(m.tls_crt, m.tls_key)) return std::string("tls.key does not belong to tls.crt");
    if (!key_matches(m.ca_crt, m.ca_key)) return std::string("ca.key does not belong to ca.crt");
    if (!signed_by(m.tls_crt, m.ca_crt)) return std::string("tls.crt was not signed by ca.crt");
    for (const auto& n : names)
        if (std::find(leaf.dns_names.begin(), leaf.dns_names.end(), n) == leaf.dns_names.end())
            return "tls.crt does not name " + n;
    if (leaf.not_after - now < renew_before) return std::string("tls.crt expires within the renewal window");
    if (ca.not_after - now < renew_before) return std::string("ca.crt expires within the renewal window");
    return std::nullopt;
}

/// New serving material for `names`: signed by `previous`'s CA when that CA is readable and
/// outlives the new leaf (so caBundles stay valid), else by a new CA.
inline ServingMaterial issue_serving_material(const std::optional<ServingMaterial>& previous,
                                              const std::vector<std::string>& names, const SelfManagedOptions& o,
                                              std::chrono::system_clock::time_point now) {
    std::optional<CertificateAuthority> ca;
    if (previous) {
        try {
            auto info = certificate_info(previous->ca_crt);
            if (info.is_ca && info.not_after - now > o.validity + o.renew_before)
                ca.emplace(PemPair{previous->ca_crt, previous->ca_key});
        } catch (const std::exception&) {
            // Unreadable: a new CA below.
        }
    }
    if (!ca) ca.emplace(o.service + "-ca", o.ca_validity);
    auto leaf = ca->issue_server(names, o.validity);
    return {ca->cert_pem(), ca->key_pem(), leaf.cert_pem, leaf.key_pem};
}

/// The Secret holding `m` (type kubernetes.io/tls: tls.crt and tls.key, plus the CA).
inline api::Secret serving_secret(const SelfManagedOptions& o, const ServingMaterial& m) {
    api::Secret s;
    s.metadata.name = o.secret;
    s.metadata.namespace_ = o.namespace_;
    s.metadata.labels["app.kubernetes.io/name"] = "vck";
    s.metadata.labels["app.kubernetes.io/component"] = "webhook";
    s.type = "kubernetes.io/tls";
    s.data["ca.crt"] = client::base64_encode(m.ca_crt);
    s.data["ca.key"] = client::base64_encode(m.ca_key);
    s.data["tls.crt"] = client::base64_encode(m.tls_crt);
    s.data["tls.key"] = client::base64_encode(m.tls_key);
    return s;
}

/// Writes tls.crt and tls.key into `dir` (created if missing), each by rename over the old one.
inline void write_serving_files(const std::filesystem::path& dir, const ServingMaterial& m) {
    std::filesystem::create_directories(dir);
    auto put = [&](const char* name, const std::string& text) {
        auto tmp = dir / (std::string(".") + name + ".tmp");
        {
            std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
            out << text;
            if (!out.flush()) throw std::runtime_error("cannot write " + tmp.string());
        }
        std::filesystem::permissions(tmp, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
        std::filesystem::rename(tmp, dir / name);
    };
    // The key first: a reader that sees the new certificate finds its key already there.
    put("tls.key", m.tls_key);
    put("tls.crt", m.tls_crt);
}

} // namespace vck::webhook
