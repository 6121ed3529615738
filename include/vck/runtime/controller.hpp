// Controller: turns informer events into keys on a rate-limited work queue and runs a
// Reconciler over them with N concurrent workers (controller-runtime's Controller + Builder).
// for_<T>() names the primary type; owns<U>() maps a child's change to its controller owner's
// key; watches<U>(mapping) maps any object to keys. Predicates over a Change (change.hpp)
// filter what enqueues: with_predicate() the primary's changes (e.g. generation_changed()
// skips status-only updates), those given to owns<U>() or watches<U>() that watch's only.
// Guarantees: a key is never reconciled by two workers at once; a failing reconcile
// (exception) is logged ("Reconciler error", with controller-runtime's keys controller,
// namespace, name, reconcileID, error), counted, and requeued rate-limited, except a NotFound
// for the reconciled object itself: it was deleted while being reconciled, which is the
// ordinary end of a deletion (a V(1) line, no requeue); a reconcile's result replaces any
// delayed re-add of its key still pending (the latest pass says when the key runs again);
// stop() hands out no further key (reconciles in flight finish). Each reconcile writes a V(2)
// line with its result. Metrics: controller_runtime_reconcile_total{controller,result},
// _reconcile_errors_total, _reconcile_time_seconds, _max_concurrent_reconciles,
// _active_workers, and the queue's workqueue_*{controller,name}.
#pragma once

#include <vck/client/error.hpp>
#include <vck/runtime/log.hpp>
#include <vck/runtime/metrics.hpp>
#include <vck/runtime/reconciler.hpp>
#include <vck/runtime/shared_informer_factory.hpp>
#include <vck/runtime/work_queue.hpp>

#include <boost/asio/post.hpp>

#include <fmt/core.h>

#include <atomic>
#include <chrono>
#include <concepts>
#include <memory>
#include <optional>
#include <random>

namespace vck::runtime {

/// Something the manager runs: informers' consumers, leader-only work.
class Runnable {
public:
    virtual ~Runnable() = default;
    /// Runs until stop(); may be awaited once.
    virtual asio::awaitable<void> start() = 0;
    virtual void stop() = 0;
    virtual std::string name() const = 0;
    /// Leader-only runnables start once this process holds the lease.
    virtual bool needs_leader_election() const { return true; }
};

/// Decides whether a change is worth a reconcile (true = enqueue, or map and enqueue).
template <class T>
using Predicate = std::function<bool(const Change<T>&)>;

namespace detail {

template <KubeObject T>
std::optional<std::int64_t> generation_of(const T& o) {
    if constexpr (TypedObject<T>) {
        return o.metadata.generation;
    } else {
        const auto* g = meta_field(o, "generation");
        if (!g) return std::nullopt;
        if (auto i = g->if_int64()) return *i;
        if (auto u = g->if_uint64()) return static_cast<std::int64_t>(*u);
        return std::nullopt;
    }
}

/// The ownerReference with controller=true, if any.
template <KubeObject T>
std::optional<api::OwnerReference> controller_owner_of(const T& o) {
    if constexpr (TypedObject<T>) {
        for (const auto& r : o.metadata.ownerReferences)
            if (r.controller.value_or(false)) return r;
    } else {
        const auto* refs = meta_field(o, "ownerReferences");
        if (!refs || !refs->is_array()) return std::nullopt;
        for (const auto& r : refs->get_array()) {
            auto ref = api::from_json<api::OwnerReference>(r);
            if (ref.controller.value_or(false)) return ref;
        }
    }
    return std::nullopt;
}

/// Whether every predicate passes `c` (none: all do).
template <class T>
bool all_pass(const std::vector<Predicate<T>>& predicates, const Change<T>& c) {
    for (const auto& p : predicates)
        if (!p(c)) return false;
    return true;
}

/// A fresh reconcileID (a random UUID, as controller-runtime's): ties one reconcile's lines together.
inline std::string new_reconcile_id() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::uint64_t a = rng(), b = rng();
    a = (a & ~0xf000ull) | 0x4000ull;                       // version 4
    b = (b & 0x3fffffffffffffffull) | 0x8000000000000000ull;  // variant 10
    return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xffff, b >> 48,
                       b & 0xffffffffffffull);
}

/// Whether `e` says the object `key` of `rt` (or one of its subresources) does not exist.
inline bool is_not_found_of(const std::exception& e, const api::ResourceType& rt, const ObjectKey& key) {
    const auto* api_error = dynamic_cast<const client::ApiError*>(&e);
    if (!api_error || !api_error->is(client::ErrorKind::NotFound)) return false;
    std::string_view path = api_error->path();
    path = path.substr(0, path.find('?'));
    std::string own = rt.object_path(key.namespace_, key.name);
    return path == own || (path.starts_with(own) && path.substr(own.size()).starts_with("/"));
}

} // namespace detail

/// Passes every Added and Deleted, and the Modified whose states `changed(old, now)` tells
/// apart (a resync passes `changed(o, o)`): for a watch on a busy kind that only some of its
/// updates concern (controller-runtime's predicate.Funcs{UpdateFunc}).
template <KubeObject T, class F>
    requires std::predicate<const F&, const T&, const T&>
Predicate<T> update_predicate(F changed) {
    return [changed = std::move(changed)](const Change<T>& c) {
        if (c.type != ChangeType::Modified || !c.old) return true;
        return static_cast<bool>(changed(*c.old, *c.object));
    };
}

/// Skips updates that leave metadata.generation unchanged (status-only writes, resyncs).
/// Objects without a generation always pass.
template <KubeObject T>
Predicate<T> generation_changed() {
    return update_predicate<T>([](const T& old, const T& now) {
        auto a = detail::generation_of(old), b = detail::generation_of(now);
        return !a || !b || *a != *b;
    });
}

template <KubeObject T>
class Controller final : public Runnable, public std::enable_shared_from_this<Controller<T>> {
public:
    Controller(std::string name, SharedInformerFactory& f, api::ResourceType rt, ReconcileFn fn, int workers,
               std::shared_ptr<MetricsRegistry> metrics)
        : name_(std::move(name)), factory_(f), rt_(std::move(rt)), fn_(std::move(fn)),
          workers_(std::max(1, workers)), metrics_(metrics ? std::move(metrics) : std::make_shared<MetricsRegistry>()),
          done_timer_(f.executor()), sync_signal_(f.executor(), std::chrono::steady_clock::time_point::max()) {
        if (!fn_) throw std::invalid_argument("controller " + name_ + ": no reconcile function");
        typename WorkQueue<ObjectKey>::Options qo;
        qo.name = name_;
        queue_ = std::make_unique<WorkQueue<ObjectKey>>(f.executor(), std::move(qo));
        describe_metrics(*metrics_);
    }

    std::string name() const override { return name_; }
    const api::ResourceType& resource() const { return rt_; }

    /// Waits for the caches of its own informers (the primary's and those of owns() and
    /// watches(); not every informer of the factory), then runs the workers until stop().
    /// Woken by the syncs and by stop(), not polled.
    asio::awaitable<void> start() override {
        log::info("Starting Controller", {{"controller", name_}});
        factory_.start();
        while (pending_syncs_.load() > 0 && !queue_->shutting_down()) {
            boost::system::error_code ec;
            co_await sync_signal_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
        if (queue_->shutting_down()) co_return;
        log::info("Starting workers", {{"controller", name_}, {"worker count", std::to_string(workers_)}});
        auto self = this->shared_from_this();
        active_ = workers_;
        done_timer_.expires_at(std::chrono::steady_clock::time_point::max());
        for (int i = 0; i < workers_; ++i)
            asio::co_spawn(done_timer_.get_executor(), [self]() -> asio::awaitable<void> { co_await self->worker(); },
                           [self](std::exception_ptr) {
                               if (--self->active_ == 0) self->done_timer_.cancel();
                           });
        while (active_ > 0) {
            boost::system::error_code ec;
            co_await done_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
        log::info("All workers finished", {{"controller", name_}});
    }
    void stop() override {
        if (!queue_->shutting_down())
            log::info("Shutdown signal received, waiting for all workers to finish", {{"controller", name_}});
        queue_->shut_down();
        asio::post(sync_signal_.get_executor(), [w = this->weak_from_this()] {
            if (auto s = w.lock()) s->sync_signal_.cancel();
        });
    }

    /// An informer this controller reads: its workers start once each such informer has
    /// synced. Called by the builder, before start().
    template <KubeObject U>
    void depends_on(Informer<U>& informer) {
        ++pending_syncs_;
        informer.when_synced([w = this->weak_from_this()] {
            if (auto s = w.lock())
                if (--s->pending_syncs_ == 0) s->sync_signal_.cancel();
        });
    }

    void enqueue(const Request& r) { queue_->add(r); }
    WorkQueue<ObjectKey>& queue() { return *queue_; }
    MetricsRegistry& metrics() { return *metrics_; }
    std::uint64_t reconciles() const { return reconciles_.load(); }
    std::uint64_t errors() const { return errors_.load(); }

    void add_predicate(Predicate<T> p) { predicates_.push_back(std::move(p)); }
    bool passes(const Change<T>& c) const { return detail::all_pass(predicates_, c); }

private:
    asio::awaitable<void> worker() {
        for (;;) {
            auto key = co_await queue_->get();
            if (!key) co_return;
            series_.active_workers->inc();
            auto t0 = std::chrono::steady_clock::now();
            MetricSeries* result = series_.success;
            const char* outcome = "success";
            std::optional<std::string> failure;
            try {
                Result r = co_await fn_(*key);
                // The latest reconcile says when the key runs again: a delayed re-add an earlier
                // result (or an error's backoff) asked for is replaced, not added to (a pass
                // that found nothing left to wait for costs no further pass).
                queue_->cancel_delayed(*key);
                switch (r.kind()) {
                case Result::Kind::Done: queue_->forget(*key); break;
                case Result::Kind::Requeue:
                    result = series_.requeue;
                    outcome = "requeue";
                    queue_->add_rate_limited(*key);
                    break;
                case Result::Kind::RequeueAfter:
                    result = series_.requeue_after;
                    outcome = "requeue_after";
                    queue_->forget(*key);
                    queue_->add_after(*key, r.after());
                    break;
                }
            } catch (const std::exception& e) {
                if (detail::is_not_found_of(e, rt_, *key)) {
                    // Deleted while this reconcile ran (its last finalizer removed, say): the
                    // ordinary end of a deletion, not a failure to retry.
                    queue_->forget(*key);
                    if (log::enabled(1))
                        log::info(1, "Object is gone, nothing left to reconcile",
                                  {{"controller", name_}, {"namespace", key->namespace_}, {"name", key->name},
                                   {"reconcileID", detail::new_reconcile_id()}, {"reason", e.what()}});
                } else {
                    failure = e.what();
                }
            } catch (...) {
                failure = "unknown exception";
            }
            double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (failure) {
                result = series_.error;
                outcome = "error";
                fail(*key, *failure);
            } else if (log::enabled(2)) {
                log::info(2, "Reconcile finished",
                          {{"controller", name_}, {"namespace", key->namespace_}, {"name", key->name},
                           {"reconcileID", detail::new_reconcile_id()}, {"result", outcome},
                           {"duration", fmt::format("{:.6f}s", secs)}});
            }
            ++reconciles_;
            result->inc();
            series_.time->observe(secs);
            series_.active_workers->dec();
            queue_->done(*key);
        }
    }

    void fail(const ObjectKey& key, const std::string& what) {
        ++errors_;
        log::error("Reconciler error", {{"controller", name_}, {"namespace", key.namespace_}, {"name", key.name},
                                        {"reconcileID", detail::new_reconcile_id()}, {"error", what}});
        series_.errors->inc();
        queue_->add_rate_limited(key);
    }

    void describe_metrics(MetricsRegistry& m) {
        using Type = MetricsRegistry::Type;
        m.describe("controller_runtime_reconcile_total", Type::Counter,
                   "Total number of reconciliations per controller");
        m.describe("controller_runtime_reconcile_errors_total", Type::Counter,
                   "Total number of reconciliation errors per controller");
        m.describe("controller_runtime_reconcile_time_seconds", Type::Histogram,
                   "Length of time per reconciliation per controller", reconcile_time_buckets());
        m.describe("controller_runtime_max_concurrent_reconciles", Type::Gauge,
                   "Maximum number of concurrent reconciles per controller");
        m.describe("controller_runtime_active_workers", Type::Gauge,
                   "Number of currently used workers per controller");
        // The series a reconcile updates, looked up once: a reconcile then takes no registry lock.
        MetricLabels ctl{{"controller", name_}};
        auto result = [&](const char* r) {
            return &m.counter("controller_runtime_reconcile_total", {{"controller", name_}, {"result", r}});
        };
        series_.success = result("success");
        series_.error = result("error");
        series_.requeue = result("requeue");
        series_.requeue_after = result("requeue_after");
        series_.errors = &m.counter("controller_runtime_reconcile_errors_total", ctl);
        series_.time = &m.histogram("controller_runtime_reconcile_time_seconds", ctl);
        series_.active_workers = &m.gauge("controller_runtime_active_workers", ctl);
        m.gauge("controller_runtime_max_concurrent_reconciles", ctl).set(workers_);
        auto* q = queue_.get();
        // The snapshot must not outlive the queue: it holds a weak flag owned by this controller.
        std::weak_ptr<int> alive = alive_;
        m.add_work_queue([q, alive]() -> std::optional<WorkQueueMetrics> {
            if (!alive.lock()) return std::nullopt;
            return q->metrics();
        });
    }

    struct Series {
        MetricSeries *success, *error, *requeue, *requeue_after, *errors, *active_workers;
        HistogramSeries* time;
    };

    std::string name_;
    SharedInformerFactory& factory_;
    api::ResourceType rt_;
    ReconcileFn fn_;
    int workers_;
    std::shared_ptr<MetricsRegistry> metrics_;
    std::unique_ptr<WorkQueue<ObjectKey>> queue_;
    asio::steady_timer done_timer_;
    asio::steady_timer sync_signal_;  // never expires: cancelled when the last dependency syncs, or on stop()
    std::atomic<int> pending_syncs_{0};
    std::atomic<int> active_{0};
    std::atomic<std::uint64_t> reconciles_{0}, errors_{0};
    std::vector<Predicate<T>> predicates_;
    std::shared_ptr<int> alive_ = std::make_shared<int>(0);
    Series series_{};
};

/// Builds a Controller<T>: ControllerBuilder<T>(name, factory).owns<U>().workers(2).complete(fn).
template <KubeObject T>
class ControllerBuilder {
public:
    ControllerBuilder(std::string name, SharedInformerFactory& f, api::ResourceType rt)
        : name_(std::move(name)), factory_(f), rt_(std::move(rt)) {}

    /// Children of kind U whose controller ownerReference points at a T enqueue that T. The
    /// predicates, if any, filter this watch's changes only: `.owns<api::Pod>(pred)`.
    template <KubeObject U, class... P>
        requires(std::convertible_to<P, Predicate<U>> && ...)
    ControllerBuilder& owns(const api::ResourceType& child, P&&... predicates) {
        auto map = [kind = std::string(rt_.kind), api_version = rt_.api_version()](const U& o) {
            std::vector<Request> out;
            auto ref = detail::controller_owner_of(o);
            if (ref && ref->kind == kind && ref->apiVersion == api_version)
                out.push_back(Request{key_of(o).namespace_, ref->name});
            return out;
        };
        return watch<U>(child, std::move(map), {Predicate<U>(std::forward<P>(predicates))...});
    }
    template <api::ApiObject U, class... P>
        requires(std::convertible_to<P, Predicate<U>> && ...)
    ControllerBuilder& owns(P&&... predicates) {
        return owns<U>(U::resource, std::forward<P>(predicates)...);
    }

    /// Any U: `mapping` names the keys of T to reconcile when a U changes (of a Modified, the
    /// keys of both states). The predicates, if any, filter this watch's changes only, e.g.
    /// update_predicate<U>(changed) for the updates some of a busy kind's fields tell apart.
    template <KubeObject U, class... P>
        requires(std::convertible_to<P, Predicate<U>> && ...)
    ControllerBuilder& watches(const api::ResourceType& other, std::function<std::vector<Request>(const U&)> mapping,
                               P&&... predicates) {
        return watch<U>(other, std::move(mapping), {Predicate<U>(std::forward<P>(predicates))...});
    }
    template <api::ApiObject U, class... P>
        requires(std::convertible_to<P, Predicate<U>> && ...)
    ControllerBuilder& watches(std::function<std::vector<Request>(const U&)> mapping, P&&... predicates) {
        return watches<U>(U::resource, std::move(mapping), std::forward<P>(predicates)...);
    }

    /// As watches(), on a given informer (a factory view: SharedInformerFactory::view()).
    template <KubeObject U, class... P>
        requires(std::convertible_to<P, Predicate<U>> && ...)
    ControllerBuilder& watches(std::shared_ptr<Informer<U>> informer, std::function<std::vector<Request>(const U&)> mapping,
                               P&&... predicates) {
        if (!informer) throw std::invalid_argument("controller " + name_ + ": watches() of a null informer");
        std::vector<Predicate<U>> ps{Predicate<U>(std::forward<P>(predicates))...};
        wirings_.push_back([informer, mapping = std::move(mapping), ps = std::move(ps)](
                               SharedInformerFactory&, std::weak_ptr<Controller<T>> w) {
            wire_handler(*informer, mapping, ps, w);
        });
        return *this;
    }

    /// The informer whose objects are the controller's own (default: the factory's shared
    /// informer of the resource), e.g. a view with options of its own.
    ControllerBuilder& primary(std::shared_ptr<Informer<T>> informer) {
        if (!informer) throw std::invalid_argument("controller " + name_ + ": primary() of a null informer");
        primary_ = std::move(informer);
        return *this;
    }

    ControllerBuilder& with_predicate(Predicate<T> p) {
        predicates_.push_back(std::move(p));
        return *this;
    }
    ControllerBuilder& workers(int n) {
        if (n < 1) throw std::invalid_argument("controller " + name_ + ": workers must be >= 1, not " + std::to_string(n));
        workers_ = n;
        return *this;
    }
    ControllerBuilder& metrics(std::shared_ptr<MetricsRegistry> m) {
        metrics_ = std::move(m);
        return *this;
    }
    /// complete() hands the controller to `r` (a Manager's add(): what Manager::controller_for
    /// sets, so a controller built there runs without another call).
    ControllerBuilder& registered_by(std::function<void(std::shared_ptr<Runnable>)> r) {
        register_ = std::move(r);
        return *this;
    }

    /// Creates the controller and registers its handlers (call before the factory starts,
    /// or on its io_context), and with its Manager when it came from one.
    std::shared_ptr<Controller<T>> complete(ReconcileFn fn) {
        auto c = std::make_shared<Controller<T>>(name_, factory_, rt_, std::move(fn), workers_, metrics_);
        for (auto& p : predicates_) c->add_predicate(p);
        std::weak_ptr<Controller<T>> w = c;
        auto primary = primary_ ? primary_ : factory_.informer<T>(rt_);
        primary->add_handler([w](const Change<T>& ch) {
            auto s = w.lock();
            if (s && s->passes(ch)) s->enqueue(key_of(*ch.object));
        });
        c->depends_on(*primary);
        for (auto& wire : wirings_) wire(factory_, w);
        if (register_) register_(c);
        return c;
    }
    template <Reconciler R>
    std::shared_ptr<Controller<T>> complete(std::shared_ptr<R> r) {
        return complete([r](const Request& req) { return r->reconcile(req); });
    }

private:
    /// Wires a watch of `rt`'s objects: each change that passes `predicates` enqueues the
    /// keys `map` names (of a Modified, those of the old state, then those of the new one).
    template <KubeObject U, class Map>
    ControllerBuilder& watch(const api::ResourceType& rt, Map map, std::vector<Predicate<U>> predicates) {
        wirings_.push_back([rt, map = std::move(map), predicates = std::move(predicates)](
                               SharedInformerFactory& f, std::weak_ptr<Controller<T>> w) {
            wire_handler(*f.informer<U>(rt), map, predicates, w);
        });
        return *this;
    }
    template <KubeObject U, class Map>
    static void wire_handler(Informer<U>& inf, const Map& map, const std::vector<Predicate<U>>& predicates,
                             std::weak_ptr<Controller<T>> w) {
        inf.add_handler([w, map, predicates](const Change<U>& c) {
            if (!detail::all_pass(predicates, c)) return;
            auto s = w.lock();
            if (!s) return;
            if (c.old && c.old != c.object)
                for (const auto& r : map(*c.old)) s->enqueue(r);
            for (const auto& r : map(*c.object)) s->enqueue(r);
        });
        if (auto s = w.lock()) s->depends_on(inf);
    }

    std::string name_;
    SharedInformerFactory& factory_;
    api::ResourceType rt_;
    int workers_ = 1;
    std::shared_ptr<MetricsRegistry> metrics_;
    std::vector<Predicate<T>> predicates_;
    std::shared_ptr<Informer<T>> primary_;
    std::vector<std::function<void(SharedInformerFactory&, std::weak_ptr<Controller<T>>)>> wirings_;
    std::function<void(std::shared_ptr<Runnable>)> register_;
};

/// controller-runtime's entry: `controller_for<api::Pod>("name", factory)` (typed), or with a
/// ResourceType for untyped objects.
template <api::ApiObject T>
ControllerBuilder<T> controller_for(std::string name, SharedInformerFactory& f) {
    return ControllerBuilder<T>(std::move(name), f, T::resource);
}
template <KubeObject T = boost::json::value>
ControllerBuilder<T> controller_for(std::string name, SharedInformerFactory& f, api::ResourceType rt) {
    return ControllerBuilder<T>(std::move(name), f, std::move(rt));
}

} // namespace vck::runtime
