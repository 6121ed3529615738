// SourceRefresh: the copies of an S3 volume follow their source. A refresh is due when the
// VolumeManager's annotation vck.intelai.org/refresh holds a value the record has not answered
// yet (ask for one now: set it to anything new), or when options.refreshInterval (a Go
// duration; below the controller's minimum it counts as the minimum) has passed since the
// last check, or since the copies became Ready.
// Guarantees:
// - A due refresh waits until the volume is settled (every replica Ready on its current
//   version, nothing downloading), then lists the source once, with the VolumeManager's own
//   credentials, and compares the listing's digest (s3/listing_digest.hpp) with the one every
//   serving copy recorded when its download finished (CopyRecord::sourceDigest).
// - The same: nothing changes but the record's checkedAt (and request): no directory, no pod,
//   no download.
// - Different: the record's version goes up by one, and with it the volume's config key
//   (refreshed_config): the copy planner builds the new version beside the old, blue/green,
//   each new copy taking the unchanged files of the old one on its node (fetch/local_reuse.hpp),
//   the status switching only when every replica of it is Ready, the old version removed only
//   when no running pod uses it (volumes/copy_planner.hpp).
// - A listing that fails is said in the record's message (and a Warning event by the caller);
//   the copies stay as they are, and the next check is an interval later.
// - Without a lister (ReconcilerOptions::list_source) no refresh is made: the listing of an S3
//   source needs the vck-s3 part (volumes/s3_source_listing.hpp), which vck-controller links.
// The record (status.refreshes) is written with the copies' record, so a new version is
// durable before any of its copies is made.
#pragma once

#include <vck/api/time.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/client/client.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/handlers/option_values.hpp>

#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace vck::volumes {

/// The annotation whose new value asks for a refresh of the VolumeManager's refreshable volumes.
inline constexpr std::string_view refresh_annotation = "vck.intelai.org/refresh";
/// The volume option that refreshes on an interval.
inline constexpr std::string_view refresh_interval_option = "refreshInterval";

/// A source's listing, as a refresh compares it: its digest (s3/listing_digest.hpp), or why it
/// could not be read.
struct SourceListing {
    std::string digest;
    std::string error;
};
/// How a refresh lists a source: volumes/s3_source_listing.hpp's list_s3_source for S3 (it
/// needs the vck-s3 part, so vck-controller passes it; without a lister nothing is refreshed).
/// It is given the controller's client: the credentials are read live (the Secret cache keeps
/// no values), one GET per listing.
using SourceLister = std::function<boost::asio::awaitable<SourceListing>(client::Client&, const api::VolumeManager&,
                                                                         const api::VolumeConfig&)>;

class SourceRefresher {
public:
    using Clock = std::chrono::system_clock;

    /// What one pass found for a volume: its record to keep (changed or not), its version,
    /// whether a listing was made, and when to look again.
    struct Step {
        api::SourceRefresh record;
        bool checked = false;
        bool changed = false;
        std::optional<Clock::time_point> due;
    };

    SourceRefresher(std::chrono::milliseconds min_interval, SourceLister lister)
        : min_interval_(min_interval), lister_(std::move(lister)) {}

    /// Whether the copies of `vc` can follow their source: an S3 volume that does not sync
    /// back (resync writes to the source itself).
    static bool refreshable(const api::VolumeConfig& vc) {
        if (vc.sourceType != "S3" && vc.sourceType != "S3-Dev") return false;
        return !(vc.has_option("resync") && handlers::parse_go_bool(vc.option("resync")).value_or(false));
    }

    /// Whether anyone asks `vc` to follow its source (the annotation, or the option): only then
    /// is a pass's step worth its config digest.
    static bool asked(const api::VolumeManager& vm, const api::VolumeConfig& vc) {
        return !annotation(vm).empty() || vc.has_option(std::string(refresh_interval_option));
    }

    /// The record of volume `id` in `vm`'s status, or a fresh one (version 0).
    static api::SourceRefresh record_of(const api::VolumeManager& vm, const std::string& id) {
        if (vm.status)
            for (const auto& r : vm.status->refreshes)
                if (r.volume == id) return r;
        api::SourceRefresh r;
        r.volume = id;
        return r;
    }

    /// The config key of version `version` of a config: the config itself for version 0, so
    /// volumes that were never refreshed keep their directories.
    static std::string refreshed_config(const std::string& config, std::int64_t version) {
        return handlers::naming::versioned_config(config, version);
    }

    /// One pass for volume `vc`, whose current version's copies are the entries of config
    /// `current` among `entries`.
    boost::asio::awaitable<Step> step(client::Client& client, const api::VolumeManager& vm,
                                      const api::VolumeConfig& vc, const std::vector<api::CopyRecord>& entries,
                                      const std::string& current, Clock::time_point now) {
        Step s;
        s.record = record_of(vm, vc.id);
        const std::string asked = annotation(vm);
        const bool requested = !asked.empty() && asked != s.record.request;
        std::optional<Clock::duration> every;
        if (vc.has_option(std::string(refresh_interval_option)))
            if (auto secs = handlers::parse_go_duration(vc.option(std::string(refresh_interval_option))); secs && *secs > 0)
                every = std::max<Clock::duration>(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*secs)),
                                                  min_interval_);
        if ((!requested && !every) || !lister_) co_return s;

        // Settled: every replica Ready on the current version, nothing downloading. Until then
        // a due refresh is looked at again shortly (the pass in which the last copy becomes
        // Ready plans from the record before it, and its own write brings no other pass).
        std::size_t ready = 0;
        std::optional<Clock::time_point> last = api::parse_rfc3339(s.record.checkedAt);
        std::vector<std::string> digests;
        bool downloading = false;
        for (const auto& e : entries) {
            auto p = api::copy_phase(e);
            downloading |= p == api::CopyPhase::Downloading;
            if (e.config != current || p != api::CopyPhase::Ready) continue;
            ++ready;
            digests.push_back(e.sourceDigest);
            if (!s.record.checkedAt.empty()) continue;
            if (auto at = api::parse_rfc3339(e.readyAt); at && (!last || *at > *last)) last = at;
        }
        if (!requested) {
            if (!last) last = now;
            if (now < *last + *every) {
                s.due = *last + *every;
                co_return s;
            }
        }
        if (downloading || ready < static_cast<std::size_t>(std::max<std::int64_t>(vc.replicas, 1))) {
            s.due = now + unsettled_poll;
            co_return s;
        }
        // A serving copy's digest lands with its pod's summary, when the pod ends (a serving
        // peer lingers a little): wait for it a while rather than take the copy as changed.
        bool unknown = std::any_of(digests.begin(), digests.end(), [](const std::string& d) { return d.empty(); });
        if (unknown && last && now < *last + digest_wait) {
            s.due = now + std::chrono::seconds(2);
            co_return s;
        }

        auto listing = co_await lister_(client, vm, vc);
        s.checked = true;
        s.record.checkedAt = api::format_rfc3339(now);
        if (requested) s.record.request = asked;
        if (every) s.due = now + *every;
        if (!listing.error.empty()) {
            s.record.message = "refresh failed: cannot list " + vc.option("sourceURL") + ": " + listing.error;
            co_return s;
        }
        s.record.message.clear();
        s.changed = std::any_of(digests.begin(), digests.end(), [&](const std::string& d) { return d != listing.digest; });
        if (s.changed) ++s.record.version;
        co_return s;
    }

private:
    // A serving peer's copy is Ready while its pod still serves (vck-fetch --serve-linger, 30 s
    // after its last request), and its digest comes with the pod's end.
    static constexpr std::chrono::seconds digest_wait{90};
    static constexpr std::chrono::seconds unsettled_poll{2};

    static std::string annotation(const api::VolumeManager& vm) {
        auto it = vm.metadata.annotations.find(std::string(refresh_annotation));
        return it == vm.metadata.annotations.end() ? std::string() : it->second;
    }

    Clock::duration min_interval_;
    SourceLister lister_;
};

} // namespace vck::volumes
