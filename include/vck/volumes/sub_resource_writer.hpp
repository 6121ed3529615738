// SubResourceWriter: how VolumeManagerReconciler reads and writes a VolumeManager's
// sub-resources (pods, PersistentVolumes, claims, storage classes, node labels).
// Guarantees:
// - Reads come from the caches, by owner index, read once per reconcile (owned_objects).
// - Objects this controller created that the caches do not show yet count as there
//   (expectations, runtime/expectations.hpp, one per kind, by VolumeManager uid), so a
//   reconcile woken by one new object's event does not create its siblings a second time. A
//   record goes once the cache shows the object, on its deletion, or after
//   `expectation_ttl` should its event never come.
// - A create finding the object there already (the cache was behind) is no error; a delete
//   or patch of an object already gone is no error either.
// - A node label is patched only when the cache shows it otherwise, or when this writer
//   patched it to another value that the cache does not show yet: a removal right after a
//   set is never skipped because the node's watch event is still on its way.
// - Each create and each retained PV's patch is recorded in OwnWrites
//   (runtime/own_writes.hpp): its watch event costs no reconcile (the pass that made it went
//   on with the object the server returned, and expects it).
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/storage_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/client/client.hpp>
#include <vck/client/ignore_not_found.hpp>
#include <vck/handlers/data_handler.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/handlers/reclaim_policy.hpp>
#include <vck/runtime/expectations.hpp>
#include <vck/runtime/own_writes.hpp>
#include <vck/volumes/reconciler_options.hpp>
#include <vck/volumes/sub_resource_ownership.hpp>
#include <vck/volumes/volume_manager_events.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vck::volumes {

/// A VolumeManager's cached sub-resources, by volume key.
using OwnedObjects = std::map<std::string, handlers::ObservedObjects>;

class SubResourceWriter {
public:
    static constexpr std::chrono::seconds expectation_ttl{30};

    SubResourceWriter(client::Client& c, const Caches& caches, VolumeManagerEvents& events, runtime::OwnWrites& own)
        : client_(c), caches_(caches), events_(events), own_(own) {}

    /// The sub-resources the caches hold for `vm` (by its owner annotation), by volume key
    /// (their volume label). Read once per reconcile: a compressed cache decodes each read.
    OwnedObjects owned_objects(const api::VolumeManager& vm) const {
        OwnedObjects out;
        auto collect = [&](const auto& informer, auto member) {
            for (const auto& p : informer->store().by_index(owner_uid_index, vm.metadata.uid)) {
                auto it = p->metadata.labels.find(std::string(handlers::naming::volume_label));
                if (it != p->metadata.labels.end()) (out[it->second].*member).push_back(*p);
            }
        };
        collect(caches_.pods, &handlers::ObservedObjects::pods);
        collect(caches_.persistent_volumes, &handlers::ObservedObjects::persistent_volumes);
        collect(caches_.claims, &handlers::ObservedObjects::claims);
        return out;
    }

    /// One volume's sub-resources (its key `volume_key`): those cached, and those created but
    /// not cached yet.
    handlers::ObservedObjects observe(const api::VolumeManager& vm, const std::string& volume_key, const OwnedObjects& owned) {
        handlers::ObservedObjects o;
        if (auto it = owned.find(volume_key); it != owned.end()) o = it->second;
        std::lock_guard lock(mu_);
        add_expected(o.pods, expected_pods_, *caches_.pods, vm, volume_key);
        add_expected(o.persistent_volumes, expected_pvs_, *caches_.persistent_volumes, vm, volume_key);
        add_expected(o.claims, expected_claims_, *caches_.claims, vm, volume_key);
        return o;
    }

    /// Creates each desired object absent from `observed` (by name), stamped with the owner
    /// and config annotations; the created objects join `observed`. True if any was created.
    template <class T>
    boost::asio::awaitable<bool> create_missing(const api::VolumeManager& vm, const std::string& config,
                                                std::vector<T>& desired, std::vector<T>& observed) {
        bool any = false;
        for (auto& d : desired) {
            bool exists = std::any_of(observed.begin(), observed.end(),
                                      [&](const T& o) { return o.metadata.name == d.metadata.name; });
            if (exists) continue;
            d.metadata.annotations[std::string(config_annotation)] = config;
            mark_owned(d.metadata, vm);
            auto made = co_await create_ignoring_conflict(d);
            if (made) {
                expect(vm, *made);
                observed.push_back(std::move(*made));
            }
            any = true;
        }
        co_return any;
    }

    /// Creates `pod` of `vm` (marked owned by the caller), expected until the cache shows it.
    boost::asio::awaitable<bool> create_pod(const api::VolumeManager& vm, const api::Pod& pod) {
        auto made = co_await create_ignoring_conflict(pod);
        if (made) expect(vm, *made);
        co_return true;
    }

    /// The created object, or nullopt when it existed already.
    template <class T>
    boost::asio::awaitable<std::optional<T>> create_ignoring_conflict(const T& obj) {
        try {
            auto made = co_await client_.create(obj);
            ++creates_;
            own_.record(T::resource.plural, made);
            co_return made;
        } catch (const client::ApiError& e) {
            // The cache was behind: the object is there already (its watch event is on the way).
            if (!e.is(client::ErrorKind::AlreadyExists)) throw;
        }
        co_return std::nullopt;
    }

    boost::asio::awaitable<void> delete_ignoring_missing(const api::ResourceType& rt, std::string_view ns, std::string_view name) {
        {
            // Not expected any more, whether or not the cache ever showed it.
            std::lock_guard lock(mu_);
            runtime::ObjectKey key{std::string(ns), std::string(name)};
            if (rt.plural == "pods") expected_pods_.forget(key);
            if (rt.plural == "persistentvolumes") expected_pvs_.forget(key);
            if (rt.plural == "persistentvolumeclaims") expected_claims_.forget(key);
        }
        if (co_await client::ignore_not_found(client_.remove(rt, ns, name, client::DeleteOptions().propagation("Background"))))
            ++deletes_;
    }

    /// A retained PV: it keeps its labels, claimRef and source (Kubernetes marks it Released
    /// once its claim is gone); without the owner annotations it is no longer this
    /// VolumeManager's, so no later pass deletes it. One merge patch, once: the PV then leaves
    /// the owner index and no cleanup step names it again.
    boost::asio::awaitable<void> let_go_of(const api::VolumeManager& vm, const api::VolumeConfig& vc, const std::string& name) {
        auto patch = let_go_patch(vm.metadata.namespace_ + "/" + vm.metadata.name + " volume " + vc.id);
        boost::json::value written;
        try {
            written = co_await client_.patch(api::PersistentVolume::resource, "", name, client::PatchType::Merge, std::move(patch));
        } catch (const client::ApiError& e) {
            if (!e.is(client::ErrorKind::NotFound)) throw;
            co_return;  // gone already
        }
        own_.record(api::PersistentVolume::resource.plural, "", name, api::string_at(written, {"metadata", "resourceVersion"}));
        {
            std::lock_guard lock(mu_);
            expected_pvs_.forget(runtime::ObjectKey{"", name});
        }
        co_await events_.note(vm, "Normal", "VolumeRetained",
                              "persistent volume " + name + " of volume " + vc.id +
                                  " retained (reclaimPolicy Retain): it stays, Released once its claim is gone, with its data");
    }

    /// Sets (or with "" removes) `key` on `node`, when the cache shows it otherwise or may be
    /// behind a patch of ours to another value.
    boost::asio::awaitable<void> set_node_label(const std::string& node, const std::string& key, const std::string& value) {
        auto n = caches_.nodes->store().get(runtime::ObjectKey{"", node});
        if (!n) co_return;
        auto it = n->metadata.labels.find(key);
        std::string cached = it == n->metadata.labels.end() ? std::string() : it->second;
        if (cached == value && !label_write_pending(node, key, cached, value)) co_return;
        boost::json::object labels;
        if (value.empty()) labels[key] = nullptr;
        else labels[key] = value;
        boost::json::value patch{{"metadata", {{"labels", std::move(labels)}}}};
        co_await client::ignore_not_found(
            client_.patch(api::Node::resource, "", node, client::PatchType::Merge, std::move(patch)));
        std::lock_guard lock(mu_);
        label_writes_[{node, key}] = LabelWrite{value, std::chrono::steady_clock::now()};
    }

    /// A volume's node label: set, or removed only while it still has the volume's value.
    boost::asio::awaitable<void> ensure_node_label(const handlers::NodeLabel& label, bool present) {
        if (present) co_return co_await set_node_label(label.node, label.key, label.value);
        auto node = caches_.nodes->store().get(runtime::ObjectKey{"", label.node});
        if (!node) co_return;  // the node is gone, and its label with it
        auto it = node->metadata.labels.find(label.key);
        if (it != node->metadata.labels.end() && it->second == label.value) co_await set_node_label(label.node, label.key, "");
    }

    /// Drops what is expected of the VolumeManager of `uid` (its deletion is complete).
    void forget(const std::string& uid) {
        std::lock_guard lock(mu_);
        expected_pods_.forget_owner(uid);
        expected_pvs_.forget_owner(uid);
        expected_claims_.forget_owner(uid);
    }

    std::uint64_t creates() const { return creates_; }
    std::uint64_t deletes() const { return deletes_; }

private:
    template <class T>
    using Expected = runtime::Expectations<T>;

    /// Built outside the coroutine: GCC 12 miscompiles nested braced JSON inside one.
    static boost::json::value let_go_patch(const std::string& from) {
        return {{"metadata", {{"annotations", {{std::string(owner_uid_annotation), nullptr},
                                               {std::string(owner_name_annotation), nullptr},
                                               {std::string(handlers::retained_from_annotation), from}}}}}};
    }

    /// Adds to `seen` (a volume's cached objects) what `vm` expects of that volume. Called
    /// with mu_ held.
    template <class T, class Informer>
    void add_expected(std::vector<T>& seen, Expected<T>& expected, Informer& cache, const api::VolumeManager& vm,
                      const std::string& volume_key) {
        auto in_cache = [&](const runtime::ObjectKey& k) { return cache.store().contains(k); };
        for (auto& obj : expected.outstanding(vm.metadata.uid, in_cache)) {
            auto label = obj.metadata.labels.find(std::string(handlers::naming::volume_label));
            bool ours = label != obj.metadata.labels.end() && label->second == volume_key;
            if (ours && std::none_of(seen.begin(), seen.end(), [&](const T& o) { return o.metadata.name == obj.metadata.name; }))
                seen.push_back(std::move(obj));
        }
    }
    void expect(const api::VolumeManager& vm, const api::Pod& o) { expect_in(expected_pods_, vm, o); }
    void expect(const api::VolumeManager& vm, const api::PersistentVolume& o) { expect_in(expected_pvs_, vm, o); }
    void expect(const api::VolumeManager& vm, const api::PersistentVolumeClaim& o) { expect_in(expected_claims_, vm, o); }
    template <class T>
    void expect_in(Expected<T>& expected, const api::VolumeManager& vm, const T& o) {
        std::lock_guard lock(mu_);
        expected.expect(vm.metadata.uid, o);
    }

    /// True when this writer patched `key` on `node` to a value other than `wanted` and the
    /// cache (showing `cached`) has not caught up with that patch. A write is forgotten once
    /// the cache shows it, or after `expectation_ttl`.
    bool label_write_pending(const std::string& node, const std::string& key, const std::string& cached,
                             const std::string& wanted) {
        std::lock_guard lock(mu_);
        auto now = std::chrono::steady_clock::now();
        std::erase_if(label_writes_, [&](const auto& w) { return now - w.second.at > expectation_ttl; });
        auto it = label_writes_.find({node, key});
        if (it == label_writes_.end()) return false;
        if (it->second.value == cached) {
            label_writes_.erase(it);
            return false;
        }
        return it->second.value != wanted;
    }

    struct LabelWrite {
        std::string value;
        std::chrono::steady_clock::time_point at;
    };

    client::Client& client_;
    const Caches& caches_;
    VolumeManagerEvents& events_;
    runtime::OwnWrites& own_;
    std::mutex mu_;
    Expected<api::Pod> expected_pods_{expectation_ttl};
    Expected<api::PersistentVolume> expected_pvs_{expectation_ttl};
    Expected<api::PersistentVolumeClaim> expected_claims_{expectation_ttl};
    std::map<std::pair<std::string, std::string>, LabelWrite> label_writes_;  // (node, key): our last patch
    std::atomic<std::uint64_t> creates_{0}, deletes_{0};
};

} // namespace vck::volumes
