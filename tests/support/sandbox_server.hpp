// SandboxServer: the sandbox's HTTPS API server (vck::sandbox::ApiServer) behind a
// compiled-once wall. Test translation units that only drive the server's store and talk to it
// through a client include this header instead of sandbox/server/api_server.hpp, so Beast's server
// side is compiled once (tests/support/sandbox_server.cpp) instead of in every test file:
// on two cores that is minutes per build. Same guarantees as ApiServer.
#pragma once

#include <vck/client/config.hpp>
#include <vck/sandbox/server/api_request.hpp>
#include <vck/sandbox/server/fault_injector.hpp>
#include <vck/sandbox/storage/object_store.hpp>
#include <vck/sandbox/cluster/pod_logs.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vck::sandbox {
class ApiServer;
}

namespace vck::test {

class SandboxServer {
public:
    struct Options {
        Options() {}
        std::chrono::seconds bookmark_interval{30};
        std::optional<std::uint16_t> admin_port;
        bool verbose = false;
    };

    explicit SandboxServer(Options o = {});
    ~SandboxServer();
    SandboxServer(const SandboxServer&) = delete;
    SandboxServer& operator=(const SandboxServer&) = delete;

    void start();
    void stop();
    client::Config config() const;
    /// The same admin reaching the server in process: no socket, no TLS (see
    /// sandbox/server/in_process_transport.hpp).
    client::Config in_process_config() const;
    /// TLS handshakes the server completed, and requests it answered in process, so far.
    std::uint64_t tls_handshakes() const;
    std::uint64_t in_process_requests() const;
    std::string kubeconfig_yaml() const;
    std::uint16_t port() const;
    sandbox::ObjectStore& store();
    sandbox::PodLogs& pod_logs();
    sandbox::FaultInjector& faults();
    /// See ApiServer::set_audit.
    void set_audit(std::function<void(const sandbox::AuditRecord&)> fn);
    /// See ApiServer::add_user: a principal under RBAC; returns its bearer token.
    std::string add_user(const std::string& name, std::vector<std::string> groups);
    sandbox::ApiServer& server();

private:
    std::unique_ptr<sandbox::ApiServer> impl_;
};

} // namespace vck::test
