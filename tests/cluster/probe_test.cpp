// The simulated kubelet's probes: readiness decides Ready, liveness restarts, each failure is an
// Unhealthy event in the kubelet's words; pods serve on their own loopback pod IP, so two pods
// listen on the same port and a probe reaches each one.
#include "cluster_fixture.hpp"

#include <doctest.h>

#include <fstream>

using namespace cluster_test;
using vck::sandbox::ImageBehaviour;
using vck::sandbox::Sandbox;

namespace {

/// A pod whose container serves its working directory over HTTP on $(POD_IP):8080 (the port
/// named "http"), with `probes` (readinessProbe, livenessProbe, ...) added to the container.
json::value probed_web_pod(const std::string& name, json::object probes) {
    json::object c{{"name", "main"},
                   {"image", "web"},
                   {"command", json::array{"python3", "-m", "http.server", "--bind", "$(POD_IP)", "8080"}},
                   {"env", json::array{json::object{{"name", "POD_IP"},
                                                    {"valueFrom", json::object{{"fieldRef", json::object{{"fieldPath", "status.podIP"}}}}}}}},
                   {"ports", json::array{json::object{{"name", "http"}, {"containerPort", 8080}}}}};
    for (auto& kv : probes) c[kv.key()] = kv.value();
    auto p = pod(name, "web", {{"restartPolicy", "Always"}});
    p.at("spec").at("containers").as_array()[0] = std::move(c);
    return p;
}

json::object http_probe(const std::string& path, json::value port = "http") {
    return json::object{{"httpGet", json::object{{"path", path}, {"port", std::move(port)}}}, {"periodSeconds", 1}};
}

Sandbox::Options web_options(int nodes = 1) {
    auto o = quiet_options(nodes);
    o.images["web"] = ImageBehaviour::execute("/usr/bin/python3");
    o.images["sleeper"] = ImageBehaviour::run_forever();
    return o;
}

bool condition_is(Sandbox& sb, const std::string& pod_name, const std::string& type, const std::string& status) {
    auto conds = at(get_pod(sb, pod_name), "status.conditions");
    if (!conds.is_array()) return false;
    for (const auto& c : conds.as_array())
        if (str(c, "type") == type) return str(c, "status") == status;
    return false;
}

bool has_event(Sandbox& sb, const std::string& pod_name, const std::string& reason, const std::string& message) {
    for (const auto& e : events_for(sb, pod_name, reason))
        if (str(e, "message") == message) return true;
    return false;
}

} // namespace

TEST_CASE("a pod becomes Ready only once its readiness probe reaches what it serves on its own pod IP") {
    Sandbox sb(web_options());
    sb.store().create(pods, "default", probed_web_pod("web-a", {{"readinessProbe", http_probe("/")}}));
    sb.store().create(pods, "default", probed_web_pod("web-b", {{"readinessProbe", http_probe("/")}}));
    // Both listen on port 8080, each on its own address.
    for (const char* name : {"web-a", "web-b"}) {
        CHECK_MESSAGE(eventually([&] { return condition_is(sb, name, "Ready", "True"); }), name);
        auto p = get_pod(sb, name);
        CHECK(str(p, "status.podIP").starts_with("127."));
        CHECK(at(p, "status.containerStatuses[0].ready") == true);
        CHECK(at(p, "status.containerStatuses[0].started") == true);
        CHECK(at(p, "status.containerStatuses[0].restartCount") == 0);
    }
    CHECK(str(get_pod(sb, "web-a"), "status.podIP") != str(get_pod(sb, "web-b"), "status.podIP"));
}

TEST_CASE("a failing readiness probe keeps a running pod unready and says why in an Unhealthy event") {
    Sandbox sb(web_options());
    sb.store().create(pods, "default", probed_web_pod("web", {{"readinessProbe", http_probe("/missing")}}));
    CHECK(eventually([&] {
        return has_event(sb, "web", "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 404");
    }));
    auto p = get_pod(sb, "web");
    CHECK(str(p, "status.phase") == "Running");
    CHECK(condition_is(sb, "web", "Ready", "False"));
    CHECK(condition_is(sb, "web", "ContainersReady", "False"));
    CHECK(at(p, "status.containerStatuses[0].ready") == false);
    CHECK(at(p, "status.containerStatuses[0].started") == true);
    // Unready is not unhealthy: the container is not restarted.
    CHECK(at(p, "status.containerStatuses[0].restartCount") == 0);
}

TEST_CASE("a container that fails its liveness probe is killed and restarted, with the kubelet's events") {
    Sandbox sb(web_options());
    // Nothing listens on port 9 of the pod's address.
    json::object liveness{{"tcpSocket", json::object{{"port", 9}}}, {"periodSeconds", 1}, {"failureThreshold", 1}};
    auto p = pod("sleepy", "sleeper", {{"restartPolicy", "Always"}});
    p.at("spec").at("containers").as_array()[0].as_object()["livenessProbe"] = liveness;
    sb.store().create(pods, "default", p);
    CHECK(eventually([&] {
        auto s = at(get_pod(sb, "sleepy"), "status.containerStatuses[0].restartCount");
        return s.is_int64() && s.get_int64() >= 1;
    }));
    CHECK(has_event(sb, "sleepy", "Killing", "Container main failed liveness probe, will be restarted"));
    auto ip = str(get_pod(sb, "sleepy"), "status.podIP");
    CHECK(has_event(sb, "sleepy", "Unhealthy", "Liveness probe failed: dial tcp " + ip + ":9: connect: connection refused"));
    CHECK(at(get_pod(sb, "sleepy"), "status.containerStatuses[0].lastState.terminated.exitCode") == 137);
}

TEST_CASE("a container that ignores SIGTERM after failing its liveness probe is killed at the end of its grace period") {
    auto o = web_options();
    o.images["shell"] = ImageBehaviour::execute("/bin/sh");
    Sandbox sb(o);
    json::object liveness{{"tcpSocket", json::object{{"port", 9}}}, {"periodSeconds", 1}, {"failureThreshold", 1}};
    auto p = pod("deaf-to-sigterm", "shell", {{"restartPolicy", "Always"}, {"terminationGracePeriodSeconds", 1}});
    auto& c = p.at("spec").at("containers").as_array()[0].as_object();
    c["command"] = json::array{"/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.2; done"};
    c["livenessProbe"] = liveness;
    sb.store().create(pods, "default", p);
    CHECK(eventually([&] {
        auto s = at(get_pod(sb, "deaf-to-sigterm"), "status.containerStatuses[0].restartCount");
        return s.is_int64() && s.get_int64() >= 1;
    }));
    CHECK(at(get_pod(sb, "deaf-to-sigterm"), "status.containerStatuses[0].lastState.terminated.exitCode") == 137);
}

TEST_CASE("a startup probe holds the container unstarted and unready until it passes") {
    Sandbox sb(web_options());
    // The startup probe looks for a file the test creates later, in the served directory.
    json::object startup = http_probe("/started");
    startup["failureThreshold"] = 1000;
    sb.store().create(pods, "default", probed_web_pod("slow", {{"startupProbe", startup}}));
    CHECK(eventually([&] {
        return has_event(sb, "slow", "Unhealthy", "Startup probe failed: HTTP probe failed with statuscode: 404");
    }));
    auto p = get_pod(sb, "slow");
    CHECK(at(p, "status.containerStatuses[0].started") == false);
    CHECK(condition_is(sb, "slow", "Ready", "False"));
    // The container's working directory is what it serves.
    auto dir = sb.node_dir(str(p, "spec.nodeName")) / "pods" / str(p, "metadata.uid") / "containers" / "main";
    std::ofstream(dir / "started") << "ok\n";
    CHECK(eventually([&] { return condition_is(sb, "slow", "Ready", "True"); }));
    CHECK(at(get_pod(sb, "slow"), "status.containerStatuses[0].started") == true);
}
