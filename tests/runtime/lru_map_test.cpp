// LruMap: bounded, least recently used first out.
#include <vck/runtime/lru_map.hpp>

#include <doctest.h>

#include <stdexcept>
#include <string>

using vck::runtime::LruMap;

TEST_CASE("an LRU map never holds more than its capacity and drops the least recently used key") {
    LruMap<std::string, int> m(2);
    m.get_or_insert("a") = 1;
    m.get_or_insert("b") = 2;
    REQUIRE(m.find("a") != nullptr);  // "a" is now the most recently used
    m.get_or_insert("c") = 3;         // evicts "b"
    CHECK(m.size() == 2);
    CHECK(m.find("b") == nullptr);
    CHECK(*m.find("a") == 1);
    CHECK(*m.find("c") == 3);
    bool inserted = true;
    CHECK(m.get_or_insert("c", &inserted) == 3);
    CHECK_FALSE(inserted);
    m.get_or_insert("d", &inserted);  // evicts "a", used before "c"
    CHECK(inserted);
    CHECK(m.find("a") == nullptr);
    m.erase("c");
    CHECK(m.size() == 1);
    CHECK(m.find("c") == nullptr);
}

TEST_CASE("an LRU map of capacity 0 is refused") {
    using IntMap = LruMap<int, int>;
    CHECK_THROWS_AS(IntMap(0), std::invalid_argument);
}
