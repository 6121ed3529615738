// StoreState: what ObjectStore's parts share (the objects by resource, the one global
// resourceVersion, the change log, the watch hub, the resource registry, the owner index of
// the garbage collector), with the primitive reads and writes every part goes through. Its
// writes keep the invariants the parts rely on:
// - every stored change bumps the resourceVersion by one and is appended, in that order, to
//   the change log, to the watches (notified at once) and to the outbox (dispatched to the
//   change listeners by ObjectStore once its lock is released);
// - the uid and owner indices always describe what is stored, and every written or removed
//   object is marked for the next garbage collection plan (convergence.hpp);
// - erasing a CRD forgets the resources it served with all their objects and watches;
// - under `dry` (a dry run) write and erase only answer what they would have stored.
// Not thread-safe by itself: every member is used under ObjectStore's lock.
#pragma once

#include <vck/api/time.hpp>
#include <vck/sandbox/storage/change_log.hpp>
#include <vck/sandbox/storage/crd_registration.hpp>
#include <vck/sandbox/storage/garbage_collector.hpp>
#include <vck/sandbox/validation/resource_registry.hpp>
#include <vck/sandbox/validation/store_error.hpp>
#include <vck/sandbox/storage/store_requests.hpp>
#include <vck/sandbox/storage/stored_object.hpp>
#include <vck/sandbox/storage/watch_hub.hpp>

#include <boost/json.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace vck::sandbox {

namespace json = boost::json;

struct StoreState {
    using Bucket = std::map<std::string, json::value>;  // object key -> object

    explicit StoreState(ObjectStoreOptions options)
        : opts(std::move(options)), log(opts.history), hub(opts.watch_queue_limit), rng(std::random_device{}()) {
        if (!opts.clock) opts.clock = [] { return std::chrono::system_clock::now(); };
    }

    // ---- reads ------------------------------------------------------------------------------

    /// The resource a request's URL names; 404 when none is served there.
    ResourceInfo resolve(const ResourceId& id) const {
        const auto* r = registry.find(id.group, id.version, id.resource);
        if (!r) throw StoreError(store_status::no_such_resource());
        return *r;
    }

    /// The stored object as served in r's version; list items of built-ins carry no kind.
    static json::value served(const json::value& obj, const ResourceInfo& r) {
        return served_as(obj, r.api_version());
    }

    std::string now() const { return now_plus(0); }

    /// The time `seconds` from now, as metadata timestamps are written.
    std::string now_plus(std::int64_t seconds) const {
        return api::format_rfc3339(opts.clock() + std::chrono::seconds(seconds));
    }

    /// A random (version 4) uid.
    std::string new_uid() {
        std::uniform_int_distribution<int> byte(0, 255);
        unsigned char b[16];
        for (auto& x : b) x = static_cast<unsigned char>(byte(rng));
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

    const json::value* find(const ResourceInfo& r, const std::string& ns, const std::string& name) const {
        auto b = data.find(r.storage_key());
        if (b == data.end()) return nullptr;
        auto it = b->second.find(stored_object::object_key(r.namespaced ? ns : "", name));
        return it == b->second.end() ? nullptr : &it->second;
    }
    const json::value& find_or_throw(const ResourceInfo& r, const std::string& ns, const std::string& name) const {
        const auto* o = find(r, ns, name);
        if (!o) throw StoreError(store_status::not_found(r.group, r.plural, name));
        return *o;
    }

    /// The resource whose objects are stored under storage_key (in any of its versions).
    ResourceInfo info_for_storage(const std::string& storage_key) const {
        auto slash = storage_key.find('/');
        const auto* r = registry.find_any_version(storage_key.substr(0, slash), storage_key.substr(slash + 1));
        if (!r) throw StoreError(store_status::no_such_resource());
        return *r;
    }

    /// The object ref names, or null.
    const json::value* stored(const ObjectRef& ref) const {
        auto b = data.find(ref.storage_key);
        if (b == data.end()) return nullptr;
        auto it = b->second.find(stored_object::object_key(ref.namespace_, ref.name));
        return it == b->second.end() ? nullptr : &it->second;
    }

    // ---- what refusals name ---------------------------------------------------------------

    /// The etcd key the real server names in a storage error.
    static std::string registry_path(const ResourceInfo& r, const std::string& ns, const std::string& name) {
        std::string p = "/registry/";
        if (r.custom || r.group == "apiextensions.k8s.io") p += r.group + "/";
        p += r.plural + "/" + stored_object::object_key(ns, name);
        return p;
    }

    /// The message of a Conflict for a failed uid or resourceVersion precondition.
    static std::string storage_precondition_error(const ResourceInfo& r, const std::string& ns, const std::string& name,
                                                  std::string_view what, const std::string& want,
                                                  const std::string& have) {
        return "StorageError: invalid object, Code: 4, Key: " + registry_path(r, ns, name) +
               ", ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: " + std::string(what) +
               " in precondition: " + want + ", " + std::string(what) + " in object meta: " + have;
    }

    // ---- owner index --------------------------------------------------------------------------

    // The garbage collector (convergence.hpp) plans over what writes touched, not over the
    // whole store, so a write costs the same with 20 or 20,000 objects stored. A written or
    // removed object is "changed": it is planned again, and so are its dependents (their owner
    // may be gone or now waiting). Its owners are planned again too (they may have lost their
    // last dependent); a deleting owner with the orphan or foregroundDeletion finalizer brings
    // all its dependents, which is what the planner needs to decide about its finalizer.

    void gc_index(const json::value& obj, const ObjectRef& ref) {
        for (auto& owner : stored_object::owner_uids(obj)) {
            dependents[owner].insert(ref);
            gc_touched.try_emplace(std::move(owner), false);
        }
        if (auto uid = stored_object::meta_str(obj, "uid"); !uid.empty()) gc_touched[uid] = true;
    }
    void gc_unindex(const json::value& obj, const ObjectRef& ref) {
        for (auto& owner : stored_object::owner_uids(obj)) {
            if (auto d = dependents.find(owner); d != dependents.end()) {
                d->second.erase(ref);
                if (d->second.empty()) dependents.erase(d);
            }
            gc_touched.try_emplace(std::move(owner), false);
        }
        if (auto uid = stored_object::meta_str(obj, "uid"); !uid.empty()) gc_touched[uid] = true;
    }

    // ---- writes -------------------------------------------------------------------------------

    /// Records a change at the current resourceVersion: log, watches, outbox.
    void emit(const ResourceInfo& r, std::string type, const std::string& ns, const std::string& name,
              const json::value& obj, json::value previous) {
        auto before = previous.is_null() ? nullptr : std::make_shared<const json::value>(std::move(previous));
        StoreChange c{rv, std::move(type), r.storage_key(), r.storage_group(), r.plural, ns, name,
                 std::make_shared<const json::value>(obj),
                 std::move(before)};
        last_write[c.storage_key] = rv;
        log.append(c);
        hub.publish(c);
        outbox.push_back(std::move(c));
    }

    /// Stores obj (ADDED when new, MODIFIED otherwise) at a new resourceVersion.
    json::value write(const ResourceInfo& r, const std::string& ns, const std::string& name, json::value obj) {
        using namespace stored_object;
        if (dry) {
            // What would be stored: an update keeps the version it replaces, a create has none yet.
            const json::value* old = find(r, ns, name);
            if (old) meta(obj)["resourceVersion"] = meta_str(*old, "resourceVersion");
            else meta(obj).erase("resourceVersion");
            return obj;
        }
        ++rv;
        meta(obj)["resourceVersion"] = std::to_string(rv);
        auto& slot = data[r.storage_key()][object_key(ns, name)];
        json::value previous = std::move(slot);
        slot = obj;
        ObjectRef ref{r.storage_key(), ns, name};
        auto uid = meta_str(obj, "uid");
        if (!uid.empty()) uids[uid] = ref;
        if (!previous.is_null()) gc_unindex(previous, ref);
        gc_index(obj, ref);
        // Named first: the order in which emit's arguments are evaluated is unspecified, and
        // the move below may empty `previous` before a test of it in the same call.
        std::string type = previous.is_null() ? "ADDED" : "MODIFIED";
        emit(r, std::move(type), ns, name, obj, std::move(previous));
        return obj;
    }

    /// Removes the object now; the DELETED event carries the deletion's resourceVersion.
    json::value erase(const ResourceInfo& r, const std::string& ns, const std::string& name) {
        using namespace stored_object;
        auto b = data.find(r.storage_key());
        if (b == data.end()) return nullptr;
        auto it = b->second.find(object_key(ns, name));
        if (it == b->second.end()) return nullptr;
        if (dry) return it->second;
        json::value previous = std::move(it->second);
        b->second.erase(it);
        uids.erase(meta_str(previous, "uid"));
        gc_unindex(previous, ObjectRef{r.storage_key(), ns, name});
        ++rv;
        json::value gone = previous;
        meta(gone)["resourceVersion"] = std::to_string(rv);
        emit(r, "DELETED", ns, name, gone, std::move(previous));
        if (is_crd(r)) unregister_crd(gone);
        return gone;
    }

    /// Writes a new state of an existing object, or removes it when it is being deleted and
    /// its last finalizer is gone.
    json::value commit(const ResourceInfo& r, const std::string& ns, const std::string& name, json::value obj) {
        using namespace stored_object;
        if (deleting(obj) && finalizers(obj).empty() && deletion_grace(obj) == 0) {
            auto written = write(r, ns, name, std::move(obj));
            if (dry) return written;
            return erase(r, ns, name);
        }
        return write(r, ns, name, std::move(obj));
    }

    /// Forgets the resource a CRD served: its registration, its watches (closed), its objects.
    void unregister_crd(const json::value& crd) {
        auto sk = crd_storage_key(crd);
        auto slash = sk.find('/');
        registry.remove(sk.substr(0, slash), sk.substr(slash + 1));
        hub.close_resource(sk);
        if (auto b = data.find(sk); b != data.end())
            for (const auto& [key, obj] : b->second) {
                uids.erase(stored_object::meta_str(obj, "uid"));
                gc_unindex(obj, ObjectRef{sk, stored_object::meta_str(obj, "namespace"),
                                          stored_object::meta_str(obj, "name")});
            }
        data.erase(sk);
    }

    // ---- state ---------------------------------------------------------------------------------

    ObjectStoreOptions opts;
    ResourceRegistry registry;
    std::map<std::string, Bucket> data;               // storage key -> object key -> object
    std::unordered_map<std::string, ObjectRef> uids;  // for the garbage collector
    std::unordered_map<std::string, std::set<ObjectRef>> dependents;  // owner uid -> objects naming it
    std::map<std::string, bool> gc_touched;  // uid -> changed (else only named as an owner) since the last plan
    ChangeLog log;
    WatchHub hub;
    std::int64_t rv = 0;
    std::map<std::string, std::int64_t, std::less<>> last_write;  // storage key -> rv of its last change
    bool dry = false;  // the write under way is a dry run (set by ObjectStore::mutate)
    std::vector<std::string> unknown_seen;  // for ObjectStore::unknown_fields_seen()
    std::mt19937_64 rng;
    std::string root_ca_pem;  // published as ConfigMap kube-root-ca.crt (service_accounts.hpp); empty: none
    std::vector<StoreChange> outbox;  // dispatched to the change listeners outside the lock
};

} // namespace vck::sandbox
