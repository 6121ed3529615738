// Eviction under disk pressure, the pure part (include/vck/volumes/disk_pressure_eviction.hpp):
// which copy goes next on a pressured node, and how a copy's use is recorded.
#include <vck/volumes/disk_pressure_eviction.hpp>

#include <doctest.h>

#include <string>
#include <vector>

namespace {

using namespace vck;
using std::chrono::seconds;

const auto evict_t0 = std::chrono::system_clock::from_time_t(2'000'000'000);

api::Node pressured_node(std::string name, std::string pressure = "True") {
    api::Node n;
    n.metadata.name = std::move(name);
    api::NodeStatus st;
    api::Condition ready;
    ready.type = "Ready";
    ready.status = "True";
    st.conditions.push_back(ready);
    api::Condition disk;
    disk.type = "DiskPressure";
    disk.status = std::move(pressure);
    st.conditions.push_back(disk);
    n.status = st;
    return n;
}

api::CopyRecord ready_copy(std::string volume, std::string node, std::string ready_at, std::string last_used = "") {
    api::CopyRecord e;
    e.volume = std::move(volume);
    e.node = std::move(node);
    e.path = "/var/datasets/vck-resource-" + e.volume + "-abc";
    e.config = "abc";
    e.phase = "Ready";
    e.attempts = 1;
    e.readyAt = std::move(ready_at);
    e.lastUsed = std::move(last_used);
    return e;
}

api::VolumeManager manager(std::string name, std::vector<api::CopyRecord> copies) {
    api::VolumeManager vm;
    vm.metadata.namespace_ = "default";
    vm.metadata.name = std::move(name);
    vm.status = api::VolumeManagerStatus{};
    vm.status->copies = std::move(copies);
    return vm;
}

api::Pod pod_mounting(std::string name, std::string node, std::string path, std::string phase = "Running") {
    api::Pod p;
    p.metadata.namespace_ = "default";
    p.metadata.name = std::move(name);
    p.spec.nodeName = std::move(node);
    api::Volume v;
    v.name = "data";
    v.hostPath = api::HostPathVolumeSource{std::move(path), ""};
    p.spec.volumes.push_back(v);
    p.status = api::PodStatus{};
    p.status->phase = std::move(phase);
    return p;
}

std::string at(int minutes) { return api::format_rfc3339(evict_t0 + seconds(60 * minutes)); }

struct Scene {
    api::Node node = pressured_node("node-1");
    std::vector<api::VolumeManager> vms;
    std::vector<api::Pod> pods;
    volumes::SoleCopyCheck sole_copy;
    volumes::EvictionChoice choose() const {
        std::vector<const api::VolumeManager*> v;
        for (const auto& vm : vms) v.push_back(&vm);
        std::vector<const api::Pod*> p;
        for (const auto& x : pods) p.push_back(&x);
        return volumes::choose_eviction(node, v, p, sole_copy);
    }
};

} // namespace

TEST_CASE("the least recently used Ready copy goes first: lastUsed, else readyAt") {
    Scene s;
    s.vms.push_back(manager("a", {ready_copy("va", "node-1", at(0), at(30))}));  // ready first, used since
    s.vms.push_back(manager("b", {ready_copy("vb", "node-1", at(10))}));         // never used: readyAt
    s.vms.push_back(manager("c", {ready_copy("vc", "node-1", at(20))}));
    auto c = s.choose();
    REQUIRE(c.evict);
    CHECK(c.evict->vm_name == "b");
    CHECK(c.evict->entry.volume == "vb");
    CHECK(c.evict->last_use == at(10));
    CHECK(volumes::eviction_message(*c.evict) == "evicted: node node-1 under DiskPressure (last used " + at(10) + ")");
}

TEST_CASE("a copy that is the only place of its data (an output volume's) is never evicted") {
    Scene s;
    s.vms.push_back(manager("out", {ready_copy("results", "node-1", at(0))}));  // the oldest
    s.vms.push_back(manager("in", {ready_copy("train", "node-1", at(10))}));
    s.sole_copy = [](const api::VolumeManager& vm, const std::string& volume) {
        return vm.metadata.name == "out" && volume == "results";
    };
    auto c = s.choose();
    REQUIRE(c.evict);
    CHECK(c.evict->vm_name == "in");
    s.vms.pop_back();
    c = s.choose();
    CHECK_FALSE(c.evict);
}

TEST_CASE("sole_copies: an uploading type's copies, and those of a volume that left the spec, are never evicted") {
    auto with_volume = [](api::VolumeManager vm, std::string id, std::string type) {
        api::VolumeConfig vc;
        vc.id = std::move(id);
        vc.sourceType = std::move(type);
        vm.spec.volumeConfigs.push_back(std::move(vc));
        return vm;
    };
    Scene s;
    s.sole_copy = volumes::sole_copies([](const std::string& type) { return type == "S3-Output"; });
    s.vms.push_back(with_volume(manager("out", {ready_copy("results", "node-1", at(0))}), "results", "S3-Output"));
    // Its volume removed from the spec (an output volume on its way to the upload): the oldest.
    s.vms.push_back(manager("gone", {ready_copy("left", "node-1", at(5))}));
    s.vms.push_back(with_volume(manager("in", {ready_copy("train", "node-1", at(10))}), "train", "S3"));
    auto c = s.choose();
    REQUIRE(c.evict);
    CHECK(c.evict->vm_name == "in");
    s.vms.pop_back();
    CHECK_FALSE(s.choose().evict);
}

TEST_CASE("a copy in use by an unfinished pod on its node is never evicted, whoever made the pod") {
    Scene s;
    auto used = ready_copy("vb", "node-1", at(10));
    s.vms.push_back(manager("a", {ready_copy("va", "node-1", at(20))}));
    s.vms.push_back(manager("b", {used}));
    // A user's pod mounting a directory under the copy's, by hand (no VCK label).
    s.pods.push_back(pod_mounting("by-hand", "node-1", used.path + "/sub/"));
    auto c = s.choose();
    REQUIRE(c.evict);
    CHECK(c.evict->vm_name == "a");

    SUBCASE("with every copy in use, nothing is chosen, and the reason says so") {
        s.pods.push_back(pod_mounting("other", "node-1", s.vms[0].status->copies[0].path));
        auto none = s.choose();
        CHECK_FALSE(none.evict);
        CHECK(none.why_none == "every Ready copy on node node-1 is in use (2)");
    }
    SUBCASE("a finished pod, a pod on another node, or a sibling directory do not count as use") {
        s.pods[0].status->phase = "Succeeded";
        s.pods.push_back(pod_mounting("elsewhere", "node-2", used.path));
        s.pods.push_back(pod_mounting("sibling", "node-1", used.path + "-other"));
        s.pods.push_back(pod_mounting("failed", "node-1", used.path, "Failed"));
        auto c2 = s.choose();
        REQUIRE(c2.evict);
        CHECK(c2.evict->vm_name == "b");
    }
}

TEST_CASE("one at a time: while an evicted copy is still being removed nothing else is chosen") {
    Scene s;
    auto going = ready_copy("va", "node-1", at(0));
    going.phase = "Removing";
    going.message = "evicted: node node-1 under DiskPressure (last used never)";
    s.vms.push_back(manager("a", {going}));
    s.vms.push_back(manager("b", {ready_copy("vb", "node-1", at(10))}));
    auto c = s.choose();
    CHECK_FALSE(c.evict);
    CHECK(c.in_progress);

    SUBCASE("a copy Removing for another reason does not hold evictions back") {
        s.vms[0].status->copies[0].message = "no longer wanted";
        auto c2 = s.choose();
        REQUIRE(c2.evict);
        CHECK(c2.evict->vm_name == "b");
    }
}

TEST_CASE("only Ready copies on the pressured node are chosen, and none without DiskPressure=True") {
    Scene s;
    auto downloading = ready_copy("vd", "node-1", "");
    downloading.phase = "Downloading";
    s.vms.push_back(manager("a", {downloading, ready_copy("elsewhere", "node-2", at(0)), ready_copy("vr", "node-1", at(5))}));
    auto c = s.choose();
    REQUIRE(c.evict);
    CHECK(c.evict->entry.volume == "vr");

    s.node = pressured_node("node-1", "False");
    auto none = s.choose();
    CHECK_FALSE(none.evict);
    CHECK(none.why_none == "node node-1 is not under DiskPressure");
}

TEST_CASE("mark_evicted makes the chosen entry Removing with the eviction message, and refuses an entry that moved on") {
    auto vm = manager("a", {ready_copy("va", "node-1", at(0)), ready_copy("vb", "node-1", at(1))});
    volumes::EvictionCandidate c{"default", "a", vm.status->copies[1], at(1)};
    REQUIRE(volumes::mark_evicted(vm.status->copies, c));
    CHECK(vm.status->copies[1].phase == "Removing");
    CHECK(vm.status->copies[1].message.starts_with("evicted: node node-1 under DiskPressure"));
    CHECK(vm.status->copies[0].phase == "Ready");
    CHECK_FALSE(volumes::mark_evicted(vm.status->copies, c));  // Removing already
}

TEST_CASE("the use record changes only when a copy's use flips or a later finished use is seen") {
    std::vector<api::CopyRecord> entries{ready_copy("va", "node-1", at(0))};
    std::vector<api::Pod> pods;
    auto view = [&] {
        std::vector<const api::Pod*> v;
        for (const auto& p : pods) v.push_back(&p);
        return v;
    };
    CHECK_FALSE(volumes::refresh_copy_use(entries, view(), evict_t0 + seconds(600)));
    CHECK(entries[0].lastUsed.empty());

    pods.push_back(pod_mounting("job", "node-1", entries[0].path));
    CHECK(volumes::refresh_copy_use(entries, view(), evict_t0 + seconds(600)));
    CHECK(entries[0].inUse == std::optional<bool>(true));
    CHECK(entries[0].lastUsed == at(10));
    // Still in use on later passes: nothing to write.
    CHECK_FALSE(volumes::refresh_copy_use(entries, view(), evict_t0 + seconds(1200)));
    CHECK(entries[0].lastUsed == at(10));

    // It finishes: the flip is recorded with the pod's finish time when that is later.
    pods[0].status->phase = "Succeeded";
    api::ContainerStatus cs;
    cs.name = "main";
    cs.state = api::ContainerState{};
    cs.state->terminated = api::ContainerStateTerminated{};
    cs.state->terminated->finishedAt = at(25);
    pods[0].status->containerStatuses.push_back(cs);
    CHECK(volumes::refresh_copy_use(entries, view(), evict_t0 + seconds(1260)));
    CHECK_FALSE(entries[0].inUse.has_value());
    CHECK(entries[0].lastUsed == at(25));
    CHECK_FALSE(volumes::refresh_copy_use(entries, view(), evict_t0 + seconds(1800)));

    SUBCASE("a pod that ran and finished between two passes still counts as a use") {
        std::vector<api::CopyRecord> fresh{ready_copy("va", "node-1", at(0))};
        CHECK(volumes::refresh_copy_use(fresh, view(), evict_t0 + seconds(1800)));
        CHECK(fresh[0].lastUsed == at(25));
        CHECK_FALSE(fresh[0].inUse.has_value());
    }
}
