// Specification of WatchDecoder: events come out whole whatever the read boundaries.
#include <vck/client/watch_decoder.hpp>

#include <doctest.h>

#include <string>
#include <vector>

using vck::client::WatchDecoder;
using vck::client::WatchEventType;

namespace {
std::string event(std::string_view type, std::string_view name, std::string_view extra = "") {
    return std::string(R"({"type":")") + std::string(type) + R"(","object":{"kind":"Pod","metadata":{"name":")" +
           std::string(name) + R"(","resourceVersion":"7"})" + std::string(extra) + "}}\n";
}
std::vector<std::string> names(WatchDecoder& d) {
    std::vector<std::string> out;
    while (auto e = d.next()) out.emplace_back(vck::api::string_at(e->object, {"metadata", "name"}));
    return out;
}
} // namespace

TEST_CASE("events split at every possible byte boundary decode identically") {
    std::string stream = event("ADDED", "a") + event("MODIFIED", "b") + event("DELETED", "c");
    for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
        WatchDecoder d;
        d.feed(std::string_view(stream).substr(0, cut));
        d.feed(std::string_view(stream).substr(cut));
        CHECK(names(d) == std::vector<std::string>{"a", "b", "c"});
        CHECK(d.at_boundary());
    }
}

TEST_CASE("a stream fed one byte at a time yields every event with its type") {
    std::string stream = event("ADDED", "a") + event("BOOKMARK", "b") + event("ERROR", "c");
    WatchDecoder d;
    std::vector<WatchEventType> types;
    for (char c : stream) {
        d.feed(std::string_view(&c, 1));
        while (auto e = d.next()) types.push_back(e->type);
    }
    CHECK(types == std::vector<WatchEventType>{WatchEventType::Added, WatchEventType::Bookmark, WatchEventType::Error});
}

TEST_CASE("a multi-byte UTF-8 character split across reads survives intact") {
    std::string name = "da\xC3\xA9t\xE2\x82\xAC\xF0\x9F\x98\x80";  // é, €, 😀
    std::string stream = event("ADDED", name);
    auto pos = stream.find("\xE2\x82\xAC") + 1;  // inside the euro sign
    WatchDecoder d;
    d.feed(std::string_view(stream).substr(0, pos));
    CHECK_FALSE(d.next().has_value());
    d.feed(std::string_view(stream).substr(pos));
    CHECK(names(d) == std::vector<std::string>{name});
}

TEST_CASE("an event larger than any read buffer decodes") {
    std::string big(3 * 1024 * 1024, 'x');
    std::string stream = event("ADDED", "big", R"(,"data":")" + big + "\"");
    WatchDecoder d;
    for (std::size_t i = 0; i < stream.size(); i += 65536) d.feed(std::string_view(stream).substr(i, 65536));
    auto e = d.next();
    REQUIRE(e.has_value());
    CHECK(e->object.as_object()["data"].as_string().size() == big.size());
}

TEST_CASE("a stream cut inside an event is not at a boundary") {
    std::string stream = event("ADDED", "a");
    WatchDecoder d;
    d.feed(std::string_view(stream).substr(0, stream.size() / 2));
    CHECK_FALSE(d.at_boundary());
}

TEST_CASE("bytes that are not JSON, or an unknown event type, are a clear error") {
    WatchDecoder d;
    CHECK_THROWS_WITH_AS(d.feed("{\"type\": nope}"), doctest::Contains("not JSON"), vck::client::WatchDecodeError);
    WatchDecoder d2;
    CHECK_THROWS_WITH_AS(d2.feed(R"({"type":"EXPLODED","object":{}})"), doctest::Contains("EXPLODED"),
                         vck::client::WatchDecodeError);
}

TEST_CASE("a bad \\u escape is one error, with one text, wherever the reads split the stream") {
    // Boost.JSON calls a lone surrogate leading or trailing depending on the split, and a high
    // surrogate followed by another one "expected hex digit" when a read ends between them.
    const std::string bad_escape = "watch stream is not JSON: a \\u escape is not four hex digits of a character or a surrogate pair";
    for (std::string stream : {std::string(R"({"type":"ADDED","object":{"m\\\udddddd":1}})"),
                               std::string(R"({"type":"ADDED","object":{"m":"a\udaaa\udaaa\\"}})"),
                               std::string(R"({"type":"ADDED","object":{"m":"\uzz12"}})")}) {
        std::string whole;
        try {
            WatchDecoder d;
            d.feed(stream);
        } catch (const vck::client::WatchDecodeError& e) {
            whole = e.what();
        }
        CHECK_MESSAGE(whole == bad_escape, stream);
        for (std::size_t cut = 1; cut < stream.size(); ++cut) {
            WatchDecoder d;
            std::string text;
            try {
                d.feed(std::string_view(stream).substr(0, cut));
                d.feed(std::string_view(stream).substr(cut));
            } catch (const vck::client::WatchDecodeError& e) {
                text = e.what();
            }
            CHECK_MESSAGE(text == whole, stream, " split at ", cut);
        }
    }
}

TEST_CASE("with arena storage each event's object lives in an arena of its own, and decodes the same") {
    std::string stream = event("ADDED", "a", R"(,"data":{"k":"v"})") + event("MODIFIED", "b") + event("DELETED", "c");
    for (std::size_t cut = 0; cut <= stream.size(); cut += 7) {
        WatchDecoder arena(vck::client::EventStorage::Arena), plain;
        for (auto* d : {&arena, &plain}) {
            d->feed(std::string_view(stream).substr(0, cut));
            d->feed(std::string_view(stream).substr(cut));
        }
        std::vector<vck::client::WatchEvent> events;
        while (auto e = arena.next()) {
            auto p = plain.next();
            REQUIRE(p);
            CHECK(e->type == p->type);
            CHECK(e->object == p->object);
            // The object kept the arena it was parsed into (moving it out of the event
            // envelope did not copy it to default storage)...
            CHECK(e->object.storage().is_deallocate_trivial());
            CHECK(e->object.storage().is_shared());
            CHECK_FALSE(p->object.storage().is_deallocate_trivial());
            events.push_back(std::move(*e));
        }
        CHECK_FALSE(plain.next());
        REQUIRE(events.size() == 3);
        // ...and no two events share one, so dropping an event frees all of its memory.
        CHECK(events[0].object.storage().get() != events[1].object.storage().get());
        CHECK(events[1].object.storage().get() != events[2].object.storage().get());
    }
}
