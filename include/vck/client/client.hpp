// Client: the Kubernetes REST API over HttpTransport (or, when Config::local names one, an
// in-process LocalTransport: no socket, no TLS, the rest alike), as coroutines. Every verb on any
// group/version/resource (untyped, boost::json) plus typed helpers for API structs.
// Guarantees: requests pass a client-side token bucket (Config::qps/burst); 429 and 503
// honour Retry-After (any verb: the server did not act on them); other 5xx and transport
// errors are retried with capped, jittered exponential backoff for idempotent verbs only;
// a 401 refreshes dynamic credentials once. Failures are ApiError, naming verb and path.
// An optional write gate is asked before every send of a mutating request (POST, PUT, PATCH,
// DELETE; each retry included) and may refuse it: then nothing is sent and its exception
// reaches the caller (a Manager with leader election fences a lapsed leader's writes so).
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/meta.hpp>
#include <vck/api/resource.hpp>
#include <vck/client/base64.hpp>
#include <vck/client/config.hpp>
#include <vck/client/error.hpp>
#include <vck/client/http_transport.hpp>
#include <vck/client/local_transport.hpp>
#include <vck/client/request_options.hpp>
#include <vck/client/token_bucket.hpp>
#include <vck/client/typed_list_decoder.hpp>
#include <vck/client/typed_watch_decoder.hpp>
#include <vck/client/undecodable_object.hpp>
#include <vck/client/watch_decoder.hpp>
#include <vck/client/watch_reader.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/rfc/pchars.hpp>
#include <boost/url/url.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <type_traits>
#include <typeinfo>

namespace vck::client {

namespace json = boost::json;

/// A list of typed objects, as the server returns it.
template <class T>
struct ObjectList {
    api::ListMeta metadata;
    std::vector<T> items;
};

/// A running watch over HTTP (watch_reader.hpp has its contract).
class WatchStream : public WatchReader<ResponseStream> {
public:
    using WatchReader::WatchReader;
};

/// Called after every HTTP exchange: method, status code (0 for transport failure), seconds.
using RequestObserver = std::function<void(std::string_view method, int code, double seconds)>;

/// Called before each send of a mutating request with its method and target; throws to refuse
/// it (ApiError of kind Fenced, by convention). Runs on the coroutine making the request.
using WriteGate = std::function<void(http::verb method, const std::string& target)>;

/// Whether a request changes something on the server: what a write gate is asked about.
constexpr bool is_mutating(http::verb v) {
    return v == http::verb::post || v == http::verb::put || v == http::verb::patch || v == http::verb::delete_;
}

class Client {
public:
    /// Throws std::invalid_argument for a config that cannot work (bad URL, bad PEM data,
    /// burst < 1 with qps > 0).
    Client(asio::any_io_executor ex, Config cfg)
        : ex_(ex), cfg_(std::move(cfg)),
          transport_(ex, Endpoint::parse(cfg_.server), tls_settings(cfg_, {}, {}), transport_options(cfg_)),
          limiter_(cfg_.qps > 0 ? std::optional<TokenBucket<>>(std::in_place, cfg_.qps, cfg_.burst) : std::nullopt) {}

    const Config& config() const { return cfg_; }
    const asio::any_io_executor& executor() const { return ex_; }
    void set_observer(RequestObserver o) { observer_ = std::move(o); }
    /// Installs the write gate (empty: none); call before the first request.
    void set_write_gate(WriteGate g) { write_gate_ = std::move(g); }
    /// Requests sent so far (each retry counts), for tests and metrics.
    std::uint64_t requests_sent() const { return requests_sent_.load(); }

    // ---- untyped verbs -------------------------------------------------------------------

    asio::awaitable<json::value> get(const api::ResourceType& rt, std::string_view ns, std::string_view name,
                                     GetOptions o = {}) {
        Query q;
        q.add("resourceVersion", o.resource_version);
        co_return co_await json_request(http::verb::get, rt.object_path(ns, encode(name)) + q.str());
    }

    /// One page of a list (ListOptions::limit / continue_token page through it).
    asio::awaitable<json::value> list(const api::ResourceType& rt, std::string_view ns, ListOptions o = {}) {
        co_return co_await json_request(http::verb::get, list_path(rt, ns, o));
    }

    /// Every page of a list, joined: items of all pages, metadata of the last (whose
    /// resourceVersion is the snapshot all pages were read at).
    asio::awaitable<json::value> list_all(const api::ResourceType& rt, std::string_view ns, ListOptions o = {}) {
        if (!o.limit) o.limit = 500;
        json::value last;
        json::array items;
        co_await list_pages(rt, ns, std::move(o), [&](json::value& page) {
            auto& obj = page.get_object();
            if (auto* more = obj.if_contains("items"); more && more->is_array())
                for (auto& it : more->as_array()) items.push_back(std::move(it));  // copied out of the page's arena
            obj.erase("items");  // so only the page's small rest is copied below
            last = std::move(page);
        });
        last.get_object()["items"] = std::move(items);
        co_return last;
    }

    /// Reads a list page by page (following continue tokens from `o`), handing each page, a
    /// JSON object, to on_page(json::value&) before the next is read, so a caller can decode
    /// and release one page at a time. A page that is not a JSON object is a DecodeError.
    /// Each page lives in an arena (a monotonic resource) released as one block after
    /// on_page returns, which spares a free per JSON node: a value kept from it must be
    /// copied to other storage (moving it into a default-storage container or value, or
    /// constructing json::value(std::move(v), {}), copies; a plain move constructor does not).
    template <class OnPage>
    asio::awaitable<void> list_pages(const api::ResourceType& rt, std::string_view ns, ListOptions o, OnPage on_page) {
        co_await list_bodies(rt, ns, std::move(o), [&](std::string& body, const std::string& path) {
            json::monotonic_resource arena(list_page_arena_size(body));
            json::value page = parse_list_page(rt.plural, body, path, arena);
            body = std::string();
            std::string cont(api::string_at(page, {"metadata", "continue"}));
            on_page(page);
            return cont;
        });
    }

    /// list_pages for a typed informer: each page's items decoded into shared T straight from
    /// the body (typed_list_decoder.hpp: no DOM of the items; managedFields skipped unread with
    /// `drop_managed_fields`), handed to on_page(TypedListPage<T>&) with the page's metadata.
    /// A page the fast path cannot decode exactly goes through the DOM: parse, then from_json<T>
    /// on each item (its DecodeError propagates, as an UndecodableObject naming the item), the
    /// metadata's strings read leniently, and a page that is not a JSON object is a DecodeError,
    /// as with list_pages.
    template <class T, class OnPage>
    asio::awaitable<void> list_typed_pages(const api::ResourceType& rt, std::string_view ns, ListOptions o,
                                           bool drop_managed_fields, OnPage on_page) {
        co_await list_typed_pages<T>(rt, ns, std::move(o), drop_managed_fields, std::move(on_page),
                                     [](UndecodableObject&& e) { throw std::move(e); });
    }

    /// list_typed_pages that goes on past items T rejects: each is handed to
    /// on_undecodable(UndecodableObject&&) and left out of its page (which may then be empty),
    /// so one bad object does not keep a caller from the others. An exception from
    /// on_undecodable propagates.
    template <class T, class OnPage, class OnUndecodable>
    asio::awaitable<void> list_typed_pages(const api::ResourceType& rt, std::string_view ns, ListOptions o,
                                           bool drop_managed_fields, OnPage on_page, OnUndecodable on_undecodable) {
        co_await list_bodies(rt, ns, std::move(o), [&](std::string& body, const std::string& path) {
            auto page = decode_list_page<T>(rt.plural, body, path, drop_managed_fields, on_undecodable);
            body = std::string();
            std::string cont = page.metadata.continue_;
            on_page(page);
            return cont;
        });
    }

    asio::awaitable<json::value> create(const api::ResourceType& rt, std::string_view ns, json::value obj,
                                        WriteOptions o = {}) {
        co_return co_await json_request(http::verb::post, rt.collection_path(ns) + write_query(o).str(),
                                        json::serialize(obj));
    }

    /// PUT: a stale metadata.resourceVersion fails with Conflict.
    asio::awaitable<json::value> replace(const api::ResourceType& rt, std::string_view ns, std::string_view name,
                                         json::value obj, WriteOptions o = {}) {
        co_return co_await json_request(http::verb::put, rt.object_path(ns, encode(name)) + write_query(o).str(),
                                        json::serialize(obj));
    }

    /// PUT on the status subresource: the server takes only .status from it.
    asio::awaitable<json::value> replace_status(const api::ResourceType& rt, std::string_view ns,
                                                std::string_view name, json::value obj,
                                                WriteOptions o = {}) {
        co_return co_await json_request(http::verb::put,
                                        rt.object_path(ns, encode(name), "status") + write_query(o).str(),
                                        json::serialize(obj));
    }

    asio::awaitable<json::value> patch(const api::ResourceType& rt, std::string_view ns, std::string_view name,
                                       PatchType type, json::value patch_body, PatchOptions o = {}) {
        Query q;
        if (o.dry_run) q.add("dryRun", "All");
        q.add("fieldManager", o.field_manager);
        co_return co_await json_request(http::verb::patch,
                                        rt.object_path(ns, encode(name), o.subresource) + q.str(),
                                        json::serialize(patch_body), content_type(type));
    }

    /// DELETE: returns what the server returns (the object while finalizers hold it, or a Status).
    asio::awaitable<json::value> remove(const api::ResourceType& rt, std::string_view ns, std::string_view name,
                                        DeleteOptions o = {}) {
        co_return co_await json_request(http::verb::delete_, rt.object_path(ns, encode(name)), delete_body(o));
    }

    asio::awaitable<json::value> remove_collection(const api::ResourceType& rt, std::string_view ns,
                                                   ListOptions sel = {}, DeleteOptions o = {}) {
        Query q;
        q.add("labelSelector", sel.label_selector);
        q.add("fieldSelector", sel.field_selector);
        co_return co_await json_request(http::verb::delete_, rt.collection_path(ns) + q.str(), delete_body(o));
    }

    /// pods/log as text.
    asio::awaitable<std::string> logs(std::string_view ns, std::string_view pod, LogOptions o = {}) {
        static constexpr api::ResourceType pods{"", "v1", "pods", "Pod", true};
        Query q;
        q.add("container", o.container);
        if (o.tail_lines) q.add("tailLines", std::to_string(*o.tail_lines));
        if (o.limit_bytes) q.add("limitBytes", std::to_string(*o.limit_bytes));
        if (o.previous) q.add("previous", "true");
        if (o.timestamps) q.add("timestamps", "true");
        // The log is text, but the API server negotiates on its own media types: an Accept of
        // text/plain alone is refused with 406 (only JSON, YAML or protobuf are accepted).
        auto res = co_await request(http::verb::get, pods.object_path(ns, encode(pod), "log") + q.str(), {}, {},
                                    "application/json, */*");
        co_return std::move(res.body);
    }

    /// Starts a watch. The stream has no client deadline beyond timeout_seconds + 30 s.
    asio::awaitable<WatchStream> watch(const api::ResourceType& rt, std::string_view ns, WatchOptions o = {}) {
        std::string path = watch_path(rt, ns, o);
        auto stream = co_await watch_body(rt, ns, o);
        co_return WatchStream(std::move(stream), std::move(path), o.arena_events ? EventStorage::Arena : EventStorage::Default);
    }
    /// watch() before decoding: the response body's bytes, for a reader of its own
    /// (runtime/client_list_watch.hpp).
    asio::awaitable<ResponseStream> watch_body(const api::ResourceType& rt, std::string_view ns, const WatchOptions& o) {
        auto timeout = o.timeout_seconds ? std::chrono::milliseconds((*o.timeout_seconds + 30) * 1000)
                                         : std::chrono::milliseconds(0);
        co_return co_await open_stream(http::verb::get, watch_path(rt, ns, o), timeout);
    }
    static std::string watch_path(const api::ResourceType& rt, std::string_view ns, const WatchOptions& o) {
        Query q;
        q.add("watch", "true");
        q.add("labelSelector", o.label_selector);
        q.add("fieldSelector", o.field_selector);
        q.add("resourceVersion", o.resource_version);
        if (o.allow_bookmarks) q.add("allowWatchBookmarks", "true");
        if (o.timeout_seconds) q.add("timeoutSeconds", std::to_string(*o.timeout_seconds));
        return rt.collection_path(ns) + q.str();
    }

    /// One page of a list as the server sent it (JSON text): list_pages before decoding.
    asio::awaitable<std::string> list_page_body(const api::ResourceType& rt, std::string_view ns, const ListOptions& o) {
        auto res = co_await send_with_retries(http::verb::get, list_path(rt, ns, o), {}, {}, "application/json");
        co_return std::move(res.body);
    }

    /// Any request, for paths the verbs above do not cover (discovery, /version, ...).
    /// Non-2xx answers throw ApiError like every verb.
    asio::awaitable<HttpResponse> request(http::verb method, std::string path, std::string body = {},
                                          std::string content_type = {}, std::string accept = "application/json") {
        co_return co_await send_with_retries(method, std::move(path), std::move(body), std::move(content_type),
                                             std::move(accept));
    }

    // ---- typed verbs (T names its ResourceType; see api/resource.hpp) ---------------------

    template <api::ApiObject T>
    asio::awaitable<T> get(std::string_view ns, std::string_view name, GetOptions o = {}) {
        co_return decode<T>(co_await get(T::resource, ns, name, o));
    }
    template <api::ApiObject T>
    asio::awaitable<ObjectList<T>> list(std::string_view ns, ListOptions o = {}) {
        auto v = co_await list(T::resource, ns, o);
        co_return decode_list<T>(v);
    }
    template <api::ApiObject T>
    asio::awaitable<T> create(const T& obj, WriteOptions o = {}) {
        co_return decode<T>(co_await create(T::resource, obj.metadata.namespace_, encode_typed(obj), o));
    }
    template <api::ApiObject T>
    asio::awaitable<T> replace(const T& obj, WriteOptions o = {}) {
        co_return decode<T>(
            co_await replace(T::resource, obj.metadata.namespace_, obj.metadata.name, encode_typed(obj), o));
    }
    template <api::ApiObject T>
    asio::awaitable<T> replace_status(const T& obj, WriteOptions o = {}) {
        co_return decode<T>(
            co_await replace_status(T::resource, obj.metadata.namespace_, obj.metadata.name, encode_typed(obj), o));
    }
    template <api::ApiObject T>
    asio::awaitable<T> patch(std::string_view ns, std::string_view name, PatchType type, json::value body,
                             PatchOptions o = {}) {
        co_return decode<T>(co_await patch(T::resource, ns, name, type, body, o));
    }
    template <api::ApiObject T>
    asio::awaitable<json::value> remove(std::string_view ns, std::string_view name, DeleteOptions o = {}) {
        co_return co_await remove(T::resource, ns, name, o);
    }

    template <api::ApiObject T>
    static json::value encode_typed(const T& obj) {
        json::value v = api::to_json(obj);
        auto& o = v.as_object();
        if (!o.contains("apiVersion")) o["apiVersion"] = T::resource.api_version();
        if (!o.contains("kind")) o["kind"] = T::resource.kind;
        return v;
    }

private:
    /// Builds "?a=b&c=d" with each value percent-encoded; empty values are left out.
    struct Query {
        std::string s;
        void add(std::string_view key, std::string_view value) {
            if (value.empty()) return;
            s += s.empty() ? '?' : '&';
            s += key;
            s += '=';
            s += boost::urls::encode(value, boost::urls::unreserved_chars);
        }
        std::string str() const { return s; }
    };

    static std::string encode(std::string_view segment) {
        return boost::urls::encode(segment, boost::urls::pchars);
    }

    static Query write_query(WriteOptions o) {
        Query q;
        if (o.dry_run) q.add("dryRun", "All");
        q.add("fieldManager", o.field_manager);
        return q;
    }

    static std::string delete_body(DeleteOptions o) {
        json::object b;
        b["apiVersion"] = "v1";
        b["kind"] = "DeleteOptions";
        if (!o.propagation_policy.empty()) b["propagationPolicy"] = o.propagation_policy;
        if (o.grace_period_seconds) b["gracePeriodSeconds"] = *o.grace_period_seconds;
        if (o.dry_run) b["dryRun"] = json::array{"All"};
        if (!o.precondition_uid.empty() || !o.precondition_resource_version.empty()) {
            json::object pre;
            if (!o.precondition_uid.empty()) pre["uid"] = o.precondition_uid;
            if (!o.precondition_resource_version.empty()) pre["resourceVersion"] = o.precondition_resource_version;
            b["preconditions"] = std::move(pre);
        }
        return json::serialize(b);
    }

    template <class T>
    static T decode(const json::value& v) {
        try {
            return api::from_json<T>(v);
        } catch (const api::DecodeError& e) {
            throw ApiError(ErrorKind::Decode, "DECODE", std::string(T::resource.kind), e.what());
        }
    }
    template <class T>
    static ObjectList<T> decode_list(const json::value& v) {
        ObjectList<T> out;
        try {
            if (auto* m = v.as_object().if_contains("metadata")) out.metadata = api::from_json<api::ListMeta>(*m);
            if (auto* items = v.as_object().if_contains("items"); items && items->is_array())
                for (const auto& it : items->as_array()) out.items.push_back(api::from_json<T>(it));
        } catch (const std::exception& e) {
            throw ApiError(ErrorKind::Decode, "DECODE", std::string(T::resource.plural), e.what());
        }
        return out;
    }

    static TlsSettings tls_settings(const Config& c, const std::string& cert, const std::string& key) {
        TlsSettings t;
        t.ca_pem = c.ca_pem;
        t.insecure_skip_verify = c.insecure_skip_tls_verify;
        t.server_name = c.tls_server_name;
        t.client_cert_pem = cert.empty() ? c.client_cert_pem : cert;
        t.client_key_pem = cert.empty() ? c.client_key_pem : key;
        return t;
    }
    static TransportOptions transport_options(const Config& c) {
        TransportOptions t;
        t.connect_timeout = c.connect_timeout;
        t.request_timeout = c.request_timeout;
        t.max_idle = static_cast<std::size_t>(std::max(1, c.max_connections));
        t.user_agent = c.user_agent;
        return t;
    }

    static std::string list_path(const api::ResourceType& rt, std::string_view ns, const ListOptions& o) {
        Query q;
        q.add("labelSelector", o.label_selector);
        q.add("fieldSelector", o.field_selector);
        if (o.limit) q.add("limit", std::to_string(*o.limit));
        q.add("continue", o.continue_token);
        q.add("resourceVersion", o.resource_version);
        q.add("resourceVersionMatch", o.resource_version_match);
        return rt.collection_path(ns) + q.str();
    }

    asio::awaitable<json::value> json_request(http::verb method, std::string path, std::string body = {},
                                              std::string content_type = "application/json") {
        if (body.empty()) content_type.clear();
        auto res = co_await send_with_retries(method, path, std::move(body), std::move(content_type),
                                              "application/json");
        co_return parse_body(res.body, method, path);
    }

    /// The loop of list_pages and list_typed_pages: each page's body (with its path) to
    /// on_body, which returns the page's continue token, until a page has none.
    template <class OnBody>
    asio::awaitable<void> list_bodies(const api::ResourceType& rt, std::string_view ns, ListOptions o, OnBody on_body) {
        for (;;) {
            auto path = list_path(rt, ns, o);
            auto res = co_await send_with_retries(http::verb::get, path, {}, {}, "application/json");
            if (!o.next_page(on_body(res.body, path))) co_return;
        }
    }

    /// A response body as JSON (in `sp`'s storage); a Decode ApiError when it is not JSON.
    static json::value parse_body(std::string_view body, http::verb method, const std::string& path,
                                  json::storage_ptr sp = {}) {
        boost::system::error_code ec;
        auto v = json::parse(body, ec, std::move(sp));
        if (ec) throw ApiError(ErrorKind::Decode, detail::verb_name(method), path, "response is not JSON: " + ec.message());
        return v;
    }

    /// Adds credentials; swaps the client certificate when a credential plugin rotated it.
    void authorize(HttpRequest& req) {
        std::string token = cfg_.token;
        if (cfg_.credentials) {
            auto c = cfg_.credentials->current();
            if (!c.token.empty()) token = std::move(c.token);
            if (!c.client_cert_pem.empty() && c.client_cert_pem != dynamic_cert_) {
                std::lock_guard lk(cert_mu_);
                if (c.client_cert_pem != dynamic_cert_) {
                    transport_.set_tls(tls_settings(cfg_, c.client_cert_pem, c.client_key_pem));
                    dynamic_cert_ = c.client_cert_pem;
                }
            }
        }
        if (!token.empty()) {
            req.headers.set(http::field::authorization, "Bearer " + token);
        } else if (!cfg_.username.empty()) {
            req.headers.set(http::field::authorization, "Basic " + base64_encode(cfg_.username + ":" + cfg_.password));
        }
    }

    asio::awaitable<void> sleep(std::chrono::nanoseconds d) {
        if (d <= std::chrono::nanoseconds::zero()) co_return;
        asio::steady_timer t(ex_, d);
        co_await t.async_wait(asio::use_awaitable);
    }

    std::chrono::milliseconds backoff(int attempt) {
        auto base = cfg_.retry_base * (1LL << std::min(attempt, 20));
        auto capped = std::min<std::chrono::milliseconds>(base, cfg_.retry_cap);
        std::uniform_real_distribution<double> jitter(0.5, 1.0);
        std::lock_guard lk(rng_mu_);
        return std::chrono::milliseconds(static_cast<long long>(capped.count() * jitter(rng_)));
    }

    static std::optional<std::chrono::seconds> parse_retry_after(std::string_view v) {
        if (v.empty()) return std::nullopt;
        long long s = 0;
        for (char c : v) {
            if (c < '0' || c > '9') return std::nullopt;  // HTTP-date form: treat as absent
            s = s * 10 + (c - '0');
        }
        return std::chrono::seconds(s);
    }

    static api::Status status_of(const HttpResponse& res) {
        api::Status st;
        boost::system::error_code ec;
        auto v = json::parse(res.body, ec);
        if (!ec && api::string_at(v, {"kind"}) == "Status") {
            try {
                st = api::from_json<api::Status>(v);
            } catch (const std::exception&) {
            }
        }
        if (st.code == 0) st.code = res.status;
        if (st.message.empty())
            st.message = res.body.empty() ? std::string(http::obsolete_reason(static_cast<http::status>(res.status)))
                                          : res.body.substr(0, 512);
        return st;
    }

    /// The retry policy, shared by plain requests and streams. After a transport failure:
    /// retry idempotent requests (never a TLS verification failure). After an HTTP error
    /// answer: refresh credentials once on 401; honour Retry-After on 429/503 for any verb;
    /// back off on other 5xx for idempotent verbs. Sleeps before returning true.
    asio::awaitable<bool> retry_after_failure(const ApiError& e, const HttpRequest& req, int attempt) {
        if (e.kind() == ErrorKind::TlsVerification || !req.idempotent() || attempt >= cfg_.max_retries)
            co_return false;
        co_await sleep(backoff(attempt));
        co_return true;
    }
    asio::awaitable<bool> retry_after_answer(const HttpResponse& res, const HttpRequest& req, int attempt,
                                             bool& refreshed) {
        if (res.status == 401 && cfg_.credentials && !refreshed) {
            cfg_.credentials->invalidate();
            refreshed = true;
            co_return true;
        }
        if (attempt >= cfg_.max_retries) co_return false;
        auto retry_after = parse_retry_after(res.header(http::field::retry_after));
        if ((res.status == 429 || res.status == 503) && retry_after) {
            co_await sleep(*retry_after);
            co_return true;
        }
        if (res.status >= 500 && req.idempotent()) {
            co_await sleep(backoff(attempt));
            co_return true;
        }
        co_return false;
    }
    ApiError answer_error(const HttpResponse& res, const HttpRequest& req) {
        return ApiError(detail::verb_name(req.method), req.target, status_of(res),
                        parse_retry_after(res.header(http::field::retry_after)));
    }

    static HttpRequest make_request(http::verb method, std::string path, std::string body, std::string content_type,
                                    std::string accept) {
        HttpRequest req;
        req.method = method;
        req.target = std::move(path);
        req.body = std::move(body);
        if (!content_type.empty()) req.headers.set(http::field::content_type, content_type);
        req.headers.set(http::field::accept, accept);
        return req;
    }

    asio::awaitable<HttpResponse> send_with_retries(http::verb method, std::string path, std::string body,
                                                    std::string content_type, std::string accept) {
        co_return co_await exchange<HttpResponse>(make_request(method, std::move(path), std::move(body),
                                                               std::move(content_type), std::move(accept)));
    }

    asio::awaitable<ResponseStream> open_stream(http::verb method, std::string path, std::chrono::milliseconds timeout) {
        HttpRequest req = make_request(method, std::move(path), {}, {}, "application/json");
        req.timeout = timeout;
        co_return co_await exchange<ResponseStream>(std::move(req));
    }

    /// One request under client-go's rules: wait for the rate limiter, authorize, send, and
    /// retry transport failures and retryable answers (see retry_after_*). T is HttpResponse
    /// (the whole answer) or ResponseStream (a 2xx body left to stream).
    template <class T>
    asio::awaitable<T> exchange(HttpRequest req) {
        constexpr bool streamed = std::is_same_v<T, ResponseStream>;
        bool refreshed = false;
        for (int attempt = 0;; ++attempt) {
            if (limiter_) co_await sleep(limiter_->reserve());
            authorize(req);
            // Last thing before sending: the rate limiter or a retry's backoff may have waited
            // for longer than the gate's reason to let it through lasts.
            if (write_gate_ && is_mutating(req.method)) write_gate_(req.method, req.target);
            auto t0 = std::chrono::steady_clock::now();
            std::optional<ApiError> failure;
            T out;
            try {
                ++requests_sent_;
                if (cfg_.local) {
                    if constexpr (streamed) out = co_await cfg_.local->open(req);
                    else out = co_await cfg_.local->send(req);
                } else {
                    if constexpr (streamed) out = co_await transport_.open(req);
                    else out = co_await transport_.send(req);
                }
            } catch (const ApiError& e) {
                failure = e;
            }
            int status = 0;
            if (!failure) {
                if constexpr (streamed) status = static_cast<int>(out.status());
                else status = static_cast<int>(out.status);
            }
            observe(req.method, status, t0);
            if (failure) {
                if (co_await retry_after_failure(*failure, req, attempt)) continue;
                throw *failure;
            }
            if (status >= 200 && status < 300) co_return out;
            HttpResponse res;
            if constexpr (streamed) {
                res.status = out.status();
                res.headers = out.headers();
                res.body = co_await out.read_all(1 << 20);
            } else {
                res = std::move(out);
            }
            if (co_await retry_after_answer(res, req, attempt, refreshed)) continue;
            throw answer_error(res, req);
        }
    }

    void observe(http::verb method, int code, std::chrono::steady_clock::time_point t0) {
        if (!observer_) return;
        std::chrono::duration<double> d = std::chrono::steady_clock::now() - t0;
        observer_(http::to_string(method), code, d.count());
    }

    asio::any_io_executor ex_;
    Config cfg_;
    HttpTransport transport_;
    std::optional<TokenBucket<>> limiter_;  // none when qps <= 0 (no client-side limit)
    RequestObserver observer_;
    WriteGate write_gate_;
    std::atomic<std::uint64_t> requests_sent_{0};
    std::mutex cert_mu_;
    std::string dynamic_cert_;
    std::mutex rng_mu_;
    std::mt19937_64 rng_{std::random_device{}()};
};

} // namespace vck::client
