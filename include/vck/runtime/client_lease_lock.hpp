// ClientLeaseLock: the LeaseLock of a Lease on the API server, read and written through a
// client::Client (a 404 on get is "no record"; the server's 409s are the AlreadyExists and
// Conflict outcomes the elector expects). The client must outlive the lock.
#pragma once

#include <vck/client/client.hpp>
#include <vck/runtime/lease_lock.hpp>

namespace vck::runtime {

class ClientLeaseLock final : public LeaseLock {
public:
    explicit ClientLeaseLock(client::Client& c) : client_(c) {}

    boost::asio::awaitable<std::optional<api::Lease>> get(std::string namespace_, std::string name) override {
        try {
            co_return co_await client_.get<api::Lease>(namespace_, name);
        } catch (const client::ApiError& e) {
            if (!e.is(client::ErrorKind::NotFound)) throw;
        }
        co_return std::nullopt;
    }
    boost::asio::awaitable<api::Lease> create(api::Lease lease) override { co_return co_await client_.create(lease); }
    boost::asio::awaitable<api::Lease> update(api::Lease lease) override { co_return co_await client_.replace(lease); }

private:
    client::Client& client_;
};

} // namespace vck::runtime
