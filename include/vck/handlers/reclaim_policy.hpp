// ReclaimPolicy: the volume option `reclaimPolicy` of source types whose volumes VCK exposes
// as PersistentVolumes (NFS, Local): what happens to those PVs when their volume goes (it
// leaves the spec, the VolumeManager is deleted, or spec.state turns Failed or Completed).
// - `Delete` (the default, as before the option existed): VCK deletes its PVs with the
//   volume's other objects.
// - `Retain`: VCK deletes the claims it made but leaves each PV in place with its labels, its
//   claimRef and its source, so Kubernetes marks it Released as it does its own retained
//   volumes; VCK lets go of it (the owner annotations give way to `vck.intelai.org/retained-from`)
//   and never touches it again. An administrator reuses or deletes it by hand.
// A volume whose config changes (its PVs are rebuilt from the new config) is not a volume that
// goes: its PVs are replaced under the same names whatever the policy. The source's data (the
// NFS export, the node's directory) is the user's and is never removed by either policy. The
// PV objects themselves always say `persistentVolumeReclaimPolicy: Retain`, so that Kubernetes
// never tries a deleter plugin (there is none for NFS or local volumes): VCK does the deleting.
#pragma once

#include <vck/api/volume_manager.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace vck::handlers {

inline constexpr std::string_view reclaim_policy_option = "reclaimPolicy";
/// Set on a PV that VCK retained and let go of: "<namespace>/<VolumeManager> volume <id>".
inline constexpr std::string_view retained_from_annotation = "vck.intelai.org/retained-from";

/// Why the option is refused, or nullopt (absent, Delete or Retain; exact spelling, as the
/// PV field it mirrors).
inline std::optional<std::string> reclaim_policy_problem(const api::VolumeConfig& vc) {
    if (!vc.has_option(std::string(reclaim_policy_option))) return std::nullopt;
    const auto& v = vc.option(std::string(reclaim_policy_option));
    if (v == "Delete" || v == "Retain") return std::nullopt;
    return "reclaimPolicy has to be Delete or Retain, not \"" + v + "\"";
}

/// Whether the volume's PVs stay (Released) when it goes.
inline bool retains_volumes(const api::VolumeConfig& vc) {
    return vc.option(std::string(reclaim_policy_option)) == "Retain";
}

} // namespace vck::handlers
