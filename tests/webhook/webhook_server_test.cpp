// webhook/webhook_server.hpp over real HTTPS: a Beast client trusting the test CA talks to the
// server as kube-apiserver would, and reads answers, certificates and metrics.
#include <vck/api/core_v1.hpp>
#include <vck/client/tls.hpp>
#include <vck/runtime/log.hpp>
#include <vck/sandbox/server/certs.hpp>
#include <vck/sandbox/eventually.hpp>
#include <vck/sandbox/storage/patch.hpp>
#include <vck/webhook/webhook_server.hpp>

#include <doctest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <openssl/pem.h>
#include <openssl/x509.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace webhook_server_test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
namespace fs = std::filesystem;
using namespace vck::webhook;

/// The DER bytes of the (first) certificate in `pem`, to compare with what a server presents.
std::string der_of_pem(const std::string& pem) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    REQUIRE(cert != nullptr);
    unsigned char* out = nullptr;
    int n = i2d_X509(cert, &out);
    std::string der(reinterpret_cast<char*>(out), static_cast<std::size_t>(n));
    OPENSSL_free(out);
    X509_free(cert);
    return der;
}

void write_file(const fs::path& p, const std::string& text) {
    // As cert-manager's volume update does, each file appears whole (written aside, renamed).
    auto tmp = p;
    tmp += ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << text;
    }
    fs::rename(tmp, p);
}

struct Reply {
    int status = 0;
    std::string content_type;
    std::string body;
    std::string peer_der;  // the certificate the server presented
};

/// One HTTPS request on a new connection, verifying the server against `ca_pem` for 127.0.0.1.
Reply call(std::uint16_t port, const std::string& ca_pem, http::verb verb, const std::string& target,
           const std::string& content_type, const std::string& body) {
    asio::io_context ioc;
    vck::client::TlsSettings settings;
    settings.ca_pem = ca_pem;
    auto ctx = vck::client::make_client_tls_context(settings);
    beast::ssl_stream<beast::tcp_stream> stream(ioc, *ctx);
    vck::client::prepare_tls_connection(stream.native_handle(), "127.0.0.1", true);
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(60));
    beast::get_lowest_layer(stream).connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    stream.handshake(asio::ssl::stream_base::client);
    Reply r;
    if (X509* peer = SSL_get1_peer_certificate(stream.native_handle())) {
        unsigned char* out = nullptr;
        int n = i2d_X509(peer, &out);
        r.peer_der.assign(reinterpret_cast<char*>(out), static_cast<std::size_t>(n));
        OPENSSL_free(out);
        X509_free(peer);
    }
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1");
    if (!content_type.empty()) req.set(http::field::content_type, content_type);
    req.body() = body;
    req.keep_alive(false);
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buf;
    http::response<http::string_body> res;
    http::read(stream, buf, res);
    r.status = res.result_int();
    r.content_type = std::string(res[http::field::content_type]);
    r.body = res.body();
    boost::system::error_code ec;
    stream.shutdown(ec);  // the server may close first: not the test's concern
    return r;
}

std::string review(const json::value& object, const std::string& uid = "uid-1", const char* op = "CREATE") {
    return json::serialize(json::value{
        {"kind", "AdmissionReview"},
        {"apiVersion", "admission.k8s.io/v1"},
        {"request",
         {{"uid", uid},
          {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
          {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
          {"namespace", "team"},
          {"operation", op},
          {"userInfo", {{"username", "system:serviceaccount:team:deployer"}}},
          {"object", object}}}});
}

const json::value kPodObject = json::parse(R"({"apiVersion":"v1","kind":"Pod",
  "metadata":{"name":"web","namespace":"team","annotations":{"keep":"me"}},
  "spec":{"containers":[{"name":"app","image":"nginx","ports":[{"containerPort":80}]}]}})");

/// A server on its own io_context thread, serving the CA's certificate from files in a
/// fresh directory.
struct Harness {
    vck::sandbox::SandboxCertificateAuthority ca;
    fs::path dir;
    asio::io_context ioc;
    asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(ioc);
    std::shared_ptr<vck::runtime::MetricsRegistry> metrics = std::make_shared<vck::runtime::MetricsRegistry>();
    std::unique_ptr<WebhookServer> server;
    std::thread thread;
    vck::sandbox::PemPair serving = ca.issue_server();

    Harness() {
        static std::atomic<int> n{0};
        dir = fs::temp_directory_path() / ("vck-webhook-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
        fs::create_directories(dir);
        write_file(cert(), serving.cert_pem);
        write_file(key(), serving.key_pem);
        WebhookServer::Options o;
        o.cert_file = cert().string();
        o.key_file = key().string();
        o.flag = "--webhook-bind-address";
        server = std::make_unique<WebhookServer>(ioc.get_executor(), o, metrics);
        thread = std::thread([this] { ioc.run(); });
    }
    ~Harness() {
        server.reset();  // stop(): the listener and connections close on the io thread
        work.reset();
        thread.join();
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    fs::path cert() const { return dir / "tls.crt"; }
    fs::path key() const { return dir / "tls.key"; }

    Reply post(const std::string& path, const std::string& body, const std::string& content_type = "application/json") {
        return call(server->port(), ca.cert_pem(), http::verb::post, path, content_type, body);
    }
    AdmissionResponse admit(const std::string& path, const std::string& body) {
        auto r = post(path, body);
        CHECK(r.status == 200);
        CHECK(r.content_type == "application/json");
        return decode_response_review(std::string_view(r.body));
    }
};

TEST_CASE("a mutating webhook's patch, decoded from the HTTPS answer, gives the mutated object") {
    Harness h;
    json::value mutated;
    h.server->handle("/mutate-pods", mutating([&](const AdmissionRequest& req, json::value& obj) {
        obj.at("metadata").as_object()["labels"] = json::object{{"injected", "true"}};
        obj.at("spec").at("containers").as_array().push_back(json::parse(R"({"name":"proxy","image":"envoy"})"));
        obj.at("metadata").at("annotations").as_object()["by"] = req.userInfo.username;
        mutated = obj;
        return allowed();
    }));
    h.server->start();
    auto raw = h.post("/mutate-pods", review(kPodObject, "m-1"));
    REQUIRE(raw.status == 200);
    auto res = json::parse(raw.body).at("response");
    CHECK(res.at("patchType") == "JSONPatch");
    auto r = decode_response_review(std::string_view(raw.body));
    CHECK(r.uid == "m-1");
    CHECK(r.allowed);
    CHECK(vck::sandbox::json_equal(vck::sandbox::apply_json_patch(kPodObject, json::value(r.patch)), mutated));
    CHECK(mutated.at("metadata").at("annotations").at("by") == "system:serviceaccount:team:deployer");
}

TEST_CASE("a typed mutating webhook over HTTPS patches only what its handler changed") {
    Harness h;
    h.server->handle("/default-pods", mutating_for<vck::api::Pod>([](const AdmissionRequest&, vck::api::Pod& pod) {
        if (pod.spec.restartPolicy.empty()) pod.spec.restartPolicy = "Always";
        return allowed();
    }));
    h.server->start();
    auto r = h.admit("/default-pods", review(kPodObject));
    REQUIRE(r.patch.size() == 1);
    CHECK(r.patch[0] == json::parse(R"({"op":"add","path":"/spec/restartPolicy","value":"Always"})"));
}

TEST_CASE("a validating webhook's denial carries its message, code 403, reason and warnings") {
    Harness h;
    h.server->handle("/validate-pods", validating([](const AdmissionRequest& req) {
        if (req.namespace_ == "team")
            return denied("pods in namespace team need an owner label").with_warnings({"image nginx is unpinned"});
        return allowed();
    }));
    h.server->start();
    auto raw = h.post("/validate-pods", review(kPodObject, "v-1"));
    REQUIRE(raw.status == 200);
    auto res = json::parse(raw.body).at("response");
    CHECK(res.at("uid") == "v-1");
    CHECK(res.at("allowed") == false);
    CHECK(res.at("status").at("code") == 403);
    CHECK(res.at("status").at("reason") == "Forbidden");
    CHECK(res.at("status").at("message") == "pods in namespace team need an owner label");
    CHECK(res.at("warnings") == json::parse(R"(["image nginx is unpinned"])"));
}

TEST_CASE("bad requests get 400 with a message, other methods 405 and other paths 404") {
    Harness h;
    h.server->handle("/validate", validating([](const AdmissionRequest&) { return allowed(); }));
    h.server->start();
    auto message_of = [](const Reply& r) {
        CHECK(r.status == 400);
        return decode_response_review(std::string_view(r.body)).status->message;
    };
    CHECK(message_of(h.post("/validate", "{not json")).rfind("decoding the AdmissionReview: invalid JSON", 0) == 0);
    CHECK(message_of(h.post("/validate", "")) == "request body is empty");
    CHECK(message_of(h.post("/validate", R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x"}})")) ==
          "decoding the AdmissionReview: apiVersion: \"admission.k8s.io/v1beta1\" is not admission.k8s.io/v1");
    CHECK(message_of(h.post("/validate", R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})")) ==
          "decoding the AdmissionReview: request: required value missing");
    CHECK(message_of(h.post("/validate", review(kPodObject), "application/yaml")) ==
          "contentType=application/yaml, expected application/json");

    auto get = call(h.server->port(), h.ca.cert_pem(), http::verb::get, "/validate", "", "");
    CHECK(get.status == 405);
    CHECK(get.body.find("not allowed") != std::string::npos);
    auto missing = h.post("/nowhere", review(kPodObject));
    CHECK(missing.status == 404);
    CHECK(missing.body == "404 page not found\n");
    // And the server still answers properly.
    CHECK(h.admit("/validate", review(kPodObject)).allowed);
}

TEST_CASE("a handler that throws is answered allowed=false with code 500, and the next request is served") {
    Harness h;
    std::atomic<int> calls{0};
    h.server->handle("/flaky", validating([&](const AdmissionRequest&) {
        if (calls++ == 0) throw std::runtime_error("policy store unavailable");
        return allowed();
    }));
    h.server->start();
    auto first = h.admit("/flaky", review(kPodObject, "f-1"));
    CHECK(first.uid == "f-1");
    CHECK_FALSE(first.allowed);
    CHECK(first.status->code == 500);
    CHECK(first.status->message == "policy store unavailable");
    auto second = h.admit("/flaky", review(kPodObject, "f-2"));
    CHECK(second.uid == "f-2");
    CHECK(second.allowed);
}

TEST_CASE("a rotated certificate reaches new connections; a pair that does not load keeps the old one") {
    Harness h;
    h.server->handle("/validate", validating([](const AdmissionRequest&) { return allowed(); }));
    h.server->start();
    auto first = h.post("/validate", review(kPodObject));
    CHECK(first.status == 200);
    CHECK(first.peer_der == der_of_pem(h.serving.cert_pem));

    std::vector<std::string> logged;
    std::mutex log_mu;
    vck::log::set_sink([&](std::string_view line) {
        std::lock_guard lk(log_mu);
        logged.emplace_back(line);
    });
    // Half written: the certificate file cut short. The previous pair keeps serving.
    write_file(h.cert(), h.serving.cert_pem.substr(0, 100));
    auto during = h.post("/validate", review(kPodObject));
    CHECK(during.status == 200);
    CHECK(during.peer_der == der_of_pem(h.serving.cert_pem));

    auto rotated = h.ca.issue_server({"webhook.team.svc"});  // a new key, serial and names
    write_file(h.cert(), rotated.cert_pem);
    write_file(h.key(), rotated.key_pem);
    auto after = h.post("/validate", review(kPodObject));
    CHECK(after.status == 200);
    CHECK(after.peer_der == der_of_pem(rotated.cert_pem));
    CHECK(after.peer_der != first.peer_der);
    vck::log::set_sink({});
    std::lock_guard lk(log_mu);
    bool kept = false, reloaded = false;
    for (const auto& l : logged) {
        kept = kept || l.find("Could not reload the webhook serving certificate") != std::string::npos;
        reloaded = reloaded || l.find("Reloaded the webhook serving certificate") != std::string::npos;
    }
    CHECK(kept);
    CHECK(reloaded);
}

TEST_CASE("start() refuses a missing or invalid certificate or key, naming the file") {
    Harness h;
    auto start_error = [&](const std::string& cert, const std::string& key) {
        asio::io_context ioc;
        WebhookServer::Options o;
        o.cert_file = cert;
        o.key_file = key;
        WebhookServer s(ioc.get_executor(), o);
        try {
            s.start();
        } catch (const std::runtime_error& e) {
            return std::string(e.what());
        }
        return std::string("(started)");
    };
    auto missing = (h.dir / "absent.crt").string();
    CHECK(start_error(missing, h.key().string()) == "webhook serving certificate " + missing + ": No such file or directory");
    write_file(h.dir / "junk.pem", "not a certificate\n");
    CHECK(start_error((h.dir / "junk.pem").string(), h.key().string()) ==
          "webhook serving certificate " + (h.dir / "junk.pem").string() + ": not a valid PEM certificate");
    CHECK(start_error(h.cert().string(), (h.dir / "junk.pem").string()) ==
          "webhook serving key " + (h.dir / "junk.pem").string() + ": not a valid PEM private key");
    auto other = h.ca.issue_server();
    write_file(h.dir / "other.key", other.key_pem);
    CHECK(start_error(h.cert().string(), (h.dir / "other.key").string()) ==
          "webhook serving key " + (h.dir / "other.key").string() + " does not match the certificate " + h.cert().string());
}

TEST_CASE("an address in use is reported naming the flag") {
    Harness h;
    h.server->start();
    asio::io_context ioc;
    WebhookServer::Options o;
    o.cert_file = h.cert().string();
    o.key_file = h.key().string();
    o.port = h.server->port();
    o.flag = "--webhook-bind-address";
    WebhookServer second(ioc.get_executor(), o);
    CHECK_THROWS_WITH(second.start(), ("--webhook-bind-address 127.0.0.1:" + std::to_string(o.port) +
                                       ": address already in use").c_str());
}

TEST_CASE("requests are counted under controller-runtime's webhook metrics") {
    Harness h;
    h.server->handle("/validate", validating([](const AdmissionRequest&) { return denied("no"); }));
    h.server->start();
    for (int i = 0; i < 3; ++i) h.admit("/validate", review(kPodObject));
    CHECK(h.post("/validate", "", "application/json").status == 400);
    auto text = h.metrics->render();
    INFO(text);
    CHECK(text.find("# TYPE controller_runtime_webhook_requests_total counter") != std::string::npos);
    CHECK(text.find("controller_runtime_webhook_requests_total{webhook=\"/validate\",code=\"200\"} 3\n") != std::string::npos);
    CHECK(text.find("controller_runtime_webhook_requests_total{webhook=\"/validate\",code=\"400\"} 1\n") != std::string::npos);
    CHECK(text.find("controller_runtime_webhook_requests_total{webhook=\"/validate\",code=\"500\"} 0\n") != std::string::npos);
    CHECK(text.find("# TYPE controller_runtime_webhook_latency_seconds histogram") != std::string::npos);
    CHECK(text.find("controller_runtime_webhook_latency_seconds_count{webhook=\"/validate\"} 4\n") != std::string::npos);
    CHECK(text.find("controller_runtime_webhook_latency_seconds_bucket{webhook=\"/validate\",le=\"1000\"} 4\n") != std::string::npos);
    CHECK(text.find("# TYPE controller_runtime_webhook_requests_in_flight gauge") != std::string::npos);
    CHECK(text.find("controller_runtime_webhook_requests_in_flight{webhook=\"/validate\"} 0\n") != std::string::npos);
}

TEST_CASE("fifty concurrent requests are all answered, each with its own uid") {
    Harness h;
    h.server->handle("/mutate", mutating([](const AdmissionRequest& req, json::value& obj) {
        obj.at("metadata").as_object()["labels"] = json::object{{"uid", req.uid}};
        return allowed();
    }));
    h.server->start();
    std::vector<std::future<AdmissionResponse>> pending;
    for (int i = 0; i < 50; ++i)
        pending.push_back(std::async(std::launch::async, [&h, i] {
            auto r = call(h.server->port(), h.ca.cert_pem(), http::verb::post, "/mutate", "application/json",
                          review(kPodObject, "c-" + std::to_string(i)));
            if (r.status != 200) throw std::runtime_error("status " + std::to_string(r.status));
            return decode_response_review(std::string_view(r.body));
        }));
    int answered = 0;
    for (int i = 0; i < 50; ++i) {
        auto r = pending[static_cast<std::size_t>(i)].get();
        CHECK(r.uid == "c-" + std::to_string(i));
        auto patched = vck::sandbox::apply_json_patch(kPodObject, json::value(r.patch));
        CHECK(patched.at("metadata").at("labels").at("uid") == json::value(r.uid));
        ++answered;
    }
    CHECK(answered == 50);
    CHECK(h.metrics->value("controller_runtime_webhook_requests_total", {{"webhook", "/mutate"}, {"code", "200"}}) == 50);
}

TEST_CASE("a request being handled shows in the in-flight gauge until it is answered") {
    Harness h;
    std::promise<void> release;
    auto released = release.get_future().share();
    std::atomic<bool> entered{false};
    h.server->handle("/slow", validating([&](const AdmissionRequest&) {
        entered = true;
        released.wait();
        return allowed();
    }));
    h.server->start();
    auto answer = std::async(std::launch::async, [&] { return h.post("/slow", review(kPodObject)); });
    const vck::runtime::MetricLabels gauge{{"webhook", "/slow"}};
    CHECK(vck::sandbox::eventually([&] { return entered.load(); }));
    CHECK(h.metrics->value("controller_runtime_webhook_requests_in_flight", gauge) == 1);
    release.set_value();
    CHECK(answer.get().status == 200);
    CHECK(h.metrics->value("controller_runtime_webhook_requests_in_flight", gauge) == 0);
}

TEST_CASE("after stop() the server accepts no connection") {
    Harness h;
    h.server->handle("/validate", validating([](const AdmissionRequest&) { return allowed(); }));
    h.server->start();
    CHECK(h.post("/validate", review(kPodObject)).status == 200);
    auto port = h.server->port();
    h.server->stop();
    CHECK(vck::sandbox::eventually([&] {
        try {
            call(port, h.ca.cert_pem(), http::verb::post, "/validate", "application/json", review(kPodObject));
            return false;
        } catch (const std::exception&) {
            return true;  // refused (or closed before an answer)
        }
    }));
}

} // namespace webhook_server_test
