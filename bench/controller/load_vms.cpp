// Creates N VolumeManagers of one volume each through the API (32 at a time) and waits, by a
// watch, until every one is Running; prints the seconds from the first create to the last Running. Used by
// run.sh. KIND is nfs (a PV and a claim each, the default) or s3 (one copy each: a download
// pod on a node, its entry in status.copies and the node's label; a Secret is created first).
//   load_vms KUBECONFIG N [NAMESPACE [KIND]]
// With `pods M`, creates M pods that are none of VCK's business in namespace "others" (the
// rest of a real cluster) and returns.
//   load_vms KUBECONFIG pods M
// With `raw N`, makes the writes vck-controller makes for N NFS VolumeManagers without the
// controller: per VolumeManager a create, a finalizer patch, a pre-bound PV and claim, a status
// patch and an event, 32 VolumeManagers in flight; prints writes/s (the sandbox's own cost).
//   load_vms KUBECONFIG raw N [NAMESPACE]
#include <vck/client/client.hpp>
#include <vck/client/kubeconfig.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <cstdio>
#include <functional>
#include <set>
#include <future>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace json = boost::json;
using namespace vck;

// The objects of the raw write mix (built outside the coroutine: GCC 12 cannot initialize
// a json::value from nested braces of string literals inside one).
static json::value raw_object(const std::string& what, const std::string& ns, const std::string& name) {
    if (what == "vm")
        return json::value{{"apiVersion", "vck.intelai.org/v1alpha1"},
                           {"kind", "VolumeManager"},
                           {"metadata", {{"name", name}, {"namespace", ns}}},
                           {"spec", {{"volumeConfigs", json::array{json::value{
                                         {"id", "data"}, {"replicas", 1}, {"sourceType", "NFS"},
                                         {"accessMode", "ReadWriteMany"}, {"capacity", "1Gi"}, {"labels", {{"bench", "raw"}}},
                                         {"options", {{"server", "10.0.0.1"}, {"path", "/x"}}}}}}}}};
    if (what == "finalizer") return json::value{{"metadata", {{"finalizers", json::array{"vck.intelai.org/cleanup"}}}}};
    if (what == "pv")
        return json::value{{"metadata", {{"name", ns + "-" + name}}},
                           {"spec", {{"capacity", {{"storage", "1Gi"}}}, {"accessModes", json::array{"ReadWriteMany"}},
                                     {"nfs", {{"server", "10.0.0.1"}, {"path", "/x"}}},
                                     {"claimRef", {{"namespace", ns}, {"name", name}}},
                                     {"persistentVolumeReclaimPolicy", "Retain"}, {"storageClassName", ""}}}};
    if (what == "pvc")
        return json::value{{"metadata", {{"name", name}, {"namespace", ns}}},
                           {"spec", {{"accessModes", json::array{"ReadWriteMany"}},
                                     {"resources", {{"requests", {{"storage", "1Gi"}}}}},
                                     {"volumeName", ns + "-" + name}, {"storageClassName", ""}}}};
    if (what == "status") return json::value{{"status", {{"state", "Running"}}}};
    return json::value{{"metadata", {{"name", name + ".bench"}, {"namespace", ns}}},
                       {"involvedObject", {{"apiVersion", "vck.intelai.org/v1alpha1"}, {"kind", "VolumeManager"},
                                           {"name", name}, {"namespace", ns}}},
                       {"reason", "Running"}, {"message", "every volume is ready"}, {"type", "Normal"},
                       {"source", {{"component", "vck-controller"}}}, {"count", 1}};
}

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: load_vms KUBECONFIG N [NAMESPACE [nfs|s3]] | load_vms KUBECONFIG pods M\n");
        return 2;
    }
    client::KubeconfigOptions ko;
    ko.path = argv[1];
    bool other_pods = std::string(argv[2]) == "pods";
    bool raw = std::string(argv[2]) == "raw";
    bool sub = other_pods || raw;
    if (sub && argc < 4) {
        std::fprintf(stderr, "usage: load_vms KUBECONFIG pods|raw M\n");
        return 2;
    }
    int n = std::atoi(argv[sub ? 3 : 2]);
    if (n < 1) {
        std::fprintf(stderr, "load_vms: the count must be a number of at least 1, not \"%s\"\n", argv[sub ? 3 : 2]);
        return 2;
    }
    std::string ns = other_pods ? "others" : raw ? (argc > 4 ? argv[4] : "default") : argc > 3 ? argv[3] : "default";
    std::string kind = !sub && argc > 4 ? argv[4] : "nfs";
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

    if (raw) {
        const api::ResourceType pvs{"", "v1", "persistentvolumes", "PersistentVolume", false};
        const api::ResourceType pvcs{"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true};
        const api::ResourceType events{"", "v1", "events", "Event", true};
        auto one = [](client::Client& c, int& next, int n, std::string ns, api::ResourceType vms, api::ResourceType pvs,
                      api::ResourceType pvcs, api::ResourceType events) -> asio::awaitable<void> {
            while (next < n) {
                auto name = "raw-" + std::to_string(next++);
                auto vm = co_await c.create(vms, ns, raw_object("vm", ns, name));
                co_await c.patch(vms, ns, name, client::PatchType::Merge, raw_object("finalizer", ns, name));
                co_await c.create(pvs, "", raw_object("pv", ns, name));
                co_await c.create(pvcs, ns, raw_object("pvc", ns, name));
                co_await c.patch(vms, ns, name, client::PatchType::Merge, raw_object("status", ns, name),
                                 client::PatchOptions().on("status"));
                auto event = raw_object("event", ns, name);
                event.at("involvedObject").as_object()["uid"] = vm.at("metadata").at("uid");
                co_await c.create(events, ns, std::move(event));
            }
        };
        auto t0 = std::chrono::steady_clock::now();
        std::vector<std::future<void>> ws;
        for (int w = 0; w < 32; ++w)
            ws.push_back(asio::co_spawn(ioc, one(c, next, n, ns, vms, pvs, pvcs, events), asio::use_future));
        ioc.run();
        for (auto& w : ws) w.get();
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("%d writes in %.3f s: %.0f writes/s\n", 6 * n, secs, 6 * n / secs);
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
        // Followed by a watch, not by lists: listing every VolumeManager a few times a second
        // made this driver the sandbox's largest cost at 10,000.
        std::set<std::string> running;
        std::string rv;
        while (static_cast<int>(running.size()) < n) {
            client::WatchOptions wo;
            wo.resource_version = rv;
            auto w = co_await c.watch(vms, ns, wo);
            while (static_cast<int>(running.size()) < n) {
                auto e = co_await w.next();
                if (!e || e->type == client::WatchEventType::Error) break;  // ended: watch again from rv
                rv = std::string(e->resource_version());
                if (e->type == client::WatchEventType::Bookmark) continue;
                auto name = std::string(api::string_at(e->object, {"metadata", "name"}));
                if (e->type != client::WatchEventType::Deleted && api::string_at(e->object, {"status", "state"}) == "Running")
                    running.insert(name);
                else
                    running.erase(name);
            }
        }
        co_return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    auto fut = asio::co_spawn(ioc, run(), asio::use_future);
    ioc.run();
    std::printf("%.3f\n", fut.get());
    return 0;
}
