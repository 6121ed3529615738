// Creates N VolumeManagers of one volume each through the API (32 at a time) and waits until
// every one is Running; prints the seconds from the first create to the last Running. Used by
// run.sh. KIND is nfs (a PV and a claim each, the default) or s3 (one copy each: a download
// pod on a node, its entry in status.copies and the node's label; a Secret is created first).
//   load_vms KUBECONFIG N [NAMESPACE [KIND]]
// With `pods M`, creates M pods that are none of VCK's business in namespace "others" (the
// rest of a real cluster) and returns.
//   load_vms KUBECONFIG pods M
#include <vck/client/client.hpp>
#include <vck/client/kubeconfig.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace json = boost::json;
using namespace vck;

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: load_vms KUBECONFIG N [NAMESPACE [nfs|s3]] | load_vms KUBECONFIG pods M\n");
        return 2;
    }
    client::KubeconfigOptions ko;
    ko.path = argv[1];
    bool other_pods = std::string(argv[2]) == "pods";
    if (other_pods && argc < 4) {
        std::fprintf(stderr, "usage: load_vms KUBECONFIG pods M\n");
        return 2;
    }
    int n = std::atoi(argv[other_pods ? 3 : 2]);
    if (n < 1) {
        std::fprintf(stderr, "load_vms: the count must be a number of at least 1, not \"%s\"\n", argv[other_pods ? 3 : 2]);
        return 2;
    }
    std::string ns = other_pods ? "others" : argc > 3 ? argv[3] : "default";
    std::string kind = !other_pods && argc > 4 ? argv[4] : "nfs";
    if (kind != "nfs" && kind != "s3") {
        std::fprintf(stderr, "load_vms: KIND is nfs or s3, not \"%s\"\n", kind.c_str());
        return 2;
    }
    auto cfg = client::load_kubeconfig(ko);
    cfg.qps = 1e6;
    cfg.burst = 1'000'000;
    cfg.max_connections = 32;
    asio::io_context ioc;
    client::Client c(ioc.get_executor(), cfg);
    const api::ResourceType vms{"vck.intelai.org", "v1alpha1", "volumemanagers", "VolumeManager", true};

    // Creates make(0) .. make(n-1) as `rt` in `ns`, 32 requests at a time; errors reach the futures.
    // (The worker takes everything as parameters, which live in its coroutine frame; a
    // capturing lambda's captures would die with the closure when create_all returns.)
    int next = 0;
    auto worker = [](client::Client& c, int& next, int n, std::string ns, api::ResourceType rt,
                     std::function<json::value(int)> make) -> asio::awaitable<void> {
        while (next < n) {
            auto object = make(next++);
            co_await c.create(rt, ns, std::move(object));
        }
    };
    auto create_all = [&](const api::ResourceType& rt, const std::function<json::value(int)>& make) {
        std::vector<std::future<void>> ws;
        for (int w = 0; w < 32; ++w) ws.push_back(asio::co_spawn(ioc, worker(c, next, n, ns, rt, make), asio::use_future));
        return ws;
    };

    if (other_pods) {
        const api::ResourceType pods{"", "v1", "pods", "Pod", true};
        const api::ResourceType namespaces{"", "v1", "namespaces", "Namespace", false};
        auto namespace_ = [&]() -> asio::awaitable<void> {
            json::value object{{"metadata", {{"name", ns}}}};
            co_await c.create(namespaces, "", std::move(object));
        };
        auto made = asio::co_spawn(ioc, namespace_(), asio::use_future);
        ioc.run();
        made.get();
        ioc.restart();
        auto ws = create_all(pods, [&](int i) {
            return json::value{{"metadata", {{"name", "web-" + std::to_string(i)}, {"namespace", ns},
                                             {"labels", {{"app", "web"}, {"pod-template-hash", "5d4f8b7c9"}}}}},
                               {"spec", {{"containers", json::array{json::value{
                                             {"name", "web"}, {"image", "registry.example/web:1.4.2"},
                                             {"args", json::array{"--port=8080", "--log-level=info"}},
                                             {"env", json::array{json::value{{"name", "MODE"}, {"value", "production"}}}},
                                             {"resources", {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}}}}}}}}};
        });
        ioc.run();
        for (auto& w : ws) w.get();
        return 0;
    }

    if (kind == "s3") {
        const api::ResourceType secrets{"", "v1", "secrets", "Secret", true};
        auto secret = [&]() -> asio::awaitable<void> {
            json::value object{{"metadata", {{"name", "bench-creds"}, {"namespace", ns}}},
                               {"stringData", {{"awsAccessKeyID", "bench"}, {"awsSecretAccessKey", "bench"}}}};
            co_await c.create(secrets, ns, std::move(object));
        };
        auto made = asio::co_spawn(ioc, secret(), asio::use_future);
        ioc.run();
        made.get();
        ioc.restart();
    }
    auto volume = [&](int i) -> json::value {
        if (kind == "s3")
            return json::value{{"id", "data"}, {"replicas", 1}, {"sourceType", "S3"}, {"accessMode", "ReadWriteOnce"},
                               {"capacity", "1Gi"}, {"labels", {{"bench", "s3"}}},
                               {"options", {{"sourceURL", "s3://bench/" + std::to_string(i) + "/"},
                                            {"awsCredentialsSecretName", "bench-creds"}}}};
        return json::value{{"id", "data"}, {"replicas", 1}, {"sourceType", "NFS"}, {"accessMode", "ReadWriteMany"},
                           {"capacity", "1Gi"}, {"labels", {{"bench", "nfs"}}},
                           {"options", {{"server", "10.0.0.1"}, {"path", "/exports/" + std::to_string(i)}}}};
    };
    auto t0 = std::chrono::steady_clock::now();
    auto run = [&]() -> asio::awaitable<double> {
        auto ws = create_all(vms, [&](int i) {
            return json::value{{"apiVersion", "vck.intelai.org/v1alpha1"}, {"kind", "VolumeManager"},
                               {"metadata", {{"name", kind + "-" + std::to_string(i)}, {"namespace", ns}}},
                               {"spec", {{"volumeConfigs", json::array{volume(i)}}}}};
        });
        asio::steady_timer t(ioc);
        for (;;) {
            t.expires_after(std::chrono::milliseconds(250));
            co_await t.async_wait(asio::use_awaitable);
            auto list = co_await c.list_all(vms, ns, client::ListOptions().page(1000));
            int running = 0;
            for (const auto& it : list.at("items").as_array())
                if (api::string_at(it, {"status", "state"}) == "Running") ++running;
            if (running == n) break;
        }
        co_return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    auto fut = asio::co_spawn(ioc, run(), asio::use_future);
    ioc.run();
    std::printf("%.3f\n", fut.get());
    return 0;
}
