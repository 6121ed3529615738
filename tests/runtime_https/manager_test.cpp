// Specification of LeaderElector and Manager: one leader among managers, hand-over after a
// leader stops renewing without any key reconciled by both, lease release on shutdown,
// signals, and the /metrics, /healthz, /readyz endpoints.
#include <vck/runtime/cluster_manager.hpp>

#include "harness.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <csignal>
#include <set>

using namespace vck;
using runtime::Request;
using runtime::Result;
using test::configmap;
using test::eventually;
using test::server;
namespace json = boost::json;
namespace asio = boost::asio;

namespace {

runtime::LeaderElectionOptions short_lease(std::string name, std::string identity) {
    runtime::LeaderElectionOptions le;
    le.namespace_ = "default";
    le.name = std::move(name);
    le.identity = std::move(identity);
    le.lease_duration = std::chrono::milliseconds(2000);
    le.renew_deadline = std::chrono::milliseconds(1500);
    le.retry_period = std::chrono::milliseconds(200);
    return le;
}

runtime::ClusterManagerOptions manager_options(std::string ns) {
    runtime::ClusterManagerOptions o;
    o.config = server().config();
    o.informers.namespace_ = std::move(ns);
    o.informers.backoff_base = std::chrono::milliseconds(50);
    o.handle_signals = false;
    o.graceful_shutdown = std::chrono::milliseconds(5000);
    return o;
}

/// Plain HTTP GET against 127.0.0.1:port; returns the status line and body.
std::pair<int, std::string> http_get(std::uint16_t port, std::string path) {
    asio::io_context ioc;
    asio::ip::tcp::socket s(ioc);
    s.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    std::string req = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    asio::write(s, asio::buffer(req));
    std::string resp;
    boost::system::error_code ec;
    asio::read(s, asio::dynamic_buffer(resp), ec);
    auto sp = resp.find(' ');
    int code = std::stoi(resp.substr(sp + 1, 3));
    auto body = resp.find("\r\n\r\n");
    return {code, body == std::string::npos ? std::string() : resp.substr(body + 4)};
}

std::string lease_holder(const std::string& name) {
    auto l = server().store().get(sandbox::ResourceId{"coordination.k8s.io", "v1", "leases"}, "default", name);
    return std::string(api::string_at(l, {"spec", "holderIdentity"}));
}

/// Shared by both managers: who reconciled what, and whether a key was ever in two at once.
struct Ledger {
    std::mutex mu;
    std::map<std::string, std::string> in_flight;  // key -> manager
    std::map<std::string, int> by_manager;
    bool overlap = false;
    void begin(const std::string& who, const std::string& key) {
        std::lock_guard lk(mu);
        if (in_flight.count(key)) overlap = true;
        in_flight[key] = who;
        ++by_manager[who];
    }
    void end(const std::string& key) {
        std::lock_guard lk(mu);
        in_flight.erase(key);
    }
    int count(const std::string& who) {
        std::lock_guard lk(mu);
        return by_manager[who];
    }
};

struct Candidate {
    std::string id;
    std::unique_ptr<runtime::ClusterManager> mgr;
    std::thread thread;
    std::atomic<int> exit_code{-1};
    Candidate(std::string identity, std::string ns, std::string lease, Ledger& ledger) : id(std::move(identity)) {
        auto o = manager_options(ns);
        o.leader_election = short_lease(lease, id);
        mgr = std::make_unique<runtime::ClusterManager>(o);
        auto c = mgr->controller_for<api::ConfigMap>("le-" + id)
                     .complete([this, &ledger](const Request& r) -> asio::awaitable<Result> {
                         ledger.begin(id, r.str());
                         asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(20));
                         co_await t.async_wait(asio::use_awaitable);
                         ledger.end(r.str());
                         co_return Result::requeue_after(std::chrono::milliseconds(50));
                     });
        mgr->add(c);
        thread = std::thread([this] { exit_code = mgr->run(); });
    }
    ~Candidate() {
        mgr->request_stop();
        thread.join();
    }
};

} // namespace

TEST_CASE("leader election options follow client-go's defaults and rules") {
    runtime::LeaderElectionOptions o;
    CHECK(o.lease_duration == std::chrono::seconds(15));
    CHECK(o.renew_deadline == std::chrono::seconds(10));
    CHECK(o.retry_period == std::chrono::seconds(2));
    o.name = "x";
    o.identity = "me";
    CHECK_NOTHROW(o.validate());
    o.renew_deadline = std::chrono::seconds(20);
    CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("greater than the renew deadline"), std::invalid_argument);
}

TEST_CASE("of two managers exactly one reconciles; when it stops renewing the other takes over with no key in both") {
    test::ensure_namespace("le");
    for (int i = 0; i < 3; ++i) server().store().create(test::configmaps_id, "le", configmap("le", "k" + std::to_string(i)));
    Ledger ledger;
    auto a = std::make_unique<Candidate>("a", "le", "le-lock", ledger);
    auto b = std::make_unique<Candidate>("b", "le", "le-lock", ledger);
    REQUIRE(eventually([&] { return a->mgr->is_leader() || b->mgr->is_leader(); }));
    auto& leader = a->mgr->is_leader() ? *a : *b;
    auto& follower = a->mgr->is_leader() ? *b : *a;
    REQUIRE(eventually([&] { return ledger.count(leader.id) >= 6; }));
    CHECK(ledger.count(follower.id) == 0);
    CHECK(lease_holder("le-lock") == leader.id);
    CHECK_FALSE(follower.mgr->is_leader());
    CHECK(leader.mgr->metrics()->value("leader_election_master_status", {{"name", "le-lock"}}) == 1);
    CHECK(follower.mgr->metrics()->value("leader_election_master_status", {{"name", "le-lock"}}) == 0);

    auto t0 = std::chrono::steady_clock::now();
    asio::post(leader.mgr->io_context(), [&] { leader.mgr->elector()->abandon(); });
    REQUIRE(eventually([&] { return ledger.count(follower.id) > 0; }));
    auto handover = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MESSAGE("hand-over took " << handover << " s (lease 2 s)");
    CHECK(eventually([&] { return leader.exit_code.load() == 1; }));  // the old leader shut down: lease lost
    CHECK(lease_holder("le-lock") == follower.id);
    CHECK_FALSE(ledger.overlap);
    CHECK(follower.mgr->metrics()->value("leader_election_master_status", {{"name", "le-lock"}}) == 1);
    CHECK(leader.mgr->metrics()->value("leader_election_master_status", {{"name", "le-lock"}}) == 0);
}

TEST_CASE("a leader releases its lease on graceful shutdown") {
    test::ensure_namespace("le-release");
    Ledger ledger;
    {
        Candidate c("solo", "le-release", "release-lock", ledger);
        REQUIRE(eventually([&] { return c.mgr->is_leader(); }));
        CHECK(lease_holder("release-lock") == "solo");
    }
    CHECK(lease_holder("release-lock") == "");
}

TEST_CASE("a controller built from the manager runs without add(), and adding it again changes nothing") {
    test::ensure_namespace("mgr-register");
    server().store().create(test::configmaps_id, "mgr-register", configmap("mgr-register", "one"));
    runtime::ClusterManager mgr(manager_options("mgr-register"));
    std::atomic<int> calls{0};
    auto c = mgr.controller_for<api::ConfigMap>("registered").complete([&](const Request&) -> asio::awaitable<Result> {
        ++calls;
        co_return Result::done();
    });
    mgr.add(c);  // as code written before complete() registered does: harmless
    std::atomic<int> code{-1};
    std::thread t([&] { code = mgr.run(); });
    CHECK(eventually([&] { return calls.load() == 1; }));
    mgr.request_stop();
    t.join();
    CHECK(code.load() == 0);
    CHECK(calls.load() == 1);
}

TEST_CASE("SIGTERM makes the manager shut down cleanly, and /metrics, /healthz, /readyz are served") {
    test::ensure_namespace("mgr-http");
    server().store().create(test::configmaps_id, "mgr-http", configmap("mgr-http", "one"));
    auto o = manager_options("mgr-http");
    o.handle_signals = true;
    o.health = runtime::HealthServer::Options();
    runtime::ClusterManager mgr(o);
    std::atomic<int> calls{0};
    mgr.add(mgr.controller_for<api::ConfigMap>("http").complete([&](const Request&) -> asio::awaitable<Result> {
        ++calls;
        co_return Result::done();
    }));
    std::atomic<int> code{-1};
    std::thread t([&] { code = mgr.run(); });
    REQUIRE(eventually([&] { return mgr.health_port() != 0 && calls.load() == 1; }));
    CHECK(eventually([&] { return http_get(mgr.health_port(), "/readyz").first == 200; }));
    CHECK(http_get(mgr.health_port(), "/healthz") == std::pair<int, std::string>{200, "ok"});
    CHECK(http_get(mgr.health_port(), "/nope").first == 404);
    auto metrics = http_get(mgr.health_port(), "/metrics");
    CHECK(metrics.first == 200);
    for (const char* name : {"controller_runtime_reconcile_total{controller=\"http\",result=\"success\"} 1",
                             "controller_runtime_reconcile_errors_total{controller=\"http\"} 0",
                             "controller_runtime_reconcile_time_seconds_count{controller=\"http\"} 1",
                             "workqueue_adds_total{controller=\"http\",name=\"http\"}",
                             "workqueue_depth{controller=\"http\",name=\"http\"}",
                             "controller_runtime_max_concurrent_reconciles{controller=\"http\"} 1",
                             "controller_runtime_active_workers{controller=\"http\"} 0",
                             "rest_client_requests_total{code=\"200\",host=\"127.0.0.1:",
                             "rest_client_request_duration_seconds_bucket{host=\"127.0.0.1:",
                             "process_resident_memory_bytes ", "process_open_fds "})
        CHECK_MESSAGE(metrics.second.find(name) != std::string::npos, name);
    std::raise(SIGTERM);
    t.join();
    CHECK(code.load() == 0);
}

namespace {

const sandbox::ResourceId secrets_rid{"", "v1", "secrets"};

/// Secrets in `ns` whose name starts with `prefix`, as the server has them.
int secrets_named(const std::string& ns, const std::string& prefix) {
    int n = 0;
    auto list = server().store().list(secrets_rid, ns);
    for (const auto& s : list.at("items").as_array())
        if (std::string_view(api::string_at(s, {"metadata", "name"})).starts_with(prefix)) ++n;
    return n;
}

/// A manager whose leader-only controller creates a Secret "<id>-<n>" on every reconcile of
/// the configmaps of its namespace, every 100 ms: a steady stream of writes to watch.
struct Writer {
    std::string id, ns;
    std::unique_ptr<runtime::ClusterManager> mgr;
    std::thread thread;
    std::atomic<int> exit_code{-1}, created{0}, refused{0};
    std::mutex mu;
    std::string refusal;  // the first refusal's message
    Writer(std::string identity, std::string n, std::optional<std::string> lease) : id(std::move(identity)), ns(std::move(n)) {
        auto o = manager_options(ns);
        if (lease) o.leader_election = short_lease(*lease, id);
        mgr = std::make_unique<runtime::ClusterManager>(o);
        mgr->add(mgr->controller_for<api::ConfigMap>("writer-" + id).complete([this](const Request&) -> asio::awaitable<Result> {
            json::value secret{{"apiVersion", "v1"},
                               {"kind", "Secret"},
                               {"metadata", {{"name", fmt::format("{}-{}", id, created.load() + refused.load())}, {"namespace", ns}}},
                               {"stringData", {{"by", id}}}};
            try {
                co_await mgr->client().create(api::Secret::resource, ns, std::move(secret));
                ++created;
            } catch (const client::ApiError& e) {
                if (e.is(client::ErrorKind::Fenced)) {
                    std::lock_guard lk(mu);
                    if (refused++ == 0) refusal = e.what();
                }
                throw;
            }
            co_return Result::requeue_after(std::chrono::milliseconds(100));
        }));
        thread = std::thread([this] { exit_code = mgr->run(); });
    }
    ~Writer() {
        mgr->request_stop();
        thread.join();
    }
    std::string first_refusal() {
        std::lock_guard lk(mu);
        return refusal;
    }
};

} // namespace

TEST_CASE("a leader paused past its renew deadline makes no write when it resumes: the gate refuses it, and the manager exits 1") {
    const std::string ns = "le-fence";
    test::ensure_namespace(ns);
    server().store().create(test::configmaps_id, ns, configmap(ns, "k"));
    auto a = std::make_unique<Writer>("a", ns, "fence-lock");
    REQUIRE(eventually([&] { return a->mgr->is_leader() && a->created.load() >= 3; }));
    CHECK(a->mgr->may_write());
    auto b = std::make_unique<Writer>("b", ns, "fence-lock");
    CHECK_FALSE(b->mgr->is_leader());
    CHECK_FALSE(b->mgr->may_write());  // a follower is fenced too

    // The pause: a's only thread blocked (as by SIGSTOP) until b has taken the lease over and
    // written; a's writes sent before the pause have reached the server by then.
    std::promise<int> paused;
    auto before = paused.get_future();
    asio::post(a->mgr->io_context(), [&] {
        bool taken = eventually([&] { return b->created.load() >= 2; }, std::chrono::seconds(20));
        paused.set_value(taken ? secrets_named(ns, "a-") : -1);
    });
    int a_writes = before.get();
    REQUIRE(a_writes >= 3);
    CHECK(lease_holder("fence-lock") == "b");

    // Resumed: a finds out it lost the lease and shuts down, with nothing written meanwhile.
    REQUIRE(eventually([&] { return a->exit_code.load() == 1; }));
    CHECK(secrets_named(ns, "a-") == a_writes);
    CHECK(a->refused.load() >= 1);
    CHECK_MESSAGE(a->first_refusal().find("not the leader: lease not renewed for") != std::string::npos, a->first_refusal());
    int b_writes = secrets_named(ns, "b-");
    CHECK(eventually([&] { return secrets_named(ns, "b-") > b_writes; }));
    CHECK(b->refused.load() == 0);
}

TEST_CASE("a leader's writes pass the gate, and a manager without leader election is never fenced") {
    const std::string ns = "le-writes";
    test::ensure_namespace(ns);
    server().store().create(test::configmaps_id, ns, configmap(ns, "k"));
    {
        Writer leader("solo", ns, "writes-lock");
        CHECK(eventually([&] { return secrets_named(ns, "solo-") >= 3; }));
        CHECK(leader.mgr->may_write());
        CHECK(leader.refused.load() == 0);
    }
    Writer plain("plain", ns, std::nullopt);
    CHECK(eventually([&] { return secrets_named(ns, "plain-") >= 3; }));
    CHECK(plain.mgr->may_write());
    CHECK(plain.refused.load() == 0);
}
