// OpenAPI v3 documents, as much as kubectl uses: the /openapi/v3 index of group-versions
// and, per group-version, one path per resource whose write operations carry the
// x-kubernetes-group-version-kind extension and the fieldValidation query parameter, and the
// object schemas of custom resources (their CRD version's openAPIV3Schema with apiVersion,
// kind and metadata, as the apiserver publishes them), so that kubectl explain prints their
// fields and descriptions.
// Guarantees: kubectl finds that the server validates fields itself (fieldValidation=Strict)
// and so needs no schema to validate manifests. Built-in kinds have no schema here (an
// incomplete one would change the strategic merge patches kubectl apply computes from it: it
// uses its compiled-in types instead); no patch operation declares a request body, so kubectl
// apply never takes a custom resource's schema for a strategic merge patch either (it sends a
// JSON merge patch, as for a CRD on a real cluster).
#pragma once

#include <vck/sandbox/validation/resource_registry.hpp>

#include <boost/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace vck::sandbox {

/// One served custom resource kind's schema, from its CRD (spec.versions[].schema).
struct CustomResourceSchema {
    std::string group, version, kind, list_kind;
    boost::json::value open_api_v3;  // schema.openAPIV3Schema
};

/// The name a schema has in components.schemas: the group reversed, version, kind
/// ("org.intelai.vck.v1alpha1.VolumeManager"), as the apiserver names CRD schemas.
inline std::string openapi_schema_name(const std::string& group, const std::string& version, const std::string& kind) {
    std::string reversed;
    std::size_t end = group.size();
    while (end != std::string::npos && end > 0) {
        auto dot = group.rfind('.', end - 1);
        std::size_t begin = dot == std::string::npos ? 0 : dot + 1;
        if (!reversed.empty()) reversed += ".";
        reversed += group.substr(begin, end - begin);
        if (dot == std::string::npos) break;
        end = dot;
    }
    return (reversed.empty() ? "" : reversed + ".") + version + "." + kind;
}

namespace openapi_detail {

inline boost::json::object type_meta_property(const char* which) {
    if (std::string_view(which) == "apiVersion")
        return {{"type", "string"},
                {"description", "APIVersion defines the versioned schema of this representation of an object. Servers "
                                "should convert recognized schemas to the latest internal value, and may reject "
                                "unrecognized values. More info: https://git.k8s.io/community/contributors/devel/"
                                "sig-architecture/api-conventions.md#resources"}};
    return {{"type", "string"},
            {"description", "Kind is a string value representing the REST resource this object represents. Servers may "
                            "infer this from the endpoint the client submits requests to. Cannot be updated. In "
                            "CamelCase. More info: https://git.k8s.io/community/contributors/devel/"
                            "sig-architecture/api-conventions.md#types-kinds"}};
}

inline boost::json::array gvk_extension(const std::string& group, const std::string& version, const std::string& kind) {
    return {boost::json::object{{"group", group}, {"kind", kind}, {"version", version}}};
}

/// The published object schema: the CRD's, with apiVersion, kind and metadata described as
/// for every object (metadata as an object: ObjectMeta's own schema is not published here).
inline boost::json::object object_schema(const CustomResourceSchema& c) {
    boost::json::object s = c.open_api_v3.is_object() ? c.open_api_v3.get_object() : boost::json::object{};
    auto& props = s["properties"];
    if (!props.is_object()) props = boost::json::object{};
    auto& p = props.get_object();
    p["apiVersion"] = type_meta_property("apiVersion");
    p["kind"] = type_meta_property("kind");
    p["metadata"] = boost::json::object{
        {"type", "object"},
        {"description", "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/"
                        "sig-architecture/api-conventions.md#metadata"}};
    if (!s.contains("type")) s["type"] = "object";
    s["x-kubernetes-group-version-kind"] = gvk_extension(c.group, c.version, c.kind);
    return s;
}

inline boost::json::object list_schema(const CustomResourceSchema& c, const std::string& item_ref) {
    return {{"description", c.list_kind + " is a list of " + c.kind},
            {"type", "object"},
            {"required", boost::json::array{"items"}},
            {"properties",
             {{"apiVersion", type_meta_property("apiVersion")},
              {"items",
               {{"type", "array"},
                {"description", "List of " + c.kind + ". More info: https://git.k8s.io/community/contributors/devel/"
                                                      "sig-architecture/api-conventions.md"},
                {"items", {{"$ref", item_ref}}}}},
              {"kind", type_meta_property("kind")},
              {"metadata",
               {{"type", "object"},
                {"description", "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/"
                                "sig-architecture/api-conventions.md#types-kinds"}}}}},
            {"x-kubernetes-group-version-kind", gvk_extension(c.group, c.version, c.list_kind)}};
}

} // namespace openapi_detail

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
/// `schemas`: the custom resources' schemas (those of other group-versions are skipped).
inline std::optional<boost::json::object> openapi_v3_document(const std::vector<ResourceInfo>& all,
                                                               const std::string& group, const std::string& version,
                                                               const std::vector<CustomResourceSchema>& schemas = {}) {
    boost::json::object paths;
    boost::json::object components;
    for (const auto& c : schemas) {
        if (c.group != group || c.version != version) continue;
        auto name = openapi_schema_name(c.group, c.version, c.kind);
        components[name] = openapi_detail::object_schema(c);
        components[openapi_schema_name(c.group, c.version, c.list_kind)] =
            openapi_detail::list_schema(c, "#/components/schemas/" + name);
    }
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
        // An object with a published schema is referenced from its operations' answers and
        // from the bodies of create and replace (never of patch: see the guarantees).
        auto schema_name = openapi_schema_name(r.group, r.version, r.kind);
        const bool has_schema = components.contains(schema_name);
        auto op = [&](const char* id, bool body = false) {
            boost::json::object ok{{"description", "OK"}};
            boost::json::object o{{"operationId", std::string(id) + r.kind},
                                  {"x-kubernetes-group-version-kind", gvk},
                                  {"parameters", params}};
            if (has_schema) {
                boost::json::object content{
                    {"application/json", {{"schema", {{"$ref", "#/components/schemas/" + schema_name}}}}}};
                ok["content"] = content;
                if (body) o["requestBody"] = boost::json::object{{"content", content}, {"required", true}};
            }
            o["responses"] = boost::json::object{{"200", ok}};
            return o;
        };
        std::string base = "/" + openapi_gv_path(r.group, r.version) + (r.namespaced ? "/namespaces/{namespace}/" : "/") +
                           r.plural;
        paths[base] = boost::json::object{{"post", op("create", true)}};
        paths[base + "/{name}"] = boost::json::object{{"get", op("read")}, {"put", op("replace", true)}, {"patch", op("patch")}};
        if (r.has_status())
            paths[base + "/{name}/status"] =
                boost::json::object{{"put", op("replaceStatus", true)}, {"patch", op("patchStatus")}};
    }
    if (!any) return std::nullopt;
    return boost::json::object{{"openapi", "3.0.0"},
                               {"info", {{"title", "Kubernetes (vck sandbox)"}, {"version", "v1.32.0"}}},
                               {"paths", std::move(paths)},
                               {"components", {{"schemas", std::move(components)}}}};
}

} // namespace vck::sandbox
