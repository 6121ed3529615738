// OpenAPI v3 documents, just enough for kubectl: the /openapi/v3 index of group-versions
// and, per group-version, one path per resource whose write operations carry the
// x-kubernetes-group-version-kind extension and the fieldValidation query parameter.
// Guarantee: kubectl finds that the server validates fields itself (fieldValidation=Strict)
// and so needs no schema to validate manifests; the documents hold no object schemas, so
// kubectl falls back to its compiled-in knowledge for strategic merge patches.
#pragma once

#include <vck/testing/resource_registry.hpp>

#include <boost/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace vck::testing {

/// The path of a group-version's document under /openapi/v3: "api/v1", "apis/<g>/<v>".
inline std::string openapi_gv_path(const std::string& group, const std::string& version) {
    return group.empty() ? "api/" + version : "apis/" + group + "/" + version;
}

/// GET /openapi/v3
inline boost::json::object openapi_v3_index(const std::vector<ResourceInfo>& all) {
    boost::json::object paths;
    for (const auto& r : all) {
        auto p = openapi_gv_path(r.group, r.version);
        paths[p] = boost::json::object{{"serverRelativeURL", "/openapi/v3/" + p}};
    }
    return {{"paths", std::move(paths)}};
}

/// GET /openapi/v3/api/v1 or /openapi/v3/apis/<g>/<v>; nullopt when nothing is served there.
inline std::optional<boost::json::object> openapi_v3_document(const std::vector<ResourceInfo>& all,
                                                               const std::string& group, const std::string& version) {
    boost::json::object paths;
    bool any = false;
    const boost::json::array params{
        {{"name", "fieldValidation"}, {"in", "query"}, {"schema", {{"type", "string"}}},
         {"description", "Ignore, Warn or Strict: how the server treats unknown or duplicate fields"}},
        {{"name", "dryRun"}, {"in", "query"}, {"schema", {{"type", "string"}}}},
        {{"name", "fieldManager"}, {"in", "query"}, {"schema", {{"type", "string"}}}}};
    for (const auto& r : all) {
        if (r.group != group || r.version != version) continue;
        any = true;
        boost::json::object gvk{{"group", r.group}, {"version", r.version}, {"kind", r.kind}};
        auto op = [&](const char* id) {
            return boost::json::object{{"operationId", std::string(id) + r.kind},
                                       {"x-kubernetes-group-version-kind", gvk},
                                       {"parameters", params},
                                       {"responses", {{"200", {{"description", "OK"}}}}}};
        };
        std::string base = "/" + openapi_gv_path(r.group, r.version) + (r.namespaced ? "/namespaces/{namespace}/" : "/") +
                           r.plural;
        paths[base] = boost::json::object{{"post", op("create")}};
        paths[base + "/{name}"] = boost::json::object{{"put", op("replace")}, {"patch", op("patch")}};
        if (r.has_status())
            paths[base + "/{name}/status"] = boost::json::object{{"put", op("replaceStatus")}, {"patch", op("patchStatus")}};
    }
    if (!any) return std::nullopt;
    return boost::json::object{{"openapi", "3.0.0"},
                               {"info", {{"title", "Kubernetes (vck sandbox)"}, {"version", "v1.32.0"}}},
                               {"paths", std::move(paths)},
                               {"components", {{"schemas", boost::json::object{}}}}};
}

} // namespace vck::testing
