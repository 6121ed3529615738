// Config: everything the client needs to reach one API server: its URL, how to trust it,
// and who we are. Built by the loaders in kubeconfig.hpp and in_cluster.hpp, or by hand
// (the sandbox hands one out). Holds no sockets; copying it is cheap.
#pragma once

#include <vck/version.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace vck::client {

class LocalTransport;

/// What a credential source hands out for one request.
struct Credentials {
    std::string token;            // bearer token; empty for none
    std::string client_cert_pem;  // client certificate from a credential plugin (optional)
    std::string client_key_pem;
    /// When these credentials stop being valid (exec plugins); nullopt for "no expiry".
    std::optional<std::chrono::system_clock::time_point> expires;
};

/// A source of bearer tokens that may change over time: a file re-read when it changes
/// (bound service-account tokens rotate), or an exec plugin cached until expiry.
/// Implementations are thread-safe. current() may block briefly (it may read a file or run
/// a plugin once per expiry); invalidate() is called after a 401 so the next call refreshes.
class CredentialSource {
public:
    virtual ~CredentialSource() = default;
    virtual Credentials current() = 0;
    virtual void invalidate() {}
};

struct Config {
    std::string server;                // "https://127.0.0.1:6443"
    std::string ca_pem;                // trusted CA bundle (PEM); empty: the system's trust store
    bool insecure_skip_tls_verify = false;
    std::string tls_server_name;       // overrides the name checked and sent as SNI
    std::string client_cert_pem;       // static client certificate and key (PEM)
    std::string client_key_pem;
    std::string token;                 // static bearer token
    std::shared_ptr<CredentialSource> credentials;  // dynamic token/cert; wins over `token`
    std::string username, password;    // basic auth (kubeconfig users may have it)
    std::string namespace_ = "default";  // the context's namespace
    std::string user_agent = "vck/" VCK_VERSION;

    // Client behaviour; see docs/ops.md for why these defaults.
    double qps = 50.0;
    int burst = 100;
    std::chrono::milliseconds connect_timeout{10'000};
    std::chrono::milliseconds request_timeout{60'000};
    int max_connections = 16;          // per server, in the keep-alive pool
    int max_retries = 5;               // retries after 429/503 with Retry-After, 5xx and transport errors
    std::chrono::milliseconds retry_base{100};   // first backoff; doubles per retry, jittered
    std::chrono::milliseconds retry_cap{5'000};  // backoff ceiling

    /// Requests go to this in-process transport instead of the network (local_transport.hpp):
    /// `server` then only names it (in messages and metrics), and no TLS is used.
    std::shared_ptr<LocalTransport> local;
};

} // namespace vck::client
