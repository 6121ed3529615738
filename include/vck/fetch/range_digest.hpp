// RangeDigest: the MD5 of a file that is written as byte ranges finishing in any order. Each
// range is read back from disk as soon as it and every range before it are written, so the
// digest advances in file order while later ranges are still downloading, and only the last
// contiguous stretch is left to hash when the file completes.
// Not thread-safe: the Fetcher calls it from its one hashing thread only, which keeps MD5 and
// the read-back off the network thread. A read-back failure is kept and thrown by finish().
#pragma once

#include <vck/fetch/local_error.hpp>
#include <vck/api/digest.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace vck::fetch {

/// Feeds bytes [first, last] of the open file `fd` (named `p` in errors) into `d`.
inline void digest_file_range(api::Digest& d, int fd, const std::filesystem::path& p, std::uint64_t first,
                              std::uint64_t last) {
    std::vector<char> buf(std::min<std::uint64_t>(1u << 20, last - first + 1));
    std::uint64_t at = first;
    while (at <= last) {
        auto want = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), last - at + 1));
        auto n = ::pread(fd, buf.data(), want, static_cast<off_t>(at));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw LocalError::from_errno("read back", p);
        if (n == 0) throw LocalError("cannot read back " + p.string() + ": it is shorter than the bytes written to it");
        d.update(buf.data(), static_cast<std::size_t>(n));
        at += static_cast<std::uint64_t>(n);
    }
}

class RangeDigest {
public:
    using Range = std::pair<std::uint64_t, std::uint64_t>;  // [first, last] inclusive

    RangeDigest(std::filesystem::path file, std::vector<Range> ranges)
        : file_(std::move(file)), ranges_(std::move(ranges)), written_(ranges_.size(), false) {}

    /// Range `r` is on disk: hash it and any written ranges after it, if all before it are hashed.
    void range_written(std::size_t r) {
        if (r >= written_.size()) throw std::out_of_range("RangeDigest: no range " + std::to_string(r));
        written_[r] = true;
        advance();
    }

    /// Every range is on disk: hashes what is left and returns the lowercase hex MD5.
    std::string finish() {
        for (std::size_t r = 0; r < written_.size(); ++r) written_[r] = true;
        advance();
        if (error_) std::rethrow_exception(error_);
        if (!done_) {
            done_ = true;
            hex_ = md5_.hex();
        }
        return hex_;
    }

    /// How many ranges have been hashed so far (for tests).
    std::size_t hashed() const { return next_; }

private:
    void advance() {
        if (error_ || done_ || next_ >= ranges_.size() || !written_[next_]) return;
        int fd = ::open(file_.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            error_ = std::make_exception_ptr(LocalError::from_errno("read back", file_));
            return;
        }
        try {
            while (next_ < ranges_.size() && written_[next_]) {
                digest_file_range(md5_, fd, file_, ranges_[next_].first, ranges_[next_].second);
                ++next_;
            }
        } catch (...) {
            error_ = std::current_exception();
        }
        ::close(fd);
    }

    std::filesystem::path file_;
    std::vector<Range> ranges_;
    std::vector<bool> written_;
    std::size_t next_ = 0;
    api::Digest md5_ = api::Digest::md5();
    std::exception_ptr error_;
    bool done_ = false;
    std::string hex_;
};

} // namespace vck::fetch
