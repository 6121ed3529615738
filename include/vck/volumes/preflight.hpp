// Preflight: what vck-controller checks before it starts its manager, so that a wrong
// kubeconfig, an unreachable server or a missing CRD ends the process with one clear line
// instead of informers retrying forever. Guarantees: returns when the VolumeManager API
// answers a list (in `namespace_`, or cluster-wide when empty); otherwise throws
// PreflightError whose what() is one sentence naming the server and what to do.
#pragma once

#include <vck/api/volume_manager.hpp>
#include <vck/client/client.hpp>

#include <stdexcept>
#include <string>

namespace vck::volumes {

class PreflightError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

inline boost::asio::awaitable<void> preflight(client::Client& c, const std::string& server, std::string namespace_) {
    try {
        auto lo = client::ListOptions().page(1);
        co_await c.list(api::VolumeManager::resource, namespace_, lo);
    } catch (const client::ApiError& e) {
        using client::ErrorKind;
        std::string what;
        if (e.is(ErrorKind::NotFound))
            what = "the VolumeManager CRD (volumemanagers.vck.intelai.org, v1alpha1) is not installed on " + server +
                   ": apply crds/volumemanager.yaml first";
        else if (e.is(ErrorKind::Unauthorized))
            what = "the API server " + server + " refused our credentials (401): check the kubeconfig's user";
        else if (e.is(ErrorKind::Forbidden))
            what = "not allowed to list volumemanagers on " + server +
                   " (403): the controller's RBAC is missing or incomplete: " + e.what();
        else if (e.is(ErrorKind::TlsVerification))
            what = "the API server " + server + " failed TLS verification: " + e.what();
        else if (e.is_transport())
            what = "cannot reach the API server " + server + ": " + e.what();
        else
            what = "the API server " + server + " did not answer a list of volumemanagers: " + e.what();
        throw PreflightError(what);
    }
}

} // namespace vck::volumes
