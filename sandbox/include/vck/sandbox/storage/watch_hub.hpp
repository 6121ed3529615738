// Watch and WatchHub: the emulated API server's watch fan-out. A Watch is one client's
// stream: a thread-safe queue of {ADDED, MODIFIED, DELETED, BOOKMARK, ERROR} events plus a
// wake-up callback, so an asio front end can await it without blocking a thread. The hub
// turns each store StoreChange into per-watch events the way kube-apiserver's watch cache does:
// an object that stops matching a watch's selectors arrives as DELETED, one that starts
// matching as ADDED. Guarantees: events reach a watch in resourceVersion order; a watch whose
// consumer falls more than `queue_limit` live events behind is closed, as the real server
// drops slow watchers; once closed() and drained, a watch never yields again.
#pragma once

#include <vck/sandbox/storage/change_log.hpp>
#include <vck/sandbox/storage/version_conversion.hpp>

#include <boost/json.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vck::sandbox {

struct HubEvent {
    std::string type;  // "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"
    /// Never null. In the stored version it is the change's own snapshot, shared by every
    /// watch that sees the change (kube-apiserver's watch cache shares one object the same way).
    std::shared_ptr<const boost::json::value> object;
};

/// What one watch wants to see.
struct WatchFilter {
    std::string storage_key;  // "<group>/<plural>"
    std::string namespace_;   // "" = every namespace
    std::string api_version;  // objects are served in this version ("v1", "group/v1alpha1")
    std::string kind;         // for bookmark objects
    std::function<bool(const boost::json::value&)> matches;  // selectors; empty = everything
    bool bookmarks = false;
};

class Watch {
public:
    Watch(WatchFilter filter, std::size_t queue_limit) : filter_(std::move(filter)), limit_(queue_limit) {}

    /// The next event, if one is queued.
    std::optional<HubEvent> try_pop() {
        std::lock_guard lock(mu_);
        if (q_.empty()) return std::nullopt;
        auto e = std::move(q_.front());
        q_.pop_front();
        if (e.live) --live_pending_;
        return std::move(e.event);
    }
    /// Every queued event, oldest first.
    std::vector<HubEvent> drain() {
        std::lock_guard lock(mu_);
        std::vector<HubEvent> out;
        out.reserve(q_.size());
        for (auto& e : q_) out.push_back(std::move(e.event));
        q_.clear();
        live_pending_ = 0;
        return out;
    }
    std::size_t pending() const {
        std::lock_guard lock(mu_);
        return q_.size();
    }
    /// The server ended this watch (error sent, consumer too slow, store shut down): once the
    /// queue is drained no event will follow, and the client should re-watch.
    bool closed() const {
        std::lock_guard lock(mu_);
        return closed_;
    }
    /// Sets the wake-up called after events are queued or the watch closes; called at once if
    /// something is already pending. It runs on the writing thread while the store is locked:
    /// it must only schedule work (asio::post), never call back into the store.
    void set_notify(std::function<void()> notify) {
        bool now = false;
        {
            std::lock_guard lock(mu_);
            notify_ = std::move(notify);
            now = notify_ && (!q_.empty() || closed_);
        }
        if (now) notify_();
    }
    /// The consumer is gone: the hub forgets this watch at its next fan-out.
    void stop() {
        std::lock_guard lock(mu_);
        stopped_ = true;
        closed_ = true;
        q_.clear();
        live_pending_ = 0;
    }
    const WatchFilter& filter() const { return filter_; }

    // Producer side, used by the store and the hub.

    /// Queues an event. `live` events count toward the slow-consumer limit; the initial state
    /// and replayed history do not, since the consumer has not had a chance to read yet.
    void push(HubEvent e, bool live = true) {
        std::function<void()> notify;
        {
            std::lock_guard lock(mu_);
            if (closed_) return;
            if (live && live_pending_ >= limit_) {
                closed_ = true;  // like the real server: drop the watcher, the client re-lists
            } else {
                q_.push_back({std::move(e), live});
                if (live) ++live_pending_;
            }
            notify = notify_;
        }
        if (notify) notify();
    }
    /// Ends the watch after what is queued; with an error, that error is the last event.
    void close(std::optional<HubEvent> last = std::nullopt) {
        std::function<void()> notify;
        {
            std::lock_guard lock(mu_);
            if (closed_) return;
            if (last) q_.push_back({std::move(*last), false});
            closed_ = true;
            notify = notify_;
        }
        if (notify) notify();
    }
    bool stopped() const {
        std::lock_guard lock(mu_);
        return stopped_;
    }

private:
    struct Queued {
        HubEvent event;
        bool live;
    };
    WatchFilter filter_;
    std::size_t limit_;
    mutable std::mutex mu_;
    std::deque<Queued> q_;
    std::size_t live_pending_ = 0;
    bool closed_ = false;
    bool stopped_ = false;
    std::function<void()> notify_;
};

/// Whether `obj` is served in `api_version` as it is (a non-object has no version to set).
inline bool served_in(const boost::json::value& obj, const std::string& api_version) {
    const auto* o = obj.if_object();
    if (!o) return true;
    const auto* av = o->if_contains("apiVersion");
    return av && av->is_string() && av->get_string() == api_version;
}

/// The object served to a watch: the stored object in the watch's apiVersion (converted
/// when that version has another shape: version_conversion.hpp).
inline boost::json::value served_as(const boost::json::value& obj, const std::string& api_version) {
    if (served_in(obj, api_version)) return obj;
    return convert_to_version(obj, api_version);
}

/// served_as() of a shared snapshot: the same snapshot when it is in that version already.
inline std::shared_ptr<const boost::json::value> served_as(const std::shared_ptr<const boost::json::value>& obj,
                                                           const std::string& api_version) {
    if (served_in(*obj, api_version)) return obj;
    return std::make_shared<const boost::json::value>(served_as(*obj, api_version));
}

/// What a watch with `filter` sees of a change, if anything (selector transitions included).
inline std::optional<HubEvent> event_for(const WatchFilter& filter, const StoreChange& c) {
    if (c.storage_key != filter.storage_key) return std::nullopt;
    if (!filter.namespace_.empty() && c.namespace_ != filter.namespace_) return std::nullopt;
    auto passes = [&](const std::shared_ptr<const boost::json::value>& v) {
        return v && !v->is_null() && (!filter.matches || filter.matches(*v));
    };
    const bool now = c.type != "DELETED" && passes(c.object);
    const bool before = c.type == "DELETED" ? passes(c.object) : passes(c.previous);
    if (c.type == "DELETED") {
        if (!before) return std::nullopt;
        return HubEvent{"DELETED", served_as(c.object, filter.api_version)};
    }
    if (now && before) return HubEvent{"MODIFIED", served_as(c.object, filter.api_version)};
    if (now) return HubEvent{"ADDED", served_as(c.object, filter.api_version)};
    if (before) {
        // It left the selection: the last state it matched in, at the new resourceVersion.
        boost::json::value gone = served_as(*c.previous, filter.api_version);
        if (auto* md = gone.get_object().if_contains("metadata"); md && md->is_object())
            md->get_object()["resourceVersion"] = std::to_string(c.rv);
        return HubEvent{"DELETED", std::make_shared<const boost::json::value>(std::move(gone))};
    }
    return std::nullopt;
}

class WatchHub {
public:
    explicit WatchHub(std::size_t queue_limit) : limit_(queue_limit) {}

    std::size_t queue_limit() const { return limit_; }

    /// A new watch, not yet receiving: fill it with its initial events, then attach() it.
    std::shared_ptr<Watch> make(WatchFilter filter) const {
        return std::make_shared<Watch>(std::move(filter), limit_);
    }
    void attach(const std::shared_ptr<Watch>& w) { watches_.push_back(w); }

    /// Fans one change out to every watch that sees it.
    void publish(const StoreChange& c) {
        prune();
        for (const auto& weak : watches_)
            if (auto w = weak.lock())
                if (auto e = event_for(w->filter(), c)) w->push(std::move(*e));
    }

    /// A BOOKMARK at `rv` to every watch that asked for bookmarks.
    void bookmark(std::int64_t rv) {
        prune();
        for (const auto& weak : watches_)
            if (auto w = weak.lock(); w && w->filter().bookmarks) {
                boost::json::object obj;
                obj["kind"] = w->filter().kind;
                obj["apiVersion"] = w->filter().api_version;
                obj["metadata"] = boost::json::object{{"resourceVersion", std::to_string(rv)}};
                w->push(HubEvent{"BOOKMARK", std::make_shared<const boost::json::value>(std::move(obj))});
            }
    }

    /// Ends every open watch (fault injection, shutdown); clients re-watch from their last rv.
    void close_all() {
        for (const auto& weak : watches_)
            if (auto w = weak.lock()) w->close();
        watches_.clear();
    }
    /// Ends the watches of one resource (its CRD was deleted).
    void close_resource(const std::string& storage_key) {
        for (const auto& weak : watches_)
            if (auto w = weak.lock(); w && w->filter().storage_key == storage_key) w->close();
        prune();
    }

    /// Watches still open.
    std::size_t size() {
        prune();
        return watches_.size();
    }

private:
    void prune() {
        std::erase_if(watches_, [](const std::weak_ptr<Watch>& weak) {
            auto w = weak.lock();
            return !w || w->closed();
        });
    }

    std::size_t limit_;
    std::vector<std::weak_ptr<Watch>> watches_;
};

} // namespace vck::sandbox
