// MetricsRegistry: counters, gauges and histograms with labels, rendered in the Prometheus
// text exposition format (version 0.0.4) under controller-runtime's and client-go's names.
// Guarantees: thread-safe; a series appears once per label set with its HELP/TYPE lines once
// per family; histograms are cumulative with le="+Inf", _sum and _count; collectors (work
// queue snapshots) are called at render time, so a scrape always sees current values.
#pragma once

#include <vck/runtime/work_queue_metrics.hpp>

#include <fmt/core.h>

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace vck::runtime {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

/// controller-runtime's reconcile_time_seconds buckets.
inline const std::vector<double>& reconcile_time_buckets() {
    static const std::vector<double> b{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5,
                                       0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5,
                                       6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60};
    return b;
}

class MetricsRegistry {
public:
    enum class Type { Counter, Gauge, Histogram };

    /// Declares a family (HELP and TYPE). Using a name undeclared makes it untyped-safe: it is
    /// declared on first use with an empty help.
    void describe(const std::string& name, Type t, std::string help, std::vector<double> buckets = {}) {
        std::lock_guard lk(mu_);
        auto& f = families_[name];
        f.type = t;
        f.help = std::move(help);
        if (!buckets.empty()) f.buckets = std::move(buckets);
    }

    void inc(const std::string& name, const MetricLabels& labels = {}, double by = 1.0) {
        std::lock_guard lk(mu_);
        family(name, Type::Counter).values[labels] += by;
    }
    void set(const std::string& name, const MetricLabels& labels, double v) {
        std::lock_guard lk(mu_);
        family(name, Type::Gauge).values[labels] = v;
    }
    void observe(const std::string& name, const MetricLabels& labels, double v) {
        std::lock_guard lk(mu_);
        auto& f = family(name, Type::Histogram);
        if (f.buckets.empty()) f.buckets = reconcile_time_buckets();
        auto& h = f.histograms[labels];
        if (h.counts.empty()) h.counts.assign(f.buckets.size(), 0);
        for (std::size_t i = 0; i < f.buckets.size(); ++i)
            if (v <= f.buckets[i]) ++h.counts[i];  // cumulative
        ++h.count;
        h.sum += v;
    }
    /// The value of a counter or gauge series (0 if absent): for tests and health checks.
    double value(const std::string& name, const MetricLabels& labels = {}) const {
        std::lock_guard lk(mu_);
        auto it = families_.find(name);
        if (it == families_.end()) return 0;
        auto v = it->second.values.find(labels);
        return v == it->second.values.end() ? 0 : v->second;
    }

    /// Called at each render(); appends whole families in text format.
    void add_collector(std::function<void(std::string&)> c) {
        std::lock_guard lk(mu_);
        collectors_.push_back(std::move(c));
    }

    std::string render() const {
        std::string out;
        std::vector<std::function<void(std::string&)>> cs;
        {
            std::lock_guard lk(mu_);
            for (const auto& [name, f] : families_) {
                out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, f.help, name, type_name(f.type));
                for (const auto& [l, v] : f.values) out += fmt::format("{}{} {}\n", name, render_labels(l), number(v));
                for (const auto& [l, h] : f.histograms) {
                    for (std::size_t i = 0; i < f.buckets.size(); ++i) {
                        auto bl = l;
                        bl.emplace_back("le", number(f.buckets[i]));
                        out += fmt::format("{}_bucket{} {}\n", name, render_labels(bl), h.counts[i]);
                    }
                    auto bl = l;
                    bl.emplace_back("le", "+Inf");
                    out += fmt::format("{}_bucket{} {}\n", name, render_labels(bl), h.count);
                    out += fmt::format("{}_sum{} {}\n", name, render_labels(l), number(h.sum));
                    out += fmt::format("{}_count{} {}\n", name, render_labels(l), h.count);
                }
            }
            cs = collectors_;
        }
        for (auto& c : cs) c(out);
        return out;
    }

    /// Appends one work queue's workqueue_* series (client-go's names and help).
    static void render_work_queue(std::string& out, const WorkQueueMetrics& m) {
        MetricLabels l{{"name", m.name}};
        auto one = [&](const char* n, const char* type, const char* help, double v) {
            out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{}{} {}\n", n, help, n, type, n, render_labels(l), number(v));
        };
        one("workqueue_depth", "gauge", "Current depth of workqueue", static_cast<double>(m.depth));
        one("workqueue_adds_total", "counter", "Total number of adds handled by workqueue", static_cast<double>(m.adds_total));
        one("workqueue_retries_total", "counter", "Total number of retries handled by workqueue", static_cast<double>(m.retries_total));
        one("workqueue_unfinished_work_seconds", "gauge",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration.",
            m.unfinished_work_seconds);
        one("workqueue_longest_running_processor_seconds", "gauge",
            "How many seconds has the longest running processor for workqueue been running.",
            m.longest_running_processor_seconds);
        auto hist = [&](const char* n, const char* help, const Histogram& h) {
            out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", n, help, n);
            std::uint64_t cum = 0;
            for (std::size_t i = 0; i < h.bounds.size(); ++i) {
                cum += h.counts[i];
                auto bl = l;
                bl.emplace_back("le", number(h.bounds[i]));
                out += fmt::format("{}_bucket{} {}\n", n, render_labels(bl), cum);
            }
            auto bl = l;
            bl.emplace_back("le", "+Inf");
            out += fmt::format("{}_bucket{} {}\n{}_sum{} {}\n{}_count{} {}\n", n, render_labels(bl), h.count, n,
                               render_labels(l), number(h.sum), n, render_labels(l), h.count);
        };
        hist("workqueue_queue_duration_seconds", "How long in seconds an item stays in workqueue before being requested",
             m.queue_duration_seconds);
        hist("workqueue_work_duration_seconds", "How long in seconds processing an item from workqueue takes.",
             m.work_duration_seconds);
    }

    static std::string render_labels(const MetricLabels& l) {
        if (l.empty()) return {};
        std::string s = "{";
        for (std::size_t i = 0; i < l.size(); ++i) {
            if (i) s += ',';
            s += l[i].first;
            s += "=\"";
            for (char c : l[i].second) {
                if (c == '\\' || c == '"') s += '\\';
                if (c == '\n') {
                    s += "\\n";
                    continue;
                }
                s += c;
            }
            s += '"';
        }
        return s + "}";
    }

private:
    struct HistogramSeries {
        std::vector<std::uint64_t> counts;
        std::uint64_t count = 0;
        double sum = 0;
    };
    struct Family {
        Type type = Type::Counter;
        std::string help;
        std::vector<double> buckets;
        std::map<MetricLabels, double> values;
        std::map<MetricLabels, HistogramSeries> histograms;
    };

    Family& family(const std::string& name, Type t) {
        auto [it, fresh] = families_.try_emplace(name);
        if (fresh) it->second.type = t;
        return it->second;
    }
    static const char* type_name(Type t) {
        switch (t) {
        case Type::Counter: return "counter";
        case Type::Gauge: return "gauge";
        case Type::Histogram: return "histogram";
        }
        return "untyped";
    }
    static std::string number(double v) { return fmt::format("{}", v); }

    mutable std::mutex mu_;
    std::map<std::string, Family> families_;
    std::vector<std::function<void(std::string&)>> collectors_;
};

} // namespace vck::runtime
