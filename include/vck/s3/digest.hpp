// Message digests for S3: SHA-256 (payload hashes and SigV4), HMAC-SHA256 (SigV4 key
// derivation) and MD5 (single-part ETags, Content-MD5), through OpenSSL 3's EVP interface.
// Guarantee: results are lowercase hex (or raw bytes where SigV4 chains HMACs); an OpenSSL
// failure throws std::runtime_error rather than yielding a wrong digest.
#pragma once

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace vck::s3 {

inline std::string to_hex(const unsigned char* data, std::size_t n) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out(n * 2, '\0');
    for (std::size_t i = 0; i < n; ++i) {
        out[2 * i] = digits[data[i] >> 4];
        out[2 * i + 1] = digits[data[i] & 0xf];
    }
    return out;
}

/// An incremental digest (EVP_sha256 or EVP_md5); feed with update(), read once with hex().
class Digest {
public:
    explicit Digest(const EVP_MD* md) : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
        if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), md, nullptr) != 1)
            throw std::runtime_error("OpenSSL could not initialise a digest");
    }
    static Digest sha256() { return Digest(EVP_sha256()); }
    static Digest md5() { return Digest(EVP_md5()); }

    void update(const void* data, std::size_t n) {
        if (n && EVP_DigestUpdate(ctx_.get(), data, n) != 1) throw std::runtime_error("OpenSSL digest update failed");
    }
    void update(std::string_view s) { update(s.data(), s.size()); }
    std::string hex() {
        unsigned char out[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        if (EVP_DigestFinal_ex(ctx_.get(), out, &n) != 1) throw std::runtime_error("OpenSSL digest final failed");
        return to_hex(out, n);
    }

private:
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
};

inline std::string sha256_hex(std::string_view data) {
    auto d = Digest::sha256();
    d.update(data);
    return d.hex();
}

inline std::string md5_hex(std::string_view data) {
    auto d = Digest::md5();
    d.update(data);
    return d.hex();
}

using Sha256Bytes = std::array<unsigned char, 32>;

inline Sha256Bytes hmac_sha256(std::string_view key, std::string_view data) {
    Sha256Bytes out{};
    unsigned int n = 0;
    if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
              reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &n) ||
        n != out.size())
        throw std::runtime_error("OpenSSL HMAC-SHA256 failed");
    return out;
}

inline Sha256Bytes hmac_sha256(const Sha256Bytes& key, std::string_view data) {
    return hmac_sha256(std::string_view(reinterpret_cast<const char*>(key.data()), key.size()), data);
}

} // namespace vck::s3
