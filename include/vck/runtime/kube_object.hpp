// KubeObject: what the runtime reads from any object it caches or queues — key, uid,
// resourceVersion, labels, owner uids — whether the object is a typed struct with a
// `.metadata` (api::ObjectMeta) or untyped JSON (boost::json::value, read from "metadata").
// Guarantees: both forms give the same answers for the same object; malformed metadata in
// JSON raises api::DecodeError naming the field ("metadata.labels.app: expected string").
// The *_view / for_each_* forms copy nothing: their string_views point into the object and
// live as long as it does (the store keys and indexes its immutable snapshots with them).
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

/// The object's {namespace, name}, pointing into the object.
struct KeyView {
    std::string_view namespace_;
    std::string_view name;

    friend auto operator<=>(const KeyView&, const KeyView&) = default;
    friend bool operator==(const KeyView&, const KeyView&) = default;
    ObjectKey key() const { return ObjectKey{std::string(namespace_), std::string(name)}; }
};

inline KeyView view_of(const ObjectKey& k) { return KeyView{k.namespace_, k.name}; }

template <KubeObject T>
KeyView key_view_of(const T& obj) {
    if constexpr (TypedObject<T>) return KeyView{obj.metadata.namespace_, obj.metadata.name};
    else return KeyView{detail::meta_string(obj, "namespace"), detail::meta_string(obj, "name")};
}

template <KubeObject T>
std::string_view resource_version_view(const T& obj) {
    if constexpr (TypedObject<T>) return obj.metadata.resourceVersion;
    else return detail::meta_string(obj, "resourceVersion");
}

/// Calls f(key, value) for each label; DecodeError for malformed JSON labels.
template <KubeObject T, class F>
void for_each_label(const T& obj, F&& f) {
    if constexpr (TypedObject<T>) {
        for (const auto& [k, v] : obj.metadata.labels) f(std::string_view(k), std::string_view(v));
    } else {
        const auto* l = detail::meta_field(obj, "labels");
        if (!l) return;
        if (!l->is_object())
            throw api::DecodeError("metadata.labels", std::string("expected object, got ") + api::detail::kind_name(*l));
        for (const auto& kv : l->get_object()) {
            if (!kv.value().is_string())
                throw api::DecodeError("metadata.labels." + std::string(kv.key()),
                                       std::string("expected string, got ") + api::detail::kind_name(kv.value()));
            const auto& v = kv.value().get_string();
            f(std::string_view(kv.key()), std::string_view(v.data(), v.size()));
        }
    }
}

/// Calls f(uid) for each ownerReference, in order; DecodeError for malformed JSON ones.
template <KubeObject T, class F>
void for_each_owner_uid(const T& obj, F&& f) {
    if constexpr (TypedObject<T>) {
        for (const auto& r : obj.metadata.ownerReferences) f(std::string_view(r.uid));
    } else {
        const auto* refs = detail::meta_field(obj, "ownerReferences");
        if (!refs) return;
        if (!refs->is_array())
            throw api::DecodeError("metadata.ownerReferences", std::string("expected array, got ") + api::detail::kind_name(*refs));
        std::size_t i = 0;
        for (const auto& r : refs->get_array()) {
            const auto* ro = r.if_object();
            auto path = [&] { return "metadata.ownerReferences[" + std::to_string(i) + "]"; };
            if (!ro) throw api::DecodeError(path(), std::string("expected object, got ") + api::detail::kind_name(r));
            const auto* uid = ro->if_contains("uid");
            if (!uid || !uid->is_string()) throw api::DecodeError(path() + ".uid", "expected string");
            f(std::string_view(uid->get_string().data(), uid->get_string().size()));
            ++i;
        }
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
        for_each_label(obj, [&](std::string_view k, std::string_view v) { out.emplace(std::string(k), std::string(v)); });
        return out;
    }
}

/// The uids of the object's ownerReferences, in order.
template <KubeObject T>
std::vector<std::string> owner_uids_of(const T& obj) {
    std::vector<std::string> out;
    for_each_owner_uid(obj, [&](std::string_view uid) { out.emplace_back(uid); });
    return out;
}

} // namespace vck::runtime
