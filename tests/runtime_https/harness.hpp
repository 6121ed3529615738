// Test support for the runtime's upper layers: one sandbox for the whole binary, an
// io_context running on its own thread (informers and controllers live there while the test
// thread changes the server), and bounded waiting for a condition.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/client/client.hpp>
#include <vck/runtime/client_list_watch.hpp>
#include <vck/sandbox/server/api_server.hpp>
#include <vck/sandbox/eventually.hpp>

#include <doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <cstdlib>
#include <future>
#include <map>
#include <thread>

namespace vck::test {

namespace json = boost::json;

inline sandbox::ApiServer& server() {
    static sandbox::ApiServer s = [] {
        sandbox::ApiServer::Options o;
        o.bookmark_interval = std::chrono::seconds(1);
        o.verbose = std::getenv("VCK_SANDBOX_VERBOSE") != nullptr;  // logs every request
        return sandbox::ApiServer(o);
    }();
    static bool started = (s.start(), true);
    (void)started;
    return s;
}

inline const sandbox::ResourceId configmaps_id{"", "v1", "configmaps"};

inline json::value configmap(std::string_view ns, std::string_view name, std::string_view data = "v") {
    return json::value{{"apiVersion", "v1"},
                       {"kind", "ConfigMap"},
                       {"metadata", {{"name", name}, {"namespace", ns}}},
                       {"data", {{"k", data}}}};
}

inline void ensure_namespace(std::string_view ns) {
    try {
        server().store().create(sandbox::ResourceId{"", "v1", "namespaces"}, "",
                                json::value{{"metadata", {{"name", ns}}}});
    } catch (const std::exception&) {
        // already there
    }
}

/// name -> resourceVersion of every object of `id` in `ns`, read from the server's store.
inline std::map<std::string, std::string> server_versions(const sandbox::ResourceId& id, std::string_view ns) {
    std::map<std::string, std::string> out;
    auto l = server().store().list(id, ns);
    for (const auto& it : l.at("items").as_array())
        out[std::string(api::string_at(it, {"metadata", "name"}))] =
            std::string(api::string_at(it, {"metadata", "resourceVersion"}));
    return out;
}

using sandbox::eventually;

/// An io_context on a thread of its own, with a client to the sandbox.
struct Loop {
    boost::asio::io_context ioc;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard{ioc.get_executor()};
    client::Config cfg = [] {
        auto c = server().config();
        c.max_retries = 0;  // the runtime must cope with failures itself
        c.retry_base = std::chrono::milliseconds(10);
        c.qps = 1000;
        c.burst = 1000;
        return c;
    }();
    std::unique_ptr<client::Client> client = std::make_unique<client::Client>(ioc.get_executor(), cfg);
    std::thread thread;

    Loop() { thread = std::thread([this] { ioc.run(); }); }
    ~Loop() { finish(); }

    /// Runs `f` on the loop's thread and returns its result.
    template <class F>
    auto on_loop(F f) {
        std::packaged_task<decltype(f())()> task(std::move(f));
        auto fut = task.get_future();
        boost::asio::post(ioc, [&task] { task(); });
        return fut.get();
    }
    /// Spawns a coroutine on the loop; the future reports its end.
    template <class F>
    std::future<void> spawn(F f) {
        return boost::asio::co_spawn(ioc, std::move(f), boost::asio::use_future);
    }
    template <class T>
    T sync(boost::asio::awaitable<T> aw) {
        return boost::asio::co_spawn(ioc, std::move(aw), boost::asio::use_future).get();
    }
    void finish() {
        if (!thread.joinable()) return;
        // The client goes first, on the loop (its connections belong there), while the work
        // guard still keeps run() alive to run that.
        on_loop([this] {
            client.reset();
            return 0;
        });
        guard.reset();
        thread.join();
    }
};

} // namespace vck::test
