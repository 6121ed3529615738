// ObjectDeletion: DELETE of an object or a collection, as the registry's deletion strategy
// runs it: uid and resourceVersion preconditions (409), propagationPolicy (Orphan and
// Foreground add their finalizers; the garbage collector in convergence.hpp acts on them),
// protected namespaces (403), graceful deletion of a pod bound to a node (a deletionTimestamp
// its grace period ahead; it stays until a delete with grace period 0), and objects held by
// finalizers (deletionTimestamp set, generation bumped, kept). Deleting a namespace or a CRD
// starts their cascade: the namespace's content or the CRD's objects are deleted at once; the
// namespace and the CRD's cleanup finalizer go once that is done (convergence.hpp).
// Used under ObjectStore's lock.
#pragma once

#include <vck/sandbox/storage/crd_registration.hpp>
#include <vck/sandbox/validation/field_error.hpp>
#include <vck/sandbox/storage/garbage_collector.hpp>
#include <vck/sandbox/storage/list_watch_serving.hpp>
#include <vck/sandbox/storage/store_state.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vck::sandbox {

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

class ObjectDeletion {
public:
    ObjectDeletion(StoreState& state, const ListWatchServing& lists) : s(state), lists(lists) {}

    /// DELETE of one object: the object as deleted, or as it now waits (finalizers, grace).
    DeleteResult remove(const ResourceInfo& r, std::string ns, const std::string& name, const StoreDeleteOptions& opts) {
        using namespace stored_object;
        if (!r.namespaced) ns.clear();
        const json::value& existing = s.find_or_throw(r, ns, name);
        if (opts.precondition_uid && *opts.precondition_uid != meta_str(existing, "uid"))
            throw StoreError(store_status::conflict(
                r.group, r.plural, name,
                StoreState::storage_precondition_error(r, ns, name, "UID", *opts.precondition_uid,
                                                       meta_str(existing, "uid"))));
        if (opts.precondition_resource_version &&
            *opts.precondition_resource_version != meta_str(existing, "resourceVersion"))
            throw StoreError(store_status::conflict(
                r.group, r.plural, name,
                StoreState::storage_precondition_error(r, ns, name, "ResourceVersion",
                                                       *opts.precondition_resource_version,
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
            meta(obj)["deletionTimestamp"] = s.now_plus(grace);
            if (grace == 0 && finalizers(obj).empty()) return {s.erase(r, ns, name), true};
            return {s.write(r, ns, name, std::move(obj)), false};
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
        if (fs.empty() && !is_namespace && grace == 0) return {s.erase(r, ns, name), true};

        set_finalizers(obj, fs);
        auto& md = meta(obj);
        md["deletionTimestamp"] = s.now_plus(grace);
        md["deletionGracePeriodSeconds"] = grace;
        if (generation(obj) > 0) md["generation"] = generation(obj) + 1;  // as the registry's BeforeDelete
        if (is_namespace) obj.get_object()["status"] = json::object{{"phase", "Terminating"}};
        if (is_crd(r)) add_crd_condition(obj, "Terminating", "True", "InstanceDeletionInProgress",
                                         "CustomResourceDefinition marked for deletion");
        auto stored = s.write(r, ns, name, std::move(obj));
        if (is_namespace && !s.dry) delete_namespace_content(name);
        if (is_crd(r) && !s.dry) delete_crd_instances(stored);
        return {stored, false};
    }

    /// DELETE on a collection: deletes what the selectors match; returns the list of them.
    json::value remove_collection(const ResourceInfo& r, const std::string& ns, const StoreListOptions& sel,
                                  const StoreDeleteOptions& opts) {
        StoreListOptions all = sel;
        all.limit = 0;
        all.continue_token.clear();
        all.resource_version.clear();
        auto listed = lists.list(r, ns, all);
        json::array deleted;
        for (const auto& item : listed.get_object()["items"].get_array()) {
            auto ins = stored_object::meta_str(item, "namespace");
            auto nm = stored_object::meta_str(item, "name");
            try {
                deleted.push_back(StoreState::served(remove(r, ins, nm, opts).object, r));
            } catch (const StoreError& e) {
                if (e.code() != 404) throw;  // already gone by cascade
            }
        }
        listed.get_object()["items"] = std::move(deleted);
        listed.get_object()["metadata"] = json::object{{"resourceVersion", std::to_string(s.rv)}};
        return listed;
    }

private:
    static bool is_pod(const ResourceInfo& r) { return r.group.empty() && r.plural == "pods"; }

    void delete_namespace_content(const std::string& ns) {
        std::vector<std::pair<ResourceInfo, std::string>> victims;
        for (const auto& [sk, bucket] : s.data) {
            auto prefix = ns + "/";
            for (auto it = bucket.lower_bound(prefix); it != bucket.end() && it->first.starts_with(prefix); ++it)
                victims.emplace_back(s.info_for_storage(sk), it->first.substr(prefix.size()));
        }
        for (const auto& [r, name] : victims)
            if (s.find(r, ns, name)) remove(r, ns, name, {});
    }

    void delete_crd_instances(const json::value& crd) {
        auto sk = crd_storage_key(crd);
        auto bucket = s.data.find(sk);
        if (bucket == s.data.end()) return;
        auto r = s.info_for_storage(sk);
        std::vector<std::string> keys;
        for (const auto& [key, obj] : bucket->second) keys.push_back(key);
        for (const auto& key : keys) {
            auto slash = key.find('/');
            std::string ns = r.namespaced ? key.substr(0, slash) : "";
            std::string name = r.namespaced ? key.substr(slash + 1) : key;
            if (s.find(r, ns, name)) remove(r, ns, name, {});
        }
    }

    StoreState& s;  // the store's state, named short: nearly every line uses it
    const ListWatchServing& lists;
};

} // namespace vck::sandbox
