// The sandbox's building blocks, each without a network: certificates, URL parsing, the
// fault injector, pod logs and the admin API's routing.
#include <vck/testing/admin_api.hpp>
#include <vck/testing/api_path.hpp>
#include <vck/testing/certs.hpp>
#include <vck/testing/fault_injector.hpp>
#include <vck/testing/pod_logs.hpp>

#include <doctest.h>

#include <openssl/x509_vfy.h>

using namespace vck::testing;

namespace {

X509* read_cert(const std::string& pem) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    X509* c = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    REQUIRE(c != nullptr);
    return c;
}

bool verifies(const std::string& ca_pem, const std::string& leaf_pem, const char* host = nullptr,
              const char* ip = nullptr) {
    X509* ca = read_cert(ca_pem);
    X509* leaf = read_cert(leaf_pem);
    X509_STORE* store = X509_STORE_new();
    X509_STORE_add_cert(store, ca);
    X509_STORE_CTX* ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, store, leaf, nullptr);
    X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx);
    if (host) X509_VERIFY_PARAM_set1_host(param, host, 0);
    if (ip) X509_VERIFY_PARAM_set1_ip_asc(param, ip);
    bool ok = X509_verify_cert(ctx) == 1;
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    X509_free(leaf);
    X509_free(ca);
    return ok;
}

std::vector<std::string> subject_entries(const std::string& pem, int nid) {
    X509* c = read_cert(pem);
    std::vector<std::string> out;
    X509_NAME* n = X509_get_subject_name(c);
    for (int i = 0; i < X509_NAME_entry_count(n); ++i) {
        auto* e = X509_NAME_get_entry(n, i);
        if (OBJ_obj2nid(X509_NAME_ENTRY_get_object(e)) != nid) continue;
        auto* d = X509_NAME_ENTRY_get_data(e);
        out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(d)),
                         static_cast<std::size_t>(ASN1_STRING_length(d)));
    }
    X509_free(c);
    return out;
}

FaultRule rule(std::string verb, std::string resource, int code, int count, int retry_after = 0) {
    FaultRule r;
    r.verb = std::move(verb);
    r.resource = std::move(resource);
    r.code = code;
    r.count = count;
    r.retry_after_seconds = retry_after;
    return r;
}

} // namespace

TEST_CASE("a serving certificate chains to the CA and names 127.0.0.1, localhost and extra names") {
    CertificateAuthority ca;
    auto server = ca.issue_server({"sandbox.example", "10.1.2.3"});
    CHECK(server.key_pem.find("PRIVATE KEY") != std::string::npos);
    CHECK(verifies(ca.cert_pem(), server.cert_pem, nullptr, "127.0.0.1"));
    CHECK(verifies(ca.cert_pem(), server.cert_pem, "localhost"));
    CHECK(verifies(ca.cert_pem(), server.cert_pem, "sandbox.example"));
    CHECK(verifies(ca.cert_pem(), server.cert_pem, nullptr, "10.1.2.3"));
    CHECK_FALSE(verifies(ca.cert_pem(), server.cert_pem, "other.example"));
}

TEST_CASE("a certificate from another CA does not verify against the sandbox CA") {
    CertificateAuthority ca, other;
    CHECK_FALSE(verifies(ca.cert_pem(), other.issue_server().cert_pem));
}

TEST_CASE("a client certificate carries the user as CN and the groups as O") {
    CertificateAuthority ca;
    auto c = ca.issue_client("jane", {"dev", "system:masters"});
    CHECK(verifies(ca.cert_pem(), c.cert_pem));
    CHECK(subject_entries(c.cert_pem, NID_commonName) == std::vector<std::string>{"jane"});
    CHECK(subject_entries(c.cert_pem, NID_organizationName) == std::vector<std::string>{"dev", "system:masters"});
    CHECK_THROWS_WITH_AS(ca.issue_client(""), "a client certificate needs a user name", std::invalid_argument);
}

TEST_CASE("a namespaced object path names group, version, namespace, resource and name") {
    auto p = parse_api_path("/apis/vck.intelai.org/v1alpha1/namespaces/ns1/volumemanagers/vm1/status");
    REQUIRE(p);
    CHECK(p->kind == ApiPath::Kind::Resource);
    CHECK(p->group == "vck.intelai.org");
    CHECK(p->version == "v1alpha1");
    CHECK(p->namespace_ == "ns1");
    CHECK(p->namespace_scoped);
    CHECK(p->resource == "volumemanagers");
    CHECK(p->name == "vm1");
    CHECK(p->subresource == "status");
    CHECK(p->resource_with_sub() == "volumemanagers/status");
}

TEST_CASE("a namespace's own status is a subresource, not a resource called status") {
    auto p = parse_api_path("/api/v1/namespaces/ns1/status");
    REQUIRE(p);
    CHECK(p->resource == "namespaces");
    CHECK(p->name == "ns1");
    CHECK(p->subresource == "status");
    CHECK_FALSE(p->namespace_scoped);
    auto q = parse_api_path("/api/v1/namespaces/ns1/pods");
    REQUIRE(q);
    CHECK(q->resource == "pods");
    CHECK(q->namespace_ == "ns1");
    CHECK(q->name.empty());
}

TEST_CASE("discovery paths and the legacy watch prefix are recognised") {
    CHECK(parse_api_path("/api")->kind == ApiPath::Kind::CoreVersions);
    CHECK(parse_api_path("/apis")->kind == ApiPath::Kind::GroupList);
    CHECK(parse_api_path("/apis/apps")->kind == ApiPath::Kind::Group);
    CHECK(parse_api_path("/api/v1")->kind == ApiPath::Kind::ResourceList);
    CHECK(parse_api_path("/apis/apps/v1/")->kind == ApiPath::Kind::ResourceList);
    auto w = parse_api_path("/api/v1/watch/namespaces/a/pods/p1");
    REQUIRE(w);
    CHECK(w->watch_prefix);
    CHECK(w->resource == "pods");
    CHECK(w->name == "p1");
    CHECK_FALSE(parse_api_path("/metrics"));
    CHECK_FALSE(parse_api_path("/api/v1/pods/a/b/c"));
}

TEST_CASE("an armed fault fails exactly the next N matching requests, then stops") {
    FaultInjector f;
    f.fail_next(rule("list", "pods", 503, 2, 1));
    CHECK_FALSE(f.check("get", "pods"));
    CHECK_FALSE(f.check("list", "nodes"));
    auto a = f.check("list", "pods");
    REQUIRE(a);
    CHECK(a->code == 503);
    CHECK(a->retry_after_seconds == 1);
    CHECK(f.check("list", "pods"));
    CHECK_FALSE(f.check("list", "pods"));
    CHECK(f.fired() == 2);
}

TEST_CASE("a fault on a resource also matches its subresources, but not the other way round") {
    FaultInjector f;
    f.fail_next(rule("", "pods", 500, 1));
    CHECK(f.check("update", "pods/status"));
    f.fail_next(rule("", "pods/status", 500, 1));
    CHECK_FALSE(f.check("update", "pods"));
    CHECK(f.check("update", "pods/status"));
}

TEST_CASE("a fault without an error code is refused with a clear message") {
    FaultInjector f;
    CHECK_THROWS_WITH_AS(f.fail_next(rule("", "", 200, 1)), "an injected failure needs a 4xx or 5xx code, not 200",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(f.compact(), "compact(): no store is attached to this fault injector", std::logic_error);
}

TEST_CASE("dropping watches bumps the generation and runs every hook") {
    FaultInjector f;
    int calls = 0;
    f.on_drop_watches([&] { ++calls; });
    auto g = f.watch_generation();
    f.drop_watches();
    CHECK(f.watch_generation() == g + 1);
    CHECK(calls == 1);
}

TEST_CASE("pod logs keep the last N lines with tailLines, then the first bytes with limitBytes") {
    PodLogs logs;
    logs.append("ns", "p", "main", "one\ntwo\n");
    logs.append("ns", "p", "main", "three\n");
    CHECK(*logs.read("ns", "p", "main") == "one\ntwo\nthree\n");
    CHECK(*logs.read("ns", "p", "main", 1) == "three\n");
    CHECK(*logs.read("ns", "p", "main", 2) == "two\nthree\n");
    CHECK(*logs.read("ns", "p", "main", 10) == "one\ntwo\nthree\n");
    CHECK(*logs.read("ns", "p", "main", 0) == "");
    CHECK(*logs.read("ns", "p", "main", 2, 4) == "two\n");
    CHECK_FALSE(logs.read("ns", "p", "other"));
    CHECK(logs.containers("ns", "p") == std::vector<std::string>{"main"});
    logs.remove("ns", "p");
    CHECK_FALSE(logs.read("ns", "p", "main"));
}

TEST_CASE("the admin API arms faults, sets latency and rejects bad input with a message") {
    FaultInjector f;
    PodLogs logs;
    Authenticator auth;
    auto [code, body] = AdminApi::answer("POST", "/faults/fail",
                                         R"({"verb":"get","resource":"pods","code":429,"retryAfterSeconds":2})", f,
                                         logs, auth);
    CHECK(code == 200);
    auto hit = f.check("get", "pods");
    REQUIRE(hit);
    CHECK(hit->code == 429);
    CHECK(AdminApi::answer("PUT", "/faults/latency", R"({"milliseconds":25})", f, logs, auth).first == 200);
    CHECK(f.latency() == std::chrono::milliseconds(25));
    auto bad = AdminApi::answer("POST", "/faults/fail", "not json", f, logs, auth);
    CHECK(bad.first == 400);
    CHECK(bad.second.at("error").as_string() == "the request body must be a JSON object");
    // A rule no request could ever match is refused, not armed to wait for ever.
    auto never = AdminApi::answer("POST", "/faults/fail", R"({"verb":"post","resource":"pods"})", f, logs, auth);
    CHECK(never.first == 400);
    CHECK(never.second.at("error").as_string() ==
          "no request has the verb \"post\" (get, list, watch, create, update, patch, delete, deletecollection)");
    CHECK(f.pending().empty());
    CHECK(AdminApi::answer("GET", "/nope", "", f, logs, auth).first == 404);
    CHECK(AdminApi::answer("POST", "/pod-logs", R"({"pod":"p","container":"c","text":"hi\n"})", f, logs, auth).first ==
          200);
    CHECK(*logs.read("default", "p", "c") == "hi\n");
}

TEST_CASE("a bearer token maps to its identity; an unknown or malformed one to nobody") {
    Authenticator auth;
    auth.add_token("t0k", {"jane", {"dev"}});
    CHECK(auth.from_header("Bearer t0k").user == "jane");
    CHECK(auth.from_header("bearer t0k").groups == std::vector<std::string>{"dev"});
    CHECK_FALSE(auth.from_header("Bearer nope").authenticated());
    CHECK_FALSE(auth.from_header("Basic dDBrOg==").authenticated());
    CHECK_FALSE(auth.from_header("").authenticated());
    CHECK_THROWS_WITH_AS(auth.add_token("", {"x", {}}), "a bearer token must not be empty", std::invalid_argument);
}
