// SubResource: the metadata every object VCK creates for a volume carries, so it can be found
// again from the caches and collected with its VolumeManager. Guarantees: the volume's own
// labels, plus `vckname` and `vcid` (as label values, hashed when too long) and the volume
// key label; a controlling owner reference to the VolumeManager on namespaced objects only
// (runtime::set_controller_reference: a VolumeManager without uid is refused).
#pragma once

#include <vck/api/meta.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/runtime/owner_reference.hpp>

#include <string>

namespace vck::handlers {

/// The labels that select exactly one volume's sub-resources.
inline api::Labels volume_selector(const api::VolumeManager& vm, const api::VolumeConfig& vc) {
    return {{std::string(naming::volume_label), naming::volume_key(vm.metadata.uid, vc.id)}};
}

inline api::ObjectMeta sub_resource_meta(const api::VolumeManager& vm, const api::VolumeConfig& vc, std::string name,
                                         bool namespaced = true) {
    api::ObjectMeta m;
    m.name = std::move(name);
    m.labels = vc.labels;
    m.labels[std::string(naming::name_label)] = naming::label_value(vm.metadata.name);
    m.labels[std::string(naming::id_label)] = naming::label_value(vc.id);
    for (auto& [k, v] : volume_selector(vm, vc)) m.labels[k] = v;
    if (namespaced) {
        m.namespace_ = vm.metadata.namespace_;
        runtime::set_controller_reference(vm, m);
    }
    return m;
}

} // namespace vck::handlers
