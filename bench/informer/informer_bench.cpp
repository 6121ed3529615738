// Informer throughput and memory, against the in-process sandbox:
//  1. list: an informer syncs N pods (paginated list, typed decode, cache) -> objects/s;
//  2. watch: M configmap changes made while an informer watches -> events/s (the writer's
//     pace), then catch-up: changes queued while the informer's thread is held, worked
//     through once it is let go (the informer's own pace), ROUNDS times for creates (the
//     cache grows) and ROUNDS times for updates (cached objects replaced);
//  2c. pod status churn: the same catch-up over pods as a real cluster holds them (about
//     4.5 KB of JSON each, managedFields included, which the informer drops unread as
//     vck-controller's does), created, then ROUNDS rounds of status updates as kubelets
//     make them: the events most informers of a cluster see;
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
#include <vck/runtime/client_list_watch.hpp>
#include <vck/runtime/informer.hpp>
#include <vck/sandbox/server/api_server.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/use_future.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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
/// covers the catch-up rounds only; with PERF_ROUNDS set too, only the rounds whose label
/// begin with it (e.g. "updates", "pod status").
static void perf_control(const char* command, std::string_view label) {
    const char* only = std::getenv("PERF_ROUNDS");
    if (only && !label.starts_with(only)) return;
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
static std::vector<std::string> churn(sandbox::ApiServer& server, std::string_view prefix, int count, bool update = false) {
    const sandbox::ResourceId cms{"", "v1", "configmaps"};
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

static std::string pod_name(int i) { return fmt::format("web-7d4b9c6f5d-{:05}", i); }

/// A pod as a cluster's API server serves one of a Deployment's replicas once it runs: owner
/// reference, projected service-account volume, default tolerations, a kubelet's status and
/// the managedFields of both writers (what kube-apiserver returns; the sandbox keeps them).
static json::value realistic_pod(int i) {
    static const json::value base = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-7d4b9c6f5d-",
"labels":{"app":"web","pod-template-hash":"7d4b9c6f5d","tier":"frontend"},"annotations":{"kubectl.kubernetes.io/restartedAt":
"2026-11-20T09:13:58Z"},"managedFields":[{"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:generateName":{},
"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:tier":{}},"f:ownerReferences":{".":{},
"k:{\"uid\":\"1b0a4e2c-5d6f-4a8b-9c0d-e1f2a3b4c5d6\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},
"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},
"f:protocol":{}}},"f:resources":{".":{},"f:limits":{".":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},
"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},
"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}},"manager":"kube-controller-manager",
"operation":"Update","time":"2026-11-20T09:14:02Z"},{"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{
"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},
"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},
"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},
"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.244.1.17\"}":{".":{},"f:ip":{}}},"f:startTime":{}}},
"manager":"kubelet","operation":"Update","subresource":"status","time":"2026-11-20T09:14:09Z"}],"namespace":"shop",
"ownerReferences":[{"apiVersion":"apps/v1","blockOwnerDeletion":true,"controller":true,"kind":"ReplicaSet","name":"web-7d4b9c6f5d",
"uid":"1b0a4e2c-5d6f-4a8b-9c0d-e1f2a3b4c5d6"}]},"spec":{"containers":[{"image":"registry.example.com/shop/web:1.14.2",
"imagePullPolicy":"IfNotPresent","name":"web","ports":[{"containerPort":8080,"protocol":"TCP"}],"resources":{"limits":{"memory":
"256Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":
"File","volumeMounts":[{"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","name":"kube-api-access-7x2lq","readOnly":true}]}],
"dnsPolicy":"ClusterFirst","enableServiceLinks":true,"nodeName":"worker-3","preemptionPolicy":"PreemptLowerPriority","priority":0,
"restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"serviceAccount":"default","serviceAccountName":
"default","terminationGracePeriodSeconds":30,"tolerations":[{"effect":"NoExecute","key":"node.kubernetes.io/not-ready","operator":
"Exists","tolerationSeconds":300},{"effect":"NoExecute","key":"node.kubernetes.io/unreachable","operator":"Exists",
"tolerationSeconds":300}],"volumes":[{"name":"kube-api-access-7x2lq","projected":{"defaultMode":420,"sources":[{"serviceAccountToken":
{"expirationSeconds":3607,"path":"token"}},{"configMap":{"items":[{"key":"ca.crt","path":"ca.crt"}],"name":"kube-root-ca.crt"}},
{"downwardAPI":{"items":[{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"},"path":"namespace"}]}}]}}]},"status":{
"conditions":[{"lastProbeTime":null,"lastTransitionTime":"2026-11-20T09:14:02Z","status":"True","type":"Initialized"},
{"lastProbeTime":null,"lastTransitionTime":"2026-11-20T09:14:09Z","status":"True","type":"Ready"},{"lastProbeTime":null,
"lastTransitionTime":"2026-11-20T09:14:09Z","status":"True","type":"ContainersReady"},{"lastProbeTime":null,"lastTransitionTime":
"2026-11-20T09:14:02Z","status":"True","type":"PodScheduled"}],"containerStatuses":[{"containerID":
"containerd://4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e","image":"registry.example.com/shop/web:1.14.2",
"imageID":"registry.example.com/shop/web@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9","lastState":{},
"name":"web","ready":true,"restartCount":0,"started":true,"state":{"running":{"startedAt":"2026-11-20T09:14:08Z"}}}],"hostIP":
"172.18.0.4","phase":"Running","podIP":"10.244.1.17","podIPs":[{"ip":"10.244.1.17"}],"qosClass":"Burstable","startTime":
"2026-11-20T09:14:02Z"}})");
    json::value p = base;
    p.at("metadata").as_object()["name"] = pod_name(i);
    return p;
}

/// Writes `count` realistic pods web-7d4b9c6f5d-i in namespace "shop" (creates), or with
/// `restarts` > 0, a kubelet's status update of each (container restarted, Ready flipped back,
/// same size every time). Returns the watch events as for churn(). The pods' owner is a
/// stand-in (the sandbox serves no ReplicaSets) whose uid keeps its garbage collector from
/// deleting them as orphans.
static std::vector<std::string> pod_churn(sandbox::ApiServer& server, int count, int restarts) {
    const sandbox::ResourceId pods{"", "v1", "pods"}, cms{"", "v1", "configmaps"};
    std::vector<std::string> events;
    std::string owner_uid;
    if (restarts == 0)
        owner_uid = server.store()
                        .create(cms, "shop", json::value{{"metadata", {{"name", "web-7d4b9c6f5d"}}}})
                        .at("metadata")
                        .at("uid")
                        .as_string();
    for (int i = 0; i < count; ++i) {
        json::value obj;
        if (restarts == 0) {
            auto pod = realistic_pod(i);
            pod.at("metadata").at("ownerReferences").as_array()[0].as_object()["uid"] = owner_uid;
            obj = server.store().create(pods, "shop", std::move(pod));
        } else {
            auto name = pod_name(i);
            json::value cur = server.store().get(pods, "shop", name);
            cur.as_object()["status"] = realistic_pod(i).at("status");  // a create leaves a pod's status empty
            auto& st = cur.at("status").as_object();
            st.at("containerStatuses").as_array()[0].as_object()["restartCount"] = restarts;
            st.at("conditions").as_array()[1].as_object()["lastTransitionTime"] =
                fmt::format("2026-11-20T10:{:02}:{:02}Z", restarts % 60, i % 60);
            obj = server.store().update(pods, "shop", name, std::move(cur), "status");
        }
        events.push_back(json::serialize(json::value{{"type", restarts == 0 ? "ADDED" : "MODIFIED"}, {"object", obj}}));
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

struct Figures {
    std::vector<double> wall_ratios, cpu_ratios, cpu_us;
};

/// One catch-up round: the informers' thread is held while `write` makes changes (the server
/// queues them for the watch), then let go: the rate at which an informer works through the
/// backlog is its own, where a live rate is the writer's. `changes` counts what the informer
/// has applied. Adds the round's figures to `f`, each ratio against a raw parse timed right
/// after the round.
template <class Write, class Changes>
static void catch_up_round(boost::asio::io_context& ioc, pthread_t loop, std::string_view label, Write write, Changes changes,
                           Figures& f) {
    std::promise<void> hold, parked;
    auto held = hold.get_future();
    boost::asio::post(ioc, [&] {
        parked.set_value();
        held.wait();
    });
    parked.get_future().wait();
    auto expected = changes();
    std::vector<std::string> events;
    try {
        events = write();
    } catch (...) {
        hold.set_value();  // or the loop's thread waits for ever
        throw;
    }
    expected += events.size();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the server writes what the socket takes
    double cpu0 = thread_cpu_s(loop);
    auto t0 = Clock::now();
    perf_control("enable", label);
    hold.set_value();
    wait_until([&] { return changes() >= expected; });
    perf_control("disable", label);
    double n = static_cast<double>(events.size());
    double wall = std::chrono::duration<double>(Clock::now() - t0).count(), cpu = thread_cpu_s(loop) - cpu0;
    double parse = parse_rate(events);
    f.wall_ratios.push_back(n / wall / parse);
    f.cpu_ratios.push_back(n / cpu / parse);
    f.cpu_us.push_back(cpu / n * 1e6);
    fmt::print("catch-up {}: {} events of {} bytes in {:.3f} s, client thread CPU {:.3f} s ({:.2f} us/event); raw parse {:.2f} "
               "us/event; ratios: wall {:.2f}, CPU {:.2f}\n",
               label, events.size(), events.front().size(), wall, cpu, cpu / n * 1e6, 1e6 / parse, f.wall_ratios.back(),
               f.cpu_ratios.back());
}

/// The phases, run from a driver thread while the main thread runs the informers' event loop
/// (as Manager::run() does: an informer's allocations then come from glibc's main arena, where
/// a thread of its own would grow a per-thread heap one mprotect'ed page at a time).
static void drive(sandbox::ApiServer& server, boost::asio::io_context& ioc, client::Client& client, pthread_t loop, int n,
                  int m, int rounds, const std::vector<std::string>& pod_docs) {
    // 1 + 3: list sync of n pods, and the cache's memory.
    long rss0 = rss_kib();
    runtime::InformerOptions o;
    o.namespace_ = "bench";
    auto pod_inf = std::make_shared<runtime::Informer<api::Pod>>(runtime::list_watch(client), o);
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
    auto cm_inf = std::make_shared<runtime::Informer<api::ConfigMap>>(runtime::list_watch(client), co);  // typed, as controllers use them
    auto cm_done = boost::asio::co_spawn(ioc, [cm_inf]() -> boost::asio::awaitable<void> { co_await cm_inf->run(); },
                                         boost::asio::use_future);
    wait_until([&] { return cm_inf->has_synced(); });
    double cpu1 = thread_cpu_s(loop);
    auto t1 = Clock::now();
    auto event_docs = churn(server, "cm", m);
    wait_until([&] { return cm_inf->changes() >= static_cast<std::uint64_t>(m); });
    report("watch", event_docs, std::chrono::duration<double>(Clock::now() - t1).count(), thread_cpu_s(loop) - cpu1);

    // 2b: catch-up, `rounds` times each for creates and for updates. Creates grow the cache
    // (fresh memory: page faults); updates replace cached objects, as most of a cluster's
    // events do.
    int catch_up = std::min(m, 8000);  // under the sandbox's slow-watcher limit (10,000)
    auto cm_changes = [&] { return cm_inf->changes(); };
    Figures creates, updates;
    for (int r = 0; r < rounds; ++r) {
        auto prefix = fmt::format("cu{}", r);
        catch_up_round(ioc, loop, fmt::format("creates {}", r + 1), [&] { return churn(server, prefix, catch_up); }, cm_changes,
                       creates);
        catch_up_round(ioc, loop, fmt::format("updates {}", r + 1), [&] { return churn(server, prefix, catch_up, true); },
                       cm_changes, updates);
    }

    // 2c: pod status churn, through a typed pod informer that drops managedFields as
    // vck-controller's informers do.
    runtime::InformerOptions po;
    po.namespace_ = "shop";
    po.drop_managed_fields = true;
    auto shop_inf = std::make_shared<runtime::Informer<api::Pod>>(runtime::list_watch(client), po);
    auto shop_done = boost::asio::co_spawn(ioc, [shop_inf]() -> boost::asio::awaitable<void> { co_await shop_inf->run(); },
                                           boost::asio::use_future);
    wait_until([&] { return shop_inf->has_synced(); });
    int pods_churned = std::min(m, 4000);  // 4.5 KB events: a backlog of 18 MB
    auto pod_changes = [&] { return shop_inf->changes(); };
    Figures pod_creates, pod_updates;
    catch_up_round(ioc, loop, "pod creates", [&] { return pod_churn(server, pods_churned, 0); }, pod_changes, pod_creates);
    for (int r = 0; r < rounds; ++r)
        catch_up_round(ioc, loop, fmt::format("pod status updates {}", r + 1),
                       [&] { return pod_churn(server, pods_churned, r + 1); }, pod_changes, pod_updates);

    for (auto [name, f] : {std::pair{"creates", &creates}, std::pair{"updates", &updates},
                           std::pair{"pod creates", &pod_creates}, std::pair{"pod status updates", &pod_updates}})
        fmt::print("catch-up {}, median of {}: client thread {:.2f} us/event; ratio to raw parse: wall {:.2f}, CPU {:.2f}\n",
                   name, f->cpu_us.size(), median(f->cpu_us), median(f->wall_ratios), median(f->cpu_ratios));

    boost::asio::post(ioc, [&] {
        pod_inf->stop();
        cm_inf->stop();
        shop_inf->stop();
    });
    pod_done.get();
    cm_done.get();
    shop_done.get();
}

int main(int argc, char** argv) {
    int n = argc > 1 ? std::atoi(argv[1]) : 10000;
    int m = std::max(argc > 2 ? std::atoi(argv[2]) : 5000, 1);
    int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
    sandbox::ApiServer server;
    server.start();
    const sandbox::ResourceId pods{"", "v1", "pods"}, nss{"", "v1", "namespaces"};
    for (const char* ns : {"bench", "shop"}) server.store().create(nss, "", json::value{{"metadata", {{"name", ns}}}});
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
    std::thread driver([&, loop = pthread_self()] {
        try {
            drive(server, ioc, *client, loop, n, m, rounds, pod_docs);
        } catch (const std::exception& e) {
            // The informers drive() started still run the loop: nothing would end it.
            fmt::print(stderr, "informer_bench: {}\n", e.what());
            std::fflush(nullptr);
            std::_Exit(1);
        }
        boost::asio::post(ioc, [&] {
            client.reset();
            guard.reset();
        });
    });
    ioc.run();
    driver.join();
    return 0;
}
