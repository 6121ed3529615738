// VolumeManagerReconciler: VCK's level-triggered reconciler. Each call reads one
// VolumeManager and its sub-resources from informer caches, does the next step toward the
// desired state, and returns; it never waits for a pod (pod, claim and volume events, or a
// requeue-after, bring the key back).
// Guarantees:
// - The finalizer `vck.intelai.org/cleanup` is on the object before anything is deployed;
//   on deletion every volume is cleaned up (data removed on every node by cleanup pods,
//   node labels removed, sub-resources deleted) and only then is the finalizer removed, so
//   a delete made while the controller was down is cleaned up when it starts. An output
//   volume's copies (handlers/output_handler.hpp) are uploaded before their data is removed;
//   a failing upload holds the cleanup (and so the finalizer) until it succeeds or the
//   VolumeManager is annotated vck.intelai.org/discard-output=true (volumes/output_upload.hpp).
// - Sub-resources have deterministic names (DataHandler contract) and are created only when
//   missing from the caches, so a restart at any point creates nothing twice; objects it
//   created that the caches do not show yet count as there (expectations), so an early
//   event does not cause a second create either.
// - Each sub-resource records the volume config it was built from (annotation
//   `vck.intelai.org/volume-config`): a changed volume's objects are deleted and rebuilt; a
//   volume removed from the spec is cleaned up from that record.
// - A going volume's PVs (left the spec, deleted, Failed or Completed) are deleted, or with
//   the option reclaimPolicy Retain let go of: left Released, never touched again
//   (handlers/reclaim_policy.hpp).
// - spec.state Failed: nothing is deployed (what exists is cleaned up), status Failed.
//   spec.state Completed: sub-resources and data are removed, the object stays, status
//   Completed. Otherwise status is Pending while a volume is in progress, Running when all
//   succeed, Failed (with the original VCK's messages) when any fails.
// - Status is written only when it changes, and Pending not within `pending_grace` of this
//   controller creating the objects (fast volumes go straight to Running); a download pod
//   that failed stays, so its volume stays failed until the volume's config changes.
// - A malformed object never throws out of reconcile except for API errors, which the
//   controller retries with backoff; a 403 (this controller's RBAC lacks a rule) is also a
//   Warning event "Forbidden" on the VolumeManager, with the server's words. A failed pod
//   whose log the server refuses says so in its volume's message.
// - Download progress costs a bounded number of API calls: the log tails of a VolumeManager's
//   running `vck-fetch fetch` containers are read together at most once per
//   `progress_interval` (one GET pods/log, tailLines 2, limitBytes 4096, per running
//   download), plus two early reads 1 s and 2 s after a download is first seen running while
//   it has not been seen moving (so PROGRESS moves within 2 s of a download's start), driven
//   by a requeue while downloads run, never by other events; a status write for progress
//   follows only such a read.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/json.hpp>
#include <vck/api/storage_v1.hpp>
#include <vck/api/time.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/client/client.hpp>
#include <vck/client/ignore_not_found.hpp>
#include <vck/volumes/cache_context.hpp>
#include <vck/volumes/copy_planner.hpp>
#include <vck/volumes/copy_progress.hpp>
#include <vck/volumes/disk_pressure_eviction.hpp>
#include <vck/volumes/pod_gates.hpp>
#include <vck/volumes/volume_status.hpp>
#include <vck/handlers/handler_registry.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/handlers/reclaim_policy.hpp>
#include <vck/handlers/spec_validation.hpp>
#include <vck/runtime/informer.hpp>
#include <vck/runtime/event_recorder.hpp>
#include <vck/runtime/expectations.hpp>
#include <vck/runtime/finalizer.hpp>
#include <vck/runtime/log.hpp>
#include <vck/runtime/lru_map.hpp>
#include <vck/runtime/reconciler.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace vck::volumes {

namespace asio = boost::asio;

inline constexpr std::string_view finalizer_name = "vck.intelai.org/cleanup";
/// The volume config (canonical JSON) a sub-resource was built from.
inline constexpr std::string_view config_annotation = "vck.intelai.org/volume-config";
/// The owning VolumeManager's uid and "namespace/name" (PersistentVolumes and storage
/// classes are cluster-scoped and cannot carry an owner reference to it).
inline constexpr std::string_view owner_uid_annotation = "vck.intelai.org/owner-uid";
inline constexpr std::string_view owner_name_annotation = "vck.intelai.org/owner";
/// Store index: sub-resources by owning VolumeManager uid.
inline constexpr std::string_view owner_uid_index = "vck-owner-uid";

/// The caches the reconciler reads. Secrets and storage classes may be null (no RBAC for
/// them): the Secret check is then left to the pod, and storage classes are always created.
struct Caches {
    std::shared_ptr<runtime::Informer<api::VolumeManager>> volume_managers;
    std::shared_ptr<runtime::Informer<api::Pod>> pods;
    std::shared_ptr<runtime::Informer<api::PersistentVolume>> persistent_volumes;
    std::shared_ptr<runtime::Informer<api::PersistentVolumeClaim>> claims;
    std::shared_ptr<runtime::Informer<api::Node>> nodes;
    std::shared_ptr<runtime::Informer<api::Secret>> secrets;
    std::shared_ptr<runtime::Informer<api::StorageClass>> storage_classes;
    /// Pods that name a VolumeManager (pod injection): their gates are lifted here. Optional.
    std::shared_ptr<runtime::Informer<api::Pod>> injected_pods;
};

struct ReconcilerOptions {
    ReconcilerOptions() {}
    handlers::HandlerOptions handler;
    /// How soon a VolumeManager still in progress is looked at again without any event
    /// (download timeouts are noticed this way too).
    std::chrono::milliseconds pending_recheck{5'000};
    /// How soon cleanup is looked at again while cleanup pods run.
    std::chrono::milliseconds cleanup_recheck{2'000};
    /// For how long after this controller created a VolumeManager's objects a Pending status
    /// is not written: objects that bind or finish within it (an NFS claim binding to its
    /// pre-bound volume) go straight to Running, one status write instead of two.
    std::chrono::milliseconds pending_grace{2'000};
    /// Lines of a failed pod's log quoted in the volume's message.
    std::int64_t log_tail_lines = 10;
    /// Placement, node loss and retries of the copies of downloading handlers.
    CopyPlannerOptions copies;
    /// How often a VolumeManager's running downloads are asked for their progress (their log
    /// tails read, then the status written if it moved); zero: never while they run (the
    /// totals still land when they finish). handlers::HandlerOptions::progress_interval is
    /// how often vck-fetch prints, and should be no longer.
    std::chrono::milliseconds progress_interval{10'000};
    /// Backoff after the API server refused to create a sub-resource (400, 403, 404, 422):
    /// doubled per refusal in a row, from `refusal_backoff` up to `refusal_backoff_cap`.
    std::chrono::milliseconds refusal_backoff{1'000};
    std::chrono::milliseconds refusal_backoff_cap{300'000};
};

namespace detail {

template <class T>
std::string annotation(const T& o, std::string_view key) {
    auto it = o.metadata.annotations.find(std::string(key));
    return it == o.metadata.annotations.end() ? std::string() : it->second;
}

/// The canonical text of a volume config: sorted maps, no unknown fields.
inline std::string config_text(const api::VolumeConfig& vc) {
    api::VolumeConfig copy = vc;
    copy.unknown.clear();
    return boost::json::serialize(api::to_json(copy));
}

inline std::string utc_now() { return api::format_rfc3339(std::chrono::system_clock::now()); }

/// What a deletion waits for, per volume with copies left: its copies' state (how many go, the
/// pods a copy is kept for) and any failing output upload, for status.message.
template <class Work>
std::string deletion_message(const std::vector<Work>& work) {
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

/// For a status message: the deleted claims among `claims` that Kubernetes keeps while pods
/// use them (finalizer kubernetes.io/pvc-protection; a finished pod counts until it is
/// deleted), or "" when there are none.
inline std::string claims_kept_in_use(const std::vector<api::PersistentVolumeClaim>& claims) {
    std::string names;
    for (const auto& c : claims) {
        const auto& f = c.metadata.finalizers;
        if (c.metadata.deletionTimestamp.empty() || std::find(f.begin(), f.end(), "kubernetes.io/pvc-protection") == f.end())
            continue;
        names += (names.empty() ? "" : ", ") + c.metadata.name;
    }
    if (names.empty()) return "";
    return ": claim " + names + " is kept until the pods that use it are deleted";
}

} // namespace detail

/// Adds the owner-uid index to the sub-resource caches (call once, before they sync).
inline void install_indexes(Caches& c) {
    auto add = [](auto& informer) {
        if (!informer) return;
        informer->store().add_index(std::string(owner_uid_index), [](const auto& o) {
            auto uid = detail::annotation(o, owner_uid_annotation);
            return uid.empty() ? std::vector<std::string>{} : std::vector<std::string>{uid};
        });
    };
    add(c.pods);
    add(c.persistent_volumes);
    add(c.claims);
}

/// The VolumeManager keys a sub-resource maps to (from its owner annotation).
template <class T>
std::vector<runtime::Request> owner_requests(const T& o) {
    auto owner = detail::annotation(o, owner_name_annotation);
    auto slash = owner.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == owner.size()) return {};
    return {runtime::Request{owner.substr(0, slash), owner.substr(slash + 1)}};
}

class VolumeManagerReconciler {
    /// A VolumeManager's cached sub-resources, by volume key.
    using OwnedObjects = std::map<std::string, handlers::ObservedObjects>;

public:
    VolumeManagerReconciler(client::Client& c, Caches caches, handlers::HandlerRegistry registry,
                            ReconcilerOptions o = {}, std::shared_ptr<runtime::EventRecorder> events = nullptr)
        : client_(c), caches_(std::move(caches)), registry_(std::move(registry)), opts_(std::move(o)),
          events_(std::move(events)) {
        if (!caches_.volume_managers || !caches_.pods || !caches_.persistent_volumes || !caches_.claims ||
            !caches_.nodes)
            throw std::invalid_argument("volume manager reconciler: the VolumeManager, pod, PV, PVC and node caches are required");
        if (caches_.injected_pods)
            gates_ = std::make_unique<PodGates>(client_, caches_.injected_pods, registry_, opts_.handler, events_);
    }

    asio::awaitable<runtime::Result> reconcile(const runtime::Request& req) {
        auto vm = caches_.volume_managers->store().get(req);
        if (!vm) {
            // Gone: the finalizer made sure its data was cleaned up; pods that still name it
            // are reported (they can never get their data).
            if (gates_) co_await gates_->settle(req, nullptr);
            co_return runtime::Result::done();
        }
        // The record of copies is in the status this controller wrote last: never act on a
        // cached version older than that write (its watch event is on the way).
        if (stale_view(*vm)) co_return runtime::Result::requeue_after(std::chrono::milliseconds(50));
        // runtime/finalizer.hpp keeps the protocol: the finalizer is on before anything is
        // deployed, and comes off only once cleanup says everything is removed.
        runtime::FinalizerReconcile<api::VolumeManager> step =
            [this](runtime::FinalizerEvent ev, std::shared_ptr<const api::VolumeManager> current) -> asio::awaitable<runtime::Result> {
            if (ev == runtime::FinalizerEvent::Apply) co_return co_await apply(*current);
            forget_grace(*current);
            auto removal = co_await remove_everything(*current, true);
            if (!removal.done) co_return runtime::Result::requeue_after(removal.recheck);
            co_return runtime::Result::done();
        };
        std::optional<runtime::Result> result;
        std::exception_ptr failure;
        std::string forbidden;
        try {
            result = co_await runtime::finalizer<api::VolumeManager>(client_, api::VolumeManager::resource,
                                                                    std::string(finalizer_name), vm, std::move(step));
        } catch (const client::ApiError& e) {
            if (e.is(client::ErrorKind::Forbidden)) forbidden = e.what();
            failure = std::current_exception();
        }
        if (failure) {
            // A refusal of this controller's own rights (RBAC) is shown on the object it
            // stops, in `kubectl describe`, not only in the controller's log; then retried.
            if (!forbidden.empty()) co_await warn(*vm, "Forbidden", forbidden);
            std::rethrow_exception(failure);
        }
        if (!vm->metadata.deletionTimestamp.empty() && result->kind() == runtime::Result::Kind::Done) forget(*vm);
        if (gates_) co_await settle_gates(req);
        co_return *result;
    }

    /// The pods waiting for this VolumeManager's data (PodGates); a refusal of this
    /// controller's rights is also a Warning event on the VolumeManager, as for its own objects.
    asio::awaitable<void> settle_gates(const runtime::Request& req) {
        auto vm = caches_.volume_managers->store().get(req);
        std::exception_ptr failure;
        std::string forbidden;
        try {
            co_await gates_->settle(req, vm.get());
        } catch (const client::ApiError& e) {
            if (e.is(client::ErrorKind::Forbidden)) forbidden = e.what();
            failure = std::current_exception();
        }
        if (failure) {
            if (!forbidden.empty() && vm) co_await warn(*vm, "Forbidden", forbidden);
            std::rethrow_exception(failure);
        }
    }

    /// Counters for tests and benchmarks.
    std::uint64_t creates() const { return creates_; }
    std::uint64_t deletes() const { return deletes_; }
    std::uint64_t status_writes() const { return status_writes_; }
    std::uint64_t progress_reads() const { return progress_reads_; }
    /// How many VolumeManagers the reconciler remembers something of (retry and refusal
    /// backoffs, record writes in flight): none once their deletions are complete.
    std::size_t remembered() const {
        std::lock_guard lock(mu_);
        return memory_.size();
    }

private:
    struct VolumeResult {
        handlers::VolumeOutcome outcome;
        bool created = false;
    };

    /// A sub-resource create the API server refused, backed off per volume.
    struct Refusal {
        std::string message;
        int count = 0;
        std::chrono::steady_clock::time_point retry_at;
    };
    /// The resourceVersion of the view a record write was made from, and when.
    struct WrittenFrom {
        std::string resource_version;
        std::chrono::steady_clock::time_point at;
    };
    /// A running download pod: when it was first seen running and how many early reads it had.
    struct EarlyReads {
        std::chrono::steady_clock::time_point seen;
        int reads = 0;
    };
    /// What the reconciler remembers of one VolumeManager between passes, in one place with
    /// one lifetime: kept while something in it is pending, and all of it gone once the
    /// VolumeManager's deletion completes (forget). Reached through with_memory(), under mu_.
    struct Memory {
        std::optional<std::chrono::steady_clock::time_point> grace_until;  // the Pending grace window
        std::optional<WrittenFrom> written_from;  // the last record write (stale_view)
        std::optional<std::chrono::steady_clock::time_point> progress_polled;  // the last progress read
        std::map<std::string, EarlyReads> progress_early;  // by download pod uid
        std::map<std::string, Refusal> refusals;  // by volume id
        bool empty() const {
            return !grace_until && !written_from && !progress_polled && progress_early.empty() && refusals.empty();
        }
    };

    // ---- apply ---------------------------------------------------------------------------

    asio::awaitable<runtime::Result> apply(const api::VolumeManager& vm) {
        // Empty and unknown spec.states are neither (an unknown one is validate_spec's to report).
        auto desired = api::parse_volume_manager_state(vm.spec.state);
        if (desired == api::VolumeManagerState::Failed || desired == api::VolumeManagerState::Completed) {
            auto removal = co_await remove_everything(vm, false);
            if (removal.conflict) co_return runtime::Result::requeue_after(std::chrono::milliseconds(50));
            bool clean = removal.done;
            auto decision = end_state_status(*desired, clean, vm.spec.volumeConfigs.size());
            decision.status.copies = std::move(removal.copies);
            if (*desired == api::VolumeManagerState::Completed) note_output_status(decision.status, vm.status);
            co_await write_status(vm, std::move(decision.status), decision.ready, decision.reason);
            co_return clean ? runtime::Result::done() : runtime::Result::requeue_after(opts_.cleanup_recheck);
        }

        // A spec the schema should have refused (an older CRD, a schema-less one): reported,
        // and nothing deployed or removed on its account.
        if (auto why = handlers::validate_spec(vm.spec)) {
            auto previous = vm.status ? vm.status->state : std::string();
            auto decision = invalid_spec_status(vm.status, *why, vm.spec.volumeConfigs.size());
            bool wrote = co_await write_status(vm, decision.status, decision.ready, decision.reason);
            if (wrote && previous != decision.status.state) co_await warn(vm, "InvalidSpec", decision.status.message);
            co_return runtime::Result::done();
        }

        // Volumes no longer in the spec are cleaned up from what their objects recorded.
        auto owned = owned_objects(vm);
        auto nodes = node_list();
        auto record = records_by_volume(vm);
        std::vector<CopyWork> copy_work;
        // Copies first: the volumes they handle are not the legacy cleanup's business.
        std::set<std::string> copy_keys;
        std::map<std::string, const api::VolumeConfig*> copy_volumes;
        for (const auto& vc : vm.spec.volumeConfigs) {
            auto lookup = registry_.find(vc.sourceType);
            if (lookup.handler && lookup.handler->copies() && !copy_volumes.contains(vc.id)) copy_volumes[vc.id] = &vc;
        }
        for (const auto& [id, entries] : record)
            if (!copy_volumes.contains(id))
                copy_work.push_back(plan_copies(vm, id, nullptr, entries, owned, nodes, false));
        for (auto& w : copy_work) copy_keys.insert(handlers::naming::volume_key(vm.metadata.uid, w.volume_id));
        for (const auto& [id, vc] : copy_volumes) copy_keys.insert(handlers::naming::volume_key(vm.metadata.uid, id));
        bool removed_clean = co_await cleanup_removed(vm, owned, copy_keys);
        auto next_progress = co_await poll_progress(vm, owned, copy_volumes);

        std::vector<VolumeFinding> findings;
        std::set<std::string> seen_ids;
        bool created_any = false;
        for (const auto& vc : vm.spec.volumeConfigs) {
            VolumeResult r;
            std::vector<std::string> held_by;
            if (!seen_ids.insert(vc.id).second) {
                r.outcome = handlers::failed_volume(vc, "volume id \"" + vc.id + "\" is used more than once");
            } else if (copy_volumes.contains(vc.id)) {
                if (auto o = owned.find(handlers::naming::volume_key(vm.metadata.uid, vc.id)); o != owned.end())
                    co_await fetch_failed_logs(vm, o->second.pods);
                auto it = record.find(vc.id);
                copy_work.push_back(plan_copies(vm, vc.id, &vc, it == record.end() ? std::vector<api::CopyRecord>{} : it->second,
                                                owned, nodes, false));
                r.outcome = copy_work.back().plan.outcome;
                held_by = copy_work.back().plan.held_by;
                if (auto refusal = refused(vm, vc.id)) {
                    r.outcome.phase = handlers::VolumePhase::Failed;
                    r.outcome.status.message = *refusal;
                }
            } else {
                r = co_await reconcile_volume(vm, vc, owned);
                if (auto refusal = refused(vm, vc.id)) {
                    r.outcome.phase = handlers::VolumePhase::Failed;
                    r.outcome.status.message = *refusal;
                }
            }
            created_any = created_any || r.created;
            findings.push_back(VolumeFinding{vc.id, std::move(r.outcome), std::move(held_by)});
        }

        bool copies_settled = true, wrote_record = false;
        std::optional<std::chrono::system_clock::time_point> due;
        std::vector<std::string> removed_held_by;
        for (auto& w : copy_work) {
            // A volume gone from the spec (no config) is settled only when what is left of it
            // waits for the pods still reading it (their ending wakes this again): then the
            // VolumeManager is Running and names those pods, as for a volume's own old copies.
            copies_settled = copies_settled && w.plan.settled && (w.config || !w.plan.held_by.empty());
            if (!w.config) removed_held_by.insert(removed_held_by.end(), w.plan.held_by.begin(), w.plan.held_by.end());
            if (w.plan.due && (!due || *w.plan.due < *due)) due = w.plan.due;
        }
        auto decision = deployment_status(std::move(findings), removed_clean, copies_settled, std::move(removed_held_by));
        auto& st = decision.status;
        std::vector<VolumeProgress> progress;
        for (auto& w : copy_work) {
            for (auto& e : w.plan.entries) st.copies.push_back(e);
            if (w.config) progress.push_back(w.plan.progress);
        }
        st.progress = progress_text(progress);
        bool pending = decision.pending;
        // Labels first: each says only that its node holds a Ready copy of that config, true
        // whatever the status says, so they never wait for the write; removals only narrow
        // what the status selects.
        for (auto& w : copy_work) co_await apply_labels(w);
        // The record is written before anything it describes is made (and never from an
        // out-of-date view: a conflict sends the key back).
        if (record_changed(vm, st.copies)) {
            auto previous = vm.status ? vm.status->state : std::string();
            auto wrote = co_await write_status(vm, st, decision.ready, decision.reason, true);
            if (!wrote) co_return runtime::Result::requeue_after(std::chrono::milliseconds(50));
            if (previous != st.state) co_await announce(vm, decision);
            created_any = true;
            wrote_record = true;
        }
        for (auto& w : copy_work) created_any |= co_await carry_out(vm, w);

        // Objects created just now come back through their watch within moments, usually
        // ready; a Pending status in between would only cost a write. Within the grace window
        // Pending is not written; the re-check at its end writes it if they are still not ready.
        auto grace_left = pending ? grace_remaining(vm, created_any) : std::chrono::milliseconds(0);
        if (!wrote_record && grace_left.count() <= 0) {
            auto previous = vm.status ? vm.status->state : std::string();
            bool wrote = co_await write_status(vm, st, decision.ready, decision.reason);
            if (wrote && previous != st.state) co_await announce(vm, decision);
        }
        if (!pending) forget_grace(vm);
        auto after = pending ? (grace_left.count() > 0 ? grace_left + std::chrono::milliseconds(10) : opts_.pending_recheck)
                             : std::chrono::milliseconds(0);
        if (due) {
            auto until = std::chrono::duration_cast<std::chrono::milliseconds>(*due - std::chrono::system_clock::now()) +
                         std::chrono::milliseconds(10);
            until = std::max(until, std::chrono::milliseconds(10));
            if (after.count() == 0 || until < after) after = until;
        }
        if (auto r = refusal_wait(vm); r && (after.count() == 0 || *r < after)) after = *r;
        if (next_progress) {
            // Downloads run: the next progress read is due then, whatever else happens.
            auto until = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(*next_progress -
                                                                                          std::chrono::steady_clock::now()),
                                  std::chrono::milliseconds(0)) +
                         std::chrono::milliseconds(10);
            if (after.count() == 0 || until < after) after = until;
        }
        if (after.count() > 0) co_return runtime::Result::requeue_after(after);
        co_return runtime::Result::done();
    }

    asio::awaitable<VolumeResult> reconcile_volume(const api::VolumeManager& vm, const api::VolumeConfig& vc,
                                                   const OwnedObjects& owned) {
        VolumeResult res;
        auto lookup = registry_.find(vc.sourceType);
        if (!lookup.handler) {
            res.outcome = handlers::failed_volume(vc, lookup.error);
            co_return res;
        }
        const handlers::AnyHandler& h = *lookup.handler;
        if (!lookup.warning.empty() && !previously_reported(vm, vc.id)) co_await warn(vm, "Deprecated", lookup.warning);
        auto ctx = context();
        auto observed = observe(vm, vc, owned);
        std::string config = detail::config_text(vc);

        // A changed volume: objects built from an older config are cleaned up with that
        // config (its data directory included) before anything new is created.
        handlers::ObservedObjects stale;
        auto split = [&](auto& current, auto& old) {
            auto stale_end = std::stable_partition(current.begin(), current.end(), [&](const auto& o) {
                auto recorded = detail::annotation(o, config_annotation);
                return recorded.empty() || recorded == config;
            });
            for (auto it = stale_end; it != current.end(); ++it) old.push_back(std::move(*it));
            current.erase(stale_end, current.end());
        };
        split(observed.pods, stale.pods);
        split(observed.persistent_volumes, stale.persistent_volumes);
        split(observed.claims, stale.claims);
        if (!stale.pods.empty() || !stale.persistent_volumes.empty() || !stale.claims.empty()) {
            co_await cleanup_group(vm, stale, false);
            res.outcome = handlers::pending_volume(
                vc, "replacing sub-resources after a change of the volume" + detail::claims_kept_in_use(stale.claims));
            co_return res;
        }

        // validate(ctx) decides whether to build anything; the volume's outcome comes from
        // status(), which keeps data already in place Ready when, say, a Secret is rotated.
        std::string refusal;
        if (!h.validate(ctx, vm, vc) && !refusal_wait(vm, vc.id)) try {
            auto desired = h.desired(ctx, vm, vc);
            for (auto& sc : desired.storage_classes) {
                if (caches_.storage_classes &&
                    caches_.storage_classes->store().get(runtime::ObjectKey{"", sc.metadata.name}))
                    continue;
                co_await create_ignoring_conflict(sc);
            }
            res.created |= co_await create_missing(vm, config, desired.persistent_volumes, observed.persistent_volumes);
            res.created |= co_await create_missing(vm, config, desired.claims, observed.claims);
            res.created |= co_await create_missing(vm, config, desired.pods, observed.pods);
            forget_refusal(vm, vc.id);
        } catch (const client::ApiError& e) {
            if (!permanent_refusal(e)) throw;
            refusal = e.what();
        }
        if (!refusal.empty()) co_await remember_refusal(vm, vc.id, refusal);

        co_await fetch_failed_logs(vm, observed.pods);
        res.outcome = h.status(ctx, vm, vc, observed);
        for (const auto& label : res.outcome.node_labels) co_await ensure_node_label(label, true);
        co_return res;
    }

    // ---- cleanup -------------------------------------------------------------------------

    /// What one step of removing everything left.
    struct Removal {
        bool done = false;
        bool conflict = false;  // the record could not be written from this view
        std::vector<api::CopyRecord> copies;
        std::chrono::milliseconds recheck{0};
    };

    /// Removes every volume of `vm`, in the spec or not: its copies (record first), then what
    /// legacy handlers made. Done once the record is empty and nothing is left.
    asio::awaitable<Removal> remove_everything(const api::VolumeManager& vm, bool deleting) {
        Removal out;
        out.recheck = opts_.cleanup_recheck;
        auto owned = owned_objects(vm);
        auto nodes = node_list();
        std::vector<CopyWork> work;
        std::set<std::string> copy_keys;
        for (const auto& [id, entries] : records_by_volume(vm)) {
            work.push_back(plan_copies(vm, id, nullptr, entries, owned, nodes, deleting));
            copy_keys.insert(handlers::naming::volume_key(vm.metadata.uid, id));
        }
        for (const auto& vc : vm.spec.volumeConfigs) {
            auto lookup = registry_.find(vc.sourceType);
            auto key = handlers::naming::volume_key(vm.metadata.uid, vc.id);
            if (lookup.handler && lookup.handler->copies() && !copy_keys.contains(key)) {
                work.push_back(plan_copies(vm, vc.id, nullptr, {}, owned, nodes, deleting));
                copy_keys.insert(key);
            }
        }
        for (auto& w : work) {
            for (auto& e : w.plan.entries) out.copies.push_back(e);
            co_await apply_labels(w);
        }
        // While deleting, `kubectl get` says what the deletion waits for (a failing upload, a
        // pod using a copy), not what the last deployment pass said.
        std::string message = deleting ? detail::deletion_message(work) : std::string();
        bool message_changed = deleting && (!vm.status || vm.status->message != message);
        if (record_changed(vm, out.copies) || message_changed) {
            api::VolumeManagerStatus st = vm.status ? *vm.status : api::VolumeManagerStatus{};
            st.unknown.clear();
            st.copies = out.copies;
            if (deleting) st.message = message;
            if (!deleting && api::parse_volume_manager_state(vm.spec.state) == api::VolumeManagerState::Completed) {
                // The output volumes' upload sums go with the record that holds the counts: a
                // later pass reading an older status (its write not cached yet) still finds
                // them once the copies are gone.
                auto message = st.message;
                st.volumes.clear();
                note_output_status(st, vm.status);
                st.message = std::move(message);
            }
            if (!co_await write_record(vm, st)) {
                out.conflict = true;
                out.recheck = std::chrono::milliseconds(50);
                co_return out;
            }
        }
        bool done = out.copies.empty();
        for (auto& w : work) {
            co_await carry_out(vm, w);
            done = done && w.plan.entries.empty() && w.plan.pods_to_delete.empty() && w.plan.cleanups.empty() &&
                   owned_count(owned, w.volume_id, vm) == 0;
        }
        // What legacy (non-copying) handlers made, volume by volume.
        done = (co_await cleanup_removed(vm, owned, copy_keys)) && done;
        std::set<std::string> seen;
        for (const auto& vc : vm.spec.volumeConfigs) {
            if (!seen.insert(vc.id).second || copy_keys.contains(handlers::naming::volume_key(vm.metadata.uid, vc.id)))
                continue;
            auto observed = observe(vm, vc, owned);
            auto lookup = registry_.find(vc.sourceType);
            handlers::CleanupPlan plan;
            if (lookup.handler) {
                co_await fetch_failed_logs(vm, observed.pods);
                plan = lookup.handler->cleanup_objects(context(), vm, vc, observed);
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
    asio::awaitable<bool> cleanup_removed(const api::VolumeManager& vm, const OwnedObjects& owned,
                                          const std::set<std::string>& copy_keys) {
        std::set<std::string> live;
        for (const auto& vc : vm.spec.volumeConfigs) live.insert(handlers::naming::volume_key(vm.metadata.uid, vc.id));
        bool done = true;
        for (const auto& [key, observed] : owned)
            if (!live.contains(key) && !copy_keys.contains(key)) done = (co_await cleanup_group(vm, observed)) && done;
        co_return done;
    }

    /// One cleanup step for objects of one volume built from the config they record (objects
    /// without a readable record are simply deleted). True when nothing is left. `volume_goes`
    /// is false when the objects are replaced after a change of the volume: its reclaim policy
    /// applies only when the volume itself goes.
    asio::awaitable<bool> cleanup_group(const api::VolumeManager& vm, const handlers::ObservedObjects& observed,
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
                co_await fetch_failed_logs(vm, observed.pods);
                plan = lookup.handler->cleanup_objects(context(), vm, *vc, observed);
            }
        }
        // Named first: GCC 12 destroys a ?: temporary inside a co_await expression twice.
        std::string config = vc ? detail::config_text(*vc) : recorded;
        const api::VolumeConfig* retain = vc && volume_goes && handlers::retains_volumes(*vc) ? &*vc : nullptr;
        co_return co_await execute(vm, config, plan, retain);
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
    asio::awaitable<bool> execute(const api::VolumeManager& vm, const std::string& config,
                                  const handlers::CleanupPlan& plan, const api::VolumeConfig* retain = nullptr) {
        const std::string& ns = vm.metadata.namespace_;
        std::vector<api::Pod> pods = plan.pods;
        std::vector<api::Pod> none;
        co_await create_missing(vm, config, pods, none);
        for (const auto& name : plan.pods_to_delete) co_await delete_ignoring_missing(api::Pod::resource, ns, name);
        for (const auto& name : plan.claims_to_delete)
            co_await delete_ignoring_missing(api::PersistentVolumeClaim::resource, ns, name);
        for (const auto& name : plan.persistent_volumes_to_delete) {
            if (retain) co_await let_go_of(vm, *retain, name);
            else co_await delete_ignoring_missing(api::PersistentVolume::resource, "", name);
        }
        for (const auto& label : plan.node_labels_to_remove) co_await ensure_node_label(label, false);
        co_return plan.done;
    }

    // ---- copies ---------------------------------------------------------------------------

    /// One volume's copy plan, with what the reconciler needs to carry it out.
    struct CopyWork {
        std::string volume_id;
        const api::VolumeConfig* config = nullptr;
        const handlers::AnyHandler* handler = nullptr;
        std::string label_key;
        VolumeCopyPlan plan;
        std::vector<std::string> orphans;  // pods of the volume no plan step names
        // An output volume's config and handler, for its upload pods: from the spec, or (the
        // volume gone from it) as its pods recorded it.
        std::optional<api::VolumeConfig> upload_config;
        const handlers::AnyHandler* uploader = nullptr;
        // The configs its pods recorded, by digest: an old config's copy uploads where that
        // config said (a changed sourceURL applies to the new copies only).
        std::map<std::string, api::VolumeConfig> recorded_configs;
    };

    std::map<std::string, std::vector<api::CopyRecord>> records_by_volume(const api::VolumeManager& vm) const {
        std::map<std::string, std::vector<api::CopyRecord>> out;
        if (vm.status)
            for (const auto& e : vm.status->copies) out[e.volume].push_back(e);
        return out;
    }

    /// The cached nodes, borrowed rather than copied, read from the cache at the first view():
    /// a reconcile that plans no copies (NFS, Local) never touches them.
    class NodeList {
    public:
        explicit NodeList(runtime::Informer<api::Node>& informer) : informer_(informer) {}
        std::span<const api::Node* const> view() {
            if (!read_) {
                read_ = true;
                held_ = informer_.store().list();
                view_.reserve(held_.size());
                for (const auto& n : held_) view_.push_back(n.get());
            }
            return view_;
        }

    private:
        runtime::Informer<api::Node>& informer_;
        bool read_ = false;
        std::vector<std::shared_ptr<const api::Node>> held_;  // keeps the borrowed nodes alive
        std::vector<const api::Node*> view_;
    };
    NodeList node_list() const { return NodeList(*caches_.nodes); }

    /// Plans volume `id`'s copies; `vc` null means every copy goes.
    CopyWork plan_copies(const api::VolumeManager& vm, const std::string& id, const api::VolumeConfig* vc,
                         std::vector<api::CopyRecord> entries, const OwnedObjects& owned,
                         NodeList& nodes, bool deleting) {
        CopyWork w;
        w.volume_id = id;
        w.config = vc;
        w.label_key = handlers::naming::node_label_key(vm.metadata.namespace_, vm.metadata.name, id);
        auto key = handlers::naming::volume_key(vm.metadata.uid, id);
        VolumeCopyInput in;
        in.vm_uid = vm.metadata.uid;
        in.volume_id = id;
        in.label_key = w.label_key;
        in.deleting = deleting;
        auto ctx = context();
        if (vc) {
            auto lookup = registry_.find(vc->sourceType);
            w.handler = lookup.handler;
            in.config = vc;
            if (w.handler && !w.handler->validate(*vc)) in.layout = w.handler->copy_layout(ctx, *vc);
            if (!in.layout) {
                auto why = w.handler ? w.handler->validate(ctx, vm, *vc) : std::nullopt;
                in.invalid = why ? *why : "volume \"" + id + "\" cannot be laid out on nodes";
            } else {
                if (auto why = w.handler->validate(ctx, vm, *vc)) {
                    // The node count is the planner's to judge (it counts eligible nodes only).
                    if (!why->starts_with("replicas [")) in.placement_blocker = *why;
                }
            }
        }
        if (vm.status)
            for (const auto& v : vm.status->volumes)
                if (v.id == id && v.nodeAffinity && v.nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution) {
                    const auto& terms = v.nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution->nodeSelectorTerms;
                    if (!terms.empty() && !terms[0].matchExpressions.empty() && terms[0].matchExpressions[0].key == w.label_key &&
                        terms[0].matchExpressions[0].values.size() == 1)
                        in.serving = terms[0].matchExpressions[0].values[0];
                }
        // The volume's pods: cached, and created but not cached yet.
        handlers::ObservedObjects observed;
        if (auto it = owned.find(key); it != owned.end()) observed = it->second;
        {
            std::lock_guard lock(mu_);
            add_expected(observed.pods, expected_pods_, *caches_.pods, vm, key);
        }
        // Pods no entry accounts for (an older controller's, or left by a crash between a
        // pod's deletion and the record's update) are adopted: their directory becomes a
        // Removing entry, so it is cleaned up, then they go.
        std::set<std::string> known;
        for (const auto& e : entries) {
            for (std::int64_t a = 1; a <= std::max<std::int64_t>(e.attempts, 1); ++a)
                known.insert(handlers::naming::copy_pod_name(vm.metadata.uid, id, e.node, e.config, a));
            known.insert(handlers::naming::copy_cleanup_pod_name(vm.metadata.uid, id, e.node, e.path, e.removingAt));
        }
        for (const auto& p : observed.pods) {
            if (known.contains(p.metadata.name)) continue;
            auto role = detail::annotation(p, handlers::copy_role_annotation);
            std::string path = detail::annotation(p, handlers::copy_path_annotation);
            if (path.empty() && role.empty()) path = legacy_directory(vm, id, p);
            bool writes = role != "cleanup" && !path.empty() && !p.spec.nodeName.empty();
            bool recorded = std::any_of(entries.begin(), entries.end(),
                                        [&](const auto& e) { return e.node == p.spec.nodeName && e.path == path; });
            if (writes && !recorded) {
                api::CopyRecord e;
                e.volume = id;
                e.node = p.spec.nodeName;
                e.path = path;
                e.config = "adopted";
                e.phase = std::string(to_string(CopyPhase::Removing));
                e.message = "adopted from pod " + p.metadata.name;
                entries.push_back(std::move(e));
            }
            // A pod that writes stays until its directory's entry deletes it (writers_of).
            if (!writes) w.orphans.push_back(p.metadata.name);
        }
        for (const auto& e : entries)
            for (std::int64_t a = 1; a <= e.uploadAttempts.value_or(0); ++a)
                known.insert(output_upload_pod_name(vm.metadata.uid, id, e.node, e.path, a));
        find_uploader(vm, id, vc, observed, w);
        in.output = w.uploader != nullptr;
        in.discard_output = discards_output(vm);
        for (const auto& p : observed.pods) in.pods[p.metadata.name] = &p;
        auto users = users_of(vm);
        for (const auto& p : users) in.users.push_back(p.get());
        in.log_tail = [ctx](const api::Pod& p) { return ctx.log_tail(p); };
        in.progress = [this](const api::Pod& p) -> std::optional<fetch::TransferCounts> {
            std::lock_guard lk(mu_);
            auto c = progress_.find(p.metadata.uid);
            return c ? std::optional<fetch::TransferCounts>(*c) : std::nullopt;
        };
        in.entries = std::move(entries);
        w.plan = plan_volume_copies(in, nodes.view(), std::chrono::system_clock::now(), opts_.copies);
        refresh_copy_use(w.plan.entries, in.users, std::chrono::system_clock::now());
        return w;
    }

    /// Sets w's uploader when volume `id` is an output volume: its config is `vc`, the spec's
    /// volume of that id, or (the volume left the spec) what one of its pods recorded.
    void find_uploader(const api::VolumeManager& vm, const std::string& id, const api::VolumeConfig* vc,
                       const handlers::ObservedObjects& observed, CopyWork& w) const {
        if (!vc)
            for (const auto& c : vm.spec.volumeConfigs)
                if (c.id == id) vc = &c;
        std::optional<api::VolumeConfig> config;
        if (vc) config = *vc;
        for (const auto& p : observed.pods) {
            auto recorded = detail::annotation(p, config_annotation);
            if (recorded.empty()) continue;
            try {
                auto c = api::from_json<api::VolumeConfig>(api::parse(recorded));
                if (!config) config = c;
                w.recorded_configs.emplace(handlers::naming::source_config_digest(c), std::move(c));
            } catch (const std::exception&) {
            }
        }
        if (!config) return;
        auto lookup = registry_.find(config->sourceType);
        if (!lookup.handler || !lookup.handler->uploads()) return;
        w.uploader = lookup.handler;
        w.upload_config = std::move(config);
    }

    /// The directory an older controller's download pod wrote: from the volume config it
    /// recorded (its dataPath), in the layout of one directory per volume.
    std::string legacy_directory(const api::VolumeManager& vm, const std::string& id, const api::Pod& p) const {
        auto recorded = detail::annotation(p, config_annotation);
        if (recorded.empty()) return {};
        try {
            auto vc = api::from_json<api::VolumeConfig>(api::parse(recorded));
            std::string data_path = vc.has_option("dataPath") ? vc.option("dataPath") : handlers::default_allowed_data_roots.front();
            auto dp = handlers::check_data_path(data_path, opts_.handler.allowed_data_roots);
            if (!dp.ok()) return {};
            return handlers::naming::volume_directory(dp.path, vm.metadata.uid, id);
        } catch (const std::exception&) {
            return {};
        }
    }

    /// The injected pods that name `vm`: those that may mount its copies. Each Ready copy's
    /// use (inUse, lastUsed) is kept from them, changed only when a use flips, so no write per
    /// pass (volumes/disk_pressure_eviction.hpp), and a copy they use is not removed
    /// (volumes/copy_planner.hpp).
    std::vector<std::shared_ptr<const api::Pod>> users_of(const api::VolumeManager& vm) const {
        std::vector<std::shared_ptr<const api::Pod>> out;
        if (!caches_.injected_pods) return out;
        for (auto& p : caches_.injected_pods->store().by_index(runtime::label_index(volume_manager_label), vm.metadata.name))
            if (p->metadata.namespace_ == vm.metadata.namespace_) out.push_back(std::move(p));
        return out;
    }

    /// Carries out a copy plan whose record is written (its labels are set already, so no
    /// node is selected for data about to go): pod deletions, then creations. True if it
    /// created anything.
    asio::awaitable<void> apply_labels(const CopyWork& w) {
        for (const auto& [node, value] : w.plan.labels) co_await set_node_label(node, w.label_key, value);
    }

    asio::awaitable<bool> carry_out(const api::VolumeManager& vm, CopyWork& w) {
        const std::string& ns = vm.metadata.namespace_;
        for (const auto& name : w.plan.pods_to_delete) {
            // A pod already terminating stays until its containers have stopped: asking again
            // changes nothing (the plan waits for it to be gone).
            auto cached = caches_.pods->store().get(runtime::ObjectKey{ns, name});
            if (cached && !cached->metadata.deletionTimestamp.empty()) continue;
            co_await delete_ignoring_missing(api::Pod::resource, ns, name);
        }
        for (const auto& name : w.orphans) co_await delete_ignoring_missing(api::Pod::resource, ns, name);
        for (const auto& warning : w.plan.warnings) co_await warn(vm, "CopyLost", warning);
        for (const auto& e : w.plan.output_events) co_await note(vm, e.type, e.reason, e.message);
        if (refusal_wait(vm, w.volume_id)) co_return false;  // backing off after a refusal
        bool created = false;
        std::string refusal;
        try {
            if (w.handler && w.config)
                for (const auto& t : w.plan.downloads)
                    if (t.peer.active()) {
                        co_await ensure_peer_secret(vm, *w.config, t.peer.secret);
                        break;
                    }
            for (const auto& t : w.plan.downloads) {
                if (!w.handler || !w.config) break;
                api::Pod pod = w.handler->copy_pod(context(), vm, *w.config, t);
                pod.metadata.annotations[std::string(owner_uid_annotation)] = vm.metadata.uid;
                pod.metadata.annotations[std::string(owner_name_annotation)] = vm.metadata.namespace_ + "/" + vm.metadata.name;
                pod.metadata.annotations[std::string(config_annotation)] = detail::config_text(*w.config);
                created |= co_await create_pod(vm, pod);
            }
            for (const auto& t : w.plan.uploads) {
                if (!w.uploader || !w.upload_config) break;
                auto recorded = w.recorded_configs.find(t.config);
                const api::VolumeConfig& config = recorded != w.recorded_configs.end() ? recorded->second : *w.upload_config;
                api::Pod pod = w.uploader->upload_pod(context(), vm, config, t);
                pod.metadata.annotations[std::string(owner_uid_annotation)] = vm.metadata.uid;
                pod.metadata.annotations[std::string(owner_name_annotation)] = vm.metadata.namespace_ + "/" + vm.metadata.name;
                pod.metadata.annotations[std::string(config_annotation)] = detail::config_text(config);
                created |= co_await create_pod(vm, pod);
            }
            for (const auto& c : w.plan.cleanups) {
                auto root = allowed_root_of(c.path);
                if (root.empty()) continue;  // not under any allowed root (the flag changed): never delete there
                api::VolumeConfig ref;
                ref.id = w.volume_id;
                auto meta = handlers::sub_resource_meta(vm, ref, c.pod_name);
                meta.annotations[std::string(owner_uid_annotation)] = vm.metadata.uid;
                meta.annotations[std::string(owner_name_annotation)] = vm.metadata.namespace_ + "/" + vm.metadata.name;
                meta.annotations[std::string(handlers::copy_path_annotation)] = c.path;
                meta.annotations[std::string(handlers::copy_role_annotation)] = "cleanup";
                created |= co_await create_pod(vm, handlers::cleanup_pod(std::move(meta), c.node, c.path, root,
                                                                         opts_.handler.data_mover_image));
            }
            forget_refusal(vm, w.volume_id);
        } catch (const client::ApiError& e) {
            if (!permanent_refusal(e)) throw;
            refusal = e.what();
        }
        // Outside the handler: a coroutine cannot co_await inside a catch block.
        if (!refusal.empty()) co_await remember_refusal(vm, w.volume_id, refusal);
        co_return created;
    }

    /// The volume's peer certificate (handlers/peer_fill.hpp), made before the first download
    /// pod that mounts it; owned by the VolumeManager, so it goes with it. One that exists is
    /// kept: pods already running hold its certificate.
    asio::awaitable<void> ensure_peer_secret(const api::VolumeManager& vm, const api::VolumeConfig& vc,
                                             const std::string& name) {
        if (caches_.secrets && caches_.secrets->store().get(runtime::ObjectKey{vm.metadata.namespace_, name})) co_return;
        co_await create_ignoring_conflict(handlers::make_peer_secret(handlers::sub_resource_meta(vm, vc, name)));
    }

    asio::awaitable<bool> create_pod(const api::VolumeManager& vm, const api::Pod& pod) {
        auto made = co_await create_ignoring_conflict(pod);
        if (made) expect(vm, *made);
        co_return true;
    }

    std::string allowed_root_of(const std::string& path) const {
        for (const auto& r : opts_.handler.allowed_data_roots) {
            auto root = handlers::normalize_data_path(r);
            if (root && handlers::path_is_under(path, *root) && path != *root) return *root;
        }
        return {};
    }

    std::size_t owned_count(const OwnedObjects& owned, const std::string& id, const api::VolumeManager& vm) const {
        auto it = owned.find(handlers::naming::volume_key(vm.metadata.uid, id));
        if (it == owned.end()) return 0;
        return it->second.pods.size() + it->second.persistent_volumes.size() + it->second.claims.size();
    }

    bool record_changed(const api::VolumeManager& vm, const std::vector<api::CopyRecord>& copies) const {
        static const std::vector<api::CopyRecord> none;
        const auto& old = vm.status ? vm.status->copies : none;
        if (old.size() != copies.size()) return true;
        for (std::size_t i = 0; i < old.size(); ++i) {
            api::CopyRecord a = old[i];
            a.unknown.clear();
            if (api::to_json(a) != api::to_json(copies[i])) return true;
        }
        return false;
    }

    /// Sets (or with "" removes) `key` on `node`, when the cache shows it otherwise.
    asio::awaitable<void> set_node_label(const std::string& node, const std::string& key, const std::string& value) {
        auto n = caches_.nodes->store().get(runtime::ObjectKey{"", node});
        if (!n) co_return;
        auto it = n->metadata.labels.find(key);
        if (value.empty() ? it == n->metadata.labels.end() : (it != n->metadata.labels.end() && it->second == value))
            co_return;
        boost::json::object labels;
        if (value.empty()) labels[key] = nullptr;
        else labels[key] = value;
        boost::json::value patch{{"metadata", {{"labels", std::move(labels)}}}};
        co_await client::ignore_not_found(
            client_.patch(api::Node::resource, "", node, client::PatchType::Merge, std::move(patch)));
    }

    // ---- the view of the record, and refusals ---------------------------------------------

    /// After a record write from the view at resourceVersion R, the cache is behind until it
    /// shows something else than R (it only moves forward).
    bool stale_view(const api::VolumeManager& vm) {
        return with_memory(vm, [&](Memory& m) {
            if (!m.written_from) return false;
            if (m.written_from->resource_version != vm.metadata.resourceVersion ||
                std::chrono::steady_clock::now() - m.written_from->at > expectation_ttl) {
                m.written_from.reset();
                return false;
            }
            return true;
        });
    }

    /// `st` as a merge patch: an empty record is written as null (to_json leaves empty fields
    /// out, and a merge patch leaves out what it does not name: the last entries would stay).
    static boost::json::value status_patch(const api::VolumeManagerStatus& st) {
        auto v = api::to_json(st);
        if (v.is_object() && !v.as_object().contains("copies")) v.as_object()["copies"] = nullptr;
        if (v.is_object() && !v.as_object().contains("progress")) v.as_object()["progress"] = nullptr;
        return v;
    }

    /// Writes `st` (the record in it) with the view's resourceVersion as precondition.
    /// False when the object changed meanwhile (the view was stale).
    asio::awaitable<bool> write_record(const api::VolumeManager& vm, api::VolumeManagerStatus st) {
        boost::json::value patch{{"metadata", {{"resourceVersion", vm.metadata.resourceVersion}}},
                                 {"status", status_patch(st)}};
        auto po = client::PatchOptions().on("status");
        try {
            co_await client_.patch(api::VolumeManager::resource, vm.metadata.namespace_, vm.metadata.name,
                                   client::PatchType::Merge, std::move(patch), po);
        } catch (const client::ApiError& e) {
            if (e.is(client::ErrorKind::Conflict) || e.is(client::ErrorKind::NotFound)) co_return false;
            throw;
        }
        ++status_writes_;
        with_memory(vm, [&](Memory& m) { m.written_from = WrittenFrom{vm.metadata.resourceVersion, std::chrono::steady_clock::now()}; });
        co_return true;
    }

    /// 400, 403, 404 and 422 on a create: the same request will be refused again until
    /// something changes, so it is backed off instead of retried at once.
    static bool permanent_refusal(const client::ApiError& e) {
        return e.is(client::ErrorKind::Invalid) || e.is(client::ErrorKind::BadRequest) ||
               e.is(client::ErrorKind::Forbidden) || e.is(client::ErrorKind::NotFound);
    }

    asio::awaitable<void> remember_refusal(const api::VolumeManager& vm, const std::string& id, const std::string& why) {
        std::string message;
        with_memory(vm, [&](Memory& m) {
            auto& r = m.refusals[id];
            ++r.count;
            auto delay = opts_.refusal_backoff;
            for (int i = 1; i < r.count && delay < opts_.refusal_backoff_cap; ++i) delay *= 2;
            delay = std::min(delay, opts_.refusal_backoff_cap);
            r.retry_at = std::chrono::steady_clock::now() + delay;
            r.message = "the API server refused a sub-resource: " + why;
            message = r.message;
        });
        co_await warn(vm, "CreateRefused", "volume " + id + ": " + message);
    }
    void forget_refusal(const api::VolumeManager& vm, const std::string& id) {
        with_memory(vm, [&](Memory& m) { m.refusals.erase(id); });
    }
    std::optional<std::string> refused(const api::VolumeManager& vm, const std::string& id) {
        return with_memory(vm, [&](Memory& m) -> std::optional<std::string> {
            auto it = m.refusals.find(id);
            if (it == m.refusals.end()) return std::nullopt;
            return it->second.message;
        });
    }
    /// How long volume `id` (any volume, without one) still backs off after a refusal.
    std::optional<std::chrono::milliseconds> refusal_wait(const api::VolumeManager& vm, const std::string& id = {}) {
        auto now = std::chrono::steady_clock::now();
        return with_memory(vm, [&](Memory& m) {
            std::optional<std::chrono::milliseconds> out;
            for (const auto& [k, r] : m.refusals) {
                if (!id.empty() && k != id) continue;
                if (r.retry_at <= now) continue;
                auto left = std::chrono::duration_cast<std::chrono::milliseconds>(r.retry_at - now) + std::chrono::milliseconds(1);
                if (!out || left < *out) out = left;
            }
            return out;
        });
    }

    // ---- observation and writes ------------------------------------------------------------

    handlers::HandlerContext context() {
        auto ctx = cache_context(opts_.handler, caches_.nodes, caches_.secrets);
        ctx.pod_log_tail = [this](const api::Pod& p) {
            std::lock_guard lk(mu_);
            auto tail = log_tails_.find(p.metadata.uid);
            return tail ? *tail : std::string();
        };
        return ctx;
    }

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

    /// One volume's sub-resources: those cached, and those created but not cached yet.
    handlers::ObservedObjects observe(const api::VolumeManager& vm, const api::VolumeConfig& vc, const OwnedObjects& owned) {
        handlers::ObservedObjects o;
        auto key = handlers::naming::volume_key(vm.metadata.uid, vc.id);
        if (auto it = owned.find(key); it != owned.end()) o = it->second;
        std::lock_guard lock(mu_);
        add_expected(o.pods, expected_pods_, *caches_.pods, vm, key);
        add_expected(o.persistent_volumes, expected_pvs_, *caches_.persistent_volumes, vm, key);
        add_expected(o.claims, expected_claims_, *caches_.claims, vm, key);
        return o;
    }

    // Expectations (runtime/expectations.hpp), one per kind, owned by VolumeManager uid:
    // observe() counts the objects this controller created that the caches do not show yet
    // as there, so a reconcile woken by one new object's event does not create its siblings
    // a second time. A record goes once the cache shows the object, or after
    // `expectation_ttl` should its event never come.
    static constexpr std::chrono::seconds expectation_ttl{30};
    template <class T>
    using Expected = runtime::Expectations<T>;

    /// Adds to `seen` (a volume's cached objects) what `vm` expects of that volume.
    /// Called with mu_ held.
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

    /// Failed pods' log tails, fetched once per pod, for the handlers' failure messages. A
    /// refused read is also a Warning event Forbidden on `vm`: the volume's message says it,
    /// but a status goes with its object, and the event outlives a quick deletion.
    asio::awaitable<void> fetch_failed_logs(const api::VolumeManager& vm, const std::vector<api::Pod>& pods) {
        for (const auto& p : pods) {
            if (!p.status || p.status->phase != "Failed" || p.metadata.uid.empty()) continue;
            {
                std::lock_guard lk(mu_);
                if (log_tails_.find(p.metadata.uid)) continue;
            }
            std::string tail;
            bool refused = false;
            try {
                // The failing container's log (a pod of several needs one named: a resync
                // volume fails in its init container).
                auto lo = client::LogOptions().tail(opts_.log_tail_lines).of(handlers::failed_container(p));
                tail = co_await client_.logs(p.metadata.namespace_, p.metadata.name, lo);
            } catch (const client::ApiError& e) {
                // Gone: the message says what failed without it. Refused (a missing
                // pods/log rule, say): the message says why there is no log to show.
                if (e.is(client::ErrorKind::NotFound)) tail.clear();
                else tail = std::string("its log could not be read: ") + e.what();
                refused = e.is(client::ErrorKind::Forbidden);
            } catch (const std::exception&) {
                continue;  // not reached: the next pass asks again
            }
            if (refused) co_await warn(vm, "Forbidden", "reading the log of failed pod " + p.metadata.name + ": " + tail);
            while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
            std::lock_guard lk(mu_);
            log_tails_.get_or_insert(p.metadata.uid) = std::move(tail);
        }
    }

    /// Reads the progress of `vm`'s running downloads (the copying volumes' pods with a
    /// `vck-fetch fetch` container running) when `progress_interval` has passed since the last
    /// read for `vm`: one pods/log GET each (its last 2 lines, at most 4096 bytes), the counts
    /// kept by pod uid for the planner. Returns when the next read is due while downloads
    /// run (the reconcile requeues for it), nullopt when none runs or reading is off.
    asio::awaitable<std::optional<std::chrono::steady_clock::time_point>> poll_progress(
        const api::VolumeManager& vm, const OwnedObjects& owned,
        const std::map<std::string, const api::VolumeConfig*>& copy_volumes) {
        using clock = std::chrono::steady_clock;
        const auto& uid = vm.metadata.uid;
        std::vector<std::pair<const api::Pod*, std::string>> running;  // pod, container
        for (const auto& [id, vc] : copy_volumes) {
            auto o = owned.find(handlers::naming::volume_key(uid, id));
            if (o == owned.end()) continue;
            for (const auto& p : o->second.pods)
                if (auto c = progress_container(p); !c.empty() && !p.metadata.uid.empty()) running.emplace_back(&p, c);
        }
        if (running.empty() || opts_.progress_interval.count() <= 0) {
            with_memory(vm, [](Memory& m) {
                m.progress_polled.reset();
                m.progress_early.clear();
            });
            co_return std::nullopt;
        }
        auto now = clock::now();
        auto next = now + opts_.progress_interval;
        if (with_memory(vm, [&](Memory& m) {
            // A download not yet seen moving is read early, 1 s and 2 s after it is first seen
            // running (vck-fetch prints its totals once listed and a line a second later): a
            // short download shows progress too. Only the VolumeManager's running pods are kept.
            auto& early = m.progress_early;
            std::map<std::string, EarlyReads> kept;
            bool early_due = false;
            for (auto& [p, container] : running) {
                auto it = early.find(p->metadata.uid);
                auto e = it == early.end() ? EarlyReads{now, 0} : it->second;
                auto known = progress_.find(p->metadata.uid);
                const bool moving = known && known->bytes_done > 0;
                while (!moving && e.reads < early_read_count) {
                    auto due = e.seen + early_read_step * (e.reads + 1);
                    if (due - e.seen >= opts_.progress_interval) break;
                    if (due > now) {
                        next = std::min(next, due);
                        break;
                    }
                    early_due = true;
                    ++e.reads;
                }
                kept.emplace(p->metadata.uid, e);
            }
            early = std::move(kept);
            const bool interval_due = !m.progress_polled || now - *m.progress_polled >= opts_.progress_interval;
            if (interval_due) m.progress_polled = now;
            else next = std::min(next, *m.progress_polled + opts_.progress_interval);
            return !interval_due && !early_due;
        }))
            co_return next;
        for (const auto& [p, container] : running) {
            std::optional<fetch::TransferCounts> counts;
            try {
                auto lo = client::LogOptions().tail(2).of(container);
                lo.limit_bytes = 4096;
                ++progress_reads_;
                counts = fetch::parse_progress_counts(co_await client_.logs(p->metadata.namespace_, p->metadata.name, lo));
            } catch (const client::ApiError& e) {
                // Gone or not reachable: the record keeps its last counts, and the next
                // interval asks again; progress is never worth failing a reconcile. Refused
                // (RBAC without pods/log get) is said, once per interval, not kept silent.
                if (e.is(client::ErrorKind::Forbidden))
                    log::warning("cannot read a download's progress", {{"pod", p->metadata.name},
                                                                         {"namespace", p->metadata.namespace_},
                                                                         {"error", e.what()}});
            } catch (const std::exception&) {
            }
            if (!counts) continue;
            std::lock_guard lk(mu_);
            progress_.get_or_insert(p->metadata.uid) = *counts;
        }
        co_return next;
    }

    /// Creates each desired object absent from `observed` (by name), stamped with the owner
    /// and config annotations; the created objects join `observed`. True if any was created.
    template <class T>
    asio::awaitable<bool> create_missing(const api::VolumeManager& vm, const std::string& config, std::vector<T>& desired,
                                         std::vector<T>& observed) {
        bool any = false;
        for (auto& d : desired) {
            bool exists = std::any_of(observed.begin(), observed.end(),
                                      [&](const T& o) { return o.metadata.name == d.metadata.name; });
            if (exists) continue;
            d.metadata.annotations[std::string(config_annotation)] = config;
            d.metadata.annotations[std::string(owner_uid_annotation)] = vm.metadata.uid;
            d.metadata.annotations[std::string(owner_name_annotation)] = vm.metadata.namespace_ + "/" + vm.metadata.name;
            auto made = co_await create_ignoring_conflict(d);
            if (made) {
                expect(vm, *made);
                observed.push_back(std::move(*made));
            }
            any = true;
        }
        co_return any;
    }

    template <class T>
    asio::awaitable<std::optional<T>> create_ignoring_conflict(const T& obj) {
        try {
            auto made = co_await client_.create(obj);
            ++creates_;
            co_return made;
        } catch (const client::ApiError& e) {
            // The cache was behind: the object is there already (its watch event is on the way).
            if (!e.is(client::ErrorKind::AlreadyExists)) throw;
        }
        co_return std::nullopt;
    }

    asio::awaitable<void> delete_ignoring_missing(const api::ResourceType& rt, std::string_view ns,
                                                  std::string_view name) {
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
    asio::awaitable<void> let_go_of(const api::VolumeManager& vm, const api::VolumeConfig& vc, const std::string& name) {
        boost::json::value patch{{"metadata", {{"annotations", {{std::string(owner_uid_annotation), nullptr},
                                                                 {std::string(owner_name_annotation), nullptr},
                                                                 {std::string(handlers::retained_from_annotation),
                                                                  vm.metadata.namespace_ + "/" + vm.metadata.name +
                                                                      " volume " + vc.id}}}}}};
        if (!co_await client::ignore_not_found(
                client_.patch(api::PersistentVolume::resource, "", name, client::PatchType::Merge, std::move(patch))))
            co_return;
        {
            std::lock_guard lock(mu_);
            expected_pvs_.forget(runtime::ObjectKey{"", name});
        }
        co_await note(vm, "Normal", "VolumeRetained",
                      "persistent volume " + name + " of volume " + vc.id +
                          " retained (reclaimPolicy Retain): it stays, Released once its claim is gone, with its data");
    }

    /// A volume's node label: set, or removed only while it still has the volume's value (set_node_label
    /// patches).
    asio::awaitable<void> ensure_node_label(const handlers::NodeLabel& label, bool present) {
        if (present) co_return co_await set_node_label(label.node, label.key, label.value);
        auto node = caches_.nodes->store().get(runtime::ObjectKey{"", label.node});
        if (!node) co_return;  // the node is gone, and its label with it
        auto it = node->metadata.labels.find(label.key);
        if (it != node->metadata.labels.end() && it->second == label.value) co_await set_node_label(label.node, label.key, "");
    }

    /// How much of the Pending grace window is left for `vm` (starting it when this pass
    /// created objects); zero or less when Pending should be written now.
    std::chrono::milliseconds grace_remaining(const api::VolumeManager& vm, bool created_now) {
        auto now = std::chrono::steady_clock::now();
        return with_memory(vm, [&](Memory& m) {
            if (created_now && (!m.grace_until || *m.grace_until < now)) m.grace_until = now + opts_.pending_grace;
            if (!m.grace_until) return std::chrono::milliseconds(0);
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*m.grace_until - now);
            if (left.count() <= 0) m.grace_until.reset();
            return left;
        });
    }
    void forget_grace(const api::VolumeManager& vm) {
        with_memory(vm, [](Memory& m) { m.grace_until.reset(); });
    }
    /// Everything remembered of a VolumeManager whose deletion is complete (a long-running
    /// controller sees many come and go).
    void forget(const api::VolumeManager& vm) {
        std::lock_guard lock(mu_);
        const auto& uid = vm.metadata.uid;
        memory_.erase(uid);
        expected_pods_.forget_owner(uid);
        expected_pvs_.forget_owner(uid);
        expected_claims_.forget_owner(uid);
    }

    /// Runs f(Memory&) on what is remembered of `vm`, under mu_; an entry left empty goes, so
    /// a VolumeManager with nothing pending costs nothing.
    template <class F>
    auto with_memory(const api::VolumeManager& vm, F&& f) -> std::invoke_result_t<F&, Memory&> {
        std::lock_guard lock(mu_);
        auto it = memory_.try_emplace(vm.metadata.uid).first;
        struct Tidy {
            std::map<std::string, Memory>& all;
            std::map<std::string, Memory>::iterator it;
            ~Tidy() {
                if (it->second.empty()) all.erase(it);
            }
        } tidy{memory_, it};
        return f(it->second);
    }

    /// Writes `st` (plus observedGeneration and the Ready condition) when it differs from the
    /// current status. Returns whether it wrote.
    /// With `precondition`, the write carries the view's resourceVersion (a record write) and
    /// false means the view was stale.
    asio::awaitable<bool> write_status(const api::VolumeManager& vm, api::VolumeManagerStatus st, bool ready,
                                       const std::string& reason, bool precondition = false) {
        st = with_ready_condition(std::move(st), ready, reason, vm, detail::utc_now());
        if (precondition) co_return co_await write_record(vm, std::move(st));
        if (vm.status) {
            api::VolumeManagerStatus old = *vm.status;
            old.unknown.clear();
            if (api::to_json(old) == api::to_json(st)) co_return false;
        }
        boost::json::value patch{{"status", status_patch(st)}};
        auto po = client::PatchOptions().on("status");
        // Gone while this reconcile ran (its finalizer already off): nobody is left to read the
        // status, and its deletion event ends the story.
        if (!co_await client::ignore_not_found(client_.patch(api::VolumeManager::resource, vm.metadata.namespace_,
                                                              vm.metadata.name, client::PatchType::Merge, std::move(patch), po)))
            co_return false;
        ++status_writes_;
        co_return true;
    }

    static bool previously_reported(const api::VolumeManager& vm, const std::string& id) {
        if (!vm.status) return false;
        return std::any_of(vm.status->volumes.begin(), vm.status->volumes.end(),
                           [&](const api::VolumeStatus& v) { return v.id == id; });
    }

    asio::awaitable<void> announce(const api::VolumeManager& vm, const StatusDecision& d) {
        if (d.state == api::VolumeManagerState::Running) co_await note(vm, "Normal", "Deployed", d.status.message);
        if (d.state == api::VolumeManagerState::Failed) {
            std::string msg = d.status.message;
            for (const auto& f : d.failures) msg += "; " + f;
            co_await note(vm, "Warning", "Failed", msg);
        }
    }

    asio::awaitable<void> warn(const api::VolumeManager& vm, std::string reason, std::string message) {
        co_await note(vm, "Warning", std::move(reason), std::move(message));
    }

    asio::awaitable<void> note(const api::VolumeManager& vm, std::string type, std::string reason, std::string message) {
        if (!events_) co_return;
        auto ref = runtime::EventRecorder::reference_to(vm, api::VolumeManager::resource);
        co_await events_->record(std::move(ref), std::move(type), std::move(reason), std::move(message));
    }

    client::Client& client_;
    Caches caches_;
    handlers::HandlerRegistry registry_;
    ReconcilerOptions opts_;
    std::shared_ptr<runtime::EventRecorder> events_;
    std::unique_ptr<PodGates> gates_;  // with Caches::injected_pods
    mutable std::mutex mu_;
    /// Failed pods' log tails by pod uid: bounded, the least recently used going first (a
    /// tail is read again at each pass while its pod stays failed).
    static constexpr std::size_t log_tail_capacity = 4096;
    runtime::LruMap<std::string, std::string> log_tails_{log_tail_capacity};
    /// The counts running download pods last reported, by pod uid (bounded like log_tails_),
    /// and when each VolumeManager's downloads were last asked (by its uid).
    runtime::LruMap<std::string, fetch::TransferCounts> progress_{log_tail_capacity};
    static constexpr int early_read_count = 2;
    static constexpr std::chrono::milliseconds early_read_step{1000};
    std::map<std::string, Memory> memory_;  // by VolumeManager uid; see Memory
    Expected<api::Pod> expected_pods_{expectation_ttl};
    Expected<api::PersistentVolume> expected_pvs_{expectation_ttl};
    Expected<api::PersistentVolumeClaim> expected_claims_{expectation_ttl};
    std::atomic<std::uint64_t> creates_{0}, deletes_{0}, status_writes_{0}, progress_reads_{0};
};

} // namespace vck::volumes
