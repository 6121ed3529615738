// Specification of label selectors (text and metav1.LabelSelector forms) and field selectors.
#include <vck/api/label_selector.hpp>
#include <vck/sandbox/storage/field_selector.hpp>

#include <doctest.h>

#include <string>

using vck::api::LabelSelector;
using vck::api::SelectorError;
using vck::sandbox::FieldSelector;
namespace json = boost::json;

namespace {

using LabelMap = std::map<std::string, std::string>;

std::string error_of(auto&& f) {
    try {
        f();
    } catch (const SelectorError& e) {
        return e.what();
    }
    return "<no error>";
}

} // namespace

TEST_CASE("an empty label selector matches every object, labelled or not") {
    auto s = LabelSelector::parse("");
    CHECK(s.empty());
    CHECK(s.matches(LabelMap{}));
    CHECK(s.matches(LabelMap{{"a", "b"}}));
    CHECK(s.matches(static_cast<const json::object*>(nullptr)));
    CHECK(LabelSelector::parse("   ").empty());
}

TEST_CASE("equality requirements accept = and == and need the exact value") {
    for (auto text : {"app=web", "app==web", " app = web "}) {
        auto s = LabelSelector::parse(text);
        CHECK(s.matches(LabelMap{{"app", "web"}, {"x", "y"}}));
        CHECK_FALSE(s.matches(LabelMap{{"app", "db"}}));
        CHECK_FALSE(s.matches(LabelMap{}));
    }
}

TEST_CASE("a != requirement also matches objects without the label") {
    auto s = LabelSelector::parse("tier!=front");
    CHECK(s.matches(LabelMap{}));
    CHECK(s.matches(LabelMap{{"tier", "back"}}));
    CHECK_FALSE(s.matches(LabelMap{{"tier", "front"}}));
}

TEST_CASE("set requirements: in needs the label, notin accepts its absence") {
    auto in = LabelSelector::parse("env in (prod, staging)");
    CHECK(in.matches(LabelMap{{"env", "prod"}}));
    CHECK(in.matches(LabelMap{{"env", "staging"}}));
    CHECK_FALSE(in.matches(LabelMap{{"env", "dev"}}));
    CHECK_FALSE(in.matches(LabelMap{}));

    auto notin = LabelSelector::parse("env notin (dev)");
    CHECK(notin.matches(LabelMap{}));
    CHECK(notin.matches(LabelMap{{"env", "prod"}}));
    CHECK_FALSE(notin.matches(LabelMap{{"env", "dev"}}));
}

TEST_CASE("existence requirements: a bare key needs the label, !key forbids it") {
    auto s = LabelSelector::parse("managed,!legacy");
    CHECK(s.matches(LabelMap{{"managed", ""}}));
    CHECK_FALSE(s.matches(LabelMap{{"managed", "yes"}, {"legacy", "1"}}));
    CHECK_FALSE(s.matches(LabelMap{}));
}

TEST_CASE("all requirements of a selector must hold together") {
    auto s = LabelSelector::parse("a=b,c!=d,e in (x,y),f notin (z),g,!h");
    LabelMap ok{{"a", "b"}, {"c", "q"}, {"e", "y"}, {"g", ""}};
    CHECK(s.matches(ok));
    auto bad = ok;
    bad["h"] = "1";
    CHECK_FALSE(s.matches(bad));
    bad = ok;
    bad["f"] = "z";
    CHECK_FALSE(s.matches(bad));
    bad = ok;
    bad.erase("g");
    CHECK_FALSE(s.matches(bad));
}

TEST_CASE("greater-than and less-than compare label values as integers") {
    auto s = LabelSelector::parse("replicas>2,replicas<10");
    CHECK(s.matches(LabelMap{{"replicas", "5"}}));
    CHECK_FALSE(s.matches(LabelMap{{"replicas", "2"}}));
    CHECK_FALSE(s.matches(LabelMap{{"replicas", "ten"}}));
    CHECK_FALSE(s.matches(LabelMap{}));
}

TEST_CASE("an equality with nothing after = selects the empty value") {
    auto s = LabelSelector::parse("a=,b=c");
    CHECK(s.matches(LabelMap{{"a", ""}, {"b", "c"}}));
    CHECK_FALSE(s.matches(LabelMap{{"a", "x"}, {"b", "c"}}));
}

TEST_CASE("prefixed keys like app.kubernetes.io/name are valid") {
    auto s = LabelSelector::parse("app.kubernetes.io/name=vck");
    CHECK(s.matches(LabelMap{{"app.kubernetes.io/name", "vck"}}));
}

TEST_CASE("matching raw metadata.labels treats null as no labels and non-strings as absent") {
    auto s = LabelSelector::parse("a=b,!c");
    json::object labels{{"a", "b"}};
    CHECK(s.matches(&labels));
    json::object weird{{"a", "b"}, {"c", 5}};
    CHECK(s.matches(&weird));
    CHECK_FALSE(s.matches(static_cast<const json::object*>(nullptr)));
    CHECK(LabelSelector::parse("!x").matches(static_cast<const json::object*>(nullptr)));
}

TEST_CASE("to_string is canonical, sorted by key, and parses back to the same selector") {
    auto s = LabelSelector::parse("z==1, a in (y, x), !m, k, n notin (b,a), q!=r, g>3");
    CHECK(s.to_string() == "a in (x,y),g>3,k,!m,n notin (a,b),q!=r,z=1");
    CHECK(LabelSelector::parse(s.to_string()) == s);
    CHECK(LabelSelector::parse("").to_string().empty());
}

TEST_CASE("malformed label selectors are rejected with kube-apiserver's wording") {
    CHECK(error_of([] { LabelSelector::parse("a=b,"); }) ==
          "unable to parse requirement: found 'end of string', expected: !, identifier");
    CHECK(error_of([] { LabelSelector::parse("a in x"); }) == "unable to parse requirement: found 'x', expected: '('");
    CHECK(error_of([] { LabelSelector::parse("a in (x"); }).find("found 'end of string'") != std::string::npos);
    CHECK(error_of([] { LabelSelector::parse("a b"); }) ==
          "unable to parse requirement: found 'b', expected: =, !=, ==, in, notin, <, >");
    CHECK(error_of([] { LabelSelector::parse("=x"); }) ==
          "unable to parse requirement: found '=', expected: !, identifier");
    CHECK(error_of([] { LabelSelector::parse("a=b=c"); }).find("expected: ',' or 'end of string'") != std::string::npos);
    CHECK(error_of([] { LabelSelector::parse("!a=b"); }).find("found '='") != std::string::npos);
}

TEST_CASE("invalid label keys and values name the offending text") {
    auto key = error_of([] { LabelSelector::parse("-bad=x"); });
    CHECK(key.starts_with("unable to parse requirement: key: Invalid value: \"-bad\": name part must consist of"));
    auto value = error_of([] { LabelSelector::parse("a=b$"); });
    CHECK(value.starts_with("unable to parse requirement: values[0][a]: Invalid value: \"b$\": a valid label must be "
                            "an empty string or consist of"));
    CHECK(error_of([] { LabelSelector::parse("a=" + std::string(64, 'x')); }).find("no more than 63 characters") !=
          std::string::npos);
    CHECK(error_of([] { LabelSelector::parse("Bad.Prefix/a=b"); }).find("prefix part") != std::string::npos);
    CHECK(error_of([] { LabelSelector::parse("n>x"); }).find("must be a single integer") != std::string::npos);
}

TEST_CASE("a metav1.LabelSelector combines matchLabels and matchExpressions") {
    auto s = LabelSelector::from_json(json::parse(R"({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod", "staging"]},
            {"key": "legacy", "operator": "DoesNotExist"},
            {"key": "zone", "operator": "Exists"},
            {"key": "tier", "operator": "NotIn", "values": ["db"]}
        ]})"));
    CHECK(s.matches(LabelMap{{"app", "web"}, {"env", "prod"}, {"zone", "a"}}));
    CHECK_FALSE(s.matches(LabelMap{{"app", "web"}, {"env", "prod"}, {"zone", "a"}, {"tier", "db"}}));
    CHECK_FALSE(s.matches(LabelMap{{"app", "web"}, {"env", "prod"}}));
    CHECK(s.to_string() == "app=web,env in (prod,staging),!legacy,tier notin (db),zone");
}

TEST_CASE("a plain label map, like a Service's spec.selector, selects by equality on every key") {
    auto s = LabelSelector::from_set(json::object{{"app", "web"}, {"tier", "front"}});
    CHECK(s.matches(LabelMap{{"app", "web"}, {"tier", "front"}, {"x", "y"}}));
    CHECK_FALSE(s.matches(LabelMap{{"app", "web"}}));
    CHECK(s == LabelSelector::from_set(LabelMap{{"tier", "front"}, {"app", "web"}}));
    CHECK(LabelSelector::from_set(LabelMap{}).empty());
    CHECK(error_of([] { LabelSelector::from_set(json::object{{"app", 1}}); }) ==
          "invalid label selector: the value of \"app\" must be a string");
}

TEST_CASE("an empty metav1.LabelSelector matches everything and a null one matches nothing") {
    auto all = LabelSelector::from_json(json::object{});
    CHECK(all.empty());
    CHECK(all.matches(LabelMap{{"a", "b"}}));
    auto none = LabelSelector::from_json(nullptr);
    CHECK_FALSE(none.empty());
    CHECK(none.selects_nothing());
    CHECK_FALSE(none.matches(LabelMap{}));
    CHECK_FALSE(none.matches(LabelMap{{"a", "b"}}));
}

TEST_CASE("a metav1.LabelSelector with a bad operator or value set is rejected clearly") {
    CHECK(error_of([] { LabelSelector::from_json(json::parse(R"({"matchExpressions":[{"key":"a","operator":"Like"}]})")); }) ==
          "\"Like\" is not a valid label selector operator");
    CHECK(error_of([] { LabelSelector::from_json(json::parse(R"({"matchExpressions":[{"key":"a","operator":"In","values":[]}]})")); })
              .find("values set can't be empty") != std::string::npos);
    CHECK(error_of([] { LabelSelector::from_json(json::parse(R"({"matchExpressions":[{"key":"a","operator":"Exists","values":["x"]}]})")); })
              .find("values set must be empty") != std::string::npos);
    CHECK(error_of([] { LabelSelector::from_json(json::parse(R"({"matchLabels":{"a":1}})")); }) ==
          "invalid label selector: matchLabels.a must be a string");
    CHECK(error_of([] { LabelSelector::from_json(json::parse(R"({"matchExpressions":[{"operator":"Exists"}]})")); }) ==
          "invalid label selector: matchExpressions[0].key is required");
    CHECK(error_of([] { LabelSelector::from_json(json::parse(R"([1])")); }).starts_with("invalid label selector"));
}

// ---------------------------------------------------------------------------------------

namespace {

json::value pod() {
    return json::parse(R"({"metadata":{"name":"p1","namespace":"ns"},
                          "spec":{"nodeName":"n1","priority":5,"hostNetwork":true},
                          "status":{"phase":"Running"}})");
}

} // namespace

TEST_CASE("an empty field selector matches every object") {
    auto s = FieldSelector::parse("");
    CHECK(s.empty());
    CHECK(s.matches(pod()));
    CHECK(s.fields().empty());
}

TEST_CASE("field selector terms test dotted paths with =, == and !=") {
    CHECK(FieldSelector::parse("metadata.name=p1").matches(pod()));
    CHECK(FieldSelector::parse("metadata.name==p1,status.phase=Running").matches(pod()));
    CHECK_FALSE(FieldSelector::parse("metadata.name=p2").matches(pod()));
    CHECK(FieldSelector::parse("spec.nodeName!=n2").matches(pod()));
    CHECK_FALSE(FieldSelector::parse("metadata.name=p1,spec.nodeName!=n1").matches(pod()));
}

TEST_CASE("an absent field compares as the empty string") {
    CHECK(FieldSelector::parse("spec.schedulerName=").matches(pod()));
    CHECK(FieldSelector::parse("spec.schedulerName!=x").matches(pod()));
    CHECK_FALSE(FieldSelector::parse("spec.nodeName=").matches(pod()));
    CHECK(FieldSelector::parse("spec.nodeName=").matches(json::parse(R"({"spec":{}})")));
}

TEST_CASE("numbers and booleans in the object compare by their text") {
    CHECK(FieldSelector::parse("spec.priority=5,spec.hostNetwork=true").matches(pod()));
    CHECK_FALSE(FieldSelector::parse("spec.hostNetwork=false").matches(pod()));
    auto weighted = json::parse(R"({"spec":{"weight":2.0,"ratio":1.5}})");
    CHECK(FieldSelector::parse("spec.weight=2,spec.ratio=1.5").matches(weighted));
}

TEST_CASE("escaped commas, equals signs and backslashes are part of the value") {
    auto obj = json::parse(R"({"metadata":{"name":"a,b=c\\d"}})");
    auto s = FieldSelector::parse(R"(metadata.name=a\,b\=c\\d)");
    CHECK(s.terms().size() == 1);
    CHECK(s.terms()[0].value == "a,b=c\\d");
    CHECK(s.matches(obj));
    CHECK(FieldSelector::parse(s.to_string()) == s);
}

TEST_CASE("to_string() parses back equal when a field ends in '!' or a backslash (found by fuzzing)") {
    // parse() trims the blanks around a field, so "a! =v" is the field "a!" with "=": written
    // back as "a!=v" it would become the field "a" with "!="; "a\\ =v" would escape the "=".
    struct Case {
        const char* text;
        const char* field;
        bool equals;
    };
    const Case cases[] = {
        {"a! =v", "a!", true},
        {".metadata.nam!!G!! =x", ".metadata.nam!!G!!", true},
        {"a!! =v", "a!!", true},
        {"a\\ =v", "a\\", true},
        {"a\\ !=v", "a\\", false},
        {"a! !=v", "a!", false},
    };
    for (const auto& c : cases) {
        CAPTURE(c.text);
        auto s = FieldSelector::parse(c.text);
        REQUIRE(s.terms().size() == 1);
        CHECK(s.terms()[0].field == c.field);
        CHECK(s.terms()[0].equals == c.equals);
        CHECK(FieldSelector::parse(s.to_string()) == s);
    }
}

TEST_CASE("fields() lists each field name once, in order") {
    auto s = FieldSelector::parse("spec.nodeName=a,metadata.name!=b,spec.nodeName!=c");
    CHECK(s.fields() == std::vector<std::string>{"spec.nodeName", "metadata.name"});
}

TEST_CASE("malformed field selectors are rejected with a clear message") {
    CHECK(error_of([] { FieldSelector::parse("metadata.name"); }) ==
          "invalid selector: 'metadata.name'; can't understand 'metadata.name'");
    CHECK(error_of([] { FieldSelector::parse("a=b,,c=d"); }) == "invalid selector: 'a=b,,c=d'; can't understand ''");
    CHECK(error_of([] { FieldSelector::parse("=x"); }).find("missing field name") != std::string::npos);
    CHECK(error_of([] { FieldSelector::parse(R"(a=b\x)"); }).find("invalid escape sequence") != std::string::npos);
    CHECK(error_of([] { FieldSelector::parse("a=b=c"); }).find("unescaped '='") != std::string::npos);
}
