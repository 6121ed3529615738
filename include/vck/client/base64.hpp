// Base64 (standard alphabet, padded), as kubeconfig's *-data fields and ExecCredential's
// certificate-authority-data use it. Decoding is strict: a character outside the alphabet
// or a wrong length gives nullopt, never silently truncated bytes. Whitespace is ignored,
// because YAML writers may fold long values.
#pragma once

#include <openssl/evp.h>

#include <cctype>
#include <optional>
#include <string>
#include <string_view>

namespace vck::client {

inline std::optional<std::string> base64_decode(std::string_view in) {
    std::string text;
    text.reserve(in.size());
    for (char c : in)
        if (!std::isspace(static_cast<unsigned char>(c))) text += c;
    if (text.size() % 4 != 0) return std::nullopt;
    if (text.empty()) return std::string();
    // EVP_DecodeBlock counts padding as zero bytes; remember how many to drop. '=' may only
    // close the text, so one inside it is rejected here rather than decoded as zero bits.
    std::size_t pad = 0;
    while (pad < 2 && text[text.size() - 1 - pad] == '=') ++pad;
    if (text.find('=') < text.size() - pad) return std::nullopt;
    std::string out(text.size() / 4 * 3, '\0');
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
    if (n < 0) return std::nullopt;
    out.resize(static_cast<std::size_t>(n) - pad);
    return out;
}

inline std::string base64_encode(std::string_view in) {
    std::string out((in.size() + 2) / 3 * 4 + 1, '\0');
    int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

} // namespace vck::client
