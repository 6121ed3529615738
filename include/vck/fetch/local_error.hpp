// LocalError: a failure of the local filesystem (create, write, rename, delete), named with
// the path and the OS's reason. vck-fetch maps it to its "local disk" exit code.
#pragma once

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace vck::fetch {

class LocalError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;

    /// "cannot <what> <path>: <strerror(errno)>"
    static LocalError from_errno(std::string_view what, const std::filesystem::path& p, int err = errno) {
        return LocalError("cannot " + std::string(what) + " " + p.string() + ": " + std::strerror(err));
    }
};

} // namespace vck::fetch
