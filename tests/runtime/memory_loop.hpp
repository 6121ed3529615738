// Test support for the runtime without a socket: one io_context driven from the test's own
// thread (nothing runs unless the test polls, so a test can change the server while the
// informers are not looking, e.g. between a dropped watch and the next one) and a
// MemoryListWatch as the API server.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/runtime/informer.hpp>
#include <vck/sandbox/memory_list_watch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <exception>
#include <memory>
#include <string>

namespace vck::test {

struct MemoryLoop {
    boost::asio::io_context io;
    std::shared_ptr<sandbox::MemoryListWatch> server = std::make_shared<sandbox::MemoryListWatch>(io.get_executor());

    /// Runs ready handlers until `cond` holds or 30 s pass; returns cond().
    template <class F>
    bool until(F cond) {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!cond() && std::chrono::steady_clock::now() < deadline) {
            io.restart();
            io.run_for(std::chrono::milliseconds(1));
        }
        return cond();
    }
    /// Runs what is ready now (and what that makes ready), without waiting.
    void settle() {
        for (int i = 0; i < 50; ++i) {
            io.restart();
            io.poll();
        }
    }

    /// Spawns `a`; the returned flag turns true when it ends (its exception, if any, in *error).
    struct Task {
        std::shared_ptr<bool> done = std::make_shared<bool>(false);
        std::shared_ptr<std::exception_ptr> error = std::make_shared<std::exception_ptr>();
    };
    Task spawn(boost::asio::awaitable<void> a) {
        Task t;
        boost::asio::co_spawn(io, std::move(a), [t](std::exception_ptr e) {
            *t.error = e;
            *t.done = true;
        });
        return t;
    }
};

/// The resource the socket-free tests list and watch.
inline const vck::api::ResourceType& configmaps = vck::api::ConfigMap::resource;

/// Informer options that retry within milliseconds (the in-memory server answers at once).
inline runtime::InformerOptions quick() {
    runtime::InformerOptions o;
    o.backoff_base = std::chrono::milliseconds(1);
    o.backoff_cap = std::chrono::milliseconds(5);
    return o;
}

inline boost::json::value configmap(std::string ns, std::string name, boost::json::object data = {},
                                    boost::json::object labels = {}) {
    boost::json::object meta{{"name", std::move(name)}, {"namespace", std::move(ns)}};
    if (!labels.empty()) meta["labels"] = std::move(labels);
    return boost::json::object{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", std::move(meta)},
                               {"data", std::move(data)}};
}

} // namespace vck::test
