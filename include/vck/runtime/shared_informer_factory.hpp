// SharedInformerFactory: one informer per (object type, resource) for everything built on one
// client, so two controllers watching pods share one list+watch and one cache (client-go's
// SharedInformerFactory). Guarantees: informer<T>() returns the same instance each time;
// start() runs every informer not yet running (also ones requested after an earlier start);
// has_synced() is true once all of them have synced; stop() ends them all. configure() narrows
// one resource's informer (a label selector, a namespace: controller-runtime's cache ByObject)
// for everyone who asks for it, a controller's owns<>() and watches<>() included. A named view
// (view()) is a second informer of a resource with options of its own, so one resource can be
// cached twice under different label selectors (the pods a controller made, and the pods
// that name it); configure() does not touch views.
#pragma once

#include <vck/runtime/informer.hpp>

#include <boost/asio/co_spawn.hpp>

#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <typeindex>
#include <vector>

namespace vck::runtime {

class SharedInformerFactory {
public:
    /// Informers list and watch through `lw` (list_watch(client) in client_list_watch.hpp).
    explicit SharedInformerFactory(std::shared_ptr<ListWatch> lw, InformerOptions defaults = {})
        : lw_(lw ? std::move(lw) : throw std::invalid_argument("informer factory: no list-and-watch")),
          defaults_(std::move(defaults)) {}
    ~SharedInformerFactory() { stop(); }

    template <KubeObject T>
    std::shared_ptr<Informer<T>> informer(const api::ResourceType& rt) {
        std::lock_guard lk(mu_);
        return informer_locked<T>(rt, "", options_locked(rt));
    }
    template <api::ApiObject T>
    std::shared_ptr<Informer<T>> informer() {
        return informer<T>(T::resource);
    }

    /// The informer of resource `rt` named `name` (non-empty): made on the first call with the
    /// factory's defaults edited by `tweak`, and shared as it is by later calls with the same
    /// name (their tweak is not applied). Started and stopped with the factory's others.
    template <KubeObject T>
    std::shared_ptr<Informer<T>> view(const api::ResourceType& rt, std::string name,
                                      const std::function<void(InformerOptions&)>& tweak) {
        if (name.empty()) throw std::invalid_argument("informer factory: a view of " + std::string(rt.plural) + " needs a name");
        std::lock_guard lk(mu_);
        InformerOptions o = defaults_;
        if (tweak) tweak(o);
        return informer_locked<T>(rt, std::move(name), std::move(o));
    }

private:
    template <KubeObject T>
    std::shared_ptr<Informer<T>> informer_locked(const api::ResourceType& rt, std::string view, InformerOptions o) {
        Key k{std::type_index(typeid(T)), std::string(rt.group), std::string(rt.version), std::string(rt.plural),
              std::move(view)};
        if (auto it = entries_.find(k); it != entries_.end())
            return std::static_pointer_cast<Informer<T>>(it->second.informer);
        auto inf = std::make_shared<Informer<T>>(lw_, rt, std::move(o));
        Entry e;
        e.informer = inf;
        e.synced = [w = std::weak_ptr<Informer<T>>(inf)] { auto s = w.lock(); return s && s->has_synced(); };
        e.stop = [w = std::weak_ptr<Informer<T>>(inf)] { if (auto s = w.lock()) s->stop(); };
        e.wait = [w = std::weak_ptr<Informer<T>>(inf)]() -> asio::awaitable<void> {
            if (auto s = w.lock()) co_await s->wait_for_sync();
        };
        e.run = [inf]() -> asio::awaitable<void> { co_await inf->run(); };
        entries_.emplace(std::move(k), std::move(e));
        if (started_) start_pending_locked();
        return inf;
    }

public:

    /// Edits the options of resource `rt`'s informers, typed or untyped, starting from the
    /// factory's defaults: e.g. a label selector, so that a controller caches only the pods it
    /// made instead of every pod in the cluster. Tweaks of one resource apply in the order
    /// given. Returns false, changing nothing, once such an informer exists: its list and
    /// watch are chosen, and whoever asks shares it as it is. Throws std::invalid_argument
    /// for an empty function. A tweak runs with the factory locked: it must not call it.
    bool configure(const api::ResourceType& rt, std::function<void(InformerOptions&)> tweak) {
        if (!tweak) throw std::invalid_argument("informer factory: configure(" + std::string(rt.plural) + ") without a function");
        std::lock_guard lk(mu_);
        Resource r{std::string(rt.group), std::string(rt.version), std::string(rt.plural)};
        for (const auto& [k, e] : entries_)
            if (std::get<4>(k).empty() && std::get<1>(k) == std::get<0>(r) && std::get<2>(k) == std::get<1>(r) &&
                std::get<3>(k) == std::get<2>(r))
                return false;
        tweaks_[std::move(r)].push_back(std::move(tweak));
        return true;
    }
    template <api::ApiObject T>
    bool configure(std::function<void(InformerOptions&)> tweak) {
        return configure(T::resource, std::move(tweak));
    }
    /// The options resource `rt`'s informers get: the defaults, then every configure() tweak.
    InformerOptions options_for(const api::ResourceType& rt) const {
        std::lock_guard lk(mu_);
        return options_locked(rt);
    }

    /// Spawns every informer that is not running yet on the client's executor.
    void start() {
        std::lock_guard lk(mu_);
        started_ = true;
        start_pending_locked();
    }
    void stop() {
        std::lock_guard lk(mu_);
        for (auto& [k, e] : entries_) e.stop();
    }
    bool has_synced() const {
        std::lock_guard lk(mu_);
        for (const auto& [k, e] : entries_)
            if (!e.synced()) return false;
        return true;
    }
    /// Completes once every informer made so far has synced (or been stopped).
    asio::awaitable<void> wait_for_sync() {
        std::vector<std::function<asio::awaitable<void>()>> waits;
        {
            std::lock_guard lk(mu_);
            for (const auto& [k, e] : entries_) waits.push_back(e.wait);
        }
        for (auto& w : waits) co_await w();
    }
    /// Informers still running (started and not yet returned).
    std::size_t running() const { return running_->load(); }
    /// `f` runs on the executor whenever the last running informer returns, so that a
    /// shutdown can wait for them without polling running(). Set it before start().
    void on_idle(std::function<void()> f) { *idle_ = std::move(f); }
    std::size_t size() const {
        std::lock_guard lk(mu_);
        return entries_.size();
    }
    asio::any_io_executor executor() const { return lw_->executor(); }
    const std::shared_ptr<ListWatch>& list_watch() const { return lw_; }

private:
    using Key = std::tuple<std::type_index, std::string, std::string, std::string, std::string>;  // + view name
    using Resource = std::tuple<std::string, std::string, std::string>;  // group, version, plural
    struct Entry {
        std::shared_ptr<void> informer;
        std::function<bool()> synced;
        std::function<void()> stop;
        std::function<asio::awaitable<void>()> wait;
        std::function<asio::awaitable<void>()> run;
        bool running = false;
    };

    InformerOptions options_locked(const api::ResourceType& rt) const {
        InformerOptions o = defaults_;
        auto it = tweaks_.find(Resource{std::string(rt.group), std::string(rt.version), std::string(rt.plural)});
        if (it != tweaks_.end())
            for (const auto& tweak : it->second) tweak(o);
        return o;
    }

    void start_pending_locked() {
        for (auto& [k, e] : entries_) {
            if (e.running) continue;
            e.running = true;
            ++*running_;
            // The spawned function owns the informer (via e.run's capture), so it outlives the
            // factory's map if need be.
            asio::co_spawn(lw_->executor(), e.run, [r = running_, idle = idle_](std::exception_ptr ex) {
                if (--*r == 0 && *idle) (*idle)();
                if (ex) {
                    try {
                        std::rethrow_exception(ex);
                    } catch (const std::exception& err) {
                        log::error("informer ended with an error", {{"error", err.what()}});
                    }
                }
            });
        }
    }

    std::shared_ptr<ListWatch> lw_;
    InformerOptions defaults_;
    mutable std::mutex mu_;
    std::map<Key, Entry> entries_;
    std::map<Resource, std::vector<std::function<void(InformerOptions&)>>> tweaks_;
    bool started_ = false;
    std::shared_ptr<std::atomic<std::size_t>> running_ = std::make_shared<std::atomic<std::size_t>>(0);
    std::shared_ptr<std::function<void()>> idle_ = std::make_shared<std::function<void()>>();
};

} // namespace vck::runtime
