// A compressed store (StoreOptions::compressed) and the ObjectCompressor under it: objects come
// back whole and equal, as fresh copies; they take a fraction of their JSON; dictionaries grow
// when objects outgrow them, and never leave older objects unreadable.
#include <vck/api/core_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/runtime/object_compressor.hpp>
#include <vck/runtime/store.hpp>

#include <doctest.h>

#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

using vck::runtime::ChangeType;
using vck::runtime::ObjectKey;
using vck::runtime::Store;
using vck::runtime::StoreOptions;
namespace api = vck::api;
namespace json = boost::json;

namespace {

/// A claim as the server returns it, with fields api::PersistentVolumeClaim does not model.
std::shared_ptr<const api::PersistentVolumeClaim> claim(int i, std::string rv = "1", bool bound = false) {
    auto text = R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"vck-data-)" + std::to_string(1000 + i) +
                R"(-claim","namespace":"team-a","uid":"4f0c2c1e-0000-4000-8000-)" + std::to_string(100000000000 + i) +
                R"(","resourceVersion":")" + rv + R"(","creationTimestamp":"2026-11-25T07:31:43Z",
        "labels":{"vck.intelai.org/volume":")" + std::to_string(5000000 + i) + R"(","vcid":"data"},
        "annotations":{"vck.intelai.org/owner":"team-a/vm-)" + std::to_string(i) + R"("},
        "ownerReferences":[{"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","name":"vm-)" + std::to_string(i) +
                R"(","uid":"7834f844-ac73-47df-960f-)" + std::to_string(100000000000 + i) + R"(","controller":true,"blockOwnerDeletion":true}],
        "someFutureField":{"x":[1,2,3]}},
        "spec":{"accessModes":["ReadWriteMany"],"resources":{"requests":{"storage":"1Gi"}},"storageClassName":"",
                "volumeName":"vck-data-)" + std::to_string(1000 + i) + R"(-pv","dataSourceRef":null}})";
    auto v = api::parse(text);
    if (bound)
        v.as_object()["status"] = json::object{{"phase", "Bound"}, {"accessModes", json::array{"ReadWriteMany"}},
                                                {"capacity", json::object{{"storage", "1Gi"}}}};
    return std::make_shared<const api::PersistentVolumeClaim>(api::from_json<api::PersistentVolumeClaim>(v));
}

std::string text(const api::PersistentVolumeClaim& c) { return json::serialize(api::to_json(c)); }

std::string fmt_name(int batch, int i) { return "b" + std::to_string(batch) + "-" + std::to_string(i); }

struct Unconvertible {
    api::ObjectMeta metadata;
};

} // namespace

TEST_CASE("a compressed store gives back each object whole, as a fresh copy on every read") {
    Store<api::PersistentVolumeClaim> s(StoreOptions{true, 0});
    CHECK(s.compressed());
    auto c = claim(1, "7", true);
    s.apply(ChangeType::Added, c);
    auto a = s.get({"team-a", "vck-data-1001-claim"});
    auto b = s.get({"team-a", "vck-data-1001-claim"});
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a != c);
    CHECK(a != b);
    CHECK(text(*a) == text(*c));  // every field, the unmodelled ones in `unknown` included
    CHECK(a->metadata.unknown.contains("someFutureField"));
    CHECK(a->status->phase == "Bound");
    CHECK(s.resource_version() == "7");
}

TEST_CASE("the most recently applied objects stay whole until newer ones push them out") {
    Store<api::PersistentVolumeClaim> s(StoreOptions{true, 3});
    auto first = claim(1, "1");
    s.apply(ChangeType::Added, first);
    CHECK(s.get({"team-a", "vck-data-1001-claim"}) == first);  // whole: the very snapshot
    auto second = claim(1, "2", true);
    s.apply(ChangeType::Modified, second);  // a version soon replaced is never compressed
    CHECK(s.get({"team-a", "vck-data-1001-claim"}) == second);
    for (int i = 2; i <= 4; ++i) s.apply(ChangeType::Added, claim(i, "3"));
    auto now = s.get({"team-a", "vck-data-1001-claim"});  // three newer ones since: compressed
    REQUIRE(now);
    CHECK(now != second);
    CHECK(text(*now) == text(*second));
    CHECK(s.get({"team-a", "vck-data-1004-claim"}) == s.get({"team-a", "vck-data-1004-claim"}));
    // A relist keeps the last `recent_whole` of what it lists whole too.
    std::vector<std::shared_ptr<const api::PersistentVolumeClaim>> listed;
    for (int i = 1; i <= 6; ++i) listed.push_back(claim(i, "9"));
    s.replace(listed, "9");
    CHECK(s.get({"team-a", "vck-data-1006-claim"}) == listed.back());
    CHECK(s.get({"team-a", "vck-data-1001-claim"}) != listed.front());
    CHECK(text(*s.get({"team-a", "vck-data-1001-claim"})) == text(*listed.front()));
}

TEST_CASE("a compressed store answers keys, versions and indexes as an uncompressed one does") {
    Store<api::PersistentVolumeClaim> plain;
    Store<api::PersistentVolumeClaim> packed(StoreOptions{true, 0});
    for (auto* s : {&plain, &packed}) {
        for (int i = 0; i < 20; ++i) s->apply(ChangeType::Added, claim(i, std::to_string(10 + i)));
        s->apply(ChangeType::Modified, claim(3, "99", true));
        s->apply(ChangeType::Deleted, claim(4, "100"));
    }
    CHECK(packed.keys() == plain.keys());
    CHECK(packed.size() == 19);
    CHECK(packed.contains(ObjectKey{"team-a", "vck-data-1003-claim"}));
    CHECK_FALSE(packed.contains(ObjectKey{"team-a", "vck-data-1004-claim"}));
    CHECK(packed.has_version({"team-a", "vck-data-1003-claim"}, "99"));
    CHECK_FALSE(packed.has_version({"team-a", "vck-data-1003-claim"}, "13"));
    CHECK_FALSE(packed.has_version({"team-a", "vck-data-1004-claim"}, "100"));
    // A label index first asked for now covers the objects already compressed.
    auto hits = packed.by_index("label:vck.intelai.org/volume", "5000003");
    REQUIRE(hits.size() == 1);
    CHECK(text(*hits.front()) == text(*plain.by_index("label:vck.intelai.org/volume", "5000003").front()));
    CHECK(packed.keys_by_index("owner", "7834f844-ac73-47df-960f-100000000007") ==
          plain.keys_by_index("owner", "7834f844-ac73-47df-960f-100000000007"));
    auto all = packed.list();
    auto want = plain.list();
    REQUIRE(all.size() == want.size());
    for (std::size_t i = 0; i < all.size(); ++i) CHECK(text(*all[i]) == text(*want[i]));
}

TEST_CASE("apply on a compressed store returns the state it replaced or removed") {
    Store<api::PersistentVolumeClaim> s(StoreOptions{true, 0});
    s.apply(ChangeType::Added, claim(1, "1"));
    auto old = s.apply(ChangeType::Modified, claim(1, "2", true));
    REQUIRE(old);
    CHECK(old->metadata.resourceVersion == "1");
    CHECK_FALSE(old->status);
    auto removed = s.apply(ChangeType::Deleted, claim(1, "3"));
    REQUIRE(removed);
    CHECK(removed->metadata.resourceVersion == "2");
    CHECK(s.size() == 0);
}

TEST_CASE("replace reports a modified object with the state it replaced, compressed or not") {
    for (bool compressed : {false, true}) {
        CAPTURE(compressed);
        Store<api::PersistentVolumeClaim> s(StoreOptions{compressed, 0});
        auto v1 = claim(1, "1");
        s.apply(ChangeType::Added, v1);
        s.apply(ChangeType::Added, claim(2, "2"));
        auto changes = s.replace({claim(1, "5", true), claim(3, "6")}, "6");
        REQUIRE(changes.size() == 3);
        CHECK(changes[0].type == ChangeType::Modified);
        REQUIRE(changes[0].old);
        CHECK(text(*changes[0].old) == text(*v1));
        if (!compressed) CHECK(changes[0].old == v1);
        CHECK(changes[1].type == ChangeType::Deleted);
        CHECK(changes[1].object->metadata.name == "vck-data-1002-claim");
        CHECK_FALSE(changes[1].old);
        CHECK(changes[2].type == ChangeType::Added);
        CHECK(s.get({"team-a", "vck-data-1001-claim"})->status->phase == "Bound");
        CHECK(s.by_index("namespace", "team-a").size() == 2);
    }
}

TEST_CASE("objects of one resource compress to a fraction of their JSON") {
    vck::runtime::ObjectCompressor<api::PersistentVolumeClaim> z;
    std::size_t json_bytes = 0, kept = 0;
    for (int i = 0; i < 200; ++i) {
        auto c = claim(i, std::to_string(1000 + i), i > 0);
        auto blob = z.compress(*c);
        json_bytes += blob.json_size();
        kept += blob.size();
        CHECK(text(*z.decompress(blob)) == text(*c));
    }
    CHECK(kept * 4 < json_bytes);
}

TEST_CASE("a dictionary is added when objects outgrow the first, and older objects stay readable") {
    vck::runtime::ObjectCompressor<api::VolumeManager> z;
    api::VolumeManager bare;
    bare.metadata.name = "vm-0";
    bare.metadata.namespace_ = "default";
    bare.metadata.resourceVersion = "1";
    bare.spec.volumeConfigs.push_back(api::VolumeConfig{"data", 1, "NFS", "ReadWriteMany", "1Gi", {{"app", "x"}},
                                                         {{"server", "10.0.0.1"}, {"path", "/exports/0"}}, {}, {}, {}});
    std::vector<std::pair<vck::runtime::CompressedObject, std::string>> kept;
    kept.emplace_back(z.compress(bare), json::serialize(api::to_json(bare)));
    CHECK(z.dictionaries() == 1);
    CHECK(kept.back().first.dictionary() == 0);

    // Later versions have a status the first lacked.
    for (int i = 1; i <= 100; ++i) {
        api::VolumeManager running = bare;
        running.metadata.name = "vm-" + std::to_string(i);
        running.metadata.resourceVersion = std::to_string(100 + i);
        running.metadata.uid = "7834f844-ac73-47df-960f-" + std::to_string(100000000000 + i);
        auto& st = running.status.emplace();
        st.state = "Running";
        st.message = "successfully deployed all sub-resources";
        st.readyVolumes = "1/1";
        api::VolumeStatus vs;
        vs.id = "data";
        vs.message = "success";
        api::VolumeSource src;
        src.persistentVolumeClaim = api::PersistentVolumeClaimVolumeSource{"vck-data-" + std::to_string(9000 + i) + "-claim", std::nullopt};
        vs.volumeSource = std::move(src);
        st.volumes.push_back(std::move(vs));
        api::Condition ready;
        ready.type = "Ready";
        ready.status = "True";
        ready.reason = "Running";
        ready.message = st.message;
        ready.lastTransitionTime = "2026-11-25T07:31:41Z";
        st.conditions.push_back(std::move(ready));
        kept.emplace_back(z.compress(running), json::serialize(api::to_json(running)));
    }
    CHECK(z.dictionaries() >= 2);
    const auto& last = kept.back().first;
    CHECK(last.dictionary() >= 1);
    CHECK(last.size() * 5 < last.json_size());
    for (const auto& [blob, want] : kept) CHECK(json::serialize(api::to_json(*z.decompress(blob))) == want);
}

TEST_CASE("objects that do not compress add no dictionary, and all stay readable") {
    vck::runtime::ObjectCompressor<json::value> z;
    std::mt19937_64 rng(7);
    std::vector<std::pair<vck::runtime::CompressedObject, std::string>> kept;
    for (int i = 0; i < 400; ++i) {
        std::string noise(300, ' ');
        for (auto& ch : noise) ch = static_cast<char>('a' + rng() % 26);
        json::value v{{"metadata", {{"name", "n" + std::to_string(i)}, {"resourceVersion", std::to_string(i)}}}, {"data", noise}};
        kept.emplace_back(z.compress(v), json::serialize(v));
    }
    CHECK(z.dictionaries() == 1);
    for (const auto& [blob, want] : kept) CHECK(json::serialize(*z.decompress(blob)) == want);
}

TEST_CASE("dictionaries stop at the limit however often objects change shape, and all stay readable") {
    using Z = vck::runtime::ObjectCompressor<json::value>;
    Z z;
    std::vector<std::pair<vck::runtime::CompressedObject, std::string>> kept;
    for (int batch = 0; batch < 20; ++batch)
        for (int i = 0; i < 100; ++i) {
            json::object o{{"metadata", {{"name", fmt_name(batch, i)}, {"resourceVersion", std::to_string(batch * 1000 + i)}}}};
            for (int k = 0; k < 12; ++k)  // every batch has keys and values of its own
                o["batch-" + std::to_string(batch) + "-field-" + std::to_string(k)] = "value of batch " + std::to_string(batch) + " #" + std::to_string(k);
            json::value v(std::move(o));
            kept.emplace_back(z.compress(v), json::serialize(v));
        }
    CHECK(z.dictionaries() == Z::max_dictionaries);
    for (const auto& [blob, want] : kept) CHECK(json::serialize(*z.decompress(blob)) == want);
}

TEST_CASE("a store refuses to compress a type that has no JSON conversion") {
    CHECK_THROWS_WITH_AS(Store<Unconvertible>(StoreOptions{true}), doctest::Contains("cannot be kept compressed"),
                         std::invalid_argument);
    Store<Unconvertible> plain;  // uncompressed, it needs none
    CHECK_FALSE(plain.compressed());
}

TEST_CASE("readers decompress while a writer updates a compressed store") {
    Store<api::PersistentVolumeClaim> s(StoreOptions{true, 0});
    for (int i = 0; i < 50; ++i) s.apply(ChangeType::Added, claim(i, "1"));
    std::atomic<bool> stop{false};
    std::atomic<int> bad{0};
    std::thread reader([&] {
        while (!stop)
            for (const auto& c : s.by_index("namespace", "team-a"))
                if (c->metadata.namespace_ != "team-a" || c->spec.accessModes.size() != 1) ++bad;
    });
    for (int round = 2; round < 40; ++round)
        for (int i = 0; i < 50; ++i) s.apply(ChangeType::Modified, claim(i, std::to_string(round), round % 2 == 0));
    stop = true;
    reader.join();
    CHECK(bad == 0);
    CHECK(s.get({"team-a", "vck-data-1010-claim"})->metadata.resourceVersion == "39");
}
