// webhook/json_patch.hpp: a patch computed from two documents, applied back to the first with
// the sandbox's RFC 6902 applier, gives the second, whatever the shapes.
#include <vck/sandbox/storage/patch.hpp>
#include <vck/webhook/json_patch.hpp>

#include <doctest.h>

#include <string>
#include <vector>

namespace webhook_json_patch_test {

namespace json = boost::json;
using vck::webhook::create_json_patch;

/// The patch from `from` to `to`, checked by applying it: returns the patch for closer looks.
json::array round_trip(const char* from_text, const char* to_text) {
    auto from = json::parse(from_text);
    auto to = json::parse(to_text);
    auto patch = create_json_patch(from, to);
    INFO("from ", from_text, " to ", to_text, " patch ", json::serialize(patch));
    auto applied = vck::sandbox::apply_json_patch(from, json::value(patch));
    CHECK(vck::sandbox::json_equal(applied, to));
    for (const auto& op : patch) {
        std::string_view name = op.at("op").get_string();
        CHECK((name == "add" || name == "remove" || name == "replace"));
    }
    return patch;
}

TEST_CASE("equal documents give an empty patch, whatever the member order or number spelling") {
    CHECK(round_trip(R"({"a":1,"b":[1,2,{"c":null}]})", R"({"b":[1,2,{"c":null}],"a":1})").empty());
    CHECK(round_trip(R"({"n":1})", R"({"n":1.0})").empty());
    CHECK(round_trip("null", "null").empty());
}

TEST_CASE("a patch applied to the original gives the mutated document, for many shapes") {
    const std::vector<std::pair<const char*, const char*>> cases = {
        {R"({"a":1})", R"({"a":2})"},
        {R"({"a":1})", R"({})"},
        {R"({})", R"({"a":{"b":[1,2]}})"},
        {R"({"m":{"labels":{"x":"1"}}})", R"({"m":{"labels":{"x":"1","y":"2"},"annotations":{"z":"3"}}})"},
        {R"({"spec":{"containers":[{"name":"a","image":"i"}]}})",
         R"({"spec":{"containers":[{"name":"a","image":"j","env":[{"name":"E","value":"v"}]}]}})"},
        {R"({"xs":[1,2,3]})", R"({"xs":[1,2,3,4,5]})"},
        {R"({"xs":[1,2,3,4,5]})", R"({"xs":[1,2]})"},
        {R"({"xs":[1,2,3]})", R"({"xs":[]})"},
        {R"({"xs":[]})", R"({"xs":[{"a":1}]})"},
        {R"({"xs":[1,2,3]})", R"({"xs":[0,1,2,3]})"},           // an insertion at the front
        {R"({"xs":[[1,2],[3]]})", R"({"xs":[[1],[3,4,5]]})"},   // nested arrays
        {R"({"a/b":1,"c~d":2,"~/":3})", R"({"a/b":10,"~/":{"x":1},"e/~f":4})"},
        {R"({"a":1})", R"({"a":"1"})"},                          // type changes
        {R"({"a":{"b":1}})", R"({"a":[1]})"},
        {R"({"a":[1]})", R"({"a":{"0":1}})"},
        {R"({"a":null})", R"({"a":{"b":null}})"},
        {R"({"a":{"b":null}})", R"({"a":null})"},
        {R"({"a":true})", R"({"a":false,"b":null})"},
        {R"({"a":1})", R"([1,2])"},                              // the root changes type
        {"null", R"({"a":1})"},
        {R"("s")", R"("t")"},
        {R"({"":{"":1}})", R"({"":{"":2,"x":[]}})"},            // empty keys
        {R"({"deep":{"er":{"est":[{"k":[{"v":1}]}]}}})", R"({"deep":{"er":{"est":[{"k":[{"v":2},{"v":3}]}]}}})"},
    };
    for (const auto& [from, to] : cases) round_trip(from, to);
}

TEST_CASE("keys with '/' and '~' are escaped as ~1 and ~0") {
    auto patch = round_trip(R"({"metadata":{"annotations":{}}})",
                            R"({"metadata":{"annotations":{"example.com/a~b":"x"}}})");
    REQUIRE(patch.size() == 1);
    CHECK(patch[0].at("path") == "/metadata/annotations/example.com~1a~0b");
    CHECK(vck::webhook::escape_json_pointer_token("~1/") == "~01~1");
}

TEST_CASE("changes in place are minimal: one operation per changed leaf") {
    auto patch = round_trip(R"({"a":{"b":1,"c":2},"d":[1,2,3]})", R"({"a":{"b":1,"c":3},"d":[1,9,3]})");
    REQUIRE(patch.size() == 2);
    CHECK(patch[0] == json::parse(R"({"op":"replace","path":"/a/c","value":3})"));
    CHECK(patch[1] == json::parse(R"({"op":"replace","path":"/d/1","value":9})"));
}

TEST_CASE("an array that shrinks loses its elements from the end, each removal valid when applied") {
    auto patch = round_trip(R"({"xs":[1,2,3,4]})", R"({"xs":[1]})");
    REQUIRE(patch.size() == 3);
    CHECK(patch[0].at("path") == "/xs/3");
    CHECK(patch[2].at("path") == "/xs/1");
}

TEST_CASE("a lenient replay creates missing parents and skips removals of what is absent") {
    auto target = json::parse(R"({"keep":{"u":1},"spec":{"list":[{"a":1}]}})");
    auto ops = json::parse(R"([
        {"op":"add","path":"/metadata/labels/x","value":"1"},
        {"op":"replace","path":"/spec/replicas","value":2},
        {"op":"replace","path":"/spec/list/0/a","value":5},
        {"op":"add","path":"/spec/list/1","value":{"a":2}},
        {"op":"remove","path":"/spec/absent/deep"},
        {"op":"remove","path":"/spec/list/7"}
    ])").as_array();
    vck::webhook::apply_json_patch_leniently(target, ops);
    CHECK(target == json::parse(R"({"keep":{"u":1},"spec":{"list":[{"a":5},{"a":2}],"replicas":2},
                                   "metadata":{"labels":{"x":"1"}}})"));
    CHECK_THROWS_WITH(vck::webhook::apply_json_patch_leniently(target, json::parse(R"([{"op":"move","path":"/a","from":"/b"}])").as_array()),
                      "patch operation \"move\" is not add, remove or replace");
}

} // namespace webhook_json_patch_test
