// ObjectStore: list (selectors, pagination, resourceVersion semantics), watch (initial state,
// history replay, 410 after compaction, selector transitions, bookmarks, slow consumers) and
// the on_change hook.
#include "store_support.hpp"

#include <vck/sandbox/storage/object_store.hpp>

#include <doctest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace vck::sandbox;
using namespace vck::sandbox::store_test;
namespace json = boost::json;

namespace {

json::value labelled(std::string_view name, json::object labels) {
    return json::object{{"metadata", json::object{{"name", name}, {"labels", std::move(labels)}}}};
}

/// `obj` made a pod the server accepts: one container with an image.
std::vector<std::string> names_of(const json::value& list) {
    std::vector<std::string> out;
    for (const auto& item : list.at("items").as_array())
        out.emplace_back(item.at("metadata").at("name").as_string());
    return out;
}

std::string rv_of(const json::value& obj) { return std::string(obj.at("metadata").at("resourceVersion").as_string()); }

std::string name_of(const HubEvent& e) { return std::string(e.object->at("metadata").at("name").as_string()); }

std::vector<std::string> types_of(const std::vector<HubEvent>& events) {
    std::vector<std::string> out;
    for (const auto& e : events) out.push_back(e.type);
    return out;
}

} // namespace

TEST_CASE("a list is a <Kind>List at the current resourceVersion, items without kind") {
    ObjectStore store;
    store.create(configmaps, "default", labelled("b", {}));
    store.create(configmaps, "default", labelled("a", {}));
    store.create(configmaps, "kube-system", labelled("c", {}));
    auto list = store.list(configmaps, "default");
    CHECK(list.at("kind") == "ConfigMapList");
    CHECK(list.at("apiVersion") == "v1");
    CHECK(rv_of(list) == std::to_string(store.resource_version()));
    CHECK(names_of(list) == std::vector<std::string>{"a", "b"});
    CHECK_FALSE(list.at("items").at(0).as_object().contains("kind"));
    CHECK(names_of(store.list(configmaps, "")).size() == 3);
}

TEST_CASE("label and field selectors filter lists") {
    ObjectStore store;
    store.create(pods, "default", runnable(parse(R"({"metadata": {"name": "a", "labels": {"app": "web"}}, "spec": {"nodeName": "n1"}})")));
    store.create(pods, "default", runnable(parse(R"({"metadata": {"name": "b", "labels": {"app": "db"}}, "spec": {"nodeName": "n2"}})")));
    store.create(pods, "default", runnable(parse(R"({"metadata": {"name": "c"}})")));
    StoreListOptions web;
    web.label_selector = "app=web";
    CHECK(names_of(store.list(pods, "default", web)) == std::vector<std::string>{"a"});
    StoreListOptions has_app;
    has_app.label_selector = "app";
    CHECK(names_of(store.list(pods, "default", has_app)) == std::vector<std::string>{"a", "b"});
    StoreListOptions on_n2;
    on_n2.field_selector = "spec.nodeName=n2";
    CHECK(names_of(store.list(pods, "default", on_n2)) == std::vector<std::string>{"b"});
    StoreListOptions unbound;
    unbound.field_selector = "spec.nodeName=";
    CHECK(names_of(store.list(pods, "default", unbound)) == std::vector<std::string>{"c"});
    StoreListOptions by_name;
    by_name.field_selector = "metadata.name!=a";
    CHECK(names_of(store.list(pods, "default", by_name)) == std::vector<std::string>{"b", "c"});
}

TEST_CASE("a malformed or unsupported selector is 400 BadRequest") {
    ObjectStore store;
    StoreListOptions bad_label;
    bad_label.label_selector = "app in (";
    auto st = refusal([&] { store.list(pods, "default", bad_label); });
    CHECK(st.code == 400);
    CHECK(st.reason == "BadRequest");
    StoreListOptions bad_field;
    bad_field.field_selector = "spec.color=red";
    auto st2 = refusal([&] { store.list(pods, "default", bad_field); });
    CHECK(st2.code == 400);
    CHECK(st2.message == "field label not supported: spec.color");
    StoreWatchOptions w;
    w.label_selector = "a==b==c";
    CHECK(refusal([&] { store.watch(pods, "default", w); }).code == 400);
}

TEST_CASE("pagination over 1200 objects stays consistent across a write between pages") {
    ObjectStore store;
    for (int i = 0; i < 1200; ++i) {
        char name[16];
        std::snprintf(name, sizeof name, "cm-%04d", i);
        store.create(configmaps, "default", labelled(name, {}));
    }
    StoreListOptions page;
    page.limit = 500;
    auto first = store.list(configmaps, "default", page);
    CHECK(first.at("items").as_array().size() == 500);
    CHECK(first.at("metadata").at("remainingItemCount") == 700);
    auto snapshot_rv = first.at("metadata").at("resourceVersion");

    // Writes between pages: a new object, a deletion and a change, all after the snapshot.
    store.create(configmaps, "default", labelled("cm-0999a", {}));
    store.remove(configmaps, "default", "cm-1100");
    auto changed = store.get(configmaps, "default", "cm-1000");
    changed.as_object()["data"] = json::object{{"k", "v"}};
    store.update(configmaps, "default", "cm-1000", changed);

    std::vector<std::string> all = names_of(first);
    auto token = std::string(first.at("metadata").at("continue").as_string());
    json::value last;
    while (!token.empty()) {
        page.continue_token = token;
        last = store.list(configmaps, "default", page);
        CHECK(last.at("metadata").at("resourceVersion") == snapshot_rv);
        for (const auto& item : last.at("items").as_array()) {
            all.emplace_back(item.at("metadata").at("name").as_string());
            if (item.at("metadata").at("name") == "cm-1000") CHECK_FALSE(item.as_object().contains("data"));
        }
        const auto* next = last.at("metadata").as_object().if_contains("continue");
        token = next ? std::string(next->as_string()) : std::string();
    }
    CHECK(all.size() == 1200);
    CHECK(std::set<std::string>(all.begin(), all.end()).size() == 1200);
    CHECK(std::find(all.begin(), all.end(), "cm-1100") != all.end());
    CHECK(std::find(all.begin(), all.end(), "cm-0999a") == all.end());
    CHECK_FALSE(last.at("metadata").as_object().contains("remainingItemCount"));

    // A fresh list sees the writes.
    auto fresh = names_of(store.list(configmaps, "default"));
    CHECK(fresh.size() == 1200);
    CHECK(std::find(fresh.begin(), fresh.end(), "cm-0999a") != fresh.end());
}

TEST_CASE("a continue token whose snapshot was compacted is 410 Expired with the real message") {
    ObjectStore store;
    for (const char* n : {"a", "b", "c"}) store.create(configmaps, "default", labelled(n, {}));
    StoreListOptions page;
    page.limit = 1;
    auto first = store.list(configmaps, "default", page);
    store.create(configmaps, "default", labelled("d", {}));
    store.compact();
    page.continue_token = std::string(first.at("metadata").at("continue").as_string());
    auto st = refusal([&] { store.list(configmaps, "default", page); });
    CHECK(st.code == 410);
    CHECK(st.reason == "Expired");
    CHECK(st.message.rfind("The provided continue parameter is too old to display a consistent list result.", 0) == 0);
    // The token in the error continues inconsistently from where the client was.
    REQUIRE_FALSE(st.metadata.continue_.empty());
    page.continue_token = st.metadata.continue_;
    page.limit = 0;
    CHECK(names_of(store.list(configmaps, "default", page)) == std::vector<std::string>{"b", "c", "d"});
}

TEST_CASE("an unreadable continue token is 400") {
    ObjectStore store;
    StoreListOptions page;
    page.continue_token = "!!!";
    auto st = refusal([&] { store.list(configmaps, "default", page); });
    CHECK(st.code == 400);
    CHECK(st.message.rfind("continue key is not valid", 0) == 0);
}

TEST_CASE("list resourceVersion: 0 serves everything, N with a limit is exact, a future N is 504") {
    ObjectStore store;
    auto a = store.create(configmaps, "default", labelled("a", {}));
    store.create(configmaps, "default", labelled("b", {}));
    store.create(configmaps, "default", labelled("c", {}));

    StoreListOptions any;
    any.resource_version = "0";
    any.limit = 1;  // ignored with resourceVersion=0, as by the watch cache
    CHECK(names_of(store.list(configmaps, "default", any)).size() == 3);

    StoreListOptions exact;
    exact.resource_version = rv_of(a);
    exact.limit = 10;
    auto old = store.list(configmaps, "default", exact);
    CHECK(names_of(old) == std::vector<std::string>{"a"});
    CHECK(rv_of(old) == rv_of(a));

    StoreListOptions not_older;
    not_older.resource_version = rv_of(a);
    CHECK(names_of(store.list(configmaps, "default", not_older)).size() == 3);

    StoreListOptions future;
    future.resource_version = std::to_string(store.resource_version() + 100);
    auto st = refusal([&] { store.list(configmaps, "default", future); });
    CHECK(st.code == 504);
    CHECK(st.reason == "Timeout");
    CHECK(st.message.rfind("Too large resource version: ", 0) == 0);

    store.compact();
    auto gone = refusal([&] { store.list(configmaps, "default", exact); });
    CHECK(gone.code == 410);
}

TEST_CASE("a watch from resourceVersion 0 starts with the current state, then goes live") {
    ObjectStore store;
    store.create(configmaps, "default", labelled("a", {}));
    store.create(configmaps, "kube-system", labelled("other-ns", {}));
    auto w = store.watch(configmaps, "default", from_rv("0"));
    auto initial = w->drain();
    REQUIRE(initial.size() == 1);
    CHECK(initial[0].type == "ADDED");
    CHECK(name_of(initial[0]) == "a");
    CHECK(initial[0].object->at("kind") == "ConfigMap");

    auto b = store.create(configmaps, "default", labelled("b", {}));
    b.as_object()["data"] = json::object{{"x", "1"}};
    store.update(configmaps, "default", "b", b);
    store.remove(configmaps, "default", "b");
    store.create(configmaps, "kube-system", labelled("elsewhere", {}));
    auto live = w->drain();
    CHECK(types_of(live) == std::vector<std::string>{"ADDED", "MODIFIED", "DELETED"});
    for (std::size_t i = 1; i < live.size(); ++i)
        CHECK(std::stoll(rv_of(*live[i].object)) > std::stoll(rv_of(*live[i - 1].object)));
    CHECK(rv_of(*live.back().object) == std::to_string(store.resource_version() - 1));
}

TEST_CASE("a watch from resourceVersion N replays the history after N") {
    ObjectStore store;
    auto a = store.create(configmaps, "default", labelled("a", {}));
    store.create(configmaps, "default", labelled("b", {}));
    store.remove(configmaps, "default", "a");
    auto w = store.watch(configmaps, "default", from_rv(rv_of(a)));
    auto events = w->drain();
    REQUIRE(events.size() == 2);
    CHECK(events[0].type == "ADDED");
    CHECK(name_of(events[0]) == "b");
    CHECK(events[1].type == "DELETED");
    CHECK(name_of(events[1]) == "a");
    CHECK_FALSE(w->closed());
}

TEST_CASE("a watch from a resourceVersion older than the history gets one 410 ERROR event") {
    ObjectStoreOptions small;
    small.history = 3;
    ObjectStore store(small);
    auto a = store.create(configmaps, "default", labelled("a", {}));
    for (const char* n : {"b", "c", "d", "e"}) store.create(configmaps, "default", labelled(n, {}));
    auto w = store.watch(configmaps, "default", from_rv(rv_of(a)));
    auto events = w->drain();
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == "ERROR");
    CHECK(events[0].object->at("kind") == "Status");
    CHECK(events[0].object->at("code") == 410);
    CHECK(events[0].object->at("reason") == "Expired");
    CHECK(std::string(events[0].object->at("message").as_string()).rfind("too old resource version: " + rv_of(a) + " (", 0) == 0);
    CHECK(w->closed());
}

TEST_CASE("compact() makes every earlier resourceVersion too old to watch from") {
    ObjectStore store;
    auto a = store.create(configmaps, "default", labelled("a", {}));
    store.create(configmaps, "default", labelled("b", {}));
    store.compact();
    auto w = store.watch(configmaps, "default", from_rv(rv_of(a)));
    auto events = w->drain();
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == "ERROR");
    CHECK(std::string(events[0].object->at("message").as_string()) ==
          "too old resource version: " + rv_of(a) + " (" + std::to_string(store.resource_version()) + ")");
    // From the current resourceVersion a watch still works.
    auto ok = store.watch(configmaps, "default", from_rv(std::to_string(store.resource_version())));
    store.create(configmaps, "default", labelled("c", {}));
    CHECK(types_of(ok->drain()) == std::vector<std::string>{"ADDED"});
}

TEST_CASE("an object that stops matching a watch's selector is DELETED, one that starts matching is ADDED") {
    ObjectStore store;
    auto w = store.watch(configmaps, "default", [] { StoreWatchOptions o; o.label_selector = "tier=front"; return o; }());
    auto cm = store.create(configmaps, "default", labelled("c", {{"tier", "back"}}));
    CHECK(w->drain().empty());
    cm.at("metadata").as_object()["labels"] = json::object{{"tier", "front"}};
    cm = store.update(configmaps, "default", "c", cm);
    auto added = w->drain();
    REQUIRE(added.size() == 1);
    CHECK(added[0].type == "ADDED");
    cm.as_object()["data"] = json::object{{"k", "v"}};
    cm = store.update(configmaps, "default", "c", cm);
    CHECK(types_of(w->drain()) == std::vector<std::string>{"MODIFIED"});
    cm.at("metadata").as_object()["labels"] = json::object{{"tier", "back"}};
    cm = store.update(configmaps, "default", "c", cm);
    auto left = w->drain();
    REQUIRE(left.size() == 1);
    CHECK(left[0].type == "DELETED");
    CHECK(rv_of(*left[0].object) == rv_of(cm));
    store.remove(configmaps, "default", "c");
    CHECK(w->drain().empty());
}

TEST_CASE("a field-selected pod watch sees a pod arrive when it is bound to its node") {
    ObjectStore store;
    auto w = store.watch(pods, "", [] { StoreWatchOptions o; o.field_selector = "spec.nodeName=n1"; return o; }());
    store.create(pods, "default", runnable(labelled("p", {})));
    CHECK(w->drain().empty());
    store.bind("default", "p", parse(R"({"target": {"name": "n1"}})"));
    auto events = w->drain();
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == "ADDED");
    CHECK(events[0].object->at("spec").at("nodeName") == "n1");
}

TEST_CASE("bookmark() reaches only the watches that allow bookmarks") {
    ObjectStore store;
    auto with = store.watch(configmaps, "default", from_rv("0", true));
    auto without = store.watch(configmaps, "default", from_rv("0"));
    store.create(configmaps, "default", labelled("a", {}));
    with->drain();
    without->drain();
    store.bookmark();
    auto events = with->drain();
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == "BOOKMARK");
    CHECK(events[0].object->at("kind") == "ConfigMap");
    CHECK(events[0].object->at("apiVersion") == "v1");
    CHECK(rv_of(*events[0].object) == std::to_string(store.resource_version()));
    CHECK(without->drain().empty());
}

TEST_CASE("a watcher that falls too far behind is closed") {
    ObjectStoreOptions opts;
    opts.watch_queue_limit = 5;
    ObjectStore store(opts);
    auto slow = store.watch(configmaps, "default", from_rv("0"));
    for (int i = 0; i < 10; ++i) store.create(configmaps, "default", labelled("c" + std::to_string(i), {}));
    CHECK(slow->closed());
    CHECK(slow->drain().size() == 5);
    store.create(configmaps, "default", labelled("later", {}));
    CHECK(slow->drain().empty());
}

TEST_CASE("initial events do not count against the slow-consumer bound") {
    ObjectStoreOptions opts;
    opts.watch_queue_limit = 2;
    ObjectStore store(opts);
    for (int i = 0; i < 10; ++i) store.create(configmaps, "default", labelled("c" + std::to_string(i), {}));
    auto w = store.watch(configmaps, "default", from_rv("0"));
    store.create(configmaps, "default", labelled("new", {}));
    CHECK_FALSE(w->closed());
    CHECK(w->drain().size() == 11);
}

TEST_CASE("the notify callback fires when events arrive, and at once if some are pending") {
    ObjectStore store;
    store.create(configmaps, "default", labelled("a", {}));
    auto w = store.watch(configmaps, "default", from_rv("0"));
    int calls = 0;
    w->set_notify([&] { ++calls; });
    CHECK(calls == 1);  // the initial ADDED was already queued
    store.create(configmaps, "default", labelled("b", {}));
    CHECK(calls == 2);
    store.create(configmaps, "kube-system", labelled("c", {}));
    CHECK(calls == 2);
    store.close_watches();
    CHECK(calls == 3);
    CHECK(w->closed());
    CHECK(w->drain().size() == 2);
}

TEST_CASE("a stopped watch receives nothing more") {
    ObjectStore store;
    auto w = store.watch(configmaps, "default");
    w->stop();
    store.create(configmaps, "default", labelled("a", {}));
    CHECK(w->drain().empty());
    CHECK(w->closed());
}

TEST_CASE("watches see writes from other threads in resourceVersion order") {
    ObjectStore store;
    auto w = store.watch(configmaps, "", {});
    std::vector<std::thread> writers;
    for (int t = 0; t < 4; ++t)
        writers.emplace_back([&, t] {
            for (int i = 0; i < 50; ++i)
                store.create(configmaps, "default", labelled("t" + std::to_string(t) + "-" + std::to_string(i), {}));
        });
    for (auto& t : writers) t.join();
    auto events = w->drain();
    REQUIRE(events.size() == 200);
    for (std::size_t i = 1; i < events.size(); ++i)
        CHECK(std::stoll(rv_of(*events[i].object)) > std::stoll(rv_of(*events[i - 1].object)));
}

TEST_CASE("on_change listeners see every write in order and may write back into the store") {
    ObjectStore store;
    std::vector<std::string> seen;
    auto id = store.on_change([&](const StoreChange& c) {
        seen.push_back(c.type + " " + c.resource + " " + c.name);
        if (c.type == "ADDED" && c.resource == "pods") {
            // A simulated kubelet reacting in-process: mark the pod running.
            auto pod = *c.object;
            pod.as_object()["status"] = json::object{{"phase", "Running"}};
            store.update(pods, c.namespace_, c.name, pod, "status");
        }
    });
    store.create(pods, "default", runnable(labelled("p", {})));
    CHECK(store.get(pods, "default", "p").at("status").at("phase") == "Running");
    CHECK(seen == std::vector<std::string>{"ADDED pods p", "MODIFIED pods p"});
    store.remove_listener(id);
    store.create(configmaps, "default", labelled("c", {}));
    CHECK(seen.size() == 2);
}

TEST_CASE("remove_listener returns only once the listener has finished on another thread") {
    ObjectStore store;
    std::atomic<bool> entered{false}, inside{false};
    std::atomic<int> calls{0};
    auto id = store.on_change([&](const StoreChange&) {
        ++calls;
        inside = true;
        entered = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        inside = false;
    });
    std::thread writer([&] { store.create(configmaps, "default", labelled("c", {})); });
    while (!entered) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    store.remove_listener(id);  // the writer's thread is inside the listener now
    CHECK_FALSE(inside);
    writer.join();
    store.create(configmaps, "default", labelled("d", {}));
    CHECK(calls == 1);
}
