// Throughput of the sandbox's API server over real HTTPS, as controllers load it:
//  1. creates: N configmaps created by C concurrent requests through vck::client -> creates/s
//     (each a full round trip: TLS, routing, validation, store write, JSON response);
//  2. watch fan-out: W watchers (own connections) watch a namespace while M configmaps are
//     created there -> events/s delivered in total (W * M / time until the last arrives).
// Usage: sandbox_bench [N=20000] [M=5000] [W=10] [C=16]. Run by hand in a release build
// (goals: >= 3,000 creates/s, >= 20,000 events/s); it asserts nothing.
#include <vck/api/core_v1.hpp>
#include <vck/client/client.hpp>
#include <vck/sandbox/server/api_server.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/use_future.hpp>

#include <fmt/core.h>

#include <atomic>
#include <cstdlib>
#include <thread>

using namespace vck;
namespace asio = boost::asio;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

static json::value configmap(const std::string& name) {
    return json::value{{"apiVersion", "v1"},
                       {"kind", "ConfigMap"},
                       {"metadata", {{"name", name}, {"namespace", "bench"}, {"labels", {{"app", "bench"}}}}},
                       {"data", {{"k", std::string(200, 'x')}}}};
}

int main(int argc, char** argv) {
    int n = argc > 1 ? std::atoi(argv[1]) : 20000;
    int m = argc > 2 ? std::atoi(argv[2]) : 5000;
    int w = argc > 3 ? std::atoi(argv[3]) : 10;
    int c = argc > 4 ? std::atoi(argv[4]) : 16;
    const auto& cms = api::ConfigMap::resource;
    const sandbox::ResourceId cm_id{"", "v1", "configmaps"};

    sandbox::ApiServer server;
    server.start();
    server.store().create({"", "v1", "namespaces"}, "", json::value{{"metadata", {{"name", "bench"}}}});

    asio::io_context ioc;
    auto guard = asio::make_work_guard(ioc);
    std::thread loop([&] { ioc.run(); });
    auto cfg = server.config();
    cfg.qps = 1e9;
    cfg.burst = 1000000000;
    cfg.max_connections = c;
    auto client = std::make_unique<client::Client>(ioc.get_executor(), cfg);

    // 1: creates over HTTPS, C in flight.
    std::atomic<int> next{0}, failed{0};
    auto worker = [&]() -> asio::awaitable<void> {
        for (int i; (i = next++) < n;) {
            try {
                co_await client->create(cms, "bench", configmap(fmt::format("create-{}", i)));
            } catch (const std::exception&) {
                ++failed;
            }
        }
    };
    auto t0 = Clock::now();
    std::vector<std::future<void>> workers;
    for (int i = 0; i < c; ++i) workers.push_back(asio::co_spawn(ioc, worker, asio::use_future));
    for (auto& f : workers) f.get();
    double create_s = seconds_since(t0);
    fmt::print("creates: {} configmaps by {} concurrent requests in {:.3f} s = {:.0f} creates/s ({} failed)\n", n, c,
               create_s, n / create_s, failed.load());

    // 2: W watchers, each on its own client (connection), from the current resourceVersion.
    auto rv = std::string(server.store().list(cm_id, "bench", [] {
        sandbox::StoreListOptions o;
        o.limit = 1;
        return o;
    }()).at("metadata").at("resourceVersion").as_string());
    std::vector<std::unique_ptr<client::Client>> watch_clients;
    std::atomic<long> delivered{0};
    std::atomic<int> ready{0};
    std::vector<std::atomic<int>> per_watcher(w);
    std::vector<std::future<void>> watchers;
    for (int i = 0; i < w; ++i) {
        watch_clients.push_back(std::make_unique<client::Client>(ioc.get_executor(), cfg));
        auto* wc = watch_clients.back().get();
        watchers.push_back(asio::co_spawn(
            ioc,
            [&, wc, i]() -> asio::awaitable<void> {
                auto opts = client::WatchOptions().since(rv).labels("app=watched").bookmarks(false);
                auto stream = co_await wc->watch(cms, "bench", opts);
                ++ready;
                for (int got = 0; got < m;) {
                    auto e = co_await stream.next();
                    if (!e) throw std::runtime_error("the watch ended early");
                    if (e->type == client::WatchEventType::Added) {
                        ++got;
                        ++delivered;
                        ++per_watcher[i];
                    }
                }
                stream.cancel();
            },
            asio::use_future));
    }
    while (ready < w) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto t1 = Clock::now();
    for (int i = 0; i < m; ++i) {
        auto cm = configmap(fmt::format("watched-{}", i));
        cm.as_object()["metadata"].as_object()["labels"].as_object()["app"] = "watched";
        server.store().create(cm_id, "bench", std::move(cm));
    }
    double write_s = seconds_since(t1);
    // A watch phase that stalls says where: events each watcher has had.
    std::atomic<bool> finished{false};
    std::thread watchdog([&] {
        for (int s = 0; s < 100 && !finished; ++s) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (finished) return;
        std::string counts;
        for (auto& n : per_watcher) counts += " " + std::to_string(n.load());
        fmt::print("watch stalled after 10 s; events per watcher:{}\n", counts);
        std::fflush(stdout);
    });
    for (auto& f : watchers) f.get();
    finished = true;
    watchdog.join();
    double watch_s = seconds_since(t1);
    fmt::print("watch: {} creates (in-process, {:.0f}/s) to {} watchers: {} events in {:.3f} s = {:.0f} events/s\n", m,
               m / write_s, w, delivered.load(), watch_s, delivered.load() / watch_s);

    asio::post(ioc, [&] {
        client.reset();
        watch_clients.clear();
    });
    guard.reset();
    loop.join();
    server.stop();
    return 0;
}
