// Prepare: make a directory ready for an unprivileged vck-fetch. A node's kubelet creates
// hostPath and subPath directories as root, mode 0755; a privileged init container runs
// `vck-fetch prepare DIR --owner UID:GID` so that the data mover, running as UID, can write.
// Guarantees: DIR ends up a real directory owned by UID:GID with mode 0755; directories it had
// to create on the way stay root's (this process's), 0755; nothing inside DIR is touched, so a
// second run changes nothing. With allowed roots, DIR must lie strictly inside one after every
// symbolic link is resolved (Confinement's rules), else PathRefused and nothing is created; a
// symbolic link at DIR itself is always refused. The chown goes through a descriptor of the
// directory that was checked, never through a path that could meanwhile become a link.
#pragma once

#include <vck/fetch/confinement.hpp>
#include <vck/fetch/local_error.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vck::fetch {

struct Owner {
    uid_t uid = 0;
    gid_t gid = 0;

    /// "UID:GID", both numeric. Throws std::invalid_argument.
    static Owner parse(std::string_view text) {
        auto bad = [&] {
            return std::invalid_argument("--owner \"" + std::string(text) + "\": expected UID:GID, two numbers");
        };
        auto colon = text.find(':');
        if (colon == std::string_view::npos) throw bad();
        auto number = [&](std::string_view s) {
            std::uint32_t v = 0;
            auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
            // 2^32-1 is -1 to chown(2): "leave unchanged".
            if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v == 0xffffffffu) throw bad();
            return v;
        };
        return Owner{number(text.substr(0, colon)), number(text.substr(colon + 1))};
    }
};

struct PrepareResult {
    std::uint64_t created = 0;  // directories made, DIR included
};

/// See the top. Throws PathRefused, LocalError (creating, chown: EPERM unless root or the
/// owner is this process's own user and group).
inline PrepareResult prepare_directory(const std::filesystem::path& dir, Owner owner,
                                       const std::vector<std::filesystem::path>& roots) {
    namespace fs = std::filesystem;
    check_request("prepare", dir, roots, false);
    const std::string refusing = "refusing to prepare \"" + dir.string() + "\"";
    // The deepest part of the path that exists; below it everything is created.
    fs::path base = dir.lexically_normal();
    if (!base.has_filename()) base = base.parent_path();
    std::vector<fs::path> missing;
    std::error_code ec;
    while (!fs::exists(fs::symlink_status(base, ec))) {
        missing.push_back(base.filename());
        base = base.parent_path();
    }
    if (missing.empty() && fs::is_symlink(fs::symlink_status(base, ec)))
        throw PathRefused(refusing + ": it is a symbolic link (only real directories are prepared)");
    auto real = fs::canonical(base, ec);
    if (ec) throw PathRefused(refusing + ": " + base.string() + " cannot be resolved: " + ec.message());
    auto existing = real;
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) real /= *it;
    if (real == real.root_path()) throw PathRefused(refusing + ": it is the filesystem root");
    if (!roots.empty()) check_inside("prepare", dir, real, roots);

    // Each step opens the next directory below the last one's descriptor, with O_NOFOLLOW: a
    // link put in its place since the check is refused, not followed.
    auto open_below = [&](int at, const fs::path& name, const fs::path& shown) {
        int next = ::openat(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next >= 0) return next;
        int e = errno;
        if (at != AT_FDCWD) ::close(at);
        if (e == ELOOP) throw PathRefused(refusing + ": " + shown.string() + " is a symbolic link");
        throw LocalError::from_errno("open directory", shown, e);
    };
    PrepareResult result;
    int fd = -1;
    if (missing.empty()) {
        fd = open_below(AT_FDCWD, real, real);
    } else {
        fd = ::open(existing.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) throw LocalError::from_errno("open directory", existing);
        auto at = existing;
        for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
            at /= *it;
            bool made = ::mkdirat(fd, it->c_str(), 0755) == 0;
            if (!made && errno != EEXIST) {
                int e = errno;
                ::close(fd);
                throw LocalError::from_errno("create directory", at, e);
            }
            int next = open_below(fd, *it, at);
            ::close(fd);
            fd = next;
            if (made) {
                ++result.created;
                ::fchmod(fd, 0755);  // whatever the umask
            }
        }
    }
    // The mode first, and only if it differs: once DIR is someone else's, changing its mode
    // would need CAP_FOWNER, which an init container with only CHOWN lacks.
    struct stat st {};
    if (::fstat(fd, &st) != 0 || ((st.st_mode & 07777) != 0755 && ::fchmod(fd, 0755) != 0)) {
        int e = errno;
        ::close(fd);
        throw LocalError::from_errno("set mode 0755 on", real, e);
    }
    if (::fchown(fd, owner.uid, owner.gid) != 0) {
        int e = errno;
        ::close(fd);
        throw LocalError("cannot chown " + real.string() + " to " + std::to_string(owner.uid) + ":" +
                         std::to_string(owner.gid) + ": " + std::strerror(e) +
                         (e == EPERM ? " (prepare runs as root, or with CAP_CHOWN)" : ""));
    }
    ::close(fd);
    return result;
}

} // namespace vck::fetch
