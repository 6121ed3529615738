// Informer throughput and memory, against the in-process sandbox:
//  1. list: an informer syncs N pods (paginated list, typed decode, cache) -> objects/s;
//  2. watch: M configmap changes made while an informer watches -> events/s (the writer's
//     pace), then catch-up: changes queued while the informer's thread is held, worked
//     through once it is let go (the informer's own pace), ROUNDS times for creates (the
//     cache grows) and ROUNDS times for updates (cached objects replaced);
//  each next to a raw boost::json::parse of the same bytes (the ratio is the runtime's cost).
//  Two ratios: by wall time (the in-process server's creates, serialisation and TLS share
//  the machine's cores and the clock), and by the CPU time of the client's own thread (TLS
//  reads, HTTP framing, parse, typed decode, cache), which is the informer's cost per event;
//  each round's ratio uses a raw parse timed right after it, and medians are reported;
//  3. memory: RSS growth from the informer's cache of N pods, per object.
// The informers' event loop runs on the main thread, as Manager::run() runs it.
// Usage: informer_bench [N=10000] [M=5000] [ROUNDS=5]. The sandbox shares the process, so
// RSS deltas are measured around the informer alone, after the server's objects exist.
#include <vck/api/core_v1.hpp>
#include <vck/runtime/informer.hpp>
#include <vck/testing/api_server.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/use_future.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <fstream>
#include <future>
#include <thread>

#include <pthread.h>
#include <time.h>

using namespace vck;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

static long rss_kib() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return 0;
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

/// Documents per second through boost::json::parse, median of 5 passes (one pass over a few
/// thousand documents takes milliseconds: a single one is at the mercy of the machine).
static double parse_rate(const std::vector<std::string>& docs) {
    std::vector<double> rates;
    for (int pass = 0; pass < 5; ++pass) {
        auto t0 = Clock::now();
        std::size_t sink = 0;
        for (const auto& d : docs) sink += json::parse(d).as_object().size();
        double s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (sink == 0) fmt::print("(empty)\n");
        rates.push_back(static_cast<double>(docs.size()) / s);
    }
    return median(std::move(rates));
}

/// With PERF_CTL_FIFO set (perf record --control fifo:$PERF_CTL_FIFO -D -1 ...), a profile
/// covers the catch-up rounds only.
static void perf_control(const char* command) {
    if (const char* fifo = std::getenv("PERF_CTL_FIFO")) {
        std::ofstream f(fifo);
        f << command << std::endl;
    }
}

/// CPU seconds a thread has used so far.
static double thread_cpu_s(pthread_t t) {
    clockid_t cid;
    if (pthread_getcpuclockid(t, &cid) != 0) return 0;
    timespec ts{};
    clock_gettime(cid, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

template <class F>
static void wait_until(F f) {
    while (!f()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

/// Writes `count` configmaps named prefix-i in namespace "bench": creates them, or with
/// `update`, replaces the data of the ones an earlier call created under that prefix (each a
/// MODIFIED event of the same size). Returns each as the watch event the informer will
/// receive (for the raw-parse reference).
static std::vector<std::string> churn(testing::ApiServer& server, std::string_view prefix, int count, bool update = false) {
    const testing::ResourceId cms{"", "v1", "configmaps"};
    std::vector<std::string> events;
    for (int i = 0; i < count; ++i) {
        auto name = fmt::format("{}-{}", prefix, i);
        json::value body{{"metadata", {{"name", name}, {"namespace", "bench"}}},
                         {"data", {{"k", std::string(200, update ? 'y' : 'x')}}}};
        auto obj = update ? server.store().update(cms, "bench", name, std::move(body))
                          : server.store().create(cms, "bench", std::move(body));
        events.push_back(json::serialize(json::value{{"type", update ? "MODIFIED" : "ADDED"}, {"object", obj}}));
    }
    return events;
}

/// The two lines of a watch phase: events/s by wall time and per client-thread CPU second,
/// each as a ratio to a raw parse of the same events.
static void report(std::string_view phase, const std::vector<std::string>& events, double seconds, double cpu) {
    double n = static_cast<double>(events.size());
    double parse = parse_rate(events);
    fmt::print("{}: {} events in {:.3f} s = {:.0f} events/s; raw parse {:.0f} events/s; ratio {:.2f}\n", phase, events.size(),
               seconds, n / seconds, parse, n / seconds / parse);
    fmt::print("{}: client thread CPU {:.3f} s = {:.0f} events per CPU second; ratio to raw parse {:.2f}\n", phase, cpu, n / cpu,
               n / cpu / parse);
}

/// The phases, run from a driver thread while the main thread runs the informers' event loop
/// (as Manager::run() does: an informer's allocations then come from glibc's main arena, where
/// a thread of its own would grow a per-thread heap one mprotect'ed page at a time).
static void drive(testing::ApiServer& server, boost::asio::io_context& ioc, client::Client& client, pthread_t loop, int n,
                  int m, int rounds, const std::vector<std::string>& pod_docs) {
    // 1 + 3: list sync of n pods, and the cache's memory.
    long rss0 = rss_kib();
    runtime::InformerOptions o;
    o.namespace_ = "bench";
    auto pod_inf = std::make_shared<runtime::Informer<api::Pod>>(client, o);
    double cpu0 = thread_cpu_s(loop);
    auto t0 = Clock::now();
    auto pod_done = boost::asio::co_spawn(ioc, [pod_inf]() -> boost::asio::awaitable<void> { co_await pod_inf->run(); },
                                          boost::asio::use_future);
    wait_until([&] { return pod_inf->has_synced(); });
    double list_s = std::chrono::duration<double>(Clock::now() - t0).count();
    double list_cpu = thread_cpu_s(loop) - cpu0;
    long rss1 = rss_kib();
    double list_rate = n / list_s;
    double list_parse = parse_rate(pod_docs);
    fmt::print("list: {} pods synced in {:.3f} s = {:.0f} objects/s; raw parse {:.0f} objects/s; ratio {:.2f}\n", n, list_s,
               list_rate, list_parse, list_rate / list_parse);
    fmt::print("list: client thread CPU {:.3f} s = {:.0f} objects per CPU second; ratio to raw parse {:.2f}\n", list_cpu,
               n / list_cpu, n / list_cpu / list_parse);
    fmt::print("memory: RSS +{} KiB for {} cached pods = {:.0f} bytes/object (includes allocator slack)\n", rss1 - rss0, n,
               (rss1 - rss0) * 1024.0 / n);

    // 2: watch churn.
    runtime::InformerOptions co;
    co.namespace_ = "bench";
    auto cm_inf = std::make_shared<runtime::Informer<api::ConfigMap>>(client, co);  // typed, as controllers use them
    auto cm_done = boost::asio::co_spawn(ioc, [cm_inf]() -> boost::asio::awaitable<void> { co_await cm_inf->run(); },
                                         boost::asio::use_future);
    wait_until([&] { return cm_inf->has_synced(); });
    double cpu1 = thread_cpu_s(loop);
    auto t1 = Clock::now();
    auto event_docs = churn(server, "cm", m);
    wait_until([&] { return cm_inf->deltas() >= static_cast<std::uint64_t>(m); });
    report("watch", event_docs, std::chrono::duration<double>(Clock::now() - t1).count(), thread_cpu_s(loop) - cpu1);

    // 2b: catch-up, `rounds` times each for creates and for updates. The informer's thread is
    // held while `catch_up` more changes are written (the server queues them for the watch),
    // then let go: the rate at which it works through the backlog is its own, where the live
    // rate above is the writer's. Creates grow the cache (fresh memory: page faults); updates
    // replace cached objects, as most of a cluster's events do.
    int catch_up = std::min(m, 8000);  // under the sandbox's slow-watcher limit (10,000)
    std::uint64_t expected = static_cast<std::uint64_t>(m);
    struct Figures {
        std::vector<double> wall_ratios, cpu_ratios, cpu_us;
    };
    Figures creates, updates;
    for (int r = 0; r < 2 * rounds; ++r) {
        bool update = r % 2 == 1;  // updates the objects the round before created
        std::promise<void> hold, parked;
        auto held = hold.get_future();
        boost::asio::post(ioc, [&] {
            parked.set_value();
            held.wait();
        });
        parked.get_future().wait();
        auto backlog_docs = churn(server, fmt::format("cu{}", r / 2), catch_up, update);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the server writes what the socket takes
        double cpu2 = thread_cpu_s(loop);
        auto t2 = Clock::now();
        perf_control("enable");
        hold.set_value();
        expected += static_cast<std::uint64_t>(catch_up);
        wait_until([&] { return cm_inf->deltas() >= expected; });
        perf_control("disable");
        double wall = std::chrono::duration<double>(Clock::now() - t2).count(), cpu = thread_cpu_s(loop) - cpu2;
        double parse = parse_rate(backlog_docs);
        auto& f = update ? updates : creates;
        f.wall_ratios.push_back(catch_up / wall / parse);
        f.cpu_ratios.push_back(catch_up / cpu / parse);
        f.cpu_us.push_back(cpu / catch_up * 1e6);
        fmt::print("catch-up {} {}: {} events in {:.3f} s, client thread CPU {:.3f} s ({:.2f} us/event); raw parse {:.2f} "
                   "us/event; ratios: wall {:.2f}, CPU {:.2f}\n",
                   update ? "updates" : "creates", r / 2 + 1, catch_up, wall, cpu, cpu / catch_up * 1e6, 1e6 / parse,
                   f.wall_ratios.back(), f.cpu_ratios.back());
    }
    for (auto [name, f] : {std::pair{"creates", &creates}, std::pair{"updates", &updates}})
        fmt::print("catch-up {}, median of {}: client thread {:.2f} us/event; ratio to raw parse: wall {:.2f}, CPU {:.2f}\n",
                   name, rounds, median(f->cpu_us), median(f->wall_ratios), median(f->cpu_ratios));

    boost::asio::post(ioc, [&] {
        pod_inf->stop();
        cm_inf->stop();
    });
    pod_done.get();
    cm_done.get();
}

int main(int argc, char** argv) {
    int n = argc > 1 ? std::atoi(argv[1]) : 10000;
    int m = argc > 2 ? std::atoi(argv[2]) : 5000;
    int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
    testing::ApiServer server;
    server.start();
    const testing::ResourceId pods{"", "v1", "pods"}, nss{"", "v1", "namespaces"};
    server.store().create(nss, "", json::value{{"metadata", {{"name", "bench"}}}});
    std::vector<std::string> pod_docs;
    for (int i = 0; i < n; ++i) {
        json::value p{{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", {{"name", fmt::format("pod-{}", i)}, {"namespace", "bench"}, {"labels", {{"app", "bench"}}}}},
                      {"spec", {{"containers", json::array{{{"name", "c"}, {"image", "busybox"}}}}}}};
        pod_docs.push_back(json::serialize(server.store().create(pods, "bench", p)));
    }

    boost::asio::io_context ioc{1};  // one thread runs it, as Manager's
    auto guard = boost::asio::make_work_guard(ioc);
    auto cfg = server.config();
    cfg.qps = 1e6;
    cfg.burst = 1000000;
    auto client = std::make_unique<client::Client>(ioc.get_executor(), cfg);
    std::exception_ptr failed;
    std::thread driver([&, loop = pthread_self()] {
        try {
            drive(server, ioc, *client, loop, n, m, rounds, pod_docs);
        } catch (...) {
            failed = std::current_exception();
        }
        boost::asio::post(ioc, [&] {
            client.reset();
            guard.reset();
        });
    });
    ioc.run();
    driver.join();
    if (failed) std::rethrow_exception(failed);
    return 0;
}
