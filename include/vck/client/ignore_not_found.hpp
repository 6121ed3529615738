// ignore_not_found: awaits one request and takes a 404 as done, the way controllers treat a
// delete or patch of an object that is already gone (controller-runtime's
// client.IgnoreNotFound). Returns whether the object was there: false on NotFound. Every other
// error propagates unchanged.
#pragma once

#include <vck/client/error.hpp>

#include <boost/asio/awaitable.hpp>

#include <utility>

namespace vck::client {

template <class T>
boost::asio::awaitable<bool> ignore_not_found(boost::asio::awaitable<T> request) {
    try {
        co_await std::move(request);
    } catch (const ApiError& e) {
        if (!e.is(ErrorKind::NotFound)) throw;
        co_return false;
    }
    co_return true;
}

} // namespace vck::client
