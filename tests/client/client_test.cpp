// Specification of vck::client::Client, proven against the sandbox's HTTPS API server
// (real TLS, real authentication, real server semantics).
#include <vck/api/core_v1.hpp>
#include <vck/client/client.hpp>
#include <vck/sandbox/server/api_server.hpp>

#include "../support/sync.hpp"

#include <doctest.h>

#include <chrono>
#include <map>

using namespace vck;
using client::ApiError;
using client::Client;
using client::ErrorKind;
using test::sync;
namespace json = boost::json;

namespace vck::api {
/// A ConfigMap as a type that wants numbers in its data (in vck::api, where the described
/// structs' conversions are found).
struct NumericData {
    ObjectMeta metadata;
    std::map<std::string, int> data;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(NumericData, (), (metadata, data))
} // namespace vck::api

namespace {

const api::ResourceType configmaps{"", "v1", "configmaps", "ConfigMap", true};
const api::ResourceType pods{"", "v1", "pods", "Pod", true};
const api::ResourceType namespaces{"", "v1", "namespaces", "Namespace", false};

/// One sandbox for the whole file: starting one costs a certificate generation.
sandbox::ApiServer& server() {
    static sandbox::ApiServer s = [] {
        sandbox::ApiServer::Options o;
        o.bookmark_interval = std::chrono::seconds(3600);  // tests send bookmarks by hand
        return sandbox::ApiServer(o);
    }();
    static bool started = (s.start(), true);
    (void)started;
    return s;
}

json::value configmap(std::string_view name, std::string_view data = "v") {
    return json::value{{"apiVersion", "v1"},
                       {"kind", "ConfigMap"},
                       {"metadata", {{"name", name}}},
                       {"data", {{"k", data}}}};
}

/// Runs `f` and returns the ApiError it throws (failing the test if it does not throw one).
template <class F>
ApiError error_of(F&& f) {
    try {
        f();
    } catch (const ApiError& e) {
        return e;
    }
    FAIL("expected an ApiError");
    throw std::logic_error("unreachable");
}

struct Fixture {
    boost::asio::io_context ioc;
    client::Config cfg = server().config();
    std::string ns;
    std::unique_ptr<Client> c;

    explicit Fixture(std::string namespace_name) : ns(std::move(namespace_name)) {
        cfg.max_retries = 3;
        cfg.retry_base = std::chrono::milliseconds(10);
        c = std::make_unique<Client>(ioc.get_executor(), cfg);
        try {
            sync(ioc, c->create(namespaces, "", json::value{{"metadata", {{"name", ns}}}}));
        } catch (const ApiError& e) {
            if (!e.is(ErrorKind::AlreadyExists)) throw;
        }
    }
};

} // namespace

TEST_CASE("create, get, update, patch and delete a namespaced object") {
    Fixture f("verbs");
    auto created = sync(f.ioc, f.c->create(configmaps, f.ns, configmap("a")));
    CHECK(api::string_at(created, {"metadata", "uid"}).size() > 0);
    auto got = sync(f.ioc, f.c->get(configmaps, f.ns, "a"));
    CHECK(got.at("data").at("k") == "v");

    got.as_object()["data"].as_object()["k"] = "w";
    auto updated = sync(f.ioc, f.c->replace(configmaps, f.ns, "a", got));
    CHECK(updated.at("data").at("k") == "w");

    auto merged = sync(f.ioc, f.c->patch(configmaps, f.ns, "a", client::PatchType::Merge,
                                         json::value{{"data", {{"m", "1"}}}}));
    CHECK(merged.at("data").at("m") == "1");
    auto jsonpatched = sync(f.ioc, f.c->patch(configmaps, f.ns, "a", client::PatchType::Json,
                                              json::parse(R"([{"op":"remove","path":"/data/m"}])")));
    CHECK_FALSE(jsonpatched.at("data").as_object().contains("m"));

    sync(f.ioc, f.c->remove(configmaps, f.ns, "a"));
    auto e = error_of([&] { sync(f.ioc, f.c->get(configmaps, f.ns, "a")); });
    CHECK(e.is(ErrorKind::NotFound));
    CHECK(std::string(e.what()).find("GET /api/v1/namespaces/verbs/configmaps/a") != std::string::npos);
    CHECK(e.server_message() == "configmaps \"a\" not found");
}

TEST_CASE("create with generateName gets a unique name from the server") {
    Fixture f("generate");
    json::value obj = configmap("");
    obj.as_object()["metadata"] = json::value{{"generateName", "gen-"}};
    auto a = sync(f.ioc, f.c->create(configmaps, f.ns, obj));
    auto b = sync(f.ioc, f.c->create(configmaps, f.ns, obj));
    auto na = api::string_at(a, {"metadata", "name"});
    CHECK(na.substr(0, 4) == "gen-");
    CHECK(na.size() > 4);
    CHECK(na != api::string_at(b, {"metadata", "name"}));
}

TEST_CASE("an update with a stale resourceVersion is a Conflict") {
    Fixture f("conflict");
    auto v1 = sync(f.ioc, f.c->create(configmaps, f.ns, configmap("c")));
    auto fresh = v1;
    fresh.as_object()["data"].as_object()["k"] = "2";
    sync(f.ioc, f.c->replace(configmaps, f.ns, "c", fresh));
    v1.as_object()["data"].as_object()["k"] = "3";
    auto e = error_of([&] { sync(f.ioc, f.c->replace(configmaps, f.ns, "c", v1)); });
    CHECK(e.is(ErrorKind::Conflict));
    CHECK(e.code() == 409);
    CHECK(e.server_message().find("the object has been modified") != std::string::npos);
}

TEST_CASE("creating an existing object is AlreadyExists and an invalid name is Invalid") {
    Fixture f("errors");
    sync(f.ioc, f.c->create(configmaps, f.ns, configmap("dup")));
    CHECK(error_of([&] { sync(f.ioc, f.c->create(configmaps, f.ns, configmap("dup"))); }).is(ErrorKind::AlreadyExists));
    auto inv = error_of([&] { sync(f.ioc, f.c->create(configmaps, f.ns, configmap("Not_A_Name"))); });
    CHECK(inv.is(ErrorKind::Invalid));
    CHECK(inv.code() == 422);
    REQUIRE(inv.status().details.has_value());
    CHECK_FALSE(inv.status().details->causes.empty());
}

TEST_CASE("the status subresource takes only status and a PUT of the object keeps unknown fields") {
    Fixture f("typed");
    api::Pod pod;
    pod.metadata.name = "p";
    pod.metadata.namespace_ = f.ns;
    api::Container c;
    c.name = "main";
    c.image = "busybox";
    pod.spec.containers.push_back(c);
    pod.spec.unknown["dnsPolicy"] = "ClusterFirst";        // a field our structs do not model
    pod.spec.unknown["hostname"] = "kept";
    auto created = sync(f.ioc, f.c->create(pod));
    CHECK(created.spec.unknown.at("hostname") == "kept");

    created.metadata.labels["touched"] = "yes";
    auto replaced = sync(f.ioc, f.c->replace(created));
    CHECK(replaced.metadata.labels.at("touched") == "yes");
    auto raw = sync(f.ioc, f.c->get(pods, f.ns, "p"));
    CHECK(raw.at("spec").at("hostname") == "kept");
    CHECK(raw.at("spec").at("dnsPolicy") == "ClusterFirst");

    api::PodStatus st;
    st.phase = "Running";
    replaced.status = st;
    replaced.spec.containers[0].image = "ignored-by-status";
    auto after = sync(f.ioc, f.c->replace_status(replaced));
    CHECK(after.status->phase == "Running");
    CHECK(after.spec.containers[0].image == "busybox");
}

TEST_CASE("strategic merge patch merges containers by name on a built-in type") {
    Fixture f("strategic");
    json::value pod = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"s"},
      "spec":{"containers":[{"name":"a","image":"one"},{"name":"b","image":"two"}]}})");
    sync(f.ioc, f.c->create(pods, f.ns, pod));
    auto out = sync(f.ioc, f.c->patch(pods, f.ns, "s", client::PatchType::StrategicMerge,
                                      json::parse(R"({"spec":{"containers":[{"name":"b","image":"three"}]}})")));
    auto& cs = out.at("spec").at("containers").as_array();
    REQUIRE(cs.size() == 2);
    CHECK(cs[0].at("image") == "one");
    CHECK(cs[1].at("image") == "three");
}

TEST_CASE("delete honours preconditions and deletecollection honours selectors") {
    Fixture f("deleting");
    auto obj = sync(f.ioc, f.c->create(configmaps, f.ns, configmap("x")));
    auto e = error_of([&] {
        sync(f.ioc, f.c->remove(configmaps, f.ns, "x", client::DeleteOptions().if_uid("not-the-uid")));
    });
    CHECK(e.is(ErrorKind::Conflict));
    sync(f.ioc, f.c->remove(configmaps, f.ns, "x",
                            client::DeleteOptions().if_uid(std::string(api::string_at(obj, {"metadata", "uid"})))));

    for (auto name : {"l1", "l2", "keep"}) {
        auto cm = configmap(name);
        if (std::string_view(name) != "keep") cm.as_object()["metadata"].as_object()["labels"] = {{"sweep", "yes"}};
        sync(f.ioc, f.c->create(configmaps, f.ns, cm));
    }
    sync(f.ioc, f.c->remove_collection(configmaps, f.ns, client::ListOptions().labels("sweep=yes")));
    auto left = sync(f.ioc, f.c->list(configmaps, f.ns));
    REQUIRE(left.at("items").as_array().size() == 1);
    CHECK(api::string_at(left.at("items").at(0), {"metadata", "name"}) == "keep");
}

TEST_CASE("a list of 1,200 objects pages through continue tokens at one resourceVersion") {
    Fixture f("paging");
    for (int i = 0; i < 1200; ++i) sync(f.ioc, f.c->create(configmaps, f.ns, configmap("cm-" + std::to_string(i))));
    auto page = sync(f.ioc, f.c->list(configmaps, f.ns, client::ListOptions().page(500)));
    CHECK(page.at("items").as_array().size() == 500);
    CHECK_FALSE(api::string_at(page, {"metadata", "continue"}).empty());

    // A write between pages does not show up in the rest of the snapshot.
    auto before = f.c->requests_sent();
    auto all = sync(f.ioc, f.c->list_all(configmaps, f.ns, client::ListOptions().page(500)));
    CHECK(f.c->requests_sent() - before == 3);
    CHECK(all.at("items").as_array().size() == 1200);
    std::set<std::string> names;
    for (auto& it : all.at("items").as_array()) names.emplace(api::string_at(it, {"metadata", "name"}));
    CHECK(names.size() == 1200);
    // Pages are parsed into arenas released page by page; the joined list owns its memory.
    CHECK_FALSE(all.storage().is_deallocate_trivial());
    CHECK_FALSE(all.at("items").at(0).storage().is_deallocate_trivial());

    // list_pages hands over each page in turn, in order, the last without a continue token.
    std::vector<std::size_t> sizes;
    std::string last_continue = "unset";
    sync(f.ioc, f.c->list_pages(configmaps, f.ns, client::ListOptions().page(500), [&](json::value& p) {
        sizes.push_back(p.at("items").as_array().size());
        last_continue = std::string(api::string_at(p, {"metadata", "continue"}));
    }));
    CHECK(sizes == std::vector<std::size_t>{500, 500, 200});
    CHECK(last_continue.empty());

    // A first page read at a version (resourceVersion + resourceVersionMatch) goes on with the
    // continue token alone: the API server refuses either beside it.
    auto rv = std::string(api::string_at(page, {"metadata", "resourceVersion"}));
    auto o = client::ListOptions().page(500).at(rv);
    o.resource_version_match = "NotOlderThan";
    auto at_rv = sync(f.ioc, f.c->list_all(configmaps, f.ns, o));
    CHECK(at_rv.at("items").as_array().size() == 1200);
}

TEST_CASE("list_typed_pages hands over typed items page by page, and a page with an item T rejects raises its DecodeError") {
    Fixture f("typed-paging");
    for (int i = 0; i < 7; ++i) {
        auto cm = configmap("cm-" + std::to_string(i));
        cm.as_object()["binaryData"] = json::object{{"b", "AAE="}};
        sync(f.ioc, f.c->create(configmaps, f.ns, std::move(cm)));
    }
    std::vector<std::string> names;
    std::vector<std::size_t> sizes;
    std::string rv;
    auto each_page = [&](client::TypedListPage<api::ConfigMap>& page) {
        sizes.push_back(page.items.size());
        for (auto& cm : page.items) {
            names.push_back(cm->metadata.name);
            CHECK(cm->data.at("k") == "v");
            CHECK(cm->metadata.unknown.contains("managedFields") == false);
        }
        rv = page.metadata.resourceVersion;
    };
    sync(f.ioc, f.c->list_typed_pages<api::ConfigMap>(configmaps, f.ns, client::ListOptions().page(3), true, each_page));
    CHECK(sizes == std::vector<std::size_t>{3, 3, 1});
    CHECK(names.size() == 7);
    CHECK(std::set<std::string>(names.begin(), names.end()).size() == 7);
    CHECK_FALSE(rv.empty());

    // A type whose data holds numbers: the fast path leaves the page to the DOM, whose
    // from_json names the field it rejects.
    CHECK_THROWS_WITH_AS(sync(f.ioc, f.c->list_typed_pages<api::NumericData>(configmaps, f.ns, client::ListOptions().page(500),
                                                                         false, [](auto&) { FAIL("no page expected"); })),
                         doctest::Contains("data.k"), api::DecodeError);
}

TEST_CASE("label and field selectors filter a list") {
    Fixture f("selectors");
    for (auto [name, tier] : {std::pair{"fa", "web"}, std::pair{"fb", "db"}, std::pair{"fc", "web"}}) {
        auto cm = configmap(name);
        cm.as_object()["metadata"].as_object()["labels"] = {{"tier", tier}};
        sync(f.ioc, f.c->create(configmaps, f.ns, cm));
    }
    auto web = sync(f.ioc, f.c->list(configmaps, f.ns, client::ListOptions().labels("tier in (web)")));
    CHECK(web.at("items").as_array().size() == 2);
    auto one = sync(f.ioc, f.c->list(configmaps, f.ns, client::ListOptions().fields("metadata.name=fb")));
    REQUIRE(one.at("items").as_array().size() == 1);
    CHECK(api::string_at(one.at("items").at(0), {"metadata", "labels", "tier"}) == "db");
}

TEST_CASE("a watch delivers ADDED, MODIFIED, DELETED and BOOKMARK events in order") {
    Fixture f("watching");
    auto list = sync(f.ioc, f.c->list(configmaps, f.ns));
    std::string rv(api::string_at(list, {"metadata", "resourceVersion"}));
    auto w = sync(f.ioc, f.c->watch(configmaps, f.ns, client::WatchOptions().since(rv).timeout(30).bookmarks(true)));

    std::jthread writer([&] {
        boost::asio::io_context ioc2;
        Client c2(ioc2.get_executor(), server().config());
        sync(ioc2, c2.create(configmaps, f.ns, configmap("w")));
        sync(ioc2, c2.patch(configmaps, f.ns, "w", client::PatchType::Merge, json::value{{"data", {{"k", "2"}}}}));
        server().store().bookmark();
        sync(ioc2, c2.remove(configmaps, f.ns, "w"));
    });
    std::vector<std::string> seen;
    std::string last_rv = rv;
    while (seen.size() < 4) {
        auto e = sync(f.ioc, w.next());
        INFO("events so far: ", seen.size());
        REQUIRE(e.has_value());
        seen.emplace_back(to_string(e->type));
        // Versions only move forward; a BOOKMARK carries the current one, which may be the
        // version of the event just before it.
        auto rv_now = std::stoll(std::string(e->resource_version()));
        if (e->type == client::WatchEventType::Bookmark) CHECK(rv_now >= std::stoll(last_rv));
        else CHECK(rv_now > std::stoll(last_rv));
        last_rv = std::string(e->resource_version());
    }
    writer.join();
    CHECK(seen == std::vector<std::string>{"ADDED", "MODIFIED", "BOOKMARK", "DELETED"});
    w.cancel();
}

TEST_CASE("a typed watch delivers the server's objects decoded as T, with Bookmark and Error events as JSON") {
    Fixture f("typed-watching");
    auto list = sync(f.ioc, f.c->list(configmaps, f.ns));
    std::string rv(api::string_at(list, {"metadata", "resourceVersion"}));
    auto w = sync(f.ioc, f.c->watch(configmaps, f.ns, client::WatchOptions().since(rv).timeout(30).bookmarks(true)));
    auto created = sync(f.ioc, f.c->create(configmaps, f.ns, configmap("t")));
    server().store().bookmark();
    sync(f.ioc, f.c->remove(configmaps, f.ns, "t"));

    auto added = sync(f.ioc, w.next_typed<api::ConfigMap>());
    REQUIRE(added.has_value());
    CHECK(added->type == client::WatchEventType::Added);
    REQUIRE(added->object);
    CHECK(api::to_json(*added->object) == api::to_json(api::from_json<api::ConfigMap>(created)));
    auto bookmark = sync(f.ioc, w.next_typed<api::ConfigMap>());
    REQUIRE(bookmark.has_value());
    CHECK(bookmark->type == client::WatchEventType::Bookmark);
    CHECK_FALSE(bookmark->object);
    CHECK(std::stoll(std::string(bookmark->resource_version())) >= std::stoll(std::string(added->resource_version())));
    auto deleted = sync(f.ioc, w.next_typed<api::ConfigMap>());
    REQUIRE(deleted.has_value());
    CHECK(deleted->type == client::WatchEventType::Deleted);
    CHECK(deleted->object->metadata.name == "t");
    CHECK_THROWS_AS(sync(f.ioc, w.next()), std::logic_error);  // read one way only
    w.cancel();
}

TEST_CASE("a watch from a compacted resourceVersion gets 410 Gone") {
    Fixture f("expired");
    auto first = sync(f.ioc, f.c->create(configmaps, f.ns, configmap("old")));
    std::string old_rv(api::string_at(first, {"metadata", "resourceVersion"}));
    sync(f.ioc, f.c->create(configmaps, f.ns, configmap("newer")));
    server().faults().compact();
    try {
        auto w = sync(f.ioc, f.c->watch(configmaps, f.ns, client::WatchOptions().since(old_rv).timeout(10)));
        auto e = sync(f.ioc, w.next());
        REQUIRE(e.has_value());
        REQUIRE(e->type == client::WatchEventType::Error);
        auto err = client::watch_error(*e, "watch");
        CHECK(err.is(ErrorKind::Gone));
        CHECK(err.code() == 410);
    } catch (const ApiError& e) {
        CHECK(e.is(ErrorKind::Gone));  // the real server may also refuse at the start
    }
}

TEST_CASE("Retry-After on a 429 is honoured and the request then succeeds") {
    Fixture f("retry-after");
    sync(f.ioc, f.c->create(configmaps, f.ns, configmap("r")));
    sandbox::FaultRule rule;
    rule.verb = "get";
    rule.resource = "configmaps";
    rule.code = 429;
    rule.retry_after_seconds = 1;
    server().faults().fail_next(rule);
    auto t0 = std::chrono::steady_clock::now();
    auto got = sync(f.ioc, f.c->get(configmaps, f.ns, "r"));
    CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::seconds(1));  // a lower bound: never flaky
    CHECK(got.at("data").at("k") == "v");
}

TEST_CASE("5xx answers are retried for idempotent verbs and surface for POST") {
    Fixture f("five-hundreds");
    sync(f.ioc, f.c->create(configmaps, f.ns, configmap("g")));
    sandbox::FaultRule rule;
    rule.verb = "get";
    rule.resource = "configmaps";
    rule.code = 500;
    rule.count = 2;
    server().faults().fail_next(rule);
    CHECK(sync(f.ioc, f.c->get(configmaps, f.ns, "g")).at("data").at("k") == "v");

    rule.verb = "create";
    rule.count = 1;
    server().faults().fail_next(rule);
    auto e = error_of([&] { sync(f.ioc, f.c->create(configmaps, f.ns, configmap("h"))); });
    CHECK(e.is(ErrorKind::InternalError));
    server().faults().clear();
}

TEST_CASE("every server error kind maps from its status code") {
    Fixture f("kinds");
    struct Case { int code; ErrorKind kind; };
    for (auto c : {Case{429, ErrorKind::TooManyRequests}, Case{503, ErrorKind::ServiceUnavailable},
                   Case{504, ErrorKind::ServerTimeout}, Case{403, ErrorKind::Forbidden},
                   Case{500, ErrorKind::InternalError}}) {
        sandbox::FaultRule rule;
        rule.verb = "create";
        rule.resource = "configmaps";
        rule.code = c.code;
        server().faults().fail_next(rule);
        auto e = error_of([&] { sync(f.ioc, f.c->create(configmaps, f.ns, configmap("k"))); });
        CHECK_MESSAGE(e.is(c.kind), "code ", c.code, " gave ", to_string(e.kind()));
        CHECK(e.code() == c.code);
    }
}

TEST_CASE("a wrong token is Unauthorized and a client certificate authenticates") {
    boost::asio::io_context ioc;
    auto cfg = server().config();
    cfg.token = "wrong";
    Client bad(ioc.get_executor(), cfg);
    auto e = error_of([&] { sync(ioc, bad.list(namespaces, "")); });
    CHECK(e.is(ErrorKind::Unauthorized));
    Client cert(ioc.get_executor(), server().client_cert_config("alice", {"system:masters"}));
    CHECK(sync(ioc, cert.list(namespaces, "")).at("items").as_array().size() >= 1);
}

TEST_CASE("a server certificate from another CA, or for another name, is refused") {
    boost::asio::io_context ioc;
    auto cfg = server().config();
    cfg.max_retries = 0;
    cfg.ca_pem = sandbox::SandboxCertificateAuthority("someone-else").cert_pem();
    Client other_ca(ioc.get_executor(), cfg);
    CHECK(error_of([&] { sync(ioc, other_ca.list(namespaces, "")); }).is(ErrorKind::TlsVerification));

    cfg = server().config();
    cfg.max_retries = 0;
    cfg.tls_server_name = "not-the-server.example.com";
    Client wrong_name(ioc.get_executor(), cfg);
    CHECK(error_of([&] { sync(ioc, wrong_name.list(namespaces, "")); }).is(ErrorKind::TlsVerification));

    cfg.tls_server_name = "localhost";  // a SAN of the serving certificate
    Client by_dns(ioc.get_executor(), cfg);
    CHECK_NOTHROW(sync(ioc, by_dns.list(namespaces, "")));
}

TEST_CASE("connection refused and timeouts are transport errors naming the request") {
    boost::asio::io_context ioc;
    auto cfg = server().config();
    cfg.max_retries = 0;
    cfg.server = "https://127.0.0.1:1";
    Client refused(ioc.get_executor(), cfg);
    auto e = error_of([&] { sync(ioc, refused.list(namespaces, "")); });
    CHECK(e.is(ErrorKind::ConnectionRefused));
    CHECK(e.is_transport());
    CHECK(std::string(e.what()).find("GET /api/v1/namespaces") != std::string::npos);

    cfg = server().config();
    cfg.max_retries = 0;
    cfg.request_timeout = std::chrono::milliseconds(200);
    Client slow(ioc.get_executor(), cfg);
    server().faults().set_latency(std::chrono::milliseconds(1500));
    auto t = error_of([&] { sync(ioc, slow.list(namespaces, "")); });
    server().faults().set_latency(std::chrono::milliseconds(0));
    CHECK(t.is(ErrorKind::Timeout));
}

TEST_CASE("the token bucket lets a burst through and holds the rest back") {
    boost::asio::io_context ioc;
    auto cfg = server().config();
    cfg.qps = 2;
    cfg.burst = 3;
    Client c(ioc.get_executor(), cfg);
    int done = 0;
    for (int i = 0; i < 6; ++i)
        boost::asio::co_spawn(ioc, c.list(namespaces, ""), [&](std::exception_ptr, json::value) { ++done; });
    ioc.restart();
    while (done < 3) ioc.run_one();
    // Three requests finished: the burst. The others wait for tokens at 2 per second.
    CHECK(c.requests_sent() == 3);
    auto t0 = std::chrono::steady_clock::now();
    while (done < 6) ioc.run_one();
    CHECK(c.requests_sent() == 6);
    CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(1000));  // lower bound only
}

TEST_CASE("pod logs are read as text") {
    Fixture f("logs");
    sync(f.ioc, f.c->create(pods, f.ns, json::parse(R"({"metadata":{"name":"lp"},"spec":{"containers":[{"name":"c","image":"i"}]}})")));
    server().pod_logs().append(f.ns, "lp", "c", "line one\nline two\n");
    CHECK(sync(f.ioc, f.c->logs(f.ns, "lp")) == "line one\nline two\n");
    CHECK(sync(f.ioc, f.c->logs(f.ns, "lp", client::LogOptions().tail(1))) == "line two\n");
}
