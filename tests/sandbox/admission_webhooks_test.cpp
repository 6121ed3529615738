// Admission webhooks in the sandbox, specified against a real HTTPS webhook server run by the
// test: which requests a configuration selects (rules, selectors, matchPolicy), what the
// AdmissionReview carries, how mutations, refusals, warnings and failures come back, and
// that a webhook calling the API server back while it decides does not hang it.
#include <vck/client/client.hpp>
#include <vck/sandbox/server/api_server.hpp>

#include <doctest.h>

#include <boost/asio/use_future.hpp>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace vck;
using namespace vck::sandbox;
namespace json = boost::json;

namespace admission_test {

/// One AdmissionReview the webhook server received.
struct Received {
    std::string path;    // without the query
    std::string target;  // with it
    json::value review;
};

/// What the webhook server answers: a JSON document (`response`), or raw text, after a delay.
struct Answer {
    Answer(json::value r = {}, std::string text = {}, std::chrono::milliseconds d = {})
        : response(std::move(r)), raw(std::move(text)), delay(d) {}
    json::value response;
    std::string raw;
    std::chrono::milliseconds delay{0};
};

json::value allowed(const json::value& review, json::object extra = {}) {
    json::object r{{"uid", review.at("request").at("uid")}, {"allowed", true}};
    for (auto& kv : extra) r[kv.key()] = kv.value();
    return json::object{{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"response", std::move(r)}};
}
json::value denied(const json::value& review, json::object status) {
    json::object r{{"uid", review.at("request").at("uid")}, {"allowed", false}, {"status", std::move(status)}};
    return json::object{{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"response", std::move(r)}};
}
json::value patched(const json::value& review, const json::array& ops) {
    return allowed(review, {{"patchType", "JSONPatch"},
                            {"patch", client::base64_encode(json::serialize(ops))}});
}
/// A JSONPatch adding label mutated=yes (and labels, when the object has none).
json::array add_label_ops(const json::value& review) {
    const auto& obj = review.at("request").at("object").as_object();
    const auto* md = obj.if_contains("metadata");
    if (md && md->as_object().contains("labels"))
        return json::array{json::object{{"op", "add"}, {"path", "/metadata/labels/mutated"}, {"value", "yes"}}};
    return json::array{json::object{{"op", "add"}, {"path", "/metadata/labels"}, {"value", {{"mutated", "yes"}}}}};
}

/// A tiny HTTPS webhook server: every request is recorded, then answered by the script
/// (path, review) -> Answer. Serves with a certificate of its own CA (ca_bundle()).
class WebhookServer {
public:
    using Script = std::function<Answer(const std::string& path, const json::value& review)>;

    explicit WebhookServer(Script script, std::string bind = "127.0.0.1", std::vector<std::string> names = {})
        : script_(std::move(script)), ca_("admission-test-ca") {
        auto pem = ca_.issue_server(names);
        ssl_.use_certificate_chain(asio::buffer(pem.cert_pem));
        ssl_.use_private_key(asio::buffer(pem.key_pem), asio::ssl::context::pem);
        asio::ip::tcp::endpoint ep(asio::ip::make_address(bind), 0);
        acceptor_.open(ep.protocol());
        acceptor_.set_option(asio::socket_base::reuse_address(true));
        acceptor_.bind(ep);
        acceptor_.listen();
        asio::co_spawn(ioc_, accept(), asio::detached);
        thread_ = std::thread([this] { ioc_.run(); });
    }
    ~WebhookServer() {
        ioc_.stop();
        thread_.join();
    }

    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
    std::string url(const std::string& path) const { return "https://127.0.0.1:" + std::to_string(port()) + path; }
    std::string ca_bundle() const { return client::base64_encode(ca_.cert_pem()); }
    std::vector<Received> received(const std::string& path = {}) const {
        std::lock_guard lock(mu_);
        std::vector<Received> out;
        for (const auto& r : received_)
            if (path.empty() || r.path == path) out.push_back(r);
        return out;
    }

private:
    asio::awaitable<void> accept() {
        for (;;) {
            boost::system::error_code ec;
            auto sock = co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
            if (ec) co_return;
            asio::co_spawn(ioc_, serve(std::move(sock)), asio::detached);
        }
    }
    asio::awaitable<void> serve(asio::ip::tcp::socket sock) {
        beast::ssl_stream<beast::tcp_stream> stream(std::move(sock), ssl_);
        boost::system::error_code ec;
        co_await stream.async_handshake(asio::ssl::stream_base::server, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return;
        beast::flat_buffer buf;
        for (;;) {
            http::request<http::string_body> req;
            co_await http::async_read(stream, buf, req, asio::redirect_error(asio::use_awaitable, ec));
            if (ec) co_return;
            std::string target(req.target());
            std::string path = target.substr(0, target.find('?'));
            json::value review;
            try {
                review = json::parse(req.body());
            } catch (const std::exception&) {
            }
            {
                std::lock_guard lock(mu_);
                received_.push_back({path, target, review});
            }
            Answer a = script_(path, review);
            if (a.delay.count() > 0) {
                asio::steady_timer t(ioc_, a.delay);
                co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            }
            http::response<http::string_body> res{http::status::ok, 11};
            res.set(http::field::content_type, "application/json");
            res.body() = a.raw.empty() ? json::serialize(a.response) : a.raw;
            res.prepare_payload();
            co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
            if (ec) co_return;
        }
    }

    Script script_;
    SandboxCertificateAuthority ca_;
    asio::io_context ioc_;
    asio::ssl::context ssl_{asio::ssl::context::tls_server};
    asio::ip::tcp::acceptor acceptor_{ioc_};
    mutable std::mutex mu_;
    std::vector<Received> received_;
    std::thread thread_;
};

/// The scripted behaviours, by path.
Answer scripted(const std::string& path, const json::value& review) {
    if (path == "/deny") return {denied(review, {{"message", "no thanks"}})};
    if (path == "/deny-forbidden") return {denied(review, {{"message", "not here"}, {"code", 403}, {"reason", "Forbidden"}})};
    if (path == "/deny-silently") return {denied(review, {})};
    if (path == "/label") return {patched(review, add_label_ops(review))};
    if (path == "/add-container")
        return {patched(review, json::array{json::object{
                                    {"op", "add"}, {"path", "/spec/containers"},
                                    {"value", json::array{json::object{{"name", "c"}, {"image", "busybox"}}}}}})};
    if (path == "/require-label") {
        const auto& obj = review.at("request").at("object");
        if (api::string_at(obj, {"metadata", "labels", "mutated"}) == "yes") return {allowed(review)};
        return {denied(review, {{"message", "label mutated=yes is missing"}})};
    }
    if (path == "/warn") return {allowed(review, {{"warnings", json::array{"the widget field is deprecated"}}})};
    if (path == "/slow") return {allowed(review), {}, std::chrono::milliseconds(3000)};
    if (path == "/garbage") return {{}, "this is no review"};
    if (path == "/wrong-uid") {
        auto a = allowed(review);
        a.at("response").as_object()["uid"] = "not-the-uid";
        return {a};
    }
    return {allowed(review)};  // "/allow" and every recorder
}

/// A rule of a webhook.
json::object rule(json::array ops, json::array groups, json::array versions, json::array resources, std::string scope = {}) {
    json::object r{{"operations", std::move(ops)}, {"apiGroups", std::move(groups)},
                   {"apiVersions", std::move(versions)}, {"resources", std::move(resources)}};
    if (!scope.empty()) r["scope"] = scope;
    return r;
}
/// A webhook at `url` with `rules`; `extra` sets or overrides any other field.
json::object hook(const std::string& name, const std::string& url, const std::string& ca, json::array rules,
                  json::object extra = {}) {
    json::object h{{"name", name},
                   {"clientConfig", {{"url", url}, {"caBundle", ca}}},
                   {"rules", std::move(rules)},
                   {"sideEffects", "None"},
                   {"admissionReviewVersions", json::array{"v1"}}};
    for (auto& kv : extra) h[kv.key()] = kv.value();
    return h;
}
const json::array configmap_rules{rule({"*"}, {""}, {"v1"}, {"configmaps"})};

/// Registers a configuration (in-process: configurations are not admitted themselves).
void register_webhooks(ApiServer& server, bool mutating, const std::string& name, json::array hooks) {
    server.store().create({"admissionregistration.k8s.io", "v1",
                           mutating ? "mutatingwebhookconfigurations" : "validatingwebhookconfigurations"},
                          "", json::object{{"metadata", {{"name", name}}}, {"webhooks", std::move(hooks)}});
}

/// An answer as a client sees it: code, body (the Status of a refusal), Warning headers.
struct Reply {
    int code = 0;
    json::value body;
    std::vector<std::string> warnings;
    std::string message() const { return body.is_object() ? std::string(api::string_at(body, {"message"})) : ""; }
};
Reply send(const client::Config& cfg, http::verb method, const std::string& path, const std::string& body = {},
           const std::string& content_type = "application/json") {
    asio::io_context ioc;
    client::Config c = cfg;
    c.max_retries = 0;  // a refusal must reach the test as it was sent, once
    client::Client cl(ioc.get_executor(), c);
    auto fut = asio::co_spawn(ioc, [&]() -> asio::awaitable<Reply> {
        Reply r;
        try {
            auto res = co_await cl.request(method, path, body, content_type);
            r.code = static_cast<int>(res.status);
            boost::system::error_code ec;
            r.body = json::parse(res.body, ec);
            for (const auto& f : res.headers)
                if (f.name_string() == "Warning") r.warnings.emplace_back(f.value());
        } catch (const client::ApiError& e) {
            r.code = e.code();
            r.body = api::to_json(e.status());
        }
        co_return r;
    }, asio::use_future);
    ioc.run();
    return fut.get();
}
Reply create_configmap(const client::Config& cfg, const std::string& name, json::object labels = {},
                       const std::string& ns = "default", const std::string& query = {}) {
    json::object cm{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}, {"data", {{"k", "v"}}}};
    if (!labels.empty()) cm["metadata"].as_object()["labels"] = std::move(labels);
    return send(cfg, http::verb::post, "/api/v1/namespaces/" + ns + "/configmaps" + query, json::serialize(cm));
}

/// A port nothing listens on.
std::uint16_t closed_port() {
    asio::io_context ioc;
    asio::ip::tcp::acceptor a(ioc, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    return a.local_endpoint().port();
}

struct Fixture {
    ApiServer server;
    WebhookServer hooks{scripted};
    client::Config cfg;
    Fixture() {
        server.start();
        cfg = server.config();
    }
    bool stored(const std::string& name, const std::string& ns = "default") {
        try {
            server.store().get({"", "v1", "configmaps"}, ns, name);
            return true;
        } catch (const StoreError&) {
            return false;
        }
    }
};

} // namespace admission_test

using namespace admission_test;

TEST_CASE("a validating webhook's refusal fails the write with kube-apiserver's words and code") {
    Fixture f;
    register_webhooks(f.server, false, "deny", json::array{
        hook("deny.example.com", f.hooks.url("/deny"), f.hooks.ca_bundle(),
             {rule({"CREATE"}, {""}, {"v1"}, {"configmaps"})}, {{"objectSelector", {{"matchLabels", {{"hook", "deny"}}}}}}),
        hook("forbid.example.com", f.hooks.url("/deny-forbidden"), f.hooks.ca_bundle(),
             {rule({"CREATE"}, {""}, {"v1"}, {"configmaps"})}, {{"objectSelector", {{"matchLabels", {{"hook", "forbid"}}}}}}),
        hook("silent.example.com", f.hooks.url("/deny-silently"), f.hooks.ca_bundle(),
             {rule({"CREATE"}, {""}, {"v1"}, {"configmaps"})}, {{"objectSelector", {{"matchLabels", {{"hook", "silent"}}}}}})});

    auto r = create_configmap(f.cfg, "a", {{"hook", "deny"}});
    CHECK(r.code == 400);
    CHECK(r.message() == "admission webhook \"deny.example.com\" denied the request: no thanks");
    CHECK_FALSE(f.stored("a"));

    r = create_configmap(f.cfg, "b", {{"hook", "forbid"}});
    CHECK(r.code == 403);
    CHECK(api::string_at(r.body, {"reason"}) == "Forbidden");
    CHECK(r.message() == "admission webhook \"forbid.example.com\" denied the request: not here");

    r = create_configmap(f.cfg, "c", {{"hook", "silent"}});
    CHECK(r.code == 400);
    CHECK(r.message() == "admission webhook \"silent.example.com\" denied the request without explanation");

    CHECK(create_configmap(f.cfg, "d").code == 201);  // selected by none
    CHECK(f.stored("d"));
}

TEST_CASE("the AdmissionReview carries the request: operation, resource, kind, namespace, user, object, options") {
    Fixture f;
    register_webhooks(f.server, false, "record", json::array{hook("record.example.com", f.hooks.url("/record"),
                                                                  f.hooks.ca_bundle(), configmap_rules)});
    REQUIRE(create_configmap(f.cfg, "a").code == 201);
    auto got = f.hooks.received("/record");
    REQUIRE(got.size() == 1);
    CHECK(got[0].target == "/record?timeout=10s");
    const auto& rq = got[0].review.at("request");
    CHECK(got[0].review.at("apiVersion") == "admission.k8s.io/v1");
    CHECK(got[0].review.at("kind") == "AdmissionReview");
    CHECK(rq.at("operation") == "CREATE");
    CHECK(rq.at("namespace") == "default");
    CHECK(rq.at("name") == "a");
    CHECK(rq.at("kind") == json::value{{"group", ""}, {"version", "v1"}, {"kind", "ConfigMap"}});
    CHECK(rq.at("resource") == json::value{{"group", ""}, {"version", "v1"}, {"resource", "configmaps"}});
    CHECK(rq.at("userInfo").at("username") == "sandbox-admin");
    CHECK(rq.at("dryRun") == false);
    CHECK(rq.at("oldObject").is_null());
    CHECK(rq.at("options").at("kind") == "CreateOptions");
    CHECK(api::string_at(rq.at("object"), {"data", "k"}) == "v");
    CHECK_FALSE(api::string_at(rq, {"uid"}).empty());
}

TEST_CASE("a mutating webhook's patch is what is stored, and validating webhooks see the mutated object") {
    Fixture f;
    register_webhooks(f.server, true, "label", json::array{hook("label.example.com", f.hooks.url("/label"),
                                                                f.hooks.ca_bundle(), configmap_rules)});
    register_webhooks(f.server, false, "require", json::array{hook("require.example.com", f.hooks.url("/require-label"),
                                                                   f.hooks.ca_bundle(), configmap_rules)});
    auto r = create_configmap(f.cfg, "a");
    REQUIRE(r.code == 201);
    CHECK(api::string_at(r.body, {"metadata", "labels", "mutated"}) == "yes");
    auto stored = f.server.store().get({"", "v1", "configmaps"}, "default", "a");
    CHECK(api::string_at(stored, {"metadata", "labels", "mutated"}) == "yes");
    // The validating webhook saw what is stored (uid and all), not the request's body.
    auto seen = f.hooks.received("/require-label");
    REQUIRE(seen.size() == 1);
    CHECK(api::string_at(seen[0].review.at("request").at("object"), {"metadata", "labels", "mutated"}) == "yes");
    CHECK_FALSE(api::string_at(seen[0].review.at("request").at("object"), {"metadata", "uid"}).empty());
}

TEST_CASE("mutating webhooks run before validation: one that adds the containers makes a pod without any valid") {
    Fixture f;
    const std::string pod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{}})";
    auto before = send(f.cfg, http::verb::post, "/api/v1/namespaces/default/pods", pod);
    CHECK(before.code == 422);
    register_webhooks(f.server, true, "containers", json::array{hook("containers.example.com", f.hooks.url("/add-container"),
        f.hooks.ca_bundle(), {rule({"CREATE"}, {""}, {"v1"}, {"pods"})})});
    auto r = send(f.cfg, http::verb::post, "/api/v1/namespaces/default/pods", pod);
    REQUIRE(r.code == 201);
    CHECK(r.body.at("spec").at("containers").as_array().size() == 1);
    // Defaults were applied to what the webhook added (it ran before the strategy).
    CHECK(api::string_at(r.body.at("spec").at("containers").as_array()[0], {"terminationMessagePath"}) == "/dev/termination-log");
}

TEST_CASE("webhook warnings come back as Warning headers") {
    Fixture f;
    register_webhooks(f.server, false, "warn", json::array{hook("warn.example.com", f.hooks.url("/warn"),
                                                                f.hooks.ca_bundle(), configmap_rules)});
    auto r = create_configmap(f.cfg, "a");
    REQUIRE(r.code == 201);
    REQUIRE(r.warnings.size() == 1);
    CHECK(r.warnings[0] == "299 - \"the widget field is deprecated\"");
}

TEST_CASE("rules select by operation, group, version, resource, subresource and scope") {
    Fixture f;
    register_webhooks(f.server, false, "rules", json::array{
        hook("update-only.example.com", f.hooks.url("/update-only"), f.hooks.ca_bundle(), {rule({"UPDATE"}, {""}, {"v1"}, {"configmaps"})}),
        hook("status.example.com", f.hooks.url("/status"), f.hooks.ca_bundle(), {rule({"*"}, {"*"}, {"*"}, {"*/status"})}),
        hook("cluster.example.com", f.hooks.url("/cluster"), f.hooks.ca_bundle(), {rule({"CREATE"}, {"*"}, {"*"}, {"*"}, "Cluster")}),
        hook("namespaced.example.com", f.hooks.url("/namespaced"), f.hooks.ca_bundle(), {rule({"CREATE"}, {"*"}, {"*"}, {"*"}, "Namespaced")}),
        hook("everything.example.com", f.hooks.url("/everything"), f.hooks.ca_bundle(), {rule({"*"}, {"*"}, {"*"}, {"*/*"})})});

    REQUIRE(create_configmap(f.cfg, "a").code == 201);
    CHECK(f.hooks.received("/update-only").empty());
    CHECK(f.hooks.received("/cluster").empty());
    CHECK(f.hooks.received("/namespaced").size() == 1);
    REQUIRE(send(f.cfg, http::verb::patch, "/api/v1/namespaces/default/configmaps/a", R"({"data":{"k":"w"}})",
                 "application/merge-patch+json").code == 200);
    CHECK(f.hooks.received("/update-only").size() == 1);

    // A Namespace is cluster-scoped: Cluster selects it, Namespaced does not.
    REQUIRE(send(f.cfg, http::verb::post, "/api/v1/namespaces", R"({"metadata":{"name":"n1"}})").code == 201);
    CHECK(f.hooks.received("/cluster").size() == 1);
    CHECK(f.hooks.received("/namespaced").size() == 1);
    CHECK(f.hooks.received("/cluster")[0].review.at("request").at("namespace") == "n1");

    // pods/status is selected by */status and */*, and not by "*".
    f.server.store().create({"", "v1", "pods"}, "default", json::parse(
        R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox"}]}})"));
    auto pod = f.server.store().get({"", "v1", "pods"}, "default", "p");
    pod.as_object()["status"].as_object()["message"] = "hello";
    auto before = f.hooks.received("/everything").size();
    REQUIRE(send(f.cfg, http::verb::put, "/api/v1/namespaces/default/pods/p/status", json::serialize(pod)).code == 200);
    auto status = f.hooks.received("/status");
    REQUIRE(status.size() == 1);
    CHECK(status[0].review.at("request").at("subResource") == "status");
    CHECK(status[0].review.at("request").at("kind").at("kind") == "Pod");
    CHECK(status[0].review.at("request").at("operation") == "UPDATE");
    CHECK(f.hooks.received("/everything").size() == before + 1);
}

TEST_CASE("namespaceSelector matches the labels of the object's namespace, objectSelector those of the object") {
    Fixture f;
    f.server.store().create({"", "v1", "namespaces"}, "", json::parse(R"({"metadata":{"name":"watched","labels":{"hooks":"on"}}})"));
    f.server.store().create({"", "v1", "namespaces"}, "", json::parse(R"({"metadata":{"name":"quiet"}})"));
    register_webhooks(f.server, false, "selectors", json::array{
        hook("ns.example.com", f.hooks.url("/ns"), f.hooks.ca_bundle(), {rule({"CREATE"}, {"*"}, {"*"}, {"configmaps", "namespaces"})},
             {{"namespaceSelector", {{"matchLabels", {{"hooks", "on"}}}}}}),
        hook("obj.example.com", f.hooks.url("/obj"), f.hooks.ca_bundle(), configmap_rules,
             {{"objectSelector", {{"matchExpressions", json::array{json::object{
                 {"key", "tier"}, {"operator", "In"}, {"values", json::array{"web"}}}}}}}})});
    REQUIRE(create_configmap(f.cfg, "a", {}, "quiet").code == 201);
    CHECK(f.hooks.received("/ns").empty());
    REQUIRE(create_configmap(f.cfg, "a", {}, "watched").code == 201);
    CHECK(f.hooks.received("/ns").size() == 1);
    // A Namespace is matched by its own labels.
    REQUIRE(send(f.cfg, http::verb::post, "/api/v1/namespaces", R"({"metadata":{"name":"n2","labels":{"hooks":"on"}}})").code == 201);
    CHECK(f.hooks.received("/ns").size() == 2);

    CHECK(f.hooks.received("/obj").empty());
    REQUIRE(create_configmap(f.cfg, "b", {{"tier", "web"}}).code == 201);
    CHECK(f.hooks.received("/obj").size() == 1);
    // An update that drops the label is still heard of: the old object has it.
    REQUIRE(send(f.cfg, http::verb::patch, "/api/v1/namespaces/default/configmaps/b", R"({"metadata":{"labels":null}})",
                 "application/merge-patch+json").code == 200);
    CHECK(f.hooks.received("/obj").size() == 2);
    REQUIRE(send(f.cfg, http::verb::patch, "/api/v1/namespaces/default/configmaps/b", R"({"data":{"k":"x"}})",
                 "application/merge-patch+json").code == 200);
    CHECK(f.hooks.received("/obj").size() == 2);
}

TEST_CASE("matchPolicy Equivalent calls a webhook whose rule names another version, with the object in that version") {
    Fixture f;
    f.server.store().create({"apiextensions.k8s.io", "v1", "customresourcedefinitions"}, "", json::parse(R"({
      "metadata": {"name": "widgets.example.com"},
      "spec": {"group": "example.com", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
          {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
          {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})"));
    register_webhooks(f.server, false, "versions", json::array{
        hook("equivalent.example.com", f.hooks.url("/equivalent"), f.hooks.ca_bundle(), {rule({"CREATE"}, {"example.com"}, {"v2"}, {"widgets"})}),
        hook("exact.example.com", f.hooks.url("/exact"), f.hooks.ca_bundle(), {rule({"CREATE"}, {"example.com"}, {"v2"}, {"widgets"})},
             {{"matchPolicy", "Exact"}})});
    auto r = send(f.cfg, http::verb::post, "/apis/example.com/v1/namespaces/default/widgets",
                  R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}})");
    REQUIRE(r.code == 201);
    CHECK(f.hooks.received("/exact").empty());
    auto got = f.hooks.received("/equivalent");
    REQUIRE(got.size() == 1);
    const auto& rq = got[0].review.at("request");
    CHECK(rq.at("resource").at("version") == "v2");
    CHECK(rq.at("requestResource").at("version") == "v1");
    CHECK(rq.at("object").at("apiVersion") == "example.com/v2");
}

TEST_CASE("failurePolicy Fail refuses a write whose webhook is down, slow or answers nonsense; Ignore lets it through") {
    Fixture f;
    const auto down = closed_port();
    const std::string down_url = "https://127.0.0.1:" + std::to_string(down) + "/down";
    auto hooks = [&](const std::string& policy) {
        return json::array{
            hook("down.example.com", down_url, f.hooks.ca_bundle(), configmap_rules,
                 {{"failurePolicy", policy}, {"objectSelector", {{"matchLabels", {{"case", "down"}}}}}}),
            hook("slow.example.com", f.hooks.url("/slow"), f.hooks.ca_bundle(), configmap_rules,
                 {{"failurePolicy", policy}, {"timeoutSeconds", 1}, {"objectSelector", {{"matchLabels", {{"case", "slow"}}}}}}),
            hook("garbage.example.com", f.hooks.url("/garbage"), f.hooks.ca_bundle(), configmap_rules,
                 {{"failurePolicy", policy}, {"objectSelector", {{"matchLabels", {{"case", "garbage"}}}}}}),
            hook("uid.example.com", f.hooks.url("/wrong-uid"), f.hooks.ca_bundle(), configmap_rules,
                 {{"failurePolicy", policy}, {"objectSelector", {{"matchLabels", {{"case", "uid"}}}}}}),
            hook("untrusted.example.com", f.hooks.url("/allow"), client::base64_encode(f.server.ca().cert_pem()), configmap_rules,
                 {{"failurePolicy", policy}, {"objectSelector", {{"matchLabels", {{"case", "untrusted"}}}}}})};
    };
    register_webhooks(f.server, false, "fail", hooks("Fail"));

    auto r = create_configmap(f.cfg, "a", {{"case", "down"}});
    CHECK(r.code == 500);
    CHECK(api::string_at(r.body, {"reason"}) == "InternalError");
    CHECK(r.message() == "Internal error occurred: failed calling webhook \"down.example.com\": failed to call webhook: Post \"" +
                             down_url + "?timeout=10s\": dial tcp 127.0.0.1:" + std::to_string(down) + ": connect: connection refused");
    r = create_configmap(f.cfg, "b", {{"case", "slow"}});
    CHECK(r.code == 500);
    CHECK(r.message() == "Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post \"" +
                             f.hooks.url("/slow") + "?timeout=1s\": context deadline exceeded");
    r = create_configmap(f.cfg, "c", {{"case", "garbage"}});
    CHECK(r.code == 500);
    CHECK(r.message() == "Internal error occurred: failed calling webhook \"garbage.example.com\": failed to call webhook: "
                         "couldn't get version/kind; json parse error: invalid character 't' looking for beginning of value");
    r = create_configmap(f.cfg, "d", {{"case", "uid"}});
    CHECK(r.code == 500);
    CHECK(r.message().starts_with("Internal error occurred: failed calling webhook \"uid.example.com\": "
                                  "received invalid webhook response: expected response.uid=\""));
    CHECK(r.message().ends_with("\", got \"not-the-uid\""));
    r = create_configmap(f.cfg, "e", {{"case", "untrusted"}});
    CHECK(r.code == 500);
    CHECK(r.message().ends_with("tls: failed to verify certificate: x509: certificate signed by unknown authority"));
    for (const char* name : {"a", "b", "c", "d", "e"}) CHECK_FALSE(f.stored(name));

    f.server.store().remove({"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"}, "", "fail");
    register_webhooks(f.server, false, "ignore", hooks("Ignore"));
    for (const char* c : {"down", "slow", "garbage", "uid", "untrusted"}) {
        CAPTURE(c);
        CHECK(create_configmap(f.cfg, std::string("ok-") + c, {{"case", c}}).code == 201);
    }
}

TEST_CASE("a dry run tells webhooks dryRun and stores nothing") {
    Fixture f;
    register_webhooks(f.server, true, "dry", json::array{
        hook("label.example.com", f.hooks.url("/label"), f.hooks.ca_bundle(), configmap_rules, {{"sideEffects", "NoneOnDryRun"}})});
    auto r = create_configmap(f.cfg, "a", {}, "default", "?dryRun=All");
    REQUIRE(r.code == 201);
    CHECK(api::string_at(r.body, {"metadata", "labels", "mutated"}) == "yes");
    CHECK_FALSE(f.stored("a"));
    auto got = f.hooks.received("/label");
    REQUIRE(got.size() == 1);
    CHECK(got[0].review.at("request").at("dryRun") == true);
}

TEST_CASE("webhook configurations get kube-apiserver's defaults and are refused with its field errors") {
    Fixture f;
    auto r = send(f.cfg, http::verb::post, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", R"({
      "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": {"name": "d"},
      "webhooks": [{"name": "d.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"namespace": "default", "name": "hooks"}},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}]})");
    REQUIRE(r.code == 201);
    const auto& h = r.body.at("webhooks").as_array()[0];
    CHECK(h.at("failurePolicy") == "Fail");
    CHECK(h.at("matchPolicy") == "Equivalent");
    CHECK(h.at("timeoutSeconds") == 10);
    CHECK(h.at("reinvocationPolicy") == "Never");
    CHECK(h.at("namespaceSelector") == json::object());
    CHECK(h.at("objectSelector") == json::object());
    CHECK(h.at("rules").as_array()[0].at("scope") == "*");
    CHECK(h.at("clientConfig").at("service").at("port") == 443);

    r = send(f.cfg, http::verb::post, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", R"({
      "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "bad"},
      "webhooks": [
        {"name": "a.example.com", "sideEffects": "Some", "admissionReviewVersions": ["v1"], "timeoutSeconds": 31,
         "clientConfig": {"url": "http://127.0.0.1:1/x"}},
        {"name": "a.example.com", "failurePolicy": "Sometimes", "clientConfig": {"url": "https://127.0.0.1:1/x"}}]})");
    CHECK(r.code == 422);
    CHECK(r.message() ==
          "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"bad\" is invalid: ["
          "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\", "
          "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds, "
          "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme, "
          "webhooks[1].failurePolicy: Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\", "
          "webhooks[1].sideEffects: Required value: must specify one of None, NoneOnDryRun, "
          "webhooks[1].admissionReviewVersions: Required value: must specify one of v1, v1beta1, "
          "webhooks[1].name: Duplicate value: \"a.example.com\"]");
}

TEST_CASE("reinvocationPolicy IfNeeded calls a webhook once more when a later webhook changed the object") {
    Fixture f;
    register_webhooks(f.server, true, "a-first", json::array{
        hook("again.example.com", f.hooks.url("/again"), f.hooks.ca_bundle(), configmap_rules, {{"reinvocationPolicy", "IfNeeded"}}),
        hook("once.example.com", f.hooks.url("/once"), f.hooks.ca_bundle(), configmap_rules)});
    register_webhooks(f.server, true, "b-second", json::array{
        hook("label.example.com", f.hooks.url("/label"), f.hooks.ca_bundle(), configmap_rules)});
    REQUIRE(create_configmap(f.cfg, "a").code == 201);
    auto again = f.hooks.received("/again");
    REQUIRE(again.size() == 2);
    CHECK(api::string_at(again[1].review.at("request").at("object"), {"metadata", "labels", "mutated"}) == "yes");
    CHECK(f.hooks.received("/once").size() == 1);
    CHECK(f.hooks.received("/label").size() == 1);
    // Configurations run by name, webhooks in order: again, once, then label.
    auto all = f.hooks.received();
    REQUIRE(all.size() == 4);
    CHECK(all[0].path == "/again");
    CHECK(all[1].path == "/once");
    CHECK(all[2].path == "/label");
}

TEST_CASE("updates, patches and deletes are admitted with the old object; a refused delete keeps the object") {
    Fixture f;
    REQUIRE(create_configmap(f.cfg, "a", {{"keep", "yes"}}).code == 201);
    register_webhooks(f.server, false, "writes", json::array{
        hook("record.example.com", f.hooks.url("/record"), f.hooks.ca_bundle(), configmap_rules),
        hook("keep.example.com", f.hooks.url("/deny"), f.hooks.ca_bundle(), {rule({"DELETE"}, {""}, {"v1"}, {"configmaps"})},
             {{"objectSelector", {{"matchLabels", {{"keep", "yes"}}}}}})});
    REQUIRE(send(f.cfg, http::verb::patch, "/api/v1/namespaces/default/configmaps/a", R"({"data":{"k":"patched"}})",
                 "application/merge-patch+json").code == 200);
    auto got = f.hooks.received("/record");
    REQUIRE(got.size() == 1);
    CHECK(got[0].review.at("request").at("operation") == "UPDATE");
    CHECK(got[0].review.at("request").at("options").at("kind") == "PatchOptions");
    CHECK(api::string_at(got[0].review.at("request").at("object"), {"data", "k"}) == "patched");
    CHECK(api::string_at(got[0].review.at("request").at("oldObject"), {"data", "k"}) == "v");

    auto r = send(f.cfg, http::verb::delete_, "/api/v1/namespaces/default/configmaps/a");
    CHECK(r.code == 400);
    CHECK(r.message() == "admission webhook \"keep.example.com\" denied the request: no thanks");
    CHECK(f.stored("a"));
    got = f.hooks.received("/record");
    REQUIRE(got.size() == 2);
    CHECK(got[1].review.at("request").at("operation") == "DELETE");
    CHECK(got[1].review.at("request").at("object").is_null());
    CHECK(api::string_at(got[1].review.at("request").at("oldObject"), {"data", "k"}) == "patched");

    REQUIRE(create_configmap(f.cfg, "b").code == 201);
    CHECK(send(f.cfg, http::verb::delete_, "/api/v1/namespaces/default/configmaps/b").code == 200);
    CHECK_FALSE(f.stored("b"));
}

TEST_CASE("a webhook that calls the API server back while it decides does not hang it") {
    ApiServer server;
    server.start();
    auto cfg = server.config();
    std::atomic<int> seen_namespaces{-1};
    WebhookServer hooks([&](const std::string& path, const json::value& review) -> Answer {
        if (path == "/callback") {
            // What many webhooks do: read the cluster before answering (here on the webhook's own thread).
            auto r = send(cfg, http::verb::get, "/api/v1/namespaces");
            seen_namespaces = static_cast<int>(r.body.at("items").as_array().size());
            auto w = send(cfg, http::verb::post, "/api/v1/namespaces/default/configmaps",
                          R"({"metadata":{"name":"written-by-webhook"}})");
            if (w.code != 201) return {denied(review, {{"message", "callback write failed: " + w.message()}})};
        }
        return {allowed(review)};
    });
    register_webhooks(server, false, "callback", json::array{
        hook("callback.example.com", hooks.url("/callback"), hooks.ca_bundle(), {rule({"CREATE"}, {""}, {"v1"}, {"secrets"})})});
    auto r = send(cfg, http::verb::post, "/api/v1/namespaces/default/secrets", R"({"metadata":{"name":"s"}})");
    CHECK(r.code == 201);
    CHECK(seen_namespaces.load() >= 4);
    CHECK(server.store().get({"", "v1", "configmaps"}, "default", "written-by-webhook").is_object());
}

TEST_CASE("a webhook named by its Service is called at a ready endpoint's address, trusted for <name>.<namespace>.svc") {
    ApiServer server;
    server.start();
    auto cfg = server.config();
    WebhookServer hooks(scripted, "127.244.0.77", {"hooks.default.svc"});
    server.store().create({"", "v1", "services"}, "default", json::parse(
        R"({"metadata":{"name":"hooks"},"spec":{"ports":[{"name":"https","port":443,"targetPort":9443}]}})"));
    server.store().create({"", "v1", "endpoints"}, "default", json::value{
        {"metadata", {{"name", "hooks"}}},
        {"subsets", json::array{json::object{{"addresses", json::array{json::object{{"ip", "127.244.0.77"}}}},
                                             {"ports", json::array{json::object{{"name", "https"}, {"port", hooks.port()}}}}}}}});
    json::object via_service{{"name", "svc.example.com"},
                             {"clientConfig", {{"service", {{"namespace", "default"}, {"name", "hooks"}, {"path", "/deny"}}},
                                               {"caBundle", hooks.ca_bundle()}}},
                             {"rules", configmap_rules},
                             {"sideEffects", "None"},
                             {"admissionReviewVersions", json::array{"v1"}}};
    register_webhooks(server, false, "svc", json::array{via_service});
    auto r = create_configmap(cfg, "a");
    CHECK(r.code == 400);
    CHECK(r.message() == "admission webhook \"svc.example.com\" denied the request: no thanks");
    REQUIRE(hooks.received("/deny").size() == 1);
    CHECK(hooks.received("/deny")[0].target == "/deny?timeout=10s");

    // Without endpoints the call fails as kube-apiserver's resolver does.
    server.store().remove({"", "v1", "endpoints"}, "default", "hooks");
    r = create_configmap(cfg, "b");
    CHECK(r.code == 500);
    CHECK(r.message() == "Internal error occurred: failed calling webhook \"svc.example.com\": failed to call webhook: "
                         "Post \"https://hooks.default.svc:443/deny?timeout=10s\": no endpoints available for service \"hooks\"");
}

TEST_CASE("an object changed while its update was being admitted is admitted again, unless the client named its resourceVersion") {
    ApiServer server;
    server.start();
    auto cfg = server.config();
    std::atomic<int> calls{0}, bumps{0};
    const ResourceId configmaps{"", "v1", "configmaps"};
    // The first call of each round changes the object behind the write's back (in-process,
    // not admitted), each time differently (a patch that changes nothing is not a change).
    WebhookServer hooks([&](const std::string&, const json::value& review) -> Answer {
        if (calls++ == 0)
            server.store().patch(configmaps, "default", "a", client::PatchType::Merge,
                                 json::value{{"metadata", {{"labels", {{"bumped", "yes"}}}}},
                                             {"data", {{"bumps", std::to_string(++bumps)}}}});
        return {allowed(review)};
    });
    server.store().create(configmaps, "default", json::parse(R"({"metadata":{"name":"a"},"data":{"k":"v"}})"));
    register_webhooks(server, true, "bump", json::array{
        hook("bump.example.com", hooks.url("/bump"), hooks.ca_bundle(), {rule({"UPDATE"}, {""}, {"v1"}, {"configmaps"})})});

    auto r = send(cfg, http::verb::patch, "/api/v1/namespaces/default/configmaps/a", R"({"data":{"k":"patched"}})",
                  "application/merge-patch+json");
    REQUIRE(r.code == 200);
    CHECK(calls.load() == 2);  // heard of again, on the object as it now is
    CHECK(api::string_at(r.body, {"metadata", "labels", "bumped"}) == "yes");
    CHECK(api::string_at(r.body, {"data", "k"}) == "patched");

    // A PUT that names the resourceVersion it read is refused instead (after being admitted on
    // the new object, as GuaranteedUpdate's retry admits it before it compares versions).
    calls = 0;
    auto current = server.store().get(configmaps, "default", "a");
    current.as_object()["data"].as_object()["k"] = "put";
    r = send(cfg, http::verb::put, "/api/v1/namespaces/default/configmaps/a", json::serialize(current));
    CHECK(r.code == 409);
    CHECK(r.message() ==
          "Operation cannot be fulfilled on configmaps \"a\": the object has been modified; please apply your changes to the latest version and try again");
    CHECK(calls.load() == 2);
}
