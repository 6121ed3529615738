// ListWatch: what a reflector needs from an API server, and nothing more (client-go's
// ListerWatcher): one page of a list as the server's JSON text, and a watch as the bytes of
// its response body. The reflector decodes both itself (client/typed_list_decoder.hpp,
// client/watch_reader.hpp), so every implementation is read exactly as a real server is.
// This header has no I/O types: runtime/client_list_watch.hpp serves it over HTTPS with
// client::Client, sandbox/memory_list_watch.hpp from memory for tests without a socket.
// Contract of an implementation: list() and watch() take the query a real server takes
// (limit/continue; resourceVersion, bookmarks, timeout), fail with client::ApiError as the
// client does (410 Gone for an expired version may also come as an ERROR event in the
// watch), and run on executor(). A ByteStream's read_some returns 0 once the server ended
// the stream; after close(), a pending or later read fails with a Network ApiError.
#pragma once

#include <vck/api/resource.hpp>
#include <vck/client/request_options.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace vck::runtime {

namespace asio = boost::asio;

/// The body of a watch response, as it arrives.
class ByteStream {
public:
    virtual ~ByteStream() = default;
    virtual asio::awaitable<std::size_t> read_some(char* data, std::size_t size) = 0;
    virtual void close() = 0;
};

class ListWatch {
public:
    virtual ~ListWatch() = default;
    virtual asio::any_io_executor executor() const = 0;
    /// One page of the list `o` asks for: a List's JSON text (items, metadata.resourceVersion,
    /// metadata.continue when more pages follow).
    virtual asio::awaitable<std::string> list(const api::ResourceType& rt, std::string_view ns,
                                              const client::ListOptions& o) = 0;
    /// A watch from `o.resource_version`: newline-separated watch events, as JSON.
    virtual asio::awaitable<std::unique_ptr<ByteStream>> watch(const api::ResourceType& rt, std::string_view ns,
                                                               const client::WatchOptions& o) = 0;
};

/// A ByteStream as client::WatchReader's source. Not an aggregate: see
/// client/request_options.hpp on GCC 12 and braced temporaries in co_await expressions.
struct ByteStreamSource {
    ByteStreamSource() = default;
    explicit ByteStreamSource(std::unique_ptr<ByteStream> s) : stream(std::move(s)) {}
    std::unique_ptr<ByteStream> stream;
    asio::awaitable<std::size_t> read_some(char* data, std::size_t size) { return stream->read_some(data, size); }
    void close() {
        if (stream) stream->close();
    }
};

} // namespace vck::runtime
