// DiskPressureEvictor: the per-node reconciler that evicts copies of data from a node whose
// kubelet reports DiskPressure=True, one at a time, until the condition clears. What goes is
// choose_eviction()'s decision (volumes/disk_pressure_eviction.hpp) over the cached record of
// the VolumeManagers with copies on the node and the node's pods listed live (a user's pod
// that mounts a copy's hostPath by hand is not in the controller's narrowed pod cache).
// Guarantees:
// - An eviction is one status write of the VolumeManager, guarded by the resourceVersion the
//   decision was made from (a conflict decides again from a fresh view); it marks the entry
//   Removing ("evicted: node N under DiskPressure ..."), after which the copy planner removes
//   the directory and places the replica on an eligible node (not under pressure).
// - The next eviction on a node waits until the previous evicted entry has left the record
//   (its directory is gone), then `settle` longer: the kubelet re-evaluates the condition at
//   its own pace after space is freed, and evicting before it has would evict too much.
// - Each eviction is a Warning event DataEvicted on the VolumeManager and on the Node, naming
//   the volume, the node and the copy's last use.
// - While the condition holds the node is looked at every `recheck`; once it clears, nothing.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/client/client.hpp>
#include <vck/runtime/event_recorder.hpp>
#include <vck/runtime/log.hpp>
#include <vck/runtime/reconciler.hpp>
#include <vck/volumes/disk_pressure_eviction.hpp>
#include <vck/volumes/volume_manager_reconciler.hpp>

#include <boost/json.hpp>

#include <chrono>
#include <functional>
#include <atomic>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace vck::volumes {

struct EvictionOptions {
    EvictionOptions() {}
    /// Evict copies from nodes under DiskPressure at all (--evict-on-disk-pressure).
    bool enabled = true;
    /// How often a node under pressure is looked at (an eviction's progress, the condition).
    std::chrono::milliseconds recheck{2'000};
    /// How long after an evicted copy is gone the condition must still hold for the next one
    /// (--disk-pressure-settle); the kubelet's eviction monitoring runs every 10 s.
    std::chrono::milliseconds settle{10'000};
    /// Volumes whose copies hold the only copy of their data (output volumes): never evicted.
    SoleCopyCheck sole_copy;
};

class DiskPressureEvictor {
public:
    using VolumeManagers = std::vector<std::shared_ptr<const api::VolumeManager>>;
    /// `copies_on(node)` are the cached VolumeManagers with copies on the node (an index);
    /// `wake` enqueues a VolumeManager (its controller skips status-only changes, and an
    /// eviction is one).
    DiskPressureEvictor(client::Client& c, Caches caches, std::shared_ptr<runtime::EventRecorder> events,
                        EvictionOptions o, std::function<VolumeManagers(const std::string&)> copies_on,
                        std::function<void(const runtime::Request&)> wake)
        : client_(c), caches_(std::move(caches)), events_(std::move(events)), opts_(o), copies_on_(std::move(copies_on)),
          wake_(std::move(wake)) {}

    asio::awaitable<runtime::Result> reconcile(const runtime::Request& req) {
        auto node = caches_.nodes->store().get(req);
        if (!node || !under_disk_pressure(*node)) {
            forget(req.name);
            co_return runtime::Result::done();
        }
        const std::string& name = node->metadata.name;
        auto vms = copies_on_(name);
        std::vector<const api::VolumeManager*> view;
        for (const auto& vm : vms) view.push_back(vm.get());

        // One at a time: the previous eviction first leaves the record, then the kubelet gets
        // `settle` to say whether the pressure is gone.
        auto now = std::chrono::steady_clock::now();
        std::optional<runtime::Request> waiting;
        {
            std::lock_guard lock(mu_);
            auto& s = state_[name];
            if (s.pending && still_pending(*s.pending)) {
                waiting = runtime::Request{s.pending->vm_namespace, s.pending->vm_name};
            } else if (s.pending) {
                s.pending.reset();
                s.done_at = now;
            }
            if (s.done_at && now < *s.done_at + opts_.settle)
                co_return runtime::Result::requeue_after(
                    std::chrono::duration_cast<std::chrono::milliseconds>(*s.done_at + opts_.settle - now) +
                    std::chrono::milliseconds(10));
        }
        if (waiting) {
            // The VolumeManager's controller skips status-only changes: it is woken until its
            // cache shows the mark and its cleanup is under way (pod events carry it on).
            if (wake_) wake_(*waiting);
            co_return runtime::Result::requeue_after(opts_.recheck);
        }
        auto early = choose_eviction(*node, view, {}, opts_.sole_copy);
        if (early.in_progress) co_return runtime::Result::requeue_after(opts_.recheck);

        auto listed = co_await client_.list<api::Pod>("", client::ListOptions().fields("spec.nodeName=" + name));
        std::vector<const api::Pod*> pods;
        for (const auto& p : listed.items) pods.push_back(&p);
        auto choice = choose_eviction(*node, view, pods, opts_.sole_copy);
        if (!choice.evict) {
            log::V(1).info("nothing to evict from a node under DiskPressure", {{"node", name}, {"why", choice.why_none}});
            co_return runtime::Result::requeue_after(opts_.recheck);
        }
        const auto& c = *choice.evict;
        auto vm = caches_.volume_managers->store().get(runtime::Request{c.vm_namespace, c.vm_name});
        if (!vm || !vm->status) co_return runtime::Result::requeue_after(std::chrono::milliseconds(50));
        auto copies = vm->status->copies;
        if (!mark_evicted(copies, c)) co_return runtime::Result::requeue_after(std::chrono::milliseconds(50));
        if (!co_await write_copies(*vm, copies)) co_return runtime::Result::requeue_after(std::chrono::milliseconds(50));
        {
            std::lock_guard lock(mu_);
            state_[name].pending = Pending{c.vm_namespace, c.vm_name, vm->metadata.resourceVersion, c.entry};
        }
        ++evictions_;
        std::string message = "evicted the copy of volume " + c.entry.volume + " of " + c.vm_namespace + "/" + c.vm_name +
                              " from node " + name + " under DiskPressure (last used " +
                              (c.last_use.empty() ? std::string("never") : c.last_use) + ")";
        log::info("evicting a copy from a node under DiskPressure",
                  {{"node", name}, {"volumemanager", c.vm_namespace + "/" + c.vm_name}, {"volume", c.entry.volume}});
        if (events_) {
            co_await events_->record(runtime::EventRecorder::reference_to(*vm, api::VolumeManager::resource), "Warning",
                                     std::string(evicted_reason), message);
            co_await events_->record(runtime::EventRecorder::reference_to(*node, api::Node::resource), "Warning",
                                     std::string(evicted_reason), message);
        }
        if (wake_) wake_(runtime::Request{c.vm_namespace, c.vm_name});
        co_return runtime::Result::requeue_after(opts_.recheck);
    }

    /// Evictions marked so far (tests).
    std::uint64_t evictions() const { return evictions_; }

private:
    struct Pending {
        std::string vm_namespace, vm_name;
        std::string written_from;  // the resourceVersion the mark was written over
        api::CopyRecord entry;
    };
    struct NodeState {
        std::optional<Pending> pending;
        std::optional<std::chrono::steady_clock::time_point> done_at;
    };

    /// Whether the evicted entry is still in the record. The cache may not show the mark yet
    /// (it still shows the version written over): still pending. Shown Ready again in a newer
    /// version (a write from an older view undid the mark): no longer pending, chosen anew.
    bool still_pending(const Pending& p) const {
        auto vm = caches_.volume_managers->store().get(runtime::Request{p.vm_namespace, p.vm_name});
        if (!vm || !vm->status) return false;
        if (vm->metadata.resourceVersion == p.written_from) return true;
        for (const auto& e : vm->status->copies)
            if (e.volume == p.entry.volume && e.node == p.entry.node && e.path == p.entry.path)
                return copy_phase(e) == CopyPhase::Removing;
        return false;
    }

    void forget(const std::string& node) {
        std::lock_guard lock(mu_);
        state_.erase(node);
    }

    /// The record `copies` written over the view's resourceVersion; false on a conflict.
    asio::awaitable<bool> write_copies(const api::VolumeManager& vm, const std::vector<api::CopyRecord>& copies) {
        boost::json::array record;
        for (const auto& e : copies) record.push_back(api::to_json(e));
        boost::json::value patch{{"metadata", {{"resourceVersion", vm.metadata.resourceVersion}}},
                                 {"status", {{"copies", std::move(record)}}}};
        try {
            co_await client_.patch(api::VolumeManager::resource, vm.metadata.namespace_, vm.metadata.name,
                                   client::PatchType::Merge, std::move(patch), client::PatchOptions().on("status"));
        } catch (const client::ApiError& e) {
            if (e.is(client::ErrorKind::Conflict) || e.is(client::ErrorKind::NotFound)) co_return false;
            throw;
        }
        co_return true;
    }

    client::Client& client_;
    Caches caches_;
    std::shared_ptr<runtime::EventRecorder> events_;
    EvictionOptions opts_;
    std::function<VolumeManagers(const std::string&)> copies_on_;
    std::function<void(const runtime::Request&)> wake_;
    mutable std::mutex mu_;
    std::map<std::string, NodeState> state_;
    std::atomic<std::uint64_t> evictions_{0};
};

} // namespace vck::volumes
