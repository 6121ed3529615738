// PachydermHandler: sourceType "Pachyderm". Copies a path of a Pachyderm repo/branch onto
// `replicas` nodes with `pachctl get-file` (image from --pachctl-image), placed and reported
// like S3 (hostPath + node affinity). Every option reaches pachctl as its own argv entry after
// `--`, so no value can become a flag or shell syntax; the server address goes in PACHD_ADDRESS
// (and ADDRESS). The argv is the original's `pachctl get-file REPO BRANCH PATH` form (pachctl
// 1.x before 1.9); --pachctl-image must name a pachctl that still has that subcommand.
#pragma once

#include <vck/api/volume_manager.hpp>
#include <vck/handlers/data_handler.hpp>
#include <vck/handlers/data_path.hpp>
#include <vck/handlers/download_pods.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/handlers/node_match.hpp>
#include <vck/handlers/option_values.hpp>

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>

namespace vck::handlers {

class PachydermHandler {
public:
    static constexpr std::string_view default_address = "pachd.default.svc:650";
    static constexpr std::string_view default_timeout = "5m";

    std::optional<std::string> validate(const api::VolumeConfig& vc) const {
        if (vc.labels.empty()) return "labels cannot be empty";
        for (auto key : {"repo", "branch", "inputPath", "outputPath"})
            if (!vc.has_option(key)) return std::string(key) + " has to be set in options";
        if (vc.accessMode != "ReadWriteOnce") return "access mode has to be ReadWriteOnce";
        if (vc.replicas < 1) return "replicas has to be at least 1";
        if (vc.replicas > max_replicas) return "replicas has to be at most " + std::to_string(max_replicas);
        auto out = std::filesystem::path(vc.option("outputPath")).lexically_normal().generic_string();
        if (out.empty() || out.front() == '/' || out == ".." || out.rfind("../", 0) == 0)
            return "outputPath has to be a relative path inside the volume";
        if (vc.has_option("timeoutForDataDownload"))
            if (auto e = download_timeout_problem(vc.option("timeoutForDataDownload"))) return e;
        if (vc.has_option("pachydermServiceAddress"))
            if (auto port = port_of(vc.option("pachydermServiceAddress")); port && !parse_port(*port))
                return "pachydermServiceAddress has to have a port from 1 to 65535";
        return std::nullopt;
    }

    std::optional<std::string> validate(const HandlerContext& ctx, const api::VolumeManager&,
                                        const api::VolumeConfig& vc) const {
        if (auto e = validate_placed(ctx, vc)) return e;
        if (ctx.nodes) return check_replicas_fit(vc.replicas, ctx.list_nodes(), vc.nodeAffinity);
        return std::nullopt;
    }

    DesiredObjects desired(const HandlerContext& ctx, const api::VolumeManager& vm, const api::VolumeConfig& vc) const {
        DesiredObjects out;
        auto dp = check_data_path(data_path_option(vc), ctx.options.allowed_data_roots);
        if (!dp.ok() || validate(vc)) return out;
        std::string dir = naming::volume_directory(dp.path, vm.metadata.uid, vc.id);
        for (std::size_t r = 0; r < static_cast<std::size_t>(vc.replicas); ++r)
            out.pods.push_back(download_pod(vm, vc, r, dp.root, dir, shape(ctx, vc, std::string(download_mount))));
        return out;
    }

    std::optional<CopyLayout> copy_layout(const HandlerContext& ctx, const api::VolumeConfig& vc) const {
        auto dp = check_data_path(data_path_option(vc), ctx.options.allowed_data_roots);
        if (!dp.ok() || validate(vc)) return std::nullopt;
        return CopyLayout{static_cast<std::size_t>(vc.replicas), dp, naming::source_config_digest(vc), false};
    }

    api::Pod copy_pod(const HandlerContext& ctx, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                      const CopyTarget& t) const {
        auto dp = check_data_path(data_path_option(vc), ctx.options.allowed_data_roots);
        return copy_download_pod(vm, vc, t, dp.root, shape(ctx, vc, copy_destination(t)), ctx.options.data_mover_image);
    }

    VolumeOutcome status(const HandlerContext& ctx, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                         const ObservedObjects& observed) const {
        if (auto e = all_replicas_placed(vm, vc, observed) ? validate_placed(ctx, vc) : validate(ctx, vm, vc))
            return failed_volume(vc, *e);
        auto dp = check_data_path(data_path_option(vc), ctx.options.allowed_data_roots);
        return observe_downloads(ctx, vm, vc, observed, naming::volume_directory(dp.path, vm.metadata.uid, vc.id), false);
    }

    CleanupPlan cleanup_objects(const HandlerContext& ctx, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                                const ObservedObjects& observed) const {
        auto dp = check_data_path(data_path_option(vc), ctx.options.allowed_data_roots);
        if (!dp.ok()) return cleanup_without_data(ctx, vm, vc, observed);  // never delete outside the roots
        return cleanup_downloads(ctx, vm, vc, observed, dp);
    }

private:
    /// Every replica's pod: `pachctl get-file` of the input path into the volume directory.
    DownloadPodShape shape(const HandlerContext& ctx, const api::VolumeConfig& vc, const std::string& dest) const {
        auto timeout = parse_go_duration(vc.has_option("timeoutForDataDownload") ? vc.option("timeoutForDataDownload")
                                                                                 : std::string(default_timeout));
        const auto& input = vc.option("inputPath");
        std::string output = dest + "/" +
                             std::filesystem::path(vc.option("outputPath")).lexically_normal().generic_string();
        api::Container c;
        c.name = "pachctl";
        c.image = ctx.options.pachctl_image;
        c.command = {"pachctl"};
        c.args = {"get-file"};
        if (!input.empty() && input.back() == '/') c.args.push_back("--recursive");
        c.args.push_back("--output=" + output);
        c.args.insert(c.args.end(), {"--", vc.option("repo"), vc.option("branch"), input});
        api::EnvVar addr;
        addr.name = "PACHD_ADDRESS";
        addr.value = vc.has_option("pachydermServiceAddress") ? vc.option("pachydermServiceAddress")
                                                               : std::string(default_address);
        // pachctl before 1.9 reads ADDRESS, later ones PACHD_ADDRESS: set both.
        api::EnvVar legacy = addr;
        legacy.name = "ADDRESS";
        c.env.push_back(std::move(addr));
        c.env.push_back(std::move(legacy));
        DownloadPodShape shape;
        shape.containers.push_back(std::move(c));
        shape.deadline_seconds = static_cast<std::int64_t>(std::ceil(timeout.value_or(300)));
        return shape;
    }

    std::optional<std::string> validate_placed(const HandlerContext& ctx, const api::VolumeConfig& vc) const {
        if (auto e = validate(vc)) return e;
        auto dp = check_data_path(data_path_option(vc), ctx.options.allowed_data_roots);
        if (!dp.ok()) return dp.error;
        return std::nullopt;
    }
    static std::string data_path_option(const api::VolumeConfig& vc) {
        return vc.has_option("dataPath") ? vc.option("dataPath") : default_allowed_data_roots.front();
    }
};

} // namespace vck::handlers
