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
// The parts, each in its own header: sub_resource_writer.hpp (reads by owner index, creates
// with expectations, deletes, node labels), volume_copies.hpp (the copy planner's shell),
// volume_cleanup.hpp (removal), status_writer.hpp (status and the record), download_logs.hpp
// (failed pods' logs, progress), volume_manager_memory.hpp (what is remembered per
// VolumeManager between passes), volume_manager_events.hpp (events), source_refresh.hpp
// (refreshes of copies that follow their source), shared_copies.hpp (copies that volumes of
// equal configs share, across VolumeManagers and namespaces).
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/client/client.hpp>
#include <vck/handlers/handler_registry.hpp>
#include <vck/handlers/spec_validation.hpp>
#include <vck/runtime/event_recorder.hpp>
#include <vck/runtime/finalizer.hpp>
#include <vck/runtime/own_writes.hpp>
#include <vck/runtime/reconciler.hpp>
#include <vck/volumes/cache_context.hpp>
#include <vck/volumes/copy_progress.hpp>
#include <vck/volumes/download_logs.hpp>
#include <vck/volumes/shared_copies.hpp>
#include <vck/volumes/output_upload.hpp>
#include <vck/volumes/pod_gates.hpp>
#include <vck/volumes/reconciler_options.hpp>
#include <vck/volumes/status_writer.hpp>
#include <vck/volumes/sub_resource_ownership.hpp>
#include <vck/volumes/sub_resource_writer.hpp>
#include <vck/volumes/volume_cleanup.hpp>
#include <vck/volumes/volume_copies.hpp>
#include <vck/volumes/volume_manager_events.hpp>
#include <vck/volumes/volume_manager_memory.hpp>
#include <vck/volumes/volume_status.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace vck::volumes {

namespace asio = boost::asio;

namespace detail {

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

class VolumeManagerReconciler {
public:
    VolumeManagerReconciler(client::Client& c, Caches caches, handlers::HandlerRegistry registry,
                            ReconcilerOptions o = {}, std::shared_ptr<runtime::EventRecorder> events = nullptr)
        : client_(c), caches_(std::move(caches)), registry_(std::move(registry)), opts_(std::move(o)),
          events_(std::move(events)), writer_(client_, caches_, events_, *own_), logs_(client_, opts_, memory_, events_),
          status_(client_, memory_, *own_, [this](const api::VolumeManager& vm) { return gates_waiting(vm); }),
          copies_(caches_, registry_, opts_, writer_, logs_, memory_, events_, [this] { return context(); }, &shared_),
          cleanup_(registry_, opts_, writer_, status_, logs_, copies_, [this] { return context(); }),
          refresher_(opts_.min_refresh_interval, opts_.list_source) {
        if (!caches_.volume_managers || !caches_.pods || !caches_.persistent_volumes || !caches_.claims ||
            !caches_.nodes)
            throw std::invalid_argument("volume manager reconciler: the VolumeManager, pod, PV, PVC and node caches are required");
        if (caches_.injected_pods)
            gates_ = std::make_unique<PodGates>(client_, caches_.injected_pods, registry_, opts_.handler, events_.recorder());
    }
    VolumeManagerReconciler(const VolumeManagerReconciler&) = delete;
    VolumeManagerReconciler& operator=(const VolumeManagerReconciler&) = delete;

    asio::awaitable<runtime::Result> reconcile(const runtime::Request& req) {
        auto vm = caches_.volume_managers->store().get(req);
        if (!vm) {
            // Gone: the finalizer made sure its data was cleaned up; pods that still name it
            // are reported (they can never get their data).
            if (gates_) co_await gates_->settle(req, nullptr);
            shared_.forget_holder(req.namespace_ + "/" + req.name);
            co_return runtime::Result::done();
        }
        // The record of copies is in the status this controller wrote last: never act on a
        // cached version older than that write (its watch event is on the way).
        if (memory_.stale_view(*vm, SubResourceWriter::expectation_ttl))
            co_return runtime::Result::requeue_after(std::chrono::milliseconds(50));
        // runtime/finalizer.hpp keeps the protocol: the finalizer is on before anything is
        // deployed, and comes off only once cleanup says everything is removed.
        runtime::FinalizerReconcile<api::VolumeManager> step =
            [this](runtime::FinalizerEvent ev, std::shared_ptr<const api::VolumeManager> current) -> asio::awaitable<runtime::Result> {
            if (ev == runtime::FinalizerEvent::Apply) co_return co_await apply(*current);
            memory_.forget_grace(*current);
            auto removal = co_await cleanup_.remove_everything(*current, true);
            if (!removal.done) co_return runtime::Result::requeue_after(removal.recheck);
            co_return runtime::Result::done();
        };
        RecordingPatcher patcher{client_, *own_};
        // Named, not temporaries of the co_await expression (GCC 12 destroys those twice).
        std::string finalizer_key(finalizer_name);
        auto protocol = runtime::finalizer<api::VolumeManager>(patcher, api::VolumeManager::resource, finalizer_key, vm,
                                                               std::move(step));
        auto pass = events_.forbidden_shown(vm.get(), std::move(protocol));
        auto result = co_await shared_.abandoning_after(std::string(vm->metadata.uid), std::move(pass));
        if (!vm->metadata.deletionTimestamp.empty() && result.kind() == runtime::Result::Kind::Done) {
            memory_.forget(vm->metadata.uid);
            writer_.forget(vm->metadata.uid);
            shared_.forget(vm->metadata.uid);
        }
        if (gates_) co_await settle_gates(req);
        co_return result;
    }

    /// The pods waiting for this VolumeManager's data (PodGates); a refusal of this
    /// controller's rights is also a Warning event on the VolumeManager, as for its own objects.
    asio::awaitable<void> settle_gates(const runtime::Request& req) {
        auto vm = caches_.volume_managers->store().get(req);
        auto settle = gates_->settle(req, vm.get());
        co_await events_.forbidden_shown(vm.get(), std::move(settle));
    }

    /// Counters for tests and benchmarks.
    std::uint64_t creates() const { return writer_.creates(); }
    std::uint64_t deletes() const { return writer_.deletes(); }
    std::uint64_t status_writes() const { return status_.writes(); }
    std::uint64_t progress_reads() const { return logs_.progress_reads(); }
    /// How many VolumeManagers the reconciler remembers something of (retry and refusal
    /// backoffs, record writes in flight): none once their deletions are complete.
    std::size_t remembered() const { return memory_.size(); }
    /// Its own writes (runtime/own_writes.hpp): the controller's watches drop their events
    /// (volume_manager_controller.hpp), so a write costs no reconcile of its own.
    const std::shared_ptr<runtime::OwnWrites>& own_writes() const { return own_; }

private:
    struct VolumeResult {
        handlers::VolumeOutcome outcome;
        bool created = false;
    };
    /// The finalizer's patches, through the client, recorded as own writes.
    struct RecordingPatcher {
        client::Client& client;
        runtime::OwnWrites& own;
        asio::awaitable<boost::json::value> patch(const api::ResourceType& rt, std::string_view ns, std::string_view name,
                                                  client::PatchType type, boost::json::value body) {
            auto out = co_await client.patch(rt, ns, name, type, std::move(body));
            own.record(rt.plural, ns, name, api::string_at(out, {"metadata", "resourceVersion"}));
            co_return out;
        }
    };

    /// Whether pods wait for `vm`'s data (pod injection): the event of a status write is then
    /// kept, since the pass it brings ungates them from the state the write announces.
    bool gates_waiting(const api::VolumeManager& vm) const {
        if (!gates_ || !caches_.injected_pods) return false;
        for (const auto& p : caches_.injected_pods->store().by_index(runtime::label_index(volume_manager_label), vm.metadata.name))
            if (p->metadata.namespace_ == vm.metadata.namespace_) return true;
        return false;
    }

    /// The copying volumes of the spec (first of each id), and the plans of their copies.
    struct CopyPass {
        std::map<std::string, const api::VolumeConfig*> volumes;
        std::vector<CopyWork> work;
        std::set<std::string> keys;  // of the volumes whose copies plan their own removal
        std::vector<api::SourceRefresh> refreshes;  // the record of refreshed volumes
        std::optional<std::chrono::system_clock::time_point> refresh_due;
    };

    /// Volume `vc`'s refresh step (volumes/source_refresh.hpp); returns the version of its
    /// data the copies are to hold, and keeps its record in `pass`.
    asio::awaitable<std::int64_t> refresh(const api::VolumeManager& vm, const api::VolumeConfig& vc,
                                          const std::vector<api::CopyRecord>& entries, CopyPass& pass) {
        auto record = SourceRefresher::record_of(vm, vc.id);
        // Most volumes are never refreshed: no layout (a digest) is computed for them.
        const handlers::AnyHandler* handler = nullptr;
        if (SourceRefresher::refreshable(vc) && SourceRefresher::asked(vm, vc)) handler = registry_.find(vc.sourceType).handler;
        auto layout = handler && !handler->validate(vc) ? handler->copy_layout(context(), vc) : std::nullopt;
        if (layout) {
            auto current = SourceRefresher::refreshed_config(layout->config, record.version);
            const auto now = std::chrono::system_clock::now();
            auto s = co_await refresher_.step(client_, vm, vc, entries, current, now);
            record = s.record;
            if (s.due && (!pass.refresh_due || *s.due < *pass.refresh_due)) pass.refresh_due = s.due;
            // Named: no temporaries in co_await expressions (GCC 12).
            std::string failed = "volume " + vc.id + ": " + record.message;
            std::string building = "volume " + vc.id + ": the source changed; building version " +
                                   std::to_string(record.version) + " beside the current one";
            if (s.checked && !record.message.empty()) co_await events_.warn(vm, "RefreshFailed", failed);
            if (s.changed) co_await events_.note(vm, "Normal", "Refreshing", building);
        }
        if (record.version > 0 || !record.checkedAt.empty() || !record.request.empty()) pass.refreshes.push_back(record);
        co_return record.version;
    }

    handlers::HandlerContext context() {
        auto ctx = cache_context(opts_.handler, caches_.nodes, caches_.secrets);
        ctx.pod_log_tail = [this](const api::Pod& p) { return logs_.log_tail(p); };
        return ctx;
    }

    asio::awaitable<runtime::Result> apply(const api::VolumeManager& vm) {
        // Empty and unknown spec.states are neither (an unknown one is validate_spec's to report).
        auto desired = api::parse_volume_manager_state(vm.spec.state);
        if (desired == api::VolumeManagerState::Failed || desired == api::VolumeManagerState::Completed)
            co_return co_await end_in(vm, *desired);

        // A spec the schema should have refused (an older CRD, a schema-less one): reported,
        // and nothing deployed or removed on its account.
        if (auto why = handlers::validate_spec(vm.spec)) {
            auto previous = vm.status ? vm.status->state : std::string();
            auto decision = invalid_spec_status(vm.status, *why, vm.spec.volumeConfigs.size());
            bool wrote = co_await status_.write_status(vm, decision.status, decision.ready, decision.reason);
            if (wrote && previous != decision.status.state) co_await events_.warn(vm, "InvalidSpec", decision.status.message);
            co_return runtime::Result::done();
        }

        auto owned = writer_.owned_objects(vm);
        auto nodes = copies_.node_list();
        VolumeKeys keys(vm.metadata.uid);
        auto record = VolumeCopies::records_by_volume(vm);
        // Copies first: the volumes they handle are not the legacy cleanup's business.
        CopyPass copies;
        for (const auto& vc : vm.spec.volumeConfigs) {
            auto lookup = registry_.find(vc.sourceType);
            if (lookup.handler && lookup.handler->copies() && !copies.volumes.contains(vc.id)) copies.volumes[vc.id] = &vc;
        }
        for (const auto& [id, entries] : record)
            if (!copies.volumes.contains(id)) copies.work.push_back(copies_.plan(vm, id, nullptr, entries, owned, keys, nodes, false));
        for (auto& w : copies.work) copies.keys.insert(keys.of(w.volume_id));
        for (const auto& [id, vc] : copies.volumes) copies.keys.insert(keys.of(id));
        // Volumes no longer in the spec are cleaned up from what their objects recorded.
        bool removed_clean = co_await cleanup_.cleanup_removed(vm, owned, keys, copies.keys);
        auto next_progress = co_await logs_.poll_progress(vm, owned, keys, copies.volumes);

        std::vector<VolumeFinding> findings;
        std::set<std::string> seen_ids;
        bool created_any = false;
        for (const auto& vc : vm.spec.volumeConfigs) {
            VolumeResult r;
            std::vector<std::string> held_by;
            const bool duplicate = !seen_ids.insert(vc.id).second;
            if (duplicate) {
                r.outcome = handlers::failed_volume(vc, "volume id \"" + vc.id + "\" is used more than once");
            } else if (copies.volumes.contains(vc.id)) {
                if (auto o = owned.find(keys.of(vc.id)); o != owned.end()) co_await logs_.fetch_failed_logs(vm, o->second.pods);
                auto it = record.find(vc.id);
                auto entries = it == record.end() ? std::vector<api::CopyRecord>{} : it->second;
                auto version = co_await refresh(vm, vc, entries, copies);
                copies.work.push_back(copies_.plan(vm, vc.id, &vc, entries, owned, keys, nodes, false, version));
                if (copies.work.back().plan.needs_proof && opts_.list_source) {
                    // A shared copy to join: this volume's own credentials list the source first.
                    const std::string key = copies.work.back().config_key;
                    co_await shared_.prove(opts_.list_source, client_, vm, vc, key);
                    copies.work.back() = copies_.plan(vm, vc.id, &vc, std::move(entries), owned, keys, nodes, false, version);
                }
                r.outcome = copies.work.back().plan.outcome;
                held_by = copies.work.back().plan.held_by;
            } else {
                r = co_await reconcile_volume(vm, vc, owned, keys);
            }
            if (auto refusal = memory_.refused(vm, vc.id); refusal && !duplicate) {
                r.outcome.phase = handlers::VolumePhase::Failed;
                r.outcome.status.message = *refusal;
            }
            created_any = created_any || r.created;
            findings.push_back(VolumeFinding{vc.id, std::move(r.outcome), std::move(held_by)});
        }
        co_return co_await deploy(vm, std::move(findings), copies, removed_clean, created_any, next_progress);
    }

    /// spec.state Failed or Completed: everything is removed, the object stays.
    asio::awaitable<runtime::Result> end_in(const api::VolumeManager& vm, api::VolumeManagerState desired) {
        auto removal = co_await cleanup_.remove_everything(vm, false);
        if (removal.conflict) co_return runtime::Result::requeue_after(std::chrono::milliseconds(50));
        bool clean = removal.done;
        auto decision = end_state_status(desired, clean, vm.spec.volumeConfigs.size());
        decision.status.copies = std::move(removal.copies);
        if (desired == api::VolumeManagerState::Completed) note_output_status(decision.status, vm.status);
        co_await status_.write_status(vm, std::move(decision.status), decision.ready, decision.reason);
        co_return clean ? runtime::Result::done() : runtime::Result::requeue_after(opts_.cleanup_recheck);
    }

    /// The rest of a deployment pass: status from the findings, the copies' labels, record and
    /// plans carried out in that order, and when to look again.
    asio::awaitable<runtime::Result> deploy(const api::VolumeManager& vm, std::vector<VolumeFinding> findings,
                                            CopyPass& pass, bool removed_clean, bool created_any,
                                            std::optional<std::chrono::steady_clock::time_point> next_progress) {
        auto& copy_work = pass.work;
        bool copies_settled = true, wrote_record = false;
        std::optional<std::chrono::system_clock::time_point> due = pass.refresh_due;
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
        // A new version is recorded with the copies it brings (before any of them is made).
        bool new_version = false;
        for (const auto& r : pass.refreshes)
            new_version |= r.version != SourceRefresher::record_of(vm, r.volume).version;
        st.refreshes = std::move(pass.refreshes);
        // Labels first, each saying only that its node holds a Ready copy of that config; but
        // a volume no written record names yet gets its labels after the record (a failed
        // write would leave them where the volume's removal never looks).
        for (auto& w : copy_work) co_await copies_.labels_before_record(vm, w);
        // The record is written before anything it describes is made (and never from an
        // out-of-date view: a conflict sends the key back).
        if (StatusWriter::record_changed(vm, st.copies) || new_version) {
            auto previous = vm.status ? vm.status->state : std::string();
            if (!co_await status_.write_status(vm, st, decision.ready, decision.reason, true)) {
                copies_.unwritten(vm);
                co_return runtime::Result::requeue_after(std::chrono::milliseconds(50));
            }
            if (previous != st.state) co_await events_.announce(vm, decision);
            created_any = wrote_record = true;
        }
        copies_.recorded(vm);
        for (auto& w : copy_work) {
            co_await copies_.apply_labels(w);
            created_any |= co_await copies_.carry_out(vm, w);
        }

        // Objects created just now come back through their watch within moments, usually
        // ready; a Pending status in between would only cost a write. Within the grace window
        // Pending is not written; the re-check at its end writes it if they are still not ready.
        auto grace_left = decision.pending ? memory_.grace_remaining(vm, created_any, opts_.pending_grace)
                                           : std::chrono::milliseconds(0);
        if (!wrote_record && grace_left.count() <= 0) {
            auto previous = vm.status ? vm.status->state : std::string();
            bool wrote = co_await status_.write_status(vm, st, decision.ready, decision.reason);
            if (wrote && previous != st.state) co_await events_.announce(vm, decision);
        }
        if (!decision.pending) memory_.forget_grace(vm);
        auto after = decision.pending
                         ? (grace_left.count() > 0 ? grace_left + std::chrono::milliseconds(10) : opts_.pending_recheck)
                         : std::chrono::milliseconds(0);
        auto sooner = [&](std::chrono::milliseconds until) {
            if (after.count() == 0 || until < after) after = until;
        };
        if (due)
            sooner(std::max(std::chrono::duration_cast<std::chrono::milliseconds>(*due - std::chrono::system_clock::now()) +
                                std::chrono::milliseconds(10),
                            std::chrono::milliseconds(10)));
        if (auto r = memory_.refusal_wait(vm)) sooner(*r);
        // Downloads run: the next progress read is due then, whatever else happens.
        if (next_progress)
            sooner(std::max(std::chrono::duration_cast<std::chrono::milliseconds>(*next_progress -
                                                                                    std::chrono::steady_clock::now()),
                            std::chrono::milliseconds(0)) +
                   std::chrono::milliseconds(10));
        if (after.count() > 0) co_return runtime::Result::requeue_after(after);
        co_return runtime::Result::done();
    }

    asio::awaitable<VolumeResult> reconcile_volume(const api::VolumeManager& vm, const api::VolumeConfig& vc,
                                                   const OwnedObjects& owned, VolumeKeys& keys) {
        VolumeResult res;
        auto lookup = registry_.find(vc.sourceType);
        if (!lookup.handler) {
            res.outcome = handlers::failed_volume(vc, lookup.error);
            co_return res;
        }
        const handlers::AnyHandler& h = *lookup.handler;
        if (!lookup.warning.empty() && !previously_reported(vm, vc.id)) co_await events_.warn(vm, "Deprecated", lookup.warning);
        auto ctx = context();
        auto observed = writer_.observe(vm, keys.of(vc.id), owned);
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
            co_await cleanup_.cleanup_group(vm, stale, false);
            res.outcome = handlers::pending_volume(
                vc, "replacing sub-resources after a change of the volume" + detail::claims_kept_in_use(stale.claims));
            co_return res;
        }

        // validate(ctx) decides whether to build anything; the volume's outcome comes from
        // status(), which keeps data already in place Ready when, say, a Secret is rotated.
        std::string refusal;
        if (!h.validate(ctx, vm, vc) && !memory_.refusal_wait(vm, vc.id)) try {
            auto desired = h.desired(ctx, vm, vc);
            for (auto& sc : desired.storage_classes) {
                if (caches_.storage_classes &&
                    caches_.storage_classes->store().get(runtime::ObjectKey{"", sc.metadata.name}))
                    continue;
                co_await writer_.create_ignoring_conflict(sc);
            }
            res.created |= co_await writer_.create_missing(vm, config, desired.persistent_volumes, observed.persistent_volumes);
            res.created |= co_await writer_.create_missing(vm, config, desired.claims, observed.claims);
            res.created |= co_await writer_.create_missing(vm, config, desired.pods, observed.pods);
            memory_.forget_refusal(vm, vc.id);
        } catch (const client::ApiError& e) {
            if (!permanent_refusal(e)) throw;
            refusal = e.what();
        }
        if (!refusal.empty())
            co_await events_.warn(vm, "CreateRefused", "volume " + vc.id + ": " +
                                  memory_.remember_refusal(vm, vc.id, refusal, opts_.refusal_backoff, opts_.refusal_backoff_cap));

        co_await logs_.fetch_failed_logs(vm, observed.pods);
        res.outcome = h.status(ctx, vm, vc, observed);
        for (const auto& label : res.outcome.node_labels) co_await writer_.ensure_node_label(label, true);
        co_return res;
    }

    static bool previously_reported(const api::VolumeManager& vm, const std::string& id) {
        if (!vm.status) return false;
        return std::any_of(vm.status->volumes.begin(), vm.status->volumes.end(),
                           [&](const api::VolumeStatus& v) { return v.id == id; });
    }

    // Declared in dependency order: each part is built from those above it.
    std::shared_ptr<runtime::OwnWrites> own_ = std::make_shared<runtime::OwnWrites>();
    client::Client& client_;
    Caches caches_;
    handlers::HandlerRegistry registry_;
    ReconcilerOptions opts_;
    VolumeManagerEvents events_;
    VolumeManagerMemory memory_;
    SubResourceWriter writer_;
    DownloadLogs logs_;
    StatusWriter status_;
    SharedCopies shared_{caches_.volume_managers};
    VolumeCopies copies_;
    VolumeCleanup cleanup_;
    SourceRefresher refresher_;
    std::unique_ptr<PodGates> gates_;  // with Caches::injected_pods
};

} // namespace vck::volumes
