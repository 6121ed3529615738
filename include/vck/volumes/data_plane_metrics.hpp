// DataPlaneMetrics: what the data plane moved and holds, as Prometheus series on the
// controller's /metrics (names, help and labels: docs/ops.md "Data-plane metrics").
// Contract:
// - It reads only VolumeManagers' copy records (status.copies), as the informer delivers each
//   change (old -> new): no API call, no timer, nothing in the reconciler's path.
// - Gauges (copies per phase and source type, bytes held per node) are the sum over the
//   cached VolumeManagers, kept by subtracting each old version's share and adding the new
//   one's: exact on every replica of the controller, whether it leads or not. A shared copy's
//   directory (volumes/shared_copies.hpp) counts once in its node's bytes, however many record
//   it; a joined copy read nothing from its source.
// - Counters and the histogram count what happened while this process watched: a copy's bytes
//   growing (bytes read from its source), a copy turning Ready (seconds since it was placed),
//   an eviction, an upload's success (and bytes) or failed attempt. They count only while
//   `counting()` holds (the leader, under leader election: a standby sees the same changes and
//   must not count them twice). Nothing is counted for the objects of the first listing (what
//   happened before this process started is not known), so a restart resets them as
//   Prometheus expects of counters, without counting anything twice.
// - Label sets are bounded by what exists: per-volume series are dropped when their volume
//   leaves the VolumeManager or the VolumeManager is deleted; node series when the node holds
//   nothing; the rest have fixed label values (phase, source type, result).
#pragma once

#include <vck/api/time.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/runtime/change.hpp>
#include <vck/runtime/metrics.hpp>
#include <vck/volumes/copy_planner.hpp>
#include <vck/volumes/disk_pressure_eviction.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>

namespace vck::volumes {

namespace data_plane_metric {
inline constexpr const char* copies = "vck_copies";
inline constexpr const char* node_bytes = "vck_node_bytes";
inline constexpr const char* source_read_bytes = "vck_source_read_bytes_total";
inline constexpr const char* store_bytes = "vck_store_bytes_total";
inline constexpr const char* peer_bytes = "vck_peer_bytes_total";
inline constexpr const char* copy_ready_seconds = "vck_copy_ready_seconds";
inline constexpr const char* evictions = "vck_evictions_total";
inline constexpr const char* uploads = "vck_uploads_total";
inline constexpr const char* upload_bytes = "vck_upload_bytes_total";
inline constexpr const char* admission_refusals = "vck_admission_refusals_total";
} // namespace data_plane_metric

/// Placement to Ready: from a second (a small local copy) to hours (a large dataset).
inline const std::vector<double>& copy_ready_buckets() {
    static const std::vector<double> b{1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 10800};
    return b;
}

/// Declares the data-plane families (HELP and TYPE) in `m`, the webhooks' refusals included.
inline void describe_data_plane_metrics(runtime::MetricsRegistry& m) {
    using T = runtime::MetricsRegistry::Type;
    namespace n = data_plane_metric;
    m.describe(n::copies, T::Gauge, "Copies of data on nodes recorded in VolumeManagers' status, by phase and source type.");
    m.describe(n::node_bytes, T::Gauge,
               "Bytes of VolumeManagers' copies on each node's disk (every copy not Lost: Ready, downloading, "
               "uploading or being removed).");
    m.describe(n::source_read_bytes, T::Counter,
               "Bytes that landed in a volume's copies (every replica's download counts), as their download pods "
               "reported them, whether read from the source or taken from another copy (peer fill).");
    m.describe(n::store_bytes, T::Counter,
               "Bytes the finished downloads of a volume's copies read from the object store (their summaries' "
               "bytesFromStore): with peer fill about the dataset once, whatever the replica count.");
    m.describe(n::peer_bytes, T::Counter,
               "Bytes the finished downloads of a volume's copies took from its other copies (peer fill; their "
               "summaries' bytesFromPeers).");
    m.describe(n::copy_ready_seconds, T::Histogram, "Seconds from a copy's placement on a node until it was Ready.",
               copy_ready_buckets());
    m.describe(n::evictions, T::Counter, "Copies evicted from a node under DiskPressure.");
    m.describe(n::uploads, T::Counter, "Uploads of output volumes' copies, by result (succeeded, failed attempts).");
    m.describe(n::upload_bytes, T::Counter, "Bytes uploaded from output volumes' copies by successful uploads.");
    m.describe(n::admission_refusals, T::Counter,
               "Requests vck's admission webhooks did not allow (pod injection, VolumeManager validation), by "
               "webhook and status code (403: refused with a reason; 400, 500: could not be judged).");
}

class DataPlaneMetrics {
public:
    using Clock = std::function<std::chrono::system_clock::time_point()>;

    explicit DataPlaneMetrics(std::shared_ptr<runtime::MetricsRegistry> m, std::function<bool()> counting = {},
                              Clock now = {})
        : m_(std::move(m)), counting_(std::move(counting)), now_(std::move(now)) {
        if (!now_) now_ = [] { return std::chrono::system_clock::now(); };
        describe_data_plane_metrics(*m_);
        for (const char* r : {"succeeded", "failed"}) m_->counter(data_plane_metric::uploads, {{"result", r}});
        m_->counter(data_plane_metric::upload_bytes);
    }

    /// One change of the VolumeManager cache (an informer handler calls it).
    void observe(const runtime::Change<api::VolumeManager>& ch) {
        if (!ch.object || ch.is_resync()) return;
        std::lock_guard lk(mu_);
        const api::VolumeManager& now = *ch.object;
        switch (ch.type) {
        case runtime::ChangeType::Added: add_share(now, +1); break;
        case runtime::ChangeType::Modified:
            if (ch.old) {
                add_share(*ch.old, -1);
                count(*ch.old, now);
            }
            add_share(now, +1);
            break;
        case runtime::ChangeType::Deleted: add_share(now, -1); break;
        }
        prune(now, ch.type == runtime::ChangeType::Deleted);
    }

private:
    using Key = std::tuple<std::string, std::int64_t, std::string, std::string, std::string>;  // volume, replica, node, config, path
    static Key key_of(const api::CopyRecord& e) { return {e.volume, e.replica, e.node, e.config, e.path}; }
    static const std::vector<api::CopyRecord>& copies_of(const api::VolumeManager& vm) {
        static const std::vector<api::CopyRecord> none;
        return vm.status ? vm.status->copies : none;
    }
    static std::string source_type(const api::VolumeManager& vm, const std::string& volume) {
        for (const auto& v : vm.spec.volumeConfigs)
            if (v.id == volume) return v.sourceType;
        return "unknown";  // a volume that has left the spec, whose copies are being removed
    }
    static std::int64_t bytes_on_disk(const api::CopyRecord& e) {
        if (copy_phase(e) == CopyPhase::Lost) return 0;
        return std::max<std::int64_t>(e.bytesDone.value_or(0), 0);
    }
    bool counting() const { return !counting_ || counting_(); }

    /// Adds (sign +1) or takes back (-1) what one version of a VolumeManager contributes to the gauges.
    void add_share(const api::VolumeManager& vm, int sign) {
        for (const auto& e : copies_of(vm)) {
            m_->gauge(data_plane_metric::copies,
                      {{"phase", std::string(to_string(copy_phase(e)))}, {"source_type", source_type(vm, e.volume)}})
                .inc(sign);
            if (e.node.empty()) continue;
            std::int64_t bytes = bytes_on_disk(e);
            if (handlers::naming::is_shared_directory(e.path)) {
                // A shared copy's directory is on the disk once, however many record it.
                auto& [users, counted] = shared_[{e.node, e.path}];
                users += sign;
                if (sign > 0 && users > 1) continue;
                if (sign > 0) counted = bytes;
                if (sign < 0 && users > 0) continue;
                bytes = counted;
                if (users <= 0) shared_.erase({e.node, e.path});
            }
            auto& held = node_bytes_[e.node];
            held += sign * bytes;
            runtime::MetricLabels l{{"node", e.node}};
            if (held == 0) {  // a node that holds nothing has no series
                node_bytes_.erase(e.node);
                m_->remove(data_plane_metric::node_bytes, l);
            } else {
                m_->gauge(data_plane_metric::node_bytes, l).set(static_cast<double>(held));
            }
        }
    }

    /// The counters and the histogram: what changed between two versions of one VolumeManager.
    void count(const api::VolumeManager& before, const api::VolumeManager& after) {
        std::map<Key, const api::CopyRecord*> old;
        for (const auto& e : copies_of(before)) old.emplace(key_of(e), &e);
        const auto t = now_();
        const std::string& uid = after.metadata.uid;
        for (const auto& e : copies_of(after)) {
            auto it = old.find(key_of(e));
            const api::CopyRecord* was = it == old.end() ? nullptr : it->second;
            const auto phase = copy_phase(e);
            if (!was && phase != CopyPhase::Ready) placed_[{uid, key_of(e)}] = t;  // a copy recorded Ready at once was not placed here
            if (phase == CopyPhase::Ready && (!was || copy_phase(*was) != CopyPhase::Ready)) {
                if (auto p = placed_.find({uid, key_of(e)}); p != placed_.end()) {
                    if (counting())
                        m_->histogram(data_plane_metric::copy_ready_seconds, {{"source_type", source_type(after, e.volume)}})
                            .observe(std::chrono::duration<double>(t - p->second).count());
                    placed_.erase(p);
                }
            }
            if (!counting()) continue;
            if ((phase == CopyPhase::Downloading || phase == CopyPhase::Ready) && e.sharedFrom.empty()) {  // a joined copy read nothing
                auto grew = e.bytesDone.value_or(0) - (was ? was->bytesDone.value_or(0) : 0);
                if (grew > 0) m_->counter(data_plane_metric::source_read_bytes, volume_labels(after, e.volume)).inc(grew);
            }
            // Where the bytes came from arrives once, with the download's summary.
            for (auto [field, name] : {std::pair{&api::CopyRecord::bytesFromStore, data_plane_metric::store_bytes},
                                       std::pair{&api::CopyRecord::bytesFromPeers, data_plane_metric::peer_bytes}}) {
                auto grew = (e.*field).value_or(0) - (was ? (was->*field).value_or(0) : 0);
                if (grew > 0) m_->counter(name, volume_labels(after, e.volume)).inc(grew);
            }
            if (!was) continue;
            if (phase == CopyPhase::Removing && copy_phase(*was) != CopyPhase::Removing &&
                e.message.starts_with(evicted_prefix))
                m_->counter(data_plane_metric::evictions, {{"node", e.node}}).inc();
            if (e.bytesUploaded && !was->bytesUploaded) {
                m_->counter(data_plane_metric::uploads, {{"result", "succeeded"}}).inc();
                m_->counter(data_plane_metric::upload_bytes).inc(static_cast<double>(*e.bytesUploaded));
            }
            auto failed = e.uploadAttempts.value_or(0) - was->uploadAttempts.value_or(0);
            if (failed > 0 && was->uploadAttempts) m_->counter(data_plane_metric::uploads, {{"result", "failed"}}).inc(failed);
        }
        for (const auto& e : copies_of(after)) old.erase(key_of(e));
        for (const auto& [k, e] : old) placed_.erase({uid, k});  // gone without turning Ready: nothing to time
    }

    runtime::MetricLabels volume_labels(const api::VolumeManager& vm, const std::string& volume) {
        std::string st = source_type(vm, volume);
        volumes_[{vm.metadata.namespace_, vm.metadata.name}].insert({volume, st});
        return {{"namespace", vm.metadata.namespace_}, {"volumemanager", vm.metadata.name}, {"volume", volume}, {"source_type", st}};
    }

    /// Drops the per-volume series of volumes that no longer exist (all of them when the
    /// VolumeManager is deleted), and the placement times of a deleted VolumeManager's copies.
    void prune(const api::VolumeManager& vm, bool deleted) {
        auto it = volumes_.find({vm.metadata.namespace_, vm.metadata.name});
        if (it != volumes_.end()) {
            for (auto v = it->second.begin(); v != it->second.end();) {
                bool exists = !deleted && (std::any_of(vm.spec.volumeConfigs.begin(), vm.spec.volumeConfigs.end(),
                                                       [&](const api::VolumeConfig& c) { return c.id == v->first; }) ||
                                           std::any_of(copies_of(vm).begin(), copies_of(vm).end(),
                                                       [&](const api::CopyRecord& e) { return e.volume == v->first; }));
                if (exists) {
                    ++v;
                    continue;
                }
                for (const char* family : {data_plane_metric::source_read_bytes, data_plane_metric::store_bytes,
                                           data_plane_metric::peer_bytes})
                    m_->remove(family, {{"namespace", vm.metadata.namespace_},
                                        {"volumemanager", vm.metadata.name},
                                        {"volume", v->first},
                                        {"source_type", v->second}});
                v = it->second.erase(v);
            }
            if (it->second.empty()) volumes_.erase(it);
        }
        if (deleted)
            std::erase_if(placed_, [&](const auto& p) { return p.first.first == vm.metadata.uid; });
    }

    std::shared_ptr<runtime::MetricsRegistry> m_;
    std::function<bool()> counting_;
    Clock now_;
    std::mutex mu_;
    std::map<std::string, std::int64_t> node_bytes_;
    std::map<std::pair<std::string, std::string>, std::pair<int, std::int64_t>> shared_;  // (node, dir) -> users, bytes counted
    std::map<std::pair<std::string, Key>, std::chrono::system_clock::time_point> placed_;  // (uid, copy) -> placed at
    std::map<std::pair<std::string, std::string>, std::set<std::pair<std::string, std::string>>> volumes_;  // (ns, name) -> (volume, source type)
};

/// Wraps an admission handler so that each request it does not allow counts in
/// vck_admission_refusals_total{webhook=name, code}: 403 a refusal with a reason for the user,
/// 400 or 500 a request it could not judge.
template <class Handler>
Handler counting_refusals(std::shared_ptr<runtime::MetricsRegistry> m, std::string name, Handler h) {
    if (!m) return h;
    return [m = std::move(m), name = std::move(name), h = std::move(h)](const auto& req) {
        auto r = h(req);
        if (!r.allowed)
            m->inc(data_plane_metric::admission_refusals,
                   {{"webhook", name}, {"code", std::to_string(r.status ? r.status->code : 500)}});
        return r;
    };
}

} // namespace vck::volumes
