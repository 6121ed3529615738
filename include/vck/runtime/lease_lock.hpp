// LeaseLock: where a LeaderElector keeps its coordination.k8s.io/v1 Lease record (client-go's
// resourcelock.Interface), so that election runs over the API server (client_lease_lock.hpp)
// or in memory (memory_lease_lock.hpp, for tests) alike. Contract of every implementation:
// get() yields the record or nullopt when there is none; create() fails with an ApiError of
// kind AlreadyExists when one exists; update() fails with kind Conflict unless the record's
// metadata.resourceVersion is the stored one (someone else wrote in between); both return the
// record as stored, with its new resourceVersion. Other failures are ApiErrors (or any
// exception) that the elector treats as a failed attempt.
#pragma once

#include <vck/api/coordination_v1.hpp>

#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>

namespace vck::runtime {

class LeaseLock {
public:
    virtual ~LeaseLock() = default;
    virtual boost::asio::awaitable<std::optional<api::Lease>> get(std::string namespace_, std::string name) = 0;
    virtual boost::asio::awaitable<api::Lease> create(api::Lease lease) = 0;
    virtual boost::asio::awaitable<api::Lease> update(api::Lease lease) = 0;
};

} // namespace vck::runtime
