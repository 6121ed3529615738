// CertificateAuthority: a small X.509 CA in memory, for a webhook that manages its own serving
// certificate (no cert-manager) and for the sandbox's and tests' certificates. It makes a
// self-signed CA or loads one from PEM, and issues leaf certificates for servers (DNS names
// and IP addresses in subjectAltName, as TLS clients check) and clients (CN = user, one O per
// group, as kube-apiserver reads a client certificate). certificate_info() reads back what a
// PEM certificate says (names, validity), so a caller can decide whether to renew.
// Guarantees: EC P-256 keys (fast to make), SHA-256 signatures, PEM text out, every leaf
// chains to the CA; random positive serials; notBefore an hour back (clock skew); errors are
// std::runtime_error naming the step and OpenSSL's reason.
#pragma once

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace vck::webhook {

/// A certificate and its private key, both PEM.
struct PemPair {
    std::string cert_pem;
    std::string key_pem;
};

namespace certificate_detail {

struct OsslFree {
    void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
    void operator()(X509* p) const { X509_free(p); }
    void operator()(BIO* p) const { BIO_free(p); }
    void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
    void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
};
template <class T>
using Ossl = std::unique_ptr<T, OsslFree>;

[[noreturn]] inline void throw_openssl(const char* what) {
    std::string s = std::string("certificate: ") + what;
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
    if (!k) throw_openssl("generating an EC P-256 key");
    return k;
}

inline std::string bio_string(BIO* bio) {
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    return std::string(data, static_cast<std::size_t>(n));
}

inline Ossl<BIO> read_bio(const std::string& pem) {
    Ossl<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    if (!bio) throw_openssl("BIO_new_mem_buf");
    return bio;
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

inline Ossl<X509> parse_cert(const std::string& pem) {
    auto bio = read_bio(pem);
    Ossl<X509> c(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!c) throw_openssl("reading a PEM certificate");
    return c;
}

inline Ossl<EVP_PKEY> parse_key(const std::string& pem) {
    auto bio = read_bio(pem);
    Ossl<EVP_PKEY> k(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
    if (!k) throw_openssl("reading a PEM private key");
    return k;
}

inline void add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    Ossl<X509_EXTENSION> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
    if (!ext || !X509_add_ext(cert, ext.get(), -1)) throw_openssl("adding an extension");
}

/// A certificate for `key` with `subject` entries, valid from an hour ago for `validity`.
inline Ossl<X509> new_cert(EVP_PKEY* key, const std::vector<std::pair<std::string, std::string>>& subject,
                           std::chrono::seconds validity) {
    Ossl<X509> c(X509_new());
    if (!c) throw_openssl("X509_new");
    X509_set_version(c.get(), 2);
    unsigned char serial[16];
    if (RAND_bytes(serial, sizeof serial) != 1) throw_openssl("random serial");
    serial[0] &= 0x7f;  // positive
    BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(c.get()));
    BN_free(bn);
    X509_gmtime_adj(X509_getm_notBefore(c.get()), -3600);
    X509_gmtime_adj(X509_getm_notAfter(c.get()), static_cast<long>(validity.count()));
    X509_set_pubkey(c.get(), key);
    X509_NAME* n = X509_get_subject_name(c.get());
    for (const auto& [field, value] : subject)
        if (!X509_NAME_add_entry_by_txt(n, field.c_str(), MBSTRING_UTF8,
                                        reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1, 0))
            throw_openssl("subject name");
    return c;
}

inline std::chrono::system_clock::time_point to_time_point(const ASN1_TIME* t) {
    int days = 0, secs = 0;
    // The difference from now (nullptr) to t: how far in the future (or past) t lies.
    if (!ASN1_TIME_diff(&days, &secs, nullptr, t)) throw_openssl("reading a validity time");
    return std::chrono::system_clock::now() + std::chrono::hours(24) * days + std::chrono::seconds(secs);
}

} // namespace certificate_detail

/// What a certificate says: its subjectAltName entries and its validity window.
struct CertificateInfo {
    std::vector<std::string> dns_names;
    std::vector<std::string> ip_addresses;
    std::chrono::system_clock::time_point not_before, not_after;
    bool is_ca = false;
};

/// Reads a PEM certificate (the first one in `pem`); throws on anything unreadable.
inline CertificateInfo certificate_info(const std::string& pem) {
    using namespace certificate_detail;
    auto c = parse_cert(pem);
    CertificateInfo out;
    out.not_before = to_time_point(X509_get0_notBefore(c.get()));
    out.not_after = to_time_point(X509_get0_notAfter(c.get()));
    out.is_ca = X509_check_ca(c.get()) != 0;
    Ossl<GENERAL_NAMES> names(static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(c.get(), NID_subject_alt_name, nullptr, nullptr)));
    for (int i = 0; names && i < sk_GENERAL_NAME_num(names.get()); ++i) {
        const GENERAL_NAME* g = sk_GENERAL_NAME_value(names.get(), i);
        if (g->type == GEN_DNS) {
            const auto* s = g->d.dNSName;
            out.dns_names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                       static_cast<std::size_t>(ASN1_STRING_length(s)));
        } else if (g->type == GEN_IPADD) {
            const auto* s = g->d.iPAddress;
            const unsigned char* b = ASN1_STRING_get0_data(s);
            if (ASN1_STRING_length(s) == 4) {
                out.ip_addresses.push_back(boost::asio::ip::make_address_v4(
                    boost::asio::ip::address_v4::bytes_type{b[0], b[1], b[2], b[3]}).to_string());
            } else if (ASN1_STRING_length(s) == 16) {
                boost::asio::ip::address_v6::bytes_type bytes;
                std::copy(b, b + 16, bytes.begin());
                out.ip_addresses.push_back(boost::asio::ip::make_address_v6(bytes).to_string());
            }
        }
    }
    return out;
}

/// Whether `cert_pem` was signed by the CA certificate `ca_pem` (false for anything unreadable).
inline bool signed_by(const std::string& cert_pem, const std::string& ca_pem) {
    using namespace certificate_detail;
    try {
        auto c = parse_cert(cert_pem);
        auto ca = parse_cert(ca_pem);
        Ossl<EVP_PKEY> key(X509_get_pubkey(ca.get()));
        bool ok = key && X509_verify(c.get(), key.get()) == 1;
        ERR_clear_error();
        return ok;
    } catch (const std::exception&) {
        return false;
    }
}

/// Whether the private key `key_pem` belongs to the certificate `cert_pem`.
inline bool key_matches(const std::string& cert_pem, const std::string& key_pem) {
    using namespace certificate_detail;
    try {
        auto c = parse_cert(cert_pem);
        auto k = parse_key(key_pem);
        bool ok = X509_check_private_key(c.get(), k.get()) == 1;
        ERR_clear_error();
        return ok;
    } catch (const std::exception&) {
        return false;
    }
}

/// A CA that signs serving and client certificates. Not copyable (it owns its key).
class CertificateAuthority {
public:
    /// A new self-signed CA named `common_name`, valid for `validity`.
    explicit CertificateAuthority(const std::string& common_name = "vck-ca",
                                  std::chrono::seconds validity = std::chrono::hours(24 * 365 * 10))
        : key_(certificate_detail::make_ec_key()),
          cert_(certificate_detail::new_cert(key_.get(), {{"CN", common_name}}, validity)) {
        using namespace certificate_detail;
        X509_set_issuer_name(cert_.get(), X509_get_subject_name(cert_.get()));
        add_ext(cert_.get(), cert_.get(), NID_basic_constraints, "critical,CA:TRUE");
        add_ext(cert_.get(), cert_.get(), NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
        add_ext(cert_.get(), cert_.get(), NID_subject_key_identifier, "hash");
        if (!X509_sign(cert_.get(), key_.get(), EVP_sha256())) throw_openssl("signing the CA");
        pem_ = {certificate_detail::cert_pem(cert_.get()), certificate_detail::key_pem(key_.get())};
    }

    /// An existing CA, from its certificate and key (throws when they do not belong together).
    CertificateAuthority(const PemPair& ca)
        : key_(certificate_detail::parse_key(ca.key_pem)), cert_(certificate_detail::parse_cert(ca.cert_pem)), pem_(ca) {
        if (X509_check_private_key(cert_.get(), key_.get()) != 1)
            certificate_detail::throw_openssl("the CA's key does not belong to its certificate");
    }

    const std::string& cert_pem() const { return pem_.cert_pem; }
    const std::string& key_pem() const { return pem_.key_pem; }

    /// A serving certificate for `names` (each an IP address or a DNS name; the first is
    /// also the subject's CN), valid for `validity`.
    PemPair issue_server(const std::vector<std::string>& names,
                         std::chrono::seconds validity = std::chrono::hours(24 * 365 * 10)) const {
        if (names.empty()) throw std::invalid_argument("a serving certificate needs at least one name");
        std::string san;
        for (const auto& n : names) {
            boost::system::error_code ec;
            boost::asio::ip::make_address(n, ec);
            san += (san.empty() ? "" : ",") + std::string(ec ? "DNS:" : "IP:") + n;
        }
        return issue({{"CN", names.front()}}, san, "serverAuth", validity);
    }

    /// A client certificate: CN = user, one O per group.
    PemPair issue_client(const std::string& user, const std::vector<std::string>& groups = {},
                         std::chrono::seconds validity = std::chrono::hours(24 * 365 * 10)) const {
        if (user.empty()) throw std::invalid_argument("a client certificate needs a user name");
        std::vector<std::pair<std::string, std::string>> subject;
        for (const auto& g : groups) subject.emplace_back("O", g);
        subject.emplace_back("CN", user);
        return issue(subject, "", "clientAuth", validity);
    }

private:
    PemPair issue(const std::vector<std::pair<std::string, std::string>>& subject, const std::string& san,
                  const char* usage, std::chrono::seconds validity) const {
        using namespace certificate_detail;
        auto key = make_ec_key();
        auto c = new_cert(key.get(), subject, validity);
        X509_set_issuer_name(c.get(), X509_get_subject_name(cert_.get()));
        add_ext(c.get(), cert_.get(), NID_basic_constraints, "critical,CA:FALSE");
        add_ext(c.get(), cert_.get(), NID_key_usage, "critical,digitalSignature,keyEncipherment");
        add_ext(c.get(), cert_.get(), NID_ext_key_usage, usage);
        add_ext(c.get(), cert_.get(), NID_authority_key_identifier, "keyid:always");
        if (!san.empty()) add_ext(c.get(), cert_.get(), NID_subject_alt_name, san);
        if (!X509_sign(c.get(), key_.get(), EVP_sha256())) throw_openssl("signing a certificate");
        return {certificate_detail::cert_pem(c.get()), certificate_detail::key_pem(key.get())};
    }

    certificate_detail::Ossl<EVP_PKEY> key_;
    certificate_detail::Ossl<X509> cert_;
    PemPair pem_;
};

} // namespace vck::webhook
