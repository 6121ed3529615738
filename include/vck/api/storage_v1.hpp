// Typed storage.k8s.io/v1 StorageClass: what VCK's local volumes need to be bound only when a
// consumer pod is scheduled (volumeBindingMode WaitForFirstConsumer). Unmodelled fields stay in
// `unknown` and are written back untouched.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/meta.hpp>
#include <vck/api/resource.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vck::api {

struct StorageClass {
    static constexpr ResourceType resource{"storage.k8s.io", "v1", "storageclasses", "StorageClass", false};
    std::string apiVersion = "storage.k8s.io/v1";
    std::string kind = "StorageClass";
    ObjectMeta metadata;
    std::string provisioner;        // kubernetes.io/no-provisioner for pre-made local PVs
    std::string volumeBindingMode;  // Immediate, WaitForFirstConsumer
    std::string reclaimPolicy;      // Delete, Retain
    StringMap parameters;
    std::vector<std::string> mountOptions;
    std::optional<bool> allowVolumeExpansion;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(StorageClass, (),
    (apiVersion, kind, metadata, provisioner, volumeBindingMode, reclaimPolicy, parameters, mountOptions,
     allowVolumeExpansion))

} // namespace vck::api
