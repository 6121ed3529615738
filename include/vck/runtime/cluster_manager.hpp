// ClusterManager: a Manager (manager.hpp) connected to a Kubernetes API server over HTTPS —
// the informers list and watch through client() (client_list_watch.hpp), leader election
// keeps its Lease on the server through a client of its own (client_lease_lock.hpp), and one
// HTTP server serves /healthz, /readyz (ready once Manager::synced()) and /metrics, or a
// second one /metrics alone (controller-runtime's --metrics-bind-address).
// Guarantees, beyond the Manager's: with leader election, client() is fenced: every mutating
// request through it is refused before it is sent (an ApiError of kind Fenced, "not the
// leader: lease not renewed for 3.2s", which a controller retries like any reconcile error)
// unless Manager::may_write(); reads stay allowed, and the elector's own client is neither
// fenced nor made to wait behind the controllers' requests in the rate limiter. A request
// already sent when a pause began cannot be recalled. The servers bind when run() starts
// (a busy port is an error naming its flag) and close when it returns. Metrics, beyond the
// Manager's: client-go's rest_client_requests_total{code,host,method} and
// rest_client_request_duration_seconds{host,verb} for both clients. With serve_metrics off,
// no server answers /metrics.
#pragma once

#include <vck/client/client.hpp>
#include <vck/runtime/client_lease_lock.hpp>
#include <vck/runtime/client_list_watch.hpp>
#include <vck/runtime/event_recorder.hpp>
#include <vck/runtime/health_server.hpp>
#include <vck/runtime/manager.hpp>
#include <vck/runtime/rest_client_metrics.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

namespace vck::runtime {

struct ClusterManagerOptions : ManagerOptions {
    ClusterManagerOptions() {}
    client::Config config;
    std::optional<HealthServer::Options> health;   // /healthz, /readyz (and /metrics); nullopt: none
    std::optional<HealthServer::Options> metrics;  // a second server for /metrics; nullopt: none
    bool serve_metrics = true;                     // false: /metrics is served nowhere (--metrics-bind-address=0)
};

class ClusterManager : public Manager {
public:
    explicit ClusterManager(ClusterManagerOptions o) : ClusterManager(std::move(o), std::make_shared<Connection>()) {}

    client::Client& client() { return *conn_->client; }
    EventRecorder event_recorder(std::string component) {
        EventRecorderOptions o;
        o.component = std::move(component);
        o.host = identity();
        return EventRecorder(client(), std::move(o));
    }
    /// The ports the servers listen on once run() has bound them (0 before, or without one).
    std::uint16_t health_port() const { return conn_->health_port.load(); }
    std::uint16_t metrics_port() const { return conn_->metrics_port.load(); }

private:
    /// Owned by the Manager (Cluster::resources), so the clients outlive the runnables and
    /// informers that use them; members go in reverse order: servers first.
    struct Connection {
        std::unique_ptr<client::Client> client;
        std::unique_ptr<client::Client> election_client;  // with leader election only
        std::unique_ptr<HealthServer> health, metrics;
        std::atomic<std::uint16_t> health_port{0}, metrics_port{0};
    };

    ClusterManager(ClusterManagerOptions o, std::shared_ptr<Connection> c)
        : Manager(o, [&o, c](Manager& m) { return connect(o, c, m); }), conn_(c.get()) {}

    static Cluster connect(const ClusterManagerOptions& o, const std::shared_ptr<Connection>& c, Manager& m) {
        auto ex = m.io_context().get_executor();
        auto rest = std::make_shared<RestClientMetrics>(m.metrics(), RestClientMetrics::host_of(o.config.server));
        auto observer = [rest](std::string_view method, int code, double seconds) { rest->observe(method, code, seconds); };
        c->client = std::make_unique<client::Client>(ex, o.config);
        c->client->set_observer(observer);
        Cluster cluster;
        cluster.list_watch = list_watch(*c->client);
        if (o.leader_election) {
            c->election_client = std::make_unique<client::Client>(ex, o.config);
            c->election_client->set_observer(observer);
            cluster.lease_lock = std::make_shared<ClientLeaseLock>(*c->election_client);
            c->client->set_write_gate([&m](client::http::verb method, const std::string& target) {
                m.fence(client::detail::verb_name(method), target);
            });
        }
        auto served = o.serve_metrics ? m.metrics() : nullptr;
        cluster.on_run = [c, &m, ex, served, health = o.health, metrics = o.metrics] {
            if (health) {
                c->health = std::make_unique<HealthServer>(ex, *health, served);
                c->health->add_healthz("ping", [] { return true; });
                c->health->add_readyz("informers", [&m] { return m.synced(); });
                c->health->start();
                c->health_port = c->health->port();
            }
            if (metrics) {
                c->metrics = std::make_unique<HealthServer>(ex, *metrics, served);
                c->metrics->add_healthz("ping", [] { return true; });
                c->metrics->start();
                c->metrics_port = c->metrics->port();
            }
        };
        cluster.on_exit = [c] {
            if (c->health) c->health->stop();
            if (c->metrics) c->metrics->stop();
        };
        cluster.resources = c;
        return cluster;
    }

    Connection* conn_;  // owned by the Manager's Cluster
};

} // namespace vck::runtime
