// Specification of load_kubeconfig: kubeconfigs written by the real kubectl, every kind of
// user, merged $KUBECONFIG lists, and one clear message for each way a kubeconfig is broken.
#include "kubeconfig_fixture.hpp"

#include <vck/client/kubeconfig.hpp>
#include <vck/version.hpp>

#include <yaml-cpp/yaml.h>

using namespace config_test;
using vck::client::Config;
using vck::client::ConfigError;
using vck::client::ExecCredentialSource;
using vck::client::FileTokenSource;
using vck::client::KubeconfigOptions;
using vck::client::load_kubeconfig;

namespace {

struct Pki {
    ScratchDir dir;
    CertFiles ca = make_cert(dir, "ca");
    CertFiles client = make_cert(dir, "client");
};

const Pki& pki() {
    static Pki p;
    return p;
}

Config load(const fs::path& file, std::optional<std::string> context = std::nullopt) {
    return load_kubeconfig(KubeconfigOptions{file.string(), std::move(context)});
}

std::string load_error(const KubeconfigOptions& opts) {
    try {
        load_kubeconfig(opts);
    } catch (const ConfigError& e) {
        return e.what();
    }
    FAIL("load_kubeconfig succeeded, an error was expected");
    return {};
}

std::string load_error(const fs::path& file) { return load_error(KubeconfigOptions{file.string(), std::nullopt}); }

/// A kubeconfig with one cluster "c", one user "u" (token), one context "ctx" in use.
fs::path token_kubeconfig(const ScratchDir& dir, const std::string& name = "config") {
    fs::path f = dir / name;
    kubectl(f, "set-cluster c --server=https://10.1.2.3:6443 --certificate-authority='" + pki().ca.cert.string() + "'");
    kubectl(f, "set-credentials u --token=secret-token");
    kubectl(f, "set-context ctx --cluster=c --user=u --namespace=team-a");
    kubectl(f, "use-context ctx");
    return f;
}

/// Edits a kubeconfig with yaml-cpp, for fields kubectl has no flag for.
template <class F>
void edit(const fs::path& file, F&& change) {
    YAML::Node root = YAML::LoadFile(file.string());
    change(root);
    YAML::Emitter out;
    out << root;
    std::ofstream(file, std::ios::trunc) << out.c_str();
}

} // namespace

TEST_CASE("a token user's kubeconfig yields server, CA from file, token and namespace") {
    ScratchDir dir;
    Config c = load(token_kubeconfig(dir));
    CHECK(c.server == "https://10.1.2.3:6443");
    CHECK(c.ca_pem == pki().ca.cert_pem);
    CHECK(c.token == "secret-token");
    CHECK(c.namespace_ == "team-a");
    CHECK_FALSE(c.insecure_skip_tls_verify);
    CHECK(c.client_cert_pem.empty());
    CHECK(c.credentials == nullptr);
}

TEST_CASE("a loaded config introduces the client to the API server as vck at this build's version") {
    ScratchDir dir;
    Config c = load(token_kubeconfig(dir));
    CHECK(c.user_agent == "vck/" + std::string(vck::version));
    CHECK(c.user_agent != "vck/");
}

TEST_CASE("embedded certificates (--embed-certs) decode to the PEM of the original files") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443 --embed-certs --certificate-authority='" + pki().ca.cert.string() + "'");
    kubectl(f, "set-credentials u --embed-certs --client-certificate='" + pki().client.cert.string() +
                   "' --client-key='" + pki().client.key.string() + "'");
    kubectl(f, "set-context ctx --cluster=c --user=u");
    kubectl(f, "use-context ctx");
    CHECK(read_text(f).find("certificate-authority-data") != std::string::npos);
    Config c = load(f);
    CHECK(c.ca_pem == pki().ca.cert_pem);
    CHECK(c.client_cert_pem == pki().client.cert_pem);
    CHECK(c.client_key_pem == pki().client.key_pem);
    CHECK(c.token.empty());
}

TEST_CASE("client certificate and key files are read from disk") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443 --certificate-authority='" + pki().ca.cert.string() + "'");
    kubectl(f, "set-credentials u --client-certificate='" + pki().client.cert.string() + "' --client-key='" +
                   pki().client.key.string() + "'");
    kubectl(f, "set-context ctx --cluster=c --user=u");
    kubectl(f, "use-context ctx");
    Config c = load(f);
    CHECK(c.client_cert_pem == pki().client.cert_pem);
    CHECK(c.client_key_pem == pki().client.key_pem);
}

TEST_CASE("a basic-auth user yields username and password") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443");
    kubectl(f, "set-credentials u --username=alice --password='s3cr:t'");
    kubectl(f, "set-context ctx --cluster=c --user=u");
    kubectl(f, "use-context ctx");
    Config c = load(f);
    CHECK(c.username == "alice");
    CHECK(c.password == "s3cr:t");
    CHECK(c.ca_pem.empty());
}

TEST_CASE("insecure-skip-tls-verify and tls-server-name are taken from the cluster") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443 --insecure-skip-tls-verify=true --tls-server-name=api.internal");
    kubectl(f, "set-context ctx --cluster=c");
    kubectl(f, "use-context ctx");
    Config c = load(f);
    CHECK(c.insecure_skip_tls_verify);
    CHECK(c.tls_server_name == "api.internal");
}

TEST_CASE("a context without a user is anonymous and one without a namespace uses default") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443");
    kubectl(f, "set-context ctx --cluster=c");
    kubectl(f, "use-context ctx");
    Config c = load(f);
    CHECK(c.namespace_ == "default");
    CHECK(c.token.empty());
    CHECK(c.username.empty());
    CHECK(c.credentials == nullptr);
}

TEST_CASE("--context overrides current-context") {
    ScratchDir dir;
    fs::path f = token_kubeconfig(dir);
    kubectl(f, "set-cluster other --server=https://other:443");
    kubectl(f, "set-context second --cluster=other --user=u --namespace=ns2");
    Config c = load(f, "second");
    CHECK(c.server == "https://other:443");
    CHECK(c.namespace_ == "ns2");
    CHECK(load(f).server == "https://10.1.2.3:6443");
}

TEST_CASE("relative paths in a kubeconfig are relative to that file's directory") {
    ScratchDir dir;
    dir.write("conf/pki/ca.crt", pki().ca.cert_pem);
    dir.write("conf/tokens/t", "relative-token\n");
    fs::path f = dir / "conf/config";
    kubectl(f, "set-cluster c --server=https://k:6443");
    kubectl(f, "set clusters.c.certificate-authority pki/ca.crt");
    kubectl(f, "set users.u.tokenFile tokens/t");
    kubectl(f, "set-context ctx --cluster=c --user=u");
    kubectl(f, "use-context ctx");
    Config c = load(f);
    CHECK(c.ca_pem == pki().ca.cert_pem);
    REQUIRE(c.credentials != nullptr);
    CHECK(c.credentials->current().token == "relative-token");
}

TEST_CASE("a tokenFile user gets a token source that follows the file") {
    ScratchDir dir;
    fs::path token = dir.write("token", "first");
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443");
    kubectl(f, "set users.u.tokenFile '" + token.string() + "'");
    kubectl(f, "set-context ctx --cluster=c --user=u");
    kubectl(f, "use-context ctx");
    Config c = load(f);
    auto* src = dynamic_cast<FileTokenSource*>(c.credentials.get());
    REQUIRE(src != nullptr);
    CHECK(src->path() == token);
    CHECK(src->current().token == "first");
    dir.write("token.new", "second-token");
    fs::rename(dir / "token.new", token);
    CHECK(src->current().token == "second-token");
}

TEST_CASE("an exec user gets an exec credential source with the plugin's command, args and env") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443");
    kubectl(f, "set-credentials u --exec-command=./bin/plugin --exec-arg=get-token --exec-arg=--x=1 "
               "--exec-env=REGION=eu --exec-api-version=client.authentication.k8s.io/v1 --exec-interactive-mode=Never");
    kubectl(f, "set-context ctx --cluster=c --user=u");
    kubectl(f, "use-context ctx");
    Config c = load(f);
    auto* src = dynamic_cast<ExecCredentialSource*>(c.credentials.get());
    REQUIRE(src != nullptr);
    CHECK(src->exec().command == (dir / "bin/plugin").string());
    CHECK(src->exec().args == std::vector<std::string>{"get-token", "--x=1"});
    REQUIRE(src->exec().env.size() == 1);
    CHECK(src->exec().env[0] == std::pair<std::string, std::string>{"REGION", "eu"});
    CHECK(src->exec().api_version == "client.authentication.k8s.io/v1");
    CHECK(src->exec().interactive_mode == "Never");
}

TEST_CASE("an exec command without a slash stays a name to look up in PATH") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443");
    kubectl(f, "set-credentials u --exec-command=aws --exec-api-version=client.authentication.k8s.io/v1beta1");
    kubectl(f, "set-context ctx --cluster=c --user=u");
    kubectl(f, "use-context ctx");
    Config c = load(f);
    auto* src = dynamic_cast<ExecCredentialSource*>(c.credentials.get());
    REQUIRE(src != nullptr);
    CHECK(src->exec().command == "aws");
    CHECK(src->exec().interactive_mode == "IfAvailable");
}

TEST_CASE("merged $KUBECONFIG files: first definition of a name wins, missing files are skipped") {
    EnvGuard env;
    ScratchDir dir;
    fs::path a = dir / "a.yaml", b = dir / "b.yaml";
    kubectl(a, "set-cluster shared --server=https://from-a:443");
    kubectl(a, "set-context ctx-a --cluster=shared --namespace=a");
    kubectl(a, "use-context ctx-a");
    kubectl(b, "set-cluster shared --server=https://from-b:443");
    kubectl(b, "set-cluster only-b --server=https://only-b:443");
    kubectl(b, "set-credentials ub --token=token-b");
    kubectl(b, "set-context ctx-a --cluster=only-b --namespace=shadowed");
    kubectl(b, "set-context ctx-b --cluster=shared --user=ub --namespace=b");
    kubectl(b, "set-context ctx-only-b --cluster=only-b");
    kubectl(b, "use-context ctx-b");
    env.set("KUBECONFIG", (dir / "missing.yaml").string() + ":" + a.string() + "::" + b.string());

    Config current = load_kubeconfig({});
    CHECK(current.server == "https://from-a:443");  // a's current-context, a's context and cluster
    CHECK(current.namespace_ == "a");

    Config ctx_b = load_kubeconfig({std::nullopt, "ctx-b"});
    CHECK(ctx_b.server == "https://from-a:443");  // cluster "shared" is a's
    CHECK(ctx_b.token == "token-b");
    CHECK(ctx_b.namespace_ == "b");
    CHECK(load_kubeconfig({std::nullopt, "ctx-only-b"}).server == "https://only-b:443");
}

TEST_CASE("current-context comes from the first file in $KUBECONFIG that sets it") {
    EnvGuard env;
    ScratchDir dir;
    fs::path a = dir / "a.yaml", b = dir / "b.yaml";
    kubectl(a, "set-cluster ca --server=https://a:443");
    kubectl(a, "set-context ctx-a --cluster=ca");
    kubectl(b, "set-cluster cb --server=https://b:443");
    kubectl(b, "set-context ctx-b --cluster=cb");
    kubectl(b, "use-context ctx-b");
    env.set("KUBECONFIG", a.string() + ":" + b.string());
    CHECK(load_kubeconfig({}).server == "https://b:443");
}

TEST_CASE("--kubeconfig wins over $KUBECONFIG, which wins over ~/.kube/config") {
    EnvGuard env;
    ScratchDir dir;
    fs::path home_cfg = dir / "home/.kube/config", env_cfg = dir / "env.yaml", flag_cfg = dir / "flag.yaml";
    for (auto [file, server] : {std::pair{home_cfg, "https://home:1"}, {env_cfg, "https://env:1"}, {flag_cfg, "https://flag:1"}}) {
        kubectl(file, std::string("set-cluster c --server=") + server);
        kubectl(file, "set-context ctx --cluster=c");
        kubectl(file, "use-context ctx");
    }
    env.set("HOME", (dir / "home").string());
    CHECK(load_kubeconfig({}).server == "https://home:1");
    env.set("KUBECONFIG", env_cfg.string());
    CHECK(load_kubeconfig({}).server == "https://env:1");
    CHECK(load_kubeconfig({flag_cfg.string(), std::nullopt}).server == "https://flag:1");
}

// ---- broken kubeconfigs: one clear sentence each ----

TEST_CASE("a --kubeconfig that does not exist is named in the error") {
    ScratchDir dir;
    CHECK(load_error(dir / "nope") == "kubeconfig " + (dir / "nope").string() + " does not exist (from --kubeconfig)");
}

TEST_CASE("a --kubeconfig that is a directory is reported") {
    ScratchDir dir;
    CHECK(load_error(dir.path()) == "kubeconfig " + dir.path().string() + " is a directory, not a file (from --kubeconfig)");
}

TEST_CASE("a missing ~/.kube/config is named in the error") {
    EnvGuard env;
    ScratchDir dir;
    env.set("HOME", dir.path().string());
    CHECK(load_error(KubeconfigOptions{}) ==
          "kubeconfig " + (dir / ".kube/config").string() + " does not exist (from ~/.kube/config)");
}

TEST_CASE("a $KUBECONFIG whose files all are missing lists them") {
    EnvGuard env;
    ScratchDir dir;
    env.set("KUBECONFIG", (dir / "x").string() + ":" + (dir / "y").string());
    CHECK(load_error(KubeconfigOptions{}) ==
          "none of the kubeconfig files in $KUBECONFIG exist: " + (dir / "x").string() + ", " + (dir / "y").string());
}

TEST_CASE("invalid YAML is reported with the file and position") {
    ScratchDir dir;
    fs::path f = dir.write("config", "apiVersion: v1\nclusters:\n- name: c\n  cluster: {server: [unclosed\n");
    std::string msg = load_error(f);
    CHECK(msg.rfind("kubeconfig " + f.string() + " is not valid YAML: ", 0) == 0);
    CHECK(msg.find("at line ") != std::string::npos);
}

TEST_CASE("a file whose top level is not a mapping is not a kubeconfig") {
    ScratchDir dir;
    fs::path f = dir.write("config", "- just\n- a list\n");
    CHECK(load_error(f) == "kubeconfig " + f.string() + " is not a kubeconfig: its top level is not a mapping");
}

TEST_CASE("a context naming a missing cluster is reported") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-context dev --cluster=c");
    kubectl(f, "use-context dev");
    CHECK(load_error(f) == "kubeconfig " + f.string() + ": context \"dev\" refers to cluster \"c\" which is not defined");
}

TEST_CASE("a context naming a missing user is reported") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443");
    kubectl(f, "set-context dev --cluster=c --user=ghost");
    kubectl(f, "use-context dev");
    CHECK(load_error(f) == "kubeconfig " + f.string() + ": context \"dev\" refers to user \"ghost\" which is not defined");
}

TEST_CASE("no current context and no --context is reported") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443");
    kubectl(f, "set-context dev --cluster=c");
    CHECK(load_error(f) == "kubeconfig " + f.string() + ": no current-context is set and no context was given");
}

TEST_CASE("a current-context or --context that is not defined is reported") {
    ScratchDir dir;
    fs::path f = token_kubeconfig(dir);
    CHECK(load_error(KubeconfigOptions{f.string(), "prod"}) ==
          "kubeconfig " + f.string() + ": context \"prod\" is not defined");
    edit(f, [](YAML::Node& root) { root["current-context"] = "gone"; });
    CHECK(load_error(f) == "kubeconfig " + f.string() + ": current-context \"gone\" is not defined");
}

TEST_CASE("certificate-authority-data that is not base64 is reported") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443 --embed-certs --certificate-authority='" + pki().ca.cert.string() + "'");
    kubectl(f, "set-context dev --cluster=c");
    kubectl(f, "use-context dev");
    edit(f, [](YAML::Node& root) { root["clusters"][0]["cluster"]["certificate-authority-data"] = "not*base64!"; });
    CHECK(load_error(f) == "kubeconfig " + f.string() + ": cluster \"c\" has a certificate-authority-data that is not valid base64");
}

TEST_CASE("client-key-data that is base64 but not PEM is reported") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443");
    kubectl(f, "set-credentials u --embed-certs --client-certificate='" + pki().client.cert.string() +
                   "' --client-key='" + pki().client.key.string() + "'");
    kubectl(f, "set-context dev --cluster=c --user=u");
    kubectl(f, "use-context dev");
    edit(f, [](YAML::Node& root) { root["users"][0]["user"]["client-key-data"] = "aGVsbG8="; });
    CHECK(load_error(f) == "kubeconfig " + f.string() + ": user \"u\" has a client-key-data that does not hold PEM private keys");
}

TEST_CASE("a certificate file that does not exist is reported with its path") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443 --certificate-authority='" + (dir / "gone/ca.crt").string() + "'");
    kubectl(f, "set-context dev --cluster=c");
    kubectl(f, "use-context dev");
    CHECK(load_error(f) == "kubeconfig " + f.string() + ": cluster \"c\" names certificate-authority " +
                               (dir / "gone/ca.crt").string() + ", which cannot be read: No such file or directory");
}

TEST_CASE("a client certificate without a key is reported") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443");
    kubectl(f, "set-credentials u --client-certificate='" + pki().client.cert.string() + "'");
    kubectl(f, "set-context dev --cluster=c --user=u");
    kubectl(f, "use-context dev");
    CHECK(load_error(f) == "kubeconfig " + f.string() + ": user \"u\" has a client certificate but no client-key or client-key-data");
}

TEST_CASE("a cluster without a server is reported") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --certificate-authority='" + pki().ca.cert.string() + "'");
    kubectl(f, "set-context dev --cluster=c");
    kubectl(f, "use-context dev");
    CHECK(load_error(f) == "kubeconfig " + f.string() + ": cluster \"c\" has no server");
}

TEST_CASE("a user with both a token and a password is reported") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443");
    kubectl(f, "set-credentials u --token=t");
    kubectl(f, "set users.u.username bob");
    kubectl(f, "set-context dev --cluster=c --user=u");
    kubectl(f, "use-context dev");
    CHECK(load_error(f) == "kubeconfig " + f.string() +
                               ": user \"u\" has more than one way to authenticate (token, username/password); keep one");
}

TEST_CASE("a user with both a token and an exec plugin is reported") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443");
    kubectl(f, "set-credentials u --exec-command=/bin/true --exec-api-version=client.authentication.k8s.io/v1beta1");
    kubectl(f, "set users.u.token t");
    kubectl(f, "set-context dev --cluster=c --user=u");
    kubectl(f, "use-context dev");
    CHECK(load_error(f) == "kubeconfig " + f.string() +
                               ": user \"u\" has more than one way to authenticate (token, exec); keep one");
}

TEST_CASE("an auth-provider user is reported as unsupported") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443");
    kubectl(f, "set-credentials u --auth-provider=oidc");
    kubectl(f, "set-context dev --cluster=c --user=u");
    kubectl(f, "use-context dev");
    CHECK(load_error(f) == "kubeconfig " + f.string() +
                               ": user \"u\" uses auth-provider \"oidc\", which vck does not support; use an exec plugin instead");
}

TEST_CASE("an exec plugin with an unsupported apiVersion is reported") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443");
    kubectl(f, "set-credentials u --exec-command=/bin/true --exec-api-version=client.authentication.k8s.io/v1alpha1");
    kubectl(f, "set-context dev --cluster=c --user=u");
    kubectl(f, "use-context dev");
    CHECK(load_error(f) == "kubeconfig " + f.string() +
                               ": user \"u\" has an exec plugin with apiVersion \"client.authentication.k8s.io/v1alpha1\"; "
                               "supported are client.authentication.k8s.io/v1 and client.authentication.k8s.io/v1beta1");
}

TEST_CASE("an exec plugin of apiVersion v1 without interactiveMode is reported") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443");
    kubectl(f, "set-credentials u --exec-command=/bin/true --exec-api-version=client.authentication.k8s.io/v1");
    kubectl(f, "set-context dev --cluster=c --user=u");
    kubectl(f, "use-context dev");
    CHECK(load_error(f) == "kubeconfig " + f.string() +
                               ": user \"u\" has an exec plugin with apiVersion client.authentication.k8s.io/v1 but no "
                               "interactiveMode (Never, IfAvailable or Always)");
}

TEST_CASE("a tokenFile that cannot be read is reported at load time") {
    ScratchDir dir;
    fs::path f = dir / "config";
    kubectl(f, "set-cluster c --server=https://k:6443");
    kubectl(f, "set users.u.tokenFile missing-token");
    kubectl(f, "set-context dev --cluster=c --user=u");
    kubectl(f, "use-context dev");
    CHECK(load_error(f) == "kubeconfig " + f.string() + ": user \"u\": token file " + (dir / "missing-token").string() +
                               " cannot be read: No such file or directory");
}

TEST_CASE("the error names the file that defined the broken entry when files are merged") {
    EnvGuard env;
    ScratchDir dir;
    fs::path a = dir / "a.yaml", b = dir / "b.yaml";
    kubectl(a, "set-context dev --cluster=c");
    kubectl(a, "use-context dev");
    kubectl(b, "set-cluster c --server=https://k:6443 --certificate-authority=missing.crt");
    env.set("KUBECONFIG", a.string() + ":" + b.string());
    std::string msg = load_error(KubeconfigOptions{});
    CHECK(msg.rfind("kubeconfig " + b.string() + ": cluster \"c\" names certificate-authority ", 0) == 0);
}

TEST_CASE("entries missing a key are reported or defaulted, never an escaping YAML::InvalidNode (found by fuzzing)") {
    // yaml-cpp answers a missing key of a const node with a node whose type queries throw; a
    // context without `context:`, an env entry without `value:` and the like must read as absent.
    const std::string cluster = "clusters: [{name: k, cluster: {server: 'https://k:6443'}}]\n";
    struct Case {
        const char* what;
        std::string yaml;
        std::string error;  // after "kubeconfig <file>: "; empty: it loads
    };
    const Case cases[] = {
        {"a context entry without a context body", "contexts: [{name: c, Xontext: {cluster: k}}]\ncurrent-context: c\n" + cluster,
         "context \"c\" names no cluster"},
        {"a cluster entry without a cluster body", "clusters: [{name: k}]\ncontexts: [{name: c, context: {cluster: k}}]\ncurrent-context: c\n",
         "cluster \"k\" has no server"},
        {"a user entry without a user body", cluster + "users: [{name: u}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\ncurrent-context: c\n",
         ""},
        {"an exec env entry without a value",
         cluster + "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: t, env: [{name: X}]}}}]\n"
                   "contexts: [{name: c, context: {cluster: k, user: u}}]\ncurrent-context: c\n",
         ""},
        {"an exec env entry without a name",
         cluster + "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: t, env: [{value: X}]}}}]\n"
                   "contexts: [{name: c, context: {cluster: k, user: u}}]\ncurrent-context: c\n",
         "user \"u\" has an exec plugin whose env has an entry without a name"},
        {"cluster extensions without a name or an extension",
         "clusters: [{name: k, cluster: {server: 'https://k:6443', extensions: [{extension: {a: 1}}, {name: client.authentication.k8s.io/exec}]}}]\n"
         "contexts: [{name: c, context: {cluster: k}}]\ncurrent-context: c\n",
         ""},
        {"an auth-provider without a name", cluster + "users: [{name: u, user: {auth-provider: {config: {}}}}]\n"
                                                      "contexts: [{name: c, context: {cluster: k, user: u}}]\ncurrent-context: c\n",
         "user \"u\" uses auth-provider \"\", which vck does not support; use an exec plugin instead"},
    };
    ScratchDir dir;
    for (const auto& c : cases) {
        CAPTURE(c.what);
        fs::path f = dir.write("config", c.yaml);
        if (c.error.empty()) CHECK_NOTHROW(load_kubeconfig(KubeconfigOptions{f.string(), std::nullopt}));
        else CHECK(load_error(f) == "kubeconfig " + f.string() + ": " + c.error);
    }
}
