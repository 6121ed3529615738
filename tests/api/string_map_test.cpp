// StringMap: a sorted flat map with std::map's behaviour for the operations the API uses, and
// a JSON object on the wire.
#include <vck/api/json.hpp>
#include <vck/api/meta.hpp>
#include <vck/api/string_map.hpp>

#include <doctest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

using vck::api::StringMap;

namespace {
std::vector<std::string> keys(const StringMap& m) {
    std::vector<std::string> out;
    for (const auto& [k, v] : m) out.push_back(k);
    return out;
}
} // namespace

TEST_CASE("a string map keeps keys unique and in ascending order, whatever the insertion order") {
    StringMap m{{"tier", "front"}, {"app", "web"}, {"app", "db"}};  // the last of equal keys wins
    CHECK(keys(m) == std::vector<std::string>{"app", "tier"});
    CHECK(m.at("app") == "db");
    CHECK_FALSE(m.emplace("app", "other").second);  // emplace never overwrites
    CHECK(m.at("app") == "db");
    CHECK(m.emplace("zone", "a").second);
    m["bucket"] = "b";
    CHECK(keys(m) == std::vector<std::string>{"app", "bucket", "tier", "zone"});
    m.insert_or_assign("app", "api");
    CHECK(m.at("app") == "api");
    CHECK(m.count("tier") == 1);
    CHECK(m.contains(std::string_view("zone")));
    CHECK(m.find("nope") == m.end());
    CHECK_THROWS_AS(m.at("nope"), std::out_of_range);
    CHECK(m.erase("tier") == 1);
    CHECK(m.erase("tier") == 0);
    CHECK(m.size() == 3);
}

TEST_CASE("string maps compare by content, as std::map does") {
    std::map<std::string, std::string> a{{"a", "1"}, {"b", "2"}}, b{{"a", "1"}, {"b", "3"}};
    StringMap fa(a.begin(), a.end()), fb(b.begin(), b.end());
    CHECK(fa == StringMap{{"b", "2"}, {"a", "1"}});
    CHECK(fa != fb);
    CHECK((fa < fb) == (a < b));
}

TEST_CASE("a string map is a JSON object on the wire, and bad values are named by key") {
    vck::api::ObjectMeta m;
    m.name = "x";
    m.labels = {{"b", "2"}, {"a", "1"}};
    auto j = vck::api::to_json(m);
    CHECK(j.at("labels") == boost::json::parse(R"({"a":"1","b":"2"})"));
    auto back = vck::api::from_json<vck::api::ObjectMeta>(boost::json::parse(R"({"name":"x","labels":{"z":"26","a":"1"}})"));
    CHECK(keys(back.labels) == std::vector<std::string>{"a", "z"});
    CHECK_THROWS_WITH_AS(vck::api::from_json<vck::api::ObjectMeta>(boost::json::parse(R"({"labels":{"a":1}})")),
                         doctest::Contains("labels.a: expected string"), vck::api::DecodeError);
}
