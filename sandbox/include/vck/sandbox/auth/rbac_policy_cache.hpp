// RbacPolicyCache: the RbacPolicy every authorization reads, rebuilt from the store only when
// a Role, ClusterRole or binding changed since the last build (not once per request, which
// copied every RBAC object for each call of a non-admin client). Guarantees: current() reflects
// every RBAC write that completed before it was called (the store records a storage's last
// change in the same locked step as the write); concurrent callers share one snapshot, which
// stays valid for as long as a caller holds it. Thread-safe.
#pragma once

#include <vck/sandbox/storage/object_store.hpp>
#include <vck/sandbox/auth/rbac_authorizer.hpp>
#include <vck/sandbox/validation/rbac_validation.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace vck::sandbox {

class RbacPolicyCache {
public:
    explicit RbacPolicyCache(const ObjectStore& store) : store_(store) {}

    std::shared_ptr<const RbacPolicy> current() const {
        // Read before the build: a write between the two is then seen by the next call.
        auto versions = rbac_versions();
        std::lock_guard lock(mu_);
        if (!policy_ || versions != built_at_) {
            policy_ = std::make_shared<const RbacPolicy>(RbacPolicy::from_store(store_));
            built_at_ = versions;
            ++builds_;
        }
        return policy_;
    }

    /// How many times the policy was built (tests see that it is not once per request).
    std::size_t builds() const {
        std::lock_guard lock(mu_);
        return builds_;
    }

private:
    using Versions = std::array<std::int64_t, 4>;
    Versions rbac_versions() const {
        Versions v{};
        const char* plurals[] = {"clusterroles", "roles", "clusterrolebindings", "rolebindings"};
        for (std::size_t i = 0; i < v.size(); ++i)
            v[i] = store_.last_write(std::string(rbac_group) + "/" + plurals[i]);
        return v;
    }

    const ObjectStore& store_;
    mutable std::mutex mu_;
    // A cache: current() is logically const.
    mutable std::shared_ptr<const RbacPolicy> policy_;
    mutable Versions built_at_{};
    mutable std::size_t builds_ = 0;
};

} // namespace vck::sandbox
