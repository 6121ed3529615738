// A CustomResourceDefinition as the apiextensions server and its controllers handle it:
// its validation (names, scope, exactly one storage version, structural schemas, immutable
// group and scope), the status they report once it is served (accepted names, NamesAccepted
// and Established, stored versions), and the establishment of the resources it defines in a
// ResourceRegistry, each version with its schema. Its objects' storage key is
// "<spec.group>/<spec.names.plural>". The store (store_state.hpp) unregisters the resources
// when the CRD itself is erased; deletion.hpp deletes its objects when it starts terminating,
// and convergence.hpp removes its cleanup finalizer once they are gone.
#pragma once

#include <vck/sandbox/validation/crd_schema.hpp>
#include <vck/sandbox/validation/field_error.hpp>
#include <vck/sandbox/validation/resource_registry.hpp>
#include <vck/sandbox/storage/stored_object.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace vck::sandbox {

namespace json = boost::json;

/// Held by a terminating CRD until its objects are gone.
inline constexpr const char* crd_cleanup_finalizer = "customresourcecleanup.apiextensions.k8s.io";

/// Whether r is the customresourcedefinitions resource itself.
inline bool is_crd(const ResourceInfo& r) {
    return r.group == "apiextensions.k8s.io" && r.plural == "customresourcedefinitions";
}

/// Where the objects of the CRD's resource are stored ("/" for a CRD without a spec).
inline std::string crd_storage_key(const json::value& crd) {
    const auto* spec = crd.get_object().if_contains("spec");
    if (!spec || !spec->is_object()) return "/";
    const auto* names = spec->get_object().if_contains("names");
    return stored_object::str(&spec->get_object(), "group") + "/" +
           stored_object::str(names ? names->if_object() : nullptr, "plural");
}

/// The CRD's own errors (`old`: the CRD it replaces, for the immutable fields; null on create).
inline std::vector<FieldError> validate_crd(const json::value& crd, const std::string& name, const json::value* old) {
    using stored_object::str;
    std::vector<FieldError> errs;
    const auto& o = crd.get_object();
    const auto* spec_v = o.if_contains("spec");
    if (!spec_v || !spec_v->is_object()) {
        errs.push_back(field::required("spec", ""));
        return errs;
    }
    const auto& spec = spec_v->get_object();
    auto group = str(&spec, "group");
    if (group.empty()) errs.push_back(field::required("spec.group", ""));
    else if (group.find('.') == std::string::npos)
        errs.push_back(field::invalid("spec.group", json::value(group), "should be a domain with at least one dot"));
    const auto* names_v = spec.if_contains("names");
    const json::object* names = names_v ? names_v->if_object() : nullptr;
    auto plural = str(names, "plural");
    auto kind = str(names, "kind");
    if (plural.empty()) errs.push_back(field::required("spec.names.plural", ""));
    if (kind.empty()) errs.push_back(field::required("spec.names.kind", ""));
    if (!plural.empty() && !group.empty() && name != plural + "." + group)
        errs.push_back(field::invalid("metadata.name", json::value(name), "must be spec.names.plural+\".\"+spec.group"));
    auto scope = str(&spec, "scope");
    if (scope != "Namespaced" && scope != "Cluster")
        errs.push_back(field::not_supported("spec.scope", json::value(scope), {"Cluster", "Namespaced"}));
    const auto* versions = spec.if_contains("versions");
    if (!versions || !versions->is_array() || versions->get_array().empty()) {
        errs.push_back(field::invalid("spec.versions", versions ? *versions : json::value(nullptr),
                                      "must have exactly one version marked as storage version"));
        return errs;
    }
    int storage = 0;
    std::size_t i = 0;
    for (const auto& v : versions->get_array()) {
        std::string path = "spec.versions[" + std::to_string(i++) + "]";
        if (!v.is_object()) {
            errs.push_back(field::required(path, ""));
            continue;
        }
        const auto* st = v.get_object().if_contains("storage");
        if (st && st->is_bool() && st->get_bool()) ++storage;
        if (str(&v.get_object(), "name").empty()) errs.push_back(field::required(path + ".name", ""));
        if (const auto* sch = v.get_object().if_contains("schema"); sch && sch->is_object())
            if (const auto* oa = sch->get_object().if_contains("openAPIV3Schema")) {
                try {
                    (void)StructuralSchema::from_json(*oa);
                } catch (const std::invalid_argument& e) {
                    std::string p = path + ".schema.openAPIV3Schema";
                    errs.push_back(FieldError{"FieldValueInvalid", p, p + ": Invalid value: " + e.what()});
                }
            }
    }
    if (storage != 1)
        errs.push_back(field::invalid("spec.versions", *versions, "must have exactly one version marked as storage version"));
    if (old) {
        const auto* os = old->get_object().if_contains("spec");
        if (os && os->is_object()) {
            if (str(&os->get_object(), "scope") != scope)
                errs.push_back(field::invalid("spec.scope", json::value(scope), "field is immutable"));
            if (str(&os->get_object(), "group") != group)
                errs.push_back(field::invalid("spec.group", json::value(group), "field is immutable"));
        }
    }
    return errs;
}

/// Sets a status condition; its lastTransitionTime changes (to `when`, if given) with its status.
inline void add_crd_condition(json::value& crd, const std::string& type, const std::string& status,
                              const std::string& reason, const std::string& message, const std::string& when = {}) {
    auto& o = crd.get_object();
    auto& st = o["status"];
    if (!st.is_object()) st = json::object();
    auto& conds = st.get_object()["conditions"];
    if (!conds.is_array()) conds = json::array();
    for (auto& c : conds.get_array())
        if (c.is_object() && stored_object::str(&c.get_object(), "type") == type) {
            auto& co = c.get_object();
            if (stored_object::str(&co, "status") != status && !when.empty()) co["lastTransitionTime"] = when;
            co["status"] = status;
            co["reason"] = reason;
            co["message"] = message;
            return;
        }
    json::object c{{"type", type}, {"status", status}, {"reason", reason}, {"message", message}};
    if (!when.empty()) c["lastTransitionTime"] = when;
    conds.get_array().push_back(std::move(c));
}

/// What the apiextensions controllers report once a CRD is served; `now` stamps the conditions.
inline void set_crd_status(json::value& crd, const json::value* old, const std::string& now) {
    auto& o = crd.get_object();
    if (old)
        if (const auto* os = old->get_object().if_contains("status")) o["status"] = *os;
    if (!o["status"].is_object()) o["status"] = json::object();
    const json::value spec = o.at("spec");  // a copy: o's members move as status grows
    json::object accepted = spec.at("names").get_object();
    auto served_infos = resources_from_crd(crd);
    if (!accepted.contains("singular") && !served_infos.empty()) accepted["singular"] = served_infos.front().singular;
    if (!accepted.contains("listKind"))
        accepted["listKind"] = std::string(accepted.at("kind").get_string()) + "List";
    add_crd_condition(crd, "NamesAccepted", "True", "NoConflicts", "no conflicts found", now);
    add_crd_condition(crd, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted", now);
    auto& st = o["status"].get_object();
    st["acceptedNames"] = std::move(accepted);
    json::array stored = st.contains("storedVersions") && st["storedVersions"].is_array()
                             ? st["storedVersions"].get_array()
                             : json::array();
    for (const auto& v : spec.at("versions").get_array()) {
        const auto* s = v.get_object().if_contains("storage");
        if (s && s->is_bool() && s->get_bool()) {
            auto name = v.get_object().at("name");
            if (std::find(stored.begin(), stored.end(), name) == stored.end()) stored.push_back(name);
        }
    }
    st["storedVersions"] = std::move(stored);
}

/// Serves the CRD's resources in `registry`, replacing what it served before.
inline void establish_crd(ResourceRegistry& registry, const json::value& crd) {
    auto infos = resources_from_crd(crd);
    if (infos.empty()) return;
    const auto& versions = crd.at("spec").at("versions").get_array();
    for (auto& info : infos)
        for (const auto& v : versions)
            if (stored_object::str(&v.get_object(), "name") == info.version)
                if (const auto* sch = v.get_object().if_contains("schema"); sch && sch->is_object())
                    if (const auto* oa = sch->get_object().if_contains("openAPIV3Schema"))
                        info.schema = std::make_shared<const StructuralSchema>(StructuralSchema::from_json(*oa));
    registry.remove(infos.front().group, infos.front().plural);
    for (auto& info : infos) registry.add(std::move(info));
}

} // namespace vck::sandbox
