// ObjectMetaValidation: what kube-apiserver 1.32 checks in every object's metadata besides
// its name (ValidateObjectMeta): label keys and values, annotation keys and their total size,
// owner references, finalizer names. validate_object_meta(obj, rules) returns FieldErrors
// worded and pathed as apimachinery words them, in its order (labels, annotations,
// ownerReferences, finalizers); an object without metadata, or with parts of another type
// than the schema says (refused earlier, when decoded), yields none here.
// Kinds differ in one rule: the core API group's validation (pods, nodes, leases, storage
// classes, ...) also refuses a finalizer name without a '/' unless it is one of Kubernetes'
// own; CRDs, webhook configurations and custom resources accept it.
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/sandbox/validation/field_error.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

/// The total size of an object's annotations (keys and values) the server accepts.
inline constexpr std::size_t total_annotation_size_limit = 256 * 1024;

struct ObjectMetaRules {
    /// Finalizer names without a '/' must be Kubernetes' own (kubernetes, orphan,
    /// foregroundDeletion): true for the kinds core validation covers.
    bool kube_finalizer_names = true;
};

inline std::vector<FieldError> validate_object_meta(const boost::json::value& obj, ObjectMetaRules rules = {}) {
    std::vector<FieldError> errs;
    const auto* o = obj.if_object();
    const auto* mdv = o ? o->if_contains("metadata") : nullptr;
    const auto* md = mdv ? mdv->if_object() : nullptr;
    if (!md) return errs;
    auto value = [](std::string_view s) { return boost::json::value(boost::json::string(s)); };

    if (const auto* labels = md->if_contains("labels"); labels && labels->is_object()) {
        std::vector<std::pair<std::string_view, std::string_view>> sorted;  // reported in a stable order
        for (const auto& [k, v] : labels->get_object())
            sorted.emplace_back(std::string_view(k), v.is_string() ? std::string_view(v.get_string()) : "");
        std::sort(sorted.begin(), sorted.end());
        for (const auto& [k, v] : sorted) {
            if (auto p = api::qualified_name_problem(k); !p.empty())
                errs.push_back(field::invalid("metadata.labels", value(k), p));
            if (auto p = api::label_value_problem(v); !p.empty())
                errs.push_back(field::invalid("metadata.labels", value(v), p));
        }
    }

    if (const auto* annotations = md->if_contains("annotations"); annotations && annotations->is_object()) {
        std::vector<std::string_view> keys;
        std::size_t total = 0;
        for (const auto& [k, v] : annotations->get_object()) {
            keys.push_back(k);
            total += k.size() + (v.is_string() ? v.get_string().size() : 0);
        }
        std::sort(keys.begin(), keys.end());
        for (auto k : keys) {
            // The server checks the key lowercased: annotation keys may hold capitals in their prefix.
            std::string lower(k);
            std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
            if (auto p = api::qualified_name_problem(lower); !p.empty())
                errs.push_back(field::invalid("metadata.annotations", value(k), p));
        }
        if (total > total_annotation_size_limit)
            errs.push_back(field::too_long("metadata.annotations", static_cast<std::int64_t>(total_annotation_size_limit)));
    }

    if (const auto* refs = md->if_contains("ownerReferences"); refs && refs->is_array()) {
        // Paths name the list, not the entry (validateOwnerReference is given the list's path).
        const std::string at = "metadata.ownerReferences";
        std::string first_controller;
        for (const auto& r : refs->get_array()) {
            const auto* ref = r.if_object();
            if (!ref) continue;
            auto str = [&](const char* key) {
                const auto* v = ref->if_contains(key);
                return v && v->is_string() ? std::string(v->get_string()) : std::string();
            };
            auto api_version = str("apiVersion"), kind = str("kind"), name = str("name");
            auto slash = api_version.find('/');
            auto version = slash == std::string::npos ? api_version : api_version.substr(slash + 1);
            if (version.empty()) errs.push_back(field::invalid(at + ".apiVersion", value(api_version), "version must not be empty"));
            if (kind.empty()) errs.push_back(field::invalid(at + ".kind", value(kind), "kind must not be empty"));
            if (name.empty()) errs.push_back(field::invalid(at + ".name", value(name), "name must not be empty"));
            if (str("uid").empty()) errs.push_back(field::invalid(at + ".uid", value(""), "uid must not be empty"));
            if (api_version == "v1" && kind == "Event")
                errs.push_back(field::invalid(at, r, "/v1, Kind=Event is disallowed from being an owner"));
            if (const auto* c = ref->if_contains("controller"); c && c->is_bool() && c->get_bool()) {
                if (first_controller.empty()) first_controller = kind + "/" + name;
                else
                    errs.push_back(field::invalid(at, *refs,
                                                  "Only one reference can have Controller set to true. Found \"true\" in "
                                                  "references for " + first_controller + " and " + kind + "/" + name));
            }
        }
    }

    if (const auto* fins = md->if_contains("finalizers"); fins && fins->is_array()) {
        bool orphan = false, foreground = false;
        for (std::size_t i = 0; i < fins->get_array().size(); ++i) {
            const auto& f = fins->get_array()[i];
            if (!f.is_string()) continue;
            std::string_view name = f.get_string();
            if (auto p = api::qualified_name_problem(name); !p.empty())
                errs.push_back(field::invalid("metadata.finalizers", f, p));
            orphan = orphan || name == "orphan";
            foreground = foreground || name == "foregroundDeletion";
            static constexpr std::array<std::string_view, 3> standard{"kubernetes", "orphan", "foregroundDeletion"};
            if (rules.kube_finalizer_names && name.find('/') == std::string_view::npos &&
                std::find(standard.begin(), standard.end(), name) == standard.end())
                errs.push_back(field::invalid("metadata.finalizers[" + std::to_string(i) + "]", f,
                                              "name is neither a standard finalizer name nor is it fully qualified"));
        }
        if (orphan && foreground) {
            std::string list = "[]string{";  // the value as Go prints a []string
            for (std::size_t i = 0; i < fins->get_array().size(); ++i) {
                const auto& f = fins->get_array()[i];
                list += (i ? ", " : "") + go::quote(f.is_string() ? std::string_view(f.get_string()) : "");
            }
            list += "}";
            errs.push_back(field::detail::make(
                "FieldValueInvalid", "metadata.finalizers",
                "Invalid value: " + list + ": finalizer orphan and foregroundDeletion cannot be both set"));
        }
    }
    return errs;
}

} // namespace vck::sandbox
