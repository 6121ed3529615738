// ClaimProvisioner: vck-controller as the external provisioner `vck.intelai.org/data`, so a
// PersistentVolumeClaim (or a StatefulSet's volumeClaimTemplates) comes with a node-local copy
// of a dataset. A claim is VCK's when its StorageClass names that provisioner. What it holds:
// - the class's parameters name a source (`sourceType` and that type's non-secret options, as
//   in a VolumeManager; a credentials Secret is named by its option and read in the claim's
//   namespace): the data is downloaded by the same handlers and vck-fetch as VolumeManagers;
// - `dataSourceRef` {apiGroup vck.intelai.org, kind VolumeManager, name} (the volume populator
//   form): a copy of that VolumeManager's volume (annotation `vck.intelai.org/volume` on the
//   claim names it; a VolumeManager with one volume needs none);
// - neither: an empty directory (durable scratch, job output, a database's files).
// Guarantees:
// - WaitForFirstConsumer only: the claim is provisioned on the node kube-scheduler selected
//   (`volume.kubernetes.io/selected-node`), into `<dataPath>/vck-claim-<claim uid>`; the PV is
//   `local`, pinned to that node by its hostname label, pre-bound to the claim (claimRef with
//   uid), `pv.kubernetes.io/provisioned-by: vck.intelai.org/data`, reclaim policy the class's
//   (default Delete), so a pod restarted or replaced comes back to the same node and data.
// - The record: before anything lands on the node, the claim gets the finalizer
//   `vck.intelai.org/claim-data` and the annotation `vck.intelai.org/data: NODE:PATH`; once the
//   PV exists it carries the same annotation and the claim's finalizer goes. So a claim deleted
//   mid-download has its directory removed (a cleanup pod) before it goes, and a PV's
//   directory is known until the PV is gone: no directory is left that nothing accounts for.
// - Deleting the claim: Delete removes the directory (a cleanup pod running `vck-fetch
//   delete` on its node) and then the PV; Retain leaves the PV Released with its data. A
//   Released PV whose node is gone is deleted at once (its data went with the node).
// - A node deleted (its machine gone): a bound claim whose PV was there is deleted (Warning
//   event NodeLost), so its workload has it provisioned again on another node (a StatefulSet
//   makes it again for its Pending pod); a claim still being provisioned there drops the
//   scheduler's selection (ProvisioningFailed), and the scheduler selects another node. A
//   NotReady node keeps its claims (its data may come back).
// - A failure (an invalid class, a missing VolumeManager or Secret, a failed download) is a
//   Warning event `ProvisioningFailed` on the claim with the reason, as external provisioners
//   report it, retried with capped exponential backoff; a download pod that failed is replaced.
// Requests: a claim is keyed by its namespace and name; a PV of VCK's by ("", its name).
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/storage_v1.hpp>
#include <vck/api/time.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/client/client.hpp>
#include <vck/client/ignore_not_found.hpp>
#include <vck/handlers/data_path.hpp>
#include <vck/handlers/download_pods.hpp>
#include <vck/handlers/handler_registry.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/runtime/event_recorder.hpp>
#include <vck/runtime/informer.hpp>
#include <vck/runtime/reconciler.hpp>
#include <vck/volumes/cache_context.hpp>
#include <vck/volumes/claim_source.hpp>
#include <vck/volumes/copy_planner.hpp>

#include <boost/json.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vck::volumes {

namespace asio = boost::asio;

struct ClaimProvisionerOptions {
    ClaimProvisionerOptions() {}
    handlers::HandlerOptions handler;
    CopyPlannerOptions retries;  // retry_base, retry_cap
    std::chrono::milliseconds recheck{2'000};
};

/// The caches it reads: every claim (a view of its own: a claim of VCK's class carries no VCK
/// label), and the shared slim caches of pods, PVs, nodes, classes, VolumeManagers, Secrets.
struct ClaimCaches {
    std::shared_ptr<runtime::Informer<api::PersistentVolumeClaim>> claims;
    std::shared_ptr<runtime::Informer<api::Pod>> pods;
    std::shared_ptr<runtime::Informer<api::PersistentVolume>> persistent_volumes;
    std::shared_ptr<runtime::Informer<api::Node>> nodes;
    std::shared_ptr<runtime::Informer<api::StorageClass>> storage_classes;
    std::shared_ptr<runtime::Informer<api::VolumeManager>> volume_managers;
    std::shared_ptr<runtime::Informer<api::Secret>> secrets;  // may be null
};

class ClaimProvisioner {
public:
    ClaimProvisioner(client::Client& c, ClaimCaches caches, handlers::HandlerRegistry registry, ClaimProvisionerOptions o,
                     std::shared_ptr<runtime::EventRecorder> events)
        : client_(c), caches_(std::move(caches)), registry_(std::move(registry)), opts_(std::move(o)),
          events_(std::move(events)) {}

    /// The request a pod of a claim or PV maps to (its provisioner-key annotation).
    static std::vector<runtime::Request> request_of_pod(const api::Pod& p) {
        auto key = claim_detail::annotation(p, provisioner_key_annotation);
        auto slash = key.find('/');
        if (slash == std::string::npos) return {};
        return {runtime::Request{key.substr(0, slash), key.substr(slash + 1)}};
    }
    /// The request of one of VCK's PVs.
    static std::vector<runtime::Request> request_of_volume(const api::PersistentVolume& pv) {
        if (claim_detail::annotation(pv, provisioned_by_annotation) != provisioner_name) return {};
        return {runtime::Request{"", pv.metadata.name}};
    }

    /// The claims whose PVs of VCK's are on `node`, or that are being provisioned there (for
    /// its deletion).
    std::vector<runtime::Request> claims_on(const std::string& node) const {
        std::vector<runtime::Request> out;
        if (caches_.persistent_volumes)
            for (const auto& pv : caches_.persistent_volumes->store().list()) {
                if (claim_detail::annotation(*pv, provisioned_by_annotation) != provisioner_name || !pv->spec.claimRef) continue;
                if (parse_data_location(claim_detail::annotation(*pv, claim_data_annotation)).first != node) continue;
                out.push_back(runtime::Request{pv->spec.claimRef->namespace_, pv->spec.claimRef->name});
            }
        if (caches_.claims)
            for (const auto& c : caches_.claims->store().list())
                if (c->spec.volumeName.empty() && claim_detail::annotation(*c, selected_node_annotation) == node)
                    out.push_back(runtime::Request{c->metadata.namespace_, c->metadata.name});
        return out;
    }

    /// A refusal of the API server (403, 422: this controller's RBAC lacks a rule, a policy
    /// refuses a pod) is a ProvisioningFailed event on the claim with the server's words, and
    /// a retry after the backoff; other errors go to the work queue's rate-limited retry.
    asio::awaitable<runtime::Result> reconcile(const runtime::Request& req) {
        if (req.namespace_.empty()) co_return co_await reconcile_volume(req.name);
        std::string refusal;
        try {
            co_return co_await reconcile_claim(req);
        } catch (const client::ApiError& e) {
            // The claim changed under a guarded write (the PV controller annotated it, ...):
            // the next pass reads the new one; not an error.
            if (e.is(client::ErrorKind::Conflict)) refusal.clear();
            else if (!e.is(client::ErrorKind::Forbidden) && !e.is(client::ErrorKind::Invalid)) throw;
            else refusal = e.what();
        }
        if (refusal.empty()) co_return Result::requeue();
        auto c = cached(caches_.claims, req.namespace_, req.name);
        if (!c) co_return Result::requeue();
        co_return co_await failed(*c, refusal);
    }

private:
    using Result = runtime::Result;

    template <class T>
    static std::shared_ptr<const T> cached(const std::shared_ptr<runtime::Informer<T>>& inf, const std::string& ns,
                                           const std::string& name) {
        if (!inf) return nullptr;
        return inf->store().get(runtime::ObjectKey{ns, name});
    }

    handlers::HandlerContext context() const {
        return cache_context(opts_.handler, caches_.nodes, caches_.secrets);
    }

    /// The stand-in owner handlers build pods for: named and identified as the claim.
    static api::VolumeManager owner_for(const api::PersistentVolumeClaim& c) {
        api::VolumeManager vm;
        vm.metadata.name = c.metadata.name;
        vm.metadata.namespace_ = c.metadata.namespace_;
        vm.metadata.uid = c.metadata.uid;
        return vm;
    }

    static std::string download_pod_name(const std::string& uid) { return "vck-claim-" + handlers::naming::short_hash(uid, 12); }
    static std::string cleanup_pod_name(const std::string& uid) {
        return "vck-claim-clean-" + handlers::naming::short_hash(uid, 12);
    }

    /// A pod's metadata made the claim's (or PV's): labelled for the slim pod cache, keyed back.
    static void own_pod(api::Pod& p, const std::string& key, const api::PersistentVolumeClaim* owner) {
        p.metadata.labels[std::string(handlers::naming::volume_label)] = "claim." + handlers::naming::short_hash(key, 12);
        p.metadata.annotations[std::string(provisioner_key_annotation)] = key;
        p.metadata.ownerReferences.clear();
        if (owner) {
            api::OwnerReference ref;
            ref.apiVersion = "v1";
            ref.kind = "PersistentVolumeClaim";
            ref.name = owner->metadata.name;
            ref.uid = owner->metadata.uid;
            ref.controller = true;
            p.metadata.ownerReferences.push_back(std::move(ref));
        }
    }

    asio::awaitable<void> event(const api::PersistentVolumeClaim& c, std::string type, std::string reason, std::string message) {
        if (!events_) co_return;
        auto ref = runtime::EventRecorder::reference_to(c, api::PersistentVolumeClaim::resource);
        co_await events_->record(std::move(ref), std::move(type), std::move(reason), std::move(message));
    }

    /// A failure: the event, and a retry after the backoff of the attempts so far.
    asio::awaitable<Result> failed(const api::PersistentVolumeClaim& c, const std::string& why) {
        co_await event(c, "Warning", "ProvisioningFailed",
                       "failed to provision volume with StorageClass \"" + c.spec.storageClassName.value_or("") + "\": " + why);
        std::int64_t attempts = 1;
        try {
            attempts = std::stoll(claim_detail::annotation(c, claim_attempts_annotation)) + 1;
        } catch (const std::exception&) {
        }
        auto delay = retry_delay(opts_.retries, attempts);
        // Written down, so the claim's own update (and any other event) does not retry early.
        // Named first: GCC 12 cannot keep an initializer list inside a co_await expression.
        boost::json::object retry;
        retry[claim_attempts_annotation] = std::to_string(attempts);
        retry[claim_retry_annotation] = api::format_rfc3339(std::chrono::system_clock::now() + delay);
        bool written = true;
        try {
            co_await patch_claim(c, std::move(retry), std::nullopt);
        } catch (const client::ApiError&) {
            written = false;  // refused or changed meanwhile: the event is out, the pass retries
        }
        co_return written ? Result::requeue_after(delay) : Result::requeue();
    }

    /// Merges `annotations` into the claim (null removes one), and adds or removes the
    /// finalizer, guarded by its resourceVersion (a conflict retries the pass).
    asio::awaitable<void> patch_claim(const api::PersistentVolumeClaim& c, boost::json::object annotations,
                                      std::optional<bool> finalizer) {
        boost::json::object md;
        md["resourceVersion"] = c.metadata.resourceVersion;
        if (!annotations.empty()) md["annotations"] = std::move(annotations);
        if (finalizer) {
            boost::json::array fs;
            bool has = false;
            for (const auto& f : c.metadata.finalizers) {
                if (f == claim_finalizer) {
                    has = true;
                    if (!*finalizer) continue;
                }
                fs.emplace_back(f);
            }
            if (*finalizer && !has) fs.emplace_back(std::string(claim_finalizer));
            md["finalizers"] = std::move(fs);
        }
        boost::json::object body;
        body["metadata"] = std::move(md);
        co_await client_.patch(api::PersistentVolumeClaim::resource, c.metadata.namespace_, c.metadata.name,
                               client::PatchType::Merge, std::move(body));
    }

    asio::awaitable<void> delete_pod(const std::string& ns, const std::string& name) {
        co_await client::ignore_not_found(
            client_.remove(api::Pod::resource, ns, name, client::DeleteOptions().propagation("Background")));
    }

    asio::awaitable<void> create_pod(const api::Pod& p) {
        try {
            co_await client_.create(p);
        } catch (const client::ApiError& e) {
            if (!e.is(client::ErrorKind::AlreadyExists)) throw;
        }
    }

    /// Removes `path` on `node` with a cleanup pod in `ns` keyed `key`; true once it is gone
    /// (or its node is: the data went with it).
    asio::awaitable<bool> remove_directory(const std::string& ns, const std::string& key, const std::string& uid,
                                           const std::string& node, const std::string& path,
                                           const api::PersistentVolumeClaim* owner) {
        if (!cached(caches_.nodes, "", node)) co_return true;
        auto where = handlers::check_data_path(path.substr(0, path.rfind('/')), opts_.handler.allowed_data_roots);
        if (!where.ok()) co_return true;  // not under an allowed root (the flag changed): never delete there
        auto name = cleanup_pod_name(uid);
        auto pod = cached(caches_.pods, ns, name);
        if (!pod) {
            api::ObjectMeta meta;
            meta.name = name;
            meta.namespace_ = ns;
            api::Pod p = handlers::cleanup_pod(std::move(meta), node, path, where.root, opts_.handler.data_mover_image);
            own_pod(p, key, owner);
            co_await create_pod(p);
            co_return false;
        }
        auto phase = handlers::pod_phase(*pod);
        if (phase == "Succeeded" || !handlers::subpath_refusal(*pod).empty()) {
            co_await delete_pod(ns, name);
            co_return true;
        }
        if (phase == "Failed") co_await delete_pod(ns, name);  // made again on the next pass
        co_return false;
    }

    asio::awaitable<Result> reconcile_claim(const runtime::Request& req) {
        auto c = cached(caches_.claims, req.namespace_, req.name);
        if (!c) co_return Result::done();
        auto sc = c->spec.storageClassName ? cached(caches_.storage_classes, "", *c->spec.storageClassName) : nullptr;
        bool ours = sc && sc->provisioner == provisioner_name;
        bool recorded = std::find(c->metadata.finalizers.begin(), c->metadata.finalizers.end(), claim_finalizer) !=
                        c->metadata.finalizers.end();
        if (!ours && !recorded) co_return Result::done();
        const std::string key = c->metadata.namespace_ + "/" + c->metadata.name;
        auto [node, path] = parse_data_location(claim_detail::annotation(*c, claim_data_annotation));

        auto pv = cached(caches_.persistent_volumes, "", "pvc-" + c->metadata.uid);
        // Deleted before its PV was made: the directory goes, then the finalizer. Once the PV
        // exists it holds the record, and its reclaim policy decides (Retain keeps the data).
        if (!c->metadata.deletionTimestamp.empty()) {
            if (!recorded) co_return Result::done();
            co_await delete_pod(c->metadata.namespace_, download_pod_name(c->metadata.uid));
            if (pv) {
                co_await patch_claim(*c, boost::json::object(), false);
                co_return Result::done();
            }
            if (!node.empty() && !co_await remove_directory(c->metadata.namespace_, key, c->metadata.uid, node, path, nullptr))
                co_return Result::requeue_after(opts_.recheck);
            co_await patch_claim(*c, boost::json::object(), false);
            co_return Result::done();
        }
        // Bound: the PV holds the record now.
        if (!c->spec.volumeName.empty() || pv) {
            if (pv) co_await delete_pod(c->metadata.namespace_, download_pod_name(c->metadata.uid));
            if (recorded && pv) co_await patch_claim(*c, boost::json::object(), false);
            if (pv && c->spec.volumeName == pv->metadata.name) {
                auto pv_node = parse_data_location(claim_detail::annotation(*pv, claim_data_annotation)).first;
                if (!pv_node.empty() && caches_.nodes && !cached(caches_.nodes, "", pv_node))
                    co_await release_lost(*c, pv_node);
            }
            co_return Result::done();
        }
        // The selected node gone (now, not after a retry's wait): as external provisioners
        // reschedule, the selection is dropped, so the scheduler selects another node; what
        // had landed went with the node.
        if (auto gone = claim_detail::annotation(*c, selected_node_annotation);
            ours && !gone.empty() && caches_.nodes && !cached(caches_.nodes, "", gone)) {
            co_await delete_pod(c->metadata.namespace_, download_pod_name(c->metadata.uid));
            co_await event(*c, "Warning", "ProvisioningFailed",
                           "failed to provision volume with StorageClass \"" + c->spec.storageClassName.value_or("") +
                               "\": the selected node " + gone + " does not exist; the scheduler selects another");
            boost::json::object reschedule;
            reschedule[std::string(selected_node_annotation)] = nullptr;
            reschedule[claim_data_annotation] = nullptr;
            co_await patch_claim(*c, std::move(reschedule), std::nullopt);
            co_return Result::done();
        }
        if (!ours) co_return Result::done();
        if (auto at = api::parse_rfc3339(claim_detail::annotation(*c, claim_retry_annotation))) {
            auto now = std::chrono::system_clock::now();
            if (*at > now) co_return Result::requeue_after(*at - now);
        }
        if (sc->volumeBindingMode != "WaitForFirstConsumer") {
            co_return co_await failed(*c, "StorageClass " + sc->metadata.name + " must have volumeBindingMode "
                                          "WaitForFirstConsumer: a claim's data is copied to the node its first pod is scheduled to");
        }
        auto selected = claim_detail::annotation(*c, selected_node_annotation);
        if (selected.empty()) co_return Result::done();  // waiting for its first consumer
        if (!node.empty() && node != selected) {
            // Rescheduled elsewhere after a failure: the old directory goes first.
            if (!co_await remove_directory(c->metadata.namespace_, key, c->metadata.uid, node, path, &*c))
                co_return Result::requeue_after(opts_.recheck);
            boost::json::object forget;
            forget[claim_data_annotation] = nullptr;
            co_await patch_claim(*c, std::move(forget), std::nullopt);
            co_return Result::done();
        }
        auto n = cached(caches_.nodes, "", selected);
        if (!n) co_return Result::done();  // dropped above; the scheduler selects again

        std::shared_ptr<const api::VolumeManager> source_vm;  // alive for the pass
        auto src = claim_source(*sc, *c, [&](const std::string& ns, const std::string& name) -> const api::VolumeManager* {
            source_vm = cached(caches_.volume_managers, ns, name);
            return source_vm.get();
        });
        if (!src.error.empty()) co_return co_await failed(*c, src.error);
        auto ctx = context();
        auto owner = owner_for(*c);
        std::optional<handlers::DataPathCheck> where;
        handlers::AnyHandler const* handler = nullptr;
        if (src.config) {
            auto lookup = registry_.find(src.config->sourceType);
            if (!lookup.handler) co_return co_await failed(*c, "unknown sourceType " + src.config->sourceType);
            if (!lookup.handler->copies())
                co_return co_await failed(*c, "sourceType " + src.config->sourceType +
                                                  " is not copied onto nodes (only S3, Pachyderm and other downloading types are)");
            if (auto why = lookup.handler->validate(ctx, owner, *src.config)) co_return co_await failed(*c, *why);
            auto layout = lookup.handler->copy_layout(ctx, *src.config);
            if (!layout) co_return co_await failed(*c, "the source cannot be laid out on a node");
            where = layout->where;
            handler = lookup.handler;
        } else {
            auto dp = handlers::check_data_path(src.data_path, opts_.handler.allowed_data_roots);
            if (!dp.ok()) co_return co_await failed(*c, "dataPath: " + dp.error);
            where = dp;
        }
        std::string dir = claim_directory(where->path, *c);
        // Recorded before anything can land.
        if (node.empty() || !recorded) {
            boost::json::object record;
            record[claim_data_annotation] = data_location(selected, dir);
            co_await patch_claim(*c, std::move(record), true);
            co_return Result::done();  // the claim's own event brings the next pass
        }

        auto pod_name = download_pod_name(c->metadata.uid);
        auto pod = cached(caches_.pods, c->metadata.namespace_, pod_name);
        if (!pod) {
            handlers::CopyTarget t{0, selected, dir, "claim", pod_name, {}};
            api::Pod p;
            if (handler) {
                p = handler->copy_pod(ctx, owner, *src.config, t);
            } else {
                api::VolumeConfig none;
                none.id = "data";
                handlers::DownloadPodShape shape;
                p = handlers::copy_download_pod(owner, none, t, where->root, shape, opts_.handler.data_mover_image);
                // Preparing the directory is all there is to do: the init container runs alone.
                p.spec.containers = std::move(p.spec.initContainers);
                p.spec.initContainers.clear();
            }
            own_pod(p, key, &*c);
            co_await create_pod(p);
            co_return Result::done();
        }
        auto phase = handlers::pod_phase(*pod);
        if (phase == "Failed") {
            auto why = handlers::termination_message(*pod);
            co_await delete_pod(c->metadata.namespace_, pod_name);
            // Named first: GCC 12 destroys a ?: temporary inside a co_await expression twice.
            std::string message = "download pod " + pod_name + " failed on node " + selected;
            if (!why.empty()) message += ": " + why;
            co_return co_await failed(*c, message);
        }
        if (phase != "Succeeded") co_return Result::done();  // its events bring the next pass
        auto host = n->metadata.labels.find(std::string(handlers::hostname_label));
        auto volume = claim_volume(*sc, *c, selected, host == n->metadata.labels.end() ? selected : host->second, dir);
        try {
            co_await client_.create(volume);
        } catch (const client::ApiError& e) {
            if (!e.is(client::ErrorKind::AlreadyExists)) throw;
        }
        std::string what = src.config ? " with the data of " + src.config->sourceType + " " + src.config->option("sourceURL")
                                      : std::string(" (an empty directory)");
        co_await event(*c, "Normal", "ProvisioningSucceeded",
                       "Successfully provisioned volume " + volume.metadata.name + " on node " + selected + what);
        co_return Result::done();
    }

    /// A bound claim whose node is gone: its data went with the node and its PV can never be
    /// used again (pinned there), so the claim is deleted, for its workload to have it
    /// provisioned again elsewhere (a StatefulSet makes it again for its Pending pod, as local
    /// volume operators release claims of lost nodes). The PV, Released, then goes (Delete) or
    /// stays (Retain).
    asio::awaitable<void> release_lost(const api::PersistentVolumeClaim& c, const std::string& node) {
        co_await event(c, "Warning", "NodeLost",
                       "node " + node + " is gone and the claim's data with it: vck deletes the claim so that its "
                       "workload has it provisioned again on another node (a StatefulSet makes it again)");
        try {
            co_await client_.remove(api::PersistentVolumeClaim::resource, c.metadata.namespace_, c.metadata.name,
                                    client::DeleteOptions().if_uid(c.metadata.uid).propagation("Background"));
        } catch (const client::ApiError& e) {
            if (!e.is(client::ErrorKind::NotFound) && !e.is(client::ErrorKind::Conflict)) throw;
        }
    }

    asio::awaitable<Result> reconcile_volume(const std::string& name) {
        auto pv = cached(caches_.persistent_volumes, "", name);
        if (!pv || claim_detail::annotation(*pv, provisioned_by_annotation) != provisioner_name) co_return Result::done();
        std::string phase = pv->status ? pv->status->phase : "";
        if (phase != "Released" || pv->spec.persistentVolumeReclaimPolicy != "Delete") co_return Result::done();
        auto [node, path] = parse_data_location(claim_detail::annotation(*pv, claim_data_annotation));
        std::string ns = pv->spec.claimRef ? pv->spec.claimRef->namespace_ : std::string();
        std::string uid = pv->spec.claimRef ? pv->spec.claimRef->uid : pv->metadata.uid;
        if (!node.empty() && !ns.empty() &&
            !co_await remove_directory(ns, "/" + name, uid + "-pv", node, path, nullptr))
            co_return Result::requeue_after(opts_.recheck);
        co_await client::ignore_not_found(client_.remove(api::PersistentVolume::resource, "", name));
        co_return Result::done();
    }

    client::Client& client_;
    ClaimCaches caches_;
    handlers::HandlerRegistry registry_;
    ClaimProvisionerOptions opts_;
    std::shared_ptr<runtime::EventRecorder> events_;
};

} // namespace vck::volumes
