// VolumeManagerReconciler: VCK's level-triggered reconciler. Each call reads one
// VolumeManager and its sub-resources from informer caches, does the next step toward the
// desired state, and returns; it never waits for a pod (pod, claim and volume events, or a
// requeue-after, bring the key back).
// Guarantees:
// - The finalizer `vck.intelai.org/cleanup` is on the object before anything is deployed;
//   on deletion every volume is cleaned up (data removed on every node by cleanup pods,
//   node labels removed, sub-resources deleted) and only then is the finalizer removed, so
//   a delete made while the controller was down is cleaned up when it starts.
// - Sub-resources have deterministic names (DataHandler contract) and are created only when
//   missing from the caches, so a restart at any point creates nothing twice; objects it
//   created that the caches do not show yet count as there (expectations), so an early
//   event does not cause a second create either.
// - Each sub-resource records the volume config it was built from (annotation
//   `vck.intelai.org/volume-config`): a changed volume's objects are deleted and rebuilt; a
//   volume removed from the spec is cleaned up from that record.
// - spec.state Failed: nothing is deployed (what exists is cleaned up), status Failed.
//   spec.state Completed: sub-resources and data are removed, the object stays, status
//   Completed. Otherwise status is Pending while a volume is in progress, Running when all
//   succeed, Failed (with the original VCK's messages) when any fails.
// - Status is written only when it changes, and Pending not within `pending_grace` of this
//   controller creating the objects (fast volumes go straight to Running); a download pod
//   that failed stays, so its volume stays failed until the volume's config changes.
// - A malformed object never throws out of reconcile except for API errors, which the
//   controller retries with backoff.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/json.hpp>
#include <vck/api/storage_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/client/client.hpp>
#include <vck/handlers/handler_registry.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/runtime/informer.hpp>
#include <vck/runtime/event_recorder.hpp>
#include <vck/runtime/finalizer.hpp>
#include <vck/runtime/reconciler.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace vck::controller {

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

inline std::string utc_now() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
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
    }

    asio::awaitable<runtime::Result> reconcile(const runtime::Request& req) {
        auto vm = caches_.volume_managers->store().get(req);
        if (!vm) co_return runtime::Result::done();  // gone: the finalizer made sure it was cleaned up
        auto finalizers = vm->metadata.finalizers;
        bool ours = std::find(finalizers.begin(), finalizers.end(), finalizer_name) != finalizers.end();
        if (!vm->metadata.deletionTimestamp.empty()) {
            if (!ours) co_return runtime::Result::done();
            forget_grace(*vm);
            bool done = co_await cleanup_everything(*vm);
            if (!done) co_return runtime::Result::requeue_after(opts_.cleanup_recheck);
            auto patch = runtime::remove_finalizer_patch(*vm, finalizer_name);
            co_await client_.patch(api::VolumeManager::resource, req.namespace_, req.name, client::PatchType::Json,
                                   std::move(patch));
            co_return runtime::Result::done();
        }
        std::shared_ptr<const api::VolumeManager> current = vm;
        if (!ours) {
            // Before anything exists, so no delete can leave anything behind. The patch's answer
            // is the object to go on with (the finalizer change alone does not requeue).
            auto patch = runtime::add_finalizer_patch(*vm, finalizer_name);
            auto updated = co_await client_.patch(api::VolumeManager::resource, req.namespace_, req.name,
                                                  client::PatchType::Json, std::move(patch));
            current = std::make_shared<const api::VolumeManager>(api::from_json<api::VolumeManager>(updated));
        }
        co_return co_await apply(*current);
    }

    /// Counters for tests and benchmarks.
    std::uint64_t creates() const { return creates_; }
    std::uint64_t deletes() const { return deletes_; }
    std::uint64_t status_writes() const { return status_writes_; }

private:
    struct VolumeResult {
        handlers::VolumeOutcome outcome;
        bool created = false;
    };

    // ---- apply ---------------------------------------------------------------------------

    asio::awaitable<runtime::Result> apply(const api::VolumeManager& vm) {
        const std::string& desired = vm.spec.state;
        if (desired == "Failed" || desired == "Completed") {
            bool clean = co_await cleanup_everything(vm);
            api::VolumeManagerStatus st;
            st.state = desired;
            st.message = desired == "Failed" ? "desired state is Failed: no sub-resources deployed"
                                             : (clean ? "completed: sub-resources and data removed"
                                                      : "completing: removing sub-resources and data");
            st.readyVolumes = "0/" + std::to_string(vm.spec.volumeConfigs.size());
            bool ready = desired == "Completed" && clean;
            std::string reason = desired;
            co_await write_status(vm, std::move(st), ready, reason);
            co_return clean ? runtime::Result::done() : runtime::Result::requeue_after(opts_.cleanup_recheck);
        }

        // Volumes no longer in the spec are cleaned up from what their objects recorded.
        auto owned = owned_objects(vm);
        bool removed_clean = co_await cleanup_removed(vm, owned);

        std::vector<api::VolumeStatus> volumes;
        std::set<std::string> seen_ids;
        std::size_t ready = 0, failed = 0;
        bool created_any = false;
        std::vector<std::string> failures;
        for (const auto& vc : vm.spec.volumeConfigs) {
            VolumeResult r;
            if (!seen_ids.insert(vc.id).second) {
                r.outcome = handlers::failed_volume(vc, "volume id \"" + vc.id + "\" is used more than once");
            } else {
                r = co_await reconcile_volume(vm, vc, owned);
            }
            created_any = created_any || r.created;
            if (r.outcome.phase == handlers::VolumePhase::Ready) ++ready;
            if (r.outcome.phase == handlers::VolumePhase::Failed) {
                ++failed;
                failures.push_back(vc.id + ": " + r.outcome.status.message);
            }
            volumes.push_back(std::move(r.outcome.status));
        }

        api::VolumeManagerStatus st;
        std::size_t n = vm.spec.volumeConfigs.size();
        bool pending = false;
        if (failed > 0) {
            st.state = "Failed";
            st.message = "failed to deploy all the sub-resources";
        } else if (ready == n && removed_clean) {
            st.state = "Running";
            st.message = "successfully deployed all sub-resources";
        } else {
            st.state = "Pending";
            st.message = "Beginning sub-resource deployment";
            pending = true;
        }
        st.volumes = std::move(volumes);
        st.readyVolumes = std::to_string(ready) + "/" + std::to_string(n);

        // Objects created just now come back through their watch within moments, usually
        // ready; a Pending status in between would only cost a write. Within the grace window
        // Pending is not written; the re-check at its end writes it if they are still not ready.
        auto grace_left = pending ? grace_remaining(vm, created_any) : std::chrono::milliseconds(0);
        if (grace_left.count() <= 0) {
            auto previous = vm.status ? vm.status->state : std::string();
            bool wrote = co_await write_status(vm, st, st.state == "Running", st.state);
            if (wrote && previous != st.state) co_await announce(vm, st, failures);
        }
        if (!pending) forget_grace(vm);
        if (pending)
            co_return runtime::Result::requeue_after(grace_left.count() > 0 ? grace_left + std::chrono::milliseconds(10)
                                                                            : opts_.pending_recheck);
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
            co_await cleanup_group(vm, stale);
            res.outcome = handlers::pending_volume(vc, "replacing sub-resources after a change of the volume");
            co_return res;
        }

        // validate(ctx) decides whether to build anything; the volume's outcome comes from
        // status(), which keeps data already in place Ready when, say, a Secret is rotated.
        if (!h.validate(ctx, vm, vc)) {
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
        }

        co_await fetch_failed_logs(observed.pods);
        res.outcome = h.status(ctx, vm, vc, observed);
        for (const auto& label : res.outcome.node_labels) co_await ensure_node_label(label, true);
        co_return res;
    }

    // ---- cleanup -------------------------------------------------------------------------

    /// Cleans up every volume of `vm`, in the spec or not. True once nothing is left.
    asio::awaitable<bool> cleanup_everything(const api::VolumeManager& vm) {
        auto owned = owned_objects(vm);
        bool done = co_await cleanup_removed(vm, owned);
        std::set<std::string> seen;
        for (const auto& vc : vm.spec.volumeConfigs) {
            if (!seen.insert(vc.id).second) continue;
            auto observed = observe(vm, vc, owned);
            auto lookup = registry_.find(vc.sourceType);
            handlers::CleanupPlan plan;
            if (lookup.handler) {
                co_await fetch_failed_logs(observed.pods);
                plan = lookup.handler->cleanup_objects(context(), vm, vc, observed);
            } else {
                plan = delete_all(observed);
            }
            std::string config = detail::config_text(vc);
            done = (co_await execute(vm, config, plan)) && done;
        }
        co_return done;
    }

    /// Cleans up volumes whose objects exist but whose id or config left the spec.
    asio::awaitable<bool> cleanup_removed(const api::VolumeManager& vm, const OwnedObjects& owned) {
        std::set<std::string> live;
        for (const auto& vc : vm.spec.volumeConfigs) live.insert(handlers::naming::volume_key(vm.metadata.uid, vc.id));
        bool done = true;
        for (const auto& [key, observed] : owned)
            if (!live.contains(key)) done = (co_await cleanup_group(vm, observed)) && done;
        co_return done;
    }

    /// One cleanup step for objects of one volume built from the config they record (objects
    /// without a readable record are simply deleted). True when nothing is left.
    asio::awaitable<bool> cleanup_group(const api::VolumeManager& vm, const handlers::ObservedObjects& observed) {
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
        if (!recorded.empty()) {
            try {
                vc = api::from_json<api::VolumeConfig>(api::parse(recorded));
            } catch (const std::exception&) {
                vc.reset();  // a mangled record: the objects can still be deleted
            }
        }
        if (vc) {
            if (auto lookup = registry_.find(vc->sourceType); lookup.handler) {
                co_await fetch_failed_logs(observed.pods);
                plan = lookup.handler->cleanup_objects(context(), vm, *vc, observed);
            }
        }
        // Named first: GCC 12 destroys a ?: temporary inside a co_await expression twice.
        std::string config = vc ? detail::config_text(*vc) : recorded;
        co_return co_await execute(vm, config, plan);
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
    asio::awaitable<bool> execute(const api::VolumeManager& vm, const std::string& config,
                                  const handlers::CleanupPlan& plan) {
        const std::string& ns = vm.metadata.namespace_;
        std::vector<api::Pod> pods = plan.pods;
        std::vector<api::Pod> none;
        co_await create_missing(vm, config, pods, none);
        for (const auto& name : plan.pods_to_delete) co_await delete_ignoring_missing(api::Pod::resource, ns, name);
        for (const auto& name : plan.claims_to_delete)
            co_await delete_ignoring_missing(api::PersistentVolumeClaim::resource, ns, name);
        for (const auto& name : plan.persistent_volumes_to_delete)
            co_await delete_ignoring_missing(api::PersistentVolume::resource, "", name);
        for (const auto& label : plan.node_labels_to_remove) co_await ensure_node_label(label, false);
        co_return plan.done;
    }

    // ---- observation and writes ------------------------------------------------------------

    handlers::HandlerContext context() {
        handlers::HandlerContext ctx;
        ctx.options = opts_.handler;
        ctx.nodes = [nodes = caches_.nodes] {
            std::vector<api::Node> out;
            for (const auto& n : nodes->store().list()) out.push_back(*n);
            return out;
        };
        if (caches_.secrets)
            ctx.secret = [secrets = caches_.secrets](const std::string& ns, const std::string& name) -> std::optional<api::Secret> {
                auto s = secrets->store().get(runtime::ObjectKey{ns, name});
                if (!s) return std::nullopt;
                return *s;
            };
        ctx.pod_log_tail = [this](const api::Pod& p) {
            std::lock_guard lk(mu_);
            auto it = log_tails_.find(p.metadata.uid);
            return it == log_tails_.end() ? std::string() : it->second;
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

    // Expectations, as kube-controller-manager keeps them: objects this controller created
    // that its caches may not show yet. observe() counts them as there, so a reconcile woken
    // by one new object's event does not create that object's siblings a second time. A
    // record goes once the cache shows the object (or after `expectation_ttl`, should its
    // event never come).
    template <class T>
    using Expected = std::map<runtime::ObjectKey, std::pair<std::chrono::steady_clock::time_point, T>>;
    static constexpr std::chrono::seconds expectation_ttl{30};

    template <class T, class Informer>
    void add_expected(std::vector<T>& seen, Expected<T>& expected, Informer& cache, const api::VolumeManager& vm,
                      const std::string& volume_key) {
        auto now = std::chrono::steady_clock::now();
        for (auto it = expected.begin(); it != expected.end();) {
            const auto& [at, obj] = it->second;
            if (now - at > expectation_ttl || cache.store().contains(it->first)) {
                it = expected.erase(it);
                continue;
            }
            auto label = obj.metadata.labels.find(std::string(handlers::naming::volume_label));
            bool ours = label != obj.metadata.labels.end() && label->second == volume_key && owned_by(obj, vm);
            if (ours && std::none_of(seen.begin(), seen.end(), [&](const T& o) { return o.metadata.name == obj.metadata.name; }))
                seen.push_back(obj);
            ++it;
        }
    }
    void expect(const api::Pod& o) { expect_in(expected_pods_, o); }
    void expect(const api::PersistentVolume& o) { expect_in(expected_pvs_, o); }
    void expect(const api::PersistentVolumeClaim& o) { expect_in(expected_claims_, o); }
    template <class T>
    void expect_in(Expected<T>& expected, const T& o) {
        std::lock_guard lock(mu_);
        expected.insert_or_assign(runtime::ObjectKey{o.metadata.namespace_, o.metadata.name},
                                  std::make_pair(std::chrono::steady_clock::now(), o));
    }

    template <class T>
    static bool owned_by(const T& o, const api::VolumeManager& vm) {
        return detail::annotation(o, owner_uid_annotation) == vm.metadata.uid;
    }

    /// Failed pods' log tails, fetched once per pod, for the handlers' failure messages.
    asio::awaitable<void> fetch_failed_logs(const std::vector<api::Pod>& pods) {
        for (const auto& p : pods) {
            if (!p.status || p.status->phase != "Failed" || p.metadata.uid.empty()) continue;
            {
                std::lock_guard lk(mu_);
                if (log_tails_.contains(p.metadata.uid)) continue;
            }
            std::string tail;
            try {
                auto lo = client::LogOptions().tail(opts_.log_tail_lines);
                tail = co_await client_.logs(p.metadata.namespace_, p.metadata.name, lo);
            } catch (const std::exception&) {
                tail.clear();  // no log: the message says what failed without it
            }
            while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
            std::lock_guard lk(mu_);
            if (log_tails_.size() > 4096) log_tails_.clear();
            log_tails_[p.metadata.uid] = std::move(tail);
        }
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
                expect(*made);
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
            if (rt.plural == "pods") expected_pods_.erase(key);
            if (rt.plural == "persistentvolumes") expected_pvs_.erase(key);
            if (rt.plural == "persistentvolumeclaims") expected_claims_.erase(key);
        }
        try {
            auto opts = client::DeleteOptions().propagation("Background");
            co_await client_.remove(rt, ns, name, opts);
            ++deletes_;
        } catch (const client::ApiError& e) {
            if (!e.is(client::ErrorKind::NotFound)) throw;
        }
    }

    asio::awaitable<void> ensure_node_label(const handlers::NodeLabel& label, bool present) {
        auto node = caches_.nodes->store().get(runtime::ObjectKey{"", label.node});
        if (!node) co_return;  // the node is gone, and its label with it
        auto it = node->metadata.labels.find(label.key);
        bool has = it != node->metadata.labels.end() && it->second == label.value;
        if (present == has || (!present && it == node->metadata.labels.end())) co_return;
        boost::json::object labels;
        if (present) labels[label.key] = label.value;
        else labels[label.key] = nullptr;
        boost::json::value patch{{"metadata", {{"labels", std::move(labels)}}}};
        try {
            co_await client_.patch(api::Node::resource, "", label.node, client::PatchType::Merge, std::move(patch));
        } catch (const client::ApiError& e) {
            if (!e.is(client::ErrorKind::NotFound)) throw;
        }
    }

    /// How much of the Pending grace window is left for `vm` (starting it when this pass
    /// created objects); zero or less when Pending should be written now.
    std::chrono::milliseconds grace_remaining(const api::VolumeManager& vm, bool created_now) {
        auto now = std::chrono::steady_clock::now();
        std::lock_guard lock(mu_);
        auto it = grace_until_.find(vm.metadata.uid);
        if (created_now && (it == grace_until_.end() || it->second < now))
            it = grace_until_.insert_or_assign(vm.metadata.uid, now + opts_.pending_grace).first;
        if (it == grace_until_.end()) return std::chrono::milliseconds(0);
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(it->second - now);
        if (left.count() <= 0) grace_until_.erase(it);
        return left;
    }
    void forget_grace(const api::VolumeManager& vm) {
        std::lock_guard lock(mu_);
        grace_until_.erase(vm.metadata.uid);
    }

    /// Writes `st` (plus observedGeneration and the Ready condition) when it differs from the
    /// current status. Returns whether it wrote.
    asio::awaitable<bool> write_status(const api::VolumeManager& vm, api::VolumeManagerStatus st, bool ready,
                                       const std::string& reason) {
        st.observedGeneration = vm.metadata.generation;
        api::Condition cond;
        cond.type = "Ready";
        cond.status = ready ? "True" : "False";
        cond.reason = reason;
        cond.message = st.message;
        cond.observedGeneration = vm.metadata.generation;
        cond.lastTransitionTime = detail::utc_now();
        if (vm.status)
            for (const auto& c : vm.status->conditions)
                if (c.type == "Ready" && c.status == cond.status) cond.lastTransitionTime = c.lastTransitionTime;
        st.conditions = {cond};
        if (vm.status) {
            api::VolumeManagerStatus old = *vm.status;
            old.unknown.clear();
            if (api::to_json(old) == api::to_json(st)) co_return false;
        }
        boost::json::value patch{{"status", api::to_json(st)}};
        auto po = client::PatchOptions().on("status");
        try {
            co_await client_.patch(api::VolumeManager::resource, vm.metadata.namespace_, vm.metadata.name,
                                   client::PatchType::Merge, std::move(patch), po);
        } catch (const client::ApiError& e) {
            // Deleted while this reconcile ran (its finalizer already gone): nobody is left
            // to read the status, and its deletion event ends the story.
            if (!e.is(client::ErrorKind::NotFound)) throw;
            co_return false;
        }
        ++status_writes_;
        co_return true;
    }

    static bool previously_reported(const api::VolumeManager& vm, const std::string& id) {
        if (!vm.status) return false;
        return std::any_of(vm.status->volumes.begin(), vm.status->volumes.end(),
                           [&](const api::VolumeStatus& v) { return v.id == id; });
    }

    asio::awaitable<void> announce(const api::VolumeManager& vm, const api::VolumeManagerStatus& st,
                                   const std::vector<std::string>& failures) {
        if (st.state == "Running") co_await note(vm, "Normal", "Deployed", st.message);
        if (st.state == "Failed") {
            std::string msg = st.message;
            for (const auto& f : failures) msg += "; " + f;
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
    std::mutex mu_;
    std::map<std::string, std::string> log_tails_;  // by pod uid
    std::map<std::string, std::chrono::steady_clock::time_point> grace_until_;  // by VolumeManager uid
    Expected<api::Pod> expected_pods_;
    Expected<api::PersistentVolume> expected_pvs_;
    Expected<api::PersistentVolumeClaim> expected_claims_;
    std::atomic<std::uint64_t> creates_{0}, deletes_{0}, status_writes_{0};
};

} // namespace vck::controller
