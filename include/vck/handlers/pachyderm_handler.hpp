// PachydermHandler: sourceType "Pachyderm". Copies a path of a Pachyderm repo/branch onto
// `replicas` nodes with pachctl (image from --pachctl-image), placed and reported like S3
// (hostPath + node affinity). pachctl 1.9 renamed its commands, and an image's pachctl is
// known only where it runs, so the download container is
//   /bin/sh -c SCRIPT sh REPO BRANCH INPUT OUTPUT            (the image needs /bin/sh)
// where SCRIPT asks `pachctl version --client-only` ("1.8.7", "2.11.0") and execs, so that
// pachctl's exit code and output are the container's:
//   1.0 to 1.8:  pachctl get-file [--recursive] --output=OUTPUT -- REPO BRANCH INPUT
//   otherwise:   pachctl get file [--recursive] --output OUTPUT -- REPO@BRANCH:INPUT
// "Otherwise" is 1.9 and later, 2.x, and a version the script cannot read (the current
// syntax is the likelier one). --recursive when the input path ends in '/'.
// Guarantee: no option value can become shell syntax or a flag. SCRIPT is one of two fixed
// texts (with or without --recursive); the values reach the shell only as its positional
// parameters "$1".."$4", always quoted, never as script text. pachctl gets each as one
// argument after `--`; the 2.x argument starts with the repo, which may not start with '-'
// (refused), so it cannot read as a flag even to a pachctl that ignored `--`. SCRIPT has no
// "$(": the kubelet expands $(NAME) in command and args. The server address goes in
// PACHD_ADDRESS and ADDRESS (pachctl before 1.9 reads ADDRESS).
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

    /// Every reason the options refuse `vc`, in the original's order and words (then a
    /// check it lacked).
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
        // It starts pachctl 2.x's argument (REPO@BRANCH:PATH): never a flag.
        if (vc.has_option("repo") && vc.option("repo").starts_with('-'))
            out.push_back({"options.repo", "repo cannot start with '-'"});
        return out;
    }

    std::optional<std::string> validate(const api::VolumeConfig& vc) const { return first_problem(problems(vc)); }

    /// The download container's script: $1 repo, $2 branch, $3 input path, $4 output path.
    /// Only builtins and pachctl; its two texts are all a container can run (see the top).
    static std::string script(bool recursive) {
        std::string r = recursive ? " --recursive" : "";
        return "v=`pachctl version --client-only`\n"
               "case \"$v\" in\n"
               "1.[0-8] | 1.[0-8][!0-9]*) exec pachctl get-file" + r + " --output=\"$4\" -- \"$1\" \"$2\" \"$3\" ;;\n"
               "esac\n"
               "exec pachctl get file" + r + " --output \"$4\" -- \"$1@$2:$3\"\n";
    }

    /// Every replica's pod alike: pachctl's get file of the input path into `dest`.
    DownloadPodShape shape(const HandlerContext& ctx, const api::VolumeConfig& vc, std::size_t,
                           const std::string& dest) const {
        const auto& input = vc.option("inputPath");
        std::string output = dest + "/" +
                             std::filesystem::path(vc.option("outputPath")).lexically_normal().generic_string();
        api::Container c;
        c.name = "pachctl";
        c.image = ctx.options.pachctl_image;
        c.command = {"/bin/sh", "-c", script(!input.empty() && input.back() == '/'), "sh"};
        c.args = {vc.option("repo"), vc.option("branch"), input, output};
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
