// S3OutputHandler: sourceType "S3-Output", an output volume. Each replica is an empty
// directory on its own node (hostPath and node affinity in status, as S3 copies) that a job
// writes into; its contents go to `<sourceURL>/<replica>/` when the copy must go (spec.state
// Completed, the VolumeManager deleted, the volume out of the spec), by a `vck-fetch
// sync-back --once` pod on the copy's node, before the directory is removed. Options are
// S3's (sourceURL: the prefix uploaded to, awsCredentialsSecretName, endpointURL, dataPath),
// except resync and distributionStrategy, which mean nothing here and are refused.
// Guarantees: replicas never write over each other's objects (one prefix each); credentials
// come from the Secret through secretKeyRef, never argv.
#pragma once

#include <vck/handlers/data_path.hpp>
#include <vck/handlers/download_handler.hpp>
#include <vck/handlers/download_pods.hpp>
#include <vck/handlers/output_handler.hpp>
#include <vck/handlers/s3_handler.hpp>

#include <string>
#include <vector>

namespace vck::handlers {

class S3OutputSource {
public:
    /// Where replica `r` uploads: `<sourceURL>/<r>/`.
    static std::string replica_url(const api::VolumeConfig& vc, std::size_t r) {
        std::string url = vc.option("sourceURL");
        while (url.size() > 5 && url.back() == '/') url.pop_back();
        return url + "/" + std::to_string(r) + "/";
    }

    std::vector<VolumeProblem> problems(const api::VolumeConfig& vc) const {
        auto out = S3Download().problems(vc);
        for (const char* key : {"resync", "distributionStrategy"})
            if (vc.has_option(key))
                out.push_back({std::string("options.") + key, std::string(key) + " cannot be set on an S3-Output volume"});
        return out;
    }
    std::optional<std::string> validate(const api::VolumeConfig& vc) const { return first_problem(problems(vc)); }
    std::optional<std::string> validate_cluster(const HandlerContext& ctx, const api::VolumeManager& vm,
                                                const api::VolumeConfig& vc) const {
        return S3Download().validate_cluster(ctx, vm, vc);
    }

    /// The "download": the copy pod's init container prepares the empty directory (and the
    /// state directory the upload keeps its journal in); this scan of the empty directory
    /// uploads nothing and makes no request, so the copy is Ready at once.
    DownloadPodShape shape(const HandlerContext& ctx, const api::VolumeConfig& vc, std::size_t r,
                           const std::string& dest) const {
        DownloadPodShape s;
        s.containers.push_back(sync_back(ctx, vc, r, dest, "prepare-output"));
        s.deadline_seconds = download_deadline_seconds(vc, S3Download::default_timeout);
        return s;
    }

    /// The upload of replica `r`'s directory `dest`: one scan, then exit with its summary.
    api::Container sync_back(const HandlerContext& ctx, const api::VolumeConfig& vc, std::size_t r,
                             const std::string& dest, std::string name) const {
        api::Container c;
        c.name = std::move(name);
        c.image = ctx.options.data_mover_image;
        c.command = {"vck-fetch"};
        c.args = {"sync-back", dest, replica_url(vc, r), "--once",
                  "--endpoint=" + (vc.has_option("endpointURL") ? vc.option("endpointURL")
                                                                 : std::string(S3Download::default_endpoint)),
                  "--termination-log=/dev/termination-log"};
        const auto& secret = vc.option("awsCredentialsSecretName");
        for (auto [env, key] : {std::pair{"AWS_ACCESS_KEY_ID", S3Download::access_key_id_key},
                                std::pair{"AWS_SECRET_ACCESS_KEY", S3Download::secret_access_key_key}}) {
            api::EnvVar e;
            e.name = env;
            e.valueFrom = api::EnvVarSource{api::SecretKeySelector{secret, std::string(key), std::nullopt}, {}};
            c.env.push_back(std::move(e));
        }
        return c;
    }
};

class S3OutputHandler : public DownloadHandler<S3OutputSource> {
public:
    S3OutputHandler() {}

    /// The upload pod of copy `t` (OutputHandler): the copy pod's shape (pinned to its node,
    /// the directory prepared if missing), with the upload as its container and no deadline.
    api::Pod upload_pod(const HandlerContext& ctx, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                        const CopyTarget& t) const {
        DownloadPodShape s;
        s.containers.push_back(source().sync_back(ctx, vc, t.replica, copy_destination(t), "upload"));
        auto dp = check_data_path(vc.has_option("dataPath") ? vc.option("dataPath") : default_allowed_data_roots.front(),
                                  ctx.options.allowed_data_roots);
        auto pod = copy_download_pod(vm, vc, t, dp.root, std::move(s), ctx.options.data_mover_image);
        pod.metadata.annotations[std::string(copy_role_annotation)] = "upload";
        return pod;
    }
};

static_assert(OutputHandler<S3OutputHandler>);

} // namespace vck::handlers
