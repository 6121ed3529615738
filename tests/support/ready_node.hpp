// A node as a kubelet registers it: created, then its status reports Ready. VCK places copies
// on Ready nodes only (as the node lifecycle controller taints the others not-ready), so a
// test's nodes must say they are Ready, as every node of a working cluster does.
#pragma once

#include <vck/sandbox/storage/object_store.hpp>

#include <boost/json.hpp>

#include <chrono>
#include <ctime>
#include <string>

namespace vck::test {

inline void create_ready_node(sandbox::ObjectStore& store, const std::string& name, boost::json::object labels = {}) {
    const sandbox::ResourceId nodes{"", "v1", "nodes"};
    labels["kubernetes.io/hostname"] = name;
    store.create(nodes, "", boost::json::value{{"metadata", {{"name", name}, {"labels", std::move(labels)}}}});
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char at[32];
    std::strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm);
    boost::json::value ready{{"type", "Ready"}, {"status", "True"}, {"reason", "KubeletReady"},
                             {"lastTransitionTime", at}, {"lastHeartbeatTime", at}};
    store.patch(nodes, "", name, client::PatchType::Merge,
                boost::json::value{{"status", {{"conditions", boost::json::array{ready}}}}}, "status");
}

} // namespace vck::test
