// open_peer_file: opens, for reading, one file of a copy's directory by the relative path a peer
// asked for, and nothing else. The path must be a plain relative path (fetch_plan.hpp's
// unsafe_reason: no `..`, no `.`, not absolute, no empty segment, no NUL); every directory on
// the way is opened with O_NOFOLLOW from the one before (openat), so no symbolic link, in any
// segment, leads out of the copy; the file itself must be a regular file with one link (a hard
// link placed in the copy by a job could name a file outside it). The state directory lies
// outside the copy (state_dir.hpp), so no path reaches it.
// Returns the open descriptor and its size, or the reason it is refused; never throws.
#pragma once

#include <vck/fetch/fetch_plan.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

namespace vck::fetch {

struct PeerFile {
    int fd = -1;  // owned by the caller once >= 0
    std::uint64_t size = 0;
    std::string refused;  // why not, when fd < 0
    bool missing = false;  // refused only because it is not (yet) there
};

inline PeerFile open_peer_file(const std::filesystem::path& dest, std::string_view relative) {
    PeerFile out;
    if (auto why = unsafe_reason(relative); !why.empty()) {
        out.refused = "unsafe path (" + why + ")";
        return out;
    }
    int dir = ::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) {
        out.refused = std::string("the copy's directory cannot be opened: ") + std::strerror(errno);
        out.missing = errno == ENOENT;
        return out;
    }
    std::size_t start = 0;
    for (;;) {
        auto slash = relative.find('/', start);
        std::string seg(relative.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
        const bool last = slash == std::string_view::npos;
        int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? O_NONBLOCK : O_DIRECTORY);
        int next = ::openat(dir, seg.c_str(), flags);
        int err = errno;
        ::close(dir);
        if (next < 0) {
            out.missing = err == ENOENT;
            out.refused = err == ELOOP || err == ENOTDIR ? "a symbolic link or non-directory on the way" : std::strerror(err);
            return out;
        }
        if (last) {
            struct stat st {};
            if (::fstat(next, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
                ::close(next);
                out.refused = "not a regular file of the copy";
                return out;
            }
            out.fd = next;
            out.size = static_cast<std::uint64_t>(st.st_size);
            return out;
        }
        dir = next;
        start = slash + 1;
    }
}

} // namespace vck::fetch
