// WebhookServing: vck-controller's admission webhooks (volumes/admission_webhooks.hpp) served
// beside its controller, with one of two certificate modes (docs/ops.md "Webhooks"):
// - files: tls.crt and tls.key in cert_dir, written by someone else (cert-manager's
//   Certificate in a Secret volume); re-read when they change;
// - self-managed: the controller keeps its own CA and serving certificate in a Secret
//   (webhook/self_managed_certificate.hpp), writes them into cert_dir, and puts the CA into
//   the caBundle of its two webhook configurations; at start (before serving: a failure is
//   fatal, as a server without a certificate serves nothing) and again every renew_interval
//   (a renewal, or a configuration installed after the controller).
// Every replica serves, the leader or not (the Service sends admission calls to any ready
// pod), so the certificate work uses a client of its own that leader election does not fence.
// VolumeManagers are read from the controller's cache and, on a miss, from the API server
// (a list by name, which deploy/'s list grant covers) through a client on a thread of its own (the handler waits for it; a VolumeManager and pods
// naming it, applied together, must not race the cache).
#pragma once

#include <vck/client/client.hpp>
#include <vck/runtime/cluster_manager.hpp>
#include <vck/runtime/log.hpp>
#include <vck/volumes/admission_webhooks.hpp>
#include <vck/volumes/data_plane_metrics.hpp>
#include <vck/volumes/volume_manager_controller.hpp>
#include <vck/webhook/self_managed_certificate.hpp>
#include <vck/webhook/webhook_server.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace vck::volumes {

struct WebhookServingOptions {
    WebhookServingOptions() {}
    webhook::WebhookServer::Options server;  // bind, port, flag; the files come from cert_dir
    std::filesystem::path cert_dir = "/tmp/k8s-webhook-server/serving-certs";  // controller-runtime's default
    bool self_managed = false;
    webhook::SelfManagedOptions certificate;  // namespace_, service, secret (self-managed)
    std::string mutating_configuration = "vck-pod-injection";
    std::string validating_configuration = "vck-volumemanager-validation";
    std::chrono::seconds renew_interval = std::chrono::hours(1);
};

namespace webhook_serving_detail {

inline const api::ResourceType mutating_configurations{"admissionregistration.k8s.io", "v1",
                                                       "mutatingwebhookconfigurations",
                                                       "MutatingWebhookConfiguration", false};
inline const api::ResourceType validating_configurations{"admissionregistration.k8s.io", "v1",
                                                         "validatingwebhookconfigurations",
                                                         "ValidatingWebhookConfiguration", false};

/// One pass of self-managed certificate work: the Secret, the files, the caBundles.
inline boost::asio::awaitable<void> refresh_certificate(client::Client& c, WebhookServingOptions o) {
    auto material = co_await webhook::ensure_serving_secret(c, o.certificate);
    webhook::write_serving_files(o.cert_dir, material);
    for (const auto& [rt, name] : {std::pair{&mutating_configurations, o.mutating_configuration},
                                   std::pair{&validating_configurations, o.validating_configuration}}) {
        if (name.empty()) continue;
        try {
            int changed = co_await webhook::inject_ca_bundle(c, *rt, name, material.ca_crt);
            if (changed > 0)
                log::info("caBundle set", {{"configuration", std::string(rt->kind) + "/" + name},
                                           {"webhooks", std::to_string(changed)}});
        } catch (const client::ApiError& e) {
            if (!e.is(client::ErrorKind::NotFound)) throw;
            log::info("webhook configuration not found: its caBundle is set once it exists",
                      {{"configuration", std::string(rt->kind) + "/" + name}});
        }
    }
}

} // namespace webhook_serving_detail

/// Runs the self-managed certificate work once, to completion, on a client of its own (call
/// before the manager runs; throws what fails).
inline void prepare_self_managed_certificate(const client::Config& cfg, const WebhookServingOptions& o) {
    boost::asio::io_context ioc;
    client::Client c(ioc.get_executor(), cfg);
    std::exception_ptr err;
    boost::asio::co_spawn(ioc, webhook_serving_detail::refresh_certificate(c, o), [&](std::exception_ptr e) { err = e; });
    ioc.run();
    if (err) std::rethrow_exception(err);
}

/// VolumeManagers from a cache, and from the API server when the cache has none.
class VolumeManagerReader {
public:
    VolumeManagerReader(std::shared_ptr<runtime::Informer<api::VolumeManager>> cache, const client::Config& cfg)
        : cache_(std::move(cache)), client_(ioc_.get_executor(), cfg), thread_([this] { ioc_.run(); }) {}
    ~VolumeManagerReader() {
        work_.reset();
        ioc_.stop();
        thread_.join();
    }
    VolumeManagerReader(const VolumeManagerReader&) = delete;
    VolumeManagerReader& operator=(const VolumeManagerReader&) = delete;

    std::optional<api::VolumeManager> operator()(const std::string& ns, const std::string& name) {
        if (auto cached = cache_->store().get(runtime::ObjectKey{ns, name})) return *cached;
        auto f = boost::asio::co_spawn(ioc_, read(ns, name), boost::asio::use_future);
        return f.get();
    }

private:
    /// A list narrowed to the name, not a get: deploy/ grants the controller list and watch on
    /// VolumeManagers (what its cache needs), and nothing more is needed for this.
    boost::asio::awaitable<std::optional<api::VolumeManager>> read(std::string ns, std::string name) {
        auto found = co_await client_.list<api::VolumeManager>(ns, client::ListOptions().fields("metadata.name=" + name));
        if (found.items.empty()) co_return std::nullopt;
        co_return std::move(found.items.front());
    }

    std::shared_ptr<runtime::Informer<api::VolumeManager>> cache_;
    boost::asio::io_context ioc_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{ioc_.get_executor()};
    client::Client client_;
    std::thread thread_;
};

/// The webhook server and what it needs, kept alive by the caller while the manager runs.
struct WebhookServing {
    std::shared_ptr<VolumeManagerReader> reader;
    std::unique_ptr<client::Client> certificate_client;
    std::unique_ptr<webhook::WebhookServer> server;
};

/// Starts serving VCK's webhooks on the manager's executor (self-managed: after
/// prepare_self_managed_certificate(), which must have run). Throws when the server cannot
/// start (certificate files, address).
inline WebhookServing serve_webhooks(runtime::ClusterManager& m, const VolumeManagerController& vmc,
                                     const handlers::HandlerRegistry& registry, const handlers::HandlerOptions& handler,
                                     WebhookServingOptions o) {
    WebhookServing out;
    auto ex = m.io_context().get_executor();
    out.reader = std::make_shared<VolumeManagerReader>(vmc.caches.volume_managers, m.client().config());
    auto so = o.server;
    so.cert_file = (o.cert_dir / "tls.crt").string();
    so.key_file = (o.cert_dir / "tls.key").string();
    out.server = std::make_unique<webhook::WebhookServer>(ex, so, m.metrics());
    // Refusals count under the path, as controller-runtime labels its webhook series.
    out.server->handle(std::string(pod_injection_path),
                       counting_refusals(m.metrics(), std::string(pod_injection_path),
                                         pod_injection_webhook([r = out.reader](const std::string& ns, const std::string& name) {
                                             return (*r)(ns, name);
                                         }, registry, handler)));
    out.server->handle(std::string(volume_manager_validation_path),
                       counting_refusals(m.metrics(), std::string(volume_manager_validation_path),
                                         volume_manager_validation_webhook(registry, handler)));
    out.server->start();
    if (o.self_managed) {
        out.certificate_client = std::make_unique<client::Client>(ex, m.client().config());
        boost::asio::co_spawn(ex, [c = out.certificate_client.get(), o]() -> boost::asio::awaitable<void> {
            boost::asio::steady_timer t(co_await boost::asio::this_coro::executor);
            for (;;) {
                t.expires_after(o.renew_interval);
                co_await t.async_wait(boost::asio::use_awaitable);
                try {
                    co_await webhook_serving_detail::refresh_certificate(*c, o);
                } catch (const std::exception& e) {
                    log::error(std::string("webhook certificate: ") + e.what());
                }
            }
        }, boost::asio::detached);
    }
    return out;
}

} // namespace vck::volumes
