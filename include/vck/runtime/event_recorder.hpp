// EventRecorder: writes core/v1 Events about an object (what `kubectl describe` lists under
// Events), like client-go's record.EventRecorder. Guarantees: a repeat of the same event
// (same object, type, reason, message) updates the existing Event's count and lastTimestamp
// instead of creating another; each object has its own token bucket (client-go's burst 25,
// one token per 5 minutes) and events beyond it are dropped and counted, never queued
// without bound. Both are remembered for the `cache_size` most recently used objects and
// events only, so memory is bounded. Recording never throws for API errors: events are best
// effort; a refused one is logged.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/time.hpp>
#include <vck/client/client.hpp>
#include <vck/runtime/kube_object.hpp>
#include <vck/runtime/log.hpp>
#include <vck/runtime/lru_map.hpp>

#include <boost/asio/awaitable.hpp>

#include <fmt/chrono.h>
#include <fmt/core.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <tuple>

namespace vck::runtime {

namespace asio = boost::asio;

struct EventRecorderOptions {
    EventRecorderOptions() {}
    std::string component = "vck";  // source.component / reportingComponent
    std::string host;               // source.host / reportingInstance
    int burst = 25;
    double tokens_per_second = 1.0 / 300.0;
    /// Objects (rate limits) and distinct events (repeat counts) remembered, least recently
    /// used dropped first (client-go's 4096): memory stays bounded however many objects the
    /// controller ever saw. A forgotten event starts a new Event; a forgotten object, a full burst.
    std::size_t cache_size = 4096;
    /// Injected for tests; defaults to the system clock.
    std::function<std::chrono::system_clock::time_point()> now;
};

class EventRecorder {
public:
    EventRecorder(client::Client& c, EventRecorderOptions o)
        : client_(c), opts_(std::move(o)), buckets_(checked_cache_size(opts_)), seen_(opts_.cache_size) {
        if (opts_.burst < 1) throw std::invalid_argument("event recorder: burst must be >= 1");
        if (!opts_.now) opts_.now = [] { return std::chrono::system_clock::now(); };
    }

    /// A reference to `obj` for involvedObject.
    template <KubeObject T>
    static api::ObjectReference reference_to(const T& obj, const api::ResourceType& rt) {
        api::ObjectReference r;
        r.apiVersion = rt.api_version();
        r.kind = std::string(rt.kind);
        auto k = key_of(obj);
        r.namespace_ = k.namespace_;
        r.name = k.name;
        r.uid = uid_of(obj);
        r.resourceVersion = resource_version_of(obj);
        return r;
    }

    /// Records an event; returns false when the object's rate limit dropped it or the API
    /// refused it (the reason is in last_error()).
    asio::awaitable<bool> record(api::ObjectReference about, std::string type, std::string reason, std::string message) {
        auto now = opts_.now();
        std::string object_key = about.namespace_ + "/" + about.kind + "/" + about.name + "/" + about.uid;
        if (!take_token(object_key, now)) {
            ++dropped_;
            co_return false;
        }
        AggregateKey ak{object_key, type, reason, message};
        const std::string event_reason = reason;
        auto ts = timestamp(now);
        std::optional<Seen> seen;
        {
            std::lock_guard lk(mu_);
            if (auto* s = seen_.find(ak)) seen = *s;
        }
        std::string ns = about.namespace_.empty() ? "default" : about.namespace_;
        try {
            if (seen) {
                boost::json::value patch{{"count", seen->count + 1}, {"lastTimestamp", ts}};
                try {
                    co_await client_.patch(api::Event::resource, ns, seen->name, client::PatchType::Merge, std::move(patch));
                    std::lock_guard lk(mu_);
                    seen_.get_or_insert(ak) = Seen{seen->name, seen->count + 1};
                    ++written_;
                    co_return true;
                } catch (const client::ApiError& e) {
                    if (!e.is(client::ErrorKind::NotFound)) throw;
                    // The Event expired (events have a TTL): start a new one.
                }
            }
            api::Event ev;
            ev.metadata.name = about.name + "." + unique_suffix(now);
            ev.metadata.namespace_ = ns;
            ev.involvedObject = std::move(about);
            ev.type = std::move(type);
            ev.reason = std::move(reason);
            ev.message = std::move(message);
            ev.source = api::EventSource{opts_.component, opts_.host};
            ev.firstTimestamp = ts;
            ev.lastTimestamp = ts;
            ev.count = 1;
            ev.reportingComponent = opts_.component;
            ev.reportingInstance = opts_.host;
            auto created = co_await client_.create(ev);
            std::lock_guard lk(mu_);
            seen_.get_or_insert(ak) = Seen{created.metadata.name, 1};
            ++written_;
            co_return true;
        } catch (const std::exception& e) {
            // Logged as client-go does: an event the server refuses (a missing RBAC rule on
            // events) must not vanish unseen, and the event itself is not retried.
            log::error("Server rejected event (will not retry!)",
                       {{"object", object_key}, {"reason", event_reason}, {"error", e.what()}});
            std::lock_guard lk(mu_);
            last_error_ = e.what();
            ++failed_;
            co_return false;
        }
    }

    template <KubeObject T>
    asio::awaitable<bool> record(const T& obj, const api::ResourceType& rt, std::string type, std::string reason,
                                 std::string message) {
        auto ref = reference_to(obj, rt);
        co_return co_await record(std::move(ref), std::move(type), std::move(reason), std::move(message));
    }

    std::uint64_t dropped() const { return dropped_.load(); }
    std::uint64_t written() const { return written_.load(); }
    std::uint64_t failed() const { return failed_.load(); }
    std::string last_error() const {
        std::lock_guard lk(mu_);
        return last_error_;
    }

private:
    using AggregateKey = std::tuple<std::string, std::string, std::string, std::string>;
    struct Seen {
        std::string name;
        std::int64_t count = 0;
    };
    struct Bucket {
        double tokens = 0;
        std::chrono::system_clock::time_point last;
    };

    bool take_token(const std::string& key, std::chrono::system_clock::time_point now) {
        std::lock_guard lk(mu_);
        bool fresh = false;
        auto& b = buckets_.get_or_insert(key, &fresh);
        if (fresh) {
            b.tokens = opts_.burst;
        } else {
            double elapsed = std::chrono::duration<double>(now - b.last).count();
            if (elapsed > 0) b.tokens = std::min<double>(opts_.burst, b.tokens + elapsed * opts_.tokens_per_second);
        }
        b.last = now;
        if (b.tokens < 1.0) return false;
        b.tokens -= 1.0;
        return true;
    }

    static std::size_t checked_cache_size(const EventRecorderOptions& o) {
        if (o.cache_size == 0) throw std::invalid_argument("event recorder: cache_size must be >= 1");
        return o.cache_size;
    }

    static std::string timestamp(std::chrono::system_clock::time_point t) {
        return api::format_rfc3339(t);
    }
    /// client-go names events <object>.<hex nanoseconds>; a counter keeps equal clocks apart.
    std::string unique_suffix(std::chrono::system_clock::time_point t) {
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
        return fmt::format("{:x}", static_cast<std::uint64_t>(ns) + seq_++);
    }

    client::Client& client_;
    EventRecorderOptions opts_;
    mutable std::mutex mu_;
    LruMap<std::string, Bucket> buckets_;
    LruMap<AggregateKey, Seen> seen_;
    std::string last_error_;
    std::atomic<std::uint64_t> dropped_{0}, written_{0}, failed_{0}, seq_{0};
};

} // namespace vck::runtime
