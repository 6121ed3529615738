// TLS for clients: an asio::ssl::context built from PEM data (trusted CAs, client certificate),
// TLS 1.2 or newer, peer verification on unless explicitly skipped; and the per-connection
// setup that checks the server's name (DNS or IP SAN) and sends SNI.
// Guarantee: a certificate that does not chain to the given CA, or that does not carry the
// expected name, fails the handshake (ErrorKind::TlsVerification at the transport).
#pragma once

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl.hpp>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace vck::client {

struct TlsSettings {
    std::string ca_pem;           // empty: the system's default trust store
    bool insecure_skip_verify = false;
    std::string server_name;      // name to verify and send as SNI; empty: the URL's host
    std::string client_cert_pem;  // may hold a chain
    std::string client_key_pem;
};

/// Builds a client context. Throws std::invalid_argument naming the bad PEM input.
inline std::shared_ptr<boost::asio::ssl::context> make_client_tls_context(const TlsSettings& s) {
    namespace ssl = boost::asio::ssl;
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
    SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
    ctx->set_options(ssl::context::default_workarounds | ssl::context::no_compression);
    if (s.insecure_skip_verify) {
        ctx->set_verify_mode(ssl::verify_none);
    } else {
        ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
        if (s.ca_pem.empty()) {
            ctx->set_default_verify_paths();
        } else {
            // add_certificate_authority takes one certificate; a bundle may hold several.
            std::unique_ptr<BIO, decltype(&BIO_free)> bio(
                BIO_new_mem_buf(s.ca_pem.data(), static_cast<int>(s.ca_pem.size())), BIO_free);
            X509_STORE* store = SSL_CTX_get_cert_store(ctx->native_handle());
            int added = 0;
            while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
                X509_STORE_add_cert(store, cert);
                X509_free(cert);
                ++added;
            }
            ERR_clear_error();  // the loop ends on a "no start line" error
            if (added == 0)
                throw std::invalid_argument("certificate authority data holds no PEM certificate");
        }
    }
    if (!s.client_cert_pem.empty() || !s.client_key_pem.empty()) {
        if (s.client_cert_pem.empty() || s.client_key_pem.empty())
            throw std::invalid_argument("a client certificate needs both a certificate and a key");
        boost::system::error_code ec;
        ctx->use_certificate_chain(boost::asio::buffer(s.client_cert_pem), ec);
        if (ec) throw std::invalid_argument("client certificate data is not a valid PEM certificate");
        ctx->use_private_key(boost::asio::buffer(s.client_key_pem), ssl::context::pem, ec);
        if (ec) throw std::invalid_argument("client key data is not a valid PEM private key");
        if (SSL_CTX_check_private_key(ctx->native_handle()) != 1)
            throw std::invalid_argument("client key does not match the client certificate");
    }
    return ctx;
}

/// Per connection: expect `name` in the server certificate (IP SAN when it is an address,
/// DNS SAN otherwise) and send it as SNI (never for addresses, per RFC 6066). The connection
/// keeps its record buffers: Asio asks OpenSSL to release them whenever they are empty, which
/// costs a free and a 16 KB malloc per TLS record, and a watch receives a record per event or
/// two; a client holds a few connections, so keeping ~34 KB each is the better trade.
inline void prepare_tls_connection(SSL* ssl, const std::string& name, bool verify) {
    SSL_clear_mode(ssl, SSL_MODE_RELEASE_BUFFERS);
    boost::system::error_code ec;
    (void)boost::asio::ip::make_address(name, ec);  // only whether `name` is an address
    if (ec) SSL_set_tlsext_host_name(ssl, name.c_str());
    if (!verify) return;
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (!ec) X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
    else X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
}

} // namespace vck::client
