// AtomicFile: a file written (at any offsets, from several threads) under a temporary name in
// a staging directory, and renamed onto its final path only by commit(). A reader of the
// final path sees either the old file or the complete new one, never a partial one.
// Guarantee: an AtomicFile destroyed without commit() removes its temporary file.
// A test hook, disk_full_after(), makes writes fail as on a full disk (ENOSPC) once a given
// number of bytes has been written in the process: vck-fetch sets it from
// VCK_FETCH_TEST_DISK_FULL_AFTER, for tests of what a full disk does to a download.
// copy_from() fills the file from another one on the same disk: a reflink where the
// filesystem shares blocks copy-on-write (FICLONE), else an in-kernel copy: either way the
// two files are independent afterwards (a write to one never shows in the other).
#pragma once

#include <vck/fetch/local_error.hpp>

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace vck::fetch {

class AtomicFile {
public:
    /// Creates the temporary file in `staging` (same filesystem as `final_path`).
    AtomicFile(std::filesystem::path final_path, const std::filesystem::path& staging)
        : final_(std::move(final_path)) {
        static std::atomic<std::uint64_t> counter{0};
        tmp_ = staging / ("part-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd_ < 0) throw LocalError::from_errno("create temporary file", tmp_);
    }
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;
    ~AtomicFile() {
        if (fd_ >= 0) ::close(fd_);
        if (!committed_) ::unlink(tmp_.c_str());
    }

    const std::filesystem::path& temp_path() const { return tmp_; }
    const std::filesystem::path& final_path() const { return final_; }

    void write_at(std::uint64_t offset, const char* data, std::size_t n) {
        if (disk_full_armed().load() && disk_room().fetch_sub(static_cast<std::int64_t>(n)) < static_cast<std::int64_t>(n))
            throw LocalError::from_errno("write", final_, ENOSPC);
        while (n > 0) {
            auto w = ::pwrite(fd_, data, n, static_cast<off_t>(offset));
            if (w < 0) {
                if (errno == EINTR) continue;
                throw LocalError::from_errno("write", final_);
            }
            data += w;
            n -= static_cast<std::size_t>(w);
            offset += static_cast<std::uint64_t>(w);
        }
    }

    /// Fills the file with the `size` bytes of `source` (an open, readable regular file):
    /// a reflink when the filesystem offers one, else copy_file_range, else read and write.
    void copy_from(int source, std::uint64_t size) {
        if (::ioctl(fd_, FICLONE, source) == 0) return;
        std::uint64_t done = 0;
        bool in_kernel = true;
        std::vector<char> buf;
        while (done < size) {
            auto want = static_cast<std::size_t>(std::min<std::uint64_t>(size - done, 8u << 20));
            ssize_t n = -1;
            if (in_kernel) {
                if (disk_full_armed().load() &&
                    disk_room().fetch_sub(static_cast<std::int64_t>(want)) < static_cast<std::int64_t>(want))
                    throw LocalError::from_errno("write", final_, ENOSPC);
                auto in_off = static_cast<off_t>(done), out_off = static_cast<off_t>(done);
                n = ::copy_file_range(source, &in_off, fd_, &out_off, want, 0);
                if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
                    in_kernel = false;  // not between these files: copy through user space
                    continue;
                }
            } else {
                buf.resize(want);
                n = ::pread(source, buf.data(), want, static_cast<off_t>(done));
                if (n > 0) write_at(done, buf.data(), static_cast<std::size_t>(n));
            }
            if (n < 0) {
                if (errno == EINTR) continue;
                throw LocalError::from_errno("copy into", final_);
            }
            if (n == 0) throw LocalError("the file copied into " + final_.string() + " is shorter than expected");
            done += static_cast<std::uint64_t>(n);
        }
    }

    /// Closes and renames onto the final path, creating its parent directories.
    void commit() {
        if (::close(fd_) != 0) {
            fd_ = -1;
            throw LocalError::from_errno("write", final_);
        }
        fd_ = -1;
        std::error_code ec;
        std::filesystem::create_directories(final_.parent_path(), ec);
        if (ec) throw LocalError("cannot create directory " + final_.parent_path().string() + ": " + ec.message());
        if (::rename(tmp_.c_str(), final_.c_str()) != 0) throw LocalError::from_errno("rename into place", final_);
        committed_ = true;
    }

    /// The test hook: from now on, writes past `bytes` more (in all, in this process) fail
    /// with ENOSPC, and every write after them.
    static void disk_full_after(std::int64_t bytes) {
        disk_room().store(bytes);
        disk_full_armed().store(true);
    }

private:
    static std::atomic<bool>& disk_full_armed() {
        static std::atomic<bool> armed{false};
        return armed;
    }
    static std::atomic<std::int64_t>& disk_room() {
        static std::atomic<std::int64_t> room{0};
        return room;
    }

    std::filesystem::path final_;
    std::filesystem::path tmp_;
    int fd_ = -1;
    bool committed_ = false;
};

} // namespace vck::fetch
