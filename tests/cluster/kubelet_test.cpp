// The simulated kubelet: pod phases, container states, events, executed host programs with
// mapped volumes, termination messages, Secret-backed env, restarts, logs and deletion; the
// users containers run as and the owners and modes of the directories it makes.
#include "cluster_fixture.hpp"

#include <vck/api/quantity.hpp>
#include <vck/client/client.hpp>
#include <vck/sandbox/cluster/resource_field.hpp>

#include <boost/asio/use_future.hpp>

#include <cmath>
#include <csignal>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <variant>

using namespace vck::sandbox;
using vck::client::PatchType;
using namespace cluster_test;

namespace {

/// A shell script the test writes and the kubelet executes as a container's program.
struct Script {
    std::filesystem::path path;
    Script(const std::filesystem::path& dir, const std::string& name, const std::string& body) {
        std::filesystem::create_directories(dir);
        path = dir / name;
        std::ofstream(path) << "#!/bin/sh\n" << body;
        chmod(path.c_str(), 0755);
    }
};

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::string t = (std::filesystem::temp_directory_path() / "vck-cluster-test-XXXXXX").string();
        REQUIRE(mkdtemp(t.data()) != nullptr);
        path = t;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

/// A sandbox of `nodes` nodes whose image `image` executes the shell script `body`, kept in a
/// temporary directory that outlives the sandbox.
struct ScriptedSandbox {
    TempDir tmp;
    Script script;
    Sandbox sb;
    ScriptedSandbox(const std::string& image, const std::string& body, int nodes = 1)
        : script(tmp.path, "program.sh", body), sb(options(image, script.path, nodes)) {}

private:
    static Sandbox::Options options(const std::string& image, const std::filesystem::path& program, int nodes) {
        auto o = quiet_options(nodes);
        o.images[image] = ImageBehaviour::execute(program);
        return o;
    }
};

json::value container_status(Sandbox& sb, const std::string& pod) { return at(get_pod(sb, pod), "status.containerStatuses[0]"); }

std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace

TEST_CASE("a pod goes Pending, Running, Succeeded with the kubelet's status and events") {
    auto o = quiet_options(1);
    o.images["app:1"] = ImageBehaviour::succeed(std::chrono::milliseconds(300), {"hello", "world"});
    Sandbox sb(o);
    // Guarded: the store delivers changes on the writer's thread (the kubelet's), after get()
    // can already see them.
    struct Seen {
        std::mutex mu;
        std::vector<std::string> phases;
    };
    auto seen = std::make_shared<Seen>();
    auto id = sb.store().on_change([seen](const StoreChange& c) {
        if (c.resource != "pods" || c.name != "p") return;
        auto ph = str(*c.object, "status.phase");
        std::lock_guard lock(seen->mu);
        if (seen->phases.empty() || seen->phases.back() != ph) seen->phases.push_back(ph);
    });
    sb.store().create(pods, "default", pod("p", "app:1"));
    REQUIRE(eventually([&] {
        std::lock_guard lock(seen->mu);
        return !seen->phases.empty() && seen->phases.back() == "Succeeded";
    }));
    sb.store().remove_listener(id);
    {
        std::lock_guard lock(seen->mu);
        std::string all;
        for (const auto& ph : seen->phases) all += "[" + ph + "]";
        CHECK(all == "[Pending][Running][Succeeded]");
    }
    auto p = get_pod(sb, "p");
    CHECK(str(p, "status.hostIP") == "172.18.0.2");
    CHECK(!str(p, "status.startTime").empty());
    CHECK(!str(p, "status.podIP").empty());
    auto cs = container_status(sb, "p");
    CHECK(at(cs, "state.terminated.exitCode") == 0);
    CHECK(str(cs, "state.terminated.reason") == "Completed");
    CHECK(str(cs, "name") == "main");
    CHECK(at(cs, "restartCount") == 0);
    bool ready_false = false;
    auto conditions = at(p, "status.conditions");
    for (const auto& c : conditions.as_array())
        if (str(c, "type") == "Ready") ready_false = str(c, "status") == "False" && str(c, "reason") == "PodCompleted";
    CHECK(ready_false);
    CHECK(sb.server().pod_logs().read("default", "p", "main") == std::optional<std::string>("hello\nworld\n"));
    for (const char* reason : {"Scheduled", "Pulled", "Created", "Started"}) {
        CAPTURE(reason);
        CHECK(events_for(sb, "p", reason).size() == 1);
    }
    auto pulled = events_for(sb, "p", "Pulled").front();
    CHECK(str(pulled, "message") == "Container image \"app:1\" already present on machine");
    CHECK(str(pulled, "source.component") == "kubelet");
    CHECK(str(pulled, "source.host") == "node-1");
    CHECK(str(pulled, "involvedObject.kind") == "Pod");
    CHECK(str(pulled, "involvedObject.fieldPath") == "spec.containers{main}");
    CHECK(str(events_for(sb, "p", "Started").front(), "message") == "Started container main");
}

TEST_CASE("an image root runs what the container's command names inside it: an absolute path, or a name on the image's PATH") {
    TempDir tmp;
    // The image's filesystem: two programs where an image would hold them.
    Script hello(tmp.path / "image" / "usr" / "local" / "bin", "hello", "echo \"hello from $0 $1\"\n");
    Script tool(tmp.path / "image" / "bin", "tool", "echo tool\n");
    auto o = quiet_options(1);
    o.images["example.com/app:*"] = ImageBehaviour::parse("root:" + (tmp.path / "image").string());
    Sandbox sb(o);
    auto with_command = [](const std::string& name, json::array command) {
        auto p = pod(name, "example.com/app:1");
        p.at("spec").at("containers").as_array()[0].as_object()["command"] = std::move(command);
        return p;
    };
    sb.store().create(pods, "default", with_command("by-name", {"hello", "there"}));
    sb.store().create(pods, "default", with_command("by-path", {"/usr/local/bin/hello", "again"}));
    sb.store().create(pods, "default", with_command("on-path", {"tool"}));
    sb.store().create(pods, "default", with_command("missing", {"nothere"}));
    sb.store().create(pods, "default", with_command("missing-path", {"/bin/hello"}));
    for (const char* name : {"by-name", "by-path", "on-path"})
        CHECK_MESSAGE(eventually([&] { return phase(sb, name) == "Succeeded"; }), name);
    const auto bin = (tmp.path / "image" / "usr" / "local" / "bin" / "hello").string();
    CHECK(sb.server().pod_logs().read("default", "by-name", "main") == std::optional<std::string>("hello from " + bin + " there\n"));
    CHECK(sb.server().pod_logs().read("default", "by-path", "main") == std::optional<std::string>("hello from " + bin + " again\n"));
    CHECK(sb.server().pod_logs().read("default", "on-path", "main") == std::optional<std::string>("tool\n"));
    CHECK(eventually([&] { return phase(sb, "missing") == "Failed"; }));
    CHECK(str(get_pod(sb, "missing"), "status.containerStatuses[0].state.terminated.message") ==
          "exec: \"nothere\": executable file not found in $PATH");
    CHECK(eventually([&] { return phase(sb, "missing-path") == "Failed"; }));
    CHECK(str(get_pod(sb, "missing-path"), "status.containerStatuses[0].state.terminated.message") ==
          "exec: \"/bin/hello\": stat /bin/hello: no such file or directory");
    CHECK_THROWS_WITH_AS(ImageBehaviour::parse("root:"), doctest::Contains("root needs the directory"), std::invalid_argument);
}

TEST_CASE("an executed host program writes into its hostPath volume under the node's directory") {
    ScriptedSandbox scripted("vck/writer:*", "echo \"writing to $OUT\"\n"
                             "mkdir -p \"$OUT/sub\" && echo \"hello from $HOSTNAME\" > \"$OUT/sub/out.txt\"\n"
                             "printf 'copied 1 file' > \"${1#--message-file=}\"\n", 2);
    auto& sb = scripted.sb;
    json::object spec{
        {"volumes", json::array{json::object{{"name", "data"},
                                             {"hostPath", json::object{{"path", "/srv/vck"}, {"type", "DirectoryOrCreate"}}}}}}};
    auto p = pod("writer", "vck/writer:0.1", spec);
    auto& c = p.as_object()["spec"].as_object()["containers"].as_array()[0].as_object();
    c["command"] = json::array{"/usr/bin/vck-writer"};
    c["args"] = json::array{"--message-file=/dev/termination-log"};
    c["env"] = json::array{json::object{{"name", "OUT"}, {"value", "/data/out"}}};
    c["volumeMounts"] = json::array{json::object{{"name", "data"}, {"mountPath", "/data"}}};
    sb.store().create(pods, "default", p);
    REQUIRE(eventually([&] { return phase(sb, "writer") == "Succeeded"; }));
    auto node = node_of(sb, "writer");
    auto out = sb.node_dir(node) / "srv" / "vck" / "out" / "sub" / "out.txt";
    CHECK(read_file(out) == "hello from writer\n");
    auto cs = container_status(sb, "writer");
    CHECK(str(cs, "state.terminated.message") == "copied 1 file");
    CHECK(at(cs, "state.terminated.exitCode") == 0);
    auto log = sb.server().pod_logs().read("default", "writer", "main").value_or("");
    CHECK(log == "writing to " + (sb.node_dir(node) / "srv" / "vck" / "out").string() + "\n");
}

TEST_CASE("env from a missing Secret or key waits with CreateContainerConfigError until it appears") {
    ScriptedSandbox scripted("show", "echo \"token=$TOKEN\"\n");
    auto& sb = scripted.sb;
    auto p = pod("env", "show");
    p.as_object()["spec"].as_object()["containers"].as_array()[0].as_object()["env"] = json::array{json::object{
        {"name", "TOKEN"},
        {"valueFrom", json::object{{"secretKeyRef", json::object{{"name", "creds"}, {"key", "token"}}}}}}};
    sb.store().create(pods, "default", p);
    auto waiting = [&](const std::string& message) {
        auto cs = container_status(sb, "env");
        return str(cs, "state.waiting.reason") == "CreateContainerConfigError" &&
               str(cs, "state.waiting.message") == message;
    };
    REQUIRE(eventually([&] { return waiting("secret \"creds\" not found"); }));
    CHECK(phase(sb, "env") == "Pending");
    REQUIRE(eventually([&] { return !events_for(sb, "env", "Failed").empty(); }));
    CHECK(str(events_for(sb, "env", "Failed").front(), "message") == "Error: secret \"creds\" not found");

    sb.store().create(secrets, "default",
                      json::object{{"metadata", json::object{{"name", "creds"}}},
                                   {"stringData", json::object{{"user", "me"}}}});
    REQUIRE(eventually([&] { return waiting("couldn't find key token in Secret default/creds"); }));

    json::value add = json::object{{"stringData", json::object{{"token", "s3cr3t"}}}};
    sb.store().patch(secrets, "default", "creds", PatchType::Merge, add);
    REQUIRE(eventually([&] { return phase(sb, "env") == "Succeeded"; }));
    CHECK(sb.server().pod_logs().read("default", "env", "main") == std::optional<std::string>("token=s3cr3t\n"));
}

TEST_CASE("resource limits reach the container through resourceFieldRef: its own, else the node's allocatable") {
    ScriptedSandbox scripted("show", "echo \"mem=$MEM cpu=$CPU req=$REQ node_cpu=$NODE_CPU\"\n");
    auto& sb = scripted.sb;
    auto p = pod("limits", "show");
    auto& c = p.as_object()["spec"].as_object()["containers"].as_array()[0].as_object();
    c["resources"] = json::object{{"requests", json::object{{"cpu", "50m"}}}, {"limits", json::object{{"memory", "128Mi"}}}};
    auto ref = [](const char* name, json::object field) {
        return json::object{{"name", name}, {"valueFrom", json::object{{"resourceFieldRef", std::move(field)}}}};
    };
    c["env"] = json::array{ref("MEM", {{"resource", "limits.memory"}, {"divisor", "1Mi"}}),
                           ref("CPU", {{"resource", "requests.cpu"}, {"divisor", "1m"}}),
                           ref("REQ", {{"resource", "requests.memory"}}),  // only a limit: the request is the limit
                           ref("NODE_CPU", {{"resource", "limits.cpu"}})};  // no limit: the node's allocatable
    sb.store().create(pods, "default", p);
    REQUIRE(eventually([&] { return phase(sb, "limits") == "Succeeded"; }));
    auto node = sb.store().get(ResourceId{"", "v1", "nodes"}, "", str(sb.store().get(pods, "default", "limits"), "spec.nodeName"));
    auto cpus = std::to_string(static_cast<long>(std::ceil(*vck::api::quantity_value(str(node, "status.allocatable.cpu")))));
    CHECK(sb.server().pod_logs().read("default", "limits", "main") ==
          std::optional<std::string>("mem=128 cpu=50 req=134217728 node_cpu=" + cpus + "\n"));
}

TEST_CASE("a resourceFieldRef value is rounded up in divisor units; a request falls back to the limit, then to 0") {
    namespace rf = vck::sandbox::resource_field;
    json::value resources = json::object{{"requests", json::object{{"cpu", "250m"}}}, {"limits", json::object{{"memory", "100M"}}}};
    json::value allocatable = json::object{{"cpu", "4"}, {"memory", "8Gi"}};
    auto value = [&](json::object ref) {
        auto v = rf::value_of(ref, resources, allocatable);
        if (auto* e = std::get_if<rf::Error>(&v)) return "error: " + e->message;
        return std::get<rf::Value>(v).text;
    };
    CHECK(value({{"resource", "limits.cpu"}}) == "4");                         // no limit: the node's allocatable
    CHECK(value({{"resource", "requests.cpu"}}) == "1");                       // 250m of a core needs the core
    CHECK(value({{"resource", "requests.cpu"}, {"divisor", "1m"}}) == "250");
    CHECK(value({{"resource", "limits.memory"}, {"divisor", "1Mi"}}) == "96");  // 100M is 95.4Mi
    CHECK(value({{"resource", "requests.memory"}, {"divisor", 1}}) == "100000000");
    CHECK(value({{"resource", "requests.ephemeral-storage"}}) == "0");
    CHECK(value({{"resource", "limits.gpu"}}) == "error: unsupported container resource : limits.gpu");
    CHECK(value({{"resource", "limits.cpu"}, {"divisor", "0"}}) == "error: invalid divisor for resource limits.cpu");
}

TEST_CASE("a failing container ends the pod Failed with its exit code, and its log is served by pods/log") {
    auto o = quiet_options(1);
    o.serve = true;
    o.images["broken"] = ImageBehaviour::fail(3, std::chrono::milliseconds(100), {"starting", "boom"});
    Sandbox sb(o);
    auto p = pod("broken", "broken");
    p.as_object()["spec"].as_object()["containers"].as_array()[0].as_object()["terminationMessagePolicy"] =
        "FallbackToLogsOnError";
    sb.store().create(pods, "default", p);
    REQUIRE(eventually([&] { return phase(sb, "broken") == "Failed"; }));
    auto cs = container_status(sb, "broken");
    CHECK(at(cs, "state.terminated.exitCode") == 3);
    CHECK(str(cs, "state.terminated.reason") == "Error");
    CHECK(str(cs, "state.terminated.message") == "starting\nboom\n");

    boost::asio::io_context ioc;
    vck::client::Client cl(ioc.get_executor(), sb.config());
    auto fut = boost::asio::co_spawn(ioc, cl.logs("default", "broken"), boost::asio::use_future);
    ioc.run();
    CHECK(fut.get() == "starting\nboom\n");
}

TEST_CASE("restartPolicy OnFailure restarts a failed container until it succeeds") {
    ScriptedSandbox scripted("flaky", "if [ -e \"$1/tried\" ]; then echo second; exit 0; fi\n"
                             "touch \"$1/tried\"; echo first; exit 2\n");
    auto& sb = scripted.sb;
    json::object spec{{"restartPolicy", "OnFailure"},
                      {"volumes", json::array{json::object{{"name", "scratch"}, {"emptyDir", json::object{}}}}}};
    auto p = pod("flaky", "flaky", spec);
    auto& c = p.as_object()["spec"].as_object()["containers"].as_array()[0].as_object();
    c["args"] = json::array{"/scratch"};
    c["volumeMounts"] = json::array{json::object{{"name", "scratch"}, {"mountPath", "/scratch"}}};
    sb.store().create(pods, "default", p);
    REQUIRE(eventually([&] { return phase(sb, "flaky") == "Succeeded"; }));
    auto cs = container_status(sb, "flaky");
    CHECK(at(cs, "restartCount") == 1);
    CHECK(at(cs, "lastState.terminated.exitCode") == 2);
    CHECK(at(cs, "state.terminated.exitCode") == 0);
    // Each instance has its own log, as on a node: the failed one's is the previous log.
    CHECK(sb.server().pod_logs().read("default", "flaky", "main") == std::optional<std::string>("second\n"));
    LogReadOptions previous;
    previous.previous = true;
    CHECK(sb.server().pod_logs().read("default", "flaky", "main", previous) == std::optional<std::string>("first\n"));
    // The kubelet's status writes (restarts, last states) carried no field the 1.32 API lacks.
    CHECK(sb.store().unknown_fields_seen() == std::vector<std::string>{});
}

TEST_CASE("deleting a pod kills its process (SIGKILL after the grace period); the pod stays Terminating until then, "
          "and its logs go with it") {
    ScriptedSandbox scripted("stubborn", "trap '' TERM\n"
                             "echo $$ > \"$1/pid\"\n"
                             "echo running\n"
                             "while true; do sleep 0.1; done\n");
    auto& sb = scripted.sb;
    json::object spec{{"terminationGracePeriodSeconds", 1},
                      {"volumes", json::array{json::object{{"name", "h"}, {"hostPath", json::object{{"path", "/run/s"}}}}}}};
    auto p = pod("stubborn", "stubborn", spec);
    auto& c = p.as_object()["spec"].as_object()["containers"].as_array()[0].as_object();
    c["args"] = json::array{"/h"};
    c["volumeMounts"] = json::array{json::object{{"name", "h"}, {"mountPath", "/h"}}};
    sb.store().create(pods, "default", p);
    auto pid_file = sb.node_dir("node-1") / "run" / "s" / "pid";
    REQUIRE(eventually([&] { return phase(sb, "stubborn") == "Running" && !read_file(pid_file).empty(); }));
    REQUIRE(eventually([&] { return sb.server().pod_logs().read("default", "stubborn", "main").has_value(); }));
    pid_t pid = std::stoi(read_file(pid_file));
    CHECK(kill(pid, 0) == 0);
    auto deleted = sb.store().remove(pods, "default", "stubborn");
    CHECK_FALSE(deleted.finished);
    CHECK(deleted.object.at("metadata").at("deletionGracePeriodSeconds") == 1);
    // The process ignores SIGTERM: while it lives, the pod is still there to be seen (a
    // controller must not take its place for gone: it may still write).
    bool seen_terminating_alive = false;
    for (int i = 0; i < 5 && kill(pid, 0) == 0; ++i) {
        auto obj = get_pod(sb, "stubborn");
        seen_terminating_alive = seen_terminating_alive || !obj.at("metadata").at("deletionTimestamp").as_string().empty();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    CHECK(seen_terminating_alive);
    CHECK(eventually([&] { return kill(pid, 0) != 0; }));
    CHECK(eventually([&] { return !pod_exists(sb, "stubborn"); }));
    CHECK(eventually([&] { return !sb.server().pod_logs().read("default", "stubborn", "main").has_value(); }));
}

TEST_CASE("a terminating pod on a node that does not exist is deleted for good (as the pod garbage collector does)") {
    ScriptedSandbox scripted("idle", "sleep 30\n");
    auto& sb = scripted.sb;
    auto p = pod("ghost", "idle", json::object{{"nodeName", "no-such-node"}});
    sb.store().create(pods, "default", p);
    CHECK_FALSE(sb.store().remove(pods, "default", "ghost").finished);
    CHECK(eventually([&] { return !pod_exists(sb, "ghost"); }));
}

TEST_CASE("a pod terminating on a node no kubelet here runs is deleted for good once that node is deleted") {
    ScriptedSandbox scripted("idle", "sleep 30\n");
    auto& sb = scripted.sb;
    sb.store().create(nodes, "", json::parse(R"({"metadata": {"name": "elsewhere"}})"));
    sb.store().create(pods, "default", pod("far", "idle", json::object{{"nodeName", "elsewhere"}}));
    CHECK_FALSE(sb.store().remove(pods, "default", "far").finished);
    // Its node exists: its own kubelet would stop it, so it stays Terminating.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    REQUIRE(pod_exists(sb, "far"));
    CHECK_FALSE(str(get_pod(sb, "far"), "metadata.deletionTimestamp").empty());
    sb.store().remove(nodes, "", "elsewhere");
    CHECK(eventually([&] { return !pod_exists(sb, "far"); }));  // well before the pod GC's 40 s
}

TEST_CASE("init containers run one at a time, in order, each to success, before the containers start") {
    ScriptedSandbox scripted("step", "echo \"$2\" >> \"$1/order\"; [ \"$2\" != bad ]\n");
    auto& sb = scripted.sb;
    auto make = [](const std::string& name, std::vector<std::string> init_words) {
        auto container = [](const std::string& n, const std::string& word) {
            return json::object{{"name", n},
                                {"image", "step"},
                                {"command", json::array{"step"}},
                                {"args", json::array{"/w", word}},
                                {"volumeMounts", json::array{json::object{{"name", "w"}, {"mountPath", "/w"}}}}};
        };
        json::array init;
        for (std::size_t i = 0; i < init_words.size(); ++i) init.push_back(container("init-" + std::to_string(i), init_words[i]));
        json::object spec{{"initContainers", std::move(init)},
                          {"containers", json::array{container("main", "main")}},
                          {"volumes", json::array{json::object{{"name", "w"}, {"hostPath", json::object{{"path", "/w/" + name}}}}}}};
        return pod(name, "step", spec);
    };
    auto condition = [&](const std::string& name, const std::string& type) {
        auto conditions = at(get_pod(sb, name), "status.conditions");  // named: it must outlive the loop
        for (const auto& c : conditions.as_array())
            if (str(c, "type") == type) return c;
        return json::value();
    };

    sb.store().create(pods, "default", make("ok", {"first", "second"}));
    REQUIRE(eventually([&] { return phase(sb, "ok") == "Succeeded"; }));
    CHECK(read_file(sb.node_dir("node-1") / "w" / "ok" / "order") == "first\nsecond\nmain\n");
    auto ok = get_pod(sb, "ok");
    CHECK(at(ok, "status.initContainerStatuses").as_array().size() == 2);
    CHECK(at(ok, "status.initContainerStatuses[1].state.terminated.exitCode") == 0);
    CHECK(at(ok, "status.containerStatuses").as_array().size() == 1);
    CHECK(str(condition("ok", "Initialized"), "status") == "True");
    CHECK(str(events_for(sb, "ok", "Started").front(), "involvedObject.fieldPath") == "spec.initContainers{init-0}");

    // restartPolicy Never: a failed init container fails the pod; nothing after it runs.
    sb.store().create(pods, "default", make("bad", {"bad", "never"}));
    REQUIRE(eventually([&] { return phase(sb, "bad") == "Failed"; }));
    CHECK(read_file(sb.node_dir("node-1") / "w" / "bad" / "order") == "bad\n");
    auto bad = get_pod(sb, "bad");
    CHECK(at(bad, "status.initContainerStatuses[0].state.terminated.exitCode") == 1);
    CHECK(str(bad, "status.containerStatuses[0].state.waiting.reason") == "PodInitializing");
    CHECK(str(condition("bad", "Initialized"), "status") == "False");
    CHECK(str(condition("bad", "Initialized"), "message") == "containers with incomplete status: [init-0 init-1]");
}

TEST_CASE("activeDeadlineSeconds ends a running pod: its containers are killed and it fails with DeadlineExceeded") {
    ScriptedSandbox scripted("forever", "echo started; while true; do sleep 0.1; done\n");
    auto& sb = scripted.sb;
    auto p = pod("slow", "forever", json::object{{"activeDeadlineSeconds", 1}});
    p.as_object()["spec"].as_object()["containers"].as_array()[0].as_object()["command"] = json::array{"forever"};
    sb.store().create(pods, "default", p);
    REQUIRE(eventually([&] { return phase(sb, "slow") == "Running"; }));
    REQUIRE(eventually([&] { return phase(sb, "slow") == "Failed"; }));
    auto slow = get_pod(sb, "slow");
    CHECK(str(slow, "status.reason") == "DeadlineExceeded");
    CHECK(str(slow, "status.message") == "Pod was active on the node longer than the specified deadline");
    CHECK(at(slow, "status.containerStatuses[0].state.terminated.exitCode") == 137);
    CHECK(events_for(sb, "slow", "DeadlineExceeded").size() == 1);
}

TEST_CASE("a subPath is created below its volume; one that a symlink leads out of the volume is refused") {
    ScriptedSandbox scripted("writer", "echo data > \"$1/file\"\n");
    auto& sb = scripted.sb;
    auto root = sb.node_dir("node-1") / "var" / "datasets";
    auto outside = scripted.tmp.path / "outside";
    std::filesystem::create_directories(root / "real");
    std::filesystem::create_directories(outside);
    std::filesystem::create_directory_symlink(outside, root / "escape");          // absolute, out of the volume
    std::filesystem::create_directory_symlink("../../../..", root / "climb");     // relative, out of it
    std::filesystem::create_directory_symlink("real", root / "inside");           // stays inside
    auto make = [](const std::string& name, const std::string& sub_path) {
        json::object spec{{"volumes", json::array{json::object{
                                          {"name", "vck-data"},
                                          {"hostPath", json::object{{"path", "/var/datasets"}, {"type", "DirectoryOrCreate"}}}}}}};
        auto p = pod(name, "writer", spec);
        auto& c = p.as_object()["spec"].as_object()["containers"].as_array()[0].as_object();
        c["command"] = json::array{"writer"};
        c["args"] = json::array{"/vck/data"};
        c["volumeMounts"] = json::array{json::object{{"name", "vck-data"}, {"mountPath", "/vck/data"}, {"subPath", sub_path}}};
        return p;
    };
    sb.store().create(pods, "default", make("plain", "fresh/vck-resource-1"));
    sb.store().create(pods, "default", make("linked", "inside/vck-resource-2"));
    sb.store().create(pods, "default", make("escape", "escape/vck-resource-3"));
    sb.store().create(pods, "default", make("climb", "climb"));
    REQUIRE(eventually([&] { return phase(sb, "plain") == "Succeeded" && phase(sb, "linked") == "Succeeded"; }));
    CHECK(read_file(root / "fresh" / "vck-resource-1" / "file") == "data\n");
    CHECK(read_file(root / "real" / "vck-resource-2" / "file") == "data\n");
    auto refused = [&](const std::string& name, const std::string& message) {
        auto cs = container_status(sb, name);
        return str(cs, "state.waiting.reason") == "CreateContainerConfigError" && str(cs, "state.waiting.message") == message;
    };
    CHECK(eventually([&] {
        return refused("escape", R"(failed to create subPath directory for volumeMount "vck-data" of container "main")");
    }));
    CHECK(eventually([&] { return refused("climb", R"(failed to prepare subPath for volumeMount "vck-data" of container "main")"); }));
    CHECK(phase(sb, "escape") == "Pending");
    CHECK(std::filesystem::is_empty(outside));  // nothing created or written through the link
}

TEST_CASE("image behaviours are read from the --image flag's text") {
    auto s = ImageBehaviour::parse("succeed:2s");
    CHECK(s.kind == ImageBehaviour::Kind::Succeed);
    CHECK(s.delay == std::chrono::seconds(2));
    auto f = ImageBehaviour::parse("fail:7:250ms");
    CHECK(f.kind == ImageBehaviour::Kind::Fail);
    CHECK(f.exit_code == 7);
    CHECK(f.delay == std::chrono::milliseconds(250));
    CHECK(ImageBehaviour::parse("forever").kind == ImageBehaviour::Kind::RunForever);
    auto e = ImageBehaviour::parse("exec:/opt/bin/vck-fetch");
    CHECK(e.kind == ImageBehaviour::Kind::Execute);
    CHECK(e.program == "/opt/bin/vck-fetch");
    CHECK_THROWS_WITH_AS(ImageBehaviour::parse("fail:0"),
                         "invalid image behaviour \"fail:0\": the exit code must be 1..255 (expected succeed[:DELAY], "
                         "fail[:EXIT[:DELAY]], forever, exec:PATH or root:DIR, then optionally ;user=UID[:GID])",
                         std::invalid_argument);
    CHECK_THROWS_AS(ImageBehaviour::parse("succeed:5"), std::invalid_argument);
    CHECK_THROWS_AS(ImageBehaviour::parse("dance"), std::invalid_argument);
    CHECK(e.user == ImageUser{0, 0});  // an image that names no user runs as root

    auto nonroot = ImageBehaviour::parse("exec:/opt/bin/vck-fetch;user=65532:65532");
    CHECK(nonroot.program == "/opt/bin/vck-fetch");
    CHECK(nonroot.user == ImageUser{65532, 65532});
    CHECK(ImageBehaviour::parse("forever;user=1000").user == ImageUser{1000, 0});
    CHECK_THROWS_WITH_AS(ImageBehaviour::parse("succeed;user=nobody"), doctest::Contains("is not a numeric id"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(ImageBehaviour::parse("succeed;root=1"), doctest::Contains("unknown option \"root=1\""),
                         std::invalid_argument);
    CHECK_THROWS_AS(ImageBehaviour::parse("succeed;user=4294967295"), std::invalid_argument);

    ImageBehaviours images;
    images.images["vck/vck-fetch:*"] = ImageBehaviour::execute("/bin/true");
    images.images["vck/vck-fetch:pinned"] = ImageBehaviour::run_forever();
    CHECK(images.find("vck/vck-fetch:latest").kind == ImageBehaviour::Kind::Execute);
    CHECK(images.find("vck/vck-fetch:pinned").kind == ImageBehaviour::Kind::RunForever);
    CHECK(images.find("busybox").kind == ImageBehaviour::Kind::Succeed);
}

namespace {

/// A pod of image `image` whose container runs `args` with `/data` on hostPath `host_path`
/// (DirectoryOrCreate) or its `sub_path`, and `security` as its securityContext.
json::value data_pod(const std::string& name, const std::string& image, const std::string& host_path,
                     json::array args, json::object security = {}, const std::string& sub_path = {}) {
    json::object spec{{"volumes", json::array{json::object{
                                      {"name", "data"},
                                      {"hostPath", json::object{{"path", host_path}, {"type", "DirectoryOrCreate"}}}}}}};
    auto p = pod(name, image, spec);
    auto& c = p.as_object()["spec"].as_object()["containers"].as_array()[0].as_object();
    c["command"] = json::array{"run"};
    c["args"] = std::move(args);
    json::object mount{{"name", "data"}, {"mountPath", "/data"}};
    if (!sub_path.empty()) mount["subPath"] = sub_path;
    c["volumeMounts"] = json::array{std::move(mount)};
    if (!security.empty()) c["securityContext"] = std::move(security);
    return p;
}

/// This process's umask for the scope (it is process-wide: no other test runs meanwhile).
struct Umask {
    mode_t old;
    explicit Umask(mode_t m) : old(::umask(m)) {}
    ~Umask() { ::umask(old); }
};

struct stat stat_of(const std::filesystem::path& p) {
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    return st;
}

// An array, not a pointer: doctest's MESSAGE prints it as text.
constexpr char needs_root[] =
    "the sandbox runs containers as their securityContext's user only as root: here they run as this "
    "test's user, which this case checks instead";

} // namespace

TEST_CASE("a container's user is its securityContext's, else the pod's, else the image's default user") {
    auto p = vck::api::from_json<vck::api::Pod>(pod("p"));
    auto c = p.spec.containers.front();
    ImageUser image{65532, 65532};
    auto id = effective_identity(p, c, image);
    CHECK(id.uid == 65532);
    CHECK(id.gid == 65532);
    CHECK(id.groups.empty());

    p.spec.securityContext = json::object{{"runAsUser", 1000}, {"supplementalGroups", json::array{5, 6}}};
    id = effective_identity(p, c, image);
    CHECK(id.uid == 1000);
    CHECK(id.gid == 0);  // a uid the image's /etc/passwd does not know has group 0 (containerd)
    CHECK(id.groups == std::vector<std::uint32_t>{5, 6});

    c.securityContext = json::object{{"runAsUser", 0}, {"runAsGroup", 7}};
    id = effective_identity(p, c, image);
    CHECK(id.uid == 0);
    CHECK(id.gid == 7);
}

TEST_CASE("the kubelet's own directories: DirectoryOrCreate 0755, emptyDir 0777, a subPath its volume's mode, "
          "termination-log 0666, all owned by the kubelet") {
    ScriptedSandbox scripted("probe", "exit 0\n");
    auto& sb = scripted.sb;
    json::object spec{{"volumes", json::array{json::object{{"name", "data"},
                                                           {"hostPath", json::object{{"path", "/srv/a/b"},
                                                                                     {"type", "DirectoryOrCreate"}}}},
                                              json::object{{"name", "scratch"}, {"emptyDir", json::object{}}}}}};
    auto p = pod("dirs", "probe", spec);
    auto& c = p.as_object()["spec"].as_object()["containers"].as_array()[0].as_object();
    c["command"] = json::array{"probe"};
    c["volumeMounts"] = json::array{json::object{{"name", "data"}, {"mountPath", "/data"}},
                                    json::object{{"name", "scratch"}, {"mountPath", "/scratch"}},
                                    json::object{{"name", "scratch"}, {"mountPath", "/sub"}, {"subPath", "x/y"}}};
    {
        Umask strict(077);  // the modes are the kubelet's, whatever this process's umask
        sb.store().create(pods, "default", p);
        REQUIRE(eventually([&] { return phase(sb, "dirs") == "Succeeded"; }));
    }
    auto node = sb.node_dir("node-1");
    auto uid = str(get_pod(sb, "dirs"), "metadata.uid");
    auto scratch = node / "pods" / uid / "volumes" / "scratch";
    for (const auto& [path, mode] : std::vector<std::pair<std::filesystem::path, unsigned>>{
             {node / "srv", 0755}, {node / "srv/a/b", 0755}, {scratch, 0777}, {scratch / "x", 0777}, {scratch / "x/y", 0777}}) {
        CAPTURE(path);
        auto st = stat_of(path);
        CHECK((st.st_mode & 07777) == mode);
        CHECK(st.st_uid == ::geteuid());
    }
    auto log = node / "pods" / uid / "containers" / "main" / "termination-log-0";
    CHECK((stat_of(log).st_mode & 07777) == 0666);
}

TEST_CASE("a container running as uid 65532 cannot write into the root-owned directory DirectoryOrCreate made") {
    ScriptedSandbox scripted("writer", "echo \"uid=$(id -u) gid=$(id -g)\"\necho x > \"$1/f\"\n");
    auto& sb = scripted.sb;
    sb.store().create(pods, "default", data_pod("nonroot", "writer", "/srv/vck", json::array{"/data"},
                                                json::object{{"runAsUser", 65532}, {"runAsNonRoot", true}}));
    REQUIRE(eventually([&] {
        auto ph = phase(sb, "nonroot");
        return ph == "Succeeded" || ph == "Failed";
    }));
    auto dir = sb.node_dir("node-1") / "srv" / "vck";
    auto log = sb.server().pod_logs().read("default", "nonroot", "main").value_or("");
    CAPTURE(log);
    CHECK((stat_of(dir).st_mode & 07777) == 0755);
    if (sb.users_modelled()) {
        CHECK(stat_of(dir).st_uid == 0);
        CHECK(phase(sb, "nonroot") == "Failed");
        CHECK(log.starts_with("uid=65532 gid=0\n"));
        CHECK(log.find("Permission denied") != std::string::npos);
        CHECK(at(container_status(sb, "nonroot"), "state.terminated.exitCode") != 0);
        CHECK_FALSE(std::filesystem::exists(dir / "f"));
    } else {
        MESSAGE(needs_root);
        CHECK(phase(sb, "nonroot") == "Succeeded");
        CHECK(log.starts_with("uid=" + std::to_string(::geteuid()) + " "));
        CHECK(read_file(dir / "f") == "x\n");
    }
}

TEST_CASE("after an init container of uid 0 chowns the directory to 65532, the image's user 65532 writes there") {
    TempDir tmp;
    Script script(tmp.path, "step.sh",
                  "echo \"$2 as $(id -u):$(id -g)\"\n"
                  "if [ \"$2\" = prepare ]; then chown 65532:65532 \"$1\" 2>/dev/null || echo refused\n"
                  "else echo x > \"$1/f\"; fi\n");
    auto o = quiet_options(1);
    auto image = ImageBehaviour::execute(script.path);
    image.user = ImageUser{65532, 65532};  // as the vck image's USER 65532:65532
    o.images["vck/vck-fetch:1"] = image;
    Sandbox sb(o);
    // Both mount the volume's subPath "set", which the kubelet makes root's, 0755.
    auto p = data_pod("prepared", "vck/vck-fetch:1", "/srv/vck", json::array{"/data", "write"}, {}, "set");
    auto& spec = p.as_object()["spec"].as_object();
    auto init = spec["containers"].as_array()[0];
    init.as_object()["name"] = "prepare";
    init.as_object()["args"] = json::array{"/data", "prepare"};
    init.as_object()["securityContext"] = json::object{{"runAsUser", 0}, {"runAsNonRoot", false}};
    spec["initContainers"] = json::array{init};
    sb.store().create(pods, "default", p);
    REQUIRE(eventually([&] {
        auto ph = phase(sb, "prepared");
        return ph == "Succeeded" || ph == "Failed";
    }));
    auto dir = sb.node_dir("node-1") / "srv" / "vck" / "set";
    auto main_log = sb.server().pod_logs().read("default", "prepared", "main").value_or("");
    auto init_log = sb.server().pod_logs().read("default", "prepared", "prepare").value_or("");
    CAPTURE(main_log);
    CAPTURE(init_log);
    CHECK(phase(sb, "prepared") == "Succeeded");
    CHECK(read_file(dir / "f") == "x\n");
    if (sb.users_modelled()) {
        CHECK(init_log == "prepare as 0:0\n");
        CHECK(main_log == "write as 65532:65532\n");
        CHECK(stat_of(dir).st_uid == 65532);
        CHECK(stat_of(dir / "f").st_uid == 65532);
    } else {
        MESSAGE(needs_root);
        auto me = std::to_string(::geteuid()) + ":" + std::to_string(::getegid());
        CHECK(main_log == "write as " + me + "\n");
    }
}

TEST_CASE("runAsNonRoot with uid 0 is refused with the kubelet's words, and a non-root user starts") {
    auto o = quiet_options(1);
    o.images["root-image"] = ImageBehaviour::succeed();
    auto nonroot = ImageBehaviour::succeed();
    nonroot.user = ImageUser{65532, 65532};
    o.images["nonroot-image"] = nonroot;
    Sandbox sb(o);
    auto make = [](const std::string& name, const std::string& image, json::object security) {
        auto p = pod(name, image);
        p.as_object()["spec"].as_object()["containers"].as_array()[0].as_object()["securityContext"] = std::move(security);
        return p;
    };
    sb.store().create(pods, "default", make("image-root", "root-image", json::object{{"runAsNonRoot", true}}));
    sb.store().create(pods, "default",
                      make("explicit-root", "nonroot-image", json::object{{"runAsNonRoot", true}, {"runAsUser", 0}}));
    sb.store().create(pods, "default", make("image-nonroot", "nonroot-image", json::object{{"runAsNonRoot", true}}));
    auto waiting = [&](const std::string& name, const std::string& words) {
        auto uid = str(get_pod(sb, name), "metadata.uid");
        auto cs = container_status(sb, name);
        return str(cs, "state.waiting.reason") == "CreateContainerConfigError" &&
               str(cs, "state.waiting.message") ==
                   words + " (pod: \"" + name + "_default(" + uid + ")\", container: main)";
    };
    CHECK(eventually([&] { return waiting("image-root", "container has runAsNonRoot and image will run as root"); }));
    CHECK(eventually([&] { return waiting("explicit-root", "container's runAsUser breaks non-root policy"); }));
    CHECK(eventually([&] { return phase(sb, "image-nonroot") == "Succeeded"; }));
    CHECK(phase(sb, "image-root") == "Pending");
    REQUIRE(eventually([&] { return !events_for(sb, "image-root", "Failed").empty(); }));
    CHECK(str(events_for(sb, "image-root", "Failed").front(), "message")
              .starts_with("Error: container has runAsNonRoot and image will run as root (pod: "));
}

TEST_CASE("two simulated clusters on one host hand out pod IPs from different loopback blocks") {
    // One sandbox's probes and Service endpoints must never reach another's servers.
    auto o = quiet_options(1);
    o.images["app:1"] = ImageBehaviour::run_forever();
    Sandbox first(o);
    Sandbox second(o);
    first.store().create(pods, "default", pod("p", "app:1"));
    second.store().create(pods, "default", pod("p", "app:1"));
    std::string a, b;
    REQUIRE(eventually([&] {
        a = str(first.store().get(pods, "default", "p"), "status.podIP");
        b = str(second.store().get(pods, "default", "p"), "status.podIP");
        return !a.empty() && !b.empty();
    }));
    auto block = [](const std::string& ip) { return ip.substr(0, ip.find('.', 4)); };  // "127.<block>"
    CHECK(a.starts_with("127."));
    CHECK(b.starts_with("127."));
    CHECK_MESSAGE(block(a) != block(b), a, " and ", b);
}

TEST_CASE("a pod address block is held by one PodNetwork at a time, and addresses stay in it") {
    PodNetwork one, two;
    CHECK(one.block() != two.block());
    CHECK(one.block() >= 128);
    CHECK(one.block() <= 255);
    std::set<std::string> seen;
    for (int i = 0; i < 250; ++i) {
        auto ip = one.pod_ip(0);
        CHECK(ip.starts_with("127." + std::to_string(one.block()) + ".1."));
        seen.insert(ip);
    }
    CHECK(seen.size() == 250);
    CHECK(two.pod_ip(2).starts_with("127." + std::to_string(two.block()) + ".3."));
}

TEST_CASE("plain secret and configMap volumes hold their keys (or items) as files with defaultMode, as projected ones do") {
    // `stat -c %a` of each file, then its contents: what a container reading them sees.
    ScriptedSandbox scripted("show", "for f in \"$@\"; do echo \"$(stat -c %a \"$f\") $(cat \"$f\")\"; done\n");
    auto& sb = scripted.sb;
    sb.store().create(secrets, "default",
                      json::object{{"metadata", json::object{{"name", "peer"}}},
                                   {"data", json::object{{"tls.crt", "Y2VydA=="}, {"tls.key", "a2V5"}}}});
    sb.store().create(ResourceId{"", "v1", "configmaps"}, "default",
                      json::object{{"metadata", json::object{{"name", "app"}}},
                                   {"data", json::object{{"app.conf", "level=debug"}, {"other", "x"}}}});
    auto p = pod("mounts", "show");
    auto& spec = p.as_object()["spec"].as_object();
    spec["volumes"] = json::array{
        json::object{{"name", "peer"}, {"secret", json::object{{"secretName", "peer"}, {"defaultMode", 0440}}}},
        json::object{{"name", "cfg"},
                     {"configMap", json::object{{"name", "app"},
                                                {"items", json::array{json::object{{"key", "app.conf"}, {"path", "conf/app.conf"}}}}}}}};
    auto& c = spec["containers"].as_array()[0].as_object();
    c["args"] = json::array{"/etc/peer/tls.crt", "/etc/peer/tls.key", "/etc/cfg/conf/app.conf"};
    c["volumeMounts"] = json::array{json::object{{"name", "peer"}, {"mountPath", "/etc/peer"}, {"readOnly", true}},
                                    json::object{{"name", "cfg"}, {"mountPath", "/etc/cfg"}}};
    sb.store().create(pods, "default", p);
    REQUIRE(eventually([&] { return phase(sb, "mounts") == "Succeeded"; }));
    CHECK(sb.server().pod_logs().read("default", "mounts", "main") ==
          std::optional<std::string>("440 cert\n440 key\n644 level=debug\n"));
}

TEST_CASE("a container cannot write through a read-only mount, nor into a configMap volume, as on a node; "
          "a writable volume beside or under one stays writable") {
    // Each argument: "ok" when the write went through, else the shell's error.
    ScriptedSandbox scripted("probe", "for f in \"$@\"; do\n"
                                      "  if err=$( { echo x > \"$f\"; } 2>&1 ); then echo \"ok $f\"; else echo \"$err\"; fi\n"
                                      "done\n");
    auto& sb = scripted.sb;
    sb.store().create(ResourceId{"", "v1", "configmaps"}, "default",
                      json::object{{"metadata", json::object{{"name", "app"}}}, {"data", json::object{{"app.conf", "a"}}}});
    auto p = pod("ro", "probe");
    auto& spec = p.as_object()["spec"].as_object();
    auto host = [](const std::string& path) {
        return json::object{{"path", path}, {"type", "DirectoryOrCreate"}};
    };
    spec["volumes"] = json::array{json::object{{"name", "data"}, {"hostPath", host("/srv/ro")}},
                                  json::object{{"name", "out"}, {"hostPath", host("/srv/ro/out")}},
                                  json::object{{"name", "cfg"}, {"configMap", json::object{{"name", "app"}}}},
                                  json::object{{"name", "scratch"}, {"emptyDir", json::object{}}}};
    auto& c = spec["containers"].as_array()[0].as_object();
    c["args"] = json::array{"/data/f", "/data/out/f", "/etc/cfg/new", "/etc/cfg/app.conf", "/scratch/f"};
    c["volumeMounts"] = json::array{json::object{{"name", "data"}, {"mountPath", "/data"}, {"readOnly", true}},
                                    json::object{{"name", "out"}, {"mountPath", "/data/out"}},
                                    json::object{{"name", "cfg"}, {"mountPath", "/etc/cfg"}},
                                    json::object{{"name", "scratch"}, {"mountPath", "/scratch"}}};
    sb.store().create(pods, "default", p);
    REQUIRE(eventually([&] { return phase(sb, "ro") == "Succeeded"; }));
    auto log = sb.server().pod_logs().read("default", "ro", "main").value_or("");
    CAPTURE(log);
    auto dir = sb.node_dir("node-1") / "srv" / "ro";
    if (!HostProcess::mount_isolation()) {
        // Without CAP_SYS_ADMIN and user namespaces nothing can be made read-only for one process.
        REQUIRE(::geteuid() != 0);
        MESSAGE("read-only mounts need a mount namespace (root, or unprivileged user namespaces); not enforced here");
        return;
    }
    auto lines = [&] {
        std::vector<std::string> v;
        std::istringstream in(log);
        for (std::string l; std::getline(in, l);) v.push_back(l);
        return v;
    }();
    REQUIRE(lines.size() == 5);
    CHECK(lines[0].find("Read-only file system") != std::string::npos);
    CHECK(lines[1].starts_with("ok "));
    CHECK(lines[2].find("Read-only file system") != std::string::npos);
    CHECK(lines[3].find("Read-only file system") != std::string::npos);
    CHECK(lines[4].starts_with("ok "));
    CHECK_FALSE(std::filesystem::exists(dir / "f"));
    CHECK(read_file(dir / "out" / "f") == "x\n");
    // The read-only mount is the container's view only: the node (here, this process) still writes there.
    std::ofstream(dir / "from-node") << "y";
    CHECK(read_file(dir / "from-node") == "y");
}

TEST_CASE("a crashing container restarts at once, then waits a back-off doubled per crash up to its cap; "
          "its BackOff events are one event whose count grows") {
    auto o = quiet_options(1);
    o.restart_backoff = std::chrono::milliseconds(200);
    o.max_restart_backoff = std::chrono::milliseconds(800);
    o.images["crasher"] = ImageBehaviour::fail(1, std::chrono::milliseconds(10));
    Sandbox sb(o);
    sb.store().create(pods, "default", pod("crash", "crasher", json::object{{"restartPolicy", "Always"}}));
    // Each back-off message seen, with the restart count the pod showed beside it.
    std::set<std::pair<std::string, std::int64_t>> seen;
    std::string last_message;
    REQUIRE(eventually([&] {
        auto cs = container_status(sb, "crash");
        if (!cs.is_object()) return false;
        auto msg = str(cs, "state.waiting.message");
        if (!msg.empty()) {
            CHECK(str(cs, "state.waiting.reason") == "CrashLoopBackOff");
            last_message = msg;
            seen.emplace(msg.substr(0, msg.find(" restarting")), at(cs, "restartCount").to_number<std::int64_t>());
        }
        return at(cs, "restartCount").to_number<std::int64_t>() >= 5;
    }));
    std::set<std::string> waits;
    for (const auto& [w, restarts] : seen) {
        waits.insert(w);
        // The first crash was restarted without a back-off: 200ms follows the second crash.
        if (w == "back-off 200ms") CHECK(restarts == 1);
        if (w == "back-off 400ms") CHECK(restarts == 2);
        if (w == "back-off 800ms") CHECK(restarts >= 3);
    }
    CHECK(waits == std::set<std::string>{"back-off 200ms", "back-off 400ms", "back-off 800ms"});
    auto pod_uid = str(get_pod(sb, "crash"), "metadata.uid");
    CHECK(last_message.ends_with(" restarting failed container=main pod=crash_default(" + pod_uid + ")"));
    // As client-go's recorder aggregates them: one BackOff event, counted once per back-off.
    auto backoffs = events_for(sb, "crash", "BackOff");
    REQUIRE(backoffs.size() == 1);
    CHECK(at(backoffs[0], "count").to_number<std::int64_t>() >= 3);
    CHECK(str(backoffs[0], "lastTimestamp") >= str(backoffs[0], "firstTimestamp"));
    CHECK(str(backoffs[0], "message") == "Back-off restarting failed container main in pod crash_default(" + pod_uid + ")");
    CHECK(events_for(sb, "crash", "Started").size() == 1);
    CHECK(at(events_for(sb, "crash", "Started")[0], "count").to_number<std::int64_t>() >= 5);
}

TEST_CASE("by default a crash loop waits 10s after the second crash, as a node's kubelet does") {
    auto o = quiet_options(1);
    o.restart_backoff = Sandbox::Options{}.restart_backoff;
    o.max_restart_backoff = Sandbox::Options{}.max_restart_backoff;
    CHECK(o.restart_backoff == std::chrono::seconds(10));
    CHECK(o.max_restart_backoff == std::chrono::minutes(5));
    o.images["crasher"] = ImageBehaviour::fail(1, std::chrono::milliseconds(10));
    Sandbox sb(o);
    sb.store().create(pods, "default", pod("crash", "crasher", json::object{{"restartPolicy", "Always"}}));
    REQUIRE(eventually([&] { return str(container_status(sb, "crash"), "state.waiting.reason") == "CrashLoopBackOff"; }));
    auto cs = container_status(sb, "crash");
    CHECK(str(cs, "state.waiting.message").starts_with("back-off 10s restarting failed container=main pod=crash_default("));
    CHECK(at(cs, "restartCount") == 1);
    // Go's time.Duration words for the later waits.
    CHECK(Kubelet::go_duration(std::chrono::seconds(20)) == "20s");
    CHECK(Kubelet::go_duration(std::chrono::seconds(80)) == "1m20s");
    CHECK(Kubelet::go_duration(std::chrono::seconds(160)) == "2m40s");
    CHECK(Kubelet::go_duration(std::chrono::minutes(5)) == "5m0s");
    CHECK(Kubelet::go_duration(std::chrono::milliseconds(1500)) == "1.5s");
    CHECK(Kubelet::go_duration(std::chrono::milliseconds(50)) == "50ms");
}
