// FaultInjector: the sandbox's way to make the API server misbehave on purpose, so tests can
// prove that clients survive it. Fail the next N requests matching a verb/resource with a
// chosen status (500, 503, 429 + Retry-After), drop every open watch, compact the history
// (the next watch from an old resourceVersion gets 410), add latency to every response.
// Thread-safe; the server consults it once per request.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

/// One armed failure: the next `count` requests whose verb and resource match get `code`.
struct FaultRule {
    std::string verb;      // Kubernetes verb (get, list, watch, create, update, patch, delete); "" = any
    std::string resource;  // plural resource ("pods"), optionally "pods/status"; "" = any
    int code = 500;        // 500, 503, 429, ... (any 4xx/5xx)
    int count = 1;
    int retry_after_seconds = 0;  // sent as Retry-After when > 0
    std::string message;          // "" = a message naming the injected fault
};

/// What the server answers instead of serving a request.
struct InjectedFailure {
    int code = 500;
    int retry_after_seconds = 0;
    std::string message;
};

class FaultInjector {
public:
    void fail_next(FaultRule rule) {
        if (rule.code < 400 || rule.code > 599)
            throw std::invalid_argument("an injected failure needs a 4xx or 5xx code, not " +
                                        std::to_string(rule.code));
        if (rule.count < 1) throw std::invalid_argument("an injected failure needs a count of at least 1");
        // A rule no request can match would wait unfired for ever, and the test relying on it
        // would pass without its fault.
        static constexpr std::string_view verbs[] = {"get", "list", "watch", "create", "update", "patch", "delete",
                                                     "deletecollection"};
        if (!rule.verb.empty() && std::find(std::begin(verbs), std::end(verbs), rule.verb) == std::end(verbs))
            throw std::invalid_argument("no request has the verb \"" + rule.verb +
                                        "\" (get, list, watch, create, update, patch, delete, deletecollection)");
        std::function<std::optional<std::string>(std::string_view)> check;
        {
            std::lock_guard lock(mu_);
            check = resource_check_;
        }
        if (!rule.resource.empty() && check)
            if (auto why = check(rule.resource)) throw std::invalid_argument(*why);
        std::lock_guard lock(mu_);
        rules_.push_back(std::move(rule));
    }

    /// How a rule's resource is checked when it is armed: `fn` says why no request can have
    /// it ("no resource ... is served"), or nothing when it is served.
    void on_resource_check(std::function<std::optional<std::string>(std::string_view)> fn) {
        std::lock_guard lock(mu_);
        resource_check_ = std::move(fn);
    }

    /// Consumes one matching rule for this request, if any (rules armed first fire first).
    std::optional<InjectedFailure> check(std::string_view verb, std::string_view resource) {
        std::lock_guard lock(mu_);
        for (auto it = rules_.begin(); it != rules_.end(); ++it) {
            bool verb_ok = it->verb.empty() || it->verb == verb;
            // "pods" also matches its subresources ("pods/status"); "pods/status" only itself.
            bool res_ok = it->resource.empty() || it->resource == resource ||
                          (it->resource.find('/') == std::string::npos &&
                           resource.starts_with(it->resource + "/"));
            if (!verb_ok || !res_ok) continue;
            InjectedFailure f{it->code, it->retry_after_seconds,
                              it->message.empty() ? "injected fault: " + std::to_string(it->code) + " for " +
                                                        std::string(verb) + " " + std::string(resource)
                                                  : it->message};
            if (--it->count == 0) rules_.erase(it);
            ++fired_;
            return f;
        }
        return std::nullopt;
    }

    /// Rules still armed (each with its remaining count).
    std::vector<FaultRule> pending() const {
        std::lock_guard lock(mu_);
        return rules_;
    }
    void clear() {
        std::lock_guard lock(mu_);
        rules_.clear();
        latency_ = {};
    }
    std::uint64_t fired() const {
        std::lock_guard lock(mu_);
        return fired_;
    }

    void set_latency(std::chrono::milliseconds d) {
        std::lock_guard lock(mu_);
        latency_ = d;
    }
    std::chrono::milliseconds latency() const {
        std::lock_guard lock(mu_);
        return latency_;
    }

    /// Closes every open watch stream (clients see the stream end and must re-watch).
    void drop_watches() {
        std::vector<std::function<void()>> hooks;
        {
            std::lock_guard lock(mu_);
            ++watch_generation_;
            hooks = drop_hooks_;
        }
        for (auto& h : hooks) h();
    }
    /// Each drop_watches() bumps this; a stream opened under an older generation must end.
    std::uint64_t watch_generation() const {
        std::lock_guard lock(mu_);
        return watch_generation_;
    }

    /// Forgets the store's event history, so a watch from any older resourceVersion gets 410.
    void compact() {
        std::function<void()> hook;
        {
            std::lock_guard lock(mu_);
            hook = compact_hook_;
        }
        if (!hook) throw std::logic_error("compact(): no store is attached to this fault injector");
        hook();
    }

    // Wiring, done once by the server that owns this injector.
    void on_drop_watches(std::function<void()> f) {
        std::lock_guard lock(mu_);
        drop_hooks_.push_back(std::move(f));
    }
    void on_compact(std::function<void()> f) {
        std::lock_guard lock(mu_);
        compact_hook_ = std::move(f);
    }

private:
    std::function<std::optional<std::string>(std::string_view)> resource_check_;
    mutable std::mutex mu_;
    std::vector<FaultRule> rules_;
    std::chrono::milliseconds latency_{0};
    std::uint64_t fired_ = 0;
    std::uint64_t watch_generation_ = 0;
    std::vector<std::function<void()>> drop_hooks_;
    std::function<void()> compact_hook_;
};

} // namespace vck::sandbox
