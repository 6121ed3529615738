// InProcessTransport: the sandbox's API server reached from the same process, with no socket
// and no TLS (client::LocalTransport): a client::Config whose `local` is one of these sends
// every request through ApiServer::answer_in_process, so the same authentication (the
// config's bearer token), faults, admission (webhooks included), validation, defaulting,
// storage and watches answer it as over HTTPS. In-process config: ApiServer-independent
// callers get one from in_process_config().
// Guarantees: the caller's thread never waits for the server (requests are answered on the
// server's thread, webhook writes on its admission pool); a watch or followed log is a body
// read as the store produces it, ending when the store closes the watch, at its
// timeoutSeconds, or on close() (from any thread). Differences from HTTPS, on purpose: no
// client certificates (a request without a token is a 401), and the fault injector's
// "drop watches" ends in-process watches only when the store closes them (it does).
#pragma once

#include <vck/client/config.hpp>
#include <vck/client/local_transport.hpp>
#include <vck/sandbox/server/api_server.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>

namespace vck::sandbox {

namespace in_process_detail {

/// A body already whole (an ApiReply's), read in pieces.
class StringSource : public client::BodySource {
public:
    explicit StringSource(std::string body) : body_(std::move(body)) {}
    asio::awaitable<std::size_t> read_some(char* data, std::size_t size) override {
        auto n = std::min(size, body_.size() - offset_);
        std::memcpy(data, body_.data() + offset_, n);
        offset_ += n;
        co_return n;
    }
    void close() override {}

private:
    std::string body_;
    std::size_t offset_ = 0;
};

/// A WatchPlan or LogPlan drained as the store fills it: the store's notify wakes the reader
/// (posted to the reader's executor, where the timer lives), only while this source lives:
/// the store may notify from its threads while the reader's io_context is being torn down.
template <class Plan>
class PlanSource : public client::BodySource {
public:
    PlanSource(Plan plan, asio::any_io_executor ex)
        : plan_(std::move(plan)), wake_(std::make_shared<Wake>(ex)) {
        deadline_ = plan_.timeout ? std::chrono::steady_clock::now() + *plan_.timeout
                                  : std::chrono::steady_clock::time_point::max();
        plan_.set_notify([wake = wake_] { wake->poke(); });
    }
    ~PlanSource() override { wake_->retire(); }

    asio::awaitable<std::size_t> read_some(char* data, std::size_t size) override {
        for (;;) {
            if (offset_ < pending_.size()) {
                auto n = std::min(size, pending_.size() - offset_);
                std::memcpy(data, pending_.data() + offset_, n);
                offset_ += n;
                co_return n;
            }
            if (closed_ || !open_ || std::chrono::steady_clock::now() >= deadline_) co_return 0;
            pending_ = plan_.drain(open_);
            offset_ = 0;
            if (!pending_.empty() || !open_ || plan_.ready()) continue;
            wake_->timer.expires_at(deadline_);
            boost::system::error_code ec;
            co_await wake_->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
    }

    void close() override {
        closed_ = true;
        wake_->poke();
    }

private:
    /// The reader's timer, and whether a notify may still post to its executor.
    struct Wake : std::enable_shared_from_this<Wake> {
        explicit Wake(asio::any_io_executor ex) : timer(ex) {}
        asio::steady_timer timer;
        std::mutex mu;
        bool live = true;
        void poke() {
            std::lock_guard lock(mu);
            if (!live) return;
            asio::post(timer.get_executor(), [weak = this->weak_from_this()] {
                if (auto self = weak.lock()) self->timer.cancel();
            });
        }
        void retire() {
            std::lock_guard lock(mu);
            live = false;
        }
    };

    Plan plan_;
    std::shared_ptr<Wake> wake_;
    std::chrono::steady_clock::time_point deadline_;
    std::string pending_;
    std::size_t offset_ = 0;
    bool open_ = true;
    std::atomic<bool> closed_{false};
};

} // namespace in_process_detail

class InProcessTransport : public client::LocalTransport {
public:
    explicit InProcessTransport(ApiServer& server) : server_(server) {}

    asio::awaitable<client::HttpResponse> send(client::HttpRequest req) override {
        auto stream = co_await open(std::move(req));
        client::HttpResponse res;
        res.status = stream.status();
        res.headers = stream.headers();
        res.body = co_await stream.read_all();
        co_return res;
    }

    asio::awaitable<client::ResponseStream> open(client::HttpRequest req) override {
        http::request<http::string_body> raw{req.method, req.target, 11};
        for (const auto& f : req.headers) raw.set(f.name_string(), f.value());
        raw.body() = req.body;
        raw.prepare_payload();
        auto out = co_await server_.answer_in_process(std::move(raw));
        auto ex = co_await asio::this_coro::executor;
        http::fields headers;
        if (auto* reply = std::get_if<ApiReply>(&out)) {
            headers.set(http::field::content_type, reply->content_type);
            for (const auto& [k, v] : reply->headers) headers.insert(k, v);
            auto status = static_cast<unsigned>(reply->status);
            std::string body = req.method == http::verb::head ? std::string() : std::move(reply->body);
            co_return client::ResponseStream::from_source(std::move(req), status, std::move(headers),
                                                          std::make_shared<in_process_detail::StringSource>(std::move(body)));
        }
        if (auto* watch = std::get_if<WatchPlan>(&out)) {
            headers.set(http::field::content_type, "application/json");
            co_return client::ResponseStream::from_source(
                std::move(req), 200, std::move(headers),
                std::make_shared<in_process_detail::PlanSource<WatchPlan>>(std::move(*watch), ex));
        }
        headers.set(http::field::content_type, "text/plain");
        co_return client::ResponseStream::from_source(
            std::move(req), 200, std::move(headers),
            std::make_shared<in_process_detail::PlanSource<LogPlan>>(std::move(std::get<LogPlan>(out)), ex));
    }

private:
    ApiServer& server_;
};

/// A client config that reaches `server` in process, as its admin (server.config()'s token).
inline client::Config in_process_config(ApiServer& server) {
    auto c = server.config();
    c.server = "https://in-process.sandbox";
    c.local = std::make_shared<InProcessTransport>(server);
    return c;
}

} // namespace vck::sandbox
