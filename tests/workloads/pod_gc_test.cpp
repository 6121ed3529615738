// The sandbox's pod garbage collector (sandbox/cluster/pod_gc.hpp), pass by pass: a pod bound to a node
// that does not exist goes once the quarantine has passed; a pod of a node that exists, or that
// is made again within the quarantine, stays.
#include "workloads_support.hpp"

#include <vck/sandbox/cluster/pod_gc.hpp>
#include <vck/sandbox/eventually.hpp>

#include <doctest.h>

#include <chrono>
#include <string>
#include <thread>

namespace {

using namespace vck::sandbox;
using namespace vck::sandbox::workloads_test;

const ResourceId nodes{"", "v1", "nodes"};

void node(ObjectStore& store, std::string_view name) {
    store.create(nodes, "", parse(R"({"metadata":{"name":")" + std::string(name) + R"("}})"));
}

void pod_on(ObjectStore& store, std::string_view name, std::string_view node_name) {
    store.create(pods, "default",
                 parse(R"({"metadata":{"name":")" + std::string(name) + R"("},"spec":{"nodeName":")" + std::string(node_name) +
                       R"(","containers":[{"name":"main","image":"busybox:1"}]}})"));
}

} // namespace

TEST_CASE("a pod whose node is gone is deleted once the quarantine has passed; others stay") {
    using namespace std::chrono_literals;
    ObjectStore store;
    node(store, "here");
    node(store, "back");
    pod_on(store, "on-here", "here");
    pod_on(store, "on-gone", "gone");
    pod_on(store, "on-back", "back");
    PodGarbageCollector gc(store, 200ms);
    store.remove(nodes, "", "back");

    auto next = gc.pass();
    CHECK(next.has_value());  // it comes back when the quarantine ends
    CHECK(exists(store, pods, "default", "on-gone"));
    CHECK(exists(store, pods, "default", "on-back"));
    node(store, "back");  // made again within the quarantine
    std::this_thread::sleep_for(250ms);
    CHECK_FALSE(gc.pass().has_value());
    CHECK_FALSE(exists(store, pods, "default", "on-gone"));  // deleted at once, grace period 0
    CHECK(exists(store, pods, "default", "on-back"));
    CHECK(exists(store, pods, "default", "on-here"));
}

TEST_CASE("started, it follows the change feed: pods of a node deleted later, and a pod bound later to a missing node, "
          "go after the quarantine; a node made again keeps its pods") {
    using namespace std::chrono_literals;
    ObjectStore store;
    node(store, "here");
    node(store, "doomed");
    node(store, "back");
    pod_on(store, "early", "doomed");  // from the first list
    PodGarbageCollector gc(store, 300ms);
    gc.start();
    pod_on(store, "late", "doomed");   // from the feed
    pod_on(store, "on-back", "back");
    pod_on(store, "on-here", "here");
    store.remove(nodes, "", "doomed");
    store.remove(nodes, "", "back");
    pod_on(store, "lost", "nowhere");  // bound to a node that never was
    node(store, "back");               // made again within the quarantine
    CHECK(exists(store, pods, "default", "early"));  // not before the quarantine
    CHECK(vck::sandbox::eventually([&] {
        return !exists(store, pods, "default", "early") && !exists(store, pods, "default", "late") &&
               !exists(store, pods, "default", "lost");
    }, std::chrono::seconds(10)));
    CHECK(exists(store, pods, "default", "on-back"));
    CHECK(exists(store, pods, "default", "on-here"));
    gc.stop();
}
