// Specification of the typed object model: conversions keep what they do not model.
#include <vck/api/coordination_v1.hpp>
#include <vck/api/core_v1.hpp>
#include <vck/api/json_decoder.hpp>

#include <doctest.h>

#include <map>
#include <optional>
#include <vector>

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

namespace user_operator {  // an operator's own custom resource, outside vck::api
struct BackupTarget {
    std::string bucket;
    std::optional<std::int64_t> retainDays;
    std::string namespace_;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(BackupTarget, (), (bucket, retainDays, namespace_))

struct Backup {
    std::string apiVersion;
    std::string kind;
    ObjectMeta metadata;
    BackupTarget spec;
    std::vector<BackupTarget> history;
    std::map<std::string, BackupTarget> byRegion;
    std::optional<BackupTarget> next;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(Backup, (), (apiVersion, kind, metadata, spec, history, byRegion, next))
} // namespace user_operator

TEST_CASE("an operator's own described types, in its own namespace, convert exactly as vck's do") {
    auto in = parse(R"({"apiVersion":"example.com/v1","kind":"Backup","metadata":{"name":"b","namespace":"n"},
      "spec":{"bucket":"x","namespace":"team-a","encryption":{"kms":"k"}},
      "history":[{"bucket":"old","retainDays":7}],"byRegion":{"eu":{"bucket":"e","tier":"cold"}},
      "status":{"phase":"Done"}})");
    auto b = from_json<user_operator::Backup>(in);
    CHECK(b.spec.namespace_ == "team-a");
    CHECK(b.spec.unknown.contains("encryption"));
    CHECK(b.history.at(0).retainDays == 7);
    CHECK(b.byRegion.at("eu").unknown.contains("tier"));
    CHECK(b.unknown.contains("status"));
    // Nothing lost on the way back, no "unknown" or "namespace_" key, nothing written for
    // what was absent (retainDays, next), at every level and inside vectors and maps.
    CHECK(to_json(b) == in);
    // The no-DOM decoder agrees with from_json, and a wrong type names its path either way.
    CHECK(to_json(decode_json<user_operator::Backup>(json::serialize(in))) == in);
    auto bad = R"({"history":[{"retainDays":"a week"}]})";
    CHECK_THROWS_WITH_AS(from_json<user_operator::Backup>(parse(bad)), doctest::Contains("history[0].retainDays"), DecodeError);
    CHECK_THROWS_WITH_AS(decode_json<user_operator::Backup>(bad), doctest::Contains("history[0].retainDays"), DecodeError);
}
