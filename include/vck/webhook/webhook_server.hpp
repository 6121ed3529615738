// WebhookServer: serves admission webhooks over HTTPS, one AdmissionHandler per path (see
// admission_handler.hpp for validating, mutating and typed handlers), as controller-runtime's
// webhook server does. Guarantees: POST only (405 otherwise), an unknown path is 404, a bad
// review is 400 with its message and a throwing handler is answered (allowed=false, code 500)
// without disturbing the server; a body over 7 MiB (controller-runtime's limit) is 413. The
// serving certificate and key are PEM files read at start() (a clear error if either is
// missing or invalid) and re-read when either file changes on disk (size, modification time
// or inode, looked at on every accepted connection), so a certificate rotated by cert-manager
// reaches new connections without a restart; a pair that fails to load (half written,
// mismatched) keeps the previous one, logged once per change. With a MetricsRegistry, each
// path is counted under controller-runtime's names: controller_runtime_webhook_requests_total
// {webhook,code}, controller_runtime_webhook_latency_seconds {webhook} and
// controller_runtime_webhook_requests_in_flight {webhook}. An address it cannot bind is
// reported as "FLAG HOST:PORT: address already in use", as HealthServer does. Handlers run on
// the executor given, which must be single-threaded (an io_context run by one thread, or a
// strand): a slow handler delays the other requests. stop() closes the listener and every
// connection.
#pragma once

#include <vck/runtime/log.hpp>
#include <vck/runtime/listen.hpp>
#include <vck/runtime/metrics.hpp>
#include <vck/webhook/admission_handler.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <sys/stat.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace vck::webhook {

namespace asio = boost::asio;

/// controller-runtime's controller_runtime_webhook_latency_seconds buckets:
/// prometheus.ExponentialBuckets(10e-9, 10, 12), 10 ns to 1000 s.
inline const std::vector<double>& webhook_latency_buckets() {
    static const std::vector<double> b{1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000};
    return b;
}

class WebhookServer {
public:
    struct Options {
        Options() {}
        std::string bind = "127.0.0.1";
        std::uint16_t port = 0;  // 0: any free port (controller-runtime's default is 9443)
        std::string cert_file;   // PEM certificate (chain), e.g. .../serving-certs/tls.crt
        std::string key_file;    // PEM private key, e.g. .../serving-certs/tls.key
        std::string flag;        // what set the address, for errors ("--webhook-bind-address")
    };

    /// Request bodies above this are refused with 413 (controller-runtime's maxRequestSize).
    static constexpr std::uint64_t max_body_bytes = 7u * 1024 * 1024;

    WebhookServer(asio::any_io_executor ex, Options o, std::shared_ptr<runtime::MetricsRegistry> metrics = nullptr)
        : impl_(std::make_shared<Impl>(ex, std::move(o), std::move(metrics))) {
        if (auto& m = impl_->metrics) {
            m->describe("controller_runtime_webhook_requests_total", runtime::MetricsRegistry::Type::Counter,
                        "Total number of admission requests by HTTP status code.");
            m->describe("controller_runtime_webhook_latency_seconds", runtime::MetricsRegistry::Type::Histogram,
                        "Histogram of the latency of processing admission requests", webhook_latency_buckets());
            m->describe("controller_runtime_webhook_requests_in_flight", runtime::MetricsRegistry::Type::Gauge,
                        "Current number of admission requests being served.");
        }
    }
    ~WebhookServer() { stop(); }
    WebhookServer(const WebhookServer&) = delete;
    WebhookServer& operator=(const WebhookServer&) = delete;

    /// Serves `handler` at `path` ("/validate-pods"); a later call for the same path replaces
    /// it. May be called before or after start().
    void handle(std::string path, AdmissionHandler handler) {
        if (auto& m = impl_->metrics) {
            // As controller-runtime does, the likeliest codes exist from the start at 0.
            m->counter("controller_runtime_webhook_requests_total", {{"webhook", path}, {"code", "200"}});
            m->counter("controller_runtime_webhook_requests_total", {{"webhook", path}, {"code", "500"}});
            m->gauge("controller_runtime_webhook_requests_in_flight", {{"webhook", path}});
        }
        std::lock_guard lk(impl_->mu);
        impl_->handlers[std::move(path)] = std::make_shared<const AdmissionHandler>(std::move(handler));
    }

    /// Loads the certificate and key (throws std::runtime_error naming the file and what is
    /// wrong with it), binds (throws naming the flag and address if it cannot) and serves on
    /// the executor.
    void start() {
        {
            auto loaded = load_tls(impl_->opts);  // throws: nothing to serve without it
            std::lock_guard lk(impl_->mu);
            impl_->tls = std::move(loaded.context);
            impl_->tls_stamp = loaded.stamp;
            impl_->failed_stamp = {};
        }
        const auto& o = impl_->opts;
        runtime::listen_on(impl_->acceptor, o.bind, o.port, o.flag);
        impl_->port = impl_->acceptor.local_endpoint().port();
        asio::co_spawn(impl_->acceptor.get_executor(), accept_loop(impl_), asio::detached);
    }
    std::uint16_t port() const { return impl_->port; }

    /// Closes the listener and every open connection (from any thread).
    void stop() {
        asio::post(impl_->acceptor.get_executor(), [impl = impl_] { impl->close(); });
    }

private:
    using tcp = asio::ip::tcp;
    using ssl_stream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

    /// What identifies a version of the two files: a rewrite changes the size or the
    /// modification time, a swapped symlink (a Secret volume's ..data) the inode.
    struct FileStamp {
        bool exists = false;
        std::int64_t size = 0, mtime_ns = 0;
        std::uint64_t inode = 0;
        bool operator==(const FileStamp&) const = default;
    };
    struct PairStamp {
        FileStamp cert, key;
        bool operator==(const PairStamp&) const = default;
    };
    struct LoadedTls {
        std::shared_ptr<asio::ssl::context> context;
        PairStamp stamp;
    };

    static FileStamp stamp_of(const std::string& path) {
        struct stat st{};
        if (::stat(path.c_str(), &st) != 0) return {};
        return {true, static_cast<std::int64_t>(st.st_size),
                static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                static_cast<std::uint64_t>(st.st_ino)};
    }

    static std::string read_pem(const std::string& what, const std::string& path) {
        if (path.empty()) throw std::runtime_error("webhook serving " + what + ": no file given");
        std::ifstream in(path, std::ios::binary);
        if (!in) throw std::runtime_error("webhook serving " + what + " " + path + ": " + std::strerror(errno));
        std::ostringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

    /// A server context from the two files, with the stamps taken before reading them (so a
    /// write during the read shows as a change next time). Throws std::runtime_error.
    static LoadedTls load_tls(const Options& o) {
        namespace ssl = asio::ssl;
        PairStamp stamp{stamp_of(o.cert_file), stamp_of(o.key_file)};
        auto cert = read_pem("certificate", o.cert_file);
        auto key = read_pem("key", o.key_file);
        auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
        SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
        ctx->set_options(ssl::context::default_workarounds | ssl::context::no_compression);
        boost::system::error_code ec;
        ctx->use_certificate_chain(asio::buffer(cert), ec);
        if (ec) throw std::runtime_error("webhook serving certificate " + o.cert_file + ": not a valid PEM certificate");
        auto mismatch = [&] {
            return std::runtime_error("webhook serving key " + o.key_file + " does not match the certificate " +
                                      o.cert_file);
        };
        ctx->use_private_key(asio::buffer(key), ssl::context::pem, ec);
        if (ec) {
            // OpenSSL refuses a key that does not match the certificate here already: tell
            // that apart from a file that holds no key at all.
            ERR_clear_error();
            std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(key.data(), static_cast<int>(key.size())),
                                                          BIO_free);
            EVP_PKEY* parsed = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
            ERR_clear_error();
            if (!parsed) throw std::runtime_error("webhook serving key " + o.key_file + ": not a valid PEM private key");
            EVP_PKEY_free(parsed);
            throw mismatch();
        }
        if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
            ERR_clear_error();
            throw mismatch();
        }
        return {std::move(ctx), stamp};
    }

    struct Session {
        ssl_stream stream;
        Session(tcp::socket s, asio::ssl::context& ctx) : stream(std::move(s), ctx) {}
        void close() {
            boost::system::error_code ec;
            auto& sock = boost::beast::get_lowest_layer(stream).socket();
            sock.shutdown(tcp::socket::shutdown_both, ec);
            sock.close(ec);
        }
    };

    struct Impl {
        Impl(asio::any_io_executor ex, Options o, std::shared_ptr<runtime::MetricsRegistry> m)
            : opts(std::move(o)), metrics(std::move(m)), acceptor(ex) {}
        Options opts;
        std::shared_ptr<runtime::MetricsRegistry> metrics;
        tcp::acceptor acceptor;
        std::uint16_t port = 0;
        std::mutex mu;  // handlers, tls, stamps, sessions
        std::map<std::string, std::shared_ptr<const AdmissionHandler>, std::less<>> handlers;
        std::shared_ptr<asio::ssl::context> tls;
        PairStamp tls_stamp, failed_stamp;
        std::list<Session*> sessions;
        std::atomic<bool> closed = false;

        void close() {
            std::lock_guard lk(mu);
            closed = true;
            boost::system::error_code ec;
            acceptor.close(ec);
            for (auto* s : sessions) s->close();
        }

        /// The context for a new connection: the files' current pair when they changed and
        /// load, the previous one otherwise.
        std::shared_ptr<asio::ssl::context> current_tls() {
            PairStamp now{stamp_of(opts.cert_file), stamp_of(opts.key_file)};
            {
                std::lock_guard lk(mu);
                if (now == tls_stamp || now == failed_stamp) return tls;
            }
            try {
                auto loaded = load_tls(opts);
                std::lock_guard lk(mu);
                tls = std::move(loaded.context);
                tls_stamp = loaded.stamp;
                log::info("Reloaded the webhook serving certificate", {{"cert", opts.cert_file}, {"key", opts.key_file}});
                return tls;
            } catch (const std::exception& e) {
                std::lock_guard lk(mu);
                failed_stamp = now;
                log::error("Could not reload the webhook serving certificate; still serving the previous one",
                           {{"cert", opts.cert_file}, {"key", opts.key_file}, {"error", e.what()}});
                return tls;
            }
        }
    };

    static asio::awaitable<void> accept_loop(std::shared_ptr<Impl> impl) {
        for (;;) {
            boost::system::error_code ec;
            auto sock = co_await impl->acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
            if (impl->closed) co_return;
            if (ec) {
                if (!impl->acceptor.is_open()) co_return;
                continue;  // e.g. too many open files: the next accept may succeed
            }
            sock.set_option(tcp::no_delay(true), ec);
            asio::co_spawn(impl->acceptor.get_executor(), session(impl, std::move(sock)), asio::detached);
        }
    }

    static asio::awaitable<void> session(std::shared_ptr<Impl> impl, tcp::socket sock) {
        namespace http = boost::beast::http;
        namespace beast = boost::beast;
        auto tls = impl->current_tls();  // held for the connection's life
        Session s(std::move(sock), *tls);
        std::list<Session*>::iterator it;
        {
            std::lock_guard lk(impl->mu);
            if (impl->closed) co_return;
            it = impl->sessions.insert(impl->sessions.end(), &s);
        }
        struct Unlist {
            Impl& impl;
            std::list<Session*>::iterator it;
            ~Unlist() {
                std::lock_guard lk(impl.mu);
                impl.sessions.erase(it);
            }
        } unlist{*impl, it};

        boost::system::error_code ec;
        beast::get_lowest_layer(s.stream).expires_after(std::chrono::seconds(10));
        co_await s.stream.async_handshake(asio::ssl::stream_base::server, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return;
        beast::flat_buffer buf;
        for (;;) {
            http::request_parser<http::string_body> parser;
            parser.body_limit(max_body_bytes);
            beast::get_lowest_layer(s.stream).expires_after(std::chrono::minutes(5));  // idle keep-alive
            co_await http::async_read(s.stream, buf, parser, asio::redirect_error(asio::use_awaitable, ec));
            if (ec == http::error::body_limit) {
                auto res = review_response(parser.get().version(), false,
                                           detail::bad_review(413, "request entity is too large; limit is " +
                                                                       std::to_string(max_body_bytes) + " bytes"));
                co_await http::async_write(s.stream, res, asio::redirect_error(asio::use_awaitable, ec));
                break;
            }
            if (ec) break;
            beast::get_lowest_layer(s.stream).expires_never();
            auto req = parser.release();
            auto res = answer(*impl, req);
            co_await http::async_write(s.stream, res, asio::redirect_error(asio::use_awaitable, ec));
            if (ec || !req.keep_alive()) break;
        }
        beast::get_lowest_layer(s.stream).expires_after(std::chrono::seconds(2));
        co_await s.stream.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
    }

    using Response = boost::beast::http::response<boost::beast::http::string_body>;

    static Response review_response(unsigned version, bool keep_alive, ReviewAnswer a) {
        namespace http = boost::beast::http;
        Response res{static_cast<http::status>(a.status), version};
        res.keep_alive(keep_alive);
        res.set(http::field::content_type, "application/json");
        res.body() = std::move(a.body);
        res.prepare_payload();
        return res;
    }

    static Response answer(Impl& impl, const boost::beast::http::request<boost::beast::http::string_body>& req) {
        namespace http = boost::beast::http;
        std::string_view target = req.target();
        if (auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
        std::shared_ptr<const AdmissionHandler> handler;
        {
            std::lock_guard lk(impl.mu);
            if (auto f = impl.handlers.find(target); f != impl.handlers.end()) handler = f->second;
        }
        auto text = [&](http::status st, std::string body) {
            Response res{st, req.version()};
            res.keep_alive(req.keep_alive());
            res.set(http::field::content_type, "text/plain; charset=utf-8");
            res.body() = std::move(body);
            res.prepare_payload();
            return res;
        };
        if (!handler) return text(http::status::not_found, "404 page not found\n");

        std::string path(target);
        runtime::MetricSeries* in_flight = nullptr;
        if (impl.metrics) {
            in_flight = &impl.metrics->gauge("controller_runtime_webhook_requests_in_flight", {{"webhook", path}});
            in_flight->inc();
        }
        auto began = std::chrono::steady_clock::now();
        Response res;
        if (req.method() != http::verb::post) {
            res = text(http::status::method_not_allowed,
                       "method " + std::string(req.method_string()) + " not allowed: an admission review is POSTed\n");
            res.set(http::field::allow, "POST");
        } else {
            res = review_response(req.version(), req.keep_alive(),
                                  answer_review(*handler, req[http::field::content_type], req.body()));
        }
        if (impl.metrics) {
            std::chrono::duration<double> took = std::chrono::steady_clock::now() - began;
            impl.metrics->histogram("controller_runtime_webhook_latency_seconds", {{"webhook", path}})
                .observe(took.count());
            impl.metrics->counter("controller_runtime_webhook_requests_total",
                                  {{"webhook", path}, {"code", std::to_string(res.result_int())}})
                .inc();
            in_flight->dec();
        }
        return res;
    }

    std::shared_ptr<Impl> impl_;
};

} // namespace vck::webhook
