// GitHandler: an example of a user-defined VCK source type, "GitRepo", built only from the
// library's public handler parts (no library file edited). GitDownload says what is Git's:
// its options and the clone container of one replica; vck::handlers::DownloadHandler
// (download_handler.hpp) makes it a full handler the way it makes S3 and Pachyderm ones: the
// reconciler keeps a record of the copies and places one per node among the nodes the
// volume's nodeAffinity admits, a node label where data lies, hostPath + node affinity in the
// status, cleanup pods removing the clone and then the labels. User values reach the pod
// only as argv entries.
//   options: repository (https:// URL, required), revision (branch or tag, optional),
//            dataPath (under an allowed root, default the first one, /var/datasets)
#pragma once

#include <vck/handlers/data_handler.hpp>
#include <vck/handlers/download_handler.hpp>
#include <vck/handlers/download_pods.hpp>

#include <optional>
#include <string>
#include <utility>

namespace example {

namespace api = vck::api;
namespace handlers = vck::handlers;

class GitDownload {
public:
    explicit GitDownload(std::string image = "alpine/git:2.43.0") : image_(std::move(image)) {}

    std::optional<std::string> validate(const api::VolumeConfig& vc) const {
        if (vc.labels.empty()) return "labels cannot be empty";
        if (!vc.has_option("repository")) return "repository has to be set in options";
        if (vc.option("repository").rfind("https://", 0) != 0) return "repository has to be an https:// URL";
        return handlers::download_volume_problem(vc);
    }

    /// Every replica alike: a shallow clone of the revision into `dest`/repo.
    handlers::DownloadPodShape shape(const handlers::HandlerContext&, const api::VolumeConfig& vc, std::size_t,
                                     const std::string& dest) const {
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
        git.args.push_back(dest + "/repo");
        handlers::DownloadPodShape shape;
        shape.containers.push_back(std::move(git));
        shape.deadline_seconds = 600;
        return shape;
    }

private:
    std::string image_;
};

using GitHandler = handlers::DownloadHandler<GitDownload>;

static_assert(handlers::CopyingHandler<GitHandler>);

} // namespace example
