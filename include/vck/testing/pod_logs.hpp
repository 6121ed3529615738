// PodLogs: the sandbox's stand-in for container log files. The simulated kubelet appends
// lines per (namespace, pod, container); the API server's pods/<name>/log reads them back
// with the usual options (container, tailLines, limitBytes). Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace vck::testing {

class PodLogs {
public:
    /// Appends text (one or more lines) to a container's log.
    void append(const std::string& ns, const std::string& pod, const std::string& container, std::string_view text) {
        std::lock_guard lock(mu_);
        logs_[{ns, pod}][container].append(text);
    }
    /// Forgets a pod's logs (the pod was deleted).
    void remove(const std::string& ns, const std::string& pod) {
        std::lock_guard lock(mu_);
        logs_.erase({ns, pod});
    }
    /// The containers that have logged anything, in name order.
    std::vector<std::string> containers(const std::string& ns, const std::string& pod) const {
        std::lock_guard lock(mu_);
        std::vector<std::string> out;
        if (auto it = logs_.find({ns, pod}); it != logs_.end())
            for (const auto& [c, _] : it->second) out.push_back(c);
        return out;
    }
    /// A container's log, or nullopt if it never logged. `tail_lines` keeps the last N lines,
    /// `limit_bytes` then keeps the first N bytes, as kubelet does.
    std::optional<std::string> read(const std::string& ns, const std::string& pod, const std::string& container,
                                    std::optional<std::int64_t> tail_lines = std::nullopt,
                                    std::optional<std::int64_t> limit_bytes = std::nullopt) const {
        std::string text;
        {
            std::lock_guard lock(mu_);
            auto it = logs_.find({ns, pod});
            if (it == logs_.end()) return std::nullopt;
            auto c = it->second.find(container);
            if (c == it->second.end()) return std::nullopt;
            text = c->second;
        }
        if (tail_lines && *tail_lines >= 0) {
            std::size_t end = text.size();
            if (end > 0 && text[end - 1] == '\n') --end;  // a final newline ends the last line
            std::size_t start = *tail_lines == 0 ? text.size() : end;
            for (std::int64_t n = 0; *tail_lines > 0;) {
                auto nl = start == 0 ? std::string::npos : text.rfind('\n', start - 1);
                if (nl == std::string::npos) {
                    start = 0;
                    break;
                }
                if (++n == *tail_lines) {
                    start = nl + 1;
                    break;
                }
                start = nl;
            }
            text.erase(0, start);
        }
        if (limit_bytes && *limit_bytes >= 0 && static_cast<std::size_t>(*limit_bytes) < text.size())
            text.resize(static_cast<std::size_t>(*limit_bytes));
        return text;
    }

private:
    mutable std::mutex mu_;
    std::map<std::tuple<std::string, std::string>, std::map<std::string, std::string>> logs_;
};

} // namespace vck::testing
