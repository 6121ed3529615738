// Specification of validate_spec (include/vck/handlers/spec_validation.hpp): the checks every
// VolumeManager spec passes before any handler builds from it, whatever its source types, worded
// as kube-apiserver words them and naming the volume. The examples and fixtures all pass it
// (examples_test.cpp).
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/spec_validation.hpp>

#include <doctest.h>

#include "printers.hpp"

#include <boost/json.hpp>

#include <string>
#include <vector>

using namespace vck::handlers;
namespace api = vck::api;

namespace {

api::VolumeConfig nfs(std::string id = "shared") {
    api::VolumeConfig vc;
    vc.id = std::move(id);
    vc.sourceType = "NFS";
    vc.accessMode = "ReadWriteMany";
    vc.capacity = "5Gi";
    vc.labels = {{"key1", "val1"}};
    vc.options = {{"server", "10.0.0.5"}, {"path", "/exports/data"}};
    return vc;
}

api::VolumeManagerSpec spec_of(std::vector<api::VolumeConfig> volumes) {
    api::VolumeManagerSpec spec;
    spec.volumeConfigs = std::move(volumes);
    return spec;
}

/// validate_spec of a spec holding `vc` alone.
std::optional<std::string> check(const api::VolumeConfig& vc) { return validate_spec(spec_of({vc})); }

const std::string name_rule =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

} // namespace

TEST_CASE("a spec without volumes is refused, and the older spec.volumes spelling is named") {
    CHECK(validate_spec({}) == "spec.volumeConfigs: Required value: at least one volume config is needed");
    auto decoded = api::from_json<api::VolumeManager>(boost::json::parse(
        R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","metadata":{"name":"x"}})"));
    CHECK(validate_spec(decoded.spec) == "spec.volumeConfigs: Required value: at least one volume config is needed");
    auto old = api::from_json<api::VolumeManager>(boost::json::parse(
        R"({"metadata":{"name":"x"},"spec":{"volumes":[{"id":"a","sourceType":"NFS","accessMode":"ReadWriteMany"}]}})"));
    CHECK(validate_spec(old.spec) ==
          "spec.volumeConfigs: Required value: spec.volumes is the older KVC spelling, rename it to spec.volumeConfigs");
    CHECK(validate_spec(spec_of({nfs()})) == std::nullopt);
}

TEST_CASE("a volume id used twice is refused in the reconciler's words") {
    CHECK(validate_spec(spec_of({nfs("a"), nfs("b"), nfs("a")})) == R"(volume id "a" is used more than once)");
    CHECK(check(nfs("")) == R"(volume "": id: Required value)");
    CHECK(check(nfs(std::string(253, 'v'))) == std::nullopt);
    CHECK(check(nfs(std::string(254, 'v'))) ==
          "volume \"" + std::string(254, 'v') + "\": id: Too long: may not be more than 253 bytes");
}

TEST_CASE("an unknown desired state is refused with the supported values") {
    auto spec = spec_of({nfs()});
    for (std::string ok : {"", "Pending", "Running", "Failed", "Completed"}) {
        spec.state = ok;
        CHECK(validate_spec(spec) == std::nullopt);
    }
    spec.state = "Sleeping";
    CHECK(validate_spec(spec) ==
          R"(spec.state: Unsupported value: "Sleeping": supported values: "Pending", "Running", "Failed", "Completed")");
}

TEST_CASE("label keys are qualified names and values valid label values, refused as kube-apiserver words it") {
    auto with_label = [](std::string key, std::string value) {
        auto vc = nfs("train");
        vc.labels = {{key, value}};
        return check(vc);
    };
    for (const auto& key : std::vector<std::string>{"app", "A", "a-b_c.d", "example.com/app", "vck.intelai.org/x",
                                                   std::string(63, 'k'), std::string(253, 'p') + "/" + std::string(63, 'n')})
        CHECK(with_label(key, "v") == std::nullopt);
    for (const auto& value : std::vector<std::string>{"", "v", "My_value-1.2", std::string(63, 'v')})
        CHECK(with_label("app", value) == std::nullopt);

    std::string long_key(64, 'k');
    CHECK(with_label(long_key, "v") ==
          R"(volume "train": labels: Invalid value: ")" + long_key + R"(": name part must be no more than 63 characters)");
    CHECK(with_label("-app", "v") == R"(volume "train": labels: Invalid value: "-app": name part )" + name_rule);
    CHECK(with_label("my app", "v") == R"(volume "train": labels: Invalid value: "my app": name part )" + name_rule);
    CHECK(with_label("", "v") == R"(volume "train": labels: Invalid value: "": name part must be non-empty)");
    CHECK(with_label("example.com/", "v") ==
          R"(volume "train": labels: Invalid value: "example.com/": name part must be non-empty)");
    CHECK(with_label("/app", "v") == R"(volume "train": labels: Invalid value: "/app": prefix part must be non-empty)");
    CHECK(with_label(std::string(254, 'p') + "/app", "v") ==
          R"(volume "train": labels: Invalid value: ")" + std::string(254, 'p') +
              R"(/app": prefix part must be no more than 253 characters)");
    auto upper = with_label("Example.com/app", "v");
    REQUIRE(upper);
    CHECK(upper->find(R"(Invalid value: "Example.com/app": prefix part a lowercase RFC 1123 subdomain)") !=
          std::string::npos);
    auto slashes = with_label("a/b/c", "v");
    REQUIRE(slashes);
    CHECK(slashes->find("with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')") != std::string::npos);

    std::string long_value(64, 'v');
    CHECK(with_label("app", long_value) ==
          R"(volume "train": labels: Invalid value: ")" + long_value + R"(": must be no more than 63 characters)");
    CHECK(with_label("app", "two words") ==
          R"(volume "train": labels: Invalid value: "two words": a valid label must be an empty string or consist of )"
          R"(alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character )"
          R"((e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is )"
          R"('(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'))");
}

TEST_CASE("replicas is between 1 and 10000 for every source type") {
    auto vc = nfs("a");
    for (std::int64_t ok : {1, 3, 10000}) {
        vc.replicas = ok;
        CHECK(check(vc) == std::nullopt);
    }
    vc.replicas = 0;
    CHECK(check(vc) == R"(volume "a": replicas: Invalid value: 0: must be between 1 and 10000, inclusive)");
    vc.replicas = 10001;
    CHECK(check(vc) == R"(volume "a": replicas: Invalid value: 10001: must be between 1 and 10000, inclusive)");
}

TEST_CASE("capacity is any quantity greater than zero and below 8Ei") {
    auto vc = nfs("a");
    for (std::string ok : {"", "5Gi", ".5Gi", "1.5Gi", "500Mi", "1e9", "+1Gi", "1", "500m", "7Ei"}) {
        CAPTURE(ok);
        vc.capacity = ok;
        CHECK(check(vc) == std::nullopt);
    }
    auto refused = [&](std::string capacity) {
        vc.capacity = capacity;
        return check(vc);
    };
    CHECK(refused("5GB") ==
          R"(volume "a": capacity: Invalid value: "5GB": must be a quantity such as 5Gi, 500Mi, .5Gi or 1e9)");
    CHECK(refused("1e400") ==
          R"(volume "a": capacity: Invalid value: "1e400": must be a quantity such as 5Gi, 500Mi, .5Gi or 1e9)");
    CHECK(refused("0") == R"(volume "a": capacity: Invalid value: "0": must be greater than zero)");
    CHECK(refused("-1Gi") == R"(volume "a": capacity: Invalid value: "-1Gi": must be greater than zero)");
    CHECK(refused("8Ei") == R"(volume "a": capacity: Invalid value: "8Ei": must be less than 8Ei)");
    CHECK(refused("1e19") == R"(volume "a": capacity: Invalid value: "1e19": must be less than 8Ei)");
}

TEST_CASE("tolerations a pod could not carry are refused") {
    auto with = [](api::Toleration t) {
        auto vc = nfs("a");
        vc.tolerations = {api::Toleration{"dedicated", "Equal", "ml", "NoSchedule", std::nullopt}, t};
        return check(vc);
    };
    CHECK(with({"", "Exists", "", "", std::nullopt}) == std::nullopt);
    CHECK(with({"k", "", "v", "", std::nullopt}) == std::nullopt);
    CHECK(with({"node.kubernetes.io/unreachable", "Exists", "", "NoExecute", 6000}) == std::nullopt);
    CHECK(with({"k", "Equal", "v", "NoSchedule", 300}) ==
          R"(volume "a": tolerations[1].effect: Invalid value: "NoSchedule": effect must be 'NoExecute' when `tolerationSeconds` is set)");
    CHECK(with({"", "Equal", "v", "", std::nullopt}) ==
          R"(volume "a": tolerations[1].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all keys")");
    CHECK(with({"k", "Exists", "v", "", std::nullopt}) ==
          R"(volume "a": tolerations[1].operator: Invalid value: "v": value must be empty when `operator` is 'Exists')");
    CHECK(with({"k", "Like", "v", "", std::nullopt}) ==
          R"(volume "a": tolerations[1].operator: Unsupported value: "Like": supported values: "Equal", "Exists")");
    CHECK(with({"k", "Equal", "v", "Sometimes", std::nullopt}) ==
          R"(volume "a": tolerations[1].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute")");
    CHECK(with({"bad key", "Exists", "", "", std::nullopt}) ==
          R"(volume "a": tolerations[1].key: Invalid value: "bad key": name part )" + name_rule);
}

TEST_CASE("required node affinity a pod could not carry is refused, Gt and Lt values included") {
    auto with = [](std::vector<api::NodeSelectorRequirement> exprs, std::vector<api::NodeSelectorRequirement> fields = {}) {
        auto vc = nfs("a");
        vc.nodeAffinity = api::NodeAffinity{};
        vc.nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution =
            api::NodeSelector{{api::NodeSelectorTerm{std::move(exprs), std::move(fields)}}};
        return check(vc);
    };
    const std::string at = "volume \"a\": nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]";
    CHECK(with({{"disk", "In", {"ssd"}}, {"cpus", "Gt", {"8"}}, {"gpu", "DoesNotExist", {}}},
               {{"metadata.name", "In", {"node-0"}}}) == std::nullopt);
    CHECK(with({{"cpus", "Gt", {"8x"}}}) ==
          at + R"(.matchExpressions[0].values[0]: Invalid value: "8x": must be an integer (int64) when `operator` is 'Lt' or 'Gt')");
    CHECK(with({{"cpus", "Lt", {"99999999999999999999"}}}) ==
          at + R"(.matchExpressions[0].values[0]: Invalid value: "99999999999999999999": must be an integer (int64) when `operator` is 'Lt' or 'Gt')");
    CHECK(with({{"cpus", "Gt", {"1", "2"}}}) ==
          at + ".matchExpressions[0].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'");
    CHECK(with({{"disk", "In", {}}}) ==
          at + ".matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'");
    CHECK(with({{"disk", "Exists", {"x"}}}) ==
          at + ".matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
    CHECK(with({{"disk", "Near", {"x"}}}) == at + R"(.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator)");
    CHECK(with({{"bad key", "Exists", {}}}) == at + R"(.matchExpressions[0].key: Invalid value: "bad key": name part )" + name_rule);
    CHECK(with({}, {{"metadata.uid", "In", {"x"}}}) == at + R"(.matchFields[0].key: Invalid value: "metadata.uid": not a valid field selector key)");
    CHECK(with({}, {{"metadata.name", "In", {"a", "b"}}}) ==
          at + ".matchFields[0].values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector");
    auto vc = nfs("a");
    vc.nodeAffinity = api::NodeAffinity{};
    vc.nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution = api::NodeSelector{};
    CHECK(check(vc) == "volume \"a\": nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: "
                       "Required value: must have at least one node selector term");
}

TEST_CASE("the first failing volume is reported, in document order, each check naming its volume") {
    auto bad_label = nfs("b");
    bad_label.labels = {{"app", "two words"}};
    auto bad_capacity = nfs("c");
    bad_capacity.capacity = "lots";
    auto e = validate_spec(spec_of({nfs("a"), bad_label, bad_capacity}));
    REQUIRE(e);
    CHECK(e->rfind(R"(volume "b": labels: Invalid value: "two words")", 0) == 0);
    CHECK(validate_volume_config(bad_capacity) ==
          R"(capacity: Invalid value: "lots": must be a quantity such as 5Gi, 500Mi, .5Gi or 1e9)");
}
