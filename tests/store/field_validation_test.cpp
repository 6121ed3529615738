// Field validation (fieldValidation=Strict|Warn|Ignore): unknown fields of custom resources
// and duplicate fields of request texts, for create, update, each patch type and dry runs,
// worded as kube-apiserver 1.32 words them.
#include "store_support.hpp"

#include <vck/testing/object_store.hpp>

#include <doctest.h>

#include <string>
#include <vector>

using namespace vck::testing;
using namespace vck::testing::store_test;
namespace json = boost::json;

namespace {

json::value crd() {
    return parse(R"({
      "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
      "metadata": {"name": "volumemanagers.vck.intelai.org"},
      "spec": {
        "group": "vck.intelai.org", "scope": "Namespaced",
        "names": {"plural": "volumemanagers", "singular": "volumemanager", "kind": "VolumeManager"},
        "versions": [{
          "name": "v1alpha1", "served": true, "storage": true, "subresources": {"status": {}},
          "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {
              "spec": {"type": "object", "properties": {
                "nodeAffinity": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "volumeConfigs": {"type": "array", "items": {"type": "object", "properties": {
                  "id": {"type": "string"}, "sourceType": {"type": "string"}}}}}},
              "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}
        }]
      }
    })");
}

/// A manifest with two typos and an unknown metadata field.
const char* typo_manifest = R"({"apiVersion": "vck.intelai.org/v1alpha1", "kind": "VolumeManager",
    "metadata": {"name": "vm1", "labelz": {"a": "b"}},
    "spec": {"nodeAfinity": {}, "volumeConfigs": [{"id": "a", "sorceType": "S3"}]}})";

WriteOptions with(FieldValidation v, std::vector<std::string>* warnings = nullptr, DryRun dry = DryRun::No) {
    WriteOptions w;
    w.dry = dry;
    w.validation = v;
    w.warnings = warnings;
    return w;
}

} // namespace

TEST_CASE("fieldValidation values: empty is Warn, the three names, anything else is refused with 422") {
    CHECK(parse_field_validation("") == FieldValidation::Warn);
    CHECK(parse_field_validation("Warn") == FieldValidation::Warn);
    CHECK(parse_field_validation("Strict") == FieldValidation::Strict);
    CHECK(parse_field_validation("Ignore") == FieldValidation::Ignore);
    CHECK_FALSE(parse_field_validation("strict"));
    CHECK_FALSE(parse_field_validation("true"));
    auto st = invalid_field_validation("CreateOptions", "strict");
    CHECK(st.code == 422);
    CHECK(st.reason == "Invalid");
    CHECK(st.message == R"(CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": )"
                        R"(supported values: "", "Ignore", "Strict", "Warn")");
}

TEST_CASE("duplicate_fields names each repeated key by its path, in text order, once") {
    struct Case {
        const char* text;
        bool json_patch;
        std::vector<std::string> errors;
    };
    const Case cases[] = {
        {R"({"a": 1, "b": 2})", false, {}},
        {R"({"a": 1, "a": 2})", false, {R"(duplicate field "a")"}},
        {R"({"a": 1, "a": 2, "a": 3})", false, {R"(duplicate field "a")"}},
        {R"({"spec": {"x": 1, "y": {"z": 1, "z": 2}, "x": 3}})", false,
         {R"(duplicate field "spec.y.z")", R"(duplicate field "spec.x")"}},
        {R"({"spec": {"list": [{"id": 1}, {"id": 2, "id": 3}]}})", false, {R"(duplicate field "spec.list[1].id")"}},
        {R"({"m": [[1], [{"k": 1, "k": 2}]], "n": {"k": 1}})", false, {R"(duplicate field "m[1][0].k")"}},
        {R"({"metadata": {"name": "a", "name": "b"}, "metadata": {}})", false,
         {R"(duplicate field "metadata.name")", R"(duplicate field "metadata")"}},
        {R"([{"op": "add", "op": "add", "path": "/a", "value": {"b": 1, "b": 2}}])", true,
         {R"(duplicate field "[0].op")", R"(duplicate field "[0].value.b")"}},
        {R"([{"op": "add", "path": "/a", "valu": 1}, {"op": "remove", "path": "/b"}])", true,
         {R"(unknown field "[0].valu")"}},
        {R"({"a": )", false, {}},  // not JSON: the parse of the body refuses it
    };
    for (const auto& c : cases) {
        CAPTURE(c.text);
        CHECK(duplicate_fields(c.text, c.json_patch) == c.errors);
    }
}

TEST_CASE("the Warning header quotes the text as the apiserver does") {
    CHECK(warning_header_value(R"(unknown field "spec.x")") == R"(299 - "unknown field \"spec.x\"")");
    CHECK(warning_header_value(R"(a\b)") == R"(299 - "a\\b")");
}

TEST_CASE("Strict create of a custom resource with unknown fields is 400 naming them, sorted") {
    ObjectStore store;
    store.create(crds, "", crd());
    for (auto dry : {DryRun::No, DryRun::All}) {
        auto st = refusal([&] { store.create(volumemanagers, "default", parse(typo_manifest), with(FieldValidation::Strict, nullptr, dry)); });
        CHECK(st.code == 400);
        CHECK(st.reason == "BadRequest");
        CHECK(st.message == R"(VolumeManager in version "v1alpha1" cannot be handled as a VolumeManager: strict decoding error: )"
                            R"(unknown field "metadata.labelz", unknown field "spec.nodeAfinity", )"
                            R"(unknown field "spec.volumeConfigs[0].sorceType")");
    }
    // The request's own errors (duplicates) come first, as the decoder reports them first.
    auto w = with(FieldValidation::Strict);
    w.body_errors = {R"(duplicate field "spec.volumeConfigs")"};
    auto st = refusal([&] { store.create(volumemanagers, "default", parse(typo_manifest), w); });
    CHECK(st.message == R"(VolumeManager in version "v1alpha1" cannot be handled as a VolumeManager: strict decoding error: )"
                        R"(duplicate field "spec.volumeConfigs", unknown field "metadata.labelz", unknown field "spec.nodeAfinity", )"
                        R"(unknown field "spec.volumeConfigs[0].sorceType")");
    // Decoding comes before every other check: a missing name is not reported.
    auto unnamed = refusal([&] {
        store.create(volumemanagers, "default", parse(R"({"metadata": {}, "spec": {"x": 1}})"), with(FieldValidation::Strict));
    });
    CHECK(unnamed.message == R"(VolumeManager in version "v1alpha1" cannot be handled as a VolumeManager: strict decoding error: unknown field "spec.x")");
    CHECK(store.list(volumemanagers, "default").at("items").as_array().empty());
}

TEST_CASE("Warn writes without the unknown fields and hands back one warning per field; Ignore says nothing") {
    ObjectStore store;
    store.create(crds, "", crd());
    std::vector<std::string> warnings;
    auto vm = store.create(volumemanagers, "default", parse(typo_manifest), with(FieldValidation::Warn, &warnings));
    CHECK(warnings == std::vector<std::string>{R"(unknown field "metadata.labelz")", R"(unknown field "spec.nodeAfinity")",
                                               R"(unknown field "spec.volumeConfigs[0].sorceType")"});
    CHECK_FALSE(vm.at("spec").as_object().contains("nodeAfinity"));
    CHECK_FALSE(vm.at("metadata").as_object().contains("labelz"));
    CHECK_FALSE(vm.at("spec").at("volumeConfigs").at(0).as_object().contains("sorceType"));

    warnings.clear();
    auto quiet = parse(typo_manifest);
    quiet.at("metadata").as_object()["name"] = "vm2";
    auto vm2 = store.create(volumemanagers, "default", quiet, with(FieldValidation::Ignore, &warnings));
    CHECK(warnings.empty());
    CHECK_FALSE(vm2.at("spec").as_object().contains("nodeAfinity"));

    // Dry run: the same warnings, nothing stored.
    auto dry = parse(typo_manifest);
    dry.at("metadata").as_object()["name"] = "vm3";
    store.create(volumemanagers, "default", dry, with(FieldValidation::Warn, &warnings, DryRun::All));
    CHECK(warnings.size() == 3);
    CHECK(refusal([&] { store.get(volumemanagers, "default", "vm3"); }).code == 404);

    // Fields the schema keeps (preserve-unknown-fields) are no unknown fields.
    warnings.clear();
    store.create(volumemanagers, "default",
                 parse(R"({"metadata": {"name": "vm4"}, "spec": {"nodeAffinity": {"anything": 1}}})"),
                 with(FieldValidation::Strict, &warnings));
    CHECK(warnings.empty());
}

TEST_CASE("Strict and Warn on update, status included") {
    ObjectStore store;
    store.create(crds, "", crd());
    auto vm = store.create(volumemanagers, "default", parse(R"({"metadata": {"name": "vm1"}, "spec": {}})"));
    auto body = vm;
    body.at("spec").as_object()["nodeAfinity"] = json::object();
    auto st = refusal([&] { store.update(volumemanagers, "default", "vm1", body, "", with(FieldValidation::Strict)); });
    CHECK(st.code == 400);
    CHECK(st.message == R"(VolumeManager in version "v1alpha1" cannot be handled as a VolumeManager: strict decoding error: unknown field "spec.nodeAfinity")");
    std::vector<std::string> warnings;
    auto out = store.update(volumemanagers, "default", "vm1", body, "status", with(FieldValidation::Warn, &warnings));
    CHECK(warnings == std::vector<std::string>{R"(unknown field "spec.nodeAfinity")"});
    CHECK_FALSE(out.at("spec").as_object().contains("nodeAfinity"));
}

TEST_CASE("Strict patches are 422 naming the patched object; Warn patches warn, for merge and JSON patches") {
    ObjectStore store;
    store.create(crds, "", crd());
    store.create(volumemanagers, "default", parse(R"({"metadata": {"name": "vm1"}, "spec": {}})"));
    const auto before = store.get(volumemanagers, "default", "vm1");

    auto st = refusal([&] {
        store.patch(volumemanagers, "default", "vm1", PatchType::Merge, parse(R"({"spec": {"b": "<1>", "a": 1}})"), "",
                    with(FieldValidation::Strict));
    });
    CHECK(st.code == 422);
    CHECK(st.reason == "Invalid");
    auto patched = before;
    patched.at("spec").as_object()["b"] = "<1>";
    patched.at("spec").as_object()["a"] = 1;
    const std::string strict = R"(strict decoding error: unknown field "spec.a", unknown field "spec.b")";
    CHECK(st.message == R"( "" is invalid: patch: Invalid value: )" + go::quote(go_json(patched)) + ": " + strict);
    CHECK(go_json(patched).find(R"("spec":{"a":1,"b":"\u003c1\u003e"})") != std::string::npos);
    REQUIRE(st.details);
    REQUIRE(st.details->causes.size() == 1);
    CHECK(st.details->causes[0].field == "patch");

    // The patch's own errors (here a duplicate the front end found) come first.
    auto w = with(FieldValidation::Strict);
    w.body_errors = {R"(json patch duplicate field "[0].op")"};
    auto json_patch = parse(R"([{"op": "add", "path": "/spec/x", "value": 1}])");
    auto st2 = refusal([&] { store.patch(volumemanagers, "default", "vm1", PatchType::Json, json_patch, "", w); });
    CHECK(st2.message.find(R"(: strict decoding error: json patch duplicate field "[0].op", unknown field "spec.x")") !=
          std::string::npos);

    std::vector<std::string> warnings;
    auto out = store.patch(volumemanagers, "default", "vm1", PatchType::Json, json_patch, "", with(FieldValidation::Warn, &warnings));
    CHECK(warnings == std::vector<std::string>{R"(unknown field "spec.x")"});
    CHECK_FALSE(out.at("spec").as_object().contains("x"));

    warnings.clear();
    store.patch(volumemanagers, "default", "vm1", PatchType::Merge, parse(R"({"spec": {"y": 1}})"), "",
                with(FieldValidation::Warn, &warnings, DryRun::All));
    CHECK(warnings == std::vector<std::string>{R"(unknown field "spec.y")"});
}

TEST_CASE("a strategic merge patch refused under Strict is named by the patch, as Go prints it (%+v)") {
    CHECK(go_value_v(parse(R"({"b": [1, "x", null, true, 1.5], "a": {"c": "d"}})")) == "map[a:map[c:d] b:[1 x <nil> true 1.5]]");
    ObjectStore store;
    store.create(configmaps, "default", parse(R"({"metadata": {"name": "c"}, "data": {"a": "1"}})"));
    auto w = with(FieldValidation::Strict);
    w.body_errors = {R"(duplicate field "data.a")"};
    auto st = refusal([&] {
        store.patch(configmaps, "default", "c", PatchType::Strategic, parse(R"({"data": {"a": "2"}})"), "", w);
    });
    CHECK(st.code == 422);
    CHECK(st.message == R"( "" is invalid: patch: Invalid value: "map[data:map[a:2]]": strict decoding error: duplicate field "data.a")");
    std::vector<std::string> warnings;
    w = with(FieldValidation::Warn, &warnings);
    w.body_errors = {R"(duplicate field "data.a")"};
    auto cm = store.patch(configmaps, "default", "c", PatchType::Strategic, parse(R"({"data": {"a": "2"}})"), "", w);
    CHECK(cm.at("data").at("a") == "2");
    CHECK(warnings == std::vector<std::string>{R"(duplicate field "data.a")"});
}

TEST_CASE("built-in kinds: the request's duplicate fields count, their unknown fields are kept (no schema yet)") {
    ObjectStore store;
    auto w = with(FieldValidation::Strict);
    w.body_errors = {R"(duplicate field "data.a")"};
    auto st = refusal([&] {
        store.create(configmaps, "default", parse(R"({"metadata": {"name": "c"}, "data": {"a": "1"}})"), w);
    });
    CHECK(st.code == 400);
    CHECK(st.message == R"(ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data.a")");
    auto cm = store.create(configmaps, "default", parse(R"({"metadata": {"name": "c"}, "datta": {}})"), with(FieldValidation::Strict));
    CHECK(cm.as_object().contains("datta"));
}
