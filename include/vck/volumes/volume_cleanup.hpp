// VolumeCleanup: how VolumeManagerReconciler removes what a VolumeManager deployed, one step
// per reconcile (it never waits for a pod: cleanup pods' events bring the key back).
// Guarantees:
// - remove_everything: every volume, in the spec or not, goes: its copies (record written
//   first, so the status never names a copy about to go), then what non-copying handlers
//   made, each handler's cleanup plan built from the config the objects recorded. Done once
//   the record is empty and nothing is left. While deleting, status.message says what the
//   deletion waits for (a failing output upload, a pod still using a copy).
// - cleanup_removed: the objects of a volume whose id left the spec are cleaned up with the
//   config they recorded (objects without a readable record are simply deleted).
// - A going volume's PVs are deleted, or with reclaimPolicy Retain let go of
//   (handlers/reclaim_policy.hpp); a volume replaced after a change keeps no PV either way.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/data_handler.hpp>
#include <vck/handlers/handler_registry.hpp>
#include <vck/handlers/reclaim_policy.hpp>
#include <vck/volumes/download_logs.hpp>
#include <vck/volumes/output_upload.hpp>
#include <vck/volumes/reconciler_options.hpp>
#include <vck/volumes/status_writer.hpp>
#include <vck/volumes/sub_resource_ownership.hpp>
#include <vck/volumes/sub_resource_writer.hpp>
#include <vck/volumes/volume_copies.hpp>

#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace vck::volumes {

/// What a deletion waits for, per volume with copies left: its copies' state (how many go, the
/// pods a copy is kept for) and any failing output upload, for status.message.
inline std::string deletion_message(const std::vector<CopyWork>& work) {
    std::string out;
    for (const auto& w : work) {
        if (w.plan.entries.empty()) continue;
        std::string part = "volume " + w.volume_id + ": " + w.plan.outcome.status.message;
        for (const auto& e : w.plan.entries)
            if (e.phase == "Uploading" && e.message.starts_with("upload attempt")) {
                part += "; " + e.message;
                break;
            }
        out += (out.empty() ? "" : "; ") + part;
    }
    return "deleting: " + (out.empty() ? std::string("removing sub-resources") : out);
}

class VolumeCleanup {
public:
    using ContextSource = std::function<handlers::HandlerContext()>;

    /// What one step of removing everything left.
    struct Removal {
        bool done = false;
        bool conflict = false;  // the record could not be written from this view
        std::vector<api::CopyRecord> copies;
        std::chrono::milliseconds recheck{0};
    };

    VolumeCleanup(const handlers::HandlerRegistry& registry, const ReconcilerOptions& opts, SubResourceWriter& writer,
                  StatusWriter& status, DownloadLogs& logs, VolumeCopies& copies, ContextSource context)
        : registry_(registry), opts_(opts), writer_(writer), status_(status), logs_(logs), copies_(copies),
          context_(std::move(context)) {}

    /// Removes every volume of `vm`, in the spec or not: its copies (record first), then what
    /// legacy handlers made. Done once the record is empty and nothing is left.
    boost::asio::awaitable<Removal> remove_everything(const api::VolumeManager& vm, bool deleting) {
        Removal out;
        out.recheck = opts_.cleanup_recheck;
        auto owned = writer_.owned_objects(vm);
        auto nodes = copies_.node_list();
        VolumeKeys keys(vm.metadata.uid);
        std::vector<CopyWork> work;
        std::set<std::string> copy_keys;
        for (const auto& [id, entries] : VolumeCopies::records_by_volume(vm)) {
            work.push_back(copies_.plan(vm, id, nullptr, entries, owned, keys, nodes, deleting));
            copy_keys.insert(keys.of(id));
        }
        for (const auto& vc : vm.spec.volumeConfigs) {
            auto lookup = registry_.find(vc.sourceType);
            if (lookup.handler && lookup.handler->copies() && !copy_keys.contains(keys.of(vc.id))) {
                work.push_back(copies_.plan(vm, vc.id, nullptr, {}, owned, keys, nodes, deleting));
                copy_keys.insert(keys.of(vc.id));
            }
        }
        for (auto& w : work) {
            for (auto& e : w.plan.entries) out.copies.push_back(e);
            co_await copies_.labels_before_record(vm, w);
        }
        if (!co_await write_removal_record(vm, deleting, work, out.copies)) {
            copies_.unwritten(vm);
            out.conflict = true;
            out.recheck = std::chrono::milliseconds(50);
            co_return out;
        }
        copies_.recorded(vm);
        bool done = out.copies.empty();
        for (auto& w : work) {
            co_await copies_.apply_labels(w);
            co_await copies_.carry_out(vm, w);
            done = done && w.plan.entries.empty() && w.plan.pods_to_delete.empty() && w.plan.cleanups.empty() &&
                   owned_count(owned, keys.of(w.volume_id)) == 0;
        }
        // What legacy (non-copying) handlers made, volume by volume.
        done = (co_await cleanup_removed(vm, owned, keys, copy_keys)) && done;
        std::set<std::string> seen;
        for (const auto& vc : vm.spec.volumeConfigs) {
            if (!seen.insert(vc.id).second || copy_keys.contains(keys.of(vc.id))) continue;
            auto observed = writer_.observe(vm, keys.of(vc.id), owned);
            auto lookup = registry_.find(vc.sourceType);
            handlers::CleanupPlan plan;
            if (lookup.handler) {
                co_await logs_.fetch_failed_logs(vm, observed.pods);
                plan = lookup.handler->cleanup_objects(context_(), vm, vc, observed);
            } else {
                plan = delete_all(observed);
            }
            std::string config = detail::config_text(vc);
            done = (co_await execute(vm, config, plan, handlers::retains_volumes(vc) ? &vc : nullptr)) && done;
        }
        out.done = done;
        co_return out;
    }

    /// Cleans up volumes whose objects exist but whose id left the spec, except the volumes of
    /// `copy_keys`, whose copies plan their own removal.
    boost::asio::awaitable<bool> cleanup_removed(const api::VolumeManager& vm, const OwnedObjects& owned, VolumeKeys& keys,
                                                 const std::set<std::string>& copy_keys) {
        std::set<std::string> live;
        for (const auto& vc : vm.spec.volumeConfigs) live.insert(keys.of(vc.id));
        bool done = true;
        for (const auto& [key, observed] : owned)
            if (!live.contains(key) && !copy_keys.contains(key)) done = (co_await cleanup_group(vm, observed)) && done;
        co_return done;
    }

    /// One cleanup step for objects of one volume built from the config they record (objects
    /// without a readable record are simply deleted). True when nothing is left. `volume_goes`
    /// is false when the objects are replaced after a change of the volume: its reclaim policy
    /// applies only when the volume itself goes.
    boost::asio::awaitable<bool> cleanup_group(const api::VolumeManager& vm, const handlers::ObservedObjects& observed,
                                               bool volume_goes = true) {
        std::string recorded;
        auto pick = [&](const auto& list) {
            for (const auto& o : list)
                if (recorded.empty()) recorded = detail::annotation(o, config_annotation);
        };
        pick(observed.pods);
        pick(observed.persistent_volumes);
        pick(observed.claims);
        handlers::CleanupPlan plan = delete_all(observed);
        std::optional<api::VolumeConfig> vc;
        bool copy_pods = std::any_of(observed.pods.begin(), observed.pods.end(), [](const api::Pod& p) {
            return p.metadata.annotations.contains(std::string(handlers::copy_role_annotation));
        });
        if (!recorded.empty() && !copy_pods) {  // a copy's pods are the record's business, never a legacy cleanup's
            try {
                vc = api::from_json<api::VolumeConfig>(api::parse(recorded));
            } catch (const std::exception&) {
                vc.reset();  // a mangled record: the objects can still be deleted
            }
        }
        if (vc) {
            if (auto lookup = registry_.find(vc->sourceType); lookup.handler) {
                co_await logs_.fetch_failed_logs(vm, observed.pods);
                plan = lookup.handler->cleanup_objects(context_(), vm, *vc, observed);
            }
        }
        // Named first: GCC 12 destroys a ?: temporary inside a co_await expression twice.
        std::string config = vc ? detail::config_text(*vc) : recorded;
        const api::VolumeConfig* retain = vc && volume_goes && handlers::retains_volumes(*vc) ? &*vc : nullptr;
        co_return co_await execute(vm, config, plan, retain);
    }

private:
    /// Writes the record of the copies left (and while deleting, what the deletion waits for)
    /// when it changed. False when the view was stale.
    boost::asio::awaitable<bool> write_removal_record(const api::VolumeManager& vm, bool deleting,
                                                      const std::vector<CopyWork>& work,
                                                      const std::vector<api::CopyRecord>& copies) {
        // While deleting, `kubectl get` says what the deletion waits for (a failing upload, a
        // pod using a copy), not what the last deployment pass said.
        std::string message = deleting ? deletion_message(work) : std::string();
        bool message_changed = deleting && (!vm.status || vm.status->message != message);
        if (!StatusWriter::record_changed(vm, copies) && !message_changed) co_return true;
        api::VolumeManagerStatus st = vm.status ? *vm.status : api::VolumeManagerStatus{};
        st.unknown.clear();
        st.copies = copies;
        if (deleting) st.message = message;
        if (!deleting && api::parse_volume_manager_state(vm.spec.state) == api::VolumeManagerState::Completed) {
            // The output volumes' upload sums go with the record that holds the counts: a
            // later pass reading an older status (its write not cached yet) still finds
            // them once the copies are gone.
            auto kept = st.message;
            st.volumes.clear();
            note_output_status(st, vm.status);
            st.message = std::move(kept);
        }
        co_return co_await status_.write_record(vm, st);
    }

    static std::size_t owned_count(const OwnedObjects& owned, const std::string& key) {
        auto it = owned.find(key);
        if (it == owned.end()) return 0;
        return it->second.pods.size() + it->second.persistent_volumes.size() + it->second.claims.size();
    }

    static handlers::CleanupPlan delete_all(const handlers::ObservedObjects& o) {
        handlers::CleanupPlan plan;
        for (const auto& p : o.pods) plan.pods_to_delete.push_back(p.metadata.name);
        for (const auto& p : o.persistent_volumes) plan.persistent_volumes_to_delete.push_back(p.metadata.name);
        for (const auto& p : o.claims) plan.claims_to_delete.push_back(p.metadata.name);
        plan.done = plan.pods_to_delete.empty() && plan.persistent_volumes_to_delete.empty() && plan.claims_to_delete.empty();
        return plan;
    }

    /// Carries out one step of a cleanup plan; true when the plan says cleanup is complete.
    /// With `retain` (the going volume's config, reclaimPolicy Retain) its PVs are let go of
    /// instead of deleted (handlers/reclaim_policy.hpp).
    boost::asio::awaitable<bool> execute(const api::VolumeManager& vm, const std::string& config,
                                         const handlers::CleanupPlan& plan, const api::VolumeConfig* retain = nullptr) {
        const std::string& ns = vm.metadata.namespace_;
        std::vector<api::Pod> pods = plan.pods;
        std::vector<api::Pod> none;
        co_await writer_.create_missing(vm, config, pods, none);
        for (const auto& name : plan.pods_to_delete) co_await writer_.delete_ignoring_missing(api::Pod::resource, ns, name);
        for (const auto& name : plan.claims_to_delete)
            co_await writer_.delete_ignoring_missing(api::PersistentVolumeClaim::resource, ns, name);
        for (const auto& name : plan.persistent_volumes_to_delete) {
            if (retain) co_await writer_.let_go_of(vm, *retain, name);
            else co_await writer_.delete_ignoring_missing(api::PersistentVolume::resource, "", name);
        }
        for (const auto& label : plan.node_labels_to_remove) co_await writer_.ensure_node_label(label, false);
        co_return plan.done;
    }

    const handlers::HandlerRegistry& registry_;
    const ReconcilerOptions& opts_;
    SubResourceWriter& writer_;
    StatusWriter& status_;
    DownloadLogs& logs_;
    VolumeCopies& copies_;
    ContextSource context_;
};

} // namespace vck::volumes
