// Message digests through OpenSSL 3's EVP interface: SHA-256 and MD5, incremental (Digest) or
// of one string (sha256_hex, md5_hex), as lowercase hex. Shared by the names VCK derives
// (handlers/naming.hpp), S3's payload hashes and SigV4 (s3/), and the data mover's checksums
// (fetch/). Guarantee: an OpenSSL failure throws std::runtime_error rather than yielding a
// wrong digest.
#pragma once

#include <openssl/evp.h>

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace vck::api {

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

} // namespace vck::api
