// Specification of the controller and the finalizer helper over an in-memory list-and-watch:
// which keys are reconciled, when, and what a finalizer guarantees about deletion.
#include <vck/api/core_v1.hpp>
#include <vck/runtime/controller.hpp>
#include <vck/runtime/finalizer.hpp>

#include "memory_loop.hpp"
#include "no_beast.hpp"

#include <doctest.h>

#include <atomic>
#include <thread>

#include <algorithm>
#include <map>
#include <string>

using namespace vck;
using runtime::Request;
using runtime::Result;
using test::configmap;
namespace asio = boost::asio;
namespace json = boost::json;

namespace {

using test::configmaps;
constexpr const char* kFinalizer = "example.com/cleanup";

/// A factory over the loop's server with a running controller, stopped and drained at the end.
struct Rig {
    explicit Rig(test::MemoryLoop& l) : loop(l) {
        runtime::InformerOptions o;
        o.backoff_base = std::chrono::milliseconds(1);
        factory = std::make_unique<runtime::SharedInformerFactory>(l.server, o);
    }
    void start(std::shared_ptr<runtime::Runnable> c) {
        controller = std::move(c);
        task = loop.spawn(controller->start());
    }
    ~Rig() {
        if (controller) controller->stop();
        factory->stop();
        loop.until([&] { return (!controller || *task.done) && factory->running() == 0; });
    }
    test::MemoryLoop& loop;
    std::unique_ptr<runtime::SharedInformerFactory> factory;
    std::shared_ptr<runtime::Runnable> controller;
    test::MemoryLoop::Task task;
};

json::value finalizers_of(const json::value& obj) {
    const auto* f = obj.at("metadata").as_object().if_contains("finalizers");
    return f ? *f : json::array{};
}

} // namespace

TEST_CASE("a controller reconciles each object once its cache has it, and a deleted object's key once more") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("c", "one"));
    Rig rig(loop);
    auto inf = rig.factory->informer<api::ConfigMap>();
    std::map<std::string, int> reconciled;
    std::map<std::string, bool> cached;
    auto c = runtime::controller_for<api::ConfigMap>("unit", *rig.factory)
                 .complete([&](const Request& r) -> asio::awaitable<Result> {
                     ++reconciled[r.name];
                     cached[r.name] = inf->store().get(r) != nullptr;
                     co_return Result::done();
                 });
    rig.start(c);
    REQUIRE(loop.until([&] { return reconciled["one"] == 1; }));
    CHECK(cached["one"]);

    loop.server->put(configmaps, configmap("c", "two"));
    REQUIRE(loop.until([&] { return reconciled["two"] == 1; }));
    loop.server->remove(configmaps, "c", "two");
    REQUIRE(loop.until([&] { return reconciled["two"] == 2; }));
    CHECK_FALSE(cached["two"]);  // the reconcile of a deletion finds the object gone
    CHECK(c->reconciles() == 3);
}

TEST_CASE("a failing reconcile is retried until it succeeds, and a requeue_after comes back by itself") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("r", "flaky"));
    Rig rig(loop);
    int calls = 0;
    auto c = runtime::controller_for<api::ConfigMap>("retry", *rig.factory)
                 .complete([&](const Request&) -> asio::awaitable<Result> {
                     if (++calls < 3) throw std::runtime_error("not yet");
                     if (calls == 3) co_return Result::requeue_after(std::chrono::milliseconds(5));
                     co_return Result::done();
                 });
    rig.start(c);
    REQUIRE(loop.until([&] { return calls == 4; }));
    loop.settle();
    CHECK(calls == 4);  // done: nothing more without a change
}

TEST_CASE("a key's latest result says when it runs again: a done pass drops the re-add an earlier pass asked for") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("r", "later"));
    Rig rig(loop);
    std::atomic<int> calls = 0;
    auto c = runtime::controller_for<api::ConfigMap>("latest", *rig.factory)
                 .complete([&](const Request&) -> asio::awaitable<Result> {
                     // The first pass waits for something for 400 ms; the second (an event) finds it done.
                     if (++calls == 1) co_return Result::requeue_after(std::chrono::milliseconds(400));
                     co_return Result::done();
                 });
    rig.start(c);
    REQUIRE(loop.until([&] { return calls == 1; }));
    c->enqueue(Request{"r", "later"});
    REQUIRE(loop.until([&] { return calls == 2; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    loop.settle();
    CHECK(calls == 2);  // the 400 ms re-add was replaced by the done result
}

TEST_CASE("owns() maps a child's change to its controller owner's key") {
    test::MemoryLoop loop;
    Rig rig(loop);
    std::vector<std::string> keys;
    auto c = runtime::controller_for<api::ConfigMap>("owner", *rig.factory)
                 .owns<api::Secret>()
                 .complete([&](const Request& r) -> asio::awaitable<Result> {
                     keys.push_back(r.namespace_ + "/" + r.name);
                     co_return Result::done();
                 });
    rig.start(c);
    REQUIRE(loop.until([&] { return rig.factory->has_synced() && rig.factory->size() == 2; }));
    json::object ref{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "parent"}, {"uid", "u-1"}, {"controller", true}};
    json::object secret{{"metadata", json::object{{"name", "child"}, {"namespace", "o"},
                                                   {"ownerReferences", json::array{ref}}}}};
    loop.server->put(api::Secret::resource, secret);
    REQUIRE(loop.until([&] { return !keys.empty(); }));
    CHECK(keys == std::vector<std::string>{"o/parent"});
}

TEST_CASE("the finalizer helper adds the finalizer before any apply, holds deletion until cleanup is done, then lets go") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("f", "guarded"));
    Rig rig(loop);
    auto inf = rig.factory->informer<api::ConfigMap>();
    int applies = 0, cleanups = 0;
    bool applied_without_finalizer = false;
    bool cleanup_finished = false;  // the test says when the "data" is gone
    auto& server = *loop.server;
    auto c = runtime::controller_for<api::ConfigMap>("fin", *rig.factory)
                 .complete([&](const Request& r) -> asio::awaitable<Result> {
                     runtime::FinalizerReconcile<api::ConfigMap> body =
                         [&](runtime::FinalizerEvent ev, std::shared_ptr<const api::ConfigMap> o) -> asio::awaitable<Result> {
                         if (ev == runtime::FinalizerEvent::Apply) {
                             if (!o->metadata.has_finalizer(kFinalizer)) applied_without_finalizer = true;
                             ++applies;
                             co_return Result::done();
                         }
                         ++cleanups;
                         if (cleanups == 1) throw std::runtime_error("cleanup failed once");
                         if (!cleanup_finished) co_return Result::requeue_after(std::chrono::milliseconds(2));
                         co_return Result::done();
                     };
                     co_return co_await runtime::finalizer<api::ConfigMap>(server, configmaps, kFinalizer, inf->store().get(r),
                                                                          body);
                 });
    rig.start(c);
    REQUIRE(loop.until([&] { return applies >= 1; }));
    CHECK_FALSE(applied_without_finalizer);
    CHECK(finalizers_of(server.get(configmaps, "f", "guarded")) == json::array{kFinalizer});

    // Another controller's finalizer arrives; then the user deletes the object.
    auto obj = server.get(configmaps, "f", "guarded");
    obj.as_object()["metadata"].as_object()["finalizers"].as_array().push_back("other.io/keep");
    server.put(configmaps, obj);
    server.remove(configmaps, "f", "guarded");

    // A failed cleanup and one that is not done yet both keep the object and our finalizer.
    REQUIRE(loop.until([&] { return cleanups >= 4; }));
    auto held = server.get(configmaps, "f", "guarded");
    REQUIRE(held.is_object());
    CHECK(finalizers_of(held) == json::array{kFinalizer, "other.io/keep"});

    cleanup_finished = true;
    REQUIRE(loop.until([&] { return finalizers_of(server.get(configmaps, "f", "guarded")) == json::array{"other.io/keep"}; }));

    // The other finalizer goes too: now the object is gone, and nothing runs cleanup again.
    auto cleanups_then = cleanups;
    server.patch_now(configmaps, "f", "guarded", client::PatchType::Merge,
                 json::object{{"metadata", json::object{{"finalizers", nullptr}}}});
    loop.settle();
    REQUIRE(loop.until([&] { return server.get(configmaps, "f", "guarded").is_null(); }));
    loop.settle();
    CHECK(cleanups <= cleanups_then + 1);  // at most one reconcile that read the cache before the removal
}

TEST_CASE("a finalizer patch made against a stale object is refused, not applied over a newer list") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("s", "x"));
    auto stale = api::from_json<api::ConfigMap>(loop.server->get(configmaps, "s", "x"));
    auto now = loop.server->get(configmaps, "s", "x");
    now.as_object()["metadata"].as_object()["finalizers"] = json::array{"other.io/keep"};
    loop.server->put(configmaps, now);
    std::exception_ptr error;
    // A named lambda: the coroutine reads its captures from it, so it must outlive the run.
    auto attempt = [&]() -> asio::awaitable<void> {
        try {
            co_await loop.server->patch(configmaps, "s", "x", client::PatchType::Json,
                                        runtime::add_finalizer_patch(stale, kFinalizer));
        } catch (...) {
            error = std::current_exception();
        }
    };
    auto task = loop.spawn(attempt());
    REQUIRE(loop.until([&] { return *task.done; }));
    REQUIRE(error);
    try {
        std::rethrow_exception(error);
    } catch (const client::ApiError& e) {
        CHECK(e.code() == 422);
    }
    CHECK(finalizers_of(loop.server->get(configmaps, "s", "x")) == json::array{"other.io/keep"});
}

TEST_CASE("apply runs on the object the finalizer patch returned, so a generation predicate does not stall the first reconcile") {
    test::MemoryLoop loop;
    auto fresh = configmap("g", "fresh");
    fresh.as_object()["metadata"].as_object()["generation"] = 1;  // a metadata-only patch leaves it so
    loop.server->put(configmaps, fresh);
    Rig rig(loop);
    auto inf = rig.factory->informer<api::ConfigMap>();
    int applies = 0, reconciles = 0;
    std::string applied_version;
    auto& server = *loop.server;
    auto c = runtime::controller_for<api::ConfigMap>("gen", *rig.factory)
                 .with_predicate(runtime::generation_changed<api::ConfigMap>())
                 .complete([&](const Request& r) -> asio::awaitable<Result> {
                     ++reconciles;
                     runtime::FinalizerReconcile<api::ConfigMap> body =
                         [&](runtime::FinalizerEvent, std::shared_ptr<const api::ConfigMap> o) -> asio::awaitable<Result> {
                         ++applies;
                         applied_version = o->metadata.resourceVersion;
                         co_return Result::done();
                     };
                     co_return co_await runtime::finalizer<api::ConfigMap>(server, configmaps, kFinalizer, inf->store().get(r), body);
                 });
    rig.start(c);
    REQUIRE(loop.until([&] { return applies == 1; }));
    CHECK(reconciles == 1);  // no second event was needed
    CHECK(applied_version == server.resource_version());  // the patched version, finalizer on
    CHECK(finalizers_of(server.get(configmaps, "g", "fresh")) == json::array{kFinalizer});
}

TEST_CASE("a controller starts once its own informers have synced, whatever other informers of the factory do") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("w", "one"));
    Rig rig(loop);
    // Another controller's informer whose list the server always refuses: it never syncs.
    rig.factory->configure(api::Secret::resource, [](runtime::InformerOptions& o) { o.label_selector = "=broken"; });
    auto never = rig.factory->informer<api::Secret>();
    int calls = 0;
    auto c = runtime::controller_for<api::ConfigMap>("own-caches", *rig.factory)
                 .complete([&](const Request&) -> asio::awaitable<Result> {
                     ++calls;
                     co_return Result::done();
                 });
    rig.start(c);
    REQUIRE(loop.until([&] { return calls == 1; }));
    CHECK_FALSE(never->has_synced());
    CHECK(never->reflector().errors() >= 1);
}

TEST_CASE("a controller whose informers cannot sync does nothing, and stop() ends its start()") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("s", "one"));
    Rig rig(loop);
    rig.factory->configure(api::Secret::resource, [](runtime::InformerOptions& o) { o.label_selector = "=broken"; });
    int calls = 0;
    auto c = runtime::controller_for<api::ConfigMap>("owns-broken", *rig.factory)
                 .owns<api::Secret>()
                 .complete([&](const Request&) -> asio::awaitable<Result> {
                     ++calls;
                     co_return Result::done();
                 });
    rig.start(c);
    REQUIRE(loop.until([&] { return rig.factory->informer<api::ConfigMap>()->has_synced(); }));
    loop.settle();
    CHECK(calls == 0);
    c->stop();
    CHECK(loop.until([&] { return *rig.task.done; }));
    CHECK(calls == 0);
}

TEST_CASE("a builder registered with a runner hands it the controller on complete()") {
    test::MemoryLoop loop;
    Rig rig(loop);
    std::vector<std::shared_ptr<runtime::Runnable>> added;
    auto c = runtime::controller_for<api::ConfigMap>("registered", *rig.factory)
                 .registered_by([&](std::shared_ptr<runtime::Runnable> r) { added.push_back(std::move(r)); })
                 .complete([](const Request&) -> asio::awaitable<Result> { co_return Result::done(); });
    REQUIRE(added.size() == 1);
    CHECK(added[0] == c);
}

namespace {

/// A namespaced object of any kind, labelled, owned (as its controller) by ConfigMap `owner`.
json::object owned_by(std::string owner, std::string name, json::object labels = {}) {
    json::object ref{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", std::move(owner)}, {"uid", "u"}, {"controller", true}};
    json::object meta{{"name", std::move(name)}, {"namespace", "o"}, {"ownerReferences", json::array{ref}}};
    if (!labels.empty()) meta["labels"] = std::move(labels);
    return json::object{{"metadata", std::move(meta)}};
}

} // namespace

TEST_CASE("a predicate given to owns() filters that watch only") {
    test::MemoryLoop loop;
    Rig rig(loop);
    std::vector<std::string> keys;
    auto loud = [](const runtime::Change<api::Secret>& c) { return !c.object->metadata.labels.contains("quiet"); };
    auto c = runtime::controller_for<api::ConfigMap>("per-watch", *rig.factory)
                 .owns<api::Secret>(loud)
                 .owns<api::PersistentVolumeClaim>()
                 .complete([&](const Request& r) -> asio::awaitable<Result> {
                     keys.push_back(r.namespace_ + "/" + r.name);
                     co_return Result::done();
                 });
    rig.start(c);
    REQUIRE(loop.until([&] { return rig.factory->has_synced() && rig.factory->size() == 3; }));
    // Quiet: a secret (filtered by its watch's predicate), a claim and a primary (their watches
    // have none); then a loud secret, behind the quiet one on the same watch.
    loop.server->put(api::Secret::resource, owned_by("from-quiet-secret", "s1", {{"quiet", "yes"}}));
    loop.server->put(api::PersistentVolumeClaim::resource, owned_by("from-quiet-claim", "c1", {{"quiet", "yes"}}));
    loop.server->put(configmaps, configmap("o", "quiet-primary", {}, {{"quiet", "yes"}}));
    loop.server->put(api::Secret::resource, owned_by("from-loud-secret", "s2"));
    REQUIRE(loop.until([&] { return keys.size() >= 3; }));
    loop.settle();
    std::sort(keys.begin(), keys.end());
    CHECK(keys == std::vector<std::string>{"o/from-loud-secret", "o/from-quiet-claim", "o/quiet-primary"});
}

TEST_CASE("watches() with update_predicate maps every add and delete, and the updates its comparison tells apart from both states") {
    test::MemoryLoop loop;
    Rig rig(loop);
    std::map<std::string, int> reconciled;
    auto target_changed = [](const api::Secret& a, const api::Secret& b) { return a.metadata.labels != b.metadata.labels; };
    auto c = runtime::controller_for<api::ConfigMap>("mapped", *rig.factory)
                 .watches<api::Secret>(
                     [](const api::Secret& s) {
                         return std::vector<Request>{Request{s.metadata.namespace_, s.metadata.labels.at("target")}};
                     },
                     runtime::update_predicate<api::Secret>(target_changed))
                 .complete([&](const Request& r) -> asio::awaitable<Result> {
                     ++reconciled[r.name];
                     co_return Result::done();
                 });
    rig.start(c);
    REQUIRE(loop.until([&] { return rig.factory->has_synced() && rig.factory->size() == 2; }));
    auto secret = [](std::string target, std::string data, std::string name = "s") {
        return json::object{{"metadata", json::object{{"name", std::move(name)}, {"namespace", "w"},
                                                       {"labels", json::object{{"target", std::move(target)}}}}},
                            {"stringData", json::object{{"k", std::move(data)}}}};
    };
    loop.server->put(api::Secret::resource, secret("x", "1"));
    REQUIRE(loop.until([&] { return reconciled["x"] == 1; }));
    loop.server->put(api::Secret::resource, secret("y", "1"));  // the comparison tells them apart: both states map
    REQUIRE(loop.until([&] { return reconciled["x"] == 2 && reconciled["y"] == 1; }));
    // Only the data: filtered. A change of another secret behind it on the same watch shows
    // it has been seen (its key would have been queued first).
    loop.server->put(api::Secret::resource, secret("y", "2"));
    loop.server->put(api::Secret::resource, secret("z", "1", "other"));
    REQUIRE(loop.until([&] { return reconciled["z"] == 1; }));
    CHECK(reconciled["y"] == 1);
    loop.server->remove(api::Secret::resource, "w", "s");
    REQUIRE(loop.until([&] { return reconciled["y"] == 2; }));
    loop.settle();
    CHECK(reconciled == std::map<std::string, int>{{"x", 2}, {"y", 2}, {"z", 1}});
}

TEST_CASE("update_predicate passes every Added and Deleted, and a Modified only when its comparison tells the states apart") {
    auto cm = [](std::string v) { return std::make_shared<const api::ConfigMap>(api::from_json<api::ConfigMap>(configmap("u", "a", {{"v", v}}))); };
    auto p = runtime::update_predicate<api::ConfigMap>(
        [](const api::ConfigMap& a, const api::ConfigMap& b) { return a.data != b.data; });
    using C = runtime::Change<api::ConfigMap>;
    auto one = cm("1"), two = cm("2"), one_again = cm("1");
    CHECK(p(C{runtime::ChangeType::Added, one, nullptr}));
    CHECK(p(C{runtime::ChangeType::Deleted, one, nullptr}));
    CHECK(p(C{runtime::ChangeType::Modified, two, one}));
    CHECK_FALSE(p(C{runtime::ChangeType::Modified, one_again, one}));
    CHECK_FALSE(p(C{runtime::ChangeType::Modified, one, one}));  // a resync
}
