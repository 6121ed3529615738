// The store's behaviour, one TEST_CASE each, for typed objects and for untyped JSON.
#include <vck/api/json.hpp>
#include <vck/runtime/kube_object.hpp>
#include <vck/runtime/store.hpp>

#include <doctest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using vck::runtime::ChangeType;
using vck::runtime::ObjectKey;
using vck::runtime::Store;

namespace {

struct Pod {
    vck::api::ObjectMeta metadata;
    std::string nodeName;
};

std::shared_ptr<const Pod> pod(std::string ns, std::string name, std::string rv, vck::api::Labels labels = {},
                               std::vector<std::string> owners = {}, std::string node = {}) {
    auto p = std::make_shared<Pod>();
    p->metadata.namespace_ = std::move(ns);
    p->metadata.name = std::move(name);
    p->metadata.resourceVersion = std::move(rv);
    p->metadata.uid = "uid-" + p->metadata.name;
    p->metadata.labels = std::move(labels);
    for (auto& o : owners) {
        vck::api::OwnerReference r;
        r.kind = "VolumeManager";
        r.name = "owner-" + o;
        r.uid = o;
        p->metadata.ownerReferences.push_back(std::move(r));
    }
    p->nodeName = std::move(node);
    return p;
}

std::shared_ptr<const boost::json::value> js(std::string_view text) {
    return std::make_shared<const boost::json::value>(vck::api::parse(text));
}

std::vector<std::string> names(const std::vector<std::shared_ptr<const Pod>>& v) {
    std::vector<std::string> out;
    for (const auto& p : v) out.push_back(p->metadata.name);
    return out;
}

using Names = std::vector<std::string>;

} // namespace

TEST_CASE("get returns the very snapshot that was applied, without copying it") {
    Store<Pod> s;
    auto p = pod("ns", "a", "1");
    CHECK(s.apply(ChangeType::Added, p) == nullptr);
    CHECK(s.get({"ns", "a"}) == p);
    CHECK(s.get({"ns", "b"}) == nullptr);
    CHECK(s.get({"other", "a"}) == nullptr);
    CHECK(s.size() == 1);
}

TEST_CASE("a modified event replaces the object and returns the old one") {
    Store<Pod> s;
    auto v1 = pod("ns", "a", "1");
    auto v2 = pod("ns", "a", "2");
    s.apply(ChangeType::Added, v1);
    CHECK(s.apply(ChangeType::Modified, v2) == v1);
    CHECK(s.get({"ns", "a"}) == v2);
    CHECK(s.size() == 1);
}

TEST_CASE("a deleted event removes the object; deleting an absent key is harmless") {
    Store<Pod> s;
    auto v1 = pod("ns", "a", "1");
    s.apply(ChangeType::Added, v1);
    CHECK(s.apply(ChangeType::Deleted, pod("ns", "a", "5")) == v1);
    CHECK(s.get({"ns", "a"}) == nullptr);
    CHECK(s.size() == 0);
    CHECK(s.apply(ChangeType::Deleted, pod("ns", "a", "6")) == nullptr);
    CHECK(s.resource_version() == "6");
}

TEST_CASE("apply_event reports the change it made, and nothing for a replayed version, which it records all the same") {
    Store<Pod> s;
    auto v1 = pod("ns", "a", "1", {{"app", "web"}});
    auto added = s.apply_event(ChangeType::Added, v1);
    REQUIRE(added);
    CHECK(added->type == ChangeType::Added);
    CHECK(added->object == v1);
    CHECK(added->old == nullptr);
    s.bookmark("9");
    // A watch resumed from an older version sends the cached version again: an equal copy.
    auto again = s.apply_event(ChangeType::Modified, pod("ns", "a", "1", {{"app", "other"}}));
    CHECK_FALSE(again);
    CHECK(s.get({"ns", "a"}) == v1);  // the cached snapshot, untouched
    CHECK(names(s.by_index("label:app", "web")) == Names{"a"});
    CHECK(s.resource_version() == "1");  // the event's version is recorded all the same
    auto v2 = pod("ns", "a", "2");
    auto modified = s.apply_event(ChangeType::Modified, v2);
    REQUIRE(modified);
    CHECK(modified->type == ChangeType::Modified);
    CHECK(modified->object == v2);
    CHECK(modified->old == v1);
    // A delete carrying the cached version still deletes: only additions can be replays. The
    // change carries the event's object, the last state known.
    auto last = pod("ns", "a", "2");
    auto deleted = s.apply_event(ChangeType::Deleted, last);
    REQUIRE(deleted);
    CHECK(deleted->type == ChangeType::Deleted);
    CHECK(deleted->object == last);
    CHECK(deleted->old == nullptr);
    CHECK(s.size() == 0);
    // Nothing to report: a delete of a key never cached; an add for a key not cached whatever
    // the event's type says.
    CHECK_FALSE(s.apply_event(ChangeType::Deleted, pod("ns", "b", "3")));
    auto resumed = s.apply_event(ChangeType::Modified, pod("ns", "c", "4"));
    REQUIRE(resumed);
    CHECK(resumed->type == ChangeType::Added);
}

TEST_CASE("resource_version is the last applied event's, replace's or bookmark's") {
    Store<Pod> s;
    CHECK(s.resource_version().empty());
    s.apply(ChangeType::Added, pod("ns", "a", "10"));
    CHECK(s.resource_version() == "10");
    s.apply(ChangeType::Modified, pod("ns", "b", "12"));
    CHECK(s.resource_version() == "12");
    s.bookmark("15");
    CHECK(s.resource_version() == "15");
    s.replace({}, "20");
    CHECK(s.resource_version() == "20");
}

TEST_CASE("list returns every object in key order") {
    Store<Pod> s;
    s.apply(ChangeType::Added, pod("b", "x", "1"));
    s.apply(ChangeType::Added, pod("a", "y", "2"));
    s.apply(ChangeType::Added, pod("a", "x", "3"));
    CHECK(names(s.list()) == Names{"x", "y", "x"});
    CHECK(s.keys() == std::vector<ObjectKey>{{"a", "x"}, {"a", "y"}, {"b", "x"}});
}

TEST_CASE("the label index follows label changes and forgets old values") {
    Store<Pod> s;
    s.apply(ChangeType::Added, pod("ns", "a", "1", {{"app", "web"}}));
    s.apply(ChangeType::Added, pod("ns", "b", "2", {{"app", "web"}, {"tier", "front"}}));
    CHECK(names(s.by_index("label:app", "web")) == Names{"a", "b"});
    s.apply(ChangeType::Modified, pod("ns", "a", "3", {{"app", "db"}}));
    CHECK(names(s.by_index("label:app", "web")) == Names{"b"});
    CHECK(names(s.by_index(vck::runtime::label_index("app"), "db")) == Names{"a"});
    s.apply(ChangeType::Modified, pod("ns", "b", "4", {}));
    CHECK(s.by_index("label:app", "web").empty());
    CHECK(s.by_index("label:tier", "front").empty());
    CHECK(s.by_index("label:never-seen", "x").empty());
}

TEST_CASE("the owner index maps owner uids to the objects they own") {
    Store<Pod> s;
    s.apply(ChangeType::Added, pod("ns", "a", "1", {}, {"vm-1"}));
    s.apply(ChangeType::Added, pod("ns", "b", "2", {}, {"vm-1", "vm-2"}));
    CHECK(names(s.by_index("owner", "vm-1")) == Names{"a", "b"});
    CHECK(names(s.by_index("owner", "vm-2")) == Names{"b"});
    s.apply(ChangeType::Modified, pod("ns", "b", "3", {}, {"vm-2"}));
    CHECK(names(s.by_index("owner", "vm-1")) == Names{"a"});
    s.apply(ChangeType::Deleted, pod("ns", "a", "4"));
    CHECK(s.by_index("owner", "vm-1").empty());
    CHECK(s.keys_by_index("owner", "vm-2") == std::vector<ObjectKey>{{"ns", "b"}});
}

TEST_CASE("the namespace index lists one namespace's objects") {
    Store<Pod> s;
    s.apply(ChangeType::Added, pod("a", "x", "1"));
    s.apply(ChangeType::Added, pod("b", "y", "2"));
    s.apply(ChangeType::Added, pod("a", "z", "3"));
    CHECK(names(s.by_index("namespace", "a")) == Names{"x", "z"});
    CHECK(names(s.by_index("namespace", "b")) == Names{"y"});
}

TEST_CASE("a user-defined index finds pods by node name and follows rescheduling") {
    Store<Pod> s;
    s.add_index("node", [](const Pod& p) {
        return p.nodeName.empty() ? std::vector<std::string>{} : std::vector<std::string>{p.nodeName};
    });
    s.apply(ChangeType::Added, pod("ns", "a", "1", {}, {}, "n1"));
    s.apply(ChangeType::Added, pod("ns", "b", "2", {}, {}, ""));
    CHECK(names(s.by_index("node", "n1")) == Names{"a"});
    CHECK(s.by_index("node", "").empty());
    s.apply(ChangeType::Modified, pod("ns", "a", "3", {}, {}, "n2"));
    s.apply(ChangeType::Modified, pod("ns", "b", "4", {}, {}, "n2"));
    CHECK(s.by_index("node", "n1").empty());
    CHECK(names(s.by_index("node", "n2")) == Names{"a", "b"});
}

TEST_CASE("an index added to a filled store covers the objects already there") {
    Store<Pod> s;
    s.apply(ChangeType::Added, pod("ns", "a", "1", {}, {}, "n1"));
    s.add_index("node", [](const Pod& p) { return std::vector<std::string>{p.nodeName}; });
    CHECK(names(s.by_index("node", "n1")) == Names{"a"});
    s.apply(ChangeType::Deleted, pod("ns", "a", "2"));
    CHECK(s.by_index("node", "n1").empty());
}

TEST_CASE("index names must be new, non-empty and not under label:") {
    Store<Pod> s;
    auto fn = [](const Pod&) { return std::vector<std::string>{}; };
    CHECK_THROWS_WITH_AS(s.add_index("owner", fn), doctest::Contains("already exists"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(s.add_index("label:x", fn), doctest::Contains("reserved"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(s.add_index("", fn), doctest::Contains("empty"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(s.add_index("none", nullptr), doctest::Contains("no function"), std::invalid_argument);
}

TEST_CASE("asking an index that does not exist is an error naming it") {
    Store<Pod> s;
    CHECK_THROWS_WITH_AS(s.by_index("nodes", "n1"), doctest::Contains("no index named \"nodes\""), std::invalid_argument);
}

TEST_CASE("an index function that throws leaves the store as it was") {
    Store<Pod> s;
    s.add_index("picky", [](const Pod& p) {
        if (p.nodeName == "bad") throw std::runtime_error("cannot index");
        return std::vector<std::string>{p.nodeName};
    });
    auto v1 = pod("ns", "a", "1", {{"app", "web"}}, {}, "n1");
    s.apply(ChangeType::Added, v1);
    CHECK_THROWS_AS(s.apply(ChangeType::Modified, pod("ns", "a", "2", {{"app", "db"}}, {}, "bad")), std::runtime_error);
    CHECK(s.get({"ns", "a"}) == v1);
    CHECK(s.resource_version() == "1");
    CHECK(names(s.by_index("label:app", "web")) == Names{"a"});
    CHECK(names(s.by_index("picky", "n1")) == Names{"a"});
    CHECK_THROWS_AS(s.replace({pod("ns", "b", "3", {}, {}, "bad")}, "3"), std::runtime_error);
    CHECK(s.list() == std::vector{v1});
}

TEST_CASE("keys and index values outlive the snapshots they were read from") {
    // The store keys objects by views into the cached snapshot; an update must re-point them,
    // so nothing may read an older snapshot once the caller drops it (ASan would catch it).
    Store<Pod> s;
    const std::string long_ns(40, 'n'), long_name(60, 'a');
    s.apply(ChangeType::Added, pod(long_ns, long_name, "1", {{"app", std::string(30, 'w')}}, {std::string(36, 'u')}));
    s.apply(ChangeType::Modified, pod(long_ns, long_name, "2", {{"app", std::string(30, 'v')}}, {std::string(36, 'u')}));
    s.apply(ChangeType::Added, pod(long_ns, "b", "3", {{"app", std::string(30, 'v')}}));
    CHECK(s.keys() == std::vector<ObjectKey>{{long_ns, long_name}, {long_ns, "b"}});
    CHECK(s.get({long_ns, long_name})->metadata.resourceVersion == "2");
    CHECK(names(s.by_index("label:app", std::string(30, 'v'))) == Names{long_name, "b"});
    CHECK(s.keys_by_index("owner", std::string(36, 'u')) == std::vector<ObjectKey>{{long_ns, long_name}});
    CHECK(s.by_index("namespace", long_ns).size() == 2);
    // A relist with a duplicate key keeps the last copy, and is keyed by that copy.
    s.replace({pod(long_ns, long_name, "4"), pod(long_ns, long_name, "5", {{"app", "x"}})}, "5");
    CHECK(s.get({long_ns, long_name})->metadata.resourceVersion == "5");
    CHECK(names(s.by_index("label:app", "x")) == Names{long_name});
    s.apply(ChangeType::Deleted, pod(long_ns, long_name, "6"));
    CHECK(s.size() == 0);
    CHECK(s.by_index("namespace", long_ns).empty());
}

TEST_CASE("a label index first asked for after objects exist covers them, and follows later changes") {
    Store<Pod> s;
    for (int i = 0; i < 50; ++i)
        s.apply(ChangeType::Added, pod("ns", "p" + std::to_string(100 + i), std::to_string(i + 1), {{"shard", std::to_string(i % 3)}}));
    CHECK(s.by_index("label:shard", "0").size() == 17);
    for (int i = 0; i < 50; i += 2)
        s.apply(ChangeType::Modified, pod("ns", "p" + std::to_string(100 + i), std::to_string(100 + i), {{"shard", "0"}}));
    for (int i = 1; i < 50; i += 4) s.apply(ChangeType::Deleted, pod("ns", "p" + std::to_string(100 + i), "999"));
    std::size_t want = 0;
    for (const auto& p : s.list()) want += p->metadata.labels.at("shard") == "0";
    auto got = s.by_index("label:shard", "0");
    CHECK(got.size() == want);
    for (std::size_t i = 1; i < got.size(); ++i) CHECK(got[i - 1]->metadata.name < got[i]->metadata.name);
}

TEST_CASE("an event without an object or without a name is rejected") {
    Store<Pod> s;
    CHECK_THROWS_WITH_AS(s.apply(ChangeType::Added, nullptr), doctest::Contains("ADDED event without an object"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(s.apply(ChangeType::Modified, pod("ns", "", "1")), doctest::Contains("no metadata.name"), std::invalid_argument);
    CHECK(s.size() == 0);
}

TEST_CASE("replace reports what a relist added, changed and deleted, and indexes the new content") {
    Store<Pod> s;
    auto keep = pod("ns", "keep", "1", {{"app", "web"}});
    auto change1 = pod("ns", "change", "2", {{"app", "web"}});
    auto gone = pod("ns", "gone", "3", {{"app", "web"}}, {"vm-1"});
    for (const auto& p : {keep, change1, gone}) s.apply(ChangeType::Added, p);
    auto change2 = pod("ns", "change", "7", {{"app", "db"}});
    auto fresh = pod("ns", "new", "8", {{"app", "web"}});
    auto same_rv_copy = pod("ns", "keep", "1", {{"app", "web"}});
    auto changes = s.replace({same_rv_copy, change2, fresh}, "9");
    REQUIRE(changes.size() == 3);
    CHECK(changes[0].type == ChangeType::Modified);
    CHECK(changes[0].object == change2);
    CHECK(changes[1].type == ChangeType::Deleted);
    CHECK(changes[1].object == gone);  // the last state the cache knew
    CHECK(changes[2].type == ChangeType::Added);
    CHECK(changes[2].object == fresh);
    CHECK(s.resource_version() == "9");
    CHECK(names(s.list()) == Names{"change", "keep", "new"});
    CHECK(names(s.by_index("label:app", "web")) == Names{"keep", "new"});
    CHECK(s.by_index("owner", "vm-1").empty());
}

TEST_CASE("untyped JSON objects are keyed and indexed from their metadata") {
    Store<boost::json::value> s;
    auto a = js(R"({"kind":"Pod","metadata":{"namespace":"ns","name":"a","resourceVersion":"4",
        "labels":{"app":"web"},"ownerReferences":[{"kind":"VolumeManager","name":"vm","uid":"u1"}]},
        "spec":{"nodeName":"n1"}})");
    s.add_index("node", [](const boost::json::value& v) {
        return std::vector<std::string>{std::string(vck::api::string_at(v, {"spec", "nodeName"}))};
    });
    s.apply(ChangeType::Added, a);
    CHECK(s.get({"ns", "a"}) == a);
    CHECK(s.resource_version() == "4");
    CHECK(s.by_index("label:app", "web").size() == 1);
    CHECK(s.by_index("owner", "u1").size() == 1);
    CHECK(s.by_index("node", "n1").size() == 1);
    CHECK(s.by_index("namespace", "ns").size() == 1);
    s.apply(ChangeType::Modified, js(R"({"metadata":{"namespace":"ns","name":"a","resourceVersion":"5"}})"));
    CHECK(s.by_index("label:app", "web").empty());
    CHECK(s.by_index("owner", "u1").empty());
    CHECK(s.by_index("node", "n1").empty());
}

TEST_CASE("a cluster-scoped JSON object has an empty namespace in its key") {
    Store<boost::json::value> s;
    s.apply(ChangeType::Added, js(R"({"metadata":{"name":"node-1","resourceVersion":"1"}})"));
    CHECK(s.get(ObjectKey::parse("node-1")) != nullptr);
}

TEST_CASE("JSON with malformed metadata is rejected naming the field, and changes nothing") {
    Store<boost::json::value> s;
    CHECK_THROWS_WITH_AS(s.apply(ChangeType::Added, js(R"({"metadata":{"name":"a","labels":{"app":3}}})")),
                         doctest::Contains("metadata.labels.app: expected string, got integer"), vck::api::DecodeError);
    CHECK_THROWS_WITH_AS(s.apply(ChangeType::Added, js(R"({"metadata":{"name":7}})")),
                         doctest::Contains("metadata.name: expected string"), vck::api::DecodeError);
    CHECK_THROWS_WITH_AS(s.apply(ChangeType::Added, js(R"({"metadata":{"name":"a","ownerReferences":[{"name":"x"}]}})")),
                         doctest::Contains("metadata.ownerReferences[0].uid"), vck::api::DecodeError);
    CHECK_THROWS_WITH_AS(s.apply(ChangeType::Added, js(R"([1,2])")),
                         doctest::Contains("not a JSON object"), vck::api::DecodeError);
    CHECK(s.size() == 0);
}

TEST_CASE("typed and JSON forms of one object give the same key, labels and owners") {
    auto typed = pod("ns", "a", "3", {{"app", "web"}, {"tier", "x"}}, {"u1", "u2"});
    boost::json::value whole = {{"metadata", vck::api::to_json(typed->metadata)}};
    CHECK(vck::runtime::key_of(whole) == vck::runtime::key_of(*typed));
    CHECK(vck::runtime::labels_of(whole) == vck::runtime::labels_of(*typed));
    CHECK(vck::runtime::owner_uids_of(whole) == vck::runtime::owner_uids_of(*typed));
    CHECK(vck::runtime::uid_of(whole) == vck::runtime::uid_of(*typed));
    CHECK(vck::runtime::resource_version_of(whole) == "3");
}

TEST_CASE("readers see consistent answers while a writer updates the store") {
    Store<Pod> s;
    std::atomic<bool> stop{false};
    std::atomic<int> inconsistent{0};
    std::thread reader([&] {
        while (!stop) {
            // Every version of "a" carries label gen=<rv> and sits in that label's index alone.
            auto p = s.get({"ns", "a"});
            if (!p) continue;
            auto gen = p->metadata.labels.at("gen");
            auto hits = s.by_index("label:gen", gen);
            if (!hits.empty() && hits.front()->metadata.labels.at("gen") != gen) ++inconsistent;
            if (hits.size() > 1) ++inconsistent;
        }
    });
    for (int i = 0; i < 2000; ++i) {
        auto rv = std::to_string(i);
        s.apply(ChangeType::Modified, pod("ns", "a", rv, {{"gen", rv}}));
    }
    stop = true;
    reader.join();
    CHECK(inconsistent == 0);
    CHECK(s.get({"ns", "a"})->metadata.resourceVersion == "1999");
}

TEST_CASE("the namespace and owner indexes first asked for after objects exist cover them, and follow later changes") {
    Store<Pod> s;
    for (int i = 0; i < 30; ++i)
        s.apply(ChangeType::Added, pod(i % 2 ? "odd" : "even", "p" + std::to_string(i), std::to_string(i + 1), {}, {"vm-" + std::to_string(i % 3)}));
    CHECK(s.keys_by_index("namespace", "odd").size() == 15);
    CHECK(s.keys_by_index("owner", "vm-0").size() == 10);
    s.apply(ChangeType::Modified, pod("odd", "p1", "100", {}, {"vm-0"}));
    s.apply(ChangeType::Deleted, pod("even", "p0", "101"));
    CHECK(s.keys_by_index("owner", "vm-0").size() == 10);
    CHECK(s.keys_by_index("owner", "vm-1").size() == 9);
    CHECK(s.keys_by_index("namespace", "even").size() == 14);
}
