// DownloadHandler<Source>: the adapter that turns a download-style source (S3, Pachyderm, a
// user's Git, ...) into a full CopyingHandler. The source says only what differs between such
// sources: how its options are checked and what one replica's download containers look like
// (a DownloadPodShape writing into a given directory). The adapter holds the rest once, so
// every download source keeps the DataHandler contract the same way:
// - validate(ctx, ...) adds the data path (dataPath, default the first allowed root, checked
//   against --allowed-data-roots), the replica count against the nodes the volume's
//   nodeAffinity admits (check_replicas_fit), and the source's own cluster checks, if any;
// - status() applies those cluster checks only while some replica's pod is missing, so data
//   already in place is never failed because the cluster shrank or a Secret was rotated;
// - cleanup_objects() stops the downloads, deletes the volume directory on every node that
//   held data and then removes the node labels; with a data path no longer allowed it deletes
//   nothing on any node but still stops the pods and removes the labels;
// - desired() builds nothing for an invalid volume; copy_layout()/copy_pod() lay the volume
//   out as copies the reconciler places (download_pods.hpp's copy_download_pod); a source that
//   says its peer_groups(ctx, vc) has its replicas fill each other (handlers/peer_fill.hpp).
#pragma once

#include <vck/api/volume_manager.hpp>
#include <vck/handlers/data_handler.hpp>
#include <vck/handlers/data_path.hpp>
#include <vck/handlers/download_pods.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/handlers/node_match.hpp>
#include <vck/handlers/option_values.hpp>
#include <vck/handlers/peer_fill.hpp>

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vck::handlers {

/// What a download-style source provides. validate(vc) checks its options alone, with the
/// original's wording (download_volume_problem has the checks every download source shares);
/// shape(ctx, vc, replica, dest) is replica `replica`'s containers, writing into the
/// in-container directory `dest`, user values as argv or env entries only. A shape marked
/// long_running is ready while Running (it keeps syncing) instead of when Succeeded.
/// Optional: validate_cluster(ctx, vm, vc), checks against the cluster (a referenced Secret,
/// say) that matter only until every replica's pod exists; problems(vc), every reason of
/// validate(vc) with its field (validate(vc) then being the first), so that an admission
/// webhook reports them all at once.
template <class S>
concept DownloadSource = requires(const S& s, const HandlerContext& ctx, const api::VolumeConfig& vc,
                                  std::size_t replica, const std::string& dest) {
    { s.validate(vc) } -> std::same_as<std::optional<std::string>>;
    { s.shape(ctx, vc, replica, dest) } -> std::same_as<DownloadPodShape>;
};

template <class S>
concept ClusterCheckedSource = DownloadSource<S> && requires(const S& s, const HandlerContext& ctx,
                                                             const api::VolumeManager& vm, const api::VolumeConfig& vc) {
    { s.validate_cluster(ctx, vm, vc) } -> std::same_as<std::optional<std::string>>;
};

/// The option checks every download source makes after its required options, in the
/// original's order and words: ReadWriteOnce only, and 1..max_replicas copies.
inline std::vector<VolumeProblem> download_volume_problems(const api::VolumeConfig& vc) {
    std::vector<VolumeProblem> out;
    if (vc.accessMode != "ReadWriteOnce") out.push_back({"accessMode", "access mode has to be ReadWriteOnce"});
    if (vc.replicas < 1) out.push_back({"replicas", "replicas has to be at least 1"});
    if (vc.replicas > max_replicas)
        out.push_back({"replicas", "replicas has to be at most " + std::to_string(max_replicas)});
    return out;
}
/// The first of download_volume_problems.
inline std::optional<std::string> download_volume_problem(const api::VolumeConfig& vc) {
    return first_problem(download_volume_problems(vc));
}

/// A download's activeDeadlineSeconds: timeoutForDataDownload (a Go duration, checked by
/// download_timeout_problem), `fallback` without one.
inline std::int64_t download_deadline_seconds(const api::VolumeConfig& vc, std::string_view fallback = "5m") {
    auto timeout = parse_go_duration(vc.has_option("timeoutForDataDownload") ? vc.option("timeoutForDataDownload")
                                                                             : std::string(fallback));
    return static_cast<std::int64_t>(std::ceil(timeout.value_or(300)));
}

template <DownloadSource Source>
class DownloadHandler {
public:
    /// Constructs the source from `args` (none: default-constructed).
    template <class... Args>
        requires std::constructible_from<Source, Args...>
    explicit DownloadHandler(Args&&... args) : source_(std::forward<Args>(args)...) {}

    const Source& source() const { return source_; }

    std::optional<std::string> validate(const api::VolumeConfig& vc) const { return source_.validate(vc); }

    /// Every reason of validate(ctx, vm, vc), in its order: the source's options (all of them
    /// when the source lists them with problems(vc)), the data path, the node count (with
    /// ctx.nodes), the source's cluster checks.
    std::vector<VolumeProblem> problems(const HandlerContext& ctx, const api::VolumeManager& vm,
                                        const api::VolumeConfig& vc) const {
        std::vector<VolumeProblem> out;
        if constexpr (requires { { source_.problems(vc) } -> std::same_as<std::vector<VolumeProblem>>; })
            out = source_.problems(vc);
        else if (auto e = source_.validate(vc))
            out.push_back({"", *e});
        if (auto dp = data_path(ctx, vc); !dp.ok()) out.push_back({"options.dataPath", dp.error});
        if (ctx.nodes)
            if (auto e = check_replicas_fit(vc.replicas, ctx.list_nodes(), vc.nodeAffinity))
                out.push_back({"replicas", *e});
        if constexpr (ClusterCheckedSource<Source>)
            if (out.empty())  // a Secret is looked up by a name the options have given
                if (auto e = source_.validate_cluster(ctx, vm, vc)) out.push_back({"", *e});
        return out;
    }

    std::optional<std::string> validate(const HandlerContext& ctx, const api::VolumeManager& vm,
                                        const api::VolumeConfig& vc) const {
        if (auto e = validate_placed(ctx, vc)) return e;
        if (ctx.nodes)
            if (auto e = check_replicas_fit(vc.replicas, ctx.list_nodes(), vc.nodeAffinity)) return e;
        if constexpr (ClusterCheckedSource<Source>) return source_.validate_cluster(ctx, vm, vc);
        return std::nullopt;
    }

    DesiredObjects desired(const HandlerContext& ctx, const api::VolumeManager& vm, const api::VolumeConfig& vc) const {
        DesiredObjects out;
        auto dp = data_path(ctx, vc);
        if (!dp.ok() || validate(vc)) return out;  // never build pods for an invalid volume
        std::string dir = naming::volume_directory(dp.path, vm.metadata.uid, vc.id);
        for (std::size_t r = 0; r < static_cast<std::size_t>(vc.replicas); ++r)
            out.pods.push_back(download_pod(vm, vc, r, dp.root, dir, source_.shape(ctx, vc, r, std::string(download_mount))));
        return out;
    }

    std::optional<CopyLayout> copy_layout(const HandlerContext& ctx, const api::VolumeConfig& vc) const {
        auto dp = data_path(ctx, vc);
        if (!dp.ok() || validate(vc)) return std::nullopt;
        CopyLayout layout{static_cast<std::size_t>(vc.replicas), dp, naming::source_config_digest(vc),
                          long_running(ctx, vc), {}};
        if constexpr (requires { { source_.peer_groups(ctx, vc) } -> std::same_as<std::vector<std::string>>; })
            layout.peer_groups = source_.peer_groups(ctx, vc);
        return layout;
    }

    api::Pod copy_pod(const HandlerContext& ctx, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                      const CopyTarget& t) const {
        auto pod = copy_download_pod(vm, vc, t, data_path(ctx, vc).root,
                                     source_.shape(ctx, vc, t.replica, copy_destination(t)), ctx.options.data_mover_image);
        apply_peer_plan(pod, t.peer);
        apply_local_reuse(pod, t);
        return pod;
    }

    VolumeOutcome status(const HandlerContext& ctx, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                         const ObservedObjects& observed) const {
        // The node count and the source's cluster checks matter before the pods exist; once
        // all are placed, a later change (a node gone or tainted, a Secret rotated away) must
        // not fail data that is already there. A pod stuck on a missing Secret key says so
        // while pending.
        if (auto e = all_replicas_placed(vm, vc, observed) ? validate_placed(ctx, vc) : validate(ctx, vm, vc))
            return failed_volume(vc, *e);
        return observe_downloads(ctx, vm, vc, observed,
                                 naming::volume_directory(data_path(ctx, vc).path, vm.metadata.uid, vc.id),
                                 long_running(ctx, vc));
    }

    CleanupPlan cleanup_objects(const HandlerContext& ctx, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                                const ObservedObjects& observed) const {
        auto dp = data_path(ctx, vc);
        if (!dp.ok()) return cleanup_without_data(ctx, vm, vc, observed);  // never delete outside the roots
        return cleanup_downloads(ctx, vm, vc, observed, dp);
    }

private:
    static DataPathCheck data_path(const HandlerContext& ctx, const api::VolumeConfig& vc) {
        return check_data_path(vc.has_option("dataPath") ? vc.option("dataPath") : default_allowed_data_roots.front(),
                               ctx.options.allowed_data_roots);
    }

    /// The checks that hold for the volume's whole life: its options and its data path.
    std::optional<std::string> validate_placed(const HandlerContext& ctx, const api::VolumeConfig& vc) const {
        if (auto e = validate(vc)) return e;
        if (auto dp = data_path(ctx, vc); !dp.ok()) return dp.error;
        return std::nullopt;
    }

    /// Whether the source's pods keep running once the data is in place: the shape says so
    /// (one place decides it, so layout, status and pods never disagree).
    bool long_running(const HandlerContext& ctx, const api::VolumeConfig& vc) const {
        return source_.shape(ctx, vc, 0, std::string(download_mount)).long_running;
    }

    Source source_;
};

} // namespace vck::handlers
