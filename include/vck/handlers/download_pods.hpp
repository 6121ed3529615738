// DownloadPods: the shared machinery of handlers that copy data onto nodes (S3, Pachyderm):
// one pod per replica writing into the volume's own directory under its data path, spread one
// per node, honouring the volume's node affinity and tolerations; the node label that records
// where data lies; the observation of those pods; and the cleanup pods that remove the data.
// Guarantees: user values reach containers only as argv or env entries; pod names are fixed
// per (VolumeManager uid, volume id, replica or node), so a re-run creates nothing twice.
// A node is labelled as soon as a download pod is placed on it, so cleanup also finds nodes
// holding partial data. Pods mount the allowed data root with the volume's directory as the
// subPath (see data_path.hpp), so the kubelet refuses a data path that a symlink on the node
// leads out of the root.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/data_handler.hpp>
#include <vck/handlers/data_path.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/handlers/sub_resource.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace vck::handlers {

/// Where the volume directory is mounted inside download pods.
inline constexpr std::string_view download_mount = "/vck/data";
/// Where the data path (the volume directory's parent) is mounted inside cleanup pods.
inline constexpr std::string_view cleanup_mount = "/vck/root";
inline constexpr std::string_view node_label_value = "true";

/// One replica's pod, shaped by its handler: the containers (argv/env only) and limits.
struct DownloadPodShape {
    std::vector<api::Container> init_containers;
    std::vector<api::Container> containers;
    std::optional<std::int64_t> deadline_seconds;  // activeDeadlineSeconds: the download timeout
    bool long_running = false;  // ready while Running (resync), instead of when Succeeded
};

inline api::VolumeMount data_mount(std::string sub_path) {
    api::VolumeMount m;
    m.name = "vck-data";
    m.mountPath = std::string(download_mount);
    m.subPath = std::move(sub_path);
    return m;
}

/// The pod of replica `replica`; `data_dir` is the volume directory on the node, below the
/// allowed data root `root`.
inline api::Pod download_pod(const api::VolumeManager& vm, const api::VolumeConfig& vc, std::size_t replica,
                             const std::string& root, const std::string& data_dir, DownloadPodShape shape) {
    api::Pod pod;
    pod.metadata = sub_resource_meta(vm, vc, naming::replica_pod_name(vm.metadata.uid, vc.id, replica));
    pod.spec.restartPolicy = "Never";
    pod.spec.activeDeadlineSeconds = shape.deadline_seconds;
    // FallbackToLogsOnError: a failed container's log tail lands in its terminated state, so
    // status() can quote it from the observed pod alone.
    for (auto* list : {&shape.init_containers, &shape.containers})
        for (auto& c : *list) {
            c.volumeMounts.push_back(data_mount(path_below(data_dir, root)));
            c.terminationMessagePolicy = "FallbackToLogsOnError";
        }
    pod.spec.initContainers = std::move(shape.init_containers);
    pod.spec.containers = std::move(shape.containers);

    api::Volume v;
    v.name = "vck-data";
    // The kubelet creates the subPath below the root when it is missing.
    v.hostPath = api::HostPathVolumeSource{root, "DirectoryOrCreate"};
    pod.spec.volumes.push_back(std::move(v));

    api::Affinity affinity;
    affinity.nodeAffinity = vc.nodeAffinity;
    api::PodAffinityTerm spread;
    spread.labelSelector = api::LabelSelectorSpec{volume_selector(vm, vc), {}};
    spread.topologyKey = "kubernetes.io/hostname";
    affinity.podAntiAffinity = api::PodAntiAffinity{{spread}, {}};
    pod.spec.affinity = std::move(affinity);
    pod.spec.tolerations = vc.tolerations;
    return pod;
}

/// Annotations on the pods of a copy: the host directory it writes or removes, so a pod the
/// record does not know (an older controller's, or one left by a crash) can be adopted.
inline constexpr std::string_view copy_path_annotation = "vck.intelai.org/copy-path";
inline constexpr std::string_view copy_role_annotation = "vck.intelai.org/copy-role";  // download, cleanup

/// Where a copy pod mounts the data path (the copies' parent directory): a copy's directory
/// and vck-fetch's state beside it (`<dir>.vck-fetch`) must be on one mount, so staged files
/// are renamed into place, never copied across mounts.
inline constexpr std::string_view copy_mount = "/vck/datasets";
/// The user copy pods write as: the data-mover image's own non-root user.
inline constexpr std::int64_t copy_uid = 65532;

/// The in-container path of a copy's directory in its download pod: what a handler's
/// containers write into (CopyingHandler::copy_pod passes it to its containers).
inline std::string copy_destination(const CopyTarget& t) {
    return std::string(copy_mount) + t.path.substr(t.path.rfind('/'));
}

/// Whether container `c` runs `vck-fetch fetch` (the container peer fill and reuse shape).
inline bool runs_vck_fetch_fetch(const api::Container& c) {
    return !c.command.empty() && c.command.front() == "vck-fetch" && !c.args.empty() && c.args.front() == "fetch";
}

/// Points the fetch of `t` at an older copy on its node (CopyTarget::reuse_from), when that
/// copy lies in the same data path (so the pod's mount of copy_mount shows it).
inline void apply_local_reuse(api::Pod& pod, const CopyTarget& t) {
    auto parent = [](const std::string& p) { return p.substr(0, p.rfind('/')); };
    if (t.reuse_from.empty() || parent(t.reuse_from) != parent(t.path)) return;
    for (auto* list : {&pod.spec.initContainers, &pod.spec.containers})
        for (auto& c : *list)
            if (runs_vck_fetch_fetch(c))
                c.args.push_back("--reuse-from=" + std::string(copy_mount) + t.reuse_from.substr(t.reuse_from.rfind('/')));
}

/// The least privilege: no capabilities, no privilege escalation, a read-only root
/// filesystem, as `uid` (non-root asserted unless it is 0), plus `add` capabilities.
inline boost::json::value restricted_security_context(std::int64_t uid, std::vector<std::string> add = {}) {
    boost::json::array added;
    for (auto& c : add) added.emplace_back(c);
    boost::json::object caps{{"drop", boost::json::array{"ALL"}}};
    if (!added.empty()) caps["add"] = std::move(added);
    return boost::json::object{{"runAsUser", uid}, {"runAsGroup", uid}, {"runAsNonRoot", uid != 0},
                        {"allowPrivilegeEscalation", false}, {"readOnlyRootFilesystem", true},
                        {"capabilities", std::move(caps)}};
}

/// The download pod of one copy (CopyingHandler::copy_pod). Pinned to the copy's node by a
/// required node affinity on the node's name (the scheduler still checks taints and
/// resources), not spread by anti-affinity (the reconciler places copies on distinct nodes
/// itself: anti-affinity with download pods ends when they complete). On a node the kubelet
/// creates the data path owned by root, mode 0755, and the image runs as uid 65532, which
/// cannot write there: an init container, root with CHOWN as its only capability, runs
/// `vck-fetch prepare` on the copy's directory (and its state directory) and hands them to
/// 65532; the handler's containers then run as 65532 with no capability at all. `shape`'s
/// containers write into copy_destination(t).
inline api::Pod copy_download_pod(const api::VolumeManager& vm, const api::VolumeConfig& vc, const CopyTarget& t,
                                  const std::string& root, DownloadPodShape shape, const std::string& data_mover_image) {
    api::Pod pod;
    pod.metadata = sub_resource_meta(vm, vc, t.pod_name);
    pod.metadata.annotations[std::string(copy_path_annotation)] = t.path;
    pod.metadata.annotations[std::string(copy_role_annotation)] = "download";
    pod.spec.restartPolicy = "Never";
    pod.spec.activeDeadlineSeconds = shape.deadline_seconds;
    auto slash = t.path.rfind('/');
    std::string parent = slash == 0 ? std::string("/") : t.path.substr(0, slash);
    api::VolumeMount m;
    m.name = "vck-data";
    m.mountPath = std::string(copy_mount);
    m.subPath = path_below(parent, root);

    api::Container prepare;
    prepare.name = "prepare";
    prepare.image = data_mover_image;
    prepare.command = {"vck-fetch"};
    prepare.args = {"prepare", copy_destination(t), "--owner=" + std::to_string(copy_uid) + ":" + std::to_string(copy_uid),
                    "--allowed-root=" + std::string(copy_mount)};
    prepare.securityContext = restricted_security_context(0, {"CHOWN"});
    std::vector<api::Container> init{std::move(prepare)};
    for (auto& c : shape.init_containers) init.push_back(std::move(c));
    for (auto* list : {&init, &shape.containers})
        for (auto& c : *list) {
            c.volumeMounts.push_back(m);
            // FallbackToLogsOnError: a failed container's log tail lands in its terminated
            // state, so the planner can quote it from the observed pod alone.
            c.terminationMessagePolicy = "FallbackToLogsOnError";
            if (c.securityContext.is_null()) c.securityContext = restricted_security_context(copy_uid);
        }
    pod.spec.initContainers = std::move(init);
    pod.spec.containers = std::move(shape.containers);
    api::Volume v;
    v.name = "vck-data";
    v.hostPath = api::HostPathVolumeSource{root, "DirectoryOrCreate"};
    pod.spec.volumes.push_back(std::move(v));

    api::NodeSelectorRequirement on_node{"metadata.name", "In", {t.node}};
    api::NodeAffinity pin;
    pin.requiredDuringSchedulingIgnoredDuringExecution = api::NodeSelector{{api::NodeSelectorTerm{{}, {on_node}}}};
    pod.spec.affinity = api::Affinity{};
    pod.spec.affinity->nodeAffinity = std::move(pin);
    pod.spec.tolerations = vc.tolerations;
    return pod;
}

/// The pod that removes directory `path` (strictly below allowed root `root`) from `node`:
/// `vck-fetch delete`, which refuses anything a symlink leads out of the root. Bound to the
/// node directly (the data is there, whatever its taints) and tolerating everything.
inline api::Pod cleanup_pod(api::ObjectMeta meta, const std::string& node, const std::string& path,
                            const std::string& root, const std::string& image) {
    api::Pod pod;
    pod.metadata = std::move(meta);
    pod.spec.restartPolicy = "Never";
    pod.spec.nodeName = node;  // bypasses the scheduler: the data is on this node, taints or not
    pod.spec.tolerations.push_back(api::Toleration{"", "Exists", "", "", std::nullopt});
    auto slash = path.rfind('/');
    std::string parent = slash == 0 ? std::string("/") : path.substr(0, slash);
    api::Container c;
    c.name = "delete";
    c.image = image;
    c.command = {"vck-fetch"};
    c.args = {"delete", std::string(cleanup_mount) + path.substr(slash), "--allowed-root=" + std::string(cleanup_mount)};
    // Root, for the copy's entry in the root-owned data path, with DAC_OVERRIDE only: the
    // files inside belong to the download's user.
    c.securityContext = restricted_security_context(0, {"DAC_OVERRIDE"});
    api::VolumeMount m;
    m.name = "vck-root";
    m.mountPath = std::string(cleanup_mount);
    m.subPath = path_below(parent, root);
    c.volumeMounts.push_back(std::move(m));
    pod.spec.containers.push_back(std::move(c));
    api::Volume v;
    v.name = "vck-root";
    // OrCreate: a node whose download never started may lack the directory; the cleanup must
    // still finish there (the kubelet creates only the data path, below the root, and
    // refuses one a symlink leads out of it).
    v.hostPath = api::HostPathVolumeSource{root, "DirectoryOrCreate"};
    pod.spec.volumes.push_back(std::move(v));
    return pod;
}

inline const api::Pod* find_pod(const ObservedObjects& observed, const std::string& name) {
    for (const auto& p : observed.pods)
        if (p.metadata.name == name) return &p;
    return nullptr;
}

inline std::string pod_phase(const api::Pod& p) { return p.status ? p.status->phase : std::string(); }

/// Whether every replica's download pod exists (placed or not): from then on only the
/// volume's own checks apply, not those about the cluster around it.
inline bool all_replicas_placed(const api::VolumeManager& vm, const api::VolumeConfig& vc,
                                const ObservedObjects& observed) {
    for (std::int64_t r = 0; r < vc.replicas; ++r)
        if (!find_pod(observed, naming::replica_pod_name(vm.metadata.uid, vc.id, static_cast<std::size_t>(r))))
            return false;
    return vc.replicas > 0;
}

/// The node affinity that sends consumers to nodes holding the volume's data.
inline api::NodeAffinity data_node_affinity(const std::string& label_key) {
    api::NodeSelectorRequirement req{label_key, "In", {std::string(node_label_value)}};
    api::NodeAffinity a;
    a.requiredDuringSchedulingIgnoredDuringExecution = api::NodeSelector{{api::NodeSelectorTerm{{req}, {}}}};
    return a;
}

/// What a failed pod says about itself without its log: the first terminated container's
/// message (its log tail, under FallbackToLogsOnError), else the pod's own status message.
inline std::string termination_message(const api::Pod& p) {
    if (!p.status) return {};
    // Init containers first: a resync volume's download is its init container, and when it
    // fails the main container never ran.
    for (const auto* list : {&p.status->initContainerStatuses, &p.status->containerStatuses})
        for (const auto& cs : *list)
            if (cs.state && cs.state->terminated && cs.state->terminated->exitCode != 0 &&
                !cs.state->terminated->message.empty())
                return cs.state->terminated->message;
    return p.status->message;
}

/// The name of the container whose failure failed `p` (init containers first), or "".
inline std::string failed_container(const api::Pod& p) {
    if (!p.status) return {};
    for (const auto* list : {&p.status->initContainerStatuses, &p.status->containerStatuses})
        for (const auto& cs : *list)
            if (cs.state && cs.state->terminated && cs.state->terminated->exitCode != 0) return cs.name;
    return {};
}

/// The first waiting container state of `p` (init containers first) that `accept` takes.
template <class Accept>
const api::ContainerStateWaiting* find_waiting(const api::Pod& p, Accept accept) {
    if (!p.status) return nullptr;
    for (const auto* list : {&p.status->initContainerStatuses, &p.status->containerStatuses})
        for (const auto& cs : *list)
            if (cs.state && cs.state->waiting && accept(*cs.state->waiting)) return &*cs.state->waiting;
    return nullptr;
}

/// The kubelet's refusal to mount a container's subPath, if it refused: the data path
/// resolves (through a symlink on the node) outside the allowed root it was mounted from.
/// Permanent, unlike a missing Secret key, so it fails the volume instead of waiting.
inline std::string subpath_refusal(const api::Pod& p) {
    const auto* w = find_waiting(p, [](const api::ContainerStateWaiting& w) {
        return w.reason == "CreateContainerConfigError" && (w.message.starts_with("failed to prepare subPath") ||
                                                           w.message.starts_with("failed to create subPath directory"));
    });
    return w ? w->message : std::string();
}

/// Why an unfinished pod is not progressing, when it says: unschedulable, or a container
/// waiting on something other than a normal start (image pulls, a missing Secret key, ...).
inline std::string waiting_reason(const api::Pod& p) {
    if (!p.status) return {};
    for (const auto& c : p.status->conditions)
        if (c.type == "PodScheduled" && c.status == "False")
            return "pod " + p.metadata.name + " unschedulable" + (c.message.empty() ? "" : ": " + c.message);
    const auto* w = find_waiting(p, [](const api::ContainerStateWaiting& w) {
        return !w.reason.empty() && w.reason != "ContainerCreating" && w.reason != "PodInitializing";
    });
    if (!w) return {};
    return "pod " + p.metadata.name + " waiting: " + w->reason + (w->message.empty() ? "" : ": " + w->message);
}

/// Observes `replicas` download pods: Failed on the first failed pod (with its log tail),
/// Ready when all are done, Pending otherwise (missing pods are the reconciler's to create).
inline VolumeOutcome observe_downloads(const HandlerContext& ctx, const api::VolumeManager& vm,
                                       const api::VolumeConfig& vc, const ObservedObjects& observed,
                                       const std::string& data_dir, bool long_running) {
    std::string key = naming::node_label_key(vm.metadata.namespace_, vm.metadata.name, vc.id);
    VolumeOutcome out;
    out.status.id = vc.id;
    std::size_t done = 0;
    std::string waiting;  // why the first unfinished pod is stuck, if it says
    auto replicas = static_cast<std::size_t>(std::max<std::int64_t>(vc.replicas, 0));
    for (std::size_t r = 0; r < replicas; ++r) {
        const api::Pod* pod = find_pod(observed, naming::replica_pod_name(vm.metadata.uid, vc.id, r));
        if (!pod) continue;
        if (!pod->spec.nodeName.empty())
            out.node_labels.push_back({pod->spec.nodeName, key, std::string(node_label_value)});
        std::string phase = pod_phase(*pod);
        // Failed keeps the node labels: cleanup visits every node that may hold data.
        auto fail = [&](const std::string& detail) {
            auto failed = failed_volume(vc, "error during data download using pod " + pod->metadata.name + detail);
            failed.node_labels = std::move(out.node_labels);
            return failed;
        };
        if (phase == "Failed") {
            std::string why = pod->status->reason == "DeadlineExceeded" ? " (timed out)" : "";
            std::string tail = ctx.log_tail(*pod);
            if (tail.empty()) tail = termination_message(*pod);
            return fail(why + (tail.empty() ? "" : ": " + tail));
        }
        if (auto refused = subpath_refusal(*pod); !refused.empty())
            return fail(" on node " + pod->spec.nodeName + ": " + refused +
                        " (the data path leads out of its allowed data root there: a symlink?)");
        if (phase == "Succeeded" || (long_running && phase == "Running")) ++done;
        else if (waiting.empty()) waiting = waiting_reason(*pod);
    }
    if (done < replicas) {
        out.status.message = "downloading: " + std::to_string(done) + " of " + std::to_string(replicas) +
                             " replicas done" + (waiting.empty() ? "" : " (" + waiting + ")");
        return out;
    }
    out.phase = VolumePhase::Ready;
    out.status.message = "success";
    api::VolumeSource src;
    src.hostPath = api::HostPathVolumeSource{data_dir, ""};
    out.status.volumeSource = std::move(src);
    out.status.nodeAffinity = data_node_affinity(key);
    return out;
}

/// Cleanup of a volume whose data path is refused (nothing may be deleted there): stop its
/// pods and unlabel its nodes, but run no delete on any node.
inline CleanupPlan cleanup_without_data(const HandlerContext& ctx, const api::VolumeManager& vm,
                                        const api::VolumeConfig& vc, const ObservedObjects& observed) {
    CleanupPlan plan;
    for (const auto& p : observed.pods) plan.pods_to_delete.push_back(p.metadata.name);
    if (!plan.pods_to_delete.empty()) {
        plan.message = "stopping download pods";
        return plan;
    }
    std::string key = naming::node_label_key(vm.metadata.namespace_, vm.metadata.name, vc.id);
    for (const auto& n : ctx.list_nodes())
        if (n.metadata.labels.contains(key)) plan.node_labels_to_remove.push_back({n.metadata.name, key, std::string(node_label_value)});
    plan.done = true;
    return plan;
}

/// Stops the download pods, then runs `vck-fetch delete` of the volume directory on every node
/// that held data, then removes the node labels. `where` is the accepted data path (the
/// volume directory's parent) and its root; the delete refuses anything not strictly inside it.
inline CleanupPlan cleanup_downloads(const HandlerContext& ctx, const api::VolumeManager& vm,
                                     const api::VolumeConfig& vc, const ObservedObjects& observed,
                                     const DataPathCheck& where) {
    const std::string& data_path = where.path;
    CleanupPlan plan;
    std::string key = naming::node_label_key(vm.metadata.namespace_, vm.metadata.name, vc.id);
    std::set<std::string> nodes;
    std::set<std::string> existing;
    for (const auto& n : ctx.list_nodes()) {
        existing.insert(n.metadata.name);
        if (n.metadata.labels.contains(key)) nodes.insert(n.metadata.name);
    }
    std::set<std::string> cleanup_names;
    for (const auto& p : observed.pods) {
        // A node gone from the cluster took its data along; a cleanup pod bound to it would
        // stay Pending forever (so it is deleted below, not waited for).
        if (!p.spec.nodeName.empty() && (!ctx.nodes || existing.contains(p.spec.nodeName))) nodes.insert(p.spec.nodeName);
    }
    for (const auto& n : nodes) cleanup_names.insert(naming::cleanup_pod_name(vm.metadata.uid, vc.id, n));
    for (const auto& p : observed.pods)
        if (!cleanup_names.contains(p.metadata.name)) plan.pods_to_delete.push_back(p.metadata.name);
    if (!plan.pods_to_delete.empty()) {
        plan.message = "stopping download pods";
        return plan;
    }
    std::string dir = naming::volume_directory(data_path, vm.metadata.uid, vc.id);
    std::size_t finished = 0;
    for (const auto& node : nodes) {
        std::string name = naming::cleanup_pod_name(vm.metadata.uid, vc.id, node);
        if (const api::Pod* p = find_pod(observed, name)) {
            // A data path the kubelet refuses to mount leads out of the root: nothing of the
            // volume's can be there, and nothing is deleted through it.
            if (pod_phase(*p) == "Succeeded" || !subpath_refusal(*p).empty()) ++finished;
            else if (pod_phase(*p) == "Failed") plan.message = "cleanup failed on node " + node + " using pod " + name +
                                                                ": " + ctx.log_tail(*p);
            continue;
        }
        api::Pod pod = cleanup_pod(sub_resource_meta(vm, vc, name), node, dir, where.root, ctx.options.data_mover_image);
        plan.pods.push_back(std::move(pod));
    }
    if (finished < nodes.size()) {
        if (plan.message.empty()) plan.message = "removing data from " + std::to_string(nodes.size() - finished) + " nodes";
        return plan;
    }
    for (const auto& node : nodes) {
        plan.node_labels_to_remove.push_back({node, key, std::string(node_label_value)});
        plan.pods_to_delete.push_back(naming::cleanup_pod_name(vm.metadata.uid, vc.id, node));
    }
    plan.done = true;
    return plan;
}

} // namespace vck::handlers
