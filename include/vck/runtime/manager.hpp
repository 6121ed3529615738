// Manager: runs an operator — owns the io_context, the shared informers (over the ListWatch of
// a Cluster built on its executor), the metrics registry, the controllers (and any Runnable)
// and optional leader election (over the Cluster's LeaseLock). It does no I/O of its own and
// includes no Beast: runtime/cluster_manager.hpp connects one to an API server over HTTPS
// (client, probe servers, write fence); tests connect one to sandbox/memory_list_watch.hpp.
// Guarantees: leader-only runnables run only while this process holds the lease and are
// stopped the moment it is lost (the manager then shuts down and run() returns 1, so the
// process exits non-zero and is restarted, as controller-runtime does); may_write() and
// fence() tell whether a write may go out now (with leader election: only while the lease was
// renewed less than the renew deadline ago, so a leader paused past it writes nothing when it
// resumes). synced() (readiness) is true once run() started and every informer synced.
// SIGTERM/SIGINT (with handle_signals), request_stop() from any thread, or the loss of the
// lease shut everything down — runnables stopped and drained, lease released — and run()
// returns within graceful_shutdown even if some task hangs. run() blocks in the io_context's
// run(): nothing polls; the tasks keep it busy and the shutdown (or its deadline) ends it.
// A runnable that fails is logged and the rest keep running. An empty leader-election
// identity becomes hostname_uuid. Metrics: the controllers' controller_runtime_* and
// workqueue_*; controller_runtime_active_leader and leader_election_master_status{name}
// with leader election; process_*; vck_build_info{version} 1 when ManagerOptions::version is
// set. Logs (vck::log): leadership changes and failures at level 0.
#pragma once

#include <vck/client/error.hpp>
#include <vck/runtime/controller.hpp>
#include <vck/runtime/lease_lock.hpp>
#include <vck/runtime/leader_election.hpp>
#include <vck/runtime/list_watch.hpp>
#include <vck/runtime/log.hpp>
#include <vck/runtime/metrics.hpp>
#include <vck/runtime/process_metrics.hpp>
#include <vck/runtime/shared_informer_factory.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vck::runtime {

struct ManagerOptions {
    ManagerOptions() {}
    std::optional<LeaderElectionOptions> leader_election;  // an empty identity: hostname_uuid
    std::string version;                                   // exported as vck_build_info{version}; empty: not exported
    InformerOptions informers;                             // namespace, selectors, resync for every informer
    std::chrono::milliseconds graceful_shutdown{10'000};
    bool handle_signals = true;  // SIGTERM and SIGINT request a stop
};

class Manager;

/// What a manager runs against, made by its connect function on the manager's executor.
struct Cluster {
    std::shared_ptr<ListWatch> list_watch;  // required: the informers list and watch through it (whoever else
                                            // holds it lets go before the manager is destroyed)
    std::shared_ptr<LeaseLock> lease_lock;  // required with leader election
    std::function<void()> on_run;           // run() calls it first, on its thread (e.g. binds servers); may throw
    std::function<void()> on_exit;          // run() calls it once everything has stopped (e.g. closes them)
    std::shared_ptr<void> resources;        // what the above use (clients, servers): kept until the runnables,
                                            // informers and elector are gone
};

class Manager {
public:
    /// Builds the Cluster on the manager's executor (io_context()); called once, by the
    /// constructor, once metrics() and options() are there.
    using Connect = std::function<Cluster(Manager&)>;

    Manager(ManagerOptions o, const Connect& connect) : opts_(std::move(o)), metrics_(std::make_shared<MetricsRegistry>()) {
        if (opts_.leader_election) {
            opts_.leader_election = opts_.leader_election->with_identity();
            opts_.leader_election->validate();
        }
        if (!connect) throw std::invalid_argument("manager: no connect function");
        cluster_ = connect(*this);
        if (!cluster_.list_watch) throw std::invalid_argument("manager: the cluster has no list-and-watch");
        if (opts_.leader_election && !cluster_.lease_lock)
            throw std::invalid_argument("manager: leader election without a lease lock");
        informers_ = std::make_unique<SharedInformerFactory>(cluster_.list_watch, opts_.informers);
        informers_->on_idle([this] { maybe_finish(); });
        metrics_->describe("controller_runtime_active_leader", MetricsRegistry::Type::Gauge,
                           "1 while this manager holds the leader election lease");
        add_process_collector(*metrics_);
        if (!opts_.version.empty()) {
            metrics_->describe("vck_build_info", MetricsRegistry::Type::Gauge,
                               "A metric with a constant '1' value labeled by the version VCK was built from.");
            metrics_->set("vck_build_info", {{"version", opts_.version}}, 1);
        }
        if (opts_.leader_election) {
            metrics_->describe("leader_election_master_status", MetricsRegistry::Type::Gauge,
                               "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
                               "backup, 1 indicates master. 'name' is the string used to identify the lease.");
            master_status_ = &metrics_->gauge("leader_election_master_status", {{"name", opts_.leader_election->name}});
        }
    }
    Manager(const Manager&) = delete;
    Manager& operator=(const Manager&) = delete;
    virtual ~Manager() {
        // Destroyed with the io_context stopped: pending handlers are destroyed, not run.
        ioc_.stop();
        elector_ptr_ = nullptr;
        elector_.reset();
        runnables_.clear();
        informers_.reset();
        cluster_ = Cluster{};
    }

    boost::asio::io_context& io_context() { return ioc_; }
    SharedInformerFactory& informers() { return *informers_; }
    const std::shared_ptr<MetricsRegistry>& metrics() const { return metrics_; }
    const ManagerOptions& options() const { return opts_; }
    /// This candidate's leader-election identity (empty without leader election).
    std::string identity() const { return opts_.leader_election ? opts_.leader_election->identity : std::string(); }

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

    /// Call before run(). Adding the same runnable again changes nothing.
    void add(std::shared_ptr<Runnable> r) {
        if (!r) throw std::invalid_argument("manager: add() of a null runnable");
        if (std::find(runnables_.begin(), runnables_.end(), r) != runnables_.end()) return;
        runnables_.push_back(std::move(r));
    }

    /// Runs on the calling thread until request_stop(), a signal, or the loss of the lease;
    /// returns 0 after a clean shutdown, 1 when the lease was lost or the grace period ran out.
    int run() {
        if (cluster_.on_run) cluster_.on_run();
        // Keeps ioc_.run() from returning before the shutdown, whatever runs or not.
        work_.emplace(ioc_.get_executor());
        std::optional<boost::asio::signal_set> signals;
        if (opts_.handle_signals) {
            signals.emplace(ioc_, SIGINT, SIGTERM);
            signals->async_wait([this](boost::system::error_code ec, int) {
                if (!ec) begin_shutdown();
            });
        }
        signals_ = signals ? &*signals : nullptr;
        boost::asio::post(ioc_, [this] {
            informers_->start();
            started_ = true;
            for (auto& r : runnables_)
                if (!r->needs_leader_election() || !opts_.leader_election) spawn(r);
            if (opts_.leader_election) start_election();
            if (stop_requested_) begin_shutdown();
        });
        ioc_.run();  // until finish(): everything stopped, or the grace period ran out
        if (signals) {
            boost::system::error_code ec;
            signals->cancel(ec);
        }
        signals_ = nullptr;
        work_.reset();
        if (cluster_.on_exit) cluster_.on_exit();
        ioc_.restart();
        ioc_.poll();  // the cancellations' handlers, ready now
        return (lost_ || timed_out_) ? 1 : 0;
    }

    /// Thread-safe; run() starts shutting down (at once if running, else as soon as it starts).
    void request_stop() {
        stop_requested_ = true;
        boost::asio::post(ioc_, [this] { begin_shutdown(); });
    }

    bool is_leader() const { return leading_.load(); }
    /// Whether writes may go out now: always without leader election; with it, while the
    /// elector holds_lease_now(). Thread-safe.
    bool may_write() const {
        if (!opts_.leader_election) return true;
        auto* e = elector_ptr_.load();
        return e && e->holds_lease_now();
    }
    /// Throws an ApiError of kind Fenced (naming `verb` and `target`) unless may_write(): the
    /// write gate of a client under leader election.
    void fence(std::string verb, std::string target) const {
        if (may_write()) return;
        auto* e = elector_ptr_.load();
        std::string why = e && e->is_leader()
                              ? fmt::format("not the leader: lease not renewed for {:.1f}s (renew deadline {:.1f}s)",
                                            std::chrono::duration<double>(e->since_renew()).count(),
                                            std::chrono::duration<double>(opts_.leader_election->renew_deadline).count())
                              : std::string("not the leader: the lease is not held");
        throw client::ApiError(client::ErrorKind::Fenced, std::move(verb), std::move(target), std::move(why));
    }
    /// The elector (null without leader election, or before run() started it); abandon() on
    /// it simulates a hung leader.
    LeaderElector* elector() { return elector_ptr_.load(); }
    /// Readiness: run() has started everything and every informer has synced.
    bool synced() const { return started_.load() && informers_->has_synced(); }

private:
    void spawn(std::shared_ptr<Runnable> r) {
        ++tasks_;
        boost::asio::co_spawn(ioc_, [r]() -> boost::asio::awaitable<void> { co_await r->start(); },
                              [this, name = r->name()](std::exception_ptr e) {
                                  --tasks_;
                                  if (e) {
                                      try {
                                          std::rethrow_exception(e);
                                      } catch (const std::exception& err) {
                                          log::error("runnable failed", {{"runnable", name}, {"error", err.what()}});
                                      }
                                  }
                                  maybe_finish();
                              });
    }

    void start_election() {
        LeaderCallbacks cb;
        cb.on_started_leading = [this] {
            leading_ = true;
            log::info("successfully acquired lease", {{"lease", lease_name()}, {"identity", identity()}});
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
        elector_ = std::make_unique<LeaderElector>(ioc_.get_executor(), cluster_.lease_lock, *opts_.leader_election,
                                                   std::move(cb));
        elector_ptr_ = elector_.get();
        ++tasks_;
        boost::asio::co_spawn(ioc_, elector_->run(), [this](std::exception_ptr) {
            --tasks_;
            maybe_finish();
        });
    }

    std::string lease_name() const {
        return opts_.leader_election->namespace_ + "/" + opts_.leader_election->name;
    }

    /// On the io_context: stops everything and starts the grace period.
    void begin_shutdown() {
        stop_requested_ = true;
        if (shutting_down_ || !started_) return;  // before the start: the start handler comes back here
        shutting_down_ = true;
        for (auto& r : runnables_) r->stop();
        if (elector_) elector_->stop();
        informers_->stop();
        if (signals_) {
            boost::system::error_code ec;
            signals_->cancel(ec);
        }
        deadline_.expires_after(opts_.graceful_shutdown);
        deadline_.async_wait([this](boost::system::error_code ec) {
            if (ec || finished_) return;
            timed_out_ = true;
            log::error("graceful shutdown timed out", {{"timeout", fmt::format("{}ms", opts_.graceful_shutdown.count())}});
            finish();
        });
        maybe_finish();
    }

    /// On the io_context, after each task ends: run() returns once all have.
    void maybe_finish() {
        if (shutting_down_ && !finished_ && tasks_ == 0 && informers_->running() == 0) finish();
    }
    void finish() {
        finished_ = true;
        deadline_.cancel();
        ioc_.stop();
    }

    ManagerOptions opts_;
    boost::asio::io_context ioc_{1};  // run() runs it on one thread: no cross-thread wake-ups per handler
    Cluster cluster_;
    std::unique_ptr<SharedInformerFactory> informers_;
    std::shared_ptr<MetricsRegistry> metrics_;
    std::unique_ptr<LeaderElector> elector_;
    std::atomic<LeaderElector*> elector_ptr_{nullptr};  // elector_, for readers on other threads
    MetricSeries* master_status_ = nullptr;              // leader_election_master_status, with leader election
    std::vector<std::shared_ptr<Runnable>> runnables_;
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
    boost::asio::steady_timer deadline_{ioc_};
    boost::asio::signal_set* signals_ = nullptr;
    int tasks_ = 0;  // runnables and the elector still running (touched on the io_context only)
    bool finished_ = false;
    std::atomic<bool> stop_requested_{false}, shutting_down_{false}, started_{false}, leading_{false}, lost_{false},
        timed_out_{false};
};

} // namespace vck::runtime
