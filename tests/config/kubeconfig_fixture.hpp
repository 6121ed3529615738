// What the config tests stand on: a scratch directory removed afterwards, the real kubectl and
// openssl command-line tools to make kubeconfigs and certificates the way users make them, and
// an environment guard so each test sets KUBECONFIG/HOME/KUBERNETES_SERVICE_* and restores them.
#pragma once

#include <doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace config_test {

namespace fs = std::filesystem;

class ScratchDir {
public:
    ScratchDir() {
        std::string tmpl = (fs::temp_directory_path() / "vck-config-XXXXXX").string();
        REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
        path_ = tmpl;
    }
    ~ScratchDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;

    const fs::path& path() const { return path_; }
    fs::path operator/(const std::string& name) const { return path_ / name; }

    fs::path write(const std::string& name, const std::string& text, bool executable = false) const {
        fs::path p = path_ / name;
        fs::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
        if (executable) ::chmod(p.c_str(), 0755);
        return p;
    }

private:
    fs::path path_;
};

inline std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// Runs a shell command line built by the test from its own scratch paths; fails the test
/// when the command does.
inline std::string sh(const std::string& cmd) {
    FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
    REQUIRE(p != nullptr);
    std::string out;
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    int status = ::pclose(p);
    INFO("command: " << cmd << "\noutput: " << out);
    REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    return out;
}

/// `kubectl --kubeconfig FILE config ARGS` (ARGS already quoted where needed).
inline void kubectl(const fs::path& kubeconfig, const std::string& args) {
    sh("kubectl --kubeconfig '" + kubeconfig.string() + "' config " + args);
}

/// A self-signed certificate and its key, made by the openssl CLI.
struct CertFiles {
    fs::path cert, key;
    std::string cert_pem, key_pem;
};

inline CertFiles make_cert(const ScratchDir& dir, const std::string& name) {
    CertFiles c{dir / (name + ".crt"), dir / (name + ".key"), {}, {}};
    sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj '/CN=" + name +
       "' -keyout '" + c.key.string() + "' -out '" + c.cert.string() + "'");
    c.cert_pem = read_text(c.cert);
    c.key_pem = read_text(c.key);
    return c;
}

/// Saves the variables the loaders read, clears them, and puts them back at scope exit.
class EnvGuard {
public:
    EnvGuard() {
        for (const char* name : {"KUBECONFIG", "HOME", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT",
                                 "POD_NAMESPACE", "VCK_SERVICE_ACCOUNT_DIR"}) {
            const char* v = std::getenv(name);
            saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
            ::unsetenv(name);
        }
    }
    ~EnvGuard() {
        for (const auto& [name, v] : saved_) {
            if (v) ::setenv(name.c_str(), v->c_str(), 1);
            else ::unsetenv(name.c_str());
        }
    }
    void set(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

private:
    std::map<std::string, std::optional<std::string>> saved_;
};

/// A shell script standing in for an exec credential plugin: it counts its runs in `count`
/// and prints `body` (a here-document that may use $n, the run number).
inline fs::path write_plugin(const ScratchDir& dir, const std::string& name, const std::string& body) {
    fs::path count = dir / (name + ".count");
    std::string script = "#!/bin/sh\n"
                         "echo run >> '" + count.string() + "'\n"
                         "n=$(wc -l < '" + count.string() + "' | tr -d ' ')\n" +
                         body + "\n";
    return dir.write(name, script, true);
}

/// Forgets earlier runs. Needed after kubectl calls: the installed kubectl is a dispatcher that
/// may contact the current context's server, and so run its exec plugin, on any command.
inline void reset_runs(const ScratchDir& dir, const std::string& name) {
    std::error_code ec;
    fs::remove(dir / (name + ".count"), ec);
}

inline int plugin_runs(const ScratchDir& dir, const std::string& name) {
    std::ifstream in(dir / (name + ".count"));
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
}

} // namespace config_test
