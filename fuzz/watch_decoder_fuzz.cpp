// libFuzzer target: WatchDecoder and TypedWatchDecoder<Pod> (client/watch_decoder.hpp,
// client/typed_watch_decoder.hpp) fed one byte stream at read splits the input chooses.
// Input: byte 0 = flags (bit 0: drop managedFields), byte 1 = n (mod 8) chunk lengths, then n
// bytes, each a chunk length (0 counts as 1), used in turn until the stream is fed; the rest is
// the stream. Contract: each decoder yields the same events and errors, in the same places,
// whatever the splits (compared with feeding the stream in one piece); the typed decoder's
// events are WatchDecoder's followed by from_json<Pod>, up to WatchDecoder's first error; only
// WatchDecodeError and UndecodableEvent are thrown.
#include "fuzz_check.hpp"

#include <vck/api/core_v1.hpp>
#include <vck/api/meta.hpp>
#include <vck/client/typed_watch_decoder.hpp>
#include <vck/client/watch_decoder.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

using vck::client::TypedWatchDecoder;
using vck::client::UndecodableEvent;
using vck::client::WatchDecodeError;
using vck::client::WatchDecoder;
using Pod = vck::api::Pod;

// One outcome per event, as text: "E <type> <json>" for an event, "X <what>" for an error
// next() raised in its place, "F <what>" for an error feed() raised (the stream ends there),
// and a last "B" or "M" for a stream that stops between events or in the middle of one.
using Outcomes = std::vector<std::string>;

std::string event_text(vck::client::WatchEventType t, const std::string& json) {
    return "E " + std::string(to_string(t)) + " " + json;
}

template <class Decoder, class Drain>
Outcomes run(Decoder& d, std::string_view stream, const std::vector<std::size_t>& chunks, Drain drain) {
    Outcomes out;
    std::size_t k = 0;
    while (!stream.empty()) {
        std::size_t n = chunks.empty() ? stream.size() : std::min(stream.size(), chunks[k++ % chunks.size()]);
        try {
            d.feed(stream.substr(0, n));
        } catch (const WatchDecodeError& e) {
            drain(d, out);
            out.push_back(std::string("F ") + e.what());
            return out;
        }
        stream.remove_prefix(n);
        drain(d, out);
    }
    out.push_back(d.at_boundary() ? "B" : "M");
    return out;
}

void drain_untyped(WatchDecoder& d, Outcomes& out) {
    while (auto e = d.next()) out.push_back(event_text(e->type, boost::json::serialize(e->object)));
}

void drain_typed(TypedWatchDecoder<Pod>& d, Outcomes& out) {
    for (;;) {
        try {
            auto e = d.next();
            if (!e) return;
            out.push_back(event_text(e->type, e->object ? boost::json::serialize(vck::api::to_json(*e->object))
                                                        : boost::json::serialize(e->raw)));
        } catch (const UndecodableEvent& e) {
            out.push_back(std::string("X ") + e.what());
        } catch (const WatchDecodeError& e) {
            out.push_back(std::string("X ") + e.what());
        }
    }
}

std::string join(const Outcomes& o) {
    std::string s;
    for (const auto& x : o) s += x + "\n";
    return s;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const bool drop = data[0] & 1;
    std::size_t n = data[1] % 8;
    if (size < 2 + n) return 0;
    std::vector<std::size_t> chunks;
    for (std::size_t i = 0; i < n; ++i) chunks.push_back(data[2 + i] ? data[2 + i] : 1);
    std::string_view stream(reinterpret_cast<const char*>(data) + 2 + n, size - 2 - n);

    WatchDecoder whole, split;
    auto untyped = run(whole, stream, {}, drain_untyped);
    auto untyped_split = run(split, stream, chunks, drain_untyped);
    vck::fuzz::check(untyped == untyped_split, "WatchDecoder's events depend on the read splits",
                     join(untyped) + "--- split:\n" + join(untyped_split));

    TypedWatchDecoder<Pod> typed_whole(drop), typed_split(drop);
    auto typed = run(typed_whole, stream, {}, drain_typed);
    auto typed_splits = run(typed_split, stream, chunks, drain_typed);
    vck::fuzz::check(typed == typed_splits, "TypedWatchDecoder's events depend on the read splits",
                     join(typed) + "--- split:\n" + join(typed_splits));

    // The typed decoder against WatchDecoder + from_json<Pod>, event by event, up to
    // WatchDecoder's first error (where WatchDecoder stops and the typed decoder may read on).
    WatchDecoder reference;
    std::string_view rest = stream;
    std::size_t i = 0;
    bool stopped = false;
    try {
        reference.feed(rest);
    } catch (const WatchDecodeError&) {
        stopped = true;
    }
    while (auto e = reference.next()) {
        vck::fuzz::check(i < typed.size(), "TypedWatchDecoder yields fewer events than WatchDecoder", join(typed));
        std::string expected;
        if (vck::client::detail::typed_event(e->type)) {
            try {
                if (drop) vck::api::erase_managed_fields(e->object);
                expected = event_text(e->type, boost::json::serialize(vck::api::to_json(vck::api::from_json<Pod>(e->object))));
            } catch (const vck::api::DecodeError&) {
                expected = "X";
            }
        } else {
            expected = event_text(e->type, boost::json::serialize(e->object));
        }
        const std::string& got = typed[i++];
        if (expected == "X") vck::fuzz::check(got.starts_with("X "), "TypedWatchDecoder decodes an event from_json refuses", got);
        else vck::fuzz::check(got == expected, "TypedWatchDecoder and WatchDecoder + from_json differ", got + "\n" + expected);
    }
    if (stopped) {
        vck::fuzz::check(i < typed.size() && (typed[i].starts_with("X ") || typed[i].starts_with("F ")),
                         "TypedWatchDecoder accepts an event WatchDecoder refuses", join(typed));
    } else {
        vck::fuzz::check(i + 1 == typed.size() && typed[i] == (reference.at_boundary() ? "B" : "M"),
                         "TypedWatchDecoder yields other events than WatchDecoder", join(typed));
    }
    return 0;
}
