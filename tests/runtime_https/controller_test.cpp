// Specification of Controller (builder, workers, owns, errors, conflicts), the finalizer
// helper, the event recorder and the metrics registry, against the sandbox.
#include <vck/runtime/controller.hpp>
#include <vck/runtime/decode_failure_events.hpp>
#include <vck/runtime/event_recorder.hpp>
#include <vck/runtime/finalizer.hpp>

#include "harness.hpp"

#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <set>

using namespace vck;
using runtime::Request;
using runtime::Result;
using test::configmap;
using test::eventually;
using test::server;
namespace json = boost::json;
namespace asio = boost::asio;

namespace {

const sandbox::ResourceId secrets_id{"", "v1", "secrets"};

runtime::InformerOptions in_namespace(std::string ns) {
    runtime::InformerOptions o;
    o.namespace_ = std::move(ns);
    o.backoff_base = std::chrono::milliseconds(50);
    o.backoff_cap = std::chrono::milliseconds(500);
    return o;
}

/// Keys reconciled, with counts; safe across threads.
struct Seen {
    std::mutex mu;
    std::map<std::string, int> count;
    void add(const Request& r) {
        std::lock_guard lk(mu);
        ++count[r.str()];
    }
    int of(const std::string& k) {
        std::lock_guard lk(mu);
        return count.count(k) ? count[k] : 0;
    }
};

/// A factory and its controllers on a loop, stopped at the end of the scope.
struct Rig {
    test::Loop loop;
    std::unique_ptr<runtime::SharedInformerFactory> factory;
    std::vector<std::shared_ptr<runtime::Runnable>> running;
    std::vector<std::future<void>> done;
    explicit Rig(std::string ns) { factory = std::make_unique<runtime::SharedInformerFactory>(runtime::list_watch(*loop.client), in_namespace(std::move(ns))); }
    void start(std::shared_ptr<runtime::Runnable> r) {
        running.push_back(r);
        done.push_back(loop.spawn([r]() -> asio::awaitable<void> { co_await r->start(); }));
    }
    ~Rig() {
        loop.on_loop([&] {
            for (auto& r : running) r->stop();
            factory->stop();
            return 0;
        });
        for (auto& d : done) d.get();
        eventually([&] { return factory->running() == 0; });
        loop.on_loop([&] {
            running.clear();
            factory.reset();
            return 0;
        });
    }
};

json::value owned_secret(std::string_view ns, std::string_view name, std::string_view owner, std::string_view owner_uid) {
    return json::value{{"apiVersion", "v1"},
                       {"kind", "Secret"},
                       {"metadata",
                        {{"name", name},
                         {"namespace", ns},
                         {"ownerReferences",
                          json::array{{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", owner}, {"uid", owner_uid},
                                       {"controller", true}}}}}},
                       {"stringData", {{"x", "y"}}}};
}

} // namespace

TEST_CASE("a controller reconciles each primary object, and a child's event enqueues its controller owner") {
    test::ensure_namespace("ctl-owns");
    auto parent = server().store().create(test::configmaps_id, "ctl-owns", configmap("ctl-owns", "parent"));
    server().store().create(test::configmaps_id, "ctl-owns", configmap("ctl-owns", "other"));
    Rig rig("ctl-owns");
    Seen seen;
    auto c = runtime::controller_for<api::ConfigMap>("owns", *rig.factory)
                 .owns<api::Secret>()
                 .workers(2)
                 .complete([&](const Request& r) -> asio::awaitable<Result> {
                     seen.add(r);
                     co_return Result::done();
                 });
    rig.start(c);
    REQUIRE(eventually([&] { return seen.of("ctl-owns/parent") == 1 && seen.of("ctl-owns/other") == 1; }));
    server().store().create(secrets_id, "ctl-owns",
                            owned_secret("ctl-owns", "child", "parent", api::string_at(parent, {"metadata", "uid"})));
    CHECK(eventually([&] { return seen.of("ctl-owns/parent") == 2; }));
    CHECK(seen.of("ctl-owns/child") == 0);
    CHECK(seen.of("ctl-owns/other") == 1);
}

namespace {

/// A configmap api::ConfigMap cannot hold (data values are strings); the sandbox keeps it, as
/// it checks no built-in object against a schema.
json::value bad_configmap(std::string_view ns, std::string_view name) {
    auto cm = configmap(ns, name);
    cm.at("data").as_object()["k"] = json::array{1, 2};
    return cm;
}

} // namespace

TEST_CASE("a controller reconciles every object it can decode while one it cannot exists") {
    test::ensure_namespace("ctl-undecodable");
    server().store().create(test::configmaps_id, "ctl-undecodable", configmap("ctl-undecodable", "a"));
    server().store().create(test::configmaps_id, "ctl-undecodable", bad_configmap("ctl-undecodable", "b"));
    server().store().create(test::configmaps_id, "ctl-undecodable", configmap("ctl-undecodable", "c"));
    Rig rig("ctl-undecodable");
    Seen seen;
    auto c = runtime::controller_for<api::ConfigMap>("undecodable", *rig.factory)
                 .complete([&](const Request& r) -> asio::awaitable<Result> {
                     seen.add(r);
                     co_return Result::done();
                 });
    rig.start(c);
    CHECK(eventually([&] { return seen.of("ctl-undecodable/a") == 1 && seen.of("ctl-undecodable/c") == 1; }));
    server().store().create(test::configmaps_id, "ctl-undecodable", configmap("ctl-undecodable", "d"));
    CHECK(eventually([&] { return seen.of("ctl-undecodable/d") == 1; }));
    CHECK(rig.factory->has_synced());
    CHECK(seen.of("ctl-undecodable/b") == 0);
    // Fixed, it is reconciled like any other.
    server().store().update(test::configmaps_id, "ctl-undecodable", "b", configmap("ctl-undecodable", "b"));
    CHECK(eventually([&] { return seen.of("ctl-undecodable/b") == 1; }));
}

TEST_CASE("decode_failure_events records a Warning DecodeFailed event naming the field on an object the informer cannot decode") {
    test::ensure_namespace("ctl-decode-event");
    auto bad = server().store().create(test::configmaps_id, "ctl-decode-event", bad_configmap("ctl-decode-event", "bad"));
    Rig rig("ctl-decode-event");
    auto events = std::make_shared<runtime::EventRecorder>(*rig.loop.client, runtime::EventRecorderOptions());
    auto inf = rig.factory->informer<api::ConfigMap>();
    rig.loop.on_loop([&] {
        return inf->add_decode_error_handler(runtime::decode_failure_events<api::ConfigMap>(events, rig.loop.ioc.get_executor()));
    });
    rig.loop.on_loop([&] {
        rig.factory->start();
        return 0;
    });
    const sandbox::ResourceId events_id{"", "v1", "events"};
    auto listed = [&] { return server().store().list(events_id, "ctl-decode-event").at("items").as_array(); };
    REQUIRE(eventually([&] { return listed().size() == 1; }));
    auto ev = listed().at(0);
    CHECK(api::string_at(ev, {"type"}) == "Warning");
    CHECK(api::string_at(ev, {"reason"}) == "DecodeFailed");
    CHECK(api::string_at(ev, {"involvedObject", "kind"}) == "ConfigMap");
    CHECK(api::string_at(ev, {"involvedObject", "name"}) == "bad");
    CHECK(api::string_at(ev, {"involvedObject", "uid"}) == api::string_at(bad, {"metadata", "uid"}));
    CHECK(std::string(api::string_at(ev, {"message"})).find("data.k: expected string") != std::string::npos);
    CHECK(eventually([&] { return inf->has_synced(); }));  // the event is sent just before the informer marks itself synced
}

TEST_CASE("a reconcile that throws is logged, counted and retried until it succeeds; the process lives on") {
    test::ensure_namespace("ctl-err");
    server().store().create(test::configmaps_id, "ctl-err", configmap("ctl-err", "flaky"));
    Rig rig("ctl-err");
    std::atomic<int> calls{0};
    auto c = runtime::controller_for<json::value>("flaky", *rig.factory, api::ConfigMap::resource)
                 .complete([&](const Request&) -> asio::awaitable<Result> {
                     if (++calls <= 3) throw std::runtime_error("not yet");
                     co_return Result::done();
                 });
    rig.start(c);
    CHECK(eventually([&] { return calls.load() == 4; }));
    auto& m = c->metrics();
    CHECK(eventually([&] {
        return m.value("controller_runtime_reconcile_total", {{"controller", "flaky"}, {"result", "success"}}) == 1;
    }));
    CHECK(m.value("controller_runtime_reconcile_errors_total", {{"controller", "flaky"}}) == 3);
    CHECK(m.value("controller_runtime_reconcile_total", {{"controller", "flaky"}, {"result", "error"}}) == 3);
    auto text = m.render();
    CHECK(text.find("controller_runtime_reconcile_time_seconds_bucket{controller=\"flaky\",le=\"+Inf\"} 4") != std::string::npos);
    CHECK(text.find("workqueue_retries_total{controller=\"flaky\",name=\"flaky\"} 3") != std::string::npos);
}

TEST_CASE("a NotFound for the reconciled object itself ends its reconcile; a NotFound for another object is an error") {
    test::ensure_namespace("ctl-gone");
    server().store().create(test::configmaps_id, "ctl-gone", configmap("ctl-gone", "doomed"));
    server().store().create(test::configmaps_id, "ctl-gone", configmap("ctl-gone", "seeker"));
    Rig rig("ctl-gone");
    auto& client = *rig.loop.client;
    std::atomic<int> doomed_calls{0}, seeker_calls{0};
    // "doomed" deletes itself, then writes to itself: the ordinary end of a deletion.
    auto gone = runtime::controller_for<api::ConfigMap>("gone", *rig.factory)
                    .complete([&](const Request& r) -> asio::awaitable<Result> {
                        if (r.name != "doomed") co_return Result::done();
                        ++doomed_calls;
                        try {
                            co_await client.remove<api::ConfigMap>(r.namespace_, r.name);
                        } catch (const client::ApiError&) {
                        }
                        co_await client.get<api::ConfigMap>(r.namespace_, r.name);
                        co_return Result::done();
                    });
    // "seeker" reads an object that does not exist: a real failure, retried.
    auto seek = runtime::controller_for<api::ConfigMap>("seek", *rig.factory)
                    .complete([&](const Request& r) -> asio::awaitable<Result> {
                        if (r.name != "seeker") co_return Result::done();
                        ++seeker_calls;
                        co_await client.get<api::ConfigMap>(r.namespace_, "missing");
                        co_return Result::done();
                    });
    rig.start(gone);
    rig.start(seek);
    CHECK(eventually([&] { return seeker_calls.load() >= 2 && doomed_calls.load() >= 1; }));
    CHECK(eventually([&] { return seek->errors() >= 2; }));
    CHECK(eventually([&] { return gone->reconciles() >= 2; }));  // the add, and the delete event
    CHECK(gone->errors() == 0);
    CHECK(gone->metrics().value("controller_runtime_reconcile_errors_total", {{"controller", "gone"}}) == 0);
    CHECK(gone->queue().metrics().retries_total == 0);
}

TEST_CASE("requeue_after brings a key back after the delay") {
    test::ensure_namespace("ctl-after");
    server().store().create(test::configmaps_id, "ctl-after", configmap("ctl-after", "tick"));
    Rig rig("ctl-after");
    std::atomic<int> calls{0};
    auto c = runtime::controller_for<api::ConfigMap>("after", *rig.factory)
                 .complete([&](const Request&) -> asio::awaitable<Result> {
                     ++calls;
                     co_return Result::requeue_after(std::chrono::milliseconds(20));
                 });
    rig.start(c);
    CHECK(eventually([&] { return calls.load() >= 3; }));
}

TEST_CASE("no key is reconciled by two workers at once") {
    test::ensure_namespace("ctl-par");
    for (int i = 0; i < 5; ++i) server().store().create(test::configmaps_id, "ctl-par", configmap("ctl-par", "p" + std::to_string(i)));
    Rig rig("ctl-par");
    std::mutex mu;
    std::set<std::string> in_flight;
    std::atomic<bool> overlap{false};
    std::atomic<int> calls{0}, max_parallel{0}, parallel{0};
    auto c = runtime::controller_for<api::ConfigMap>("par", *rig.factory)
                 .workers(4)
                 .complete([&](const Request& r) -> asio::awaitable<Result> {
                     {
                         std::lock_guard lk(mu);
                         if (!in_flight.insert(r.str()).second) overlap = true;
                     }
                     int now = ++parallel;
                     int prev = max_parallel.load();
                     while (now > prev && !max_parallel.compare_exchange_weak(prev, now)) {}
                     asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(5));
                     co_await t.async_wait(asio::use_awaitable);
                     --parallel;
                     {
                         std::lock_guard lk(mu);
                         in_flight.erase(r.str());
                     }
                     ++calls;
                     co_return Result::done();
                 });
    rig.start(c);
    for (int round = 0; round < 10; ++round)
        for (int i = 0; i < 5; ++i) {
            auto name = "p" + std::to_string(i);
            server().store().update(test::configmaps_id, "ctl-par", name, configmap("ctl-par", name, std::to_string(round)));
        }
    CHECK(eventually([&] { return c->queue().len() == 0 && calls.load() >= 5 && parallel.load() == 0; }));
    CHECK_FALSE(overlap.load());
    CHECK(max_parallel.load() > 1);
}

TEST_CASE("generation_changed() lets spec changes through and skips status-only updates") {
    auto with_gen = [](int g) {
        return std::make_shared<const json::value>(json::value{{"metadata", {{"name", "x"}, {"generation", g}}}});
    };
    auto p = runtime::generation_changed<json::value>();
    using C = runtime::Change<json::value>;
    CHECK(p(C{runtime::ChangeType::Modified, with_gen(2), with_gen(1)}));
    CHECK_FALSE(p(C{runtime::ChangeType::Modified, with_gen(2), with_gen(2)}));
    CHECK(p(C{runtime::ChangeType::Added, with_gen(2), nullptr}));
    CHECK(p(C{runtime::ChangeType::Deleted, with_gen(2), nullptr}));
}

TEST_CASE("update conflicts are retried from the fresh cache until every object converges") {
    test::ensure_namespace("ctl-conflict");
    for (int i = 0; i < 4; ++i)
        server().store().create(test::configmaps_id, "ctl-conflict", configmap("ctl-conflict", "c" + std::to_string(i)));
    sandbox::FaultRule conflict;
    conflict.verb = "update";
    conflict.resource = "configmaps";
    conflict.code = 409;
    conflict.count = 3;
    server().faults().fail_next(conflict);
    Rig rig("ctl-conflict");
    auto inf = rig.factory->informer<api::ConfigMap>();
    auto& cl = *rig.loop.client;
    // Mirrors data.k into data.mirror, writing with the cached resourceVersion.
    auto c = runtime::controller_for<api::ConfigMap>("mirror", *rig.factory)
                 .workers(2)
                 .complete([&, inf](const Request& r) -> asio::awaitable<Result> {
                     auto cur = inf->store().get(r);
                     if (!cur) co_return Result::done();
                     if (cur->data.count("mirror") && cur->data.at("mirror") == cur->data.at("k")) co_return Result::done();
                     api::ConfigMap next = *cur;
                     next.data["mirror"] = cur->data.at("k");
                     co_await cl.replace(next);
                     co_return Result::done();
                 });
    rig.start(c);
    for (int round = 0; round < 5; ++round)
        for (int i = 0; i < 4; ++i) {
            auto name = "c" + std::to_string(i);
            auto obj = server().store().get(test::configmaps_id, "ctl-conflict", name);
            obj.as_object()["data"].as_object()["k"] = std::to_string(round);
            server().store().update(test::configmaps_id, "ctl-conflict", name, obj);
        }
    auto converged = [&] {
        auto l = server().store().list(test::configmaps_id, "ctl-conflict");
        for (const auto& it : l.at("items").as_array()) {
            const auto& d = it.at("data").as_object();
            if (!d.contains("mirror") || d.at("mirror") != d.at("k") || d.at("k") != "4") return false;
        }
        return true;
    };
    CHECK(eventually(converged));
    CHECK(c->errors() >= 3);
    std::map<std::string, std::string> cached;
    CHECK(eventually([&] {
        cached = rig.loop.on_loop([&] {
            std::map<std::string, std::string> out;
            for (const auto& o : inf->store().list()) out[o->metadata.name] = o->metadata.resourceVersion;
            return out;
        });
        return cached == test::server_versions(test::configmaps_id, "ctl-conflict");
    }));
}

TEST_CASE("the finalizer is added before the first apply, and removed only after cleanup succeeds") {
    test::ensure_namespace("fin");
    server().store().create(test::configmaps_id, "fin", configmap("fin", "guarded"));
    Rig rig("fin");
    auto inf = rig.factory->informer<api::ConfigMap>();
    auto& cl = *rig.loop.client;
    std::atomic<int> applies{0}, cleanups{0};
    std::atomic<bool> applied_without_finalizer{false};
    auto c = runtime::controller_for<api::ConfigMap>("fin", *rig.factory)
                 .complete([&, inf](const Request& r) -> asio::awaitable<Result> {
                     auto obj = inf->store().get(r);
                     runtime::FinalizerReconcile<api::ConfigMap> body =
                         [&](runtime::FinalizerEvent ev, std::shared_ptr<const api::ConfigMap> o) -> asio::awaitable<Result> {
                         if (ev == runtime::FinalizerEvent::Apply) {
                             auto& f = o->metadata.finalizers;
                             if (std::find(f.begin(), f.end(), "example.com/cleanup") == f.end())
                                 applied_without_finalizer = true;
                             ++applies;
                             co_return Result::done();
                         }
                         if (++cleanups == 1) throw std::runtime_error("cleanup failed once");
                         co_return Result::done();
                     };
                     co_return co_await runtime::finalizer<api::ConfigMap>(cl, api::ConfigMap::resource, "example.com/cleanup",
                                                                          obj, body);
                 });
    rig.start(c);
    REQUIRE(eventually([&] { return applies.load() >= 1; }));
    CHECK_FALSE(applied_without_finalizer.load());
    auto fins = server().store().get(test::configmaps_id, "fin", "guarded").at("metadata").at("finalizers");
    CHECK(fins == json::array{"example.com/cleanup"});
    // Another controller's finalizer arrives too; ours must not clobber it.
    auto obj = server().store().get(test::configmaps_id, "fin", "guarded");
    obj.as_object()["metadata"].as_object()["finalizers"].as_array().push_back("other.io/keep");
    server().store().update(test::configmaps_id, "fin", "guarded", obj);
    server().store().remove(test::configmaps_id, "fin", "guarded");
    CHECK(eventually([&] {
        auto o = server().store().get(test::configmaps_id, "fin", "guarded");
        return o.at("metadata").at("finalizers") == json::array{"other.io/keep"};
    }));
    // Once failed, then succeeded; a reconcile that read the cache before the finalizer's
    // removal showed there may run the cleanup once more (cleanups run at least once, so they
    // must be idempotent).
    CHECK(cleanups.load() >= 2);
}

TEST_CASE("a finalizer patch made against a stale object is refused instead of clobbering") {
    test::ensure_namespace("fin-stale");
    auto created = server().store().create(test::configmaps_id, "fin-stale", configmap("fin-stale", "x"));
    auto stale = api::from_json<api::ConfigMap>(created);
    auto obj = created;
    obj.as_object()["metadata"].as_object()["finalizers"] = json::array{"other.io/keep"};
    server().store().update(test::configmaps_id, "fin-stale", "x", obj);
    test::Loop loop;
    auto patch = runtime::add_finalizer_patch(stale, "example.com/cleanup");
    CHECK_THROWS_AS(loop.sync(loop.client->patch(api::ConfigMap::resource, "fin-stale", "x", client::PatchType::Json, patch)),
                    client::ApiError);
    auto now = server().store().get(test::configmaps_id, "fin-stale", "x");
    CHECK(now.at("metadata").at("finalizers") == json::array{"other.io/keep"});
    auto fresh = api::from_json<api::ConfigMap>(now);
    auto patch2 = runtime::add_finalizer_patch(fresh, "example.com/cleanup");
    loop.sync(loop.client->patch(api::ConfigMap::resource, "fin-stale", "x", client::PatchType::Json, patch2));
    now = server().store().get(test::configmaps_id, "fin-stale", "x");
    CHECK(now.at("metadata").at("finalizers") == json::array{"other.io/keep", "example.com/cleanup"});
    CHECK_THROWS_AS(runtime::remove_finalizer_patch(stale, "example.com/cleanup"), std::invalid_argument);
}

TEST_CASE("the event recorder aggregates repeats into one Event and rate-limits per object") {
    test::ensure_namespace("events");
    auto cm = api::from_json<api::ConfigMap>(server().store().create(test::configmaps_id, "events", configmap("events", "subject")));
    test::Loop loop;
    runtime::EventRecorderOptions o;
    o.component = "test-operator";
    o.burst = 3;
    auto t0 = std::chrono::system_clock::now();
    auto clock = std::make_shared<std::chrono::system_clock::time_point>(t0);
    o.now = [clock] { return *clock; };
    runtime::EventRecorder rec(*loop.client, o);
    auto ref = runtime::EventRecorder::reference_to(cm, api::ConfigMap::resource);
    CHECK(loop.sync(rec.record(ref, "Normal", "Synced", "mirrored to 3 namespaces")));
    *clock += std::chrono::seconds(2);
    CHECK(loop.sync(rec.record(ref, "Normal", "Synced", "mirrored to 3 namespaces")));
    CHECK(loop.sync(rec.record(ref, "Warning", "Failed", "namespace x is terminating")));
    CHECK_FALSE(loop.sync(rec.record(ref, "Normal", "Synced", "mirrored to 3 namespaces")));  // over the burst
    CHECK(rec.dropped() == 1);
    auto events = server().store().list(sandbox::ResourceId{"", "v1", "events"}, "events").at("items").as_array();
    REQUIRE(events.size() == 2);
    std::map<std::string, json::value> by_reason;
    for (auto& e : events) by_reason[std::string(e.at("reason").as_string())] = e;
    CHECK(by_reason["Synced"].at("count") == 2);
    CHECK(by_reason["Synced"].at("involvedObject").at("name") == "subject");
    CHECK(by_reason["Synced"].at("involvedObject").at("uid") == json::value(cm.metadata.uid));
    CHECK(by_reason["Synced"].at("firstTimestamp") != by_reason["Synced"].at("lastTimestamp"));
    CHECK(by_reason["Failed"].at("type") == "Warning");
    // Five minutes later the object has a token again.
    *clock += std::chrono::minutes(5);
    CHECK(loop.sync(rec.record(ref, "Normal", "Synced", "mirrored to 3 namespaces")));
}

TEST_CASE("the event recorder remembers only cache_size objects: a forgotten one starts a new Event") {
    test::ensure_namespace("events-lru");
    auto a = api::from_json<api::ConfigMap>(server().store().create(test::configmaps_id, "events-lru", configmap("events-lru", "a")));
    auto b = api::from_json<api::ConfigMap>(server().store().create(test::configmaps_id, "events-lru", configmap("events-lru", "b")));
    test::Loop loop;
    runtime::EventRecorderOptions o;
    o.cache_size = 1;
    runtime::EventRecorder rec(*loop.client, o);
    auto ra = runtime::EventRecorder::reference_to(a, api::ConfigMap::resource);
    auto rb = runtime::EventRecorder::reference_to(b, api::ConfigMap::resource);
    CHECK(loop.sync(rec.record(ra, "Normal", "Synced", "same")));
    CHECK(loop.sync(rec.record(ra, "Normal", "Synced", "same")));  // aggregated: count 2
    CHECK(loop.sync(rec.record(rb, "Normal", "Synced", "same")));  // pushes a out
    CHECK(loop.sync(rec.record(ra, "Normal", "Synced", "same")));  // a is new again
    std::map<std::string, std::vector<std::int64_t>> counts;
    auto listed = server().store().list(sandbox::ResourceId{"", "v1", "events"}, "events-lru");
    for (auto& e : listed.at("items").as_array())
        counts[std::string(e.at("involvedObject").at("name").as_string())].push_back(e.at("count").to_number<std::int64_t>());
    for (auto& [k, v] : counts) std::sort(v.begin(), v.end());
    CHECK(counts["a"] == std::vector<std::int64_t>{1, 2});
    CHECK(counts["b"] == std::vector<std::int64_t>{1});
    runtime::EventRecorderOptions zero;
    zero.cache_size = 0;
    CHECK_THROWS_AS(runtime::EventRecorder(*loop.client, zero), std::invalid_argument);
}

TEST_CASE("metrics render in Prometheus text format with cumulative histograms and escaped labels") {
    runtime::MetricsRegistry m;
    m.describe("demo_total", runtime::MetricsRegistry::Type::Counter, "Demo counter");
    m.inc("demo_total", {{"code", "200"}, {"method", "GET"}});
    m.inc("demo_total", {{"code", "200"}, {"method", "GET"}});
    m.observe("demo_seconds", {{"controller", "a\"b"}}, 0.02);
    auto text = m.render();
    CHECK(text.find("# TYPE demo_total counter\n") != std::string::npos);
    CHECK(text.find("demo_total{code=\"200\",method=\"GET\"} 2\n") != std::string::npos);
    CHECK(text.find("demo_seconds_bucket{controller=\"a\\\"b\",le=\"0.01\"} 0\n") != std::string::npos);
    CHECK(text.find("demo_seconds_bucket{controller=\"a\\\"b\",le=\"0.025\"} 1\n") != std::string::npos);
    CHECK(text.find("demo_seconds_bucket{controller=\"a\\\"b\",le=\"60\"} 1\n") != std::string::npos);
    CHECK(text.find("demo_seconds_count{controller=\"a\\\"b\"} 1\n") != std::string::npos);
}
