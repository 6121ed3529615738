// Specification of api/json_decoder.hpp: the DOM-free decoder gives from_json's result, and
// whatever its fast path cannot decode exactly goes to from_json, errors and paths included;
// the DOM an object keeps lives in its own sealed api/object_arena.hpp.
#include <vck/api/core_v1.hpp>
#include <vck/api/json_decoder.hpp>
#include <vck/api/meta.hpp>
#include <vck/api/object_arena.hpp>
#include <vck/api/volume_manager.hpp>

#include <doctest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace vck::api;
namespace json = boost::json;

namespace {

const char* kPod = R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "resourceVersion": "42", "generation": 3,
               "labels": {"app": "x", "tier": "db"}, "annotations": {"a/b": "c\n\u00e9"},
               "ownerReferences": [{"apiVersion": "v1", "kind": "ReplicaSet", "name": "rs", "uid": "o-1",
                                    "controller": true, "blockOwnerDeletion": false, "extra": {"k": [1, 2.5, null]}}],
               "finalizers": ["f/1", "f/2"], "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:data": {}}}],
               "creationTimestamp": "2026-11-24T01:00:00Z", "deletionGracePeriodSeconds": null},
  "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c"], "args": [],
                           "env": [{"name": "A", "value": "1"},
                                   {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
                           "resources": {"limits": {"cpu": "1"}}, "securityContext": null, "ports": [{"containerPort": 80}]}],
           "nodeName": "n1", "restartPolicy": "Never", "tolerations": [{"key": "k", "operator": "Exists"}],
           "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms":
               [{"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}]}}},
           "volumes": [{"name": "v", "hostPath": {"path": "/tmp"}}], "unmodelled": {"deep": {"deeper": [true, false]}}},
  "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
             "containerStatuses": [{"name": "c", "ready": true, "restartCount": 2, "state": {"running": {"startedAt": "t"}}}],
             "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}]},
  "topLevelExtra": -7
})";

const char* kVolumeManager = R"({
  "apiVersion": "vck.intelai.org/v1alpha1", "kind": "VolumeManager",
  "metadata": {"name": "vm", "namespace": "ns", "labels": {}},
  "spec": {"state": "Running", "volumeConfigs": [
     {"id": "v1", "replicas": 2, "sourceType": "S3", "accessMode": "ReadWriteOnce", "capacity": "5Gi",
      "labels": {"k": "v"}, "options": {"sourceURL": "s3://b/p", "x": null},
      "tolerations": [{"key": "t", "operator": "Equal", "value": "v", "effect": "NoSchedule", "tolerationSeconds": 30}]}]},
  "status": {"state": "Running", "message": "m", "volumes": [{"id": "v1", "message": "success",
     "volumeSource": {"hostPath": {"path": "/var/x"}},
     "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}]}
})";

const char* kStatus = R"({"kind": "Status", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}, "status": "Failure",
  "message": "gone", "reason": "Expired", "code": 410, "details": {"name": "x", "causes": [{"reason": "r", "field": "f"}]}})";

/// from_json's answer: the decoded object as JSON, or the DecodeError's text.
template <class T>
std::pair<std::optional<json::value>, std::string> reference(const std::string& text) {
    try {
        return {to_json(from_json<T>(parse(text))), ""};
    } catch (const DecodeError& e) {
        return {std::nullopt, e.what()};
    }
}

/// The fast path either leaves the document to the DOM or decodes it as from_json does; and
/// decode_json, fast path or not, always gives from_json's answer. Returns whether the fast
/// path decoded it.
template <class T>
bool decodes_as_from_json(const std::string& text) {
    auto [want, want_error] = reference<T>(text);
    T fast{};
    bool took = try_decode_json(text, fast);
    if (took) {
        CHECK_MESSAGE(want.has_value(), text);
        if (want) CHECK_MESSAGE(to_json(fast) == *want, text);
    }
    try {
        auto got = decode_json<T>(text);
        CHECK_MESSAGE(want.has_value(), text);
        if (want) CHECK_MESSAGE(to_json(got) == *want, text);
    } catch (const DecodeError& e) {
        CHECK_MESSAGE(std::string(e.what()) == want_error, text);
    }
    return took;
}

/// Every value of the document, in turn, replaced by each of `replacements`.
void for_each_mutation(const json::value& doc, const std::function<void(const json::value&)>& fn) {
    static const std::vector<json::value> replacements = {
        nullptr, true, 0, -1, 7, 1.5, "s", json::object{}, json::array{}, json::object{{"x", 1}},
        json::array{nullptr}, json::array{"a", 1}, json::object{{"name", nullptr}}};
    // The i-th value in document order, in a fresh copy each time (a replacement drops the
    // values below it).
    auto nth = [](json::value& root, std::size_t i) {
        json::value* found = nullptr;
        std::size_t n = 0;
        std::function<void(json::value&)> walk = [&](json::value& v) {
            if (n++ == i) found = &v;
            if (auto* o = v.if_object())
                for (auto& kv : *o) walk(kv.value());
            if (auto* a = v.if_array())
                for (auto& e : *a) walk(e);
        };
        walk(root);
        return found;
    };
    for (std::size_t i = 0;; ++i) {
        json::value copy = doc;
        if (!nth(copy, i)) break;
        for (const auto& r : replacements) {
            json::value mutated = doc;
            *nth(mutated, i) = r;
            fn(mutated);
        }
    }
}

} // namespace

TEST_CASE("decode_json decodes documents of every shape as from_json does, without falling back") {
    CHECK(decodes_as_from_json<Pod>(kPod));
    CHECK(decodes_as_from_json<VolumeManager>(kVolumeManager));
    CHECK(decodes_as_from_json<Status>(kStatus));
    CHECK(decodes_as_from_json<ConfigMap>(R"({"metadata": {"name": "c"}, "data": {"b": "2", "a": "1"}, "immutable": true})"));
    CHECK(decodes_as_from_json<Node>(R"({"metadata": {"name": "n"}, "spec": {"unschedulable": true,
        "taints": [{"key": "k", "effect": "NoSchedule"}]}, "status": {"capacity": {"cpu": "4"}, "images": [{"names": ["a"]}]}})"));
    CHECK(decodes_as_from_json<PersistentVolume>(R"({"metadata": {"name": "pv"}, "spec": {"capacity": {"storage": "1Gi"},
        "nfs": {"server": "s", "path": "/p"}, "claimRef": {"name": "c", "namespace": "ns"}}, "status": {"phase": "Bound"}})"));
}

TEST_CASE("keys a struct does not model are kept in its unknown member at every level") {
    Pod p{};
    REQUIRE(try_decode_json(kPod, p));
    CHECK(p.unknown.at("topLevelExtra") == -7);
    CHECK(p.metadata.unknown.at("managedFields").as_array().size() == 1);
    CHECK(p.metadata.ownerReferences.at(0).unknown.at("extra") == json::parse(R"({"k": [1, 2.5, null]})"));
    CHECK(p.spec.unknown.at("unmodelled") == json::parse(R"({"deep": {"deeper": [true, false]}})"));
    CHECK(p.spec.containers.at(0).unknown.at("ports") == json::parse(R"([{"containerPort": 80}])"));
    CHECK(p.status->podIP == "10.0.0.1");
    CHECK(p.status->unknown.at("podIPs") == json::parse(R"([{"ip": "10.0.0.1"}])"));
    CHECK(p.metadata.annotations.at("a/b") == "c\n\xc3\xa9");
}

TEST_CASE("a value of the wrong type raises from_json's DecodeError with its field path") {
    for (const char* text : {R"({"metadata": {"name": 5}})", R"({"metadata": {"labels": {"a": 1}}})",
                             R"({"spec": {"containers": [{"name": "c"}, {"env": [{"name": []}]}]}})",
                             R"({"spec": {"containers": [null]}})", R"({"status": {"conditions": "x"}})",
                             R"({"metadata": {"generation": "3"}})", R"({"metadata": {"generation": 1.5}})",
                             R"({"spec": []})", R"([])", R"(null)", R"({"metadata": {"name": "x"})", R"({"a": 1} x)"}) {
        CHECK_FALSE(decodes_as_from_json<Pod>(text));
    }
    CHECK_THROWS_WITH_AS(decode_json<Pod>(R"({"spec": {"containers": [{"name": "c"}, {"env": [{"name": []}]}]}})"),
                         "spec.containers[1].env[0].name: expected string, got array", DecodeError);
}

TEST_CASE("every value of a document replaced by every other kind decodes as from_json does") {
    int total = 0;
    for (const char* doc : {kPod, kVolumeManager}) {
        for_each_mutation(json::parse(doc), [&](const json::value& v) {
            auto text = json::serialize(v);
            bool pod = std::string_view(doc) == kPod;
            bool took = pod ? decodes_as_from_json<Pod>(text) : decodes_as_from_json<VolumeManager>(text);
            // The fast path takes every document from_json accepts (these have no repeated
            // keys): so this tests it, not only the fallback.
            bool accepted = pod ? reference<Pod>(text).first.has_value() : reference<VolumeManager>(text).first.has_value();
            CHECK_MESSAGE(took == accepted, text);
            ++total;
        });
    }
    CHECK(total > 1000);
}

TEST_CASE("repeated keys decode as from_json on the parsed DOM does") {
    for (const char* text : {R"({"metadata": {"name": "a", "name": "b"}})", R"({"metadata": {"labels": {"k": "1", "k": "2"}}})",
                             R"({"x": 1, "x": 2})", R"({"spec": {"containers": [], "containers": [{"name": "c"}]}})",
                             R"({"metadata": {"name": "a"}, "metadata": {"uid": "u"}})"}) {
        decodes_as_from_json<Pod>(text);
    }
}

TEST_CASE("null members keep their defaults and null map entries are left out, as from_json does") {
    Pod p{};
    REQUIRE(try_decode_json(R"({"apiVersion": null, "metadata": {"name": null, "labels": {"a": null, "b": "1"}},
                                "status": null, "spec": {"containers": [{"resources": null}]}})",
                            p));
    CHECK(p.apiVersion == "v1");
    CHECK(p.metadata.labels == Labels{{"b", "1"}});
    CHECK_FALSE(p.status.has_value());
    CHECK(p.spec.containers.at(0).resources.is_null());
}

TEST_CASE("an ObjectArena bumps within its blocks until sealed, then allocates from the heap") {
    ObjectArena* arena = nullptr;
    json::storage_ptr sp = ObjectArena::make(64, arena);
    REQUIRE(arena);
    void* a = sp->allocate(24, 8);
    void* b = sp->allocate(100, 16);
    CHECK(reinterpret_cast<std::uintptr_t>(b) % 16 == 0);
    CHECK(static_cast<char*>(b) >= static_cast<char*>(a) + 24);
    void* big = sp->allocate(10'000, 8);  // more than a block: a block of its own
    std::memset(big, 1, 10'000);
    CHECK(arena->used() >= 10'124);
    sp->deallocate(a, 24, 8);  // freed with the arena
    arena->seal();
    auto used = arena->used();
    void* heap = sp->allocate(48, 8);
    CHECK(arena->used() == used);
    std::memset(heap, 2, 48);
    sp->deallocate(heap, 48, 8);  // given back to the heap now (LeakSanitizer would say otherwise)
    sp->deallocate(b, 100, 16);
}

TEST_CASE("the DOM a decoded object keeps is built in one arena that it shares with nothing else") {
    Pod p{};
    REQUIRE(try_decode_json(kPod, p));
    const auto& sp = p.unknown.storage();
    CHECK(sp.is_shared());
    CHECK(p.metadata.unknown.storage() == sp);
    CHECK(p.spec.unknown.storage() == sp);
    CHECK(p.spec.containers.at(0).unknown.storage() == sp);
    CHECK(p.spec.containers.at(0).resources.storage() == sp);  // a json::value member
    CHECK(p.status->unknown.storage() == sp);

    Pod q{};
    REQUIRE(try_decode_json(kPod, q));
    CHECK(q.unknown.storage() != sp);  // each object frees its own

    Pod plain{};  // a document with nothing unmodelled makes no arena
    REQUIRE(try_decode_json(R"({"metadata": {"name": "x"}})", plain));
    CHECK_FALSE(plain.unknown.storage().is_shared());
}

TEST_CASE("copies of a decoded object outlive it and change without touching it, from several threads") {
    auto original = std::make_unique<Pod>();
    REQUIRE(try_decode_json(kPod, *original));
    const auto want = to_json(*original);
    std::vector<Pod> copies(4, *original);  // copies share the sealed arena and allocate on the heap
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 200; ++i) {
                Pod c = *original;
                c.spec.unknown["added"] = json::array{i, std::string(64, 'x'), json::object{{"k", t}}};
                c.metadata.unknown.erase("managedFields");
                copies[t] = std::move(c);
            }
        });
    for (auto& th : threads) th.join();
    CHECK(to_json(*original) == want);
    original.reset();  // the copies keep what they share alive
    for (int t = 0; t < 4; ++t) {
        CHECK(copies[t].spec.unknown.at("added").as_array().at(2).at("k") == t);
        CHECK(copies[t].spec.unknown.at("unmodelled") == json::parse(R"({"deep": {"deeper": [true, false]}})"));
        CHECK_FALSE(copies[t].metadata.unknown.contains("managedFields"));
    }
}

TEST_CASE("dropping managedFields keeps the other metadata keys in their order, as the fast path does (found by fuzzing)") {
    // TypedWatchDecoder drops managedFields with erase_managed_fields on its DOM path; the fast
    // path never decodes them. Both must write the unknown metadata keys back in one order.
    auto v = boost::json::parse(R"({"metadata":{"name":"p","managedFields":[{}],"x":1,"y":2,"z":3}})");
    vck::api::erase_managed_fields(v);
    CHECK(boost::json::serialize(v) == R"({"metadata":{"name":"p","x":1,"y":2,"z":3}})");
}
