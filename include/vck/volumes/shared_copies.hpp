// SharedCopies: who else uses a shared copy's directory (handlers::naming::shared_copy_directory)
// on a node. Volumes whose source configs are equal share one copy per node, across
// VolumeManagers and namespaces; the record of a shared copy is the union of its users' own
// records: each VolumeManager that uses it keeps an entry for it in its own status.copies
// (docs/arch.md argues why), so no one VolumeManager's deletion takes the record with it.
// Guarantees:
// - others(uid, volume, node, path) answers the entries every other volume has at (node, path),
//   other VolumeManagers' and `uid`'s other volumes of an equal config:
//   from the VolumeManager cache (an index by shared directory, so a question costs the
//   directory's users, not every VolumeManager), overlaid with what this controller planned
//   for them and the cache does not show yet (planned()). Passes of different VolumeManagers
//   therefore never both let go of a directory each thinks the other keeps (then nobody
//   would remove it), and a removal never misses a join planned a moment before (then the
//   joiner's pods would lose their data).
// - A plan is provisional until its record is written (recorded()); a pass that ends without
//   writing it (a conflict, a failed write, a node label it could not set) abandons it
//   (abandon()): what was recorded before, or the cache, answers for that VolumeManager again.
// - A join needs the joiner's own credentials to list the source with the digest the copy
//   holds (the copy planner's rule); proofs (remember_proof) are kept for `proof_ttl` (a
//   failed one for `failed_proof_ttl`, after which the listing is tried again).
// - Thread-safe.
#pragma once

#include <vck/api/volume_manager.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/runtime/informer.hpp>
#include <vck/volumes/copy_planner.hpp>
#include <vck/volumes/source_refresh.hpp>

#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace vck::volumes {

/// The VolumeManager cache's index of the shared directories each VolumeManager's record names.
inline constexpr std::string_view shared_directory_index = "vck.shared-directories";

/// What a volume's own credentials showed of its source: the listing's digest, or why the
/// listing failed.
struct SharingProof {
    std::string digest;
    std::string failure;
};

class SharedCopies {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr std::chrono::minutes proof_ttl{5};
    static constexpr std::chrono::seconds failed_proof_ttl{30};

    explicit SharedCopies(std::shared_ptr<runtime::Informer<api::VolumeManager>> vms) : vms_(std::move(vms)) {
        if (!vms_) return;
        try {
            vms_->store().add_index(std::string(shared_directory_index), [](const api::VolumeManager& vm) {
                std::set<std::string> paths;
                if (vm.status)
                    for (const auto& e : vm.status->copies)
                        if (handlers::naming::is_shared_directory(e.path)) paths.insert(e.path);
                return std::vector<std::string>(paths.begin(), paths.end());
            });
        } catch (const std::invalid_argument&) {
            // Another reconciler on the same cache added it already.
        }
    }

    /// The entries at (`node`, `path`) of every volume but `uid`'s volume `volume`: other
    /// VolumeManagers', and the other volumes of `uid` whose configs are equal (they share the
    /// directory as well, and one of them removing it would take the other's data).
    std::vector<SharedHold> others(const std::string& uid, const std::string& volume, const std::string& node,
                                   const std::string& path) const {
        std::vector<SharedHold> out;
        auto add = [&](const std::string& holder, const std::string& holder_uid, std::span<const api::CopyRecord> entries) {
            for (const auto& e : entries)
                if (e.node == node && e.path == path && !(holder_uid == uid && e.volume == volume))
                    out.push_back({holder, holder_uid, e});
        };
        std::lock_guard lock(mu_);
        if (vms_)
            for (const auto& vm : vms_->store().by_index(shared_directory_index, path)) {
                const auto& id = vm->metadata.uid;
                if (planned_.contains(id) || !vm->status) continue;
                add(vm->metadata.namespace_ + "/" + vm->metadata.name, id, vm->status->copies);
            }
        if (auto users = planned_paths_.find(path); users != planned_paths_.end())
            for (const auto& id : users->second) {
                const auto& p = planned_.at(id);
                for (const auto& [v, entries] : p.by_volume) add(p.holder, id, entries);
            }
        return out;
    }

    /// What the plan of `vm`'s volume `volume` records (before it is written): its entries in
    /// shared directories stand for it from now on. The plan is provisional until recorded():
    /// abandon() puts back what stood before it.
    void planned(const api::VolumeManager& vm, const std::string& volume, std::span<const api::CopyRecord> entries) {
        std::vector<api::CopyRecord> shared;
        for (const auto& e : entries)
            if (handlers::naming::is_shared_directory(e.path)) shared.push_back(e);
        std::lock_guard lock(mu_);
        auto it = planned_.find(vm.metadata.uid);
        if (it == planned_.end()) {
            // A VolumeManager that never had a shared entry costs nothing.
            bool cached = vm.status && std::any_of(vm.status->copies.begin(), vm.status->copies.end(), [](const auto& e) {
                return handlers::naming::is_shared_directory(e.path);
            });
            if (shared.empty() && !cached) return;
            // It stands for the whole VolumeManager from now on: its other volumes' entries
            // as cached stand until they are planned too.
            Planned fresh{vm.metadata.namespace_ + "/" + vm.metadata.name, {}, {}};
            if (vm.status)
                for (const auto& e : vm.status->copies)
                    if (handlers::naming::is_shared_directory(e.path)) fresh.by_volume[e.volume].push_back(e);
            it = planned_.emplace(vm.metadata.uid, std::move(fresh)).first;
            index(vm.metadata.uid, it->second);
            it->second.before.emplace();  // what stood before: the cache (abandon() erases)
        }
        auto& p = it->second;
        // The first plan of a pass keeps what stood before it.
        if (!p.before) p.before.emplace(p.by_volume);
        for (const auto& e : p.by_volume[volume]) unindex(e.path, vm.metadata.uid);
        p.by_volume[volume] = std::move(shared);
        index(vm.metadata.uid, p);
    }

    /// The record planned for `uid` is written (or was already): its plan stands until the
    /// next one.
    void recorded(const std::string& uid) {
        std::lock_guard lock(mu_);
        if (auto it = planned_.find(uid); it != planned_.end()) it->second.before.reset();
    }

    /// The pass that planned for `uid` ended without writing its record (a conflict, a
    /// refused or failed write, a node label it could not set): what stood before the plan
    /// stands again, so no other VolumeManager lets go of a copy, or removes one, on the word
    /// of a record that does not exist. A recorded plan is kept.
    void abandon(const std::string& uid) {
        std::lock_guard lock(mu_);
        auto it = planned_.find(uid);
        if (it == planned_.end() || !it->second.before) return;
        auto& p = it->second;
        for (const auto& [volume, entries] : p.by_volume)
            for (const auto& e : entries) unindex(e.path, uid);
        if (!p.before || p.before->empty()) {
            planned_.erase(it);  // the cache answers for it again
            return;
        }
        p.by_volume = std::move(*p.before);
        p.before.reset();
        index(uid, p);
    }

    /// Awaits `pass` (a reconcile pass of VolumeManager `uid`), then abandon()s whatever plan it
    /// left unrecorded: a pass that fails (a refused or failed write, a label it could not set)
    /// or ends without writing leaves none standing. (Not in the handler: no co_await there.)
    template <class T>
    boost::asio::awaitable<T> abandoning_after(std::string uid, boost::asio::awaitable<T> pass) {
        std::exception_ptr failure;
        std::optional<T> result;
        try {
            result.emplace(co_await std::move(pass));
        } catch (...) {
            failure = std::current_exception();
        }
        abandon(uid);
        if (failure) std::rethrow_exception(failure);
        co_return std::move(*result);
    }

    /// Forgets what was planned for VolumeManager `uid` (it is gone) and its proofs.
    void forget(const std::string& uid) {
        std::lock_guard lock(mu_);
        if (auto it = planned_.find(uid); it != planned_.end()) {
            for (const auto& [volume, entries] : it->second.by_volume)
                for (const auto& e : entries) unindex(e.path, uid);
            planned_.erase(it);
        }
        proofs_.erase(proofs_.lower_bound(uid + "/"), proofs_.lower_bound(uid + "0"));  // '0' follows '/'
    }

    /// The same, by the VolumeManager's "namespace/name" (its uid is no longer known).
    void forget_holder(const std::string& holder) {
        std::vector<std::string> uids;
        {
            std::lock_guard lock(mu_);
            for (const auto& [uid, p] : planned_)
                if (p.holder == holder) uids.push_back(uid);
        }
        for (const auto& uid : uids) forget(uid);
    }

    /// A proof of volume `volume` of `uid` for config key `config`, if one is fresh.
    std::optional<SharingProof> proof(const std::string& uid, const std::string& volume, const std::string& config) const {
        std::lock_guard lock(mu_);
        auto it = proofs_.find(proof_key(uid, volume, config));
        if (it == proofs_.end()) return std::nullopt;
        auto ttl = it->second.proof.failure.empty() ? Clock::duration(proof_ttl) : Clock::duration(failed_proof_ttl);
        if (Clock::now() - it->second.at > ttl) return std::nullopt;
        return it->second.proof;
    }

    void remember_proof(const std::string& uid, const std::string& volume, const std::string& config, SharingProof p) {
        std::lock_guard lock(mu_);
        proofs_[proof_key(uid, volume, config)] = {std::move(p), Clock::now()};
    }

    /// Lists volume `vc`'s source with its own credentials (`lister`, the refresh's) and
    /// remembers what that showed for config key `config`.
    boost::asio::awaitable<void> prove(const SourceLister& lister, client::Client& client, const api::VolumeManager& vm,
                                       const api::VolumeConfig& vc, const std::string& config) {
        auto listing = co_await lister(client, vm, vc);
        SharingProof proof{listing.digest, {}};
        if (!listing.error.empty()) {
            std::string secret = vc.has_option("awsCredentialsSecretName") ? vc.option("awsCredentialsSecretName") : "";
            proof.failure = "listing " + vc.option("sourceURL") + " with this volume's own credentials" +
                            (secret.empty() ? std::string() : " (Secret " + vm.metadata.namespace_ + "/" + secret + ")") +
                            " failed: " + listing.error;
        }
        remember_proof(vm.metadata.uid, vc.id, config, std::move(proof));
    }

private:
    using ByVolume = std::map<std::string, std::vector<api::CopyRecord>>;
    struct Planned {
        std::string holder;  // "namespace/name"
        ByVolume by_volume;
        // Set while the plan is provisional (not recorded): what stood before it (empty: the
        // cache).
        std::optional<ByVolume> before;
    };
    struct Proof {
        SharingProof proof;
        Clock::time_point at;
    };

    static std::string proof_key(const std::string& uid, const std::string& volume, const std::string& config) {
        return uid + "/" + volume + "/" + config;
    }

    void index(const std::string& uid, const Planned& p) {
        for (const auto& [volume, entries] : p.by_volume)
            for (const auto& e : entries) planned_paths_[e.path].insert(uid);
    }

    void unindex(const std::string& path, const std::string& uid) {
        auto it = planned_paths_.find(path);
        if (it == planned_paths_.end()) return;
        it->second.erase(uid);
        if (it->second.empty()) planned_paths_.erase(it);
    }

    std::shared_ptr<runtime::Informer<api::VolumeManager>> vms_;
    mutable std::mutex mu_;
    std::map<std::string, Planned> planned_;                        // by uid
    std::map<std::string, std::set<std::string>> planned_paths_;    // path -> uids planned there
    std::map<std::string, Proof> proofs_;                           // by uid/volume/config
};

} // namespace vck::volumes
