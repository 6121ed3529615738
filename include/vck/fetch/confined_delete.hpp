// Confined delete: remove one directory tree only when it lies strictly inside one of the
// roots the operator allowed, judged after resolving every symbolic link.
// Guarantee: `/`, a root itself, a path with a `..` segment, a symbolic link, or anything that
// resolves outside every root is refused with DeleteRefused and nothing is removed.
#pragma once

#include <vck/fetch/local_error.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace vck::fetch {

class DeleteRefused : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

enum class DeleteOutcome { Removed, AlreadyAbsent };

namespace detail {
inline bool strictly_inside(const std::filesystem::path& p, const std::filesystem::path& root) {
    auto pi = p.begin();
    for (auto ri = root.begin(); ri != root.end(); ++ri, ++pi) {
        if (ri->empty()) continue;  // a trailing separator
        if (pi == p.end() || *pi != *ri) return false;
    }
    return pi != p.end();
}
} // namespace detail

/// Throws DeleteRefused (unsafe request) or LocalError (removal failed).
inline DeleteOutcome confined_remove(const std::filesystem::path& target, const std::vector<std::filesystem::path>& roots) {
    namespace fs = std::filesystem;
    const std::string shown = "\"" + target.string() + "\"";
    if (target.empty()) throw DeleteRefused("refusing to delete an empty path");
    if (roots.empty()) throw DeleteRefused("refusing to delete " + shown + ": no --allowed-root was given");
    for (const auto& part : target)
        if (part == "..") throw DeleteRefused("refusing to delete " + shown + ": the path contains \"..\"");
    if (!target.is_absolute()) throw DeleteRefused("refusing to delete " + shown + ": the path must be absolute");
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
    if (real == real.root_path()) throw DeleteRefused("refusing to delete " + shown + ": it is the filesystem root");
    bool inside = false;
    std::string root_list;
    for (const auto& r : roots) {
        root_list += (root_list.empty() ? "" : ", ") + r.string();
        std::error_code rec;
        auto cr = fs::canonical(r, rec);
        if (rec) continue;
        if (real == cr) throw DeleteRefused("refusing to delete " + shown + ": it is the allowed root itself");
        if (detail::strictly_inside(real, cr)) inside = true;
    }
    if (!inside)
        throw DeleteRefused("refusing to delete " + shown + ": it resolves to " + real.string() +
                            ", which is not inside any allowed root (" + root_list + ")");
    fs::remove_all(real, ec);
    if (ec) throw LocalError("cannot delete " + real.string() + ": " + ec.message());
    return DeleteOutcome::Removed;
}

} // namespace vck::fetch
