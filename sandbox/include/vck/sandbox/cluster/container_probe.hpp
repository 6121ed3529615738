// ContainerProbe: a container's liveness, readiness or startup probe as the real kubelet's
// prober runs it, for the sandbox's simulated kubelet. An httpGet probe is a GET (User-Agent
// kube-probe/1.32, certificates not verified for HTTPS) that succeeds on a status in [200, 400);
// a tcpSocket probe succeeds when the connection opens; each is bounded by timeoutSeconds and
// reports failures in the kubelet's words ("HTTP probe failed with statuscode: 500", `Get
// "http://...": dial tcp ...: connect: connection refused`). exec and grpc probes are not run:
// the sandbox has no container to exec into, and counts them as passing (documented in
// docs/sandbox.md). The host is the pod's IP unless the probe names one; a named port is looked
// up in the container's ports, and a port that is not found is the kubelet's error.
// ProbeWorker runs one probe on a thread of its own every periodSeconds after
// initialDelaySeconds, and flips its result only after successThreshold successes or
// failureThreshold failures in a row, as the kubelet's worker does; a readiness probe starts
// and a startup probe as failing, a liveness probe as passing (startup gates the others, in the
// kubelet).
// Guarantees: stopping never waits for longer than one probe's timeout; on_change is called
// (from the worker's thread) after every failed probe and when the result turns to passing;
// stop() and the destructor join the thread.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

namespace vck::sandbox {

struct ProbeSpec {
    enum class Kind { HttpGet, TcpSocket, NotRun };
    Kind kind = Kind::NotRun;
    std::string host;  // empty: the pod's IP
    int port = 0;
    std::string path = "/";
    bool https = false;
    std::vector<std::pair<std::string, std::string>> headers;
    std::chrono::seconds initial_delay{0};
    std::chrono::seconds period{10};
    std::chrono::seconds timeout{1};
    int success_threshold = 1;
    int failure_threshold = 3;
};

struct ProbeResult {
    bool ok = false;
    std::string message;  // why it failed, as the kubelet words it
};

namespace probe_detail {
inline std::int64_t int_of(const boost::json::object& o, const char* key, std::int64_t fallback) {
    const auto* v = o.if_contains(key);
    return v && v->is_int64() ? v->get_int64() : fallback;
}
inline std::string str_of(const boost::json::object& o, const char* key) {
    const auto* v = o.if_contains(key);
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
}
} // namespace probe_detail

/// A probe of a container (its JSON, e.g. container["readinessProbe"]) with its ports resolved
/// against the container's `ports`; a string when a named port is not among them (the
/// kubelet's words: the probe then fails with it).
inline std::variant<ProbeSpec, std::string> parse_probe(const boost::json::value& probe, const boost::json::value& ports) {
    using namespace probe_detail;
    ProbeSpec s;
    if (!probe.is_object()) return s;
    const auto& o = probe.get_object();
    s.initial_delay = std::chrono::seconds(std::max<std::int64_t>(int_of(o, "initialDelaySeconds", 0), 0));
    s.period = std::chrono::seconds(std::max<std::int64_t>(int_of(o, "periodSeconds", 10), 1));
    s.timeout = std::chrono::seconds(std::max<std::int64_t>(int_of(o, "timeoutSeconds", 1), 1));
    s.success_threshold = static_cast<int>(std::max<std::int64_t>(int_of(o, "successThreshold", 1), 1));
    s.failure_threshold = static_cast<int>(std::max<std::int64_t>(int_of(o, "failureThreshold", 3), 1));
    const boost::json::object* action = nullptr;
    if (const auto* h = o.if_contains("httpGet"); h && h->is_object()) {
        s.kind = ProbeSpec::Kind::HttpGet;
        action = &h->get_object();
        s.path = str_of(*action, "path");
        if (s.path.empty() || s.path.front() != '/') s.path = "/" + s.path;
        s.https = str_of(*action, "scheme") == "HTTPS";
        if (const auto* hs = action->if_contains("httpHeaders"); hs && hs->is_array())
            for (const auto& h2 : hs->get_array())
                if (h2.is_object()) s.headers.emplace_back(str_of(h2.get_object(), "name"), str_of(h2.get_object(), "value"));
    } else if (const auto* t = o.if_contains("tcpSocket"); t && t->is_object()) {
        s.kind = ProbeSpec::Kind::TcpSocket;
        action = &t->get_object();
    } else {
        return s;  // exec, grpc: not run
    }
    s.host = str_of(*action, "host");
    const auto* port = action->if_contains("port");
    if (port && port->is_int64()) {
        s.port = static_cast<int>(port->get_int64());
    } else if (port && port->is_string()) {
        std::string name(port->get_string());
        if (ports.is_array())
            for (const auto& p : ports.get_array())
                if (p.is_object() && str_of(p.get_object(), "name") == name) s.port = static_cast<int>(int_of(p.get_object(), "containerPort", 0));
        if (s.port == 0) return "couldn't find port: " + name + " in container";
    }
    return s;
}

/// Runs a probe once against a pod at `pod_ip`; returns within about the probe's timeout.
inline ProbeResult run_probe(const ProbeSpec& s, const std::string& pod_ip) {
    namespace asio = boost::asio;
    namespace beast = boost::beast;
    namespace http = beast::http;
    if (s.kind == ProbeSpec::Kind::NotRun) return {true, {}};
    const std::string host = s.host.empty() ? pod_ip : s.host;
    const std::string hostport = host + ":" + std::to_string(s.port);
    const std::string url = std::string(s.https ? "https" : "http") + "://" + hostport + s.path;
    auto dial_error = [&](const boost::system::error_code& ec) {
        std::string what = ec == beast::error::timeout ? "i/o timeout" : ec.message();
        if (ec == asio::error::connection_refused) what = "connect: connection refused";
        return "dial tcp " + hostport + ": " + what;
    };
    asio::io_context ioc;
    boost::system::error_code ec;
    auto address = asio::ip::make_address(host, ec);
    if (ec) return {false, "dial tcp: lookup " + host + ": no such host"};
    beast::tcp_stream tcp(ioc);
    tcp.expires_after(s.timeout);
    tcp.async_connect(asio::ip::tcp::endpoint(address, static_cast<unsigned short>(s.port)),
                      [&](const boost::system::error_code& e) { ec = e; });
    ioc.run();
    if (ec) {
        auto msg = dial_error(ec);
        return {false, s.kind == ProbeSpec::Kind::HttpGet ? "Get \"" + url + "\": " + msg : msg};
    }
    if (s.kind == ProbeSpec::Kind::TcpSocket) return {true, {}};

    http::request<http::empty_body> req{http::verb::get, s.path, 11};
    req.set(http::field::host, hostport);
    req.set(http::field::user_agent, "kube-probe/1.32");
    req.set(http::field::accept, "*/*");
    for (const auto& [k, v] : s.headers) req.set(k, v);
    // A probe reads what answers it, not the whole of a large body.
    http::response_parser<http::string_body> res;
    res.body_limit(64 * 1024);
    beast::flat_buffer buf;
    auto exchange = [&](auto& stream) {
        ioc.restart();
        http::async_write(stream, req, [&](const boost::system::error_code& e, std::size_t) {
            ec = e;
            if (!e) http::async_read(stream, buf, res, [&](const boost::system::error_code& e2, std::size_t) { ec = e2; });
        });
        ioc.run();
    };
    if (s.https) {
        asio::ssl::context ctx(asio::ssl::context::tls_client);
        ctx.set_verify_mode(asio::ssl::verify_none);  // as the kubelet: no certificate checks
        beast::ssl_stream<beast::tcp_stream> tls(std::move(tcp), ctx);
        ioc.restart();
        tls.async_handshake(asio::ssl::stream_base::client, [&](const boost::system::error_code& e) { ec = e; });
        ioc.run();
        if (!ec) exchange(tls);
    } else {
        exchange(tcp);
    }
    if (ec == beast::error::timeout)
        return {false, "Get \"" + url + "\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"};
    if (ec) return {false, "Get \"" + url + "\": " + ec.message()};
    auto code = res.get().result_int();
    if (code >= 200 && code < 400) return {true, {}};
    return {false, "HTTP probe failed with statuscode: " + std::to_string(code)};
}

class ProbeWorker {
public:
    enum class Type { Liveness, Readiness, Startup };
    using Clock = std::chrono::steady_clock;

    /// Starts probing `pod_ip` per `spec` (or failing every time with `spec_error`), counting
    /// initialDelaySeconds from `started`.
    ProbeWorker(Type type, std::variant<ProbeSpec, std::string> spec, std::string pod_ip, Clock::time_point started,
                std::function<void()> on_change)
        : type_(type), spec_(std::move(spec)), pod_ip_(std::move(pod_ip)), on_change_(std::move(on_change)),
          ok_(type == Type::Liveness) {
        const auto* s = std::get_if<ProbeSpec>(&spec_);
        auto delay = s ? s->initial_delay : std::chrono::seconds(0);
        thread_ = std::thread([this, first = started + delay] { run(first); });
    }
    ~ProbeWorker() { stop(); }
    ProbeWorker(const ProbeWorker&) = delete;
    ProbeWorker& operator=(const ProbeWorker&) = delete;

    void stop() {
        {
            std::lock_guard lock(mu_);
            stopping_ = true;
        }
        cv_.notify_all();
        if (thread_.joinable()) thread_.join();
    }

    /// The probe's current result (after thresholds).
    bool ok() const {
        std::lock_guard lock(mu_);
        return ok_;
    }
    /// How many probes failed so far, and the last failure's message.
    std::pair<std::uint64_t, std::string> failures() const {
        std::lock_guard lock(mu_);
        return {failed_probes_, last_failure_};
    }
    /// The kubelet's name for the probe ("Liveness", ...), as events word it.
    std::string name() const {
        switch (type_) {
        case Type::Liveness: return "Liveness";
        case Type::Readiness: return "Readiness";
        case Type::Startup: return "Startup";
        }
        return {};
    }

private:
    void run(Clock::time_point next) {
        int successes = 0, failures = 0;
        for (;;) {
            {
                std::unique_lock lock(mu_);
                if (cv_.wait_until(lock, next, [&] { return stopping_; })) return;
            }
            ProbeResult r;
            ProbeSpec s;
            if (auto* spec = std::get_if<ProbeSpec>(&spec_)) {
                s = *spec;
                r = run_probe(s, pod_ip_);
            } else {
                r = {false, std::get<std::string>(spec_)};
            }
            next = Clock::now() + s.period;
            {
                std::lock_guard lock(mu_);
                if (r.ok) {
                    failures = 0;
                    if (++successes >= s.success_threshold) ok_ = true;
                } else {
                    successes = 0;
                    ++failed_probes_;
                    last_failure_ = r.message;
                    if (++failures >= s.failure_threshold) ok_ = false;
                }
            }
            // Every failure is news too: the kubelet reports each one as an Unhealthy event.
            if (on_change_ && (!r.ok || successes == s.success_threshold)) on_change_();
        }
    }

    Type type_;
    std::variant<ProbeSpec, std::string> spec_;
    std::string pod_ip_;
    std::function<void()> on_change_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    bool stopping_ = false;
    bool ok_;
    std::uint64_t failed_probes_ = 0;
    std::string last_failure_;
    std::thread thread_;
};

} // namespace vck::sandbox
