// The copy planner's contract (include/vck/volumes/copy_planner.hpp), step by step, with
// the cluster played by hand: no API server, no socket.
#include <vck/volumes/copy_planner.hpp>

#include <doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace vck;
using volumes::CopyPhase;
using std::chrono::seconds;

const auto t0 = std::chrono::system_clock::from_time_t(2'000'000'000);

api::Node node(std::string name, std::string ready = "True", std::chrono::system_clock::time_point since = t0 - seconds(3600)) {
    api::Node n;
    n.metadata.name = name;
    n.metadata.labels["kubernetes.io/hostname"] = name;
    api::NodeStatus st;
    api::Condition c;
    c.type = "Ready";
    c.status = std::move(ready);
    c.lastTransitionTime = api::format_rfc3339(since);
    st.conditions.push_back(c);
    n.status = st;
    return n;
}

std::vector<api::Node> three_nodes() { return {node("node-1"), node("node-2"), node("node-3")}; }

api::VolumeConfig volume(std::int64_t replicas, std::string source = "s3://data/set/") {
    api::VolumeConfig vc;
    vc.id = "vol1";
    vc.replicas = replicas;
    vc.sourceType = "S3";
    vc.options["sourceURL"] = std::move(source);
    return vc;
}

/// One volume's world: its spec, record, pods and the status' serving config, advanced one
/// planner pass at a time with the cluster's answers applied by the test.
struct World {
    api::VolumeConfig vc;
    std::vector<api::Node> nodes = three_nodes();
    std::vector<api::CopyRecord> record;
    std::map<std::string, api::Pod> pods;
    std::string serving;
    bool in_spec = true;
    bool deleting = false;
    /// Deleted pods stay, Terminating, until confirm_deletions() (their containers stopping).
    bool graceful = false;
    std::string invalid;
    volumes::CopyPlannerOptions opts;
    std::chrono::system_clock::time_point now = t0;
    /// What the running download pods last reported (the reconciler's reading of their logs).
    std::map<std::string, vck::fetch::TransferCounts> reported;

    explicit World(api::VolumeConfig v) : vc(std::move(v)) { opts.node_lost_timeout = seconds(300); }

    volumes::VolumeCopyPlan pass() {
        volumes::VolumeCopyInput in;
        in.vm_uid = "uid-1";
        in.volume_id = vc.id;
        in.label_key = "vck.intelai.org/ns.vm.vol1";
        in.deleting = deleting;
        in.invalid = invalid;
        if (in_spec && invalid.empty()) {
            in.config = &vc;
            handlers::CopyLayout l;
            l.replicas = static_cast<std::size_t>(vc.replicas);
            l.where = handlers::check_data_path("/var/datasets", {"/var/datasets"});
            l.config = handlers::naming::source_config_digest(vc);
            in.layout = l;
        }
        in.serving = serving;
        in.entries = record;
        for (const auto& [name, p] : pods) in.pods[name] = &p;
        in.progress = [this](const api::Pod& p) -> std::optional<vck::fetch::TransferCounts> {
            auto it = reported.find(p.metadata.name);
            return it == reported.end() ? std::nullopt : std::optional(it->second);
        };
        auto plan = volumes::plan_volume_copies(in, nodes, now, opts);
        // What the reconciler does with it: record, labels, pods.
        record = plan.entries;
        for (const auto& name : plan.pods_to_delete) {
            if (!graceful) pods.erase(name);
            else if (auto it = pods.find(name); it != pods.end()) it->second.metadata.deletionTimestamp = api::format_rfc3339(now);
        }
        for (const auto& d : plan.downloads) {
            api::Pod p;
            p.metadata.name = d.pod_name;
            p.spec.nodeName = d.node;
            p.metadata.annotations[std::string(handlers::copy_path_annotation)] = d.path;
            p.metadata.annotations[std::string(handlers::copy_role_annotation)] = "download";
            p.status = api::PodStatus{};
            p.status->phase = "Pending";
            pods[d.pod_name] = p;
        }
        for (const auto& c : plan.cleanups) {
            api::Pod p;
            p.metadata.name = c.pod_name;
            p.spec.nodeName = c.node;
            p.metadata.annotations[std::string(handlers::copy_role_annotation)] = "cleanup";
            p.status = api::PodStatus{};
            p.status->phase = "Pending";
            pods[c.pod_name] = p;
        }
        labels = plan.labels;
        if (plan.outcome.status.nodeAffinity)
            serving = plan.outcome.status.nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution->nodeSelectorTerms[0]
                          .matchExpressions[0].values[0];
        else if (in_spec && invalid.empty())
            serving.clear();
        last = plan;
        return plan;
    }

    /// The kubelet's confirmation: terminating pods leave the API.
    void confirm_deletions() {
        std::erase_if(pods, [](const auto& kv) { return !kv.second.metadata.deletionTimestamp.empty(); });
    }

    /// Every pod in `phase` (the kubelet's part).
    void finish_pods(const std::string& phase, const std::string& role = "") {
        for (auto& [name, p] : pods)
            if (role.empty() || p.metadata.annotations[std::string(handlers::copy_role_annotation)] == role) p.status->phase = phase;
    }

    std::vector<api::CopyRecord> copies(CopyPhase phase) const {
        std::vector<api::CopyRecord> out;
        for (const auto& e : record)
            if (volumes::copy_phase(e) == phase) out.push_back(e);
        return out;
    }
    std::set<std::string> nodes_of(CopyPhase phase) const {
        std::set<std::string> out;
        for (const auto& e : copies(phase)) out.insert(e.node);
        return out;
    }
    /// The user's view: every node the status selects holds a Ready copy of the config it names.
    bool status_selects_only_complete_copies() const {
        for (const auto& [n, value] : labels) {
            if (value.empty() || value != serving) continue;
            bool ok = std::any_of(record.begin(), record.end(), [&](const auto& e) {
                return e.node == n && e.config == serving && volumes::copy_phase(e) == CopyPhase::Ready;
            });
            if (!ok) return false;
        }
        return true;
    }

    std::map<std::string, std::string> labels;
    volumes::VolumeCopyPlan last;
};

/// Runs passes with every pod succeeding until nothing is left to do (at most 20).
void converge(World& w) {
    for (int i = 0; i < 20; ++i) {
        auto p = w.pass();
        REQUIRE(w.status_selects_only_complete_copies());
        if (p.settled) return;
        w.finish_pods("Succeeded");
    }
    FAIL("did not settle");
}

} // namespace

TEST_CASE("a new copy is recorded Downloading, in a directory of its config, before its pod exists") {
    World w(volume(2));
    auto p = w.pass();
    REQUIRE(w.record.size() == 2);
    CHECK(w.copies(CopyPhase::Downloading).size() == 2);
    CHECK(p.downloads.size() == 2);
    auto digest = handlers::naming::source_config_digest(w.vc);
    for (const auto& e : w.record) {
        CHECK(e.config == digest);
        CHECK(e.path.starts_with("/var/datasets/vck-resource-"));
        CHECK(e.path.ends_with("-" + digest));
        CHECK(e.attempts == 1);
    }
    CHECK(w.nodes_of(CopyPhase::Downloading).size() == 2);  // distinct nodes
    CHECK(p.outcome.phase == handlers::VolumePhase::Pending);
    CHECK_FALSE(p.outcome.status.nodeAffinity.has_value());  // nothing usable yet
}

TEST_CASE("a Succeeded pod makes its copy Ready; the status names its directory and selects its config's label") {
    World w(volume(2));
    w.pass();
    w.finish_pods("Succeeded");
    auto p = w.pass();
    CHECK(w.copies(CopyPhase::Ready).size() == 2);
    CHECK(p.outcome.phase == handlers::VolumePhase::Ready);
    CHECK(p.outcome.status.message == "success");
    auto digest = handlers::naming::source_config_digest(w.vc);
    REQUIRE(p.outcome.status.volumeSource);
    CHECK(p.outcome.status.volumeSource->hostPath->path == w.record[0].path);
    CHECK(w.serving == digest);
    for (const auto& n : w.nodes_of(CopyPhase::Ready)) CHECK(w.labels[n] == digest);
    CHECK(std::count_if(w.labels.begin(), w.labels.end(), [](const auto& kv) { return !kv.second.empty(); }) == 2);
    CHECK(p.settled);
}

TEST_CASE("replicas go to distinct eligible nodes only: a cordoned, a tainted and a NotReady node get none") {
    World w(volume(1));
    w.nodes = {node("cordoned"), node("tainted"), node("notready", "False", t0), node("good")};
    w.nodes[0].spec.unschedulable = true;
    w.nodes[1].spec.taints.push_back(api::Taint{"dedicated", "gpu", "NoSchedule", ""});
    w.pass();
    CHECK(w.nodes_of(CopyPhase::Downloading) == std::set<std::string>{"good"});

    SUBCASE("a tolerated taint makes the node eligible") {
        World t(volume(2));
        t.nodes = w.nodes;
        t.vc.tolerations.push_back(api::Toleration{"dedicated", "Equal", "gpu", "NoSchedule", std::nullopt});
        t.pass();
        CHECK(t.nodes_of(CopyPhase::Downloading) == std::set<std::string>{"good", "tainted"});
    }
}

TEST_CASE("more replicas than eligible nodes fail the volume with the original's message, counting eligible nodes, recording nothing") {
    World w(volume(3));
    w.nodes[0].spec.unschedulable = true;
    auto p = w.pass();
    CHECK(p.outcome.phase == handlers::VolumePhase::Failed);
    CHECK(p.outcome.status.message.starts_with("replicas [3] greater than number of nodes [2]"));
    CHECK(p.outcome.status.message.find("cordoned") != std::string::npos);
    CHECK(w.record.empty());
    CHECK(p.downloads.empty());

    // Nodes change (uncordoned): the same volume is placed without anyone touching it.
    w.nodes[0].spec.unschedulable = false;
    w.pass();
    CHECK(w.nodes_of(CopyPhase::Downloading).size() == 3);
}

TEST_CASE("a changed config downloads beside the old one; status keeps the old until every new replica is Ready, then the old copies go") {
    World w(volume(2));
    converge(w);
    auto old_digest = w.serving;
    auto old_path = w.record[0].path;

    w.vc.options["sourceURL"] = "s3://data/other/";
    auto new_digest = handlers::naming::source_config_digest(w.vc);
    REQUIRE(new_digest != old_digest);
    auto p = w.pass();
    CHECK(w.serving == old_digest);  // still the old data
    CHECK(p.outcome.status.volumeSource->hostPath->path == old_path);
    CHECK(w.copies(CopyPhase::Ready).size() == 2);
    CHECK(w.copies(CopyPhase::Downloading).size() == 2);
    for (const auto& e : w.copies(CopyPhase::Downloading)) CHECK(e.path != old_path);
    CHECK(w.status_selects_only_complete_copies());

    // One new replica done: nothing switches yet.
    auto first_new = w.copies(CopyPhase::Downloading)[0];
    w.pods[handlers::naming::copy_pod_name("uid-1", "vol1", first_new.node, new_digest, 1)].status->phase = "Succeeded";
    w.pass();
    CHECK(w.serving == old_digest);
    CHECK(w.status_selects_only_complete_copies());
    CHECK(w.copies(CopyPhase::Removing).empty());

    // Both done: status switches, then the old copies are removed on exactly their nodes.
    w.finish_pods("Succeeded", "download");
    p = w.pass();
    CHECK(w.serving == new_digest);
    CHECK(p.outcome.status.volumeSource->hostPath->path != old_path);
    CHECK(w.status_selects_only_complete_copies());
    auto removing = w.copies(CopyPhase::Removing);
    CHECK(removing.size() == 2);
    for (const auto& e : removing) {
        CHECK(e.config == old_digest);
        CHECK(w.labels[e.node] != old_digest);  // the label goes before the data
    }
    converge(w);
    CHECK(w.record.size() == 2);
    for (const auto& e : w.record) CHECK(e.config == new_digest);
}

TEST_CASE("replicas 2 -> 1 removes the extra copy and its label; 1 -> 2 adds one on another node") {
    World w(volume(2));
    converge(w);
    auto nodes_before = w.nodes_of(CopyPhase::Ready);
    w.vc.replicas = 1;
    auto p = w.pass();
    REQUIRE(w.copies(CopyPhase::Removing).size() == 1);
    auto gone = w.copies(CopyPhase::Removing)[0];
    CHECK(gone.replica == 1);
    CHECK(w.labels[gone.node].empty());
    CHECK(p.outcome.phase == handlers::VolumePhase::Ready);  // replica 0 still serves
    converge(w);
    CHECK(w.record.size() == 1);
    CHECK(w.record[0].replica == 0);

    w.vc.replicas = 2;
    w.pass();
    CHECK(w.copies(CopyPhase::Downloading).size() == 1);
    CHECK(w.copies(CopyPhase::Downloading)[0].node != w.record[0].node);
    converge(w);
    CHECK(w.nodes_of(CopyPhase::Ready).size() == 2);
}

TEST_CASE("a removed volume's copies each go through a cleanup pod and leave the record only when it succeeded") {
    World w(volume(2));
    converge(w);
    w.in_spec = false;
    auto p = w.pass();
    CHECK(w.copies(CopyPhase::Removing).size() == 2);
    for (const auto& [n, v] : w.labels) CHECK(v.empty());
    // The finished download pods go first; cleanup pods follow once they are gone.
    CHECK(p.pods_to_delete.size() == 2);
    CHECK(p.cleanups.empty());
    p = w.pass();
    CHECK(p.cleanups.size() == 2);
    CHECK(w.record.size() == 2);
    w.pass();  // still running
    CHECK(w.record.size() == 2);
    w.finish_pods("Failed", "cleanup");
    p = w.pass();
    CHECK(w.record.size() == 2);  // a failed cleanup keeps the entry (and is made again)
    CHECK(p.pods_to_delete.size() == 2);
    w.pass();
    w.finish_pods("Succeeded", "cleanup");
    w.pass();
    CHECK(w.record.empty());
}

TEST_CASE("a copy's cleanup waits until its download pod has left the API, not only until it is deleted") {
    World w(volume(1));
    w.pass();  // recorded, its download pod made and still running
    REQUIRE(w.copies(CopyPhase::Downloading).size() == 1);
    w.graceful = true;
    w.in_spec = false;
    auto p = w.pass();
    CHECK(p.pods_to_delete.size() == 1);
    // Terminating: its container may still be writing into the directory.
    for (int i = 0; i < 3; ++i) {
        p = w.pass();
        CHECK(p.cleanups.empty());
        CHECK(w.copies(CopyPhase::Removing).size() == 1);
    }
    w.confirm_deletions();
    p = w.pass();
    CHECK(p.cleanups.size() == 1);
}

TEST_CASE("a deleted node loses its copy: a replacement goes to another node; the stale copy is removed when the node returns") {
    World w(volume(2));
    converge(w);
    auto lost_node = *w.nodes_of(CopyPhase::Ready).begin();
    auto kept = w.nodes;
    std::erase_if(w.nodes, [&](const auto& n) { return n.metadata.name == lost_node; });
    auto p = w.pass();
    REQUIRE(w.copies(CopyPhase::Lost).size() == 1);
    CHECK(w.copies(CopyPhase::Lost)[0].node == lost_node);
    CHECK(p.warnings.size() == 1);
    CHECK(p.outcome.phase == handlers::VolumePhase::Pending);
    CHECK(p.outcome.status.message.find(lost_node) != std::string::npos);
    REQUIRE(w.copies(CopyPhase::Downloading).size() == 1);
    CHECK(w.copies(CopyPhase::Downloading)[0].node != lost_node);
    CHECK(w.status_selects_only_complete_copies());
    w.finish_pods("Succeeded", "download");
    p = w.pass();
    CHECK(p.outcome.phase == handlers::VolumePhase::Ready);
    CHECK(w.copies(CopyPhase::Lost).size() == 1);  // its data may come back with the node

    w.nodes = kept;  // the node returns
    w.pass();
    CHECK(w.copies(CopyPhase::Removing).size() == 1);
    converge(w);
    CHECK(w.record.size() == 2);
    CHECK(w.nodes_of(CopyPhase::Ready).size() == 2);
}

TEST_CASE("a node NotReady past the threshold loses its copy; before the threshold the copy stays and a re-check is due") {
    World w(volume(1));
    converge(w);
    auto n = w.record[0].node;
    for (auto& nd : w.nodes)
        if (nd.metadata.name == n) nd = node(n, "Unknown", w.now - seconds(60));
    auto p = w.pass();
    CHECK(w.copies(CopyPhase::Ready).size() == 1);
    REQUIRE(p.due);
    CHECK(*p.due > w.now);
    w.now += seconds(300);
    w.pass();
    CHECK(w.copies(CopyPhase::Lost).size() == 1);
    CHECK(w.copies(CopyPhase::Downloading).size() == 1);
    CHECK(w.copies(CopyPhase::Downloading)[0].node != n);
}

TEST_CASE("a node that has just gone NotReady (0 s into it) is looked at again when the threshold has passed") {
    World w(volume(1));
    converge(w);
    auto n = w.record[0].node;
    for (auto& nd : w.nodes)
        if (nd.metadata.name == n) nd = node(n, "False", w.now);
    auto p = w.pass();
    CHECK(w.copies(CopyPhase::Ready).size() == 1);
    REQUIRE(p.due);  // no node event may come until then: the re-check is the only way on
    CHECK(*p.due <= w.now + w.opts.node_lost_timeout + seconds(1));
    CHECK(*p.due > w.now + w.opts.node_lost_timeout);
    w.now = *p.due;
    w.pass();
    CHECK(w.copies(CopyPhase::Lost).size() == 1);
}

TEST_CASE("a failed download is retried with backoff until the attempts run out, then the volume is Failed with the pod's message") {
    World w(volume(1));
    w.opts.max_download_attempts = 2;
    w.pass();
    auto& first = w.pods.begin()->second;
    first.status->phase = "Failed";
    api::ContainerStatus cs;
    cs.name = "fetch";
    cs.state = api::ContainerState{};
    cs.state->terminated = api::ContainerStateTerminated{};
    cs.state->terminated->exitCode = 3;
    cs.state->terminated->message = "NoSuchBucket";
    first.status->containerStatuses.push_back(cs);
    auto p = w.pass();
    REQUIRE(w.copies(CopyPhase::Downloading).size() == 1);
    CHECK(w.record[0].attempts == 2);
    CHECK(p.downloads.empty());  // not before its retry time
    REQUIRE(p.due);
    CHECK(p.outcome.status.message.find("NoSuchBucket") != std::string::npos);
    w.now = *p.due;
    p = w.pass();
    REQUIRE(p.downloads.size() == 1);
    for (auto& [name, pod] : w.pods) {
        pod.status->phase = "Failed";
        pod.status->containerStatuses = {cs};
    }
    p = w.pass();
    CHECK(w.copies(CopyPhase::Failed).size() == 1);
    CHECK(p.outcome.phase == handlers::VolumePhase::Failed);
    CHECK(p.outcome.status.message.starts_with("error during data download using pod "));
    CHECK(p.outcome.status.message.find("NoSuchBucket") != std::string::npos);
}

TEST_CASE("while the VolumeManager is deleted, copies on nodes that no longer exist are forgotten, the others removed") {
    World w(volume(2));
    converge(w);
    auto gone = *w.nodes_of(CopyPhase::Ready).begin();
    std::erase_if(w.nodes, [&](const auto& n) { return n.metadata.name == gone; });
    w.in_spec = false;
    w.deleting = true;
    auto p = w.pass();
    CHECK(p.warnings.size() == 1);
    CHECK(w.record.size() == 1);
    converge(w);
    CHECK(w.record.empty());
}

TEST_CASE("a pod the record does not name that wrote into a recorded directory is waited for before the cleanup") {
    World w(volume(1));
    converge(w);
    auto e = w.record[0];
    api::Pod legacy;
    legacy.metadata.name = "vck-vol1-legacy-r0";
    legacy.spec.nodeName = e.node;
    legacy.status = api::PodStatus{};
    legacy.status->phase = "Running";
    w.pods[legacy.metadata.name] = legacy;
    w.in_spec = false;
    auto p = w.pass();
    CHECK(std::find(p.pods_to_delete.begin(), p.pods_to_delete.end(), "vck-vol1-legacy-r0") != p.pods_to_delete.end());
    CHECK(p.cleanups.empty());
}

TEST_CASE("a volume edited into something invalid keeps its copies and their labels, and fails with the reason") {
    World w(volume(2));
    converge(w);
    auto before = w.record;
    auto serving = w.serving;
    w.invalid = "dataPath \"/etc\" is not under an allowed data root";
    auto p = w.pass();
    CHECK(p.outcome.phase == handlers::VolumePhase::Failed);
    CHECK(p.outcome.status.message == w.invalid);
    CHECK(w.copies(CopyPhase::Ready).size() == 2);
    CHECK(w.serving == serving);  // what is there stays usable
    CHECK(p.downloads.empty());
    CHECK(p.cleanups.empty());
}

TEST_CASE("running downloads record the counts their pods report; the volume's status sums its replicas'") {
    World w(volume(2));
    w.pass();
    w.finish_pods("Running");
    auto plan = w.pass();
    CHECK_FALSE(w.record[0].bytesDone);  // nothing reported yet: no counts, no guess
    CHECK_FALSE(plan.outcome.status.bytesDone);
    CHECK(plan.progress.counts == std::nullopt);
    std::vector<std::string> names;
    for (const auto& [name, p] : w.pods) names.push_back(name);
    REQUIRE(names.size() == 2);
    w.reported[names[0]] = {2, 10, 300, 1000};
    w.reported[names[1]] = {5, 10, 600, 1000};
    plan = w.pass();
    std::int64_t bytes = 0;
    for (const auto& e : w.record) {
        REQUIRE(e.bytesDone);
        CHECK(e.bytesTotal == 1000);
        bytes += *e.bytesDone;
    }
    CHECK(bytes == 900);
    CHECK(plan.outcome.status.bytesDone == 900);
    CHECK(plan.outcome.status.bytesTotal == 2000);
    CHECK(plan.outcome.status.filesDone == 7);
    CHECK_FALSE(plan.progress.complete);
    CHECK(volumes::progress_text(std::vector<volumes::VolumeProgress>{plan.progress}) == "45%");
    // An older line read late does not move a copy backwards.
    w.reported[names[0]] = {1, 10, 100, 1000};
    plan = w.pass();
    CHECK(plan.outcome.status.bytesDone == 900);
}

TEST_CASE("a finished download records its summary's exact totals and the volume reads 100%") {
    World w(volume(1));
    w.pass();
    REQUIRE(w.pods.size() == 1);
    auto& pod = w.pods.begin()->second;
    w.reported[pod.metadata.name] = {3, 10, 512, 4096};
    pod.status->phase = "Running";
    w.pass();
    REQUIRE(w.record.at(0).bytesDone == 512);
    // The kubelet: the fetch container exited 0 with vck-fetch's summary as its termination message.
    api::Container c;
    c.name = "fetch";
    c.command = {"vck-fetch"};
    c.args = {"fetch", "s3://data/set/", "/vck/data"};
    pod.spec.containers = {c};
    api::ContainerStatus cs;
    cs.name = "fetch";
    cs.state = api::ContainerState{};
    cs.state->terminated = api::ContainerStateTerminated{};
    cs.state->terminated->exitCode = 0;
    cs.state->terminated->message =
        R"({"command":"fetch","files":8,"skipped":2,"bytes":3000,"skippedBytes":1096,"seconds":1.5,"errors":0,"exitCode":0})";
    pod.status->containerStatuses = {cs};
    pod.status->phase = "Succeeded";
    auto plan = w.pass();
    REQUIRE(w.copies(CopyPhase::Ready).size() == 1);
    const auto& e = w.record.at(0);
    CHECK(e.filesDone == 10);
    CHECK(e.filesTotal == 10);
    CHECK(e.bytesDone == 4096);
    CHECK(e.bytesTotal == 4096);
    CHECK(plan.outcome.status.bytesTotal == 4096);
    CHECK(plan.progress.complete);
    CHECK(volumes::progress_text(std::vector<volumes::VolumeProgress>{plan.progress}) == "100%");
}

namespace {
void set_disk_pressure(api::Node& n, std::string status) {
    api::Condition c;
    c.type = "DiskPressure";
    c.status = std::move(status);
    c.lastTransitionTime = api::format_rfc3339(t0);
    n.status->conditions.push_back(c);
}
} // namespace

TEST_CASE("a node under DiskPressure gets no new copy, and counts as not eligible with that reason") {
    World w(volume(3));
    set_disk_pressure(w.nodes[0], "True");
    set_disk_pressure(w.nodes[1], "False");
    CHECK(volumes::ineligibility(w.nodes[0], w.vc) == "under disk pressure");
    CHECK(volumes::ineligibility(w.nodes[1], w.vc).empty());
    auto p = w.pass();
    CHECK(p.outcome.phase == handlers::VolumePhase::Failed);
    CHECK(p.outcome.status.message.starts_with("replicas [3] greater than number of nodes [2]"));
    CHECK(p.outcome.status.message.find("1 under disk pressure") != std::string::npos);
    CHECK(w.record.empty());
}

TEST_CASE("a Ready copy marked Removing by an eviction is cleaned up, and its replica placed on another node not under pressure") {
    World w(volume(1));
    w.nodes = {node("full"), node("pressured-too"), node("roomy")};
    w.vc.nodeAffinity.reset();
    // Place it on "full" alone, then make it Ready.
    w.nodes[1].spec.unschedulable = true;
    w.nodes[2].spec.unschedulable = true;
    converge(w);
    REQUIRE(w.nodes_of(CopyPhase::Ready) == std::set<std::string>{"full"});
    w.nodes[1].spec.unschedulable = false;
    w.nodes[2].spec.unschedulable = false;
    set_disk_pressure(w.nodes[0], "True");
    set_disk_pressure(w.nodes[1], "True");

    // What the eviction controller writes: the entry Removing, with its message.
    w.record[0].phase = "Removing";
    w.record[0].message = "evicted: node full under DiskPressure (last used never)";
    w.pass();  // its finished download pod goes first (a writer of the directory)
    CHECK(w.nodes_of(CopyPhase::Downloading) == std::set<std::string>{"roomy"});
    CHECK(w.labels["full"].empty());  // the status no longer selects the evicted copy
    auto p = w.pass();
    REQUIRE(p.cleanups.size() == 1);
    CHECK(p.cleanups[0].node == "full");
    w.finish_pods("Succeeded");
    w.pass();
    CHECK(w.copies(CopyPhase::Removing).empty());  // its directory removed: the entry went
    converge(w);
    CHECK(w.nodes_of(CopyPhase::Ready) == std::set<std::string>{"roomy"});
    CHECK(w.last.outcome.phase == handlers::VolumePhase::Ready);
}
