// WatchReader: the events of a watch, read from any source of the response body's bytes
// (the client's HTTP stream, or a runtime::ListWatch's byte stream), untyped or typed.
// next() yields events until the source ends between two events (nullopt); ERROR events are
// yielded as they come (their object is a Status: watch_error() turns it into the ApiError it
// stands for, a 410 meaning "relist"). A source that ends in the middle of an event is a
// Network ApiError; bytes that are not watch JSON are a Decode ApiError. No I/O types here:
// a Source only needs `awaitable<size_t> read_some(char*, size_t)` (0 = ended) and `close()`.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/meta.hpp>
#include <vck/client/error.hpp>
#include <vck/client/typed_watch_decoder.hpp>
#include <vck/client/watch_decoder.hpp>

#include <boost/asio/awaitable.hpp>

#include <concepts>
#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <typeinfo>

namespace vck::client {

template <class S>
concept WatchByteSource = requires(S& s, char* p, std::size_t n) {
    { s.read_some(p, n) } -> std::same_as<boost::asio::awaitable<std::size_t>>;
    s.close();
};

template <WatchByteSource Source>
class WatchReader {
public:
    WatchReader() = default;
    WatchReader(Source s, std::string path, EventStorage storage = EventStorage::Default)
        : source_(std::move(s)), path_(std::move(path)), decoder_(storage) {}

    boost::asio::awaitable<std::optional<WatchEvent>> next() {
        if (typed_) throw std::logic_error("WatchStream::next: the stream is read by next_typed");
        for (;;) {
            if (auto e = decoder_.next()) co_return e;
            bool more = co_await read_into(decoder_);
            if (!more) co_return std::nullopt;
        }
    }
    /// Like next(), with each object decoded straight into T, no DOM in between
    /// (typed_watch_decoder.hpp): for typed informers. A stream is read one way only, by
    /// next() or by next_typed<T>() with one T. An object that is not a T throws its
    /// api::DecodeError (an UndecodableEvent naming the object) in its place in the stream, as
    /// from_json<T> on next()'s object would; the stream stays usable: the next call goes on
    /// with the event after it.
    template <class T>
    boost::asio::awaitable<std::optional<TypedWatchEvent<T>>> next_typed(bool drop_managed_fields = false) {
        if (!typed_) {
            typed_ = std::make_shared<TypedWatchDecoder<T>>(drop_managed_fields);
            typed_type_ = &typeid(T);
        } else if (*typed_type_ != typeid(T)) {
            throw std::logic_error("WatchStream::next_typed: the stream is read as another type");
        }
        auto& d = *static_cast<TypedWatchDecoder<T>*>(typed_.get());
        for (;;) {
            try {
                if (auto e = d.next()) co_return e;
            } catch (const WatchDecodeError& e) {
                throw ApiError(ErrorKind::Decode, "WATCH", path_, e.what());
            }
            bool more = co_await read_into(d);
            if (!more) co_return std::nullopt;
        }
    }

    /// Stops the watch; a pending next() fails with a Network error.
    void cancel() { source_.close(); }
    const std::string& path() const { return path_; }

private:
    /// Reads once and feeds `decoder` what came; false when the source ended between events.
    template <class Decoder>
    boost::asio::awaitable<bool> read_into(Decoder& decoder) {
        auto n = co_await source_.read_some(buf_.get(), kBufferSize);
        if (n == 0) {
            if (!decoder.at_boundary())
                throw ApiError(ErrorKind::Network, "WATCH", path_, "watch stream ended in the middle of an event");
            co_return false;
        }
        try {
            decoder.feed(std::string_view(buf_.get(), n));
        } catch (const WatchDecodeError& e) {
            throw ApiError(ErrorKind::Decode, "WATCH", path_, e.what());
        }
        co_return true;
    }

    Source source_;
    std::string path_;
    WatchDecoder decoder_;
    std::shared_ptr<void> typed_;  // the TypedWatchDecoder of next_typed
    const std::type_info* typed_type_ = nullptr;
    static constexpr std::size_t kBufferSize = 64 * 1024;
    std::unique_ptr<char[]> buf_ = std::make_unique<char[]>(kBufferSize);
};

/// An ERROR watch event as the ApiError it stands for.
inline ApiError watch_error(const WatchEvent& e, std::string path) {
    api::Status st;
    try {
        st = api::from_json<api::Status>(e.object);
    } catch (const std::exception&) {
        st.code = 500;
        st.message = "watch ERROR event without a Status: " + boost::json::serialize(e.object);
    }
    return ApiError("WATCH", std::move(path), std::move(st));
}

} // namespace vck::client
