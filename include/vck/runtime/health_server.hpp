// HealthServer: the manager's plain-HTTP endpoint: GET /metrics (Prometheus text format from
// a MetricsRegistry), /healthz (liveness) and /readyz (readiness: e.g. caches synced).
// Guarantees: a check endpoint answers 200 "ok" when every registered check passes and 500
// naming the failing checks otherwise; other paths get 404, other methods 405; stop() closes
// the listener and every connection. Binds 127.0.0.1 by default. Without a registry, /metrics
// is not served (404). An address it cannot bind (in use, not local) is reported as
// "FLAG HOST:PORT: address already in use", naming the flag that set it.
#pragma once

#include <vck/runtime/listen.hpp>
#include <vck/runtime/metrics.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cctype>
#include <functional>
#include <stdexcept>
#include <system_error>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace vck::runtime {

namespace asio = boost::asio;

class HealthServer {
public:
    struct Options {
        Options() {}
        std::string bind = "127.0.0.1";
        std::uint16_t port = 0;  // 0: any free port
        std::string flag;        // what set this address, for errors ("--metrics-bind-address")
    };
    using Check = std::function<bool()>;

    HealthServer(asio::any_io_executor ex, Options o, std::shared_ptr<MetricsRegistry> metrics)
        : impl_(std::make_shared<Impl>(ex, std::move(o), std::move(metrics))) {}
    ~HealthServer() { stop(); }
    HealthServer(const HealthServer&) = delete;
    HealthServer& operator=(const HealthServer&) = delete;

    void add_healthz(std::string name, Check c) {
        std::lock_guard lk(impl_->mu);
        impl_->healthz.emplace_back(std::move(name), std::move(c));
    }
    void add_readyz(std::string name, Check c) {
        std::lock_guard lk(impl_->mu);
        impl_->readyz.emplace_back(std::move(name), std::move(c));
    }

    /// Binds now (throws std::runtime_error naming the flag and address if it cannot) and
    /// serves on the executor.
    void start() {
        const auto& o = impl_->opts;
        listen_on(impl_->acceptor, o.bind, o.port, o.flag);
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

    struct Impl {
        Impl(asio::any_io_executor ex, Options o, std::shared_ptr<MetricsRegistry> m)
            : opts(std::move(o)), metrics(std::move(m)), acceptor(ex) {}
        Options opts;
        std::shared_ptr<MetricsRegistry> metrics;
        tcp::acceptor acceptor;
        std::uint16_t port = 0;
        std::mutex mu;
        std::vector<std::pair<std::string, Check>> healthz, readyz;
        std::list<tcp::socket*> sockets;
        bool closed = false;

        void close() {
            closed = true;
            boost::system::error_code ec;
            acceptor.close(ec);
            for (auto* s : sockets) s->close(ec);
        }
    };

    static asio::awaitable<void> accept_loop(std::shared_ptr<Impl> impl) {
        for (;;) {
            boost::system::error_code ec;
            auto sock = co_await impl->acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
            if (ec || impl->closed) co_return;
            asio::co_spawn(impl->acceptor.get_executor(), session(impl, std::move(sock)), asio::detached);
        }
    }

    static asio::awaitable<void> session(std::shared_ptr<Impl> impl, tcp::socket sock) {
        namespace http = boost::beast::http;
        auto it = impl->sockets.insert(impl->sockets.end(), &sock);
        boost::beast::flat_buffer buf;
        for (;;) {
            boost::system::error_code ec;
            http::request<http::string_body> req;
            co_await http::async_read(sock, buf, req, asio::redirect_error(asio::use_awaitable, ec));
            if (ec) break;
            auto res = answer(*impl, req);
            co_await http::async_write(sock, res, asio::redirect_error(asio::use_awaitable, ec));
            if (ec || !req.keep_alive()) break;
        }
        impl->sockets.erase(it);
        boost::system::error_code ec;
        sock.shutdown(tcp::socket::shutdown_both, ec);
        sock.close(ec);
    }

    static boost::beast::http::response<boost::beast::http::string_body> answer(
        Impl& impl, const boost::beast::http::request<boost::beast::http::string_body>& req) {
        namespace http = boost::beast::http;
        http::response<http::string_body> res;
        res.version(req.version());
        res.keep_alive(req.keep_alive());
        res.set(http::field::content_type, "text/plain; charset=utf-8");
        std::string_view target = req.target();
        if (auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
        if ((target != "/metrics" || !impl.metrics) && target != "/healthz" && target != "/readyz") {
            res.result(http::status::not_found);
            res.body() = "404 page not found: " + std::string(target) + "\n";
        } else if (req.method() != http::verb::get && req.method() != http::verb::head) {
            res.result(http::status::method_not_allowed);
            res.body() = "method not allowed\n";
        } else if (target == "/metrics") {
            res.result(http::status::ok);
            res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
            res.body() = impl.metrics->render();
        } else {
            std::vector<std::pair<std::string, Check>> checks;
            {
                std::lock_guard lk(impl.mu);
                checks = target == "/healthz" ? impl.healthz : impl.readyz;
            }
            std::string failed;
            for (auto& [name, c] : checks) {
                bool ok = false;
                try {
                    ok = c();
                } catch (...) {
                    ok = false;
                }
                if (!ok) failed += "[-]" + name + " failed\n";
            }
            res.result(failed.empty() ? http::status::ok : http::status::internal_server_error);
            res.body() = failed.empty() ? "ok" : failed + std::string(target.substr(1)) + " check failed\n";
        }
        res.prepare_payload();
        return res;
    }

    std::shared_ptr<Impl> impl_;
};

} // namespace vck::runtime
