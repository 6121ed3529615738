// ClientListWatch: a runtime::ListWatch served by client::Client over HTTPS: the list and watch
// requests client-go's reflector makes, with the client's retries, rate limit and credentials.
// The one place where informers meet the HTTP client; everything above it (reflector,
// informer, controller) is built and tested without Beast.
#pragma once

#include <vck/client/client.hpp>
#include <vck/runtime/list_watch.hpp>

namespace vck::runtime {

class ClientListWatch final : public ListWatch {
public:
    explicit ClientListWatch(client::Client& c) : client_(c) {}

    asio::any_io_executor executor() const override { return client_.executor(); }

    asio::awaitable<std::string> list(const api::ResourceType& rt, std::string_view ns,
                                      const client::ListOptions& o) override {
        co_return co_await client_.list_page_body(rt, ns, o);
    }

    asio::awaitable<std::unique_ptr<ByteStream>> watch(const api::ResourceType& rt, std::string_view ns,
                                                       const client::WatchOptions& o) override {
        co_return std::make_unique<Body>(co_await client_.watch_body(rt, ns, o));
    }

    client::Client& client() const { return client_; }

private:
    struct Body final : ByteStream {
        explicit Body(client::ResponseStream s) : s(std::move(s)) {}
        asio::awaitable<std::size_t> read_some(char* data, std::size_t size) override {
            co_return co_await s.read_some(data, size);
        }
        void close() override { s.close(); }
        client::ResponseStream s;
    };
    client::Client& client_;
};

/// The ListWatch informers built on `c` share.
inline std::shared_ptr<ListWatch> list_watch(client::Client& c) { return std::make_shared<ClientListWatch>(c); }

} // namespace vck::runtime
