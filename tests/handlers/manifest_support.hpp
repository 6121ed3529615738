// Helpers of the handlers tests: YAML manifests read as kubectl reads them, and admission
// through crds/volumemanager.yaml as kube-apiserver does it (prune, default, validate).
#pragma once

#include <vck/api/yaml.hpp>
#include <vck/sandbox/validation/crd_schema.hpp>

#include <boost/json.hpp>
#include <doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace vck_handlers_test {

namespace json = boost::json;

inline std::filesystem::path source_root() {
    const char* root = std::getenv("VCK_SOURCE_ROOT");
    REQUIRE_MESSAGE(root, "VCK_SOURCE_ROOT must be set (meson test sets it)");
    return root;
}

/// One YAML document as JSON, as kubectl reads it (include/vck/api/yaml.hpp).
inline json::value load_yaml(const std::filesystem::path& p) { return vck::api::yaml_file(p).at(0); }

/// The *.yaml files of a directory of the source tree, sorted.
inline std::vector<std::filesystem::path> yaml_files(const std::filesystem::path& relative_dir) {
    std::vector<std::filesystem::path> out;
    for (const auto& entry : std::filesystem::directory_iterator(source_root() / relative_dir))
        if (entry.path().extension() == ".yaml") out.push_back(entry.path());
    std::sort(out.begin(), out.end());
    return out;
}

inline const vck::sandbox::StructuralSchema& crd_schema() {
    static const vck::sandbox::StructuralSchema s =
        vck::sandbox::StructuralSchema::from_crd(load_yaml(source_root() / "crds/volumemanager.yaml"), "v1alpha1");
    return s;
}

/// What the apiserver does on create: prune, default, validate. Returns the error messages.
inline std::vector<std::string> admit(json::value& object) {
    crd_schema().prune(object);
    crd_schema().apply_defaults(object);
    std::vector<std::string> out;
    for (const auto& e : crd_schema().validate(object)) out.push_back(e.message);
    return out;
}

inline std::vector<std::string> admit_text(std::string_view text) {
    auto v = json::parse(text);
    return admit(v);
}

inline bool mentions(const std::vector<std::string>& errors, std::string_view fragment) {
    for (const auto& e : errors)
        if (e.find(fragment) != std::string::npos) return true;
    return false;
}

inline std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& e : v) s += e + "\n";
    return s;
}

/// True when everything in `before` is still in `after` with the same value (admission may
/// add defaults, never drop or change what the manifest says).
inline bool nothing_lost(const json::value& before, const json::value& after) {
    if (before.is_object()) {
        if (!after.is_object()) return false;
        for (const auto& kv : before.get_object()) {
            const auto* a = after.get_object().if_contains(kv.key());
            if (!a || !nothing_lost(kv.value(), *a)) return false;
        }
        return true;
    }
    if (before.is_array()) {
        if (!after.is_array() || after.get_array().size() != before.get_array().size()) return false;
        for (std::size_t i = 0; i < before.get_array().size(); ++i)
            if (!nothing_lost(before.get_array()[i], after.get_array()[i])) return false;
        return true;
    }
    return before == after;
}

} // namespace vck_handlers_test
