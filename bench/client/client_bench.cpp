// Requests per second of GET and of create through vck::client::Client over one keep-alive
// pool, against the in-process sandbox API server, next to the same requests sent through the
// bare HttpTransport (no rate limiter, retries, JSON decode or error mapping): the ratio is
// what the client's own work costs. Run by hand on a release build:
//   build/bench/bench/client/client_bench [--seconds 2] [--rounds 5] [--concurrency 8]
// Prints medians over rounds; both sides of each ratio are measured in the same round.
#include <vck/client/client.hpp>
#include <vck/sandbox/server/api_server.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace vck;
namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

const api::ResourceType configmaps{"", "v1", "configmaps", "ConfigMap", true};

json::value configmap(std::string name) {
    return json::value{{"apiVersion", "v1"}, {"kind", "ConfigMap"},
                       {"metadata", {{"name", std::move(name)}, {"namespace", "default"}}},
                       {"data", {{"key", std::string(200, 'x')}}}};
}

json::value generated_configmap() {
    return json::value{{"apiVersion", "v1"}, {"kind", "ConfigMap"},
                       {"metadata", {{"generateName", "bench-"}, {"namespace", "default"}}},
                       {"data", {{"key", std::string(200, 'x')}}}};
}

/// Runs `concurrency` copies of `one` until `seconds` pass; returns requests per second.
template <class F>
double rate(asio::io_context& ioc, int concurrency, double seconds, F one) {
    std::atomic<std::uint64_t> done{0};
    auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    std::vector<std::future<void>> fs;
    auto t0 = Clock::now();
    for (int i = 0; i < concurrency; ++i)
        fs.push_back(asio::co_spawn(ioc, [&, i]() -> asio::awaitable<void> {
            std::uint64_t n = 0;
            while (Clock::now() < until) {
                co_await one(i, n++);
                ++done;
            }
        }, asio::use_future));
    ioc.restart();
    ioc.run();
    for (auto& f : fs) f.get();
    return static_cast<double>(done.load()) / std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    double seconds = 2;
    int rounds = 5, concurrency = 8;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--concurrency")) concurrency = std::atoi(argv[i + 1]);
    }
    sandbox::ApiServer server;
    server.start();
    for (int i = 0; i < 64; ++i)
        server.store().create(sandbox::ResourceId{"", "v1", "configmaps"}, "default", configmap("cm-" + std::to_string(i)));

    auto cfg = server.config();
    cfg.qps = 1e9;  // measure the client, not its limiter
    cfg.burst = 1'000'000;
    cfg.max_connections = concurrency;
    asio::io_context ioc;
    client::Client c(ioc.get_executor(), cfg);
    client::TlsSettings tls;
    tls.ca_pem = cfg.ca_pem;
    client::TransportOptions to;
    to.max_idle = static_cast<std::size_t>(concurrency);
    client::HttpTransport raw(ioc.get_executor(), client::Endpoint::parse(cfg.server), tls, to);
    auto raw_request = [&](http::verb v, std::string target, std::string body) {
        client::HttpRequest r;
        r.method = v;
        r.target = std::move(target);
        r.headers.set(http::field::authorization, "Bearer " + cfg.token);
        r.headers.set(http::field::accept, "application/json");
        if (!body.empty()) r.headers.set(http::field::content_type, "application/json");
        r.body = std::move(body);
        return r;
    };
    std::string created_body = json::serialize(generated_configmap());

    std::vector<double> get_client, get_raw, create_client, create_raw;
    for (int round = 0; round < rounds; ++round) {
        get_client.push_back(rate(ioc, concurrency, seconds, [&](int, std::uint64_t n) -> asio::awaitable<void> {
            co_await c.get(configmaps, "default", "cm-" + std::to_string(n % 64));
        }));
        get_raw.push_back(rate(ioc, concurrency, seconds, [&](int, std::uint64_t n) -> asio::awaitable<void> {
            auto r = raw_request(http::verb::get, "/api/v1/namespaces/default/configmaps/cm-" + std::to_string(n % 64), {});
            auto res = co_await raw.send(std::move(r));
            if (res.status != 200) throw std::runtime_error("raw GET: " + std::to_string(res.status));
        }));
        create_client.push_back(rate(ioc, concurrency, seconds, [&](int, std::uint64_t) -> asio::awaitable<void> {
            co_await c.create(configmaps, "default", generated_configmap());
        }));
        create_raw.push_back(rate(ioc, concurrency, seconds, [&](int, std::uint64_t) -> asio::awaitable<void> {
            auto r = raw_request(http::verb::post, "/api/v1/namespaces/default/configmaps", created_body);
            auto res = co_await raw.send(std::move(r));
            if (res.status != 201) throw std::runtime_error("raw POST: " + std::to_string(res.status));
        }));
        std::fprintf(stderr, "round %d: GET %.0f/%.0f create %.0f/%.0f\n", round + 1, get_client.back(), get_raw.back(),
                     create_client.back(), create_raw.back());
    }
    double g = median(get_client), gr = median(get_raw), cr = median(create_client), crr = median(create_raw);
    std::printf("concurrency %d, %d rounds of %.1f s, medians:\n", concurrency, rounds, seconds);
    std::printf("GET    client %8.0f req/s   bare transport %8.0f req/s   ratio %.2f\n", g, gr, g / gr);
    std::printf("create client %8.0f req/s   bare transport %8.0f req/s   ratio %.2f\n", cr, crr, cr / crr);
    return 0;
}
