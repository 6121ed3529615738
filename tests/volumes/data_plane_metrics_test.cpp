// Data-plane metrics (include/vck/volumes/data_plane_metrics.hpp): what a scrape says after a
// sequence of VolumeManager changes, as the informer delivers them. The same figures against a
// real run: tests/e2e/e2e_test.sh, eviction_test.sh, output_test.sh.
#include <vck/volumes/data_plane_metrics.hpp>
#include <vck/webhook/admission_handler.hpp>

#include <doctest.h>

#include <memory>
#include <string>

namespace {

using namespace vck;
using vck::runtime::ChangeType;
namespace n = vck::volumes::data_plane_metric;

struct Run {
    std::shared_ptr<runtime::MetricsRegistry> m = std::make_shared<runtime::MetricsRegistry>();
    bool leading = true;
    std::chrono::system_clock::time_point t = std::chrono::system_clock::from_time_t(2'000'000'000);
    volumes::DataPlaneMetrics dp{m, [this] { return leading; }, [this] { return t; }};
    std::shared_ptr<const api::VolumeManager> last;

    /// The VolumeManager's next version, as a watch delivers it.
    void apply(api::VolumeManager vm) {
        auto next = std::make_shared<const api::VolumeManager>(std::move(vm));
        runtime::Change<api::VolumeManager> ch;
        ch.type = last ? ChangeType::Modified : ChangeType::Added;
        ch.object = next;
        ch.old = last;
        dp.observe(ch);
        last = next;
    }
    void remove() {
        runtime::Change<api::VolumeManager> ch;
        ch.type = ChangeType::Deleted;
        ch.object = last;
        dp.observe(ch);
        last.reset();
    }
    double read_bytes(const std::string& volume, const std::string& type = "S3") const {
        return m->value(n::source_read_bytes,
                        {{"namespace", "ns"}, {"volumemanager", "vm"}, {"volume", volume}, {"source_type", type}});
    }
    double copies(const std::string& phase, const std::string& type = "S3") const {
        return m->value(n::copies, {{"phase", phase}, {"source_type", type}});
    }
    double held(const std::string& node) const { return m->value(n::node_bytes, {{"node", node}}); }
};

api::VolumeManager vm_with(std::vector<api::CopyRecord> copies, std::vector<std::string> volumes = {"data"},
                           std::string type = "S3") {
    api::VolumeManager vm;
    vm.metadata.namespace_ = "ns";
    vm.metadata.name = "vm";
    vm.metadata.uid = "uid-1";
    for (auto& id : volumes) {
        api::VolumeConfig c;
        c.id = id;
        c.sourceType = type;
        vm.spec.volumeConfigs.push_back(c);
    }
    vm.status.emplace();
    vm.status->copies = std::move(copies);
    return vm;
}

api::CopyRecord copy(std::string node, std::string phase, std::optional<std::int64_t> bytes = {},
                     std::string volume = "data", std::int64_t replica = 0) {
    api::CopyRecord e;
    e.volume = std::move(volume);
    e.replica = replica;
    e.node = std::move(node);
    e.path = "/var/datasets/vck-resource-" + e.volume;
    e.config = "c1";
    e.phase = std::move(phase);
    e.bytesDone = bytes;
    return e;
}

} // namespace

TEST_CASE("two replicas downloading: bytes read from the source per volume, copies per phase, bytes per node, "
          "placement to Ready") {
    Run r;
    r.apply(vm_with({}));
    r.apply(vm_with({copy("node-1", "Downloading"), copy("node-2", "Downloading", {}, "data", 1)}));
    CHECK(r.copies("Downloading") == 2);
    r.t += std::chrono::seconds(3);
    r.apply(vm_with({copy("node-1", "Downloading", 400), copy("node-2", "Downloading", 100, "data", 1)}));
    CHECK(r.read_bytes("data") == 500);
    CHECK(r.held("node-1") == 400);
    r.t += std::chrono::seconds(4);
    r.apply(vm_with({copy("node-1", "Ready", 1000), copy("node-2", "Downloading", 700, "data", 1)}));
    r.t += std::chrono::seconds(2);
    r.apply(vm_with({copy("node-1", "Ready", 1000), copy("node-2", "Ready", 1000, "data", 1)}));

    // Each replica read the whole dataset from the source: twice its size.
    CHECK(r.read_bytes("data") == 2000);
    CHECK(r.copies("Ready") == 2);
    CHECK(r.copies("Downloading") == 0);
    CHECK(r.held("node-1") == 1000);
    CHECK(r.held("node-2") == 1000);
    CHECK(r.m->histogram_count(n::copy_ready_seconds, {{"source_type", "S3"}}) == 2);
    auto text = r.m->render();
    // node-1's copy: Ready 7 s after placement; node-2's: 9 s. Both in the 10 s bucket, none in 5 s.
    CHECK(text.find("vck_copy_ready_seconds_bucket{source_type=\"S3\",le=\"5\"} 0\n") != std::string::npos);
    CHECK(text.find("vck_copy_ready_seconds_bucket{source_type=\"S3\",le=\"10\"} 2\n") != std::string::npos);
    CHECK(text.find("vck_copy_ready_seconds_sum{source_type=\"S3\"} 16\n") != std::string::npos);
    CHECK(text.find("# TYPE vck_source_read_bytes_total counter") != std::string::npos);
    CHECK(text.find("# HELP vck_node_bytes ") != std::string::npos);

    SUBCASE("a resync or a status write that changes no copy counts nothing again") {
        auto same = *r.last;
        same.metadata.resourceVersion = "99";
        r.apply(same);
        runtime::Change<api::VolumeManager> resync;
        resync.type = ChangeType::Modified;
        resync.object = resync.old = r.last;
        r.dp.observe(resync);
        CHECK(r.read_bytes("data") == 2000);
        CHECK(r.copies("Ready") == 2);
        CHECK(r.held("node-1") == 1000);
    }
    SUBCASE("the VolumeManager deleted: its series go, the gauges fall to zero, the nodes' series go") {
        r.remove();
        CHECK(r.m->render().find("volumemanager=\"vm\"") == std::string::npos);
        CHECK(r.copies("Ready") == 0);
        CHECK(r.m->render().find("vck_node_bytes{") == std::string::npos);
    }
    SUBCASE("a volume that left the spec keeps its series while its copies are removed, then it goes") {
        r.apply(vm_with({copy("node-1", "Removing", 1000), copy("node-2", "Removing", 1000, "data", 1)}, {"other"}));
        CHECK(r.copies("Removing", "unknown") == 2);
        CHECK(r.held("node-1") == 1000);  // still on the disk until the cleanup pod ran
        r.apply(vm_with({}, {"other"}));
        CHECK(r.m->render().find("volume=\"data\"") == std::string::npos);
        CHECK(r.copies("Removing", "unknown") == 0);
    }
}

TEST_CASE("what the first listing shows is not counted again: a restarted controller adds only what moves after") {
    Run r;
    r.apply(vm_with({copy("node-1", "Downloading", 600)}));  // Added: already 600 bytes in
    CHECK(r.read_bytes("data") == 0);
    CHECK(r.copies("Downloading") == 1);
    CHECK(r.held("node-1") == 600);
    r.apply(vm_with({copy("node-1", "Ready", 1000)}));
    CHECK(r.read_bytes("data") == 400);
    // Its placement was before this process: not timed.
    CHECK(r.m->histogram_count(n::copy_ready_seconds, {{"source_type", "S3"}}) == 0);
}

TEST_CASE("a standby replica keeps the gauges but counts nothing; the leader counts") {
    Run r;
    r.leading = false;
    r.apply(vm_with({}));
    r.apply(vm_with({copy("node-1", "Downloading", 300)}));
    CHECK(r.read_bytes("data") == 0);
    CHECK(r.copies("Downloading") == 1);
    r.leading = true;
    r.apply(vm_with({copy("node-1", "Ready", 1000)}));
    CHECK(r.read_bytes("data") == 700);
}

TEST_CASE("a retried download counts the bytes it reads again") {
    Run r;
    r.apply(vm_with({}));
    r.apply(vm_with({copy("node-1", "Downloading", 800)}));
    r.apply(vm_with({copy("node-1", "Failed", 800)}));
    auto retry = copy("node-1", "Downloading");  // the next attempt starts from nothing
    r.apply(vm_with({retry}));
    r.apply(vm_with({copy("node-1", "Ready", 1000)}));
    CHECK(r.read_bytes("data") == 1800);
    CHECK(r.copies("Failed") == 0);
}

TEST_CASE("a node lost: its copy is Lost and holds nothing") {
    Run r;
    r.apply(vm_with({copy("node-1", "Ready", 1000)}));
    auto lost = copy("node-1", "Lost", 1000);
    r.apply(vm_with({lost}));
    CHECK(r.copies("Lost") == 1);
    CHECK(r.m->render().find("vck_node_bytes{node=\"node-1\"}") == std::string::npos);
}

TEST_CASE("an eviction counts once, on its node") {
    Run r;
    r.apply(vm_with({copy("node-1", "Ready", 1000)}));
    auto evicted = copy("node-1", "Removing", 1000);
    evicted.message = std::string(volumes::evicted_prefix) + "node node-1 under DiskPressure";
    r.apply(vm_with({evicted}));
    r.apply(vm_with({evicted}));
    CHECK(r.m->value(n::evictions, {{"node", "node-1"}}) == 1);
    r.apply(vm_with({}));
    CHECK(r.m->value(n::evictions, {{"node", "node-1"}}) == 1);
}

TEST_CASE("uploads: a failed attempt, then a success with its bytes") {
    Run r;
    auto up = copy("node-1", "Uploading", 0);
    up.uploadAttempts = 1;
    r.apply(vm_with({up}, {"data"}, "S3-Output"));
    up.uploadAttempts = 2;  // attempt 1 failed
    r.apply(vm_with({up}, {"data"}, "S3-Output"));
    auto done = up;
    done.phase = "Removing";
    done.bytesUploaded = 4096;
    done.filesUploaded = 3;
    r.apply(vm_with({done}, {"data"}, "S3-Output"));
    CHECK(r.m->value(n::uploads, {{"result", "failed"}}) == 1);
    CHECK(r.m->value(n::uploads, {{"result", "succeeded"}}) == 1);
    CHECK(r.m->value(n::upload_bytes) == 4096);
    // An output copy reads nothing from a source.
    CHECK(r.read_bytes("data", "S3-Output") == 0);
}

TEST_CASE("admission refusals count by webhook and code; allowed requests do not") {
    auto m = std::make_shared<runtime::MetricsRegistry>();
    webhook::AdmissionHandler h = [](const webhook::AdmissionRequest& req) {
        return req.namespace_ == "bad" ? webhook::denied("no") : webhook::allowed();
    };
    auto counted = volumes::counting_refusals(m, "/mutate-v1-pod", h);
    webhook::AdmissionRequest ok, bad;
    bad.namespace_ = "bad";
    CHECK(counted(ok).allowed);
    CHECK_FALSE(counted(bad).allowed);
    CHECK_FALSE(counted(bad).allowed);
    CHECK(m->value(n::admission_refusals, {{"webhook", "/mutate-v1-pod"}, {"code", "403"}}) == 2);
}

TEST_CASE("peer fill: bytes from the object store and from peers per volume, counted once when each download's summary lands") {
    Run r;
    auto labels = runtime::MetricLabels{{"namespace", "ns"}, {"volumemanager", "vm"}, {"volume", "data"}, {"source_type", "S3"}};
    r.apply(vm_with({}));
    r.apply(vm_with({copy("node-1", "Downloading", 0), copy("node-2", "Downloading", 0, "data", 1)}));
    auto seed = copy("node-1", "Ready", 1000);
    auto puller = copy("node-2", "Ready", 1000, "data", 1);
    r.apply(vm_with({seed, puller}));  // Ready while serving: no summary yet
    CHECK(r.m->value(n::store_bytes, labels) == 0);
    puller.bytesFromStore = 4;
    puller.bytesFromPeers = 996;
    r.apply(vm_with({seed, puller}));
    seed.bytesFromStore = 1000;
    seed.bytesFromPeers = 0;
    r.apply(vm_with({seed, puller}));
    r.apply(vm_with({seed, puller}));  // a write that changes neither counts nothing again
    CHECK(r.m->value(n::store_bytes, labels) == 1004);
    CHECK(r.m->value(n::peer_bytes, labels) == 996);
    auto text = r.m->render();
    CHECK(text.find("# TYPE vck_store_bytes_total counter") != std::string::npos);
    CHECK(text.find("# TYPE vck_peer_bytes_total counter") != std::string::npos);
    r.remove();
    CHECK(r.m->render().find("vck_peer_bytes_total{") == std::string::npos);
}

TEST_CASE("a shared copy's directory counts once in its node's bytes, and a joined copy read nothing from its source") {
    Run r;
    auto shared = [](std::string phase, std::int64_t bytes) {
        auto e = copy("node-1", std::move(phase), bytes);
        e.path = "/var/datasets/vck-resource-shared-c1";
        return e;
    };
    r.apply(vm_with({shared("Downloading", 0)}));
    r.apply(vm_with({shared("Ready", 1000)}));
    CHECK(r.held("node-1") == 1000);
    CHECK(r.read_bytes("data") == 1000);

    // Another VolumeManager joins it: the same directory, nothing more on the disk, nothing read.
    auto other = vm_with({});
    other.metadata.name = "other";
    other.metadata.uid = "uid-2";
    auto deliver = [&](ChangeType type, std::shared_ptr<const api::VolumeManager> now,
                       std::shared_ptr<const api::VolumeManager> old) {
        runtime::Change<api::VolumeManager> ch;
        ch.type = type;
        ch.object = std::move(now);
        ch.old = std::move(old);
        r.dp.observe(ch);
    };
    auto before = std::make_shared<const api::VolumeManager>(other);
    deliver(ChangeType::Added, before, nullptr);
    auto joined = shared("Ready", 1000);
    joined.sharedFrom = "ns/vm";
    other.status->copies = {joined};
    auto after = std::make_shared<const api::VolumeManager>(other);
    deliver(ChangeType::Modified, after, before);
    CHECK(r.held("node-1") == 1000);
    CHECK(r.m->value(n::source_read_bytes,
                     {{"namespace", "ns"}, {"volumemanager", "other"}, {"volume", "data"}, {"source_type", "S3"}}) == 0);

    // The maker goes: the copy stays, held by the other; its last user goes: nothing is held.
    r.remove();
    CHECK(r.held("node-1") == 1000);
    deliver(ChangeType::Deleted, after, nullptr);
    CHECK(r.held("node-1") == 0);
}
