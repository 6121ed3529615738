// JSON pointers (include/vck/api/json_pointer.hpp): the one parser the webhook's patches and the
// sandbox's JSON patches read paths with, RFC 6901's rules and its refusals.
#include <vck/api/json_pointer.hpp>

#include <doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

using vck::api::escape_json_pointer_token;
using vck::api::parse_json_pointer;
using Tokens = std::vector<std::string>;

TEST_CASE("a JSON pointer is its tokens, with ~1 read as '/' and ~0 as '~'") {
    CHECK(parse_json_pointer("") == Tokens{});
    CHECK(parse_json_pointer("/") == Tokens{""});
    CHECK(parse_json_pointer("/metadata/labels") == Tokens{"metadata", "labels"});
    CHECK(parse_json_pointer("/metadata/annotations/vck.intel.com~1copy") ==
          Tokens{"metadata", "annotations", "vck.intel.com/copy"});
    CHECK(parse_json_pointer("/a~01/~1~0") == Tokens{"a~1", "/~"});  // ~01 is "~" then "1", not "/"
    CHECK(parse_json_pointer("/spec/containers/0/") == Tokens{"spec", "containers", "0", ""});
}

TEST_CASE("a JSON pointer that breaks RFC 6901 is refused with the rule it breaks") {
    CHECK_THROWS_WITH_AS(parse_json_pointer("metadata"), "a JSON pointer must be empty or start with '/'",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(parse_json_pointer("/a~2b"), "'~' must be followed by '0' or '1' in a JSON pointer",
                         std::invalid_argument);
    CHECK_THROWS_AS(parse_json_pointer("/a~"), std::invalid_argument);
}

TEST_CASE("an escaped token reads back as itself") {
    for (std::string key : {"plain", "a/b", "~c", "~/~1/~0", ""}) {
        CHECK(parse_json_pointer("/" + escape_json_pointer_token(key)) == Tokens{key});
    }
    CHECK(escape_json_pointer_token("vck.intel.com/copy~x") == "vck.intel.com~1copy~0x");
}
