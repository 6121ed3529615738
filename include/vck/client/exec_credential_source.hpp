// ExecCredentialSource: credentials from a client-go exec plugin (kubeconfig `user.exec`,
// client.authentication.k8s.io v1 and v1beta1). The plugin runs as an argument vector (no
// shell) with KUBERNETES_EXEC_INFO holding the ExecCredential request; what it prints is
// cached until its expirationTimestamp (forever without one) or until invalidate() (a 401).
// Guarantees: one run at a time per source; a failing plugin, unparsable output or a wrong
// apiVersion raise ConfigError naming the plugin, its stderr and the kubeconfig's installHint;
// a plugin that has not finished after `timeout()` (2 minutes by default: cloud plugins take
// seconds, a hung one must not stall every request behind it) is killed with its process
// group and reported the same way.
#pragma once

#include <vck/api/time.hpp>
#include <vck/client/base64.hpp>
#include <vck/client/config.hpp>
#include <vck/client/config_error.hpp>

#include <boost/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

extern char** environ;

namespace vck::client {

inline constexpr std::string_view exec_api_v1 = "client.authentication.k8s.io/v1";
inline constexpr std::string_view exec_api_v1beta1 = "client.authentication.k8s.io/v1beta1";

/// A kubeconfig `user.exec` stanza, with `command` already resolved against the kubeconfig's
/// directory when it is a relative path (a bare name is looked up in $PATH when run).
struct ExecConfig {
    std::string command;
    std::vector<std::string> args;
    std::vector<std::pair<std::string, std::string>> env;  // added to (and overriding) ours
    std::string api_version;
    std::string install_hint;
    bool provide_cluster_info = false;
    std::string interactive_mode;  // Never, IfAvailable or Always
};

/// What the plugin is told about the cluster when provideClusterInfo is set.
struct ExecClusterInfo {
    std::string server;
    std::string tls_server_name;
    bool insecure_skip_tls_verify = false;
    std::string ca_pem;
    std::optional<boost::json::value> config;  // the cluster's client.authentication.k8s.io/exec extension
};

using api::parse_rfc3339;  // an exec plugin's expirationTimestamp

class ExecCredentialSource final : public CredentialSource {
public:
    using Clock = std::function<std::chrono::system_clock::time_point()>;

    /// `origin` prefixes error messages ("kubeconfig /x/config: user \"u\""). `now` is the
    /// clock expirations are compared with (tests move it).
    explicit ExecCredentialSource(ExecConfig exec, ExecClusterInfo cluster = {}, std::string origin = {},
                                  Clock now = [] { return std::chrono::system_clock::now(); })
        : exec_(std::move(exec)), cluster_(std::move(cluster)), origin_(std::move(origin)), now_(std::move(now)) {}

    Credentials current() override {
        std::lock_guard lock(mu_);
        if (cached_ && (!cached_->expires || now_() < *cached_->expires)) return *cached_;
        cached_.reset();
        cached_ = run();
        return *cached_;
    }

    void invalidate() override {
        std::lock_guard lock(mu_);
        cached_.reset();
    }

    const ExecConfig& exec() const noexcept { return exec_; }

    std::chrono::milliseconds timeout() const noexcept { return timeout_; }
    void set_timeout(std::chrono::milliseconds t) noexcept { timeout_ = t; }

    /// The ExecCredential request the plugin finds in KUBERNETES_EXEC_INFO. We never hand the
    /// plugin a terminal (a controller has none), so `interactive` is always false.
    std::string exec_info() const {
        boost::json::object spec{{"interactive", false}};
        if (exec_.provide_cluster_info) {
            boost::json::object c{{"server", cluster_.server}};
            if (!cluster_.tls_server_name.empty()) c["tls-server-name"] = cluster_.tls_server_name;
            if (cluster_.insecure_skip_tls_verify) c["insecure-skip-tls-verify"] = true;
            if (!cluster_.ca_pem.empty()) c["certificate-authority-data"] = base64_encode(cluster_.ca_pem);
            if (cluster_.config) c["config"] = *cluster_.config;
            spec["cluster"] = std::move(c);
        }
        boost::json::object req{{"kind", "ExecCredential"}, {"apiVersion", exec_.api_version}, {"spec", std::move(spec)}};
        return boost::json::serialize(req);
    }

private:
    struct Output {
        int status = 0;  // as waitpid reports it
        bool timed_out = false;
        std::string out, err;
    };

    [[noreturn]] void fail(const std::string& problem) const {
        std::string msg = origin_.empty() ? std::string() : origin_ + ": ";
        msg += "exec plugin \"" + exec_.command + "\" " + problem;
        if (!exec_.install_hint.empty()) {
            std::string hint = exec_.install_hint;
            while (!hint.empty() && std::isspace(static_cast<unsigned char>(hint.back()))) hint.pop_back();
            msg += " (" + hint + ")";
        }
        throw ConfigError(msg);
    }

    static std::string trimmed(std::string s, std::size_t limit = 2000) {
        auto first = s.find_first_not_of(" \t\r\n");
        auto last = s.find_last_not_of(" \t\r\n");
        s = first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
        if (s.size() > limit) s = s.substr(0, limit) + "...";
        return s;
    }

    Credentials run() const {
        if (exec_.interactive_mode == "Always")
            fail("needs an interactive terminal (interactiveMode Always), which this process does not give it");
        Output o = spawn();
        if (o.timed_out) {
            auto ms = timeout_.count();
            std::string limit = ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
            std::string err = trimmed(o.err);
            fail("did not finish within " + limit + " and was stopped" + (err.empty() ? std::string() : ": " + err));
        }
        if (WIFSIGNALED(o.status))
            fail("was killed by signal " + std::to_string(WTERMSIG(o.status)) + ": " + trimmed(o.err));
        if (!WIFEXITED(o.status) || WEXITSTATUS(o.status) != 0) {
            std::string err = trimmed(o.err);
            fail("exited with status " + std::to_string(WEXITSTATUS(o.status)) +
                 (err.empty() ? std::string(" and printed nothing on stderr") : ": " + err));
        }
        return decode(o.out);
    }

    Credentials decode(const std::string& out) const {
        boost::system::error_code ec;
        boost::json::value v = boost::json::parse(out, ec);
        if (ec || !v.is_object())
            fail("printed output that is not an ExecCredential JSON object: \"" + trimmed(out, 200) + "\"");
        const auto& o = v.as_object();
        auto str = [](const boost::json::object& obj, std::string_view key) -> std::optional<std::string> {
            auto* p = obj.if_contains(key);
            if (!p || !p->is_string()) return std::nullopt;
            return std::string(p->as_string());
        };
        auto kind = str(o, "kind");
        if (kind.value_or("") != "ExecCredential")
            fail("printed kind \"" + kind.value_or("") + "\", expected \"ExecCredential\"");
        auto api = str(o, "apiVersion");
        if (api.value_or("") != exec_.api_version)
            fail("printed apiVersion \"" + api.value_or("") + "\", but the kubeconfig asks for \"" +
                 exec_.api_version + "\"");
        auto* status = o.if_contains("status");
        if (!status || !status->is_object()) fail("printed an ExecCredential without a status");
        const auto& st = status->as_object();
        Credentials c;
        c.token = str(st, "token").value_or("");
        c.client_cert_pem = str(st, "clientCertificateData").value_or("");
        c.client_key_pem = str(st, "clientKeyData").value_or("");
        if (c.client_cert_pem.empty() != c.client_key_pem.empty())
            fail("printed only one of status.clientCertificateData and status.clientKeyData; both are needed");
        if (c.token.empty() && c.client_cert_pem.empty())
            fail("printed neither status.token nor status.clientCertificateData/clientKeyData");
        if (auto* exp = st.if_contains("expirationTimestamp"); exp && !exp->is_null()) {
            std::optional<std::chrono::system_clock::time_point> t;
            if (exp->is_string()) t = parse_rfc3339(std::string_view(exp->as_string()));
            if (!t) fail("printed an expirationTimestamp that is not an RFC 3339 time: " + boost::json::serialize(*exp));
            c.expires = t;
        }
        return c;
    }

    Output spawn() const {
        std::vector<std::string> env_strings;
        auto overridden = [&](std::string_view entry) {
            auto eq = entry.find('=');
            std::string_view name = entry.substr(0, eq);
            if (name == "KUBERNETES_EXEC_INFO") return true;
            for (const auto& [n, _] : exec_.env)
                if (n == name) return true;
            return false;
        };
        for (char** e = environ; e && *e; ++e)
            if (!overridden(*e)) env_strings.emplace_back(*e);
        for (const auto& [n, val] : exec_.env) env_strings.push_back(n + "=" + val);
        env_strings.push_back("KUBERNETES_EXEC_INFO=" + exec_info());

        std::vector<char*> argv, envp;
        std::string cmd = exec_.command;
        argv.push_back(cmd.data());
        std::vector<std::string> args = exec_.args;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        for (auto& e : env_strings) envp.push_back(e.data());
        envp.push_back(nullptr);

        int out_pipe[2], err_pipe[2];
        if (::pipe2(out_pipe, O_CLOEXEC) != 0) fail(std::string("could not be started: pipe: ") + std::strerror(errno));
        if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
            int e = errno;
            ::close(out_pipe[0]);
            ::close(out_pipe[1]);
            fail(std::string("could not be started: pipe: ") + std::strerror(e));
        }
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
        posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
        // Its own process group, so that a timeout also stops what the plugin started.
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
        posix_spawnattr_setpgroup(&attr, 0);
        pid_t pid = -1;
        int rc = ::posix_spawnp(&pid, cmd.c_str(), &fa, &attr, argv.data(), envp.data());
        posix_spawnattr_destroy(&attr);
        posix_spawn_file_actions_destroy(&fa);
        ::close(out_pipe[1]);
        ::close(err_pipe[1]);
        if (rc != 0) {
            ::close(out_pipe[0]);
            ::close(err_pipe[0]);
            fail(std::string("could not be started: ") + std::strerror(rc));
        }

        Output o;
        pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
        std::string* sinks[2] = {&o.out, &o.err};
        int open_fds = 2;
        char buf[8192];
        auto deadline = std::chrono::steady_clock::now() + timeout_;
        while (open_fds > 0) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            int ready = left.count() <= 0 ? 0 : ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count() + 1, 1 << 30)));
            if (ready == 0) {
                o.timed_out = true;
                ::kill(-pid, SIGKILL);
                break;
            }
            if (ready < 0) {
                if (errno == EINTR) continue;
                break;
            }
            for (int i = 0; i < 2; ++i) {
                if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
                ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
                if (n > 0) {
                    sinks[i]->append(buf, static_cast<std::size_t>(n));
                } else if (n == 0 || errno != EINTR) {
                    ::close(fds[i].fd);
                    fds[i].fd = -1;
                    --open_fds;
                }
            }
        }
        for (auto& f : fds)
            if (f.fd >= 0) ::close(f.fd);
        while (::waitpid(pid, &o.status, 0) < 0 && errno == EINTR) {
        }
        return o;
    }

    ExecConfig exec_;
    ExecClusterInfo cluster_;
    std::string origin_;
    Clock now_;
    std::chrono::milliseconds timeout_{std::chrono::minutes(2)};
    std::mutex mu_;
    std::optional<Credentials> cached_;
};

} // namespace vck::client
