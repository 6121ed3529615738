// KubeObject: what the runtime reads from any object it caches or queues — key, uid,
// resourceVersion, labels, owner uids — whether the object is a typed struct with a
// `.metadata` (api::ObjectMeta) or untyped JSON (boost::json::value, read from "metadata").
// Guarantees: both forms give the same answers for the same object; malformed metadata in
// JSON raises api::DecodeError naming the field ("metadata.labels.app: expected string").
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/meta.hpp>
#include <vck/runtime/object_key.hpp>

#include <concepts>
#include <string>
#include <string_view>
#include <vector>

namespace vck::runtime {

template <class T>
concept TypedObject = requires(const T& t) {
    { t.metadata } -> std::convertible_to<const api::ObjectMeta&>;
};

template <class T>
concept KubeObject = TypedObject<T> || std::same_as<T, boost::json::value>;

namespace detail {

/// metadata.<field> as a string: "" when absent or null, DecodeError when of another type.
inline std::string_view meta_string(const boost::json::value& v, std::string_view field) {
    const auto* o = v.if_object();
    if (!o) throw api::DecodeError("", std::string("object is not a JSON object but ") + api::detail::kind_name(v));
    const auto* m = o->if_contains("metadata");
    if (!m || m->is_null()) return {};
    if (!m->is_object()) throw api::DecodeError("metadata", std::string("expected object, got ") + api::detail::kind_name(*m));
    const auto* f = m->get_object().if_contains(field);
    if (!f || f->is_null()) return {};
    if (!f->is_string())
        throw api::DecodeError("metadata." + std::string(field), std::string("expected string, got ") + api::detail::kind_name(*f));
    return {f->get_string().data(), f->get_string().size()};
}

inline const boost::json::value* meta_field(const boost::json::value& v, std::string_view field) {
    const auto* o = v.if_object();
    if (!o) return nullptr;
    const auto* m = o->if_contains("metadata");
    if (!m || !m->is_object()) return nullptr;
    const auto* f = m->get_object().if_contains(field);
    return (f && !f->is_null()) ? f : nullptr;
}

} // namespace detail

template <KubeObject T>
ObjectKey key_of(const T& obj) {
    if constexpr (TypedObject<T>) {
        return ObjectKey{obj.metadata.namespace_, obj.metadata.name};
    } else {
        ObjectKey k{std::string(detail::meta_string(obj, "namespace")), std::string(detail::meta_string(obj, "name"))};
        return k;
    }
}

template <KubeObject T>
std::string uid_of(const T& obj) {
    if constexpr (TypedObject<T>) return obj.metadata.uid;
    else return std::string(detail::meta_string(obj, "uid"));
}

template <KubeObject T>
std::string resource_version_of(const T& obj) {
    if constexpr (TypedObject<T>) return obj.metadata.resourceVersion;
    else return std::string(detail::meta_string(obj, "resourceVersion"));
}

template <KubeObject T>
api::Labels labels_of(const T& obj) {
    if constexpr (TypedObject<T>) {
        return obj.metadata.labels;
    } else {
        api::Labels out;
        const auto* l = detail::meta_field(obj, "labels");
        if (!l) return out;
        if (!l->is_object())
            throw api::DecodeError("metadata.labels", std::string("expected object, got ") + api::detail::kind_name(*l));
        for (const auto& kv : l->get_object()) {
            if (!kv.value().is_string())
                throw api::DecodeError("metadata.labels." + std::string(kv.key()),
                                       std::string("expected string, got ") + api::detail::kind_name(kv.value()));
            out.emplace(std::string(kv.key()), std::string(kv.value().get_string()));
        }
        return out;
    }
}

/// The uids of the object's ownerReferences, in order.
template <KubeObject T>
std::vector<std::string> owner_uids_of(const T& obj) {
    std::vector<std::string> out;
    if constexpr (TypedObject<T>) {
        for (const auto& r : obj.metadata.ownerReferences) out.push_back(r.uid);
    } else {
        const auto* refs = detail::meta_field(obj, "ownerReferences");
        if (!refs) return out;
        if (!refs->is_array())
            throw api::DecodeError("metadata.ownerReferences", std::string("expected array, got ") + api::detail::kind_name(*refs));
        std::size_t i = 0;
        for (const auto& r : refs->get_array()) {
            auto path = "metadata.ownerReferences[" + std::to_string(i++) + "]";
            const auto* ro = r.if_object();
            if (!ro) throw api::DecodeError(path, std::string("expected object, got ") + api::detail::kind_name(r));
            const auto* uid = ro->if_contains("uid");
            if (!uid || !uid->is_string()) throw api::DecodeError(path + ".uid", "expected string");
            out.emplace_back(uid->get_string());
        }
    }
    return out;
}

} // namespace vck::runtime
