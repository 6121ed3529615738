// MemoryLeaseLock: a LeaseLock kept in memory, for electing leaders without a socket. One
// instance stands for the API server's Lease records: share it (a shared_ptr) between the
// candidates, on any threads (it is thread-safe and never suspends). It keeps the contract of
// lease_lock.hpp: each write takes the next resourceVersion, a create of an existing record
// is AlreadyExists, an update from a stale resourceVersion is Conflict (and of a missing one
// NotFound). lease() and put() let a test read or overwrite a record as another writer would.
#pragma once

#include <vck/client/error.hpp>
#include <vck/runtime/lease_lock.hpp>

#include <map>
#include <mutex>
#include <utility>

namespace vck::runtime {

class MemoryLeaseLock final : public LeaseLock {
public:
    boost::asio::awaitable<std::optional<api::Lease>> get(std::string namespace_, std::string name) override {
        co_return lease(namespace_, name);
    }
    boost::asio::awaitable<api::Lease> create(api::Lease l) override {
        std::lock_guard lk(mu_);
        auto key = key_of(l);
        if (leases_.count(key))
            throw client::ApiError(client::ErrorKind::AlreadyExists, "POST", path(key),
                                   "leases.coordination.k8s.io \"" + key.second + "\" already exists");
        co_return store_locked(std::move(key), std::move(l));
    }
    boost::asio::awaitable<api::Lease> update(api::Lease l) override {
        std::lock_guard lk(mu_);
        auto key = key_of(l);
        auto it = leases_.find(key);
        if (it == leases_.end())
            throw client::ApiError(client::ErrorKind::NotFound, "PUT", path(key),
                                   "leases.coordination.k8s.io \"" + key.second + "\" not found");
        if (l.metadata.resourceVersion != it->second.metadata.resourceVersion)
            throw client::ApiError(client::ErrorKind::Conflict, "PUT", path(key),
                                   "Operation cannot be fulfilled on leases.coordination.k8s.io \"" + key.second +
                                       "\": the object has been modified; please apply your changes to the latest version and try again");
        co_return store_locked(std::move(key), std::move(l));
    }

    /// The stored record, if any.
    std::optional<api::Lease> lease(const std::string& namespace_, const std::string& name) const {
        std::lock_guard lk(mu_);
        auto it = leases_.find({namespace_, name});
        if (it == leases_.end()) return std::nullopt;
        return it->second;
    }
    /// Stores `l` whatever its resourceVersion (a write by someone outside the election).
    api::Lease put(api::Lease l) {
        std::lock_guard lk(mu_);
        auto key = key_of(l);
        return store_locked(std::move(key), std::move(l));
    }

private:
    using Key = std::pair<std::string, std::string>;  // namespace, name
    static Key key_of(const api::Lease& l) { return {l.metadata.namespace_, l.metadata.name}; }
    static std::string path(const Key& k) {
        return "/apis/coordination.k8s.io/v1/namespaces/" + k.first + "/leases/" + k.second;
    }
    api::Lease store_locked(Key key, api::Lease l) {
        l.metadata.resourceVersion = std::to_string(++version_);
        leases_[std::move(key)] = l;
        return l;
    }

    mutable std::mutex mu_;
    std::map<Key, api::Lease> leases_;
    std::uint64_t version_ = 0;
};

} // namespace vck::runtime
