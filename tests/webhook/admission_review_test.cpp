// webhook/admission_review.hpp: AdmissionReview requests and responses as the API server and
// controller-runtime write them, and the errors a malformed review gets.
#include <vck/client/base64.hpp>
#include <vck/webhook/admission_review.hpp>

#include <doctest.h>

#include <string>

namespace webhook_review_test {

namespace json = boost::json;
using namespace vck::webhook;

// What kube-apiserver sends for a pod created by kubectl in namespace "team".
const char* const kPodReview = R"({
  "kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
  "request": {
    "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
    "kind": {"group": "", "version": "v1", "kind": "Pod"},
    "resource": {"group": "", "version": "v1", "resource": "pods"},
    "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
    "requestResource": {"group": "", "version": "v1", "resource": "pods"},
    "name": "web", "namespace": "team", "operation": "CREATE",
    "userInfo": {"username": "alice", "uid": "u-1", "groups": ["system:authenticated", "devs"],
                 "extra": {"scopes": ["a", "b"]}},
    "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}},
    "oldObject": null,
    "dryRun": true,
    "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
  }
})";

std::string decode_error(const std::string& text) {
    try {
        decode_request_review(std::string_view(text));
    } catch (const vck::api::DecodeError& e) {
        return e.what();
    }
    return "(decoded)";
}

TEST_CASE("a request review decodes every field the API server sends") {
    auto r = decode_request_review(std::string_view(kPodReview));
    CHECK(r.uid == "705ab4f5-6393-11e8-b7cc-42010a800002");
    CHECK(r.kind.kind == "Pod");
    CHECK(r.kind.version == "v1");
    CHECK(r.resource.resource == "pods");
    REQUIRE(r.requestKind);
    CHECK(r.requestKind->kind == "Pod");
    REQUIRE(r.requestResource);
    CHECK(r.requestResource->resource == "pods");
    CHECK(r.subResource.empty());
    CHECK(r.name == "web");
    CHECK(r.namespace_ == "team");
    CHECK(r.operation == Operation::Create);
    CHECK(r.userInfo.username == "alice");
    CHECK(r.userInfo.uid == "u-1");
    CHECK(r.userInfo.groups == std::vector<std::string>{"system:authenticated", "devs"});
    CHECK(r.userInfo.extra.at("scopes") == std::vector<std::string>{"a", "b"});
    CHECK(r.object.at("metadata").at("name") == "web");
    CHECK(r.oldObject.is_null());
    CHECK(r.dryRun);
    CHECK(r.options.at("kind") == "CreateOptions");
}

TEST_CASE("a request review survives encoding and decoding") {
    auto r = decode_request_review(std::string_view(kPodReview));
    r.operation = Operation::Update;
    r.oldObject = json::parse(R"({"metadata":{"name":"web","labels":{"a":"b"}}})");
    r.subResource = "status";
    auto again = decode_request_review(encode_request_review(r));
    CHECK(again.operation == Operation::Update);
    CHECK(again.subResource == "status");
    CHECK(again.oldObject == r.oldObject);
    CHECK(again.object == r.object);
    CHECK(again.userInfo.extra == r.userInfo.extra);
    CHECK(json::serialize(encode_request_review(again)) == json::serialize(encode_request_review(r)));
}

TEST_CASE("a malformed review is refused with an error naming what is wrong") {
    CHECK(decode_error("{") .find("invalid JSON") != std::string::npos);
    CHECK(decode_error("[]") == "expected object, got array");
    CHECK(decode_error(R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1beta1","request":{"uid":"x"}})") ==
          "apiVersion: \"admission.k8s.io/v1beta1\" is not admission.k8s.io/v1");
    CHECK(decode_error(R"({"kind":"AdmissionReview","request":{"uid":"x"}})") ==
          "apiVersion: required value missing (expected admission.k8s.io/v1)");
    CHECK(decode_error(R"({"kind":"Pod","apiVersion":"admission.k8s.io/v1"})") == "kind: \"Pod\" is not AdmissionReview");
    CHECK(decode_error(R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"})") ==
          "request: required value missing");
    CHECK(decode_error(R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"operation":"CREATE"}})") ==
          "request.uid: required value missing");
    CHECK(decode_error(R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":7}})") ==
          "request.uid: expected string, got integer");
    CHECK(decode_error(R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","operation":"PATCH"}})") ==
          "request.operation: \"PATCH\" is not one of CREATE, UPDATE, DELETE, CONNECT");
    CHECK(decode_error(R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1",
                         "request":{"uid":"x","operation":"CREATE","userInfo":{"groups":"devs"}}})") ==
          "request.userInfo.groups: expected array, got string");
    CHECK(decode_error(R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1",
                         "request":{"uid":"x","operation":"CREATE","object":"pod"}})") ==
          "request.object: expected object, got string");
    CHECK(decode_error(R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":[]})") ==
          "request: expected object, got array");
}

TEST_CASE("denied is code 403 with reason Forbidden and the message, as controller-runtime's Denied") {
    auto r = denied("replicas must be positive").with_warnings({"spec.x is deprecated"});
    r.uid = "u1";
    auto review = encode_response_review(r);
    CHECK(review.at("apiVersion") == "admission.k8s.io/v1");
    CHECK(review.at("kind") == "AdmissionReview");
    const auto& res = review.at("response");
    CHECK(res.at("uid") == "u1");
    CHECK(res.at("allowed") == false);
    CHECK(res.at("status") == json::parse(R"({"metadata":{},"message":"replicas must be positive","reason":"Forbidden","code":403})"));
    CHECK(res.at("warnings") == json::parse(R"(["spec.x is deprecated"])"));
    CHECK_FALSE(res.as_object().contains("patch"));
    CHECK_FALSE(res.as_object().contains("patchType"));
}

TEST_CASE("allowed is code 200 without a reason; errored carries the code and the error's text") {
    auto a = allowed();
    CHECK(a.allowed);
    CHECK(a.status->code == 200);
    CHECK(a.status->reason.empty());
    auto e = errored(500, std::runtime_error("database down"));
    CHECK_FALSE(e.allowed);
    CHECK(e.status->code == 500);
    CHECK(e.status->message == "database down");
    CHECK(e.status->reason.empty());
}

TEST_CASE("a response's patch goes out as base64 of the JSONPatch array with patchType JSONPatch, and comes back") {
    auto r = patched(json::parse(R"([{"op":"add","path":"/metadata/labels","value":{"a":"b"}}])").as_array());
    r.uid = "u2";
    r.auditAnnotations["mutated"] = "true";
    auto review = encode_response_review(r);
    const auto& res = review.at("response");
    CHECK(res.at("patchType") == "JSONPatch");
    auto bytes = vck::client::base64_decode(res.at("patch").as_string());
    REQUIRE(bytes);
    CHECK(json::parse(*bytes) == json::value(r.patch));
    CHECK(res.at("auditAnnotations").at("mutated") == "true");

    auto back = decode_response_review(json::serialize(review));
    CHECK(back.uid == "u2");
    CHECK(back.allowed);
    CHECK(back.patch == r.patch);
    CHECK(back.status->code == 200);
    CHECK(back.auditAnnotations == r.auditAnnotations);
}

TEST_CASE("a response whose patch is not a base64 JSON array, or not JSONPatch, is refused") {
    auto bad = [](const char* response) {
        try {
            decode_response_review(std::string(R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":)") +
                                   response + "}");
        } catch (const vck::api::DecodeError& e) {
            return std::string(e.what());
        }
        return std::string("(decoded)");
    };
    CHECK(bad(R"({"uid":"x","allowed":true,"patch":"!!!!","patchType":"JSONPatch"})") == "response.patch: not base64");
    CHECK(bad(R"({"uid":"x","allowed":true,"patch":"e30=","patchType":"JSONPatch"})") ==
          "response.patch: not a JSON array of patch operations");
    CHECK(bad(R"({"uid":"x","allowed":true,"patch":"W10=","patchType":"MergePatch"})") ==
          "response.patchType: \"MergePatch\" is not JSONPatch");
    CHECK(bad(R"({"uid":"x","allowed":"yes"})") == "response.allowed: expected boolean, got string");
}

} // namespace webhook_review_test
