// Reflector: keeps a Store<T> equal to the server's state of one resource type (client-go
// cache.Reflector). It lists (paginated), then watches from the list's resourceVersion with
// bookmarks; after a disconnect or a watch timeout it re-watches from the last version it
// applied (with jittered exponential backoff after failures); on 410 Gone it relists and
// reports a Deleted change for every object that vanished meanwhile, so no delete is lost.
// Guarantees: every change is applied to the store exactly once and then reported once (as a
// Change, change.hpp), in server order; a watch event whose resourceVersion equals the cached one is not re-applied.
// A typed reflector skips an object it cannot decode (in a list page or a watch event) and
// keeps everything else in step: such an object is not cached, and a cached one whose new
// version cannot be decoded is removed and reported Deleted (with its last decodable state),
// so nobody acts on a version the server no longer has; once it decodes again it comes back
// as Added, and its deletion needs no decode. Each skipped object is logged and reported to
// the undecodable listener once per resourceVersion.
// It reads the server through a ListWatch (list_watch.hpp), decoding pages and events itself,
// so it holds no I/O type and is tested from memory (sandbox/memory_list_watch.hpp) as well as over
// HTTPS. Runs on one strand of execution: call run()/stop() from the ListWatch's executor.
// Each failed list or watch is logged ("Failed to watch", with the resource and the server's
// words), so a refused list, a missing RBAC rule say, is never silent.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/resource.hpp>
#include <vck/client/error.hpp>
#include <vck/client/typed_list_decoder.hpp>
#include <vck/client/undecodable_object.hpp>
#include <vck/client/watch_reader.hpp>
#include <vck/runtime/list_watch.hpp>
#include <vck/runtime/log.hpp>
#include <vck/runtime/store.hpp>

#include <boost/json/monotonic_resource.hpp>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>

namespace vck::runtime {

namespace asio = boost::asio;

namespace detail {

/// A typed object from JSON, or the JSON itself, passed through `transform` (if any) before
/// it is frozen; DecodeError names the object. With `drop_managed_fields`, managedFields are
/// erased from the JSON first, so they are never decoded or copied.
template <KubeObject T>
std::shared_ptr<const T> decode_object(boost::json::value&& v, const std::function<void(T&)>& transform = {},
                                       bool drop_managed_fields = false) {
    if (drop_managed_fields) api::erase_managed_fields(v);
    std::shared_ptr<T> p;
    // Onto default storage: a list page's values live in an arena released after the page
    // (moving with a storage argument copies across storages, and moves otherwise).
    if constexpr (std::same_as<T, boost::json::value>) p = std::make_shared<T>(std::move(v), boost::json::storage_ptr());
    else p = std::make_shared<T>(api::from_json<T>(v));
    if (transform) transform(*p);
    return p;
}

} // namespace detail

struct ReflectorOptions {
    ReflectorOptions() {}
    std::string namespace_;  // "" = all namespaces
    std::string label_selector;
    std::string field_selector;
    std::int64_t page_size = 500;
    /// Server-side watch timeout: a random value in [t, 2t), as client-go spreads re-watches.
    int watch_timeout_seconds = 300;
    std::chrono::milliseconds backoff_base{800};
    std::chrono::milliseconds backoff_cap{30'000};
    /// Drops metadata.managedFields (server-side apply bookkeeping, often the largest part of
    /// an object, which controllers rarely read) from each object's JSON before it is decoded,
    /// so it is never decoded, copied or cached (a sixth of the per-event time in
    /// bench/informer/pipeline_bench). An update sent without managedFields leaves the
    /// server's unchanged. A transform, if any, still runs after.
    bool drop_managed_fields = false;
};

template <KubeObject T>
class Reflector {
public:
    using ObjectPtr = std::shared_ptr<const T>;
    using Listener = std::function<void(const Change<T>&)>;
    /// Edits each object once, after decoding and before the store or any handler sees it.
    using Transform = std::function<void(T&)>;
    /// Told of each object skipped because it cannot be decoded, once per resourceVersion.
    using UndecodableListener = std::function<void(const client::UndecodableObject&)>;

    /// `on_change` runs after each change is in the store; `on_synced` once, after the first
    /// list is in the store (and its changes reported), objects skipped or not.
    Reflector(std::shared_ptr<ListWatch> lw, api::ResourceType rt, std::shared_ptr<Store<T>> store, ReflectorOptions o,
              Listener on_change, std::function<void()> on_synced = {}, UndecodableListener on_undecodable = {})
        : lw_(std::move(lw)), rt_(std::move(rt)), store_(std::move(store)), opts_(std::move(o)),
          on_change_(std::move(on_change)), on_synced_(std::move(on_synced)),
          on_undecodable_(std::move(on_undecodable)), timer_(checked(lw_, rt_)->executor()) {
        if (!store_) throw std::invalid_argument("reflector for " + std::string(rt_.plural) + ": no store");
    }

    /// Lists and watches until stop(). Errors never end it: they are counted and retried.
    asio::awaitable<void> run() {
        int failures = 0;
        bool need_list = true;
        while (!stopped_) {
            bool listing = need_list;
            std::string error;
            try {
                if (need_list) {
                    co_await list_and_replace();
                    need_list = false;
                }
                listing = false;
                bool progressed = co_await watch_once(need_list);
                failures = progressed ? 0 : failures;
                if (need_list) ++relists_;
                continue;
            } catch (const client::ApiError& e) {
                if (stopped_) break;
                if (e.is(client::ErrorKind::Gone)) {
                    need_list = true;
                    ++relists_;
                    continue;
                }
                error = e.what();
            } catch (const std::exception& e) {
                if (stopped_) break;
                error = e.what();
            }
            // Every failure is logged, as client-go's reflector does: a list or watch the
            // server refuses (a missing RBAC rule) must not leave the controller silently blind.
            log::error("Failed to watch", {{"resource", rt_.plural},
                                           {"error", (listing ? "failed to list " : "failed to watch ") +
                                                         std::string(rt_.plural) + ": " + error}});
            {
                std::lock_guard lk(error_mu_);
                last_error_ = std::move(error);
            }
            ++errors_;
            co_await sleep(backoff(failures++));
        }
    }

    /// Sets the transform; call before run().
    void set_transform(Transform t) { transform_ = std::move(t); }

    /// Ends run(): cancels the pending watch or backoff. Idempotent.
    void stop() {
        stopped_ = true;
        timer_.cancel();
        if (stream_) stream_->cancel();
    }

    bool has_synced() const { return synced_.load(); }
    const std::shared_ptr<Store<T>>& store() const { return store_; }
    /// Relists after 410 (the initial list not counted), failed attempts, watches opened.
    std::uint64_t relists() const { return relists_.load(); }
    std::uint64_t errors() const { return errors_.load(); }
    std::uint64_t watches() const { return watches_.load(); }
    std::string last_error() const {
        std::lock_guard lk(error_mu_);
        return last_error_;
    }
    /// Objects skipped now because their latest version cannot be decoded.
    std::size_t undecodable() const { return undecodable_count_.load(); }

private:
    asio::awaitable<void> list_and_replace() {
        auto lo = client::ListOptions().page(opts_.page_size).labels(opts_.label_selector).fields(opts_.field_selector);
        std::vector<ObjectPtr> all;
        std::vector<client::UndecodableObject> skipped;
        std::string rv;
        const std::string path = rt_.collection_path(opts_.namespace_);
        // Each page is decoded and its text released before the next is read, so a relist
        // never holds the whole list as text beside the decoded objects. The last page's
        // resourceVersion is the snapshot's.
        for (;;) {
            std::string body = co_await lw_->list(rt_, opts_.namespace_, lo);
            std::string cont;
            if constexpr (std::same_as<T, boost::json::value>) {
                boost::json::monotonic_resource arena(client::list_page_arena_size(body));
                auto page = client::parse_list_page(rt_.plural, body, path, arena);
                body = std::string();
                if (auto* items = page.get_object().if_contains("items"); items && items->is_array()) {
                    all.reserve(all.size() + items->as_array().size());
                    for (auto& it : items->as_array()) {
                        all.push_back(detail::decode_object<T>(std::move(it), transform_, opts_.drop_managed_fields));
                        it = nullptr;
                    }
                }
                rv = api::string_at(page, {"metadata", "resourceVersion"});
                cont = api::string_at(page, {"metadata", "continue"});
            } else {
                // Typed items straight from each page's text, as a typed watch decodes events
                // (lists leave kind/apiVersion out of items; typed decoders do not mind).
                auto page = client::decode_list_page<T>(rt_.plural, body, path, opts_.drop_managed_fields,
                                                        [&](client::UndecodableObject&& e) { skipped.push_back(std::move(e)); });
                body = std::string();
                all.reserve(all.size() + page.items.size());
                for (auto& p : page.items) {
                    if (transform_) transform_(*p);
                    all.push_back(std::move(p));
                }
                rv = std::move(page.metadata.resourceVersion);
                cont = std::move(page.metadata.continue_);
            }
            if (!lo.next_page(std::move(cont))) break;
        }
        // A cached object whose listed version is skipped is missing from `all`: replace()
        // reports it Deleted, like one that is gone.
        for (const auto& c : store_->replace(std::move(all), rv)) emit(c);
        auto told = std::exchange(undecodable_, {});  // objects the list skips no more are done with
        for (const auto& e : skipped) {
            auto it = told.find(ObjectKey{e.namespace_(), e.name()});
            report(e, it == told.end() ? nullptr : &it->second);
        }
        undecodable_count_ = undecodable_.size();
        if (!synced_.exchange(true) && on_synced_) on_synced_();
    }

    /// One watch from the store's version. Returns whether any event arrived; sets need_list
    /// on 410. Throws on transport errors.
    asio::awaitable<bool> watch_once(bool& need_list) {
        std::uniform_int_distribution<int> spread(0, std::max(0, opts_.watch_timeout_seconds - 1));
        auto wo = client::WatchOptions()
                      .since(store_->resource_version())
                      .labels(opts_.label_selector)
                      .fields(opts_.field_selector)
                      .bookmarks(true)
                      .timeout(opts_.watch_timeout_seconds + spread(rng()));
        auto body = co_await lw_->watch(rt_, opts_.namespace_, wo);
        Stream stream(ByteStreamSource(std::move(body)), rt_.collection_path(opts_.namespace_));
        ++watches_;
        stream_ = &stream;
        struct Reset {
            Stream** p;
            ~Reset() { *p = nullptr; }
        } reset{&stream_};
        if (stopped_) co_return false;
        bool any = false;
        for (;;) {
            // A typed informer has each object decoded straight from the stream's bytes, with
            // no JSON in between; Bookmark and Error events come as JSON either way.
            std::optional<client::WatchEvent> ev;
            std::shared_ptr<T> typed;
            if constexpr (std::same_as<T, boost::json::value>) {
                ev = co_await stream.next();
            } else {
                std::optional<client::TypedWatchEvent<T>> te;
                std::optional<client::UndecodableEvent> bad;
                try {
                    te = co_await stream.template next_typed<T>(opts_.drop_managed_fields);
                } catch (client::UndecodableEvent& e) {
                    bad.emplace(std::move(e));  // the stream reads on past it
                }
                if (bad) {
                    skip(*bad);
                    any = true;
                    continue;
                }
                if (te) {
                    ev = client::WatchEvent{te->type, std::move(te->raw)};
                    typed = std::move(te->object);
                }
            }
            if (!ev) co_return any;
            any = true;
            using client::WatchEventType;
            switch (ev->type) {
            case WatchEventType::Bookmark:
                store_->bookmark(std::string(ev->resource_version()));
                break;
            case WatchEventType::Error: {
                auto err = client::watch_error(*ev, rt_.collection_path(opts_.namespace_));
                if (err.is(client::ErrorKind::Gone)) {
                    need_list = true;
                    co_return any;
                }
                throw err;
            }
            case WatchEventType::Added:
            case WatchEventType::Modified:
            case WatchEventType::Deleted:
                if (typed) {
                    if (transform_) transform_(*typed);
                    apply(ev->type, ObjectPtr(std::move(typed)));
                } else {
                    apply(ev->type, std::move(ev->object));
                }
                break;
            }
        }
    }

    void apply(client::WatchEventType t, boost::json::value obj) {
        apply(t, detail::decode_object<T>(std::move(obj), transform_, opts_.drop_managed_fields));
    }

    void apply(client::WatchEventType t, ObjectPtr p) {
        auto type = t == client::WatchEventType::Added      ? ChangeType::Added
                    : t == client::WatchEventType::Modified ? ChangeType::Modified
                                                            : ChangeType::Deleted;
        // Nothing for a replayed event (same version as cached: handlers had it) nor for a
        // delete of an object never seen.
        auto change = store_->apply_event(type, p);
        if (!undecodable_.empty() && undecodable_.erase(key_of(*p))) undecodable_count_ = undecodable_.size();
        if (change) emit(*change);
    }

    void emit(const Change<T>& c) {
        if (on_change_) on_change_(c);
    }

    /// A watch event whose object cannot be decoded: the object leaves the cache (its cached
    /// version is stale now), the watch's position moves past the event, and unless the event
    /// was its deletion, the object is reported.
    void skip(const client::UndecodableEvent& e) {
        ObjectKey key{e.namespace_(), e.name()};
        if (!key.name.empty()) {
            if (auto cached = store_->get(key)) {
                auto position = store_->resource_version();
                store_->apply(ChangeType::Deleted, cached);
                store_->bookmark(position);  // apply() recorded the cached object's older version
                emit(Change<T>{ChangeType::Deleted, std::move(cached), nullptr});
            }
        }
        if (!e.resource_version().empty()) store_->bookmark(e.resource_version());
        if (e.type() == client::WatchEventType::Deleted) {
            undecodable_.erase(key);
        } else {
            auto it = undecodable_.find(key);
            report(e, it == undecodable_.end() ? nullptr : &it->second);
        }
        undecodable_count_ = undecodable_.size();
    }

    /// Records `e` as skipped; logs it and tells the listener unless `told` (the version
    /// reported last for this object, if any) says this very version was reported already.
    void report(const client::UndecodableObject& e, const std::string* told) {
        ObjectKey key{e.namespace_(), e.name()};
        if (!key.name.empty()) {
            bool again = told && !told->empty() && *told == e.resource_version();
            undecodable_[key] = e.resource_version();  // may write *told: compared first
            if (again) return;
        }
        std::string resource(rt_.plural);
        if (!rt_.group.empty()) resource += "." + std::string(rt_.group);
        log::warning("skipping an object that cannot be decoded until it changes",
                     {{"resource", resource},
                      {"namespace", e.namespace_()},
                      {"name", e.name()},
                      {"resourceVersion", e.resource_version()},
                      {"error", e.what()}});
        if (!on_undecodable_) return;
        try {
            on_undecodable_(e);
        } catch (const std::exception& err) {
            log::error("undecodable-object listener failed", {{"resource", resource}, {"error", err.what()}});
        }
    }

    std::chrono::milliseconds backoff(int failures) {
        auto d = opts_.backoff_base * (1LL << std::min(failures, 16));
        d = std::min<std::chrono::milliseconds>(d, opts_.backoff_cap);
        std::uniform_real_distribution<double> jitter(0.5, 1.0);
        return std::chrono::milliseconds(static_cast<std::int64_t>(static_cast<double>(d.count()) * jitter(rng())));
    }

    asio::awaitable<void> sleep(std::chrono::milliseconds d) {
        if (stopped_) co_return;
        timer_.expires_after(d);
        boost::system::error_code ec;
        co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }

    static std::mt19937& rng() {
        thread_local std::mt19937 g{std::random_device{}()};
        return g;
    }

    using Stream = client::WatchReader<ByteStreamSource>;

    static const std::shared_ptr<ListWatch>& checked(const std::shared_ptr<ListWatch>& lw, const api::ResourceType& rt) {
        if (!lw) throw std::invalid_argument("reflector for " + std::string(rt.plural) + ": no list-and-watch");
        return lw;
    }

    std::shared_ptr<ListWatch> lw_;
    api::ResourceType rt_;
    std::shared_ptr<Store<T>> store_;
    ReflectorOptions opts_;
    Listener on_change_;
    std::function<void()> on_synced_;
    UndecodableListener on_undecodable_;
    /// Objects skipped now, with the resourceVersion reported (touched on the run() strand only).
    std::map<ObjectKey, std::string> undecodable_;
    std::atomic<std::size_t> undecodable_count_{0};
    Transform transform_;
    asio::steady_timer timer_;
    Stream* stream_ = nullptr;
    std::atomic<bool> stopped_{false};
    std::atomic<bool> synced_{false};
    std::atomic<std::uint64_t> relists_{0}, errors_{0}, watches_{0};
    mutable std::mutex error_mu_;
    std::string last_error_;
};

} // namespace vck::runtime
