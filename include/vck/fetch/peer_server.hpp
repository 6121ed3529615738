// PeerServer: serves one copy's directory to the other download pods of its volume, so each
// byte leaves the object store once (`vck-fetch fetch --serve`). It runs beside the fetch that
// fills the directory, on the same executor, and answers
//   GET /objects/<relative path, percent-encoded>?size=<bytes the listing gives>
// with the file's bytes once the file is there whole: files land in the directory only by an
// atomic rename (atomic_file.hpp), so a file under its final name is complete, and a request
// for a file not landed yet waits for it (up to Options::wait) instead of failing: pullers
// take each file as soon as this copy has it, and the copies fill as a pipeline.
// Guarantees:
// - Only a client presenting the volume's peer certificate completes the TLS handshake
//   (peer_tls.hpp); anyone else gets nothing, not even a status line.
// - Only files of the directory, read only: the path rules of peer_file.hpp (no `..`, no
//   absolute path, no symbolic link anywhere on the way, regular files with one link); any
//   refusal is a bare 404, saying nothing of what exists.
// - A file of another size than asked is not served (the puller's listing is the truth; a
//   stale file is never sent as if current). What is sent is checked again by the puller.
// - One failing connection never disturbs another or the fetch; stop() closes the listener.
// - Once the fetch has ended (fetched()), a file that is not there is not waited for: it will
//   not come, and its puller takes it from elsewhere at once.
// - open_ready_port(port) opens a plain TCP port on the same address that accepts and closes
//   every connection: the copy is complete. A readiness probe (tcpSocket) on it makes the pod
//   Ready while it still serves, so the controller need not wait for the linger to end.
// The test hook Options::corrupt (vck-fetch: VCK_FETCH_TEST_CORRUPT_PEER=1) flips one byte of
// every file sent, so tests can show that pullers detect it.
#pragma once

#include <vck/fetch/peer_file.hpp>
#include <vck/fetch/peer_tls.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/url/parse.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

namespace vck::fetch {

class PeerServer : public std::enable_shared_from_this<PeerServer> {
public:
    struct Options {
        Options() {}
        std::string bind = "0.0.0.0";
        std::uint16_t port = 0;  // 0: any free port (start() says which)
        std::chrono::milliseconds wait{60'000};  // how long a request waits for its file to land
        bool corrupt = false;  // test hook: flip one byte of each file sent
    };
    struct Counts {
        std::uint64_t files = 0, bytes = 0, refused = 0;
    };

    static std::shared_ptr<PeerServer> make(boost::asio::any_io_executor ex, std::filesystem::path dir,
                                            const PeerCredentials& creds, Options o = {}) {
        return std::shared_ptr<PeerServer>(new PeerServer(std::move(ex), std::move(dir), creds, std::move(o)));
    }

    /// Binds and listens; returns the port. Throws std::system_error naming the address.
    std::uint16_t start() {
        namespace ip = boost::asio::ip;
        ip::tcp::endpoint ep(ip::make_address(opts_.bind), opts_.port);
        acceptor_.open(ep.protocol());
        acceptor_.set_option(ip::tcp::acceptor::reuse_address(true));
        acceptor_.bind(ep);
        acceptor_.listen();
        boost::asio::co_spawn(ex_, [self = shared_from_this()] { return self->accept_loop(); }, boost::asio::detached);
        return acceptor_.local_endpoint().port();
    }

    void stop() {
        boost::system::error_code ec;
        acceptor_.close(ec);
        ready_.close(ec);
    }

    /// The fetch has ended: files not there now never come.
    void fetched() { fetched_ = true; }

    /// Listens on `port` of the served address, accepting and closing every connection (the
    /// copy is complete). Throws std::system_error naming the address.
    void open_ready_port(std::uint16_t port) {
        namespace ip = boost::asio::ip;
        ip::tcp::endpoint ep(ip::make_address(opts_.bind), port);
        ready_.open(ep.protocol());
        ready_.set_option(ip::tcp::acceptor::reuse_address(true));
        ready_.bind(ep);
        ready_.listen();
        boost::asio::co_spawn(ex_, [self = shared_from_this()]() -> boost::asio::awaitable<void> {
            for (;;) {
                boost::system::error_code ec;
                auto sock = co_await self->ready_.async_accept(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
                if (ec == boost::asio::error::operation_aborted || !self->ready_.is_open()) co_return;
                sock.close(ec);
            }
        }, boost::asio::detached);
    }

    Counts counts() const { return Counts{files_.load(), bytes_.load(), refused_.load()}; }
    /// Connections open now, and when the last request came or ended: a server lingers until
    /// its pullers have gone quiet.
    int active() const { return active_.load(); }
    std::chrono::steady_clock::time_point last_activity() const {
        return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(last_activity_.load()));
    }

private:
    using Stream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

    PeerServer(boost::asio::any_io_executor ex, std::filesystem::path dir, const PeerCredentials& creds, Options o)
        : ex_(std::move(ex)), dir_(std::move(dir)), opts_(std::move(o)), tls_(creds.server_context()), acceptor_(ex_),
          ready_(ex_) {
        touch();
    }

    void touch() { last_activity_ = std::chrono::steady_clock::now().time_since_epoch().count(); }

    boost::asio::awaitable<void> accept_loop() {
        for (;;) {
            boost::system::error_code ec;
            auto sock = co_await acceptor_.async_accept(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
            if (ec == boost::asio::error::operation_aborted || !acceptor_.is_open()) co_return;
            if (ec) continue;
            boost::asio::co_spawn(ex_, [self = shared_from_this(), s = std::move(sock)]() mutable {
                return self->session(std::move(s));
            }, boost::asio::detached);
        }
    }

    boost::asio::awaitable<void> session(boost::asio::ip::tcp::socket sock) {
        namespace beast = boost::beast;
        namespace http = beast::http;
        ++active_;
        touch();
        struct Leave {
            PeerServer& s;
            ~Leave() {
                --s.active_;
                s.touch();
            }
        } leave{*this};
        Stream stream(beast::tcp_stream(std::move(sock)), *tls_);
        boost::system::error_code ec;
        beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
        co_await stream.async_handshake(boost::asio::ssl::stream_base::server,
                                        boost::asio::redirect_error(boost::asio::use_awaitable, ec));
        if (ec) {
            ++refused_;  // no certificate, or another one: nothing is said
            co_return;
        }
        beast::flat_buffer buffer;
        for (;;) {
            http::request<http::empty_body> req;
            beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(60));
            co_await http::async_read(stream, buffer, req, boost::asio::redirect_error(boost::asio::use_awaitable, ec));
            if (ec) co_return;
            touch();
            bool keep = co_await answer(stream, req);
            touch();
            if (!keep || !req.keep_alive()) break;
        }
        beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(5));
        co_await stream.async_shutdown(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    }

    /// Answers one request; false when the connection must close.
    boost::asio::awaitable<bool> answer(Stream& stream, const boost::beast::http::request<boost::beast::http::empty_body>& req) {
        namespace http = boost::beast::http;
        std::string relative;
        std::optional<std::uint64_t> size;
        if (req.method() == http::verb::get) {
            auto target = boost::urls::parse_origin_form(req.target());
            std::string path = target ? std::string(target->path()) : std::string();  // decoded
            if (path.starts_with("/objects/")) {
                relative = path.substr(9);
                auto p = target->params().find("size");
                if (p != target->params().end()) {
                    try {
                        size = std::stoull(std::string((*p).value));
                    } catch (const std::exception&) {
                        relative.clear();
                    }
                }
            }
        }
        if (relative.empty()) co_return co_await refuse(stream, req, http::status::not_found);
        // Wait for the file to land (whole, at the size the listing gives).
        auto deadline = std::chrono::steady_clock::now() + opts_.wait;
        PeerFile f;
        for (;;) {
            const bool done = fetched_.load();  // read first: a file that lands before it is seen below
            f = open_peer_file(dir_, relative);
            if (f.fd >= 0 && (!size || f.size == *size)) break;
            // Absent, or there at another size (an older version, replaced when it lands): it
            // may come. Refused for what it is (unsafe, a link): it never will.
            const bool may_come = f.fd >= 0 || f.missing;
            if (f.fd >= 0) {
                ::close(f.fd);
                f.fd = -1;
            }
            if (!may_come || done || std::chrono::steady_clock::now() >= deadline)
                co_return co_await refuse(stream, req, http::status::not_found);
            boost::asio::steady_timer t(ex_, std::chrono::milliseconds(50));
            co_await t.async_wait(boost::asio::use_awaitable);
        }
        struct Close {
            int fd;
            ~Close() { ::close(fd); }
        } closer{f.fd};
        std::string head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
                           std::to_string(f.size) + "\r\n\r\n";
        boost::system::error_code ec;
        auto& lowest = boost::beast::get_lowest_layer(stream);
        lowest.expires_after(std::chrono::seconds(60));
        co_await boost::asio::async_write(stream, boost::asio::buffer(head),
                                          boost::asio::redirect_error(boost::asio::use_awaitable, ec));
        if (ec) co_return false;
        std::vector<char> buf(256 * 1024);
        std::uint64_t off = 0;
        while (off < f.size) {
            auto want = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), f.size - off));
            auto n = ::pread(f.fd, buf.data(), want, static_cast<off_t>(off));
            if (n <= 0) co_return false;  // the file changed under us: the puller sees a short body
            if (opts_.corrupt && off == 0) buf[0] = static_cast<char>(buf[0] ^ 0x5a);
            lowest.expires_after(std::chrono::seconds(60));
            co_await boost::asio::async_write(stream, boost::asio::buffer(buf.data(), static_cast<std::size_t>(n)),
                                              boost::asio::redirect_error(boost::asio::use_awaitable, ec));
            if (ec) co_return false;
            off += static_cast<std::uint64_t>(n);
            bytes_ += static_cast<std::uint64_t>(n);
        }
        ++files_;
        co_return true;
    }

    boost::asio::awaitable<bool> refuse(Stream& stream, const boost::beast::http::request<boost::beast::http::empty_body>& req,
                                        boost::beast::http::status code) {
        namespace http = boost::beast::http;
        ++refused_;
        http::response<http::string_body> res{code, req.version()};
        res.set(http::field::content_type, "text/plain");
        res.body() = "not served\n";
        res.keep_alive(req.keep_alive());
        res.prepare_payload();
        boost::system::error_code ec;
        boost::beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(30));
        co_await http::async_write(stream, res, boost::asio::redirect_error(boost::asio::use_awaitable, ec));
        co_return !ec;
    }

    boost::asio::any_io_executor ex_;
    std::filesystem::path dir_;
    Options opts_;
    std::shared_ptr<boost::asio::ssl::context> tls_;
    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::ip::tcp::acceptor ready_;
    std::atomic<bool> fetched_{false};
    std::atomic<int> active_{0};
    std::atomic<std::chrono::steady_clock::rep> last_activity_{0};
    std::atomic<std::uint64_t> files_{0}, bytes_{0}, refused_{0};
};

/// Returns once `server` has had no connection open and no request for `quiet`: a complete copy
/// serves on while its pullers still ask.
inline boost::asio::awaitable<void> linger_while_asked(PeerServer& server, std::chrono::milliseconds quiet) {
    boost::asio::steady_timer t(co_await boost::asio::this_coro::executor);
    for (;;) {
        if (server.active() == 0 && std::chrono::steady_clock::now() - server.last_activity() >= quiet) co_return;
        t.expires_after(std::chrono::milliseconds(200));
        co_await t.async_wait(boost::asio::use_awaitable);
    }
}

} // namespace vck::fetch
