// Expectations (include/vck/runtime/expectations.hpp): what a controller created and its cache
// does not show yet, on a ManualClock so that the ttl is counted, not slept.
#include <vck/api/core_v1.hpp>
#include <vck/runtime/expectations.hpp>
#include <vck/runtime/manual_clock.hpp>

#include "no_beast.hpp"

#include <doctest.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

using namespace vck;

namespace {

using ExpectedMaps = runtime::Expectations<api::ConfigMap, runtime::ManualClock>;
constexpr std::chrono::seconds expectations_ttl{30};

api::ConfigMap expectations_object(std::string name, std::string data = "") {
    api::ConfigMap cm;
    cm.metadata.namespace_ = "ns";
    cm.metadata.name = std::move(name);
    if (!data.empty()) cm.data["v"] = std::move(data);
    return cm;
}

std::vector<std::string> expectations_names(const std::vector<api::ConfigMap>& objects) {
    std::vector<std::string> out;
    for (const auto& o : objects) out.push_back(o.metadata.name);
    return out;
}

/// A cache that shows the keys put into it.
struct ExpectationsCache {
    std::set<runtime::ObjectKey> keys;
    bool operator()(const runtime::ObjectKey& k) const { return keys.contains(k); }
};

} // namespace

TEST_CASE("an expected object the cache does not show yet is outstanding for its owner only") {
    runtime::ManualClock clock;
    ExpectedMaps e(expectations_ttl, clock);
    ExpectationsCache cache;
    e.expect("owner-a", expectations_object("a1"));
    e.expect("owner-a", expectations_object("a2"));
    e.expect("owner-b", expectations_object("b1"));
    CHECK(expectations_names(e.outstanding("owner-a", cache)) == std::vector<std::string>{"a1", "a2"});
    CHECK(expectations_names(e.outstanding("owner-b", cache)) == std::vector<std::string>{"b1"});
    CHECK(e.outstanding("owner-c", cache).empty());
    CHECK(e.size() == 3);  // asking drops nothing that is still expected
}

TEST_CASE("an expectation is satisfied, and dropped, once the cache shows its object") {
    runtime::ManualClock clock;
    ExpectedMaps e(expectations_ttl, clock);
    ExpectationsCache cache;
    e.expect("owner-a", expectations_object("a1"));
    e.expect("owner-a", expectations_object("a2"));
    e.expect("owner-b", expectations_object("b1"));
    cache.keys.insert(runtime::ObjectKey{"ns", "a1"});
    cache.keys.insert(runtime::ObjectKey{"ns", "b1"});
    CHECK(expectations_names(e.outstanding("owner-a", cache)) == std::vector<std::string>{"a2"});
    // The sweep covers every owner: b1 went too, and does not come back when the cache forgets it.
    CHECK(e.size() == 1);
    cache.keys.clear();
    CHECK(e.outstanding("owner-b", cache).empty());
    CHECK(expectations_names(e.outstanding("owner-a", cache)) == std::vector<std::string>{"a2"});
}

TEST_CASE("an expectation the cache never satisfies is dropped once older than its ttl") {
    runtime::ManualClock clock;
    ExpectedMaps e(expectations_ttl, clock);
    ExpectationsCache cache;
    e.expect("owner-a", expectations_object("a1"));
    clock.advance(expectations_ttl);
    CHECK(expectations_names(e.outstanding("owner-a", cache)) == std::vector<std::string>{"a1"});  // not older yet
    clock.advance(std::chrono::nanoseconds(1));
    CHECK(e.outstanding("owner-a", cache).empty());
    CHECK(e.size() == 0);
}

TEST_CASE("expecting an object again replaces its record and restarts its time") {
    runtime::ManualClock clock;
    ExpectedMaps e(expectations_ttl, clock);
    ExpectationsCache cache;
    e.expect("owner-a", expectations_object("a1", "first"));
    clock.advance(std::chrono::seconds(20));
    e.expect("owner-a", expectations_object("a1", "second"));
    clock.advance(std::chrono::seconds(20));  // 40s after the first expect, 20s after the second
    auto left = e.outstanding("owner-a", cache);
    REQUIRE(left.size() == 1);
    CHECK(left[0].data.at("v") == "second");
    CHECK(e.size() == 1);
}

TEST_CASE("forgetting one object or one owner drops exactly those expectations") {
    runtime::ManualClock clock;
    ExpectedMaps e(expectations_ttl, clock);
    ExpectationsCache cache;
    e.expect("owner-a", expectations_object("a1"));
    e.expect("owner-a", expectations_object("a2"));
    e.expect("owner-b", expectations_object("b1"));
    e.expect("owner-b", expectations_object("b2"));
    e.forget(runtime::ObjectKey{"ns", "a2"});
    e.forget(runtime::ObjectKey{"other", "a1"});  // another namespace's a1: not this one
    CHECK(expectations_names(e.outstanding("owner-a", cache)) == std::vector<std::string>{"a1"});
    e.forget_owner("owner-b");
    CHECK(e.outstanding("owner-b", cache).empty());
    CHECK(expectations_names(e.outstanding("owner-a", cache)) == std::vector<std::string>{"a1"});
    CHECK(e.size() == 1);
}
