// Specification of JSON merge patch (RFC 7386), JSON patch (RFC 6902) and Kubernetes'
// strategic merge patch, including the RFC appendix examples.
#include <vck/sandbox/storage/patch.hpp>

#include <doctest.h>

#include <string>

namespace json = boost::json;
using namespace vck::sandbox;

namespace {

json::value J(std::string_view text) { return json::parse(text); }

// Equality that ignores object member order, so expectations read naturally.
bool same(const json::value& a, const json::value& b) { return json_equal(a, b); }

std::string patch_error(auto&& f, bool* test_failed = nullptr) {
    try {
        f();
    } catch (const PatchError& e) {
        if (test_failed) *test_failed = e.test_failed();
        return e.what();
    }
    return "<no error>";
}

} // namespace

// ---------------------------------------------------------------------------------------
// RFC 7386

TEST_CASE("a merge patch reproduces every example of RFC 7386 appendix A") {
    struct Case {
        const char* target;
        const char* patch;
        const char* result;
    };
    const Case cases[] = {
        {R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})"},
        {R"({"a":"b"})", R"({"b":"c"})", R"({"a":"b","b":"c"})"},
        {R"({"a":"b"})", R"({"a":null})", R"({})"},
        {R"({"a":"b","b":"c"})", R"({"a":null})", R"({"b":"c"})"},
        {R"({"a":["b"]})", R"({"a":"c"})", R"({"a":"c"})"},
        {R"({"a":"c"})", R"({"a":["b"]})", R"({"a":["b"]})"},
        {R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})", R"({"a":{"b":"d"}})"},
        {R"({"a":[{"b":"c"}]})", R"({"a":[1]})", R"({"a":[1]})"},
        {R"(["a","b"])", R"(["c","d"])", R"(["c","d"])"},
        {R"({"a":"b"})", R"(["c"])", R"(["c"])"},
        {R"({"a":"foo"})", R"(null)", R"(null)"},
        {R"({"a":"foo"})", R"("bar")", R"("bar")"},
        {R"({"e":null})", R"({"a":1})", R"({"e":null,"a":1})"},
        {R"([1,2])", R"({"a":"b","c":null})", R"({"a":"b"})"},
        {R"({})", R"({"a":{"bb":{"ccc":null}}})", R"({"a":{"bb":{}}})"},
    };
    for (const auto& c : cases) {
        INFO("target ", c.target, " patch ", c.patch);
        CHECK(same(apply_merge_patch(J(c.target), J(c.patch)), J(c.result)));
    }
}

TEST_CASE("a merge patch with null removes the key and leaves its siblings") {
    auto out = apply_merge_patch(J(R"({"metadata":{"labels":{"a":"1","b":"2"}}})"),
                                 J(R"({"metadata":{"labels":{"a":null}}})"));
    CHECK(same(out, J(R"({"metadata":{"labels":{"b":"2"}}})")));
}

TEST_CASE("create_merge_patch yields the smallest patch that turns one document into the other") {
    auto from = J(R"({"a":1,"b":{"c":2,"d":3},"e":[1,2],"f":"same"})");
    auto to = J(R"({"a":1,"b":{"c":5},"e":[1],"g":true,"f":"same"})");
    auto patch = create_merge_patch(from, to);
    CHECK(same(patch, J(R"({"b":{"c":5,"d":null},"e":[1],"g":true})")));
    CHECK(same(apply_merge_patch(from, patch), to));
    CHECK(same(create_merge_patch(to, to), J("{}")));
    CHECK(same(create_merge_patch(J("[1]"), J(R"({"a":1})")), J(R"({"a":1})")));
}

// ---------------------------------------------------------------------------------------
// RFC 6902

TEST_CASE("a json patch reproduces the successful examples of RFC 6902 appendix A") {
    struct Case {
        const char* name;
        const char* doc;
        const char* patch;
        const char* result;
    };
    const Case cases[] = {
        {"A.1 add an object member", R"({"foo":"bar"})", R"([{"op":"add","path":"/baz","value":"qux"}])",
         R"({"baz":"qux","foo":"bar"})"},
        {"A.2 add an array element", R"({"foo":["bar","baz"]})", R"([{"op":"add","path":"/foo/1","value":"qux"}])",
         R"({"foo":["bar","qux","baz"]})"},
        {"A.3 remove an object member", R"({"baz":"qux","foo":"bar"})", R"([{"op":"remove","path":"/baz"}])",
         R"({"foo":"bar"})"},
        {"A.4 remove an array element", R"({"foo":["bar","qux","baz"]})", R"([{"op":"remove","path":"/foo/1"}])",
         R"({"foo":["bar","baz"]})"},
        {"A.5 replace a value", R"({"baz":"qux","foo":"bar"})", R"([{"op":"replace","path":"/baz","value":"boo"}])",
         R"({"baz":"boo","foo":"bar"})"},
        {"A.6 move a value", R"({"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}})",
         R"([{"op":"move","from":"/foo/waldo","path":"/qux/thud"}])",
         R"({"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}})"},
        {"A.7 move an array element", R"({"foo":["all","grass","cows","eat"]})",
         R"([{"op":"move","from":"/foo/1","path":"/foo/3"}])", R"({"foo":["all","cows","eat","grass"]})"},
        {"A.8 test a value: success", R"({"baz":"qux","foo":["a",2,"c"]})",
         R"([{"op":"test","path":"/baz","value":"qux"},{"op":"test","path":"/foo/1","value":2}])",
         R"({"baz":"qux","foo":["a",2,"c"]})"},
        {"A.10 add a nested member object", R"({"foo":"bar"})",
         R"([{"op":"add","path":"/child","value":{"grandchild":{}}}])", R"({"foo":"bar","child":{"grandchild":{}}})"},
        {"A.11 ignore unrecognized elements", R"({"foo":"bar"})",
         R"([{"op":"add","path":"/baz","value":"qux","xyz":123}])", R"({"foo":"bar","baz":"qux"})"},
        {"A.14 ~ escape ordering", R"({"/":9,"~1":10})", R"([{"op":"test","path":"/~01","value":10}])",
         R"({"/":9,"~1":10})"},
        {"A.16 add an array value", R"({"foo":["bar"]})", R"([{"op":"add","path":"/foo/-","value":["abc","def"]}])",
         R"({"foo":["bar",["abc","def"]]})"},
    };
    for (const auto& c : cases) {
        INFO(c.name);
        CHECK(same(apply_json_patch(J(c.doc), J(c.patch)), J(c.result)));
    }
}

TEST_CASE("a failing json patch test reports test_failed, per RFC 6902 A.9 and A.15") {
    bool test_failed = false;
    auto msg = patch_error([&] { apply_json_patch(J(R"({"baz":"qux"})"), J(R"([{"op":"test","path":"/baz","value":"bar"}])")); },
                           &test_failed);
    CHECK(test_failed);
    CHECK(msg == R"(json patch operation 0 (test "/baz"): test failed: value is "qux", expected "bar")");

    test_failed = false;
    patch_error([&] { apply_json_patch(J(R"({"/":9,"~1":10})"), J(R"([{"op":"test","path":"/~01","value":"10"}])")); },
                &test_failed);
    CHECK(test_failed);
}

TEST_CASE("adding below a missing parent fails, per RFC 6902 A.12") {
    bool test_failed = true;
    auto msg = patch_error([&] { apply_json_patch(J(R"({"foo":"bar"})"), J(R"([{"op":"add","path":"/baz/bat","value":"qux"}])")); },
                           &test_failed);
    CHECK_FALSE(test_failed);
    CHECK(msg == R"(json patch operation 0 (add "/baz/bat"): the parent of the target does not exist: key "baz" not found)");
}

TEST_CASE("json patch errors name the operation index and its path") {
    auto doc = J(R"({"a":{"b":[1,2]}})");
    CHECK(patch_error([&] {
              apply_json_patch(doc, J(R"([{"op":"test","path":"/a/b/0","value":1},{"op":"remove","path":"/a/c"}])"));
          }) == R"(json patch operation 1 (remove "/a/c"): path not found: key "c" not found)");
    CHECK(patch_error([&] { apply_json_patch(doc, J(R"([{"op":"replace","path":"/a/b/5","value":0}])")); }) ==
          R"(json patch operation 0 (replace "/a/b/5"): path not found: index 5 is out of range for an array of 2)");
    CHECK(patch_error([&] { apply_json_patch(doc, J(R"([{"op":"add","path":"/a/b/3","value":0}])")); }).find("out of range") !=
          std::string::npos);
    CHECK(patch_error([&] { apply_json_patch(doc, J(R"([{"op":"add","path":"/a/b/01","value":0}])")); }).find("not a valid array index") !=
          std::string::npos);
    CHECK(patch_error([&] { apply_json_patch(doc, J(R"([{"op":"frob","path":"/a"}])")); }) ==
          R"(json patch operation 0 (frob "/a"): unknown operation "frob" (expected add, remove, replace, move, copy or test))");
    CHECK(patch_error([&] { apply_json_patch(doc, J(R"([{"op":"add","path":"/x"}])")); }) ==
          R"(json patch operation 0 (add "/x"): missing "value")");
    CHECK(patch_error([&] { apply_json_patch(doc, J(R"([{"op":"add","path":"a","value":1}])")); }).find("must be empty or start with '/'") !=
          std::string::npos);
    CHECK(patch_error([&] { apply_json_patch(doc, J(R"([{"op":"add","path":"/a~2","value":1}])")); }).find("'~' must be followed") !=
          std::string::npos);
    CHECK(patch_error([&] { apply_json_patch(doc, J(R"([{"path":"/a"}])")); }) == R"(json patch operation 0 (? ""): missing or non-string "op")");
    CHECK(patch_error([&] { apply_json_patch(doc, J(R"({"op":"add"})")); }) == "a json patch must be a JSON array of operations");
    CHECK(patch_error([&] { apply_json_patch(doc, J(R"([{"op":"move","from":"/a","path":"/a/b/x"}])")); }).find("into its own child") !=
          std::string::npos);
}

TEST_CASE("a failed json patch leaves the caller's document unchanged") {
    const auto doc = J(R"({"a":1})");
    CHECK_THROWS_AS(apply_json_patch(doc, J(R"([{"op":"add","path":"/b","value":2},{"op":"remove","path":"/zz"}])")),
                    PatchError);
    CHECK(same(doc, J(R"({"a":1})")));
}

TEST_CASE("json pointers unescape ~1 to / and ~0 to ~ and \"\" addresses the whole document") {
    auto out = apply_json_patch(J(R"({"a/b":{"c~d":1}})"), J(R"([{"op":"replace","path":"/a~1b/c~0d","value":2}])"));
    CHECK(same(out, J(R"({"a/b":{"c~d":2}})")));
    CHECK(same(apply_json_patch(J(R"({"a":1})"), J(R"([{"op":"replace","path":"","value":[1]}])")), J("[1]")));
    CHECK(same(apply_json_patch(J(R"({"":{"x":1}})"), J(R"([{"op":"remove","path":"/"}])")), J("{}")));
}

TEST_CASE("json patch copy duplicates a value and test compares numbers by value") {
    auto out = apply_json_patch(J(R"({"a":{"b":1},"n":2.0})"),
                                J(R"([{"op":"copy","from":"/a","path":"/c"},{"op":"test","path":"/n","value":2},
                                      {"op":"add","path":"/c/b","value":9}])"));
    CHECK(same(out, J(R"({"a":{"b":1},"c":{"b":9},"n":2.0})")));
}

// ---------------------------------------------------------------------------------------
// Strategic merge patch

namespace {

json::value a_pod() {
    return J(R"({
      "apiVersion":"v1","kind":"Pod",
      "metadata":{"name":"p","labels":{"app":"web"},"finalizers":["a","b"],
                  "ownerReferences":[{"uid":"u1","kind":"VolumeManager","name":"vm"}]},
      "spec":{
        "containers":[
          {"name":"main","image":"img:1","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],
           "ports":[{"containerPort":80,"name":"http"}],
           "volumeMounts":[{"name":"data","mountPath":"/data"}]},
          {"name":"sidecar","image":"side:1"}],
        "volumes":[{"name":"data","emptyDir":{}},{"name":"cfg","configMap":{"name":"c"}}],
        "tolerations":[{"key":"a","operator":"Exists"},{"key":"b","operator":"Exists"}],
        "nodeSelector":{"zone":"a"}},
      "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"True"},{"type":"Ready","status":"False"}]}
    })");
}

const json::value& at(const json::value& v, std::initializer_list<std::string_view> path) {
    const json::value* cur = &v;
    for (auto p : path) {
        if (cur->is_array()) cur = &cur->get_array().at(std::stoul(std::string(p)));
        else cur = &cur->get_object().at(p);
    }
    return *cur;
}

} // namespace

TEST_CASE("strategic merge: containers merge by name, keeping the ones the patch does not mention") {
    auto out = apply_strategic_merge_patch(a_pod(), J(R"({"spec":{"containers":[{"name":"main","image":"img:2"}]}})"), "Pod");
    const auto& cs = at(out, {"spec", "containers"}).get_array();
    REQUIRE(cs.size() == 2);
    CHECK(cs[0].at("image") == "img:2");
    CHECK(cs[0].at("env").get_array().size() == 2);
    CHECK(cs[1].at("name") == "sidecar");
}

TEST_CASE("strategic merge: a container with a new name is appended") {
    auto out = apply_strategic_merge_patch(a_pod(), J(R"({"spec":{"containers":[{"name":"extra","image":"x"}]}})"), "Pod");
    const auto& cs = at(out, {"spec", "containers"}).get_array();
    REQUIRE(cs.size() == 3);
    CHECK(cs[2].at("name") == "extra");
}

TEST_CASE("strategic merge: env merges by name, ports by containerPort, volumeMounts by mountPath") {
    auto out = apply_strategic_merge_patch(a_pod(), J(R"({"spec":{"containers":[{"name":"main",
        "env":[{"name":"B","value":"20"},{"name":"C","value":"3"}],
        "ports":[{"containerPort":80,"protocol":"TCP"},{"containerPort":443}],
        "volumeMounts":[{"mountPath":"/data","readOnly":true}]}]}})"), "Pod");
    const auto& main = at(out, {"spec", "containers", "0"});
    CHECK(same(main.at("env"), J(R"([{"name":"A","value":"1"},{"name":"B","value":"20"},{"name":"C","value":"3"}])")));
    CHECK(same(main.at("ports"), J(R"([{"containerPort":80,"name":"http","protocol":"TCP"},{"containerPort":443}])")));
    CHECK(same(main.at("volumeMounts"), J(R"([{"name":"data","mountPath":"/data","readOnly":true}])")));
}

TEST_CASE("strategic merge: $patch delete in a list item removes the element with that key") {
    auto out = apply_strategic_merge_patch(
        a_pod(), J(R"({"spec":{"containers":[{"name":"sidecar","$patch":"delete"}],
                                "volumes":[{"name":"cfg","$patch":"delete"}]}})"), "Pod");
    CHECK(at(out, {"spec", "containers"}).get_array().size() == 1);
    CHECK(same(at(out, {"spec", "volumes"}), J(R"([{"name":"data","emptyDir":{}}])")));
}

TEST_CASE("strategic merge: a {$patch: replace} list item replaces the whole list") {
    auto out = apply_strategic_merge_patch(
        a_pod(), J(R"({"spec":{"containers":[{"name":"only","image":"o"},{"$patch":"replace"}]}})"), "Pod");
    CHECK(same(at(out, {"spec", "containers"}), J(R"([{"name":"only","image":"o"}])")));
}

TEST_CASE("strategic merge: lists without a patch strategy, like tolerations, are replaced whole") {
    auto out = apply_strategic_merge_patch(a_pod(), J(R"({"spec":{"tolerations":[{"key":"c","operator":"Exists"}]}})"), "Pod");
    CHECK(same(at(out, {"spec", "tolerations"}), J(R"([{"key":"c","operator":"Exists"}])")));
}

TEST_CASE("strategic merge: status conditions merge by type") {
    auto out = apply_strategic_merge_patch(
        a_pod(), J(R"({"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"},{"type":"Initialized","status":"True"}]}})"),
        "Pod");
    CHECK(at(out, {"status", "phase"}) == "Running");
    CHECK(same(at(out, {"status", "conditions"}),
               J(R"([{"type":"PodScheduled","status":"True"},{"type":"Ready","status":"True"},{"type":"Initialized","status":"True"}])")));
}

TEST_CASE("strategic merge: finalizers merge as a set and $deleteFromPrimitiveList removes values") {
    auto out = apply_strategic_merge_patch(a_pod(), J(R"({"metadata":{"finalizers":["b","c"]}})"), "Pod");
    CHECK(same(at(out, {"metadata", "finalizers"}), J(R"(["a","b","c"])")));
    out = apply_strategic_merge_patch(out, J(R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["a","zz"]}})"), "Pod");
    CHECK(same(at(out, {"metadata", "finalizers"}), J(R"(["b","c"])")));
}

TEST_CASE("strategic merge: ownerReferences merge by uid") {
    auto out = apply_strategic_merge_patch(
        a_pod(), J(R"({"metadata":{"ownerReferences":[{"uid":"u1","controller":true},{"uid":"u2","kind":"X","name":"x"}]}})"), "Pod");
    CHECK(same(at(out, {"metadata", "ownerReferences"}),
               J(R"([{"uid":"u1","kind":"VolumeManager","name":"vm","controller":true},{"uid":"u2","kind":"X","name":"x"}])")));
}

TEST_CASE("strategic merge: a null value deletes the key, maps merge recursively") {
    auto out = apply_strategic_merge_patch(
        a_pod(), J(R"({"metadata":{"labels":{"app":null,"tier":"x"}},"spec":{"nodeSelector":null}})"), "Pod");
    CHECK(same(at(out, {"metadata", "labels"}), J(R"({"tier":"x"})")));
    CHECK_FALSE(at(out, {"spec"}).get_object().contains("nodeSelector"));
    CHECK(at(out, {"metadata", "name"}) == "p");
}

TEST_CASE("strategic merge: $patch replace on a map replaces it and $patch delete removes it") {
    auto out = apply_strategic_merge_patch(
        a_pod(), J(R"({"metadata":{"labels":{"$patch":"replace","only":"me"}},"spec":{"nodeSelector":{"$patch":"delete"}}})"), "Pod");
    CHECK(same(at(out, {"metadata", "labels"}), J(R"({"only":"me"})")));
    CHECK_FALSE(at(out, {"spec"}).get_object().contains("nodeSelector"));
    CHECK(same(apply_strategic_merge_patch(a_pod(), J(R"({"$patch":"delete"})"), "Pod"), J("{}")));
}

TEST_CASE("strategic merge: $retainKeys drops the fields it does not list") {
    auto out = apply_strategic_merge_patch(
        a_pod(), J(R"({"spec":{"volumes":[{"name":"data","$retainKeys":["name","hostPath"],"hostPath":{"path":"/h"}}]}})"), "Pod");
    CHECK(same(at(out, {"spec", "volumes", "0"}), J(R"({"name":"data","hostPath":{"path":"/h"}})")));
    CHECK(patch_error([] {
              apply_strategic_merge_patch(a_pod(), J(R"({"spec":{"$retainKeys":["containers"],"volumes":[]}})"), "Pod");
          }).find("\"volumes\" is set but missing from \"$retainKeys\"") != std::string::npos);
}

TEST_CASE("strategic merge: $setElementOrder is accepted and leaves no trace") {
    auto out = apply_strategic_merge_patch(
        a_pod(), J(R"({"spec":{"$setElementOrder/containers":[{"name":"sidecar"},{"name":"main"}],
                                "containers":[{"name":"main","image":"img:3"}]}})"), "Pod");
    CHECK(at(out, {"spec", "containers", "0", "image"}) == "img:3");
    CHECK_FALSE(at(out, {"spec"}).get_object().contains("$setElementOrder/containers"));
}

TEST_CASE("strategic merge: directives inside values that are new to the object are stripped") {
    auto out = apply_strategic_merge_patch(
        J(R"({"metadata":{"name":"p"}})"),
        J(R"({"spec":{"containers":[{"name":"a","env":[{"name":"X","value":"1"},{"name":"Y","$patch":"delete"}]}],
                      "affinity":{"$patch":"replace","nodeAffinity":{}}}})"), "Pod");
    CHECK(same(at(out, {"spec"}), J(R"({"containers":[{"name":"a","env":[{"name":"X","value":"1"}]}],"affinity":{"nodeAffinity":{}}})")));
}

TEST_CASE("strategic merge: Node addresses and conditions merge by type, taints are atomic, podCIDRs a set") {
    auto node = J(R"({"kind":"Node","spec":{"taints":[{"key":"a","effect":"NoSchedule"}],"podCIDRs":["10.0.0.0/24"]},
        "status":{"addresses":[{"type":"InternalIP","address":"1.1.1.1"},{"type":"Hostname","address":"n1"}],
                  "conditions":[{"type":"Ready","status":"False"}]}})");
    auto out = apply_strategic_merge_patch(node, J(R"({"spec":{"taints":[{"key":"b","effect":"NoExecute"}],"podCIDRs":["fd00::/64"]},
        "status":{"addresses":[{"type":"InternalIP","address":"2.2.2.2"}],"conditions":[{"type":"Ready","status":"True"}]}})"), "Node");
    CHECK(same(at(out, {"spec", "taints"}), J(R"([{"key":"b","effect":"NoExecute"}])")));
    CHECK(same(at(out, {"spec", "podCIDRs"}), J(R"(["10.0.0.0/24","fd00::/64"])")));
    CHECK(same(at(out, {"status", "addresses"}),
               J(R"([{"type":"InternalIP","address":"2.2.2.2"},{"type":"Hostname","address":"n1"}])")));
    CHECK(same(at(out, {"status", "conditions"}), J(R"([{"type":"Ready","status":"True"}])")));
}

TEST_CASE("strategic merge: Service ports merge by port") {
    auto svc = J(R"({"spec":{"ports":[{"port":80,"targetPort":8080},{"port":443}]}})");
    auto out = apply_strategic_merge_patch(svc, J(R"({"spec":{"ports":[{"port":80,"targetPort":9090}]}})"), "Service");
    CHECK(same(at(out, {"spec", "ports"}), J(R"([{"port":80,"targetPort":9090},{"port":443}])")));
}

TEST_CASE("strategic merge: a Deployment's pod template merges containers by name") {
    auto dep = J(R"({"spec":{"replicas":1,"template":{"spec":{"containers":[{"name":"a","image":"1"},{"name":"b","image":"1"}]}}}})");
    auto out = apply_strategic_merge_patch(dep, J(R"({"spec":{"template":{"spec":{"containers":[{"name":"b","image":"2"}]}}}})"),
                                           "Deployment");
    CHECK(same(at(out, {"spec", "template", "spec", "containers"}), J(R"([{"name":"a","image":"1"},{"name":"b","image":"2"}])")));
}

TEST_CASE("strategic merge: ConfigMap and Lease patch like a merge patch") {
    auto cm = J(R"({"data":{"a":"1","b":"2"},"metadata":{"name":"c"}})");
    auto out = apply_strategic_merge_patch(cm, J(R"({"data":{"a":null,"c":"3"}})"), "ConfigMap");
    CHECK(same(out, J(R"({"data":{"b":"2","c":"3"},"metadata":{"name":"c"}})")));
    auto lease = J(R"({"spec":{"holderIdentity":"x","leaseDurationSeconds":15}})");
    CHECK(same(apply_strategic_merge_patch(lease, J(R"({"spec":{"holderIdentity":"y"}})"), "Lease"),
               J(R"({"spec":{"holderIdentity":"y","leaseDurationSeconds":15}})")));
}

TEST_CASE("strategic merge: an unknown kind replaces lists like a merge patch but still strips directives") {
    auto vm = J(R"({"spec":{"volumeConfigs":[{"id":"a"},{"id":"b"}],"labels":{"x":"1"}}})");
    auto out = apply_strategic_merge_patch(vm, J(R"({"spec":{"volumeConfigs":[{"id":"c"}],"labels":{"$patch":"replace","y":"2"}}})"),
                                           "VolumeManager");
    CHECK(same(out, J(R"({"spec":{"volumeConfigs":[{"id":"c"}],"labels":{"y":"2"}}})")));
    CHECK(strategic_schema("VolumeManager") == nullptr);
    CHECK(strategic_schema("Pod") != nullptr);
}

TEST_CASE("strategic merge: malformed patches are rejected with a clear message") {
    CHECK(patch_error([] { apply_strategic_merge_patch(a_pod(), J(R"({"spec":{"containers":[{"image":"x"}]}})"), "Pod"); }) ==
          R"(map: {"image":"x"} does not contain declared merge key: name)");
    CHECK(patch_error([] { apply_strategic_merge_patch(a_pod(), J(R"({"metadata":{"$patch":"explode"}})"), "Pod"); }) ==
          R"(invalid strategic merge patch: unknown "$patch" directive "explode" (expected replace, delete or merge))");
    CHECK(patch_error([] { apply_strategic_merge_patch(a_pod(), J(R"({"$frobnicate":1})"), "Pod"); }) ==
          R"(invalid strategic merge patch: unknown directive "$frobnicate")");
    CHECK(patch_error([] { apply_strategic_merge_patch(a_pod(), J(R"([1])"), "Pod"); }) ==
          "a strategic merge patch must be a JSON object, got [1]");
    CHECK(patch_error([] { apply_strategic_merge_patch(a_pod(), J(R"({"spec":{"containers":["x"]}})"), "Pod"); })
              .find("merges by \"name\" but holds the non-object \"x\"") != std::string::npos);
    CHECK(patch_error([] { apply_strategic_merge_patch(a_pod(), J(R"({"metadata":{"$deleteFromPrimitiveList/finalizers":"a"}})"), "Pod"); })
              .find("must be a list") != std::string::npos);
}
