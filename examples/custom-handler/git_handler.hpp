// GitHandler: an example of a user-defined VCK source type, "GitRepo", built only from the
// library's public handler parts (no library file edited). It clones a git repository onto
// `replicas` nodes with download pods, reusing the S3 handler's machinery: one pod per
// replica spread one per node, a node label where data lies, hostPath + node affinity in the
// status, cleanup pods removing the clone. User values reach the pod only as argv entries.
//   options: repository (https:// URL, required), revision (branch or tag, optional),
//            dataPath (under an allowed root, default /var/datasets)
#pragma once

#include <vck/handlers/data_handler.hpp>
#include <vck/handlers/data_path.hpp>
#include <vck/handlers/download_pods.hpp>
#include <vck/handlers/naming.hpp>

#include <optional>
#include <string>

namespace example {

namespace api = vck::api;
namespace handlers = vck::handlers;

class GitHandler {
public:
    explicit GitHandler(std::string image = "alpine/git:2.43.0") : image_(std::move(image)) {}

    std::optional<std::string> validate(const api::VolumeConfig& vc) const {
        if (vc.labels.empty()) return "labels cannot be empty";
        if (!vc.has_option("repository")) return "repository has to be set in options";
        if (vc.option("repository").rfind("https://", 0) != 0) return "repository has to be an https:// URL";
        if (vc.accessMode != "ReadWriteOnce") return "access mode has to be ReadWriteOnce";
        if (vc.replicas < 1) return "replicas has to be at least 1";
        return std::nullopt;
    }

    std::optional<std::string> validate(const handlers::HandlerContext& ctx, const api::VolumeManager&,
                                        const api::VolumeConfig& vc) const {
        if (auto e = validate(vc)) return e;
        if (auto dp = data_path(ctx, vc); !dp.ok()) return dp.error;
        if (ctx.nodes && static_cast<std::size_t>(vc.replicas) > ctx.list_nodes().size())
            return "replicas [" + std::to_string(vc.replicas) + "] greater than number of nodes [" +
                   std::to_string(ctx.list_nodes().size()) + "]";
        return std::nullopt;
    }

    handlers::DesiredObjects desired(const handlers::HandlerContext& ctx, const api::VolumeManager& vm,
                                     const api::VolumeConfig& vc) const {
        handlers::DesiredObjects out;
        auto dp = data_path(ctx, vc);
        if (!dp.ok() || validate(vc)) return out;
        std::string dir = handlers::naming::volume_directory(dp.path, vm.metadata.uid, vc.id);
        for (std::size_t r = 0; r < static_cast<std::size_t>(vc.replicas); ++r) {
            api::Container git;
            git.name = "clone";
            git.image = image_;
            git.command = {"git"};
            git.args = {"clone", "--depth=1"};
            if (vc.has_option("revision")) {
                git.args.push_back("--branch");
                git.args.push_back(vc.option("revision"));
            }
            git.args.push_back("--");
            git.args.push_back(vc.option("repository"));
            git.args.push_back(std::string(handlers::download_mount) + "/repo");
            handlers::DownloadPodShape shape;
            shape.containers.push_back(std::move(git));
            shape.deadline_seconds = 600;
            out.pods.push_back(handlers::download_pod(vm, vc, r, dp.root, dir, std::move(shape)));
        }
        return out;
    }

    handlers::VolumeOutcome status(const handlers::HandlerContext& ctx, const api::VolumeManager& vm,
                                   const api::VolumeConfig& vc, const handlers::ObservedObjects& observed) const {
        if (auto e = validate(ctx, vm, vc)) return handlers::failed_volume(vc, *e);
        auto dir = handlers::naming::volume_directory(data_path(ctx, vc).path, vm.metadata.uid, vc.id);
        return handlers::observe_downloads(ctx, vm, vc, observed, dir, false);
    }

    handlers::CleanupPlan cleanup_objects(const handlers::HandlerContext& ctx, const api::VolumeManager& vm,
                                          const api::VolumeConfig& vc, const handlers::ObservedObjects& observed) const {
        auto dp = data_path(ctx, vc);
        if (!dp.ok()) {
            handlers::CleanupPlan plan;
            for (const auto& p : observed.pods) plan.pods_to_delete.push_back(p.metadata.name);
            plan.done = plan.pods_to_delete.empty();
            return plan;
        }
        return handlers::cleanup_downloads(ctx, vm, vc, observed, dp);
    }

private:
    static handlers::DataPathCheck data_path(const handlers::HandlerContext& ctx, const api::VolumeConfig& vc) {
        return handlers::check_data_path(vc.has_option("dataPath") ? vc.option("dataPath") : "/var/datasets",
                                         ctx.options.allowed_data_roots);
    }

    std::string image_;
};

static_assert(handlers::DataHandler<GitHandler>);

} // namespace example
