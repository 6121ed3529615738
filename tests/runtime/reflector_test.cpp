// Specification of the reflector and the informer over an in-memory list-and-watch: what
// reaches the cache and the handlers when the server lists in pages, expires versions, sends
// bookmarks, drops watches, refuses requests, or holds an object a typed reader cannot decode.
#include <vck/api/core_v1.hpp>
#include <vck/runtime/informer.hpp>

#include "memory_loop.hpp"
#include "no_beast.hpp"

#include <doctest.h>

#include <string>
#include <vector>

using namespace vck;
using runtime::ChangeType;
using test::configmap;
namespace json = boost::json;

namespace {

using test::configmaps;

using test::quick;

/// An untyped informer that writes each change down as "ADDED ns/name" etc.
struct Recorded {
    explicit Recorded(test::MemoryLoop& l, runtime::InformerOptions o = quick())
        : loop(l), informer(std::make_shared<runtime::Informer<json::value>>(l.server, configmaps, std::move(o))) {
        informer->add_handler([this](const runtime::Change<json::value>& c) {
            auto key = runtime::key_of(*c.object);
            seen.push_back(std::string(to_string(c.type)) + " " + key.namespace_ + "/" + key.name);
        });
    }
    void start() {
        task = loop.spawn(informer->run());
        REQUIRE(loop.until([&] { return informer->has_synced(); }));
    }
    ~Recorded() {
        informer->stop();
        loop.until([&] { return *task.done; });
    }
    std::vector<std::string> take() { return std::exchange(seen, {}); }

    test::MemoryLoop& loop;
    std::shared_ptr<runtime::Informer<json::value>> informer;
    std::vector<std::string> seen;
    test::MemoryLoop::Task task;
};

using Lines = std::vector<std::string>;

} // namespace

TEST_CASE("the reflector lists what is there, then reports every later change once and in order") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("a", "one"));
    Recorded r(loop);
    r.start();
    CHECK(r.take() == Lines{"ADDED a/one"});

    loop.server->put(configmaps, configmap("a", "two"));
    loop.server->put(configmaps, configmap("a", "one", {{"k", "v"}}));
    loop.server->remove(configmaps, "a", "two");
    REQUIRE(loop.until([&] { return r.seen.size() == 3; }));
    CHECK(r.take() == Lines{"ADDED a/two", "MODIFIED a/one", "DELETED a/two"});
    CHECK(r.informer->store().size() == 1);
    CHECK(r.informer->store().resource_version() == loop.server->resource_version());
    CHECK(loop.server->lists() == 1);
}

TEST_CASE("a list of many pages is read page by page into one snapshot") {
    test::MemoryLoop loop;
    for (int i = 0; i < 7; ++i) loop.server->put(configmaps, configmap("p", "cm-" + std::to_string(i)));
    auto o = quick();
    o.page_size = 3;
    Recorded r(loop, o);
    r.start();
    CHECK(loop.server->lists() == 3);
    CHECK(r.informer->store().size() == 7);
    CHECK(r.take().size() == 7);
}

TEST_CASE("a watch that expired while the reflector was away makes it relist, and what vanished meanwhile is reported deleted") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("x", "stays"));
    loop.server->put(configmaps, configmap("x", "goes"));
    Recorded r(loop);
    r.start();
    r.take();

    // The server closes the watch; before the reflector comes back, "goes" is deleted, "new"
    // is created and the history is compacted, so watching from the old version is 410.
    loop.server->drop_watches();
    loop.server->remove(configmaps, "x", "goes");
    loop.server->put(configmaps, configmap("x", "new"));
    loop.server->compact();
    REQUIRE(loop.until([&] { return r.informer->reflector().relists() == 1 && r.seen.size() == 2; }));
    auto seen = r.take();
    std::sort(seen.begin(), seen.end());
    CHECK(seen == Lines{"ADDED x/new", "DELETED x/goes"});
    CHECK(loop.server->lists() == 2);
    CHECK(r.informer->store().size() == 2);
    CHECK(r.informer->reflector().errors() == 0);  // a 410 is the protocol, not a failure

    // And it watches again from the new list.
    loop.server->put(configmaps, configmap("x", "after"));
    REQUIRE(loop.until([&] { return r.seen.size() == 1; }));
    CHECK(r.take() == Lines{"ADDED x/after"});
}

TEST_CASE("a watch request refused with 410 also makes the reflector relist") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("g", "a"));
    Recorded r(loop);
    r.start();
    api::Status gone;
    gone.code = 410;
    gone.reason = "Expired";
    gone.message = "too old resource version";
    loop.server->fail_next_watch(client::ApiError("WATCH", "/api/v1/configmaps", gone));
    loop.server->drop_watches();
    REQUIRE(loop.until([&] { return loop.server->lists() == 2 && loop.server->open_watches() == 1; }));
    CHECK(r.informer->reflector().relists() == 1);
    CHECK(r.take() == Lines{"ADDED g/a"});  // the initial add only: the relist found nothing new
}

TEST_CASE("a dropped watch is resumed from the last version seen, without a relist or a repeated event") {
    test::MemoryLoop loop;
    Recorded r(loop);
    r.start();
    loop.server->put(configmaps, configmap("d", "one"));
    REQUIRE(loop.until([&] { return r.seen.size() == 1; }));
    loop.server->drop_watches();
    loop.server->put(configmaps, configmap("d", "two"));  // made while no watch is open
    REQUIRE(loop.until([&] { return r.seen.size() == 2; }));
    CHECK(r.take() == Lines{"ADDED d/one", "ADDED d/two"});
    CHECK(loop.server->lists() == 1);
    CHECK(loop.server->watches() == 2);
    CHECK(r.informer->reflector().relists() == 0);
}

TEST_CASE("a bookmark moves the cache's version on without reporting a change") {
    test::MemoryLoop loop;
    auto other = api::ResourceType("", "v1", "secrets", "Secret");
    Recorded r(loop);
    r.start();
    auto before = r.informer->store().resource_version();
    loop.server->put(other, json::object{{"metadata", json::object{{"name", "s"}, {"namespace", "b"}}}});
    loop.server->bookmark();
    REQUIRE(loop.until([&] { return r.informer->store().resource_version() != before; }));
    CHECK(r.informer->store().resource_version() == loop.server->resource_version());
    CHECK(r.seen.empty());
    // A watch resumed after the bookmark starts from its version: nothing is replayed.
    loop.server->drop_watches();
    REQUIRE(loop.until([&] { return loop.server->watches() == 2; }));
    loop.settle();
    CHECK(r.seen.empty());
}

TEST_CASE("a failing list or watch is retried with backoff and counted, and the cache catches up") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("f", "one"));
    loop.server->fail_next_list(client::ApiError(client::ErrorKind::Network, "LIST", "/api/v1/configmaps", "reset"));
    Recorded r(loop);
    r.start();
    CHECK(r.informer->reflector().errors() == 1);
    CHECK(r.take() == Lines{"ADDED f/one"});

    loop.server->fail_next_watch(client::ApiError(client::ErrorKind::InternalError, "WATCH", "/api/v1/configmaps", "etcd"));
    loop.server->drop_watches();
    loop.server->put(configmaps, configmap("f", "two"));
    REQUIRE(loop.until([&] { return r.seen.size() == 1; }));
    CHECK(r.take() == Lines{"ADDED f/two"});
    CHECK(r.informer->reflector().errors() == 2);
    CHECK(r.informer->reflector().last_error().find("etcd") != std::string::npos);
}

TEST_CASE("a namespaced, label-selected informer sees only what it selects") {
    test::MemoryLoop loop;
    auto o = quick();
    o.namespace_ = "team";
    o.label_selector = "app=web";
    loop.server->put(configmaps, configmap("team", "web", {}, {{"app", "web"}}));
    loop.server->put(configmaps, configmap("team", "db", {}, {{"app", "db"}}));
    loop.server->put(configmaps, configmap("other", "web", {}, {{"app", "web"}}));
    Recorded r(loop, o);
    r.start();
    CHECK(r.take() == Lines{"ADDED team/web"});
    loop.server->put(configmaps, configmap("other", "web2", {}, {{"app", "web"}}));
    loop.server->put(configmaps, configmap("team", "web2", {}, {{"app", "web"}}));
    REQUIRE(loop.until([&] { return r.seen.size() == 1; }));
    loop.settle();
    CHECK(r.take() == Lines{"ADDED team/web2"});
}

TEST_CASE("a typed informer skips an object it cannot decode, says so once, and takes it back once it decodes") {
    test::MemoryLoop loop;
    auto inf = std::make_shared<runtime::Informer<api::ConfigMap>>(loop.server, quick());
    std::vector<std::string> seen, undecodable;
    inf->add_handler([&](const runtime::Change<api::ConfigMap>& c) {
        seen.push_back(std::string(to_string(c.type)) + " " + c.object->metadata.name);
    });
    inf->add_decode_error_handler([&](const client::UndecodableObject& e) { undecodable.push_back(e.name() + " " + e.what()); });

    auto bad = configmap("t", "bad");
    bad.as_object()["data"] = json::object{{"k", 5}};  // data values are strings
    loop.server->put(configmaps, configmap("t", "good"));
    loop.server->put(configmaps, bad);
    auto task = loop.spawn(inf->run());
    REQUIRE(loop.until([&] { return inf->has_synced(); }));
    CHECK(seen == Lines{"ADDED good"});
    REQUIRE(undecodable.size() == 1);
    CHECK(undecodable[0].find("data.k") != std::string::npos);
    CHECK(inf->reflector().undecodable() == 1);

    // Fixed: it comes back as an add. Broken again: handlers hear it is gone.
    loop.server->put(configmaps, configmap("t", "bad", {{"k", "5"}}));
    REQUIRE(loop.until([&] { return seen.size() == 2; }));
    CHECK(seen.back() == "ADDED bad");
    CHECK(inf->reflector().undecodable() == 0);
    loop.server->put(configmaps, bad);
    REQUIRE(loop.until([&] { return seen.size() == 3; }));
    CHECK(seen.back() == "DELETED bad");
    CHECK(undecodable.size() == 2);
    CHECK(inf->store().size() == 1);

    inf->stop();
    loop.until([&] { return *task.done; });
}

TEST_CASE("a handler added late first hears of every cached object, and a throwing handler does not stop the others") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("h", "one"));
    Recorded r(loop);
    r.start();
    int late = 0, after_throw = 0;
    using Change = runtime::Change<json::value>;
    r.informer->add_handler([&](const Change& c) { late += c.type == ChangeType::Added; });
    CHECK(late == 1);
    r.informer->add_handler([](const Change&) { throw std::runtime_error("handler bug"); });
    r.informer->add_handler([&](const Change& c) { after_throw += c.type == ChangeType::Added; });
    loop.server->put(configmaps, configmap("h", "two"));
    REQUIRE(loop.until([&] { return late == 2; }));
    CHECK(after_throw == 2);  // the cached one when added, then the new one
    CHECK(r.take() == Lines{"ADDED h/one", "ADDED h/two"});
}

TEST_CASE("the in-memory server answers a watch from an expired version as kube-apiserver does") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("m", "a"));
    loop.server->put(configmaps, configmap("m", "a", {{"x", "y"}}));
    loop.server->compact();
    std::string text;
    auto read_all = [&]() -> boost::asio::awaitable<void> {  // named: the coroutine reads its captures
        auto s = co_await loop.server->watch(configmaps, "", client::WatchOptions().since("1"));
        char buf[4096];
        for (;;) {
            auto n = co_await s->read_some(buf, sizeof buf);
            if (n == 0) break;
            text.append(buf, n);
        }
    };
    auto task = loop.spawn(read_all());
    REQUIRE(loop.until([&] { return *task.done; }));
    CHECK_FALSE(*task.error);
    auto ev = json::parse(text);
    CHECK(ev.at("type") == "ERROR");
    CHECK(ev.at("object").at("code") == 410);
    CHECK(ev.at("object").at("reason") == "Expired");
    CHECK(ev.at("object").at("message") == "too old resource version: 1 (2)");
}

TEST_CASE("drop_managed_fields keeps managedFields out of the cache and out of handlers, and a transform still runs") {
    test::MemoryLoop loop;
    auto with_managed_fields = [](std::string name) {
        auto cm = configmap("mf", std::move(name), {{"k", "v"}});
        cm.at("metadata").as_object()["managedFields"] =
            json::array{json::object{{"manager", "kubectl"}, {"operation", "Apply"}, {"fieldsV1", json::object{}}}};
        return cm;
    };
    loop.server->put(configmaps, with_managed_fields("listed"));
    REQUIRE(loop.server->get(configmaps, "mf", "listed").at("metadata").as_object().contains("managedFields"));
    auto dropping = quick();
    dropping.drop_managed_fields = true;
    // Typed and untyped informers drop them; one without the option keeps them.
    auto typed = std::make_shared<runtime::Informer<api::ConfigMap>>(loop.server, dropping);
    auto untyped = std::make_shared<runtime::Informer<json::value>>(loop.server, configmaps, dropping);
    auto keeping = std::make_shared<runtime::Informer<api::ConfigMap>>(loop.server, quick());
    typed->set_transform([](api::ConfigMap& cm) { cm.data["seen-by"] = "transform"; });
    untyped->set_transform([](json::value& v) { v.at("data").as_object()["seen-by"] = "transform"; });
    std::vector<std::shared_ptr<const api::ConfigMap>> typed_handed, kept_handed;
    std::vector<std::shared_ptr<const json::value>> untyped_handed;
    typed->add_handler([&](const runtime::Change<api::ConfigMap>& c) { typed_handed.push_back(c.object); });
    untyped->add_handler([&](const runtime::Change<json::value>& c) { untyped_handed.push_back(c.object); });
    keeping->add_handler([&](const runtime::Change<api::ConfigMap>& c) { kept_handed.push_back(c.object); });
    auto t1 = loop.spawn(typed->run());
    auto t2 = loop.spawn(untyped->run());
    auto t3 = loop.spawn(keeping->run());
    REQUIRE(loop.until([&] { return typed->has_synced() && untyped->has_synced() && keeping->has_synced(); }));
    loop.server->put(configmaps, with_managed_fields("watched"));
    REQUIRE(loop.until([&] { return typed_handed.size() == 2 && untyped_handed.size() == 2 && kept_handed.size() == 2; }));

    for (const auto* name : {"listed", "watched"}) {
        CAPTURE(name);
        runtime::ObjectKey key{"mf", name};
        auto cm = typed->store().get(key);
        auto j = untyped->store().get(key);
        auto kept = keeping->store().get(key);
        REQUIRE(cm);
        REQUIRE(j);
        REQUIRE(kept);
        CHECK_FALSE(cm->metadata.unknown.contains("managedFields"));
        CHECK(cm->data.at("seen-by") == "transform");
        CHECK(cm->data.at("k") == "v");
        CHECK_FALSE(j->at("metadata").as_object().contains("managedFields"));
        CHECK(j->at("data").at("seen-by") == "transform");
        CHECK(kept->metadata.unknown.contains("managedFields"));
    }
    for (const auto& cm : typed_handed) {
        CHECK_FALSE(cm->metadata.unknown.contains("managedFields"));
        CHECK(cm->data.at("seen-by") == "transform");
    }
    for (const auto& j : untyped_handed) {
        CHECK_FALSE(j->at("metadata").as_object().contains("managedFields"));
        CHECK(j->at("data").at("seen-by") == "transform");
    }
    for (const auto& cm : kept_handed) CHECK(cm->metadata.unknown.contains("managedFields"));

    typed->stop();
    untyped->stop();
    keeping->stop();
    loop.until([&] { return *t1.done && *t2.done && *t3.done; });
}
