// AdminApi: a tiny plain-HTTP JSON API on 127.0.0.1 that lets programs outside the process
// (scripts, the Python client test) drive the sandbox's FaultInjector, append pod logs and
// add tokens. It listens on the API server's io_context. Endpoints are documented in
// docs/sandbox.md; every answer is JSON, errors as {"error": "..."} with a 4xx code.
#pragma once

#include <vck/sandbox/auth/authenticator.hpp>
#include <vck/sandbox/server/fault_injector.hpp>
#include <vck/sandbox/cluster/pod_logs.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <cstdio>
#include <list>
#include <string>

namespace vck::sandbox {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

class AdminApi {
public:
    AdminApi(asio::io_context& ioc, std::uint16_t port, FaultInjector& faults, PodLogs& logs, Authenticator& auth,
             bool verbose)
        : ioc_(ioc), faults_(faults), logs_(logs), auth_(auth), verbose_(verbose), acceptor_(ioc) {
        asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);
        acceptor_.open(ep.protocol());
        acceptor_.set_option(asio::socket_base::reuse_address(true));
        acceptor_.bind(ep);
        acceptor_.listen();
        port_ = acceptor_.local_endpoint().port();
        asio::co_spawn(ioc_, accept_loop(), asio::detached);
    }

    std::uint16_t port() const { return port_; }

    /// Stops listening and closes open connections (on the io_context's thread).
    void close() {
        boost::system::error_code ec;
        acceptor_.close(ec);
        for (auto* s : sockets_) s->close(ec);
    }

    /// Answers one admin request; exposed so the routing can be specified without sockets.
    static std::pair<int, boost::json::value> answer(std::string_view method, std::string_view path,
                                                     std::string_view body, FaultInjector& faults, PodLogs& logs,
                                                     Authenticator& auth) {
        namespace json = boost::json;
        auto error = [](int code, std::string msg) {
            return std::pair<int, json::value>{code, json::object{{"error", msg}}};
        };
        json::object in;
        if (method == "POST" || method == "PUT") {
            if (!body.empty()) {
                boost::system::error_code ec;
                auto v = json::parse(body, ec);
                if (ec || !v.is_object()) return error(400, "the request body must be a JSON object");
                in = v.as_object();
            }
        }
        auto str = [&](const char* k) -> std::string {
            if (auto* p = in.if_contains(k); p && p->is_string()) return std::string(p->get_string());
            return {};
        };
        auto num = [&](const char* k, std::int64_t def) -> std::int64_t {
            if (auto* p = in.if_contains(k); p && p->is_number()) return p->to_number<std::int64_t>();
            return def;
        };
        try {
            if (method == "GET" && path == "/faults") {
                json::array rules;
                for (const auto& r : faults.pending())
                    rules.push_back({{"verb", r.verb}, {"resource", r.resource}, {"code", r.code},
                                     {"count", r.count}, {"retryAfterSeconds", r.retry_after_seconds}});
                return {200, json::object{{"rules", rules},
                                          {"latencyMilliseconds", faults.latency().count()},
                                          {"fired", faults.fired()},
                                          {"watchGeneration", faults.watch_generation()}}};
            }
            if (method == "POST" && path == "/faults/fail") {
                FaultRule r;
                r.verb = str("verb");
                r.resource = str("resource");
                r.code = static_cast<int>(num("code", 500));
                r.count = static_cast<int>(num("count", 1));
                r.retry_after_seconds = static_cast<int>(num("retryAfterSeconds", 0));
                r.message = str("message");
                faults.fail_next(r);
                return {200, json::object{{"armed", true}}};
            }
            if (method == "POST" && path == "/faults/drop-watches") {
                faults.drop_watches();
                return {200, json::object{{"dropped", true}}};
            }
            if (method == "POST" && path == "/faults/compact") {
                faults.compact();
                return {200, json::object{{"compacted", true}}};
            }
            if ((method == "POST" || method == "PUT") && path == "/faults/latency") {
                auto ms = num("milliseconds", -1);
                if (ms < 0) return error(400, "latency needs \"milliseconds\" >= 0");
                faults.set_latency(std::chrono::milliseconds(ms));
                return {200, json::object{{"latencyMilliseconds", ms}}};
            }
            if (method == "POST" && path == "/faults/clear") {
                faults.clear();
                return {200, json::object{{"cleared", true}}};
            }
            if (method == "POST" && path == "/pod-logs") {
                auto ns = str("namespace"), pod = str("pod"), container = str("container");
                if (ns.empty()) ns = "default";
                if (pod.empty() || container.empty()) return error(400, "pod-logs needs \"pod\" and \"container\"");
                // "restart": the container restarted before this text (the log so far becomes
                // its previous one); "close": it terminated after it (followers end).
                auto flag = [&](const char* key) {
                    auto* v = in.if_contains(key);
                    return v && v->is_bool() && v->as_bool();
                };
                if (flag("restart")) logs.restart(ns, pod, container);
                logs.append(ns, pod, container, str("text"));
                if (flag("close")) logs.close(ns, pod, container);
                return {200, json::object{{"appended", true}}};
            }
            if (method == "POST" && path == "/tokens") {
                Identity who{str("user"), {}};
                if (auto* g = in.if_contains("groups"); g && g->is_array())
                    for (const auto& x : g->get_array())
                        if (x.is_string()) who.groups.emplace_back(x.get_string());
                auth.add_token(str("token"), who);
                return {200, json::object{{"added", true}}};
            }
        } catch (const std::exception& e) {
            return error(400, e.what());
        }
        return error(404, "no admin endpoint " + std::string(method) + " " + std::string(path) +
                              " (see docs/sandbox.md)");
    }

private:
    asio::awaitable<void> accept_loop() {
        for (;;) {
            boost::system::error_code ec;
            auto sock = co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
            if (ec) {
                if (!acceptor_.is_open()) co_return;
                continue;
            }
            asio::co_spawn(ioc_, session(std::move(sock)), asio::detached);
        }
    }

    asio::awaitable<void> session(asio::ip::tcp::socket sock) {
        sockets_.push_back(&sock);
        struct Unlist {
            std::list<asio::ip::tcp::socket*>& l;
            asio::ip::tcp::socket* s;
            ~Unlist() { l.remove(s); }
        } unlist{sockets_, &sock};
        beast::flat_buffer buf;
        for (;;) {
            http::request<http::string_body> req;
            boost::system::error_code ec;
            co_await http::async_read(sock, buf, req, asio::redirect_error(asio::use_awaitable, ec));
            if (ec) co_return;
            std::string target(req.target());
            if (auto q = target.find('?'); q != std::string::npos) target.resize(q);
            auto [code, body] = answer(req.method_string(), target, req.body(), faults_, logs_, auth_);
            if (verbose_)
                std::fprintf(stderr, "vck-sandbox admin: %s %s %d\n", std::string(req.method_string()).c_str(),
                             target.c_str(), code);
            http::response<http::string_body> res{static_cast<http::status>(code), req.version()};
            res.set(http::field::content_type, "application/json");
            res.keep_alive(req.keep_alive());
            res.body() = boost::json::serialize(body) + "\n";
            res.prepare_payload();
            co_await http::async_write(sock, res, asio::redirect_error(asio::use_awaitable, ec));
            if (ec || !req.keep_alive()) co_return;
        }
    }

    asio::io_context& ioc_;
    FaultInjector& faults_;
    PodLogs& logs_;
    Authenticator& auth_;
    bool verbose_;
    asio::ip::tcp::acceptor acceptor_;
    std::uint16_t port_ = 0;
    std::list<asio::ip::tcp::socket*> sockets_;
};

} // namespace vck::sandbox
