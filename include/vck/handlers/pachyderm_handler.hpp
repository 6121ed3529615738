// PachydermHandler: sourceType "Pachyderm". Copies a path of a Pachyderm repo/branch onto
// `replicas` nodes with `pachctl get-file` (image from --pachctl-image), placed and reported
// like S3 (hostPath + node affinity). Every option reaches pachctl as its own argv entry after
// `--`, so no value can become a flag or shell syntax; the server address goes in PACHD_ADDRESS
// (and ADDRESS). The argv is the original's `pachctl get-file REPO BRANCH PATH` form (pachctl
// 1.x before 1.9); --pachctl-image must name a pachctl that still has that subcommand.
// PachydermDownload says only what is Pachyderm's (its options, its container); placement,
// status and cleanup are DownloadHandler's (download_handler.hpp).
#pragma once

#include <vck/api/volume_manager.hpp>
#include <vck/handlers/data_handler.hpp>
#include <vck/handlers/download_handler.hpp>
#include <vck/handlers/download_pods.hpp>
#include <vck/handlers/option_values.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace vck::handlers {

class PachydermDownload {
public:
    static constexpr std::string_view default_address = "pachd.default.svc:650";
    static constexpr std::string_view default_timeout = "5m";

    /// Every reason the options refuse `vc`, in the original's order and words.
    std::vector<VolumeProblem> problems(const api::VolumeConfig& vc) const {
        std::vector<VolumeProblem> out;
        if (vc.labels.empty()) out.push_back({"labels", "labels cannot be empty"});
        for (auto key : {"repo", "branch", "inputPath", "outputPath"})
            if (!vc.has_option(key)) out.push_back({std::string("options.") + key, std::string(key) + " has to be set in options"});
        for (auto& p : download_volume_problems(vc)) out.push_back(std::move(p));
        if (vc.has_option("outputPath")) {
            auto o = std::filesystem::path(vc.option("outputPath")).lexically_normal().generic_string();
            if (o.empty() || o.front() == '/' || o == ".." || o.rfind("../", 0) == 0)
                out.push_back({"options.outputPath", "outputPath has to be a relative path inside the volume"});
        }
        if (vc.has_option("timeoutForDataDownload"))
            if (auto e = download_timeout_problem(vc.option("timeoutForDataDownload")))
                out.push_back({"options.timeoutForDataDownload", *e});
        if (vc.has_option("pachydermServiceAddress"))
            if (auto port = port_of(vc.option("pachydermServiceAddress")); port && !parse_port(*port))
                out.push_back({"options.pachydermServiceAddress",
                               "pachydermServiceAddress has to have a port from 1 to 65535"});
        return out;
    }

    std::optional<std::string> validate(const api::VolumeConfig& vc) const { return first_problem(problems(vc)); }

    /// Every replica's pod alike: `pachctl get-file` of the input path into `dest`.
    DownloadPodShape shape(const HandlerContext& ctx, const api::VolumeConfig& vc, std::size_t,
                           const std::string& dest) const {
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
        shape.deadline_seconds = download_deadline_seconds(vc, default_timeout);
        return shape;
    }
};

using PachydermHandler = DownloadHandler<PachydermDownload>;

} // namespace vck::handlers
