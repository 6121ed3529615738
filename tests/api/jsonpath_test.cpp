// Specification of the kubectl JSONPath subset used by printer columns and -o jsonpath.
#include <vck/sandbox/server/jsonpath.hpp>

#include <doctest.h>

#include <string>

namespace json = boost::json;
using vck::sandbox::jsonpath_query;

namespace {

const json::value& doc() {
    static const json::value d = json::parse(R"({
      "kind": "List",
      "metadata": {"name": "vm", "annotations": {"app.kubernetes.io/name": "vck", "a.b": "dots"}},
      "spec": {"replicas": 3, "volumes": [{"name": "a", "size": 1}, {"name": "b", "size": 5}, {"name": "c", "size": 10}]},
      "status": {"conditions": [
          {"type": "Ready", "status": "True", "priority": 2},
          {"type": "Progressing", "status": "False", "priority": 1}]}
    })");
    return d;
}

std::string q(std::string_view expr) {
    std::string out;
    for (const auto& v : jsonpath_query(doc(), expr)) {
        if (!out.empty()) out += ' ';
        out += v.is_string() ? std::string(v.get_string()) : json::serialize(v);
    }
    return out;
}

std::string jsonpath_error(std::string_view expr) {
    try {
        jsonpath_query(doc(), expr);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "<no error>";
}

} // namespace

TEST_CASE("a dotted path selects one field, with or without braces and $") {
    CHECK(q(".metadata.name") == "vm");
    CHECK(q("{.metadata.name}") == "vm");
    CHECK(q("{$.metadata.name}") == "vm");
    CHECK(q(".spec.replicas") == "3");
    CHECK(q("{ .kind }") == "List");
}

TEST_CASE("a missing field yields no result instead of an error") {
    CHECK(jsonpath_query(doc(), ".spec.missing.deeper").empty());
    CHECK(jsonpath_query(doc(), ".spec.volumes[7]").empty());
    CHECK(jsonpath_query(doc(), ".kind.name").empty());
}

TEST_CASE("array indexes count from the start, or from the end when negative") {
    CHECK(q(".spec.volumes[0].name") == "a");
    CHECK(q(".spec.volumes[-1].name") == "c");
    CHECK(q(".spec.volumes[0,2].name") == "a c");
}

TEST_CASE("slices select a range of an array") {
    CHECK(q(".spec.volumes[0:2].name") == "a b");
    CHECK(q(".spec.volumes[1:].name") == "b c");
    CHECK(q(".spec.volumes[:-1].name") == "a b");
    CHECK(q(".spec.volumes[::2].name") == "a c");
}

TEST_CASE("wildcards select every element of an array or every value of an object") {
    CHECK(q(".spec.volumes[*].name") == "a b c");
    CHECK(q(".spec.volumes.*.size") == "1 5 10");
    CHECK(q(".spec.volumes[*].size") == "1 5 10");
    CHECK(jsonpath_query(doc(), ".metadata.annotations.*").size() == 2);
}

TEST_CASE("quoted keys in brackets may contain dots and slashes") {
    CHECK(q(".metadata.annotations['a.b']") == "dots");
    CHECK(q(R"(.metadata.annotations["app.kubernetes.io/name"])") == "vck");
}

TEST_CASE("a backslash escapes dots inside a field name, as kubectl allows") {
    CHECK(q(R"(.metadata.annotations.app\.kubernetes\.io/name)") == "vck");
    CHECK(q(R"({.metadata.annotations.a\.b})") == "dots");
    CHECK(q(R"(.metadata.annotations.app\.kubernetes)") == "");
}

TEST_CASE("a filter selects the array elements whose field equals a literal") {
    CHECK(q(R"(.status.conditions[?(@.type=="Ready")].status)") == "True");
    CHECK(q(R"({.status.conditions[?(@.type == 'Progressing')].status})") == "False");
    CHECK(q(R"(.status.conditions[?(@.type!="Ready")].type)") == "Progressing");
    CHECK(q(R"(.status.conditions[?(@.type=="Missing")].status)") == "");
}

TEST_CASE("filters compare numbers by value and can test for existence") {
    CHECK(q(".spec.volumes[?(@.size>1)].name") == "b c");
    CHECK(q(".spec.volumes[?(@.size<=5)].name") == "a b");
    CHECK(q(".spec.volumes[?(@.size==10.0)].name") == "c");
    CHECK(q(".status.conditions[?(@.priority)].type") == "Ready Progressing");
    CHECK(q(".spec.volumes[?(@.missing)].name") == "");
}

TEST_CASE("recursive descent finds a field at any depth") {
    CHECK(q("..type") == "Ready Progressing");
    CHECK(q("$..volumes[1].name") == "b");
}

TEST_CASE("several {} blocks concatenate their results") {
    CHECK(q("{.metadata.name}{.spec.replicas}") == "vm 3");
}

TEST_CASE("malformed expressions throw invalid_argument naming the position") {
    CHECK(jsonpath_error(".spec.volumes[") == "invalid JSONPath \".spec.volumes[\" at position 14: unterminated [");
    CHECK(jsonpath_error("{.metadata.name") == "invalid JSONPath \"{.metadata.name\" at position 15: missing '}'");
    CHECK(jsonpath_error(".spec.") == "invalid JSONPath \".spec.\" at position 6: expected a field name after '.'");
    CHECK(jsonpath_error(R"X(.a[?(@.type=="x"))X").find("expected ']'") != std::string::npos);
    CHECK(jsonpath_error(R"(.a[?(@.type=~"x")])").find("expected ==, !=, <, <=, > or >=") != std::string::npos);
    CHECK(jsonpath_error(R"(.a[?(@.type==x)])").find("expected a string, number") != std::string::npos);
    CHECK(jsonpath_error(".a['x]").find("unterminated string") != std::string::npos);
    CHECK(jsonpath_error("{.a} text") == "invalid JSONPath \"{.a} text\" at position 5: text outside {...} is not supported");
    CHECK(jsonpath_error("") .find("empty expression") != std::string::npos);
    CHECK(jsonpath_error(".a[::0]").find("step must not be 0") != std::string::npos);
    CHECK(jsonpath_error("{range .items[*]}{.a}{end}").find("{range}/{end} templates are not supported") != std::string::npos);
}
