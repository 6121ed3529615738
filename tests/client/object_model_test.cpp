// Specification of the typed object model: conversions keep what they do not model.
#include <vck/api/coordination_v1.hpp>
#include <vck/api/core_v1.hpp>

#include <doctest.h>

using namespace vck::api;

TEST_CASE("a typed round trip keeps every field the structs do not model") {
    auto in = parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"n",
      "managedFields":[{"manager":"kubectl"}],"labels":{"a":"b"}},
      "spec":{"dnsPolicy":"ClusterFirst","containers":[{"name":"c","image":"i","ports":[{"containerPort":80}],
      "livenessProbe":{"exec":{"command":["true"]}}}],"volumes":[{"name":"cm","configMap":{"name":"x"}}]},
      "status":{"phase":"Running","podIP":"10.0.0.1","qosClass":"BestEffort"}})");
    auto pod = from_json<Pod>(in);
    CHECK(pod.metadata.labels.at("a") == "b");
    CHECK(pod.spec.containers.at(0).image == "i");
    CHECK(to_json(pod) == in);
}

TEST_CASE("`unknown` holds exactly the keys its struct does not model, at every level") {
    auto pod = from_json<Pod>(parse(R"({"metadata":{"name":"p","managedFields":[{"manager":"kubectl"}],
      "labels":{"a":"b"}},"spec":{"dnsPolicy":"ClusterFirst","containers":[{"name":"c","image":"i",
      "ports":[{"containerPort":80}]}]}})"));
    auto keys = [](const json::object& o) {
        std::vector<std::string> k;
        for (const auto& kv : o) k.emplace_back(kv.key());
        return k;
    };
    CHECK(keys(pod.metadata.unknown) == std::vector<std::string>{"managedFields"});
    CHECK(keys(pod.spec.unknown) == std::vector<std::string>{"dnsPolicy"});
    CHECK(keys(pod.spec.containers.at(0).unknown) == std::vector<std::string>{"ports"});
    CHECK(pod.unknown.empty());  // metadata and spec are modelled, so neither is kept twice
}

TEST_CASE("a changed typed field is written while unknown siblings stay") {
    auto in = parse(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},
      "spec":{"podCIDR":"10.0.0.0/24","configSource":{"x":1}},"status":{"phase":"Running"}})");
    auto node = from_json<Node>(in);
    node.spec.taints.push_back(Taint{"k", "v", "NoSchedule", ""});
    auto out = to_json(node);
    CHECK(out.at("spec").at("configSource").at("x") == 1);
    CHECK(out.at("spec").at("taints").at(0).at("effect") == "NoSchedule");
    CHECK(out.at("status").at("phase") == "Running");
}

TEST_CASE("a value of the wrong type names its field path") {
    auto bad = parse(R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","args":["a",3]}]}})");
    CHECK_THROWS_WITH_AS(from_json<Pod>(bad), "spec.containers[0].args[1]: expected string, got integer", DecodeError);
}

TEST_CASE("empty optional fields are omitted, as Go's omitempty does") {
    Lease l;
    l.metadata.name = "x";
    auto v = to_json(l);
    CHECK(v.at("spec").as_object().empty());
    CHECK_FALSE(v.at("metadata").as_object().contains("labels"));
    CHECK(v.at("apiVersion") == "coordination.k8s.io/v1");
}

TEST_CASE("C++ keywords map to their JSON names") {
    auto t = from_json<Toleration>(parse(R"({"key":"k","operator":"Exists","effect":"NoSchedule"})"));
    CHECK(t.operator_ == "Exists");
    CHECK(to_json(t).at("operator") == "Exists");
    ObjectMeta m;
    m.namespace_ = "ns";
    CHECK(to_json(m).at("namespace") == "ns");
}
