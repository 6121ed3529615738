// Rate limiters and the token bucket, on a ManualClock: delays are counted, not slept.
#include <vck/runtime/manual_clock.hpp>
#include <vck/runtime/object_key.hpp>
#include <vck/runtime/rate_limiter.hpp>
#include <vck/client/token_bucket.hpp>

#include <doctest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <unordered_set>

using namespace std::chrono_literals;
using vck::runtime::ManualClock;
using vck::runtime::ObjectKey;
using ns = std::chrono::nanoseconds;

TEST_CASE("a token bucket serves a full burst at once, then one token per 1/qps") {
    ManualClock clock;
    vck::client::TokenBucket<ManualClock> b(10.0, 3, clock);
    CHECK(b.reserve() == ns::zero());
    CHECK(b.reserve() == ns::zero());
    CHECK(b.reserve() == ns::zero());
    CHECK(b.reserve() == ns(100ms));
    CHECK(b.reserve() == ns(200ms));  // callers queue behind earlier reservations
}

TEST_CASE("a token bucket refills with time but never beyond its burst") {
    ManualClock clock;
    vck::client::TokenBucket<ManualClock> b(10.0, 2, clock);
    CHECK(b.try_take());
    CHECK(b.try_take());
    CHECK_FALSE(b.try_take());
    clock.advance(99ms);
    CHECK_FALSE(b.try_take());
    clock.advance(1ms);
    CHECK(b.try_take());
    clock.advance(1h);
    CHECK(b.tokens() == doctest::Approx(2.0));
    CHECK(b.try_take());
    CHECK(b.try_take());
    CHECK_FALSE(b.try_take());
}

TEST_CASE("try_take does not take a token it cannot have, reserve goes into debt") {
    ManualClock clock;
    vck::client::TokenBucket<ManualClock> b(1.0, 1, clock);
    CHECK(b.try_take());
    CHECK_FALSE(b.try_take());
    CHECK(b.tokens() == doctest::Approx(0.0));
    CHECK(b.reserve() == ns(1s));
    CHECK(b.tokens() == doctest::Approx(-1.0));
    clock.advance(1s);
    CHECK_FALSE(b.try_take());  // the refilled token was reserved already
    clock.advance(1s);
    CHECK(b.try_take());
}

TEST_CASE("a token bucket rejects a non-positive rate or burst with a message") {
    CHECK_THROWS_WITH_AS(vck::client::TokenBucket<>(0.0, 1), doctest::Contains("qps must be > 0"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(vck::client::TokenBucket<>(1.0, 0), doctest::Contains("burst must be >= 1"), std::invalid_argument);
}

TEST_CASE("the exponential limiter doubles from its base per failure of one item") {
    vck::runtime::ItemExponentialFailureRateLimiter<std::string> lim(5ms, 1000s);
    CHECK(lim.when("a") == ns(5ms));
    CHECK(lim.when("a") == ns(10ms));
    CHECK(lim.when("a") == ns(20ms));
    CHECK(lim.when("b") == ns(5ms));
    CHECK(lim.num_requeues("a") == 3);
    CHECK(lim.num_requeues("b") == 1);
    CHECK(lim.num_requeues("c") == 0);
}

TEST_CASE("the exponential limiter caps at its maximum, even after very many failures") {
    vck::runtime::ItemExponentialFailureRateLimiter<std::string> lim(5ms, 1000s);
    ns last{};
    for (int i = 0; i < 18; ++i) last = lim.when("a");
    CHECK(last == ns(5ms) * (1 << 17));  // 655.36 s, still below the cap
    CHECK(lim.when("a") == ns(1000s));   // 5 ms * 2^18 = 1310.72 s: capped
    for (int i = 0; i < 2000; ++i) last = lim.when("a");  // 2^2000 overflows any integer
    CHECK(last == ns(1000s));
}

TEST_CASE("forget clears one item's failures and no other's") {
    vck::runtime::ItemExponentialFailureRateLimiter<std::string> lim(5ms, 1000s);
    (void)lim.when("a");
    (void)lim.when("a");
    (void)lim.when("b");
    lim.forget("a");
    CHECK(lim.num_requeues("a") == 0);
    CHECK(lim.when("a") == ns(5ms));
    CHECK(lim.num_requeues("b") == 1);
}

TEST_CASE("the exponential limiter rejects a base of zero or a maximum below the base") {
    using L = vck::runtime::ItemExponentialFailureRateLimiter<std::string>;
    CHECK_THROWS_WITH_AS(L(0ms, 1s), doctest::Contains("base delay must be > 0"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(L(2s, 1s), doctest::Contains("max delay must be >= base"), std::invalid_argument);
}

TEST_CASE("the max-of limiter returns the longest delay and forwards forget to all") {
    ManualClock clock;
    std::vector<std::unique_ptr<vck::runtime::RateLimiter<std::string>>> v;
    v.push_back(std::make_unique<vck::runtime::ItemExponentialFailureRateLimiter<std::string>>(1ms, 1s));
    v.push_back(std::make_unique<vck::runtime::ItemExponentialFailureRateLimiter<std::string>>(3ms, 4ms));
    vck::runtime::MaxOfRateLimiter<std::string> lim(std::move(v));
    CHECK(lim.when("a") == ns(3ms));  // max(1, 3)
    CHECK(lim.when("a") == ns(4ms));  // max(2, min(6, 4))
    CHECK(lim.when("a") == ns(4ms));  // max(4, 4)
    CHECK(lim.when("a") == ns(8ms));  // max(8, 4)
    CHECK(lim.num_requeues("a") == 4);
    lim.forget("a");
    CHECK(lim.num_requeues("a") == 0);
    CHECK(lim.when("a") == ns(3ms));
}

TEST_CASE("the max-of limiter needs at least one limiter") {
    CHECK_THROWS_AS(vck::runtime::MaxOfRateLimiter<std::string>({}), std::invalid_argument);
}

TEST_CASE("the default controller limiter is 5 ms exponential per item, maxed with 10 qps burst 100") {
    ManualClock clock;
    auto lim = vck::runtime::default_controller_rate_limiter<std::string>(clock);
    CHECK(lim->when("a") == ns(5ms));
    CHECK(lim->when("a") == ns(10ms));
    for (int i = 0; i < 98; ++i) CHECK(lim->when("k" + std::to_string(i)) == ns(5ms));
    // 100 tokens used; the bucket now decides for a fresh item.
    CHECK(lim->when("fresh") == ns(100ms));
    CHECK(lim->num_requeues("a") == 2);
}

TEST_CASE("an object key formats as ns/name and parses back") {
    ObjectKey k{"default", "web-0"};
    CHECK(k.str() == "default/web-0");
    CHECK(ObjectKey::parse("default/web-0") == k);
    CHECK(ObjectKey::parse(vck::runtime::format(k)) == k);
    std::ostringstream os;
    os << k;
    CHECK(os.str() == "default/web-0");
}

TEST_CASE("a cluster-scoped object key is its name alone") {
    ObjectKey k{"", "node-1"};
    CHECK(k.str() == "node-1");
    CHECK(ObjectKey::parse("node-1") == k);
}

TEST_CASE("a malformed object key is rejected naming the string") {
    CHECK_THROWS_WITH_AS(ObjectKey::parse(""), doctest::Contains("empty"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(ObjectKey::parse("a/b/c"), doctest::Contains("\"a/b/c\""), std::invalid_argument);
    CHECK_THROWS_WITH_AS(ObjectKey::parse("/x"), doctest::Contains("empty namespace"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(ObjectKey::parse("x/"), doctest::Contains("empty name"), std::invalid_argument);
}

TEST_CASE("object keys order by namespace then name and hash apart") {
    CHECK(ObjectKey{"a", "z"} < ObjectKey{"b", "a"});
    CHECK(ObjectKey{"a", "a"} < ObjectKey{"a", "b"});
    std::unordered_set<ObjectKey> s{{"a", "bc"}, {"ab", "c"}, {"a", "bc"}};
    CHECK(s.size() == 2);
}
