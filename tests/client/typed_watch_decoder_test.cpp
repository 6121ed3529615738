// Specification of TypedWatchDecoder: the events WatchDecoder and from_json<T> give, whatever
// the read boundaries, with errors in their place in the stream.
#include <vck/api/core_v1.hpp>
#include <vck/client/typed_watch_decoder.hpp>

#include <doctest.h>

#include <string>
#include <vector>

using namespace vck;
using client::TypedWatchDecoder;
using client::WatchEventType;
namespace json = boost::json;

namespace {

const std::string kStream =
    R"({"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"5","labels":{"x":"y"},)"
    R"("managedFields":[{"manager":"m"}]},"data":{"k":"v\u00e9"},"extra":[1,{"z":null}]}})"
    "\n"
    R"({"object":{"metadata":{"name":"b","resourceVersion":"6","managedFields":[]}},"type":"MODIFIED"})"  // object first
    "\n"
    R"({"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"7"}}})"
    "\n"
    R"({"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"8"},"data":null}})"
    "\n"
    R"({"type":"ERROR","object":{"kind":"Status","status":"Failure","code":410,"reason":"Expired"}})"
    "\n";

/// What WatchDecoder and from_json make of the same stream, as comparable JSON.
std::vector<json::value> reference(const std::string& stream, bool drop_managed_fields) {
    client::WatchDecoder d;
    d.feed(stream);
    std::vector<json::value> out;
    while (auto e = d.next()) {
        if (e->type == WatchEventType::Bookmark || e->type == WatchEventType::Error) {
            out.push_back({{"type", client::to_string(e->type)}, {"raw", e->object}});
            continue;
        }
        if (drop_managed_fields) e->object.at("metadata").as_object().erase("managedFields");
        out.push_back({{"type", client::to_string(e->type)}, {"object", api::to_json(api::from_json<api::ConfigMap>(e->object))}});
    }
    return out;
}

std::vector<json::value> drain(TypedWatchDecoder<api::ConfigMap>& d) {
    std::vector<json::value> out;
    while (auto e = d.next()) {
        if (e->object) out.push_back({{"type", client::to_string(e->type)}, {"object", api::to_json(*e->object)}});
        else out.push_back({{"type", client::to_string(e->type)}, {"raw", e->raw}});
    }
    return out;
}

} // namespace

TEST_CASE("typed events equal WatchDecoder's decoded by from_json, split at every byte boundary") {
    for (bool drop : {false, true}) {
        auto want = reference(kStream, drop);
        REQUIRE(want.size() == 5);
        for (std::size_t cut = 0; cut <= kStream.size(); ++cut) {
            TypedWatchDecoder<api::ConfigMap> d(drop);
            d.feed(std::string_view(kStream).substr(0, cut));
            d.feed(std::string_view(kStream).substr(cut));
            CHECK(drain(d) == want);
            CHECK(d.at_boundary());
            CHECK(d.dom_events() == 1);  // only the event whose object comes before its type
        }
    }
}

TEST_CASE("a stream fed one byte at a time yields the same typed events") {
    TypedWatchDecoder<api::ConfigMap> d;
    for (char c : kStream) d.feed(std::string_view(&c, 1));
    CHECK(drain(d) == reference(kStream, false));
}

TEST_CASE("managedFields are left out of typed objects only when asked") {
    const std::string e = R"({"type":"ADDED","object":{"metadata":{"name":"a","managedFields":[{"manager":"m"}]}}})";
    TypedWatchDecoder<api::ConfigMap> keep, drop(true);
    keep.feed(e);
    drop.feed(e);
    CHECK(keep.next()->object->metadata.unknown.contains("managedFields"));
    auto dropped = drop.next();
    CHECK(dropped->object->metadata.name == "a");
    CHECK(dropped->object->metadata.unknown.empty());
}

TEST_CASE("an object that is not a T throws from_json's DecodeError after the events before it") {
    TypedWatchDecoder<api::ConfigMap> d;
    d.feed(R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"
           R"({"type":"ADDED","object":{"metadata":{"name":"b"},"data":{"k":1}}})"
           R"({"type":"ADDED","object":{"metadata":{"name":"c"}}})");
    CHECK(d.next()->object->metadata.name == "a");
    CHECK_THROWS_WITH_AS(d.next(), "data.k: expected string, got integer", api::DecodeError);
    CHECK(d.next()->object->metadata.name == "c");  // the stream goes on after it
    CHECK(d.dom_events() == 1);
}

TEST_CASE("an unknown event type throws WatchDecodeError in its place") {
    TypedWatchDecoder<api::ConfigMap> d;
    d.feed(R"({"type":"ADDED","object":{"metadata":{"name":"a"}}} {"type":"RENAMED","object":{}})");
    CHECK(d.next()->object->metadata.name == "a");
    CHECK_THROWS_WITH_AS(d.next(), "watch event has unknown type \"RENAMED\"", client::WatchDecodeError);
}

TEST_CASE("bytes that are not JSON throw WatchDecodeError") {
    TypedWatchDecoder<api::ConfigMap> d;
    CHECK_THROWS_AS(d.feed("{\"type\":}"), client::WatchDecodeError);
}

TEST_CASE("a BOOKMARK between large objects does not send the next one's unmodelled part to the heap") {
    // Each object keeps its large unmodelled part in an arena of its own; a bookmark's small
    // object, decoded outside any object, does not count as the type's last size.
    auto event = [](const char* type, int i) {
        return std::string(R"({"type":")") + type + R"(","object":{"metadata":{"name":"c)" + std::to_string(i) +
               R"(","resourceVersion":")" + std::to_string(i) + R"("},"extra":")" + std::string(2000, 'x') + "\"}}\n";
    };
    TypedWatchDecoder<api::ConfigMap> d;
    d.feed(event("ADDED", 1) + R"({"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"2"}}})" +
           "\n" + event("MODIFIED", 3));
    std::vector<std::shared_ptr<api::ConfigMap>> objects;
    while (auto e = d.next())
        if (e->object) objects.push_back(e->object);
    REQUIRE(objects.size() == 2);
    CHECK(objects[0]->unknown.storage().is_shared());
    CHECK(objects[1]->unknown.storage().is_shared());
    CHECK(objects[0]->unknown.storage() != objects[1]->unknown.storage());
}
