// Informer: a Reflector plus event handlers over one resource type, typed (api::Pod) or
// untyped (boost::json::value) — client-go's SharedIndexInformer. A handler is one function
// of a Change (change.hpp). Guarantees: handlers see every change once, in server order,
// after the cache holds it; a handler added late first gets an Added for each cached object;
// has_synced() turns true once the first list is cached and its Addeds dispatched; with a
// resync period, every cached object is re-delivered each period as a Modified whose old and
// object are the same. A throwing handler is logged and does not stop the rest.
// A typed informer skips an object it cannot decode instead of failing its list or watch
// (see reflector.hpp): the rest are cached, dispatched and synced as usual; if that object
// was cached, handlers get a Deleted for it (its cached version is stale), and an Added once
// it decodes again; decode-error handlers hear of it once per resourceVersion.
#pragma once

#include <vck/runtime/reflector.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fmt/core.h>

#include <cstdio>
#include <map>
#include <utility>
#include <vector>

namespace vck::runtime {

/// An informer's handler: called with each change, after the cache holds it.
template <class T>
using ChangeHandler = std::function<void(const Change<T>&)>;

/// Told of each object skipped because it cannot be decoded into T, with its namespace, name,
/// uid, resourceVersion and the error (what() names the field path): once per version, from
/// the time the handler is added (a late handler is not told of earlier ones).
using DecodeErrorHandler = std::function<void(const client::UndecodableObject&)>;

struct InformerOptions : ReflectorOptions {
    InformerOptions() {}
    std::chrono::milliseconds resync{0};  // 0 = never
    /// The cache's layout. `store.compressed` keeps it compressed: about a tenth of the memory
    /// per object, for a decode on each store read of an object not among the most recently
    /// changed, which returns a fresh copy instead of a shared snapshot. Handlers still get
    /// the decoded objects of each change.
    StoreOptions store;
};

template <KubeObject T>
class Informer {
public:
    using Object = T;
    using ObjectPtr = std::shared_ptr<const T>;

    /// Lists and watches `rt` through `lw` (list_watch(client) for a client::Client, from
    /// client_list_watch.hpp; a MemoryListWatch in tests).
    Informer(std::shared_ptr<ListWatch> lw, api::ResourceType rt, InformerOptions o = {})
        : opts_(o), store_(std::make_shared<Store<T>>(o.store)),
          resync_timer_(lw ? lw->executor() : throw std::invalid_argument("informer: no list-and-watch")),
          sync_signal_(std::make_shared<asio::steady_timer>(resync_timer_.get_executor(),
                                                            std::chrono::steady_clock::time_point::max())),
          reflector_(std::move(lw), std::move(rt), store_, o, [this](const Change<T>& c) { dispatch(c); },
                     [this] { mark_synced(); },
                     [this](const client::UndecodableObject& e) {
                         for (auto& [id, h] : decode_error_handlers_) call(h, e);
                     }) {}

    /// For typed objects: the resource is T::resource.
    explicit Informer(std::shared_ptr<ListWatch> lw, InformerOptions o = {})
        requires api::ApiObject<T>
        : Informer(std::move(lw), T::resource, std::move(o)) {}

    Informer(const Informer&) = delete;
    Informer& operator=(const Informer&) = delete;

    /// Registers a handler, which first gets an Added for each cached object; returns an id
    /// for remove_handler. Must be called on the informer's io_context (or before run()).
    /// Throws std::invalid_argument for an empty function.
    std::size_t add_handler(ChangeHandler<T> h) {
        if (!h) throw std::invalid_argument("informer: add_handler without a function");
        auto id = next_id_++;
        auto& stored = handlers_[id] = std::move(h);
        for (const auto& o : store_->list()) call(stored, Change<T>{ChangeType::Added, o, nullptr});
        return id;
    }
    /// Registers a handler of objects that cannot be decoded (a typed informer's only);
    /// returns an id for remove_handler. Same calling rules as add_handler().
    std::size_t add_decode_error_handler(DecodeErrorHandler h) {
        if (!h) throw std::invalid_argument("informer: add_decode_error_handler without a function");
        auto id = next_id_++;
        decode_error_handlers_[id] = std::move(h);
        return id;
    }
    /// Removes a handler of either kind.
    void remove_handler(std::size_t id) {
        handlers_.erase(id);
        decode_error_handlers_.erase(id);
    }

    /// Edits each object after decoding and before it is cached or handed to any handler
    /// (client-go's SetTransform); to drop managedFields, set InformerOptions::
    /// drop_managed_fields instead, which does it before decoding. Call before run(); an
    /// exception from it fails that list or watch like a decode error, which is retried.
    void set_transform(typename Reflector<T>::Transform t) { reflector_.set_transform(std::move(t)); }

    /// Lists, watches and resyncs until stop().
    asio::awaitable<void> run() {
        using namespace asio::experimental::awaitable_operators;
        co_await (reflector_.run() && resync_loop());
    }
    void stop() {
        stopped_ = true;
        resync_timer_.cancel();
        reflector_.stop();
        // Waiters end too (on the executor: stop() may come from another thread).
        // The handler holds the timer, not the informer, which may be gone when it runs.
        asio::post(sync_signal_->get_executor(), [s = sync_signal_] { s->cancel(); });
    }

    bool has_synced() const { return synced_.load(); }
    /// Completes once has_synced(), or once stopped; woken by the sync, not polled.
    asio::awaitable<void> wait_for_sync() {
        while (!has_synced() && !stopped_) {
            boost::system::error_code ec;
            co_await sync_signal_->async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
    }
    /// Runs `f` on the informer's executor once it has synced (at once if it has). Call on
    /// the informer's executor (or before run()).
    void when_synced(std::function<void()> f) {
        if (has_synced()) asio::post(sync_signal_->get_executor(), std::move(f));
        else on_synced_.push_back(std::move(f));
    }

    Store<T>& store() { return *store_; }
    const std::shared_ptr<Store<T>>& shared_store() const { return store_; }
    const Reflector<T>& reflector() const { return reflector_; }
    /// Changes dispatched to handlers so far (resyncs not counted).
    std::uint64_t changes() const { return changes_.load(); }

private:
    void mark_synced() {
        synced_ = true;
        sync_signal_->cancel();
        for (auto& f : std::exchange(on_synced_, {})) f();
    }

    void dispatch(const Change<T>& c) {
        ++changes_;
        for (auto& [id, h] : handlers_) call(h, c);
    }

    template <class F, class... A>
    static void call(F& f, const A&... a) {
        try {
            f(a...);
        } catch (const std::exception& e) {
            log::error("informer event handler failed", {{"error", e.what()}});
        }
    }

    asio::awaitable<void> resync_loop() {
        if (opts_.resync <= std::chrono::milliseconds::zero()) co_return;
        while (!stopped_) {
            resync_timer_.expires_after(opts_.resync);
            boost::system::error_code ec;
            co_await resync_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            if (stopped_) break;
            if (!has_synced()) continue;
            for (const auto& o : store_->list()) {
                Change<T> resync{ChangeType::Modified, o, o};
                for (auto& [id, h] : handlers_) call(h, resync);
            }
        }
    }

    InformerOptions opts_;
    std::shared_ptr<Store<T>> store_;
    asio::steady_timer resync_timer_;
    std::shared_ptr<asio::steady_timer> sync_signal_;  // never expires: cancelled to wake wait_for_sync()
    std::vector<std::function<void()>> on_synced_;
    std::map<std::size_t, ChangeHandler<T>> handlers_;
    std::map<std::size_t, DecodeErrorHandler> decode_error_handlers_;
    std::size_t next_id_ = 0;
    std::atomic<bool> synced_{false}, stopped_{false};
    std::atomic<std::uint64_t> changes_{0};
    Reflector<T> reflector_;
};

} // namespace vck::runtime
