// Download progress as the controller records and shows it (include/vck/volumes/copy_progress.hpp):
// which container of a download pod reports, the final totals of a finished one, the sums per
// volume and the Progress column. Pure: pods and records built by hand.
#include <vck/fetch/run_summary.hpp>
#include <vck/volumes/copy_progress.hpp>

#include <doctest.h>

#include <string>
#include <vector>

namespace {

using namespace vck;
using fetch::TransferCounts;

api::Container fetch_container(std::string name, std::string verb = "fetch") {
    api::Container c;
    c.name = std::move(name);
    c.command = {"vck-fetch"};
    c.args = {std::move(verb), "s3://data/set/", "/vck/data"};
    return c;
}

api::ContainerStatus running(std::string name) {
    api::ContainerStatus cs;
    cs.name = std::move(name);
    cs.state = api::ContainerState{};
    cs.state->running = api::ContainerStateRunning{"2026-01-01T00:00:00Z"};
    return cs;
}

api::ContainerStatus terminated(std::string name, int code, std::string message) {
    api::ContainerStatus cs;
    cs.name = std::move(name);
    cs.state = api::ContainerState{};
    cs.state->terminated = api::ContainerStateTerminated{};
    cs.state->terminated->exitCode = code;
    cs.state->terminated->message = std::move(message);
    return cs;
}

/// The download pod the S3 handler makes: `prepare` (init) then `fetch`.
api::Pod download_pod() {
    api::Pod p;
    p.metadata.name = "vck-copy-1";
    p.metadata.uid = "pod-uid-1";
    p.spec.initContainers.push_back(fetch_container("prepare", "prepare"));
    p.spec.containers.push_back(fetch_container("fetch"));
    p.status = api::PodStatus{};
    return p;
}

std::string fetch_summary(std::uint64_t files, std::uint64_t skipped, std::uint64_t bytes, std::uint64_t skipped_bytes) {
    fetch::RunSummary s;
    s.command = "fetch";
    s.files = files;
    s.skipped = skipped;
    s.bytes = bytes;
    s.skipped_bytes = skipped_bytes;
    s.store_bytes = bytes * 3 / 4;  // a quarter from a peer copy
    s.peer_bytes = bytes - s.store_bytes;
    return s.to_json_line() + "\n";
}

api::CopyRecord entry(std::int64_t replica, std::string phase, std::optional<TransferCounts> c, std::string config = "cfg-a") {
    api::CopyRecord e;
    e.volume = "vol1";
    e.replica = replica;
    e.node = "node-" + std::to_string(replica);
    e.config = std::move(config);
    e.phase = std::move(phase);
    if (c) volumes::record_counts(e, *c);
    return e;
}

} // namespace

TEST_CASE("the reporting container is a running vck-fetch fetch, not prepare, not another data mover") {
    auto p = download_pod();
    p.status->initContainerStatuses.push_back(running("prepare"));
    CHECK(volumes::progress_container(p) == "");  // prepare reports nothing
    p.status->initContainerStatuses[0] = terminated("prepare", 0, "");
    p.status->containerStatuses.push_back(running("fetch"));
    CHECK(volumes::progress_container(p) == "fetch");
    // A resync volume's fetch is an init container, running while the pod is Pending.
    api::Pod resync = download_pod();
    resync.spec.initContainers.push_back(fetch_container("fetch"));
    resync.spec.containers[0] = fetch_container("sync-back", "sync-back");
    resync.status->initContainerStatuses = {terminated("prepare", 0, ""), running("fetch")};
    CHECK(volumes::progress_container(resync) == "fetch");
    // Pachyderm's pachctl, or any data mover that is not vck-fetch: nothing to read.
    api::Pod pach = download_pod();
    pach.spec.containers[0].command = {"pachctl"};
    pach.status->containerStatuses.push_back(running("fetch"));
    CHECK(volumes::progress_container(pach) == "");
    // Finished: nothing to read either (its summary says the rest).
    p.status->containerStatuses[0] = terminated("fetch", 0, fetch_summary(2, 0, 10, 0));
    CHECK(volumes::progress_container(p) == "");
}

TEST_CASE("a finished download's totals are its summary's, unchanged files included; a failure gives none") {
    auto p = download_pod();
    p.status->initContainerStatuses.push_back(terminated("prepare", 0, ""));
    p.status->containerStatuses.push_back(terminated("fetch", 0, fetch_summary(7, 3, 7000, 3000)));
    auto c = volumes::final_counts(p);
    REQUIRE(c);
    CHECK(*c == TransferCounts{10, 10, 10000, 10000, 10, 10000, 5250, 1750});  // and where this run's bytes came from
    p.status->containerStatuses[0] = terminated("fetch", 4, "vck-fetch: error: NoSuchBucket");
    CHECK_FALSE(volumes::final_counts(p));
}

TEST_CASE("a running download's counts never go backwards while its totals stay, and a new total replaces them") {
    std::optional<TransferCounts> recorded = TransferCounts{5, 10, 500, 1000};
    CHECK(*volumes::advance(recorded, TransferCounts{6, 10, 600, 1000}) == TransferCounts{6, 10, 600, 1000});
    CHECK(*volumes::advance(recorded, TransferCounts{4, 10, 400, 1000}) == *recorded);  // a late, older line
    CHECK(*volumes::advance(recorded, TransferCounts{0, 12, 0, 1200}) == TransferCounts{0, 12, 0, 1200});  // the data changed
    CHECK(*volumes::advance(recorded, std::nullopt) == *recorded);
    CHECK_FALSE(volumes::advance(std::nullopt, std::nullopt));
}

TEST_CASE("a volume's counts sum its current config's replicas, not old configs, extra replicas or removed copies") {
    std::vector<api::CopyRecord> entries{
        entry(0, "Ready", TransferCounts{10, 10, 1000, 1000}),
        entry(1, "Downloading", TransferCounts{3, 10, 250, 1000}),
        entry(2, "Downloading", TransferCounts{9, 10, 900, 1000}),             // beyond the replica count
        entry(0, "Ready", TransferCounts{5, 5, 50, 50}, "cfg-old"),          // the previous config
        entry(1, "Removing", TransferCounts{1, 10, 100, 1000}, "cfg-a"),     // on its way out
    };
    auto c = volumes::volume_counts(entries, "cfg-a", 2);
    REQUIRE(c);
    CHECK(*c == TransferCounts{13, 20, 1250, 2000});
    CHECK_FALSE(volumes::volume_counts(std::vector<api::CopyRecord>{entry(0, "Downloading", std::nullopt)}, "cfg-a", 1));
    api::VolumeStatus st;
    volumes::set_volume_counts(st, c);
    CHECK(st.bytesDone == 1250);
    CHECK(st.filesTotal == 20);
    volumes::set_volume_counts(st, std::nullopt);
    CHECK_FALSE(st.bytesDone);
}

TEST_CASE("replicas that have not reported count as not started, so one replica done of three reads a third, not 99%") {
    std::vector<api::CopyRecord> entries{entry(0, "Ready", TransferCounts{10, 10, 1000, 1000}),
                                         entry(1, "Downloading", std::nullopt)};  // replica 2 not placed yet
    auto c = volumes::volume_counts(entries, "cfg-a", 3);
    REQUIRE(c);
    CHECK(*c == TransferCounts{10, 30, 1000, 3000});
    CHECK(volumes::progress_text(std::vector<volumes::VolumeProgress>{{c, false}}) == "33%");
    api::VolumeStatus st;
    volumes::set_volume_counts(st, c);
    CHECK(st.bytesTotal == 3000);  // every replica's bytes
    entries[1] = entry(1, "Ready", TransferCounts{10, 10, 1000, 1000});
    entries.push_back(entry(2, "Downloading", TransferCounts{9, 10, 990, 1000}));
    c = volumes::volume_counts(entries, "cfg-a", 3);
    CHECK(volumes::progress_text(std::vector<volumes::VolumeProgress>{{c, false}}) == "99%");  // the last one nearly done
}

TEST_CASE("an entry with partial or inconsistent counts (edited by hand) has none") {
    auto e = entry(0, "Downloading", TransferCounts{1, 2, 3, 4});
    CHECK(volumes::recorded_counts(e));
    e.bytesTotal.reset();
    CHECK_FALSE(volumes::recorded_counts(e));
    e = entry(0, "Downloading", TransferCounts{1, 2, 3, 4});
    e.bytesDone = 5;
    CHECK_FALSE(volumes::recorded_counts(e));
}

TEST_CASE("the Progress column: floored share of bytes, 100% only when every copying volume is complete") {
    using volumes::VolumeProgress;
    CHECK(volumes::progress_text(std::vector<VolumeProgress>{}) == "");
    CHECK(volumes::progress_text(std::vector<VolumeProgress>{{TransferCounts{1, 4, 370, 1000}, false}}) == "37%");
    // Two volumes: bytes summed over both.
    CHECK(volumes::progress_text(std::vector<VolumeProgress>{{TransferCounts{4, 4, 1000, 1000}, true},
                                                             {TransferCounts{0, 4, 0, 1000}, false}}) == "50%");
    // Every byte in but not every copy Ready yet (the last file committing): still below 100%.
    CHECK(volumes::progress_text(std::vector<VolumeProgress>{{TransferCounts{4, 4, 1000, 1000}, false}}) == "99%");
    CHECK(volumes::progress_text(std::vector<VolumeProgress>{{TransferCounts{999, 1000, 999'999, 1'000'000}, false}}) == "99%");
    // Nothing reported yet.
    CHECK(volumes::progress_text(std::vector<VolumeProgress>{{std::nullopt, false}}) == "0%");
    // Only empty files: by file count.
    CHECK(volumes::progress_text(std::vector<VolumeProgress>{{TransferCounts{1, 4, 0, 0}, false}}) == "25%");
    // Complete, even for a data mover that reports no counts (Pachyderm).
    CHECK(volumes::progress_text(std::vector<VolumeProgress>{{std::nullopt, true}, {TransferCounts{4, 4, 9, 9}, true}}) ==
          "100%");
}
