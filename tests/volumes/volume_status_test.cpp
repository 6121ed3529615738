// What a VolumeManager's status says after a reconcile pass (include/vck/volumes/volume_status.hpp),
// and the states it names (include/vck/api/volume_manager.hpp): pure functions, no API server.
// The messages are the ones users see (reconciler_test.cpp checks them end to end).
#include <vck/volumes/volume_status.hpp>

#include <doctest.h>

#include <optional>
#include <string>
#include <vector>

using namespace vck;
using api::VolumeManagerState;
using handlers::VolumePhase;

namespace {

volumes::VolumeFinding status_finding(std::string id, VolumePhase phase, std::string message) {
    volumes::VolumeFinding f;
    f.id = id;
    f.outcome.phase = phase;
    f.outcome.status.id = std::move(id);
    f.outcome.status.message = std::move(message);
    return f;
}

std::vector<std::string> status_volume_ids(const api::VolumeManagerStatus& st) {
    std::vector<std::string> out;
    for (const auto& v : st.volumes) out.push_back(v.id);
    return out;
}

api::VolumeManager status_vm_with_ready(std::optional<std::string> ready_status, std::string since) {
    api::VolumeManager vm;
    vm.metadata.generation = 7;
    if (ready_status) {
        api::VolumeManagerStatus st;
        api::Condition c;
        c.type = "Ready";
        c.status = *ready_status;
        c.lastTransitionTime = std::move(since);
        st.conditions.push_back(c);
        vm.status = st;
    }
    return vm;
}

} // namespace

TEST_CASE("a VolumeManager state is written as its name and read back only from that exact name") {
    for (auto s : {VolumeManagerState::Pending, VolumeManagerState::Running, VolumeManagerState::Failed,
                   VolumeManagerState::Completed})
        CHECK(api::parse_volume_manager_state(api::to_string(s)) == s);
    CHECK(api::to_string(VolumeManagerState::Completed) == "Completed");
    CHECK(api::to_string(VolumeManagerState::Running) == "Running");
    CHECK_FALSE(api::parse_volume_manager_state("").has_value());         // unset
    CHECK_FALSE(api::parse_volume_manager_state("running").has_value());  // the wire form is case-sensitive
    CHECK_FALSE(api::parse_volume_manager_state("Done").has_value());
}

TEST_CASE("a VolumeManager whose volumes are all Ready, with nothing left to remove, is Running and Ready") {
    auto d = volumes::deployment_status({status_finding("b", VolumePhase::Ready, "success"),
                                         status_finding("a", VolumePhase::Ready, "success")},
                                        true, true);
    CHECK(d.state == VolumeManagerState::Running);
    CHECK(d.status.state == "Running");
    CHECK(d.status.message == "successfully deployed all sub-resources");
    CHECK(d.status.readyVolumes == "2/2");
    CHECK(status_volume_ids(d.status) == std::vector<std::string>{"b", "a"});  // the spec's order
    CHECK(d.ready);
    CHECK(d.reason == "Running");
    CHECK_FALSE(d.pending);
    CHECK(d.failures.empty());
}

TEST_CASE("a VolumeManager without volumes is Running with 0/0 ready") {
    auto d = volumes::deployment_status({}, true, true);
    CHECK(d.status.state == "Running");
    CHECK(d.status.readyVolumes == "0/0");
    CHECK(d.ready);
}

TEST_CASE("any failed volume makes a VolumeManager Failed, and each failure is named for the event") {
    auto d = volumes::deployment_status({status_finding("a", VolumePhase::Ready, "success"),
                                         status_finding("b", VolumePhase::Failed, "error during data download"),
                                         status_finding("c", VolumePhase::Pending, "waiting"),
                                         status_finding("d", VolumePhase::Failed, "no node matches")},
                                        false, false);  // failure wins over everything still in progress
    CHECK(d.state == VolumeManagerState::Failed);
    CHECK(d.status.state == "Failed");
    CHECK(d.status.message == "failed to deploy all the sub-resources");
    CHECK(d.status.readyVolumes == "1/4");
    CHECK(d.failures == std::vector<std::string>{"b: error during data download", "d: no node matches"});
    CHECK(d.status.volumes.at(1).message == "error during data download");
    CHECK_FALSE(d.ready);
    CHECK(d.reason == "Failed");
    CHECK_FALSE(d.pending);
}

TEST_CASE("a VolumeManager with a volume in progress, or removed volumes not cleaned up yet, is Pending") {
    auto in_progress = volumes::deployment_status({status_finding("a", VolumePhase::Ready, "success"),
                                                   status_finding("b", VolumePhase::Pending, "waiting for pod")},
                                                  true, true);
    CHECK(in_progress.state == VolumeManagerState::Pending);
    CHECK(in_progress.status.state == "Pending");
    CHECK(in_progress.status.message == "Beginning sub-resource deployment");
    CHECK(in_progress.status.readyVolumes == "1/2");
    CHECK(in_progress.pending);
    CHECK_FALSE(in_progress.ready);
    CHECK(in_progress.reason == "Pending");

    auto removing = volumes::deployment_status({status_finding("a", VolumePhase::Ready, "success")}, false, true);
    CHECK(removing.status.state == "Pending");
    CHECK(removing.status.message == "Beginning sub-resource deployment");
    CHECK(removing.status.readyVolumes == "1/1");
    CHECK(removing.pending);
}

TEST_CASE("a VolumeManager whose volumes are Ready but whose unwanted copies are still being removed is Pending") {
    auto d = volumes::deployment_status({status_finding("a", VolumePhase::Ready, "success")}, true, false);
    CHECK(d.state == VolumeManagerState::Pending);
    CHECK(d.status.message == "removing copies no longer wanted");
    CHECK(d.status.readyVolumes == "1/1");
    CHECK(d.pending);
    CHECK_FALSE(d.ready);
    // Still deploying: the deployment's message, not the copies'.
    auto deploying = volumes::deployment_status({status_finding("a", VolumePhase::Pending, "waiting")}, true, false);
    CHECK(deploying.status.message == "Beginning sub-resource deployment");
}

TEST_CASE("a Running VolumeManager whose old copy a running pod keeps says so, naming the pods once each") {
    auto a = status_finding("a", VolumePhase::Ready, "success");
    a.held_by = {"holder"};
    auto d = volumes::deployment_status({a}, true, true);
    CHECK(d.state == VolumeManagerState::Running);
    CHECK(d.ready);
    CHECK(d.status.message == "successfully deployed all sub-resources; an old copy stays until pod holder, which uses it, ends");
    auto b = status_finding("b", VolumePhase::Ready, "success");
    b.held_by = {"holder", "analyst"};
    auto two = volumes::deployment_status({a, b}, true, true);
    CHECK(two.status.message ==
          "successfully deployed all sub-resources; an old copy stays until pods analyst, holder, which use it, end");
    CHECK(volumes::held_copy_note({}).empty());
}

TEST_CASE("a volume gone from the spec whose last copy a running pod reads: the VolumeManager is Running and names the pod") {
    auto d = volumes::deployment_status({status_finding("keep", VolumePhase::Ready, "success")}, true, true, {"h-rm"});
    CHECK(d.state == VolumeManagerState::Running);
    CHECK(d.ready);
    CHECK(d.status.readyVolumes == "1/1");
    CHECK(d.status.message == "successfully deployed all sub-resources; an old copy stays until pod h-rm, which uses it, ends");
}

TEST_CASE("a volume being replaced counts as ready while its previous data serves, and the message says how far the new one is") {
    auto replaced = status_finding("train", VolumePhase::Pending,
                                   "downloading: 1 of 2 replicas done, the previous config serves until then");
    replaced.outcome.status.volumeSource = api::VolumeSource{};
    replaced.outcome.status.nodeAffinity = api::NodeAffinity{};
    auto d = volumes::deployment_status({status_finding("a", VolumePhase::Ready, "success"), replaced}, true, true);
    CHECK(d.state == VolumeManagerState::Pending);
    CHECK(d.status.readyVolumes == "2/2");
    CHECK(d.status.message == "replacing volume train: the previous data serves until the new copies are ready "
                              "(downloading: 1 of 2 replicas done, the previous config serves until then)");
    CHECK(d.reason == "Replacing");
    CHECK_FALSE(d.ready);  // new pods wait for the new data
    CHECK(d.pending);
    // Another volume still deploying from scratch: the deployment's message.
    auto deploying = volumes::deployment_status({status_finding("a", VolumePhase::Pending, "waiting"), replaced}, true, true);
    CHECK(deploying.status.message == "Beginning sub-resource deployment");
    CHECK(deploying.status.readyVolumes == "1/2");
}

TEST_CASE("desired state Failed deploys nothing and is never Ready; Completed is Ready once everything is removed") {
    auto failed = volumes::end_state_status(VolumeManagerState::Failed, true, 3);
    CHECK(failed.status.state == "Failed");
    CHECK(failed.status.message == "desired state is Failed: no sub-resources deployed");
    CHECK(failed.status.readyVolumes == "0/3");
    CHECK_FALSE(failed.ready);
    CHECK(failed.reason == "Failed");

    auto completing = volumes::end_state_status(VolumeManagerState::Completed, false, 2);
    CHECK(completing.status.state == "Completed");
    CHECK(completing.status.message == "completing: removing sub-resources and data");
    CHECK(completing.status.readyVolumes == "0/2");
    CHECK_FALSE(completing.ready);
    CHECK(completing.reason == "Completed");

    auto completed = volumes::end_state_status(VolumeManagerState::Completed, true, 2);
    CHECK(completed.status.message == "completed: sub-resources and data removed");
    CHECK(completed.ready);
}

TEST_CASE("an invalid spec makes the status Failed with the reason, keeping what the status recorded") {
    api::VolumeManagerStatus current;
    current.state = "Running";
    current.message = "successfully deployed all sub-resources";
    current.volumes.push_back(status_finding("a", VolumePhase::Ready, "success").outcome.status);
    api::CopyRecord copy;
    copy.volume = "a";
    copy.node = "node-1";
    current.copies.push_back(copy);
    current.unknown["extra"] = 1;
    auto d = volumes::invalid_spec_status(current, "spec.state: Unsupported value: \"Done\"", 1);
    CHECK(d.state == VolumeManagerState::Failed);
    CHECK(d.status.state == "Failed");
    CHECK(d.status.message == "invalid spec: spec.state: Unsupported value: \"Done\"");
    CHECK(d.status.readyVolumes == "0/1");
    CHECK(status_volume_ids(d.status) == std::vector<std::string>{"a"});
    CHECK(d.status.copies.size() == 1);
    CHECK(d.status.unknown.empty());
    CHECK_FALSE(d.ready);
    CHECK(d.reason == "InvalidSpec");

    auto fresh = volumes::invalid_spec_status(std::nullopt, "why", 0);
    CHECK(fresh.status.message == "invalid spec: why");
    CHECK(fresh.status.readyVolumes == "0/0");
}

TEST_CASE("the Ready condition keeps its transition time while its status is unchanged, and takes now when it flips") {
    api::VolumeManagerStatus st;
    st.message = "successfully deployed all sub-resources";
    const std::string earlier = "2026-01-01T00:00:00Z", now = "2026-11-27T10:00:00Z";

    auto kept = volumes::with_ready_condition(st, true, "Running", status_vm_with_ready("True", earlier), now);
    REQUIRE(kept.conditions.size() == 2);  // Ready, DataComplete
    const auto& c = kept.conditions[0];
    CHECK(c.type == "Ready");
    CHECK(c.status == "True");
    CHECK(c.reason == "Running");
    CHECK(c.message == st.message);
    CHECK(c.lastTransitionTime == earlier);
    CHECK(c.observedGeneration == 7);
    CHECK(kept.observedGeneration == 7);

    auto flipped = volumes::with_ready_condition(st, false, "Pending", status_vm_with_ready("True", earlier), now);
    CHECK(flipped.conditions.at(0).status == "False");
    CHECK(flipped.conditions.at(0).lastTransitionTime == now);

    auto first = volumes::with_ready_condition(st, false, "Pending", status_vm_with_ready(std::nullopt, ""), now);
    CHECK(first.conditions.at(0).lastTransitionTime == now);
}

TEST_CASE("volumes usable with their first batch only make Ready True (FirstBatchReady) while the state stays Pending") {
    auto partial = status_finding("a", VolumePhase::Ready, "first batch ready (firstBatch 25%): ...");
    partial.outcome.partial = true;
    auto d = volumes::deployment_status({partial, status_finding("b", VolumePhase::Ready, "success")}, true, false);
    CHECK(d.status.state == "Pending");
    CHECK(d.status.message == "first batch ready, downloading the rest");
    CHECK(d.ready);
    CHECK(d.reason == "FirstBatchReady");
    CHECK(d.pending);  // looked at again: the rest lands later
    CHECK(d.status.readyVolumes == "2/2");

    // A failure still wins; a volume not usable yet keeps the whole thing not Ready.
    auto failed = volumes::deployment_status({partial, status_finding("b", VolumePhase::Failed, "boom")}, true, false);
    CHECK(failed.status.state == "Failed");
    CHECK_FALSE(failed.ready);
    auto waiting = volumes::deployment_status({partial, status_finding("b", VolumePhase::Pending, "downloading")}, true, false);
    CHECK_FALSE(waiting.ready);
    CHECK(waiting.reason == "Pending");
}

TEST_CASE("DataComplete is True exactly when all data has landed (Running), for kubectl wait") {
    const std::string now = "2026-11-27T10:00:00Z";
    auto condition = [](const api::VolumeManagerStatus& st, const std::string& type) {
        for (const auto& c : st.conditions)
            if (c.type == type) return c;
        FAIL("no condition " << type);
        return api::Condition{};
    };
    api::VolumeManagerStatus st;
    st.state = "Pending";
    st.message = "first batch ready, downloading the rest";
    auto partial = volumes::with_ready_condition(st, true, "FirstBatchReady", status_vm_with_ready(std::nullopt, ""), now);
    CHECK(condition(partial, "Ready").status == "True");
    CHECK(condition(partial, "Ready").reason == "FirstBatchReady");
    CHECK(condition(partial, "DataComplete").status == "False");
    CHECK(condition(partial, "DataComplete").reason == "Downloading");

    st.state = "Running";
    st.message = "successfully deployed all sub-resources";
    auto done = volumes::with_ready_condition(st, true, "Running", status_vm_with_ready("True", "2026-01-01T00:00:00Z"), now);
    CHECK(condition(done, "DataComplete").status == "True");
    CHECK(condition(done, "DataComplete").reason == "AllDataLanded");
    CHECK(condition(done, "DataComplete").lastTransitionTime == now);  // it flipped now
    CHECK(condition(done, "Ready").lastTransitionTime == "2026-01-01T00:00:00Z");  // Ready did not

    st.state = "Failed";
    st.message = "failed to deploy all the sub-resources";
    auto failed = volumes::with_ready_condition(st, false, "Failed", status_vm_with_ready(std::nullopt, ""), now);
    CHECK(condition(failed, "DataComplete").status == "False");
    CHECK(condition(failed, "DataComplete").reason == "Failed");
}
