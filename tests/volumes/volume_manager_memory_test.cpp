// What the VolumeManager reconciler remembers between passes (include/vck/volumes/
// volume_manager_memory.hpp) and the volume keys of one pass (sub_resource_ownership.hpp):
// pure, no API server.
#include <vck/handlers/naming.hpp>
#include <vck/volumes/sub_resource_ownership.hpp>
#include <vck/volumes/volume_manager_memory.hpp>

#include <doctest.h>

#include <chrono>
#include <thread>

using namespace vck;
using namespace std::chrono_literals;

namespace {

api::VolumeManager manager(const std::string& uid, const std::string& rv = "1") {
    api::VolumeManager vm;
    vm.metadata.namespace_ = "default";
    vm.metadata.name = "vm-" + uid;
    vm.metadata.uid = uid;
    vm.metadata.resourceVersion = rv;
    return vm;
}

} // namespace

TEST_CASE("a VolumeManager with nothing pending is not remembered at all") {
    volumes::VolumeManagerMemory memory;
    auto vm = manager("u1");
    CHECK_FALSE(memory.refused(vm, "data"));
    CHECK_FALSE(memory.refusal_wait(vm));
    CHECK(memory.grace_remaining(vm, false, 2s) == 0ms);
    CHECK_FALSE(memory.stale_view(vm, 30s));
    CHECK(memory.size() == 0);  // asking left no empty entry behind

    memory.remember_refusal(vm, "data", "forbidden", 1s, 300s);
    CHECK(memory.size() == 1);
    memory.forget_refusal(vm, "data");
    CHECK(memory.size() == 0);
}

TEST_CASE("a refused create is backed off per volume, doubling up to the cap, and says why") {
    volumes::VolumeManagerMemory memory;
    auto vm = manager("u1");
    auto message = memory.remember_refusal(vm, "data", "pods is forbidden", 1s, 3s);
    CHECK(message == "the API server refused a sub-resource: pods is forbidden");
    CHECK(memory.refused(vm, "data") == message);
    CHECK_FALSE(memory.refused(vm, "other"));
    auto first = memory.refusal_wait(vm, "data");
    REQUIRE(first);
    CHECK(*first > 900ms);
    CHECK(*first <= 1001ms);
    CHECK_FALSE(memory.refusal_wait(vm, "other"));  // another volume is not held back
    CHECK(memory.refusal_wait(vm));                 // "any volume" is

    memory.remember_refusal(vm, "data", "again", 1s, 3s);
    CHECK(*memory.refusal_wait(vm, "data") > 1900ms);  // the second in a row: 2 s
    memory.remember_refusal(vm, "data", "again", 1s, 3s);
    auto capped = *memory.refusal_wait(vm, "data");
    CHECK(capped > 2900ms);  // 4 s, capped at 3 s
    CHECK(capped <= 3001ms);
}

TEST_CASE("the Pending grace window starts when a pass creates objects and runs out") {
    volumes::VolumeManagerMemory memory;
    auto vm = manager("u1");
    CHECK(memory.grace_remaining(vm, false, 50ms) == 0ms);  // nothing created: Pending may be written
    auto left = memory.grace_remaining(vm, true, 50ms);
    CHECK(left > 0ms);
    CHECK(left <= 50ms);
    CHECK(memory.grace_remaining(vm, false, 50ms) > 0ms);  // still within it on the next pass
    std::this_thread::sleep_for(60ms);
    CHECK(memory.grace_remaining(vm, false, 50ms) <= 0ms);
    CHECK(memory.size() == 0);  // a window run out is forgotten
    memory.grace_remaining(vm, true, 50ms);
    memory.forget_grace(vm);
    CHECK(memory.size() == 0);
}

TEST_CASE("after a record write the view it was made from is stale until the cache moves on") {
    volumes::VolumeManagerMemory memory;
    auto at5 = manager("u1", "5");
    memory.wrote_record_from(at5);
    CHECK(memory.stale_view(at5, 30s));  // the cache still shows resourceVersion 5
    CHECK(memory.stale_view(at5, 30s));
    auto at6 = manager("u1", "6");
    CHECK_FALSE(memory.stale_view(at6, 30s));  // it moved: act on it
    CHECK_FALSE(memory.stale_view(at5, 30s));  // and the write is forgotten
    CHECK(memory.size() == 0);

    memory.wrote_record_from(at5);
    CHECK_FALSE(memory.stale_view(at5, 0s));  // a watch event that never comes is not waited for forever
}

TEST_CASE("what is remembered of one VolumeManager goes whole, others stay") {
    volumes::VolumeManagerMemory memory;
    auto a = manager("a"), b = manager("b");
    memory.remember_refusal(a, "data", "no", 1s, 300s);
    memory.grace_remaining(a, true, 10s);
    memory.wrote_record_from(a);
    memory.remember_refusal(b, "data", "no", 1s, 300s);
    CHECK(memory.size() == 2);
    memory.forget("a");
    CHECK(memory.size() == 1);
    CHECK_FALSE(memory.refused(a, "data"));
    CHECK(memory.refused(b, "data"));
}

TEST_CASE("a pass computes each volume's key once, the same as the sub-resources' label") {
    volumes::VolumeKeys keys("uid-1");
    const auto& data = keys.of("data");
    CHECK(data == handlers::naming::volume_key("uid-1", "data"));
    CHECK(&keys.of("data") == &data);  // asked again: the same string, not computed again
    CHECK(keys.of("other") == handlers::naming::volume_key("uid-1", "other"));
    CHECK(keys.computed() == 2);
}
