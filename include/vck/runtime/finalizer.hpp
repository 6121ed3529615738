// Finalizer helper with kube-rs semantics: reconcile(Apply) runs only while the object carries
// our finalizer (it is added first, before any apply); once the object is being deleted,
// reconcile(Cleanup) runs and the finalizer is removed only after cleanup succeeded. Every
// change is a JSON patch guarded by a `test` op, so a concurrent writer (another controller's
// finalizer) makes our patch fail (and the key retry) instead of being clobbered.
#pragma once

#include <vck/client/client.hpp>
#include <vck/runtime/reconciler.hpp>
#include <vck/runtime/reflector.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace vck::runtime {

enum class FinalizerEvent { Apply, Cleanup };

template <KubeObject T>
using FinalizerReconcile = std::function<asio::awaitable<Result>(FinalizerEvent, std::shared_ptr<const T>)>;

namespace detail {

template <KubeObject T>
std::vector<std::string> finalizers_of(const T& o) {
    if constexpr (TypedObject<T>) {
        return o.metadata.finalizers;
    } else {
        std::vector<std::string> out;
        const auto* f = meta_field(o, "finalizers");
        if (!f) return out;
        if (!f->is_array()) throw api::DecodeError("metadata.finalizers", "expected array");
        for (const auto& s : f->get_array()) {
            if (!s.is_string()) throw api::DecodeError("metadata.finalizers", "expected an array of strings");
            out.emplace_back(s.get_string());
        }
        return out;
    }
}

template <KubeObject T>
bool being_deleted(const T& o) {
    if constexpr (TypedObject<T>) return !o.metadata.deletionTimestamp.empty();
    else return meta_field(o, "deletionTimestamp") != nullptr;
}

} // namespace detail

/// The JSON patch that appends `name` to the finalizers, valid only against `current`.
template <KubeObject T>
boost::json::value add_finalizer_patch(const T& obj, std::string_view name) {
    auto current = detail::finalizers_of(obj);
    boost::json::array patch;
    if (current.empty()) {
        // No list to test against: pin the whole object's version instead.
        patch.push_back({{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", resource_version_of(obj)}});
        patch.push_back({{"op", "add"}, {"path", "/metadata/finalizers"}, {"value", boost::json::array{name}}});
    } else {
        boost::json::array cur;
        for (const auto& f : current) cur.emplace_back(f);
        patch.push_back({{"op", "test"}, {"path", "/metadata/finalizers"}, {"value", std::move(cur)}});
        patch.push_back({{"op", "add"}, {"path", "/metadata/finalizers/-"}, {"value", name}});
    }
    return patch;
}

/// The JSON patch that removes `name` at its index, valid only if it is still there.
template <KubeObject T>
boost::json::value remove_finalizer_patch(const T& obj, std::string_view name) {
    auto current = detail::finalizers_of(obj);
    auto it = std::find(current.begin(), current.end(), name);
    if (it == current.end())
        throw std::invalid_argument("finalizer \"" + std::string(name) + "\" is not on " + key_of(obj).str());
    auto path = "/metadata/finalizers/" + std::to_string(it - current.begin());
    boost::json::array patch;
    patch.push_back({{"op", "test"}, {"path", path}, {"value", name}});
    patch.push_back({{"op", "remove"}, {"path", path}});
    return patch;
}

/// One reconcile step under finalizer `name` (e.g. "example.com/cleanup"). Returns done after
/// adding the finalizer (the patch's watch event brings the object back), the cleanup's or
/// apply's result otherwise. Exceptions from `reconcile` or the patches propagate.
template <KubeObject T>
asio::awaitable<Result> finalizer(client::Client& c, api::ResourceType rt, std::string name,
                                  std::shared_ptr<const T> obj, FinalizerReconcile<T> reconcile) {
    if (name.empty()) throw std::invalid_argument("finalizer: empty finalizer name");
    if (!obj) co_return Result::done();  // gone: nothing of ours can be left
    auto list = detail::finalizers_of(*obj);
    bool ours = std::find(list.begin(), list.end(), name) != list.end();
    auto key = key_of(*obj);
    if (!detail::being_deleted(*obj)) {
        if (!ours) {
            auto patch = add_finalizer_patch(*obj, name);
            co_await c.patch(rt, key.namespace_, key.name, client::PatchType::Json, std::move(patch));
            co_return Result::done();
        }
        co_return co_await reconcile(FinalizerEvent::Apply, obj);
    }
    if (!ours) co_return Result::done();  // being deleted and already cleaned up by us
    Result r = co_await reconcile(FinalizerEvent::Cleanup, obj);
    auto patch = remove_finalizer_patch(*obj, name);
    co_await c.patch(rt, key.namespace_, key.name, client::PatchType::Json, std::move(patch));
    co_return r;
}

} // namespace vck::runtime
