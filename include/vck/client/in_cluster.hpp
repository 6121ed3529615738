// In-cluster configuration: a pod reaches its API server through the kubernetes service
// (KUBERNETES_SERVICE_HOST/PORT) and authenticates with its mounted service-account token.
// The token is a FileTokenSource, so rotated (bound) tokens are picked up without a restart.
// Outside a cluster, or with the mounted files missing, ConfigError says which.
// VCK_SERVICE_ACCOUNT_DIR, when set and not empty, replaces the default directory of those
// files: it exists for the vck sandbox's simulated kubelet, whose containers are host
// programs that cannot see /var/run/secrets/...; a real kubelet never sets it. A directory
// the caller chose in InClusterOptions is kept.
#pragma once

#include <vck/client/config.hpp>
#include <vck/client/config_error.hpp>
#include <vck/client/file_token_source.hpp>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

namespace vck::client {

/// Where the kubelet mounts a pod's service-account token, CA and namespace.
inline const std::filesystem::path default_service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";

struct InClusterOptions {
    /// Holds `token`, `ca.crt` and `namespace`, as the kubelet mounts them.
    std::filesystem::path service_account_dir = default_service_account_dir;
    /// The token file is re-read at least this often, besides whenever it changes.
    std::chrono::seconds token_max_age{60};
};

/// Whether the environment says we run in a pod (both service variables set).
inline bool in_cluster_environment() {
    const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
    const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
    return host && *host && port && *port;
}

inline Config in_cluster_config(const InClusterOptions& opts = {}) {
    if (!in_cluster_environment())
        throw ConfigError("not running in a Kubernetes cluster: KUBERNETES_SERVICE_HOST and "
                          "KUBERNETES_SERVICE_PORT are not both set");
    std::string host = std::getenv("KUBERNETES_SERVICE_HOST");
    std::string port = std::getenv("KUBERNETES_SERVICE_PORT");
    // An IPv6 address needs brackets in a URL.
    if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";

    const std::string origin = "in-cluster configuration";
    auto dir = opts.service_account_dir;
    if (const char* sandbox = std::getenv("VCK_SERVICE_ACCOUNT_DIR"); sandbox && *sandbox && dir == default_service_account_dir)
        dir = sandbox;
    Config cfg;
    cfg.server = "https://" + host + ":" + port;
    auto token = std::make_shared<FileTokenSource>(dir / "token", opts.token_max_age, origin);
    cfg.token = token->current().token;
    cfg.credentials = std::move(token);

    auto ca_path = dir / "ca.crt";
    std::ifstream ca(ca_path, std::ios::binary);
    if (!ca) throw ConfigError(origin + ": CA file " + ca_path.string() + " cannot be read: " + std::strerror(errno));
    std::ostringstream ss;
    ss << ca.rdbuf();
    cfg.ca_pem = ss.str();
    if (cfg.ca_pem.find("-----BEGIN") == std::string::npos)
        throw ConfigError(origin + ": CA file " + ca_path.string() + " does not hold PEM certificates");

    // As clientcmd's in-cluster config: POD_NAMESPACE first, then the mounted file.
    if (const char* ns = std::getenv("POD_NAMESPACE"); ns && *ns) {
        cfg.namespace_ = ns;
    } else if (std::ifstream nsf(dir / "namespace"); nsf) {
        std::string ns;
        std::getline(nsf, ns);
        while (!ns.empty() && std::isspace(static_cast<unsigned char>(ns.back()))) ns.pop_back();
        if (!ns.empty()) cfg.namespace_ = ns;
    }
    return cfg;
}

} // namespace vck::client
