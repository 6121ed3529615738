// What vck::log writes and what MetricsRegistry renders, as an operator reads them
// (docs/ops.md): JSON and text lines, logr's V(n) levels, controller-runtime's and client-go's
// metric families. Log lines are read back from stderr, redirected to a file per case.
#include <vck/runtime/log.hpp>
#include <vck/runtime/metrics.hpp>
#include <vck/runtime/process_metrics.hpp>
#include <vck/runtime/rest_client_metrics.hpp>

#include <boost/json.hpp>

#include "stderr_lines.hpp"

#include <doctest.h>

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace json = boost::json;
namespace vlog = vck::log;
using vck::runtime::MetricsRegistry;
using vck::test::stderr_lines;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

} // namespace

TEST_CASE("a JSON log line is one object with ts, level, msg and the fields, values escaped") {
    auto lines = stderr_lines(vlog::Format::Json, 0, [] {
        vlog::error("Reconciler error", {{"controller", "vm"}, {"name", "a\"b\nc"}, {"error", "boom"}});
    });
    REQUIRE(lines.size() == 1);
    auto o = json::parse(lines[0]).as_object();
    CHECK(o.at("level") == "error");
    CHECK(o.at("msg") == "Reconciler error");
    CHECK(o.at("name") == "a\"b\nc");
    CHECK(o.at("error") == "boom");
    CHECK(o.contains("ts"));
    CHECK_FALSE(o.contains("v"));
}

TEST_CASE("V(n) lines are written only when n <= -v, and a JSON line above V(0) carries its level") {
    struct Case {
        int verbosity;
        std::vector<std::string> written;  // msgs of lines written at levels 0, 1, 2, 4
    };
    for (const auto& c : {Case{0, {"v0"}}, Case{1, {"v0", "v1"}}, Case{2, {"v0", "v1", "v2"}},
                          Case{4, {"v0", "v1", "v2", "v4"}}}) {
        CAPTURE(c.verbosity);
        auto lines = stderr_lines(vlog::Format::Json, c.verbosity, [] {
            vlog::info("v0");
            vlog::V(1).info("v1");
            vlog::info(2, "v2");
            if (vlog::V(4).enabled()) vlog::V(4).info("v4");
        });
        std::vector<std::string> msgs;
        for (const auto& l : lines) {
            auto o = json::parse(l).as_object();
            msgs.emplace_back(o.at("msg").as_string());
            if (msgs.back() == "v0") CHECK_FALSE(o.contains("v"));
            else CHECK(o.at("v").as_int64() == msgs.back()[1] - '0');
        }
        CHECK(msgs == c.written);
    }
}

TEST_CASE("a text log line is klog-like: level letter, message, then key=value with values quoted when needed") {
    auto lines = stderr_lines(vlog::Format::Text, 0, [] {
        vlog::warning("lease lost\nagain", {{"lease", "default/vck"}, {"error", "not found"}});
    });
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].front() == 'W');
    CHECK(has(lines[0], "] lease lost again lease=default/vck error=\"not found\""));
}

TEST_CASE("a series taken once is updated without the registry and rendered with the family") {
    MetricsRegistry m;
    m.describe("demo_total", MetricsRegistry::Type::Counter, "Demo counter");
    auto& s = m.counter("demo_total", {{"controller", "x"}});
    s.inc();
    s.inc(2);
    CHECK(&s == &m.counter("demo_total", {{"controller", "x"}}));
    CHECK(m.value("demo_total", {{"controller", "x"}}) == 3);
    auto& g = m.gauge("demo_workers", {{"controller", "x"}});
    g.inc();
    g.inc();
    g.dec();
    auto& h = m.histogram("demo_seconds", {{"controller", "x"}});
    h.observe(0.003);
    h.observe(100);
    auto text = m.render();
    CHECK(has(text, "# TYPE demo_total counter\ndemo_total{controller=\"x\"} 3\n"));
    CHECK(has(text, "demo_workers{controller=\"x\"} 1\n"));
    CHECK(has(text, "demo_seconds_bucket{controller=\"x\",le=\"0.005\"} 1\n"));
    CHECK(has(text, "demo_seconds_bucket{controller=\"x\",le=\"60\"} 1\n"));
    CHECK(has(text, "demo_seconds_bucket{controller=\"x\",le=\"+Inf\"} 2\n"));
    CHECK(has(text, "demo_seconds_count{controller=\"x\"} 2\n"));
}

TEST_CASE("work queues render under one HELP and TYPE per family, labelled controller and name") {
    MetricsRegistry m;
    for (const char* name : {"a", "b"})
        m.add_work_queue([name]() -> std::optional<vck::runtime::WorkQueueMetrics> {
            vck::runtime::WorkQueueMetrics q;
            q.name = name;
            q.depth = 2;
            q.adds_total = 5;
            q.retries_total = 1;
            q.queue_duration_seconds.observe(0.5);
            return q;
        });
    m.add_work_queue([]() -> std::optional<vck::runtime::WorkQueueMetrics> { return std::nullopt; });  // gone
    auto text = m.render();
    for (const char* family : {"workqueue_depth", "workqueue_adds_total", "workqueue_retries_total",
                               "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds",
                               "workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds"}) {
        CAPTURE(family);
        std::string type = std::string("# TYPE ") + family + " ";
        auto first = text.find(type);
        CHECK(first != std::string::npos);
        CHECK(text.find(type, first + 1) == std::string::npos);
    }
    CHECK(has(text, "workqueue_depth{controller=\"a\",name=\"a\"} 2\n"));
    CHECK(has(text, "workqueue_adds_total{controller=\"b\",name=\"b\"} 5\n"));
    CHECK(has(text, "workqueue_queue_duration_seconds_bucket{controller=\"a\",name=\"a\",le=\"1\"} 1\n"));
}

TEST_CASE("REST client metrics count by code, host and method and time by verb and host") {
    auto m = std::make_shared<MetricsRegistry>();
    CHECK(vck::runtime::RestClientMetrics::host_of("https://127.0.0.1:6443") == "127.0.0.1:6443");
    CHECK(vck::runtime::RestClientMetrics::host_of("https://api.example:443/prefix") == "api.example:443");
    vck::runtime::RestClientMetrics rest(m, "127.0.0.1:6443");
    rest.observe("GET", 200, 0.01);
    rest.observe("GET", 200, 0.2);
    rest.observe("PATCH", 409, 0.01);
    rest.observe("GET", 0, 3);
    CHECK(m->value("rest_client_requests_total", {{"code", "200"}, {"host", "127.0.0.1:6443"}, {"method", "GET"}}) == 2);
    CHECK(m->value("rest_client_requests_total", {{"code", "409"}, {"host", "127.0.0.1:6443"}, {"method", "PATCH"}}) == 1);
    CHECK(m->value("rest_client_requests_total", {{"code", "<error>"}, {"host", "127.0.0.1:6443"}, {"method", "GET"}}) ==
          1);
    auto text = m->render();
    CHECK(has(text, "# TYPE rest_client_request_duration_seconds histogram\n"));
    CHECK(has(text, "rest_client_request_duration_seconds_bucket{host=\"127.0.0.1:6443\",verb=\"GET\",le=\"0.025\"} 1\n"));
    CHECK(has(text, "rest_client_request_duration_seconds_bucket{host=\"127.0.0.1:6443\",verb=\"GET\",le=\"4\"} 3\n"));
    CHECK(has(text, "rest_client_request_duration_seconds_count{host=\"127.0.0.1:6443\",verb=\"PATCH\"} 1\n"));
}

TEST_CASE("the process collector reports this process's CPU, memory, start time and file descriptors") {
    auto f = vck::runtime::ProcessFigures::read();
    REQUIRE(f.cpu_seconds);
    CHECK(*f.cpu_seconds >= 0);
    REQUIRE(f.resident_bytes);
    CHECK(*f.resident_bytes > 1024 * 1024);
    REQUIRE(f.start_time_seconds);
    auto now = static_cast<double>(std::time(nullptr));
    CHECK(*f.start_time_seconds <= now + 1);
    CHECK(*f.start_time_seconds > now - 24 * 3600);  // this test process started today
    REQUIRE(f.open_fds);
    CHECK(*f.open_fds >= 3);
    MetricsRegistry m;
    vck::runtime::add_process_collector(m);
    auto text = m.render();
    for (const char* family : {"process_cpu_seconds_total ", "process_resident_memory_bytes ",
                               "process_start_time_seconds ", "process_open_fds ", "process_max_fds "})
        CHECK_MESSAGE(has(text, std::string("\n") + family), family);
}
