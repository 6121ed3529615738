// JSON pointers (RFC 6901), the one parser and escaper of the project: the webhook's patches
// (vck/webhook/json_patch.hpp) and the sandbox's JSON patches both read paths with it.
// Guarantees: "" is the whole document (no tokens); "/a~1b/~0c" is ["a/b", "~c"]; anything
// else (no leading '/', a '~' not followed by '0' or '1') is std::invalid_argument with the
// rule it breaks. escape_json_pointer_token is its inverse for one token.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vck::api {

inline std::vector<std::string> parse_json_pointer(std::string_view p) {
    std::vector<std::string> tokens;
    if (p.empty()) return tokens;
    if (p.front() != '/') throw std::invalid_argument("a JSON pointer must be empty or start with '/'");
    std::string cur;
    for (std::size_t i = 1; i <= p.size(); ++i) {
        if (i == p.size() || p[i] == '/') {
            tokens.push_back(std::move(cur));
            cur.clear();
        } else if (p[i] == '~') {
            if (i + 1 < p.size() && p[i + 1] == '0') cur += '~';
            else if (i + 1 < p.size() && p[i + 1] == '1') cur += '/';
            else throw std::invalid_argument("'~' must be followed by '0' or '1' in a JSON pointer");
            ++i;
        } else {
            cur += p[i];
        }
    }
    return tokens;
}

/// One reference token: "~" -> "~0", "/" -> "~1".
inline std::string escape_json_pointer_token(std::string_view key) {
    std::string out;
    out.reserve(key.size());
    for (char c : key) {
        if (c == '~') out += "~0";
        else if (c == '/') out += "~1";
        else out += c;
    }
    return out;
}

} // namespace vck::api
