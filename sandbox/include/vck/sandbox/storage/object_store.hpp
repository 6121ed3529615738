// ObjectStore: the emulated API server's storage and registry ("etcd + apiserver registry"),
// called directly by the HTTP front end and by in-process simulators. Objects are whole JSON
// documents; every operation behaves as kube-apiserver's does for what a client can observe:
// - one global resourceVersion, strictly increasing, bumped by every write; a bounded change
//   history serves watches from a resourceVersion and consistent paginated lists;
// - refusals throw StoreError carrying the exact metav1.Status the real server sends;
// - create/update/patch/delete follow the registry strategies: generateName, uid,
//   creationTimestamp, generation, status subresource rules, finalizers, propagation
//   policies, garbage collection by owner uid, namespace and CRD cascades;
// - a pod bound to a node and not finished is deleted gracefully: it gets a deletionTimestamp
//   its grace period ahead and stays (Terminating) until a delete with grace period 0, which
//   the sandbox's kubelet sends once its containers have stopped;
// - CRDs register their resources at once and have their objects pruned, defaulted and
//   validated by the CRD schema;
// - a dry run (DryRun::All, StoreDeleteOptions::dry_run) goes through the same defaulting,
//   validation, preconditions and conflicts as the write, and answers what the write would
//   have stored, without storing anything, bumping the resourceVersion or notifying watches.
// Thread-safe (one lock). on_change listeners run after the lock is released, in write order,
// and may call back into the store; Watch notify callbacks run under the lock (see Watch).
// ObjectStore is the facade: it holds the lock and composes the parts, which share the
// store's state (store_state.hpp) and each own one concern: the write path
// (object_writer.hpp), deletion (object_deletion.hpp), convergence after a write
// (convergence.hpp: garbage collection, namespace and CRD finalization), CRDs
// (crd_registration.hpp), pods/binding (pod_binding.hpp), lists and watches
// (list_watch_serving.hpp) and the change listeners (change_dispatcher.hpp).
#pragma once

#include <vck/client/request_options.hpp>
#include <vck/sandbox/storage/change_dispatcher.hpp>
#include <vck/sandbox/storage/convergence.hpp>
#include <vck/sandbox/storage/list_watch_serving.hpp>
#include <vck/sandbox/storage/object_deletion.hpp>
#include <vck/sandbox/storage/object_writer.hpp>
#include <vck/sandbox/storage/pod_binding.hpp>
#include <vck/sandbox/validation/resource_registry.hpp>
#include <vck/sandbox/storage/store_requests.hpp>
#include <vck/sandbox/storage/store_state.hpp>
#include <vck/sandbox/storage/watch_hub.hpp>

#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace vck::sandbox {

class ObjectStore {
public:
    using Listener = ChangeDispatcher::Listener;

    explicit ObjectStore(ObjectStoreOptions opts = {})
        : state_(std::move(opts)), writer_(state_), lists_(state_), deletion_(state_, lists_),
          convergence_(state_, deletion_) {
        std::lock_guard lock(mu_);
        for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"})
            writer_.create_decoded({"", "v1", "namespaces"}, "", json::object{{"metadata", json::object{{"name", ns}}}});
        state_.outbox.clear();
    }

    ObjectStore(const ObjectStore&) = delete;
    ObjectStore& operator=(const ObjectStore&) = delete;
    ~ObjectStore() { state_.hub.close_all(); }

    // ---- registry -------------------------------------------------------------------------

    std::vector<ResourceInfo> resources() const {
        std::lock_guard lock(mu_);
        return state_.registry.all();
    }
    std::optional<ResourceInfo> find_resource(std::string_view group, std::string_view version,
                                              std::string_view plural) const {
        std::lock_guard lock(mu_);
        if (const auto* r = state_.registry.find(group, version, plural)) return *r;
        return std::nullopt;
    }
    std::optional<ResourceInfo> find_kind(std::string_view api_version, std::string_view kind) const {
        std::lock_guard lock(mu_);
        if (const auto* r = state_.registry.find_kind(api_version, kind)) return *r;
        return std::nullopt;
    }
    /// The newest resourceVersion (of the last write).
    std::int64_t resource_version() const {
        std::lock_guard lock(mu_);
        return state_.rv;
    }
    /// The resourceVersion of the last change to a storage ("<group>/<plural>"), 0 if none:
    /// set in the same locked step as the write, so a reader that sees the write sees it.
    std::int64_t last_write(std::string_view storage_key) const {
        std::lock_guard lock(mu_);
        auto it = state_.last_write.find(storage_key);
        return it == state_.last_write.end() ? 0 : it->second;
    }

    // ---- objects --------------------------------------------------------------------------

    /// POST to a collection. `ns` is the URL's namespace ("" for cluster-scoped resources).
    json::value create(const ResourceId& id, std::string_view ns, json::value obj, DryRun dry = DryRun::No) {
        return create(id, ns, std::move(obj), WriteOptions::of(dry));
    }
    /// POST with field validation: under Strict, unknown or duplicate fields refuse the write
    /// with 400 before anything else is checked (they are decoding errors).
    json::value create(const ResourceId& id, std::string_view ns, json::value obj, const WriteOptions& w) {
        return mutate(w.dry, [&] { return writer_.create(id, std::string(ns), std::move(obj), w); });
    }

    json::value get(const ResourceId& id, std::string_view ns, std::string_view name) const {
        std::lock_guard lock(mu_);
        auto r = state_.resolve(id);
        return StoreState::served(state_.find_or_throw(r, std::string(ns), std::string(name)), r);
    }

    /// The list document ({kind: <Kind>List, apiVersion, metadata, items}).
    json::value list(const ResourceId& id, std::string_view ns, const StoreListOptions& opts = {}) const {
        std::lock_guard lock(mu_);
        return lists_.list(state_.resolve(id), std::string(ns), opts);
    }

    /// PUT. `subresource` is "" or "status".
    json::value update(const ResourceId& id, std::string_view ns, std::string_view name, json::value obj,
                       std::string_view subresource = {}, DryRun dry = DryRun::No) {
        return update(id, ns, name, std::move(obj), subresource, WriteOptions::of(dry));
    }
    /// PUT with field validation (as create's).
    json::value update(const ResourceId& id, std::string_view ns, std::string_view name, json::value obj,
                       std::string_view subresource, const WriteOptions& w) {
        return mutate(w.dry, [&] {
            return writer_.update(id, std::string(ns), std::string(name), std::move(obj), subresource, w);
        });
    }

    /// PATCH. Strategic merge patches of custom resources are refused with 415, as the real
    /// server refuses them.
    json::value patch(const ResourceId& id, std::string_view ns, std::string_view name, client::PatchType type,
                      const json::value& patch, std::string_view subresource = {}, DryRun dry = DryRun::No) {
        return this->patch(id, ns, name, type, patch, subresource, WriteOptions::of(dry));
    }
    /// PATCH with field validation: the patch's own errors (w.body_errors) and the unknown
    /// fields of the patched object; under Strict a 422 whose "patch" value is the patched
    /// object, as the apiserver's patcher refuses it.
    json::value patch(const ResourceId& id, std::string_view ns, std::string_view name, client::PatchType type,
                      const json::value& patch, std::string_view subresource, const WriteOptions& w) {
        return mutate(w.dry, [&] {
            return writer_.patch(id, std::string(ns), std::string(name), type, patch, subresource, w);
        });
    }

    /// DELETE. Objects with finalizers (or a Foreground/Orphan policy) get a deletionTimestamp
    /// and stay until their finalizers are gone; dependents are garbage-collected.
    DeleteResult remove(const ResourceId& id, std::string_view ns, std::string_view name,
                        const StoreDeleteOptions& opts = {}) {
        return mutate(opts.dry_run ? DryRun::All : DryRun::No, [&] {
            auto r = state_.resolve(id);
            auto res = deletion_.remove(r, std::string(ns), std::string(name), opts);
            res.object = StoreState::served(res.object, r);
            return res;
        });
    }

    /// DELETE on a collection: deletes what the selectors match; returns the list of them.
    json::value delete_collection(const ResourceId& id, std::string_view ns, const StoreListOptions& sel,
                                  const StoreDeleteOptions& opts = {}) {
        return mutate(opts.dry_run ? DryRun::All : DryRun::No, [&] {
            return deletion_.remove_collection(state_.resolve(id), std::string(ns), sel, opts);
        });
    }

    /// POST pods/<name>/binding: assigns the pod to binding.target.name, as the scheduler does.
    /// Returns the Success Status the real server answers.
    json::value bind(std::string_view ns, std::string_view pod, const json::value& binding) {
        return mutate([&] { return bind_pod(state_, std::string(ns), std::string(pod), binding); });
    }

    /// Starts a watch. Selector errors throw StoreError 400; a resourceVersion older than the
    /// kept history gives a watch holding one ERROR event (410 Expired), as the real server does.
    std::shared_ptr<Watch> watch(const ResourceId& id, std::string_view ns, const StoreWatchOptions& opts = {}) {
        std::lock_guard lock(mu_);
        return lists_.watch(state_.resolve(id), std::string(ns), opts);
    }

    /// Sends a BOOKMARK at the current resourceVersion to every watch that allows bookmarks.
    void bookmark() {
        std::lock_guard lock(mu_);
        state_.hub.bookmark(state_.rv);
    }

    /// Fault injection: forgets the whole history, so watches and list continuations from any
    /// earlier resourceVersion get 410 Expired.
    void compact() {
        std::lock_guard lock(mu_);
        state_.log.compact(state_.rv);
    }

    /// Fault injection: ends every open watch; clients must re-watch.
    void close_watches() {
        std::lock_guard lock(mu_);
        state_.hub.close_all();
    }

    /// Calls `l` after every write (in resourceVersion order, outside the store's lock).
    /// Returns an id for remove_listener.
    std::size_t on_change(Listener l) { return dispatcher_.add(std::move(l)); }
    /// After it returns the listener is not running and is never called again (unless called
    /// from within that listener itself), so it may release what the listener uses.
    void remove_listener(std::size_t id) { dispatcher_.remove(id); }

    /// The CA the API server serves with (PEM): published in every namespace as ConfigMap
    /// kube-root-ca.crt (key ca.crt), as root-ca-cert-publisher does. Empty: none.
    void set_root_ca(std::string pem) {
        mutate([&] {
            state_.root_ca_pem = std::move(pem);
            return 0;
        });
    }

    /// Every unknown field a write has carried so far, whatever its fieldValidation
    /// ("Pod spec.x"): in-process writers (Ignore) and clients under Warn lose such fields
    /// silently or with a warning nobody reads, so tests of whole workloads assert none.
    std::vector<std::string> unknown_fields_seen() const {
        std::lock_guard lock(mu_);
        return state_.unknown_seen;
    }

private:
    template <class F>
    std::invoke_result_t<F&> mutate(F&& f) {
        return mutate(DryRun::No, std::forward<F>(f));
    }

    /// Runs a write under the lock, then lets the collectors converge, then (the lock
    /// released) the listeners hear of it. In a dry run every StoreState::write/erase only
    /// answers, and nothing converges.
    template <class F>
    std::invoke_result_t<F&> mutate(DryRun dry, F&& f) {
        struct Dispatch {
            ObjectStore* self;
            ~Dispatch() { self->dispatcher_.dispatch(self->mu_, self->state_.outbox); }
        } dispatch_after{this};
        std::lock_guard lock(mu_);
        struct DryScope {
            bool& flag;
            ~DryScope() { flag = false; }
        } scope{state_.dry};
        state_.dry = dry == DryRun::All;
        auto out = f();
        if (!state_.dry) {
            convergence_.settle();
            writer_.publish_identities();  // the controllers' part: what was deleted comes back
        }
        return out;
    }

    mutable std::mutex mu_;  // the store's one lock: guards state_ and every part's use of it
    StoreState state_;
    ObjectWriter writer_;
    ListWatchServing lists_;
    ObjectDeletion deletion_;
    Convergence convergence_;
    ChangeDispatcher dispatcher_;  // its own lock is taken before mu_, never inside it
};

} // namespace vck::sandbox
