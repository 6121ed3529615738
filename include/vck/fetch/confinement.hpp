// Confinement: whether a directory vck-fetch is asked to change (delete, prepare) lies strictly
// inside one of the roots the operator allowed, judged after resolving every symbolic link.
// One set of rules and words for every subcommand that changes the node's directories.
// Guarantee: an empty or relative path, one with a `..` segment, `/`, an allowed root itself
// and anything that resolves outside every root are refused with PathRefused.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vck::fetch {

/// An unsafe request; vck-fetch's "refused" exit code.
class PathRefused : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

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

/// Refuses what is unsafe as written, before anything on disk is looked at. `verb` names the
/// action in the message ("delete"); roots may be empty only when `roots_required` is false.
/// `Refused` is the subcommand's own PathRefused.
template <class Refused = PathRefused>
void check_request(std::string_view verb, const std::filesystem::path& target,
                   const std::vector<std::filesystem::path>& roots, bool roots_required = true) {
    const std::string refusing = "refusing to " + std::string(verb) + " ";
    const std::string shown = "\"" + target.string() + "\"";
    if (target.empty()) throw Refused(refusing + "an empty path");
    if (roots_required && roots.empty()) throw Refused(refusing + shown + ": no --allowed-root was given");
    for (const auto& part : target)
        if (part == "..") throw Refused(refusing + shown + ": the path contains \"..\"");
    if (!target.is_absolute()) throw Refused(refusing + shown + ": the path must be absolute");
}

/// Refuses `real` (a path with every symlink resolved) unless it lies strictly inside one of
/// `roots` (each resolved too; a root that does not exist holds nothing) and is none of them.
template <class Refused = PathRefused>
void check_inside(std::string_view verb, const std::filesystem::path& target, const std::filesystem::path& real,
                  const std::vector<std::filesystem::path>& roots) {
    namespace fs = std::filesystem;
    const std::string refusing = "refusing to " + std::string(verb) + " \"" + target.string() + "\"";
    if (real == real.root_path()) throw Refused(refusing + ": it is the filesystem root");
    std::string root_list;
    bool inside = false;
    for (const auto& r : roots) {
        root_list += (root_list.empty() ? "" : ", ") + r.string();
        std::error_code ec;
        auto cr = fs::canonical(r, ec);
        if (ec) {
            root_list += " (missing)";
            continue;
        }
        if (real == cr) throw Refused(refusing + ": it is the allowed root itself");
        if (detail::strictly_inside(real, cr)) inside = true;
    }
    if (inside) return;
    throw Refused(refusing + ": it resolves to " + real.string() + ", which is not inside any allowed root (" +
                  root_list + ")");
}

} // namespace vck::fetch
