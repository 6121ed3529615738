// The one translation unit that compiles the sandbox's API server for the tests that use
// it through tests/support/sandbox_server.hpp.
#include "sandbox_server.hpp"

#include <vck/sandbox/server/api_server.hpp>
#include <vck/sandbox/server/in_process_transport.hpp>

namespace vck::test {

SandboxServer::SandboxServer(Options o) {
    sandbox::ApiServer::Options so;
    so.bookmark_interval = o.bookmark_interval;
    so.admin_port = o.admin_port;
    so.verbose = o.verbose;
    impl_ = std::make_unique<sandbox::ApiServer>(so);
}
SandboxServer::~SandboxServer() = default;
void SandboxServer::start() { impl_->start(); }
void SandboxServer::stop() { impl_->stop(); }
client::Config SandboxServer::config() const { return impl_->config(); }
client::Config SandboxServer::in_process_config() const { return sandbox::in_process_config(*impl_); }
std::uint64_t SandboxServer::tls_handshakes() const { return impl_->tls_handshakes(); }
std::uint64_t SandboxServer::in_process_requests() const { return impl_->in_process_requests(); }
std::string SandboxServer::kubeconfig_yaml() const { return impl_->kubeconfig_yaml(); }
std::uint16_t SandboxServer::port() const { return impl_->port(); }
sandbox::ObjectStore& SandboxServer::store() { return impl_->store(); }
sandbox::PodLogs& SandboxServer::pod_logs() { return impl_->pod_logs(); }
sandbox::FaultInjector& SandboxServer::faults() { return impl_->faults(); }
void SandboxServer::set_audit(std::function<void(const sandbox::AuditRecord&)> fn) { impl_->set_audit(std::move(fn)); }
sandbox::ApiServer& SandboxServer::server() { return *impl_; }
std::string SandboxServer::add_user(const std::string& name, std::vector<std::string> groups) {
    return impl_->add_user(name, std::move(groups));
}

} // namespace vck::test
