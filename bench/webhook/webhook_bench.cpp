// The added latency of VCK's pod injection webhook per pod create: N pods created at once
// (C in flight) through vck::client against the sandbox's API server over HTTPS, first with
// no webhook configured, then with deploy/base/webhooks.yaml pointing at VCK's own handlers
// (volumes/admission_webhooks.hpp, served by webhook::WebhookServer through
// sandbox::WebhookTestKit), the pods labelled for a VolumeManager whose data is still on its
// way, so every create is mutated (volume, mount, scheduling gate). Prints p50 and p99 of each
// and their difference.
// Usage: webhook_bench [N=200] [C=200] [ROUNDS=5]; run by hand in a release build, with
// VCK_SOURCE_ROOT set (for deploy/). It asserts nothing.
#include <vck/api/core_v1.hpp>
#include <vck/client/client.hpp>
#include <vck/sandbox/server/api_server.hpp>
#include <vck/sandbox/webhook_test_kit.hpp>
#include <vck/volumes/admission_webhooks.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/use_future.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

using namespace vck;
namespace asio = boost::asio;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

json::value labelled_pod(const std::string& name) {
    return json::value{{"apiVersion", "v1"},
                       {"kind", "Pod"},
                       {"metadata", {{"name", name}, {"namespace", "bench"},
                                     {"labels", {{std::string(volumes::volume_manager_label), "data"}}}}},
                       {"spec", {{"containers", json::array{{{"name", "c"}, {"image", "busybox"}}}}}}};
}

/// A VolumeManager with one S3 volume and no status yet: the webhook injects it behind a gate.
api::VolumeManager pending_volume_manager() {
    auto vm = api::from_json<api::VolumeManager>(json::parse(R"({
      "apiVersion": "vck.intelai.org/v1alpha1", "kind": "VolumeManager",
      "metadata": {"name": "data", "namespace": "bench", "uid": "4f1c1a52-0000-4000-8000-000000000001", "generation": 1},
      "spec": {"volumeConfigs": [{"id": "set", "replicas": 1, "sourceType": "S3", "accessMode": "ReadWriteOnce",
        "capacity": "1Gi", "labels": {"k": "v"},
        "options": {"sourceURL": "s3://b/set/", "awsCredentialsSecretName": "creds"}}]}})"));
    return vm;
}

/// Create latencies (seconds) of n pods, c at a time, named prefix-i.
std::vector<double> create_pods(client::Client& c, asio::io_context& ioc, int n, int concurrency, const std::string& prefix) {
    std::vector<double> out;
    std::mutex mu;
    std::atomic<int> next{0}, failed{0};
    auto worker = [&]() -> asio::awaitable<void> {
        for (int i; (i = next++) < n;) {
            auto t0 = Clock::now();
            try {
                co_await c.create(api::Pod::resource, "bench", labelled_pod(prefix + "-" + std::to_string(i)));
            } catch (const std::exception& e) {
                if (failed++ == 0) fmt::print(stderr, "create failed: {}\n", e.what());
            }
            double s = std::chrono::duration<double>(Clock::now() - t0).count();
            std::lock_guard lk(mu);
            out.push_back(s);
        }
    };
    std::vector<std::future<void>> done;
    for (int w = 0; w < concurrency; ++w) done.push_back(asio::co_spawn(ioc, worker(), asio::use_future));
    for (auto& f : done) f.get();
    if (failed) fmt::print(stderr, "{} creates failed\n", failed.load());
    std::sort(out.begin(), out.end());
    return out;
}

double quantile(const std::vector<double>& sorted, double q) {
    if (sorted.empty()) return 0;
    auto i = static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
    return sorted[std::min(i, sorted.size() - 1)];
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    int n = argc > 1 ? std::atoi(argv[1]) : 200;
    int concurrency = argc > 2 ? std::atoi(argv[2]) : 200;
    int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
    const char* root = std::getenv("VCK_SOURCE_ROOT");

    sandbox::ApiServer server;
    server.start();
    server.store().create({"", "v1", "namespaces"}, "", json::value{{"metadata", {{"name", "bench"}}}});

    asio::io_context ioc;
    auto guard = asio::make_work_guard(ioc);
    std::thread loop([&] { ioc.run(); });
    auto cfg = server.config();
    cfg.qps = 1e9;
    cfg.burst = 1000000000;
    cfg.max_connections = concurrency;
    client::Client c(ioc.get_executor(), cfg);

    // VCK's handlers, as vck-controller serves them; the VolumeManager from a fixed fixture
    // (the controller reads its cache: no API call per admission either).
    auto vm = pending_volume_manager();
    handlers::HandlerOptions options;
    auto registry = handlers::HandlerRegistry::with_builtin_handlers();
    sandbox::WebhookTestKit kit(server);
    kit.server().handle(std::string(volumes::pod_injection_path),
                        volumes::pod_injection_webhook([&](const std::string&, const std::string&) {
                            return std::optional<api::VolumeManager>(vm);
                        }, registry, options));

    std::vector<double> p50_plain, p99_plain, p50_hook, p99_hook;
    const sandbox::ResourceId pods{"", "v1", "pods"};
    for (int r = 0; r < rounds; ++r) {
        auto plain = create_pods(c, ioc, n, concurrency, "plain" + std::to_string(r));
        std::vector<json::value> configs;
        {
            auto applied = kit.apply_file(std::filesystem::path(root ? root : ".") / "deploy/base/webhooks.yaml");
            configs = std::move(applied);
        }
        auto hooked = create_pods(c, ioc, n, concurrency, "hooked" + std::to_string(r));
        for (const auto& cfgobj : configs) {
            auto kind = std::string(api::string_at(cfgobj, {"kind"}));
            server.store().remove({"admissionregistration.k8s.io", "v1",
                                   kind == "MutatingWebhookConfiguration" ? "mutatingwebhookconfigurations"
                                                                          : "validatingwebhookconfigurations"},
                                  "", std::string(api::string_at(cfgobj, {"metadata", "name"})));
        }
        p50_plain.push_back(quantile(plain, 0.5));
        p99_plain.push_back(quantile(plain, 0.99));
        p50_hook.push_back(quantile(hooked, 0.5));
        p99_hook.push_back(quantile(hooked, 0.99));
        fmt::print("round {}: no webhook p50 {:.1f} ms p99 {:.1f} ms; webhook p50 {:.1f} ms p99 {:.1f} ms\n", r + 1,
                   p50_plain.back() * 1e3, p99_plain.back() * 1e3, p50_hook.back() * 1e3, p99_hook.back() * 1e3);
    }
    // The injected pods carry the webhook's volume: proof the creates were mutated.
    auto sample = server.store().get(pods, "bench", "hooked0-0");
    bool injected = sample.at("spec").as_object().contains("volumes") &&
                    json::serialize(sample.at("spec").at("volumes")).find("hostPath") != std::string::npos;
    fmt::print("{} pods per round, {} in flight, {} rounds; hooked pods injected: {}\n", n, concurrency, rounds, injected);
    fmt::print("medians: no webhook p50 {:.1f} ms p99 {:.1f} ms; with webhook p50 {:.1f} ms p99 {:.1f} ms; added p50 {:.1f} ms "
               "p99 {:.1f} ms (ratio p50 {:.2f}, p99 {:.2f})\n",
               median(p50_plain) * 1e3, median(p99_plain) * 1e3, median(p50_hook) * 1e3, median(p99_hook) * 1e3,
               (median(p50_hook) - median(p50_plain)) * 1e3, (median(p99_hook) - median(p99_plain)) * 1e3,
               median(p50_hook) / median(p50_plain), median(p99_hook) / median(p99_plain));
    guard.reset();
    ioc.stop();
    loop.join();
    return 0;
}
