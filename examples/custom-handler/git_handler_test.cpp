// Specification of the custom-handler example's GitRepo source type, as a DataHandler: its
// option checks, its clone pods (user values as argv entries only), and the contract of
// include/vck/handlers/data_handler.hpp that every download source keeps: data in place stays
// Ready when the cluster shrinks, cleanup removes the node labels, and replicas are counted
// against the nodes the volume's nodeAffinity admits. Needs only include/vck and doctest;
// tests/volumes/custom_handler_test.cpp runs the same handler through the controller.
#include "git_handler.hpp"

#include <vck/handlers/naming.hpp>

#include <doctest.h>

#include <optional>
#include <string>
#include <vector>

namespace api = vck::api;
namespace handlers = vck::handlers;

namespace {

api::VolumeManager manager() {
    api::VolumeManager vm;
    vm.metadata.name = "repo";
    vm.metadata.namespace_ = "default";
    vm.metadata.uid = "5d0c7f1e-2b3a-4c8d-9e6f-7a1b2c3d4e5f";
    return vm;
}

api::VolumeConfig git_volume(int replicas = 1) {
    api::VolumeConfig vc;
    vc.id = "code";
    vc.replicas = replicas;
    vc.sourceType = "GitRepo";
    vc.accessMode = "ReadWriteOnce";
    vc.labels = {{"a", "b"}};
    vc.options = {{"repository", "https://example.com/r.git"}, {"revision", "v1; reboot"}};
    return vc;
}

/// Nodes named node-0, node-1, ... with the given labels.
std::vector<api::Node> nodes(std::vector<api::Labels> labels) {
    std::vector<api::Node> out(labels.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
        out[i].metadata.name = "node-" + std::to_string(i);
        out[i].metadata.labels = std::move(labels[i]);
    }
    return out;
}

/// A cluster of `count` nodes: node-0 has disk=ssd, the others disk=hdd.
handlers::HandlerContext cluster(std::size_t count) {
    std::vector<api::Labels> labels(count, {{"disk", "hdd"}});
    if (count > 0) labels[0] = {{"disk", "ssd"}};
    handlers::HandlerContext ctx;
    ctx.nodes = [all = nodes(std::move(labels))] { return all; };
    return ctx;
}

/// What a check says: its message, or "valid".
std::string verdict(const std::optional<std::string>& problem) { return problem.value_or("valid"); }

api::Pod ran(api::Pod p, std::string phase, std::string node_name) {
    p.spec.nodeName = std::move(node_name);
    p.status = api::PodStatus{};
    p.status->phase = std::move(phase);
    return p;
}

} // namespace

TEST_CASE("the GitRepo handler validates its options with clear messages") {
    example::GitHandler h;
    auto vc = git_volume();
    vc.options.clear();
    CHECK(verdict(h.validate(vc)) == "repository has to be set in options");
    vc.options["repository"] = "file:///etc";
    CHECK(verdict(h.validate(vc)) == "repository has to be an https:// URL");
    vc.options["repository"] = "https://example.com/r.git";
    CHECK(verdict(h.validate(vc)) == "valid");
    vc.accessMode = "ReadWriteMany";
    CHECK(verdict(h.validate(vc)) == "access mode has to be ReadWriteOnce");
}

TEST_CASE("a GitRepo download pod clones the revision with every user value a single argv entry") {
    example::GitHandler h("git:test");
    auto pods = h.desired(cluster(3), manager(), git_volume(2)).pods;
    REQUIRE(pods.size() == 2);
    const auto& clone = pods[0].spec.containers.at(0);
    CHECK(clone.image == "git:test");
    CHECK(clone.command == std::vector<std::string>{"git"});
    CHECK(clone.args == std::vector<std::string>{"clone", "--depth=1", "--branch", "v1; reboot", "--",
                                                 "https://example.com/r.git", "/vck/data/repo"});
}

TEST_CASE("a GitRepo volume whose copies are in place stays Ready when fewer nodes than replicas remain") {
    example::GitHandler h;
    auto vm = manager();
    auto vc = git_volume(2);
    auto pods = h.desired(cluster(2), vm, vc).pods;
    REQUIRE(pods.size() == 2);
    handlers::ObservedObjects placed{{ran(pods[0], "Succeeded", "node-0"), ran(pods[1], "Succeeded", "node-1")}, {}, {}};
    REQUIRE(h.status(cluster(2), vm, vc, placed).phase == handlers::VolumePhase::Ready);

    auto shrunk = cluster(1);  // node-1 left the cluster
    auto out = h.status(shrunk, vm, vc, placed);
    CHECK(out.phase == handlers::VolumePhase::Ready);
    CHECK(out.status.message == "success");
    // Before its copies exist, the same volume cannot be placed on one node: that fails it.
    CHECK(h.status(shrunk, vm, vc, {}).phase == handlers::VolumePhase::Failed);
}

TEST_CASE("GitRepo cleanup removes the node labels the volume set, whether or not its data path is still allowed") {
    example::GitHandler h;
    auto vm = manager();
    auto vc = git_volume(1);
    auto key = handlers::naming::node_label_key(vm.metadata.namespace_, vm.metadata.name, vc.id);
    struct Case {
        std::string name;
        std::vector<std::string> allowed_roots;
    };
    for (const auto& c : {Case{"data path allowed", {"/var/datasets"}}, Case{"data path no longer allowed", {"/data"}}}) {
        CAPTURE(c.name);
        auto ctx = cluster(0);
        ctx.options.allowed_data_roots = c.allowed_roots;
        ctx.nodes = [all = nodes({{{key, "true"}}, {}})] { return all; };
        auto plan = h.cleanup_objects(ctx, vm, vc, {});
        // Where the data may be deleted, a cleanup pod removes it from node-0 first.
        for (int step = 0; step < 3 && !plan.done; ++step) {
            handlers::ObservedObjects observed;
            for (const auto& p : plan.pods) observed.pods.push_back(ran(p, "Succeeded", p.spec.nodeName));
            plan = h.cleanup_objects(ctx, vm, vc, observed);
        }
        CHECK(plan.done);
        CHECK(plan.node_labels_to_remove == std::vector<handlers::NodeLabel>{{"node-0", key, "true"}});
    }
}

TEST_CASE("the GitRepo replica count counts only the nodes the volume's nodeAffinity admits") {
    example::GitHandler h;
    auto vc = git_volume(2);
    CHECK(verdict(h.validate(cluster(3), manager(), vc)) == "valid");
    api::NodeSelectorRequirement ssd{"disk", "In", {"ssd"}};
    api::NodeAffinity only_ssd;
    only_ssd.requiredDuringSchedulingIgnoredDuringExecution = api::NodeSelector{{api::NodeSelectorTerm{{ssd}, {}}}};
    vc.nodeAffinity = only_ssd;
    CHECK(verdict(h.validate(cluster(3), manager(), vc)) ==
          "replicas [2] greater than number of nodes [1] matching the volume's nodeAffinity");
    CHECK(h.status(cluster(3), manager(), vc, {}).phase == handlers::VolumePhase::Failed);
}
