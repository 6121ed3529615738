// Specification of the Manager without a socket: over the in-memory API server and the
// in-memory lease lock, what it runs and when, its readiness, its shutdown (awaited, with a
// deadline) and leader election between two managers.
#include <vck/api/core_v1.hpp>
#include <vck/runtime/leader_election.hpp>
#include <vck/runtime/manager.hpp>
#include <vck/runtime/memory_lease_lock.hpp>
#include <vck/sandbox/memory_list_watch.hpp>

#include "memory_loop.hpp"
#include "stderr_lines.hpp"
#include "no_beast.hpp"

#include <doctest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <regex>
#include <thread>

using namespace vck;
using runtime::Request;
using runtime::Result;
using test::configmap;
namespace asio = boost::asio;

namespace {

using test::configmaps;

template <class F>
bool eventually(F cond, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!cond() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return cond();
}

runtime::ManagerOptions options() {
    runtime::ManagerOptions o;
    o.handle_signals = false;
    o.informers.backoff_base = std::chrono::milliseconds(5);
    o.graceful_shutdown = std::chrono::seconds(10);
    return o;
}

/// A Manager over an in-memory API server of its own (and `lock`, with leader election),
/// run on a thread of its own by start(); stopped and joined at the end.
struct ManagerRig {
    std::shared_ptr<sandbox::MemoryListWatch> server;
    std::unique_ptr<runtime::Manager> manager;
    std::thread thread;
    std::atomic<int> exit_code{-1};

    explicit ManagerRig(runtime::ManagerOptions o = options(), std::shared_ptr<runtime::LeaseLock> lock = nullptr) {
        manager = std::make_unique<runtime::Manager>(std::move(o), [&](runtime::Manager& m) {
            server = std::make_shared<sandbox::MemoryListWatch>(m.io_context().get_executor());
            runtime::Cluster c;
            c.list_watch = server;
            c.lease_lock = lock;
            return c;
        });
    }
    void start() {
        thread = std::thread([this] { exit_code = manager->run(); });
    }
    /// Stops the manager and returns run()'s result.
    int stop() {
        if (thread.joinable()) {
            manager->request_stop();
            thread.join();
        }
        return exit_code.load();
    }
    ~ManagerRig() {
        stop();
        server.reset();  // its watches hold timers of the manager's io_context: gone before it
        manager.reset();
    }
};

/// A runnable that counts its starts and runs until stop() (or, `hangs`, forever).
class Probe final : public runtime::Runnable {
public:
    Probe(std::string name, bool leader_only, bool hangs = false, bool fails = false)
        : name_(std::move(name)), leader_only_(leader_only), hangs_(hangs), fails_(fails) {}
    asio::awaitable<void> start() override {
        ++starts;
        running = true;
        if (fails_) {
            running = false;
            throw std::runtime_error("the probe broke");
        }
        timer_.emplace(co_await asio::this_coro::executor, std::chrono::hours(1));
        while (!stopped_ || hangs_) {
            boost::system::error_code ec;
            co_await timer_->async_wait(asio::redirect_error(asio::use_awaitable, ec));
            timer_->expires_after(std::chrono::hours(1));
        }
        running = false;
    }
    void stop() override {
        stopped_ = true;
        if (timer_) timer_->cancel();
    }
    std::string name() const override { return name_; }
    bool needs_leader_election() const override { return leader_only_; }

    std::atomic<int> starts{0};
    std::atomic<bool> running{false};

private:
    std::string name_;
    bool leader_only_, hangs_, fails_;
    std::atomic<bool> stopped_{false};
    std::optional<asio::steady_timer> timer_;
};

runtime::LeaderElectionOptions short_lease(std::string identity) {
    runtime::LeaderElectionOptions le;
    le.name = "unit-lock";
    le.identity = std::move(identity);
    le.lease_duration = std::chrono::milliseconds(1500);  // long enough for a loaded machine's pauses
    le.renew_deadline = std::chrono::milliseconds(1000);
    le.retry_period = std::chrono::milliseconds(100);
    return le;
}

} // namespace

TEST_CASE("a manager runs its controllers over the in-memory server and run() returns 0 after request_stop()") {
    ManagerRig rig;
    rig.server->put(configmaps, configmap("a", "one"));
    std::atomic<int> calls{0};
    auto c = rig.manager->controller_for<api::ConfigMap>("cm").complete([&](const Request&) -> asio::awaitable<Result> {
        ++calls;
        co_return Result::done();
    });
    rig.manager->add(c);  // as well as registered by complete(): changes nothing
    rig.start();
    CHECK(eventually([&] { return calls.load() == 1; }));
    rig.server->put(configmaps, configmap("a", "two"));
    CHECK(eventually([&] { return calls.load() == 2; }));
    CHECK(rig.stop() == 0);
    CHECK(calls.load() == 2);
}

TEST_CASE("a controller built by controller_for runs without add()") {
    ManagerRig rig;
    rig.server->put(configmaps, configmap("a", "one"));
    std::atomic<int> calls{0};
    rig.manager->controller_for<api::ConfigMap>("cm").complete([&](const Request&) -> asio::awaitable<Result> {
        ++calls;
        co_return Result::done();
    });
    rig.start();
    CHECK(eventually([&] { return calls.load() == 1; }));
    CHECK(rig.stop() == 0);
}

TEST_CASE("request_stop() before run() makes run() start nothing that lingers and return 0") {
    ManagerRig rig;
    auto probe = std::make_shared<Probe>("probe", false);
    rig.manager->add(probe);
    rig.manager->request_stop();
    rig.start();
    rig.thread.join();
    CHECK(rig.exit_code.load() == 0);
    CHECK_FALSE(probe->running.load());
}

TEST_CASE("a manager is ready only once run() started and every informer has synced") {
    auto o = options();
    o.informers.backoff_base = std::chrono::seconds(2);  // the failed list is retried after 1 to 2 s
    ManagerRig rig(o);
    rig.server->put(configmaps, configmap("a", "one"));
    auto cms = rig.manager->informers().informer<api::ConfigMap>();
    auto secrets = rig.manager->informers().informer<api::Secret>();
    CHECK_FALSE(rig.manager->synced());  // nothing has run
    rig.server->fail_next_list(client::ApiError(client::ErrorKind::ServiceUnavailable, "GET", "/api/v1/configmaps", "down"));
    rig.start();
    CHECK(eventually([&] { return cms->has_synced() || secrets->has_synced(); }));
    CHECK_FALSE((cms->has_synced() && secrets->has_synced()));  // the other is in its backoff after its failed list
    CHECK_FALSE(rig.manager->synced());
    CHECK(eventually([&] { return rig.manager->synced(); }));
    CHECK((cms->has_synced() && secrets->has_synced()));
    CHECK(rig.stop() == 0);
}

TEST_CASE("a runnable that hangs past graceful_shutdown makes run() return 1 when the deadline passes") {
    auto o = options();
    o.graceful_shutdown = std::chrono::milliseconds(300);
    ManagerRig rig(o);
    auto hung = std::make_shared<Probe>("hung", false, true);
    rig.manager->add(hung);
    rig.start();
    REQUIRE(eventually([&] { return hung->running.load(); }));
    auto t0 = std::chrono::steady_clock::now();
    CHECK(rig.stop() == 1);
    auto took = std::chrono::steady_clock::now() - t0;
    CHECK(took >= std::chrono::milliseconds(300));
    CHECK(took < std::chrono::seconds(5));
}

TEST_CASE("a runnable's failure is logged and the rest keep running") {
    ManagerRig rig;
    auto broken = std::make_shared<Probe>("broken", false, false, true);
    auto fine = std::make_shared<Probe>("fine", false);
    rig.manager->add(broken);
    rig.manager->add(fine);
    std::atomic<int> calls{0};
    rig.manager->controller_for<api::ConfigMap>("cm").complete([&](const Request&) -> asio::awaitable<Result> {
        ++calls;
        co_return Result::done();
    });
    auto lines = test::stderr_lines(log::Format::Text, 0, [&] {
        rig.start();
        REQUIRE(eventually([&] { return broken->starts.load() == 1 && fine->running.load(); }));
        rig.server->put(configmaps, configmap("a", "after-the-failure"));
        CHECK(eventually([&] { return calls.load() == 1; }));
        CHECK(fine->running.load());
        CHECK(rig.stop() == 0);
    });
    bool logged = false;
    for (const auto& l : lines)
        if (l.find("runnable failed") != std::string::npos && l.find("broken") != std::string::npos &&
            l.find("the probe broke") != std::string::npos)
            logged = true;
    CHECK(logged);
    CHECK_FALSE(fine->running.load());  // stopped with the manager
}

TEST_CASE("of two managers on one lease only the leader runs leader-only runnables; when its lease is taken over it "
          "stops them and run() returns 1") {
    auto lock = std::make_shared<runtime::MemoryLeaseLock>();
    auto make = [&](std::string id) {
        auto o = options();
        o.leader_election = short_lease(std::move(id));
        return std::make_unique<ManagerRig>(o, lock);
    };
    auto a = make("a"), b = make("b");
    auto pa = std::make_shared<Probe>("leader-only", true), pb = std::make_shared<Probe>("leader-only", true);
    auto everywhere = std::make_shared<Probe>("everywhere", false);
    a->manager->add(pa);
    a->manager->add(everywhere);
    b->manager->add(pb);
    a->start();
    REQUIRE(eventually([&] { return a->manager->is_leader() && pa->running.load(); }));
    CHECK(everywhere->running.load());
    b->start();
    REQUIRE(eventually([&] { return b->manager->elector() != nullptr; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // b campaigns a few retry periods
    CHECK_FALSE(b->manager->is_leader());
    CHECK(pb->starts.load() == 0);
    CHECK(a->manager->may_write());
    CHECK_FALSE(b->manager->may_write());
    CHECK_THROWS_WITH_AS(b->manager->fence("POST", "/api/v1/secrets"), doctest::Contains("not the leader"), client::ApiError);
    CHECK(lock->lease("default", "unit-lock")->spec.holderIdentity == "a");
    CHECK(a->manager->metrics()->value("leader_election_master_status", {{"name", "unit-lock"}}) == 1);
    CHECK(b->manager->metrics()->value("leader_election_master_status", {{"name", "unit-lock"}}) == 0);

    // Someone else writes the lease as its holder: a cannot renew, gives up after the renew
    // deadline, stops its leader-only runnable and exits 1; b takes over once the intruder
    // has not renewed for a lease duration.
    auto taken = *lock->lease("default", "unit-lock");
    taken.spec.holderIdentity = "intruder";
    lock->put(taken);
    CHECK(eventually([&] { return a->exit_code.load() == 1; }));
    CHECK_FALSE(pa->running.load());
    CHECK_FALSE(everywhere->running.load());
    CHECK_FALSE(a->manager->may_write());
    CHECK(eventually([&] { return b->manager->is_leader() && pb->running.load(); }));
    CHECK(lock->lease("default", "unit-lock")->spec.holderIdentity == "b");
    CHECK(pa->starts.load() == 1);
    CHECK(b->stop() == 0);
    CHECK(lock->lease("default", "unit-lock")->spec.holderIdentity == "");  // released on shutdown
}

TEST_CASE("an empty identity gets hostname_uuid, different for every manager, and is the lease's holder") {
    auto lock = std::make_shared<runtime::MemoryLeaseLock>();
    auto o = options();
    o.leader_election = short_lease("");
    ManagerRig one(o, lock), two(o, lock);
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::regex form(std::string(host) + "_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
    CHECK_MESSAGE(std::regex_match(one.manager->identity(), form), one.manager->identity());
    CHECK(one.manager->identity() != two.manager->identity());
    one.start();
    CHECK(eventually([&] { return one.manager->is_leader(); }));
    CHECK(lock->lease("default", "unit-lock")->spec.holderIdentity == one.manager->identity());
    CHECK(one.stop() == 0);
}
