// ContainerIdentity: the uid, gid and supplementary groups a container's process runs as,
// decided as the kubelet and containerd decide them: securityContext.runAsUser/runAsGroup of
// the container, else of the pod, else the image's default user (ImageUser); the pod's
// supplementalGroups. Also the kubelet's runAsNonRoot verification, with its wording.
// Guarantee: both read only the pod and the image, never the host, so they hold whether or
// not the sandbox can really start a process as that user.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/sandbox/cluster/image_behaviour.hpp>

#include <boost/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vck::sandbox {

struct ContainerIdentity {
    std::uint32_t uid = 0;
    std::uint32_t gid = 0;
    std::vector<std::uint32_t> groups;  // supplementary, in the pod's order
};

namespace detail {

inline const boost::json::value* security_field(const boost::json::value& sc, const char* name) {
    if (!sc.is_object()) return nullptr;
    const auto* v = sc.as_object().if_contains(name);
    return v && !v->is_null() ? v : nullptr;
}

inline std::optional<std::int64_t> security_int(const boost::json::value& sc, const char* name) {
    const auto* v = security_field(sc, name);
    if (v && v->is_int64()) return v->get_int64();
    if (v && v->is_uint64()) return static_cast<std::int64_t>(v->get_uint64());
    return std::nullopt;
}

/// The container's value of a field, else the pod's: DetermineEffectiveSecurityContext.
inline std::optional<std::int64_t> effective_int(const api::Pod& pod, const api::Container& c, const char* name) {
    if (auto v = security_int(c.securityContext, name)) return v;
    return security_int(pod.spec.securityContext, name);
}

} // namespace detail

/// Who the container's process is. A uid that the securityContext names and that is not the
/// image's own user gets group 0 unless runAsGroup says otherwise (containerd finds no
/// /etc/passwd entry for it).
inline ContainerIdentity effective_identity(const api::Pod& pod, const api::Container& c, const ImageUser& image) {
    ContainerIdentity id;
    auto uid = detail::effective_int(pod, c, "runAsUser");
    id.uid = uid ? static_cast<std::uint32_t>(*uid) : image.uid;
    if (auto gid = detail::effective_int(pod, c, "runAsGroup")) id.gid = static_cast<std::uint32_t>(*gid);
    else id.gid = id.uid == image.uid ? image.gid : 0;
    if (const auto* groups = detail::security_field(pod.spec.securityContext, "supplementalGroups");
        groups && groups->is_array())
        for (const auto& g : groups->as_array())
            if (g.is_int64() && g.get_int64() >= 0) id.groups.push_back(static_cast<std::uint32_t>(g.get_int64()));
    return id;
}

/// The kubelet's refusal of a container that must not run as root and would, in its words
/// (pkg/kubelet/kuberuntime verifyRunAsNonRoot), or nullopt when it may start.
inline std::optional<std::string> verify_run_as_non_root(const api::Pod& pod, const api::Container& c,
                                                         const ImageUser& image) {
    const auto* own = detail::security_field(c.securityContext, "runAsNonRoot");
    const auto* flag = own ? own : detail::security_field(pod.spec.securityContext, "runAsNonRoot");
    if (!flag || !flag->is_bool() || !flag->get_bool()) return std::nullopt;
    auto who = "(pod: \"" + pod.metadata.name + "_" + pod.metadata.namespace_ + "(" + pod.metadata.uid +
               ")\", container: " + c.name + ")";
    if (auto uid = detail::effective_int(pod, c, "runAsUser")) {
        if (*uid == 0) return "container's runAsUser breaks non-root policy " + who;
        return std::nullopt;
    }
    if (image.uid == 0) return "container has runAsNonRoot and image will run as root " + who;
    return std::nullopt;
}

} // namespace vck::sandbox
