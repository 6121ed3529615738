// PodLogs: the sandbox's stand-in for the container runtime's log files, read as the kubelet
// reads them for pods/<name>/log. Writers (the simulated kubelet, the admin API) append text
// per (namespace, pod, container); each append is split into CRI log entries that carry the
// time they were written, so that timestamps=true, sinceSeconds and sinceTime answer as on a
// node. A container instance's log is closed when the container terminates; a restart keeps
// the terminated instance as the container's previous log (previous=true). A LogFollower
// reads a log from a cursor: once for a plain read, or again after each notify for follow=true.
// Thread-safe; a follower stays valid after its log, or the PodLogs, is gone.
//
// Partial lines, decided as the CRI log format does: text after the last newline of an append
// is written at once as a partial entry (containerd's "P" tag), and the next append continues
// that line in an entry of its own with its own time. With timestamps, as the kubelet prints
// them, only the first entry of a line gets the prefix; sinceSeconds/sinceTime filter entries.
// tailLines counts lines as the reader sees them (a line split into entries counts once).
#pragma once

#include <vck/api/time.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace vck::sandbox {

/// What a read of a container's log asks for, as PodLogOptions names it.
struct LogReadOptions {
    std::optional<std::int64_t> tail_lines;   // the last N lines of the log so far
    std::optional<std::int64_t> limit_bytes;  // bounds everything read, follow included
    std::optional<std::chrono::system_clock::time_point> since;  // entries written at or after
    bool timestamps = false;  // each line prefixed by its RFC3339Nano write time and a space
    bool previous = false;    // the instance before the last restart
};

/// `t` as the kubelet prints log timestamps: RFC3339 with nanoseconds always 9 digits, UTC.
inline std::string rfc3339_nano_fixed(std::chrono::system_clock::time_point t) {
    return api::format_rfc3339(t, 9);
}

namespace pod_logs_detail {

struct Entry {
    std::chrono::system_clock::time_point time;
    std::string text;
    bool ends_line = false;  // false: a partial entry, the line goes on in the next one
};

/// One container instance's log: entries are only ever appended, so an index is a cursor.
struct Instance {
    std::vector<Entry> entries;
    bool closed = false;  // the container terminated (or its pod is gone): nothing more comes
};

struct State {
    std::mutex mu;
    struct Container {
        std::shared_ptr<Instance> current, previous;
    };
    std::map<std::tuple<std::string, std::string>, std::map<std::string, Container>> logs;
    std::map<std::uint64_t, std::function<void()>> listeners;  // followers, woken on any change
    std::uint64_t next_listener = 0;

    /// Calls every listener, outside the lock: a listener only posts a wake-up.
    void notify(std::unique_lock<std::mutex>& lock) {
        std::vector<std::function<void()>> fns;
        for (const auto& [_, f] : listeners) fns.push_back(f);
        lock.unlock();
        for (auto& f : fns) f();
    }
};

} // namespace pod_logs_detail

/// A cursor in one container instance's log with the options of the read. next() returns what
/// was written since the last call (the first call: the log so far, tailLines applied);
/// ended() says nothing more will come. Safe to use from any thread.
class LogFollower {
public:
    LogFollower(std::shared_ptr<pod_logs_detail::State> state, std::shared_ptr<pod_logs_detail::Instance> log,
                LogReadOptions opts)
        : state_(std::move(state)), log_(std::move(log)), opts_(std::move(opts)) {
        if (opts_.limit_bytes && *opts_.limit_bytes >= 0) remaining_ = static_cast<std::uint64_t>(*opts_.limit_bytes);
    }
    LogFollower(const LogFollower&) = delete;
    LogFollower& operator=(const LogFollower&) = delete;
    ~LogFollower() { set_notify(nullptr); }

    /// The text written since the last call, with the read's options applied.
    std::string next() {
        std::lock_guard lock(state_->mu);
        const auto& es = log_->entries;
        if (!started_) {
            started_ = true;
            cursor_ = tail_start(es);
        }
        std::string out;
        for (; cursor_ < es.size() && remaining_ > 0; ++cursor_) {
            const auto& e = es[cursor_];
            const bool line_start = line_start_;
            line_start_ = e.ends_line;
            if (opts_.since && e.time < *opts_.since) continue;
            std::string piece;
            if (opts_.timestamps && line_start) piece = rfc3339_nano_fixed(e.time) + " ";
            piece += e.text;
            if (piece.size() > remaining_) piece.resize(remaining_);
            remaining_ -= piece.size();
            out += piece;
        }
        return out;
    }
    /// Whether next() has more to say now, or the end to report.
    bool ready() const {
        std::lock_guard lock(state_->mu);
        return !started_ || remaining_ == 0 || cursor_ < log_->entries.size() || log_->closed;
    }
    /// Whether everything is out and nothing more will come: the log is closed and read to
    /// its end, or limitBytes is spent.
    bool ended() const {
        std::lock_guard lock(state_->mu);
        return remaining_ == 0 || (started_ && log_->closed && cursor_ >= log_->entries.size());
    }
    /// `f` is called (from the writer's thread) after every change to any log; nullptr stops it.
    void set_notify(std::function<void()> f) {
        std::lock_guard lock(state_->mu);
        if (listener_) state_->listeners.erase(*listener_);
        listener_.reset();
        if (!f) return;
        listener_ = state_->next_listener++;
        state_->listeners.emplace(*listener_, std::move(f));
    }

private:
    /// The first entry of the last tailLines lines (a line's entries run to one that ends it).
    std::size_t tail_start(const std::vector<pod_logs_detail::Entry>& es) const {
        if (!opts_.tail_lines || *opts_.tail_lines < 0) return 0;
        std::size_t start = es.size();
        for (std::int64_t lines = 0; start > 0 && lines < *opts_.tail_lines; ++lines) {
            --start;  // the last entry of a line (or a partial last line)
            while (start > 0 && !es[start - 1].ends_line) --start;
        }
        return start;
    }

    std::shared_ptr<pod_logs_detail::State> state_;
    std::shared_ptr<pod_logs_detail::Instance> log_;
    LogReadOptions opts_;
    std::optional<std::uint64_t> listener_;
    std::size_t cursor_ = 0;
    bool started_ = false;
    bool line_start_ = true;
    std::uint64_t remaining_ = UINT64_MAX;
};

class PodLogs {
public:
    /// Appends text (one or more lines, or part of one) to a container's current log, written now.
    void append(const std::string& ns, const std::string& pod, const std::string& container, std::string_view text) {
        if (text.empty()) return;
        auto now = std::chrono::system_clock::now();
        std::unique_lock lock(s_->mu);
        auto& c = s_->logs[{ns, pod}][container];
        if (!c.current) c.current = std::make_shared<pod_logs_detail::Instance>();
        auto& es = c.current->entries;
        for (std::size_t pos = 0; pos < text.size();) {
            auto nl = text.find('\n', pos);
            bool full = nl != std::string_view::npos;
            auto end = full ? nl + 1 : text.size();
            es.push_back({now, std::string(text.substr(pos, end - pos)), full});
            pos = end;
        }
        s_->notify(lock);
    }
    /// The container's current instance terminated: followers of its log end.
    void close(const std::string& ns, const std::string& pod, const std::string& container) {
        std::unique_lock lock(s_->mu);
        auto& c = s_->logs[{ns, pod}][container];
        if (!c.current) c.current = std::make_shared<pod_logs_detail::Instance>();
        c.current->closed = true;
        s_->notify(lock);
    }
    /// The container restarted: its current log (empty if it wrote nothing) becomes its
    /// previous one, closed, and a new empty current log begins.
    void restart(const std::string& ns, const std::string& pod, const std::string& container) {
        std::unique_lock lock(s_->mu);
        auto& c = s_->logs[{ns, pod}][container];
        c.previous = c.current ? c.current : std::make_shared<pod_logs_detail::Instance>();
        c.previous->closed = true;
        c.current = std::make_shared<pod_logs_detail::Instance>();
        s_->notify(lock);
    }
    /// Forgets a pod's logs (the pod was deleted); followers of them end.
    void remove(const std::string& ns, const std::string& pod) {
        std::unique_lock lock(s_->mu);
        auto it = s_->logs.find({ns, pod});
        if (it == s_->logs.end()) return;
        for (auto& [_, c] : it->second)
            for (auto* i : {&c.current, &c.previous})
                if (*i) (*i)->closed = true;
        s_->logs.erase(it);
        s_->notify(lock);
    }
    /// The containers that have logged anything, in name order.
    std::vector<std::string> containers(const std::string& ns, const std::string& pod) const {
        std::lock_guard lock(s_->mu);
        std::vector<std::string> out;
        if (auto it = s_->logs.find({ns, pod}); it != s_->logs.end())
            for (const auto& [c, _] : it->second) out.push_back(c);
        return out;
    }
    /// Whether the container has a previous instance (it restarted at least once).
    bool has_previous(const std::string& ns, const std::string& pod, const std::string& container) const {
        std::lock_guard lock(s_->mu);
        auto it = s_->logs.find({ns, pod});
        if (it == s_->logs.end()) return false;
        auto c = it->second.find(container);
        return c != it->second.end() && c->second.previous;
    }
    /// A cursor at the start of a container's current (or, with opts.previous, previous) log,
    /// or nullptr if there is no such log.
    std::unique_ptr<LogFollower> open(const std::string& ns, const std::string& pod, const std::string& container,
                                      LogReadOptions opts = {}) const {
        std::shared_ptr<pod_logs_detail::Instance> log;
        {
            std::lock_guard lock(s_->mu);
            auto it = s_->logs.find({ns, pod});
            if (it == s_->logs.end()) return nullptr;
            auto c = it->second.find(container);
            if (c == it->second.end()) return nullptr;
            log = opts.previous ? c->second.previous : c->second.current;
        }
        if (!log) return nullptr;
        return std::make_unique<LogFollower>(s_, std::move(log), std::move(opts));
    }
    /// A cursor at the start of a container's current log for follow=true: a container that
    /// has not written anything yet gets an empty log, which its first append extends.
    std::unique_ptr<LogFollower> follow(const std::string& ns, const std::string& pod, const std::string& container,
                                        LogReadOptions opts) {
        std::shared_ptr<pod_logs_detail::Instance> log;
        {
            std::lock_guard lock(s_->mu);
            auto& c = s_->logs[{ns, pod}][container];
            if (!c.current) c.current = std::make_shared<pod_logs_detail::Instance>();
            log = c.current;
        }
        opts.previous = false;
        return std::make_unique<LogFollower>(s_, std::move(log), std::move(opts));
    }
    /// A container's log so far, or nullopt if it has none. With the options of a read.
    std::optional<std::string> read(const std::string& ns, const std::string& pod, const std::string& container,
                                    const LogReadOptions& opts) const {
        auto f = open(ns, pod, container, opts);
        if (!f) return std::nullopt;
        return f->next();
    }
    /// `tail_lines` keeps the last N lines, `limit_bytes` then keeps the first N bytes, as kubelet does.
    std::optional<std::string> read(const std::string& ns, const std::string& pod, const std::string& container,
                                    std::optional<std::int64_t> tail_lines = std::nullopt,
                                    std::optional<std::int64_t> limit_bytes = std::nullopt) const {
        LogReadOptions o;
        o.tail_lines = tail_lines;
        o.limit_bytes = limit_bytes;
        return read(ns, pod, container, o);
    }

private:
    std::shared_ptr<pod_logs_detail::State> s_ = std::make_shared<pod_logs_detail::State>();
};

} // namespace vck::sandbox
