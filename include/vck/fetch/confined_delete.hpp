// Confined delete: remove one directory tree only when it lies strictly inside one of the
// roots the operator allowed, judged after resolving every symbolic link.
// Guarantee: `/`, a root itself, a path with a `..` segment, a symbolic link, or anything that
// resolves outside every root is refused with DeleteRefused and nothing is removed.
#pragma once

#include <vck/fetch/confinement.hpp>
#include <vck/fetch/local_error.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace vck::fetch {

class DeleteRefused : public PathRefused {
public:
    using PathRefused::PathRefused;
};

enum class DeleteOutcome { Removed, AlreadyAbsent };

/// Throws DeleteRefused (unsafe request) or LocalError (removal failed).
inline DeleteOutcome confined_remove(const std::filesystem::path& target, const std::vector<std::filesystem::path>& roots) {
    namespace fs = std::filesystem;
    const std::string shown = "\"" + target.string() + "\"";
    check_request<DeleteRefused>("delete", target, roots);
    std::error_code ec;
    auto st = fs::symlink_status(target, ec);
    if (ec || !fs::exists(st)) {
        // Nothing there; still refuse a request that would have been unsafe.
        auto parent = fs::weakly_canonical(target, ec);
        bool inside = false;
        for (const auto& r : roots) {
            auto cr = fs::weakly_canonical(r, ec);
            if (!ec && detail::strictly_inside(parent, cr)) inside = true;
        }
        if (!inside) throw DeleteRefused("refusing to delete " + shown + ": it is not inside any allowed root");
        return DeleteOutcome::AlreadyAbsent;
    }
    if (fs::is_symlink(st))
        throw DeleteRefused("refusing to delete " + shown + ": it is a symbolic link (only real directories are deleted)");
    auto real = fs::canonical(target, ec);
    if (ec) throw LocalError("cannot resolve " + target.string() + ": " + ec.message());
    check_inside<DeleteRefused>("delete", target, real, roots);
    fs::remove_all(real, ec);
    if (ec) throw LocalError("cannot delete " + real.string() + ": " + ec.message());
    return DeleteOutcome::Removed;
}

} // namespace vck::fetch
