// post_admission_review: the HTTPS POST of an AdmissionReview to a webhook, as kube-apiserver's
// webhook client makes it (admission_webhooks.hpp's WebhookCaller). Blocking, on an io_context
// of its own, so that the caller's thread (never the API server's io thread) waits; the whole
// call (connect, TLS, request, response) is bounded by the webhook's timeout. Errors are
// worded as Go's HTTP client words them: `Post "URL": dial tcp ADDR: connect: connection
// refused`, `Post "URL": context deadline exceeded`, `Post "URL": tls: failed to verify
// certificate: x509: ...`.
#pragma once

#include <vck/client/tls.hpp>
#include <vck/sandbox/server/admission_webhooks.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <openssl/err.h>
#include <openssl/x509.h>

#include <chrono>
#include <string>

namespace vck::sandbox {

inline WebhookCallResult post_admission_review(const WebhookEndpoint& e, const std::string& body) {
    namespace asio = boost::asio;
    namespace beast = boost::beast;
    namespace http = beast::http;
    WebhookCallResult out;
    const std::string post = "Post \"" + e.url + "\": ";
    asio::io_context ioc;
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    boost::system::error_code ec;
    if (!e.ca_pem.empty()) {
        ctx.add_certificate_authority(asio::buffer(e.ca_pem), ec);
        if (ec) {
            out.error = post + "tls: failed to verify certificate: x509: certificate signed by unknown authority";
            return out;
        }
    } else {
        ctx.set_default_verify_paths(ec);
    }
    ctx.set_verify_mode(asio::ssl::verify_peer);
    beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
    client::prepare_tls_connection(stream.native_handle(), e.server_name, true);
    const auto deadline = std::chrono::steady_clock::now() + e.timeout;
    std::string dial = e.address + ":" + std::to_string(e.port);
    if (e.address.find(':') != std::string::npos) dial = "[" + e.address + "]:" + std::to_string(e.port);
    bool done = false;
    auto run = [&]() -> asio::awaitable<void> {
        boost::system::error_code ec;
        auto& tcp = beast::get_lowest_layer(stream);
        tcp.expires_at(deadline);
        asio::ip::tcp::resolver resolver(ioc);
        auto results = co_await resolver.async_resolve(e.address, std::to_string(e.port), asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            out.error = post + "dial tcp: lookup " + e.address + ": no such host";
            co_return;
        }
        co_await tcp.async_connect(results, asio::redirect_error(asio::use_awaitable, ec));
        if (ec == beast::error::timeout) co_return;
        if (ec) {
            out.error = post + "dial tcp " + dial + ": connect: " +
                        (ec == asio::error::connection_refused ? std::string("connection refused") : ec.message());
            co_return;
        }
        co_await stream.async_handshake(asio::ssl::stream_base::client, asio::redirect_error(asio::use_awaitable, ec));
        if (ec == beast::error::timeout) co_return;
        if (ec) {
            long verify = SSL_get_verify_result(stream.native_handle());
            std::string why;
            if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH)
                why = "tls: failed to verify certificate: x509: certificate is valid for other names, not " + e.server_name;
            else if (verify != X509_V_OK)
                why = "tls: failed to verify certificate: x509: certificate signed by unknown authority";
            else
                why = "remote error: tls: " + ec.message();
            out.error = post + why;
            co_return;
        }
        http::request<http::string_body> req{http::verb::post, e.target, 11};
        req.set(http::field::host, e.server_name + ":" + std::to_string(e.port));
        req.set(http::field::content_type, "application/json");
        req.set(http::field::accept, "application/json, */*");
        req.set(http::field::user_agent, "kube-apiserver-admission");
        req.body() = body;
        req.prepare_payload();
        co_await http::async_write(stream, req, asio::redirect_error(asio::use_awaitable, ec));
        if (ec == beast::error::timeout) co_return;
        if (ec) {
            out.error = post + ec.message();
            co_return;
        }
        beast::flat_buffer buf;
        http::response<http::string_body> res;
        co_await http::async_read(stream, buf, res, asio::redirect_error(asio::use_awaitable, ec));
        if (ec == beast::error::timeout) co_return;
        if (ec) {
            out.error = post + (ec == http::error::end_of_stream || ec == asio::error::eof ? std::string("EOF") : ec.message());
            co_return;
        }
        out.status = static_cast<int>(res.result_int());
        out.body = std::move(res.body());
        done = true;
        tcp.expires_at(std::chrono::steady_clock::now() + std::chrono::seconds(1));
        co_await stream.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
    };
    asio::co_spawn(ioc, run(), asio::detached);
    ioc.run();
    if (!done && out.error.empty()) out.error = post + "context deadline exceeded";
    return out;
}

} // namespace vck::sandbox
