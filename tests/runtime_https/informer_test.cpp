// Specification of Reflector, Informer and SharedInformerFactory against the sandbox and its
// fault injection: after each fault the cache equals the server's state exactly.
#include <vck/runtime/shared_informer_factory.hpp>

#include "harness.hpp"

#include <set>
#include <utility>

using namespace vck;
using runtime::Informer;
using runtime::InformerOptions;
using test::configmap;
using test::eventually;
using test::server;
namespace json = boost::json;

namespace {

const api::ResourceType configmaps{"", "v1", "configmaps", "ConfigMap", true};

template <class T>
std::map<std::string, std::string> cached_versions(Informer<T>& inf) {
    std::map<std::string, std::string> out;
    for (const auto& o : inf.store().list()) out[runtime::key_of(*o).name] = runtime::resource_version_of(*o);
    return out;
}

/// Counts handler calls per object name (touched only on the loop thread, read after sync).
struct Recorder {
    std::mutex mu;
    std::map<std::string, int> adds, updates, deletes;
    runtime::ChangeHandler<json::value> handler() {
        return [this](const runtime::Change<json::value>& c) { bump(of_type(c.type), c.object); };
    }
    void add_to(Informer<json::value>& inf) { inf.add_handler(handler()); }
    std::map<std::string, int>& of_type(runtime::ChangeType t) {
        return t == runtime::ChangeType::Added ? adds : t == runtime::ChangeType::Modified ? updates : deletes;
    }
    void bump(std::map<std::string, int>& m, const std::shared_ptr<const json::value>& o) {
        std::lock_guard lk(mu);
        ++m[runtime::key_of(*o).name];
    }
    int total(std::map<std::string, int>& m) {
        std::lock_guard lk(mu);
        int n = 0;
        for (auto& [k, v] : m) n += v;
        return n;
    }
    std::map<std::string, int> copy(std::map<std::string, int>& m) {
        std::lock_guard lk(mu);
        return m;
    }
};

InformerOptions fast_options(std::string ns) {
    InformerOptions o;
    o.namespace_ = std::move(ns);
    o.page_size = 7;
    o.backoff_base = std::chrono::milliseconds(50);
    o.backoff_cap = std::chrono::milliseconds(500);
    return o;
}

/// A configmap carrying a managedFields entry, as server-side apply leaves it.
json::value with_managed_fields(std::string_view ns, std::string_view name) {
    auto cm = configmap(ns, name);
    cm.at("metadata").as_object()["managedFields"] =
        json::array{json::value{{"manager", "kubectl"}, {"operation", "Apply"}, {"fieldsV1", {{"f:data", json::object{}}}}}};
    return cm;
}

/// Cuts every configmap watch and keeps reflectors away (each watch they start gets 503)
/// until release(), so a test can change and compact the history they have not seen. The cut
/// is done once a reflector's new watch has been refused: a watch that slipped past the cut
/// would deliver the changes, and the reflector would never relist.
class ConfigmapWatchesCut {
public:
    ConfigmapWatchesCut() {
        sandbox::FaultRule hold;
        hold.verb = "watch";
        hold.resource = "configmaps";
        hold.code = 503;
        hold.count = 1'000'000;
        auto fired = server().faults().fired();
        server().faults().fail_next(hold);
        // A watch the server was still setting up when the streams were cut runs on: cut again.
        auto refused = [&] { return server().faults().fired() > fired; };
        for (int cut = 0; cut < 5 && !refused(); ++cut) {
            server().faults().drop_watches();
            eventually(refused, std::chrono::seconds(5));
        }
        REQUIRE(refused());
    }
    ConfigmapWatchesCut(const ConfigmapWatchesCut&) = delete;
    ConfigmapWatchesCut& operator=(const ConfigmapWatchesCut&) = delete;
    ~ConfigmapWatchesCut() { release(); }
    /// Lets watches through again (no other fault is armed while watches are cut).
    void release() {
        if (std::exchange(held_, false)) server().faults().clear();
    }

private:
    bool held_ = true;
};

/// An untyped configmap informer running on `loop` until the end of the scope.
/// An informer running on `loop` with `rec` as its handler, until destroyed.
template <class T, class Rec>
struct InformerRun {
    test::Loop& loop;
    std::shared_ptr<Informer<T>> inf;
    Rec rec;
    std::future<void> done;
    InformerRun(test::Loop& l, std::shared_ptr<Informer<T>> i) : loop(l), inf(std::move(i)) {
        loop.on_loop([&] {
            rec.add_to(*inf);
            return 0;
        });
        done = loop.spawn([i = inf]() -> boost::asio::awaitable<void> { co_await i->run(); });
    }
    ~InformerRun() {
        loop.on_loop([&] {
            inf->stop();
            return 0;
        });
        done.get();
    }
};

struct Running : InformerRun<json::value, Recorder> {
    Running(test::Loop& l, InformerOptions o)
        : InformerRun(l, std::make_shared<Informer<json::value>>(runtime::list_watch(*l.client), configmaps, o)) {}
    bool matches_server() {
        return loop.on_loop([&] { return cached_versions(*inf); }) == test::server_versions(test::configmaps_id, namespace_);
    }
    std::string namespace_;
};

} // namespace

TEST_CASE("an informer lists in pages, watches, and its cache equals the server's objects") {
    test::ensure_namespace("inf-basic");
    for (int i = 0; i < 30; ++i) server().store().create(test::configmaps_id, "inf-basic", configmap("inf-basic", "pre-" + std::to_string(i)));
    test::Loop loop;
    {
        Running r(loop, fast_options("inf-basic"));
        r.namespace_ = "inf-basic";
        REQUIRE(eventually([&] { return r.inf->has_synced(); }));
        CHECK(r.rec.total(r.rec.adds) == 30);
        // Each listed page is parsed into an arena released with the page: what the cache
        // keeps owns its memory (default storage), never the page's.
        CHECK(loop.on_loop([&] {
            int in_arena = 0;
            for (const auto& o : r.inf->store().list()) in_arena += o->storage().is_deallocate_trivial() ? 1 : 0;
            return in_arena;
        }) == 0);
        for (int i = 0; i < 20; ++i) server().store().create(test::configmaps_id, "inf-basic", configmap("inf-basic", "new-" + std::to_string(i)));
        for (int i = 0; i < 10; ++i) {
            auto name = "pre-" + std::to_string(i);
            server().store().update(test::configmaps_id, "inf-basic", name, configmap("inf-basic", name, "changed"));
        }
        for (int i = 10; i < 15; ++i) server().store().remove(test::configmaps_id, "inf-basic", "pre-" + std::to_string(i));
        CHECK(eventually([&] { return r.matches_server(); }));
        CHECK(eventually([&] { return r.rec.total(r.rec.deletes) == 5; }));
        CHECK(r.rec.total(r.rec.adds) == 50);
        CHECK(r.rec.total(r.rec.updates) == 10);
    }
}

TEST_CASE("after dropped watches the informer resumes from its version: no event lost or delivered twice") {
    test::ensure_namespace("inf-drop");
    test::Loop loop;
    Running r(loop, fast_options("inf-drop"));
    r.namespace_ = "inf-drop";
    REQUIRE(eventually([&] { return r.inf->has_synced(); }));
    for (int round = 0; round < 5; ++round) {
        for (int i = 0; i < 10; ++i)
            server().store().create(test::configmaps_id, "inf-drop", configmap("inf-drop", fmt::format("r{}-{}", round, i)));
        server().faults().drop_watches();
        server().store().update(test::configmaps_id, "inf-drop", fmt::format("r{}-0", round),
                                configmap("inf-drop", fmt::format("r{}-0", round), "x"));
    }
    CHECK(eventually([&] { return r.matches_server(); }));
    CHECK(eventually([&] { return r.rec.total(r.rec.updates) == 5; }));
    auto adds = r.rec.copy(r.rec.adds);
    CHECK(adds.size() == 50);
    for (auto& [name, n] : adds) CHECK_MESSAGE(n == 1, name);
    CHECK(r.inf->reflector().watches() > 1);
}

TEST_CASE("a 410 while disconnected makes the informer relist and report the deletes it missed") {
    test::ensure_namespace("inf-gone");
    for (int i = 0; i < 12; ++i) server().store().create(test::configmaps_id, "inf-gone", configmap("inf-gone", "c" + std::to_string(i)));
    test::Loop loop;
    Running r(loop, fast_options("inf-gone"));
    r.namespace_ = "inf-gone";
    REQUIRE(eventually([&] { return r.inf->has_synced(); }));
    // Keep the reflector away while objects vanish and the history they were in is compacted.
    ConfigmapWatchesCut held;
    for (int i = 0; i < 4; ++i) server().store().remove(test::configmaps_id, "inf-gone", "c" + std::to_string(i));
    server().store().update(test::configmaps_id, "inf-gone", "c5", configmap("inf-gone", "c5", "changed"));
    server().store().create(test::configmaps_id, "inf-gone", configmap("inf-gone", "late"));
    server().faults().compact();
    held.release();
    CHECK(eventually([&] { return r.matches_server(); }));
    CHECK(eventually([&] { return r.rec.total(r.rec.deletes) == 4; }));
    auto deletes = r.rec.copy(r.rec.deletes);
    for (int i = 0; i < 4; ++i) CHECK(deletes["c" + std::to_string(i)] == 1);
    CHECK(r.rec.copy(r.rec.updates)["c5"] == 1);
    CHECK(r.rec.copy(r.rec.adds)["late"] == 1);
    CHECK(r.inf->reflector().relists() >= 1);
}

TEST_CASE("500s on list and 429s on watch are retried until the cache is exact") {
    test::ensure_namespace("inf-500");
    for (int i = 0; i < 5; ++i) server().store().create(test::configmaps_id, "inf-500", configmap("inf-500", "a" + std::to_string(i)));
    sandbox::FaultRule list_fail;
    list_fail.verb = "list";
    list_fail.resource = "configmaps";
    list_fail.code = 500;
    list_fail.count = 3;
    server().faults().fail_next(list_fail);
    sandbox::FaultRule watch_fail;
    watch_fail.verb = "watch";
    watch_fail.resource = "configmaps";
    watch_fail.code = 429;
    watch_fail.count = 2;
    server().faults().fail_next(watch_fail);
    test::Loop loop;
    Running r(loop, fast_options("inf-500"));
    r.namespace_ = "inf-500";
    REQUIRE(eventually([&] { return r.inf->has_synced(); }));
    for (int i = 0; i < 5; ++i) server().store().create(test::configmaps_id, "inf-500", configmap("inf-500", "b" + std::to_string(i)));
    CHECK(eventually([&] { return r.matches_server(); }));
    CHECK(r.inf->reflector().errors() >= 4);
    CHECK(r.rec.total(r.rec.adds) == 10);
}

TEST_CASE("a compressed cache goes through dropped watches and a 410 relist to the server's exact objects") {
    test::ensure_namespace("inf-packed");
    for (int i = 0; i < 12; ++i)
        server().store().create(test::configmaps_id, "inf-packed", configmap("inf-packed", "c" + std::to_string(i)));
    test::Loop loop;
    auto o = fast_options("inf-packed");
    o.store.compressed = true;
    o.store.recent_whole = 0;  // every object compressed as soon as it is cached
    Running r(loop, o);
    r.namespace_ = "inf-packed";
    REQUIRE(r.inf->store().compressed());
    // Updates carry the state they replaced, decoded from the compressed cache.
    std::mutex mu;
    std::map<std::string, std::string> replaced;  // name -> the old data the update reported
    runtime::ChangeHandler<json::value> h = [&](const runtime::Change<json::value>& c) {
        if (c.type != runtime::ChangeType::Modified) return;
        std::lock_guard lk(mu);
        replaced[std::string(runtime::key_of(*c.object).name)] = std::string(api::string_at(*c.old, {"data", "k"}));
    };
    loop.on_loop([&] { return r.inf->add_handler(h); });
    REQUIRE(eventually([&] { return r.inf->has_synced(); }));
    server().store().update(test::configmaps_id, "inf-packed", "c1", configmap("inf-packed", "c1", "first"));
    server().faults().drop_watches();
    server().store().update(test::configmaps_id, "inf-packed", "c1", configmap("inf-packed", "c1", "second"));
    CHECK(eventually([&] {
        std::lock_guard lk(mu);
        return replaced["c1"] == "first";
    }));
    // A relist after a compacted history reports deletes and changes against the compressed entries.
    ConfigmapWatchesCut held;
    for (int i = 0; i < 3; ++i) server().store().remove(test::configmaps_id, "inf-packed", "c" + std::to_string(i + 5));
    server().store().update(test::configmaps_id, "inf-packed", "c2", configmap("inf-packed", "c2", "relisted"));
    server().faults().compact();
    held.release();
    CHECK(eventually([&] { return r.matches_server(); }));
    CHECK(eventually([&] { return r.rec.total(r.rec.deletes) == 3; }));
    CHECK(eventually([&] {
        std::lock_guard lk(mu);
        return replaced["c2"] == "v";
    }));
    auto server_items = server().store().list(test::configmaps_id, "inf-packed").at("items").as_array();
    REQUIRE(server_items.size() == 9);
    for (const auto& want : server_items) {
        auto got = r.inf->store().get(runtime::key_of(want));
        REQUIRE(got);
        CHECK(got->at("metadata") == want.at("metadata"));  // lists leave kind out of items
        CHECK(got->at("data") == want.at("data"));
    }
}

TEST_CASE("a typed informer decodes objects into their struct") {
    test::ensure_namespace("inf-typed");
    server().store().create(test::configmaps_id, "inf-typed", configmap("inf-typed", "one", "hello"));
    test::Loop loop;
    auto o = fast_options("inf-typed");
    auto inf = std::make_shared<Informer<api::ConfigMap>>(runtime::list_watch(*loop.client), o);
    auto done = loop.spawn([inf]() -> boost::asio::awaitable<void> { co_await inf->run(); });
    REQUIRE(eventually([&] { return inf->has_synced(); }));
    auto cm = loop.on_loop([&] { return inf->store().get(runtime::ObjectKey{"inf-typed", "one"}); });
    REQUIRE(cm);
    CHECK(cm->data.at("k") == "hello");
    loop.on_loop([&] { inf->stop(); return 0; });
    done.get();
}

TEST_CASE("a transform edits each object before it is cached or handed to handlers, after drop_managed_fields dropped managedFields") {
    test::ensure_namespace("inf-transform");
    auto stored = server().store().create(test::configmaps_id, "inf-transform", with_managed_fields("inf-transform", "listed"));
    REQUIRE(stored.at("metadata").as_object().contains("managedFields"));  // the server keeps them
    test::Loop loop;
    auto o = fast_options("inf-transform");
    o.drop_managed_fields = true;
    auto inf = std::make_shared<Informer<api::ConfigMap>>(runtime::list_watch(*loop.client), o);
    inf->set_transform([](api::ConfigMap& cm) {
        CHECK_FALSE(cm.metadata.unknown.contains("managedFields"));  // dropped before the transform runs
        cm.data["seen-by"] = "transform";
    });
    std::vector<std::string> handed;  // what handlers saw, on the loop thread
    runtime::ChangeHandler<api::ConfigMap> h = [&](const runtime::Change<api::ConfigMap>& c) {
        if (c.type == runtime::ChangeType::Added) handed.push_back(c.object->data.at("seen-by"));
    };
    loop.on_loop([&] { return inf->add_handler(h); });
    auto done = loop.spawn([inf]() -> boost::asio::awaitable<void> { co_await inf->run(); });
    REQUIRE(eventually([&] { return inf->has_synced(); }));
    server().store().create(test::configmaps_id, "inf-transform", with_managed_fields("inf-transform", "watched"));
    REQUIRE(eventually([&] { return loop.on_loop([&] { return inf->store().size(); }) == 2; }));
    for (const auto* name : {"listed", "watched"}) {
        auto cm = loop.on_loop([&] { return inf->store().get(runtime::ObjectKey{"inf-transform", name}); });
        REQUIRE(cm);
        CHECK_FALSE(cm->metadata.unknown.contains("managedFields"));
        CHECK(cm->data.at("seen-by") == "transform");
    }
    CHECK(loop.on_loop([&] { return handed; }) == std::vector<std::string>{"transform", "transform"});
    loop.on_loop([&] { inf->stop(); return 0; });
    done.get();
}

TEST_CASE("drop_managed_fields drops managedFields from listed and watched objects before they are decoded") {
    test::ensure_namespace("inf-strip");
    server().store().create(test::configmaps_id, "inf-strip", with_managed_fields("inf-strip", "listed"));
    test::Loop loop;
    // Done on the JSON, typed and untyped informers alike, over the client's list and watch.
    auto o = fast_options("inf-strip");
    o.drop_managed_fields = true;
    auto typed = std::make_shared<Informer<api::ConfigMap>>(runtime::list_watch(*loop.client), o);
    auto untyped = std::make_shared<Informer<json::value>>(runtime::list_watch(*loop.client), configmaps, o);
    auto d1 = loop.spawn([typed]() -> boost::asio::awaitable<void> { co_await typed->run(); });
    auto d2 = loop.spawn([untyped]() -> boost::asio::awaitable<void> { co_await untyped->run(); });
    REQUIRE(eventually([&] { return typed->has_synced() && untyped->has_synced(); }));
    server().store().create(test::configmaps_id, "inf-strip", with_managed_fields("inf-strip", "watched"));
    REQUIRE(eventually([&] {
        return loop.on_loop([&] { return typed->store().size() + untyped->store().size(); }) == 4;
    }));
    for (const auto* name : {"listed", "watched"}) {
        runtime::ObjectKey key{"inf-strip", name};
        auto cm = loop.on_loop([&] { return typed->store().get(key); });
        auto j = loop.on_loop([&] { return untyped->store().get(key); });
        REQUIRE(cm);
        REQUIRE(j);
        CHECK_FALSE(cm->metadata.unknown.contains("managedFields"));
        CHECK(cm->data.at("k") == "v");
        CHECK_FALSE(j->at("metadata").as_object().contains("managedFields"));
        CHECK(j->at("metadata").at("name") == name);
    }
    loop.on_loop([&] {
        typed->stop();
        untyped->stop();
        return 0;
    });
    d1.get();
    d2.get();
}

TEST_CASE("a resync period re-delivers every cached object as an update") {
    test::ensure_namespace("inf-resync");
    server().store().create(test::configmaps_id, "inf-resync", configmap("inf-resync", "one"));
    test::Loop loop;
    auto o = fast_options("inf-resync");
    o.resync = std::chrono::milliseconds(50);
    Running r(loop, o);
    r.namespace_ = "inf-resync";
    CHECK(eventually([&] { return r.rec.total(r.rec.updates) >= 2; }));
    CHECK(r.rec.total(r.rec.adds) == 1);
}

TEST_CASE("a handler added after sync first gets an add for every cached object") {
    test::ensure_namespace("inf-late");
    server().store().create(test::configmaps_id, "inf-late", configmap("inf-late", "one"));
    server().store().create(test::configmaps_id, "inf-late", configmap("inf-late", "two"));
    test::Loop loop;
    Running r(loop, fast_options("inf-late"));
    r.namespace_ = "inf-late";
    REQUIRE(eventually([&] { return r.inf->has_synced(); }));
    Recorder late;
    loop.on_loop([&] { return r.inf->add_handler(late.handler()); });
    CHECK(late.total(late.adds) == 2);
}

TEST_CASE("a shared informer factory gives two controllers one informer and one watch per type") {
    test::ensure_namespace("inf-shared");
    test::Loop loop;
    auto factory = std::make_unique<runtime::SharedInformerFactory>(runtime::list_watch(*loop.client), fast_options("inf-shared"));
    auto a = factory->informer<json::value>(configmaps);
    auto b = factory->informer<json::value>(configmaps);
    auto typed = factory->informer<api::ConfigMap>();
    CHECK(a == b);
    CHECK(factory->size() == 2);
    Recorder ra, rb;
    loop.on_loop([&] { a->add_handler(ra.handler()); return b->add_handler(rb.handler()); });
    loop.on_loop([&] { factory->start(); return 0; });
    REQUIRE(eventually([&] { return factory->has_synced(); }));
    server().store().create(test::configmaps_id, "inf-shared", configmap("inf-shared", "x"));
    CHECK(eventually([&] { return ra.total(ra.adds) == 1 && rb.total(rb.adds) == 1; }));
    CHECK(a->reflector().watches() == 1);
    CHECK(eventually([&] { return typed->store().size() == 1; }));
    loop.on_loop([&] { factory->stop(); return 0; });
    CHECK(eventually([&] { return factory->running() == 0; }));
    loop.on_loop([&] { factory.reset(); return 0; });
}

TEST_CASE("configure() narrows one resource's informers for everyone who asks, and only before they exist") {
    test::ensure_namespace("inf-narrow");
    auto labelled = [](std::string name, std::string app) {
        auto cm = configmap("inf-narrow", name);
        cm.at("metadata").as_object()["labels"] = json::object{{"app", app}};
        return cm;
    };
    server().store().create(test::configmaps_id, "inf-narrow", labelled("kept", "vck"));
    server().store().create(test::configmaps_id, "inf-narrow", labelled("other", "web"));
    server().store().create(test::configmaps_id, "inf-narrow", configmap("inf-narrow", "plain"));
    test::Loop loop;
    auto factory = std::make_unique<runtime::SharedInformerFactory>(runtime::list_watch(*loop.client), fast_options("inf-narrow"));
    CHECK(factory->configure<api::ConfigMap>([](InformerOptions& o) {
        o.label_selector = "app=vck";
        o.page_size = 5;
    }));
    CHECK(factory->configure(configmaps, [](InformerOptions& o) { o.page_size -= 2; }));
    CHECK_THROWS_AS(factory->configure(configmaps, {}), std::invalid_argument);

    // The defaults with every tweak applied, in order; other resources keep the defaults.
    auto o = factory->options_for(configmaps);
    CHECK(o.namespace_ == "inf-narrow");
    CHECK(o.label_selector == "app=vck");
    CHECK(o.page_size == 3);
    CHECK(factory->options_for(api::Secret::resource).label_selector.empty());
    {
        auto untyped = factory->informer<json::value>(configmaps);
        auto typed = factory->informer<api::ConfigMap>();
        // Too late: the informers exist, and keep the options they were made with.
        CHECK_FALSE(factory->configure<api::ConfigMap>([](InformerOptions& o) { o.label_selector.clear(); }));
        CHECK(factory->options_for(configmaps).label_selector == "app=vck");
        loop.on_loop([&] { factory->start(); return 0; });
        REQUIRE(eventually([&] { return factory->has_synced(); }));
        auto names = [&](auto& inf) {
            return loop.on_loop([&] {
                std::set<std::string> out;
                for (const auto& o : inf->store().list()) out.insert(runtime::key_of(*o).name);
                return out;
            });
        };
        CHECK(names(untyped) == std::set<std::string>{"kept"});
        CHECK(names(typed) == std::set<std::string>{"kept"});
        // An object that starts matching arrives; one that stops matching leaves the cache.
        server().store().update(test::configmaps_id, "inf-narrow", "other", labelled("other", "vck"));
        server().store().update(test::configmaps_id, "inf-narrow", "kept", labelled("kept", "web"));
        CHECK(eventually([&] { return names(untyped) == std::set<std::string>{"other"}; }));
        CHECK(eventually([&] { return names(typed) == std::set<std::string>{"other"}; }));
        loop.on_loop([&] { factory->stop(); return 0; });
        CHECK(eventually([&] { return factory->running() == 0; }));
    }
    loop.on_loop([&] { factory.reset(); return 0; });
}

namespace {

/// A configmap that api::ConfigMap cannot hold (data values are strings), as the sandbox
/// stores it: built-in objects are not checked against a schema there.
json::value undecodable_configmap(std::string_view ns, std::string_view name) {
    auto cm = configmap(ns, name);
    cm.at("data").as_object()["k"] = 5;
    return cm;
}

/// What a typed configmap informer's handlers were told, per object name.
struct TypedRecorder {
    std::mutex mu;
    std::map<std::string, int> adds, updates, deletes;
    std::map<std::string, std::vector<std::string>> decode_errors;  // name -> "rv: what()" per report
    void add_to(Informer<api::ConfigMap>& inf) {
        inf.add_handler([this](const runtime::Change<api::ConfigMap>& c) {
            auto& m = c.type == runtime::ChangeType::Added ? adds : c.type == runtime::ChangeType::Modified ? updates : deletes;
            bump(m, c.object->metadata.name);
        });
        inf.add_decode_error_handler([this](const client::UndecodableObject& e) {
            std::lock_guard lk(mu);
            decode_errors[e.name()].push_back(e.resource_version() + ": " + e.what());
        });
    }
    void bump(std::map<std::string, int>& m, const std::string& name) {
        std::lock_guard lk(mu);
        ++m[name];
    }
    int of(std::map<std::string, int>& m, const std::string& name) {
        std::lock_guard lk(mu);
        return m.count(name) ? m[name] : 0;
    }
    std::vector<std::string> errors_of(const std::string& name) {
        std::lock_guard lk(mu);
        return decode_errors.count(name) ? decode_errors[name] : std::vector<std::string>{};
    }
};

/// A typed configmap informer running on `loop` until the end of the scope.
struct RunningTyped : InformerRun<api::ConfigMap, TypedRecorder> {
    std::string ns;
    RunningTyped(test::Loop& l, std::string n)
        : InformerRun(l, std::make_shared<Informer<api::ConfigMap>>(runtime::list_watch(*l.client), fast_options(n))), ns(std::move(n)) {}
    std::set<std::string> cached() {
        return loop.on_loop([&] {
            std::set<std::string> out;
            for (const auto& o : inf->store().list()) out.insert(o->metadata.name);
            return out;
        });
    }
    std::string server_version(const std::string& name) { return test::server_versions(test::configmaps_id, ns)[name]; }
};

} // namespace

TEST_CASE("a typed informer skips a listed object it cannot decode: the others are cached and dispatched, it is reported once with its field path, and the informer syncs") {
    test::ensure_namespace("inf-undecodable");
    server().store().create(test::configmaps_id, "inf-undecodable", configmap("inf-undecodable", "a"));
    server().store().create(test::configmaps_id, "inf-undecodable", undecodable_configmap("inf-undecodable", "b"));
    server().store().create(test::configmaps_id, "inf-undecodable", configmap("inf-undecodable", "c"));
    test::Loop loop;
    RunningTyped r(loop, "inf-undecodable");
    REQUIRE(eventually([&] { return r.inf->has_synced(); }));
    CHECK(r.cached() == std::set<std::string>{"a", "c"});
    CHECK(r.rec.of(r.rec.adds, "a") == 1);
    CHECK(r.rec.of(r.rec.adds, "c") == 1);
    CHECK(r.rec.of(r.rec.adds, "b") == 0);
    CHECK(r.rec.errors_of("b") ==
          std::vector<std::string>{r.server_version("b") + ": data.k: expected string, got integer"});
    CHECK(r.inf->reflector().undecodable() == 1);

    // Watched: a new bad object is reported and skipped, and the watch goes on past it.
    server().store().create(test::configmaps_id, "inf-undecodable", undecodable_configmap("inf-undecodable", "d"));
    server().store().create(test::configmaps_id, "inf-undecodable", configmap("inf-undecodable", "e"));
    CHECK(eventually([&] { return r.cached() == std::set<std::string>{"a", "c", "e"}; }));
    CHECK(eventually([&] { return r.rec.errors_of("d").size() == 1; }));
    CHECK(r.inf->reflector().undecodable() == 2);

    // A relist (after a compacted history) meets both again at the same versions: no new report.
    ConfigmapWatchesCut held;
    server().store().create(test::configmaps_id, "inf-undecodable", configmap("inf-undecodable", "f"));
    server().faults().compact();
    held.release();
    CHECK(eventually([&] { return r.cached() == std::set<std::string>{"a", "c", "e", "f"}; }));
    CHECK(r.inf->reflector().relists() >= 1);
    CHECK(r.rec.errors_of("b").size() == 1);
    CHECK(r.rec.errors_of("d").size() == 1);
    CHECK(r.inf->reflector().undecodable() == 2);
}

TEST_CASE("a watched update that makes a cached object undecodable removes it from the cache as a delete; fixing it brings it back as an add; deleting it works") {
    const std::string ns = "inf-turns-bad";
    test::ensure_namespace(ns);
    server().store().create(test::configmaps_id, ns, configmap(ns, "x"));
    server().store().create(test::configmaps_id, ns, configmap(ns, "y"));
    test::Loop loop;
    RunningTyped r(loop, ns);
    REQUIRE(eventually([&] { return r.inf->has_synced() && r.cached() == std::set<std::string>{"x", "y"}; }));

    server().store().update(test::configmaps_id, ns, "x", undecodable_configmap(ns, "x"));
    CHECK(eventually([&] { return r.rec.of(r.rec.deletes, "x") == 1; }));
    CHECK(r.cached() == std::set<std::string>{"y"});
    CHECK(eventually([&] { return r.rec.errors_of("x").size() == 1; }));
    CHECK(r.rec.errors_of("x").at(0) == r.server_version("x") + ": data.k: expected string, got integer");

    // The watch goes on: another object's change arrives.
    server().store().update(test::configmaps_id, ns, "y", configmap(ns, "y", "changed"));
    CHECK(eventually([&] { return r.rec.of(r.rec.updates, "y") == 1; }));

    // Fixed: back in the cache, as an add, with the fixed content.
    server().store().update(test::configmaps_id, ns, "x", configmap(ns, "x", "fixed"));
    CHECK(eventually([&] { return r.rec.of(r.rec.adds, "x") == 2; }));
    auto x = loop.on_loop([&] { return r.inf->store().get(runtime::ObjectKey{ns, "x"}); });
    REQUIRE(x);
    CHECK(x->data.at("k") == "fixed");
    CHECK(r.inf->reflector().undecodable() == 0);

    // Bad again, then deleted: one more delete for the bad version, none for the deletion,
    // and nothing is left skipped.
    server().store().update(test::configmaps_id, ns, "x", undecodable_configmap(ns, "x"));
    CHECK(eventually([&] { return r.rec.of(r.rec.deletes, "x") == 2 && r.rec.errors_of("x").size() == 2; }));
    CHECK(r.inf->reflector().undecodable() == 1);
    server().store().remove(test::configmaps_id, ns, "x");
    CHECK(eventually([&] { return r.inf->reflector().undecodable() == 0; }));
    CHECK(r.rec.of(r.rec.deletes, "x") == 2);
    CHECK(r.rec.errors_of("x").size() == 2);
    CHECK(r.cached() == std::set<std::string>{"y"});
}

TEST_CASE("an informer whose list keeps failing does not sync, and syncs once the list succeeds") {
    const std::string ns = "inf-unready";
    test::ensure_namespace(ns);
    server().store().create(test::configmaps_id, ns, configmap(ns, "one"));
    sandbox::FaultRule list_fail;
    list_fail.verb = "list";
    list_fail.resource = "configmaps";
    list_fail.code = 500;
    list_fail.count = 1000;
    server().faults().fail_next(list_fail);
    test::Loop loop;
    RunningTyped r(loop, ns);
    CHECK(eventually([&] { return r.inf->reflector().errors() >= 3; }));
    CHECK_FALSE(r.inf->has_synced());
    server().faults().clear();
    CHECK(eventually([&] { return r.inf->has_synced(); }));
    CHECK(r.cached() == std::set<std::string>{"one"});
}
