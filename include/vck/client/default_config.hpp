// The configuration a controller uses when told nothing else, in controller-runtime's order:
// the --kubeconfig flag, then $KUBECONFIG, then in-cluster, then ~/.kube/config. When none
// applies, ConfigError lists each place tried and why it did not apply.
#pragma once

#include <vck/client/config.hpp>
#include <vck/client/config_error.hpp>
#include <vck/client/in_cluster.hpp>
#include <vck/client/kubeconfig.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace vck::client {

/// A kubeconfig that exists but is broken is an error, not a reason to try the next place:
/// silently using another cluster than the one configured would be worse.
inline Config load_default(const KubeconfigOptions& opts = {}, const InClusterOptions& in_cluster = {}) {
    if (opts.path && !opts.path->empty()) return load_kubeconfig(opts);
    if (const char* env = std::getenv("KUBECONFIG"); env && *env) return load_kubeconfig(opts);

    std::string tried = "--kubeconfig (not given), $KUBECONFIG (not set), in-cluster (";
    if (in_cluster_environment()) return in_cluster_config(in_cluster);
    tried += "KUBERNETES_SERVICE_HOST/PORT not set), ";

    auto home = home_kubeconfig_path();
    std::error_code ec;
    if (std::filesystem::exists(home, ec)) return load_kubeconfig(KubeconfigOptions{home.string(), opts.context});
    tried += home.string() + " (does not exist)";
    throw ConfigError("no Kubernetes configuration found; tried " + tried);
}

} // namespace vck::client
