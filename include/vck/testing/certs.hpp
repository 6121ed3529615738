// Certificates for the sandbox, generated in memory at start: a self-signed CA, a serving
// certificate for 127.0.0.1/localhost (plus extra names), and client certificates whose
// subject says who the caller is (CN = user name, O = groups, as kube-apiserver reads them).
// Guarantees: EC P-256 keys (fast to make), PEM text out, every leaf chains to the CA.
#pragma once

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace vck::testing {

/// A certificate and its private key, both PEM.
struct PemPair {
    std::string cert_pem;
    std::string key_pem;
};

namespace detail {

struct OsslFree {
    void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
    void operator()(X509* p) const { X509_free(p); }
    void operator()(BIO* p) const { BIO_free(p); }
    void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
template <class T>
using Ossl = std::unique_ptr<T, OsslFree>;

[[noreturn]] inline void throw_openssl(const char* what) {
    std::string s = std::string("certificate generation failed: ") + what;
    if (unsigned long e = ERR_get_error()) {
        char buf[256];
        ERR_error_string_n(e, buf, sizeof buf);
        s += ": ";
        s += buf;
    }
    ERR_clear_error();
    throw std::runtime_error(s);
}

inline Ossl<EVP_PKEY> make_ec_key() {
    Ossl<EVP_PKEY> k(EVP_EC_gen("P-256"));
    if (!k) throw_openssl("EC P-256 key");
    return k;
}

inline std::string bio_string(BIO* bio) {
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    return std::string(data, static_cast<std::size_t>(n));
}

inline std::string key_pem(EVP_PKEY* k) {
    Ossl<BIO> bio(BIO_new(BIO_s_mem()));
    if (!PEM_write_bio_PrivateKey(bio.get(), k, nullptr, nullptr, 0, nullptr, nullptr))
        throw_openssl("writing key PEM");
    return bio_string(bio.get());
}

inline std::string cert_pem(X509* c) {
    Ossl<BIO> bio(BIO_new(BIO_s_mem()));
    if (!PEM_write_bio_X509(bio.get(), c)) throw_openssl("writing certificate PEM");
    return bio_string(bio.get());
}

inline void add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    Ossl<X509_EXTENSION> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
    if (!ext || !X509_add_ext(cert, ext.get(), -1)) throw_openssl("adding an extension");
}

/// A certificate for `key` with subject `name` entries, valid from an hour ago for ten years.
inline Ossl<X509> new_cert(EVP_PKEY* key, const std::vector<std::pair<std::string, std::string>>& subject) {
    Ossl<X509> c(X509_new());
    if (!c) throw_openssl("X509_new");
    X509_set_version(c.get(), 2);
    unsigned char serial[16];
    RAND_bytes(serial, sizeof serial);
    serial[0] &= 0x7f;  // positive
    BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(c.get()));
    BN_free(bn);
    X509_gmtime_adj(X509_getm_notBefore(c.get()), -3600);  // tolerate small clock skew
    X509_gmtime_adj(X509_getm_notAfter(c.get()), 10L * 365 * 24 * 3600);
    X509_set_pubkey(c.get(), key);
    X509_NAME* n = X509_get_subject_name(c.get());
    for (const auto& [field, value] : subject)
        if (!X509_NAME_add_entry_by_txt(n, field.c_str(), MBSTRING_UTF8,
                                        reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1, 0))
            throw_openssl("subject name");
    return c;
}

} // namespace detail

/// A CA that signs serving and client certificates. Not copyable (it owns its key).
class CertificateAuthority {
public:
    explicit CertificateAuthority(const std::string& common_name = "vck-sandbox-ca")
        : key_(detail::make_ec_key()),
          cert_(detail::new_cert(key_.get(), {{"CN", common_name}})) {
        X509_set_issuer_name(cert_.get(), X509_get_subject_name(cert_.get()));
        detail::add_ext(cert_.get(), cert_.get(), NID_basic_constraints, "critical,CA:TRUE");
        detail::add_ext(cert_.get(), cert_.get(), NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
        detail::add_ext(cert_.get(), cert_.get(), NID_subject_key_identifier, "hash");
        if (!X509_sign(cert_.get(), key_.get(), EVP_sha256())) detail::throw_openssl("signing the CA");
        pem_ = {detail::cert_pem(cert_.get()), detail::key_pem(key_.get())};
    }

    const std::string& cert_pem() const { return pem_.cert_pem; }
    const std::string& key_pem() const { return pem_.key_pem; }

    /// A serving certificate for IP 127.0.0.1, DNS localhost and `extra_names` (each an IP
    /// address or a DNS name).
    PemPair issue_server(const std::vector<std::string>& extra_names = {}) const {
        std::string san = "IP:127.0.0.1,DNS:localhost";
        for (const auto& n : extra_names) {
            boost::system::error_code ec;
            boost::asio::ip::make_address(n, ec);
            san += (ec ? ",DNS:" : ",IP:") + n;
        }
        return issue({{"CN", "vck-sandbox-apiserver"}}, san, "serverAuth");
    }

    /// A client certificate: CN = user, one O per group.
    PemPair issue_client(const std::string& user, const std::vector<std::string>& groups = {}) const {
        if (user.empty()) throw std::invalid_argument("a client certificate needs a user name");
        std::vector<std::pair<std::string, std::string>> subject;
        for (const auto& g : groups) subject.emplace_back("O", g);
        subject.emplace_back("CN", user);
        return issue(subject, "", "clientAuth");
    }

private:
    PemPair issue(const std::vector<std::pair<std::string, std::string>>& subject, const std::string& san,
                  const char* usage) const {
        auto key = detail::make_ec_key();
        auto c = detail::new_cert(key.get(), subject);
        X509_set_issuer_name(c.get(), X509_get_subject_name(cert_.get()));
        detail::add_ext(c.get(), cert_.get(), NID_basic_constraints, "critical,CA:FALSE");
        detail::add_ext(c.get(), cert_.get(), NID_key_usage, "critical,digitalSignature,keyEncipherment");
        detail::add_ext(c.get(), cert_.get(), NID_ext_key_usage, usage);
        detail::add_ext(c.get(), cert_.get(), NID_authority_key_identifier, "keyid:always");
        if (!san.empty()) detail::add_ext(c.get(), cert_.get(), NID_subject_alt_name, san);
        if (!X509_sign(c.get(), key_.get(), EVP_sha256())) detail::throw_openssl("signing a certificate");
        return {detail::cert_pem(c.get()), detail::key_pem(key.get())};
    }

    detail::Ossl<EVP_PKEY> key_;
    detail::Ossl<X509> cert_;
    PemPair pem_;
};

} // namespace vck::testing
