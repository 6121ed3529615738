// The admission plugin StorageObjectInUseProtection of kube-apiserver 1.32 (on by default):
// a PersistentVolumeClaim created gets the finalizer kubernetes.io/pvc-protection, a
// PersistentVolume kubernetes.io/pv-protection, so that neither goes while in use; the
// pvc-protection and pv-protection controllers (storage_protection.hpp) remove them.
#pragma once

#include <vck/sandbox/validation/spec_validation.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <string_view>

namespace vck::sandbox {

inline constexpr std::string_view pvc_protection_finalizer = "kubernetes.io/pvc-protection";
inline constexpr std::string_view pv_protection_finalizer = "kubernetes.io/pv-protection";

namespace storage_protection_detail {

namespace json = boost::json;

/// The finalizer that protects objects of the core resource `plural`, or "" for other kinds.
inline std::string_view finalizer_for(std::string_view group, std::string_view plural) {
    if (!group.empty()) return {};
    if (plural == "persistentvolumeclaims") return pvc_protection_finalizer;
    if (plural == "persistentvolumes") return pv_protection_finalizer;
    return {};
}

inline bool has_finalizer(const json::value& obj, std::string_view f) {
    const auto* fins = spec_validation::at(spec_validation::at(&obj, "metadata"), "finalizers");
    if (!fins || !fins->is_array()) return false;
    const auto& a = fins->get_array();
    return std::any_of(a.begin(), a.end(), [&](const json::value& v) { return v.is_string() && v.get_string() == f; });
}

/// Adds `f` to the object's metadata.finalizers (a finalizers field of another type is left to
/// validation, which refuses it).
inline void add_finalizer(json::value& obj, std::string_view f) {
    auto* md = obj.is_object() ? obj.get_object().if_contains("metadata") : nullptr;
    if (!md || !md->is_object()) return;
    auto& m = md->get_object();
    auto* fins = m.if_contains("finalizers");
    if (!fins || fins->is_null()) {
        m["finalizers"] = json::array{json::string(f)};
        return;
    }
    if (fins->is_array() && !has_finalizer(obj, f)) fins->get_array().emplace_back(json::string(f));
}

} // namespace storage_protection_detail

/// The admission plugin StorageObjectInUseProtection on an object being created (the body as
/// decoded): claims and volumes get their protection finalizer; other kinds are unchanged.
inline void admit_storage_protection(std::string_view group, std::string_view plural, boost::json::value& body) {
    auto f = storage_protection_detail::finalizer_for(group, plural);
    if (!f.empty()) storage_protection_detail::add_finalizer(body, f);
}

} // namespace vck::sandbox
