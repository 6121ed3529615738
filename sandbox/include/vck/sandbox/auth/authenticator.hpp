// Authenticator: who a request comes from, decided the way kube-apiserver decides it with
// token and x509 authentication on: a bearer token from the table (tokens may be added while
// serving), or else a client certificate that chained to the sandbox CA during the TLS
// handshake (user = subject CN, groups = subject O). A token the table lacks goes to the
// token verifier, if one is set (the sandbox's service-account tokens,
// service_account_tokens.hpp). Anything else is anonymous (401). Thread-safe.
#pragma once

#include <vck/sandbox/server/api_request.hpp>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cctype>
#include <functional>
#include <optional>
#include <map>
#include <mutex>
#include <string>
#include <stdexcept>
#include <string_view>

namespace vck::sandbox {

class Authenticator {
public:
    void add_token(std::string token, Identity who) {
        if (token.empty()) throw std::invalid_argument("a bearer token must not be empty");
        if (who.user.empty()) throw std::invalid_argument("a bearer token needs a user name");
        std::lock_guard lock(mu_);
        tokens_[std::move(token)] = std::move(who);
    }
    void remove_token(const std::string& token) {
        std::lock_guard lock(mu_);
        tokens_.erase(token);
    }

    /// Asked for a bearer token the table lacks (outside the lock: it may read the store).
    using TokenVerifier = std::function<std::optional<Identity>(std::string_view token)>;
    void set_token_verifier(TokenVerifier v) {
        std::lock_guard lock(mu_);
        verifier_ = std::move(v);
    }

    /// The identity behind an Authorization header value, or an unauthenticated one.
    Identity from_header(std::string_view authorization) const {
        constexpr std::string_view bearer = "Bearer ";
        if (authorization.size() <= bearer.size()) return {};
        // The scheme is case-insensitive (RFC 7235).
        for (std::size_t i = 0; i < bearer.size(); ++i)
            if (std::tolower(static_cast<unsigned char>(authorization[i])) !=
                std::tolower(static_cast<unsigned char>(bearer[i])))
                return {};
        std::string token(authorization.substr(bearer.size()));
        while (!token.empty() && token.back() == ' ') token.pop_back();
        TokenVerifier verifier;
        {
            std::lock_guard lock(mu_);
            if (auto it = tokens_.find(token); it != tokens_.end()) return it->second;
            verifier = verifier_;
        }
        if (verifier)
            if (auto who = verifier(token)) return *who;
        return {};
    }

    /// The identity in a verified client certificate on this TLS connection, if any.
    static Identity from_peer_certificate(SSL* ssl) {
        Identity who;
        X509* cert = SSL_get_peer_certificate(ssl);
        if (!cert) return who;
        if (SSL_get_verify_result(ssl) == X509_V_OK) {
            X509_NAME* name = X509_get_subject_name(cert);
            for (int i = 0; i < X509_NAME_entry_count(name); ++i) {
                X509_NAME_ENTRY* e = X509_NAME_get_entry(name, i);
                int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(e));
                unsigned char* utf8 = nullptr;
                int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(e));
                if (n < 0) continue;
                std::string value(reinterpret_cast<char*>(utf8), static_cast<std::size_t>(n));
                OPENSSL_free(utf8);
                if (nid == NID_commonName) who.user = value;
                else if (nid == NID_organizationName) who.groups.push_back(value);
            }
        }
        X509_free(cert);
        return who;
    }

private:
    mutable std::mutex mu_;
    std::map<std::string, Identity, std::less<>> tokens_;
    TokenVerifier verifier_;
};

} // namespace vck::sandbox
