// HttpTransport: HTTP/1.1 over Boost.Beast to one endpoint (http or https), with a keep-alive
// connection pool, connect and request timeouts, chunked bodies, and streamed responses.
// Guarantees: a request sent on a pooled connection that the server had closed while idle is
// retried once on a fresh connection when it is idempotent (never a POST or PATCH); every
// failure surfaces as ApiError with a transport kind (ConnectionRefused, TlsVerification,
// Timeout, Network) naming the request. Safe to use from several coroutines at once.
#pragma once

#include <vck/client/error.hpp>
#include <vck/client/tls.hpp>
#include <vck/version.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vck::client {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

/// Where requests go: scheme, host, port, and an optional path prefix (servers behind a proxy
/// such as https://host/k8s/clusters/c-1 keep their API under a prefix).
struct Endpoint {
    std::string scheme = "https";
    std::string host;
    std::string port;
    std::string base_path;

    bool tls() const { return scheme == "https"; }
    /// The Host header: host[:port], IPv6 addresses bracketed, default ports left out.
    std::string host_header() const {
        std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
        if (!((tls() && port == "443") || (!tls() && port == "80"))) h += ":" + port;
        return h;
    }
    std::string url() const { return scheme + "://" + host_header() + base_path; }

    /// Parses "https://host:port/prefix". Throws std::invalid_argument for anything else.
    static Endpoint parse(std::string_view text) {
        auto r = boost::urls::parse_uri(text);
        if (!r) throw std::invalid_argument("invalid server URL \"" + std::string(text) + "\": " + r.error().message());
        Endpoint e;
        e.scheme = std::string(r->scheme());
        if (e.scheme != "https" && e.scheme != "http")
            throw std::invalid_argument("server URL \"" + std::string(text) + "\" must start with https:// or http://");
        e.host = std::string(r->host_address());
        if (e.host.empty()) throw std::invalid_argument("server URL \"" + std::string(text) + "\" has no host");
        e.port = r->has_port() ? std::string(r->port()) : (e.tls() ? "443" : "80");
        e.base_path = std::string(r->encoded_path());
        while (!e.base_path.empty() && e.base_path.back() == '/') e.base_path.pop_back();
        return e;
    }
};

struct TransportOptions {
    std::chrono::milliseconds connect_timeout{10'000};
    std::chrono::milliseconds request_timeout{60'000};
    std::chrono::seconds idle_timeout{90};  // pooled connections older than this are dropped
    std::size_t max_idle = 16;
    std::string user_agent = "vck/" VCK_VERSION;
};

struct HttpRequest {
    http::verb method = http::verb::get;
    std::string target;  // path and query, already percent-encoded, without the base path
    http::fields headers;
    std::string body;
    /// Overrides TransportOptions::request_timeout; zero means no deadline (watches).
    std::optional<std::chrono::milliseconds> timeout;

    bool idempotent() const {
        return method == http::verb::get || method == http::verb::head || method == http::verb::put ||
               method == http::verb::delete_ || method == http::verb::options;
    }
};

struct HttpResponse {
    unsigned status = 0;
    http::fields headers;
    std::string body;

    std::string_view header(http::field f) const {
        auto it = headers.find(f);
        return it == headers.end() ? std::string_view{} : std::string_view(it->value().data(), it->value().size());
    }
    std::string_view header(std::string_view name) const {
        auto it = headers.find(name);
        return it == headers.end() ? std::string_view{} : std::string_view(it->value().data(), it->value().size());
    }
};

namespace detail {

/// One TCP or TLS connection and its read buffer.
struct Connection {
    // Beast sizes each socket read by the buffer's free capacity (at least 512 bytes, at most
    // 64 KiB), and a flat_buffer only grows when a header needs it: without this reserve a
    // large body arrived 512 bytes per recvmsg (a 64 MiB object took 131,072 of them).
    static constexpr std::size_t kReadBufferSize = 64 * 1024;
    Connection() { buffer.reserve(kReadBufferSize); }

    std::unique_ptr<beast::tcp_stream> plain;
    std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> secure;
    beast::flat_buffer buffer;
    bool reused = false;
    std::chrono::steady_clock::time_point idle_since{};

    beast::tcp_stream& lowest() { return secure ? beast::get_lowest_layer(*secure) : *plain; }
    /// Whether a read can make progress without the network: bytes in the read buffer, or
    /// TLS data (decrypted, or records not yet decrypted) held by the TLS layer.
    bool holds_data() {
        if (buffer.size() > 0) return true;
        if (!secure) return false;
        SSL* ssl = secure->native_handle();
        return SSL_pending(ssl) > 0 || BIO_ctrl_pending(SSL_get_rbio(ssl)) > 0;
    }
    template <class F>
    decltype(auto) with_stream(F&& f) {
        if (secure) return f(*secure);
        return f(*plain);
    }
    void expire(std::chrono::milliseconds t) {
        if (t.count() > 0) lowest().expires_after(t);
        else lowest().expires_never();
    }
};

inline std::string verb_name(http::verb v) { return std::string(http::to_string(v)); }

inline ApiError transport_error(const boost::system::error_code& ec, const HttpRequest& req, std::string_view stage) {
    ErrorKind kind = ErrorKind::Network;
    std::string msg;
    if (ec == beast::error::timeout) {
        kind = ErrorKind::Timeout;
        msg = std::string(stage) + " timed out";
    } else if (ec == asio::error::connection_refused) {
        kind = ErrorKind::ConnectionRefused;
        msg = "connection refused (is the server running and the address right?)";
    } else if (ec.category() == asio::error::get_ssl_category() &&
               ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_CERTIFICATE_VERIFY_FAILED) {
        kind = ErrorKind::TlsVerification;
        msg = "TLS verification of the server's certificate failed (wrong CA, or the name is not in "
              "the certificate): " + ec.message();
    } else {
        msg = std::string(stage) + " failed: " + ec.message();
    }
    return ApiError(kind, verb_name(req.method), req.target, std::move(msg));
}

/// Errors that mean "the server closed this keep-alive connection before we used it".
inline bool is_stale_connection(const boost::system::error_code& ec) {
    return ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
           ec == asio::error::broken_pipe || ec == asio::ssl::error::stream_truncated;
}

struct Pool {
    std::mutex mu;
    std::vector<std::unique_ptr<Connection>> idle;
    std::size_t max_idle = 16;
    std::chrono::seconds idle_timeout{90};

    std::unique_ptr<Connection> take() {
        std::lock_guard lk(mu);
        auto now = std::chrono::steady_clock::now();
        while (!idle.empty()) {
            auto c = std::move(idle.back());
            idle.pop_back();
            if (now - c->idle_since < idle_timeout) return c;
        }
        return nullptr;
    }
    void give(std::unique_ptr<Connection> c) {
        c->reused = true;
        c->idle_since = std::chrono::steady_clock::now();
        std::lock_guard lk(mu);
        if (idle.size() < max_idle) idle.push_back(std::move(c));
    }
    void clear() {
        std::lock_guard lk(mu);
        idle.clear();
    }
};

} // namespace detail

class HttpTransport;

/// The body of a response that comes from no connection (client/local_transport.hpp): read
/// piece by piece like a connection's; close() ends a read in progress (from any thread).
class BodySource {
public:
    virtual ~BodySource() = default;
    /// Up to `size` bytes of the body; 0 once it has ended.
    virtual asio::awaitable<std::size_t> read_some(char* data, std::size_t size) = 0;
    virtual void close() = 0;
};

/// A response whose body is read piece by piece (watches, logs, large downloads).
/// The connection returns to the pool once the body has been read to its end.
class ResponseStream {
public:
    ResponseStream() = default;
    ResponseStream(ResponseStream&&) noexcept = default;
    ResponseStream& operator=(ResponseStream&&) noexcept = default;

    /// The response to `request` whose body comes from `source` instead of a connection.
    static ResponseStream from_source(HttpRequest request, unsigned status, http::fields headers,
                                      std::shared_ptr<BodySource> source) {
        ResponseStream s;
        s.request_ = std::move(request);
        s.source_status_ = status;
        s.source_headers_ = std::move(headers);
        s.source_ = std::move(source);
        return s;
    }

    unsigned status() const { return source_ ? source_status_ : parser_->get().result_int(); }
    const http::fields& headers() const { return source_ ? source_headers_ : parser_->get().base(); }
    std::string_view header(http::field f) const {
        auto it = headers().find(f);
        return it == headers().end() ? std::string_view{} : std::string_view(it->value().data(), it->value().size());
    }
    bool done() const { return source_ ? source_done_ : (!conn_ || parser_->is_done()); }
    /// Asynchronous reads so far (each a trip through the event loop), for tests.
    std::uint64_t async_reads() const { return async_reads_; }

    /// Reads up to `size` bytes of the (de-chunked) body; 0 means the body has ended.
    /// Throws ApiError (Network/Timeout) if the connection fails mid-body.
    asio::awaitable<std::size_t> read_some(char* data, std::size_t size) {
        if (source_) {
            if (source_done_) co_return 0;
            ++async_reads_;
            auto n = co_await source_->read_some(data, size);
            if (n == 0) source_done_ = true;
            co_return n;
        }
        // One parser step may consume only framing (a chunk header, a chunk's CRLF) and yield
        // no body byte; 0 must mean "the body has ended", so keep reading until it does.
        for (;;) {
            if (done()) co_return 0;
            auto& body = parser_->get().body();
            body.data = data;
            body.size = size;
            boost::system::error_code ec;
            co_await conn_->with_stream([&](auto& s) {
                return http::async_read_some(s, conn_->buffer, *parser_, asio::redirect_error(asio::use_awaitable, ec));
            });
            ++async_reads_;
            if (ec == http::error::need_buffer) ec = {};
            // What the connection already holds in memory (parsed bytes, TLS records decrypted
            // or not) is read now, without another trip through the event loop: a backlog of
            // small chunks or TLS records (a watch catching up) would otherwise cost one
            // asynchronous read each. The socket is non-blocking, so a read that would need
            // the network ends with would_block instead of waiting.
            while (!ec && body.size > 0 && !parser_->is_done() && conn_->holds_data()) {
                conn_->with_stream([&](auto& s) { http::read_some(s, conn_->buffer, *parser_, ec); });
                if (ec == http::error::need_buffer) ec = {};
                if (ec == asio::error::would_block || ec == asio::error::try_again) {
                    ec = {};
                    break;
                }
            }
            if (ec) {
                conn_.reset();
                throw detail::transport_error(ec, request_, "reading the response body");
            }
            std::size_t n = size - body.size;
            if (parser_->is_done()) finish();
            if (n > 0) co_return n;
        }
    }

    /// Reads the rest of the body into a string (at most `limit` bytes, else Network error).
    asio::awaitable<std::string> read_all(std::size_t limit = std::size_t(1) << 30) {
        std::string out;
        char buf[16384];
        for (;;) {
            auto n = co_await read_some(buf, sizeof buf);
            if (n == 0) break;
            out.append(buf, n);
            if (out.size() > limit)
                throw ApiError(ErrorKind::Network, detail::verb_name(request_.method), request_.target,
                               "response body larger than " + std::to_string(limit) + " bytes");
        }
        co_return out;
    }

    /// Abandons the body and closes the connection; a pending read_some ends with an error.
    void close() {
        if (source_) source_->close();
        if (conn_) {
            boost::system::error_code ec;
            conn_->lowest().socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
            conn_->lowest().close();
        }
    }

private:
    friend class HttpTransport;
    void finish() {
        if (conn_ && parser_->keep_alive() && pool_) pool_->give(std::move(conn_));
        conn_.reset();
    }

    std::unique_ptr<detail::Connection> conn_;
    std::unique_ptr<http::response_parser<http::buffer_body>> parser_;
    std::shared_ptr<detail::Pool> pool_;
    HttpRequest request_;
    std::uint64_t async_reads_ = 0;
    // A body from no connection (from_source): its status and headers, as given.
    std::shared_ptr<BodySource> source_;
    unsigned source_status_ = 0;
    http::fields source_headers_;
    bool source_done_ = false;
};

class HttpTransport {
public:
    HttpTransport(asio::any_io_executor ex, Endpoint endpoint, const TlsSettings& tls = {},
                  TransportOptions opts = {})
        : ex_(std::move(ex)), endpoint_(std::move(endpoint)), opts_(std::move(opts)),
          pool_(std::make_shared<detail::Pool>()) {
        pool_->max_idle = opts_.max_idle;
        pool_->idle_timeout = opts_.idle_timeout;
        set_tls(tls);
    }

    const Endpoint& endpoint() const { return endpoint_; }
    const asio::any_io_executor& executor() const { return ex_; }

    /// Replaces the TLS settings (e.g. a rotated client certificate); drops pooled connections.
    void set_tls(const TlsSettings& tls) {
        tls_ = tls;
        if (endpoint_.tls()) {
            std::lock_guard lk(ctx_mu_);
            ctx_ = make_client_tls_context(tls);
        }
        pool_->clear();
    }

    /// Sends a request and reads the whole response.
    asio::awaitable<HttpResponse> send(HttpRequest req) {
        auto msg = build(req);
        for (int attempt = 0;; ++attempt) {
            auto conn = co_await acquire(req);
            bool reused = conn->reused;
            conn->expire(req.timeout.value_or(opts_.request_timeout));
            boost::system::error_code ec;
            co_await conn->with_stream([&](auto& s) {
                return http::async_write(s, msg, asio::redirect_error(asio::use_awaitable, ec));
            });
            http::response_parser<http::string_body> parser;
            parser.body_limit(boost::none);
            if (req.method == http::verb::head) parser.skip(true);  // a HEAD answer has no body
            if (!ec) {
                co_await conn->with_stream([&](auto& s) {
                    return http::async_read(s, conn->buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
                });
            }
            if (ec) {
                if (reused && attempt == 0 && req.idempotent() && detail::is_stale_connection(ec)) continue;
                throw detail::transport_error(ec, req, "request");
            }
            auto res = parser.release();
            HttpResponse out;
            out.status = res.result_int();
            out.body = std::move(res.body());
            bool keep = res.keep_alive();
            out.headers = std::move(res.base());
            if (keep) {
                conn->expire(std::chrono::milliseconds(0));
                pool_->give(std::move(conn));
            }
            co_return out;
        }
    }

    /// Sends a request and returns once the response header is in; the body is streamed.
    asio::awaitable<ResponseStream> open(HttpRequest req) {
        auto msg = build(req);
        for (int attempt = 0;; ++attempt) {
            auto conn = co_await acquire(req);
            bool reused = conn->reused;
            conn->expire(req.timeout.value_or(opts_.request_timeout));
            boost::system::error_code ec;
            co_await conn->with_stream([&](auto& s) {
                return http::async_write(s, msg, asio::redirect_error(asio::use_awaitable, ec));
            });
            auto parser = std::make_unique<http::response_parser<http::buffer_body>>();
            parser->body_limit(boost::none);
            if (req.method == http::verb::head) parser->skip(true);
            if (!ec) {
                co_await conn->with_stream([&](auto& s) {
                    return http::async_read_header(s, conn->buffer, *parser,
                                                   asio::redirect_error(asio::use_awaitable, ec));
                });
            }
            if (ec) {
                if (reused && attempt == 0 && req.idempotent() && detail::is_stale_connection(ec)) continue;
                throw detail::transport_error(ec, req, "request");
            }
            ResponseStream rs;
            rs.conn_ = std::move(conn);
            rs.parser_ = std::move(parser);
            rs.pool_ = pool_;
            rs.request_ = std::move(req);
            if (rs.parser_->is_done()) rs.finish();
            co_return rs;
        }
    }

    /// Closes idle pooled connections (they are reopened on demand).
    void drop_idle() { pool_->clear(); }

private:
    http::request<http::string_body> build(const HttpRequest& req) const {
        http::request<http::string_body> m{req.method, endpoint_.base_path + req.target, 11};
        for (const auto& f : req.headers) m.set(f.name_string(), f.value());
        m.set(http::field::host, endpoint_.host_header());
        if (m.find(http::field::user_agent) == m.end()) m.set(http::field::user_agent, opts_.user_agent);
        m.keep_alive(true);
        m.body() = req.body;
        m.prepare_payload();
        return m;
    }

    asio::awaitable<std::unique_ptr<detail::Connection>> acquire(const HttpRequest& req) {
        if (auto c = pool_->take()) co_return c;
        auto c = std::make_unique<detail::Connection>();
        asio::ip::tcp::resolver resolver(ex_);
        boost::system::error_code ec;
        auto results = co_await resolver.async_resolve(endpoint_.host, endpoint_.port,
                                                       asio::redirect_error(asio::use_awaitable, ec));
        if (ec) throw detail::transport_error(ec, req, "resolving " + endpoint_.host);
        std::shared_ptr<asio::ssl::context> ctx;
        if (endpoint_.tls()) {
            std::lock_guard lk(ctx_mu_);
            ctx = ctx_;
            c->secure = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(ex_, *ctx);
        } else {
            c->plain = std::make_unique<beast::tcp_stream>(ex_);
        }
        c->expire(opts_.connect_timeout);
        co_await c->lowest().async_connect(results, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) throw detail::transport_error(ec, req, "connecting to " + endpoint_.host_header());
        c->lowest().socket().set_option(asio::ip::tcp::no_delay(true), ec);
        c->lowest().socket().non_blocking(true, ec);  // for ResponseStream::read_some's synchronous reads
        if (c->secure) {
            const std::string& name = tls_.server_name.empty() ? endpoint_.host : tls_.server_name;
            prepare_tls_connection(c->secure->native_handle(), name, !tls_.insecure_skip_verify);
            co_await c->secure->async_handshake(asio::ssl::stream_base::client,
                                                asio::redirect_error(asio::use_awaitable, ec));
            if (ec) throw detail::transport_error(ec, req, "TLS handshake with " + endpoint_.host_header());
        }
        co_return c;
    }

    asio::any_io_executor ex_;
    Endpoint endpoint_;
    TransportOptions opts_;
    TlsSettings tls_;
    std::mutex ctx_mu_;
    std::shared_ptr<asio::ssl::context> ctx_;
    std::shared_ptr<detail::Pool> pool_;
};

} // namespace vck::client
