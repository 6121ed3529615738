// Peer TLS: how the download pods of one volume recognise each other. The controller hands every
// pod of a volume the same certificate and key (a Secret of their own); a pod serving its copy
// presents it and accepts only a client that presents it too, and a pod pulling accepts only a
// server presenting it (the certificate is the one trust anchor on both ends: pinned, whoever
// signed it). The certificate names `vck-peer` (the name pullers verify, since peers are
// reached by pod IP). Nothing of another volume's, and nothing without the key, gets a byte.
// Guarantees: load() names the file it cannot read; a PEM that does not parse is a clear
// std::invalid_argument, before any connection.
#pragma once

#include <vck/client/tls.hpp>

#include <boost/asio/ssl/context.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

namespace vck::fetch {

/// The name in the peer certificate that pullers verify.
inline constexpr std::string_view peer_server_name = "vck-peer";

struct PeerCredentials {
    std::string cert_pem;
    std::string key_pem;

    static PeerCredentials load(const std::filesystem::path& cert, const std::filesystem::path& key) {
        auto read = [](const std::filesystem::path& p, const char* what) {
            std::ifstream in(p, std::ios::binary);
            if (!in) throw std::invalid_argument(std::string("cannot read the peer ") + what + " " + p.string());
            std::ostringstream s;
            s << in.rdbuf();
            return s.str();
        };
        return PeerCredentials{read(cert, "certificate"), read(key, "key")};
    }

    /// The serving side: presents the certificate, and requires a client presenting it too.
    std::shared_ptr<boost::asio::ssl::context> server_context() const {
        namespace ssl = boost::asio::ssl;
        auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
        SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
        ctx->set_options(ssl::context::default_workarounds | ssl::context::no_compression);
        boost::system::error_code ec;
        ctx->use_certificate_chain(boost::asio::buffer(cert_pem), ec);
        if (!ec) ctx->use_private_key(boost::asio::buffer(key_pem), ssl::context::pem, ec);
        if (!ec) ctx->add_certificate_authority(boost::asio::buffer(cert_pem), ec);
        if (ec) throw std::invalid_argument("the peer certificate or key is not a usable PEM pair: " + ec.message());
        ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
        return ctx;
    }

    /// The pulling side: trusts only this certificate, as `vck-peer`, and presents it.
    client::TlsSettings client_settings() const {
        client::TlsSettings t;
        t.ca_pem = cert_pem;
        t.server_name = std::string(peer_server_name);
        t.client_cert_pem = cert_pem;
        t.client_key_pem = key_pem;
        return t;
    }
};

} // namespace vck::fetch
