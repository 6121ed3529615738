// Specification of StructuralSchema::validate: which values a CRD schema rejects and the exact
// words kube-apiserver uses for each rejection.
#include "schema_support.hpp"

#include <vck/sandbox/validation/crd_schema.hpp>

#include <doctest.h>

#include <string>
#include <vector>

namespace json = boost::json;
using vck::sandbox::FieldError;
using vck::sandbox::StructuralSchema;
using vck::test::schema_of;

namespace {

/// A root schema whose spec has the given properties.
StructuralSchema spec_schema(std::string_view spec_properties, std::string_view spec_extra = "") {
    std::string text = R"({"type":"object","properties":{"spec":{"type":"object",)";
    if (!spec_extra.empty()) text += std::string(spec_extra) + ",";
    text += R"("properties":)" + std::string(spec_properties) + "}}}";
    return schema_of(text);
}

std::vector<FieldError> errors_for(const StructuralSchema& s, std::string_view spec) {
    std::string text = R"({"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"t"},"spec":)" +
                       std::string(spec) + "}";
    return s.validate(json::parse(text));
}

std::vector<std::string> messages(const std::vector<FieldError>& errs) {
    std::vector<std::string> out;
    for (const auto& e : errs) out.push_back(e.message);
    return out;
}

} // namespace

TEST_CASE("a value of the wrong type is reported with its JSON type name") {
    auto s = spec_schema(R"({"replicas":{"type":"integer"}})");
    auto errs = errors_for(s, R"({"replicas":"three"})");
    REQUIRE(errs.size() == 1);
    CHECK(errs[0].reason == "FieldValueTypeInvalid");
    CHECK(errs[0].field == "spec.replicas");
    CHECK(errs[0].message ==
          R"(spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string")");
    CHECK(errs[0].body() == R"(Invalid value: "string": spec.replicas in body must be of type integer: "string")");
}

TEST_CASE("a valid object has no errors") {
    auto s = spec_schema(R"({"replicas":{"type":"integer","minimum":1},"name":{"type":"string"}})");
    CHECK(errors_for(s, R"({"replicas":2,"name":"x"})").empty());
}

TEST_CASE("each JSON type is checked: object, array, string, integer, number, boolean") {
    auto s = spec_schema(R"({"o":{"type":"object"},"a":{"type":"array","items":{"type":"string"}},
        "s":{"type":"string"},"i":{"type":"integer"},"n":{"type":"number"},"b":{"type":"boolean"}})");
    CHECK(errors_for(s, R"({"o":{},"a":[],"s":"","i":1,"n":1.5,"b":true})").empty());
    auto errs = errors_for(s, R"({"o":[],"a":{},"s":1,"i":1.5,"n":"x","b":"true"})");
    CHECK(messages(errs) == std::vector<std::string>{
        R"(spec.a: Invalid value: "object": spec.a in body must be of type array: "object")",
        R"(spec.b: Invalid value: "string": spec.b in body must be of type boolean: "string")",
        R"(spec.i: Invalid value: "number": spec.i in body must be of type integer: "number")",
        R"(spec.n: Invalid value: "string": spec.n in body must be of type number: "string")",
        R"(spec.o: Invalid value: "array": spec.o in body must be of type object: "array")",
        R"(spec.s: Invalid value: "integer": spec.s in body must be of type string: "integer")",
    });
}

TEST_CASE("an integer is a number and a whole float is an integer") {
    auto s = spec_schema(R"({"i":{"type":"integer"},"n":{"type":"number"}})");
    CHECK(errors_for(s, R"({"i":2.0,"n":3})").empty());
}

TEST_CASE("a missing required field is a Required value error at its path") {
    auto s = spec_schema(R"({"a":{"type":"string"},"b":{"type":"string"}})", R"("required":["b","a"])");
    auto errs = errors_for(s, R"({})");
    REQUIRE(errs.size() == 2);
    CHECK(errs[0].message == "spec.b: Required value");
    CHECK(errs[0].reason == "FieldValueRequired");
    CHECK(errs[0].field == "spec.b");
    CHECK(errs[1].message == "spec.a: Required value");
}

TEST_CASE("a required field at the root is named without a leading dot") {
    auto s = schema_of(R"({"type":"object","required":["spec"],"properties":{"spec":{"type":"object"}}})");
    auto errs = s.validate(json::parse(R"({"apiVersion":"a/v1","kind":"K","metadata":{}})"));
    REQUIRE(errs.size() == 1);
    CHECK(errs[0].message == "spec: Required value");
}

TEST_CASE("a value outside an enum lists the supported values") {
    auto s = spec_schema(R"({"state":{"type":"string","enum":["Pending","Running"]},
                             "level":{"type":"integer","enum":[1,2]}})");
    auto errs = errors_for(s, R"({"state":"Bogus","level":3})");
    CHECK(messages(errs) == std::vector<std::string>{
        R"(spec.level: Unsupported value: 3: supported values: "1", "2")",
        R"(spec.state: Unsupported value: "Bogus": supported values: "Pending", "Running")",
    });
    CHECK(errs[1].reason == "FieldValueNotSupported");
    CHECK(errors_for(s, R"({"state":"Running","level":2})").empty());
}

TEST_CASE("minimum and maximum, inclusive and exclusive, print the bound as Go does") {
    auto s = spec_schema(R"({"a":{"type":"integer","minimum":1},"b":{"type":"integer","maximum":10},
        "c":{"type":"number","minimum":0.5,"exclusiveMinimum":true},
        "d":{"type":"integer","maximum":1000000,"exclusiveMaximum":true}})");
    auto errs = errors_for(s, R"({"a":0,"b":11,"c":0.5,"d":1000000})");
    CHECK(messages(errs) == std::vector<std::string>{
        "spec.a: Invalid value: 0: spec.a in body should be greater than or equal to 1",
        "spec.b: Invalid value: 11: spec.b in body should be less than or equal to 10",
        "spec.c: Invalid value: 0.5: spec.c in body should be greater than 0.5",
        "spec.d: Invalid value: 1000000: spec.d in body should be less than 1e+06",
    });
    CHECK(errs[0].reason == "FieldValueInvalid");
    CHECK(errors_for(s, R"({"a":1,"b":10,"c":0.6,"d":999999})").empty());
}

TEST_CASE("multipleOf rejects a number that is not a multiple") {
    auto s = spec_schema(R"({"a":{"type":"integer","multipleOf":5}})");
    CHECK(messages(errors_for(s, R"({"a":7})")) ==
          std::vector<std::string>{"spec.a: Invalid value: 7: spec.a in body should be a multiple of 5"});
    CHECK(errors_for(s, R"({"a":10})").empty());
}

TEST_CASE("maxLength is a Too long error that does not echo the value") {
    auto s = spec_schema(R"({"name":{"type":"string","maxLength":3}})");
    auto errs = errors_for(s, R"({"name":"abcd"})");
    REQUIRE(errs.size() == 1);
    CHECK(errs[0].reason == "FieldValueTooLong");
    CHECK(errs[0].message == "spec.name: Too long: may not be more than 3 bytes");
    CHECK(errors_for(s, R"({"name":"äbc"})").empty());  // lengths count characters
}

TEST_CASE("minLength is an Invalid value error that echoes the value") {
    auto s = spec_schema(R"({"name":{"type":"string","minLength":3}})");
    CHECK(messages(errors_for(s, R"({"name":"ab"})")) ==
          std::vector<std::string>{R"(spec.name: Invalid value: "ab": spec.name in body should be at least 3 chars long)"});
}

TEST_CASE("a string not matching the pattern quotes the pattern") {
    auto s = spec_schema(R"({"id":{"type":"string","pattern":"^[a-z][a-z0-9-]*$"}})");
    CHECK(messages(errors_for(s, R"({"id":"Bad_Id"})")) ==
          std::vector<std::string>{R"(spec.id: Invalid value: "Bad_Id": spec.id in body should match '^[a-z][a-z0-9-]*$')"});
    CHECK(errors_for(s, R"({"id":"good-1"})").empty());
}

TEST_CASE("an unanchored pattern matches anywhere in the string") {
    auto s = spec_schema(R"({"id":{"type":"string","pattern":"[0-9]"}})");
    CHECK(errors_for(s, R"({"id":"abc1def"})").empty());
    CHECK(errors_for(s, R"({"id":"abc"})").size() == 1);
}

TEST_CASE("string values are quoted with Go escapes in messages") {
    auto s = spec_schema(R"({"s":{"type":"string","enum":["a"]}})");
    CHECK(messages(errors_for(s, R"({"s":"line\n\"q\"\u0001é"})")) ==
          std::vector<std::string>{R"(spec.s: Unsupported value: "line\n\"q\"\x01é": supported values: "a")"});
}

TEST_CASE("minItems is Invalid with the item count and maxItems is Too many") {
    auto s = spec_schema(R"({"l":{"type":"array","items":{"type":"string"},"minItems":2},
                             "m":{"type":"array","items":{"type":"string"},"maxItems":1}})");
    auto errs = errors_for(s, R"({"l":["a"],"m":["a","b","c"]})");
    CHECK(messages(errs) == std::vector<std::string>{
        "spec.l: Invalid value: 1: spec.l in body should have at least 2 items",
        "spec.m: Too many: 3: must have at most 1 items",
    });
    CHECK(errs[1].reason == "FieldValueTooMany");
}

TEST_CASE("array items are validated with their index in the path") {
    auto s = spec_schema(R"({"l":{"type":"array","items":{"type":"object","required":["id"],
        "properties":{"id":{"type":"string"},"n":{"type":"integer","minimum":1}}}}})");
    auto errs = errors_for(s, R"({"l":[{"id":"a","n":1},{"n":0}]})");
    CHECK(messages(errs) == std::vector<std::string>{
        "spec.l[1].n: Invalid value: 0: spec.l[1].n in body should be greater than or equal to 1",
        "spec.l[1].id: Required value",
    });
}

TEST_CASE("a null value is a type error unless the field is nullable") {
    auto s = spec_schema(R"({"l":{"type":"array","items":{"type":"string"}},
                             "n":{"type":"string","nullable":true}})");
    auto errs = errors_for(s, R"({"l":["a",null],"n":null})");
    CHECK(messages(errs) == std::vector<std::string>{
        R"(spec.l[1]: Invalid value: "null": spec.l[1] in body must be of type string: "null")",
    });
}

TEST_CASE("additionalProperties with a schema validates every value of a map") {
    auto s = spec_schema(R"({"options":{"type":"object","additionalProperties":{"type":"string"}}})");
    CHECK(errors_for(s, R"({"options":{"a":"1","b":"2"}})").empty());
    CHECK(messages(errors_for(s, R"({"options":{"a":"1","b":2}})")) ==
          std::vector<std::string>{R"(spec.options.b: Invalid value: "integer": spec.options.b in body must be of type string: "integer")"});
}

TEST_CASE("additionalProperties false forbids unknown keys") {
    auto s = spec_schema(R"({"o":{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}}}})");
    CHECK(messages(errors_for(s, R"({"o":{"a":"x","zz":1}})")) ==
          std::vector<std::string>{R"(spec.o: Invalid value: "zz": spec.o.zz in body is a forbidden property)"});
}

TEST_CASE("x-kubernetes-int-or-string accepts integers and strings only") {
    auto s = spec_schema(R"({"port":{"x-kubernetes-int-or-string":true}})");
    CHECK(errors_for(s, R"({"port":8080})").empty());
    CHECK(errors_for(s, R"({"port":"http"})").empty());
    CHECK(messages(errors_for(s, R"({"port":true})")) ==
          std::vector<std::string>{R"(spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean")"});
}

TEST_CASE("x-kubernetes-preserve-unknown-fields accepts any content") {
    auto s = spec_schema(R"({"free":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
                             "any":{"x-kubernetes-preserve-unknown-fields":true}})");
    CHECK(errors_for(s, R"({"free":{"x":[1,{"y":null}]},"any":"text"})").empty());
}

TEST_CASE("a list-type set rejects a repeated item") {
    auto s = spec_schema(R"({"tags":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}}})");
    auto errs = errors_for(s, R"({"tags":["a","b","a"]})");
    REQUIRE(errs.size() == 1);
    CHECK(errs[0].reason == "FieldValueDuplicate");
    CHECK(errs[0].field == "spec.tags[2]");
    CHECK(errs[0].message == R"(spec.tags[2]: Duplicate value: "a")");
}

TEST_CASE("a list-type map rejects two items with the same keys and prints the key map") {
    auto s = spec_schema(R"({"ports":{"type":"array","x-kubernetes-list-type":"map",
        "x-kubernetes-list-map-keys":["port","protocol"],
        "items":{"type":"object","properties":{"port":{"type":"integer"},
                 "protocol":{"type":"string","default":"TCP"},"name":{"type":"string"}}}}})");
    CHECK(errors_for(s, R"({"ports":[{"port":80},{"port":80,"protocol":"UDP"}]})").empty());
    auto errs = errors_for(s, R"({"ports":[{"port":80,"name":"a"},{"port":80,"protocol":"TCP","name":"b"}]})");
    CHECK(messages(errs) == std::vector<std::string>{
        R"(spec.ports[1]: Duplicate value: map[string]interface {}{"port":80, "protocol":"TCP"})"});
}

TEST_CASE("a list-type atomic list may repeat items") {
    auto s = spec_schema(R"({"l":{"type":"array","x-kubernetes-list-type":"atomic","items":{"type":"string"}}})");
    CHECK(errors_for(s, R"({"l":["a","a"]})").empty());
}

TEST_CASE("an embedded resource needs apiVersion and kind") {
    auto s = spec_schema(R"({"template":{"type":"object","x-kubernetes-embedded-resource":true,
                                         "x-kubernetes-preserve-unknown-fields":true}})");
    CHECK(errors_for(s, R"({"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}})").empty());
    CHECK(messages(errors_for(s, R"({"template":{"kind":""}})")) == std::vector<std::string>{
        "spec.template.apiVersion: Required value: must not be empty",
        R"(spec.template.kind: Invalid value: "": must not be empty)",
    });
}

TEST_CASE("anyOf needs one matching alternative") {
    auto s = spec_schema(R"({"v":{"x-kubernetes-int-or-string":true,
                                  "anyOf":[{"type":"integer"},{"type":"string","pattern":"^[0-9]+%$"}]}})");
    CHECK(errors_for(s, R"({"v":5})").empty());
    CHECK(errors_for(s, R"({"v":"50%"})").empty());
    auto errs = errors_for(s, R"({"v":"abc"})");
    REQUIRE(!errs.empty());
    CHECK(errs[0].message == R"(<nil>: Invalid value: "": spec.v must validate at least one schema (anyOf))");
}

TEST_CASE("oneOf needs exactly one matching alternative") {
    auto s = spec_schema(R"({"v":{"type":"integer","oneOf":[{"minimum":0},{"maximum":10}]}})");
    CHECK(errors_for(s, R"({"v":20})").empty());
    auto errs = errors_for(s, R"({"v":5})");
    REQUIRE(errs.size() == 1);
    CHECK(errs[0].message ==
          R"(<nil>: Invalid value: "": spec.v must validate one and only one schema (oneOf). Found 2 valid alternatives)");
}

TEST_CASE("allOf needs every alternative and not needs none") {
    auto s = spec_schema(R"({"a":{"type":"integer","allOf":[{"minimum":0},{"maximum":10}]},
                             "b":{"type":"string","not":{"enum":["forbidden"]}}})");
    CHECK(errors_for(s, R"({"a":5,"b":"ok"})").empty());
    CHECK(messages(errors_for(s, R"({"a":11,"b":"forbidden"})")) == std::vector<std::string>{
        "spec.a: Invalid value: 11: spec.a in body should be less than or equal to 10",
        R"(<nil>: Invalid value: "": spec.a must validate all the schemas (allOf))",
        R"(<nil>: Invalid value: "": spec.b must not validate the schema (not))",
    });
}

TEST_CASE("a checked format rejects a malformed string") {
    auto s = spec_schema(R"({"id":{"type":"string","format":"uuid"},"at":{"type":"string","format":"date-time"},
                             "ip":{"type":"string","format":"ipv4"}})");
    CHECK(errors_for(s, R"({"id":"123e4567-e89b-12d3-a456-426614174000","at":"2024-01-02T03:04:05Z","ip":"10.0.0.1"})").empty());
    CHECK(messages(errors_for(s, R"({"id":"nope","at":"yesterday","ip":"10.0.0"})")) == std::vector<std::string>{
        R"(spec.at: Invalid value: "yesterday": spec.at in body must be of type date-time: "yesterday")",
        R"(spec.id: Invalid value: "nope": spec.id in body must be of type uuid: "nope")",
        R"(spec.ip: Invalid value: "10.0.0": spec.ip in body must be of type ipv4: "10.0.0")",
    });
}

TEST_CASE("metadata at the root is not validated by the schema") {
    auto s = schema_of(R"({"type":"object","properties":{"metadata":{"type":"object",
        "properties":{"name":{"type":"string","maxLength":2}}}}})");
    CHECK(s.validate(json::parse(R"({"apiVersion":"a/v1","kind":"K","metadata":{"name":"long-name"}})")).empty());
}

TEST_CASE("an object value in a message is printed with Go's %#v") {
    auto s = spec_schema(R"({"o":{"type":"object","enum":[{"a":1}]}})");
    CHECK(messages(errors_for(s, R"({"o":{"b":[1,2.5,"x",null,true],"a":{"c":1}}})")) == std::vector<std::string>{
        R"(spec.o: Unsupported value: map[string]interface {}{"a":map[string]interface {}{"c":1}, )"
        R"("b":[]interface {}{1, 2.5, "x", interface {}(nil), true}}: supported values: "{\"a\":1}")"});
}
