// vck-controller: the reference VCK controller. Flags (controller-runtime's names), config
// loading, preflight and wiring only; the work is in include/vck/controller and handlers.
#include <vck/client/default_config.hpp>
#include <vck/volumes/preflight.hpp>
#include <vck/volumes/s3_source_listing.hpp>
#include <vck/volumes/volume_manager_controller.hpp>
#include <vck/volumes/webhook_serving.hpp>
#include <vck/runtime/bind_address.hpp>
#include <vck/runtime/log.hpp>

#include "command_line.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdio>

using namespace vck;

namespace {

struct Flags {
    std::string kubeconfig, context, namespace_;
    bool leader_elect = false;
    std::string leader_election_namespace;
    std::string leader_election_id = "vck-controller.vck.intelai.org";
    std::string metrics_bind_address = ":8080";
    std::string health_probe_bind_address = ":8081";
    std::string data_mover_image = "vck-fetch:latest";
    std::string pachctl_image = "pachyderm/pachctl:1.9.8";
    std::vector<std::string> allowed_data_roots = {"/var/datasets"};
    int workers = 2;
    std::string node_lost_timeout = "5m";
    double disk_fill_threshold = 0.9;
    std::string min_refresh_interval = "1m";
    bool evict_on_disk_pressure = true;
    bool peer_fill = true;
    bool share_copies = true;
    std::string disk_pressure_settle = "10s";
    int max_download_attempts = 3;
    std::string download_progress_interval = "10s";
    double qps = 50;
    int burst = 100;
    int verbosity = 0;
    std::string log_format = "text";
    std::string webhook_bind_address = "0";
    std::string webhook_cert_dir = "/tmp/k8s-webhook-server/serving-certs";
    std::string webhook_cert_mode = "files";
    std::string webhook_namespace, webhook_service = "vck-webhook", webhook_secret = "vck-webhook-server-cert";
};

std::optional<runtime::HealthServer::Options> server_options(const char* flag, const std::string& value) {
    auto a = runtime::BindAddress::parse(value);
    if (!a) return std::nullopt;
    runtime::HealthServer::Options o;
    o.bind = a->host;
    o.port = a->port;
    o.flag = flag;
    return o;
}

/// Checks the API before the manager starts; throws PreflightError.
void run_preflight(const client::Config& cfg, const std::string& ns) {
    boost::asio::io_context ioc;
    client::Config quick = cfg;
    quick.max_retries = 2;
    client::Client c(ioc.get_executor(), quick);
    std::exception_ptr err;
    boost::asio::co_spawn(ioc, volumes::preflight(c, cfg.server, ns), [&](std::exception_ptr e) { err = e; });
    ioc.run();
    if (err) std::rethrow_exception(err);
}

/// A flag's check: a Go duration from `min` to `max` seconds, else `words`.
CLI::Validator go_duration_within(double min, double max, std::string words) {
    return CLI::Validator(
        [=](const std::string& v) {
            auto d = handlers::parse_go_duration(v);
            return d && *d >= min && *d <= max ? std::string() : words;
        },
        "DURATION");
}

} // namespace

int main(int argc, char** argv) {
    Flags f;
    CLI::App app{"vck-controller: the Volume Controller for Kubernetes (VolumeManager, vck.intelai.org/v1alpha1)"};
    cli::add_version_flag(app, "vck-controller");
    app.add_option("--kubeconfig", f.kubeconfig, "Path to a kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
    app.add_option("--context", f.context, "The kubeconfig context to use");
    app.add_option("--namespace", f.namespace_, "Only VolumeManagers in this namespace (default: all)");
    app.add_flag("--leader-elect", f.leader_elect, "Elect a leader on a Lease so only one replica reconciles");
    app.add_option("--leader-election-namespace", f.leader_election_namespace,
                   "Namespace of the leader election Lease (default: the in-cluster namespace, or default)");
    app.add_option("--leader-election-id", f.leader_election_id, "Name of the leader election Lease")->capture_default_str();
    app.add_option("--metrics-bind-address", f.metrics_bind_address, "Address of /metrics; 0 turns it off")
        ->capture_default_str();
    app.add_option("--health-probe-bind-address", f.health_probe_bind_address,
                   "Address of /healthz and /readyz; 0 turns it off")->capture_default_str();
    app.add_option("--data-mover-image", f.data_mover_image, "Image of download and cleanup pods (runs vck-fetch)")
        ->capture_default_str();
    app.add_option("--pachctl-image", f.pachctl_image, "Image of Pachyderm download pods")->capture_default_str();
    app.add_option("--allowed-data-roots", f.allowed_data_roots,
                   "Host directories a dataPath may lie under (comma-separated or repeated)")
        ->delimiter(',')
        ->check(CLI::Validator(
            [](std::string& root) {
                return !root.empty() && root.front() == '/' ? std::string() : '"' + root + "\" is not an absolute path";
            },
            "absolute paths"))
        ->capture_default_str();
    app.add_option("--download-progress-interval", f.download_progress_interval,
                   "How often running downloads' progress is read (their last log lines) and written to status; "
                   "vck-fetch prints it twice as often (Go duration, 0 = only when they finish)")
        ->check([](const std::string& v) {
            auto d = handlers::parse_go_duration(v);
            return d && (*d == 0 || (*d >= 1 && *d <= 3600)) ? std::string() : "a Go duration from 1s to 1h, or 0";
        })
        ->capture_default_str();
    app.add_option("--peer-fill", f.peer_fill,
                   "Let a volume's replicas fill each other over the pod network, so the object store is read once "
                   "per object (a volume's options.peerFill can still turn it off); false: each replica reads the store")
        ->capture_default_str();
    app.add_option("--share-copies", f.share_copies,
                   "Let volumes of equal source configs share one copy per node, across VolumeManagers and namespaces, "
                   "each joining only after its own credentials list the source; false: every volume has copies of its own")
        ->capture_default_str();
    app.add_option("--evict-on-disk-pressure", f.evict_on_disk_pressure,
                   "Evict unused copies of data, least recently used first, from nodes reporting DiskPressure=True")
        ->capture_default_str();
    app.add_option("--disk-pressure-settle", f.disk_pressure_settle,
                   "After an evicted copy is removed, how long DiskPressure must still hold before the next eviction "
                   "on that node (Go duration)")
        ->check(go_duration_within(0, 3600, "a Go duration from 0 to 1h, e.g. 10s"))
        ->capture_default_str();
    app.add_option("--node-lost-timeout", f.node_lost_timeout,
                   "How long a node may be NotReady before its copies count as lost and are placed elsewhere (Go duration)")
        ->check(go_duration_within(1, 366.0 * 24 * 3600, "a Go duration from 1s to 8784h, e.g. 5m"))
        ->capture_default_str();
    app.add_option("--min-refresh-interval", f.min_refresh_interval,
                   "The shortest options.refreshInterval honoured; a shorter one counts as this (Go duration)")
        ->check(go_duration_within(1, 366.0 * 24 * 3600, "a Go duration from 1s to 8784h, e.g. 1m"))
        ->capture_default_str();
    app.add_option("--disk-fill-threshold", f.disk_fill_threshold,
                   "A new copy goes to a node only while the copies there, with it, stay within this share of the "
                   "node's allocatable ephemeral-storage (nodes that report none are not limited)")
        ->check(cli::positive_up_to(1.0))
        ->capture_default_str();
    app.add_option("--max-download-attempts", f.max_download_attempts,
                   "Download attempts per copy (with exponential backoff) before its volume is Failed")
        ->check(cli::in_range(1, 100))
        ->capture_default_str();
    app.add_option("--workers", f.workers, "Concurrent reconciles")->check(cli::in_range(1, 1000))->capture_default_str();
    app.add_option("--qps", f.qps, "API requests per second (token bucket rate)")->check(cli::positive_up_to(100000.0))
        ->capture_default_str();
    app.add_option("--burst", f.burst, "API request burst (token bucket size)")->check(cli::in_range(1, 100000))
        ->capture_default_str();
    app.add_option("-v,--v", f.verbosity, "Log verbosity")->check(cli::in_range(0, 10));
    app.add_option("--log-format", f.log_format, "text or json")->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    app.add_option("--webhook-bind-address", f.webhook_bind_address,
                   "Address of the admission webhooks (pod injection, VolumeManager validation); 0 turns them off")
        ->capture_default_str();
    app.add_option("--webhook-cert-dir", f.webhook_cert_dir, "Directory of the webhooks' tls.crt and tls.key")
        ->capture_default_str();
    app.add_option("--webhook-cert-mode", f.webhook_cert_mode,
                   "files: tls.crt and tls.key are provided (cert-manager); self-managed: the controller keeps its "
                   "CA and certificate in a Secret and sets its webhook configurations' caBundle")
        ->check(CLI::IsMember({"files", "self-managed"}))
        ->capture_default_str();
    app.add_option("--webhook-service", f.webhook_service, "The webhooks' Service (self-managed: the certificate's name)")
        ->capture_default_str();
    app.add_option("--webhook-secret", f.webhook_secret, "The Secret of the self-managed certificate")->capture_default_str();
    app.add_option("--webhook-namespace", f.webhook_namespace,
                   "Namespace of the webhooks' Service and Secret (default: the in-cluster namespace)");
    if (auto rc = cli::parse(app, "vck-controller", argc, argv)) return *rc;

    log::set_verbosity(f.verbosity);
    log::set_format(log::parse_format(f.log_format));
    try {
        client::KubeconfigOptions ko;
        if (!f.kubeconfig.empty()) ko.path = f.kubeconfig;
        if (!f.context.empty()) ko.context = f.context;
        runtime::ClusterManagerOptions mo;
        mo.config = client::load_default(ko);
        mo.config.qps = f.qps;
        mo.config.burst = f.burst;
        mo.health = server_options("--health-probe-bind-address", f.health_probe_bind_address);
        mo.metrics = server_options("--metrics-bind-address", f.metrics_bind_address);
        mo.serve_metrics = mo.metrics.has_value();
        mo.version = std::string(vck::version);
        mo.informers.namespace_ = f.namespace_;
        if (f.leader_elect) {
            runtime::LeaderElectionOptions le;
            le.name = f.leader_election_id;
            le.namespace_ = !f.leader_election_namespace.empty() ? f.leader_election_namespace
                            : !mo.config.namespace_.empty()      ? mo.config.namespace_
                                                                 : "default";
            mo.leader_election = le;
        }
        run_preflight(mo.config, f.namespace_);
        std::optional<volumes::WebhookServingOptions> hooks;
        if (auto a = server_options("--webhook-bind-address", f.webhook_bind_address)) {
            hooks.emplace();
            hooks->server.bind = a->bind;
            hooks->server.port = a->port;
            hooks->server.flag = a->flag;
            hooks->cert_dir = f.webhook_cert_dir;
            hooks->self_managed = f.webhook_cert_mode == "self-managed";
            hooks->certificate.namespace_ = !f.webhook_namespace.empty() ? f.webhook_namespace
                                            : !mo.config.namespace_.empty() ? mo.config.namespace_
                                                                             : "default";
            hooks->certificate.service = f.webhook_service;
            hooks->certificate.secret = f.webhook_secret;
            if (hooks->self_managed) volumes::prepare_self_managed_certificate(mo.config, *hooks);
        }

        volumes::ControllerOptions co;
        co.workers = f.workers;
        co.reconciler.handler.data_mover_image = f.data_mover_image;
        co.reconciler.handler.peer_fill = f.peer_fill;
        co.reconciler.handler.pachctl_image = f.pachctl_image;
        co.reconciler.handler.allowed_data_roots = f.allowed_data_roots;
        co.reconciler.copies.node_lost_timeout =
            std::chrono::seconds(static_cast<std::int64_t>(*handlers::parse_go_duration(f.node_lost_timeout)));
        co.reconciler.copies.max_download_attempts = f.max_download_attempts;
        co.reconciler.copies.disk_fill_threshold = f.disk_fill_threshold;
        co.reconciler.list_source = volumes::list_s3_source;
        co.reconciler.handler.share_copies = f.share_copies;
        co.reconciler.min_refresh_interval =
            std::chrono::seconds(static_cast<std::int64_t>(*handlers::parse_go_duration(f.min_refresh_interval)));
        co.eviction.enabled = f.evict_on_disk_pressure;
        co.eviction.settle = std::chrono::milliseconds(
            static_cast<std::int64_t>(*handlers::parse_go_duration(f.disk_pressure_settle) * 1000));
        co.reconciler.progress_interval = std::chrono::milliseconds(
            static_cast<std::int64_t>(*handlers::parse_go_duration(f.download_progress_interval) * 1000));
        co.reconciler.handler.progress_interval = std::max(std::chrono::milliseconds(1000), co.reconciler.progress_interval / 2);
        runtime::ClusterManager m(std::move(mo));
        auto registry = handlers::HandlerRegistry::with_builtin_handlers();
        auto vmc = volumes::add_volume_manager_controller(m, registry, co);
        std::optional<volumes::WebhookServing> serving;  // after m: stops before m's executor goes
        if (hooks) serving = volumes::serve_webhooks(m, vmc, registry, co.reconciler.handler, *hooks);
        log::info("starting vck-controller", {{"version", std::string(vck::version)}, {"server", m.client().config().server},
                                              {"namespace", f.namespace_.empty() ? "(all)" : f.namespace_}});
        int rc = m.run();
        log::info("vck-controller stopped", {{"exit", std::to_string(rc)}});
        return rc;
    } catch (const std::exception& e) {
        log::error(std::string("vck-controller: ") + e.what());
        return 1;
    }
}
