// Discovery documents and Tables, specified on plain JSON (no server).
#include <vck/sandbox/server/content_negotiation.hpp>
#include <vck/sandbox/server/discovery.hpp>
#include <vck/sandbox/server/table.hpp>

#include <doctest.h>

using namespace vck::sandbox;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

const ResourceInfo& builtin(const ResourceRegistry& reg, std::string_view plural) {
    for (const auto& r : reg.all())
        if (r.plural == plural) return r;
    FAIL("no built-in " << plural);
    throw std::logic_error("unreachable");
}

std::chrono::system_clock::time_point at(const char* ts) { return *parse_timestamp(ts); }

} // namespace

TEST_CASE("ages read like kubectl's: seconds, then minutes and seconds, hours, days, years") {
    CHECK(human_duration(-5s) == "<invalid>");
    CHECK(human_duration(0s) == "0s");
    CHECK(human_duration(119s) == "119s");
    CHECK(human_duration(200s) == "3m20s");
    CHECK(human_duration(600s) == "10m");
    CHECK(human_duration(5h + 4min) == "5h4m");
    CHECK(human_duration(30h) == "30h");
    CHECK(human_duration(51h) == "2d3h");
    CHECK(human_duration(24h * 30) == "30d");
    CHECK(human_duration(24h * (365 * 2 + 30)) == "2y30d");
    CHECK(human_duration(24h * 365 * 9) == "9y");
}

TEST_CASE("Accept is negotiated clause by clause: a Table, metadata only, the object, or nothing (406)") {
    using R = Representation;
    // kubectl get's Accept: the first clause it can have wins.
    CHECK(negotiate("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", true) == R::Table);
    CHECK(negotiate("application/json;as=Table;g=meta.k8s.io;v=v1", false) == R::Table);
    CHECK(negotiate("application/json", true) == R::Object);
    CHECK(negotiate("", true) == R::Object);
    CHECK(negotiate("application/vnd.kubernetes.protobuf, */*", false) == R::Object);
    // Metadata-only clients (controller-runtime's metadata client, kube-rs metadata watches).
    CHECK(negotiate("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", true) == R::Metadata);
    CHECK(negotiate("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", false) == R::Metadata);
    CHECK(negotiate("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json", true) == R::Object);
    // Nothing the sandbox can write: 406.
    CHECK_FALSE(negotiate("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", true).has_value());
    CHECK_FALSE(negotiate("application/json;as=Table;v=v1beta1;g=meta.k8s.io", true).has_value());
    CHECK_FALSE(negotiate("application/json;as=Frobs;g=meta.k8s.io;v=v1", false).has_value());
    CHECK_FALSE(negotiate("text/plain", false).has_value());
    CHECK_FALSE(negotiate("application/yaml", false).has_value());
    CHECK_FALSE(negotiate("application/json;q=0", false).has_value());
}

TEST_CASE("metadata only: PartialObjectMetadata and PartialObjectMetadataList keep metadata and nothing else") {
    auto obj = json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","resourceVersion":"7"},"data":{"k":"v"}})");
    CHECK(as_partial_metadata(obj) ==
          json::parse(R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"c","resourceVersion":"7"}})"));
    auto list = json::value{{"kind", "ConfigMapList"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", "9"}}},
                            {"items", json::array{obj}}};
    auto out = as_partial_metadata_list(list);
    CHECK(out.at("kind") == "PartialObjectMetadataList");
    CHECK(out.at("metadata").at("resourceVersion") == "9");
    CHECK(out.at("items").at(0).at("kind") == "PartialObjectMetadata");
    CHECK_FALSE(out.at("items").at(0).as_object().contains("data"));
}

TEST_CASE("a custom resource's table has NAME then its printer columns, a date column as an age") {
    ResourceInfo r;
    r.custom = true;
    r.plural = "widgets";
    r.printer_columns = json::parse(R"([
        {"name":"Size","type":"integer","jsonPath":".spec.size"},
        {"name":"Phase","type":"string","jsonPath":".status.phase","priority":1},
        {"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}])").as_array();
    auto obj = json::parse(R"({"metadata":{"name":"w1","creationTimestamp":"2025-01-01T00:00:00Z"},
                              "spec":{"size":3}})");
    auto t = make_table(table_columns(r), json::array{obj}, IncludeObject::Metadata, {}, true,
                        at("2025-01-01T00:03:20Z"));
    CHECK(t.at("kind") == "Table");
    CHECK(t.at("apiVersion") == "meta.k8s.io/v1");
    const auto& defs = t.at("columnDefinitions").as_array();
    REQUIRE(defs.size() == 4);
    CHECK(defs[0].at("name") == "Name");
    CHECK(defs[0].at("format") == "name");
    CHECK(defs[1].at("type") == "integer");
    CHECK(defs[2].at("priority") == 1);
    const auto& row = t.at("rows").as_array().at(0).as_object();
    CHECK(json::serialize(row.at("cells")) == R"(["w1",3,null,"3m20s"])");
    CHECK(row.at("object").at("kind") == "PartialObjectMetadata");
    CHECK(row.at("object").at("metadata").at("name") == "w1");
}

TEST_CASE("a custom resource without printer columns gets NAME and AGE") {
    ResourceInfo r;
    r.custom = true;
    auto cols = table_columns(r);
    REQUIRE(cols.size() == 2);
    CHECK(cols[0].name == "Name");
    CHECK(cols[1].name == "Age");
}

TEST_CASE("pods show READY, STATUS, RESTARTS and AGE as kubectl prints them") {
    ResourceRegistry reg;
    auto pod = json::parse(R"({"metadata":{"name":"p","creationTimestamp":"2025-01-01T00:00:00Z"},
        "spec":{"containers":[{"name":"a"},{"name":"b"}]},
        "status":{"phase":"Running","containerStatuses":[{"name":"a","ready":true,"restartCount":2},
                                                         {"name":"b","ready":false,"restartCount":1}]}})");
    auto t = make_table(table_columns(builtin(reg, "pods")), json::array{pod}, IncludeObject::None, {}, true,
                        at("2025-01-01T00:00:30Z"));
    auto row = t.at("rows").as_array().at(0).as_object();
    CHECK(json::serialize(row.at("cells")) == R"(["p","1/2","Running",3,"30s","<none>","<none>","<none>","<none>"])");
    CHECK_FALSE(row.contains("object"));
    pod.as_object()["metadata"].as_object()["deletionTimestamp"] = "2025-01-01T00:00:10Z";
    t = make_table(table_columns(builtin(reg, "pods")), json::array{pod}, IncludeObject::None, {});
    CHECK(t.at("rows").as_array().at(0).at("cells").as_array().at(2) == "Terminating");
}

TEST_CASE("jobs show STATUS, COMPLETIONS, DURATION and AGE as kubectl 1.32 prints them") {
    ResourceRegistry reg;
    auto job = json::parse(R"({"metadata":{"name":"pi","creationTimestamp":"2025-01-01T00:00:00Z"},
        "spec":{"completions":3,"parallelism":2,"selector":{"matchLabels":{"batch.kubernetes.io/controller-uid":"u"}},
                "template":{"spec":{"containers":[{"name":"c","image":"busybox"}]}}},
        "status":{"startTime":"2025-01-01T00:00:05Z","succeeded":1,"active":2}})");
    auto cells = [&](const json::value& j) {
        auto t = make_table(table_columns(builtin(reg, "jobs")), json::array{j}, IncludeObject::None, {}, true,
                            at("2025-01-01T00:01:00Z"));
        return json::serialize(t.at("rows").as_array().at(0).at("cells"));
    };
    CHECK(cells(job) == R"(["pi","Running","1/3","55s","60s","c","busybox","batch.kubernetes.io/controller-uid=u"])");
    auto& status = job.as_object()["status"].as_object();
    status["completionTime"] = "2025-01-01T00:00:35Z";
    status["succeeded"] = 3;
    status["conditions"] = json::parse(R"([{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True"}])");
    CHECK(cells(job) == R"(["pi","Complete","3/3","30s","60s","c","busybox","batch.kubernetes.io/controller-uid=u"])");
    status["conditions"] = json::parse(R"([{"type":"Suspended","status":"True"}])");
    CHECK(json::value_to<std::string>(json::parse(cells(job)).at(1)) == "Suspended");
    // Without completions: n/1, or n/1 of parallelism above 1; no startTime, no duration.
    auto queue = json::parse(R"({"metadata":{"name":"q","creationTimestamp":"2025-01-01T00:00:00Z"},"spec":{"parallelism":4}})");
    CHECK(cells(queue) == R"(["q","Running","0/1 of 4","","60s","","","<none>"])");
}

TEST_CASE("nodes show STATUS, ROLES, AGE and VERSION") {
    ResourceRegistry reg;
    auto node = json::parse(R"({"metadata":{"name":"n1","creationTimestamp":"2025-01-01T00:00:00Z",
        "labels":{"node-role.kubernetes.io/control-plane":"","node-role.kubernetes.io/worker":""}},
        "spec":{"unschedulable":true},
        "status":{"conditions":[{"type":"Ready","status":"True"}],"nodeInfo":{"kubeletVersion":"v1.32.0"}}})");
    auto t = make_table(table_columns(builtin(reg, "nodes")), json::array{node}, IncludeObject::Object, {}, true,
                        at("2025-01-03T03:00:00Z"));
    auto row = t.at("rows").as_array().at(0).as_object();
    CHECK(json::serialize(row.at("cells")) ==
          R"(["n1","Ready,SchedulingDisabled","control-plane,worker","2d3h","v1.32.0","<none>","<none>","<unknown>","<unknown>","<unknown>"])");
    CHECK(row.at("object").at("spec").at("unschedulable") == true);
}

TEST_CASE("a pod's STATUS follows kubectl's rules: init containers first, then the first container with a reason") {
    ResourceRegistry reg;
    auto status_of = [&](std::string_view status_json, std::string_view extra_meta = "") {
        auto pod = json::parse(std::string(R"({"metadata":{"name":"p")") + std::string(extra_meta) +
                               R"(},"spec":{"initContainers":[{"name":"i1"},{"name":"i2"}],"containers":[{"name":"a"},{"name":"b"}]},
                                  "status":)" + std::string(status_json) + "}");
        auto t = make_table(table_columns(builtin(reg, "pods")), json::array{pod}, IncludeObject::None, {});
        return std::string(t.at("rows").as_array().at(0).at("cells").as_array().at(2).as_string());
    };
    CHECK(status_of(R"({"phase":"Pending","initContainerStatuses":[
        {"name":"i1","state":{"terminated":{"exitCode":0,"reason":"Completed"}}},
        {"name":"i2","state":{"running":{}}}]})") == "Init:1/2");
    // The init container that fails a download: what a user of a resync volume sees.
    CHECK(status_of(R"({"phase":"Failed","initContainerStatuses":[
        {"name":"i1","state":{"terminated":{"exitCode":1,"reason":"Error"}}},
        {"name":"i2","state":{"waiting":{"reason":"PodInitializing"}}}],
        "containerStatuses":[{"name":"a","state":{"waiting":{"reason":"PodInitializing"}}}]})") == "Init:Error");
    CHECK(status_of(R"({"phase":"Pending","initContainerStatuses":[
        {"name":"i1","state":{"waiting":{"reason":"CrashLoopBackOff"}}}]})") == "Init:CrashLoopBackOff");
    CHECK(status_of(R"({"phase":"Pending","initContainerStatuses":[
        {"name":"i1","state":{"terminated":{"exitCode":137}}}]})") == "Init:ExitCode:137");
    // Initialized: the first container with a reason wins.
    CHECK(status_of(R"({"phase":"Running","conditions":[{"type":"Initialized","status":"True"}],
        "containerStatuses":[{"name":"a","state":{"waiting":{"reason":"CreateContainerConfigError"}}},
                             {"name":"b","state":{"terminated":{"exitCode":2,"reason":"Error"}}}]})") == "CreateContainerConfigError");
    CHECK(status_of(R"({"phase":"Running","conditions":[{"type":"Initialized","status":"True"},{"type":"Ready","status":"False"}],
        "containerStatuses":[{"name":"a","ready":true,"state":{"running":{}}},
                             {"name":"b","state":{"terminated":{"exitCode":0,"reason":"Completed"}}}]})") == "NotReady");
    CHECK(status_of(R"({"phase":"Running","reason":"Evicted"})") == "Evicted");
    // Held by scheduling gates.
    CHECK(status_of(R"({"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"SchedulingGated",
        "message":"Scheduling is blocked due to non-empty scheduling gates"}]})") == "SchedulingGated");
    CHECK(status_of(R"({"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]})") == "Pending");
    // Terminating while deleting, unless it has finished.
    CHECK(status_of(R"({"phase":"Running"})", R"(,"deletionTimestamp":"2025-01-01T00:00:00Z")") == "Terminating");
    CHECK(status_of(R"({"phase":"Succeeded","conditions":[{"type":"Initialized","status":"True"}],
        "containerStatuses":[{"name":"a","state":{"terminated":{"exitCode":0,"reason":"Completed"}}}]})",
                    R"(,"deletionTimestamp":"2025-01-01T00:00:00Z")") == "Completed");
}

TEST_CASE("get nodes -o wide: INTERNAL-IP, EXTERNAL-IP, OS-IMAGE, KERNEL-VERSION and CONTAINER-RUNTIME at priority 1") {
    ResourceRegistry reg;
    auto node = json::parse(R"({"metadata":{"name":"n1"},"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.5"},
        {"type":"Hostname","address":"n1"}],"nodeInfo":{"osImage":"Debian","kernelVersion":"6.1","containerRuntimeVersion":"containerd://1.7"}}})");
    auto cols = table_columns(builtin(reg, "nodes"));
    auto t = make_table(cols, json::array{node}, IncludeObject::None, {});
    const auto& cells = t.at("rows").as_array().at(0).at("cells").as_array();
    const auto& defs = t.at("columnDefinitions").as_array();
    REQUIRE(cells.size() == 10);
    std::vector<std::string> wide;
    for (std::size_t i = 5; i < 10; ++i) {
        CHECK(defs[i].at("priority") == 1);
        wide.emplace_back(defs[i].at("name").as_string());
    }
    CHECK(wide == std::vector<std::string>{"Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"});
    CHECK(json::serialize(json::array(cells.begin() + 5, cells.end())) == R"(["10.0.0.5","<none>","Debian","6.1","containerd://1.7"])");
}

TEST_CASE("a watch event table can leave out the column definitions") {
    ResourceRegistry reg;
    auto t = make_table(table_columns(builtin(reg, "configmaps")), json::array{json::parse(R"({"metadata":{"name":"c"},"data":{"a":"1"}})")},
                        IncludeObject::Metadata, {}, false);
    CHECK(t.at("columnDefinitions").as_array().empty());
    CHECK(t.at("rows").as_array().at(0).at("cells").as_array().at(1) == 1);
}

TEST_CASE("includeObject accepts None, Metadata and Object only") {
    CHECK(parse_include_object("") == IncludeObject::Metadata);
    CHECK(parse_include_object("None") == IncludeObject::None);
    CHECK(parse_include_object("Object") == IncludeObject::Object);
    CHECK_FALSE(parse_include_object("All"));
}

TEST_CASE("discovery lists every group with its versions and each resource with its subresources") {
    ResourceRegistry reg;
    ResourceInfo w;
    w.group = "example.vck.io";
    w.version = "v1";
    w.plural = "widgets";
    w.singular = "widget";
    w.kind = "Widget";
    w.verbs = standard_verbs();
    w.short_names = {"wd"};
    w.subresources = {"status"};
    reg.add(w);
    auto groups = group_list(reg.all());
    bool found = false;
    for (const auto& g : groups.at("groups").as_array())
        if (g.at("name") == "example.vck.io") {
            found = true;
            CHECK(g.at("preferredVersion").at("groupVersion") == "example.vck.io/v1");
        }
    CHECK(found);
    auto list = resource_list(reg.all(), "example.vck.io", "v1");
    REQUIRE(list);
    CHECK(list->at("groupVersion") == "example.vck.io/v1");
    const auto& rs = list->at("resources").as_array();
    REQUIRE(rs.size() == 2);
    CHECK(rs[0].at("name") == "widgets");
    CHECK(rs[0].at("shortNames").as_array().at(0) == "wd");
    CHECK(rs[1].at("name") == "widgets/status");
    CHECK(json::serialize(rs[1].at("verbs")) == R"(["get","patch","update"])");
    auto core = resource_list(reg.all(), "", "v1");
    REQUIRE(core);
    CHECK(core->at("groupVersion") == "v1");
    CHECK_FALSE(resource_list(reg.all(), "nope.io", "v1"));
    CHECK_FALSE(group_document(reg.all(), "nope.io"));
    CHECK(group_document(reg.all(), "example.vck.io")->at("kind") == "APIGroup");
}
