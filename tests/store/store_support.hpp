// What the store's specifications share: the resources they write, JSON from text, a bare
// named object, and the Status of a write the store refuses (a test fails when it is not).
#pragma once

#include <vck/sandbox/storage/object_store.hpp>

#include <doctest.h>

#include <string_view>

namespace vck::sandbox::store_test {

namespace json = boost::json;

inline const ResourceId pods{"", "v1", "pods"};
inline const ResourceId configmaps{"", "v1", "configmaps"};
inline const ResourceId secrets{"", "v1", "secrets"};
inline const ResourceId namespaces{"", "v1", "namespaces"};
inline const ResourceId nodes{"", "v1", "nodes"};
inline const ResourceId pvs{"", "v1", "persistentvolumes"};
inline const ResourceId pvcs{"", "v1", "persistentvolumeclaims"};
inline const ResourceId storageclasses{"storage.k8s.io", "v1", "storageclasses"};
inline const ResourceId crds{"apiextensions.k8s.io", "v1", "customresourcedefinitions"};
inline const ResourceId volumemanagers{"vck.intelai.org", "v1alpha1", "volumemanagers"};
inline const ResourceId widgets{"example.com", "v1", "widgets"};
inline const ResourceId core_events{"", "v1", "events"};
inline const ResourceId events_v1{"events.k8s.io", "v1", "events"};

inline json::value parse(std::string_view text) { return json::parse(text); }

/// metadata.<key> of a stored object, as text.
inline std::string meta_of(const json::value& obj, std::string_view key) {
    return std::string(obj.at("metadata").at(key).as_string());
}

/// `obj` with a spec of one container (what a Pod needs to be valid).
inline json::value runnable(json::value obj) {
    auto& spec = obj.as_object()["spec"];
    if (!spec.is_object()) spec = json::object();
    spec.as_object()["containers"] = json::array{json::object{{"name", "c"}, {"image", "busybox"}}};
    return obj;
}

/// A watch from resourceVersion `rv`.
inline StoreWatchOptions from_rv(std::string rv, bool bookmarks = false) {
    StoreWatchOptions o;
    o.resource_version = std::move(rv);
    o.allow_bookmarks = bookmarks;
    return o;
}

/// {"metadata": {"name": name}}
inline json::value named(std::string_view name) { return json::object{{"metadata", json::object{{"name", name}}}}; }

/// The Status a write is refused with; the test fails if `f` does not throw StoreError.
template <class F>
vck::api::Status refusal(F&& f) {
    try {
        f();
    } catch (const StoreError& e) {
        return e.status();
    }
    FAIL("expected the store to refuse");
    return {};
}

} // namespace vck::sandbox::store_test
