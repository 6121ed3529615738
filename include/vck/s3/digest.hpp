// Message digests for S3: HMAC-SHA256 (SigV4 key derivation, raw bytes because SigV4 chains
// them); SHA-256 and MD5 (payload hashes, single-part ETags, Content-MD5) are api/digest.hpp's.
// Guarantee: an OpenSSL failure throws std::runtime_error rather than yielding a wrong digest.
#pragma once

#include <vck/api/digest.hpp>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <stdexcept>
#include <string_view>

namespace vck::s3 {

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
