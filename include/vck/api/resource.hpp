// Where a kind of object lives in the API: group, version, plural resource name, kind and
// scope, and the REST paths built from them. A typed API struct names its own with a static
// `resource` member; untyped code builds a ResourceType by hand (or from discovery).
#pragma once

#include <concepts>
#include <string>
#include <string_view>

namespace vck::api {

struct ResourceType {
    // A constructor, not aggregate init: see request_options.hpp on GCC 12 and co_await.
    constexpr ResourceType() = default;
    constexpr ResourceType(std::string_view g, std::string_view v, std::string_view p, std::string_view k,
                           bool ns = true)
        : group(g), version(v), plural(p), kind(k), namespaced(ns) {}

    std::string_view group;     // "" for the core group
    std::string_view version;   // "v1", "v1alpha1"
    std::string_view plural;    // "pods"
    std::string_view kind;      // "Pod"
    bool namespaced = true;

    /// "v1" for the core group, "group/version" otherwise.
    std::string api_version() const {
        return group.empty() ? std::string(version) : std::string(group) + "/" + std::string(version);
    }
    /// "/api/v1" or "/apis/<group>/<version>".
    std::string group_path() const {
        return group.empty() ? "/api/" + std::string(version)
                             : "/apis/" + std::string(group) + "/" + std::string(version);
    }
    /// The collection path: namespaced resources with an empty namespace mean all namespaces.
    std::string collection_path(std::string_view ns) const {
        std::string p = group_path();
        if (namespaced && !ns.empty()) {
            p += "/namespaces/";
            p += ns;
        }
        p += "/";
        p += plural;
        return p;
    }
    /// The object path, optionally with a subresource ("status", "log").
    std::string object_path(std::string_view ns, std::string_view name, std::string_view sub = {}) const {
        std::string p = collection_path(namespaced ? ns : std::string_view{});
        p += "/";
        p += name;
        if (!sub.empty()) {
            p += "/";
            p += sub;
        }
        return p;
    }
    friend bool operator==(const ResourceType&, const ResourceType&) = default;
};

/// A typed API object: it names its ResourceType and has metadata.
template <class T>
concept ApiObject = requires(T t) {
    { T::resource } -> std::convertible_to<ResourceType>;
    t.metadata;
};

} // namespace vck::api
