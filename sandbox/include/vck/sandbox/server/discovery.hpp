// Discovery documents, built from the ResourceRegistry the way kube-apiserver serves its
// legacy (unaggregated) discovery: /api (APIVersions), /apis (APIGroupList), /apis/<g>
// (APIGroup) and /api/v1 or /apis/<g>/<v> (APIResourceList, subresources as "pods/status").
// Guarantees: every served group/version appears, versions in the order first registered,
// the first one preferred; kubectl and client-go discovery accept these documents as is.
#pragma once

#include <vck/sandbox/validation/resource_registry.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace vck::sandbox {

namespace discovery_detail {

inline boost::json::array strings(const std::vector<std::string>& v) {
    boost::json::array a;
    for (const auto& s : v) a.emplace_back(s);
    return a;
}

/// Groups (not core) with their versions in registration order.
inline std::vector<std::pair<std::string, std::vector<std::string>>> groups(const std::vector<ResourceInfo>& all) {
    std::vector<std::pair<std::string, std::vector<std::string>>> out;
    for (const auto& r : all) {
        if (r.group.empty()) continue;
        auto it = std::find_if(out.begin(), out.end(), [&](const auto& g) { return g.first == r.group; });
        if (it == out.end()) {
            out.push_back({r.group, {}});
            it = out.end() - 1;
        }
        if (std::find(it->second.begin(), it->second.end(), r.version) == it->second.end())
            it->second.push_back(r.version);
    }
    return out;
}

inline boost::json::object group_json(const std::string& name, const std::vector<std::string>& versions) {
    boost::json::array vs;
    for (const auto& v : versions) vs.push_back({{"groupVersion", name + "/" + v}, {"version", v}});
    boost::json::object g{{"name", name}, {"versions", vs}};
    if (!versions.empty()) g["preferredVersion"] = {{"groupVersion", name + "/" + versions.front()},
                                                    {"version", versions.front()}};
    return g;
}

} // namespace discovery_detail

/// GET /api
inline boost::json::object core_versions(const std::string& server_address) {
    return {{"kind", "APIVersions"},
            {"versions", boost::json::array{"v1"}},
            {"serverAddressByClientCIDRs",
             boost::json::array{{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", server_address}}}}};
}

/// GET /apis
inline boost::json::object group_list(const std::vector<ResourceInfo>& all) {
    boost::json::array gs;
    for (const auto& [name, versions] : discovery_detail::groups(all))
        gs.push_back(discovery_detail::group_json(name, versions));
    return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", gs}};
}

/// GET /apis/<group>; nullopt when no version of the group is served.
inline std::optional<boost::json::object> group_document(const std::vector<ResourceInfo>& all, const std::string& group) {
    for (const auto& [name, versions] : discovery_detail::groups(all))
        if (name == group) {
            auto g = discovery_detail::group_json(name, versions);
            g["kind"] = "APIGroup";
            g["apiVersion"] = "v1";
            return g;
        }
    return std::nullopt;
}

/// GET /api/v1 or /apis/<group>/<version>; nullopt when nothing is served there.
inline std::optional<boost::json::object> resource_list(const std::vector<ResourceInfo>& all, const std::string& group,
                                                        const std::string& version) {
    using discovery_detail::strings;
    boost::json::array rs;
    bool any = false;
    for (const auto& r : all) {
        if (r.group != group || r.version != version) continue;
        any = true;
        boost::json::object o{{"name", r.plural},
                              {"singularName", r.singular},
                              {"namespaced", r.namespaced},
                              {"kind", r.kind},
                              {"verbs", strings(r.verbs)}};
        if (!r.short_names.empty()) o["shortNames"] = strings(r.short_names);
        if (!r.categories.empty()) o["categories"] = strings(r.categories);
        o["storageVersionHash"] = "";
        rs.push_back(std::move(o));
        for (const auto& sub : r.subresources) {
            std::vector<std::string> verbs;
            if (sub == "status") verbs = {"get", "patch", "update"};
            else if (sub == "log") verbs = {"get"};
            else if (sub == "binding") verbs = {"create"};
            else if (sub == "finalize") verbs = {"update"};
            else if (sub == "scale") verbs = {"get", "patch", "update"};
            else if (sub == "token") verbs = {"create"};
            else verbs = {"get"};
            std::string kind = sub == "log" ? "Pod" : sub == "binding" ? "Binding" : sub == "scale" ? "Scale"
                               : sub == "token" ? "TokenRequest" : r.kind;
            boost::json::object entry{{"name", r.plural + "/" + sub},
                                      {"singularName", ""},
                                      {"namespaced", r.namespaced}};
            // A subresource of another group's kind names it, as kube-apiserver's discovery does.
            if (sub == "scale") {
                entry["group"] = "autoscaling";
                entry["version"] = "v1";
            } else if (sub == "token") {
                entry["group"] = "authentication.k8s.io";
                entry["version"] = "v1";
            }
            entry["kind"] = kind;
            entry["verbs"] = strings(verbs);
            rs.push_back(std::move(entry));
        }
    }
    if (!any) return std::nullopt;
    return boost::json::object{{"kind", "APIResourceList"},
                               {"apiVersion", "v1"},
                               {"groupVersion", group.empty() ? version : group + "/" + version},
                               {"resources", rs}};
}

} // namespace vck::sandbox
