// TypedWatchDecoder<T>: WatchDecoder's byte stream to events whose objects are decoded straight
// into T (api/json_decoder.hpp), with no DOM of the object: for typed informers. Same results as
// WatchDecoder followed by from_json<T>, whatever the read boundaries: an event the fast path
// cannot decode exactly (object before type, a type mismatch, ...) is decoded from its own bytes
// through the DOM. Errors keep their place in the stream: events before a bad one come out
// first; next() then throws what the DOM path throws (WatchDecodeError, or for an object that
// is not a T, api::DecodeError as UndecodableEvent naming the object), and the events after it
// come out of the next calls, so a caller may skip one bad object and read on.
#pragma once

#include <vck/api/json_decoder.hpp>
#include <vck/api/meta.hpp>
#include <vck/client/undecodable_object.hpp>
#include <vck/client/watch_decoder.hpp>

#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace vck::client {

template <class T>
struct TypedWatchEvent {
    WatchEventType type = WatchEventType::Added;
    std::shared_ptr<T> object;  // Added, Modified, Deleted
    boost::json::value raw;     // Bookmark, Error: the object as JSON (for Error, a metav1.Status)

    std::string_view resource_version() const {
        if (object) return object->metadata.resourceVersion;
        return api::string_at(raw, {"metadata", "resourceVersion"});
    }
};

/// An Added, Modified or Deleted event whose object is not a T: from_json<T>'s error, with
/// the event's type and the object's identity.
class UndecodableEvent : public UndecodableObject {
public:
    UndecodableEvent(WatchEventType type, const boost::json::value& object, const api::DecodeError& error)
        : UndecodableObject(object, error), type_(type) {}
    WatchEventType type() const noexcept { return type_; }

private:
    WatchEventType type_;
};

namespace detail {

inline bool typed_event(WatchEventType t) {
    return t == WatchEventType::Added || t == WatchEventType::Modified || t == WatchEventType::Deleted;
}

inline std::optional<WatchEventType> watch_event_type(std::string_view s) {
    if (s == "ADDED") return WatchEventType::Added;
    if (s == "MODIFIED") return WatchEventType::Modified;
    if (s == "DELETED") return WatchEventType::Deleted;
    if (s == "BOOKMARK") return WatchEventType::Bookmark;
    if (s == "ERROR") return WatchEventType::Error;
    return std::nullopt;
}

/// The event being parsed: its envelope's two keys, as the SAX handler fills them.
template <class T>
struct Envelope {
    std::string type;
    bool has_type = false, has_object = false;
    std::shared_ptr<T> object;  // decoded in place when the type came first
    boost::json::value raw;     // otherwise the object as JSON

    static bool object_begin(api::sax::Handler& h, void* t) {
        h.push(api::sax::Frame{&frame, t});
        return true;
    }
    static bool key(api::sax::Handler&, api::sax::Frame& f, std::string_view k) {
        auto& e = *static_cast<Envelope*>(f.target);
        if (k == "type") {
            if (e.has_type) return false;
            e.has_type = true;
            f.member = 0;
        } else if (k == "object") {
            if (e.has_object) return false;
            e.has_object = true;
            f.member = 1;
        } else {
            f.member = api::sax::kSkip;
        }
        return true;
    }
    static bool child(api::sax::Handler& h, api::sax::Frame& f, bool is_null, api::sax::Sink& out, bool& skip) {
        auto& e = *static_cast<Envelope*>(f.target);
        if (f.member == api::sax::kSkip) {
            skip = true;
            return true;
        }
        if (is_null) return false;
        if (f.member == 0) {
            out = api::sax::Sink{api::sax::sink_ops<std::string>(), &e.type};
            return true;
        }
        auto t = e.has_type ? watch_event_type(e.type) : std::nullopt;
        if (t && typed_event(*t)) {
            e.object = std::make_shared<T>();
            out = api::sax::Sink{api::sax::sink_ops<T>(), e.object.get()};
            h.set_child_flags(api::sax::kRootObject);
        } else {
            out = api::sax::Sink{api::sax::sink_ops<boost::json::value>(), &e.raw};
        }
        return true;
    }
    static constexpr api::sax::FrameOps frame{&key, &child};
    static constexpr api::sax::SinkOps sink{&object_begin};
};

} // namespace detail

template <class T>
class TypedWatchDecoder {
public:
    /// `drop_managed_fields`: each object's metadata.managedFields is never decoded (the
    /// reflector's ReflectorOptions::drop_managed_fields).
    explicit TypedWatchDecoder(bool drop_managed_fields = false) : drop_managed_fields_(drop_managed_fields) {}

    /// Feeds bytes; complete events become available through next(). Throws WatchDecodeError
    /// for bytes that are not JSON.
    void feed(std::string_view bytes) {
        const char* begin = bytes.data();  // where the current event's bytes start in `bytes`
        while (!bytes.empty()) {
            if (!in_value_) {
                if (!skip_event_separators(bytes)) return;
                in_value_ = true;
                env_ = detail::Envelope<T>{};
                parser_.handler().start(api::sax::Sink{&detail::Envelope<T>::sink, &env_}, drop_managed_fields_);
                text_.clear();
                begin = bytes.data();
            }
            boost::system::error_code ec;
            auto n = parser_.write_some(true, bytes.data(), bytes.size(), ec);
            if (ec) throw WatchDecodeError(detail::stream_error_text(ec));
            bytes.remove_prefix(n);
            if (parser_.done()) {
                finish(std::string_view(begin, static_cast<std::size_t>(bytes.data() - begin)));
                parser_.reset();
                in_value_ = false;
            }
        }
        // An event that goes on in the next feed keeps its bytes so far, for the DOM path
        // (one that ends within a feed is copied only if that path needs it).
        if (in_value_) text_.append(begin, static_cast<std::size_t>(bytes.data() - begin));
    }

    /// The next event; rethrows, in its place, the error of an event that could not be decoded.
    std::optional<TypedWatchEvent<T>> next() {
        if (ready_.empty()) return std::nullopt;
        auto e = std::move(ready_.front());
        ready_.pop_front();
        if (e.error) std::rethrow_exception(e.error);
        return std::move(e.event);
    }

    bool at_boundary() const { return !in_value_; }
    /// Events decoded through the DOM so far (object before type, or not decodable exactly).
    std::uint64_t dom_events() const { return dom_events_; }

private:
    struct Ready {
        TypedWatchEvent<T> event;
        std::exception_ptr error;
    };

    /// `tail`: the event's bytes in this feed (text_ holds those of earlier feeds).
    void finish(std::string_view tail) {
        auto t = env_.has_type ? detail::watch_event_type(env_.type) : std::nullopt;
        if (!parser_.handler().failed() && t && (env_.object || !detail::typed_event(*t))) {
            ready_.push_back(Ready{TypedWatchEvent<T>{*t, std::move(env_.object), std::move(env_.raw)}, nullptr});
            return;
        }
        // WatchDecoder and from_json on this event's bytes: their result, or their error.
        ++dom_events_;
        try {
            text_.append(tail);
            ready_.push_back(Ready{from_dom(boost::json::parse(text_)), nullptr});
        } catch (...) {
            ready_.push_back(Ready{{}, std::current_exception()});
        }
    }

    TypedWatchEvent<T> from_dom(boost::json::value v) {
        auto e = WatchDecoder::to_event(std::move(v));
        TypedWatchEvent<T> out;
        out.type = e.type;
        if (!detail::typed_event(e.type)) {
            out.raw = std::move(e.object);
            return out;
        }
        if (drop_managed_fields_) api::erase_managed_fields(e.object);
        try {
            out.object = std::make_shared<T>(api::from_json<T>(e.object));
        } catch (const api::DecodeError& err) {
            throw UndecodableEvent(e.type, e.object, err);
        }
        return out;
    }

    bool drop_managed_fields_;
    boost::json::basic_parser<api::sax::Handler> parser_{boost::json::parse_options{}};
    bool in_value_ = false;
    detail::Envelope<T> env_;
    std::string text_;  // the current event's bytes from earlier feeds
    std::deque<Ready> ready_;
    std::uint64_t dom_events_ = 0;
};

} // namespace vck::client
