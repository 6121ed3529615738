// ApiServer: the sandbox's kube-apiserver, reached over real HTTPS (generated CA, HTTP/1.1
// keep-alive) with bearer-token or client-certificate authentication, serving the object
// store through Kubernetes REST paths, watches as chunked streams, discovery, Tables, pod
// logs, and faults on demand. Guarantees: start() returns once the port listens; stop()
// (and the destructor) closes every connection and watch and joins the server thread; every
// error answer is a metav1.Status JSON body. An optional admin port (plain HTTP, 127.0.0.1)
// drives the fault injector from outside the process (docs/sandbox.md).
#pragma once

#include <vck/api/digest.hpp>
#include <vck/client/base64.hpp>
#include <vck/client/config.hpp>
#include <vck/sandbox/server/admin_api.hpp>
#include <vck/sandbox/server/api_handler.hpp>
#include <vck/sandbox/server/request_metrics.hpp>
#include <vck/sandbox/cluster/pod_creator.hpp>
#include <vck/sandbox/server/api_request.hpp>
#include <vck/sandbox/auth/authenticator.hpp>
#include <vck/sandbox/server/certs.hpp>
#include <vck/sandbox/server/fault_injector.hpp>
#include <vck/sandbox/cluster/pod_logs.hpp>
#include <vck/sandbox/server/request_parser.hpp>
#include <vck/sandbox/auth/service_account_tokens.hpp>
#include <vck/sandbox/server/webhook_client.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>

#include <openssl/rand.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace vck::sandbox {

class ApiServer {
public:
    using AuditFn = std::function<void(const AuditRecord&)>;
    struct Options {
        std::string bind = "127.0.0.1";
        std::uint16_t port = 0;  // 0: any free port
        bool verbose = false;    // log each request to stderr
        std::string token;       // the admin bearer token; generated if empty
        std::optional<std::uint16_t> admin_port;  // plain-HTTP fault API on 127.0.0.1 (0: any)
        std::vector<std::string> extra_names;     // more SANs for the serving certificate
        std::chrono::seconds bookmark_interval{30};  // how often open watches get a BOOKMARK
    };

    ApiServer() : ApiServer(Options{}) {}
    explicit ApiServer(Options o) : opts_(std::move(o)), handler_(store_, logs_) {
        if (opts_.token.empty()) opts_.token = random_token();
        auth_.add_token(opts_.token, Identity{"sandbox-admin", {"system:masters", "system:authenticated"}});
        serving_ = ca_.issue_server(opts_.extra_names);
        // Identities for pods: TokenRequest, and the service-account tokens accepted as
        // bearer tokens. (kube-root-ca.crt is the Sandbox's: a bare server, like a cluster
        // without kube-controller-manager, publishes no ConfigMap.)
        auth_.set_token_verifier([this](std::string_view t) { return tokens_.authenticate(store_, t); });
        handler_.set_metrics([this] { return request_metrics_.text(); });
        handler_.set_token_requests([this](const std::string& ns, const std::string& name, const json::value& body) {
            return tokens_.request(store_, ns, name, body);
        });
        handler_.admission_webhooks().set_caller(post_admission_review);
        faults_.on_compact([this] { store_.compact(); });
        faults_.on_resource_check([this](std::string_view resource) -> std::optional<std::string> {
            auto slash = resource.find('/');
            auto plural = resource.substr(0, slash);
            auto sub = slash == std::string_view::npos ? std::string_view() : resource.substr(slash + 1);
            for (const auto& r : store_.resources())
                if (r.plural == plural && (sub.empty() || r.has_subresource(sub))) return std::nullopt;
            return "no request has the resource \"" + std::string(resource) +
                   "\": the sandbox serves no such resource (kubectl api-resources lists those it does)";
        });
    }
    ~ApiServer() { stop(); }

    /// Calls `fn` (on the server's thread) for every request once it is answered; a watch is
    /// recorded when its stream starts. Replaces any earlier hook; an empty fn removes it.
    void set_audit(AuditFn fn) {
        std::lock_guard lk(audit_mu_);
        audit_ = std::move(fn);
    }
    ApiServer(const ApiServer&) = delete;
    ApiServer& operator=(const ApiServer&) = delete;

    /// Binds and starts serving on a thread of its own; returns once the port listens.
    /// Throws std::system_error when the address cannot be bound.
    void start() {
        if (thread_.joinable()) throw std::logic_error("ApiServer::start() called twice");
        ssl_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
        SSL_CTX_set_min_proto_version(ssl_->native_handle(), TLS1_2_VERSION);
        ssl_->use_certificate_chain(asio::buffer(serving_.cert_pem));
        ssl_->use_private_key(asio::buffer(serving_.key_pem), asio::ssl::context::pem);
        ssl_->add_certificate_authority(asio::buffer(ca_.cert_pem()));
        // Ask for a client certificate but do not require one (tokens are fine too), and never
        // fail the handshake over it: like kube-apiserver, a certificate that does not verify
        // just authenticates nobody (Authenticator checks the verify result), so the answer
        // is a 401 Status, not a broken connection.
        ssl_->set_verify_mode(asio::ssl::verify_peer);
        ssl_->set_verify_callback([](bool, asio::ssl::verify_context&) { return true; });
        std::string sid = "vck-sandbox";
        SSL_CTX_set_session_id_context(ssl_->native_handle(), reinterpret_cast<const unsigned char*>(sid.data()),
                                       static_cast<unsigned>(sid.size()));
        SSL_CTX_set_client_CA_list(ssl_->native_handle(), ca_names(ca_.cert_pem()));

        auto ep = asio::ip::tcp::endpoint(asio::ip::make_address(opts_.bind), opts_.port);
        acceptor_.open(ep.protocol());
        acceptor_.set_option(asio::socket_base::reuse_address(true));
        acceptor_.bind(ep);
        acceptor_.listen();
        port_ = acceptor_.local_endpoint().port();
        asio::co_spawn(ioc_, accept_loop(), asio::detached);
        if (opts_.admin_port) {
            admin_ = std::make_unique<AdminApi>(ioc_, *opts_.admin_port, faults_, logs_, auth_, opts_.verbose);
            admin_port_ = admin_->port();
        }
        faults_.on_drop_watches([this] {
            store_.close_watches();
            asio::post(ioc_, [this] { wake_watches(); });
        });
        asio::co_spawn(ioc_, bookmark_loop(), asio::detached);
        thread_ = std::thread([this] {
            // What escapes one handler (a Beast operation that throws from inside the I/O
            // loop, not into the coroutine that awaits it) ends that connection only: the
            // loop goes on serving every other one, as kube-apiserver recovers per request.
            for (;;) {
                try {
                    ioc_.run();
                    return;
                } catch (const std::exception& e) {
                    log(std::string("request handling failed: ") + e.what());
                } catch (...) {
                    log("request handling failed");
                }
            }
        });
    }

    /// Closes the listener, every connection and every watch, and joins the server thread.
    void stop() {
        if (!thread_.joinable()) return;
        asio::post(ioc_, [this] {
            stopping_ = true;
            boost::system::error_code ec;
            acceptor_.close(ec);
            if (admin_) admin_->close();
            for (auto* s : sessions_) s->close();
            if (bookmark_timer_) bookmark_timer_->cancel();
            wake_watches();
        });
        // Every coroutine ends once its socket or timer is closed, and run() returns; a
        // bounded grace keeps stop() from hanging on a handler that never completes.
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (!ioc_.stopped() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        ioc_.stop();
        thread_.join();
        admission_pool_.join();  // admitted writes end within their webhooks' timeouts
    }

    std::uint16_t port() const { return port_; }
    /// The admin port, once started with Options::admin_port; 0 otherwise.
    std::uint16_t admin_port() const { return admin_port_; }
    std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
    const std::string& token() const { return opts_.token; }
    const SandboxCertificateAuthority& ca() const { return ca_; }

    /// A client configuration that trusts the sandbox CA and uses the admin bearer token.
    client::Config config() const {
        client::Config c;
        c.server = url();
        c.ca_pem = ca_.cert_pem();
        c.token = opts_.token;
        return c;
    }
    /// A configuration that authenticates with a fresh client certificate (CN=user, O=groups).
    client::Config client_cert_config(const std::string& user, const std::vector<std::string>& groups = {}) const {
        auto pair = ca_.issue_client(user, groups);
        client::Config c;
        c.server = url();
        c.ca_pem = ca_.cert_pem();
        c.client_cert_pem = pair.cert_pem;
        c.client_key_pem = pair.key_pem;
        return c;
    }
    /// Another bearer token, accepted from now on.
    void add_token(std::string token, Identity who) { auth_.add_token(std::move(token), std::move(who)); }

    /// A kubeconfig (YAML) with the CA data, the server, the admin token and context "sandbox".
    std::string kubeconfig_yaml() const {
        std::string s;
        s += "apiVersion: v1\nkind: Config\n";
        s += "clusters:\n- name: sandbox\n  cluster:\n";
        s += "    server: " + url() + "\n";
        s += "    certificate-authority-data: " + client::base64_encode(ca_.cert_pem()) + "\n";
        s += "users:\n- name: sandbox-admin\n  user:\n    token: " + opts_.token + "\n";
        // Names as JSON strings: valid YAML whatever they hold.
        auto quoted = [](const std::string& x) { return boost::json::serialize(boost::json::value(x)); };
        for (const auto& [name, token] : users_)
            s += "- name: " + quoted(name) + "\n  user:\n    token: " + token + "\n";
        s += "contexts:\n- name: sandbox\n  context:\n    cluster: sandbox\n    user: sandbox-admin\n"
             "    namespace: default\n";
        for (const auto& [name, token] : users_)
            s += "- name: " + quoted(name) + "\n  context:\n    cluster: sandbox\n    user: " + quoted(name) +
                 "\n    namespace: default\n";
        s += "current-context: sandbox\npreferences: {}\n";
        return s;
    }

    /// Another principal, authenticated by a bearer token issued here (groups as given, plus
    /// system:authenticated): kubeconfig_yaml() then holds a user and a context of its name,
    /// so `kubectl --context NAME` acts as it under RBAC. Returns the token.
    std::string add_user(const std::string& name, std::vector<std::string> groups) {
        if (name.empty()) throw std::invalid_argument("a user needs a name");
        if (name == "sandbox-admin" || name == "sandbox") throw std::invalid_argument("the user name \"" + name + "\" is taken");
        auto token = random_token();
        auth_.add_token(token, Identity{name, std::move(groups)});
        users_.emplace_back(name, token);
        return token;
    }

    ObjectStore& store() { return store_; }

    /// The answer to `raw`, a request made in this process (server/in_process_transport.hpp)
    /// rather than over a connection: the same authentication (its bearer token; there is no
    /// client certificate), faults, admission, handler and audit, on the server's thread, so
    /// the caller's thread is never blocked. A watch or followed log comes back as its plan,
    /// for the caller to drain. Requires start().
    asio::awaitable<std::variant<ApiReply, WatchPlan, LogPlan>> answer_in_process(http::request<http::string_body> raw) {
        ++in_process_requests_;
        // A member coroutine whose frame owns the request (no lambda captures: GCC 12 frees a
        // lambda coroutine's captured request twice).
        co_return co_await asio::co_spawn(ioc_, answer_on_server(std::move(raw)), asio::use_awaitable);
    }
    /// TLS handshakes completed (one per connection) and requests answered in process, so far:
    /// a test can show it reached the server without a socket.
    std::uint64_t tls_handshakes() const { return tls_handshakes_; }
    std::uint64_t in_process_requests() const { return in_process_requests_; }

    /// Pod creates as kube-controller-manager's `controller` (e.g. "replicaset-controller")
    /// makes them: a POST through the request path, authorization and admission (webhooks
    /// included), as the identity system:serviceaccount:kube-system:<controller>. Call from a
    /// controller's thread, never the server's (a webhook call blocks it).
    PodCreator pod_creator(std::string controller) {
        return [this, who = Identity{"system:serviceaccount:kube-system:" + controller,
                                     {"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:masters"}}](
                   const std::string& ns, json::value pod) {
            ApiRequest req;
            req.method = "POST";
            req.path = "/api/v1/namespaces/" + ns + "/pods";
            req.content_type = "application/json";
            req.accept = "application/json";
            req.body = json::serialize(pod);
            req.who = who;
            auto out = handler_.handle(req);
            auto* reply = std::get_if<ApiReply>(&out);
            if (!reply) throw std::logic_error("pod create answered with a stream");
            auto body = json::parse(reply->body);
            if (reply->status >= 300) throw StoreError(api::from_json<api::Status>(body));
            return body;
        };
    }
    /// The admission webhooks the server calls (admission_webhooks.hpp); set_caller() replaces
    /// the HTTPS call, e.g. by an in-process fake in a test.
    AdmissionWebhooks& admission_webhooks() { return handler_.admission_webhooks(); }
    FaultInjector& faults() { return faults_; }
    /// Where the simulated kubelet writes container output; pods/<name>/log reads it.
    PodLogs& pod_logs() { return logs_; }
    /// Issues (TokenRequest, the kubelet's projected tokens) and checks service-account tokens.
    ServiceAccountTokens& service_account_tokens() { return tokens_; }
    /// The CA that signs the serving certificate (PEM): kube-root-ca.crt's ca.crt.
    const std::string& ca_pem() const { return ca_.cert_pem(); }

private:
    using tcp = asio::ip::tcp;
    using ssl_stream = beast::ssl_stream<beast::tcp_stream>;

    struct Session {
        ssl_stream stream;
        std::shared_ptr<asio::steady_timer> wake;  // set while the session streams a watch
        explicit Session(tcp::socket s, asio::ssl::context& ctx) : stream(std::move(s), ctx) {}
        void close() {
            boost::system::error_code ec;
            beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_both, ec);
            beast::get_lowest_layer(stream).socket().close(ec);
            if (wake) wake->cancel();
        }
    };

    static STACK_OF(X509_NAME) * ca_names(const std::string& pem) {
        STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
        BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
        if (X509* c = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
            sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(c)));
            X509_free(c);
        }
        BIO_free(bio);
        return names;
    }

    std::vector<std::pair<std::string, std::string>> users_;  // add_user(): name, token

    static std::string random_token() {
        unsigned char raw[24];
        RAND_bytes(raw, sizeof raw);
        return api::to_hex(raw, sizeof raw);
    }

    void wake_watches() {
        for (auto* s : sessions_)
            if (s->wake) s->wake->cancel();
    }

    asio::awaitable<void> accept_loop() {
        for (;;) {
            boost::system::error_code ec;
            auto sock = co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
            if (ec) {
                if (!acceptor_.is_open() || stopping_) co_return;
                continue;
            }
            sock.set_option(tcp::no_delay(true), ec);
            ++active_;
            asio::co_spawn(ioc_, session(std::move(sock)), [this](std::exception_ptr) { --active_; });
        }
    }

    asio::awaitable<void> session(tcp::socket sock) {
        Session s(std::move(sock), *ssl_);
        sessions_.push_back(&s);
        struct Unlist {
            std::list<Session*>& l;
            Session* s;
            ~Unlist() { l.remove(s); }
        } unlist{sessions_, &s};

        boost::system::error_code ec;
        beast::get_lowest_layer(s.stream).expires_after(std::chrono::seconds(10));
        co_await s.stream.async_handshake(asio::ssl::stream_base::server, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            if (opts_.verbose) log("TLS handshake failed: " + ec.message());
            co_return;
        }
        ++tls_handshakes_;
        Identity cert_identity = Authenticator::from_peer_certificate(s.stream.native_handle());
        beast::flat_buffer buf;
        while (!stopping_) {
            RequestParser parser;  // values past Beast's 64 KiB per field, up to Go's 1 MiB in all
            parser.header_limit(max_header_bytes);
            parser.body_limit(max_body_bytes);
            beast::get_lowest_layer(s.stream).expires_after(std::chrono::minutes(5));  // idle keep-alive
            co_await http::async_read(s.stream, buf, parser, asio::redirect_error(asio::use_awaitable, ec));
            if (ec == http::error::header_limit) {
                // What Go's HTTP server answers before it hangs up (plain text, no Status).
                http::response<http::string_body> res{http::status::request_header_fields_too_large, 11};
                res.set(http::field::content_type, "text/plain; charset=utf-8");
                res.keep_alive(false);
                res.body() = "431 Request Header Fields Too Large";
                res.prepare_payload();
                co_await http::async_write(s.stream, res, asio::redirect_error(asio::use_awaitable, ec));
                co_await discard_rest(s);
                break;
            }
            if (ec == http::error::body_limit) {
                auto reply = status_reply(failure_status(
                    413, "Request entity too large: limit is " + std::to_string(max_body_bytes), "RequestEntityTooLarge"));
                http::response<http::string_body> res{http::status::payload_too_large, parser.get().version()};
                res.set(http::field::content_type, reply.content_type);
                res.keep_alive(false);  // the rest of the body is still on its way
                res.body() = std::move(reply.body);
                res.prepare_payload();
                co_await http::async_write(s.stream, res, asio::redirect_error(asio::use_awaitable, ec));
                co_await discard_rest(s);
                break;
            }
            if (ec) break;
            beast::get_lowest_layer(s.stream).expires_never();
            auto req = parser.release();
            bool keep = co_await serve(s, req, cert_identity);
            if (!keep || !req.keep_alive()) break;
        }
        beast::get_lowest_layer(s.stream).expires_after(std::chrono::seconds(2));
        co_await s.stream.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
    }

    /// kube-apiserver's limits: Go's MaxHeaderBytes of 1 MiB (plus the 4 KiB Go allows over
    /// it) for the request line and headers, MaxRequestBodyBytes (3 MiB) for a body.
    static constexpr std::uint32_t max_header_bytes = (1u << 20) + 4096;
    static constexpr std::uint64_t max_body_bytes = 3u * 1024 * 1024;

    /// After an answer given before the whole request was read, what the client still sends
    /// is read and dropped for a moment: closing with unread data would reset the connection,
    /// and the client could lose the answer (Go's server waits likewise before it closes).
    asio::awaitable<void> discard_rest(Session& s) {
        beast::get_lowest_layer(s.stream).expires_after(std::chrono::seconds(2));
        std::array<char, 16384> scratch;
        boost::system::error_code ec;
        while (!ec) co_await s.stream.async_read_some(asio::buffer(scratch), asio::redirect_error(asio::use_awaitable, ec));
    }

    static ApiRequest to_api_request(const http::request<http::string_body>& req) {
        ApiRequest r;
        r.method = std::string(req.method_string());
        auto target = boost::urls::parse_origin_form(req.target());
        if (target) {
            r.path = std::string(target->encoded_path().decode());
            for (auto p : target->params()) r.query[std::string(p.key)] = std::string(p.value);
        } else {
            r.path = std::string(req.target());
        }
        std::string ct(req[http::field::content_type]);
        if (auto semi = ct.find(';'); semi != std::string::npos) ct.resize(semi);
        while (!ct.empty() && ct.back() == ' ') ct.pop_back();
        r.content_type = ct;
        r.accept = std::string(req[http::field::accept]);
        r.body = req.body();
        r.impersonate_user = std::string(req["Impersonate-User"]);
        r.impersonate_uid = std::string(req["Impersonate-Uid"]);
        for (auto [it, end] = req.equal_range("Impersonate-Group"); it != end; ++it)
            r.impersonate_groups.emplace_back(it->value());
        return r;
    }

    /// Answers one request; false when the connection must close afterwards.
    asio::awaitable<bool> serve(Session& s, const http::request<http::string_body>& raw, const Identity& cert_identity) {
        auto t0 = std::chrono::steady_clock::now();
        ApiRequest req = to_api_request(raw);
        auto out = co_await answer(req, raw, cert_identity);
        if (auto* watch = std::get_if<WatchPlan>(&out)) {
            bool ok = co_await stream_watch(s, raw, std::move(*watch), "application/json");
            log_request(req, 200, t0, "watch");
            co_return ok;
        }
        if (auto* log_stream = std::get_if<LogPlan>(&out)) {
            bool ok = co_await stream_watch(s, raw, std::move(*log_stream), "text/plain");
            log_request(req, 200, t0, "follow");
            co_return ok;
        }
        auto* reply = &std::get<ApiReply>(out);

        http::response<http::string_body> res{static_cast<http::status>(reply->status), raw.version()};
        res.set(http::field::content_type, reply->content_type);
        res.set("Audit-Id", random_token().substr(0, 16));
        res.set(http::field::cache_control, "no-cache, private");
        // Added, not set: a reply may carry one header several times (a Warning per warning).
        for (const auto& [k, v] : reply->headers) res.insert(k, v);
        res.keep_alive(raw.keep_alive());
        res.body() = std::move(reply->body);
        if (raw.method() == http::verb::head) res.body().clear();
        res.prepare_payload();
        boost::system::error_code ec;
        co_await http::async_write(s.stream, res, asio::redirect_error(asio::use_awaitable, ec));
        log_request(req, reply->status, t0, "");
        co_return !ec;
    }

    /// answer_in_process's part on the server's thread.
    asio::awaitable<std::variant<ApiReply, WatchPlan, LogPlan>> answer_on_server(http::request<http::string_body> raw) {
        auto t0 = std::chrono::steady_clock::now();
        ApiRequest req = to_api_request(raw);
        const Identity no_certificate;  // named: GCC 12 destroys a temporary in a co_await twice
        auto out = co_await answer(req, raw, no_certificate);
        auto* reply = std::get_if<ApiReply>(&out);
        log_request(req, reply ? reply->status : 200, t0, reply ? "in-process" : "in-process stream");
        co_return out;
    }

    /// The answer to one request, whichever front end carried it (a connection, or
    /// answer_in_process): authentication (the bearer token, else `cert_identity`), injected
    /// latency and faults, the admission pool for a write that calls webhooks, the handler;
    /// then the audit record. Runs on the server's thread.
    asio::awaitable<std::variant<ApiReply, WatchPlan, LogPlan>> answer(ApiRequest& req, const http::request<http::string_body>& raw,
                                                                      const Identity& cert_identity) {
        req.who = auth_.from_header(raw[http::field::authorization]);
        if (!req.who.authenticated()) req.who = cert_identity;

        if (auto latency = faults_.latency(); latency.count() > 0) {
            asio::steady_timer t(ioc_, latency);
            boost::system::error_code ec;
            co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }

        std::optional<ApiReply> reply;
        bool public_path = req.path == "/healthz" || req.path == "/readyz" || req.path == "/livez" ||
                           req.path == "/version" || req.path.starts_with("/healthz/") ||
                           req.path.starts_with("/readyz/") || req.path.starts_with("/livez/");
        if (!req.who.authenticated() && !public_path) reply = error_reply(401, "Unauthorized");

        if (!reply) {
            auto verb = handler_.verb_of(req);
            if (auto f = faults_.check(verb.verb, verb.resource)) {
                auto st = failure_status(f->code, f->message);
                if (f->retry_after_seconds > 0) {
                    st.details = api::StatusDetails{};
                    st.details->retryAfterSeconds = f->retry_after_seconds;
                }
                reply = status_reply(st);
                if (f->retry_after_seconds > 0)
                    reply->headers.emplace_back("Retry-After", std::to_string(f->retry_after_seconds));
            }
        }
        if (!reply) {
            try {
                // A write a webhook is called for is served on the admission pool: the webhook
                // may call this server back (most do), which this thread must then answer.
                if (handler_.calls_webhooks(req)) {
                    reply = co_await asio::co_spawn(
                        admission_pool_,
                        [this, &req]() -> asio::awaitable<ApiReply> {
                            auto out = handler_.handle(req);
                            if (auto* r = std::get_if<ApiReply>(&out)) co_return std::move(*r);
                            co_return error_reply(500, "internal error: an admitted write answered no reply");
                        },
                        asio::use_awaitable);
                }
            } catch (const std::exception& e) {
                reply = error_reply(500, std::string("internal error: ") + e.what());
            }
        }
        std::variant<ApiReply, WatchPlan, LogPlan> out;
        if (reply) {
            out = std::move(*reply);
        } else {
            try {
                out = handler_.handle(req);
            } catch (const std::exception& e) {
                out = error_reply(500, std::string("internal error: ") + e.what());
            }
        }
        auto* answered = std::get_if<ApiReply>(&out);
        audit(req, answered ? answered->status : 200);
        co_return out;
    }

    /// Streams a WatchPlan (JSON events) or a LogPlan (pods/log?follow=true, text) in chunks
    /// until timeoutSeconds passes, the watch is dropped (watches only), the plan ends, the
    /// client goes away, or the server stops.
    template <class Plan>
    asio::awaitable<bool> stream_watch(Session& s, const http::request<http::string_body>& raw, Plan plan,
                                       const char* content_type) {
        http::response<http::empty_body> res{http::status::ok, raw.version()};
        res.set(http::field::content_type, content_type);
        res.set(http::field::cache_control, "no-cache, private");
        res.chunked(true);
        res.keep_alive(raw.keep_alive());
        http::response_serializer<http::empty_body> sr{res};
        boost::system::error_code ec;
        co_await http::async_write_header(s.stream, sr, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return false;

        auto wake = std::make_shared<asio::steady_timer>(ioc_);
        s.wake = wake;
        struct Clear {
            Session& s;
            ~Clear() { s.wake.reset(); }
        } clear{s};
        // The store calls this from whichever thread changed it; the handler runs on ioc_'s
        // one thread, as this loop does. The loop sleeps only after plan.ready() says nothing
        // is queued, so a notify either found events the check saw or wakes the wait below.
        std::weak_ptr<asio::steady_timer> weak = wake;
        auto ex = ioc_.get_executor();
        plan.set_notify([weak, ex] {
            asio::post(ex, [weak] {
                if (auto t = weak.lock()) t->cancel();
            });
        });

        auto now = std::chrono::steady_clock::now;
        auto deadline = plan.timeout ? now() + *plan.timeout : std::chrono::steady_clock::time_point::max();
        auto generation = faults_.watch_generation();
        bool open = true;
        while (open) {
            std::string lines = plan.drain(open);
            if (!lines.empty()) {
                co_await asio::async_write(s.stream, http::make_chunk(asio::buffer(lines)),
                                           asio::redirect_error(asio::use_awaitable, ec));
                if (ec) co_return false;
            }
            const bool dropped = std::is_same_v<Plan, WatchPlan> && faults_.watch_generation() != generation;
            if (!open || stopping_ || dropped || now() >= deadline) break;
            if (plan.ready()) continue;
            wake->expires_at(deadline);
            co_await wake->async_wait(asio::redirect_error(asio::use_awaitable, ec));
            if (!beast::get_lowest_layer(s.stream).socket().is_open()) co_return false;
        }
        if (stopping_) co_return false;
        co_await asio::async_write(s.stream, http::make_chunk_last(), asio::redirect_error(asio::use_awaitable, ec));
        co_return !ec;
    }

    /// Every bookmark_interval, a BOOKMARK to each watch that allows them (the store sends
    /// them only to those).
    asio::awaitable<void> bookmark_loop() {
        asio::steady_timer t(ioc_);
        bookmark_timer_ = &t;
        struct Clear {
            asio::steady_timer*& p;
            ~Clear() { p = nullptr; }
        } clear{bookmark_timer_};
        while (!stopping_) {
            t.expires_after(opts_.bookmark_interval);
            boost::system::error_code ec;
            co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            if (stopping_) break;
            store_.bookmark();
        }
    }

    void audit(const ApiRequest& req, int code) {
        request_metrics_.count(req, handler_.verb_of(req).verb, code);
        AuditFn fn;
        {
            std::lock_guard lk(audit_mu_);
            fn = audit_;
        }
        if (!fn) return;
        AuditRecord r;
        r.user = req.who.user;
        auto v = handler_.verb_of(req);
        r.verb = v.verb;
        r.resource = v.resource;
        if (auto p = parse_api_path(req.path); p && p->kind == ApiPath::Kind::Resource) {
            r.api_group = p->group;
            r.namespace_ = p->namespace_;
        } else {
            r.path = req.path;
        }
        r.code = code;
        fn(r);
    }

    void log_request(const ApiRequest& req, int code, std::chrono::steady_clock::time_point t0, const char* note) {
        if (!opts_.verbose) return;
        auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
        std::string q;
        for (const auto& [k, v] : req.query) q += (q.empty() ? "?" : "&") + k + "=" + v;
        log(req.method + " " + req.path + q + " " + std::to_string(code) + " " + std::to_string(us / 1000.0) + "ms user=" +
            (req.who.user.empty() ? "<anonymous>" : req.who.user) + (*note ? std::string(" ") + note : ""));
    }
    static void log(const std::string& line) {
        static std::mutex mu;
        std::lock_guard lock(mu);
        std::fprintf(stderr, "vck-sandbox: %s\n", line.c_str());
    }

    Options opts_;
    SandboxCertificateAuthority ca_;
    ServiceAccountTokens tokens_;
    PemPair serving_;
    Authenticator auth_;
    FaultInjector faults_;
    PodLogs logs_;
    ObjectStore store_;
    ApiHandler handler_;
    RequestMetrics request_metrics_;
    std::atomic<int> active_{0};
    std::atomic<bool> stopping_{false};
    std::atomic<std::uint64_t> tls_handshakes_{0};
    std::atomic<std::uint64_t> in_process_requests_{0};
    std::uint16_t port_ = 0;
    std::uint16_t admin_port_ = 0;
    // Destroyed before everything above: pending coroutines may reference those members.
    asio::io_context ioc_{1};
    std::unique_ptr<asio::ssl::context> ssl_;
    tcp::acceptor acceptor_{ioc_};
    std::list<Session*> sessions_;  // touched only on the server thread
    asio::steady_timer* bookmark_timer_ = nullptr;
    std::unique_ptr<AdminApi> admin_;
    std::thread thread_;
    asio::thread_pool admission_pool_{4};  // writes that call webhooks (see serve())
    std::mutex audit_mu_;
    AuditFn audit_;
};

} // namespace vck::sandbox
