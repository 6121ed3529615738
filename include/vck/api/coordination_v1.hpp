// coordination.k8s.io/v1 Lease: the object leader election holds and renews.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/meta.hpp>
#include <vck/api/resource.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace vck::api {

struct LeaseSpec {
    std::string holderIdentity;
    std::optional<std::int64_t> leaseDurationSeconds;
    std::string acquireTime;  // RFC 3339 with microseconds, as MicroTime
    std::string renewTime;
    std::optional<std::int64_t> leaseTransitions;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(LeaseSpec, (), (holderIdentity, leaseDurationSeconds, acquireTime, renewTime, leaseTransitions))

struct Lease {
    static constexpr ResourceType resource{"coordination.k8s.io", "v1", "leases", "Lease", true};
    std::string apiVersion = "coordination.k8s.io/v1";
    std::string kind = "Lease";
    ObjectMeta metadata;
    LeaseSpec spec;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(Lease, (), (apiVersion, kind, metadata, spec))

} // namespace vck::api
