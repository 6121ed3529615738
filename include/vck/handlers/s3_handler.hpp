// S3Handler: sourceType "S3" (and the deprecated alias "S3-Dev"). Copies s3://bucket/path onto
// `replicas` nodes with vck-fetch (image from --data-mover-image), each replica downloading
// the subset of keys its distributionStrategy glob selects (all keys without one), and with
// `resync` keeps syncing local changes back. Credentials come from the Secret named by
// awsCredentialsSecretName through secretKeyRef, never through argv. Messages are the original's.
// S3Download says only what is S3's (its options, the Secret, its containers); placement,
// status and cleanup are DownloadHandler's (download_handler.hpp).
#pragma once

#include <vck/api/volume_manager.hpp>
#include <vck/handlers/data_handler.hpp>
#include <vck/handlers/download_handler.hpp>
#include <vck/handlers/download_pods.hpp>
#include <vck/handlers/first_batch.hpp>
#include <vck/handlers/option_values.hpp>
#include <vck/s3/glob.hpp>

#include <boost/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vck::handlers {

class S3Download {
public:
    static constexpr std::string_view default_endpoint = "https://s3.amazonaws.com";
    static constexpr std::string_view default_timeout = "5m";
    static constexpr std::string_view access_key_id_key = "awsAccessKeyID";
    static constexpr std::string_view secret_access_key_key = "awsSecretAccessKey";

    /// The distributionStrategy as (glob, replica count) in document order, or a reason.
    /// Every count is checked against what is left of `replicas` before it is added, so the
    /// running sum never exceeds `replicas` (no overflow, whatever the counts) and an accepted
    /// strategy has at most `replicas` entries.
    static std::pair<std::vector<std::pair<std::string, std::int64_t>>, std::string>
    distribution(const api::VolumeConfig& vc) {
        std::vector<std::pair<std::string, std::int64_t>> out;
        if (!vc.has_option("distributionStrategy")) return {out, ""};
        boost::system::error_code ec;
        auto v = boost::json::parse(vc.option("distributionStrategy"), ec);
        if (ec || !v.is_object()) return {out, "has to be a JSON object of glob to replica count"};
        std::int64_t sum = 0;
        for (const auto& kv : v.get_object()) {
            std::string glob(kv.key());
            if (!kv.value().is_int64() || kv.value().get_int64() < 1)
                return {out, "count of \"" + glob + "\" has to be a positive integer"};
            std::int64_t count = kv.value().get_int64();
            if (count > vc.replicas - sum)
                return {out, "counts add up to more than replicas (" + std::to_string(vc.replicas) + ")"};
            try {
                vck::s3::Glob check(glob);
            } catch (const std::exception& e) {
                return {out, e.what()};
            }
            sum += count;
            out.emplace_back(glob, count);
        }
        if (sum != vc.replicas)
            return {out, "counts add up to " + std::to_string(sum) + " but replicas is " + std::to_string(vc.replicas)};
        return {out, ""};
    }

    /// Every reason the options refuse `vc`, in the original's order and words.
    std::vector<VolumeProblem> problems(const api::VolumeConfig& vc) const {
        std::vector<VolumeProblem> out;
        if (vc.labels.empty()) out.push_back({"labels", "labels cannot be empty"});
        if (!vc.has_option("awsCredentialsSecretName"))
            out.push_back({"options.awsCredentialsSecretName", "awsCredentialsSecretName key has to be set in options"});
        if (!vc.has_option("sourceURL")) out.push_back({"options.sourceURL", "sourceURL has to be set in options"});
        for (auto& p : download_volume_problems(vc)) out.push_back(std::move(p));
        const auto& url = vc.option("sourceURL");
        if (vc.has_option("sourceURL") && (url.rfind("s3://", 0) != 0 || url.size() <= 5 || url[5] == '/'))
            out.push_back({"options.sourceURL", "sourceURL has to be an s3://bucket/path URL"});
        if (vc.has_option("endpointURL")) {
            const auto& e = vc.option("endpointURL");
            if (e.rfind("http://", 0) != 0 && e.rfind("https://", 0) != 0)
                out.push_back({"options.endpointURL", "endpointURL has to be an http:// or https:// URL"});
            else if (auto port = port_of(e); port && !parse_port(*port))
                out.push_back({"options.endpointURL", "endpointURL has to have a port from 1 to 65535"});
        }
        if (vc.has_option("timeoutForDataDownload"))
            if (auto e = download_timeout_problem(vc.option("timeoutForDataDownload")))
                out.push_back({"options.timeoutForDataDownload", *e});
        bool resync = false;
        if (vc.has_option("resync")) {
            auto b = parse_go_bool(vc.option("resync"));
            if (!b) out.push_back({"options.resync", "error while parsing resync option"});
            resync = b.value_or(false);
        }
        if (resync && vc.replicas > 1) out.push_back({"replicas", "replicas cannot be > 1 when resync is set"});
        if (auto why = distribution(vc).second; !why.empty())
            out.push_back({"options.distributionStrategy", "invalid distributionStrategy: " + why});
        if (vc.has_option("refreshInterval")) {
            auto every = parse_go_duration(vc.option("refreshInterval"));
            if (!every || !(*every > 0))
                out.push_back({"options.refreshInterval", "refreshInterval has to be a Go duration greater than 0, e.g. 1h"});
            else if (resync)
                out.push_back({"options.refreshInterval", "refreshInterval cannot be set with resync"});
        }
        if (vc.has_option("peerFill") && !parse_go_bool(vc.option("peerFill")))
            out.push_back({"options.peerFill", "peerFill has to be true or false"});
        if (vc.has_option(std::string(first_batch_option))) {
            auto parsed = parse_first_batch(vc.option(std::string(first_batch_option)));
            if (auto* why = std::get_if<std::string>(&parsed)) out.push_back({"options.firstBatch", *why});
            else if (resync) out.push_back({"options.firstBatch", "firstBatch cannot be set with resync"});
        }
        return out;
    }

    std::optional<std::string> validate(const api::VolumeConfig& vc) const { return first_problem(problems(vc)); }

    /// The credentials Secret and both its keys, while the pods that read them are to come.
    std::optional<std::string> validate_cluster(const HandlerContext& ctx, const api::VolumeManager& vm,
                                                const api::VolumeConfig& vc) const {
        if (!ctx.secret) return std::nullopt;
        const auto& name = vc.option("awsCredentialsSecretName");
        auto s = ctx.find_secret(vm.metadata.namespace_, name);
        if (!s) return "awsCredentialsSecretName: Secret \"" + name + "\" not found in namespace \"" +
                       vm.metadata.namespace_ + "\"";
        for (auto key : {access_key_id_key, secret_access_key_key})
            if (!s->data.contains(std::string(key)) && !s->stringData.contains(std::string(key)))
                return "awsCredentialsSecretName: Secret \"" + name + "\" has no key \"" + std::string(key) + "\"";
        return std::nullopt;
    }

    /// Peer fill's groups (handlers/peer_fill.hpp): per replica, its distributionStrategy glob
    /// ("" for all objects); none with one replica, with resync (its copy syncs back), or with
    /// peer fill off (options.peerFill false, or the controller's --peer-fill=false).
    std::vector<std::string> peer_groups(const HandlerContext& ctx, const api::VolumeConfig& vc) const {
        if (!ctx.options.peer_fill || vc.replicas < 2 || resync_of(vc)) return {};
        if (vc.has_option("peerFill") && !parse_go_bool(vc.option("peerFill")).value_or(true)) return {};
        std::vector<std::string> out = replica_globs(vc);
        out.resize(static_cast<std::size_t>(vc.replicas));
        return out;
    }

    /// Replica `r`'s containers: a fetch (of its distributionStrategy glob), then with resync
    /// a sync-back that keeps running (the fetch is then an init container).
    DownloadPodShape shape(const HandlerContext& ctx, const api::VolumeConfig& vc, std::size_t r,
                           const std::string& dest) const {
        auto replica_glob = replica_globs(vc);
        api::Container fetch = container(ctx, vc, "fetch");
        // Its progress lines and its summary (the exact totals, in the termination message)
        // are what the controller reads back for status (volumes/copy_progress.hpp). The
        // summary's path is vck-fetch's default, named so that it is visible in the pod.
        fetch.args = {"fetch", vc.option("sourceURL"), dest, "--endpoint=" + endpoint(vc),
                      "--progress-interval=" + seconds_text(ctx.options.progress_interval),
                      "--termination-log=/dev/termination-log"};
        if (r < replica_glob.size()) fetch.args.push_back("--include=" + replica_glob[r]);
        // A first batch is a prefix in key order: files start in that order so that it grows
        // steadily (volumes/copy_planner.hpp marks the copy usable when it is reached).
        if (first_batch_of(vc)) fetch.args.push_back("--in-order");
        DownloadPodShape shape;
        if (resync_of(vc)) {
            // The fetch finishes first (an init container), so Running means downloaded.
            api::Container sync = container(ctx, vc, "sync-back");
            sync.args = {"sync-back", dest, vc.option("sourceURL"), "--endpoint=" + endpoint(vc)};
            shape.init_containers.push_back(std::move(fetch));
            shape.containers.push_back(std::move(sync));
            shape.long_running = true;
        } else {
            shape.containers.push_back(std::move(fetch));
            shape.deadline_seconds = download_deadline_seconds(vc, default_timeout);
        }
        return shape;
    }

private:
    /// The --include glob of each replica the distributionStrategy names, in replica order.
    static std::vector<std::string> replica_globs(const api::VolumeConfig& vc) {
        std::vector<std::string> out;
        for (const auto& [glob, count] : distribution(vc).first)
            for (std::int64_t i = 0; i < count; ++i) out.push_back(glob);
        return out;
    }
    /// "5", "2.5": seconds as vck-fetch's flags take them.
    static std::string seconds_text(std::chrono::milliseconds d) {
        auto ms = std::max<std::int64_t>(d.count(), 0);
        std::string out = std::to_string(ms / 1000);
        if (auto frac = ms % 1000) {
            std::string f = std::to_string(1000 + frac).substr(1);
            while (f.back() == '0') f.pop_back();
            out += "." + f;
        }
        return out;
    }
    static bool resync_of(const api::VolumeConfig& vc) {
        return vc.has_option("resync") && parse_go_bool(vc.option("resync")).value_or(false);
    }
    static std::string endpoint(const api::VolumeConfig& vc) {
        return vc.has_option("endpointURL") ? vc.option("endpointURL") : std::string(default_endpoint);
    }
    static api::EnvVar secret_env(const std::string& env, const std::string& secret, std::string_view key) {
        api::EnvVar e;
        e.name = env;
        e.valueFrom = api::EnvVarSource{api::SecretKeySelector{secret, std::string(key), std::nullopt}, {}};
        return e;
    }
    static api::Container container(const HandlerContext& ctx, const api::VolumeConfig& vc, std::string name) {
        api::Container c;
        c.name = std::move(name);
        c.image = ctx.options.data_mover_image;
        c.command = {"vck-fetch"};
        const auto& secret = vc.option("awsCredentialsSecretName");
        c.env.push_back(secret_env("AWS_ACCESS_KEY_ID", secret, access_key_id_key));
        c.env.push_back(secret_env("AWS_SECRET_ACCESS_KEY", secret, secret_access_key_key));
        return c;
    }
};

using S3Handler = DownloadHandler<S3Download>;

} // namespace vck::handlers
