// WatchDecoder: turns the byte stream of a Kubernetes watch (one JSON event object after
// another, newline separated) into WatchEvents, whatever the read boundaries: an event split
// across reads, split inside a UTF-8 sequence, or larger than any buffer. Incremental: each
// byte is parsed once (Boost.JSON stream_parser). No I/O here, so it is tested on its own.
#pragma once

#include <vck/api/json.hpp>

#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace vck::client {

enum class WatchEventType { Added, Modified, Deleted, Bookmark, Error };

constexpr std::string_view to_string(WatchEventType t) {
    switch (t) {
    case WatchEventType::Added: return "ADDED";
    case WatchEventType::Modified: return "MODIFIED";
    case WatchEventType::Deleted: return "DELETED";
    case WatchEventType::Bookmark: return "BOOKMARK";
    case WatchEventType::Error: return "ERROR";
    }
    return "?";
}

struct WatchEvent {
    WatchEventType type = WatchEventType::Added;
    boost::json::value object;  // the object; for Error, a metav1.Status

    std::string_view resource_version() const { return api::string_at(object, {"metadata", "resourceVersion"}); }
};

/// Thrown for bytes that are not a watch event stream.
class WatchDecodeError : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

namespace detail {
/// The text of a stream parser's error. A bad \\u escape is reported by Boost.JSON as a
/// "leading" or a "trailing" surrogate, or even as "expected hex digit" (a high surrogate
/// followed by another one, when a read ends between them), depending on where the reads
/// split the stream; all three get one text, since a decoder's errors must not depend on the
/// read splits. (Boost.JSON raises expected_hex_digit for \\u escapes only.)
inline std::string stream_error_text(const boost::system::error_code& ec) {
    if (ec == boost::json::error::illegal_leading_surrogate || ec == boost::json::error::illegal_trailing_surrogate ||
        ec == boost::json::error::expected_hex_digit)
        return "watch stream is not JSON: a \\u escape is not four hex digits of a character or a surrogate pair";
    return "watch stream is not JSON: " + ec.message();
}
} // namespace detail

/// Where each event's JSON is allocated.
enum class EventStorage {
    Default,  // the default allocator: an event's values can be kept anywhere, at no cost
    /// Each event in its own reference-counted arena (a monotonic resource): two allocations
    /// per event instead of one per JSON node, and one free. For consumers that decode an
    /// event into their own types and drop its JSON (typed informers): a value kept from it
    /// keeps the whole arena alive unless copied to other storage.
    Arena,
};

/// Drops the whitespace that separates a watch stream's events from the front of `bytes`;
/// false when nothing else is left.
inline bool skip_event_separators(std::string_view& bytes) {
    auto p = bytes.find_first_not_of(" \t\r\n");
    if (p == std::string_view::npos) return false;
    bytes.remove_prefix(p);
    return true;
}

class WatchDecoder {
public:
    explicit WatchDecoder(EventStorage storage = EventStorage::Default) : storage_(storage) { parser_->reset(event_storage()); }

    /// Feeds bytes; complete events become available through next().
    void feed(std::string_view bytes) {
        while (!bytes.empty()) {
            if (!in_value_) {
                if (!skip_event_separators(bytes)) return;  // separators never reach the parser
                in_value_ = true;
            }
            boost::system::error_code ec;
            auto n = parser_->write_some(bytes.data(), bytes.size(), ec);
            if (ec) throw WatchDecodeError(detail::stream_error_text(ec));
            bytes.remove_prefix(n);
            if (parser_->done()) {
                ready_.push_back(to_event(parser_->release()));
                parser_->reset(event_storage());
                in_value_ = false;
            }
        }
    }

    std::optional<WatchEvent> next() {
        if (ready_.empty()) return std::nullopt;
        auto e = std::move(ready_.front());
        ready_.pop_front();
        return e;
    }

    /// True when the stream stopped between events (not inside one).
    bool at_boundary() const { return !in_value_; }

    static WatchEvent to_event(boost::json::value v) {
        auto* o = v.if_object();
        if (!o) throw WatchDecodeError("watch event is not a JSON object");
        auto type = api::string_at(v, {"type"});
        WatchEventType t;
        if (type == "ADDED") t = WatchEventType::Added;
        else if (type == "MODIFIED") t = WatchEventType::Modified;
        else if (type == "DELETED") t = WatchEventType::Deleted;
        else if (type == "BOOKMARK") t = WatchEventType::Bookmark;
        else if (type == "ERROR") t = WatchEventType::Error;
        else throw WatchDecodeError("watch event has unknown type \"" + std::string(type) + "\"");
        // Move-constructed, so the object keeps the event's storage (assigning it to a
        // default-storage value would copy it out of an arena).
        auto* obj = o->if_contains("object");
        return WatchEvent{t, obj ? boost::json::value(std::move(*obj)) : boost::json::value()};
    }

private:
    boost::json::storage_ptr event_storage() const {
        // 4 KiB: one block holds a typical event (the arena grows by doubling past it).
        if (storage_ == EventStorage::Arena) return boost::json::make_shared_resource<boost::json::monotonic_resource>(4096);
        return {};
    }

    EventStorage storage_;
    std::unique_ptr<boost::json::stream_parser> parser_ = std::make_unique<boost::json::stream_parser>();
    bool in_value_ = false;
    std::deque<WatchEvent> ready_;
};

} // namespace vck::client
