// The sandbox's building blocks, each without a network: certificates, URL parsing, the
// fault injector, pod logs, the admin API's routing and protobuf request bodies.
#include <vck/sandbox/server/admin_api.hpp>
#include <vck/sandbox/server/api_handler.hpp>
#include <vck/sandbox/server/api_path.hpp>
#include <vck/sandbox/server/certs.hpp>
#include <vck/sandbox/server/fault_injector.hpp>
#include <vck/sandbox/cluster/pod_logs.hpp>
#include <vck/sandbox/server/protobuf_body.hpp>

#include <doctest.h>

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <openssl/x509_vfy.h>

#include <regex>
#include <thread>

using namespace vck::sandbox;

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
    SandboxCertificateAuthority ca;
    auto server = ca.issue_server({"sandbox.example", "10.1.2.3"});
    CHECK(server.key_pem.find("PRIVATE KEY") != std::string::npos);
    CHECK(verifies(ca.cert_pem(), server.cert_pem, nullptr, "127.0.0.1"));
    CHECK(verifies(ca.cert_pem(), server.cert_pem, "localhost"));
    CHECK(verifies(ca.cert_pem(), server.cert_pem, "sandbox.example"));
    CHECK(verifies(ca.cert_pem(), server.cert_pem, nullptr, "10.1.2.3"));
    CHECK_FALSE(verifies(ca.cert_pem(), server.cert_pem, "other.example"));
}

TEST_CASE("a certificate from another CA does not verify against the sandbox CA") {
    SandboxCertificateAuthority ca, other;
    CHECK_FALSE(verifies(ca.cert_pem(), other.issue_server().cert_pem));
}

TEST_CASE("a client certificate carries the user as CN and the groups as O") {
    SandboxCertificateAuthority ca;
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

TEST_CASE("pod logs: timestamps prefix each line with its RFC3339Nano write time, once per line split across appends") {
    PodLogs logs;
    logs.append("ns", "p", "main", "one\npart");
    logs.append("ns", "p", "main", "ial\n");
    LogReadOptions o;
    o.timestamps = true;
    auto text = *logs.read("ns", "p", "main", o);
    // 2026-11-26T19:30:01.123456789Z one\n<time> partial\n: the second line's own time is
    // that of its first entry; its continuation gets none (the kubelet's addPrefix).
    const std::string stamp = R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z )";
    CHECK(std::regex_match(text, std::regex(stamp + "one\n" + stamp + "partial\n")));
    CHECK(rfc3339_nano_fixed(std::chrono::system_clock::time_point(std::chrono::nanoseconds(1500000000))) ==
          "1970-01-01T00:00:01.500000000Z");
    // tailLines counts the line once, though it is two entries.
    CHECK(*logs.read("ns", "p", "main", 1) == "partial\n");
    o.limit_bytes = 10;
    CHECK(logs.read("ns", "p", "main", o)->size() == 10);
}

TEST_CASE("pod logs: since keeps the entries written at or after it") {
    PodLogs logs;
    logs.append("ns", "p", "main", "old\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto mid = std::chrono::system_clock::now();
    logs.append("ns", "p", "main", "new\n");
    LogReadOptions o;
    o.since = mid;
    CHECK(*logs.read("ns", "p", "main", o) == "new\n");
    o.since = mid - std::chrono::hours(1);
    CHECK(*logs.read("ns", "p", "main", o) == "old\nnew\n");
    o.since = std::chrono::system_clock::now() + std::chrono::hours(1);
    CHECK(*logs.read("ns", "p", "main", o) == "");
}

TEST_CASE("pod logs: a follower gets the log so far, then each append, and ends when the log is closed") {
    PodLogs logs;
    logs.append("ns", "p", "main", "a\nb\nc\n");
    LogReadOptions o;
    o.tail_lines = 1;  // the initial part only
    auto f = logs.open("ns", "p", "main", o);
    REQUIRE(f);
    int woken = 0;
    f->set_notify([&] { ++woken; });
    CHECK(f->ready());
    CHECK(f->next() == "c\n");
    CHECK_FALSE(f->ready());  // nothing to do: the server may sleep
    logs.append("ns", "p", "main", "d\n");
    CHECK(woken == 1);
    CHECK(f->ready());  // an append after next() and before the sleep is not lost
    CHECK(f->next() == "d\n");
    CHECK_FALSE(f->ended());
    logs.close("ns", "p", "main");
    CHECK(f->ready());
    CHECK(f->next() == "");
    CHECK(f->ended());
    f->set_notify(nullptr);
    logs.append("ns", "p", "other", "x\n");
    CHECK(woken == 2);  // the close woke it; nothing after set_notify(nullptr)
}

TEST_CASE("pod logs: limitBytes bounds the whole followed stream; removing the pod ends its followers") {
    PodLogs logs;
    logs.append("ns", "p", "main", "12345\n");
    LogReadOptions o;
    o.limit_bytes = 8;
    auto f = logs.open("ns", "p", "main", o);
    CHECK(f->next() == "12345\n");
    CHECK_FALSE(f->ended());
    logs.append("ns", "p", "main", "67890\n");
    CHECK(f->next() == "67");
    CHECK(f->ended());
    auto g = logs.open("ns", "p", "main");
    CHECK(g->next() == "12345\n67890\n");
    logs.remove("ns", "p");
    CHECK(g->ended());
    CHECK_FALSE(logs.open("ns", "p", "main"));
}

TEST_CASE("pod logs: a restart keeps the terminated instance's log as the previous one") {
    PodLogs logs;
    logs.append("ns", "p", "main", "first\n");
    CHECK_FALSE(logs.has_previous("ns", "p", "main"));
    auto f = logs.open("ns", "p", "main");
    CHECK(f->next() == "first\n");
    logs.restart("ns", "p", "main");
    CHECK(f->ended());  // a follower of the old instance ends with it
    CHECK(logs.has_previous("ns", "p", "main"));
    CHECK(*logs.read("ns", "p", "main") == "");
    logs.append("ns", "p", "main", "second\n");
    LogReadOptions prev;
    prev.previous = true;
    CHECK(*logs.read("ns", "p", "main", prev) == "first\n");
    CHECK(*logs.read("ns", "p", "main") == "second\n");
    CHECK_FALSE(logs.open("ns", "p", "other", prev));
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

// Protobuf request bodies (protobuf_body.hpp), built with protobuf's own encoder the way
// client-go's generated marshalling writes them: plain (non-pointer) fields always, even
// empty, an unset time as an empty Time message, pointers only when set.
namespace {

namespace json = boost::json;
using WFL = google::protobuf::internal::WireFormatLite;

/// One protobuf message, field by field.
struct Pb {
    std::string bytes;
    template <class F>
    Pb& put(F&& write) {
        google::protobuf::io::StringOutputStream os(&bytes);
        google::protobuf::io::CodedOutputStream out(&os);
        write(out);
        return *this;
    }
    Pb& str(int n, const std::string& v) { return put([&](auto& o) { WFL::WriteString(n, v, &o); }); }
    Pb& i64(int n, std::int64_t v) { return put([&](auto& o) { WFL::WriteInt64(n, v, &o); }); }
    Pb& i32(int n, std::int32_t v) { return put([&](auto& o) { WFL::WriteInt32(n, v, &o); }); }
    Pb& boolean(int n, bool v) { return put([&](auto& o) { WFL::WriteBool(n, v, &o); }); }
    Pb& msg(int n, const Pb& m) { return put([&](auto& o) { WFL::WriteBytes(n, m.bytes, &o); }); }
    Pb& entry(int n, const std::string& k, const std::string& v) { return msg(n, Pb().str(1, k).str(2, v)); }
    /// A resource.Quantity field, and a ResourceList entry (its value a Quantity).
    Pb& quantity(int n, const std::string& v) { return msg(n, Pb().str(1, v)); }
    Pb& resource(int n, const std::string& name, const std::string& v) { return msg(n, Pb().str(1, name).quantity(2, v)); }
    /// A repeated int64 packed into one length-delimited run of varints.
    Pb& packed(int n, std::initializer_list<std::int64_t> vs) {
        Pb run;
        for (auto v : vs) run.put([&](auto& o) { o.WriteVarint64(static_cast<std::uint64_t>(v)); });
        return put([&](auto& o) { WFL::WriteBytes(n, run.bytes, &o); });
    }
};

/// ObjectMeta as Go writes one with only a name (and maybe a namespace) set.
Pb meta(const std::string& name, const std::string& ns = "") {
    return Pb().str(1, name).str(2, "").str(3, ns).str(4, "").str(5, "").str(6, "").i64(7, 0).msg(8, Pb());
}

/// The whole body: magic, then the runtime.Unknown envelope around `raw`.
std::string envelope(const std::string& api_version, const std::string& kind, const Pb& raw) {
    return std::string("k8s\0", 4) +
           Pb().msg(1, Pb().str(1, api_version).str(2, kind)).msg(2, raw).str(3, "").str(4, "").bytes;
}

json::value decoded(const std::string& body, std::string_view api_version = "v1", std::string_view kind = "Secret") {
    return decode_protobuf_body(body, api_version, kind);
}

ProtobufBodyError::Kind failure_of(const std::string& body, std::string_view api_version = "v1",
                                   std::string_view kind = "Secret") {
    try {
        decode_protobuf_body(body, api_version, kind);
    } catch (const ProtobufBodyError& e) {
        return e.kind;
    }
    FAIL("decoded without an error");
    throw std::logic_error("unreachable");
}

} // namespace

TEST_CASE("protobuf bodies decode to the JSON a client would have sent, for each kind kubectl's create commands send") {
    struct Case {
        const char* what;
        std::string body;
        std::string_view api_version, kind;
        const char* json;
    };
    const Case cases[] = {
        {"create secret generic: data is base64, empty plain fields and the unset time are absent",
         envelope("v1", "Secret", Pb().msg(1, meta("s")).entry(2, "k", "v").entry(2, "bin", std::string("\0\xff", 2)).str(3, "Opaque")),
         "v1", "Secret",
         R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"k":"dg==","bin":"AP8="},"type":"Opaque"})"},
        {"a pointer field keeps its false; stringData is plain text",
         envelope("v1", "Secret", Pb().msg(1, meta("s", "ns")).entry(4, "a", "b").str(3, "").boolean(5, false)),
         "v1", "Secret",
         R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"ns"},"immutable":false,"stringData":{"a":"b"}})"},
        {"create configmap: data, binaryData, labels and annotations are maps",
         envelope("v1", "ConfigMap",
                  Pb().msg(1, meta("c").entry(11, "app", "x").entry(12, "note", "y")).entry(2, "a", "b").entry(3, "z", "\x01")),
         "v1", "ConfigMap",
         R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"app":"x"},"annotations":{"note":"y"}},"data":{"a":"b"},"binaryData":{"z":"AQ=="}})"},
        {"create namespace: empty spec and status are objects, as Go writes them",
         envelope("v1", "Namespace", Pb().msg(1, meta("n")).msg(2, Pb()).msg(3, Pb().str(1, ""))), "v1", "Namespace",
         R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"},"spec":{},"status":{}})"},
        {"a namespace's finalizers are a list",
         envelope("v1", "Namespace", Pb().msg(1, meta("n")).msg(2, Pb().str(1, "kubernetes").str(1, "x"))), "v1", "Namespace",
         R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"},"spec":{"finalizers":["kubernetes","x"]}})"},
        {"create serviceaccount: references are lists of objects, automount false stays",
         envelope("v1", "ServiceAccount",
                  Pb().msg(1, meta("sa")).msg(2, Pb().str(3, "tok").str(1, "Secret")).msg(3, Pb().str(1, "pull")).boolean(4, false)),
         "v1", "ServiceAccount",
         R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa"},"secrets":[{"kind":"Secret","name":"tok"}],"imagePullSecrets":[{"name":"pull"}],"automountServiceAccountToken":false})"},
        {"a lease: MicroTime has microseconds, pointer integers keep 0",
         envelope("coordination.k8s.io/v1", "Lease",
                  Pb().msg(1, meta("l")).msg(2, Pb().str(1, "me").i32(2, 0).msg(4, Pb().i64(1, 1700000000).i32(2, 123456789)))),
         "coordination.k8s.io/v1", "Lease",
         R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"holderIdentity":"me","leaseDurationSeconds":0,"renewTime":"2023-11-14T22:13:20.123456Z"}})"},
        {"an event: Time has seconds only, a negative int32 is read as int32",
         envelope("v1", "Event",
                  Pb().msg(1, meta("e")).msg(2, Pb().str(1, "Pod").str(3, "p")).str(3, "Why").msg(5, Pb().str(1, "me"))
                      .msg(6, Pb().i64(1, 0).i32(2, 999)).i32(8, -1).str(9, "Normal")),
         "v1", "Event",
         R"({"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},"involvedObject":{"kind":"Pod","name":"p"},"reason":"Why","source":{"component":"me"},"firstTimestamp":"1970-01-01T00:00:00Z","count":-1,"type":"Normal"})"},
        {"metadata's times, owner references (names kept even empty), finalizers and a pointer 0",
         envelope("v1", "ConfigMap",
                  Pb().msg(1, Pb().str(1, "c").msg(8, Pb().i64(1, 1700000000)).i64(10, 0)
                                  .msg(13, Pb().str(1, "Thing").str(3, "t").str(4, "").str(5, "v1").boolean(6, true))
                                  .str(14, "f"))),
         "v1", "ConfigMap",
         R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","creationTimestamp":"2023-11-14T22:13:20Z","deletionGracePeriodSeconds":0,"ownerReferences":[{"apiVersion":"v1","kind":"Thing","name":"t","uid":"","controller":true}],"finalizers":["f"]}})"},
        {"fields unknown to us are skipped, as Go skips them",
         envelope("v1", "ConfigMap", Pb().msg(1, meta("c").str(99, "x")).i64(50, 7).msg(51, Pb().str(1, "y")).entry(2, "a", "b")),
         "v1", "ConfigMap", R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"b"}})"},
        {"create role: rules are lists of strings",
         envelope("rbac.authorization.k8s.io/v1", "Role",
                  Pb().msg(1, meta("r")).msg(2, Pb().str(1, "get").str(1, "list").str(2, "").str(3, "pods").str(4, "p"))),
         "rbac.authorization.k8s.io/v1", "Role",
         R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r"},"rules":[{"verbs":["get","list"],"apiGroups":[""],"resources":["pods"],"resourceNames":["p"]}]})"},
        {"create clusterrole with an aggregation rule: label selectors",
         envelope("rbac.authorization.k8s.io/v1", "ClusterRole",
                  Pb().msg(1, meta("c")).msg(3, Pb().msg(1, Pb().entry(1, "a", "b").msg(2, Pb().str(1, "k").str(2, "Exists"))))),
         "rbac.authorization.k8s.io/v1", "ClusterRole",
         R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"c"},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"a":"b"},"matchExpressions":[{"key":"k","operator":"Exists"}]}]}})"},
        {"create rolebinding: subjects and the roleRef",
         envelope("rbac.authorization.k8s.io/v1", "RoleBinding",
                  Pb().msg(1, meta("b")).msg(2, Pb().str(1, "ServiceAccount").str(3, "sa").str(4, "ns"))
                      .msg(3, Pb().str(1, "rbac.authorization.k8s.io").str(2, "Role").str(3, "r"))),
         "rbac.authorization.k8s.io/v1", "RoleBinding",
         R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"b"},"subjects":[{"kind":"ServiceAccount","name":"sa","namespace":"ns"}],"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r"}})"},
        {"kubectl auth can-i: a SelfSubjectAccessReview's resource attributes",
         envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview",
                  Pb().msg(1, Pb()).msg(2, Pb().msg(1, Pb().str(1, "default").str(2, "list").str(5, "pods")))),
         "authorization.k8s.io/v1", "SelfSubjectAccessReview",
         R"({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","metadata":{},"spec":{"resourceAttributes":{"namespace":"default","verb":"list","resource":"pods"}}})"},
        {"create service nodeport: ports with an IntOrString targetPort (a number, or a name), pointers kept, zeros of plain fields dropped",
         envelope("v1", "Service",
                  Pb().msg(1, meta("np").entry(11, "app", "np"))
                      .msg(2, Pb().msg(1, Pb().str(1, "80-8080").str(2, "TCP").i32(3, 80).msg(4, Pb().i64(1, 0).i32(2, 8080).str(3, "")).i32(5, 0))
                                  .msg(1, Pb().str(1, "m").str(2, "UDP").i32(3, 90).msg(4, Pb().i64(1, 1).i32(2, 0).str(3, "metrics")))
                                  .entry(2, "app", "np").str(3, "").str(4, "NodePort").str(7, "").boolean(13, false)
                                  .str(22, "Cluster"))),
         "v1", "Service",
         R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"np","labels":{"app":"np"}},"spec":{"ports":[{"name":"80-8080","protocol":"TCP","port":80,"targetPort":8080},{"name":"m","protocol":"UDP","port":90,"targetPort":"metrics"}],"selector":{"app":"np"},"type":"NodePort","internalTrafficPolicy":"Cluster"}})"},
        {"an envelope without typeMeta is the endpoint's kind",
         std::string("k8s\0", 4) + Pb().msg(2, Pb().msg(1, meta("c"))).bytes, "v1", "ConfigMap",
         R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}})"},
    };
    for (const auto& c : cases) {
        CAPTURE(std::string(c.what));
        CHECK(json::serialize(decoded(c.body, c.api_version, c.kind)) == c.json);
    }
}

TEST_CASE("kubectl create deployment's protobuf body decodes to its JSON: the template's containers, zero values dropped") {
    // As Go writes it: every non-pointer scalar present, nil pointers absent.
    auto container = Pb().str(1, "web").str(2, "registry.example/web:1").str(5, "").msg(8, Pb()).str(13, "").str(14, "").str(20, "");
    auto tmpl = Pb().msg(1, meta("").entry(11, "app", "web")).msg(2, Pb().msg(2, container).str(3, "").str(6, "").str(8, "").str(19, ""));
    auto spec = Pb().i32(1, 2).msg(2, Pb().entry(1, "app", "web")).msg(3, tmpl).msg(4, Pb().str(1, "")).i32(5, 0).boolean(7, false);
    auto body = envelope("apps/v1", "Deployment", Pb().msg(1, meta("web").entry(11, "app", "web")).msg(2, spec).msg(3, Pb()));
    CHECK(decoded(body, "apps/v1", "Deployment") == json::parse(R"({"apiVersion":"apps/v1","kind":"Deployment",
        "metadata":{"name":"web","labels":{"app":"web"}},
        "spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"strategy":{},
                "template":{"metadata":{"labels":{"app":"web"}},
                            "spec":{"containers":[{"name":"web","image":"registry.example/web:1","resources":{}}]}}}})"));
}

TEST_CASE("kubectl create job's protobuf body decodes to its JSON: pointer fields keep a present zero") {
    auto container = Pb().str(1, "once").str(2, "registry.example/job:1").str(3, "echo").str(5, "").msg(8, Pb());
    auto tmpl = Pb().msg(1, meta("")).msg(2, Pb().msg(2, container).str(3, "Never").str(6, ""));
    // backoffLimit 0 and suspend false are pointers in Go: sent, so kept.
    auto spec = Pb().msg(6, tmpl).i32(7, 0).boolean(10, false);
    auto body = envelope("batch/v1", "Job", Pb().msg(1, meta("once")).msg(2, spec).msg(3, Pb()));
    CHECK(decoded(body, "batch/v1", "Job") == json::parse(R"({"apiVersion":"batch/v1","kind":"Job",
        "metadata":{"name":"once"},
        "spec":{"backoffLimit":0,"suspend":false,
                "template":{"metadata":{},"spec":{"restartPolicy":"Never",
                    "containers":[{"name":"once","image":"registry.example/job:1","command":["echo"],"resources":{}}]}}}})"));
}

// A pod with a spec as rich as kubectl debug --copy-to re-sends, written as Go's generated
// marshalling writes it: plain scalars always (empty ones too), pointers when set, embedded
// structs (VolumeSource, ProbeHandler, EphemeralContainerCommon, LocalObjectReference) as
// nested messages.
namespace {

Pb rich_container() {
    auto none = [](Pb p) { return p.str(5, "").str(13, "").str(14, "").str(20, "").boolean(16, false).boolean(17, false).boolean(18, false); };
    auto http_probe = Pb().msg(1, Pb().msg(2, Pb().str(1, "/healthz").msg(2, Pb().i64(1, 1).i32(2, 0).str(3, "http")).str(3, "")
                                                   .str(4, "HTTP").msg(5, Pb().str(1, "X-Probe").str(2, "1"))))
                          .i32(2, 5).i32(3, 1).i32(4, 10).i32(5, 1).i32(6, 3);
    auto tcp_probe = Pb().msg(1, Pb().msg(3, Pb().msg(1, Pb().i64(1, 0).i32(2, 8080).str(3, "")).str(2, ""))).i32(2, 0).i32(3, 1)
                         .i32(4, 10).i32(5, 1).i32(6, 3).i64(7, 0);
    auto grpc_probe = Pb().msg(1, Pb().msg(4, Pb().i32(1, 9090).str(2, ""))).i32(2, 0).i32(3, 1).i32(4, 10).i32(5, 1).i32(6, 30);
    return none(Pb().str(1, "main").str(2, "registry.example/app:1").str(3, "/app").str(4, "--serve"))
        .msg(6, Pb().str(1, "http").i32(2, 0).i32(3, 8080).str(4, "TCP").str(5, ""))
        .msg(19, Pb().str(1, "CFG_").msg(2, Pb().msg(1, Pb().str(1, "c1")).boolean(2, true)))
        .msg(7, Pb().str(1, "PLAIN").str(2, "v"))
        .msg(7, Pb().str(1, "TOKEN").str(2, "").msg(3, Pb().msg(4, Pb().msg(1, Pb().str(1, "s1")).str(2, "token"))))
        .msg(7, Pb().str(1, "NODE").str(2, "").msg(3, Pb().msg(1, Pb().str(1, "v1").str(2, "spec.nodeName"))))
        .msg(7, Pb().str(1, "MEM").str(2, "").msg(3, Pb().msg(2, Pb().str(1, "").str(2, "limits.memory").quantity(3, "1Mi"))))
        .msg(8, Pb().resource(1, "cpu", "500m").resource(1, "memory", "128Mi").resource(2, "cpu", "100m").resource(2, "memory", "64Mi")
                    .msg(3, Pb().str(1, "gpu").str(2, "")))
        .msg(23, Pb().str(1, "cpu").str(2, "NotRequired"))
        .msg(9, Pb().str(1, "data").boolean(2, false).str(3, "/data").str(4, "").str(6, ""))
        .msg(9, Pb().str(1, "cfg").boolean(2, true).str(3, "/etc/cfg").str(4, "app.conf").str(5, "None").str(6, ""))
        .msg(10, http_probe).msg(11, tcp_probe).msg(22, grpc_probe)
        .msg(12, Pb().msg(1, Pb().msg(1, Pb().str(1, "touch").str(1, "/tmp/up"))).msg(2, Pb().msg(4, Pb().i64(1, 5))))
        .str(13, "/dev/termination-log").str(20, "File").str(14, "IfNotPresent")
        .msg(15, Pb().msg(1, Pb().str(2, "ALL").str(1, "NET_BIND_SERVICE")).boolean(2, false).i64(4, 0).boolean(5, false)
                     .boolean(6, true).boolean(7, false).msg(11, Pb().str(1, "RuntimeDefault")))
        .boolean(16, true).boolean(18, true);
}

Pb rich_pod_spec() {
    auto sidecar = Pb().str(1, "proxy").str(2, "registry.example/proxy:1").str(5, "").msg(8, Pb()).str(24, "Always")
                       .msg(9, Pb().str(1, "scratch").boolean(2, false).str(3, "/scratch").str(4, "").str(6, ""));
    auto debugger = Pb().msg(1, Pb().str(1, "dbg").str(2, "busybox").str(5, "").msg(8, Pb()).boolean(16, true)).str(2, "main");
    auto volume = [](const std::string& name, int source, const Pb& body) { return Pb().str(1, name).msg(2, Pb().msg(source, body)); };
    auto claim_template = Pb().msg(1, Pb()).msg(2, Pb().str(1, "ReadWriteOnce").msg(2, Pb().resource(2, "storage", "1Gi")).str(3, "")
                                                     .str(5, "fast"));
    auto term = Pb().msg(1, Pb().str(1, "kubernetes.io/os").str(2, "In").str(3, "linux"));
    auto affinity = Pb().msg(1, Pb().msg(1, Pb().msg(1, term)).msg(2, Pb().i32(1, 10).msg(2, Pb().msg(1, Pb().str(1, "zone").str(2, "Exists")))))
                        .msg(3, Pb().msg(2, Pb().i32(1, 100).msg(2, Pb().msg(1, Pb().entry(1, "app", "rich")).str(3, "kubernetes.io/hostname"))));
    return Pb()
        .msg(1, volume("host", 1, Pb().str(1, "/").str(2, "Directory")))
        .msg(1, volume("scratch", 2, Pb().str(1, "").quantity(2, "1Gi")))
        .msg(1, volume("cfg", 19, Pb().msg(1, Pb().str(1, "c1")).msg(2, Pb().str(1, "a").str(2, "a.txt").i32(3, 256)).i32(3, 420)))
        .msg(1, volume("sec", 6, Pb().str(1, "s1").i32(3, 384).boolean(4, false)))
        .msg(1, volume("data", 10, Pb().str(1, "claim").boolean(2, false)))
        .msg(1, volume("proj", 26, Pb().msg(1, Pb().msg(4, Pb().str(1, "").i64(2, 3600).str(3, "token")))
                                        .msg(1, Pb().msg(2, Pb().msg(1, Pb().str(1, "labels").msg(2, Pb().str(1, "v1").str(2, "metadata.labels")))))
                                        .i32(2, 420)))
        .msg(1, volume("downward", 16, Pb().msg(1, Pb().str(1, "cpu").msg(3, Pb().str(1, "main").str(2, "limits.cpu").quantity(3, "1m")))))
        .msg(1, volume("eph", 29, Pb().msg(1, claim_template)))
        .msg(1, volume("csi", 28, Pb().str(1, "csi.example").boolean(2, true).entry(4, "k", "v")))
        .msg(1, volume("nfs", 7, Pb().str(1, "nfs.example").str(2, "/exports").boolean(3, false)))
        .msg(20, sidecar).msg(2, rich_container()).msg(34, debugger)
        .str(3, "Always").i64(4, 0).str(6, "ClusterFirst").entry(7, "disk", "ssd").str(8, "runner").str(9, "runner").boolean(21, false)
        .str(10, "").boolean(11, false).boolean(12, true).boolean(13, false).boolean(27, true)
        .msg(14, Pb().boolean(3, true).i64(4, 1000).i64(4, 2000).i64(5, 2000).msg(7, Pb().str(1, "net.core.somaxconn").str(2, "1024"))
                     .msg(10, Pb().str(1, "RuntimeDefault")))
        .msg(15, Pb().str(1, "pull")).str(16, "").str(17, "").msg(18, affinity).str(19, "default-scheduler")
        .msg(22, Pb().str(1, "dedicated").str(2, "Equal").str(3, "ci").str(4, "NoSchedule"))
        .msg(22, Pb().str(1, "").str(2, "Exists").str(3, "").str(4, "NoExecute").i64(5, 0))
        .msg(23, Pb().str(1, "10.0.0.1").str(2, "db").str(2, "db.local"))
        .str(24, "high").i32(25, 0).msg(26, Pb().str(1, "1.1.1.1").str(2, "svc.local").msg(3, Pb().str(1, "ndots").str(2, "2")))
        .msg(28, Pb().str(1, "example.com/ready")).str(29, "runc").boolean(30, false).str(31, "Never").resource(32, "cpu", "10m")
        .msg(33, Pb().i32(1, 1).str(2, "zone").str(3, "DoNotSchedule").msg(4, Pb().entry(1, "app", "rich")).str(8, "pod-template-hash"))
        .boolean(35, false).msg(36, Pb().str(1, "linux")).boolean(37, false).msg(38, Pb().str(1, "wait"))
        .msg(39, Pb().str(1, "gpu").str(4, "gpu-template"));
}

// The same spec as a client sending JSON writes it (Go's JSON encoder on the same object).
constexpr const char* rich_pod_spec_json = R"({
  "volumes":[
    {"name":"host","hostPath":{"path":"/","type":"Directory"}},
    {"name":"scratch","emptyDir":{"sizeLimit":"1Gi"}},
    {"name":"cfg","configMap":{"name":"c1","items":[{"key":"a","path":"a.txt","mode":256}],"defaultMode":420}},
    {"name":"sec","secret":{"secretName":"s1","defaultMode":384,"optional":false}},
    {"name":"data","persistentVolumeClaim":{"claimName":"claim"}},
    {"name":"proj","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3600,"path":"token"}},
                                           {"downwardAPI":{"items":[{"path":"labels","fieldRef":{"apiVersion":"v1","fieldPath":"metadata.labels"}}]}}],
                                "defaultMode":420}},
    {"name":"downward","downwardAPI":{"items":[{"path":"cpu","resourceFieldRef":{"containerName":"main","resource":"limits.cpu","divisor":"1m"}}]}},
    {"name":"eph","ephemeral":{"volumeClaimTemplate":{"metadata":{},"spec":{"accessModes":["ReadWriteOnce"],
        "resources":{"requests":{"storage":"1Gi"}},"storageClassName":"fast"}}}},
    {"name":"csi","csi":{"driver":"csi.example","readOnly":true,"volumeAttributes":{"k":"v"}}},
    {"name":"nfs","nfs":{"server":"nfs.example","path":"/exports"}}],
  "initContainers":[{"name":"proxy","image":"registry.example/proxy:1","resources":{},"restartPolicy":"Always",
                     "volumeMounts":[{"name":"scratch","mountPath":"/scratch"}]}],
  "containers":[{
    "name":"main","image":"registry.example/app:1","command":["/app"],"args":["--serve"],
    "ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],
    "envFrom":[{"prefix":"CFG_","configMapRef":{"name":"c1","optional":true}}],
    "env":[{"name":"PLAIN","value":"v"},
           {"name":"TOKEN","valueFrom":{"secretKeyRef":{"name":"s1","key":"token"}}},
           {"name":"NODE","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"spec.nodeName"}}},
           {"name":"MEM","valueFrom":{"resourceFieldRef":{"resource":"limits.memory","divisor":"1Mi"}}}],
    "resources":{"limits":{"cpu":"500m","memory":"128Mi"},"requests":{"cpu":"100m","memory":"64Mi"},"claims":[{"name":"gpu"}]},
    "resizePolicy":[{"resourceName":"cpu","restartPolicy":"NotRequired"}],
    "volumeMounts":[{"name":"data","mountPath":"/data"},
                    {"name":"cfg","readOnly":true,"mountPath":"/etc/cfg","subPath":"app.conf","mountPropagation":"None"}],
    "livenessProbe":{"httpGet":{"path":"/healthz","port":"http","scheme":"HTTP","httpHeaders":[{"name":"X-Probe","value":"1"}]},
                     "initialDelaySeconds":5,"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},
    "readinessProbe":{"tcpSocket":{"port":8080},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3,
                      "terminationGracePeriodSeconds":0},
    "startupProbe":{"grpc":{"port":9090,"service":""},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":30},
    "lifecycle":{"postStart":{"exec":{"command":["touch","/tmp/up"]}},"preStop":{"sleep":{"seconds":5}}},
    "terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent",
    "securityContext":{"capabilities":{"add":["NET_BIND_SERVICE"],"drop":["ALL"]},"privileged":false,"runAsUser":0,
                       "runAsNonRoot":false,"readOnlyRootFilesystem":true,"allowPrivilegeEscalation":false,
                       "seccompProfile":{"type":"RuntimeDefault"}},
    "stdin":true,"tty":true}],
  "ephemeralContainers":[{"name":"dbg","image":"busybox","resources":{},"stdin":true,"targetContainerName":"main"}],
  "restartPolicy":"Always","terminationGracePeriodSeconds":0,"dnsPolicy":"ClusterFirst","nodeSelector":{"disk":"ssd"},
  "serviceAccountName":"runner","serviceAccount":"runner","automountServiceAccountToken":false,
  "hostPID":true,"shareProcessNamespace":true,
  "securityContext":{"runAsNonRoot":true,"supplementalGroups":[1000,2000],"fsGroup":2000,
                     "sysctls":[{"name":"net.core.somaxconn","value":"1024"}],"seccompProfile":{"type":"RuntimeDefault"}},
  "imagePullSecrets":[{"name":"pull"}],
  "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
                                  {"matchExpressions":[{"key":"kubernetes.io/os","operator":"In","values":["linux"]}]}]},
                              "preferredDuringSchedulingIgnoredDuringExecution":[
                                  {"weight":10,"preference":{"matchExpressions":[{"key":"zone","operator":"Exists"}]}}]},
              "podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[
                                  {"weight":100,"podAffinityTerm":{"labelSelector":{"matchLabels":{"app":"rich"}},
                                                                   "topologyKey":"kubernetes.io/hostname"}}]}},
  "schedulerName":"default-scheduler",
  "tolerations":[{"key":"dedicated","operator":"Equal","value":"ci","effect":"NoSchedule"},
                 {"operator":"Exists","effect":"NoExecute","tolerationSeconds":0}],
  "hostAliases":[{"ip":"10.0.0.1","hostnames":["db","db.local"]}],
  "priorityClassName":"high","priority":0,
  "dnsConfig":{"nameservers":["1.1.1.1"],"searches":["svc.local"],"options":[{"name":"ndots","value":"2"}]},
  "readinessGates":[{"conditionType":"example.com/ready"}],"runtimeClassName":"runc","enableServiceLinks":false,
  "preemptionPolicy":"Never","overhead":{"cpu":"10m"},
  "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule",
                                "labelSelector":{"matchLabels":{"app":"rich"}},"matchLabelKeys":["pod-template-hash"]}],
  "setHostnameAsFQDN":false,"os":{"name":"linux"},"hostUsers":false,"schedulingGates":[{"name":"wait"}],
  "resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"gpu-template"}]})";

} // namespace

TEST_CASE("kubectl debug's protobuf pods decode to the JSON a client would have sent: every PodSpec field, embedded structs flattened") {
    auto body = envelope("v1", "Pod", Pb().msg(1, meta("rich", "default").entry(11, "app", "rich")).msg(2, rich_pod_spec()).msg(3, Pb()));
    auto got = decoded(body, "v1", "Pod");
    auto want = json::parse(std::string(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"rich","namespace":"default","labels":{"app":"rich"}},"spec":)") +
                            rich_pod_spec_json + R"(,"status":{}})");
    CHECK(json::serialize(got.at("spec")) == json::serialize(want.at("spec")));  // Go's field order too
    CHECK(got == want);

    SUBCASE("kubectl debug node/NAME: the host's root on a hostPath volume, the node's namespaces, a toleration of everything") {
        auto spec = Pb().msg(1, Pb().str(1, "host-root").msg(2, Pb().msg(1, Pb().str(1, "/"))))
                        .msg(2, Pb().str(1, "debugger-x").str(2, "busybox").str(3, "true").str(5, "").msg(8, Pb())
                                    .msg(9, Pb().str(1, "host-root").boolean(2, false).str(3, "/host").str(4, "").str(6, ""))
                                    .str(13, "").str(14, "IfNotPresent").str(20, "").boolean(16, false).boolean(17, false).boolean(18, false))
                        .str(3, "Never").str(6, "").str(8, "").str(9, "").str(10, "node-1").boolean(11, true).boolean(12, true)
                        .boolean(13, true).str(16, "").str(17, "").str(19, "").msg(22, Pb().str(1, "").str(2, "Exists").str(3, "").str(4, ""))
                        .str(24, "");
        auto pod = decoded(envelope("v1", "Pod", Pb().msg(1, meta("node-debugger-node-1-x")).msg(2, spec).msg(3, Pb())), "v1", "Pod");
        CHECK(pod.at("spec") == json::parse(R"({"volumes":[{"name":"host-root","hostPath":{"path":"/"}}],
            "containers":[{"name":"debugger-x","image":"busybox","command":["true"],"resources":{},
                           "volumeMounts":[{"name":"host-root","mountPath":"/host"}],"imagePullPolicy":"IfNotPresent"}],
            "restartPolicy":"Never","nodeName":"node-1","hostNetwork":true,"hostPID":true,"hostIPC":true,
            "tolerations":[{"operator":"Exists"}]})"));
    }
    SUBCASE("a packed repeated int64 reads as an unpacked one; an empty Quantity is Go's zero") {
        auto spec = Pb().msg(14, Pb().packed(4, {1000, 2000}).i64(4, 3000)).msg(1, Pb().str(1, "e").msg(2, Pb().msg(2, Pb().msg(2, Pb()))));
        auto pod = decoded(envelope("v1", "Pod", Pb().msg(1, meta("p")).msg(2, spec)), "v1", "Pod");
        CHECK(pod.at("spec") == json::parse(R"({"volumes":[{"name":"e","emptyDir":{"sizeLimit":"0"}}],
                                                "securityContext":{"supplementalGroups":[1000,2000,3000]}})"));
    }
    SUBCASE("a Deployment's and a Job's template carry the whole pod spec") {
        auto tmpl = Pb().msg(1, meta("")).msg(2, rich_pod_spec());
        auto dep = decoded(envelope("apps/v1", "Deployment",
                                    Pb().msg(1, meta("d")).msg(2, Pb().msg(3, tmpl).msg(4, Pb().str(1, "RollingUpdate")
                                        .msg(2, Pb().msg(1, Pb().i64(1, 1).i32(2, 0).str(3, "25%")).msg(2, Pb().i64(1, 0).i32(2, 1).str(3, "")))))),
                           "apps/v1", "Deployment");
        CHECK(dep.at("spec").at("template").at("spec") == want.at("spec"));
        CHECK(dep.at("spec").at("strategy") == json::parse(R"({"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%","maxSurge":1}})"));
        auto job = decoded(envelope("batch/v1", "Job", Pb().msg(1, meta("j")).msg(2, Pb().msg(6, tmpl))), "batch/v1", "Job");
        CHECK(job.at("spec").at("template").at("spec") == want.at("spec"));
    }
}

TEST_CASE("a malformed protobuf pod is Malformed (400)") {
    using K = ProtobufBodyError::Kind;
    const std::string good = envelope("v1", "Pod", Pb().msg(1, meta("rich")).msg(2, rich_pod_spec()).msg(3, Pb()));
    REQUIRE_NOTHROW(decoded(good, "v1", "Pod"));
    auto pod = [](const Pb& spec) { return envelope("v1", "Pod", Pb().msg(1, meta("p")).msg(2, spec)); };
    Pb cut;  // the pod's message cut short inside its spec, in a well-formed envelope
    cut.bytes = Pb().msg(1, meta("rich")).msg(2, rich_pod_spec()).bytes;
    cut.bytes.resize(cut.bytes.size() - 40);
    struct Case {
        const char* what;
        std::string body;
    };
    const Case malformed[] = {
        {"cut in the spec", envelope("v1", "Pod", cut)},
        {"spec as a varint", envelope("v1", "Pod", Pb().msg(1, meta("p")).i64(2, 1))},
        {"a container's name as a varint", pod(Pb().msg(2, Pb().i64(1, 7)))},
        {"a volume source as a varint (an embedded message)", pod(Pb().msg(1, Pb().str(1, "v").i64(2, 1)))},
        {"a quantity as a varint", pod(Pb().msg(1, Pb().str(1, "v").msg(2, Pb().msg(2, Pb().i64(2, 5)))))},
        {"a quantity's string as a varint", pod(Pb().msg(1, Pb().str(1, "v").msg(2, Pb().msg(2, Pb().msg(2, Pb().i64(1, 5))))))},
        {"a resource list entry's value as a varint", pod(Pb().msg(2, Pb().str(1, "c").msg(8, Pb().msg(1, Pb().str(1, "cpu").i64(2, 1)))))},
        {"a cut quantity", pod(Pb().msg(2, Pb().str(1, "c").msg(8, Pb().msg(1, Pb().str(1, "cpu").put([](auto& o) {
             o.WriteTag(WFL::MakeTag(2, WFL::WIRETYPE_LENGTH_DELIMITED));
             o.WriteVarint32(10);
             o.WriteString("1");
         })))))},
        {"supplementalGroups as fixed64", pod(Pb().msg(14, Pb().put([](auto& o) { WFL::WriteFixed64(4, 1, &o); })))},
        {"a packed supplementalGroups longer than its message", pod(Pb().msg(14, Pb().put([](auto& o) {
             o.WriteTag(WFL::MakeTag(4, WFL::WIRETYPE_LENGTH_DELIMITED));
             o.WriteVarint32(3);
             o.WriteVarint32(1);
         })))},
        {"a packed supplementalGroups cut in a varint", pod(Pb().msg(14, Pb().put([](auto& o) { WFL::WriteBytes(4, "\xe8", &o); })))},
        {"a probe's handler as a varint", pod(Pb().msg(2, Pb().str(1, "c").msg(10, Pb().i64(1, 3))))},
        {"an IntOrString port as a number", pod(Pb().msg(2, Pb().str(1, "c").msg(11, Pb().msg(1, Pb().msg(3, Pb().i64(1, 80))))))},
        {"an IntOrString's type as a string", pod(Pb().msg(2, Pb().str(1, "c").msg(11, Pb().msg(1, Pb().msg(3, Pb().msg(1, Pb().str(1, "80")))))))},
        {"a toleration's seconds as a string", pod(Pb().msg(22, Pb().str(5, "0")))},
        {"an ephemeral container's common part cut", pod(Pb().msg(34, Pb().put([](auto& o) {
             o.WriteTag(WFL::MakeTag(1, WFL::WIRETYPE_LENGTH_DELIMITED));
             o.WriteVarint32(50);
         })))},
    };
    for (const auto& c : malformed) {
        CAPTURE(std::string(c.what));
        CHECK(failure_of(c.body, "v1", "Pod") == K::Malformed);
    }
}

TEST_CASE("a protobuf body of a kind not decoded is Unsupported (415), a broken one Malformed (400)") {
    using K = ProtobufBodyError::Kind;
    const std::string secret = envelope("v1", "Secret", Pb().msg(1, meta("s")).entry(2, "k", "v").str(3, "Opaque"));
    CHECK(failure_of(envelope("v1", "PersistentVolumeClaim", Pb().msg(1, meta("p"))), "v1", "PersistentVolumeClaim") == K::Unsupported);
    CHECK(failure_of(envelope("example.com/v1", "Widget", Pb()), "example.com/v1", "Widget") == K::Unsupported);
    try {
        decode_protobuf_body(envelope("v1", "PersistentVolumeClaim", Pb()), "v1", "PersistentVolumeClaim");
    } catch (const ProtobufBodyError& e) {
        CHECK(std::string(e.what()) == "the vck sandbox decodes protobuf bodies of v1 ConfigMap, v1 Event, v1 Namespace, "
                                       "v1 Secret, v1 ServiceAccount, v1 Service, v1 Pod, coordination.k8s.io/v1 Lease, rbac.authorization.k8s.io/v1 Role, "
                                       "rbac.authorization.k8s.io/v1 ClusterRole, rbac.authorization.k8s.io/v1 RoleBinding, "
                                       "rbac.authorization.k8s.io/v1 ClusterRoleBinding, authorization.k8s.io/v1 "
                                       "SelfSubjectAccessReview, authorization.k8s.io/v1 SelfSubjectRulesReview, "
                                       "authentication.k8s.io/v1 SelfSubjectReview, authentication.k8s.io/v1 TokenRequest, apps/v1 Deployment, "
                                       "batch/v1 Job only, not v1 PersistentVolumeClaim; "
                                       "send it as application/json");
    }
    struct Case {
        const char* what;
        std::string body;
    };
    const Case malformed[] = {
        {"no magic", secret.substr(4)},
        {"JSON", R"({"apiVersion":"v1","kind":"Secret"})"},
        {"cut in the envelope", secret.substr(0, 8)},
        {"cut in the object", secret.substr(0, secret.size() - 3)},
        {"a truncated tag", secret + "\x80"},
        {"a string field as a varint", envelope("v1", "Secret", Pb().i64(3, 1))},
        {"metadata as a varint", envelope("v1", "Secret", Pb().i64(1, 1))},
        {"a length past the end of the object", envelope("v1", "Secret", Pb().msg(1, meta("s")).put([](auto& o) {
             o.WriteTag(WFL::MakeTag(3, WFL::WIRETYPE_LENGTH_DELIMITED));
             o.WriteVarint32(100);
         }))},
        {"an encoded raw", std::string("k8s\0", 4) + Pb().msg(2, Pb().msg(1, meta("s"))).str(3, "gzip").bytes},
    };
    for (const auto& c : malformed) {
        CAPTURE(std::string(c.what));
        CHECK(failure_of(c.body) == K::Malformed);
    }
}

TEST_CASE("the API handler creates and updates from protobuf; other kinds and broken bodies get 415 and 400") {
    ObjectStore store;
    PodLogs logs;
    ApiHandler handler(store, logs);
    auto send = [&](std::string method, std::string path, std::string body) {
        ApiRequest req;
        req.method = std::move(method);
        req.path = std::move(path);
        req.content_type = std::string(protobuf_media_type);
        req.accept = "application/json";
        req.body = std::move(body);
        return std::get<ApiReply>(handler.handle(req));
    };
    auto created = send("POST", "/api/v1/namespaces/default/secrets",
                        envelope("v1", "Secret", Pb().msg(1, meta("s")).entry(2, "k", "v").str(3, "Opaque")));
    REQUIRE(created.status == 201);
    CHECK(created.content_type == "application/json");
    auto secret = json::parse(created.body);
    CHECK(secret.at("data").at("k") == "dg==");
    CHECK(secret.at("metadata").at("namespace") == "default");
    CHECK(secret.at("metadata").at("creationTimestamp").is_string());

    auto ns = send("POST", "/api/v1/namespaces", envelope("v1", "Namespace", Pb().msg(1, meta("n")).msg(2, Pb()).msg(3, Pb())));
    REQUIRE(ns.status == 201);
    CHECK(json::parse(ns.body).at("status").at("phase") == "Active");

    REQUIRE(send("POST", "/api/v1/namespaces/default/configmaps",
                 envelope("v1", "ConfigMap", Pb().msg(1, meta("c")).entry(2, "a", "b"))).status == 201);
    auto rv = std::string(vck::api::string_at(store.get({"", "v1", "configmaps"}, "default", "c"), {"metadata", "resourceVersion"}));
    auto updated = send("PUT", "/api/v1/namespaces/default/configmaps/c",
                        envelope("v1", "ConfigMap", Pb().msg(1, meta("c").str(6, rv)).entry(2, "a", "c")));
    REQUIRE(updated.status == 200);
    CHECK(json::parse(updated.body).at("data").at("a") == "c");

    auto pod = send("POST", "/api/v1/namespaces/default/pods",
                    envelope("v1", "Pod", Pb().msg(1, meta("p")).msg(2, Pb().msg(2, Pb().str(1, "c").str(2, "busybox").msg(8, Pb().resource(1, "cpu", "1"))))));
    REQUIRE(pod.status == 201);
    CHECK(json::parse(pod.body).at("spec").at("containers").at(0).at("resources") == json::parse(R"({"limits":{"cpu":"1"}})"));
    auto claim = send("POST", "/api/v1/namespaces/default/persistentvolumeclaims", envelope("v1", "PersistentVolumeClaim", Pb().msg(1, meta("c"))));
    CHECK(claim.status == 415);
    CHECK(json::parse(claim.body).at("reason") == "UnsupportedMediaType");
    CHECK(json::parse(claim.body).at("message").as_string().find("send v1 PersistentVolumeClaim as application/json") != json::string::npos);

    auto broken = send("POST", "/api/v1/namespaces/default/secrets", envelope("v1", "Secret", Pb().i64(1, 1)));
    CHECK(broken.status == 400);
    CHECK(json::parse(broken.body).at("reason") == "BadRequest");
    CHECK(json::parse(broken.body).at("message").as_string().starts_with("the protobuf request body is not valid: wrong wire type 0"));
}

TEST_CASE("list options are checked as kube-apiserver checks them: resourceVersionMatch needs a resourceVersion and no continue token") {
    ObjectStore store;
    PodLogs logs;
    ApiHandler handler(store, logs);
    auto list = [&](std::map<std::string, std::string> query, std::string method = "GET") {
        ApiRequest req;
        req.method = std::move(method);
        req.path = "/api/v1/namespaces/default/configmaps";
        req.query = std::move(query);
        req.accept = "application/json";
        auto reply = std::get<ApiReply>(handler.handle(req));
        auto body = json::parse(reply.body);
        return std::pair{reply.status, std::string(body.as_object().contains("message") ? body.at("message").as_string() : "")};
    };
    CHECK(list({}).first == 200);
    CHECK(list({{"resourceVersion", "0"}, {"resourceVersionMatch", "NotOlderThan"}}).first == 200);
    CHECK(list({{"resourceVersionMatch", "NotOlderThan"}}) ==
          std::pair{422, std::string(R"(ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: )"
                                     "resourceVersionMatch is forbidden unless resourceVersion is provided")});
    CHECK(list({{"resourceVersion", "1"}, {"resourceVersionMatch", "Newest"}}) ==
          std::pair{422, std::string(R"(ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: )"
                                     R"("Newest": supported values: "Exact", "NotOlderThan", "")")});
    CHECK(list({{"resourceVersion", "0"}, {"resourceVersionMatch", "Exact"}}) ==
          std::pair{422, std::string(R"(ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: )"
                                     R"(resourceVersionMatch "exact" is forbidden for resourceVersion "0")")});
    // A continue token carries its snapshot: neither a match rule nor another version beside it.
    for (int i = 0; i < 3; ++i) {
        ApiRequest create;
        create.method = "POST";
        create.path = "/api/v1/namespaces/default/configmaps";
        create.content_type = "application/json";
        create.body = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c)" + std::to_string(i) + R"("}})";
        REQUIRE(std::get<ApiReply>(handler.handle(create)).status == 201);
    }
    ApiRequest first;
    first.method = "GET";
    first.path = "/api/v1/namespaces/default/configmaps";
    first.query = {{"limit", "1"}};
    auto page = json::parse(std::get<ApiReply>(handler.handle(first)).body);
    std::string token(page.at("metadata").at("continue").as_string());
    std::string rv(page.at("metadata").at("resourceVersion").as_string());
    CHECK(list({{"limit", "1"}, {"continue", token}}).first == 200);
    CHECK(list({{"limit", "1"}, {"continue", token}, {"resourceVersion", "0"}}).first == 200);
    CHECK(list({{"continue", token}, {"resourceVersion", rv}, {"resourceVersionMatch", "Exact"}}) ==
          std::pair{422, std::string(R"(ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: )"
                                     "resourceVersionMatch is forbidden when continue is provided")});
    CHECK(list({{"continue", token}, {"resourceVersion", rv}}) ==
          std::pair{400, std::string("specifying resource version is not allowed when using continue")});
    // deletecollection reads the same options; nothing is deleted by a refused one.
    CHECK(list({{"resourceVersionMatch", "Exact"}}, "DELETE").first == 422);
    CHECK(store.list({"", "v1", "configmaps"}, "default", {}).at("items").as_array().size() == 3);
}

namespace {

/// An in-process request as `user` (groups as authentication gives them).
ApiReply rbac_request_as(ApiHandler& handler, std::string user, std::vector<std::string> groups, std::string method,
                         std::string path, std::map<std::string, std::string> query = {}, std::string body = {}) {
    ApiRequest req;
    req.method = std::move(method);
    req.path = std::move(path);
    req.query = std::move(query);
    req.accept = "application/json";
    req.content_type = body.empty() ? "" : "application/json";
    req.body = std::move(body);
    req.who = Identity{std::move(user), std::move(groups)};
    return std::get<ApiReply>(handler.handle(req));
}

} // namespace

TEST_CASE("the API handler refuses what RBAC does not allow with kube-apiserver's 403, and serves it once a binding grants it") {
    ObjectStore store;
    PodLogs logs;
    ApiHandler handler(store, logs);
    auto refused = [&](std::string method, std::string path, std::map<std::string, std::string> query = {}) {
        auto reply = rbac_request_as(handler, "jane", {"dev"}, std::move(method), std::move(path), std::move(query));
        CHECK(reply.status == 403);
        return json::parse(reply.body);
    };
    auto list = refused("GET", "/api/v1/namespaces/default/pods");
    CHECK(list.at("kind") == "Status");
    CHECK(list.at("reason") == "Forbidden");
    CHECK(list.at("code") == 403);
    CHECK(list.at("message") == R"(pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "default")");
    CHECK(list.at("details").at("kind") == "pods");
    CHECK(refused("GET", "/api/v1/namespaces/default/pods", {{"watch", "true"}}).at("message") ==
          R"(pods is forbidden: User "jane" cannot watch resource "pods" in API group "" in the namespace "default")");
    CHECK(refused("GET", "/api/v1/nodes").at("message") ==
          R"(nodes is forbidden: User "jane" cannot list resource "nodes" in API group "" at the cluster scope)");
    CHECK(refused("GET", "/api/v1/namespaces/default/pods/p/log").at("message") ==
          R"(pods "p" is forbidden: User "jane" cannot get resource "pods/log" in API group "" in the namespace "default")");
    auto named_cm = refused("GET", "/api/v1/namespaces/default/configmaps/x");
    CHECK(named_cm.at("message") ==
          R"(configmaps "x" is forbidden: User "jane" cannot get resource "configmaps" in API group "" in the namespace "default")");
    CHECK(named_cm.at("details").at("name") == "x");
    CHECK(refused("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterroles").at("message") ==
          R"(clusterroles.rbac.authorization.k8s.io is forbidden: User "jane" cannot deletecollection resource "clusterroles" )"
          R"(in API group "rbac.authorization.k8s.io" at the cluster scope)");
    // A namespace's own path is in that namespace, as the request info resolver reads it.
    CHECK(refused("GET", "/api/v1/namespaces/kube-system").at("message") ==
          R"(namespaces "kube-system" is forbidden: User "jane" cannot get resource "namespaces" in API group "" in the namespace "kube-system")");
    CHECK(refused("GET", "/metrics").at("message") == R"(forbidden: User "jane" cannot get path "/metrics")");
    CHECK(refused("POST", "/api").at("message") == R"(forbidden: User "jane" cannot post path "/api")");
    // Discovery, health and version: everyone authenticated.
    for (const char* path : {"/api", "/api/v1", "/apis", "/apis/rbac.authorization.k8s.io/v1", "/version", "/healthz", "/openapi/v3"})
        CHECK_MESSAGE(rbac_request_as(handler, "jane", {"dev"}, "GET", path).status == 200, path);
    // The sandbox's admin and in-process callers (no identity) are not held back.
    CHECK(rbac_request_as(handler, "sandbox-admin", {"system:masters"}, "GET", "/api/v1/nodes").status == 200);

    // A Role in default and a RoleBinding for the group dev grant listing pods there, and no more.
    auto admin = [&](std::string path, std::string body) {
        ApiRequest req;
        req.method = "POST";
        req.path = std::move(path);
        req.content_type = "application/json";
        req.body = std::move(body);
        return std::get<ApiReply>(handler.handle(req)).status;
    };
    REQUIRE(admin("/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
                  R"({"metadata":{"name":"pods"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["list"]},
                     {"apiGroups":[""],"resources":["configmaps"],"resourceNames":["x"],"verbs":["get","list"]}]})") == 201);
    REQUIRE(admin("/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
                  R"({"metadata":{"name":"dev-pods"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"pods"},
                     "subjects":[{"kind":"Group","name":"dev"}]})") == 201);
    CHECK(rbac_request_as(handler, "jane", {"dev"}, "GET", "/api/v1/namespaces/default/pods").status == 200);
    CHECK(rbac_request_as(handler, "jane", {"dev"}, "GET", "/api/v1/namespaces/kube-system/pods").status == 403);
    CHECK(rbac_request_as(handler, "jane", {"dev"}, "GET", "/api/v1/namespaces/default/configmaps").status == 403);
    // A list narrowed to one name by its field selector is a request for that name.
    CHECK(rbac_request_as(handler, "jane", {"dev"}, "GET", "/api/v1/namespaces/default/configmaps",
                          {{"fieldSelector", "metadata.name=x"}}).status == 200);
    CHECK(rbac_request_as(handler, "jane", {"dev"}, "GET", "/api/v1/namespaces/default/configmaps/x").status == 404);
}

TEST_CASE("the API handler reads RBAC from a policy rebuilt only when a role or binding changed, and every change counts at once") {
    ObjectStore store;
    PodLogs logs;
    ApiHandler handler(store, logs);
    auto as_jane = [&] { return rbac_request_as(handler, "jane", {}, "GET", "/api/v1/namespaces/default/configmaps").status; };
    CHECK(as_jane() == 403);
    const auto first = handler.rbac_policy_builds();
    // Requests and writes of other kinds reuse the policy.
    for (int i = 0; i < 20; ++i) CHECK(as_jane() == 403);
    store.create({"", "v1", "configmaps"}, "default", json::parse(R"({"metadata":{"name":"c"}})"));
    CHECK(as_jane() == 403);
    CHECK(handler.rbac_policy_builds() == first);
    // A binding is seen by the very next request, and so is its removal.
    const ResourceId roles{"rbac.authorization.k8s.io", "v1", "roles"};
    const ResourceId bindings{"rbac.authorization.k8s.io", "v1", "rolebindings"};
    store.create(roles, "default", json::parse(R"({"metadata":{"name":"cm"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["list"]}]})"));
    store.create(bindings, "default", json::parse(R"({"metadata":{"name":"jane-cm"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"cm"},"subjects":[{"kind":"User","name":"jane"}]})"));
    CHECK(as_jane() == 200);
    CHECK(handler.rbac_policy_builds() == first + 1);
    store.remove(bindings, "default", "jane-cm");
    CHECK(as_jane() == 403);
    CHECK(handler.rbac_policy_builds() == first + 2);
}

TEST_CASE("the API handler answers kubectl auth can-i and whoami for the requester") {
    ObjectStore store;
    PodLogs logs;
    ApiHandler handler(store, logs);
    auto review = rbac_request_as(handler, "jane", {"dev"}, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {},
                                  R"({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview",)"
                                  R"("spec":{"resourceAttributes":{"namespace":"default","verb":"list","resource":"pods"}}})");
    CHECK(review.status == 201);
    CHECK(json::parse(review.body).at("status").at("allowed") == false);
    auto admin = rbac_request_as(handler, "sandbox-admin", {"system:masters"}, "POST",
                                 "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {},
                                 R"({"spec":{"resourceAttributes":{"namespace":"default","verb":"list","resource":"pods"}}})");
    CHECK(json::parse(admin.body).at("status").at("allowed") == true);
    auto me = rbac_request_as(handler, "jane", {"dev"}, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {},
                              R"({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"})");
    CHECK(me.status == 201);
    CHECK(json::parse(me.body).at("status").at("userInfo").at("username") == "jane");
    CHECK(rbac_request_as(handler, "jane", {"dev"}, "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", {},
                          R"({"spec":{"namespace":"default"}})").status == 201);
    // Discovery lists them as create-only, cluster-scoped resources.
    auto resources = json::parse(rbac_request_as(handler, "jane", {"dev"}, "GET", "/apis/authorization.k8s.io/v1").body);
    bool listed = false;
    for (const auto& r : resources.at("resources").as_array())
        if (r.at("name") == "selfsubjectaccessreviews") listed = r.at("verbs") == json::array{"create"} && r.at("namespaced") == false;
    CHECK(listed);
    CHECK(rbac_request_as(handler, "sandbox-admin", {"system:masters"}, "GET",
                          "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews").status == 405);
}

TEST_CASE("the API handler refuses a Role or binding written by a user that would grant more than the user holds") {
    ObjectStore store;
    PodLogs logs;
    ApiHandler handler(store, logs);
    store.create({"rbac.authorization.k8s.io", "v1", "roles"}, "default", json::parse(R"({"metadata":{"name":"role-writer"},"rules":[
        {"apiGroups":["rbac.authorization.k8s.io"],"resources":["roles"],"verbs":["create","patch"]},
        {"apiGroups":[""],"resources":["pods"],"verbs":["list"]}]})"));
    store.create({"rbac.authorization.k8s.io", "v1", "rolebindings"}, "default", json::parse(R"({"metadata":{"name":"jane"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"role-writer"},"subjects":[{"kind":"User","name":"jane"}]})"));
    const std::string roles = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles";
    CHECK(rbac_request_as(handler, "jane", {"dev"}, "POST", roles, {},
                          R"({"metadata":{"name":"mine"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["list"]}]})")
              .status == 201);
    auto refused = rbac_request_as(handler, "jane", {"dev"}, "POST", roles, {},
                                   R"({"metadata":{"name":"more"},"rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}]})");
    CHECK(refused.status == 403);
    CHECK(json::parse(refused.body).at("message") ==
          "roles.rbac.authorization.k8s.io \"more\" is forbidden: user \"jane\" (groups=[\"dev\" \"system:authenticated\"]) is "
          "attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}");
    CHECK_THROWS(store.get({"rbac.authorization.k8s.io", "v1", "roles"}, "default", "more"));
    // A patch is judged on the object it would store.
    ApiRequest patch;
    patch.method = "PATCH";
    patch.path = roles + "/mine";
    patch.content_type = "application/merge-patch+json";
    patch.body = R"({"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["list","delete"]}]})";
    patch.who = Identity{"jane", {"dev"}};
    CHECK(std::get<ApiReply>(handler.handle(patch)).status == 403);
    CHECK(store.get({"rbac.authorization.k8s.io", "v1", "roles"}, "default", "mine").at("rules").at(0).at("verbs") ==
          json::array{"list"});
}

TEST_CASE("every JSON body the API handler answers ends with a newline, as kube-apiserver's encoder writes it") {
    ObjectStore store;
    PodLogs logs;
    ApiHandler handler(store, logs);
    auto get = [&](std::string path) {
        ApiRequest req;
        req.method = "GET";
        req.path = std::move(path);
        req.accept = "application/json";
        return std::get<ApiReply>(handler.handle(req));
    };
    auto missing = get("/api/v1/namespaces/default/configmaps/none");
    CHECK(missing.status == 404);
    CHECK(missing.body.ends_with("}\n"));
    auto list = get("/api/v1/namespaces/default/configmaps");
    CHECK(list.status == 200);
    CHECK(list.body.ends_with("}\n"));
    CHECK(get("/version").body.ends_with("}\n"));
}

TEST_CASE("/healthz, /livez and /readyz answer as kube-apiserver: ok, a verbose list of checks, 404 for a check it lacks") {
    ObjectStore store;
    PodLogs logs;
    ApiHandler handler(store, logs);
    auto get = [&](std::string path, std::map<std::string, std::string> query = {}) {
        ApiRequest req;
        req.method = "GET";
        req.path = std::move(path);
        req.query = std::move(query);
        return std::get<ApiReply>(handler.handle(req));
    };
    CHECK(get("/readyz").body == "ok");
    auto verbose = get("/readyz", {{"verbose", ""}});
    CHECK(verbose.status == 200);
    CHECK(verbose.body.starts_with("[+]ping ok\n[+]log ok\n[+]etcd ok\n"));
    CHECK(verbose.body.ends_with("\nreadyz check passed\n"));
    CHECK(get("/livez", {{"verbose", ""}}).body.ends_with("]etcd ok\nlivez check passed\n"));
    CHECK(get("/readyz/etcd").body == "ok");
    CHECK(get("/readyz/nonesuch").status == 404);
}
