// S3Client: the S3 operations vck-fetch needs (ListObjectsV2, HeadObject, ranged GetObject,
// PutObject, multipart upload), signed with SigV4 and sent over the library's HttpTransport.
// Path-style addressing for custom endpoints, virtual-host style for AWS itself.
// Guarantees: every failure is an S3Error whose message opens with what to do; requests that
// fail with 5xx, SlowDown or a transport error are retried with jittered exponential backoff
// (max_attempts in total); https endpoints are verified against the system trust store.
#pragma once

#include <vck/client/http_transport.hpp>
#include <vck/s3/s3_error.hpp>
#include <vck/s3/s3_xml.hpp>
#include <vck/s3/sigv4.hpp>

#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace vck::s3 {

namespace asio = boost::asio;

struct S3Config {
    std::string endpoint;             // empty: AWS (https://s3.<region>.amazonaws.com)
    std::string region = "us-east-1";
    std::optional<Credentials> credentials;  // nullopt: anonymous requests
    int max_attempts = 5;
    std::chrono::milliseconds base_backoff{200};
    std::chrono::milliseconds max_backoff{5000};
    client::TlsSettings tls;
    client::TransportOptions transport;
};

/// An inclusive byte range, as in `Range: bytes=first-last`.
struct ByteRange {
    std::uint64_t first = 0;
    std::uint64_t last = 0;
};

/// A GetObject response whose body is read piece by piece.
struct ObjectStream {
    client::ResponseStream body;
    std::uint64_t content_length = 0;
    std::string etag;
};

class S3Client {
public:
    S3Client(asio::any_io_executor ex, S3Config cfg) : ex_(std::move(ex)), cfg_(std::move(cfg)) {
        if (cfg_.region.empty()) cfg_.region = "us-east-1";
        if (cfg_.max_attempts < 1) cfg_.max_attempts = 1;
        if (!cfg_.endpoint.empty()) {
            custom_ = client::Endpoint::parse(cfg_.endpoint);  // throws std::invalid_argument
            endpoint_text_ = custom_->url();
        } else {
            endpoint_text_ = "https://s3." + cfg_.region + ".amazonaws.com";
        }
    }

    const S3Config& config() const { return cfg_; }
    const std::string& endpoint_url() const { return endpoint_text_; }

    /// Full jitter: a uniformly random wait up to base * 2^attempt, capped.
    std::chrono::milliseconds backoff(int attempt) const {
        auto cap = std::min<long long>(cfg_.max_backoff.count(), cfg_.base_backoff.count() << std::min(attempt, 20));
        thread_local std::mt19937_64 rng{std::random_device{}()};
        return std::chrono::milliseconds(std::uniform_int_distribution<long long>(cap / 4, cap)(rng));
    }

    asio::awaitable<void> sleep(std::chrono::milliseconds d) {
        asio::steady_timer t(ex_, d);
        co_await t.async_wait(asio::use_awaitable);
    }

    asio::awaitable<ListPage> list_objects_v2(std::string bucket, std::string prefix, std::string token = {},
                                              int max_keys = 1000) {
        Query q{{"list-type", "2"}, {"max-keys", std::to_string(max_keys)}};
        if (!prefix.empty()) q.emplace_back("prefix", prefix);
        if (!token.empty()) q.emplace_back("continuation-token", token);
        auto res = co_await call("GET", bucket, "", std::move(q), {}, {}, prefix);
        co_return parse_list_objects_v2(res.body);
    }

    /// Every object under the prefix, following continuation tokens.
    asio::awaitable<std::vector<ObjectInfo>> list_all(std::string bucket, std::string prefix) {
        std::vector<ObjectInfo> out;
        std::string token;
        for (;;) {
            auto page = co_await list_objects_v2(bucket, prefix, token);
            for (auto& o : page.objects) out.push_back(std::move(o));
            if (!page.truncated) break;
            token = page.next_continuation_token;
        }
        co_return out;
    }

    /// HeadObject. Sent through open() and the connection then dropped: HttpTransport's
    /// parser would otherwise wait for the Content-Length bytes a HEAD response never has.
    asio::awaitable<ObjectInfo> head_object(std::string bucket, std::string key) {
        for (int attempt = 0;; ++attempt) {
            auto req = prepare("HEAD", bucket, key, {}, {}, std::string(empty_payload_sha256));
            std::optional<S3Error> failure;
            try {
                auto rs = co_await transport(bucket).open(std::move(req));
                unsigned status = rs.status();
                ObjectInfo o;
                o.key = key;
                o.etag = unquote_etag(rs.header(client::http::field::etag));
                o.last_modified = std::string(rs.header(client::http::field::last_modified));
                auto len = rs.header(client::http::field::content_length);
                o.size = len.empty() ? 0 : std::stoull(std::string(len));
                rs.close();
                if (status >= 200 && status < 300) co_return o;
                failure.emplace(status_error(status, "", bucket, key));
            } catch (const client::ApiError& e) {
                failure.emplace(network_error(e, bucket, key));
            }
            if (!failure->retryable() || attempt + 1 >= cfg_.max_attempts) throw *failure;
            co_await sleep(backoff(attempt));
        }
    }

    /// Opens a GET; the caller reads the body. Not retried here: a caller resuming a
    /// broken stream knows the offset to resume from (see backoff()/max_attempts).
    asio::awaitable<ObjectStream> open_object(std::string bucket, std::string key, std::optional<ByteRange> range = {}) {
        Headers h;
        if (range) h.emplace_back("range", "bytes=" + std::to_string(range->first) + "-" + std::to_string(range->last));
        auto req = prepare("GET", bucket, key, {}, h, std::string(empty_payload_sha256));
        auto& t = transport(bucket);
        client::ResponseStream rs;
        try {
            rs = co_await t.open(std::move(req));
        } catch (const client::ApiError& e) {
            throw network_error(e, bucket, key);
        }
        if (rs.status() != 200 && rs.status() != 206) {
            std::string body;
            try {
                body = co_await rs.read_all(1 << 20);
            } catch (const client::ApiError&) {
            }
            throw status_error(rs.status(), body, bucket, key);
        }
        ObjectStream os;
        auto len = rs.header(client::http::field::content_length);
        os.content_length = len.empty() ? 0 : std::stoull(std::string(len));
        os.etag = unquote_etag(rs.header(client::http::field::etag));
        os.body = std::move(rs);
        co_return os;
    }

    /// The whole object (or a range) in memory, retried; for small objects.
    asio::awaitable<std::string> get_object(std::string bucket, std::string key, std::optional<ByteRange> range = {}) {
        Headers h;
        if (range) h.emplace_back("range", "bytes=" + std::to_string(range->first) + "-" + std::to_string(range->last));
        auto res = co_await call("GET", bucket, key, {}, h, {}, key);
        co_return std::move(res.body);
    }

    /// Returns the new object's ETag.
    asio::awaitable<std::string> put_object(std::string bucket, std::string key, std::string body) {
        auto res = co_await call("PUT", bucket, key, {}, {}, std::move(body), key);
        co_return unquote_etag(res.header(client::http::field::etag));
    }

    asio::awaitable<std::string> create_multipart_upload(std::string bucket, std::string key) {
        // Queries are built before co_await: GCC 12 miscompiles braced lists inside it.
        Query q{{std::string("uploads"), std::string()}};
        auto res = co_await call("POST", bucket, key, std::move(q), {}, {}, key);
        co_return parse_initiate_multipart(res.body);
    }

    asio::awaitable<std::string> upload_part(std::string bucket, std::string key, std::string upload_id, int part,
                                             std::string body) {
        Query q{{"partNumber", std::to_string(part)}, {"uploadId", upload_id}};
        auto res = co_await call("PUT", bucket, key, std::move(q), {}, std::move(body), key);
        co_return unquote_etag(res.header(client::http::field::etag));
    }

    asio::awaitable<std::string> complete_multipart_upload(std::string bucket, std::string key, std::string upload_id,
                                                           std::vector<std::pair<int, std::string>> parts) {
        Query q{{"uploadId", upload_id}};
        auto res = co_await call("POST", bucket, key, std::move(q), {}, complete_multipart_body(parts), key);
        co_return parse_complete_multipart(res.body);
    }

    asio::awaitable<void> abort_multipart_upload(std::string bucket, std::string key, std::string upload_id) {
        Query q{{"uploadId", upload_id}};
        co_await call("DELETE", bucket, key, std::move(q), {}, {}, key);
    }

    /// Turns a transport failure into the S3Error users see.
    S3Error network_error(const client::ApiError& e, std::string_view bucket, std::string_view key) const {
        return S3Error(S3ErrorKind::Network, explain(S3ErrorKind::Network, endpoint_text_, bucket, key) + " (" + e.what() + ")");
    }

    /// Turns an error response into the S3Error users see.
    S3Error status_error(unsigned status, std::string_view body, std::string_view bucket, std::string_view key) const {
        auto eb = parse_error(body);
        std::string code = eb ? eb->code : "";
        auto kind = kind_from_code(code, status);
        std::string msg = explain(kind, endpoint_text_, bucket, key) + " (HTTP " + std::to_string(status);
        if (eb) msg += ", " + eb->code + (eb->message.empty() ? "" : ": " + eb->message);
        msg += ")";
        return S3Error(kind, std::move(msg), std::move(code), status);
    }

private:
    using Query = std::vector<std::pair<std::string, std::string>>;
    using Headers = std::vector<std::pair<std::string, std::string>>;

    bool virtual_host(std::string_view bucket) const {
        return !custom_ && bucket.find('.') == std::string_view::npos;
    }

    client::Endpoint endpoint_for(std::string_view bucket) const {
        if (custom_) return *custom_;
        std::string host = "s3." + cfg_.region + ".amazonaws.com";
        if (virtual_host(bucket)) host = std::string(bucket) + "." + host;
        return client::Endpoint::parse("https://" + host);
    }

    client::HttpTransport& transport(std::string_view bucket) {
        std::string host_key = virtual_host(bucket) ? std::string(bucket) : std::string();
        std::lock_guard lk(mu_);
        auto& t = transports_[host_key];
        if (!t) t = std::make_unique<client::HttpTransport>(ex_, endpoint_for(bucket), cfg_.tls, cfg_.transport);
        return *t;
    }

    client::HttpRequest prepare(std::string method, std::string_view bucket, std::string_view key, Query query,
                                Headers headers, std::string payload_sha256) {
        auto ep = endpoint_for(bucket);
        std::string path = virtual_host(bucket) ? "/" : "/" + std::string(bucket) + (key.empty() ? "" : "/");
        path += uri_encode(key, true);
        SignableRequest sr;
        sr.method = method;
        sr.path = ep.base_path + path;
        sr.query = query;
        sr.headers = std::move(headers);
        sr.headers.emplace_back("host", ep.host_header());
        sr.payload_sha256 = std::move(payload_sha256);
        std::string auth;
        if (cfg_.credentials) {
            SigningScope scope{amz_date(std::chrono::system_clock::now()), cfg_.region, "s3"};
            auth = sign(sr, *cfg_.credentials, scope);
        }
        client::HttpRequest req;
        req.method = client::http::string_to_verb(method);
        // A bare flag such as ?uploads is signed as "uploads=" but sent without '='.
        std::string wire_q;
        for (const auto& [k, v] : query) {
            if (!wire_q.empty()) wire_q += '&';
            wire_q += uri_encode(k, false);
            if (!v.empty()) wire_q += "=" + uri_encode(v, false);
        }
        req.target = path + (wire_q.empty() ? "" : "?" + wire_q);
        for (const auto& [k, v] : sr.headers)
            if (k != "host") req.headers.set(k, v);
        if (!auth.empty()) req.headers.set(client::http::field::authorization, auth);
        return req;
    }

    /// One request with retries; returns a 2xx response or throws S3Error.
    asio::awaitable<client::HttpResponse> call(std::string method, std::string bucket, std::string key, Query query,
                                               Headers headers, std::string body, std::string_view what_key) {
        std::string payload = body.empty() ? std::string(empty_payload_sha256) : api::sha256_hex(body);
        for (int attempt = 0;; ++attempt) {
            auto req = prepare(method, bucket, key, query, headers, payload);
            req.body = body;
            std::optional<S3Error> failure;
            try {
                auto res = co_await transport(bucket).send(std::move(req));
                if (res.status >= 200 && res.status < 300) co_return res;
                failure.emplace(status_error(res.status, res.body, bucket, std::string(what_key)));
            } catch (const client::ApiError& e) {
                failure.emplace(network_error(e, bucket, what_key));
            }
            if (!failure->retryable() || attempt + 1 >= cfg_.max_attempts) throw *failure;
            co_await sleep(backoff(attempt));
        }
    }

    asio::any_io_executor ex_;
    S3Config cfg_;
    std::optional<client::Endpoint> custom_;
    std::string endpoint_text_;
    std::mutex mu_;
    std::map<std::string, std::unique_ptr<client::HttpTransport>> transports_;
};

} // namespace vck::s3
