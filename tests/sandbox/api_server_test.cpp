// The sandbox API server over real HTTPS, specified through vck's own client: who gets in,
// what REST answers look like, watches, Tables and injected faults.
#include <vck/client/client.hpp>
#include <vck/sandbox/server/api_server.hpp>

#include <doctest.h>

#include <boost/asio/use_future.hpp>

#include <fmt/core.h>

#include <atomic>
#include <future>
#include <regex>
#include <thread>

using namespace vck;
using namespace vck::sandbox;
namespace json = boost::json;

namespace {

const api::ResourceType configmaps{"", "v1", "configmaps", "ConfigMap", true};
const api::ResourceType namespaces{"", "v1", "namespaces", "Namespace", false};
const api::ResourceType pods{"", "v1", "pods", "Pod", true};

/// Runs one client coroutine to completion on a fresh io_context.
template <class F>
auto run(const client::Config& cfg, F f) {
    asio::io_context ioc;
    client::Config c = cfg;
    c.max_retries = 3;
    c.retry_base = std::chrono::milliseconds(10);
    client::Client cl(ioc.get_executor(), c);
    auto fut = asio::co_spawn(ioc, f(cl), asio::use_future);
    ioc.run();
    return fut.get();
}

json::value configmap(const std::string& name, const std::string& value = "1") {
    return json::object{{"apiVersion", "v1"},
                        {"kind", "ConfigMap"},
                        {"metadata", {{"name", name}, {"labels", {{"app", "t"}}}}},
                        {"data", {{"k", value}}}};
}

/// A VolumeManager CRD whose schema knows one field, spec.state, with descriptions.
const std::string small_volumemanager_crd = R"({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "volumemanagers.vck.intelai.org"},
  "spec": {"group": "vck.intelai.org", "scope": "Namespaced",
    "names": {"plural": "volumemanagers", "singular": "volumemanager", "kind": "VolumeManager"},
    "versions": [{"name": "v1alpha1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "description": "A set of volumes.",
        "properties": {"spec": {"type": "object", "properties": {
          "state": {"type": "string", "description": "What the controller reached."}}}}}}}]}})";

/// Runs a raw request; an error answer comes back as its status code and Status body.
std::pair<int, json::value> raw(const client::Config& cfg, http::verb method, std::string path, std::string body = {},
                                std::string content_type = {}, std::string accept = "application/json") {
    return run(cfg, [&](client::Client& cl) -> asio::awaitable<std::pair<int, json::value>> {
        try {
            auto r = co_await cl.request(method, path, body, content_type, accept);
            boost::system::error_code ec;
            auto v = json::parse(r.body, ec);
            co_return std::pair<int, json::value>{static_cast<int>(r.status), ec ? json::value(r.body) : v};
        } catch (const client::ApiError& e) {
            auto v = api::to_json(e.status());
            co_return std::pair<int, json::value>{e.code(), v};
        }
    });
}

/// A ClusterRole that lists namespaces, bound to one subject (User or Group).
void api_server_grant_namespace_list(ApiServer& server, const std::string& kind, const std::string& name) {
    const sandbox::ResourceId cluster_roles{"rbac.authorization.k8s.io", "v1", "clusterroles"};
    const sandbox::ResourceId bindings{"rbac.authorization.k8s.io", "v1", "clusterrolebindings"};
    if (server.store().list(cluster_roles, "").at("items").as_array().empty())
        server.store().create(cluster_roles, "", json::parse(R"({"metadata":{"name":"namespace-lister"},
            "rules":[{"apiGroups":[""],"resources":["namespaces"],"verbs":["list"]}]})"));
    server.store().create(bindings, "", json::value{
        {"metadata", {{"name", "namespace-lister-" + name}}},
        {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", "namespace-lister"}}},
        {"subjects", json::array{json::object{{"kind", kind}, {"name", name}}}}});
}

} // namespace

TEST_CASE("a request without credentials gets 401 with a Status body") {
    ApiServer server;
    server.start();
    auto cfg = server.config();
    cfg.token.clear();
    auto [code, body] = raw(cfg, http::verb::get, "/api/v1/namespaces");
    CHECK(code == 401);
    CHECK(body.at("kind") == "Status");
    CHECK(body.at("reason") == "Unauthorized");
}

TEST_CASE("a wrong bearer token is refused; a token added at runtime is accepted, and allowed what RBAC grants it") {
    ApiServer server;
    server.start();
    auto cfg = server.config();
    cfg.token = "not-a-token";
    CHECK(raw(cfg, http::verb::get, "/api/v1/namespaces").first == 401);
    server.add_token("not-a-token", {"late-user", {}});
    auto [code, body] = raw(cfg, http::verb::get, "/api/v1/namespaces");
    CHECK(code == 403);
    CHECK(body.at("message") ==
          R"(namespaces is forbidden: User "late-user" cannot list resource "namespaces" in API group "" at the cluster scope)");
    api_server_grant_namespace_list(server, "User", "late-user");
    CHECK(raw(cfg, http::verb::get, "/api/v1/namespaces").first == 200);
}

TEST_CASE("health and version answer without credentials") {
    ApiServer server;
    server.start();
    auto cfg = server.config();
    cfg.token.clear();
    auto [code, body] = raw(cfg, http::verb::get, "/version");
    CHECK(code == 200);
    CHECK(body.at("major") == "1");
    CHECK(raw(cfg, http::verb::get, "/readyz").first == 200);
}

TEST_CASE("a client certificate signed by the sandbox CA authenticates: its O is a group RBAC binds") {
    ApiServer server;
    server.start();
    api_server_grant_namespace_list(server, "Group", "dev");
    auto v = run(server.client_cert_config("jane", {"dev"}), [](client::Client& cl) -> asio::awaitable<json::value> {
        co_return co_await cl.list(namespaces, "");
    });
    CHECK(v.at("kind") == "NamespaceList");
}

TEST_CASE("a client certificate from another CA is refused") {
    ApiServer server;
    server.start();
    SandboxCertificateAuthority other;
    auto pair = other.issue_client("mallory", {"system:masters"});
    auto cfg = server.config();
    cfg.token.clear();
    cfg.client_cert_pem = pair.cert_pem;
    cfg.client_key_pem = pair.key_pem;
    bool refused = false;
    try {
        raw(cfg, http::verb::get, "/api/v1/namespaces");
    } catch (const client::ApiError& e) {
        refused = e.is_transport();
    }
    // Either the handshake fails or the request is anonymous; never authenticated.
    if (!refused) CHECK(raw(cfg, http::verb::get, "/api/v1/namespaces").first == 401);
}

TEST_CASE("create, get, list with a selector, and delete a config map over HTTPS") {
    ApiServer server;
    server.start();
    run(server.config(), [](client::Client& cl) -> asio::awaitable<void> {
        auto created = co_await cl.create(configmaps, "default", configmap("a"));
        CHECK(created.at("metadata").at("namespace") == "default");
        CHECK_FALSE(api::string_at(created, {"metadata", "uid"}).empty());
        auto got = co_await cl.get(configmaps, "default", "a");
        CHECK(got.at("data").at("k") == "1");
        client::ListOptions sel;
        sel.label_selector = "app=t";
        auto list = co_await cl.list(configmaps, "", sel);
        CHECK(list.at("items").as_array().size() == 1);
        sel.label_selector = "app=other";
        CHECK((co_await cl.list(configmaps, "default", sel)).at("items").as_array().empty());
        co_await cl.remove(configmaps, "default", "a");
        bool gone = false;
        try {
            co_await cl.get(configmaps, "default", "a");
        } catch (const client::ApiError& e) {
            gone = e.is(client::ErrorKind::NotFound);
        }
        CHECK(gone);
    });
}

TEST_CASE("metadata-only get and list answer PartialObjectMetadata[List]; an Accept the server cannot satisfy is 406") {
    ApiServer server;
    server.start();
    run(server.config(), [](client::Client& cl) -> asio::awaitable<void> {
        co_await cl.create(configmaps, "default", configmap("a"));
        auto list = api::parse((co_await cl.request(http::verb::get, "/api/v1/namespaces/default/configmaps", {}, {},
                                                    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"))
                                   .body);
        CHECK(list.at("kind") == "PartialObjectMetadataList");
        CHECK(list.at("apiVersion") == "meta.k8s.io/v1");
        CHECK_FALSE(list.at("metadata").at("resourceVersion").as_string().empty());
        REQUIRE(list.at("items").as_array().size() == 1);
        CHECK(list.at("items").at(0).at("metadata").at("name") == "a");
        CHECK_FALSE(list.at("items").at(0).as_object().contains("data"));
        auto one = api::parse((co_await cl.request(http::verb::get, "/api/v1/namespaces/default/configmaps/a", {}, {},
                                                   "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"))
                                  .body);
        CHECK(one.at("kind") == "PartialObjectMetadata");
        CHECK(one.at("metadata").at("labels").at("app") == "t");
        int refused = 0;
        std::string message;
        try {
            co_await cl.request(http::verb::get, "/api/v1/namespaces/default/configmaps/a", {}, {}, "text/plain");
        } catch (const client::ApiError& e) {
            refused = e.code();
            message = e.server_message();
        }
        CHECK(refused == 406);
        CHECK(message == "only the following media types are accepted: application/json");
        // The log of a pod too: text is written only to a client that accepts JSON or anything.
        co_await cl.create(pods, "default", api::parse(R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"x"}]}})"));
        refused = 0;
        try {
            co_await cl.request(http::verb::get, "/api/v1/namespaces/default/pods/p/log", {}, {}, "text/plain");
        } catch (const client::ApiError& e) {
            refused = e.code();
        }
        CHECK(refused == 406);
    });
}

/// A pod "p" with containers "c" (and "d"), bound to a node so that its log is not "waiting".
void make_log_pod(ApiServer& server, const char* extra = "") {
    server.store().create({"", "v1", "pods"}, "default",
                          json::parse(std::string(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
                              "spec":{"nodeName":"n1","containers":[{"name":"c","image":"x"},{"name":"d","image":"x"}]})") +
                                      extra + "}"));
}
/// GET of a pod's log: the status and the text (or the Status message of a refusal).
std::pair<int, std::string> get_log(ApiServer& server, const std::string& query) {
    return run(server.config(), [&](client::Client& cl) -> asio::awaitable<std::pair<int, std::string>> {
        try {
            auto r = co_await cl.request(http::verb::get, "/api/v1/namespaces/default/pods/p/log?" + query, {}, {}, "*/*");
            co_return std::pair<int, std::string>{static_cast<int>(r.status), r.body};
        } catch (const client::ApiError& e) {
            co_return std::pair<int, std::string>{e.code(), e.server_message()};
        }
    });
}

TEST_CASE("pods/log?follow=true streams what is appended after it started, and ends when the log is closed") {
    ApiServer server;
    server.start();
    make_log_pod(server);
    server.pod_logs().append("default", "p", "c", "before\n");
    std::thread writer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        server.pod_logs().append("default", "p", "c", "after\n");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        server.pod_logs().close("default", "p", "c");  // the container terminated
    });
    auto t0 = std::chrono::steady_clock::now();
    auto [code, text] = get_log(server, "container=c&follow=true");
    writer.join();
    CHECK(code == 200);
    CHECK(text == "before\nafter\n");
    CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(350));  // it waited for the close
}

TEST_CASE("pods/log?follow=true ends when the pod says the container terminated, or the pod is deleted") {
    ApiServer server;
    server.start();
    make_log_pod(server);
    server.pod_logs().append("default", "p", "c", "one\n");
    std::thread writer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        server.pod_logs().append("default", "p", "c", "two\n");
        server.store().patch({"", "v1", "pods"}, "default", "p", client::PatchType::Merge,
                             json::parse(R"({"status":{"containerStatuses":[{"name":"c","ready":false,"restartCount":0,
                                 "image":"x","imageID":"","state":{"terminated":{"exitCode":0}}}]}})"),
                             "status");
    });
    auto [code, text] = get_log(server, "container=c&follow=true&tailLines=1");
    writer.join();
    CHECK(code == 200);
    CHECK(text == "one\ntwo\n");
    // Terminated already: the whole log at once, no stream.
    CHECK(get_log(server, "container=c&follow=true") == std::pair<int, std::string>{200, "one\ntwo\n"});

    std::thread deleter([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        sandbox::StoreDeleteOptions now;  // a pod on a node is deleted gracefully: no kubelet here to finish it
        now.grace_period_seconds = 0;
        server.store().remove({"", "v1", "pods"}, "default", "p", now);
    });
    auto [code2, text2] = get_log(server, "container=d&follow=true");
    deleter.join();
    CHECK(code2 == 200);
    CHECK(text2 == "");
}

TEST_CASE("pods/log?follow=true&limitBytes=N ends after N bytes, appended ones included") {
    ApiServer server;
    server.start();
    make_log_pod(server);
    server.pod_logs().append("default", "p", "c", "12345\n");
    std::thread writer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        server.pod_logs().append("default", "p", "c", "67890\n");
    });
    auto [code, text] = get_log(server, "container=c&follow=true&limitBytes=8");
    writer.join();
    CHECK(code == 200);
    CHECK(text == "12345\n67");
}

TEST_CASE("pods/log timestamps, sinceSeconds and sinceTime, and PodLogOptions' refusals") {
    ApiServer server;
    server.start();
    make_log_pod(server);
    server.pod_logs().append("default", "p", "c", "hello\n");
    auto [code, text] = get_log(server, "container=c&timestamps=true");
    CHECK(code == 200);
    CHECK(std::regex_match(text, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z hello\n)")));
    CHECK(get_log(server, "container=c&sinceSeconds=3600") == std::pair<int, std::string>{200, "hello\n"});
    CHECK(get_log(server, "container=c&sinceSeconds=9223372036854775807") == std::pair<int, std::string>{200, "hello\n"});
    CHECK(get_log(server, "container=c&sinceTime=2000-01-01T00:00:00Z") == std::pair<int, std::string>{200, "hello\n"});
    CHECK(get_log(server, "container=c&sinceTime=2999-01-01T00:00:00Z") == std::pair<int, std::string>{200, ""});
    auto both = get_log(server, "container=c&sinceSeconds=10&sinceTime=2000-01-01T00:00:00Z");
    CHECK(both.first == 422);
    CHECK(both.second == "PodLogOptions \"p\" is invalid: : Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified");
    auto bad = get_log(server, "container=c&sinceTime=yesterday");
    CHECK(bad.first == 400);
    CHECK(bad.second.starts_with("parsing time \"yesterday\""));
    CHECK(get_log(server, "container=c&sinceSeconds=0").first == 422);
}

TEST_CASE("pods/log?previous=true serves the instance before the last restart, or 400 as the kubelet answers") {
    ApiServer server;
    server.start();
    make_log_pod(server);
    server.pod_logs().append("default", "p", "c", "first run\n");
    CHECK(get_log(server, "container=c&previous=true") ==
          std::pair<int, std::string>{400, "previous terminated container \"c\" in pod \"p\" not found"});
    server.pod_logs().restart("default", "p", "c");
    server.pod_logs().append("default", "p", "c", "second run\n");
    CHECK(get_log(server, "container=c&previous=true") == std::pair<int, std::string>{200, "first run\n"});
    CHECK(get_log(server, "container=c") == std::pair<int, std::string>{200, "second run\n"});
}

TEST_CASE("request limits are kube-apiserver's: a 16 KB URL is served, a 2 MB one is 431, a 4 MB body is 413") {
    ApiServer server;
    server.start();
    auto cfg = server.config();
    // A long label selector, as a controller with many values in an In clause sends.
    std::string values;
    while (values.size() < 16 * 1024) values += (values.empty() ? "" : ",") + std::string("value-") + std::to_string(values.size());
    auto [code, body] = raw(cfg, http::verb::get, "/api/v1/namespaces/default/configmaps?labelSelector=app+in+(" + values + ")");
    CHECK(code == 200);
    auto [long_code, long_body] = raw(cfg, http::verb::get, "/api/v1/namespaces?labelSelector=app%3D" + std::string(2 * 1024 * 1024, 'x'));
    CHECK_MESSAGE(long_code == 431, json::serialize(long_body));
    auto big = configmap("big", std::string(4 * 1024 * 1024, 'x'));
    auto [too_big, status] = raw(cfg, http::verb::post, "/api/v1/namespaces/default/configmaps", json::serialize(big),
                                 "application/json");
    CHECK(too_big == 413);
    CHECK(status.at("reason") == "RequestEntityTooLarge");
    CHECK(status.at("message") == "Request entity too large: limit is 3145728");
    // The server goes on serving.
    CHECK(raw(cfg, http::verb::get, "/api/v1/namespaces").first == 200);
}

TEST_CASE("an integer query parameter is read whole: \"5x\" is a 400, not 5") {
    ApiServer server;
    server.start();
    auto cfg = server.config();
    auto [code, status] = raw(cfg, http::verb::get, "/api/v1/namespaces?limit=5x");
    CHECK(code == 400);
    CHECK(status.at("message") == "limit must be an integer, got \"5x\"");
    CHECK(raw(cfg, http::verb::get, "/api/v1/namespaces?watch=true&timeoutSeconds=1s").first == 400);
    CHECK(raw(cfg, http::verb::get, "/api/v1/namespaces?limit=2").first == 200);
}

TEST_CASE("an unknown path is a 404 Status, an unknown patch type a 415") {
    ApiServer server;
    server.start();
    auto [code, body] = raw(server.config(), http::verb::get, "/apis/nope.io/v1/things");
    CHECK(code == 404);
    CHECK(body.at("kind") == "Status");
    raw(server.config(), http::verb::post, "/api/v1/namespaces/default/configmaps", json::serialize(configmap("p")),
        "application/json");
    auto [c415, b415] = raw(server.config(), http::verb::patch, "/api/v1/namespaces/default/configmaps/p",
                            R"({"data":{}})", "text/plain");
    CHECK(c415 == 415);
    CHECK(b415.at("reason") == "UnsupportedMediaType");
    auto [apply, applyBody] = raw(server.config(), http::verb::patch, "/api/v1/namespaces/default/configmaps/p",
                                  "data: {}", "application/apply-patch+yaml");
    CHECK(apply == 415);
    CHECK(std::string(applyBody.at("message").as_string()).find("server-side apply") != std::string::npos);
}

TEST_CASE("a list asked for as a Table comes back as a meta.k8s.io/v1 Table") {
    ApiServer server;
    server.start();
    raw(server.config(), http::verb::post, "/api/v1/namespaces/default/configmaps", json::serialize(configmap("t1")),
        "application/json");
    auto [code, t] = raw(server.config(), http::verb::get, "/api/v1/namespaces/default/configmaps", {}, {},
                         "application/json;as=Table;v=v1;g=meta.k8s.io,application/json");
    CHECK(code == 200);
    CHECK(t.at("kind") == "Table");
    CHECK(t.at("columnDefinitions").as_array().at(1).at("name") == "Data");
    CHECK(t.at("rows").as_array().at(0).at("cells").as_array().at(0) == "t1");
}

TEST_CASE("discovery lists the core resources and the CRD group") {
    ApiServer server;
    server.start();
    auto [c1, core] = raw(server.config(), http::verb::get, "/api/v1");
    CHECK(c1 == 200);
    CHECK(core.at("kind") == "APIResourceList");
    auto [c2, groups] = raw(server.config(), http::verb::get, "/apis");
    CHECK(c2 == 200);
    CHECK(groups.at("kind") == "APIGroupList");
}

TEST_CASE("a watch streams events and the server ends it after timeoutSeconds") {
    ApiServer server;
    server.start();
    auto types = run(server.config(), [&](client::Client& cl) -> asio::awaitable<std::vector<std::string>> {
        auto list = co_await cl.list(configmaps, "default");
        client::WatchOptions wo;
        wo.resource_version = std::string(api::string_at(list, {"metadata", "resourceVersion"}));
        wo.timeout_seconds = 1;
        auto w = co_await cl.watch(configmaps, "default", wo);
        server.store().create({"", "v1", "configmaps"}, "default", configmap("w"));
        std::vector<std::string> seen;
        while (auto e = co_await w.next()) seen.emplace_back(api::string_at(e->object, {"metadata", "name"}));
        co_return seen;  // returns only because the server closed the stream
    });
    CHECK(types == std::vector<std::string>{"w"});
}

TEST_CASE("every watcher receives a burst of events written while the server is sending the first") {
    // A wake-up that lands while the server writes the previous chunk must not be lost: the
    // rest of the burst is sent at once, not at the watch's timeout. Twenty rounds of two
    // watchers and ten quick creates; a watchdog drops the watches after 20 s so that a lost
    // wake-up fails the count instead of hanging.
    ApiServer server;
    server.start();
    constexpr int watchers = 2, burst = 10;
    for (int round = 0; round < 20; ++round) {
        asio::io_context ioc;
        std::vector<std::unique_ptr<client::Client>> clients;
        std::vector<std::future<int>> counts;
        std::atomic<int> ready{0};
        for (int i = 0; i < watchers; ++i) {
            clients.push_back(std::make_unique<client::Client>(ioc.get_executor(), server.config()));
            auto* cl = clients.back().get();
            counts.push_back(asio::co_spawn(
                ioc,
                [&, cl]() -> asio::awaitable<int> {
                    client::WatchOptions wo;
                    wo.timeout_seconds = 300;
                    wo.label_selector = fmt::format("round={}", round);
                    auto w = co_await cl->watch(configmaps, "default", wo);
                    ++ready;
                    int n = 0;
                    try {
                        while (n < burst) {
                            // Not in the loop's condition: GCC 12 evaluates a co_await behind
                            // `&&` even when the left side is false, and waits for an 11th event.
                            auto e = co_await w.next();
                            if (!e) break;
                            ++n;
                        }
                    } catch (const client::ApiError&) {
                    }
                    co_return n;
                },
                asio::use_future));
        }
        std::thread loop([&] { ioc.run(); });
        while (ready < watchers) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        for (int i = 0; i < burst; ++i) {
            auto cm = configmap(fmt::format("r{}-{}", round, i));
            cm.as_object()["metadata"].as_object()["labels"].as_object()["round"] = std::to_string(round);
            server.store().create({"", "v1", "configmaps"}, "default", std::move(cm));
        }
        for (auto& c : counts)
            if (c.wait_for(std::chrono::seconds(20)) != std::future_status::ready) server.faults().drop_watches();
        for (auto& c : counts) CHECK(c.get() == burst);
        asio::post(ioc, [&] { clients.clear(); });
        loop.join();
    }
}

TEST_CASE("a backlog of many writes' worth is drained in parts, whole and in order") {
    // The front end encodes about WatchPlan::kBatchBytes per write, so that a long backlog is
    // on the wire while the rest is encoded; the parts after the first must follow at once.
    ApiServer server;
    server.start();
    const ResourceId cms{"", "v1", "configmaps"};
    auto rv = std::string(api::string_at(server.store().list(cms, "default"), {"metadata", "resourceVersion"}));
    constexpr int n = 48;  // 8 KiB each: six parts
    for (int i = 0; i < n; ++i)
        server.store().create(cms, "default", configmap(fmt::format("b{:02}", i), std::string(8192, 'v')));
    auto names_in = [](std::string_view lines) {
        std::vector<std::string> names;
        for (std::size_t at = 0; at < lines.size();) {
            auto end = lines.find('\n', at);
            REQUIRE(end != std::string_view::npos);  // whole lines only
            auto e = json::parse(lines.substr(at, end - at));
            CHECK(e.at("type") == "ADDED");
            names.emplace_back(api::string_at(e.at("object"), {"metadata", "name"}));
            at = end + 1;
        }
        return names;
    };
    std::vector<std::string> want;
    for (int i = 0; i < n; ++i) want.push_back(fmt::format("b{:02}", i));

    SUBCASE("WatchPlan hands the backlog out a part at a time") {
        StoreWatchOptions o;
        o.resource_version = rv;
        WatchPlan plan(server.store().watch(cms, "default", o), std::nullopt, {});
        bool open = true;
        std::vector<std::string> got;
        int parts = 0;
        do {
            auto lines = plan.drain(open);
            CHECK(lines.size() < WatchPlan::kBatchBytes + 9000);
            for (auto& name : names_in(lines)) got.push_back(name);
            ++parts;
        } while (plan.backlog());
        CHECK(open);
        CHECK(parts >= 5);
        CHECK(got == want);
    }
    SUBCASE("events queued while the backlog is handed out leave the plan ready once the backlog is gone") {
        // What the front end asks before it sleeps: the wake-up for these events came while
        // it was still writing older parts.
        StoreWatchOptions o;
        o.resource_version = rv;
        WatchPlan plan(server.store().watch(cms, "default", o), std::nullopt, {});
        bool open = true;
        auto first = names_in(plan.drain(open));
        REQUIRE(plan.backlog());
        server.store().create(cms, "default", configmap("late"));
        std::vector<std::string> got = first;
        while (plan.backlog())
            for (auto& name : names_in(plan.drain(open))) got.push_back(name);
        CHECK(got == want);
        CHECK(plan.ready());
        CHECK(names_in(plan.drain(open)) == std::vector<std::string>{"late"});
        CHECK_FALSE(plan.ready());
        CHECK(open);
    }
    SUBCASE("a client watching from before the writes gets them all without waiting") {
        std::atomic<bool> finished{false};
        std::thread watchdog([&] {  // a part left waiting for the timeout fails the count instead of hanging
            for (int i = 0; i < 2000 && !finished; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
            if (!finished) server.faults().drop_watches();
        });
        auto got = run(server.config(), [&](client::Client& cl) -> asio::awaitable<std::vector<std::string>> {
            client::WatchOptions wo;
            wo.resource_version = rv;
            wo.timeout_seconds = 300;
            auto w = co_await cl.watch(configmaps, "default", wo);
            std::vector<std::string> seen;
            while (seen.size() < n) {
                auto e = co_await w.next();
                if (!e) break;
                seen.emplace_back(api::string_at(e->object, {"metadata", "name"}));
            }
            co_return seen;
        });
        finished = true;
        watchdog.join();
        CHECK(got == want);
    }
}

TEST_CASE("an event stored while a long backlog is being sent follows it, with no write after it") {
    // The front end sends a backlog a part at a time. A store write that lands meanwhile
    // queues its event behind the backlog and wakes the front end while it is still writing
    // an older part; once the backlog is out it must look at the queue again rather than
    // sleep until the next write. (With a wake-up flag reset at each part, the event waited
    // for ever: bench/sandbox's watch phase stalled in about half its runs.) The backlog is
    // 24 MiB, more than the sockets buffer, so the server is still sending it when the late
    // write lands; a watchdog drops the watch after 60 s so that a stall ends, and fails.
    ApiServer server;
    server.start();
    const ResourceId cms{"", "v1", "configmaps"};
    auto rv = std::string(api::string_at(server.store().list(cms, "default"), {"metadata", "resourceVersion"}));
    constexpr int backlog = 1500;  // 16 KiB each
    for (int i = 0; i < backlog; ++i)
        server.store().create(cms, "default", configmap(fmt::format("b{}", i), std::string(16384, 'v')));
    std::promise<void> first_read;
    std::atomic<bool> finished{false}, woken_by_watchdog{false};
    std::thread writer([&] {
        first_read.get_future().wait();
        server.store().create(cms, "default", configmap("late"));
        for (int i = 0; i < 6000 && !finished; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (finished) return;
        woken_by_watchdog = true;  // dropping the watch wakes a stalled front end, which then sends it
        server.faults().drop_watches();
    });
    auto [events, saw_late] = run(server.config(), [&](client::Client& cl) -> asio::awaitable<std::pair<int, bool>> {
        client::WatchOptions wo;
        wo.resource_version = rv;
        wo.timeout_seconds = 300;
        wo.allow_bookmarks = false;  // a BOOKMARK would wake a stalled watch after 30 s
        auto w = co_await cl.watch(configmaps, "default", wo);
        int n = 0;
        try {
            for (;;) {
                auto e = co_await w.next();
                if (!e) break;
                if (++n == 1) first_read.set_value();
                if (api::string_at(e->object, {"metadata", "name"}) == "late") co_return std::pair{n, true};
            }
        } catch (const client::ApiError&) {
        }
        co_return std::pair{n, false};
    });
    finished = true;
    writer.join();
    CHECK_FALSE(woken_by_watchdog);
    CHECK(saw_late);
    CHECK(events == backlog + 1);
}

TEST_CASE("dropping watches ends open streams") {
    ApiServer server;
    server.start();
    auto ended = run(server.config(), [&](client::Client& cl) -> asio::awaitable<bool> {
        client::WatchOptions wo;
        wo.timeout_seconds = 300;
        auto w = co_await cl.watch(configmaps, "default", wo);
        server.faults().drop_watches();
        try {
            while (co_await w.next()) {
            }
        } catch (const client::ApiError&) {
        }
        co_return true;
    });
    CHECK(ended);
}

TEST_CASE("an injected 429 with Retry-After is answered, and the client retries past it") {
    ApiServer server;
    server.start();
    FaultRule r;
    r.verb = "list";
    r.resource = "namespaces";
    r.code = 429;
    r.retry_after_seconds = 1;
    server.faults().fail_next(r);
    auto sent = run(server.config(), [](client::Client& cl) -> asio::awaitable<std::uint64_t> {
        co_await cl.list(namespaces, "");
        co_return cl.requests_sent();
    });
    CHECK(sent == 2);
    CHECK(server.faults().fired() == 1);
}

TEST_CASE("a fault rule for a resource or subresource the server does not serve is refused, not armed to wait for ever") {
    ApiServer server;
    auto arm = [&](std::string resource) {
        FaultRule r;
        r.verb = "get";
        r.resource = std::move(resource);
        server.faults().fail_next(r);
    };
    CHECK_NOTHROW(arm("pods"));
    CHECK_NOTHROW(arm("pods/status"));
    CHECK_NOTHROW(arm("pods/log"));
    CHECK_NOTHROW(arm("leases"));
    CHECK_THROWS_WITH_AS(arm("pod"),
                         "no request has the resource \"pod\": the sandbox serves no such resource "
                         "(kubectl api-resources lists those it does)",
                         std::invalid_argument);
    CHECK_THROWS_AS(arm("configmaps/status"), std::invalid_argument);
    CHECK_THROWS_AS(arm("volumemanagers"), std::invalid_argument);  // no CRD serves it yet
    CHECK(server.faults().pending().size() == 4);
}

TEST_CASE("an injected 500 reaches the client as InternalError with the fault's message") {
    ApiServer server;
    server.start();
    FaultRule r;
    r.verb = "create";
    r.resource = "configmaps";
    r.code = 500;
    r.message = "disk on fire";
    server.faults().fail_next(r);
    auto [code, body] = raw(server.config(), http::verb::post, "/api/v1/namespaces/default/configmaps",
                            json::serialize(configmap("x")), "application/json");
    CHECK(code == 500);
    CHECK(body.at("message") == "disk on fire");
}

TEST_CASE("the kubeconfig names the server, the CA data, the token and context sandbox") {
    ApiServer server;
    server.start();
    auto y = server.kubeconfig_yaml();
    CHECK(y.find("server: " + server.url()) != std::string::npos);
    CHECK(y.find("certificate-authority-data: ") != std::string::npos);
    CHECK(y.find("token: " + server.token()) != std::string::npos);
    CHECK(y.find("current-context: sandbox") != std::string::npos);
}

TEST_CASE("stop() ends open connections and can be called twice") {
    ApiServer server;
    server.start();
    CHECK(server.port() != 0);
    server.stop();
    server.stop();
    // raw() reports a transport failure (nothing listens any more) as code 0.
    CHECK(raw(server.config(), http::verb::get, "/version").first == 0);
}

TEST_CASE("unknown and duplicate fields: Warning headers under Warn (the default), 400 under Strict, 422 for a bad value") {
    ApiServer server;
    server.start();
    auto cfg = server.config();
    REQUIRE(raw(cfg, http::verb::post, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", small_volumemanager_crd,
                "application/json").first == 201);
    const std::string path = "/apis/vck.intelai.org/v1alpha1/namespaces/default/volumemanagers";
    const std::string typo = R"({"apiVersion": "vck.intelai.org/v1alpha1", "kind": "VolumeManager",
        "metadata": {"name": "vm1"}, "spec": {"stat": "x", "state": "a", "state": "b"}})";

    // The default (no fieldValidation) is Warn: written, one Warning header per problem.
    auto answer = run(cfg, [&](client::Client& cl) -> asio::awaitable<client::HttpResponse> {
        co_return co_await cl.request(http::verb::post, path, typo, "application/json", "application/json");
    });
    CHECK(answer.status == 201);
    std::vector<std::string> warnings;
    for (auto it = answer.headers.find("Warning"); it != answer.headers.end() && it->name_string() == "Warning"; ++it)
        warnings.emplace_back(it->value());
    CHECK(warnings == std::vector<std::string>{R"(299 - "duplicate field \"spec.state\"")",
                                               R"(299 - "unknown field \"spec.stat\"")"});
    auto stored = json::parse(answer.body);
    CHECK(stored.at("spec") == json::parse(R"({"state": "b"})"));

    // Strict refuses with the decoder's words; a value the server does not know is a 422.
    auto [strict, status] = raw(cfg, http::verb::put, path + "/vm1?fieldValidation=Strict", typo, "application/json");
    CHECK(strict == 400);
    CHECK(status.at("reason") == "BadRequest");
    CHECK(status.at("message") == R"(VolumeManager in version "v1alpha1" cannot be handled as a VolumeManager: )"
                                  R"(strict decoding error: duplicate field "spec.state", unknown field "spec.stat")");
    auto [bad, bad_status] = raw(cfg, http::verb::patch, path + "/vm1?fieldValidation=strict", R"({"spec": {}})",
                                 "application/merge-patch+json");
    CHECK(bad == 422);
    CHECK(bad_status.at("message") == R"(PatchOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": )"
                                      R"(supported values: "", "Ignore", "Strict", "Warn")");
    // A JSON patch's own duplicate members are named with the "json patch" prefix.
    auto [jp, jp_status] = raw(cfg, http::verb::patch, path + "/vm1?fieldValidation=Strict",
                               R"([{"op": "replace", "op": "replace", "path": "/spec/state", "value": "c"}])",
                               "application/json-patch+json");
    CHECK(jp == 422);
    CHECK(std::string(jp_status.at("message").as_string()).ends_with(R"(: strict decoding error: json patch duplicate field "[0].op")"));

    // vck's own client takes an answer with Warning headers as any other.
    const api::ResourceType vms{"vck.intelai.org", "v1alpha1", "volumemanagers", "VolumeManager", true};
    auto patched = run(cfg, [&](client::Client& cl) -> asio::awaitable<json::value> {
        co_return co_await cl.patch(vms, "default", "vm1", client::PatchType::Merge, json::parse(R"({"spec": {"other": 1}})"));
    });
    CHECK(patched.at("spec") == json::parse(R"({"state": "b"})"));
}

TEST_CASE("OpenAPI v3: a CRD's group-version document carries its schema; built-in documents carry none") {
    ApiServer server;
    server.start();
    auto cfg = server.config();
    REQUIRE(raw(cfg, http::verb::post, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", small_volumemanager_crd,
                "application/json").first == 201);
    auto [code, doc] = raw(cfg, http::verb::get, "/openapi/v3/apis/vck.intelai.org/v1alpha1");
    REQUIRE(code == 200);
    const auto& schemas = doc.at("components").at("schemas");
    const auto& vm = schemas.at("org.intelai.vck.v1alpha1.VolumeManager");
    CHECK(vm.at("description") == "A set of volumes.");
    CHECK(vm.at("properties").at("spec").at("properties").at("state").at("description") == "What the controller reached.");
    CHECK(vm.at("properties").at("metadata").at("type") == "object");
    CHECK(vm.at("properties").at("apiVersion").at("type") == "string");
    CHECK(vm.at("x-kubernetes-group-version-kind") ==
          json::parse(R"([{"group": "vck.intelai.org", "kind": "VolumeManager", "version": "v1alpha1"}])"));
    CHECK(schemas.at("org.intelai.vck.v1alpha1.VolumeManagerList").at("properties").at("items").at("items").at("$ref") ==
          "#/components/schemas/org.intelai.vck.v1alpha1.VolumeManager");
    const auto& item = doc.at("paths").at("/apis/vck.intelai.org/v1alpha1/namespaces/{namespace}/volumemanagers/{name}");
    CHECK(item.at("get").at("responses").at("200").at("content").at("application/json").at("schema").at("$ref") ==
          "#/components/schemas/org.intelai.vck.v1alpha1.VolumeManager");
    // No patch operation declares a body: kubectl apply keeps sending merge patches.
    CHECK_FALSE(item.at("patch").as_object().contains("requestBody"));
    auto [core, core_doc] = raw(cfg, http::verb::get, "/openapi/v3/api/v1");
    REQUIRE(core == 200);
    CHECK(core_doc.at("components").at("schemas").as_object().empty());
}
