// SimulatedNode: how a simulated node is defined (name, labels, zone, taints, capacity), read from a
// YAML or JSON nodes file or generated, and the Node object a simulated kubelet registers for
// it. Guarantees: a malformed nodes file raises SimulatedNodeError naming the file and the field
// ("nodes.yaml: nodes[1].taints[0].effect: ..."); every node gets the well-known labels
// kubernetes.io/hostname, kubernetes.io/os and kubernetes.io/arch (and the zone label when set).
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/time.hpp>
#include <vck/version.hpp>

#include <boost/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace vck::sandbox {

class SimulatedNodeError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct SimulatedNode {
    std::string name;
    std::map<std::string, std::string> labels;  // added to the well-known ones
    std::string zone;                            // topology.kubernetes.io/zone, when not empty
    std::vector<api::Taint> taints;
    std::map<std::string, std::string> capacity = default_capacity();  // allocatable is the same
    bool unschedulable = false;
    std::string address;  // InternalIP; generated from the node's index when empty

    static std::map<std::string, std::string> default_capacity() {
        return {{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "110"}, {"ephemeral-storage", "100Gi"}};
    }
};

/// N plain nodes named node-1 .. node-N.
inline std::vector<SimulatedNode> default_simulated_nodes(int n) {
    if (n < 0) throw SimulatedNodeError("the number of nodes must not be negative, got " + std::to_string(n));
    std::vector<SimulatedNode> out;
    for (int i = 1; i <= n; ++i) {
        SimulatedNode s;
        s.name = "node-" + std::to_string(i);
        out.push_back(std::move(s));
    }
    return out;
}

namespace simulated_node_detail {

inline std::string scalar(const YAML::Node& n, const std::string& where) {
    if (!n.IsScalar()) throw SimulatedNodeError(where + ": must be a string");
    return n.as<std::string>();
}

inline std::map<std::string, std::string> string_map(const YAML::Node& n, const std::string& where) {
    std::map<std::string, std::string> out;
    if (!n || n.IsNull()) return out;
    if (!n.IsMap()) throw SimulatedNodeError(where + ": must be a map of strings");
    for (const auto& kv : n) {
        auto key = scalar(kv.first, where);
        out[key] = scalar(kv.second, where + "." + key);
    }
    return out;
}

inline SimulatedNode read_one(const YAML::Node& n, const std::string& where) {
    if (!n.IsMap()) throw SimulatedNodeError(where + ": must be a map with at least a name");
    SimulatedNode s;
    static const std::vector<std::string> known = {"name", "labels", "zone", "taints", "capacity", "unschedulable",
                                                   "address"};
    for (const auto& kv : n) {
        auto key = scalar(kv.first, where);
        if (std::find(known.begin(), known.end(), key) == known.end())
            throw SimulatedNodeError(where + ": unknown field \"" + key +
                                "\" (known: name, labels, zone, taints, capacity, unschedulable, address)");
    }
    if (!n["name"]) throw SimulatedNodeError(where + ".name: required");
    s.name = scalar(n["name"], where + ".name");
    if (s.name.empty()) throw SimulatedNodeError(where + ".name: must not be empty");
    s.labels = string_map(n["labels"], where + ".labels");
    if (n["zone"]) s.zone = scalar(n["zone"], where + ".zone");
    if (n["address"]) s.address = scalar(n["address"], where + ".address");
    if (n["unschedulable"]) {
        try {
            s.unschedulable = n["unschedulable"].as<bool>();
        } catch (const YAML::Exception&) {
            throw SimulatedNodeError(where + ".unschedulable: must be true or false");
        }
    }
    if (auto cap = string_map(n["capacity"], where + ".capacity"); !cap.empty())
        for (auto& [k, v] : cap) s.capacity[k] = v;
    if (const auto& ts = n["taints"]; ts && !ts.IsNull()) {
        if (!ts.IsSequence()) throw SimulatedNodeError(where + ".taints: must be a list");
        for (std::size_t i = 0; i < ts.size(); ++i) {
            auto tw = where + ".taints[" + std::to_string(i) + "]";
            if (!ts[i].IsMap()) throw SimulatedNodeError(tw + ": must be a map with key, value and effect");
            api::Taint t;
            if (!ts[i]["key"]) throw SimulatedNodeError(tw + ".key: required");
            t.key = scalar(ts[i]["key"], tw + ".key");
            if (ts[i]["value"]) t.value = scalar(ts[i]["value"], tw + ".value");
            if (!ts[i]["effect"]) throw SimulatedNodeError(tw + ".effect: required");
            t.effect = scalar(ts[i]["effect"], tw + ".effect");
            if (t.effect != "NoSchedule" && t.effect != "PreferNoSchedule" && t.effect != "NoExecute")
                throw SimulatedNodeError(tw + ".effect: Unsupported value: \"" + t.effect +
                                    "\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"");
            s.taints.push_back(std::move(t));
        }
    }
    return s;
}

} // namespace simulated_node_detail

/// Reads node definitions from YAML or JSON text: either a list of nodes or {nodes: [...]}.
/// `origin` prefixes error messages (usually the file name). Names must be unique.
inline std::vector<SimulatedNode> parse_simulated_nodes(const std::string& text, const std::string& origin = "nodes") {
    YAML::Node doc;
    try {
        doc = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        throw SimulatedNodeError(origin + ": not valid YAML or JSON: " + e.what());
    }
    YAML::Node list = doc;
    std::string where = "";
    if (doc.IsMap()) {
        list = doc["nodes"];
        where = "nodes";
        if (!list) throw SimulatedNodeError(origin + ": expected a list of nodes or a map with \"nodes\"");
    }
    if (!list.IsSequence()) throw SimulatedNodeError(origin + ": " + (where.empty() ? "the document" : where) + " must be a list");
    std::vector<SimulatedNode> out;
    try {
        for (std::size_t i = 0; i < list.size(); ++i) {
            auto s = simulated_node_detail::read_one(list[i], where + "[" + std::to_string(i) + "]");
            for (const auto& o : out)
                if (o.name == s.name)
                    throw SimulatedNodeError(where + "[" + std::to_string(i) + "].name: Duplicate value: \"" + s.name + "\"");
            out.push_back(std::move(s));
        }
    } catch (const SimulatedNodeError& e) {
        throw SimulatedNodeError(origin + ": " + e.what());
    }
    return out;
}

inline std::vector<SimulatedNode> load_simulated_nodes(const std::filesystem::path& file) {
    std::ifstream in(file);
    if (!in) throw SimulatedNodeError(file.string() + ": cannot read the nodes file");
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_simulated_nodes(ss.str(), file.string());
}

/// The address a node gets when its spec names none: 172.18.0.<index + 2>.
inline std::string node_address(const SimulatedNode& s, std::size_t index) {
    return s.address.empty() ? "172.18.0." + std::to_string(index + 2) : s.address;
}

/// The Node object (metadata and spec only) a kubelet registers for `s`.
inline boost::json::value node_object(const SimulatedNode& s) {
    namespace json = boost::json;
    json::object labels{{"kubernetes.io/hostname", s.name}, {"kubernetes.io/os", "linux"},
                        {"kubernetes.io/arch", "amd64"}, {"beta.kubernetes.io/os", "linux"},
                        {"beta.kubernetes.io/arch", "amd64"}};
    if (!s.zone.empty()) labels["topology.kubernetes.io/zone"] = s.zone;
    for (const auto& [k, v] : s.labels) labels[k] = v;
    json::object spec;
    if (!s.taints.empty()) spec["taints"] = api::to_json(s.taints);
    if (s.unschedulable) spec["unschedulable"] = true;
    return json::object{{"apiVersion", "v1"}, {"kind", "Node"},
                        {"metadata", json::object{{"name", s.name}, {"labels", std::move(labels)}}},
                        {"spec", std::move(spec)}};
}

/// The status a healthy node reports: capacity, conditions Ready=True and no pressure.
inline boost::json::value node_status(const SimulatedNode& s, std::size_t index, const std::string& now) {
    namespace json = boost::json;
    json::object cap;
    for (const auto& [k, v] : s.capacity) cap[k] = v;
    auto cond = [&](const char* type, const char* status, const char* reason, const char* message) {
        return json::object{{"type", type}, {"status", status}, {"lastHeartbeatTime", now},
                            {"lastTransitionTime", now}, {"reason", reason}, {"message", message}};
    };
    return json::object{
        {"capacity", cap},
        {"allocatable", cap},
        {"conditions", json::array{cond("MemoryPressure", "False", "KubeletHasSufficientMemory",
                                        "kubelet has sufficient memory available"),
                                   cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                                   cond("PIDPressure", "False", "KubeletHasSufficientPID",
                                        "kubelet has sufficient PID available"),
                                   cond("Ready", "True", "KubeletReady", "kubelet is posting ready status")}},
        {"addresses", json::array{json::object{{"type", "InternalIP"}, {"address", node_address(s, index)}},
                                  json::object{{"type", "Hostname"}, {"address", s.name}}}},
        {"daemonEndpoints", json::object{{"kubeletEndpoint", json::object{{"Port", 10250}}}}},
        {"nodeInfo", json::object{{"machineID", ""}, {"systemUUID", ""}, {"bootID", ""},
                                  {"kernelVersion", "vck-sandbox"}, {"osImage", "vck sandbox node"},
                                  {"containerRuntimeVersion", "vck-sandbox://" VCK_VERSION},
                                  // The server's own version (api_handler.hpp's /version), as a
                                  // cluster's kubelets match their API server's minor version.
                                  {"kubeletVersion", "v1.32.0-vck-sandbox"}, {"kubeProxyVersion", "v1.32.0-vck-sandbox"},
                                  {"operatingSystem", "linux"}, {"architecture", "amd64"}}},
    };
}

} // namespace vck::sandbox
