// RestClientMetrics: client-go's REST client metrics for one API server host, fed by a
// client::Client's request observer: rest_client_requests_total{code,host,method} (code
// "<error>" when no answer came) and rest_client_request_duration_seconds{host,verb}
// (histogram, client-go's buckets). Guarantees: observe() is cheap on the request path: the
// series of a (method, code) pair is looked up among those seen before under a small lock
// and bumped; only the first request of a new pair allocates its labels.
#pragma once

#include <vck/runtime/metrics.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace vck::runtime {

class RestClientMetrics {
public:
    /// client-go's rest_client_request_duration_seconds buckets.
    static const std::vector<double>& duration_buckets() {
        static const std::vector<double> b{0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0};
        return b;
    }

    /// `host` is the server's host:port, as client-go labels it.
    RestClientMetrics(std::shared_ptr<MetricsRegistry> registry, std::string host)
        : registry_(std::move(registry)), host_(std::move(host)) {
        registry_->describe("rest_client_requests_total", MetricsRegistry::Type::Counter,
                            "Number of HTTP requests, partitioned by status code, method, and host.");
        registry_->describe("rest_client_request_duration_seconds", MetricsRegistry::Type::Histogram,
                            "Request latency in seconds. Broken down by verb, and host.", duration_buckets());
    }

    /// One request's outcome: `code` 0 when no HTTP answer came.
    void observe(std::string_view method, int code, double seconds) {
        MetricSeries* count = nullptr;
        HistogramSeries* duration = nullptr;
        {
            std::lock_guard lk(mu_);
            for (const auto& c : counts_)
                if (c.code == code && c.method == method) count = c.series;
            for (const auto& d : durations_)
                if (d.method == method) duration = d.series;
        }
        if (!count) count = &add_count(method, code);
        if (!duration) duration = &add_duration(method);
        count->inc();
        duration->observe(seconds);
    }

    /// The server's host:port of a URL ("https://10.0.0.1:6443" -> "10.0.0.1:6443").
    static std::string host_of(std::string_view url) {
        if (auto p = url.find("://"); p != std::string_view::npos) url.remove_prefix(p + 3);
        return std::string(url.substr(0, url.find('/')));
    }

private:
    struct Count {
        std::string method;
        int code;
        MetricSeries* series;
    };
    struct Duration {
        std::string method;
        HistogramSeries* series;
    };

    MetricSeries& add_count(std::string_view method, int code) {
        auto& s = registry_->counter("rest_client_requests_total",
                                     {{"code", code ? std::to_string(code) : std::string("<error>")},
                                      {"host", host_},
                                      {"method", std::string(method)}});
        std::lock_guard lk(mu_);
        counts_.push_back(Count{std::string(method), code, &s});
        return s;
    }
    HistogramSeries& add_duration(std::string_view method) {
        auto& s = registry_->histogram("rest_client_request_duration_seconds",
                                       {{"host", host_}, {"verb", std::string(method)}});
        std::lock_guard lk(mu_);
        durations_.push_back(Duration{std::string(method), &s});
        return s;
    }

    std::shared_ptr<MetricsRegistry> registry_;
    std::string host_;
    std::mutex mu_;
    std::vector<Count> counts_;  // a handful: methods times the codes seen
    std::vector<Duration> durations_;
};

} // namespace vck::runtime
