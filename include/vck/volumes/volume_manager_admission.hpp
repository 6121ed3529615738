// VolumeManagerAdmission: what a validating webhook refuses at `kubectl apply` of a
// VolumeManager, beyond what the CRD schema can express, as one pure function. Guarantees:
// - the rules are the reconciler's own (handlers/spec_validation.hpp's spec_problems and each
//   handler's problems(), whose first failure is what validate_spec and validate() return), so
//   a manifest the webhook accepts is not failed by the reconciler for its options, and the
//   reconciler still refuses what reaches it without the webhook;
// - every failure is reported at once, each with its field path and, where the original VCK
//   had one, its wording ("sourceURL has to be set in options");
// - the cluster is not consulted unless the caller's context offers it: with options only (the
//   webhook's case), a Secret or node that does not exist yet is no reason to refuse, so the
//   order in which manifests are applied does not matter.
#pragma once

#include <vck/api/volume_manager.hpp>
#include <vck/handlers/data_handler.hpp>
#include <vck/handlers/handler_registry.hpp>
#include <vck/handlers/spec_validation.hpp>

#include <string>
#include <vector>

namespace vck::volumes {

/// One reason a VolumeManager is refused.
struct AdmissionFailure {
    std::string field;    // "spec.volumeConfigs[0].options.sourceURL"
    std::string message;  // "sourceURL has to be set in options"
    std::string text() const { return field.empty() ? message : field + ": " + message; }
    bool operator==(const AdmissionFailure&) const = default;
};

struct VolumeManagerReview {
    std::vector<AdmissionFailure> failures;  // in document order
    std::vector<std::string> warnings;       // for the AdmissionReview's warnings (deprecated sourceTypes)
    std::string name;                        // the object's name (or generateName), for message()
    bool allowed() const { return failures.empty(); }
    /// As kube-apiserver words an invalid object: `VolumeManager.vck.intelai.org "x" is
    /// invalid: <failure>`, several in brackets, comma-separated.
    std::string message() const {
        if (failures.empty()) return {};
        std::string out = "VolumeManager.vck.intelai.org \"" + name + "\" is invalid: ";
        if (failures.size() == 1) return out + failures.front().text();
        out += "[";
        for (std::size_t i = 0; i < failures.size(); ++i) out += (i ? ", " : "") + failures[i].text();
        return out + "]";
    }
};

/// Every reason `vm` cannot be served: the spec's rules, then per volume an unknown sourceType
/// (the registry's types, user handlers included) or every problem its handler lists (options,
/// access mode, resync with replicas above 1, distributionStrategy counts, a data path outside
/// the allowed roots, ...). `ctx` carries the controller's options (allowed data roots);
/// lookups left empty are not made.
inline VolumeManagerReview review_volume_manager(const api::VolumeManager& vm, const handlers::HandlerRegistry& registry,
                                                 const handlers::HandlerContext& ctx = {}) {
    VolumeManagerReview out;
    out.name = vm.metadata.name.empty() ? vm.metadata.generateName : vm.metadata.name;
    for (auto& p : handlers::spec_problems(vm.spec)) out.failures.push_back({std::move(p.field), std::move(p.message)});
    for (std::size_t i = 0; i < vm.spec.volumeConfigs.size(); ++i) {
        const auto& vc = vm.spec.volumeConfigs[i];
        std::string at = "spec.volumeConfigs[" + std::to_string(i) + "]";
        auto lookup = registry.find(vc.sourceType);
        if (!lookup.handler) {
            out.failures.push_back({at + ".sourceType", lookup.error});
            continue;
        }
        if (!lookup.warning.empty()) out.warnings.push_back(at + ".sourceType: " + lookup.warning);
        for (auto& p : lookup.handler->problems(ctx, vm, vc))
            out.failures.push_back({p.field.empty() ? at : at + "." + p.field, std::move(p.message)});
    }
    // Document order: spec-wide first, then by volume (spec_problems lists its own per-volume
    // ones before the handlers'; a stable sort by volume index interleaves them).
    auto index = [](const AdmissionFailure& f) -> std::size_t {
        constexpr std::string_view prefix = "spec.volumeConfigs[";
        if (!f.field.starts_with(prefix)) return 0;
        return 1 + std::stoul(f.field.substr(prefix.size()));
    };
    std::stable_sort(out.failures.begin(), out.failures.end(),
                     [&](const auto& a, const auto& b) { return index(a) < index(b); });
    return out;
}

} // namespace vck::volumes
