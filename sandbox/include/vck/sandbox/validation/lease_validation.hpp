// LeaseValidation: what kube-apiserver 1.32 refuses in coordination.k8s.io/v1 Leases
// (ValidateLeaseSpec of pkg/apis/coordination/validation), with its messages and field paths:
// leaseDurationSeconds, when set, greater than 0; leaseTransitions, when set, not negative.
// spec.strategy and spec.preferredHolder belong to the CoordinatedLeaderElection feature,
// alpha and off in 1.32: the lease strategy drops them before validating (builtin_defaults.hpp),
// so their rules never apply.
#pragma once

#include <vck/sandbox/validation/spec_validation.hpp>

#include <boost/json.hpp>

#include <vector>

namespace vck::sandbox {

/// ValidateLease / ValidateLeaseUpdate (the spec has no immutable field).
inline std::vector<FieldError> validate_lease(const boost::json::value& lease) {
    using namespace spec_validation;
    Errors errs;
    const auto* spec = at(&lease, "spec");
    if (auto d = integer(spec, "leaseDurationSeconds"); d && *d <= 0)
        errs.push_back(field::invalid("spec.leaseDurationSeconds", json::value(*d), "must be greater than 0"));
    if (auto t = integer(spec, "leaseTransitions"); t && *t < 0)
        errs.push_back(field::invalid("spec.leaseTransitions", json::value(*t), "must be greater than or equal to 0"));
    return errs;
}

} // namespace vck::sandbox
