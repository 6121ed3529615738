// Finalizer helper with kube-rs semantics: reconcile(Apply) runs only while the object carries
// our finalizer (it is added first, before any apply, and apply then runs on the object the
// patch returned: a controller whose predicates ignore metadata-only changes would otherwise
// wait for the next event); once the object is being deleted,
// reconcile(Cleanup) runs and the finalizer is removed only after cleanup is done. Cleanup
// says "done" with Result::done(); any other Result (requeue, requeue_after) means "not done
// yet, come back": the finalizer stays, so the object stays, and the key is requeued as the
// Result says (e.g. while pods that remove data are still running). An exception is a failure,
// retried with backoff; the finalizer stays too. Both sides must be idempotent: either may run
// again for a state already handled. Every change is a JSON patch guarded by a `test` op, so a
// concurrent writer (another controller's finalizer) makes our patch fail (and the key retry)
// instead of being clobbered. The patches go through any JsonPatcher: client::Client, or
// sandbox::MemoryListWatch in tests, so this header needs no I/O types.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/resource.hpp>
#include <vck/client/request_options.hpp>
#include <vck/runtime/kube_object.hpp>
#include <vck/runtime/reconciler.hpp>

#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <concepts>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace vck::runtime {

namespace asio = boost::asio;

/// Whatever sends a JSON patch to an object and answers the patched object:
/// `json::value now = co_await p.patch(rt, ns, name, PatchType::Json, patch)`.
template <class P>
concept JsonPatcher = requires(P& p, const api::ResourceType& rt, std::string_view s, boost::json::value v) {
    { p.patch(rt, s, s, client::PatchType::Json, std::move(v)) } -> std::same_as<asio::awaitable<boost::json::value>>;
};

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

/// One reconcile step under finalizer `name` (e.g. "example.com/cleanup"). Returns the apply's
/// result (after adding the finalizer if it was missing), a cleanup's that is not done, or done
/// once the finalizer is removed (or was not there on an object being deleted). Exceptions
/// from `reconcile` or the patches propagate.
template <KubeObject T, JsonPatcher Patcher>
asio::awaitable<Result> finalizer(Patcher& c, api::ResourceType rt, std::string name,
                                  std::shared_ptr<const T> obj, FinalizerReconcile<T> reconcile) {
    if (name.empty()) throw std::invalid_argument("finalizer: empty finalizer name");
    if (!obj) co_return Result::done();  // gone: nothing of ours can be left
    auto list = detail::finalizers_of(*obj);
    bool ours = std::find(list.begin(), list.end(), name) != list.end();
    auto key = key_of(*obj);
    if (!detail::being_deleted(*obj)) {
        if (!ours) {
            auto patch = add_finalizer_patch(*obj, name);
            boost::json::value now = co_await c.patch(rt, key.namespace_, key.name, client::PatchType::Json, std::move(patch));
            if constexpr (std::same_as<T, boost::json::value>) obj = std::make_shared<const T>(std::move(now));
            else obj = std::make_shared<const T>(api::from_json<T>(now));
        }
        co_return co_await reconcile(FinalizerEvent::Apply, obj);
    }
    if (!ours) co_return Result::done();  // being deleted and already cleaned up by us
    Result r = co_await reconcile(FinalizerEvent::Cleanup, obj);
    if (r.kind() != Result::Kind::Done) co_return r;  // not done yet: the finalizer holds the object
    auto patch = remove_finalizer_patch(*obj, name);
    co_await c.patch(rt, key.namespace_, key.name, client::PatchType::Json, std::move(patch));
    co_return Result::done();
}

} // namespace vck::runtime
