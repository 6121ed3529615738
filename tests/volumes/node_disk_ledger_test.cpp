// The bytes of the copies on each node, as placement that knows the disk counts them
// (include/vck/volumes/node_disk_ledger.hpp): pure, no API server.
#include <vck/volumes/node_disk_ledger.hpp>

#include <doctest.h>

#include <memory>

using namespace vck;

namespace {

constexpr std::int64_t Mi = 1024 * 1024;

api::CopyRecord copy(std::string volume, std::string node, std::string phase = "Ready") {
    api::CopyRecord e;
    e.volume = std::move(volume);
    e.node = std::move(node);
    e.phase = std::move(phase);
    return e;
}

std::shared_ptr<const api::VolumeManager> manager(std::string uid, std::vector<api::CopyRecord> copies,
                                                   std::string capacity = "500Mi") {
    auto vm = std::make_shared<api::VolumeManager>();
    vm->metadata.uid = std::move(uid);
    api::VolumeConfig vc;
    vc.id = "data";
    vc.capacity = std::move(capacity);
    vm->spec.volumeConfigs.push_back(vc);
    api::VolumeManagerStatus st;
    st.copies = std::move(copies);
    vm->status = st;
    return vm;
}

runtime::Change<api::VolumeManager> change(runtime::ChangeType type, std::shared_ptr<const api::VolumeManager> now,
                                           std::shared_ptr<const api::VolumeManager> old = nullptr) {
    runtime::Change<api::VolumeManager> c;
    c.type = type;
    c.object = std::move(now);
    c.old = std::move(old);
    return c;
}

} // namespace

TEST_CASE("a node's bytes are its copies' listed sizes, else their volume's capacity, whatever their phase") {
    volumes::NodeDiskLedger ledger;
    auto listed = copy("data", "node-1");
    listed.bytesTotal = 50 * Mi;
    ledger.observe(change(runtime::ChangeType::Added,
                          manager("a", {listed, copy("data", "node-2", "Downloading"), copy("data", "node-1", "Removing")})));
    CHECK(ledger.used("node-1") == 50 * Mi + 500 * Mi);  // a Removing copy is still on the disk
    CHECK(ledger.used("node-2") == 500 * Mi);
    CHECK(ledger.used("node-3") == 0);

    ledger.observe(change(runtime::ChangeType::Added, manager("b", {copy("data", "node-2")}, "1Gi")));
    CHECK(ledger.used("node-2") == 500 * Mi + 1024 * Mi);
}

TEST_CASE("a VolumeManager's change replaces its bytes, and its deletion takes them away") {
    volumes::NodeDiskLedger ledger;
    auto before = manager("a", {copy("data", "node-1"), copy("data", "node-2")});
    ledger.observe(change(runtime::ChangeType::Added, before));
    auto after = manager("a", {copy("data", "node-2")});
    ledger.observe(change(runtime::ChangeType::Modified, after, before));
    CHECK(ledger.used("node-1") == 0);
    CHECK(ledger.used("node-2") == 500 * Mi);
    ledger.observe(change(runtime::ChangeType::Modified, after, after));  // a resync changes nothing
    CHECK(ledger.used("node-2") == 500 * Mi);
    ledger.observe(change(runtime::ChangeType::Deleted, after));
    CHECK(ledger.used("node-2") == 0);
}

TEST_CASE("a copy of a volume gone from the spec that never listed counts nothing; a bad capacity is no size") {
    volumes::NodeDiskLedger ledger;
    ledger.observe(change(runtime::ChangeType::Added, manager("a", {copy("gone", "node-1")})));
    ledger.observe(change(runtime::ChangeType::Added, manager("b", {copy("data", "node-1")}, "lots")));
    CHECK(ledger.used("node-1") == 0);
    CHECK(volumes::capacity_bytes("1Gi") == 1024 * Mi);
    CHECK_FALSE(volumes::capacity_bytes("lots"));
    CHECK_FALSE(volumes::capacity_bytes(""));
}

TEST_CASE("a shared copy's directory counts once, however many VolumeManagers record it, until the last lets go") {
    volumes::NodeDiskLedger ledger;
    auto shared = copy("data", "node-1");
    shared.path = "/var/datasets/vck-resource-shared-c1";
    shared.bytesTotal = 50 * Mi;
    auto own = copy("data", "node-1");
    own.path = "/var/datasets/vck-resource-0123456789abcdef-c1";
    own.bytesTotal = 10 * Mi;
    auto a = manager("a", {shared, own});
    auto b = manager("b", {shared});
    ledger.observe(change(runtime::ChangeType::Added, a));
    ledger.observe(change(runtime::ChangeType::Added, b));
    CHECK(ledger.used("node-1") == 60 * Mi);
    ledger.observe(change(runtime::ChangeType::Deleted, a));
    CHECK(ledger.used("node-1") == 50 * Mi);  // b still holds the shared copy
    ledger.observe(change(runtime::ChangeType::Deleted, b));
    CHECK(ledger.used("node-1") == 0);
}
