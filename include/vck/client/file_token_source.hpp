// FileTokenSource: a bearer token read from a file (kubeconfig tokenFile, the in-cluster
// service-account token) and re-read when the file changes, because bound service-account
// tokens rotate underneath a long-running process. A change is noticed by the file's identity
// (device, inode, size, mtime) on every call, and the file is re-read anyway once `max_age`
// has passed or after invalidate(). Once a token was read, a file that is briefly unreadable or
// empty (mid-rotation) keeps the last good token instead of failing requests.
#pragma once

#include <vck/client/config.hpp>
#include <vck/client/config_error.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>

namespace vck::client {

class FileTokenSource final : public CredentialSource {
public:
    /// `origin` prefixes error messages ("kubeconfig /x/config: user \"u\""); empty for none.
    /// Throws ConfigError when the file cannot be read or is empty now, so that a broken
    /// configuration fails at load time rather than at the first request.
    explicit FileTokenSource(std::filesystem::path path,
                             std::chrono::seconds max_age = std::chrono::seconds(60),
                             std::string origin = {})
        : path_(std::move(path)), max_age_(max_age), origin_(std::move(origin)) {
        std::lock_guard lock(mu_);
        refresh_locked();
    }

    Credentials current() override {
        std::lock_guard lock(mu_);
        auto id = identify();
        bool stale = stale_ || !id || id != identity_ ||
                     std::chrono::steady_clock::now() - read_at_ >= max_age_;
        if (stale) {
            try {
                refresh_locked();
            } catch (const ConfigError&) {
                if (token_.empty()) throw;
            }
        }
        return Credentials{token_, {}, {}, std::nullopt};
    }

    void invalidate() override {
        std::lock_guard lock(mu_);
        stale_ = true;
    }

    const std::filesystem::path& path() const noexcept { return path_; }

private:
    struct Identity {
        dev_t dev;
        ino_t ino;
        off_t size;
        long mtime_sec;
        long mtime_nsec;
        bool operator==(const Identity&) const = default;
    };

    std::optional<Identity> identify() const {
        struct stat st {};
        if (::stat(path_.c_str(), &st) != 0) return std::nullopt;
        return Identity{st.st_dev, st.st_ino, st.st_size, static_cast<long>(st.st_mtim.tv_sec),
                        static_cast<long>(st.st_mtim.tv_nsec)};
    }

    [[noreturn]] void fail(const std::string& problem) const {
        throw ConfigError((origin_.empty() ? std::string() : origin_ + ": ") + "token file " +
                          path_.string() + " " + problem);
    }

    void refresh_locked() {
        // Identity first: if the file changes while we read it, the next call sees a
        // mismatch and reads again instead of keeping a torn token.
        errno = 0;
        auto id = identify();
        if (!id) fail(std::string("cannot be read: ") + std::strerror(errno));
        std::ifstream in(path_, std::ios::binary);
        if (!in) fail(std::string("cannot be read: ") + std::strerror(errno ? errno : EACCES));
        std::ostringstream ss;
        ss << in.rdbuf();
        std::string text = ss.str();
        auto first = text.find_first_not_of(" \t\r\n");
        auto last = text.find_last_not_of(" \t\r\n");
        text = first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
        if (text.empty()) fail("is empty");
        token_ = std::move(text);
        identity_ = id;
        read_at_ = std::chrono::steady_clock::now();
        stale_ = false;
    }

    std::filesystem::path path_;
    std::chrono::seconds max_age_;
    std::string origin_;
    std::mutex mu_;
    std::string token_;
    std::optional<Identity> identity_;
    std::chrono::steady_clock::time_point read_at_{};
    bool stale_ = true;
};

} // namespace vck::client
