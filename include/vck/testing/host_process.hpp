// HostProcess: a host program the simulated kubelet runs for a container. Started with
// posix_spawn (argv as given, never a shell; stdin /dev/null; stdout and stderr into one pipe;
// its own process group; default signal mask and dispositions, whatever the parent blocks),
// read and reaped by a thread of its own, so nobody else ever blocks on it.
// Guarantees: the output sink is called in order and never after discard(); terminate() and
// kill() signal the whole process group and never a recycled pid (the child is reaped only
// under the same lock); the destructor kills what still runs and joins the thread.
#pragma once

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <spawn.h>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

namespace vck::testing {

class HostProcess {
public:
    struct Spec {
        std::vector<std::string> argv;  // argv[0] is the program's path
        std::vector<std::string> env;   // "NAME=value"
        std::filesystem::path cwd;      // empty: inherit
    };
    using Sink = std::function<void(std::string_view)>;
    using OnExit = std::function<void()>;

    /// Starts the program. Throws std::system_error (e.g. ENOENT, EACCES) when it cannot run.
    static std::unique_ptr<HostProcess> spawn(const Spec& spec, Sink sink, OnExit on_exit) {
        if (spec.argv.empty()) throw std::invalid_argument("HostProcess: an empty argv");
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
        if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, spec.cwd.c_str());
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        sigset_t none, all;
        sigemptyset(&none);
        sigfillset(&all);
        sigdelset(&all, SIGKILL);
        sigdelset(&all, SIGSTOP);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &all);
        posix_spawnattr_setpgroup(&attr, 0);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        std::vector<char*> argv, envp;
        for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
        envp.push_back(nullptr);
        pid_t pid = 0;
        int rc = posix_spawn(&pid, spec.argv[0].c_str(), &fa, &attr, argv.data(), envp.data());
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        close(fds[1]);
        if (rc != 0) {
            close(fds[0]);
            throw std::system_error(rc, std::generic_category(), spec.argv[0]);
        }
        std::unique_ptr<HostProcess> p(new HostProcess(pid, fds[0], std::move(sink), std::move(on_exit)));
        p->reader_ = std::thread([raw = p.get()] { raw->read_and_reap(); });
        return p;
    }

    ~HostProcess() {
        kill();
        if (reader_.joinable()) reader_.join();
        if (fd_ >= 0) close(fd_);
    }
    HostProcess(const HostProcess&) = delete;
    HostProcess& operator=(const HostProcess&) = delete;

    pid_t pid() const { return pid_; }
    bool exited() const { return exited_.load(); }
    /// The exit code, or 128 + the signal that ended it (as container runtimes report it).
    int exit_code() const { return exit_code_.load(); }
    /// Whether a signal (not exit()) ended it.
    bool signalled() const { return signalled_.load(); }

    void terminate() { signal(SIGTERM); }
    void kill() { signal(SIGKILL); }
    /// From now on the output is dropped (the pod and its logs are gone).
    void discard() {
        std::lock_guard lock(sink_mu_);
        sink_ = nullptr;
    }

private:
    HostProcess(pid_t pid, int fd, Sink sink, OnExit on_exit)
        : pid_(pid), fd_(fd), sink_(std::move(sink)), on_exit_(std::move(on_exit)) {}

    void signal(int sig) {
        std::lock_guard lock(reap_mu_);
        if (!exited_) ::kill(-pid_, sig);
    }

    void read_and_reap() {
        char buf[8192];
        for (;;) {
            ssize_t n = ::read(fd_, buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            std::lock_guard lock(sink_mu_);
            if (sink_) sink_(std::string_view(buf, static_cast<std::size_t>(n)));
        }
        siginfo_t info{};
        while (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
        }
        {
            std::lock_guard lock(reap_mu_);
            int status = 0;
            while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
            }
            if (WIFSIGNALED(status)) {
                signalled_ = true;
                exit_code_ = 128 + WTERMSIG(status);
            } else {
                exit_code_ = WEXITSTATUS(status);
            }
            exited_ = true;
        }
        if (on_exit_) on_exit_();
    }

    pid_t pid_;
    int fd_;
    std::mutex sink_mu_;
    Sink sink_;
    OnExit on_exit_;
    std::mutex reap_mu_;
    std::atomic<bool> exited_{false};
    std::atomic<bool> signalled_{false};
    std::atomic<int> exit_code_{-1};
    std::thread reader_;
};

} // namespace vck::testing
