// AtomicFile: a file written (at any offsets, from several threads) under a temporary name in
// a staging directory, and renamed onto its final path only by commit(). A reader of the
// final path sees either the old file or the complete new one, never a partial one.
// Guarantee: an AtomicFile destroyed without commit() removes its temporary file.
// A test hook, disk_full_after(), makes writes fail as on a full disk (ENOSPC) once a given
// number of bytes has been written in the process: vck-fetch sets it from
// VCK_FETCH_TEST_DISK_FULL_AFTER, for tests of what a full disk does to a download.
#pragma once

#include <vck/fetch/local_error.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>

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
