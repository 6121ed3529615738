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
// - a dry run (DryRun::All, DeleteOptions::dry_run) goes through the same defaulting,
//   validation, preconditions and conflicts as the write, and answers what the write would
//   have stored, without storing anything, bumping the resourceVersion or notifying watches.
// Thread-safe (one lock). on_change listeners run after the lock is released, in write order,
// and may call back into the store; Watch notify callbacks run under the lock (see Watch).
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/api/meta.hpp>
#include <vck/testing/patch.hpp>
#include <vck/api/time.hpp>
#include <vck/client/base64.hpp>
#include <vck/client/request_options.hpp>
#include <vck/testing/builtin_defaults.hpp>
#include <vck/testing/builtin_schemas.hpp>
#include <vck/testing/change_log.hpp>
#include <vck/testing/core_validation.hpp>
#include <vck/testing/crd_schema.hpp>
#include <vck/testing/event_conversion.hpp>
#include <vck/testing/event_validation.hpp>
#include <vck/testing/field_error.hpp>
#include <vck/testing/field_validation.hpp>
#include <vck/testing/field_selector.hpp>
#include <vck/testing/garbage_collector.hpp>
#include <vck/testing/lease_validation.hpp>
#include <vck/testing/namespace_validation.hpp>
#include <vck/testing/node_validation.hpp>
#include <vck/testing/object_meta_validation.hpp>
#include <vck/testing/object_name.hpp>
#include <vck/testing/pod_validation.hpp>
#include <vck/testing/volume_validation.hpp>
#include <vck/testing/resource_registry.hpp>
#include <vck/testing/store_error.hpp>
#include <vck/testing/type_meta.hpp>
#include <vck/testing/version_conversion.hpp>
#include <vck/testing/watch_hub.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace vck::testing {

namespace json = boost::json;

/// Which resource a request addresses, as its URL names it.
struct ResourceId {
    std::string group;     // "" for core
    std::string version;   // "v1"
    std::string resource;  // plural
};

struct ListOptions {
    std::string label_selector;
    std::string field_selector;
    std::int64_t limit = 0;       // 0 = everything
    std::string continue_token;
    std::string resource_version;        // "", "0" or a number
    std::string resource_version_match;  // "", "NotOlderThan", "Exact"
};

struct WatchOptions {
    std::string label_selector;
    std::string field_selector;
    std::string resource_version;  // "" or "0": current state first; N: changes after N
    bool allow_bookmarks = false;
};

struct DeleteOptions {
    std::optional<std::string> precondition_uid;
    std::optional<std::string> precondition_resource_version;
    std::string propagation_policy;  // "", "Orphan", "Background", "Foreground"
    /// orphanDependents: false was given (the deprecated spelling of cascading deletion): the
    /// only case in which a deletion left pending answers 202 rather than 200.
    bool orphan_dependents_false = false;
    /// gracePeriodSeconds: how long a pod may take to stop (its spec's
    /// terminationGracePeriodSeconds when unset; 0 deletes it at once).
    std::optional<std::int64_t> grace_period_seconds;
    bool dry_run = false;  // dryRun=All

    /// Reads a meta/v1 DeleteOptions body (null or {} for defaults). Throws StoreError 400.
    static DeleteOptions from_json(const json::value& body) {
        DeleteOptions d;
        if (body.is_null()) return d;
        if (!body.is_object()) throw StoreError(store_status::bad_request("DeleteOptions must be a JSON object"));
        const auto& o = body.get_object();
        auto str = [&](const json::object& from, std::string_view key, std::string_view path) -> std::optional<std::string> {
            const auto* v = from.if_contains(key);
            if (!v || v->is_null()) return std::nullopt;
            if (!v->is_string())
                throw StoreError(store_status::bad_request("DeleteOptions." + std::string(path) + " must be a string"));
            return std::string(v->get_string());
        };
        if (const auto* p = o.if_contains("preconditions"); p && p->is_object()) {
            d.precondition_uid = str(p->get_object(), "uid", "preconditions.uid");
            d.precondition_resource_version = str(p->get_object(), "resourceVersion", "preconditions.resourceVersion");
        }
        if (auto pp = str(o, "propagationPolicy", "propagationPolicy")) d.propagation_policy = *pp;
        if (const auto* od = o.if_contains("orphanDependents"); od && od->is_bool()) {
            d.orphan_dependents_false = !od->get_bool();
            if (d.propagation_policy.empty()) d.propagation_policy = od->get_bool() ? "Orphan" : "Background";
        }
        if (const auto* g = o.if_contains("gracePeriodSeconds"); g && !g->is_null()) {
            if (!g->is_int64() && !g->is_uint64())
                throw StoreError(store_status::bad_request("DeleteOptions.gracePeriodSeconds must be an integer"));
            d.grace_period_seconds = g->to_number<std::int64_t>();
        }
        return d;
    }
};

/// dryRun=All: the write is checked in full and answered, and nothing is stored.
enum class DryRun { No, All };

/// How a write treats the strict decoding errors of its request (fieldValidation): the store
/// finds the unknown fields (it knows the schemas); the front end, which has the request's
/// text, passes the errors the text carries by itself (duplicate fields). Warnings, when
/// `warnings` is given, are appended there for the front end to answer as Warning headers.
/// In-process writers keep the default, Ignore: unknown fields are dropped silently.
struct WriteOptions {
    DryRun dry = DryRun::No;
    FieldValidation validation = FieldValidation::Ignore;
    std::vector<std::string> body_errors;     // "duplicate field \"spec.a\"", in text order
    std::vector<std::string>* warnings = nullptr;

    static WriteOptions of(DryRun dry) {
        WriteOptions w;
        w.dry = dry;
        return w;
    }
};

struct DeleteResult {
    json::value object;     // the object as deleted, or as it now waits for its finalizers
    bool finished = false;  // gone from the store rather than held by finalizers
};

struct StoreOptions {
    std::size_t history = 10000;             // changes kept for watches and paginated lists
    std::size_t watch_queue_limit = 10000;   // live events a watch may lag before it is closed
    std::function<std::chrono::system_clock::time_point()> clock;  // default: the system clock
};

namespace object_store_detail {

inline json::object& meta(json::value& obj) {
    auto& o = obj.get_object();
    auto& m = o["metadata"];
    if (!m.is_object()) m = json::object();
    return m.get_object();
}
inline const json::object* meta(const json::value& obj) {
    const auto* o = obj.if_object();
    if (!o) return nullptr;
    const auto* m = o->if_contains("metadata");
    return m ? m->if_object() : nullptr;
}
inline std::string str(const json::object* o, std::string_view key) {
    if (!o) return {};
    const auto* v = o->if_contains(key);
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
}
inline std::string meta_str(const json::value& obj, std::string_view key) { return str(meta(obj), key); }
inline std::vector<std::string> finalizers(const json::value& obj) {
    std::vector<std::string> out;
    if (const auto* m = meta(obj))
        if (const auto* f = m->if_contains("finalizers"); f && f->is_array())
            for (const auto& e : f->get_array())
                if (e.is_string()) out.emplace_back(e.get_string());
    return out;
}
inline void set_finalizers(json::value& obj, const std::vector<std::string>& fs) {
    auto& m = meta(obj);
    if (fs.empty()) {
        m.erase("finalizers");
        return;
    }
    json::array a;
    for (const auto& f : fs) a.emplace_back(f);
    m["finalizers"] = std::move(a);
}
inline bool deleting(const json::value& obj) { return !meta_str(obj, "deletionTimestamp").empty(); }
/// metadata.deletionGracePeriodSeconds (0 when absent).
inline std::int64_t deletion_grace(const json::value& obj) {
    if (const auto* m = meta(obj))
        if (const auto* g = m->if_contains("deletionGracePeriodSeconds"); g && (g->is_int64() || g->is_uint64()))
            return g->to_number<std::int64_t>();
    return 0;
}
/// The grace period a pod's deletion gets, as the pod registry's CheckGracefulDelete decides:
/// the request's, else the spec's terminationGracePeriodSeconds (30 by default); 0 for a pod on
/// no node or one that has finished (nothing runs to stop); a negative request means 1.
inline std::int64_t pod_grace_period(const json::value& pod, std::optional<std::int64_t> requested) {
    auto at = [&](std::string_view part, std::string_view key) -> const json::value* {
        const auto* o = pod.is_object() ? pod.get_object().if_contains(part) : nullptr;
        return o && o->is_object() ? o->get_object().if_contains(key) : nullptr;
    };
    const auto* node = at("spec", "nodeName");
    if (!node || !node->is_string() || node->get_string().empty()) return 0;
    const auto* phase = at("status", "phase");
    if (phase && phase->is_string() && (phase->get_string() == "Succeeded" || phase->get_string() == "Failed")) return 0;
    std::int64_t period = 30;
    if (requested) period = *requested;
    else if (const auto* t = at("spec", "terminationGracePeriodSeconds"); t && (t->is_int64() || t->is_uint64()))
        period = t->to_number<std::int64_t>();
    return period < 0 ? 1 : period;
}
/// The uids an object's ownerReferences name.
inline std::vector<std::string> owner_uids(const json::value& obj) {
    std::vector<std::string> out;
    if (const auto* m = meta(obj))
        if (const auto* refs = m->if_contains("ownerReferences"); refs && refs->is_array())
            for (const auto& ref : refs->get_array())
                if (auto uid = str(ref.if_object(), "uid"); !uid.empty()) out.push_back(std::move(uid));
    return out;
}
inline std::int64_t generation(const json::value& obj) {
    if (const auto* m = meta(obj))
        if (const auto* g = m->if_contains("generation"); g && g->is_number()) {
            std::error_code ec;
            auto n = g->to_number<std::int64_t>(ec);
            if (!ec) return n;
        }
    return 0;
}
/// The object without the parts that never count as a spec change.
inline json::value spec_part(const json::value& obj, bool ignore_status) {
    json::value v = obj;
    if (auto* o = v.if_object()) {
        o->erase("metadata");
        if (ignore_status) o->erase("status");
    }
    return v;
}
inline std::string object_key(std::string_view ns, std::string_view name) {
    return ns.empty() ? std::string(name) : std::string(ns) + "/" + std::string(name);
}
inline std::string url_safe(std::string b64) {
    for (auto& c : b64) c = c == '+' ? '-' : c == '/' ? '_' : c;
    while (!b64.empty() && b64.back() == '=') b64.pop_back();
    return b64;
}
inline std::optional<std::string> from_url_safe(std::string s) {
    for (auto& c : s) c = c == '-' ? '+' : c == '_' ? '/' : c;
    while (s.size() % 4) s += '=';
    return client::base64_decode(s);
}
inline std::optional<std::int64_t> parse_rv(std::string_view s) {
    if (s.empty() || s.size() > 18) return std::nullopt;
    std::int64_t n = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        n = n * 10 + (c - '0');
    }
    return n;
}
/// Field selectors each built-in resource supports besides metadata.name/namespace.
inline const std::vector<std::string>& extra_selectable_fields(std::string_view group, std::string_view plural) {
    static const std::map<std::string, std::vector<std::string>, std::less<>> fields = {
        {"/pods", {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                   "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"}},
        {"/secrets", {"type"}},
        {"/namespaces", {"status.phase"}},
        {"/nodes", {"spec.unschedulable"}},
        {"/events", {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
                     "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
                     "reason", "reportingComponent", "source", "type"}},
        {"/persistentvolumeclaims", {}},
    };
    static const std::vector<std::string> none;
    auto it = fields.find(std::string(group) + "/" + std::string(plural));
    return it == fields.end() ? none : it->second;
}

} // namespace object_store_detail

class ObjectStore {
public:
    using Listener = std::function<void(const Change&)>;

    explicit ObjectStore(StoreOptions opts = {})
        : opts_(std::move(opts)), log_(opts_.history), hub_(opts_.watch_queue_limit), rng_(std::random_device{}()) {
        if (!opts_.clock) opts_.clock = [] { return std::chrono::system_clock::now(); };
        std::lock_guard lock(mu_);
        for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"})
            create_locked({"", "v1", "namespaces"}, "", json::object{{"metadata", json::object{{"name", ns}}}});
        outbox_.clear();
    }

    ObjectStore(const ObjectStore&) = delete;
    ObjectStore& operator=(const ObjectStore&) = delete;
    ~ObjectStore() { hub_.close_all(); }

    // ---- registry -------------------------------------------------------------------------

    std::vector<ResourceInfo> resources() const {
        std::lock_guard lock(mu_);
        return registry_.all();
    }
    std::optional<ResourceInfo> find_resource(std::string_view group, std::string_view version,
                                              std::string_view plural) const {
        std::lock_guard lock(mu_);
        if (const auto* r = registry_.find(group, version, plural)) return *r;
        return std::nullopt;
    }
    std::optional<ResourceInfo> find_kind(std::string_view api_version, std::string_view kind) const {
        std::lock_guard lock(mu_);
        if (const auto* r = registry_.find_kind(api_version, kind)) return *r;
        return std::nullopt;
    }
    /// The newest resourceVersion (of the last write).
    std::int64_t resource_version() const {
        std::lock_guard lock(mu_);
        return rv_;
    }

    // ---- objects --------------------------------------------------------------------------

    /// POST to a collection. `ns` is the URL's namespace ("" for cluster-scoped resources).
    json::value create(const ResourceId& id, std::string_view ns, json::value obj, DryRun dry = DryRun::No) {
        return create(id, ns, std::move(obj), WriteOptions::of(dry));
    }
    /// POST with field validation: under Strict, unknown or duplicate fields refuse the write
    /// with 400 before anything else is checked (they are decoding errors).
    json::value create(const ResourceId& id, std::string_view ns, json::value obj, const WriteOptions& w) {
        return mutate(w.dry, [&] {
            auto r = resolve(id);
            check_body_decodes(r, obj);
            decode_fields(r, obj, w, nullptr);
            check_body_type(r, obj);
            return served(create_locked(id, std::string(ns), std::move(obj)), r);
        });
    }

    json::value get(const ResourceId& id, std::string_view ns, std::string_view name) const {
        std::lock_guard lock(mu_);
        auto r = resolve(id);
        return served(find_or_throw(r, std::string(ns), std::string(name)), r);
    }

    /// The list document ({kind: <Kind>List, apiVersion, metadata, items}).
    json::value list(const ResourceId& id, std::string_view ns, const ListOptions& opts = {}) const {
        std::lock_guard lock(mu_);
        return list_locked(resolve(id), std::string(ns), opts);
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
            auto r = resolve(id);
            check_body_decodes(r, obj);
            decode_fields(r, obj, w, nullptr);
            check_body_type(r, obj);
            return served(update_locked(r, std::string(ns), std::string(name), std::move(obj), subresource), r);
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
            auto r = resolve(id);
            check_subresource(r, subresource);
            // The patch applies to the object in the version the client speaks; converted (a
            // copy) only when that is not the stored version, so a patch reads the stored
            // object in place otherwise (it is not touched before update_locked).
            const json::value& stored = find_or_throw(r, std::string(ns), std::string(name));
            std::optional<json::value> converted;
            if (!served_in(stored, r.api_version())) converted = served(stored, r);
            const json::value& existing = converted ? *converted : stored;
            if (type == client::PatchType::StrategicMerge && r.custom)
                throw StoreError(store_status::unsupported_media_type(
                    "the body of the request was in an unknown format - accepted media types include: "
                    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"));
            json::value patched;
            try {
                switch (type) {
                case client::PatchType::Merge: patched = apply_merge_patch(existing, patch); break;
                case client::PatchType::Json: patched = apply_json_patch(existing, patch); break;
                case client::PatchType::StrategicMerge: patched = apply_strategic_merge_patch(existing, patch, r.kind); break;
                }
            } catch (const PatchError& e) {
                auto st = store_status::invalid(r.kind, r.group, name, {});
                st.message = e.what();
                st.details->causes.clear();
                throw StoreError(std::move(st));
            }
            if (!patched.is_object())
                throw StoreError(store_status::bad_request("the patched object is not a JSON object"));
            // The apiserver names a refused strategic merge patch by the patch (Go's %+v of it),
            // the others by the patched object's JSON.
            const json::value as_patched =
                type == client::PatchType::StrategicMerge ? json::value(go_value_v(patch)) : json::value(go_json(patched));
            check_patched_type(r, existing, patched, as_patched);
            decode_fields(r, patched, w, &as_patched);
            return served(update_locked(r, std::string(ns), std::string(name), std::move(patched), subresource), r);
        });
    }

    /// DELETE. Objects with finalizers (or a Foreground/Orphan policy) get a deletionTimestamp
    /// and stay until their finalizers are gone; dependents are garbage-collected.
    DeleteResult remove(const ResourceId& id, std::string_view ns, std::string_view name,
                        const DeleteOptions& opts = {}) {
        return mutate(opts.dry_run ? DryRun::All : DryRun::No, [&] {
            auto r = resolve(id);
            auto res = remove_locked(r, std::string(ns), std::string(name), opts);
            res.object = served(res.object, r);
            return res;
        });
    }

    /// DELETE on a collection: deletes what the selectors match; returns the list of them.
    json::value delete_collection(const ResourceId& id, std::string_view ns, const ListOptions& sel,
                                  const DeleteOptions& opts = {}) {
        return mutate(opts.dry_run ? DryRun::All : DryRun::No, [&] {
            auto r = resolve(id);
            ListOptions all = sel;
            all.limit = 0;
            all.continue_token.clear();
            all.resource_version.clear();
            auto listed = list_locked(r, std::string(ns), all);
            json::array deleted;
            for (const auto& item : listed.get_object()["items"].get_array()) {
                auto ins = object_store_detail::meta_str(item, "namespace");
                auto nm = object_store_detail::meta_str(item, "name");
                try {
                    deleted.push_back(served(remove_locked(r, ins, nm, opts).object, r));
                } catch (const StoreError& e) {
                    if (e.code() != 404) throw;  // already gone by cascade
                }
            }
            listed.get_object()["items"] = std::move(deleted);
            listed.get_object()["metadata"] = json::object{{"resourceVersion", std::to_string(rv_)}};
            return listed;
        });
    }

    /// POST pods/<name>/binding: assigns the pod to binding.target.name, as the scheduler does.
    /// Returns the Success Status the real server answers.
    json::value bind(std::string_view ns, std::string_view pod, const json::value& binding) {
        return mutate([&] { return bind_locked(std::string(ns), std::string(pod), binding); });
    }

    /// Starts a watch. Selector errors throw StoreError 400; a resourceVersion older than the
    /// kept history gives a watch holding one ERROR event (410 Expired), as the real server does.
    std::shared_ptr<Watch> watch(const ResourceId& id, std::string_view ns, const WatchOptions& opts = {}) {
        std::lock_guard lock(mu_);
        return watch_locked(resolve(id), std::string(ns), opts);
    }

    /// Sends a BOOKMARK at the current resourceVersion to every watch that allows bookmarks.
    void bookmark() {
        std::lock_guard lock(mu_);
        hub_.bookmark(rv_);
    }

    /// Fault injection: forgets the whole history, so watches and list continuations from any
    /// earlier resourceVersion get 410 Expired.
    void compact() {
        std::lock_guard lock(mu_);
        log_.compact(rv_);
    }

    /// Fault injection: ends every open watch; clients must re-watch.
    void close_watches() {
        std::lock_guard lock(mu_);
        hub_.close_all();
    }

    /// Calls `l` after every write (in resourceVersion order, outside the store's lock).
    /// Returns an id for remove_listener.
    std::size_t on_change(Listener l) {
        std::lock_guard lock(outbox_mu_);
        listeners_.emplace(++next_listener_, std::move(l));
        return next_listener_;
    }
    /// After it returns the listener is not running and is never called again (unless called
    /// from within that listener itself), so it may release what the listener uses.
    void remove_listener(std::size_t id) {
        std::unique_lock lock(outbox_mu_);
        listeners_.erase(id);
        if (!dispatching_ || dispatcher_ == std::this_thread::get_id()) return;
        // Another thread may be calling a copy of it in the batch under way: wait that out.
        auto batch = batches_;
        batch_done_.wait(lock, [&] { return !dispatching_ || batches_ != batch; });
    }

    /// Every unknown field a write has carried so far, whatever its fieldValidation
    /// ("Pod spec.x"): in-process writers (Ignore) and clients under Warn lose such fields
    /// silently or with a warning nobody reads, so tests of whole workloads assert none.
    std::vector<std::string> unknown_fields_seen() const {
        std::lock_guard lock(mu_);
        return unknown_seen_;
    }

private:
    using Bucket = std::map<std::string, json::value>;
    static constexpr const char* crd_cleanup_finalizer = "customresourcecleanup.apiextensions.k8s.io";

    // ---- plumbing -------------------------------------------------------------------------

    template <class F>
    std::invoke_result_t<F&> mutate(F&& f) {
        return mutate(DryRun::No, std::forward<F>(f));
    }

    /// Runs a write under the lock, then lets the collectors converge. In a dry run every
    /// write_locked/erase_locked only answers, and nothing converges.
    template <class F>
    std::invoke_result_t<F&> mutate(DryRun dry, F&& f) {
        struct Dispatch {
            ObjectStore* self;
            ~Dispatch() { self->dispatch(); }
        } dispatch_after{this};
        std::lock_guard lock(mu_);
        struct DryScope {
            bool& flag;
            ~DryScope() { flag = false; }
        } scope{dry_};
        dry_ = dry == DryRun::All;
        auto out = f();
        if (!dry_) settle_locked();
        return out;
    }

    /// Runs listeners for queued changes; only one thread dispatches at a time, so listeners
    /// see changes in order, and a listener's own writes are dispatched by the same loop.
    void dispatch() {
        std::unique_lock lock(outbox_mu_);
        if (dispatching_) return;
        dispatching_ = true;
        dispatcher_ = std::this_thread::get_id();
        while (true) {
            std::vector<Change> batch;
            {
                std::lock_guard l(mu_);
                batch.swap(outbox_);
            }
            if (batch.empty()) break;
            auto listeners = listeners_;
            lock.unlock();
            for (const auto& c : batch)
                for (const auto& [id, l] : listeners) l(c);
            lock.lock();
            ++batches_;
            batch_done_.notify_all();
        }
        dispatching_ = false;
        dispatcher_ = {};
        batch_done_.notify_all();
    }

    ResourceInfo resolve(const ResourceId& id) const {
        const auto* r = registry_.find(id.group, id.version, id.resource);
        if (!r) throw StoreError(store_status::no_such_resource());
        return *r;
    }

    static void check_subresource(const ResourceInfo& r, std::string_view sub) {
        if (sub.empty()) return;
        if (sub != "status" || !r.has_status()) throw StoreError(store_status::no_such_resource());
    }

    /// The stored object as served in r's version; list items of built-ins carry no kind.
    static json::value served(const json::value& obj, const ResourceInfo& r) {
        return served_as(obj, r.api_version());
    }

    std::string now() const { return now_plus(0); }

    /// The time `seconds` from now, as metadata timestamps are written.
    std::string now_plus(std::int64_t seconds) const {
        return api::format_rfc3339(opts_.clock() + std::chrono::seconds(seconds));
    }

    std::string new_uid() {
        std::uniform_int_distribution<int> byte(0, 255);
        unsigned char b[16];
        for (auto& x : b) x = static_cast<unsigned char>(byte(rng_));
        b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
        b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
        static constexpr char hex[] = "0123456789abcdef";
        std::string s;
        for (int i = 0; i < 16; ++i) {
            if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
            s += hex[b[i] >> 4];
            s += hex[b[i] & 15];
        }
        return s;
    }

    static std::string registry_path(const ResourceInfo& r, const std::string& ns, const std::string& name) {
        std::string p = "/registry/";
        if (r.custom || r.group == "apiextensions.k8s.io") p += r.group + "/";
        p += r.plural + "/" + object_store_detail::object_key(ns, name);
        return p;
    }

    const json::value* find(const ResourceInfo& r, const std::string& ns, const std::string& name) const {
        auto b = data_.find(r.storage_key());
        if (b == data_.end()) return nullptr;
        auto it = b->second.find(object_store_detail::object_key(r.namespaced ? ns : "", name));
        return it == b->second.end() ? nullptr : &it->second;
    }
    const json::value& find_or_throw(const ResourceInfo& r, const std::string& ns, const std::string& name) const {
        const auto* o = find(r, ns, name);
        if (!o) throw StoreError(store_status::not_found(r.group, r.plural, name));
        return *o;
    }

    ResourceInfo info_for_storage(const std::string& storage_key) const {
        auto slash = storage_key.find('/');
        const auto* r = registry_.find_any_version(storage_key.substr(0, slash), storage_key.substr(slash + 1));
        if (!r) throw StoreError(store_status::no_such_resource());
        return *r;
    }

    void emit(const ResourceInfo& r, std::string type, const std::string& ns, const std::string& name,
              const json::value& obj, json::value previous) {
        auto before = previous.is_null() ? nullptr : std::make_shared<const json::value>(std::move(previous));
        Change c{rv_, std::move(type), r.storage_key(), r.storage_group(), r.plural, ns, name,
                 std::make_shared<const json::value>(obj),
                 std::move(before)};
        log_.append(c);
        hub_.publish(c);
        outbox_.push_back(std::move(c));
    }

    /// Stores obj (ADDED when new, MODIFIED otherwise) at a new resourceVersion.
    json::value write_locked(const ResourceInfo& r, const std::string& ns, const std::string& name, json::value obj) {
        using namespace object_store_detail;
        if (dry_) {
            // What would be stored: an update keeps the version it replaces, a create has none yet.
            const json::value* old = find(r, ns, name);
            if (old) meta(obj)["resourceVersion"] = meta_str(*old, "resourceVersion");
            else meta(obj).erase("resourceVersion");
            return obj;
        }
        ++rv_;
        meta(obj)["resourceVersion"] = std::to_string(rv_);
        auto& slot = data_[r.storage_key()][object_key(ns, name)];
        json::value previous = std::move(slot);
        slot = obj;
        ObjectRef ref{r.storage_key(), ns, name};
        auto uid = meta_str(obj, "uid");
        if (!uid.empty()) uids_[uid] = ref;
        if (!previous.is_null()) gc_unindex_locked(previous, ref);
        gc_index_locked(obj, ref);
        // Named first: the order in which emit's arguments are evaluated is unspecified, and
        // the move below may empty `previous` before a test of it in the same call.
        std::string type = previous.is_null() ? "ADDED" : "MODIFIED";
        emit(r, std::move(type), ns, name, obj, std::move(previous));
        return obj;
    }

    /// Removes the object now; the DELETED event carries the deletion's resourceVersion.
    json::value erase_locked(const ResourceInfo& r, const std::string& ns, const std::string& name) {
        using namespace object_store_detail;
        auto b = data_.find(r.storage_key());
        if (b == data_.end()) return nullptr;
        auto it = b->second.find(object_key(ns, name));
        if (it == b->second.end()) return nullptr;
        if (dry_) return it->second;
        json::value previous = std::move(it->second);
        b->second.erase(it);
        uids_.erase(meta_str(previous, "uid"));
        gc_unindex_locked(previous, ObjectRef{r.storage_key(), ns, name});
        ++rv_;
        json::value gone = previous;
        meta(gone)["resourceVersion"] = std::to_string(rv_);
        emit(r, "DELETED", ns, name, gone, std::move(previous));
        if (r.group == "apiextensions.k8s.io" && r.plural == "customresourcedefinitions") unregister_crd_locked(gone);
        return gone;
    }

    /// Writes a new state of an existing object, or removes it when it is being deleted and
    /// its last finalizer is gone.
    json::value commit_locked(const ResourceInfo& r, const std::string& ns, const std::string& name, json::value obj) {
        using namespace object_store_detail;
        if (deleting(obj) && finalizers(obj).empty() && deletion_grace(obj) == 0) {
            auto written = write_locked(r, ns, name, std::move(obj));
            if (dry_) return written;
            return erase_locked(r, ns, name);
        }
        return write_locked(r, ns, name, std::move(obj));
    }

    // ---- create / update ------------------------------------------------------------------

    json::value create_locked(const ResourceId& id, std::string ns, json::value body) {
        using namespace object_store_detail;
        auto r = resolve(id);
        if (!body.is_object()) throw StoreError(store_status::bad_request("the request body must be a JSON object"));
        // Top-level keys first: inserting into an object may move its members, metadata included.
        body.get_object()["apiVersion"] = r.api_version();
        body.get_object()["kind"] = r.kind;
        auto& md = meta(body);
        auto body_ns = str(&md, "namespace");
        if (r.namespaced) {
            if (!ns.empty() && !body_ns.empty() && body_ns != ns)
                throw StoreError(store_status::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"));
            if (ns.empty()) ns = body_ns;
            if (ns.empty())
                throw StoreError(store_status::bad_request("a namespace is required to create " +
                                                           qualified_resource(r.group, r.plural)));
            md["namespace"] = ns;
            check_namespace_accepts_locked(r, ns, str(&md, "name"));
        } else {
            md.erase("namespace");
            ns.clear();
        }
        if (r.custom) check_crd_not_terminating_locked(r);

        auto name = str(&md, "name");
        if (name.empty() && !str(&md, "generateName").empty()) {
            for (int attempt = 0; attempt < 8; ++attempt) {
                name = generate_name(str(&md, "generateName"), rng_);
                if (!find(r, ns, name)) break;
            }
            md["name"] = name;
        }

        std::vector<FieldError> errs;
        if (name.empty()) errs.push_back(field::required("metadata.name", "name or generateName is required"));
        else {
            // core/v1 Events only need a name that is a path segment (their registry's legacy rule).
            auto more = r.plural == "namespaces" && r.group.empty() ? validate_dns1123_label(name, "metadata.name")
                        : r.plural == "events" && r.group.empty()   ? validate_path_segment_name(name, "metadata.name")
                                                                    : validate_dns1123_subdomain(name, "metadata.name");
            errs.insert(errs.end(), more.begin(), more.end());
        }

        md.erase("deletionTimestamp");
        md.erase("deletionGracePeriodSeconds");
        md.erase("resourceVersion");
        md["uid"] = new_uid();
        md["creationTimestamp"] = now();
        if (keeps_generation(r)) md["generation"] = 1;
        else md.erase("generation");

        if (r.converts_on_write()) body = convert_to_version(body, r.storage_api_version);
        prepare_create(r, body);
        auto more = validate_locked(r, body, name, nullptr);
        errs.insert(errs.end(), more.begin(), more.end());
        if (!errs.empty()) throw StoreError(store_status::invalid(r.kind, r.group, name, errs));
        if (find(r, ns, name)) throw StoreError(store_status::already_exists(r.group, r.plural, name));

        if (is_crd(r)) set_crd_status(body, nullptr);
        auto stored = write_locked(r, ns, name, std::move(body));
        if (is_crd(r) && !dry_) register_crd_locked(stored);
        return stored;
    }

    json::value update_locked(const ResourceInfo& r, std::string ns, const std::string& name, json::value body,
                              std::string_view sub) {
        using namespace object_store_detail;
        check_subresource(r, sub);
        if (!body.is_object()) throw StoreError(store_status::bad_request("the request body must be a JSON object"));
        auto& md = meta(body);
        auto body_name = str(&md, "name");
        if (body_name != name)
            throw StoreError(store_status::bad_request("the name of the object (" + body_name +
                                                       ") does not match the name on the URL (" + name + ")"));
        if (r.namespaced) {
            auto body_ns = str(&md, "namespace");
            if (!body_ns.empty() && body_ns != ns)
                throw StoreError(store_status::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"));
        } else {
            ns.clear();
        }
        const json::value& old = find_or_throw(r, ns, name);
        auto want_rv = str(&md, "resourceVersion");
        if (!want_rv.empty() && want_rv != meta_str(old, "resourceVersion"))
            throw StoreError(store_status::modified_conflict(r.group, r.plural, name));
        auto want_uid = str(&md, "uid");
        if (!want_uid.empty() && want_uid != meta_str(old, "uid"))
            throw StoreError(store_status::conflict(
                r.group, r.plural, name,
                storage_precondition_error(r, ns, name, "UID", want_uid, meta_str(old, "uid"))));

        json::value n;
        if (sub == "status") {
            n = old;
            if (const auto* st = body.get_object().if_contains("status")) n.get_object()["status"] = *st;
            else n.get_object().erase("status");
        } else {
            n = std::move(body);
            if (r.has_status()) {
                if (const auto* st = old.get_object().if_contains("status")) n.get_object()["status"] = *st;
                else n.get_object().erase("status");
            }
        }
        n.get_object()["apiVersion"] = r.api_version();
        n.get_object()["kind"] = r.kind;
        {
            auto& nm = meta(n);
            const auto* om = meta(old);
            for (const char* k : {"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                                  "generation", "name", "namespace", "resourceVersion"}) {
                if (const auto* v = om->if_contains(k)) nm[k] = *v;
                else nm.erase(k);
            }
        }

        if (r.converts_on_write()) n = convert_to_version(n, r.storage_api_version);

        std::vector<FieldError> errs;
        if (deleting(old)) {
            auto before = finalizers(old);
            std::vector<std::string> added;
            for (const auto& f : finalizers(n))
                if (std::find(before.begin(), before.end(), f) == before.end()) added.push_back(f);
            if (!added.empty()) {
                std::string list = "[]string{";
                for (std::size_t i = 0; i < added.size(); ++i) list += (i ? ", " : "") + go::quote(added[i]);
                list += "}";
                errs.push_back(field::forbidden(
                    "metadata.finalizers", "no new finalizers can be added if the object is being deleted, found new finalizers " + list));
            }
        }
        prepare_update(r, n, old);
        auto more = validate_locked(r, n, name, &old, sub);
        errs.insert(errs.end(), more.begin(), more.end());
        if (!errs.empty()) throw StoreError(store_status::invalid(r.kind, r.group, name, errs));

        if (keeps_generation(r) && !json_equal(spec_part(n, r.has_status()), spec_part(old, r.has_status())))
            meta(n)["generation"] = generation(old) + 1;
        if (is_crd(r)) set_crd_status(n, &old);
        if (json_equal(n, old)) return old;  // a no-op write is not a write, as in etcd3's GuaranteedUpdate
        auto stored = commit_locked(r, ns, name, std::move(n));
        if (is_crd(r) && !dry_ && find(r, ns, name)) register_crd_locked(stored);
        return stored;
    }

    /// The strict decoding errors of a write (the request's own, then the unknown fields of
    /// `obj` sorted by path, which are dropped from it), answered as `w.validation` says.
    /// Unknown fields are those the schema of a custom resource lacks (metadata: ObjectMeta's
    /// fields), or the 1.32 types of a built-in kind (builtin_schemas.hpp). `patched` is the
    /// text a refused patch is named by (its errors are 422s), nullptr for a create or update
    /// (400s).
    void decode_fields(const ResourceInfo& r, json::value& obj, const WriteOptions& w, const json::value* patched) {
        std::vector<std::string> errors = w.body_errors;
        std::vector<std::string> unknown;
        if (r.custom && r.schema && obj.is_object()) {
            unknown = r.schema->prune(obj);
            auto meta_unknown = prune_object_meta(obj);
            unknown.insert(unknown.end(), meta_unknown.begin(), meta_unknown.end());
            std::sort(unknown.begin(), unknown.end());
        } else if (!r.custom && obj.is_object()) {
            unknown = BuiltinSchemas::instance().prune(BuiltinSchemas::kind_type(r.group, r.kind), obj);
        }
        for (const auto& u : unknown) {
            unknown_seen_.push_back(r.kind + " " + u);
            std::string e = "unknown field " + go::quote(u);
            if (std::find(errors.begin(), errors.end(), e) == errors.end()) errors.push_back(std::move(e));
        }
        if (errors.empty() || w.validation == FieldValidation::Ignore) return;
        if (w.validation == FieldValidation::Warn) {
            if (w.warnings)
                for (auto& e : errors)
                    if (std::find(w.warnings->begin(), w.warnings->end(), e) == w.warnings->end()) w.warnings->push_back(e);
            return;
        }
        if (patched) {
            throw StoreError(store_status::invalid(
                "", "", "", {field::invalid("patch", *patched, strict_decoding_error(errors))}));
        }
        // The decoder names the kind and version the body declares (the URL's when it has none).
        std::string kind = object_store_detail::str(obj.if_object(), "kind");
        std::string version = object_store_detail::str(obj.if_object(), "apiVersion");
        if (auto slash = version.find('/'); slash != std::string::npos) version = version.substr(slash + 1);
        if (kind.empty()) kind = r.kind;
        if (version.empty()) version = r.version;
        throw StoreError(store_status::bad_request(kind + " in version " + go::quote(version) + " cannot be handled as a " +
                                                   r.kind + ": " + strict_decoding_error(errors)));
    }

    /// Defaults a registry strategy applies on create.
    void prepare_create(const ResourceInfo& r, json::value& obj) {
        auto& o = obj.get_object();
        if (!r.custom && r.group.empty()) {
            if (r.plural == "pods") {
                o["status"] = json::object{{"phase", "Pending"}, {"qosClass", pod_qos_class(obj)}};
            } else if (r.plural == "namespaces") {
                o["status"] = json::object{{"phase", "Active"}};
                auto& spec = o["spec"];
                if (!spec.is_object()) spec = json::object();
                // The kubernetes finalizer is added to whatever finalizers the body lists.
                auto& fins = spec.get_object()["finalizers"];
                if (!fins.is_array()) fins = json::array();
                if (std::find(fins.get_array().begin(), fins.get_array().end(), json::value("kubernetes")) ==
                    fins.get_array().end())
                    fins.get_array().push_back("kubernetes");
            } else if (r.plural == "persistentvolumeclaims" || r.plural == "persistentvolumes") {
                o["status"] = json::object{{"phase", "Pending"}};
            } else if (r.plural == "secrets") {
                merge_string_data(obj);
                if (!o.contains("type")) o["type"] = "Opaque";
            }
        }
        if (r.custom && r.has_status()) o.erase("status");
        if (!r.custom) apply_builtin_defaults(r.group, r.plural, obj);
        if (r.custom && r.schema) {
            r.schema->prune(obj);
            r.schema->apply_defaults(obj);
        }
    }

    void prepare_update(const ResourceInfo& r, json::value& obj, const json::value& old) {
        if (!r.custom && r.group.empty() && r.plural == "namespaces") keep_namespace_finalizers(obj, old);
        if (!r.custom && r.group.empty() && r.plural == "secrets") {
            merge_string_data(obj);
            // SetDefaults_Secret runs on every write: a type-less update means Opaque.
            if (!obj.get_object().contains("type")) obj.get_object()["type"] = "Opaque";
        }
        if (!r.custom) apply_builtin_defaults(r.group, r.plural, obj);
        if (r.custom && r.schema) {
            r.schema->prune(obj);
            r.schema->apply_defaults(obj);
        }
    }

    /// The kinds outside the core API's registry (custom resources, CRDs, webhook
    /// configurations): they keep metadata.generation on a 1.32 server (pods, PVs, claims,
    /// ConfigMaps, Secrets and the rest have none) and get generic metadata validation.
    static bool generic_kind(const ResourceInfo& r) {
        return r.custom || is_crd(r) || r.group == "admissionregistration.k8s.io";
    }
    static bool keeps_generation(const ResourceInfo& r) { return generic_kind(r); }

    /// Validation beyond the name: metadata, CRD schemas, and the CRD object itself.
    std::vector<FieldError> validate_locked(const ResourceInfo& r, const json::value& obj, const std::string& name,
                                            const json::value* old, std::string_view sub = {}) const {
        // Core validation's finalizer rule covers the built-ins of the core API's registry,
        // not CRDs, webhook configurations (generic validation) or custom resources.
        std::vector<FieldError> errs = validate_object_meta(obj, ObjectMetaRules{.kube_finalizer_names = !generic_kind(r)});
        if (r.custom && r.schema) {
            auto more = r.schema->validate(obj);
            errs.insert(errs.end(), more.begin(), more.end());
        }
        if (is_crd(r)) {
            auto more = validate_crd(obj, name, old);
            errs.insert(errs.end(), more.begin(), more.end());
        }
        if (!r.custom && sub.empty()) {
            auto more = validate_builtin(r, obj, old);
            errs.insert(errs.end(), more.begin(), more.end());
        }
        if (!r.custom && sub == "status" && old) {
            auto more = validate_builtin_status(r, obj, *old);
            errs.insert(errs.end(), more.begin(), more.end());
        }
        return errs;
    }

    /// The status rules of the built-in kinds whose status strategy has any.
    static std::vector<FieldError> validate_builtin_status(const ResourceInfo& r, const json::value& obj,
                                                           const json::value& old) {
        if (r.group.empty() && r.plural == "nodes") return validate_node_status_update(obj, old);
        if (r.group.empty() && r.plural == "namespaces") return validate_namespace_status_update(obj);
        return {};
    }

    /// The spec rules of the built-in kinds (pod_validation.hpp, ...): a write of the object
    /// itself; its status subresource keeps the spec, so its writes have none of these.
    static std::vector<FieldError> validate_builtin(const ResourceInfo& r, const json::value& obj,
                                                    const json::value* old) {
        if (auto rules = event_rules(r)) return old ? validate_event_update(obj, *old, *rules) : validate_event_create(obj, *rules);
        if (r.group.empty()) {
            if (r.plural == "pods") return old ? validate_pod_update(obj, *old) : validate_pod_create(obj);
            if (r.plural == "persistentvolumes")
                return old ? validate_persistent_volume_update(obj, *old) : validate_persistent_volume(obj);
            if (r.plural == "persistentvolumeclaims")
                return old ? validate_persistent_volume_claim_update(obj, *old) : validate_persistent_volume_claim(obj);
            if (r.plural == "configmaps") return old ? validate_config_map_update(obj, *old) : validate_config_map(obj);
            if (r.plural == "secrets") return old ? validate_secret_update(obj, *old) : validate_secret(obj);
            if (r.plural == "nodes") return old ? validate_node_update(obj, *old) : validate_node(obj);
            if (r.plural == "namespaces") return validate_namespace(obj);
        } else if (r.group == "coordination.k8s.io" && r.plural == "leases") {
            return validate_lease(obj);
        } else if (r.group == "storage.k8s.io" && r.plural == "storageclasses") {
            return old ? validate_storage_class_update(obj, *old) : validate_storage_class(obj);
        }
        return {};
    }

    static std::string pod_qos_class(const json::value& pod) {
        // Enough of v1qos.GetPodQOS for what clients print: no requests/limits at all is BestEffort.
        const auto* spec = pod.get_object().if_contains("spec");
        if (spec && spec->is_object())
            if (const auto* cs = spec->get_object().if_contains("containers"); cs && cs->is_array())
                for (const auto& c : cs->get_array())
                    if (const auto* res = c.is_object() ? c.get_object().if_contains("resources") : nullptr;
                        res && res->is_object() && !res->get_object().empty())
                        return "Burstable";
        return "BestEffort";
    }

    /// Secret.stringData is write-only: merged into data (base64) and dropped, like the real server.
    static void merge_string_data(json::value& obj) {
        auto& o = obj.get_object();
        const auto* found = o.if_contains("stringData");
        if (!found) return;
        json::value sd = *found;  // a copy: inserting "data" may move the members of o
        if (sd.is_object()) {
            auto& data = o["data"];
            if (!data.is_object()) data = json::object();
            for (const auto& kv : sd.get_object())
                if (kv.value().is_string())
                    data.get_object()[kv.key()] = client::base64_encode(std::string_view(kv.value().get_string()));
        }
        o.erase("stringData");
    }

    void check_namespace_accepts_locked(const ResourceInfo& r, const std::string& ns, const std::string& name) const {
        const auto* nsr = registry_.find("", "v1", "namespaces");
        const auto* nso = find(*nsr, "", ns);
        if (!nso) throw StoreError(store_status::not_found("", "namespaces", ns));
        if (object_store_detail::deleting(*nso)) {
            std::string why = "unable to create new content in namespace " + ns + " because it is being terminated";
            auto st = store_status::forbidden(r.group, r.plural, name, why);
            st.details->causes.push_back(api::StatusCause{"NamespaceTerminating", why, "metadata.namespace"});
            throw StoreError(std::move(st));
        }
    }

    static std::string storage_precondition_error(const ResourceInfo& r, const std::string& ns, const std::string& name,
                                                  std::string_view what, const std::string& want,
                                                  const std::string& have) {
        return "StorageError: invalid object, Code: 4, Key: " + registry_path(r, ns, name) +
               ", ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: " + std::string(what) +
               " in precondition: " + want + ", " + std::string(what) + " in object meta: " + have;
    }

    // ---- delete ---------------------------------------------------------------------------

    DeleteResult remove_locked(const ResourceInfo& r, std::string ns, const std::string& name, const DeleteOptions& opts) {
        using namespace object_store_detail;
        if (!r.namespaced) ns.clear();
        const json::value& existing = find_or_throw(r, ns, name);
        if (opts.precondition_uid && *opts.precondition_uid != meta_str(existing, "uid"))
            throw StoreError(store_status::conflict(
                r.group, r.plural, name,
                storage_precondition_error(r, ns, name, "UID", *opts.precondition_uid, meta_str(existing, "uid"))));
        if (opts.precondition_resource_version &&
            *opts.precondition_resource_version != meta_str(existing, "resourceVersion"))
            throw StoreError(store_status::conflict(
                r.group, r.plural, name,
                storage_precondition_error(r, ns, name, "ResourceVersion", *opts.precondition_resource_version,
                                           meta_str(existing, "resourceVersion"))));
        const auto& policy = opts.propagation_policy;
        if (!policy.empty() && policy != "Orphan" && policy != "Background" && policy != "Foreground")
            throw StoreError(store_status::invalid(
                "DeleteOptions", "", "",
                {field::not_supported("propagationPolicy", json::value(policy), {"Foreground", "Background", "Orphan"})}));
        const bool is_namespace = r.group.empty() && r.plural == "namespaces";
        if (is_namespace && (name == "default" || name == "kube-system" || name == "kube-public"))
            throw StoreError(store_status::forbidden("", "namespaces", name, "this namespace may not be deleted"));
        // A pod on a node stops first: it stays, Terminating, until its kubelet confirms with
        // a grace period of 0 (or the period is shortened to 0 by a forced delete).
        const std::int64_t grace = is_pod(r) ? pod_grace_period(existing, opts.grace_period_seconds) : 0;
        if (deleting(existing)) {
            if (grace >= deletion_grace(existing)) return {existing, false};
            json::value obj = existing;
            meta(obj)["deletionGracePeriodSeconds"] = grace;
            meta(obj)["deletionTimestamp"] = now_plus(grace);
            if (grace == 0 && finalizers(obj).empty()) return {erase_locked(r, ns, name), true};
            return {write_locked(r, ns, name, std::move(obj)), false};
        }

        json::value obj = existing;
        auto fs = finalizers(obj);
        auto drop = [&](std::string_view f) { std::erase(fs, std::string(f)); };
        auto add = [&](std::string_view f) {
            if (std::find(fs.begin(), fs.end(), f) == fs.end()) fs.emplace_back(f);
        };
        if (policy == "Orphan") {
            drop(foreground_finalizer);
            add(orphan_finalizer);
        } else if (policy == "Foreground") {
            drop(orphan_finalizer);
            add(foreground_finalizer);
        }
        if (is_crd(r)) add(crd_cleanup_finalizer);
        if (fs.empty() && !is_namespace && grace == 0) return {erase_locked(r, ns, name), true};

        set_finalizers(obj, fs);
        auto& md = meta(obj);
        md["deletionTimestamp"] = now_plus(grace);
        md["deletionGracePeriodSeconds"] = grace;
        if (generation(obj) > 0) md["generation"] = generation(obj) + 1;  // as the registry's BeforeDelete
        if (is_namespace) obj.get_object()["status"] = json::object{{"phase", "Terminating"}};
        if (is_crd(r)) add_crd_condition(obj, "Terminating", "True", "InstanceDeletionInProgress",
                                         "CustomResourceDefinition marked for deletion");
        auto stored = write_locked(r, ns, name, std::move(obj));
        if (is_namespace && !dry_) delete_namespace_content_locked(name);
        if (is_crd(r) && !dry_) delete_crd_instances_locked(stored);
        return {stored, false};
    }

    void delete_namespace_content_locked(const std::string& ns) {
        std::vector<std::pair<ResourceInfo, std::string>> victims;
        for (const auto& [sk, bucket] : data_) {
            auto prefix = ns + "/";
            for (auto it = bucket.lower_bound(prefix); it != bucket.end() && it->first.starts_with(prefix); ++it)
                victims.emplace_back(info_for_storage(sk), it->first.substr(prefix.size()));
        }
        for (const auto& [r, name] : victims)
            if (find(r, ns, name)) remove_locked(r, ns, name, {});
    }

    // ---- convergence: garbage collector, namespace and CRD finalization --------------------

    // The garbage collector plans over what writes touched, not over the whole store, so a
    // write costs the same with 20 or 20,000 objects stored. A written or removed object is
    // "changed": it is planned again, and so are its dependents (their owner may be gone or now
    // waiting). Its owners are planned again too (they may have lost their last dependent);
    // a deleting owner with the orphan or foregroundDeletion finalizer brings all its
    // dependents, which is what the planner needs to decide about its finalizer.

    void gc_index_locked(const json::value& obj, const ObjectRef& ref) {
        for (auto& owner : object_store_detail::owner_uids(obj)) {
            dependents_[owner].insert(ref);
            gc_touched_.try_emplace(std::move(owner), false);
        }
        if (auto uid = object_store_detail::meta_str(obj, "uid"); !uid.empty()) gc_touched_[uid] = true;
    }
    void gc_unindex_locked(const json::value& obj, const ObjectRef& ref) {
        for (auto& owner : object_store_detail::owner_uids(obj)) {
            if (auto d = dependents_.find(owner); d != dependents_.end()) {
                d->second.erase(ref);
                if (d->second.empty()) dependents_.erase(d);
            }
            gc_touched_.try_emplace(std::move(owner), false);
        }
        if (auto uid = object_store_detail::meta_str(obj, "uid"); !uid.empty()) gc_touched_[uid] = true;
    }

    /// What the collector needs to know of a stored object, or nullopt when it has nothing
    /// to decide about it (no owners, and not deleting with a collector's finalizer).
    std::optional<GcObject> gc_object_locked(const ObjectRef& ref, const json::value& obj) const {
        using namespace object_store_detail;
        const auto* m = meta(obj);
        if (!m) return std::nullopt;
        const auto* refs = m->if_contains("ownerReferences");
        bool has_refs = refs && refs->is_array() && !refs->get_array().empty();
        bool del = deleting(obj);
        auto fs = del ? finalizers(obj) : std::vector<std::string>{};
        bool orphan = std::find(fs.begin(), fs.end(), orphan_finalizer) != fs.end();
        bool fg = std::find(fs.begin(), fs.end(), foreground_finalizer) != fs.end();
        if (!has_refs && !orphan && !fg) return std::nullopt;
        GcObject g;
        g.ref = ref;
        g.uid = str(m, "uid");
        g.deleting = del;
        g.orphan_finalizer = orphan;
        g.foreground_finalizer = fg;
        g.has_dependents = !g.uid.empty() && dependents_.count(g.uid) > 0;
        if (has_refs)
            for (const auto& r : refs->get_array()) {
                if (!r.is_object()) continue;
                const auto* b = r.get_object().if_contains("blockOwnerDeletion");
                g.owners.push_back({str(&r.get_object(), "uid"), b && b->is_bool() && b->get_bool()});
            }
        return g;
    }

    /// The candidates for one plan: the objects the touched uids name (see above).
    std::vector<GcObject> gc_candidates_locked(const std::map<std::string, bool>& touched) const {
        std::set<ObjectRef> refs;
        auto add_dependents = [&](const std::string& uid) {
            if (auto d = dependents_.find(uid); d != dependents_.end()) refs.insert(d->second.begin(), d->second.end());
        };
        for (const auto& [uid, changed] : touched) {
            if (auto it = uids_.find(uid); it != uids_.end()) refs.insert(it->second);
            if (changed) add_dependents(uid);
        }
        std::vector<GcObject> out;
        std::set<ObjectRef> more;
        for (const auto& ref : refs) {
            const auto* obj = stored(ref);
            if (!obj) continue;
            auto g = gc_object_locked(ref, *obj);
            if (!g) continue;
            if ((g->orphan_finalizer || g->foreground_finalizer) && !touched.count(g->uid))
                if (auto d = dependents_.find(g->uid); d != dependents_.end())
                    for (const auto& dep : d->second)
                        if (!refs.count(dep)) more.insert(dep);
            out.push_back(std::move(*g));
        }
        for (const auto& ref : more)
            if (const auto* obj = stored(ref))
                if (auto g = gc_object_locked(ref, *obj)) out.push_back(std::move(*g));
        return out;
    }

    void settle_locked() {
        using namespace object_store_detail;
        std::map<std::string, bool> retry;  // targets of actions that changed nothing
        for (int round = 0; round < 100000; ++round) {
            bool progress = false;
            std::map<std::string, bool> touched;
            touched.swap(gc_touched_);
            auto candidates = gc_candidates_locked(touched);
            if (!candidates.empty()) {
                auto actions = plan_garbage_collection(candidates, [&](const std::string& uid) {
                    GcOwnerState st;
                    auto it = uids_.find(uid);
                    if (it == uids_.end()) return st;
                    const auto* obj = stored(it->second);
                    if (!obj) return st;
                    st.exists = true;
                    auto fs = finalizers(*obj);
                    st.waiting_for_dependents =
                        deleting(*obj) && std::find(fs.begin(), fs.end(), foreground_finalizer) != fs.end();
                    return st;
                });
                for (const auto& a : actions) {
                    bool done = apply_gc_locked(a);
                    progress |= done;
                    if (!done)
                        if (const auto* obj = stored(a.target))
                            if (auto uid = meta_str(*obj, "uid"); !uid.empty()) retry[uid] = true;
                }
            }
            progress |= finalize_namespaces_locked();
            progress |= finalize_crds_locked();
            if (!progress) break;
            // Something moved: the failed ones are planned again in the next round.
            for (auto& [uid, changed] : retry) gc_touched_[uid] = changed;
            retry.clear();
        }
        for (auto& [uid, changed] : retry) gc_touched_[uid] = changed;
    }

    const json::value* stored(const ObjectRef& ref) const {
        auto b = data_.find(ref.storage_key);
        if (b == data_.end()) return nullptr;
        auto it = b->second.find(object_store_detail::object_key(ref.namespace_, ref.name));
        return it == b->second.end() ? nullptr : &it->second;
    }

    bool apply_gc_locked(const GcAction& a) {
        using namespace object_store_detail;
        const auto* cur = stored(a.target);
        if (!cur) return false;
        try {
            return apply_gc_to_locked(a, *cur);
        } catch (const StoreError&) {
            return false;  // the object changed under the plan; the next round plans again
        }
    }

    bool apply_gc_to_locked(const GcAction& a, const json::value& current) {
        using namespace object_store_detail;
        const auto* cur = &current;
        auto r = info_for_storage(a.target.storage_key);
        switch (a.type) {
        case GcAction::Type::DeleteBackground:
        case GcAction::Type::DeleteForeground: {
            DeleteOptions d;
            d.propagation_policy = a.type == GcAction::Type::DeleteForeground ? "Foreground" : "Background";
            remove_locked(r, a.target.namespace_, a.target.name, d);
            return true;
        }
        case GcAction::Type::RemoveOwnerRefs: {
            json::value obj = *cur;
            auto& md = meta(obj);
            if (auto* refs = md.if_contains("ownerReferences"); refs && refs->is_array()) {
                auto& arr = refs->get_array();
                json::array kept;
                for (const auto& ref : arr) {
                    auto uid = ref.is_object() ? str(&ref.get_object(), "uid") : std::string();
                    if (std::find(a.owner_uids.begin(), a.owner_uids.end(), uid) == a.owner_uids.end()) kept.push_back(ref);
                }
                if (kept.size() == arr.size()) return false;
                if (kept.empty()) md.erase("ownerReferences");
                else md["ownerReferences"] = std::move(kept);
            }
            commit_locked(r, a.target.namespace_, a.target.name, std::move(obj));
            return true;
        }
        case GcAction::Type::RemoveFinalizer: {
            json::value obj = *cur;
            auto fs = finalizers(obj);
            if (std::erase(fs, a.finalizer) == 0) return false;
            set_finalizers(obj, fs);
            commit_locked(r, a.target.namespace_, a.target.name, std::move(obj));
            return true;
        }
        }
        return false;
    }

    /// A terminating namespace goes away once nothing is left in it.
    bool finalize_namespaces_locked() {
        using namespace object_store_detail;
        auto nsr = *registry_.find("", "v1", "namespaces");
        auto b = data_.find(nsr.storage_key());
        if (b == data_.end()) return false;
        std::vector<std::string> done;
        for (const auto& [name, obj] : b->second) {
            if (!deleting(obj) || !finalizers(obj).empty()) continue;
            bool empty = true;
            for (const auto& [sk, bucket] : data_) {
                auto it = bucket.lower_bound(name + "/");
                if (it != bucket.end() && it->first.starts_with(name + "/")) {
                    empty = false;
                    break;
                }
            }
            if (empty) done.push_back(name);
        }
        for (const auto& name : done) erase_locked(nsr, "", name);
        return !done.empty();
    }

    /// A terminating CRD loses its cleanup finalizer once its objects are gone.
    bool finalize_crds_locked() {
        using namespace object_store_detail;
        auto crdr = *registry_.find("apiextensions.k8s.io", "v1", "customresourcedefinitions");
        auto b = data_.find(crdr.storage_key());
        if (b == data_.end()) return false;
        std::vector<std::string> done;
        for (const auto& [name, obj] : b->second) {
            if (!deleting(obj)) continue;
            auto fs = finalizers(obj);
            if (std::find(fs.begin(), fs.end(), crd_cleanup_finalizer) == fs.end()) continue;
            auto sk = crd_storage_key(obj);
            auto bucket = data_.find(sk);
            if (bucket == data_.end() || bucket->second.empty()) done.push_back(name);
        }
        for (const auto& name : done) {
            json::value obj = b->second.at(name);
            auto fs = finalizers(obj);
            std::erase(fs, std::string(crd_cleanup_finalizer));
            set_finalizers(obj, fs);
            commit_locked(crdr, "", name, std::move(obj));
        }
        return !done.empty();
    }

    // ---- custom resource definitions --------------------------------------------------------

    static bool is_pod(const ResourceInfo& r) { return r.group.empty() && r.plural == "pods"; }

    static bool is_crd(const ResourceInfo& r) {
        return r.group == "apiextensions.k8s.io" && r.plural == "customresourcedefinitions";
    }

    static std::string crd_storage_key(const json::value& crd) {
        const auto* spec = crd.get_object().if_contains("spec");
        if (!spec || !spec->is_object()) return "/";
        const auto* names = spec->get_object().if_contains("names");
        return object_store_detail::str(&spec->get_object(), "group") + "/" +
               object_store_detail::str(names ? names->if_object() : nullptr, "plural");
    }

    static std::vector<FieldError> validate_crd(const json::value& crd, const std::string& name, const json::value* old) {
        using object_store_detail::str;
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

    static void add_crd_condition(json::value& crd, const std::string& type, const std::string& status,
                                  const std::string& reason, const std::string& message, const std::string& when = {}) {
        auto& o = crd.get_object();
        auto& st = o["status"];
        if (!st.is_object()) st = json::object();
        auto& conds = st.get_object()["conditions"];
        if (!conds.is_array()) conds = json::array();
        for (auto& c : conds.get_array())
            if (c.is_object() && object_store_detail::str(&c.get_object(), "type") == type) {
                auto& co = c.get_object();
                if (object_store_detail::str(&co, "status") != status && !when.empty()) co["lastTransitionTime"] = when;
                co["status"] = status;
                co["reason"] = reason;
                co["message"] = message;
                return;
            }
        json::object c{{"type", type}, {"status", status}, {"reason", reason}, {"message", message}};
        if (!when.empty()) c["lastTransitionTime"] = when;
        conds.get_array().push_back(std::move(c));
    }

    /// What the apiextensions controllers report once a CRD is served.
    void set_crd_status(json::value& crd, const json::value* old) const {
        auto& o = crd.get_object();
        if (old)
            if (const auto* os = old->get_object().if_contains("status")) o["status"] = *os;
        if (!o["status"].is_object()) o["status"] = json::object();
        auto t = now();
        const json::value spec = o.at("spec");  // a copy: o's members move as status grows
        json::object accepted = spec.at("names").get_object();
        auto served_infos = resources_from_crd(crd);
        if (!accepted.contains("singular") && !served_infos.empty()) accepted["singular"] = served_infos.front().singular;
        if (!accepted.contains("listKind"))
            accepted["listKind"] = std::string(accepted.at("kind").get_string()) + "List";
        add_crd_condition(crd, "NamesAccepted", "True", "NoConflicts", "no conflicts found", t);
        add_crd_condition(crd, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted", t);
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

    void register_crd_locked(const json::value& crd) {
        auto infos = resources_from_crd(crd);
        if (infos.empty()) return;
        const auto& versions = crd.at("spec").at("versions").get_array();
        for (auto& info : infos)
            for (const auto& v : versions)
                if (object_store_detail::str(&v.get_object(), "name") == info.version)
                    if (const auto* sch = v.get_object().if_contains("schema"); sch && sch->is_object())
                        if (const auto* oa = sch->get_object().if_contains("openAPIV3Schema"))
                            info.schema = std::make_shared<const StructuralSchema>(StructuralSchema::from_json(*oa));
        registry_.remove(infos.front().group, infos.front().plural);
        for (auto& info : infos) registry_.add(std::move(info));
    }

    void unregister_crd_locked(const json::value& crd) {
        auto sk = crd_storage_key(crd);
        auto slash = sk.find('/');
        registry_.remove(sk.substr(0, slash), sk.substr(slash + 1));
        hub_.close_resource(sk);
        if (auto b = data_.find(sk); b != data_.end())
            for (const auto& [key, obj] : b->second) {
                uids_.erase(object_store_detail::meta_str(obj, "uid"));
                gc_unindex_locked(obj, ObjectRef{sk, object_store_detail::meta_str(obj, "namespace"),
                                                 object_store_detail::meta_str(obj, "name")});
            }
        data_.erase(sk);
    }

    void delete_crd_instances_locked(const json::value& crd) {
        auto sk = crd_storage_key(crd);
        auto bucket = data_.find(sk);
        if (bucket == data_.end()) return;
        auto r = info_for_storage(sk);
        std::vector<std::string> keys;
        for (const auto& [key, obj] : bucket->second) keys.push_back(key);
        for (const auto& key : keys) {
            auto slash = key.find('/');
            std::string ns = r.namespaced ? key.substr(0, slash) : "";
            std::string name = r.namespaced ? key.substr(slash + 1) : key;
            if (find(r, ns, name)) remove_locked(r, ns, name, {});
        }
    }

    void check_crd_not_terminating_locked(const ResourceInfo& r) const {
        auto crdr = *registry_.find("apiextensions.k8s.io", "v1", "customresourcedefinitions");
        const auto* crd = find(crdr, "", r.plural + "." + r.group);
        if (crd && object_store_detail::deleting(*crd))
            throw StoreError(store_status::method_not_allowed(
                r.group, r.plural, "create not allowed while custom resource definition is terminating"));
    }

    // ---- pods/binding ----------------------------------------------------------------------

    json::value bind_locked(const std::string& ns, const std::string& pod_name, const json::value& binding) {
        using namespace object_store_detail;
        auto r = resolve({"", "v1", "pods"});
        const auto& pod = find_or_throw(r, ns, pod_name);
        const json::object* target = nullptr;
        if (binding.is_object())
            if (const auto* t = binding.get_object().if_contains("target")) target = t->if_object();
        auto node = str(target, "name");
        if (node.empty())
            throw StoreError(store_status::invalid("Binding", "", pod_name, {field::required("target.name", "")}));
        if (deleting(pod))
            throw StoreError(store_status::conflict("", "pods/binding", pod_name,
                                                    "pod " + pod_name + " is being deleted, cannot be assigned to a host"));
        const auto* spec = pod.get_object().if_contains("spec");
        auto current = str(spec ? spec->if_object() : nullptr, "nodeName");
        if (!current.empty())
            throw StoreError(store_status::conflict("", "pods/binding", pod_name,
                                                    "pod " + pod_name + " is already assigned to node " + go::quote(current)));
        json::value obj = pod;
        auto& o = obj.get_object();
        if (!o["spec"].is_object()) o["spec"] = json::object();
        o["spec"].get_object()["nodeName"] = node;
        if (const auto* bm = meta(binding))
            if (const auto* ann = bm->if_contains("annotations"); ann && ann->is_object()) {
                auto& dst = meta(obj)["annotations"];
                if (!dst.is_object()) dst = json::object();
                for (const auto& kv : ann->get_object()) dst.get_object()[kv.key()] = kv.value();
            }
        auto& st = o["status"];
        if (!st.is_object()) st = json::object();
        auto& conds = st.get_object()["conditions"];
        if (!conds.is_array()) conds = json::array();
        json::object scheduled{{"type", "PodScheduled"}, {"status", "True"}, {"lastProbeTime", nullptr},
                               {"lastTransitionTime", now()}};
        bool replaced = false;
        for (auto& c : conds.get_array())
            if (c.is_object() && str(&c.get_object(), "type") == "PodScheduled") {
                c = scheduled;
                replaced = true;
            }
        if (!replaced) conds.get_array().push_back(std::move(scheduled));
        write_locked(r, ns, pod_name, std::move(obj));
        return json::object{{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()},
                            {"status", "Success"}, {"code", 201}};
    }

    // ---- list / watch ------------------------------------------------------------------------

    struct Selection {
        api::LabelSelector labels;
        FieldSelector fields;
        bool event_source = false;  // selects on an Event's "source" label (not a plain path)
        bool matches(const json::value& obj) const {
            const auto* m = object_store_detail::meta(obj);
            const json::object* lbl = nullptr;
            if (m)
                if (const auto* l = m->if_contains("labels")) lbl = l->if_object();
            if (!labels.matches(lbl)) return false;
            return event_source ? fields.matches(event_selectable_fields(obj)) : fields.matches(obj);
        }
        bool everything() const { return labels.empty() && fields.empty(); }
    };

    static Selection parse_selection(const ResourceInfo& r, const std::string& label_text, const std::string& field_text) {
        Selection s;
        try {
            s.labels = api::LabelSelector::parse(label_text);
            s.fields = FieldSelector::parse(field_text);
        } catch (const api::SelectorError& e) {
            throw StoreError(store_status::bad_request(e.what()));
        }
        const bool events_v1 = r.group == "events.k8s.io" && r.plural == "events";
        if (events_v1) {
            // Its labels name the core ones the storage selects on.
            for (const auto& f : s.fields.fields())
                if (!events_v1_field_label(f)) throw StoreError(store_status::bad_request("field label not supported: " + f));
            s.fields = s.fields.renamed([](const std::string& f) { return *events_v1_field_label(f); });
        }
        const auto& extra = object_store_detail::extra_selectable_fields(r.storage_group(), r.plural);
        for (const auto& f : s.fields.fields()) {
            if (f == "metadata.name" || f == "metadata.namespace") continue;
            if (std::find(extra.begin(), extra.end(), f) != extra.end()) continue;
            if (r.custom)
                throw StoreError(store_status::bad_request(go::quote(f) + " is not a known field selector: only " +
                                                           "\"metadata.name\", \"metadata.namespace\""));
            throw StoreError(store_status::bad_request("field label not supported: " + f));
        }
        const auto fs = s.fields.fields();
        s.event_source = r.storage_group().empty() && r.plural == "events" &&
                         std::find(fs.begin(), fs.end(), "source") != fs.end();
        return s;
    }

    static std::string encode_continue(std::int64_t rv, const std::string& start) {
        json::object t{{"v", "meta.k8s.io/v1"}, {"rv", rv}, {"start", start}};
        return object_store_detail::url_safe(client::base64_encode(json::serialize(t)));
    }

    static std::pair<std::int64_t, std::string> decode_continue(const std::string& token) {
        auto bad = [](const std::string& why) {
            return StoreError(store_status::bad_request("continue key is not valid: " + why));
        };
        auto raw = object_store_detail::from_url_safe(token);
        if (!raw) throw bad("illegal base64 data");
        boost::system::error_code ec;
        auto v = json::parse(*raw, ec);
        if (ec || !v.is_object()) throw bad("the token is not a JSON object");
        const auto& o = v.get_object();
        const auto* ver = o.if_contains("v");
        if (!ver || !ver->is_string() || ver->get_string() != "meta.k8s.io/v1")
            throw bad("server does not recognize this encoded key version");
        const auto* rv = o.if_contains("rv");
        const auto* start = o.if_contains("start");
        if (!rv || !rv->is_int64() || !start || !start->is_string()) throw bad("incorrect encoded start resourceVersion");
        return {rv->get_int64(), std::string(start->get_string())};
    }

    json::value list_locked(const ResourceInfo& r, const std::string& ns_in, const ListOptions& opts) const {
        using namespace object_store_detail;
        const std::string ns = r.namespaced ? ns_in : "";
        auto sel = parse_selection(r, opts.label_selector, opts.field_selector);
        std::int64_t limit = opts.limit > 0 ? opts.limit : 0;
        std::int64_t at = rv_;  // the revision listed
        std::string start;
        if (!opts.continue_token.empty()) {
            auto [rv, key] = decode_continue(opts.continue_token);
            start = key;
            if (rv > 0) {
                if (!log_.covers(rv)) {
                    auto st = store_status::expired(
                        "The provided continue parameter is too old to display a consistent list result. You can "
                        "start a new list without the continue parameter, or use the continue token in this "
                        "response to retrieve the remainder of the results. Continuing with the provided token "
                        "results in an inconsistent list - objects that were created, modified, or deleted between "
                        "the time the first chunk was returned and now may show up in the list.");
                    st.metadata.continue_ = encode_continue(-1, key);
                    throw StoreError(std::move(st));
                }
                at = rv;
            }
        } else if (opts.resource_version == "0") {
            limit = 0;  // served from the watch cache: the whole list, as the real server does
        } else if (!opts.resource_version.empty()) {
            auto n = parse_rv(opts.resource_version);
            if (!n)
                throw StoreError(store_status::bad_request("invalid resource version: " + opts.resource_version));
            if (*n > rv_) throw StoreError(store_status::too_large_resource_version(*n, rv_));
            bool exact = opts.resource_version_match == "Exact" || (opts.resource_version_match.empty() && limit > 0);
            if (exact) {
                if (!log_.covers(*n))
                    throw StoreError(store_status::expired("too old resource version: " + std::to_string(*n) + " (" +
                                                           std::to_string(log_.compacted_rv()) + ")"));
                at = *n;
            }
        }

        static const Bucket empty_bucket;
        auto bit = data_.find(r.storage_key());
        const Bucket& current = bit == data_.end() ? empty_bucket : bit->second;
        Bucket snapshot;
        const Bucket* view = &current;
        if (at < rv_) {
            snapshot = current;
            log_.for_each_after_newest_first(at, [&](const Change& c) {
                if (c.storage_key != r.storage_key()) return;
                auto key = object_key(c.namespace_, c.name);
                if (c.type == "ADDED") snapshot.erase(key);
                else snapshot[key] = *c.previous;
            });
            view = &snapshot;
        }

        std::string lo = ns.empty() ? std::string() : ns + "/";
        auto in_scope = [&](const std::string& key) { return lo.empty() || key.starts_with(lo); };
        auto it = view->lower_bound(std::max(lo, start));
        json::array items;
        std::string last;
        for (; it != view->end() && in_scope(it->first); ++it) {
            if (limit > 0 && static_cast<std::int64_t>(items.size()) >= limit) break;
            if (!sel.matches(it->second)) continue;
            json::value item = served(it->second, r);
            if (!r.custom) {
                item.get_object().erase("kind");
                item.get_object().erase("apiVersion");
            }
            items.push_back(std::move(item));
            last = it->first;
        }
        json::object md{{"resourceVersion", std::to_string(at)}};
        if (it != view->end() && in_scope(it->first) && limit > 0) {
            md["continue"] = encode_continue(at, last + std::string(1, '\0'));
            if (sel.everything()) {
                std::int64_t remaining = 0;
                for (auto rest = it; rest != view->end() && in_scope(rest->first); ++rest) ++remaining;
                md["remainingItemCount"] = remaining;
            }
        }
        return json::object{{"kind", r.list_kind}, {"apiVersion", r.api_version()}, {"metadata", std::move(md)},
                            {"items", std::move(items)}};
    }

    std::shared_ptr<Watch> watch_locked(const ResourceInfo& r, const std::string& ns, const WatchOptions& opts) {
        using namespace object_store_detail;
        auto sel = std::make_shared<const Selection>(parse_selection(r, opts.label_selector, opts.field_selector));
        WatchFilter f;
        f.storage_key = r.storage_key();
        f.namespace_ = r.namespaced ? ns : "";
        f.api_version = r.api_version();
        f.kind = r.kind;
        if (!sel->everything()) f.matches = [sel](const json::value& o) { return sel->matches(o); };
        f.bookmarks = opts.allow_bookmarks;
        auto w = hub_.make(f);
        if (opts.resource_version.empty() || opts.resource_version == "0") {
            auto b = data_.find(r.storage_key());
            if (b != data_.end()) {
                std::string lo = f.namespace_.empty() ? std::string() : f.namespace_ + "/";
                for (auto it = b->second.lower_bound(lo); it != b->second.end() && (lo.empty() || it->first.starts_with(lo)); ++it)
                    if (!f.matches || f.matches(it->second))
                        w->push(WatchEvent{"ADDED", std::make_shared<const json::value>(served(it->second, r))}, false);
            }
        } else {
            auto n = parse_rv(opts.resource_version);
            if (!n) throw StoreError(store_status::bad_request("invalid resource version: " + opts.resource_version));
            if (!log_.covers(*n)) {
                auto st = store_status::expired("too old resource version: " + std::to_string(*n) + " (" +
                                                std::to_string(log_.compacted_rv()) + ")");
                w->close(WatchEvent{"ERROR", std::make_shared<const json::value>(api::to_json(st))});
                return w;
            }
            log_.for_each_after(*n, [&](const Change& c) {
                if (auto e = event_for(w->filter(), c)) w->push(std::move(*e), false);
            });
        }
        hub_.attach(w);
        return w;
    }

    // ---- state -------------------------------------------------------------------------------

    StoreOptions opts_;
    mutable std::mutex mu_;
    ResourceRegistry registry_;
    std::map<std::string, Bucket> data_;              // storage key -> object key -> object
    std::unordered_map<std::string, ObjectRef> uids_;  // for the garbage collector
    std::unordered_map<std::string, std::set<ObjectRef>> dependents_;  // owner uid -> objects naming it
    std::map<std::string, bool> gc_touched_;  // uid -> changed (else only named as an owner) since the last plan
    ChangeLog log_;
    WatchHub hub_;
    std::int64_t rv_ = 0;
    bool dry_ = false;  // the write under way is a dry run (set by mutate, under mu_)
    std::vector<std::string> unknown_seen_;  // for unknown_fields_seen()
    std::mt19937_64 rng_;
    std::vector<Change> outbox_;  // written under mu_, dispatched to listeners outside it

    std::mutex outbox_mu_;  // guards listeners_ and dispatching_; taken before mu_, never inside it
    std::map<std::size_t, Listener> listeners_;
    std::size_t next_listener_ = 0;
    bool dispatching_ = false;
    std::thread::id dispatcher_;
    std::uint64_t batches_ = 0;  // batches dispatched: remove_listener waits for the next one
    std::condition_variable batch_done_;
};

} // namespace vck::testing
