// DataPath: where on a node a volume's data may live. A user's `dataPath` is normalised
// lexically (absolute, `.`/`..`/`//` resolved, no trailing `/`) and must then equal or lie under
// one of the roots the operator allows (`--allowed-data-roots`, default /var/datasets).
// Symlinks on the node cannot be seen from the controller, so this check only stops paths
// that are wrong as written; the node guards the rest. Pods never mount a data path itself:
// they mount the allowed root that matched (`DataPathCheck::root`) with the path below it as
// the volumeMount's `subPath`, and the kubelet refuses a subPath that resolves outside its
// volume (CreateContainerConfigError "failed to create subPath directory ..." or "failed to
// prepare subPath ..."), so a symlink under the root that points elsewhere fails the pod
// instead of writing there. `vck-fetch delete --allowed-root` resolves symlinks again
// before removing anything, and VCK only ever deletes a volume's own `vck-resource-*`
// directory, never the data path itself.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vck::handlers {

inline const std::vector<std::string> default_allowed_data_roots{"/var/datasets"};

/// The lexically normal form of an absolute path, or nullopt when it is empty, relative or
/// contains a NUL byte.
inline std::optional<std::string> normalize_data_path(std::string_view path) {
    if (path.empty() || path.front() != '/' || path.find('\0') != std::string_view::npos) return std::nullopt;
    std::string out = std::filesystem::path(std::string(path)).lexically_normal().generic_string();
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    return out;
}

/// True when normalised `path` is `root` or strictly below it (component-wise, so
/// /var/datasets2 is not under /var/datasets).
inline bool path_is_under(std::string_view path, std::string_view root) {
    if (root == "/") return true;
    if (path.size() < root.size() || path.substr(0, root.size()) != root) return false;
    return path.size() == root.size() || path[root.size()] == '/';
}

struct DataPathCheck {
    std::string path;   // normalised, when accepted
    std::string root;   // the normalised allowed root it lies under, when accepted
    std::string error;  // why not, otherwise
    bool ok() const { return error.empty(); }
};

/// `path` below `root` as a relative path ("" when they are equal), for a volumeMount's
/// subPath; both normalised, `path_is_under(path, root)` holding.
inline std::string path_below(std::string_view path, std::string_view root) {
    if (path.size() <= root.size()) return {};
    return std::string(path.substr(root == "/" ? 1 : root.size() + 1));
}

/// Checks a volume's dataPath against the allowed roots (themselves normalised). A root of
/// "/" is refused: it would allow every host directory.
inline DataPathCheck check_data_path(std::string_view data_path, const std::vector<std::string>& allowed_roots) {
    std::string roots_text;
    for (const auto& r : allowed_roots) roots_text += (roots_text.empty() ? "" : ", ") + r;
    auto normal = normalize_data_path(data_path);
    if (!normal) return {"", "", "dataPath \"" + std::string(data_path) + "\" has to be an absolute path"};
    for (const auto& root : allowed_roots) {
        auto r = normalize_data_path(root);
        if (!r || *r == "/") continue;
        if (path_is_under(*normal, *r)) return {*normal, *r, ""};
    }
    return {"", "", "dataPath \"" + std::string(data_path) + "\" is not under an allowed data root (" + roots_text + ")"};
}

} // namespace vck::handlers
