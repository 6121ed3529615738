// The marks a VolumeManager's sub-resources carry, and what they are for: the owner's uid
// and "namespace/name" (PersistentVolumes are cluster-scoped and cannot carry an owner
// reference to it), the volume config each was built from (canonical JSON, so a changed
// volume's objects are found and rebuilt), the cache index of sub-resources by owner uid,
// and the map from a sub-resource back to the VolumeManager key its events requeue.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/runtime/reconciler.hpp>
#include <vck/volumes/reconciler_options.hpp>

#include <boost/json.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace vck::volumes {


inline constexpr std::string_view finalizer_name = "vck.intelai.org/cleanup";
/// The volume config (canonical JSON) a sub-resource was built from.
inline constexpr std::string_view config_annotation = "vck.intelai.org/volume-config";
/// The owning VolumeManager's uid and "namespace/name" (PersistentVolumes and storage
/// classes are cluster-scoped and cannot carry an owner reference to it).
inline constexpr std::string_view owner_uid_annotation = "vck.intelai.org/owner-uid";
inline constexpr std::string_view owner_name_annotation = "vck.intelai.org/owner";
/// Store index: sub-resources by owning VolumeManager uid.
inline constexpr std::string_view owner_uid_index = "vck-owner-uid";

namespace detail {

template <class T>
std::string annotation(const T& o, std::string_view key) {
    auto it = o.metadata.annotations.find(std::string(key));
    return it == o.metadata.annotations.end() ? std::string() : it->second;
}

/// The canonical text of a volume config: sorted maps, no unknown fields.
inline std::string config_text(const api::VolumeConfig& vc) {
    api::VolumeConfig copy = vc;
    copy.unknown.clear();
    return boost::json::serialize(api::to_json(copy));
}

} // namespace detail

/// Marks `meta` as a sub-resource of `vm`: the owner annotations that index and requeue it.
inline void mark_owned(api::ObjectMeta& meta, const api::VolumeManager& vm) {
    meta.annotations[std::string(owner_uid_annotation)] = vm.metadata.uid;
    meta.annotations[std::string(owner_name_annotation)] = vm.metadata.namespace_ + "/" + vm.metadata.name;
}

/// The volume keys (handlers/naming.hpp: a digest, the value of every sub-resource's volume
/// label) of one VolumeManager's volumes, each computed once per pass however many parts of
/// the pass ask.
class VolumeKeys {
public:
    explicit VolumeKeys(std::string vm_uid) : uid_(std::move(vm_uid)) {}
    const std::string& of(const std::string& volume_id) {
        auto it = keys_.find(volume_id);
        if (it == keys_.end()) it = keys_.emplace(volume_id, handlers::naming::volume_key(uid_, volume_id)).first;
        return it->second;
    }
    /// How many keys were computed (each volume's once).
    std::size_t computed() const { return keys_.size(); }

private:
    std::string uid_;
    std::map<std::string, std::string> keys_;
};

/// Adds the owner-uid index to the sub-resource caches (call once, before they sync).
inline void install_indexes(Caches& c) {
    auto add = [](auto& informer) {
        if (!informer) return;
        informer->store().add_index(std::string(owner_uid_index), [](const auto& o) {
            auto uid = detail::annotation(o, owner_uid_annotation);
            return uid.empty() ? std::vector<std::string>{} : std::vector<std::string>{uid};
        });
    };
    add(c.pods);
    add(c.persistent_volumes);
    add(c.claims);
}

/// The VolumeManager keys a sub-resource maps to (from its owner annotation).
template <class T>
std::vector<runtime::Request> owner_requests(const T& o) {
    auto owner = detail::annotation(o, owner_name_annotation);
    auto slash = owner.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == owner.size()) return {};
    return {runtime::Request{owner.substr(0, slash), owner.substr(slash + 1)}};
}

} // namespace vck::volumes
