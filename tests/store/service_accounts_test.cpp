// Service accounts in the store: what every namespace holds (ServiceAccount default,
// ConfigMap kube-root-ca.crt), the ServiceAccount admission of pods, and TokenRequest with
// the tokens' authentication (sandbox/admission/service_accounts.hpp, service_account_tokens.hpp).
#include "store_support.hpp"

#include <vck/sandbox/auth/service_account_tokens.hpp>

#include <doctest.h>

#include <chrono>
#include <string>

using namespace vck::sandbox;
using namespace vck::sandbox::store_test;

namespace {

const ResourceId sa_accounts{"", "v1", "serviceaccounts"};
const std::string sa_ca_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

bool sa_exists(ObjectStore& store, const ResourceId& id, const std::string& ns, const std::string& name) {
    try {
        store.get(id, ns, name);
        return true;
    } catch (const StoreError& e) {
        if (e.code() != 404) throw;
        return false;
    }
}

json::value sa_pod(const std::string& name, const std::string& extra_spec = "{}") {
    auto pod = runnable(named(name));
    auto extra = parse(extra_spec);
    for (auto& kv : extra.as_object()) pod.as_object()["spec"].as_object()[kv.key()] = kv.value();
    return pod;
}

const json::value& sa_spec(const json::value& pod) { return pod.at("spec"); }

} // namespace

TEST_CASE("every namespace has the ServiceAccount default, from its creation on, and gets it back when it is deleted") {
    ObjectStore store;
    for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
        CAPTURE(ns);
        CHECK(sa_exists(store, sa_accounts, ns, "default"));
    }
    store.create(namespaces, "", named("team"));
    auto sa = store.get(sa_accounts, "team", "default");
    CHECK(sa.at("kind") == "ServiceAccount");
    // A pod created right after its namespace finds its account.
    CHECK_NOTHROW(store.create(pods, "team", runnable(named("p"))));

    auto uid = meta_of(sa, "uid");
    store.remove(sa_accounts, "team", "default");
    auto again = store.get(sa_accounts, "team", "default");
    CHECK(meta_of(again, "uid") != uid);
}

TEST_CASE("ConfigMap kube-root-ca.crt holds the CA in every namespace once the store knows it, and comes back when deleted") {
    ObjectStore store;
    CHECK_FALSE(sa_exists(store, configmaps, "default", "kube-root-ca.crt"));
    store.set_root_ca(sa_ca_pem);
    for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
        CAPTURE(ns);
        CHECK(store.get(configmaps, ns, "kube-root-ca.crt").at("data") == json::object{{"ca.crt", sa_ca_pem}});
    }
    store.create(namespaces, "", named("team"));
    CHECK(store.get(configmaps, "team", "kube-root-ca.crt").at("data").at("ca.crt") == json::value(sa_ca_pem));
    store.remove(configmaps, "team", "kube-root-ca.crt");
    CHECK(store.get(configmaps, "team", "kube-root-ca.crt").at("data").at("ca.crt") == json::value(sa_ca_pem));
    // A namespace being deleted gets nothing back.
    store.remove(namespaces, "", "team");
    CHECK_FALSE(sa_exists(store, configmaps, "team", "kube-root-ca.crt"));
    CHECK_FALSE(sa_exists(store, sa_accounts, "team", "default"));
}

TEST_CASE("a pod runs as ServiceAccount default unless it names another, and gets the projected kube-api-access volume in every container") {
    ObjectStore store;
    auto body = sa_pod("p", R"({"initContainers": [{"name": "init", "image": "busybox"}]})");
    auto pod = store.create(pods, "default", body);
    const auto& spec = sa_spec(pod);
    CHECK(spec.at("serviceAccountName") == "default");
    CHECK(spec.at("serviceAccount") == "default");
    REQUIRE(spec.at("volumes").as_array().size() == 1);
    const auto& vol = spec.at("volumes").at(0);
    std::string name(vol.at("name").as_string());
    REQUIRE(name.size() == std::string("kube-api-access-").size() + 5);
    CHECK(name.starts_with("kube-api-access-"));
    for (char c : name.substr(16)) CHECK(((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')));
    CHECK(vol.at("projected") == parse(R"({"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]})"));
    json::value mount = json::object{{"name", name}, {"readOnly", true}, {"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"}};
    CHECK(spec.at("containers").at(0).at("volumeMounts") == json::array{mount});
    CHECK(spec.at("initContainers").at(0).at("volumeMounts") == json::array{mount});

    // The deprecated serviceAccount alone names the account too.
    store.create(sa_accounts, "default", named("robot"));
    auto robot = store.create(pods, "default", sa_pod("r", R"({"serviceAccount": "robot"})"));
    CHECK(sa_spec(robot).at("serviceAccountName") == "robot");
    CHECK(sa_spec(robot).at("serviceAccount") == "robot");
}

TEST_CASE("a container that mounts something at the service-account path keeps it, and automountServiceAccountToken false on the pod or its account mounts nothing") {
    ObjectStore store;
    auto own = store.create(pods, "default", sa_pod("own", R"({
        "volumes": [{"name": "mine", "emptyDir": {}}],
        "containers": [{"name": "a", "image": "busybox", "volumeMounts": [{"name": "mine", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]},
                       {"name": "b", "image": "busybox"}]})"));
    const auto& spec = sa_spec(own);
    REQUIRE(spec.at("volumes").as_array().size() == 2);
    CHECK(spec.at("containers").at(0).at("volumeMounts").as_array().size() == 1);
    CHECK(spec.at("containers").at(1).at("volumeMounts").at(0).at("name") == spec.at("volumes").at(1).at("name"));

    auto off = store.create(pods, "default", sa_pod("off", R"({"automountServiceAccountToken": false})"));
    CHECK_FALSE(sa_spec(off).as_object().contains("volumes"));
    CHECK_FALSE(sa_spec(off).at("containers").at(0).as_object().contains("volumeMounts"));

    store.create(sa_accounts, "default", parse(R"({"metadata": {"name": "quiet"}, "automountServiceAccountToken": false})"));
    auto quiet = store.create(pods, "default", sa_pod("quiet", R"({"serviceAccountName": "quiet"})"));
    CHECK_FALSE(sa_spec(quiet).as_object().contains("volumes"));
    // The pod's own choice wins over its account's.
    auto loud = store.create(pods, "default", sa_pod("loud", R"({"serviceAccountName": "quiet", "automountServiceAccountToken": true})"));
    CHECK(sa_spec(loud).at("volumes").as_array().size() == 1);
}

TEST_CASE("a pod naming a service account that does not exist is forbidden with the admission plugin's words") {
    ObjectStore store;
    auto st = refusal([&] { store.create(pods, "default", sa_pod("p", R"({"serviceAccountName": "ghost"})")); });
    CHECK(st.code == 403);
    CHECK(st.reason == "Forbidden");
    CHECK(st.message == R"(pods "p" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found)");
    // Before its name is generated, a pod is named by its generateName.
    auto gen = runnable(parse(R"({"metadata": {"generateName": "web-"}, "spec": {"serviceAccountName": "ghost"}})"));
    auto st2 = refusal([&] { store.create(pods, "default", gen); });
    CHECK(st2.message == R"(pods "web-" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found)");
}

TEST_CASE("TokenRequest answers a token for the account with the API server's audience and an hour by default") {
    ObjectStore store;
    ServiceAccountTokens tokens;
    auto out = tokens.request(store, "default", "default", parse(R"({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest"})"));
    CHECK(out.at("kind") == "TokenRequest");
    CHECK(out.at("spec").at("audiences") == json::array{"https://kubernetes.default.svc.cluster.local"});
    CHECK(out.at("spec").at("expirationSeconds") == 3600);
    auto issued = vck::api::parse_rfc3339(std::string(out.at("metadata").at("creationTimestamp").as_string()));
    auto expires = vck::api::parse_rfc3339(std::string(out.at("status").at("expirationTimestamp").as_string()));
    REQUIRE(issued);
    REQUIRE(expires);
    CHECK(*expires - *issued == std::chrono::seconds(3600));

    std::string token(out.at("status").at("token").as_string());
    auto claims = tokens.verified_claims(token);
    REQUIRE(claims);
    CHECK(claims->at("iss") == "https://kubernetes.default.svc.cluster.local");
    CHECK(claims->at("sub") == "system:serviceaccount:default:default");
    CHECK(claims->at("exp").as_int64() - claims->at("iat").as_int64() == 3600);
    CHECK(claims->at("kubernetes.io").at("serviceaccount").at("uid") ==
          store.get(sa_accounts, "default", "default").at("metadata").at("uid"));

    auto who = tokens.authenticate(store, token);
    REQUIRE(who);
    CHECK(who->user == "system:serviceaccount:default:default");
    CHECK(who->groups == std::vector<std::string>{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"});
}

TEST_CASE("TokenRequest refuses what kube-apiserver refuses") {
    ObjectStore store;
    ServiceAccountTokens tokens;
    auto short_lived = refusal([&] { tokens.request(store, "default", "default", parse(R"({"spec": {"expirationSeconds": 599}})")); });
    CHECK(short_lived.code == 422);
    CHECK(short_lived.message ==
          R"(TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes)");
    auto missing = refusal([&] { tokens.request(store, "default", "ghost", parse("{}")); });
    CHECK(missing.code == 404);
    CHECK(missing.message == R"(serviceaccounts "ghost" not found)");

    auto pod = store.create(pods, "default", sa_pod("p"));
    auto uid_mismatch = refusal([&] {
        tokens.request(store, "default", "default",
                       parse(R"({"spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "not-it"}}})"));
    });
    CHECK(uid_mismatch.code == 409);
    CHECK(uid_mismatch.message ==
          R"(Operation cannot be fulfilled on Pod "p": the UID in the bound object reference (not-it) does not match the UID in record. The object might have been deleted and then recreated)");
    auto wrong_kind = refusal([&] {
        tokens.request(store, "default", "default", parse(R"({"spec": {"boundObjectRef": {"kind": "ConfigMap", "apiVersion": "v1", "name": "c"}}})"));
    });
    CHECK(wrong_kind.code == 400);
    CHECK(wrong_kind.message == "cannot bind token to object of type /v1, Kind=ConfigMap");
    store.create(sa_accounts, "default", named("robot"));
    auto other_account = refusal([&] {
        tokens.request(store, "default", "robot", parse(R"({"spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}}})"));
    });
    CHECK(other_account.code == 400);
    CHECK(other_account.message == R"(cannot bind token for serviceaccount "robot" to pod running with different serviceaccount name.)");
    auto no_pod = refusal([&] {
        tokens.request(store, "default", "default", parse(R"({"spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "nope"}}})"));
    });
    CHECK(no_pod.code == 404);
    CHECK(no_pod.message == R"(pods "nope" not found)");
}

TEST_CASE("a service-account token stops authenticating when it expires, when its pod or account is gone, or when it is not the API server's") {
    ObjectStore store;
    auto now = std::chrono::system_clock::now();
    ServiceAccountTokens tokens([&] { return now; });
    auto pod = store.create(pods, "default", sa_pod("p"));
    auto bound = [&] {
        auto body = parse(R"({"spec": {"expirationSeconds": 600, "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}}})");
        body.at("spec").at("boundObjectRef").as_object()["uid"] = pod.at("metadata").at("uid");
        return std::string(tokens.request(store, "default", "default", body).at("status").at("token").as_string());
    };
    auto token = bound();
    auto claims = tokens.verified_claims(token);
    REQUIRE(claims);
    CHECK(claims->at("kubernetes.io").at("pod") ==
          json::object{{"name", "p"}, {"uid", pod.at("metadata").at("uid")}});
    CHECK(tokens.authenticate(store, token));

    now += std::chrono::seconds(599);
    CHECK(tokens.authenticate(store, token));
    now += std::chrono::seconds(1);
    CHECK_FALSE(tokens.authenticate(store, token));

    now -= std::chrono::seconds(600);
    auto tampered = token;
    tampered[tampered.size() / 2] = tampered[tampered.size() / 2] == 'A' ? 'B' : 'A';
    CHECK_FALSE(tokens.authenticate(store, tampered));
    ServiceAccountTokens other;
    CHECK_FALSE(other.authenticate(store, token));
    auto elsewhere = tokens.request(store, "default", "default", parse(R"({"spec": {"audiences": ["vault"]}})"));
    CHECK_FALSE(tokens.authenticate(store, std::string(elsewhere.at("status").at("token").as_string())));

    store.remove(pods, "default", "p");  // not on a node: gone at once
    CHECK_FALSE(tokens.authenticate(store, token));

    auto unbound = std::string(tokens.request(store, "default", "default", parse("{}")).at("status").at("token").as_string());
    CHECK(tokens.authenticate(store, unbound));
    store.remove(sa_accounts, "default", "default");  // comes back with another uid
    CHECK(sa_exists(store, sa_accounts, "default", "default"));
    CHECK_FALSE(tokens.authenticate(store, unbound));
}

TEST_CASE("a projected volume of the pod's own gets defaultMode 420 and an hour's token, and a token of less than ten minutes is refused") {
    ObjectStore store;
    auto own = store.create(pods, "default", sa_pod("own", R"({"automountServiceAccountToken": false,
        "volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t", "audience": "vault"}}]}}]})"));
    CHECK(sa_spec(own).at("volumes").at(0).at("projected") ==
          parse(R"({"sources": [{"serviceAccountToken": {"path": "t", "audience": "vault", "expirationSeconds": 3600}}], "defaultMode": 420})"));
    auto st = refusal([&] {
        store.create(pods, "default", sa_pod("short", R"({"automountServiceAccountToken": false,
            "volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"expirationSeconds": 599}}]}}]})"));
    });
    CHECK(st.code == 422);
    CHECK(st.message ==
          R"(Pod "short" is invalid: [spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes, spec.volumes[0].projected.path: Required value])");
}
