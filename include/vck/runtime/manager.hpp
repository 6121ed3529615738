// Manager: runs an operator — owns the io_context, the client, the shared informers, the
// controllers (and any Runnable), optional leader election, and one HTTP server with
// /metrics, /healthz and /readyz (ready once every informer cache has synced).
// Guarantees: leader-only runnables run only while this process holds the lease and are
// stopped the moment it is lost (the manager then shuts down and run() returns 1, so the
// process exits non-zero and is restarted, as controller-runtime does); with leader election,
// client() is fenced: every mutating request through it is refused before it is sent (an
// ApiError of kind Fenced, "not the leader: lease not renewed for 3.2s", which a controller
// retries like any reconcile error) unless the lease was renewed less than the renew deadline
// ago, so a leader that was paused past it (SIGSTOP, a stalled node) writes nothing when it
// resumes, though its elector has not noticed yet. Reads stay allowed; the elector writes the
// Lease through a client of its own. A request already sent when the pause began cannot be
// recalled. SIGTERM/SIGINT (or request_stop()) shut everything down — lease released, workers
// drained — and run() returns within graceful_shutdown even if some task hangs.
// Metrics (docs/ops.md lists them): the controllers' controller_runtime_* and workqueue_*;
// client-go's rest_client_requests_total{code,host,method} and
// rest_client_request_duration_seconds{host,verb} for both clients;
// leader_election_master_status{name} with leader election; process_*; and, when
// ManagerOptions::version is set, vck_build_info{version} 1. With serve_metrics off, no
// server answers /metrics. Logs (vck::log): leadership changes and failures at level 0.
#pragma once

#include <vck/client/client.hpp>
#include <vck/runtime/client_list_watch.hpp>
#include <vck/runtime/controller.hpp>
#include <vck/runtime/event_recorder.hpp>
#include <vck/runtime/health_server.hpp>
#include <vck/runtime/leader_election.hpp>
#include <vck/runtime/log.hpp>
#include <vck/runtime/metrics.hpp>
#include <vck/runtime/process_metrics.hpp>
#include <vck/runtime/rest_client_metrics.hpp>
#include <vck/runtime/shared_informer_factory.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <optional>
#include <thread>

namespace vck::runtime {

struct ManagerOptions {
    ManagerOptions() {}
    client::Config config;
    std::optional<LeaderElectionOptions> leader_election;
    std::optional<HealthServer::Options> health;   // /healthz, /readyz (and /metrics); nullopt: none
    std::optional<HealthServer::Options> metrics;  // a second server for /metrics (controller-runtime's
                                                   // --metrics-bind-address); nullopt: none
    bool serve_metrics = true;  // false: /metrics is served nowhere (--metrics-bind-address=0)
    std::string version;        // exported as vck_build_info{version}; empty: not exported
    InformerOptions informers;                   // namespace, selectors, resync for every informer
    std::chrono::milliseconds graceful_shutdown{10'000};
    bool handle_signals = true;  // SIGTERM and SIGINT request a stop
};

class Manager {
public:
    explicit Manager(ManagerOptions o)
        : opts_(std::move(o)), client_(std::make_unique<client::Client>(ioc_.get_executor(), opts_.config)),
          informers_(std::make_unique<SharedInformerFactory>(list_watch(*client_), opts_.informers)),
          metrics_(std::make_shared<MetricsRegistry>()) {
        if (opts_.leader_election) opts_.leader_election->validate();
        metrics_->describe("controller_runtime_active_leader", MetricsRegistry::Type::Gauge,
                           "1 while this manager holds the leader election lease");
        add_process_collector(*metrics_);
        if (!opts_.version.empty()) {
            metrics_->describe("vck_build_info", MetricsRegistry::Type::Gauge,
                               "A metric with a constant '1' value labeled by the version VCK was built from.");
            metrics_->set("vck_build_info", {{"version", opts_.version}}, 1);
        }
        auto rest = std::make_shared<RestClientMetrics>(metrics_, RestClientMetrics::host_of(opts_.config.server));
        auto observer = [rest](std::string_view method, int code, double seconds) { rest->observe(method, code, seconds); };
        client_->set_observer(observer);
        if (opts_.leader_election) {
            // The elector's own client: its renewals must neither wait behind the controllers'
            // requests in the rate limiter nor be refused by the gate below when overdue.
            election_client_ = std::make_unique<client::Client>(ioc_.get_executor(), opts_.config);
            election_client_->set_observer(observer);
            metrics_->describe("leader_election_master_status", MetricsRegistry::Type::Gauge,
                               "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
                               "backup, 1 indicates master. 'name' is the string used to identify the lease.");
            master_status_ = &metrics_->gauge("leader_election_master_status", {{"name", opts_.leader_election->name}});
            client_->set_write_gate([this](client::http::verb method, const std::string& target) { fence(method, target); });
        }
    }
    ~Manager() {
        // Destroyed with the io_context stopped: pending handlers are destroyed, not run.
        ioc_.stop();
        health_.reset();
        metrics_server_.reset();
        elector_ptr_ = nullptr;
        elector_.reset();
        runnables_.clear();
        informers_.reset();
        client_.reset();
        election_client_.reset();
    }

    boost::asio::io_context& io_context() { return ioc_; }
    client::Client& client() { return *client_; }
    SharedInformerFactory& informers() { return *informers_; }
    const std::shared_ptr<MetricsRegistry>& metrics() const { return metrics_; }

    /// A controller builder whose metrics go to this manager's registry; its complete()
    /// adds the controller to this manager (an add() of it as well changes nothing).
    template <api::ApiObject T>
    ControllerBuilder<T> controller_for(std::string name) {
        return runtime::controller_for<T>(std::move(name), *informers_)
            .metrics(metrics_)
            .registered_by([this](std::shared_ptr<Runnable> r) { add(std::move(r)); });
    }
    template <KubeObject T = boost::json::value>
    ControllerBuilder<T> controller_for(std::string name, api::ResourceType rt) {
        return runtime::controller_for<T>(std::move(name), *informers_, std::move(rt))
            .metrics(metrics_)
            .registered_by([this](std::shared_ptr<Runnable> r) { add(std::move(r)); });
    }
    EventRecorder event_recorder(std::string component) {
        EventRecorderOptions o;
        o.component = std::move(component);
        o.host = opts_.leader_election ? opts_.leader_election->identity : std::string();
        return EventRecorder(*client_, std::move(o));
    }

    /// Call before run(). Adding the same runnable again changes nothing.
    void add(std::shared_ptr<Runnable> r) {
        if (!r) throw std::invalid_argument("manager: add() of a null runnable");
        if (std::find(runnables_.begin(), runnables_.end(), r) != runnables_.end()) return;
        runnables_.push_back(std::move(r));
    }

    /// Runs until request_stop(), a signal, or the loss of the lease; returns 0 after a clean
    /// shutdown, 1 when the lease was lost or the grace period ran out.
    int run() {
        auto served = opts_.serve_metrics ? metrics_ : nullptr;
        if (opts_.health) {
            health_ = std::make_unique<HealthServer>(ioc_.get_executor(), *opts_.health, served);
            health_->add_healthz("ping", [] { return true; });
            health_->add_readyz("informers", [this] { return started_.load() && informers_->has_synced(); });
            health_->start();
            health_port_ = health_->port();
        }
        if (opts_.metrics) {
            metrics_server_ = std::make_unique<HealthServer>(ioc_.get_executor(), *opts_.metrics, served);
            metrics_server_->add_healthz("ping", [] { return true; });
            metrics_server_->start();
            metrics_port_ = metrics_server_->port();
        }
        std::optional<boost::asio::signal_set> signals;
        if (opts_.handle_signals) {
            signals.emplace(ioc_, SIGINT, SIGTERM);
            signals->async_wait([this](boost::system::error_code ec, int) {
                if (!ec) begin_shutdown();
            });
        }
        boost::asio::post(ioc_, [this, &signals] {
            signals_ = signals ? &*signals : nullptr;
            informers_->start();
            started_ = true;
            for (auto& r : runnables_)
                if (!r->needs_leader_election() || !opts_.leader_election) spawn(r);
            if (opts_.leader_election) start_election();
            if (stop_requested_) begin_shutdown();
        });
        std::optional<std::chrono::steady_clock::time_point> deadline;
        for (;;) {
            ioc_.run_for(std::chrono::milliseconds(50));
            if (stop_requested_ && !shutting_down_) boost::asio::post(ioc_, [this] { begin_shutdown(); });
            if (shutting_down_ && !deadline) deadline = std::chrono::steady_clock::now() + opts_.graceful_shutdown;
            if (shutting_down_ && tasks_ == 0 && informers_->running() == 0) break;
            if (deadline && std::chrono::steady_clock::now() > *deadline) {
                timed_out_ = true;
                break;
            }
            if (ioc_.stopped()) {
                ioc_.restart();
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
        }
        if (signals) {
            boost::system::error_code ec;
            signals->cancel(ec);
        }
        signals_ = nullptr;
        if (health_) health_->stop();
        if (metrics_server_) metrics_server_->stop();
        ioc_.restart();
        ioc_.run_for(std::chrono::milliseconds(20));  // let the cancellations complete
        return (lost_ || timed_out_) ? 1 : 0;
    }

    /// Thread-safe; run() starts shutting down.
    void request_stop() { stop_requested_ = true; }

    bool is_leader() const { return leading_.load(); }
    /// Whether writes through client() are let through now: always without leader election;
    /// with it, while the elector holds_lease_now().
    bool may_write() const {
        if (!opts_.leader_election) return true;
        auto* e = elector_ptr_.load();
        return e && e->holds_lease_now();
    }
    /// The elector (null without leader election); abandon() on it simulates a hung leader.
    LeaderElector* elector() { return elector_.get(); }
    std::uint16_t health_port() const { return health_port_.load(); }
    std::uint16_t metrics_port() const { return metrics_port_.load(); }
    bool synced() const { return started_.load() && informers_->has_synced(); }

private:
    void spawn(std::shared_ptr<Runnable> r) {
        ++tasks_;
        boost::asio::co_spawn(ioc_, [r]() -> boost::asio::awaitable<void> { co_await r->start(); },
                              [this, name = r->name()](std::exception_ptr e) {
                                  --tasks_;
                                  if (!e) return;
                                  try {
                                      std::rethrow_exception(e);
                                  } catch (const std::exception& err) {
                                      log::error("runnable failed", {{"runnable", name}, {"error", err.what()}});
                                  }
                              });
    }

    void start_election() {
        LeaderCallbacks cb;
        cb.on_started_leading = [this] {
            leading_ = true;
            log::info("successfully acquired lease", {{"lease", lease_name()}, {"identity", opts_.leader_election->identity}});
            metrics_->set("controller_runtime_active_leader", {}, 1);
            master_status_->set(1);
            if (shutting_down_) return;
            for (auto& r : runnables_)
                if (r->needs_leader_election()) spawn(r);
        };
        cb.on_stopped_leading = [this] {
            leading_ = false;
            metrics_->set("controller_runtime_active_leader", {}, 0);
            master_status_->set(0);
            for (auto& r : runnables_)
                if (r->needs_leader_election()) r->stop();
            if (!shutting_down_) {
                lost_ = true;
                log::error("leader election lost, shutting down");
                begin_shutdown();
            }
        };
        cb.on_new_leader = [this](const std::string& holder) {
            log::info("new leader elected", {{"lease", lease_name()}, {"identity", holder}});
        };
        elector_ = std::make_unique<LeaderElector>(*election_client_, *opts_.leader_election, std::move(cb));
        elector_ptr_ = elector_.get();
        ++tasks_;
        boost::asio::co_spawn(ioc_, elector_->run(), [this](std::exception_ptr) { --tasks_; });
    }

    std::string lease_name() const {
        return opts_.leader_election->namespace_ + "/" + opts_.leader_election->name;
    }

    /// The write gate of client() under leader election.
    void fence(client::http::verb method, const std::string& target) {
        if (may_write()) return;
        auto* e = elector_ptr_.load();
        std::string why = e && e->is_leader()
                              ? fmt::format("not the leader: lease not renewed for {:.1f}s (renew deadline {:.1f}s)",
                                            std::chrono::duration<double>(e->since_renew()).count(),
                                            std::chrono::duration<double>(opts_.leader_election->renew_deadline).count())
                              : std::string("not the leader: the lease is not held");
        throw client::ApiError(client::ErrorKind::Fenced, client::detail::verb_name(method), target, std::move(why));
    }

    void begin_shutdown() {
        if (shutting_down_) return;
        shutting_down_ = true;
        stop_requested_ = true;
        for (auto& r : runnables_) r->stop();
        if (elector_) elector_->stop();
        informers_->stop();
        if (signals_) {
            boost::system::error_code ec;
            signals_->cancel(ec);
        }
    }

    ManagerOptions opts_;
    boost::asio::io_context ioc_{1};  // run() runs it on one thread: no cross-thread wake-ups per handler
    std::unique_ptr<client::Client> client_;
    std::unique_ptr<SharedInformerFactory> informers_;
    std::shared_ptr<MetricsRegistry> metrics_;
    std::unique_ptr<HealthServer> health_;
    std::unique_ptr<HealthServer> metrics_server_;
    std::unique_ptr<client::Client> election_client_;  // with leader election only
    std::unique_ptr<LeaderElector> elector_;
    std::atomic<LeaderElector*> elector_ptr_{nullptr};
    MetricSeries* master_status_ = nullptr;  // leader_election_master_status, with leader election  // elector_, for readers on other threads
    std::vector<std::shared_ptr<Runnable>> runnables_;
    boost::asio::signal_set* signals_ = nullptr;
    std::atomic<int> tasks_{0};
    std::atomic<bool> stop_requested_{false}, shutting_down_{false}, started_{false}, leading_{false}, lost_{false},
        timed_out_{false};
    std::atomic<std::uint16_t> health_port_{0}, metrics_port_{0};
};

} // namespace vck::runtime
