// webhook/admission_handler.hpp: serving one review without a network: the bad requests and
// what they are told, handlers that throw, and the patches mutating handlers produce (raw and
// typed), each proved by applying the patch to the object the API server sent.
#include <vck/api/core_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/client/base64.hpp>
#include <vck/sandbox/storage/patch.hpp>
#include <vck/webhook/admission_handler.hpp>

#include <doctest.h>

#include <stdexcept>
#include <string>

namespace webhook_handler_test {

namespace json = boost::json;
using namespace vck::webhook;

std::string review_of(json::value object, const char* operation = "CREATE", json::value old = nullptr) {
    return json::serialize(json::value{
        {"kind", "AdmissionReview"},
        {"apiVersion", "admission.k8s.io/v1"},
        {"request",
         {{"uid", "req-1"},
          {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
          {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
          {"operation", operation},
          {"userInfo", {{"username", "alice"}}},
          {"object", std::move(object)},
          {"oldObject", std::move(old)}}}});
}

AdmissionResponse answered(const AdmissionHandler& h, const std::string& body, int want_status = 200) {
    auto a = answer_review(h, "application/json", body);
    CHECK(a.status == want_status);
    return decode_response_review(std::string_view(a.body));
}

/// The object the API server sent, patched with what the response says.
json::value patched_object(const json::value& object, const AdmissionResponse& r) {
    return vck::sandbox::apply_json_patch(object, json::value(r.patch));
}

const json::value kPod = json::parse(R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "web", "namespace": "team", "labels": {}, "managedFields": [{"manager": "kubectl"}]},
  "spec": {"containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}], "resources": {}}],
           "schedulerName": "default-scheduler", "dnsPolicy": "ClusterFirst", "nodeSelector": null}
})");

TEST_CASE("bad requests are HTTP 400 with a message saying what is wrong") {
    AdmissionHandler h = validating([](const AdmissionRequest&) { return allowed(); });
    auto message = [&](std::string_view content_type, std::string_view body) {
        auto a = answer_review(h, content_type, body);
        CHECK(a.status == 400);
        auto r = decode_response_review(std::string_view(a.body));
        CHECK_FALSE(r.allowed);
        CHECK(r.status->code == 400);
        return r.status->message;
    };
    CHECK(message("text/plain", review_of(kPod)) == "contentType=text/plain, expected application/json");
    CHECK(message("", review_of(kPod)) == "contentType=, expected application/json");
    CHECK(message("application/json", "") == "request body is empty");
    CHECK(message("application/json", "{\"kind\":").rfind("decoding the AdmissionReview: invalid JSON", 0) == 0);
    CHECK(message("application/json", R"({"kind":"AdmissionReview","apiVersion":"v1","request":{}})") ==
          "decoding the AdmissionReview: apiVersion: \"v1\" is not admission.k8s.io/v1");
    CHECK(message("application/json", R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"})") ==
          "decoding the AdmissionReview: request: required value missing");
    // Parameters and case in the media type are fine.
    CHECK(answer_review(h, "Application/JSON; charset=utf-8", review_of(kPod)).status == 200);
}

TEST_CASE("the response carries the request's uid and a 200 status when the handler gave none") {
    auto r = answered(
        [](const AdmissionRequest&) {
            AdmissionResponse bare;
            bare.allowed = true;
            return bare;
        },
        review_of(kPod));
    CHECK(r.uid == "req-1");
    CHECK(r.allowed);
    CHECK(r.status->code == 200);
}

TEST_CASE("a handler that throws is answered allowed=false with code 500 and the exception's text") {
    AdmissionHandler h = [](const AdmissionRequest&) -> AdmissionResponse { throw std::runtime_error("quota service unreachable"); };
    auto r = answered(h, review_of(kPod));
    CHECK(r.uid == "req-1");
    CHECK_FALSE(r.allowed);
    CHECK(r.status->code == 500);
    CHECK(r.status->message == "quota service unreachable");
}

TEST_CASE("a mutating handler's changes come back as a patch that gives the mutated object") {
    json::value expected;
    auto h = mutating([&](const AdmissionRequest&, json::value& obj) {
        obj.at("metadata").at("labels").as_object()["injected/by"] = "vck";
        obj.at("spec").at("containers").as_array().push_back(json::parse(R"({"name":"sidecar","image":"envoy"})"));
        obj.at("spec").as_object().erase("dnsPolicy");
        expected = obj;
        return allowed();
    });
    auto r = answered(h, review_of(kPod));
    CHECK(r.allowed);
    REQUIRE_FALSE(r.patch.empty());
    CHECK(vck::sandbox::json_equal(patched_object(kPod, r), expected));
}

TEST_CASE("a mutating handler that changes nothing sends no patch and no patchType") {
    auto h = mutating([](const AdmissionRequest&, json::value&) { return allowed(); });
    auto a = answer_review(h, "application/json", review_of(kPod));
    CHECK(json::parse(a.body).at("response").as_object().if_contains("patchType") == nullptr);
    CHECK(decode_response_review(std::string_view(a.body)).patch.empty());
}

TEST_CASE("a mutating handler that denies sends no patch even if it changed the copy") {
    auto h = mutating([](const AdmissionRequest&, json::value& obj) {
        obj.as_object()["x"] = 1;
        return denied("no");
    });
    auto r = answered(h, review_of(kPod));
    CHECK_FALSE(r.allowed);
    CHECK(r.patch.empty());
    CHECK(r.status->message == "no");
}

TEST_CASE("a typed mutating handler patches only what it changed, keeping fields the type does not model") {
    auto h = mutating_for<vck::api::Pod>([](const AdmissionRequest&, vck::api::Pod& pod) {
        pod.metadata.labels["team"] = "a";
        pod.spec.containers[0].image = "nginx:1.27";
        pod.spec.serviceAccountName = "runner";
        return allowed();
    });
    auto r = answered(h, review_of(kPod));
    INFO(json::serialize(r.patch));
    auto result = patched_object(kPod, r);
    auto want = kPod;
    want.at("metadata").at("labels").as_object()["team"] = "a";
    want.at("spec").at("containers").at(0).as_object()["image"] = "nginx:1.27";
    want.at("spec").as_object()["serviceAccountName"] = "runner";
    CHECK(vck::sandbox::json_equal(result, want));
    // Nothing about the empty "resources", the null "nodeSelector" or managedFields.
    CHECK(r.patch.size() == 3);
}

TEST_CASE("a typed mutating handler that changes a defaulted field the raw object omits adds it") {
    auto vm = json::parse(R"({"apiVersion":"vck.intelai.org/v1alpha1","kind":"VolumeManager",
        "metadata":{"name":"vm"},
        "spec":{"volumeConfigs":[{"id":"v1","sourceType":"S3","accessMode":"ReadWriteOnce","capacity":"5Gi",
                                  "options":{"sourceURL":"s3://b/p"},"futureField":{"x":1}}],"state":"Running"}})");
    auto h = mutating_for<vck::api::VolumeManager>([](const AdmissionRequest&, vck::api::VolumeManager& m) {
        m.spec.volumeConfigs[0].replicas = 2;  // 1 when absent
        m.spec.volumeConfigs[0].labels["k"] = "v";
        return allowed();
    });
    auto r = answered(h, review_of(vm));
    auto want = vm;
    want.at("spec").at("volumeConfigs").at(0).as_object()["replicas"] = 2;
    want.at("spec").at("volumeConfigs").at(0).as_object()["labels"] = json::object{{"k", "v"}};
    CHECK(vck::sandbox::json_equal(patched_object(vm, r), want));

    auto unchanged = mutating_for<vck::api::VolumeManager>([](const AdmissionRequest&, vck::api::VolumeManager&) { return allowed(); });
    CHECK(answered(unchanged, review_of(vm)).patch.empty());
}

TEST_CASE("a typed mutating handler is not called on DELETE, and an undecodable object is a 400 response") {
    bool called = false;
    auto h = mutating_for<vck::api::Pod>([&](const AdmissionRequest&, vck::api::Pod&) {
        called = true;
        return denied("no");
    });
    auto del = answered(h, review_of(nullptr, "DELETE", kPod));
    CHECK(del.allowed);
    CHECK_FALSE(called);
    auto bad = answered(h, review_of(json::parse(R"({"metadata":{"name":7}})")));
    CHECK_FALSE(bad.allowed);
    CHECK(bad.status->code == 400);
    CHECK(bad.status->message == "decoding the request's object: metadata.name: expected string, got integer");
    CHECK_FALSE(called);
}

TEST_CASE("a typed validating handler sees the object and the old object, nullptr where absent") {
    auto h = validating_for<vck::api::Pod>([](const AdmissionRequest& req, const vck::api::Pod* obj, const vck::api::Pod* old) {
        if (req.operation == Operation::Delete) {
            CHECK(obj == nullptr);
            REQUIRE(old != nullptr);
            return old->metadata.labels.contains("protected") ? denied("pod " + old->metadata.name + " is protected")
                                                               : allowed();
        }
        REQUIRE(obj != nullptr);
        if (obj->spec.containers.empty()) return denied("a pod needs a container");
        return allowed().with_warnings({"old: " + std::string(old ? old->metadata.name : "none")});
    });
    auto created = answered(h, review_of(kPod));
    CHECK(created.allowed);
    CHECK(created.warnings == std::vector<std::string>{"old: none"});
    auto updated = answered(h, review_of(kPod, "UPDATE", kPod));
    CHECK(updated.warnings == std::vector<std::string>{"old: web"});
    auto gone = json::parse(R"({"metadata":{"name":"db","labels":{"protected":"yes"}}})");
    auto deleted = answered(h, review_of(nullptr, "DELETE", gone));
    CHECK_FALSE(deleted.allowed);
    CHECK(deleted.status->code == 403);
    CHECK(deleted.status->reason == "Forbidden");
    CHECK(deleted.status->message == "pod db is protected");
}

} // namespace webhook_handler_test
