// ApiPath: what a kube-apiserver URL names, parsed the way the real server's RequestInfo
// does it: discovery documents (/api, /apis/<g>/<v>), or a resource collection / object /
// subresource, namespaced or cluster-wide, optionally under the legacy /watch/ prefix.
// Guarantees: "namespaces/<n>/status" and "namespaces/<n>/finalize" are the namespace's
// own subresources; any other "namespaces/<n>/<r>" scopes resource <r> to namespace <n>.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

struct ApiPath {
    enum class Kind {
        CoreVersions,   // /api
        GroupList,      // /apis
        Group,          // /apis/<g>
        ResourceList,   // /api/v1, /apis/<g>/<v>
        Resource,       // a collection, an object or a subresource
    };
    Kind kind = Kind::Resource;
    std::string group;        // "" for the core group
    std::string version;
    std::string namespace_;   // "" for cluster-scoped paths or cross-namespace lists
    bool namespace_scoped = false;  // the path carried /namespaces/<ns>/ before the resource
    std::string resource;     // plural
    std::string name;         // "" for a collection
    std::string subresource;  // "status", "log", "binding", ...
    bool watch_prefix = false;  // legacy /watch/ path

    /// "pods" or "pods/status": how faults and RBAC name what is addressed.
    std::string resource_with_sub() const {
        return subresource.empty() ? resource : resource + "/" + subresource;
    }
};

namespace detail {
inline std::vector<std::string> split_path(std::string_view path) {
    std::vector<std::string> parts;
    std::size_t i = 0;
    while (i < path.size()) {
        auto j = path.find('/', i);
        if (j == std::string_view::npos) j = path.size();
        if (j > i) parts.emplace_back(path.substr(i, j - i));
        i = j + 1;
    }
    return parts;
}
} // namespace detail

/// Parses a (percent-decoded) URL path without its query; nullopt for paths outside the API.
inline std::optional<ApiPath> parse_api_path(std::string_view path) {
    auto parts = detail::split_path(path);
    ApiPath p;
    std::size_t i = 0;
    if (parts.empty()) return std::nullopt;
    if (parts[0] == "api") {
        if (parts.size() == 1) {
            p.kind = ApiPath::Kind::CoreVersions;
            return p;
        }
        p.version = parts[1];
        i = 2;
    } else if (parts[0] == "apis") {
        if (parts.size() == 1) {
            p.kind = ApiPath::Kind::GroupList;
            return p;
        }
        p.group = parts[1];
        if (parts.size() == 2) {
            p.kind = ApiPath::Kind::Group;
            return p;
        }
        p.version = parts[2];
        i = 3;
    } else {
        return std::nullopt;
    }
    if (i == parts.size()) {
        p.kind = ApiPath::Kind::ResourceList;
        return p;
    }
    if (parts[i] == "watch") {
        p.watch_prefix = true;
        ++i;
        if (i == parts.size()) return std::nullopt;
    }
    std::vector<std::string> rest(parts.begin() + static_cast<std::ptrdiff_t>(i), parts.end());
    if (rest.size() >= 2 && rest[0] == "namespaces") {
        bool own_sub = rest.size() == 3 && (rest[2] == "status" || rest[2] == "finalize");
        if (rest.size() > 2 && !own_sub) {
            p.namespace_ = rest[1];
            p.namespace_scoped = true;
            rest.erase(rest.begin(), rest.begin() + 2);
        }
    }
    if (rest.empty() || rest.size() > 3) return std::nullopt;
    p.kind = ApiPath::Kind::Resource;
    p.resource = rest[0];
    if (rest.size() > 1) p.name = rest[1];
    if (rest.size() > 2) p.subresource = rest[2];
    return p;
}

} // namespace vck::sandbox
