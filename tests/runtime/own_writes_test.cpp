// A controller's own writes and the events they cause (include/vck/runtime/own_writes.hpp):
// the event of a recorded write is dropped once; every other change passes.
#include <vck/api/core_v1.hpp>
#include <vck/runtime/own_writes.hpp>

#include <doctest.h>

#include <memory>
#include <thread>

using namespace vck;

namespace {

runtime::Change<api::ConfigMap> change(runtime::ChangeType type, const std::string& name, const std::string& rv) {
    auto cm = std::make_shared<api::ConfigMap>();
    cm->metadata.namespace_ = "default";
    cm->metadata.name = name;
    cm->metadata.resourceVersion = rv;
    runtime::Change<api::ConfigMap> c;
    c.type = type;
    c.object = cm;
    if (type == runtime::ChangeType::Modified) c.old = std::make_shared<api::ConfigMap>(*cm);
    return c;
}

} // namespace

TEST_CASE("the event of a recorded write is dropped once; another version, another object or a deletion passes") {
    runtime::OwnWrites own;
    auto pass = own.not_own<api::ConfigMap>("configmaps");
    own.record("configmaps", "default", "a", "7");
    CHECK(pass(change(runtime::ChangeType::Modified, "a", "8")));   // someone else's later write
    CHECK(pass(change(runtime::ChangeType::Modified, "b", "7")));   // another object
    CHECK(pass(change(runtime::ChangeType::Deleted, "a", "7")));    // a deletion always counts
    CHECK_FALSE(pass(change(runtime::ChangeType::Modified, "a", "7")));  // ours
    CHECK(pass(change(runtime::ChangeType::Modified, "a", "7")));   // once only
    CHECK(own.size() == 0);

    own.record("configmaps", "default", "new", "9");
    CHECK_FALSE(pass(change(runtime::ChangeType::Added, "new", "9")));  // a create's event
    auto other = own.not_own<api::ConfigMap>("secrets");
    own.record("configmaps", "default", "x", "10");
    CHECK(other(change(runtime::ChangeType::Added, "x", "10")));  // another resource's watch
}

TEST_CASE("a write whose event never comes is forgotten after the ttl") {
    runtime::OwnWrites own(std::chrono::seconds(0));
    own.record("configmaps", "default", "a", "1");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    own.record("configmaps", "default", "b", "2");  // recording expires what is past its time
    CHECK(own.size() == 1);
    own.record("configmaps", "default", "c", "");  // no version: nothing to recognise it by
    CHECK(own.size() == 1);
}
