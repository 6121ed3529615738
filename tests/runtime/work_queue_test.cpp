// The work queue's invariants, one TEST_CASE each. Time is a ManualClock: delays and backoff
// are checked by advancing it, never by sleeping.
#include <vck/runtime/manual_clock.hpp>
#include <vck/runtime/object_key.hpp>
#include <vck/runtime/work_queue.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <doctest.h>

#include <atomic>
#include <future>
#include <set>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using vck::runtime::ManualClock;
using vck::runtime::ObjectKey;
namespace asio = boost::asio;

namespace {

using Queue = vck::runtime::WorkQueue<std::string, ManualClock>;

/// Runs the io_context until nothing is left to do right now (handlers posted by the queue).
void settle(asio::io_context& io) {
    io.restart();
    io.poll();
}

/// A get() started in the background; `result` fills in when it completes.
struct PendingGet {
    bool completed = false;
    std::optional<std::string> result;
    boost::system::error_code ec;
};

std::shared_ptr<PendingGet> start_get(Queue& q) {
    auto p = std::make_shared<PendingGet>();
    q.async_get([p](boost::system::error_code ec, std::optional<std::string> k) {
        p->completed = true;
        p->ec = ec;
        p->result = std::move(k);
    });
    return p;
}

/// get() on a queue that is known to hold a key (or to be shut down).
std::optional<std::string> get_now(asio::io_context& io, Queue& q) {
    auto p = start_get(q);
    settle(io);
    REQUIRE(p->completed);
    return p->result;
}

} // namespace

TEST_CASE("a key added several times while queued is handed out once") {
    asio::io_context io;
    ManualClock clock;
    Queue q(io.get_executor(), {}, clock);
    q.add("a");
    q.add("b");
    q.add("a");
    q.add("a");
    CHECK(q.len() == 2);
    CHECK(get_now(io, q) == "a");
    CHECK(get_now(io, q) == "b");
    auto third = start_get(q);
    settle(io);
    CHECK_FALSE(third->completed);
    q.shut_down();
    settle(io);
}

TEST_CASE("keys are handed out in the order they were first added") {
    asio::io_context io;
    Queue q(io.get_executor(), {}, ManualClock{});
    for (auto k : {"c", "a", "b", "a", "c"}) q.add(k);
    CHECK(get_now(io, q) == "c");
    CHECK(get_now(io, q) == "a");
    CHECK(get_now(io, q) == "b");
    q.shut_down();
}

TEST_CASE("a key is never handed to a second worker while the first is processing it") {
    asio::io_context io;
    Queue q(io.get_executor(), {}, ManualClock{});
    q.add("a");
    CHECK(get_now(io, q) == "a");
    q.add("a");  // while processing: must wait for done()
    auto second = start_get(q);
    settle(io);
    CHECK_FALSE(second->completed);
    CHECK(q.len() == 0);
    q.done("a");
    settle(io);
    REQUIRE(second->completed);
    CHECK(second->result == "a");
    q.shut_down();
}

TEST_CASE("a key added while processing is processed exactly once more after done") {
    asio::io_context io;
    Queue q(io.get_executor(), {}, ManualClock{});
    q.add("a");
    CHECK(get_now(io, q) == "a");
    q.add("a");
    q.add("a");
    q.add("a");
    q.done("a");
    CHECK(q.len() == 1);
    CHECK(get_now(io, q) == "a");
    q.done("a");
    CHECK(q.len() == 0);
    auto none = start_get(q);
    settle(io);
    CHECK_FALSE(none->completed);
    q.shut_down();
    settle(io);
    CHECK(none->completed);
    CHECK_FALSE(none->result.has_value());
}

TEST_CASE("done for a key that is not processing changes nothing") {
    asio::io_context io;
    Queue q(io.get_executor(), {}, ManualClock{});
    q.add("a");
    q.done("a");
    q.done("zzz");
    CHECK(q.len() == 1);
    CHECK(get_now(io, q) == "a");
    q.shut_down();
}

TEST_CASE("add_after hands the key out only once its delay has elapsed") {
    asio::io_context io;
    ManualClock clock;
    Queue q(io.get_executor(), {}, clock);
    q.add_after("a", 100ms);
    CHECK(q.delayed() == 1);
    auto g = start_get(q);
    settle(io);
    CHECK_FALSE(g->completed);
    clock.advance(99ms);
    settle(io);
    CHECK_FALSE(g->completed);
    clock.advance(1ms);
    settle(io);
    REQUIRE(g->completed);
    CHECK(g->result == "a");
    CHECK(q.delayed() == 0);
    q.shut_down();
}

TEST_CASE("of two pending delays for one key the earlier wins and the key comes once") {
    asio::io_context io;
    ManualClock clock;
    Queue q(io.get_executor(), {}, clock);
    q.add_after("a", 10s);
    q.add_after("a", 1s);
    q.add_after("a", 5s);
    CHECK(q.delayed() == 1);
    clock.advance(1s);
    settle(io);
    CHECK(q.len() == 1);
    CHECK(get_now(io, q) == "a");
    q.done("a");
    clock.advance(20s);
    settle(io);
    CHECK(q.len() == 0);
    q.shut_down();
}

TEST_CASE("cancel_delayed drops a key's pending delayed add, and nothing else") {
    asio::io_context io;
    ManualClock clock;
    Queue q(io.get_executor(), {}, clock);
    q.add_after("a", 1s);
    q.add_after("b", 1s);
    q.cancel_delayed("a");
    q.cancel_delayed("c");  // none pending: nothing happens
    CHECK(q.delayed() == 1);
    clock.advance(2s);
    settle(io);
    CHECK(q.len() == 1);
    CHECK(get_now(io, q) == "b");
    q.done("b");
    q.add("a");
    q.cancel_delayed("a");  // queued, not delayed: it stays
    CHECK(q.len() == 1);
    q.shut_down();
}

TEST_CASE("add_after with a zero or negative delay adds at once") {
    asio::io_context io;
    Queue q(io.get_executor(), {}, ManualClock{});
    q.add_after("a", 0ms);
    q.add_after("b", -5ms);
    CHECK(q.len() == 2);
    CHECK(q.delayed() == 0);
    q.shut_down();
}

TEST_CASE("add_after on a steady clock fires from the io_context's timer") {
    // The only real-time test: it waits for a 1 ms timer, and asserts nothing about durations.
    asio::io_context io;
    vck::runtime::WorkQueue<std::string> q(io.get_executor());
    q.add_after("a", 1ms);
    std::optional<std::string> got;
    asio::co_spawn(io, [&]() -> asio::awaitable<void> { got = co_await q.get(); }, asio::detached);
    io.run();
    CHECK(got == "a");
}

TEST_CASE("add_rate_limited backs off per key exponentially from 5 ms, doubling") {
    asio::io_context io;
    ManualClock clock;
    Queue q(io.get_executor(), {}, clock);
    auto expected = 5ms;
    for (int failure = 0; failure < 6; ++failure) {
        CHECK(q.num_requeues("a") == failure);
        q.add_rate_limited("a");
        clock.advance(expected - 1ns);
        settle(io);
        CHECK_MESSAGE(q.len() == 0, "failure ", failure, " came back too early");
        clock.advance(1ns);
        settle(io);
        CHECK_MESSAGE(q.len() == 1, "failure ", failure, " did not come back after ", expected.count(), " ms");
        CHECK(get_now(io, q) == "a");
        q.done("a");
        expected *= 2;
    }
    CHECK(q.metrics().retries_total == 6);
    q.shut_down();
}

TEST_CASE("per-key backoff is independent between keys") {
    asio::io_context io;
    ManualClock clock;
    Queue q(io.get_executor(), {}, clock);
    for (int i = 0; i < 4; ++i) q.add_rate_limited("a");  // a's next delay is 5ms * 2^3
    q.add_rate_limited("b");                              // b's first: 5 ms
    CHECK(q.num_requeues("a") == 4);
    CHECK(q.num_requeues("b") == 1);
    clock.advance(5ms);
    settle(io);
    CHECK(get_now(io, q) == "a");  // a's first add (5 ms) is the earliest pending delay for a
    CHECK(get_now(io, q) == "b");
    q.shut_down();
}

TEST_CASE("per-key backoff stops growing at 1000 seconds") {
    asio::io_context io;
    ManualClock clock;
    Queue q(io.get_executor(), {}, clock);
    // 5 ms * 2^18 > 1000 s: after 25 failures the delay can only be the cap.
    for (int i = 0; i < 25; ++i) {
        q.add_rate_limited("k");
        clock.advance(1000s);  // whatever this failure's delay, it has passed
        settle(io);
        REQUIRE(get_now(io, q) == "k");
        q.done("k");
    }
    q.add_rate_limited("k");
    clock.advance(1000s - 1ns);
    settle(io);
    CHECK(q.len() == 0);
    clock.advance(1ns);
    settle(io);
    CHECK(q.len() == 1);
    q.shut_down();
}

TEST_CASE("forget resets a key's backoff to the base delay") {
    asio::io_context io;
    ManualClock clock;
    Queue q(io.get_executor(), {}, clock);
    for (int i = 0; i < 5; ++i) q.add_rate_limited("a");
    CHECK(q.num_requeues("a") == 5);
    clock.advance(5ms);
    settle(io);
    CHECK(get_now(io, q) == "a");
    q.done("a");
    q.forget("a");
    CHECK(q.num_requeues("a") == 0);
    q.add_rate_limited("a");
    clock.advance(5ms);
    settle(io);
    CHECK(q.len() == 1);
    q.shut_down();
}

TEST_CASE("the overall token bucket limits retries across keys to 10 per second after a burst of 100") {
    asio::io_context io;
    ManualClock clock;
    Queue q(io.get_executor(), {}, clock);
    // 110 distinct keys failing once each: per-key backoff says 5 ms for all; the bucket
    // lets 100 through at 5 ms and spaces the other 10 at 100 ms intervals.
    for (int i = 0; i < 110; ++i) q.add_rate_limited("k" + std::to_string(i));
    clock.advance(5ms);
    settle(io);
    CHECK(q.len() == 100);
    for (int i = 1; i <= 10; ++i) {
        clock.advance(100ms);
        settle(io);
        CHECK(q.len() == static_cast<std::size_t>(100 + i));
    }
    q.shut_down();
}

TEST_CASE("after shut_down adds are ignored and every get returns nullopt") {
    asio::io_context io;
    ManualClock clock;
    Queue q(io.get_executor(), {}, clock);
    q.add("queued");
    q.add_after("delayed", 1s);
    auto waiting1 = start_get(q);
    auto waiting2 = start_get(q);
    settle(io);
    CHECK(waiting1->result == "queued");
    CHECK_FALSE(waiting2->completed);
    q.shut_down();
    CHECK(q.shutting_down());
    settle(io);
    REQUIRE(waiting2->completed);
    CHECK_FALSE(waiting2->ec);
    CHECK_FALSE(waiting2->result.has_value());
    q.add("late");
    q.add_after("late2", 1ms);
    clock.advance(2s);
    CHECK(q.len() == 0);
    CHECK_FALSE(get_now(io, q).has_value());
    q.done("queued");  // still allowed for keys that were processing
}

TEST_CASE("shut_down drops keys that were queued but not yet handed out") {
    asio::io_context io;
    Queue q(io.get_executor(), {}, ManualClock{});
    q.add("a");
    q.add("b");
    q.shut_down();
    CHECK(q.len() == 0);
    CHECK_FALSE(get_now(io, q).has_value());
}

TEST_CASE("shut_down_with_drain lets workers finish what was queued, then completes") {
    asio::io_context io;
    Queue q(io.get_executor(), {}, ManualClock{});
    q.add("a");
    q.add("b");
    CHECK(get_now(io, q) == "a");
    q.add("a");  // dirty while processing: belongs to the drain too
    bool drained = false;
    q.async_shut_down_with_drain([&](boost::system::error_code ec) {
        CHECK_FALSE(ec);
        drained = true;
    });
    q.add("c");  // ignored: shutting down
    settle(io);
    CHECK_FALSE(drained);
    CHECK(get_now(io, q) == "b");
    q.done("b");
    q.done("a");
    settle(io);
    CHECK_FALSE(drained);
    CHECK(get_now(io, q) == "a");  // the re-add made before the drain
    settle(io);
    CHECK_FALSE(drained);
    auto last = start_get(q);
    settle(io);
    CHECK_FALSE(last->completed);  // something is still processing: a worker must not exit yet
    q.done("a");
    settle(io);
    CHECK(drained);
    REQUIRE(last->completed);
    CHECK_FALSE(last->result.has_value());
    CHECK_FALSE(get_now(io, q).has_value());
}

TEST_CASE("shut_down during a drain drops what is queued and the drain ends when processing does") {
    asio::io_context io;
    Queue q(io.get_executor(), {}, ManualClock{});
    q.add("a");
    q.add("b");
    CHECK(get_now(io, q) == "a");
    bool drained = false;
    q.async_shut_down_with_drain([&](boost::system::error_code) { drained = true; });
    q.shut_down();
    CHECK_FALSE(get_now(io, q).has_value());  // "b" is dropped
    CHECK_FALSE(drained);
    q.done("a");
    settle(io);
    CHECK(drained);
}

TEST_CASE("destroying a queue completes waiting gets with nullopt and aborts a waiting drain") {
    asio::io_context io;
    std::shared_ptr<PendingGet> g;
    bool drain_called = false;
    boost::system::error_code drain_ec;
    {
        Queue q(io.get_executor(), {}, ManualClock{});
        q.add("a");
        CHECK(get_now(io, q) == "a");
        g = start_get(q);
        q.async_shut_down_with_drain([&](boost::system::error_code ec) {
            drain_called = true;
            drain_ec = ec;
        });
    }
    settle(io);
    REQUIRE(g->completed);
    CHECK_FALSE(g->result.has_value());
    CHECK(drain_called);
    CHECK(drain_ec == asio::error::operation_aborted);
}

TEST_CASE("a cancelled get takes no key and the key goes to the next worker") {
    using namespace asio::experimental::awaitable_operators;
    asio::io_context io;
    ManualClock clock;
    Queue q(io.get_executor(), {}, clock);
    std::optional<std::string> second;
    bool timed_out = false;
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        asio::steady_timer t(co_await asio::this_coro::executor, 0ms);
        auto r = co_await (q.get() || t.async_wait(asio::use_awaitable));
        timed_out = r.index() == 1;
    }, asio::detached);
    io.run();
    CHECK(timed_out);
    q.add("a");
    second = get_now(io, q);
    CHECK(second == "a");
    q.shut_down();
}

TEST_CASE("coroutine workers on one io_context share the keys without overlap") {
    asio::io_context io;
    Queue q(io.get_executor(), {}, ManualClock{});
    std::map<std::string, int> processed;
    std::set<std::string> in_flight;
    bool overlap = false;
    int total = 0;
    auto worker = [&]() -> asio::awaitable<void> {
        while (auto k = co_await q.get()) {
            if (!in_flight.insert(*k).second) overlap = true;
            ++processed[*k];
            if (processed[*k] == 1 && *k == "k3") q.add(*k);  // re-add while processing
            asio::steady_timer t(co_await asio::this_coro::executor, 0ms);
            co_await t.async_wait(asio::use_awaitable);  // let other workers run meanwhile
            in_flight.erase(*k);
            q.done(*k);
            if (++total == 11) q.shut_down();  // 10 keys, k3 twice
        }
    };
    for (int i = 0; i < 4; ++i) asio::co_spawn(io, worker(), asio::detached);
    for (int i = 0; i < 10; ++i) q.add("k" + std::to_string(i));
    io.run();  // returns once every worker has seen nullopt
    CHECK_FALSE(overlap);
    CHECK(processed.size() == 10);
    for (const auto& [k, n] : processed) CHECK_MESSAGE(n == (k == "k3" ? 2 : 1), k);
}

TEST_CASE("workers on a multi-threaded io_context never process one key twice at once") {
    asio::thread_pool pool(4);
    vck::runtime::WorkQueue<ObjectKey> q(pool.get_executor());
    std::mutex mu;
    std::map<ObjectKey, int> in_flight;
    std::atomic<int> handled{0};
    std::atomic<bool> overlap{false};
    constexpr int keys = 20, rounds = 50;
    auto worker = [&]() -> asio::awaitable<void> {
        while (auto k = co_await q.get()) {
            {
                std::lock_guard lk(mu);
                if (++in_flight[*k] > 1) overlap = true;
            }
            std::this_thread::yield();
            {
                std::lock_guard lk(mu);
                --in_flight[*k];
            }
            ++handled;
            q.done(*k);
        }
    };
    for (int i = 0; i < 6; ++i) asio::co_spawn(pool, worker(), asio::detached);
    std::thread producer([&] {
        for (int r = 0; r < rounds; ++r)
            for (int i = 0; i < keys; ++i) q.add(ObjectKey{"ns", "o" + std::to_string(i)});
    });
    producer.join();
    asio::co_spawn(pool, q.shut_down_with_drain(), asio::use_future).get();
    pool.join();
    CHECK_FALSE(overlap);
    CHECK(handled >= keys);                // every key at least once
    CHECK(handled <= keys * rounds);       // and deduplicated, never more than added
    CHECK(q.len() == 0);
    auto m = q.metrics();
    CHECK(m.work_duration_seconds.count == static_cast<std::uint64_t>(handled.load()));
}

TEST_CASE("metrics count adds, depth, latencies, retries and work in progress") {
    asio::io_context io;
    ManualClock clock;
    Queue q(io.get_executor(), {.name = "vm", .rate_limiter = nullptr}, clock);
    q.add("a");
    q.add("a");
    q.add("b");
    auto m = q.metrics();
    CHECK(m.name == "vm");
    CHECK(m.depth == 2);
    CHECK(m.adds_total == 2);
    clock.advance(3s);
    CHECK(get_now(io, q) == "a");
    m = q.metrics();
    CHECK(m.depth == 1);
    CHECK(m.queue_duration_seconds.count == 1);
    CHECK(m.queue_duration_seconds.sum == doctest::Approx(3.0));
    CHECK(m.queue_duration_seconds.counts[9] == 1);  // 3 s is in the <= 10 s bucket
    clock.advance(2s);
    CHECK(get_now(io, q) == "b");
    clock.advance(1s);
    m = q.metrics();
    CHECK(m.unfinished_work_seconds == doctest::Approx(3.0 + 1.0));  // a: 3 s, b: 1 s
    CHECK(m.longest_running_processor_seconds == doctest::Approx(3.0));
    q.done("a");
    m = q.metrics();
    CHECK(m.work_duration_seconds.count == 1);
    CHECK(m.work_duration_seconds.sum == doctest::Approx(3.0));
    CHECK(m.unfinished_work_seconds == doctest::Approx(1.0));
    q.add_rate_limited("a");
    CHECK(q.metrics().retries_total == 1);
    q.shut_down();
}

TEST_CASE("the queue accepts ObjectKey keys") {
    asio::io_context io;
    vck::runtime::WorkQueue<ObjectKey, ManualClock> q(io.get_executor(), {}, ManualClock{});
    q.add(ObjectKey::parse("ns/a"));
    q.add(ObjectKey{"ns", "a"});
    CHECK(q.len() == 1);
    std::optional<ObjectKey> got;
    q.async_get([&](boost::system::error_code, std::optional<ObjectKey> k) { got = k; });
    settle(io);
    CHECK(got == ObjectKey{"ns", "a"});
    q.shut_down();
}

TEST_CASE("a queue asks the rate limiter it is given") {
    asio::io_context io;
    ManualClock clock;
    Queue q(io.get_executor(),
            {.name = "fixed", .rate_limiter = std::make_unique<vck::runtime::ItemExponentialFailureRateLimiter<std::string>>(1s, 1s)},
            clock);
    q.add_rate_limited("a");
    q.add_rate_limited("b");
    clock.advance(999ms);
    settle(io);
    CHECK(q.len() == 0);
    clock.advance(1ms);
    settle(io);
    CHECK(q.len() == 2);
    CHECK(q.num_requeues("a") == 1);
    q.shut_down();
}

TEST_CASE("delayed adds from several threads all reach workers on a multi-threaded io_context") {
    asio::thread_pool pool(3);
    vck::runtime::WorkQueue<std::string> q(pool.get_executor());
    constexpr int per_thread = 50, threads = 3;
    std::mutex mu;
    std::set<std::string> seen;
    std::promise<void> all_seen;
    auto worker = [&]() -> asio::awaitable<void> {
        while (auto k = co_await q.get()) {
            {
                std::lock_guard lk(mu);
                seen.insert(*k);
                if (seen.size() == per_thread * threads) all_seen.set_value();
            }
            q.done(*k);
        }
    };
    for (int i = 0; i < 4; ++i) asio::co_spawn(pool, worker(), asio::detached);
    std::vector<std::thread> producers;
    for (int t = 0; t < threads; ++t)
        producers.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i)
                q.add_after("t" + std::to_string(t) + "-" + std::to_string(i), std::chrono::microseconds((i * 37 + t * 11) % 3000));
        });
    for (auto& p : producers) p.join();
    // Not a timing assertion: a lost key would otherwise hang the test until meson's timeout.
    auto status = all_seen.get_future().wait_for(120s);
    CHECK(status == std::future_status::ready);
    q.shut_down();
    pool.join();
    CHECK(seen.size() == per_thread * threads);
}
