// libFuzzer target: the sandbox's patch application (sandbox/storage/patch.hpp): JSON merge patch, JSON
// patch and strategic merge patch. Input: byte 0 picks the kind the strategic merge patch is
// for; then the target document, a newline, and the patch document (inputs that are not two
// JSON documents stop there). Contracts: each apply_* returns or throws PatchError, never
// anything else; a merge patch computed by create_merge_patch(target, result) turns the
// target into the result (when the target is an object).
#include "fuzz_check.hpp"

#include <vck/sandbox/storage/patch.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static constexpr std::string_view kinds[] = {"Pod", "Deployment", "Service", "ConfigMap", "Node", "VolumeManager"};
    if (size < 1) return 0;
    std::string_view kind = kinds[data[0] % std::size(kinds)];
    std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    auto nl = text.find('\n');
    if (nl == std::string_view::npos) return 0;
    boost::json::value target, patch;
    if (!vck::fuzz::parse_json(text.substr(0, nl), target) || !vck::fuzz::parse_json(text.substr(nl + 1), patch)) return 0;

    try {
        auto merged = vck::sandbox::apply_merge_patch(target, patch);
        if (target.is_object() && merged.is_object()) {
            auto diff = vck::sandbox::create_merge_patch(target, merged);
            auto again = vck::sandbox::apply_merge_patch(target, diff);
            vck::fuzz::check(vck::sandbox::json_equal(again, merged), "create_merge_patch does not reproduce a merge",
                             boost::json::serialize(merged) + "\n" + boost::json::serialize(diff) + "\n" +
                                 boost::json::serialize(again));
        }
    } catch (const vck::sandbox::PatchError&) {
    }
    try {
        (void)vck::sandbox::apply_json_patch(target, patch);
    } catch (const vck::sandbox::PatchError&) {
    }
    try {
        (void)vck::sandbox::apply_strategic_merge_patch(target, patch, kind);
    } catch (const vck::sandbox::PatchError&) {
    }
    return 0;
}
