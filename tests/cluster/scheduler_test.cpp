// The simulated scheduler: where pods go (anti-affinity, taints and tolerations, node affinity
// operators, NotReady and cordoned nodes) and how it reports pods that fit nowhere.
#include "cluster_fixture.hpp"

#include <set>

using namespace vck::sandbox;
using vck::client::PatchType;
using namespace cluster_test;

namespace {

json::object anti_affinity(const std::string& app) {
    json::value term = json::object{
        {"labelSelector", json::object{{"matchLabels", json::object{{"app", app}}}}},
        {"topologyKey", "kubernetes.io/hostname"}};
    return json::object{{"affinity", json::object{{"podAntiAffinity", json::object{
        {"requiredDuringSchedulingIgnoredDuringExecution", json::array{term}}}}}}};
}

json::value labelled(json::value p, const std::string& app) {
    p.as_object()["metadata"].as_object()["labels"] = json::object{{"app", app}};
    return p;
}

json::object node_affinity(json::array terms) {
    return json::object{{"affinity", json::object{{"nodeAffinity", json::object{
        {"requiredDuringSchedulingIgnoredDuringExecution", json::object{{"nodeSelectorTerms", std::move(terms)}}}}}}}};
}

json::object expr(const std::string& key, const std::string& op, json::array values = {}) {
    json::object e{{"key", key}, {"operator", op}};
    if (!values.empty()) e["values"] = std::move(values);
    return e;
}

json::object term(json::array exprs) { return json::object{{"matchExpressions", std::move(exprs)}}; }

std::string scheduled_condition_message(Sandbox& sb, const std::string& name) {
    auto conditions = at(get_pod(sb, name), "status.conditions");
    if (!conditions.is_array()) return "";
    for (const auto& c : conditions.as_array())
        if (str(c, "type") == "PodScheduled" && str(c, "status") == "False" && str(c, "reason") == "Unschedulable")
            return str(c, "message");
    return "";
}

Sandbox::Options forever_options(int n = 3) {
    auto o = quiet_options(n);
    o.default_image = ImageBehaviour::run_forever();
    return o;
}

} // namespace

TEST_CASE("required pod anti-affinity spreads pods one per node and the next one is unschedulable") {
    Sandbox sb(forever_options(3));
    for (int i = 0; i < 3; ++i)
        sb.store().create(pods, "default", labelled(pod("web-" + std::to_string(i), "nginx", anti_affinity("web")), "web"));
    std::set<std::string> used;
    REQUIRE(eventually([&] {
        used.clear();
        for (int i = 0; i < 3; ++i) used.insert(node_of(sb, "web-" + std::to_string(i)));
        return used.size() == 3 && !used.count("");
    }));
    sb.store().create(pods, "default", labelled(pod("web-3", "nginx", anti_affinity("web")), "web"));
    const std::string expected =
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes are "
        "available: 3 No preemption victims found for incoming pod.";
    REQUIRE(eventually([&] { return !events_for(sb, "web-3", "FailedScheduling").empty(); }));
    auto ev = events_for(sb, "web-3", "FailedScheduling").front();
    CHECK(str(ev, "type") == "Warning");
    CHECK(str(ev, "message") == expected);
    CHECK(str(ev, "source.component") == "default-scheduler");
    CHECK(str(ev, "involvedObject.kind") == "Pod");
    CHECK(str(ev, "involvedObject.uid") == str(get_pod(sb, "web-3"), "metadata.uid"));
    CHECK(scheduled_condition_message(sb, "web-3") == expected);
    CHECK(phase(sb, "web-3") == "Pending");
    CHECK(node_of(sb, "web-3").empty());

    // A pod of another app is not repelled, and freeing a node lets the waiting pod in.
    sb.store().create(pods, "default", labelled(pod("other"), "db"));
    REQUIRE(eventually([&] { return !node_of(sb, "other").empty(); }));
    auto freed = node_of(sb, "web-1");
    sb.store().remove(pods, "default", "web-1");
    REQUIRE(eventually([&] { return node_of(sb, "web-3") == freed; }));
}

TEST_CASE("the scheduler reports Scheduled events naming the pod and the node") {
    Sandbox sb(forever_options(1));
    sb.store().create(pods, "default", pod("p"));
    REQUIRE(eventually([&] { return !events_for(sb, "p", "Scheduled").empty(); }));
    auto ev = events_for(sb, "p", "Scheduled").front();
    CHECK(str(ev, "message") == "Successfully assigned default/p to node-1");
    CHECK(str(ev, "source.component") == "default-scheduler");
    CHECK(str(ev, "type") == "Normal");
}

TEST_CASE("a pod with scheduling gates is left alone until they are removed, then placed where its narrowed selector says") {
    Sandbox sb(forever_options(3));
    sb.store().create(pods, "default", pod("gated", "busybox", json::object{{"schedulingGates", json::array{json::object{{"name", "vck.intelai.org/data"}}}}}));
    // A pod created after it is placed: the scheduler has run since, and passed the gated one by.
    sb.store().create(pods, "default", pod("later"));
    REQUIRE(eventually([&] { return !node_of(sb, "later").empty(); }));
    CHECK(node_of(sb, "gated").empty());
    CHECK(events_for(sb, "gated", "FailedScheduling").empty());
    CHECK(scheduled_condition_message(sb, "gated").empty());

    // Removing the gate and adding a nodeSelector in one update (what a gate's owner does).
    sb.store().patch(pods, "default", "gated", PatchType::Merge,
                     json::parse(R"({"spec": {"schedulingGates": null, "nodeSelector": {"kubernetes.io/hostname": "node-2"}}})"));
    REQUIRE(eventually([&] { return node_of(sb, "gated") == "node-2"; }));
}

TEST_CASE("taints repel pods that do not tolerate them and admit those that do") {
    auto o = forever_options();
    o.simulated_nodes = parse_simulated_nodes(R"(
nodes:
- name: gpu
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
- name: edge
  taints: [{key: edge, effect: NoExecute}]
- name: plain
  labels: {kind: plain}
)");
    Sandbox sb(o);
    json::object to_gpu{{"nodeSelector", json::object{{"kubernetes.io/hostname", "gpu"}}}};
    json::object not_plain{{"affinity", node_affinity({term({expr("kind", "DoesNotExist")})})["affinity"]}};

    sb.store().create(pods, "default", pod("intolerant", "nginx", not_plain));
    REQUIRE(eventually([&] { return !scheduled_condition_message(sb, "intolerant").empty(); }));
    CHECK(scheduled_condition_message(sb, "intolerant") ==
          "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated "
          "taint {dedicated: gpu}, 1 node(s) had untolerated taint {edge: }. preemption: 0/3 nodes are available: 3 "
          "Preemption is not helpful for scheduling.");

    auto equal = to_gpu;
    equal["tolerations"] = json::array{json::object{{"key", "dedicated"}, {"operator", "Equal"}, {"value", "gpu"},
                                                    {"effect", "NoSchedule"}}};
    sb.store().create(pods, "default", pod("tolerant", "nginx", equal));
    REQUIRE(eventually([&] { return node_of(sb, "tolerant") == "gpu"; }));

    auto wrong_value = to_gpu;
    wrong_value["tolerations"] = json::array{json::object{{"key", "dedicated"}, {"operator", "Equal"}, {"value", "cpu"}}};
    sb.store().create(pods, "default", pod("wrong-value", "nginx", wrong_value));
    REQUIRE(eventually([&] { return !scheduled_condition_message(sb, "wrong-value").empty(); }));
    CHECK(node_of(sb, "wrong-value").empty());

    json::object to_edge{{"nodeSelector", json::object{{"kubernetes.io/hostname", "edge"}}},
                         {"tolerations", json::array{json::object{{"operator", "Exists"}}}}};
    sb.store().create(pods, "default", pod("tolerates-all", "nginx", to_edge));
    REQUIRE(eventually([&] { return node_of(sb, "tolerates-all") == "edge"; }));
}

TEST_CASE("node affinity operators select nodes: terms are ORed and expressions ANDed") {
    auto o = forever_options();
    o.simulated_nodes = parse_simulated_nodes(R"([
      {"name": "small", "labels": {"disk": "hdd", "cores": "4"}},
      {"name": "medium", "labels": {"disk": "ssd", "cores": "8"}},
      {"name": "large", "labels": {"disk": "ssd", "cores": "16", "gpu": "yes"}}
    ])");
    Sandbox sb(o);
    struct Case {
        std::string name;
        json::array terms;
        std::string node;
    };
    std::vector<Case> cases = {
        {"in", {term({expr("disk", "In", {"hdd"})})}, "small"},
        {"notin-and-gt", {term({expr("disk", "NotIn", {"hdd"}), expr("cores", "Lt", {"10"})})}, "medium"},
        {"exists", {term({expr("gpu", "Exists")})}, "large"},
        {"doesnotexist-and-in", {term({expr("gpu", "DoesNotExist"), expr("disk", "In", {"ssd"})})}, "medium"},
        {"gt", {term({expr("cores", "Gt", {"8"})})}, "large"},
        {"lt", {term({expr("cores", "Lt", {"5"})})}, "small"},
        {"ored", {term({expr("disk", "In", {"nvme"})}), term({expr("cores", "In", {"16"})})}, "large"},
        {"fields", {json::object{{"matchFields", json::array{expr("metadata.name", "In", {"medium"})}}}}, "medium"},
    };
    for (auto& c : cases) sb.store().create(pods, "default", pod(c.name, "nginx", node_affinity(c.terms)));
    for (const auto& c : cases) {
        CAPTURE(c.name);
        CHECK(eventually([&] { return node_of(sb, c.name) == c.node; }));
    }
    sb.store().create(pods, "default", pod("nowhere", "nginx", node_affinity({term({expr("cores", "Gt", {"100"})})})));
    REQUIRE(eventually([&] { return !scheduled_condition_message(sb, "nowhere").empty(); }));
    CHECK(scheduled_condition_message(sb, "nowhere") ==
          "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are "
          "available: 3 Preemption is not helpful for scheduling.");
}

TEST_CASE("NotReady, disk-pressure and cordoned nodes get no new pods") {
    Sandbox sb(forever_options());
    auto flip = [&](const std::string& node, const std::string& type, const std::string& status) {
        auto n = sb.store().get(nodes, "", node);
        for (auto& c : n.as_object()["status"].as_object()["conditions"].as_array())
            if (str(c, "type") == type) c.as_object()["status"] = status;
        sb.store().update(nodes, "", node, n, "status");
    };
    flip("node-1", "Ready", "False");
    flip("node-2", "DiskPressure", "True");
    json::value cordon = json::object{{"spec", json::object{{"unschedulable", true}}}};
    for (int i = 0; i < 4; ++i) sb.store().create(pods, "default", pod("p" + std::to_string(i)));
    for (int i = 0; i < 4; ++i) CHECK(eventually([&] { return node_of(sb, "p" + std::to_string(i)) == "node-3"; }));

    sb.store().patch(nodes, "", "node-3", PatchType::Merge, cordon);
    sb.store().create(pods, "default", pod("stuck"));
    INFO("stuck is on node \"", node_of(sb, "stuck"), "\"");
    REQUIRE(eventually([&] { return !scheduled_condition_message(sb, "stuck").empty(); }));
    CHECK(scheduled_condition_message(sb, "stuck") ==
          "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/disk-pressure: }, 1 node(s) "
          "had untolerated taint {node.kubernetes.io/not-ready: }, 1 node(s) were unschedulable. preemption: 0/3 "
          "nodes are available: 3 Preemption is not helpful for scheduling.");

    flip("node-1", "Ready", "True");  // the node recovers: the pending pod is retried
    REQUIRE(eventually([&] { return node_of(sb, "stuck") == "node-1"; }));
}

TEST_CASE("a nodes file defines names, labels, zones, taints and capacity") {
    auto specs = parse_simulated_nodes(R"(
- name: a
  zone: z1
  labels: {tier: fast}
  capacity: {cpu: "2", pods: "5"}
  taints: [{key: k, value: v, effect: NoExecute}]
- name: b
  unschedulable: true
)");
    REQUIRE(specs.size() == 2);
    CHECK(specs[0].zone == "z1");
    CHECK(specs[0].capacity.at("cpu") == "2");
    CHECK(specs[0].capacity.at("memory") == "16Gi");
    CHECK(specs[1].unschedulable);

    auto o = quiet_options();
    o.simulated_nodes = specs;
    Sandbox sb(o);
    auto a = sb.store().get(nodes, "", "a");
    CHECK(str(a, "metadata.labels.topology.kubernetes.io/zone").empty());  // dotted keys are not paths here
    CHECK(a.at("metadata").at("labels").at("topology.kubernetes.io/zone") == "z1");
    CHECK(a.at("metadata").at("labels").at("kubernetes.io/hostname") == "a");
    CHECK(a.at("metadata").at("labels").at("kubernetes.io/os") == "linux");
    CHECK(a.at("metadata").at("labels").at("tier") == "fast");
    CHECK(str(a, "spec.taints[0].effect") == "NoExecute");
    CHECK(str(a, "status.capacity.pods") == "5");
    CHECK(str(a, "status.allocatable.cpu") == "2");
    bool ready = false, disk = false;
    for (const auto& c : a.at("status").at("conditions").as_array()) {
        if (str(c, "type") == "Ready") ready = str(c, "status") == "True" && !str(c, "lastHeartbeatTime").empty();
        if (str(c, "type") == "DiskPressure") disk = str(c, "status") == "False";
    }
    CHECK(ready);
    CHECK(disk);
    CHECK(at(sb.store().get(nodes, "", "b"), "spec.unschedulable") == true);
}

TEST_CASE("a malformed nodes file is refused with the file and field named") {
    auto refusal = [](const std::string& text) {
        try {
            parse_simulated_nodes(text, "nodes.yaml");
        } catch (const SimulatedNodeError& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    CHECK(refusal("nodes:\n- name: a\n  taints: [{key: k, effect: Sometimes}]\n") ==
          "nodes.yaml: nodes[0].taints[0].effect: Unsupported value: \"Sometimes\": supported values: "
          "\"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"");
    CHECK(refusal("- name: a\n- name: a\n") == "nodes.yaml: [1].name: Duplicate value: \"a\"");
    CHECK(refusal("- labels: {x: y}\n") == "nodes.yaml: [0].name: required");
    CHECK(refusal("- name: a\n  colour: red\n") ==
          "nodes.yaml: [0]: unknown field \"colour\" (known: name, labels, zone, taints, capacity, unschedulable, address)");
    CHECK(refusal("{nodes: [").starts_with("nodes.yaml: not valid YAML or JSON"));
    CHECK_THROWS_AS(load_simulated_nodes("/nonexistent/nodes.yaml"), SimulatedNodeError);
}

TEST_CASE("too many pods on a node make it unavailable") {
    auto o = forever_options();
    o.simulated_nodes = parse_simulated_nodes("- {name: tiny, capacity: {pods: '1'}}\n");
    Sandbox sb(o);
    sb.store().create(pods, "default", pod("first"));
    REQUIRE(eventually([&] { return node_of(sb, "first") == "tiny"; }));
    sb.store().create(pods, "default", pod("second"));
    REQUIRE(eventually([&] { return !scheduled_condition_message(sb, "second").empty(); }));
    CHECK(scheduled_condition_message(sb, "second") ==
          "0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: 1 No preemption victims "
          "found for incoming pod.");
}

TEST_CASE("the room a pod leaves on its node goes to a waiting pod: a finished pod's and a deleted pod's requests are "
          "counted off") {
    auto o = forever_options();
    o.simulated_nodes = parse_simulated_nodes("- {name: small, capacity: {cpu: '1', pods: '10'}}\n");
    o.images["worker"] = ImageBehaviour::succeed(std::chrono::seconds(5));
    Sandbox sb(o);
    auto asking = [](const std::string& name, const std::string& image = "busybox") {
        auto p = pod(name, image);
        p.at("spec").at("containers").at(0).as_object()["resources"] =
            json::object{{"requests", json::object{{"cpu", "600m"}}}};
        return p;
    };
    sb.store().create(pods, "default", asking("first", "worker"));
    REQUIRE(eventually([&] { return node_of(sb, "first") == "small"; }));
    sb.store().create(pods, "default", asking("second"));
    REQUIRE(eventually([&] { return !scheduled_condition_message(sb, "second").empty(); }));
    CHECK(scheduled_condition_message(sb, "second") ==
          "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims "
          "found for incoming pod.");
    // The first pod succeeds: its 600m no longer count, and the waiting pod is placed.
    REQUIRE(eventually([&] { return node_of(sb, "second") == "small"; }));
    sb.store().create(pods, "default", asking("third"));
    REQUIRE(eventually([&] { return !scheduled_condition_message(sb, "third").empty(); }));
    CHECK(node_of(sb, "third").empty());
    // Deleted, the second pod's room goes to the third.
    sb.store().remove(pods, "default", "second");
    CHECK(eventually([&] { return node_of(sb, "third") == "small"; }));
}
