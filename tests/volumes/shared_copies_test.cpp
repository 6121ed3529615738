// Who else holds a shared copy (include/vck/volumes/shared_copies.hpp), as the passes of other
// VolumeManagers see it: a plan stands for its VolumeManager from the moment it is made, and
// only a recorded one outlives its pass. No API server.
#include <vck/volumes/shared_copies.hpp>

#include <doctest.h>

using namespace vck;

namespace {

const std::string dir = "/var/lib/vck/vck-resource-shared-cfg1";

api::VolumeManager manager(std::string uid, std::string name) {
    api::VolumeManager vm;
    vm.metadata.uid = std::move(uid);
    vm.metadata.namespace_ = "ns";
    vm.metadata.name = std::move(name);
    return vm;
}

api::CopyRecord ready(std::string node, std::string volume = "vol1") {
    api::CopyRecord e;
    e.volume = std::move(volume);
    e.node = std::move(node);
    e.path = dir;
    e.phase = "Ready";
    return e;
}

std::vector<std::string> holders(const volumes::SharedCopies& s, const std::string& node) {
    std::vector<std::string> out;
    for (const auto& h : s.others("someone-else", "vol1", node, dir)) out.push_back(h.holder);
    return out;
}

} // namespace

TEST_CASE("a plan stands for its VolumeManager as soon as it is made: a removal elsewhere never misses a join "
          "not yet written") {
    volumes::SharedCopies shared(nullptr);
    auto b = manager("uid-b", "b");
    std::vector<api::CopyRecord> joins{ready("n1"), ready("n2")};
    shared.planned(b, "vol1", joins);
    CHECK(holders(shared, "n1") == std::vector<std::string>{"ns/b"});
    CHECK(holders(shared, "n2") == std::vector<std::string>{"ns/b"});
    CHECK(shared.others("uid-b", "vol1", "n1", dir).empty());  // not its own other
    shared.recorded("uid-b");
    shared.abandon("uid-b");  // after the record is written: nothing to take back
    CHECK(holders(shared, "n1") == std::vector<std::string>{"ns/b"});
}

TEST_CASE("a pass that fails before its record is written takes its plan back: what was recorded stands again") {
    volumes::SharedCopies shared(nullptr);
    auto b = manager("uid-b", "b");
    std::vector<api::CopyRecord> both{ready("n1"), ready("n2")};
    shared.planned(b, "vol1", both);
    shared.recorded("uid-b");

    // b plans to let go of n2 (another user keeps it), then its label or status write fails:
    // no other user may remove n2's copy on the word of a record that was never written.
    std::vector<api::CopyRecord> one{ready("n1")};
    shared.planned(b, "vol1", one);
    CHECK(holders(shared, "n2").empty());  // while the pass runs, its plan stands
    shared.abandon("uid-b");
    CHECK(holders(shared, "n1") == std::vector<std::string>{"ns/b"});
    CHECK(holders(shared, "n2") == std::vector<std::string>{"ns/b"});

    // A conflict does the same (VolumeCopies::unwritten), and a later recorded plan stands.
    shared.planned(b, "vol1", one);
    shared.abandon("uid-b");
    CHECK(holders(shared, "n2") == std::vector<std::string>{"ns/b"});
    shared.planned(b, "vol1", one);
    shared.recorded("uid-b");
    shared.abandon("uid-b");
    CHECK(holders(shared, "n2").empty());
}

TEST_CASE("a first plan that fails leaves nothing behind: the cache answers for that VolumeManager again") {
    volumes::SharedCopies shared(nullptr);
    auto c = manager("uid-c", "c");
    std::vector<api::CopyRecord> join{ready("n1")};
    shared.planned(c, "vol1", join);
    CHECK(holders(shared, "n1") == std::vector<std::string>{"ns/c"});
    shared.abandon("uid-c");
    CHECK(holders(shared, "n1").empty());

    // Plans of two volumes in one pass are taken back together.
    shared.planned(c, "vol1", join);
    shared.planned(c, "vol2", join);
    shared.abandon("uid-c");
    CHECK(holders(shared, "n1").empty());
}

TEST_CASE("two volumes of one VolumeManager with equal configs share the directory too: each sees the other's "
          "entries, as cached and as planned") {
    volumes::SharedCopies shared(nullptr);
    auto a = manager("uid-a", "a");
    api::VolumeManagerStatus st;
    st.copies = {ready("n1", "v1"), ready("n1", "v2")};
    a.status = st;
    auto others_of = [&](const std::string& volume) {
        std::vector<std::string> out;
        for (const auto& h : shared.others("uid-a", volume, "n1", dir)) out.push_back(h.entry.volume);
        return out;
    };
    // v1 is planned away from n1; v2, not planned yet in this pass, still holds it as cached.
    std::vector<api::CopyRecord> none;
    shared.planned(a, "v1", none);
    CHECK(others_of("v1") == std::vector<std::string>{"v2"});
    CHECK(others_of("v2").empty());
    shared.recorded("uid-a");
    CHECK(holders(shared, "n1") == std::vector<std::string>{"ns/a"});
}
