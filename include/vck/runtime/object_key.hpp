// ObjectKey: the identity of an object inside one resource type, {namespace, name}, with
// client-go's string form "ns/name" ("name" alone for cluster-scoped objects).
// Guarantees: parse(format(k)) == k for every valid key; totally ordered and hashable, so it
// serves as a map key and as a work-queue key; malformed strings raise a message naming them.
#pragma once

#include <compare>
#include <cstddef>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace vck::runtime {

struct ObjectKey {
    std::string namespace_;  // empty for cluster-scoped objects
    std::string name;

    friend auto operator<=>(const ObjectKey&, const ObjectKey&) = default;
    friend bool operator==(const ObjectKey&, const ObjectKey&) = default;

    /// "ns/name", or "name" when the namespace is empty.
    std::string str() const { return namespace_.empty() ? name : namespace_ + "/" + name; }

    /// Reads "ns/name" or "name". Throws std::invalid_argument for "", "a/b/c", "/x", "x/".
    static ObjectKey parse(std::string_view s) {
        auto bad = [&](const char* why) {
            return std::invalid_argument("invalid object key \"" + std::string(s) + "\": " + why);
        };
        if (s.empty()) throw bad("empty");
        auto slash = s.find('/');
        if (slash == std::string_view::npos) return ObjectKey{"", std::string(s)};
        if (s.find('/', slash + 1) != std::string_view::npos) throw bad("more than one '/'");
        if (slash == 0) throw bad("empty namespace before '/'");
        if (slash + 1 == s.size()) throw bad("empty name after '/'");
        return ObjectKey{std::string(s.substr(0, slash)), std::string(s.substr(slash + 1))};
    }

    friend std::ostream& operator<<(std::ostream& os, const ObjectKey& k) { return os << k.str(); }
};

inline std::string format(const ObjectKey& k) { return k.str(); }

/// The hash of the key {namespace_, name}: std::hash<ObjectKey>'s, and the store's for the
/// views it keys objects by (equal strings, equal hashes, owned or viewed).
inline std::size_t hash_key(std::string_view namespace_, std::string_view name) noexcept {
    std::size_t h = std::hash<std::string_view>{}(namespace_);
    // The separator keeps {"a","bc"} and {"ab","c"} apart.
    return h ^ (std::hash<std::string_view>{}(name) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

} // namespace vck::runtime

template <>
struct std::hash<vck::runtime::ObjectKey> {
    std::size_t operator()(const vck::runtime::ObjectKey& k) const noexcept {
        return vck::runtime::hash_key(k.namespace_, k.name);
    }
};
