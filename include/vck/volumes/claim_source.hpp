// ClaimSource: what a PersistentVolumeClaim of one of VCK's StorageClasses (provisioner
// vck.intelai.org/data) is to hold, and the PV it gets; the pure half of
// volumes/claim_provisioner.hpp (no API calls), unit-tested on its own.
// - claim_source(): the source from the class's parameters (`sourceType` and that type's
//   options, `dataPath`), or from the claim's dataSourceRef to a VolumeManager (its volume named
//   by the claim's annotation vck.intelai.org/volume, or its only volume), or none (an empty
//   directory); a clear error for anything else (other accessModes than ReadWriteOnce or
//   ReadWriteOncePod, another kind of dataSourceRef, a missing VolumeManager or volume).
// - claim_volume(): a local PV pinned to the node by its hostname label, pre-bound to the claim
//   (claimRef with uid), annotated pv.kubernetes.io/provisioned-by and with the directory it
//   holds, the class's reclaim policy (Delete by default).
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/storage_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/handlers/node_match.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace vck::volumes {

inline constexpr std::string_view provisioner_name = "vck.intelai.org/data";
inline constexpr std::string_view claim_finalizer = "vck.intelai.org/claim-data";
/// "NODE:PATH": where a claim's directory is, on the claim while it is made, then on its PV.
inline constexpr std::string_view claim_data_annotation = "vck.intelai.org/data";
/// Which volume of the dataSourceRef's VolumeManager a claim copies.
inline constexpr std::string_view claim_volume_annotation = "vck.intelai.org/volume";
/// Failed attempts so far, and the time (RFC 3339) before which the claim is not tried again.
inline constexpr std::string_view claim_attempts_annotation = "vck.intelai.org/provisioning-attempts";
inline constexpr std::string_view claim_retry_annotation = "vck.intelai.org/provisioning-retry-at";
/// On the pods of a claim or PV: the request they belong to ("ns/claim", or "/pv-name").
inline constexpr std::string_view provisioner_key_annotation = "vck.intelai.org/provisioner-key";
inline constexpr std::string_view provisioned_by_annotation = "pv.kubernetes.io/provisioned-by";
inline constexpr std::string_view selected_node_annotation = "volume.kubernetes.io/selected-node";

/// What a claim is to hold, or why it cannot be provisioned.
struct ClaimSource {
    std::optional<api::VolumeConfig> config;  // nullopt: an empty directory
    std::string data_path = "/var/datasets";  // where its directory goes (parameter dataPath)
    std::string error;
};

namespace claim_detail {

template <class T>
std::string annotation(const T& o, std::string_view key) {
    auto it = o.metadata.annotations.find(std::string(key));
    return it == o.metadata.annotations.end() ? std::string() : it->second;
}

} // namespace claim_detail

/// The claim's source from its class's parameters or its dataSourceRef. `find_vm` looks a
/// VolumeManager up by namespace and name (nullptr: none).
inline ClaimSource claim_source(const api::StorageClass& sc, const api::PersistentVolumeClaim& c,
                                const std::function<const api::VolumeManager*(const std::string&, const std::string&)>& find_vm) {
    ClaimSource out;
    for (const auto& m : c.spec.accessModes)
        if (m != "ReadWriteOnce" && m != "ReadWriteOncePod") {
            out.error = "a claim of class " + sc.metadata.name + " is a directory on one node: accessModes ReadWriteOnce or "
                        "ReadWriteOncePod, not " + m;
            return out;
        }
    if (auto dp = sc.parameters.find("dataPath"); dp != sc.parameters.end()) out.data_path = dp->second;
    auto name_label = handlers::naming::label_value(c.metadata.name);
    if (const auto& ref = c.spec.dataSourceRef) {
        if (ref->apiGroup != api::VolumeManager::resource.group || ref->kind != api::VolumeManager::resource.kind) {
            out.error = "dataSourceRef " + (ref->apiGroup.empty() ? "" : ref->apiGroup + "/") + ref->kind + " " + ref->name +
                        " is not a VolumeManager (apiGroup vck.intelai.org)";
            return out;
        }
        if (ref->namespace_ && !ref->namespace_->empty() && *ref->namespace_ != c.metadata.namespace_) {
            out.error = "dataSourceRef names VolumeManager " + ref->name + " in namespace " + *ref->namespace_ +
                        ": only the claim's own namespace is read";
            return out;
        }
        const api::VolumeManager* vm = find_vm ? find_vm(c.metadata.namespace_, ref->name) : nullptr;
        if (!vm) {
            out.error = "VolumeManager \"" + ref->name + "\" not found in namespace \"" + c.metadata.namespace_ + "\"";
            return out;
        }
        auto wanted = claim_detail::annotation(c, claim_volume_annotation);
        const api::VolumeConfig* vc = nullptr;
        if (wanted.empty() && vm->spec.volumeConfigs.size() == 1) vc = &vm->spec.volumeConfigs.front();
        for (const auto& v : vm->spec.volumeConfigs)
            if (!wanted.empty() && v.id == wanted) vc = &v;
        if (!vc) {
            out.error = wanted.empty() ? "VolumeManager " + ref->name + " has " + std::to_string(vm->spec.volumeConfigs.size()) +
                                             " volumes: annotation " + std::string(claim_volume_annotation) + " names the one to copy"
                                       : "VolumeManager " + ref->name + " has no volume \"" + wanted + "\"";
            return out;
        }
        out.config = *vc;
        out.config->replicas = 1;
        out.config->nodeAffinity.reset();
        out.config->labels = {{"vck-claim", name_label}};
        if (vc->has_option("dataPath")) out.data_path = vc->option("dataPath");
        return out;
    }
    auto type = sc.parameters.find("sourceType");
    if (type == sc.parameters.end() || type->second.empty()) return out;  // an empty directory
    api::VolumeConfig vc;
    vc.id = "data";
    vc.replicas = 1;
    vc.sourceType = type->second;
    vc.accessMode = "ReadWriteOnce";
    vc.labels = {{"vck-claim", name_label}};
    for (const auto& [k, v] : sc.parameters)
        if (k != "sourceType") vc.options[k] = v;
    out.config = std::move(vc);
    return out;
}

/// The directory of claim `c` under its data path.
inline std::string claim_directory(const std::string& data_path, const api::PersistentVolumeClaim& c) {
    auto base = data_path;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    return base + "/vck-claim-" + c.metadata.uid;
}

/// "NODE:PATH" and back.
inline std::string data_location(const std::string& node, const std::string& path) { return node + ":" + path; }
inline std::pair<std::string, std::string> parse_data_location(const std::string& text) {
    auto colon = text.find(':');
    if (colon == std::string::npos) return {};
    return {text.substr(0, colon), text.substr(colon + 1)};
}

/// The PV of claim `c`, provisioned on `node` (its hostname label value `hostname`) at `path`.
inline api::PersistentVolume claim_volume(const api::StorageClass& sc, const api::PersistentVolumeClaim& c,
                                          const std::string& node, const std::string& hostname, const std::string& path) {
    api::PersistentVolume pv;
    pv.metadata.name = "pvc-" + c.metadata.uid;
    // The volume label puts it in the controller's (slim) PV cache.
    pv.metadata.labels[std::string(handlers::naming::volume_label)] = "claim." + c.metadata.uid;
    pv.metadata.annotations[std::string(provisioned_by_annotation)] = std::string(provisioner_name);
    pv.metadata.annotations[std::string(claim_data_annotation)] = data_location(node, path);
    auto want = c.spec.resources.requests.find("storage");
    pv.spec.capacity = {{"storage", want == c.spec.resources.requests.end() ? std::string("1Gi") : want->second}};
    pv.spec.accessModes = c.spec.accessModes;
    pv.spec.persistentVolumeReclaimPolicy = sc.reclaimPolicy.empty() ? "Delete" : sc.reclaimPolicy;
    pv.spec.storageClassName = sc.metadata.name;
    pv.spec.volumeMode = "Filesystem";
    pv.spec.local = api::LocalVolumeSource{path, ""};
    api::NodeSelectorRequirement here{std::string(handlers::hostname_label), "In", {hostname}};
    pv.spec.nodeAffinity = api::VolumeNodeAffinity{api::NodeSelector{{api::NodeSelectorTerm{{here}, {}}}}};
    api::ObjectReference ref;
    ref.apiVersion = "v1";
    ref.kind = "PersistentVolumeClaim";
    ref.namespace_ = c.metadata.namespace_;
    ref.name = c.metadata.name;
    ref.uid = c.metadata.uid;
    pv.spec.claimRef = std::move(ref);
    return pv;
}

} // namespace vck::volumes
