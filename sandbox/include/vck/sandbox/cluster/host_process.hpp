// HostProcess: a host program the simulated kubelet runs for a container. Started with
// fork and exec (argv as given, never a shell; stdin /dev/null; stdout and stderr into one
// pipe; its own process group; default signal mask and dispositions, whatever the parent
// blocks; optionally as another uid, gid and supplementary groups, which needs root), read and
// reaped by a thread of its own, so nobody else ever blocks on it.
// Guarantees: spawn() returns only once the program runs (or throws why it could not); the
// output sink is called in order and never after discard(); terminate() and kill() signal the
// whole process group and never a recycled pid (the child is reaped only under the same lock);
// the destructor kills what still runs and joins the thread.
// Read-only paths, as a node's read-only mounts: each is bound onto itself read-only in a mount
// namespace of the program's own (as root; otherwise in a user namespace of its own, mapping
// only the caller's uid and gid), so a write there fails with EROFS as in a container, while the
// kubelet and other programs keep writing the same directory. A writable path under a read-only
// one is bound again writable. Where no namespace can be made (no CAP_SYS_ADMIN and user
// namespaces disabled) the program runs with every path writable: mount_isolation() says which.
// Between fork and exec the child makes only async-signal-safe calls on memory prepared before
// the fork: the parent has other threads (and, in tests, ASan's), whose locks the child must
// never wait for.
#pragma once

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <sched.h>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

namespace vck::sandbox {

class HostProcess {
public:
    /// Who the program runs as; changing to it needs root (CAP_SETUID, CAP_SETGID).
    struct Credentials {
        uid_t uid = 0;
        gid_t gid = 0;
        std::vector<gid_t> groups;  // supplementary; empty clears the caller's
    };
    struct Spec {
        std::vector<std::string> argv;  // argv[0] is the program's path
        std::vector<std::string> env;   // "NAME=value"
        std::filesystem::path cwd;      // empty: inherit
        std::optional<Credentials> run_as;  // empty: the caller's own
        std::vector<std::filesystem::path> read_only;  // host directories or files the program cannot write
        std::vector<std::filesystem::path> writable;   // the others it mounts (kept writable under a read-only one)
    };
    using Sink = std::function<void(std::string_view)>;
    using OnExit = std::function<void()>;

    /// Starts the program. Throws std::system_error (e.g. ENOENT, EACCES, EPERM) when it cannot
    /// run. With run_as, a program that the new user may execute but not reach (a directory on
    /// its path is not searchable for it) is opened before the change and run through that
    /// descriptor, as a container runtime would have it in the image already.
    static std::unique_ptr<HostProcess> spawn(const Spec& spec, Sink sink, OnExit on_exit) {
        if (spec.argv.empty()) throw std::invalid_argument("HostProcess: an empty argv");
        // Everything the child touches is made here, before the fork.
        std::vector<char*> argv, envp;
        for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
        envp.push_back(nullptr);
        const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
        std::vector<gid_t> groups = spec.run_as ? spec.run_as->groups : std::vector<gid_t>{};
        const auto binds = plan_binds(spec);
        // The maps of a user namespace of the child's own (used when it is not root).
        char uid_map[64], gid_map[64];
        std::snprintf(uid_map, sizeof uid_map, "%u %u 1\n", static_cast<unsigned>(getuid()), static_cast<unsigned>(getuid()));
        std::snprintf(gid_map, sizeof gid_map, "%u %u 1\n", static_cast<unsigned>(getgid()), static_cast<unsigned>(getgid()));
        const bool as_root = geteuid() == 0;
        sigset_t none;
        sigemptyset(&none);
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;

        int out[2], status[2];
        if (pipe2(out, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
        if (pipe2(status, O_CLOEXEC) != 0) {
            int e = errno;
            close(out[0]);
            close(out[1]);
            throw std::system_error(e, std::generic_category(), "pipe2");
        }
        pid_t pid = fork();
        if (pid == 0) {
            // The child: report the first failure through `status` and leave.
            auto fail = [&](int err) {
                while (write(status[1], &err, sizeof err) < 0 && errno == EINTR) {
                }
                _exit(127);
            };
            if (setpgid(0, 0) != 0) fail(errno);
            for (int sig = 1; sig < NSIG; ++sig)
                if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);
            sigprocmask(SIG_SETMASK, &none, nullptr);
            int null = open("/dev/null", O_RDONLY);
            if (null < 0 || dup2(null, 0) < 0 || dup2(out[1], 1) < 0 || dup2(out[1], 2) < 0) fail(errno);
            if (null > 2) close(null);
            if (!binds.empty()) {
                int err = isolate_mounts(binds, as_root, uid_map, gid_map);
                if (err != 0) fail(err);
            }
            if (cwd && chdir(cwd) != 0) fail(errno);
            int program = -1;
            if (spec.run_as) {
                program = open(argv[0], O_RDONLY);
                // A script is run by its interpreter through /dev/fd/N, which must stay open.
                char magic[2] = {};
                if (program >= 0 && !(pread(program, magic, 2, 0) == 2 && magic[0] == '#' && magic[1] == '!'))
                    fcntl(program, F_SETFD, FD_CLOEXEC);
                if (set_credentials(*spec.run_as, groups) != 0) fail(errno);
            }
            execve(argv[0], argv.data(), envp.data());
            int err = errno;
            if (err == EACCES && program >= 0) {
                fexecve(program, argv.data(), envp.data());
                err = errno;
            }
            fail(err);
        }
        int fork_errno = errno;
        close(out[1]);
        close(status[1]);
        if (pid < 0) {
            close(out[0]);
            close(status[0]);
            throw std::system_error(fork_errno, std::generic_category(), "fork");
        }
        // End of file: the exec succeeded (the write end was close-on-exec); else its errno.
        int child_errno = 0;
        ssize_t n;
        while ((n = read(status[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
        }
        close(status[0]);
        if (n > 0) {
            close(out[0]);
            while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
            }
            throw std::system_error(child_errno, std::generic_category(), spec.argv[0]);
        }
        std::unique_ptr<HostProcess> p(new HostProcess(pid, out[0], std::move(sink), std::move(on_exit)));
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

    void terminate() { signal(SIGTERM); }
    void kill() { signal(SIGKILL); }
    /// From now on the output is dropped (the pod and its logs are gone).
    void discard() {
        std::lock_guard lock(sink_mu_);
        sink_ = nullptr;
    }

    /// Whether read-only paths are enforced on this machine (a mount namespace can be made,
    /// as root or in a user namespace); probed once by a child that tries.
    static bool mount_isolation() {
        static const bool available = [] {
            pid_t pid = fork();
            if (pid == 0) {
                bool ok = geteuid() == 0 ? unshare(CLONE_NEWNS) == 0 : unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0;
                _exit(ok ? 0 : 1);
            }
            int status = 0;
            if (pid < 0) return false;
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            return WIFEXITED(status) && WEXITSTATUS(status) == 0;
        }();
        return available;
    }

private:
    /// One bind mount the child makes: `path` onto itself, read-only or not, keeping the flags
    /// of the mount it is on (a user namespace may not clear them).
    struct Bind {
        std::string path;
        bool read_only;
        unsigned long flags;
    };

    /// The binds for a spec: each read-only path, then each writable path under one of them.
    static std::vector<Bind> plan_binds(const Spec& spec) {
        std::vector<Bind> binds;
        auto kept_flags = [](const std::filesystem::path& p) {
            struct statvfs sv {};
            unsigned long f = 0;
            if (::statvfs(p.c_str(), &sv) != 0) return f;
            if (sv.f_flag & ST_NOSUID) f |= MS_NOSUID;
            if (sv.f_flag & ST_NODEV) f |= MS_NODEV;
            if (sv.f_flag & ST_NOEXEC) f |= MS_NOEXEC;
            if (sv.f_flag & ST_NOATIME) f |= MS_NOATIME;
            if (sv.f_flag & ST_NODIRATIME) f |= MS_NODIRATIME;
            if (sv.f_flag & ST_RELATIME) f |= MS_RELATIME;
            return f;
        };
        auto under = [](const std::filesystem::path& p, const std::filesystem::path& dir) {
            auto rel = p.lexically_normal().lexically_relative(dir.lexically_normal());
            return !rel.empty() && *rel.begin() != "..";
        };
        for (const auto& p : spec.read_only) binds.push_back({p.string(), true, kept_flags(p)});
        for (const auto& w : spec.writable)
            for (const auto& r : spec.read_only)
                if (under(w, r)) {
                    binds.push_back({w.string(), false, kept_flags(w)});
                    break;
                }
        return binds;
    }

    /// In the child only: a mount namespace of its own (in a user namespace when not root) with
    /// `binds` made. Returns 0, or the errno of a bind that failed. No namespace at all is not
    /// an error: the program then runs with every path writable (mount_isolation() is false).
    static int isolate_mounts(const std::vector<Bind>& binds, bool as_root, const char* uid_map, const char* gid_map) {
        if (as_root) {
            if (unshare(CLONE_NEWNS) != 0) return 0;
        } else {
            if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return 0;
            if (!write_proc("/proc/self/setgroups", "deny") || !write_proc("/proc/self/uid_map", uid_map) ||
                !write_proc("/proc/self/gid_map", gid_map))
                return errno;
        }
        // Our binds must not propagate back to the host's mount namespace.
        if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno;
        for (const auto& b : binds) {
            if (mount(b.path.c_str(), b.path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) return errno;
            unsigned long f = MS_BIND | MS_REMOUNT | b.flags | (b.read_only ? MS_RDONLY : 0);
            if (mount(nullptr, b.path.c_str(), nullptr, f, nullptr) != 0) return errno;
        }
        return 0;
    }

    static bool write_proc(const char* file, const char* text) {
        int fd = open(file, O_WRONLY | O_CLOEXEC);
        if (fd < 0) return false;
        auto len = static_cast<ssize_t>(std::strlen(text));
        bool ok = write(fd, text, static_cast<std::size_t>(len)) == len;
        close(fd);
        return ok;
    }

    /// In the child only. Raw system calls change the calling thread alone, which is all the
    /// child has; glibc's wrappers would try to change every thread they believe exists.
    static int set_credentials(const Credentials& c, const std::vector<gid_t>& groups) {
#if defined(SYS_setresuid32)
        constexpr long sys_setgroups = SYS_setgroups32, sys_setresgid = SYS_setresgid32, sys_setresuid = SYS_setresuid32;
#else
        constexpr long sys_setgroups = SYS_setgroups, sys_setresgid = SYS_setresgid, sys_setresuid = SYS_setresuid;
#endif
        if (syscall(sys_setgroups, groups.size(), groups.data()) != 0) return -1;
        if (syscall(sys_setresgid, c.gid, c.gid, c.gid) != 0) return -1;
        return static_cast<int>(syscall(sys_setresuid, c.uid, c.uid, c.uid));
    }

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
            exit_code_ = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
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
    std::atomic<int> exit_code_{-1};
    std::thread reader_;
};

} // namespace vck::sandbox
