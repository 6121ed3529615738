// VolumeCopies: the shell around the copy planner (volumes/copy_planner.hpp) for the volumes
// of copying handlers (S3, Pachyderm, output volumes): it gathers what the planner needs
// (the record in status.copies, the volume's pods, cached and expected, the nodes, the pods
// that use the copies, download progress) and carries out the plan it returns.
// Guarantees:
// - Pods of a volume that no record entry accounts for (an older controller's, or left by a
//   crash between a pod's deletion and the record's update) are adopted: their directory
//   becomes a Removing entry, so it is cleaned up, then they go.
// - A plan is carried out only after its record is written (by the caller): node labels
//   first (each says only that its node holds a Ready copy), then pod deletions, then
//   creations (the peer Secret before the first download pod that mounts it). A volume's
//   labels are set before its record is written only once a written record names the
//   volume (labels_before_record): a label is never set for a volume no record names, as
//   its removal would not find that label again.
// - A cleanup pod is never made for a path outside every allowed data root (the flag
//   changed since the copy was placed).
// - A create the API server refuses (400, 403, 404, 422) is backed off per volume and said
//   in a Warning event CreateRefused; other API errors go to the caller (retried).
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/data_handler.hpp>
#include <vck/handlers/handler_registry.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/handlers/spec_validation.hpp>
#include <vck/runtime/informer.hpp>
#include <vck/volumes/copy_planner.hpp>
#include <vck/volumes/disk_pressure_eviction.hpp>
#include <vck/volumes/download_logs.hpp>
#include <vck/volumes/output_upload.hpp>
#include <vck/volumes/pod_gates.hpp>
#include <vck/volumes/reconciler_options.hpp>
#include <vck/volumes/shared_copies.hpp>
#include <vck/volumes/source_refresh.hpp>
#include <vck/volumes/sub_resource_ownership.hpp>
#include <vck/volumes/sub_resource_writer.hpp>
#include <vck/volumes/volume_manager_events.hpp>
#include <vck/volumes/volume_manager_memory.hpp>

#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace vck::volumes {

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
    std::string config_key;  // the desired config (versioned), when the volume is laid out
};

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

class VolumeCopies {
public:
    using ContextSource = std::function<handlers::HandlerContext()>;

    VolumeCopies(const Caches& caches, const handlers::HandlerRegistry& registry, const ReconcilerOptions& opts,
                 SubResourceWriter& writer, DownloadLogs& logs, VolumeManagerMemory& memory, VolumeManagerEvents& events,
                 ContextSource context, SharedCopies* shared = nullptr)
        : caches_(caches), registry_(registry), opts_(opts), writer_(writer), logs_(logs), memory_(memory),
          events_(events), context_(std::move(context)), shared_(shared) {}

    /// The record planned for `vm` was not written: what was planned for its shared copies no
    /// longer stands for it (SharedCopies::abandon).
    void unwritten(const api::VolumeManager& vm) {
        if (shared_) shared_->abandon(vm.metadata.uid);
    }

    /// The record planned for `vm` is written, or equal to the one written before.
    void recorded(const api::VolumeManager& vm) {
        if (shared_) shared_->recorded(vm.metadata.uid);
    }

    NodeList node_list() const { return NodeList(*caches_.nodes); }

    /// The record of `vm`'s copies, by volume id.
    static std::map<std::string, std::vector<api::CopyRecord>> records_by_volume(const api::VolumeManager& vm) {
        std::map<std::string, std::vector<api::CopyRecord>> out;
        if (vm.status)
            for (const auto& e : vm.status->copies) out[e.volume].push_back(e);
        return out;
    }

    /// Plans volume `id`'s copies from its record `entries`; `vc` null means every copy goes.
    /// `version`: the version of its data a refresh made (volumes/source_refresh.hpp).
    CopyWork plan(const api::VolumeManager& vm, const std::string& id, const api::VolumeConfig* vc,
                  std::vector<api::CopyRecord> entries, const OwnedObjects& owned, VolumeKeys& keys, NodeList& nodes,
                  bool deleting, std::int64_t version = 0) {
        CopyWork w;
        w.volume_id = id;
        w.config = vc;
        w.label_key = handlers::naming::node_label_key(vm.metadata.namespace_, vm.metadata.name, id);
        VolumeCopyInput in;
        in.vm_uid = vm.metadata.uid;
        in.volume_id = id;
        in.label_key = w.label_key;
        in.deleting = deleting;
        auto ctx = context_();
        if (vc) describe_volume(ctx, vm, *vc, w, in);
        if (in.layout) in.layout->config = SourceRefresher::refreshed_config(in.layout->config, version);
        if (in.layout) w.config_key = in.layout->config;
        in.serving = serving_node(vm, id, w.label_key);
        // The volume's pods: cached, and created but not cached yet.
        handlers::ObservedObjects observed = writer_.observe(vm, keys.of(id), owned);
        adopt_unknown_pods(vm, id, observed, entries, w);
        find_uploader(vm, id, vc, observed, w);
        in.output = w.uploader != nullptr;
        in.discard_output = discards_output(vm);
        for (const auto& p : observed.pods) in.pods[p.metadata.name] = &p;
        auto users = users_of(vm);
        for (const auto& p : users) in.users.push_back(p.get());
        share(vm, vc, entries, w, in, users);
        in.log_tail = [ctx](const api::Pod& p) { return ctx.log_tail(p); };
        in.progress = [this](const api::Pod& p) { return logs_.progress(p); };
        if (caches_.disk) in.node_used = [disk = caches_.disk](const std::string& node) { return disk->used(node); };
        in.entries = std::move(entries);
        w.plan = plan_volume_copies(in, nodes.view(), std::chrono::system_clock::now(), opts_.copies);
        refresh_copy_use(w.plan.entries, in.users, std::chrono::system_clock::now());
        if (shared_) shared_->planned(vm, id, w.plan.entries);
        return w;
    }

    /// The plan's node labels that may go before its record is written: all of them for a
    /// volume the written record names already (its removal plans every node's label from
    /// that record, whatever this pass fails to write), else only removals.
    boost::asio::awaitable<void> labels_before_record(const api::VolumeManager& vm, const CopyWork& w) {
        bool named = vm.status && std::any_of(vm.status->copies.begin(), vm.status->copies.end(),
                                              [&](const api::CopyRecord& e) { return e.volume == w.volume_id; });
        for (const auto& [node, value] : w.plan.labels)
            if (named || value.empty()) co_await writer_.set_node_label(node, w.label_key, value);
    }

    /// Sets or removes the plan's node labels: once its record is written (a label set before
    /// would outlive a pass that fails to write it, for a volume no record names).
    boost::asio::awaitable<void> apply_labels(const CopyWork& w) {
        for (const auto& [node, value] : w.plan.labels) co_await writer_.set_node_label(node, w.label_key, value);
    }

    /// Carries out a copy plan whose record is written (its labels are set already, so no
    /// node is selected for data about to go): pod deletions, then creations. True if it
    /// created anything.
    boost::asio::awaitable<bool> carry_out(const api::VolumeManager& vm, CopyWork& w) {
        const std::string& ns = vm.metadata.namespace_;
        for (const auto& name : w.plan.pods_to_delete) {
            // A pod already terminating stays until its containers have stopped: asking again
            // changes nothing (the plan waits for it to be gone).
            auto cached = caches_.pods->store().get(runtime::ObjectKey{ns, name});
            if (cached && !cached->metadata.deletionTimestamp.empty()) continue;
            co_await writer_.delete_ignoring_missing(api::Pod::resource, ns, name);
        }
        for (const auto& name : w.orphans) co_await writer_.delete_ignoring_missing(api::Pod::resource, ns, name);
        for (const auto& warning : w.plan.warnings) co_await events_.warn(vm, "CopyLost", warning);
        for (const auto& e : w.plan.output_events) co_await events_.note(vm, e.type, e.reason, e.message);
        if (memory_.refusal_wait(vm, w.volume_id)) co_return false;  // backing off after a refusal
        bool created = false;
        std::string refusal;
        try {
            created = co_await create_pods(vm, w);
            memory_.forget_refusal(vm, w.volume_id);
        } catch (const client::ApiError& e) {
            if (!permanent_refusal(e)) throw;
            refusal = e.what();
        }
        // Outside the handler: a coroutine cannot co_await inside a catch block.
        if (!refusal.empty())
            co_await events_.warn(vm, "CreateRefused", "volume " + w.volume_id + ": " +
                                  memory_.remember_refusal(vm, w.volume_id, refusal, opts_.refusal_backoff,
                                                           opts_.refusal_backoff_cap));
        co_return created;
    }

private:
    /// What the planner needs of volume `vc`: its layout on nodes, or why it has none, and
    /// what blocks placing it.
    void describe_volume(const handlers::HandlerContext& ctx, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                         CopyWork& w, VolumeCopyInput& in) const {
        w.handler = registry_.find(vc.sourceType).handler;
        in.config = &vc;
        if (w.handler && !w.handler->validate(vc)) in.layout = w.handler->copy_layout(ctx, vc);
        if (!in.layout) {
            auto why = w.handler ? w.handler->validate(ctx, vm, vc) : std::nullopt;
            in.invalid = why ? *why : "volume \"" + vc.id + "\" cannot be laid out on nodes";
        } else if (auto why = w.handler->validate(ctx, vm, vc)) {
            // The node count is the planner's to judge (it counts eligible nodes only).
            if (!why->starts_with("replicas [")) in.placement_blocker = *why;
        }
    }

    /// What the planner needs to share volume `vc`'s copies (volumes/shared_copies.hpp): the
    /// shared directory of a volume that shares (handlers::shares_copies), the others'
    /// entries, this volume's proof of access; and, as
    /// users of its copies in shared directories, every injected pod that mounts one.
    void share(const api::VolumeManager& vm, const api::VolumeConfig* vc, const std::vector<api::CopyRecord>& entries,
               const CopyWork& w, VolumeCopyInput& in, std::vector<std::shared_ptr<const api::Pod>>& users) const {
        if (!shared_) return;
        if (vc && in.layout && !in.output && handlers::shares_copies(*vc, opts_.handler))
            in.shared_path = handlers::naming::shared_copy_directory(in.layout->where.path, in.layout->config);
        in.others = [shared = shared_, uid = vm.metadata.uid, volume = w.volume_id](const std::string& node,
                                                                                    const std::string& path) {
            return shared->others(uid, volume, node, path);
        };
        if (!w.config_key.empty())
            if (auto proof = shared_->proof(vm.metadata.uid, w.volume_id, w.config_key)) {
                if (proof->failure.empty()) in.proven_digest = proof->digest;
                else in.proof_failure = proof->failure;
            }
        std::vector<const api::CopyRecord*> in_shared;
        for (const auto& e : entries)
            if (handlers::naming::is_shared_directory(e.path)) in_shared.push_back(&e);
        if (in_shared.empty() || !caches_.injected_pods) return;
        for (auto& p : caches_.injected_pods->store().list()) {
            if (p->metadata.namespace_ == vm.metadata.namespace_ &&
                std::any_of(users.begin(), users.end(), [&](const auto& u) { return u->metadata.name == p->metadata.name; }))
                continue;
            if (std::any_of(in_shared.begin(), in_shared.end(), [&](const api::CopyRecord* e) { return pod_mounts_copy(*p, *e); })) {
                in.users.push_back(p.get());
                users.push_back(std::move(p));
            }
        }
    }

    /// The node the status' nodeAffinity selects for volume `id`, if it selects one.
    static std::string serving_node(const api::VolumeManager& vm, const std::string& id, const std::string& label_key) {
        if (!vm.status) return {};
        for (const auto& v : vm.status->volumes)
            if (v.id == id && v.nodeAffinity && v.nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution) {
                const auto& terms = v.nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution->nodeSelectorTerms;
                if (!terms.empty() && !terms[0].matchExpressions.empty() && terms[0].matchExpressions[0].key == label_key &&
                    terms[0].matchExpressions[0].values.size() == 1)
                    return terms[0].matchExpressions[0].values[0];
            }
        return {};
    }

    /// Pods no entry accounts for: a writer's directory becomes a Removing entry (the pod
    /// stays until that entry deletes it, writers_of); any other is an orphan, deleted.
    void adopt_unknown_pods(const api::VolumeManager& vm, const std::string& id, const handlers::ObservedObjects& observed,
                            std::vector<api::CopyRecord>& entries, CopyWork& w) const {
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
            if (!writes) w.orphans.push_back(p.metadata.name);
        }
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

    /// The plan's creations: download pods (the peer Secret first), upload pods, cleanup pods.
    boost::asio::awaitable<bool> create_pods(const api::VolumeManager& vm, const CopyWork& w) {
        bool created = false;
        if (w.handler && w.config)
            for (const auto& t : w.plan.downloads)
                if (t.peer.active()) {
                    co_await ensure_peer_secret(vm, *w.config, t.peer.secret);
                    break;
                }
        for (const auto& t : w.plan.downloads) {
            if (!w.handler || !w.config) break;
            created |= co_await create_volume_pod(vm, *w.config, w.handler->copy_pod(context_(), vm, *w.config, t));
        }
        for (const auto& t : w.plan.uploads) {
            if (!w.uploader || !w.upload_config) break;
            auto recorded = w.recorded_configs.find(t.config);
            const api::VolumeConfig& config = recorded != w.recorded_configs.end() ? recorded->second : *w.upload_config;
            created |= co_await create_volume_pod(vm, config, w.uploader->upload_pod(context_(), vm, config, t));
        }
        for (const auto& c : w.plan.cleanups) {
            auto root = allowed_root_of(c.path);
            if (root.empty()) continue;  // not under any allowed root (the flag changed): never delete there
            api::VolumeConfig ref;
            ref.id = w.volume_id;
            auto meta = handlers::sub_resource_meta(vm, ref, c.pod_name);
            mark_owned(meta, vm);
            meta.annotations[std::string(handlers::copy_path_annotation)] = c.path;
            meta.annotations[std::string(handlers::copy_role_annotation)] = "cleanup";
            created |= co_await writer_.create_pod(
                vm, handlers::cleanup_pod(std::move(meta), c.node, c.path, root, opts_.handler.data_mover_image));
        }
        co_return created;
    }

    /// A download or upload pod of volume config `config`, marked owned and with its config.
    boost::asio::awaitable<bool> create_volume_pod(const api::VolumeManager& vm, const api::VolumeConfig& config, api::Pod pod) {
        mark_owned(pod.metadata, vm);
        pod.metadata.annotations[std::string(config_annotation)] = detail::config_text(config);
        co_return co_await writer_.create_pod(vm, pod);
    }

    /// The volume's peer certificate (handlers/peer_fill.hpp), made before the first download
    /// pod that mounts it; owned by the VolumeManager, so it goes with it. One that exists is
    /// kept: pods already running hold its certificate.
    boost::asio::awaitable<void> ensure_peer_secret(const api::VolumeManager& vm, const api::VolumeConfig& vc,
                                                    const std::string& name) {
        if (caches_.secrets && caches_.secrets->store().get(runtime::ObjectKey{vm.metadata.namespace_, name})) co_return;
        co_await writer_.create_ignoring_conflict(handlers::make_peer_secret(handlers::sub_resource_meta(vm, vc, name)));
    }

    std::string allowed_root_of(const std::string& path) const {
        for (const auto& r : opts_.handler.allowed_data_roots) {
            auto root = handlers::normalize_data_path(r);
            if (root && handlers::path_is_under(path, *root) && path != *root) return *root;
        }
        return {};
    }

    const Caches& caches_;
    const handlers::HandlerRegistry& registry_;
    const ReconcilerOptions& opts_;
    SubResourceWriter& writer_;
    DownloadLogs& logs_;
    VolumeManagerMemory& memory_;
    VolumeManagerEvents& events_;
    ContextSource context_;
    SharedCopies* shared_;
};

} // namespace vck::volumes
