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
    /// Users' pods injected with the volume (jobs reading or writing its copies).
    std::map<std::string, api::Pod> jobs;
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
    /// An output volume, and the VolumeManager's discard-output annotation.
    bool output = false;
    bool discard_output = false;
    /// Peer fill: the layout's groups (handlers/peer_fill.hpp), and each download's plan.
    std::vector<std::string> peer_groups;
    std::map<std::string, handlers::PeerPlan> peer_plans;
    /// Placement that knows the disk: the bytes of the copies on each node (other volumes'),
    /// as volumes/node_disk_ledger.hpp counts them; off unless a test turns it on.
    bool disk_aware = false;
    std::map<std::string, std::int64_t> used;
    /// Shared copies (volumes/shared_copies.hpp): this VolumeManager's uid and name, whether
    /// its volume shares, the other VolumeManagers of the same config (their records are what
    /// `others` answers), and what its own credentials listed.
    std::string uid = "uid-1";
    std::string holder = "ns/vm";
    bool shares = false;
    std::vector<const World*> neighbours;
    std::optional<std::string> proven;
    std::string proof_failure;

    explicit World(api::VolumeConfig v) : vc(std::move(v)) { opts.node_lost_timeout = seconds(300); }

    volumes::VolumeCopyPlan pass() {
        volumes::VolumeCopyInput in;
        in.vm_uid = uid;
        in.volume_id = vc.id;
        in.label_key = "vck.intelai.org/ns.vm.vol1";
        in.deleting = deleting;
        in.invalid = invalid;
        in.output = output;
        in.discard_output = discard_output;
        if (in_spec && invalid.empty()) {
            in.config = &vc;
            handlers::CopyLayout l;
            l.replicas = static_cast<std::size_t>(vc.replicas);
            l.where = handlers::check_data_path("/var/datasets", {"/var/datasets"});
            l.config = handlers::naming::source_config_digest(vc);
            l.peer_groups = peer_groups;
            in.layout = l;
        }
        in.serving = serving;
        in.entries = record;
        for (const auto& [name, p] : pods) in.pods[name] = &p;
        for (const auto& [name, p] : jobs) in.users.push_back(&p);
        in.progress = [this](const api::Pod& p) -> std::optional<vck::fetch::TransferCounts> {
            auto it = reported.find(p.metadata.name);
            return it == reported.end() ? std::nullopt : std::optional(it->second);
        };
        if (disk_aware) in.node_used = [this](const std::string& n) { return used[n]; };
        if (shares && in.layout) in.shared_path = handlers::naming::shared_copy_directory("/var/datasets", in.layout->config);
        in.others = [this](const std::string& node, const std::string& path) { return others(node, path); };
        in.proven_digest = proven;
        in.proof_failure = proof_failure;
        for (const World* n : neighbours)
            for (const auto& [name, j] : n->jobs) in.users.push_back(&j);
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
            p.metadata.creationTimestamp = api::format_rfc3339(now);
            handlers::apply_peer_plan(p, d.peer);
            peer_plans[d.pod_name] = d.peer;
            p.status = api::PodStatus{};
            p.status->phase = "Pending";
            pods[d.pod_name] = p;
        }
        for (const auto& u : plan.uploads) {
            api::Pod p;
            p.metadata.name = u.pod_name;
            p.spec.nodeName = u.node;
            p.metadata.annotations[std::string(handlers::copy_path_annotation)] = u.path;
            p.metadata.annotations[std::string(handlers::copy_role_annotation)] = "upload";
            p.status = api::PodStatus{};
            p.status->phase = "Pending";
            pods[u.pod_name] = p;
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
        all_events.insert(all_events.end(), plan.output_events.begin(), plan.output_events.end());
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

    /// A job on `e`'s node mounting its directory (as pod injection makes it), Running.
    api::Pod& job(const std::string& name, const api::CopyRecord& e) {
        api::Pod p;
        p.metadata.name = name;
        p.spec.nodeName = e.node;
        api::Volume v;
        v.name = "vck-vol1";
        v.hostPath = api::HostPathVolumeSource{e.path, "Directory"};
        p.spec.volumes.push_back(v);
        p.status = api::PodStatus{};
        p.status->phase = "Running";
        return jobs[name] = p;
    }
    /// Every event of `reason` the passes so far asked for.
    std::vector<std::string> events(const std::string& reason) const {
        std::vector<std::string> out;
        for (const auto& e : all_events)
            if (e.reason == reason) out.push_back(e.message);
        return out;
    }

    std::vector<volumes::SharedHold> others(const std::string& node, const std::string& path) const {
        std::vector<volumes::SharedHold> out;
        for (const World* n : neighbours)
            for (const auto& e : n->record)
                if (e.node == node && e.path == path) out.push_back({n->holder, n->uid, e});
        return out;
    }

    /// Every download pod ends whole, its summary naming the listing it copied.
    /// The kubelet: `pod`'s fetch container exited 0 with vck-fetch's `summary` as its
    /// termination message.
    static void finish_fetch(api::Pod& pod, const std::string& summary) {
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
        cs.state->terminated->message = summary;
        pod.status->containerStatuses = {cs};
        pod.status->phase = "Succeeded";
    }

    /// Every download pod finished, its listing's digest `listing_digest`.
    void finish_fetches(const std::string& listing_digest) {
        for (auto& [name, pod] : pods)
            if (pod.metadata.annotations[std::string(handlers::copy_role_annotation)] == "download")
                finish_fetch(pod, R"({"command":"fetch","files":4,"skipped":0,"bytes":4000,"skippedBytes":0,)"
                                  R"("seconds":1,"errors":0,"exitCode":0,"listingDigest":")" +
                                      listing_digest + R"("})");
    }

    std::map<std::string, std::string> labels;
    volumes::VolumeCopyPlan last;
    std::vector<volumes::OutputEvent> all_events;
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

TEST_CASE("placement knows the disk: copies go only where they fit, and data that fits on too few nodes says so before any download") {
    constexpr std::int64_t Mi = 1024 * 1024;
    World w(volume(2));
    w.vc.capacity = "500Mi";
    w.disk_aware = true;
    w.nodes = {node("large-1"), node("small"), node("large-2")};
    w.nodes[0].status->allocatable["ephemeral-storage"] = "1Gi";
    w.nodes[1].status->allocatable["ephemeral-storage"] = "100Mi";
    w.nodes[2].status->allocatable["ephemeral-storage"] = "1Gi";
    w.pass();
    CHECK(w.nodes_of(CopyPhase::Downloading) == std::set<std::string>{"large-1", "large-2"});

    SUBCASE("replicas 3: failed with where the data fits, nothing recorded or downloaded") {
        World three = w;
        three.record.clear();
        three.pods.clear();
        three.vc.replicas = 3;
        auto p = three.pass();
        CHECK(p.outcome.phase == handlers::VolumePhase::Failed);
        CHECK(p.outcome.status.message ==
              "replicas [3] greater than number of nodes [2]; the data (500.0 MiB) fits on 2 nodes "
              "(not eligible: 1 without room for 500.0 MiB)");
        CHECK(three.record.empty());
        CHECK(p.downloads.empty());
    }
    SUBCASE("the copies already on a node count, under the threshold (90% of allocatable by default)") {
        World full = w;
        full.record.clear();
        full.pods.clear();
        full.used["large-2"] = 500 * Mi;  // 500 + 500 MiB > 0.9 GiB
        auto p = full.pass();
        CHECK(p.outcome.status.message.find("fits on 1 node (") != std::string::npos);
        CHECK(full.record.empty());
        full.opts.disk_fill_threshold = 1.0;  // 1000 MiB of 1024: room again
        full.pass();
        CHECK(full.nodes_of(CopyPhase::Downloading) == std::set<std::string>{"large-1", "large-2"});
    }
    SUBCASE("a size listed by a copy of the same data wins over capacity") {
        converge(w);
        for (auto& e : w.record) e.bytesTotal = 50 * Mi;  // the downloads listed 50 MiB
        w.used["large-1"] = w.used["large-2"] = 1024 * Mi;  // other data fills the large nodes since
        w.vc.replicas = 3;
        w.pass();
        CHECK(w.nodes_of(CopyPhase::Downloading) == std::set<std::string>{"small"});  // 50 MiB fits in 90 of 100
    }
    SUBCASE("a node that reports no allocatable storage is not limited") {
        World unknown(volume(1));
        unknown.vc.capacity = "500Ti";
        unknown.disk_aware = true;
        unknown.nodes = {node("plain")};
        unknown.pass();
        CHECK(unknown.nodes_of(CopyPhase::Downloading) == std::set<std::string>{"plain"});
    }
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

TEST_CASE("a changed config's download on a node that holds the old config's Ready copy takes its unchanged files from it") {
    World w(volume(2));
    converge(w);
    std::map<std::string, std::string> old_by_node;
    for (const auto& e : w.record) old_by_node[e.node] = e.path;

    w.vc.options["sourceURL"] = "s3://data/other/";
    w.vc.replicas = 3;  // the third replica lands on a node with no older copy
    auto p = w.pass();
    REQUIRE(p.downloads.size() == 3);
    int reusing = 0;
    for (const auto& t : p.downloads) {
        auto old = old_by_node.find(t.node);
        if (old == old_by_node.end()) {
            CHECK(t.reuse_from.empty());
            continue;
        }
        CHECK(t.reuse_from == old->second);
        CHECK(t.reuse_from != t.path);
        ++reusing;
    }
    CHECK(reusing == 2);

    // A copy being removed is nothing to build on: once the new copies are Ready the old go,
    // and a later download (a retry elsewhere) names none of them.
    w.finish_pods("Succeeded", "download");
    w.pass();
    for (const auto& e : w.copies(CopyPhase::Removing)) CHECK(old_by_node[e.node] == e.path);
    w.vc.options["sourceURL"] = "s3://data/third/";
    p = w.pass();
    for (const auto& t : p.downloads)
        for (const auto& [n, old] : old_by_node) CHECK(t.reuse_from != old);
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

TEST_CASE("a finished cleanup pod of an earlier removal of a directory never counts for a later removal of it") {
    World w(volume(1));
    converge(w);
    const auto first_node = w.record.at(0).node;
    // Removed: its cleanup pod succeeds and the entry goes; the controller is killed after
    // recording that, before the pod's deletion, so the finished pod stays.
    w.in_spec = false;
    w.pass();  // Removing; its download pod goes
    auto p = w.pass();
    REQUIRE(p.cleanups.size() == 1);
    const auto stale_name = p.cleanups[0].pod_name;
    CHECK_FALSE(w.record.at(0).removingAt.empty());
    w.finish_pods("Succeeded", "cleanup");
    auto stale = w.pods.at(stale_name);
    w.pass();
    REQUIRE(w.record.empty());
    // Back in the spec: the same config goes to the same node, into the same directory.
    w.in_spec = true;
    for (int i = 0; i < 10 && w.copies(CopyPhase::Ready).empty(); ++i) {
        w.pods[stale_name] = stale;  // however often it is deleted, it stays (the worst case)
        w.now += seconds(2);
        w.pass();
        w.finish_pods("Succeeded", "download");
    }
    REQUIRE(w.copies(CopyPhase::Ready).size() == 1);
    REQUIRE(w.record.at(0).node == first_node);
    // Removed again: the old pod says Succeeded, but this removal has not run yet.
    w.in_spec = false;
    std::string own;
    for (int i = 0; i < 4; ++i) {
        w.pods[stale_name] = stale;
        p = w.pass();
        REQUIRE(w.copies(CopyPhase::Removing).size() == 1);
        if (!p.cleanups.empty()) {
            own = p.cleanups[0].pod_name;
            CHECK(p.cleanups[0].node == first_node);
        }
    }
    REQUIRE(!own.empty());
    CHECK(own != stale_name);
    // Its own cleanup pod finishing is what drops the entry.
    w.finish_pods("Succeeded", "cleanup");
    w.pass();
    CHECK(w.record.empty());
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

TEST_CASE("a download that fills its node's disk is not retried there: its partial data goes and the copy is placed on another node") {
    World w(volume(1));
    w.pass();
    REQUIRE(w.copies(CopyPhase::Downloading).size() == 1);
    const auto full = w.copies(CopyPhase::Downloading)[0];
    auto& pod = w.pods.begin()->second;
    pod.status->phase = "Failed";
    api::ContainerStatus cs;
    cs.name = "fetch";
    cs.state = api::ContainerState{};
    cs.state->terminated = api::ContainerStateTerminated{};
    cs.state->terminated->exitCode = 6;
    cs.state->terminated->message = "cannot write /vck/root/x/set/a.bin: No space left on device";
    pod.status->containerStatuses.push_back(cs);
    auto p = w.pass();
    REQUIRE(w.copies(CopyPhase::Removing).size() == 1);
    auto removing = w.copies(CopyPhase::Removing)[0];
    CHECK(removing.node == full.node);
    CHECK(removing.message.find("disk is full") != std::string::npos);
    CHECK(removing.message.find("No space left on device") != std::string::npos);
    REQUIRE(w.copies(CopyPhase::Downloading).size() == 1);
    CHECK(w.copies(CopyPhase::Downloading)[0].node != full.node);  // elsewhere, at once
    CHECK(w.copies(CopyPhase::Downloading)[0].attempts == 1);
    REQUIRE(p.warnings.size() == 1);
    CHECK(p.warnings[0].find("disk full") != std::string::npos);
    CHECK(p.outcome.phase != handlers::VolumePhase::Failed);
    converge(w);  // the failed pod goes, its directory is cleaned up, the new copy completes
    REQUIRE(w.record.size() == 1);
    CHECK(w.record[0].node != full.node);
    CHECK(volumes::copy_phase(w.record[0]) == CopyPhase::Ready);
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
    World::finish_fetch(
        pod, R"({"command":"fetch","files":8,"skipped":2,"bytes":3000,"skippedBytes":1096,"seconds":1.5,"errors":0,"exitCode":0})");
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

/// The kubelet's answer for a finished `vck-fetch sync-back --once` upload pod.
void finish_upload(api::Pod& pod, int exit_code, std::string message) {
    api::ContainerStatus cs;
    cs.name = "upload";
    cs.state = api::ContainerState{};
    cs.state->terminated = api::ContainerStateTerminated{};
    cs.state->terminated->exitCode = exit_code;
    cs.state->terminated->message = std::move(message);
    pod.status->containerStatuses = {cs};
    pod.status->phase = exit_code == 0 ? "Succeeded" : "Failed";
}

std::vector<api::Pod*> pods_with_role(World& w, const std::string& role) {
    std::vector<api::Pod*> out;
    for (auto& [name, p] : w.pods)
        if (p.metadata.annotations[std::string(handlers::copy_role_annotation)] == role) out.push_back(&p);
    return out;
}

bool has_event(const volumes::VolumeCopyPlan& p, const std::string& reason, const std::string& text) {
    return std::any_of(p.output_events.begin(), p.output_events.end(),
                       [&](const auto& e) { return e.reason == reason && e.message.find(text) != std::string::npos; });
}

const char* const upload_summary_2_files =
    R"({"command":"sync-back","files":2,"skipped":0,"bytes":300,"skippedBytes":0,"seconds":0.5,"errors":0,"exitCode":0})";

} // namespace

TEST_CASE("an output copy goes Uploading before Removing: its upload pod runs on its node, then the cleanup") {
    World w(volume(2));
    w.output = true;
    converge(w);
    REQUIRE(w.copies(CopyPhase::Ready).size() == 2);
    w.in_spec = false;  // spec.state Completed, or the VolumeManager deleted
    auto p = w.pass();
    CHECK(w.copies(CopyPhase::Uploading).size() == 2);
    CHECK(w.copies(CopyPhase::Removing).empty());
    CHECK(p.cleanups.empty());
    REQUIRE(p.uploads.size() == 2);
    for (const auto& u : p.uploads) {
        auto it = std::find_if(w.record.begin(), w.record.end(), [&](const auto& e) { return e.node == u.node; });
        REQUIRE(it != w.record.end());
        CHECK(u.path == it->path);
        CHECK(static_cast<std::int64_t>(u.replica) == it->replica);
    }
    CHECK_FALSE(p.settled);
    w.pass();  // still uploading: nothing new
    CHECK(pods_with_role(w, "upload").size() == 2);
    CHECK(pods_with_role(w, "cleanup").empty());
    for (auto* u : pods_with_role(w, "upload")) finish_upload(*u, 0, upload_summary_2_files);
    p = w.pass();
    REQUIRE(w.copies(CopyPhase::Removing).size() == 2);
    for (const auto& e : w.record) {
        CHECK(e.filesUploaded == 2);
        CHECK(e.bytesUploaded == 300);
        CHECK(e.message == "output uploaded: 2 files (300 bytes)");
    }
    CHECK(has_event(p, "OutputUploaded", "uploaded: 2 files (300 bytes)"));
    // Then as any copy that goes: its pods stop, a cleanup pod removes the directory.
    for (int i = 0; i < 4 && !w.record.empty(); ++i) {
        w.pass();
        w.finish_pods("Succeeded", "cleanup");
    }
    CHECK(w.record.empty());
}

TEST_CASE("a failed upload keeps the output copy with the reason, and is retried with backoff without a limit") {
    World w(volume(1));
    w.output = true;
    w.opts.max_download_attempts = 1;  // downloads' limit: uploads have none
    converge(w);
    w.in_spec = false;
    w.pass();
    for (int attempt = 1; attempt <= 3; ++attempt) {
        auto uploads = pods_with_role(w, "upload");
        REQUIRE(uploads.size() == 1);
        const std::string failed_pod = uploads[0]->metadata.name;
        finish_upload(*uploads[0], 5,
                      R"({"command":"sync-back","files":0,"errors":1,"exitCode":5,"error":"connect to 127.0.0.1:9 refused"})");
        auto p = w.pass();
        REQUIRE(w.copies(CopyPhase::Uploading).size() == 1);
        const auto& e = w.record.at(0);
        CHECK(e.uploadAttempts == attempt + 1);
        CHECK(e.message.starts_with("upload attempt " + std::to_string(attempt) + " failed"));
        // The summary's error, in words (not the JSON line).
        CHECK(e.message.ends_with("s: connect to 127.0.0.1:9 refused"));
        CHECK(has_event(p, "OutputUploadFailed", "refused"));
        CHECK(p.uploads.empty());  // not before its retry time
        CHECK(p.cleanups.empty());
        REQUIRE(p.due);
        CHECK(*p.due == w.now + volumes::retry_delay(w.opts, attempt));
        w.now = *p.due;
        p = w.pass();
        REQUIRE(p.uploads.size() == 1);  // the next attempt, under a name of its own
        CHECK(std::find(p.pods_to_delete.begin(), p.pods_to_delete.end(), failed_pod) != p.pods_to_delete.end());
        CHECK(p.uploads[0].pod_name != failed_pod);
    }
    finish_upload(*pods_with_role(w, "upload").at(0), 0, upload_summary_2_files);
    w.pass();
    CHECK(w.copies(CopyPhase::Removing).size() == 1);
}

TEST_CASE("the discard-output annotation removes an output copy without upload, and says so") {
    World w(volume(1));
    w.output = true;
    converge(w);
    w.in_spec = false;
    w.pass();
    finish_upload(*pods_with_role(w, "upload").at(0), 5, "NoSuchBucket");
    w.pass();
    REQUIRE(w.copies(CopyPhase::Uploading).size() == 1);
    w.discard_output = true;
    auto p = w.pass();
    REQUIRE(w.copies(CopyPhase::Removing).size() == 1);
    CHECK(w.record[0].message.find("vck.intelai.org/discard-output") != std::string::npos);
    CHECK(has_event(p, "OutputDiscarded", "removed without upload"));
    CHECK(p.uploads.empty());
    for (int i = 0; i < 4 && !w.record.empty(); ++i) {
        w.pass();
        w.finish_pods("Succeeded", "cleanup");
    }
    CHECK(w.record.empty());
    CHECK(pods_with_role(w, "upload").empty());
}

TEST_CASE("a copy of a volume that is not an output volume is removed without upload") {
    World w(volume(1));
    converge(w);
    w.in_spec = false;
    auto p = w.pass();
    CHECK(w.copies(CopyPhase::Removing).size() == 1);
    CHECK(p.uploads.empty());
}

TEST_CASE("a Completed VolumeManager's status sums its output volumes' uploads, also of copies gone before others finished, keeps them, and says why an upload waits") {
    api::VolumeManagerStatus st;
    st.message = "completing: removing sub-resources and data";
    api::CopyRecord a;
    a.volume = "results";
    a.replica = 0;
    a.phase = "Removing";
    a.filesUploaded = 3;
    a.bytesUploaded = 300;
    api::CopyRecord b = a;
    b.replica = 1;
    b.phase = "Uploading";
    b.filesUploaded.reset();
    b.bytesUploaded.reset();
    b.message = "upload attempt 2 failed (pod x), retrying in 10s: connection refused";
    st.copies = {a, b};
    volumes::note_output_status(st, std::nullopt);
    REQUIRE(st.volumes.size() == 1);
    CHECK(st.volumes[0].id == "results");
    CHECK(st.volumes[0].filesUploaded == 3);
    CHECK(st.volumes[0].bytesUploaded == 300);
    CHECK(st.volumes[0].message == "output uploaded: 3 files (300 bytes)");
    CHECK(st.message == "completing: removing sub-resources and data (output of volume results replica 1 not uploaded "
                        "yet: upload attempt 2 failed (pod x), retrying in 10s: connection refused)");

    // Written again with nothing new: the same totals, not counted twice.
    api::VolumeManagerStatus again;
    again.copies = st.copies;
    volumes::note_output_status(again, st);
    REQUIRE(again.volumes.size() == 1);
    CHECK(again.volumes[0].filesUploaded == 3);

    // Replica 0's copy removed, then replica 1's upload done: both replicas count.
    api::VolumeManagerStatus second;
    b.phase = "Removing";
    b.message.clear();
    b.filesUploaded = 4;
    b.bytesUploaded = 400;
    second.copies = {b};
    volumes::note_output_status(second, again);
    REQUIRE(second.volumes.size() == 1);
    CHECK(second.volumes[0].filesUploaded == 7);
    CHECK(second.volumes[0].bytesUploaded == 700);
    CHECK(second.volumes[0].message == "output uploaded: 7 files (700 bytes)");

    // Later: every copy gone; the counts stay.
    api::VolumeManagerStatus later;
    later.message = "completed: sub-resources and data removed";
    volumes::note_output_status(later, second);
    REQUIRE(later.volumes.size() == 1);
    CHECK(later.volumes[0].filesUploaded == 7);
    CHECK(later.message == "completed: sub-resources and data removed");
}

TEST_CASE("with firstBatch, a copy whose landed prefix reaches it is labelled; the volume is Ready, partial, once every replica's is") {
    auto vc = volume(2);
    vc.options["firstBatch"] = "25%";
    World w(vc);
    w.pass();
    w.finish_pods("Running");
    w.pass();
    std::vector<std::string> names;
    for (const auto& [name, p] : w.pods) names.push_back(name);
    REQUIRE(names.size() == 2);
    // Most bytes are done on the first, but its prefix in key order is short of 25%: not usable.
    w.reported[names[0]] = {9, 10, 900, 1000, 2, 200};
    w.reported[names[1]] = {3, 10, 300, 1000, 3, 300};
    auto plan = w.pass();
    auto node_of = [&](const std::string& pod) { return w.pods.at(pod).spec.nodeName; };
    auto entry_on = [&](const std::string& node) {
        return *std::find_if(w.record.begin(), w.record.end(), [&](const auto& e) { return e.node == node; });
    };
    CHECK(entry_on(node_of(names[0])).firstBatchAt.empty());
    CHECK(entry_on(node_of(names[1])).firstBatchAt == api::format_rfc3339(w.now));
    CHECK(entry_on(node_of(names[1])).prefixBytes == 300);
    CHECK(w.labels[node_of(names[0])].empty());
    CHECK_FALSE(w.labels[node_of(names[1])].empty());  // its node holds its first batch
    CHECK(plan.outcome.phase == handlers::VolumePhase::Pending);
    CHECK_FALSE(plan.outcome.status.nodeAffinity);  // not every replica is usable yet

    w.reported[names[0]] = {10, 10, 950, 1000, 4, 400};
    w.now += seconds(5);
    plan = w.pass();
    CHECK(plan.outcome.phase == handlers::VolumePhase::Ready);
    CHECK(plan.outcome.partial);
    CHECK(plan.outcome.status.message ==
          "first batch ready (firstBatch 25%): the first 3 files in key order (300 bytes) are on every replica; "
          "downloading the rest: 0 of 2 replicas done");
    CHECK(plan.outcome.status.prefixFiles == 3);
    CHECK(plan.outcome.status.prefixBytes == 300);
    REQUIRE(plan.outcome.status.nodeAffinity);
    REQUIRE(plan.outcome.status.volumeSource);
    CHECK(w.serving == handlers::naming::source_config_digest(w.vc));
    for (const auto& n : {node_of(names[0]), node_of(names[1])}) CHECK(w.labels[n] == w.serving);
    CHECK(w.copies(CopyPhase::Downloading).size() == 2);  // the downloads go on
    CHECK_FALSE(plan.progress.complete);
    CHECK_FALSE(plan.settled);

    // Everything landed: Ready as without the option, and the first-batch marks stay as history.
    w.finish_pods("Succeeded");
    plan = w.pass();
    CHECK(plan.outcome.phase == handlers::VolumePhase::Ready);
    CHECK_FALSE(plan.outcome.partial);
    CHECK(plan.outcome.status.message == "success");
    CHECK_FALSE(plan.outcome.status.prefixFiles);
    CHECK(w.copies(CopyPhase::Ready).size() == 2);
}

TEST_CASE("without firstBatch a reported prefix makes no copy usable before it is Ready") {
    World w(volume(1));
    w.pass();
    w.finish_pods("Running");
    w.reported[w.pods.begin()->first] = {9, 10, 900, 1000, 9, 900};
    auto plan = w.pass();
    CHECK(w.record.at(0).firstBatchAt.empty());
    CHECK(w.record.at(0).prefixFiles == 9);  // recorded all the same
    CHECK(plan.outcome.phase == handlers::VolumePhase::Pending);
    CHECK_FALSE(plan.outcome.status.nodeAffinity);
    CHECK(w.status_selects_only_complete_copies());
    for (const auto& [n, v] : w.labels) CHECK(v.empty());
}

TEST_CASE("a failed copy is not usable any more, whatever first batch it had") {
    auto vc = volume(1);
    vc.options["firstBatch"] = "1Ki";
    World w(vc);
    w.opts.max_download_attempts = 1;
    w.pass();
    w.finish_pods("Running");
    w.reported[w.pods.begin()->first] = {5, 10, 2048, 4096, 5, 2048};
    auto plan = w.pass();
    REQUIRE_FALSE(w.record.at(0).firstBatchAt.empty());
    CHECK(plan.outcome.phase == handlers::VolumePhase::Ready);
    w.finish_pods("Failed");
    plan = w.pass();
    CHECK(plan.outcome.phase == handlers::VolumePhase::Failed);
    CHECK_FALSE(plan.outcome.status.nodeAffinity);
    for (const auto& [n, v] : w.labels) CHECK(v.empty());
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

TEST_CASE("a copy a running pod mounts is kept whole until the pod ends, whatever makes it go; new pods get the new copy") {
    World w(volume(2));
    converge(w);
    auto old_digest = w.serving;
    // The copy the job reads: replica 1's (the one a 2 -> 1 change removes too).
    api::CopyRecord used;
    for (const auto& e : w.record)
        if (e.replica == 1) used = e;
    w.job("trainer", used);
    std::string why;
    SUBCASE("a changed sourceURL") {
        w.vc.options["sourceURL"] = "s3://data/other/";
        why = "config";
    }
    SUBCASE("replicas 2 -> 1") {
        w.vc.replicas = 1;
        why = "replicas";
    }
    SUBCASE("the volume out of the spec") {
        w.in_spec = false;
        why = "removed";
    }
    SUBCASE("the VolumeManager deleted") {
        w.in_spec = false;
        w.deleting = true;
        why = "deleted";
    }
    CAPTURE(why);
    converge(w);  // a held copy is settled: nothing to do until the pod ends
    auto held = std::find_if(w.record.begin(), w.record.end(),
                             [&](const auto& e) { return e.node == used.node && e.path == used.path; });
    REQUIRE(held != w.record.end());
    CHECK(held->phase == "Removing");
    CHECK(held->message == "kept while pod trainer uses it");
    CHECK(w.last.held_by == std::vector<std::string>{"trainer"});
    CHECK(w.last.outcome.status.message.find("an old copy stays until pod trainer, which uses it, ends") != std::string::npos);
    for (auto& [name, p] : w.pods)  // no cleanup pod: the directory is untouched
        CHECK(p.metadata.annotations[std::string(handlers::copy_role_annotation)] != "cleanup");
    CHECK(w.labels[used.node] != old_digest);  // no new pod is sent to a copy that goes
    if (why == "config") {
        CHECK(w.serving != old_digest);  // new pods get the new data
        CHECK(w.status_selects_only_complete_copies());
    }
    auto waits = w.events("RemovalWaits");
    REQUIRE(waits.size() == 1);  // once, not once per pass
    CHECK(waits[0] == "copy of volume vol1 on node " + used.node + " (" + old_digest +
                          ") is no longer wanted; it is removed when pod trainer ends");

    w.jobs["trainer"].status->phase = "Succeeded";
    converge(w);
    CHECK(std::none_of(w.record.begin(), w.record.end(), [&](const auto& e) { return e.path == used.path && e.node == used.node; }));
    CHECK(w.last.held_by.empty());
    CHECK(w.last.outcome.status.message.find("stays until") == std::string::npos);
}

TEST_CASE("a finished pod holds no copy, and a node that is gone holds nothing worth waiting for") {
    World w(volume(1));
    converge(w);
    auto used = w.record[0];
    SUBCASE("finished") {
        w.job("done", used).status->phase = "Failed";
        w.in_spec = false;
        converge(w);
        CHECK(w.record.empty());
    }
    SUBCASE("node deleted") {
        w.job("orphaned", used);
        w.in_spec = false;
        w.pass();
        std::erase_if(w.nodes, [&](const auto& n) { return n.metadata.name == used.node; });
        w.pass();  // its finished download pod goes first
        w.pass();
        REQUIRE(w.record.size() == 1);
        CHECK(w.record[0].phase == "Lost");
        CHECK(w.last.held_by.empty());
    }
}

TEST_CASE("an output copy a running pod still writes is not uploaded until the pod ends") {
    World w(volume(1, "s3://out/run/"));
    w.output = true;
    converge(w);
    auto used = w.record[0];
    w.job("writer", used);
    w.in_spec = false;
    converge(w);
    CHECK(w.last.uploads.empty());
    REQUIRE(w.record.size() == 1);
    CHECK(w.record[0].phase == "Uploading");
    CHECK(w.record[0].message == "kept while pod writer uses it");
    w.jobs["writer"].status->phase = "Succeeded";
    w.pass();
    CHECK(w.last.uploads.size() == 1);
}

// ---- peer fill (handlers/peer_fill.hpp) ----

namespace {

/// The current download pod of `replica`.
api::Pod* replica_pod(World& w, std::int64_t replica) {
    for (const auto& e : w.record)
        if (e.replica == replica && (volumes::copy_phase(e) == CopyPhase::Downloading || volumes::copy_phase(e) == CopyPhase::Ready)) {
            auto it = w.pods.find(handlers::naming::copy_pod_name("uid-1", "vol1", e.node, e.config, e.attempts));
            return it == w.pods.end() ? nullptr : &it->second;
        }
    return nullptr;
}

/// The kubelet starts `p` at `ip`: Running, not Ready yet (a serving pod's probe has not passed).
void start(api::Pod& p, std::string ip) {
    p.status->phase = "Running";
    p.status->podIP = std::move(ip);
    api::Condition ready;
    ready.type = "Ready";
    ready.status = "False";
    p.status->conditions = {ready};
}

std::vector<api::Node> nodes(int n) {
    std::vector<api::Node> out;
    for (int i = 1; i <= n; ++i) out.push_back(node("node-" + std::to_string(i)));
    return out;
}

} // namespace

TEST_CASE("peer fill: the root downloads first and serves; its pullers start once its pod has an address, and pull from it") {
    World w(volume(4));
    w.nodes = nodes(4);
    w.peer_groups = {"", "", "", ""};
    auto plan = w.pass();
    REQUIRE(w.copies(CopyPhase::Downloading).size() == 4);  // all four recorded at once
    REQUIRE(plan.downloads.size() == 1);                      // but only the root's pod is made
    CHECK(plan.downloads[0].replica == 0);
    CHECK(plan.downloads[0].peer.serve);
    CHECK(plan.downloads[0].peer.peers.empty());
    CHECK(plan.downloads[0].peer.secret == handlers::peer_secret_name("uid-1", "vol1"));
    CHECK_FALSE(plan.settled);

    // Its pod exists without an address: the pullers wait (until peer_parent_wait at most).
    plan = w.pass();
    CHECK(plan.downloads.empty());
    REQUIRE(plan.due);
    CHECK(*plan.due == t0 + w.opts.peer_parent_wait);

    start(*replica_pod(w, 0), "127.244.1.1");
    plan = w.pass();
    REQUIRE(plan.downloads.size() == 3);
    for (const auto& d : plan.downloads) {
        CHECK(d.replica != 0);
        CHECK_FALSE(d.peer.serve);  // fan-out 4: the root serves all three, they serve nobody
        CHECK(d.peer.peers == std::vector<std::string>{"https://127.244.1.1:7443"});
    }
    // The pod shaped by the plan (its containers' side: tests/handlers/handlers_test.cpp).
    const api::Pod& root = *replica_pod(w, 0);
    CHECK(root.metadata.annotations.at(std::string(handlers::peer_serves_annotation)) == "true");
    bool secret_volume = std::any_of(root.spec.volumes.begin(), root.spec.volumes.end(), [](const api::Volume& v) {
        return v.name == "vck-peer" && v.unknown.contains("secret");
    });
    CHECK(secret_volume);
}

TEST_CASE("peer fill: a serving pod's copy is Ready, complete, when the pod is Ready, and takes its summary's totals and sources when it ends") {
    World w(volume(2));
    w.nodes = nodes(2);
    w.peer_groups = {"", ""};
    w.pass();
    start(*replica_pod(w, 0), "127.244.1.1");
    w.pass();
    api::Pod& root = *replica_pod(w, 0);
    w.reported[root.metadata.name] = vck::fetch::TransferCounts{1, 3, 100, 300};
    w.pass();
    CHECK(w.copies(CopyPhase::Ready).empty());  // Running, not Ready: still downloading
    auto root_entry = [&] {
        for (const auto& e : w.record)
            if (e.replica == 0) return e;
        return api::CopyRecord{};
    };
    CHECK(root_entry().bytesDone == 100);
    root.status->conditions[0].status = "True";  // the probe reaches the ready port
    w.pass();
    REQUIRE(w.copies(CopyPhase::Ready).size() == 1);
    CHECK(w.copies(CopyPhase::Ready)[0].replica == 0);
    CHECK_FALSE(w.copies(CopyPhase::Ready)[0].bytesFromStore);
    // Its last progress line was read before its fetch ended; Ready, it holds the totals.
    CHECK(w.copies(CopyPhase::Ready)[0].filesDone == 3);
    CHECK(w.copies(CopyPhase::Ready)[0].bytesDone == 300);
    CHECK(w.copies(CopyPhase::Ready)[0].prefixBytes == 300);

    // It ends once its puller has gone quiet: the summary's totals and sources are recorded.
    root.status->phase = "Succeeded";
    api::ContainerStatus cs;
    cs.name = "fetch";
    cs.state = api::ContainerState{};
    cs.state->terminated = api::ContainerStateTerminated{};
    cs.state->terminated->message =
        R"({"command":"fetch","files":3,"skipped":0,"bytes":300,"skippedBytes":0,"bytesFromStore":300,"bytesFromPeers":0,"seconds":1,"errors":0,"exitCode":0})";
    root.status->containerStatuses = {cs};
    api::Container fetch;
    fetch.name = "fetch";
    fetch.command = {"vck-fetch"};
    fetch.args = {"fetch", "s3://data/set/", "/vck/copy/x"};
    root.spec.containers = {fetch};
    w.pass();
    auto ready = w.copies(CopyPhase::Ready);
    REQUIRE(ready.size() == 1);
    CHECK(ready[0].bytesFromStore == 300);
    CHECK(ready[0].bytesFromPeers == 0);
    CHECK(ready[0].bytesTotal == 300);
    CHECK(ready[0].bytesByPeer.empty());

    // Its puller (started once the root had an address) ends: its record names the peer it
    // took bytes from by node, and one it could not place (no pod has that address) by address.
    api::Pod& puller = *replica_pod(w, 1);
    puller.spec.nodeName = "node-2";
    puller.status->phase = "Succeeded";
    cs.state->terminated->message =
        R"({"command":"fetch","files":3,"skipped":0,"bytes":300,"skippedBytes":0,"bytesFromStore":20,"bytesFromPeers":280,)"
        R"("bytesByPeer":{"https://127.244.1.1:7443":250,"https://[fd00::9]:7443":30},"seconds":1,"errors":0,"exitCode":0})";
    puller.status->containerStatuses = {cs};
    puller.spec.containers = {fetch};
    w.pass();
    ready = w.copies(CopyPhase::Ready);
    REQUIRE(ready.size() == 2);
    const auto& pulled = ready[0].replica == 1 ? ready[0] : ready[1];
    CHECK(pulled.bytesFromPeers == 280);
    REQUIRE(pulled.bytesByPeer.size() == 2);
    CHECK(pulled.bytesByPeer[0].node == root.spec.nodeName);  // the largest first
    CHECK(pulled.bytesByPeer[0].address == "https://127.244.1.1:7443");
    CHECK(pulled.bytesByPeer[0].bytes == 250);
    CHECK(pulled.bytesByPeer[1].node == "");
    CHECK(pulled.bytesByPeer[1].address == "https://[fd00::9]:7443");
    CHECK(pulled.bytesByPeer[1].bytes == 30);
}

TEST_CASE("peer fill: replicas of different distributionStrategy subsets never pull from each other") {
    World w(volume(3));
    w.nodes = nodes(3);
    w.peer_groups = {"*.a", "*.a", "*.b"};
    auto plan = w.pass();
    REQUIRE(plan.downloads.size() == 2);  // the *.a root, and the *.b replica (alone in its group)
    for (const auto& d : plan.downloads) {
        if (d.replica == 0) CHECK(d.peer.serve);
        if (d.replica == 2) CHECK_FALSE(d.peer.active());
    }
    start(*replica_pod(w, 0), "127.244.1.1");
    plan = w.pass();
    REQUIRE(plan.downloads.size() == 1);
    CHECK(plan.downloads[0].replica == 1);
    CHECK(plan.downloads[0].peer.peers == std::vector<std::string>{"https://127.244.1.1:7443"});
}

TEST_CASE("peer fill: a tree of fan-out 4; a puller lists its ancestors nearest first; a stuck parent delays it at most peer_parent_wait") {
    World w(volume(8));
    w.nodes = nodes(8);
    w.peer_groups = std::vector<std::string>(8);
    w.pass();
    start(*replica_pod(w, 0), "10.0.0.1");
    auto plan = w.pass();
    REQUIRE(plan.downloads.size() == 4);  // replicas 1-4 under the root
    for (const auto& d : plan.downloads) CHECK(d.peer.serve == (d.replica == 1));  // 1 serves 5, 6, 7
    // Replica 1's pod stays without an address: 5-7 wait for it, then go with the root only.
    plan = w.pass();
    CHECK(plan.downloads.empty());
    w.now += w.opts.peer_parent_wait;
    plan = w.pass();
    REQUIRE(plan.downloads.size() == 3);
    for (const auto& d : plan.downloads) CHECK(d.peer.peers == std::vector<std::string>{"https://10.0.0.1:7443"});

    // Had it started, they would take files from it first, then from the root.
    World v(volume(8));
    v.nodes = nodes(8);
    v.peer_groups = std::vector<std::string>(8);
    v.pass();
    start(*replica_pod(v, 0), "10.0.0.1");
    v.pass();
    start(*replica_pod(v, 1), "10.0.0.2");
    plan = v.pass();
    REQUIRE(plan.downloads.size() == 3);
    for (const auto& d : plan.downloads)
        CHECK(d.peer.peers == std::vector<std::string>{"https://10.0.0.2:7443", "https://10.0.0.1:7443"});
}

TEST_CASE("peer fill: a parent that failed is skipped (its retry waits), and its puller reads the store") {
    World w(volume(2));
    w.nodes = nodes(2);
    w.peer_groups = {"", ""};
    w.pass();
    replica_pod(w, 0)->status->phase = "Failed";
    auto plan = w.pass();  // attempt 1 failed: attempt 2 waits for its retry time
    REQUIRE(plan.downloads.size() == 1);
    CHECK(plan.downloads[0].replica == 1);
    CHECK(plan.downloads[0].peer.peers.empty());
    CHECK_FALSE(plan.downloads[0].peer.serve);
}

namespace {

/// Two VolumeManagers of one config that share: `a` places first.
struct Sharing {
    World a{volume(2)};
    World b{volume(2)};
    Sharing() {
        a.shares = b.shares = true;
        b.uid = "uid-2";
        b.holder = "team-b/vm";
        a.holder = "team-a/vm";
        a.neighbours = {&b};
        b.neighbours = {&a};
    }
    /// `a`'s copies downloaded, Ready with the listing `digest`.
    void a_ready(const std::string& digest = "listing-1") {
        a.pass();
        a.finish_fetches(digest);
        a.pass();
        REQUIRE(a.copies(CopyPhase::Ready).size() == static_cast<std::size_t>(a.vc.replicas));
    }
};

} // namespace

TEST_CASE("shared copies: a volume of an equal config joins the Ready copies another VolumeManager made, Ready at once, reading nothing") {
    Sharing s;
    s.a.pass();
    const auto shared = handlers::naming::shared_copy_directory("/var/datasets", handlers::naming::source_config_digest(s.a.vc));
    for (const auto& e : s.a.record) CHECK(e.path == shared);
    // While a's copies download, b waits for them rather than download the same data.
    auto p = s.b.pass();
    CHECK(s.b.record.empty());
    CHECK(p.downloads.empty());
    CHECK(p.outcome.phase == handlers::VolumePhase::Pending);
    CHECK(p.outcome.status.message.find("waiting for the shared copy that team-a/vm is downloading on node") != std::string::npos);
    CHECK(p.due.has_value());
    s.a.finish_fetches("listing-1");
    s.a.pass();
    // Ready: b lists the source with its own credentials before it may join.
    p = s.b.pass();
    CHECK(p.needs_proof);
    CHECK(s.b.record.empty());
    s.b.proven = "listing-1";
    p = s.b.pass();
    CHECK_FALSE(p.needs_proof);
    CHECK(p.downloads.empty());
    REQUIRE(s.b.copies(CopyPhase::Ready).size() == 2);
    CHECK(s.b.nodes_of(CopyPhase::Ready) == s.a.nodes_of(CopyPhase::Ready));
    for (const auto& e : s.b.record) {
        CHECK(e.path == shared);
        CHECK(e.sharedFrom == "team-a/vm");
        CHECK(e.bytesFromStore == 0);
        CHECK(e.sourceDigest == "listing-1");
        CHECK(e.bytesTotal == s.a.record.at(0).bytesTotal);
    }
    CHECK(p.outcome.phase == handlers::VolumePhase::Ready);
    REQUIRE(p.outcome.status.volumeSource);
    CHECK(p.outcome.status.volumeSource->hostPath->path == shared);
    for (const auto& n : s.b.nodes_of(CopyPhase::Ready)) CHECK_FALSE(s.b.labels[n].empty());
}

TEST_CASE("shared copies: a join needs the joiner's own listing; a failed one is a clear message and no access; another listing joins nothing") {
    Sharing s;
    s.a_ready("listing-1");
    s.b.proof_failure = "listing s3://data/set/ with this volume's own credentials (Secret team-b/creds) failed: 403 InvalidAccessKeyId";
    auto p = s.b.pass();
    CHECK(s.b.record.empty());
    CHECK(p.downloads.empty());
    CHECK(p.outcome.phase == handlers::VolumePhase::Failed);
    CHECK(p.outcome.status.message ==
          "no access to the copy of this source that team-a/vm shares: " + s.b.proof_failure);
    CHECK_FALSE(p.outcome.status.nodeAffinity.has_value());
    CHECK(p.due.has_value());  // listed again later

    // Its credentials list the source differently (it changed since a's copies were made):
    // a's copies are not b's to join, and their nodes are not free. One replica fits beside
    // them, two do not: b takes a directory of its own rather than wait for a's refresh.
    s.b.proof_failure.clear();
    s.b.proven = "listing-2";
    const auto shared = handlers::naming::shared_copy_directory("/var/datasets", s.a.record.at(0).config);
    p = s.b.pass();
    REQUIRE(p.downloads.size() == 2);
    for (const auto& d : p.downloads) CHECK(d.path != shared);
    CHECK(p.downloads[0].path == p.downloads[1].path);
    CHECK_FALSE(handlers::naming::is_shared_directory(p.downloads[0].path));
    s.b.finish_fetches("listing-2");
    p = s.b.pass();
    CHECK(p.outcome.phase == handlers::VolumePhase::Ready);
    REQUIRE(p.outcome.status.volumeSource);
    CHECK(p.outcome.status.volumeSource->hostPath->path == s.b.record.at(0).path);
    for (const auto& e : s.b.record) CHECK(e.path != shared);
}

TEST_CASE("shared copies: another listing that leaves room beside the others' copies downloads into the shared "
          "directory on the free nodes") {
    Sharing s;
    s.a.vc.replicas = 1;
    s.a_ready("listing-1");
    s.b.proven = "listing-2";
    auto p = s.b.pass();
    REQUIRE(p.downloads.size() == 2);
    const auto shared = handlers::naming::shared_copy_directory("/var/datasets", s.a.record.at(0).config);
    for (const auto& d : p.downloads) {
        CHECK(d.path == shared);
        CHECK_FALSE(s.a.nodes_of(CopyPhase::Ready).contains(d.node));
    }
}

TEST_CASE("shared copies: each user lets go of its entry; the last one removes the directory, after the pods that read it") {
    Sharing s;
    s.a_ready();
    s.b.proven = "listing-1";
    s.b.pass();
    REQUIRE(s.b.copies(CopyPhase::Ready).size() == 2);
    // A job of b reads the copy on one node.
    auto reading = s.b.record.at(0);
    s.b.job("trainer", reading);

    // b's volume goes (its VolumeManager deleted): a keeps the copy, so b lets go without a
    // cleanup, and its labels go.
    s.b.in_spec = false;
    auto p = s.b.pass();
    CHECK(p.cleanups.empty());
    CHECK(s.b.record.empty());
    for (const auto& [n, value] : s.b.labels) CHECK(value.empty());
    CHECK(p.outcome.status.message == "removed");

    // a's volume goes too: it is the last user, but b's job still reads the copy on its node.
    s.a.in_spec = false;
    s.a.pass();  // its finished download pods go first
    p = s.a.pass();
    REQUIRE(p.cleanups.size() == 1);
    CHECK(p.cleanups[0].node != reading.node);
    CHECK(p.held_by == std::vector<std::string>{"trainer"});
    s.b.jobs["trainer"].status->phase = "Succeeded";
    s.a.finish_pods("Succeeded", "cleanup");
    s.a.pass();  // the held copy's finished download pod goes first
    p = s.a.pass();
    REQUIRE(p.cleanups.size() == 1);
    CHECK(p.cleanups[0].node == reading.node);
    CHECK(p.cleanups[0].path == reading.path);
    s.a.finish_pods("Succeeded", "cleanup");
    s.a.pass();
    CHECK(s.a.record.empty());
}

TEST_CASE("shared copies: when the users of a copy let go in turn, the second sees the first gone and removes it") {
    Sharing s;
    s.a_ready();
    s.b.proven = "listing-1";
    s.b.pass();
    s.a.in_spec = false;
    auto p = s.a.pass();  // b keeps it: a lets go, once its finished download pods are gone
    CHECK(p.cleanups.empty());
    p = s.a.pass();
    CHECK(p.cleanups.empty());
    CHECK(s.a.record.empty());
    s.b.in_spec = false;
    p = s.b.pass();  // a is gone: b removes it
    CHECK(p.cleanups.size() == 2);
    CHECK(s.b.copies(CopyPhase::Removing).size() == 2);
}

TEST_CASE("shared copies: a node where another VolumeManager's copy is not joinable is not free; joining takes no disk room") {
    Sharing s;
    s.a.vc.replicas = 1;
    s.a_ready();  // one copy
    s.b.proven = "listing-1";
    // Disk-aware placement with every node full: only the node with the copy to join is used.
    s.b.disk_aware = true;
    s.b.vc.capacity = "1Gi";
    for (auto& n : s.b.nodes) n.status->allocatable["ephemeral-storage"] = "1Gi";
    for (const auto& n : {"node-1", "node-2", "node-3"}) s.b.used[n] = 1LL << 30;
    s.b.vc.replicas = 1;
    auto p = s.b.pass();
    REQUIRE(s.b.copies(CopyPhase::Ready).size() == 1);
    CHECK(s.b.record.at(0).node == s.a.record.at(0).node);
    CHECK(p.downloads.empty());

    // A second replica for b: a's node is taken by b itself now; the others are full.
    s.b.vc.replicas = 2;
    p = s.b.pass();
    CHECK(p.downloads.empty());
    // The copy's listed size (3.9 KiB), not the capacity, is what must fit.
    CHECK(p.outcome.status.message.find("no eligible node without a copy (not eligible: 2 without room for 3.9 KiB)") !=
          std::string::npos);
}

TEST_CASE("shared copies: a copy Ready while its pod serves peers is joined as soon as its last progress line tells "
          "the listing's digest, before the pod ends") {
    Sharing s;
    s.a.vc.replicas = 1;
    s.a.nodes = nodes(3);
    s.a.peer_groups = {""};
    s.a.pass();
    api::Pod& maker = *replica_pod(s.a, 0);
    maker.metadata.annotations[std::string(handlers::peer_serves_annotation)] = "true";
    start(maker, "127.244.1.1");
    maker.status->conditions[0].status = "True";  // its fetch ended whole: the ready port is open
    vck::fetch::TransferCounts whole{3, 3, 300, 300};
    s.a.reported[maker.metadata.name] = whole;
    s.a.pass();
    REQUIRE(s.a.copies(CopyPhase::Ready).size() == 1);
    CHECK(s.a.record.at(0).sourceDigest.empty());  // serving on, no digest told yet

    // The line printed before it serves on tells the digest: b joins while a's pod still runs.
    whole.listing_digest = "listing-1";
    s.a.reported[maker.metadata.name] = whole;
    s.a.pass();
    CHECK(s.a.record.at(0).sourceDigest == "listing-1");
    CHECK(handlers::pod_phase(maker) == "Running");
    s.b.vc.replicas = 1;
    s.b.proven = "listing-1";
    auto p = s.b.pass();
    CHECK(p.downloads.empty());
    REQUIRE(s.b.copies(CopyPhase::Ready).size() == 1);
    CHECK(s.b.record.at(0).node == s.a.record.at(0).node);
    CHECK(s.b.record.at(0).sharedFrom == "team-a/vm");
}

TEST_CASE("shared copies: a Ready copy whose listing digest is on its way is waited for, a while, not downloaded beside") {
    Sharing s;
    s.a.pass();
    s.a.finish_pods("Succeeded");  // no summary yet: a serving peer's comes when its pod ends
    s.a.pass();
    REQUIRE(s.a.copies(CopyPhase::Ready).size() == 2);
    s.b.proven = "listing-1";
    auto p = s.b.pass();
    CHECK(p.downloads.empty());
    CHECK(p.outcome.status.message.find("waiting for the shared copy that team-a/vm has just made on node") !=
          std::string::npos);
    // Its digest never comes: after digest_wait those nodes are busy, and b downloads elsewhere.
    s.b.now += s.b.opts.digest_wait + seconds(1);
    p = s.b.pass();
    REQUIRE(p.downloads.size() == 1);
    CHECK_FALSE(s.a.nodes_of(CopyPhase::Ready).contains(p.downloads[0].node));
}
