// MetricsRegistry: counters, gauges and histograms with labels, rendered in the Prometheus
// text exposition format (version 0.0.4) under controller-runtime's and client-go's names.
// Guarantees: thread-safe; a series appears once per label set with its HELP/TYPE lines once
// per family; histograms are cumulative with le="+Inf", _sum and _count; collectors (work
// queue snapshots, process figures) are called at render time, so a scrape always sees
// current values. Hot paths hold on to a series (counter(), gauge(), histogram() return a
// reference that stays valid as long as the registry): updating it then takes no lock on the
// registry and allocates nothing (a counter or gauge is one atomic).
#pragma once

#include <vck/runtime/work_queue_metrics.hpp>

#include <fmt/core.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
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

/// One counter or gauge series: a double updated atomically.
class MetricSeries {
public:
    void inc(double by = 1.0) { v_.fetch_add(by, std::memory_order_relaxed); }
    void dec(double by = 1.0) { v_.fetch_sub(by, std::memory_order_relaxed); }
    void set(double x) { v_.store(x, std::memory_order_relaxed); }
    double value() const { return v_.load(std::memory_order_relaxed); }

private:
    std::atomic<double> v_{0};
};

/// One histogram series, with its family's buckets (upper bounds, ascending).
class HistogramSeries {
public:
    explicit HistogramSeries(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}
    void observe(double v) {
        std::lock_guard lk(mu_);
        for (std::size_t i = 0; i < bounds_.size(); ++i)
            if (v <= bounds_[i]) {
                ++counts_[i];  // not cumulative here: summed when rendered
                break;
            }
        ++count_;
        sum_ += v;
    }
    std::uint64_t count() const {
        std::lock_guard lk(mu_);
        return count_;
    }
    /// Appends the _bucket (cumulative), _sum and _count lines.
    void render(std::string& out, const std::string& name, const MetricLabels& l) const;

private:
    mutable std::mutex mu_;
    std::vector<double> bounds_;
    std::vector<std::uint64_t> counts_;
    std::uint64_t count_ = 0;
    double sum_ = 0;
};

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

    /// The series of a family for these labels, created at 0 on first use; the reference
    /// stays valid for the registry's lifetime.
    MetricSeries& counter(const std::string& name, const MetricLabels& labels = {}) {
        std::lock_guard lk(mu_);
        return family(name, Type::Counter).values[labels];
    }
    MetricSeries& gauge(const std::string& name, const MetricLabels& labels = {}) {
        std::lock_guard lk(mu_);
        return family(name, Type::Gauge).values[labels];
    }
    HistogramSeries& histogram(const std::string& name, const MetricLabels& labels = {}) {
        std::lock_guard lk(mu_);
        auto& f = family(name, Type::Histogram);
        if (f.buckets.empty()) f.buckets = reconcile_time_buckets();
        return f.histograms.try_emplace(labels, f.buckets).first->second;
    }

    void inc(const std::string& name, const MetricLabels& labels = {}, double by = 1.0) { counter(name, labels).inc(by); }
    void set(const std::string& name, const MetricLabels& labels, double v) { gauge(name, labels).set(v); }
    void observe(const std::string& name, const MetricLabels& labels, double v) { histogram(name, labels).observe(v); }

    /// Drops a counter or gauge series (a per-object series whose object is gone, so that the
    /// label set stays bounded by what exists). A reference to it taken earlier must not be
    /// used again.
    void remove(const std::string& name, const MetricLabels& labels) {
        std::lock_guard lk(mu_);
        if (auto it = families_.find(name); it != families_.end()) it->second.values.erase(labels);
    }

    /// The value of a counter or gauge series (0 if absent): for tests and health checks.
    double value(const std::string& name, const MetricLabels& labels = {}) const {
        std::lock_guard lk(mu_);
        auto it = families_.find(name);
        if (it == families_.end()) return 0;
        auto v = it->second.values.find(labels);
        return v == it->second.values.end() ? 0 : v->second.value();
    }

    /// The _count of a histogram series (0 if absent): for tests.
    std::uint64_t histogram_count(const std::string& name, const MetricLabels& labels = {}) const {
        std::lock_guard lk(mu_);
        auto it = families_.find(name);
        if (it == families_.end()) return 0;
        auto h = it->second.histograms.find(labels);
        return h == it->second.histograms.end() ? 0 : h->second.count();
    }

    /// Called at each render(); appends whole families in text format.
    void add_collector(std::function<void(std::string&)> c) {
        std::lock_guard lk(mu_);
        collectors_.push_back(std::move(c));
    }

    /// A work queue to export as workqueue_*: `snapshot` returns its metrics, or nothing once
    /// the queue is gone. Every queue's series go under one HELP/TYPE per family.
    void add_work_queue(std::function<std::optional<WorkQueueMetrics>()> snapshot) {
        std::lock_guard lk(mu_);
        queues_.push_back(std::move(snapshot));
    }

    std::string render() const {
        std::string out;
        std::vector<std::function<void(std::string&)>> cs;
        std::vector<std::function<std::optional<WorkQueueMetrics>()>> qs;
        {
            std::lock_guard lk(mu_);
            for (const auto& [name, f] : families_) {
                out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, f.help, name, type_name(f.type));
                for (const auto& [l, v] : f.values)
                    out += fmt::format("{}{} {}\n", name, render_labels(l), number(v.value()));
                for (const auto& [l, h] : f.histograms) h.render(out, name, l);
            }
            cs = collectors_;
            qs = queues_;
        }
        std::vector<WorkQueueMetrics> snapshots;
        for (auto& q : qs)
            if (auto m = q()) snapshots.push_back(std::move(*m));
        render_work_queues(out, snapshots);
        for (auto& c : cs) c(out);
        return out;
    }

    /// Appends the workqueue_* families (client-go's names and help) of these queues, each
    /// series labelled as controller-runtime does: controller and name, both the queue's name.
    static void render_work_queues(std::string& out, const std::vector<WorkQueueMetrics>& qs) {
        if (qs.empty()) return;
        auto labels = [](const WorkQueueMetrics& m) { return MetricLabels{{"controller", m.name}, {"name", m.name}}; };
        auto one = [&](const char* n, const char* type, const char* help, auto field) {
            out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", n, help, n, type);
            for (const auto& m : qs) out += fmt::format("{}{} {}\n", n, render_labels(labels(m)), number(field(m)));
        };
        one("workqueue_depth", "gauge", "Current depth of workqueue",
            [](const WorkQueueMetrics& m) { return static_cast<double>(m.depth); });
        one("workqueue_adds_total", "counter", "Total number of adds handled by workqueue",
            [](const WorkQueueMetrics& m) { return static_cast<double>(m.adds_total); });
        one("workqueue_retries_total", "counter", "Total number of retries handled by workqueue",
            [](const WorkQueueMetrics& m) { return static_cast<double>(m.retries_total); });
        one("workqueue_unfinished_work_seconds", "gauge",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. "
            "Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate "
            "at which this increases.",
            [](const WorkQueueMetrics& m) { return m.unfinished_work_seconds; });
        one("workqueue_longest_running_processor_seconds", "gauge",
            "How many seconds has the longest running processor for workqueue been running.",
            [](const WorkQueueMetrics& m) { return m.longest_running_processor_seconds; });
        auto hist = [&](const char* n, const char* help, const Histogram WorkQueueMetrics::*field) {
            out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", n, help, n);
            for (const auto& m : qs) {
                const Histogram& h = m.*field;
                auto l = labels(m);
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
            }
        };
        hist("workqueue_queue_duration_seconds", "How long in seconds an item stays in workqueue before being requested",
             &WorkQueueMetrics::queue_duration_seconds);
        hist("workqueue_work_duration_seconds", "How long in seconds processing an item from workqueue takes.",
             &WorkQueueMetrics::work_duration_seconds);
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
    static std::string number(double v) { return fmt::format("{}", v); }

private:
    struct Family {
        Type type = Type::Counter;
        std::string help;
        std::vector<double> buckets;
        std::map<MetricLabels, MetricSeries> values;  // std::map: series never move
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

    mutable std::mutex mu_;
    std::map<std::string, Family> families_;
    std::vector<std::function<void(std::string&)>> collectors_;
    std::vector<std::function<std::optional<WorkQueueMetrics>()>> queues_;
};

inline void HistogramSeries::render(std::string& out, const std::string& name, const MetricLabels& l) const {
    std::lock_guard lk(mu_);
    std::uint64_t cum = 0;
    for (std::size_t i = 0; i < bounds_.size(); ++i) {
        cum += counts_[i];
        auto bl = l;
        bl.emplace_back("le", MetricsRegistry::number(bounds_[i]));
        out += fmt::format("{}_bucket{} {}\n", name, MetricsRegistry::render_labels(bl), cum);
    }
    auto bl = l;
    bl.emplace_back("le", "+Inf");
    out += fmt::format("{}_bucket{} {}\n", name, MetricsRegistry::render_labels(bl), count_);
    out += fmt::format("{}_sum{} {}\n", name, MetricsRegistry::render_labels(l), MetricsRegistry::number(sum_));
    out += fmt::format("{}_count{} {}\n", name, MetricsRegistry::render_labels(l), count_);
}

} // namespace vck::runtime
