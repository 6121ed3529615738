// Reconciler: what a controller calls for each key — `reconcile(request)` returning an
// awaitable Result: done, requeue (rate-limited), or requeue after a duration. Contract: an
// exception from reconcile means "failed": the controller logs it with the key, counts it in
// controller_runtime_reconcile_errors_total and requeues the key rate-limited; it never ends
// the process. Reconcile must be idempotent: it may run again for a state already handled.
#pragma once

#include <vck/runtime/object_key.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <concepts>
#include <functional>

namespace vck::runtime {

/// What to reconcile: the key of the primary object (controller-runtime's reconcile.Request).
using Request = ObjectKey;

class Result {
public:
    enum class Kind { Done, Requeue, RequeueAfter };

    static Result done() { return Result(Kind::Done, {}); }
    /// Again soon, with the queue's per-key backoff (as an error would, without counting one).
    static Result requeue() { return Result(Kind::Requeue, {}); }
    /// Again after `d` (a periodic re-check); resets the key's backoff.
    static Result requeue_after(std::chrono::nanoseconds d) { return Result(Kind::RequeueAfter, d); }

    Kind kind() const { return kind_; }
    std::chrono::nanoseconds after() const { return after_; }
    friend bool operator==(const Result&, const Result&) = default;

private:
    Result(Kind k, std::chrono::nanoseconds d) : kind_(k), after_(d) {}
    Kind kind_;
    std::chrono::nanoseconds after_;
};

template <class R>
concept Reconciler = requires(R& r, const Request& req) {
    { r.reconcile(req) } -> std::same_as<boost::asio::awaitable<Result>>;
};

/// Any reconcile function as a Reconciler.
using ReconcileFn = std::function<boost::asio::awaitable<Result>(const Request&)>;

} // namespace vck::runtime
