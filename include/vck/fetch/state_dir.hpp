// StateDir: where vck-fetch keeps its own state for a destination DEST (the staging directory
// tmp/ and the journal): outside the data, so that DEST holds exactly the dataset's files. By
// default it is DEST's sibling `<DEST>.vck-fetch`; `--state-dir` names another.
// Guarantees: the state directory is neither DEST nor inside it (nor DEST inside it); ensure()
// refuses one on another mount than DEST, since staged files are renamed into DEST and a rename
// across mounts is not atomic (EXDEV). The layout of older versions kept the state in
// DEST/.vck-fetch: ensure() brings its journal over (a restarted fetch still skips what
// landed) and removes the rest, which was vck-fetch's own.
#pragma once

#include <vck/fetch/local_error.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace vck::fetch {

class StateDir {
public:
    /// The state of `dest`: `given`, or `<dest>.vck-fetch` when `given` is empty. Throws
    /// std::invalid_argument when one of the two lies in the other.
    explicit StateDir(const std::filesystem::path& dest, const std::filesystem::path& given = {})
        : dest_(normal(dest)), dir_(given.empty() ? sibling(dest_) : normal(given)) {
        auto inside = [](const std::filesystem::path& p, const std::filesystem::path& in) {
            auto rel = p.lexically_relative(in);
            return !rel.empty() && *rel.begin() != "..";  // "." (the same path) counts
        };
        if (inside(dir_, dest_) || inside(dest_, dir_))
            throw std::invalid_argument("the state directory " + dir_.string() + " and the destination " + dest_.string() +
                                        " must not contain each other (the state is kept outside the data)");
    }

    /// `<dest>.vck-fetch`, beside DEST on DEST's parent.
    static std::filesystem::path sibling(const std::filesystem::path& dest) {
        auto d = normal(dest);
        d += ".vck-fetch";
        return d;
    }
    /// Where versions before the state moved out kept it.
    static std::filesystem::path legacy(const std::filesystem::path& dest) { return normal(dest) / ".vck-fetch"; }

    const std::filesystem::path& dir() const { return dir_; }
    std::filesystem::path staging() const { return dir_ / "tmp"; }
    std::filesystem::path journal() const { return dir_ / "journal"; }

    /// Creates DEST and the state directory with tmp/, checks that both are on one mount and
    /// retires a legacy DEST/.vck-fetch. Throws LocalError.
    void ensure() const {
        namespace fs = std::filesystem;
        std::error_code ec;
        fs::create_directories(dest_, ec);
        if (ec) throw LocalError("cannot create destination " + dest_.string() + ": " + ec.message());
        fs::create_directories(staging(), ec);
        if (ec) throw LocalError("cannot create the state directory " + staging().string() + ": " + ec.message());
        if (mount_of(dir_) != mount_of(dest_))
            throw LocalError("the state directory " + dir_.string() + " is on another mount than " + dest_.string() +
                             ": files could not be renamed into place atomically; give --state-dir on the same "
                             "volume, outside the destination");
        retire_legacy();
    }

    /// Removes what an earlier, interrupted run left in tmp/.
    void clear_staging() const {
        std::error_code ec;
        for (auto& stale : std::filesystem::directory_iterator(staging(), ec)) std::filesystem::remove_all(stale.path(), ec);
    }

private:
    static std::filesystem::path normal(const std::filesystem::path& p) {
        auto n = std::filesystem::absolute(p).lexically_normal();
        if (!n.has_filename() && n != n.root_path()) n = n.parent_path();  // "dest/" is "dest"
        return n;
    }

    /// A mount's identity: its mount id where the kernel gives one (two bind mounts of one
    /// filesystem differ, and rename refuses to cross them), else the device.
    static unsigned long long mount_of(const std::filesystem::path& p) {
#ifdef STATX_MNT_ID
        struct statx sx {};
        if (::statx(AT_FDCWD, p.c_str(), 0, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID))
            return sx.stx_mnt_id;
#endif
        struct stat st {};
        if (::stat(p.c_str(), &st) != 0) throw LocalError::from_errno("stat", p);
        return static_cast<unsigned long long>(st.st_dev);
    }

    void retire_legacy() const {
        namespace fs = std::filesystem;
        std::error_code ec;
        auto old = legacy(dest_);
        if (!fs::is_directory(fs::symlink_status(old, ec))) return;
        if (!fs::exists(journal(), ec)) fs::rename(old / "journal", journal(), ec);
        fs::remove_all(old, ec);
        // Not fatal: the data is intact, and sync-back never uploads the old directory.
        if (ec)
            std::fprintf(stderr, "vck-fetch: warning: cannot remove the old state directory %s: %s\n", old.c_str(),
                         ec.message().c_str());
    }

    std::filesystem::path dest_;
    std::filesystem::path dir_;
};

} // namespace vck::fetch
