// WorkQueueMetrics: a plain snapshot of one work queue's metrics, named after client-go's
// workqueue_* Prometheus series so an exporter maps field to series one to one. Histograms
// use client-go's buckets (10 ns * 10^i, i = 0..9). A snapshot is a copy: reading it never
// blocks the queue.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace vck::runtime {

/// A Prometheus histogram: counts[i] observations <= bounds[i] (not cumulative; the +Inf
/// bucket is count - sum(counts)).
struct Histogram {
    static constexpr std::array<double, 10> bounds{1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0};
    std::array<std::uint64_t, 10> counts{};
    std::uint64_t count = 0;
    double sum = 0;

    void observe(double seconds) {
        ++count;
        sum += seconds;
        for (std::size_t i = 0; i < bounds.size(); ++i)
            if (seconds <= bounds[i]) {
                ++counts[i];
                return;
            }
    }
};

struct WorkQueueMetrics {
    std::string name;                                // label "name"
    std::int64_t depth = 0;                          // workqueue_depth (gauge)
    std::uint64_t adds_total = 0;                    // workqueue_adds_total
    Histogram queue_duration_seconds;                // workqueue_queue_duration_seconds
    Histogram work_duration_seconds;                 // workqueue_work_duration_seconds
    std::uint64_t retries_total = 0;                 // workqueue_retries_total
    double unfinished_work_seconds = 0;              // workqueue_unfinished_work_seconds
    double longest_running_processor_seconds = 0;    // workqueue_longest_running_processor_seconds
};

} // namespace vck::runtime
