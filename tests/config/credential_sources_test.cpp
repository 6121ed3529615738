// Specification of the credential sources (exec plugins, token files), in-cluster
// configuration and load_default's search order. Exec plugins are real shell scripts that
// count their runs, which is how caching and refresh are observed.
#include "kubeconfig_fixture.hpp"

#include <vck/client/default_config.hpp>
#include <vck/client/exec_credential_source.hpp>
#include <vck/client/file_token_source.hpp>
#include <vck/client/in_cluster.hpp>
#include <vck/client/kubeconfig.hpp>

#include <boost/json.hpp>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

using namespace config_test;
using namespace std::chrono_literals;
using vck::client::Config;
using vck::client::ConfigError;
using vck::client::ExecConfig;
using vck::client::ExecCredentialSource;
using vck::client::FileTokenSource;
using vck::client::InClusterOptions;
using vck::client::KubeconfigOptions;

namespace {

constexpr const char* v1 = "client.authentication.k8s.io/v1";
constexpr const char* v1beta1 = "client.authentication.k8s.io/v1beta1";

/// A plugin body printing an ExecCredential with token "tok-<run number>".
std::string token_output(const std::string& api, const std::string& expiry = "") {
    std::string status = "\"token\":\"tok-$n\"";
    if (!expiry.empty()) status += ",\"expirationTimestamp\":\"" + expiry + "\"";
    return "cat <<EOF\n{\"kind\":\"ExecCredential\",\"apiVersion\":\"" + api + "\",\"status\":{" + status + "}}\nEOF";
}

ExecConfig exec_of(const fs::path& command, const std::string& api = v1) {
    ExecConfig e;
    e.command = command.string();
    e.api_version = api;
    e.interactive_mode = "Never";
    return e;
}

template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const ConfigError& e) {
        return e.what();
    }
    FAIL("no ConfigError was thrown");
    return {};
}

/// A kubeconfig whose user runs `plugin`, written with kubectl.
fs::path exec_kubeconfig(const ScratchDir& dir, const fs::path& plugin, const std::string& extra = "") {
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://10.9.8.7:6443 --tls-server-name=api.test");
    kubectl(f, "set-credentials u --exec-command='" + plugin.string() + "' --exec-api-version=" + v1 +
                   " --exec-interactive-mode=Never " + extra);
    kubectl(f, "set-context ctx --cluster=c --user=u");
    kubectl(f, "use-context ctx");
    return f;
}

} // namespace

// ---- exec plugins ----

TEST_CASE("an exec plugin's token is cached while it has no expiry") {
    ScratchDir dir;
    ExecCredentialSource src(exec_of(write_plugin(dir, "p", token_output(v1))));
    CHECK(plugin_runs(dir, "p") == 0);  // nothing runs before credentials are asked for
    CHECK(src.current().token == "tok-1");
    CHECK(src.current().token == "tok-1");
    CHECK_FALSE(src.current().expires.has_value());
    CHECK(plugin_runs(dir, "p") == 1);
}

TEST_CASE("an exec plugin's token is cached until its expirationTimestamp, then refreshed") {
    ScratchDir dir;
    auto t0 = std::chrono::system_clock::from_time_t(1893456000);  // 2030-01-01T00:00:00Z
    auto now = t0 - 1h;
    ExecCredentialSource src(exec_of(write_plugin(dir, "p", token_output(v1, "2030-01-01T00:00:00Z"))), {}, "",
                             [&] { return now; });
    CHECK(src.current().token == "tok-1");
    REQUIRE(src.current().expires.has_value());
    CHECK(*src.current().expires == t0);
    now = t0 - 1s;
    CHECK(src.current().token == "tok-1");
    CHECK(plugin_runs(dir, "p") == 1);
    now = t0;
    CHECK(src.current().token == "tok-2");
    CHECK(plugin_runs(dir, "p") == 2);
}

TEST_CASE("an already expired exec credential is fetched again on every call") {
    ScratchDir dir;
    ExecCredentialSource src(exec_of(write_plugin(dir, "p", token_output(v1, "2001-02-03T04:05:06.789+01:00"))));
    CHECK(src.current().token == "tok-1");
    CHECK(src.current().token == "tok-2");
    CHECK(plugin_runs(dir, "p") == 2);
}

TEST_CASE("invalidate makes the next call run the exec plugin again") {
    ScratchDir dir;
    ExecCredentialSource src(exec_of(write_plugin(dir, "p", token_output(v1))));
    CHECK(src.current().token == "tok-1");
    src.invalidate();
    CHECK(src.current().token == "tok-2");
    CHECK(src.current().token == "tok-2");
    CHECK(plugin_runs(dir, "p") == 2);
}

TEST_CASE("concurrent callers share one exec plugin run") {
    ScratchDir dir;
    ExecCredentialSource src(exec_of(write_plugin(dir, "p", "sleep 0.2\n" + token_output(v1))));
    std::vector<std::string> seen(4);
    {
        std::vector<std::jthread> callers;
        for (auto& s : seen) callers.emplace_back([&src, &s] { s = src.current().token; });
    }
    for (const auto& s : seen) CHECK(s == "tok-1");
    CHECK(plugin_runs(dir, "p") == 1);
}

TEST_CASE("an exec plugin from a kubeconfig gets its args, env and KUBERNETES_EXEC_INFO") {
    ScratchDir dir;
    fs::path info = dir / "exec-info.json";
    fs::path plugin = write_plugin(dir, "bin/p",
                                   "printf '%s' \"$KUBERNETES_EXEC_INFO\" > '" + info.string() + "'\n"
                                   "cat <<EOF\n{\"kind\":\"ExecCredential\",\"apiVersion\":\"" + std::string(v1) +
                                       "\",\"status\":{\"token\":\"$1-$2-$REGION\"}}\nEOF");
    fs::path f = exec_kubeconfig(dir, plugin, "--exec-arg=get --exec-arg='two words' --exec-env=REGION=eu");
    Config c = vck::client::load_kubeconfig({f.string(), std::nullopt});
    REQUIRE(c.credentials != nullptr);
    CHECK(c.credentials->current().token == "get-two words-eu");
    auto req = boost::json::parse(read_text(info)).as_object();
    CHECK(req.at("kind") == "ExecCredential");
    CHECK(req.at("apiVersion") == v1);
    CHECK(req.at("spec").at("interactive") == false);
    CHECK_FALSE(req.at("spec").as_object().contains("cluster"));  // provideClusterInfo is off
}

TEST_CASE("provideClusterInfo hands the plugin the cluster, its CA and its exec extension") {
    ScratchDir dir;
    CertFiles ca = make_cert(dir, "ca");
    fs::path info = dir / "exec-info.json";
    fs::path plugin = write_plugin(dir, "bin/p", "printf '%s' \"$KUBERNETES_EXEC_INFO\" > '" + info.string() + "'\n" +
                                                 token_output(v1));
    fs::path f = exec_kubeconfig(dir, plugin, "--exec-provide-cluster-info=true");
    kubectl(f, "set-cluster c --embed-certs --certificate-authority='" + ca.cert.string() + "'");
    {
        YAML::Node root = YAML::LoadFile(f.string());
        YAML::Node ext;
        ext["name"] = "client.authentication.k8s.io/exec";
        ext["extension"]["audience"] = "sts.example";
        ext["extension"]["retries"] = 3;
        root["clusters"][0]["cluster"]["extensions"].push_back(ext);
        YAML::Emitter out;
        out << root;
        std::ofstream(f, std::ios::trunc) << out.c_str();
    }
    reset_runs(dir, "bin/p");
    Config c = vck::client::load_kubeconfig({f.string(), std::nullopt});
    CHECK(c.credentials->current().token == "tok-1");
    auto cluster = boost::json::parse(read_text(info)).at("spec").at("cluster").as_object();
    CHECK(cluster.at("server") == "https://10.9.8.7:6443");
    CHECK(cluster.at("tls-server-name") == "api.test");
    CHECK(vck::client::base64_decode(std::string_view(cluster.at("certificate-authority-data").as_string())) == ca.cert_pem);
    CHECK(cluster.at("config") == boost::json::parse(R"({"audience":"sts.example","retries":3})"));
}

TEST_CASE("a relative exec command is run from the kubeconfig's directory") {
    ScratchDir dir;
    write_plugin(dir, "plugins/p", token_output(v1beta1));
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443");
    kubectl(f, "set-credentials u --exec-command=./plugins/p --exec-api-version=" + std::string(v1beta1));
    kubectl(f, "set-context ctx --cluster=c --user=u");
    kubectl(f, "use-context ctx");
    reset_runs(dir, "plugins/p");
    Config c = vck::client::load_kubeconfig({f.string(), std::nullopt});
    CHECK(c.credentials->current().token == "tok-1");
    CHECK(plugin_runs(dir, "plugins/p") == 1);
}

TEST_CASE("an exec plugin may return a client certificate and key instead of a token") {
    ScratchDir dir;
    CertFiles client = make_cert(dir, "client");
    boost::json::object status{{"clientCertificateData", client.cert_pem}, {"clientKeyData", client.key_pem}};
    boost::json::object cred{{"kind", "ExecCredential"}, {"apiVersion", v1beta1}, {"status", status}};
    dir.write("cred.json", boost::json::serialize(cred));
    ExecCredentialSource src(exec_of(write_plugin(dir, "p", "cat '" + (dir / "cred.json").string() + "'"), v1beta1));
    auto c = src.current();
    CHECK(c.token.empty());
    CHECK(c.client_cert_pem == client.cert_pem);
    CHECK(c.client_key_pem == client.key_pem);
}

TEST_CASE("a failing exec plugin reports its exit status, stderr and the install hint") {
    ScratchDir dir;
    fs::path plugin = write_plugin(dir, "bin/p", "echo 'error: you are not logged in' >&2\nexit 3");
    fs::path f = exec_kubeconfig(dir, plugin);
    {
        YAML::Node root = YAML::LoadFile(f.string());
        root["users"][0]["user"]["exec"]["installHint"] = "Install it with: apt install p\n";
        YAML::Emitter out;
        out << root;
        std::ofstream(f, std::ios::trunc) << out.c_str();
    }
    reset_runs(dir, "bin/p");
    Config c = vck::client::load_kubeconfig({f.string(), std::nullopt});
    CHECK(error_of([&] { c.credentials->current(); }) ==
          "kubeconfig " + f.string() + ": user \"u\": exec plugin \"" + plugin.string() +
              "\" exited with status 3: error: you are not logged in (Install it with: apt install p)");
    CHECK(plugin_runs(dir, "bin/p") == 1);
}

TEST_CASE("an exec plugin that does not exist is reported") {
    ScratchDir dir;
    ExecCredentialSource src(exec_of(dir / "nowhere"), {}, "test");
    CHECK(error_of([&] { src.current(); }) ==
          "test: exec plugin \"" + (dir / "nowhere").string() + "\" could not be started: No such file or directory");
}

TEST_CASE("an exec plugin printing garbage is reported with what it printed") {
    ScratchDir dir;
    ExecCredentialSource src(exec_of(write_plugin(dir, "p", "echo 'Please log in at https://example'")));
    CHECK(error_of([&] { src.current(); }) ==
          "exec plugin \"" + (dir / "p").string() +
              "\" printed output that is not an ExecCredential JSON object: \"Please log in at https://example\"");
}

TEST_CASE("an exec plugin answering with another apiVersion is reported") {
    ScratchDir dir;
    ExecCredentialSource src(exec_of(write_plugin(dir, "p", token_output(v1beta1)), v1));
    CHECK(error_of([&] { src.current(); }) ==
          "exec plugin \"" + (dir / "p").string() + "\" printed apiVersion \"" + v1beta1 +
              "\", but the kubeconfig asks for \"" + v1 + "\"");
}

TEST_CASE("an exec plugin answering without credentials or with a bad expiry is reported") {
    ScratchDir dir;
    ExecCredentialSource empty(exec_of(write_plugin(dir, "p",
        "echo '{\"kind\":\"ExecCredential\",\"apiVersion\":\"" + std::string(v1) + "\",\"status\":{}}'")));
    CHECK(error_of([&] { empty.current(); }) ==
          "exec plugin \"" + (dir / "p").string() + "\" printed neither status.token nor status.clientCertificateData/clientKeyData");
    ExecCredentialSource bad_time(exec_of(write_plugin(dir, "q", token_output(v1, "tomorrow"))));
    CHECK(error_of([&] { bad_time.current(); }) ==
          "exec plugin \"" + (dir / "q").string() + "\" printed an expirationTimestamp that is not an RFC 3339 time: \"tomorrow\"");
}

TEST_CASE("an exec plugin that hangs is stopped after the timeout, with what it printed, and its children with it") {
    ScratchDir dir;
    ExecCredentialSource src(exec_of(write_plugin(dir, "p",
        "echo 'waiting for the browser' >&2\n(sleep 30; true) &\necho $! > \"$0.child\"\nsleep 30")));
    CHECK(src.timeout() == std::chrono::minutes(2));
    src.set_timeout(300ms);
    auto t0 = std::chrono::steady_clock::now();
    CHECK(error_of([&] { src.current(); }) ==
          "exec plugin \"" + (dir / "p").string() + "\" did not finish within 300 ms and was stopped: waiting for the browser");
    CHECK(std::chrono::steady_clock::now() - t0 < 20s);  // not the plugin's 30 s
    // The plugin's own child went with it (a zombie awaiting its reaper counts as gone).
    std::ifstream pid_file(dir / "p.child");
    int child = 0;
    pid_file >> child;
    REQUIRE(child > 0);
    auto alive = [child] {
        std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
        std::string pid, comm, state;
        return stat >> pid >> comm >> state && state != "Z";
    };
    for (int i = 0; i < 100 && alive(); ++i) std::this_thread::sleep_for(20ms);
    CHECK_FALSE(alive());
}

TEST_CASE("an exec plugin that wants a terminal is refused without running it") {
    ScratchDir dir;
    ExecConfig e = exec_of(write_plugin(dir, "p", token_output(v1)));
    e.interactive_mode = "Always";
    ExecCredentialSource src(e);
    CHECK(error_of([&] { src.current(); }).find("needs an interactive terminal") != std::string::npos);
    CHECK(plugin_runs(dir, "p") == 0);
}

TEST_CASE("a failed exec run is retried on the next call rather than cached") {
    ScratchDir dir;
    fs::path flag = dir / "fail";
    dir.write("fail", "");
    ExecCredentialSource src(exec_of(write_plugin(dir, "p", "if [ -e '" + flag.string() + "' ]; then echo down >&2; exit 1; fi\n" +
                                                                token_output(v1))));
    CHECK_THROWS_AS(src.current(), ConfigError);
    fs::remove(flag);
    CHECK(src.current().token == "tok-2");
}

// ---- token files ----

TEST_CASE("a token file is re-read when it is replaced, as kubelet rotates bound tokens") {
    ScratchDir dir;
    fs::path token = dir.write("token", "one\n");
    FileTokenSource src(token, 3600s);
    CHECK(src.current().token == "one");
    dir.write("..new", "two");
    fs::rename(dir / "..new", token);
    CHECK(src.current().token == "two");
}

TEST_CASE("a token file rewritten in place with a new length is re-read") {
    ScratchDir dir;
    fs::path token = dir.write("token", "short");
    FileTokenSource src(token, 3600s);
    CHECK(src.current().token == "short");
    dir.write("token", "a-longer-token");
    CHECK(src.current().token == "a-longer-token");
}

TEST_CASE("a token file that vanishes after a successful read keeps the last token") {
    ScratchDir dir;
    fs::path token = dir.write("token", "kept");
    FileTokenSource src(token, 0s);
    CHECK(src.current().token == "kept");
    fs::remove(token);
    CHECK(src.current().token == "kept");
}

TEST_CASE("an empty or missing token file is reported when the source is made") {
    ScratchDir dir;
    fs::path token = dir.write("token", " \n");
    CHECK(error_of([&] { FileTokenSource s(token); }) == "token file " + token.string() + " is empty");
    CHECK(error_of([&] { FileTokenSource s(dir / "none", 60s, "origin"); }) ==
          "origin: token file " + (dir / "none").string() + " cannot be read: No such file or directory");
}

// ---- in-cluster ----

namespace {

struct ServiceAccount {
    ScratchDir dir;
    CertFiles ca = make_cert(dir, "ca-src");
    ServiceAccount() {
        dir.write("sa/token", "sa-token-1\n");
        dir.write("sa/ca.crt", ca.cert_pem);
        dir.write("sa/namespace", "workloads");
    }
    InClusterOptions options() const { return InClusterOptions{dir / "sa", 60s}; }
};

} // namespace

TEST_CASE("in-cluster config reads the service host, token, CA and namespace") {
    EnvGuard env;
    ServiceAccount sa;
    env.set("KUBERNETES_SERVICE_HOST", "10.96.0.1");
    env.set("KUBERNETES_SERVICE_PORT", "443");
    Config c = vck::client::in_cluster_config(sa.options());
    CHECK(c.server == "https://10.96.0.1:443");
    CHECK(c.token == "sa-token-1");
    REQUIRE(c.credentials != nullptr);
    CHECK(c.credentials->current().token == "sa-token-1");
    CHECK(c.ca_pem == sa.ca.cert_pem);
    CHECK(c.namespace_ == "workloads");
}

TEST_CASE("an IPv6 service host is bracketed in the server URL") {
    EnvGuard env;
    ServiceAccount sa;
    env.set("KUBERNETES_SERVICE_HOST", "fd00::1");
    env.set("KUBERNETES_SERVICE_PORT", "6443");
    CHECK(vck::client::in_cluster_config(sa.options()).server == "https://[fd00::1]:6443");
}

TEST_CASE("the in-cluster token follows rotation of the mounted token file") {
    EnvGuard env;
    ServiceAccount sa;
    env.set("KUBERNETES_SERVICE_HOST", "10.96.0.1");
    env.set("KUBERNETES_SERVICE_PORT", "443");
    Config c = vck::client::in_cluster_config(sa.options());
    CHECK(c.credentials->current().token == "sa-token-1");
    sa.dir.write("sa/..token-2", "sa-token-2");
    fs::rename(sa.dir / "sa/..token-2", sa.dir / "sa/token");
    CHECK(c.credentials->current().token == "sa-token-2");
}

TEST_CASE("POD_NAMESPACE overrides the namespace file in-cluster") {
    EnvGuard env;
    ServiceAccount sa;
    env.set("KUBERNETES_SERVICE_HOST", "10.96.0.1");
    env.set("KUBERNETES_SERVICE_PORT", "443");
    env.set("POD_NAMESPACE", "from-env");
    CHECK(vck::client::in_cluster_config(sa.options()).namespace_ == "from-env");
}

TEST_CASE("VCK_SERVICE_ACCOUNT_DIR, which the sandbox's kubelet sets, replaces the default directory of the service-account files but not one the caller chose") {
    EnvGuard env;
    ServiceAccount sa;
    env.set("KUBERNETES_SERVICE_HOST", "127.0.0.1");
    env.set("KUBERNETES_SERVICE_PORT", "6443");
    env.set("VCK_SERVICE_ACCOUNT_DIR", (sa.dir / "sa").string());
    Config c = vck::client::in_cluster_config();
    CHECK(c.token == "sa-token-1");
    CHECK(c.ca_pem == sa.ca.cert_pem);
    CHECK(c.namespace_ == "workloads");
    env.set("VCK_SERVICE_ACCOUNT_DIR", (sa.dir / "elsewhere").string());
    CHECK(vck::client::in_cluster_config(sa.options()).token == "sa-token-1");
    CHECK(error_of([] { vck::client::in_cluster_config(); }).find((sa.dir / "elsewhere" / "token").string()) != std::string::npos);
}

TEST_CASE("in-cluster config outside a cluster says so") {
    EnvGuard env;
    CHECK(error_of([] { vck::client::in_cluster_config(); }) ==
          "not running in a Kubernetes cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not both set");
}

TEST_CASE("in-cluster config without the mounted token or CA names the missing file") {
    EnvGuard env;
    ServiceAccount sa;
    env.set("KUBERNETES_SERVICE_HOST", "10.96.0.1");
    env.set("KUBERNETES_SERVICE_PORT", "443");
    fs::remove(sa.dir / "sa/ca.crt");
    CHECK(error_of([&] { vck::client::in_cluster_config(sa.options()); }) ==
          "in-cluster configuration: CA file " + (sa.dir / "sa/ca.crt").string() + " cannot be read: No such file or directory");
    fs::remove(sa.dir / "sa/token");
    CHECK(error_of([&] { vck::client::in_cluster_config(sa.options()); }) ==
          "in-cluster configuration: token file " + (sa.dir / "sa/token").string() + " cannot be read: No such file or directory");
}

// ---- load_default ----

namespace {

fs::path server_kubeconfig(const fs::path& f, const std::string& server) {
    kubectl(f, "set-cluster c --server=" + server);
    kubectl(f, "set-context ctx --cluster=c");
    kubectl(f, "use-context ctx");
    return f;
}

} // namespace

TEST_CASE("load_default prefers --kubeconfig, then $KUBECONFIG, then in-cluster, then ~/.kube/config") {
    EnvGuard env;
    ServiceAccount sa;
    ScratchDir dir;
    server_kubeconfig(dir / "home/.kube/config", "https://home:1");
    fs::path env_cfg = server_kubeconfig(dir / "env.yaml", "https://env:1");
    fs::path flag_cfg = server_kubeconfig(dir / "flag.yaml", "https://flag:1");
    env.set("HOME", (dir / "home").string());
    CHECK(vck::client::load_default({}, sa.options()).server == "https://home:1");
    env.set("KUBERNETES_SERVICE_HOST", "10.96.0.1");
    env.set("KUBERNETES_SERVICE_PORT", "443");
    CHECK(vck::client::load_default({}, sa.options()).server == "https://10.96.0.1:443");
    env.set("KUBECONFIG", env_cfg.string());
    CHECK(vck::client::load_default({}, sa.options()).server == "https://env:1");
    CHECK(vck::client::load_default({flag_cfg.string(), std::nullopt}, sa.options()).server == "https://flag:1");
}

TEST_CASE("load_default lists every place it tried when there is no configuration") {
    EnvGuard env;
    ScratchDir dir;
    env.set("HOME", dir.path().string());
    CHECK(error_of([] { vck::client::load_default(); }) ==
          "no Kubernetes configuration found; tried --kubeconfig (not given), $KUBECONFIG (not set), in-cluster "
          "(KUBERNETES_SERVICE_HOST/PORT not set), " + (dir / ".kube/config").string() + " (does not exist)");
}

TEST_CASE("load_default does not fall back when the chosen kubeconfig is broken") {
    EnvGuard env;
    ScratchDir dir;
    fs::path broken = dir.write("broken.yaml", "contexts: [unclosed\n");
    server_kubeconfig(dir / "home/.kube/config", "https://home:1");
    env.set("HOME", (dir / "home").string());
    env.set("KUBECONFIG", broken.string());
    CHECK(error_of([] { vck::client::load_default(); }).rfind("kubeconfig " + broken.string() + " is not valid YAML", 0) == 0);
}

// ---- base64 and time parsing used above ----

TEST_CASE("base64 decoding rejects bad characters, bad length and inner padding") {
    using vck::client::base64_decode;
    CHECK(base64_decode("aGVsbG8=") == "hello");
    CHECK(base64_decode("aGVs\nbG8h") == "hello!");
    CHECK(base64_decode("") == "");
    CHECK_FALSE(base64_decode("aGVsbG8").has_value());
    CHECK_FALSE(base64_decode("aG*sbG8=").has_value());
    CHECK_FALSE(base64_decode("aG==bG8=").has_value());
    CHECK(vck::client::base64_encode("hello!") == "aGVsbG8h");
}

TEST_CASE("RFC 3339 times with fractions and offsets parse to the same instant") {
    using vck::client::parse_rfc3339;
    auto base = std::chrono::system_clock::from_time_t(1893456000);
    CHECK(parse_rfc3339("2030-01-01T00:00:00Z") == base);
    CHECK(parse_rfc3339("2030-01-01T02:00:00+02:00") == base);
    CHECK(parse_rfc3339("2029-12-31T23:00:00.5-01:00") == base + 500ms);
    CHECK_FALSE(parse_rfc3339("2030-01-01").has_value());
    CHECK_FALSE(parse_rfc3339("2030-01-01T00:00:00").has_value());
    CHECK_FALSE(parse_rfc3339("2030-13-01T00:00:00Z").has_value());
    // Beyond what the clock holds (2262): saturated, not overflowed.
    CHECK(parse_rfc3339("2999-01-01T00:00:00Z") == std::chrono::system_clock::time_point::max());
    CHECK(parse_rfc3339("9999-12-31T23:59:59.999Z") == std::chrono::system_clock::time_point::max());
    CHECK(parse_rfc3339("0001-01-01T00:00:00Z") == std::chrono::system_clock::time_point::min());
}
