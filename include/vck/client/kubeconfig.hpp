// Kubeconfig loading with the semantics of client-go's clientcmd: --kubeconfig, else the
// $KUBECONFIG list (merged: the first file defining a cluster, user or context name wins, the
// first file setting current-context wins, missing files are skipped), else ~/.kube/config.
// Relative paths inside a file are relative to that file's directory. Every problem raises
// ConfigError with one sentence naming the file and what is wrong.
#pragma once

#include <vck/client/base64.hpp>
#include <vck/client/config.hpp>
#include <vck/client/config_error.hpp>
#include <vck/client/exec_credential_source.hpp>
#include <vck/client/file_token_source.hpp>

#include <boost/json.hpp>
#include <yaml-cpp/yaml.h>

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace vck::client {

struct KubeconfigOptions {
    std::optional<std::string> path;     // --kubeconfig
    std::optional<std::string> context;  // --context: overrides current-context
};

/// The files a kubeconfig is read from, in merge order.
struct KubeconfigFiles {
    std::vector<std::filesystem::path> paths;
    bool skip_missing = false;  // only entries of $KUBECONFIG may be missing
    std::string source;         // "--kubeconfig", "$KUBECONFIG" or "~/.kube/config", for messages
};

/// $HOME/.kube/config ($HOME, else the passwd entry's home directory).
inline std::filesystem::path home_kubeconfig_path() {
    const char* home = std::getenv("HOME");
    std::string dir = home && *home ? home : "";
    if (dir.empty())
        if (passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) dir = pw->pw_dir;
    return std::filesystem::path(dir) / ".kube" / "config";
}

inline KubeconfigFiles kubeconfig_files(const KubeconfigOptions& opts) {
    KubeconfigFiles f;
    if (opts.path && !opts.path->empty()) {
        f.paths.push_back(std::filesystem::absolute(*opts.path));
        f.source = "--kubeconfig";
        return f;
    }
    if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
        std::string_view list(env);
        while (!list.empty()) {
            auto colon = list.find(':');
            std::string_view item = list.substr(0, colon);
            list = colon == std::string_view::npos ? std::string_view() : list.substr(colon + 1);
            if (item.empty()) continue;
            auto p = std::filesystem::absolute(std::string(item));
            if (std::find(f.paths.begin(), f.paths.end(), p) == f.paths.end()) f.paths.push_back(p);
        }
        if (!f.paths.empty()) {
            f.skip_missing = true;
            f.source = "$KUBECONFIG";
            return f;
        }
    }
    f.paths.push_back(home_kubeconfig_path());
    f.source = "~/.kube/config";
    return f;
}

namespace detail::kubeconfig {

namespace fs = std::filesystem;

/// A named cluster, user or context, with the file that defined it (for relative paths and
/// for messages).
struct Entry {
    YAML::Node body;
    fs::path file;
};

struct Merged {
    std::map<std::string, Entry> clusters, users, contexts;
    std::optional<std::pair<std::string, fs::path>> current_context;
    std::vector<fs::path> files;  // read, in order
};

inline std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

inline std::string join(const std::vector<fs::path>& files) {
    std::string s;
    for (std::size_t i = 0; i < files.size(); ++i) s += (i ? ", " : "") + files[i].string();
    return s;
}

inline std::string describe_files(const std::vector<fs::path>& files) {
    return (files.size() == 1 ? "kubeconfig " : "kubeconfig files ") + join(files);
}

/// n[key], safe to query: yaml-cpp answers a missing key of a const node with an invalid node
/// whose every type query (IsMap(), IsScalar(), ...) throws YAML::InvalidNode; this returns an
/// Undefined node instead (IsDefined() and every Is*() false). Not a map: Undefined too.
inline YAML::Node child(const YAML::Node& n, const char* key) {
    if (!n.IsDefined() || !n.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    YAML::Node c = n[key];
    return c.IsDefined() ? c : YAML::Node(YAML::NodeType::Undefined);
}

/// Reads the fields of one cluster/user/context body and turns problems into sentences
/// ("kubeconfig /x: cluster \"c\" has ...").
class Scope {
public:
    Scope(const Entry& e, std::string what) : node_(e.body), file_(e.file), what_(std::move(what)) {
        if (node_.IsDefined() && !node_.IsNull() && !node_.IsMap()) fail("is not a mapping");
    }

    std::string origin() const { return "kubeconfig " + file_.string() + ": " + what_; }

    [[noreturn]] void fail(const std::string& problem) const {
        throw ConfigError("kubeconfig " + file_.string() + ": " + what_ + " " + problem);
    }

    YAML::Node get(const char* key) const {
        return child(node_, key);
    }

    bool has(const char* key) const {
        auto n = get(key);
        return n.IsDefined() && !n.IsNull();
    }

    std::string str(const char* key) const {
        auto n = get(key);
        if (!n.IsDefined() || n.IsNull()) return {};
        if (!n.IsScalar()) fail(std::string("has a ") + key + " that is not a string");
        return n.Scalar();
    }

    bool boolean(const char* key) const {
        auto n = get(key);
        if (!n.IsDefined() || n.IsNull()) return false;
        bool b = false;
        if (!n.IsScalar() || !YAML::convert<bool>::decode(n, b))
            fail(std::string("has a ") + key + " that is not true or false");
        return b;
    }

    fs::path resolve(const std::string& p) const {
        fs::path path(p);
        return path.is_absolute() ? path : file_.parent_path() / path;
    }

    std::string read_file(const char* key, const fs::path& path) const {
        std::ifstream in(path, std::ios::binary);
        if (!in) fail(std::string("names ") + key + " " + path.string() + ", which cannot be read: " + std::strerror(errno));
        std::ostringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

    /// PEM text from `<key>` (a file) or `<key>-data` (base64), or "" when neither is set.
    std::string pem(const char* key, const char* label) const {
        std::string data_key = std::string(key) + "-data";
        bool has_file = has(key), has_data = has(data_key.c_str());
        if (has_file && has_data) fail(std::string("sets both ") + key + " and " + data_key + "; keep one");
        std::string text;
        if (has_data) {
            auto decoded = base64_decode(str(data_key.c_str()));
            if (!decoded) fail("has a " + data_key + " that is not valid base64");
            text = std::move(*decoded);
            if (text.find("-----BEGIN") == std::string::npos)
                fail("has a " + data_key + " that does not hold PEM " + label);
        } else if (has_file) {
            fs::path path = resolve(str(key));
            text = read_file(key, path);
            if (text.find("-----BEGIN") == std::string::npos)
                fail(std::string("names ") + key + " " + path.string() + ", which does not hold PEM " + label);
        }
        return text;
    }

    const YAML::Node& node() const { return node_; }
    const fs::path& file() const { return file_; }

private:
    YAML::Node node_;
    fs::path file_;
    std::string what_;
};

/// YAML to JSON for the exec extension, keeping YAML's implicit types (true, 3, 1.5, null)
/// and treating quoted scalars as strings, as Go's YAML-to-JSON conversion does.
inline boost::json::value to_json(const YAML::Node& n) {
    switch (n.Type()) {
    case YAML::NodeType::Sequence: {
        boost::json::array a;
        for (const auto& item : n) a.push_back(to_json(item));
        return a;
    }
    case YAML::NodeType::Map: {
        boost::json::object o;
        for (const auto& kv : n) o[kv.first.Scalar()] = to_json(kv.second);
        return o;
    }
    case YAML::NodeType::Scalar: {
        const std::string& s = n.Scalar();
        if (n.Tag() == "!") return boost::json::string(s);
        if (s == "null" || s == "~" || s == "Null" || s == "NULL") return nullptr;
        if (s == "true" || s == "True" || s == "TRUE") return true;
        if (s == "false" || s == "False" || s == "FALSE") return false;
        boost::system::error_code ec;
        auto v = boost::json::parse(s, ec);
        if (!ec && v.is_number()) return v;
        return boost::json::string(s);
    }
    default:
        return nullptr;
    }
}

inline std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ConfigError("kubeconfig " + path.string() + " cannot be read: " + std::strerror(errno));
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline void merge_file(Merged& m, const fs::path& path) {
    std::string text = slurp(path);
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        throw ConfigError("kubeconfig " + path.string() + " is not valid YAML: " + e.msg + " at line " +
                          std::to_string(e.mark.line + 1) + ", column " + std::to_string(e.mark.column + 1));
    }
    m.files.push_back(path);
    if (!root.IsDefined() || root.IsNull()) return;  // an empty file is an empty kubeconfig
    if (!root.IsMap()) throw ConfigError("kubeconfig " + path.string() + " is not a kubeconfig: its top level is not a mapping");

    auto section = [&](const char* list, const char* body, std::map<std::string, Entry>& into) {
        YAML::Node items = root[list];
        if (!items.IsDefined() || items.IsNull()) return;
        if (!items.IsSequence())
            throw ConfigError("kubeconfig " + path.string() + ": " + list + " is not a list");
        for (const auto& item : items) {
            YAML::Node name = child(item, "name");
            if (!name.IsDefined() || !name.IsScalar() || name.Scalar().empty())
                throw ConfigError("kubeconfig " + path.string() + ": an entry of " + list + " has no name");
            // The first file (and within it, the first entry) defining a name wins.
            into.try_emplace(name.Scalar(), Entry{child(item, body), path});
        }
    };
    section("clusters", "cluster", m.clusters);
    section("users", "user", m.users);
    section("contexts", "context", m.contexts);

    YAML::Node current = root["current-context"];
    if (!m.current_context && current.IsDefined() && current.IsScalar() && !current.Scalar().empty())
        m.current_context = std::pair{current.Scalar(), path};
}

inline std::optional<boost::json::value> exec_extension(const Scope& cluster) {
    auto exts = cluster.get("extensions");
    if (!exts.IsDefined() || !exts.IsSequence()) return std::nullopt;
    for (const auto& e : exts)
        if (auto name = child(e, "name"); name.IsScalar() && name.Scalar() == "client.authentication.k8s.io/exec")
            return to_json(child(e, "extension"));
    return std::nullopt;
}

inline void apply_cluster(Config& cfg, const Scope& c, ExecClusterInfo& info) {
    cfg.server = c.str("server");
    if (cfg.server.empty()) c.fail("has no server");
    cfg.ca_pem = c.pem("certificate-authority", "certificates");
    cfg.insecure_skip_tls_verify = c.boolean("insecure-skip-tls-verify");
    cfg.tls_server_name = c.str("tls-server-name");
    info = ExecClusterInfo{cfg.server, cfg.tls_server_name, cfg.insecure_skip_tls_verify, cfg.ca_pem,
                           exec_extension(c)};
}

inline ExecConfig exec_config(const Scope& u) {
    YAML::Node n = u.get("exec");
    if (!n.IsMap()) u.fail("has an exec entry that is not a mapping");
    Entry e{n, u.file()};
    Scope x(e, "");
    auto fail = [&](const std::string& problem) { u.fail("has an exec plugin " + problem); };
    ExecConfig ec;
    ec.command = x.str("command");
    if (ec.command.empty()) fail("without a command");
    // As clientcmd does: a relative path with a directory part is relative to the kubeconfig;
    // a bare name is looked up in $PATH.
    if (ec.command.find('/') != std::string::npos) ec.command = x.resolve(ec.command).string();
    if (auto args = x.get("args"); args.IsDefined() && !args.IsNull()) {
        if (!args.IsSequence()) fail("whose args is not a list");
        for (const auto& a : args) {
            if (!a.IsScalar()) fail("whose args holds something that is not a string");
            ec.args.push_back(a.Scalar());
        }
    }
    if (auto env = x.get("env"); env.IsDefined() && !env.IsNull()) {
        if (!env.IsSequence()) fail("whose env is not a list of name/value pairs");
        for (const auto& v : env) {
            auto name = child(v, "name"), value = child(v, "value");
            if (!name.IsScalar() || name.Scalar().empty()) fail("whose env has an entry without a name");
            ec.env.emplace_back(name.Scalar(), value.IsScalar() ? value.Scalar() : std::string());
        }
    }
    ec.api_version = x.str("apiVersion");
    if (ec.api_version != exec_api_v1 && ec.api_version != exec_api_v1beta1)
        fail("with apiVersion \"" + ec.api_version + "\"; supported are " + std::string(exec_api_v1) + " and " +
             std::string(exec_api_v1beta1));
    ec.install_hint = x.str("installHint");
    ec.provide_cluster_info = x.boolean("provideClusterInfo");
    ec.interactive_mode = x.str("interactiveMode");
    if (ec.interactive_mode.empty()) {
        // clientcmd defaults the mode only for v1beta1; v1 requires it to be chosen.
        if (ec.api_version == exec_api_v1beta1) ec.interactive_mode = "IfAvailable";
        else fail("with apiVersion " + ec.api_version + " but no interactiveMode (Never, IfAvailable or Always)");
    } else if (ec.interactive_mode != "Never" && ec.interactive_mode != "IfAvailable" && ec.interactive_mode != "Always") {
        fail("with interactiveMode \"" + ec.interactive_mode + "\"; use Never, IfAvailable or Always");
    }
    return ec;
}

inline void apply_user(Config& cfg, const Scope& u, const ExecClusterInfo& cluster) {
    if (u.has("auth-provider")) {
        auto ap = u.get("auth-provider");
        auto name_node = child(ap, "name");
        std::string name = name_node.IsScalar() ? name_node.Scalar() : std::string();
        u.fail("uses auth-provider \"" + name + "\", which vck does not support; use an exec plugin instead");
    }
    std::vector<std::string> methods;
    if (u.has("token") || u.has("tokenFile")) methods.emplace_back("token");
    if (u.has("username") || u.has("password")) methods.emplace_back("username/password");
    if (u.has("exec")) methods.emplace_back("exec");
    if (methods.size() > 1) {
        std::string list;
        for (std::size_t i = 0; i < methods.size(); ++i) list += (i ? ", " : "") + methods[i];
        u.fail("has more than one way to authenticate (" + list + "); keep one");
    }

    cfg.client_cert_pem = u.pem("client-certificate", "certificates");
    cfg.client_key_pem = u.pem("client-key", "private keys");
    if (!cfg.client_cert_pem.empty() && cfg.client_key_pem.empty())
        u.fail("has a client certificate but no client-key or client-key-data");
    if (cfg.client_cert_pem.empty() && !cfg.client_key_pem.empty())
        u.fail("has a client key but no client-certificate or client-certificate-data");

    cfg.token = u.str("token");
    if (u.has("tokenFile"))
        cfg.credentials = std::make_shared<FileTokenSource>(u.resolve(u.str("tokenFile")), std::chrono::seconds(60),
                                                            u.origin());
    cfg.username = u.str("username");
    cfg.password = u.str("password");
    if (u.has("exec")) {
        ExecConfig ec = exec_config(u);
        ExecClusterInfo info = ec.provide_cluster_info ? cluster : ExecClusterInfo{};
        cfg.credentials = std::make_shared<ExecCredentialSource>(std::move(ec), std::move(info), u.origin());
    }
}

inline Config build(const Merged& m, const std::optional<std::string>& context_override) {
    std::string where = describe_files(m.files);
    std::string ctx_name;
    if (context_override && !context_override->empty()) ctx_name = *context_override;
    else if (m.current_context) ctx_name = m.current_context->first;
    else throw ConfigError(where + ": no current-context is set and no context was given");

    auto ctx_it = m.contexts.find(ctx_name);
    if (ctx_it == m.contexts.end()) {
        if (!context_override && m.current_context)
            throw ConfigError("kubeconfig " + m.current_context->second.string() + ": current-context " +
                              in_quotes(ctx_name) + " is not defined");
        throw ConfigError(where + ": context " + in_quotes(ctx_name) + " is not defined");
    }
    Scope ctx(ctx_it->second, "context " + in_quotes(ctx_name));

    Config cfg;
    std::string cluster_name = ctx.str("cluster");
    if (cluster_name.empty()) ctx.fail("names no cluster");
    auto cl = m.clusters.find(cluster_name);
    if (cl == m.clusters.end()) ctx.fail("refers to cluster " + in_quotes(cluster_name) + " which is not defined");
    ExecClusterInfo info;
    apply_cluster(cfg, Scope(cl->second, "cluster " + in_quotes(cluster_name)), info);

    // A context without a user is anonymous, as in clientcmd.
    if (std::string user_name = ctx.str("user"); !user_name.empty()) {
        auto us = m.users.find(user_name);
        if (us == m.users.end()) ctx.fail("refers to user " + in_quotes(user_name) + " which is not defined");
        apply_user(cfg, Scope(us->second, "user " + in_quotes(user_name)), info);
    }
    if (std::string ns = ctx.str("namespace"); !ns.empty()) cfg.namespace_ = ns;
    return cfg;
}

} // namespace detail::kubeconfig

/// Loads the configuration of one context (--context, else current-context) from the files
/// kubeconfig_files() names. Exec plugins are not run here; they run at the first request.
inline Config load_kubeconfig(const KubeconfigOptions& opts = {}) {
    namespace k = detail::kubeconfig;
    KubeconfigFiles files = kubeconfig_files(opts);
    k::Merged merged;
    for (const auto& p : files.paths) {
        std::error_code ec;
        if (!std::filesystem::exists(p, ec)) {
            if (files.skip_missing) continue;
            throw ConfigError("kubeconfig " + p.string() + " does not exist (from " + files.source + ")");
        }
        if (std::filesystem::is_directory(p, ec))
            throw ConfigError("kubeconfig " + p.string() + " is a directory, not a file (from " + files.source + ")");
        k::merge_file(merged, p);
    }
    if (merged.files.empty())
        throw ConfigError("none of the kubeconfig files in $KUBECONFIG exist: " + k::join(files.paths));
    return k::build(merged, opts.context);
}

} // namespace vck::client
