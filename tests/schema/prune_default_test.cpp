// Specification of StructuralSchema's other duties: which schemas from_json accepts, what
// prune drops, what apply_defaults fills in, the 422 Status built from field errors, and the
// whole pipeline on the VolumeManager CRD.
#include "schema_support.hpp"

#include <vck/sandbox/validation/crd_schema.hpp>

#include <doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace json = boost::json;
using vck::sandbox::FieldError;
using vck::sandbox::StructuralSchema;
using vck::test::schema_of;

namespace {

std::string rejection(std::string_view text) {
    try {
        schema_of(text);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "(accepted)";
}

// The schema of volumemanagers.vck.intelai.org/v1alpha1.
constexpr std::string_view volume_manager_schema = R"({
  "type": "object",
  "properties": {
    "apiVersion": {"type": "string"},
    "kind": {"type": "string"},
    "metadata": {"type": "object"},
    "spec": {
      "type": "object",
      "required": ["volumeConfigs"],
      "properties": {
        "state": {"type": "string", "enum": ["Pending", "Running", "Failed", "Completed"]},
        "volumeConfigs": {
          "type": "array",
          "x-kubernetes-list-type": "map",
          "x-kubernetes-list-map-keys": ["id"],
          "items": {
            "type": "object",
            "required": ["id", "replicas", "sourceType", "accessMode"],
            "properties": {
              "id": {"type": "string", "minLength": 1},
              "replicas": {"type": "integer", "minimum": 1},
              "sourceType": {"type": "string"},
              "accessMode": {"type": "string", "enum": ["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany"]},
              "capacity": {"x-kubernetes-int-or-string": true, "default": "5Gi"},
              "labels": {"type": "object", "additionalProperties": {"type": "string"}},
              "options": {"type": "object", "additionalProperties": {"type": "string"}},
              "nodeAffinity": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
              "tolerations": {"type": "array",
                              "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }
          }
        }
      }
    },
    "status": {
      "type": "object",
      "properties": {
        "state": {"type": "string"},
        "message": {"type": "string"},
        "volumes": {"type": "array", "items": {"type": "object", "properties": {
          "id": {"type": "string"},
          "message": {"type": "string"},
          "volumeSource": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
          "nodeAffinity": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}
      }
    }
  }
})";

} // namespace

// ---- from_json -------------------------------------------------------------------------

TEST_CASE("a schema whose root is not an object is rejected") {
    CHECK(rejection(R"({"type":"string"})") == "CRD schema openAPIV3Schema.type: must be object at the root");
    CHECK(rejection(R"([1])") == "CRD schema openAPIV3Schema: must be a schema object, got array");
}

TEST_CASE("a specified field without a type is rejected as not structural") {
    auto why = rejection(R"({"type":"object","properties":{"spec":{"properties":{}}}})");
    CHECK(why.find("openAPIV3Schema.properties[spec].type: must not be empty") != std::string::npos);
}

TEST_CASE("unknown types, bad patterns and malformed keywords are rejected with their path") {
    CHECK(rejection(R"({"type":"object","properties":{"a":{"type":"int"}}})").find(
              "openAPIV3Schema.properties[a].type: unsupported type \"int\"") != std::string::npos);
    CHECK(rejection(R"({"type":"object","properties":{"a":{"type":"string","pattern":"(["}}})").find(
              "openAPIV3Schema.properties[a].pattern: \"([\" is not a valid regular expression") != std::string::npos);
    CHECK(rejection(R"({"type":"object","properties":{"a":{"type":"string","maxLength":-1}}})") ==
          "CRD schema openAPIV3Schema.properties[a].maxLength: must be a non-negative integer");
    CHECK(rejection(R"({"type":"object","required":"a"})") == "CRD schema openAPIV3Schema.required: must be an array of strings");
    CHECK(rejection(R"({"type":"object","properties":{"a":{"type":"array","items":[{"type":"string"}]}}})") ==
          "CRD schema openAPIV3Schema.properties[a].items: must be a single schema, not an array of schemas");
    CHECK(rejection(R"({"type":"object","properties":{"a":{"type":"array"}}})") ==
          "CRD schema openAPIV3Schema.properties[a].items: must be specified for type array");
}

TEST_CASE("list-type map needs keys that are properties of object items") {
    CHECK(rejection(R"({"type":"object","properties":{"l":{"type":"array","x-kubernetes-list-type":"map",
        "items":{"type":"object","properties":{"id":{"type":"string"}}}}}})") ==
          "CRD schema openAPIV3Schema.properties[l].x-kubernetes-list-map-keys: must not be empty if x-kubernetes-list-type is map");
    CHECK(rejection(R"({"type":"object","properties":{"l":{"type":"array","x-kubernetes-list-type":"map",
        "x-kubernetes-list-map-keys":["name"],"items":{"type":"object","properties":{"id":{"type":"string"}}}}}})") ==
          "CRD schema openAPIV3Schema.properties[l].x-kubernetes-list-map-keys: entry \"name\" must be a property of items");
    CHECK(rejection(R"({"type":"object","properties":{"l":{"type":"string","x-kubernetes-list-type":"set"}}})") ==
          "CRD schema openAPIV3Schema.properties[l].x-kubernetes-list-type: must only be used if type is array");
}

TEST_CASE("properties and additionalProperties together are rejected") {
    CHECK(rejection(R"({"type":"object","properties":{"o":{"type":"object","properties":{"a":{"type":"string"}},
        "additionalProperties":{"type":"string"}}}})") ==
          "CRD schema openAPIV3Schema.properties[o].additionalProperties: additionalProperties and properties are mutual exclusive");
}

TEST_CASE("uniqueItems and $ref are rejected as the apiserver rejects them") {
    CHECK(rejection(R"({"type":"object","properties":{"l":{"type":"array","uniqueItems":true,"items":{"type":"string"}}}})")
              .find("uniqueItems: cannot be set to true") != std::string::npos);
    CHECK(rejection(R"({"type":"object","properties":{"a":{"$ref":"#/x"}}})").find("$ref") != std::string::npos);
}

TEST_CASE("the schema can be copied and used after the source JSON is gone") {
    StructuralSchema copy = [] {
        auto s = schema_of(R"({"type":"object","properties":{"spec":{"type":"object","required":["a"]}}})");
        return s;
    }();
    CHECK(copy.validate(json::parse(R"({"spec":{}})")).size() == 1);
}

// ---- prune -----------------------------------------------------------------------------

TEST_CASE("prune drops fields the schema does not specify") {
    auto s = schema_of(R"({"type":"object","properties":{"spec":{"type":"object","properties":{
        "a":{"type":"string"},"nested":{"type":"object","properties":{"b":{"type":"integer"}}}}}}})");
    auto obj = json::parse(R"({"spec":{"a":"x","junk":1,"nested":{"b":1,"c":2}},"extra":true})");
    // The dropped fields' paths, sorted: the apiserver's "unknown field" list.
    CHECK(s.prune(obj) == std::vector<std::string>{"extra", "spec.junk", "spec.nested.c"});
    CHECK(obj == json::parse(R"({"spec":{"a":"x","nested":{"b":1}}})"));
}

TEST_CASE("prune never drops apiVersion, kind or metadata at the root") {
    auto s = schema_of(R"({"type":"object","properties":{"spec":{"type":"object"}}})");
    auto obj = json::parse(R"({"apiVersion":"a/v1","kind":"K","metadata":{"name":"n","whatever":1},"spec":{"x":1}})");
    s.prune(obj);
    CHECK(obj == json::parse(R"({"apiVersion":"a/v1","kind":"K","metadata":{"name":"n","whatever":1},"spec":{}})"));
}

TEST_CASE("prune keeps unknown fields under x-kubernetes-preserve-unknown-fields but prunes known ones") {
    auto s = schema_of(R"({"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true,
        "properties":{"known":{"type":"object","properties":{"a":{"type":"string"}}}}}}})");
    auto obj = json::parse(R"({"spec":{"free":{"deep":[1,2]},"known":{"a":"x","b":"y"}}})");
    CHECK(s.prune(obj) == std::vector<std::string>{"spec.known.b"});
    CHECK(obj == json::parse(R"({"spec":{"free":{"deep":[1,2]},"known":{"a":"x"}}})"));
}

TEST_CASE("prune keeps every key of an additionalProperties map and prunes their values") {
    auto s = schema_of(R"({"type":"object","properties":{"m":{"type":"object","additionalProperties":
        {"type":"object","properties":{"keep":{"type":"string"}}}}}})");
    auto obj = json::parse(R"({"m":{"one":{"keep":"a","drop":1},"two":{}}})");
    CHECK(s.prune(obj) == std::vector<std::string>{"m.one.drop"});
    CHECK(obj == json::parse(R"({"m":{"one":{"keep":"a"},"two":{}}})"));
}

TEST_CASE("prune recurses into array items") {
    auto s = schema_of(R"({"type":"object","properties":{"l":{"type":"array","items":{"type":"object",
        "properties":{"id":{"type":"string"}}}}}})");
    auto obj = json::parse(R"({"l":[{"id":"a","x":1},{"y":2}]})");
    CHECK(s.prune(obj) == std::vector<std::string>{"l[0].x", "l[1].y"});
    CHECK(obj == json::parse(R"({"l":[{"id":"a"},{}]})"));
}

TEST_CASE("prune keeps apiVersion, kind and metadata of an embedded resource") {
    auto s = schema_of(R"({"type":"object","properties":{"t":{"type":"object","x-kubernetes-embedded-resource":true,
        "properties":{"spec":{"type":"object","properties":{"a":{"type":"string"}}}}}}})");
    auto obj = json::parse(R"({"t":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"a":"x","b":1},"other":1}})");
    CHECK(s.prune(obj) == std::vector<std::string>{"t.other", "t.spec.b"});
    CHECK(obj == json::parse(R"({"t":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"a":"x"}}})"));
}

TEST_CASE("prune leaves a value of the wrong type for validation to report") {
    auto s = schema_of(R"({"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string"}}}}})");
    auto obj = json::parse(R"({"spec":"not an object"})");
    s.prune(obj);
    CHECK(obj == json::parse(R"({"spec":"not an object"})"));
    CHECK(s.validate(obj).size() == 1);
}

// ---- apply_defaults --------------------------------------------------------------------

TEST_CASE("a default fills an absent field of an object that exists") {
    auto s = schema_of(R"({"type":"object","properties":{"spec":{"type":"object","properties":{
        "state":{"type":"string","default":"Pending"},"n":{"type":"integer","default":1}}}}})");
    auto obj = json::parse(R"({"spec":{"n":5}})");
    s.apply_defaults(obj);
    CHECK(obj == json::parse(R"({"spec":{"n":5,"state":"Pending"}})"));
    auto none = json::parse(R"({"apiVersion":"a/v1"})");
    s.apply_defaults(none);  // spec absent and without default: nothing is invented below it
    CHECK(none == json::parse(R"({"apiVersion":"a/v1"})"));
}

TEST_CASE("a defaulted object is itself defaulted") {
    auto s = schema_of(R"({"type":"object","properties":{"spec":{"type":"object","default":{},"properties":{
        "state":{"type":"string","default":"Pending"}}}}})");
    auto obj = json::parse(R"({"apiVersion":"a/v1"})");
    s.apply_defaults(obj);
    CHECK(obj == json::parse(R"({"apiVersion":"a/v1","spec":{"state":"Pending"}})"));
}

TEST_CASE("defaults apply inside every array item and map value") {
    auto s = schema_of(R"({"type":"object","properties":{
        "l":{"type":"array","items":{"type":"object","properties":{"r":{"type":"integer","default":1}}}},
        "m":{"type":"object","additionalProperties":{"type":"object","properties":{"on":{"type":"boolean","default":true}}}}}})");
    auto obj = json::parse(R"({"l":[{},{"r":3}],"m":{"a":{},"b":{"on":false}}})");
    s.apply_defaults(obj);
    CHECK(obj == json::parse(R"({"l":[{"r":1},{"r":3}],"m":{"a":{"on":true},"b":{"on":false}}})"));
}

TEST_CASE("a null for a non-nullable field takes the default, or is dropped when there is none") {
    auto s = schema_of(R"({"type":"object","properties":{"spec":{"type":"object","properties":{
        "d":{"type":"string","default":"x"},"n":{"type":"string"},"keep":{"type":"string","nullable":true}}}}})");
    auto obj = json::parse(R"({"spec":{"d":null,"n":null,"keep":null}})");
    s.apply_defaults(obj);
    CHECK(obj == json::parse(R"({"spec":{"d":"x","keep":null}})"));
    CHECK(s.validate(obj).empty());
}

TEST_CASE("defaults are never applied inside metadata at the root") {
    auto s = schema_of(R"({"type":"object","properties":{"metadata":{"type":"object","properties":{
        "name":{"type":"string","default":"x"}}}}})");
    auto obj = json::parse(R"({"metadata":{}})");
    s.apply_defaults(obj);
    CHECK(obj == json::parse(R"({"metadata":{}})"));
}

// ---- invalid_status --------------------------------------------------------------------

TEST_CASE("the Invalid status for several errors brackets them and lists each as a cause") {
    std::vector<FieldError> errs{
        vck::sandbox::field::not_supported("spec.state", json::string("x"), {"Pending", "Running"}),
        vck::sandbox::field::invalid("spec.volumeConfigs[0].replicas", json::value(0),
                                     "spec.volumeConfigs[0].replicas in body should be greater than or equal to 1"),
    };
    auto st = vck::sandbox::invalid_status("VolumeManager", "vck.intelai.org", "vm1", errs);
    CHECK(st.kind == "Status");
    CHECK(st.apiVersion == "v1");
    CHECK(st.status == "Failure");
    CHECK(st.reason == "Invalid");
    CHECK(st.code == 422);
    CHECK(st.message ==
          R"(VolumeManager.vck.intelai.org "vm1" is invalid: [spec.state: Unsupported value: "x": supported values: "Pending", "Running", )"
          R"(spec.volumeConfigs[0].replicas: Invalid value: 0: spec.volumeConfigs[0].replicas in body should be greater than or equal to 1])");
    REQUIRE(st.details.has_value());
    CHECK(st.details->name == "vm1");
    CHECK(st.details->group == "vck.intelai.org");
    CHECK(st.details->kind == "VolumeManager");
    REQUIRE(st.details->causes.size() == 2);
    CHECK(st.details->causes[0].reason == "FieldValueNotSupported");
    CHECK(st.details->causes[0].field == "spec.state");
    CHECK(st.details->causes[0].message == R"(Unsupported value: "x": supported values: "Pending", "Running")");
}

TEST_CASE("the Invalid status for one error has no brackets and repeats are dropped from the message") {
    std::vector<FieldError> errs{vck::sandbox::field::required("spec.a"), vck::sandbox::field::required("spec.a")};
    auto st = vck::sandbox::invalid_status("Thing", "", "t", errs);
    CHECK(st.message == R"(Thing "t" is invalid: spec.a: Required value)");
    CHECK(st.details->causes.size() == 2);
    auto body = json::serialize(vck::api::to_json(st));
    CHECK(body.find(R"("code":422)") != std::string::npos);
    CHECK(body.find(R"("causes":[{"reason":"FieldValueRequired","message":"Required value","field":"spec.a"})") !=
          std::string::npos);
}

// ---- the VolumeManager CRD end to end -----------------------------------------------------

TEST_CASE("a VolumeManager is pruned, defaulted and accepted") {
    auto s = StructuralSchema::from_json(json::parse(volume_manager_schema));
    auto vm = json::parse(R"({
      "apiVersion": "vck.intelai.org/v1alpha1", "kind": "VolumeManager",
      "metadata": {"name": "vm1", "namespace": "default"},
      "spec": {
        "state": "Pending",
        "volumeConfigs": [{
          "id": "vol1", "replicas": 2, "sourceType": "S3", "accessMode": "ReadWriteOnce",
          "labels": {"key1": "val1"},
          "options": {"sourceURL": "s3://bucket/data/", "awsCredentialsSecretName": "aws-creds"},
          "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}},
          "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
          "sourceURL": "obsolete field"
        }]
      }
    })");
    s.prune(vm);
    s.apply_defaults(vm);
    const auto& vc = vm.at("spec").at("volumeConfigs").at(0).as_object();
    CHECK_FALSE(vc.contains("sourceURL"));
    CHECK(vc.at("capacity") == "5Gi");
    CHECK(vc.at("nodeAffinity").at("requiredDuringSchedulingIgnoredDuringExecution").is_object());
    CHECK(vc.at("tolerations").at(0).at("effect") == "NoSchedule");
    CHECK(s.validate(vm).empty());
}

TEST_CASE("a bad VolumeManager gets every error the apiserver would report, in one status") {
    auto s = StructuralSchema::from_json(json::parse(volume_manager_schema));
    auto vm = json::parse(R"({
      "apiVersion": "vck.intelai.org/v1alpha1", "kind": "VolumeManager", "metadata": {"name": "vm1"},
      "spec": {
        "state": "x",
        "volumeConfigs": [
          {"id": "a", "replicas": 0, "sourceType": "NFS", "accessMode": "ReadWriteMany", "options": {"server": 1}},
          {"id": "a", "replicas": 1, "sourceType": "NFS", "accessMode": "Sometimes"},
          {"replicas": "2", "sourceType": "S3", "accessMode": "ReadWriteOnce"}
        ]
      }
    })");
    s.prune(vm);
    s.apply_defaults(vm);
    auto errs = s.validate(vm);
    std::vector<std::string> got;
    for (const auto& e : errs) got.push_back(e.message);
    CHECK(got == std::vector<std::string>{
        R"(spec.state: Unsupported value: "x": supported values: "Pending", "Running", "Failed", "Completed")",
        R"(spec.volumeConfigs[0].options.server: Invalid value: "integer": spec.volumeConfigs[0].options.server in body must be of type string: "integer")",
        R"(spec.volumeConfigs[0].replicas: Invalid value: 0: spec.volumeConfigs[0].replicas in body should be greater than or equal to 1)",
        R"(spec.volumeConfigs[1].accessMode: Unsupported value: "Sometimes": supported values: "ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany")",
        R"(spec.volumeConfigs[2].replicas: Invalid value: "string": spec.volumeConfigs[2].replicas in body must be of type integer: "string")",
        R"(spec.volumeConfigs[2].id: Required value)",
        R"(spec.volumeConfigs[1]: Duplicate value: map[string]interface {}{"id":"a"})",
    });
    auto st = vck::sandbox::invalid_status("VolumeManager", "vck.intelai.org", "vm1", errs);
    CHECK(st.details->causes.size() == 7);
    CHECK(st.details->causes[6].reason == "FieldValueDuplicate");
    CHECK(st.details->causes[6].field == "spec.volumeConfigs[1]");
    CHECK(st.message.rfind(R"(VolumeManager.vck.intelai.org "vm1" is invalid: [spec.state: Unsupported value: "x")", 0) == 0);
}

TEST_CASE("a default the schema itself rejects makes the schema unusable") {
    CHECK(rejection(R"({"type":"object","properties":{"n":{"type":"integer","minimum":1,"default":0}}})") ==
          "CRD schema openAPIV3Schema.properties[n].default: invalid default value: Invalid value: 0: default in body should be greater than or equal to 1");
    CHECK(rejection(R"({"type":"object","properties":{"s":{"type":"string","enum":["a"],"default":"a"}}})") == "(accepted)");
}

TEST_CASE("admit defaults, prunes and validates in the apiserver's order") {
    auto s = schema_of(R"({"type":"object","properties":{"spec":{"type":"object","required":["n"],"properties":{
        "n":{"type":"integer","default":1,"minimum":1},"s":{"type":"string","enum":["a","b"]}}}}})");
    auto ok = json::parse(R"({"spec":{"junk":true}})");
    CHECK(s.admit(ok).empty());
    CHECK(ok == json::parse(R"({"spec":{"n":1}})"));
    auto bad = json::parse(R"({"spec":{"s":"c"}})");
    auto errs = s.admit(bad);
    REQUIRE(errs.size() == 1);
    CHECK(errs[0].field == "spec.s");
}

TEST_CASE("from_crd takes the schema of the named version of a CustomResourceDefinition") {
    auto crd = json::parse(std::string(R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
      "metadata":{"name":"volumemanagers.vck.intelai.org"},
      "spec":{"group":"vck.intelai.org","names":{"kind":"VolumeManager","plural":"volumemanagers"},"scope":"Namespaced",
        "versions":[{"name":"v1alpha0","served":false,"storage":false},
                    {"name":"v1alpha1","served":true,"storage":true,"schema":{"openAPIV3Schema":)") +
        std::string(volume_manager_schema) + "}}]}}");
    auto s = StructuralSchema::from_crd(crd, "v1alpha1");
    auto errs = s.validate(json::parse(R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager","spec":{}})"));
    REQUIRE(errs.size() == 1);
    CHECK(errs[0].message == "spec.volumeConfigs: Required value");
    auto why = [&](std::string_view version) {
        try {
            StructuralSchema::from_crd(crd, version);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("(accepted)");
    };
    CHECK(why("v2") == R"(CustomResourceDefinition has no version "v2")");
    CHECK(why("v1alpha0") == R"(CustomResourceDefinition version "v1alpha0" has no schema.openAPIV3Schema)");
    CHECK_THROWS_AS(StructuralSchema::from_crd(json::parse("{}"), "v1"), std::invalid_argument);
}
