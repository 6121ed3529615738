// Pod identities end to end: the kubelet materialises the projected kube-api-access volume
// (a token bound to the pod, ca.crt, namespace) and the kubernetes service's env vars, so a
// program in the pod reaches the API server as its service account; the server accepts the
// token only while it is valid and bound to an existing pod.
#include "cluster_fixture.hpp"

#include <doctest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using namespace vck::sandbox;
using namespace cluster_test;

namespace {

// Lists pods in its namespace as the pod's service account, from the files of the mount
// (argv[1], rewritten by the kubelet to the volume's host directory), and prints
// "<namespace> <HTTP code> <whether VCK_SERVICE_ACCOUNT_DIR names that directory>".
const char* const identity_client = R"(
import os, ssl, sys, urllib.request, urllib.error
d = sys.argv[1]
token = open(d + "/token").read()
ns = open(d + "/namespace").read()
ctx = ssl.create_default_context(cafile=d + "/ca.crt")
url = "https://%s:%s/api/v1/namespaces/%s/pods" % (os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"], ns)
try:
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": "Bearer " + token}), context=ctx) as r:
        code = r.status
except urllib.error.HTTPError as e:
    code = e.code
print(ns, code, os.environ.get("VCK_SERVICE_ACCOUNT_DIR") == d)
)";

Sandbox::Options identity_options() {
    auto o = quiet_options(1);
    o.serve = true;
    o.images["vck/identity:1"] = ImageBehaviour::execute("/usr/bin/python3");
    return o;
}

json::value identity_pod(const std::string& name) {
    auto p = pod(name, "vck/identity:1");
    auto& c = p.as_object()["spec"].as_object()["containers"].as_array()[0].as_object();
    c["command"] = json::array{"python3"};
    c["args"] = json::array{"-c", identity_client, "/var/run/secrets/kubernetes.io/serviceaccount"};
    return p;
}

std::string identity_finished_log(Sandbox& sb, const std::string& name) {
    REQUIRE(eventually([&] {
        auto ph = phase(sb, name);
        return ph == "Succeeded" || ph == "Failed";
    }));
    return sb.server().pod_logs().read("default", name, "main").value_or("");
}

/// The projected volume's host directory of a pod on node-1.
std::filesystem::path identity_volume_dir(Sandbox& sb, const json::value& pod) {
    std::string uid(pod.at("metadata").at("uid").as_string());
    std::string vol(pod.at("spec").at("volumes").at(0).at("name").as_string());
    return sb.node_dir("node-1") / "pods" / uid / "volumes" / vol;
}

std::string identity_read(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// The HTTP code of GET /api/v1/namespaces/default/pods with `token`, as a client outside sees it.
int identity_status_with(Sandbox& sb, const std::filesystem::path& ca, const std::string& token) {
    std::string cmd = "python3 -c 'import ssl, sys, urllib.request, urllib.error\n"
                      "req = urllib.request.Request(sys.argv[1], headers={\"Authorization\": \"Bearer \" + sys.argv[3]})\n"
                      "try:\n    print(urllib.request.urlopen(req, context=ssl.create_default_context(cafile=sys.argv[2])).status)\n"
                      "except urllib.error.HTTPError as e:\n    print(e.code)' "
                      "https://127.0.0.1:" + std::to_string(sb.server().port()) + "/api/v1/namespaces/default/pods " +
                      ca.string() + " " + token;
    FILE* f = popen(cmd.c_str(), "r");
    REQUIRE(f != nullptr);
    char buf[64] = {};
    std::string out = fgets(buf, sizeof buf, f) ? buf : "";
    pclose(f);
    return std::atoi(out.c_str());
}

} // namespace

TEST_CASE("a pod reads its projected token, ca.crt and namespace and calls the API server as its service account, allowed once a RoleBinding says so") {
    Sandbox sb(identity_options());
    sb.store().create(pods, "default", identity_pod("before"));
    CHECK(identity_finished_log(sb, "before") == "default 403 True\n");

    sb.store().create({"rbac.authorization.k8s.io", "v1", "roles"}, "default", json::parse(R"({
        "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]})"));
    sb.store().create({"rbac.authorization.k8s.io", "v1", "rolebindings"}, "default", json::parse(R"({
        "metadata": {"name": "pod-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]})"));
    sb.store().create(pods, "default", identity_pod("after"));
    CHECK(identity_finished_log(sb, "after") == "default 200 True\n");

    auto after = get_pod(sb, "after");
    auto dir = identity_volume_dir(sb, after);
    CHECK(identity_read(dir / "ca.crt") == sb.server().ca_pem());
    CHECK(identity_read(dir / "namespace") == "default");
    auto claims = sb.server().service_account_tokens().verified_claims(identity_read(dir / "token"));
    REQUIRE(claims);
    CHECK(claims->at("kubernetes.io").at("pod") == json::object{{"name", "after"}, {"uid", after.at("metadata").at("uid")}});
    CHECK(claims->at("exp").as_int64() - claims->at("iat").as_int64() == 3607);
}

TEST_CASE("the API server refuses a pod's token with 401 once it has expired or its pod is deleted") {
    Sandbox sb(identity_options());
    sb.store().create(pods, "default", identity_pod("p"));
    identity_finished_log(sb, "p");
    auto p = get_pod(sb, "p");
    auto dir = identity_volume_dir(sb, p);
    auto token = identity_read(dir / "token");
    auto ca = dir / "ca.crt";
    CHECK(identity_status_with(sb, ca, token) == 403);  // authenticated; no RoleBinding

    auto& tokens = sb.server().service_account_tokens();
    tokens.set_clock([] { return std::chrono::system_clock::now() + std::chrono::seconds(3607); });
    CHECK(identity_status_with(sb, ca, token) == 401);
    tokens.set_clock({});
    CHECK(identity_status_with(sb, ca, token) == 403);

    auto ca_copy = std::filesystem::temp_directory_path() / ("vck-identity-ca-" + std::string(p.at("metadata").at("uid").as_string()));
    std::filesystem::copy_file(ca, ca_copy, std::filesystem::copy_options::overwrite_existing);
    sb.store().remove(pods, "default", "p");
    REQUIRE(eventually([&] { return !pod_exists(sb, "p"); }));
    CHECK(identity_status_with(sb, ca_copy, token) == 401);
    std::filesystem::remove(ca_copy);
}
