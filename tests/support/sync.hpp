// Test support: run one awaitable to completion on an io_context and hand back its result
// (or rethrow its exception), so tests read top to bottom like synchronous code.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <utility>

namespace vck::test {

template <class T>
T sync(boost::asio::io_context& ioc, boost::asio::awaitable<T> aw) {
    auto fut = boost::asio::co_spawn(ioc, std::move(aw), boost::asio::use_future);
    ioc.restart();
    ioc.run();
    return fut.get();
}

} // namespace vck::test
