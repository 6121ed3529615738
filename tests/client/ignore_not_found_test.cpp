// client/ignore_not_found.hpp: a 404 is done, anything else is the caller's.
#include <vck/client/ignore_not_found.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <doctest/doctest.h>

namespace {

namespace asio = boost::asio;
using vck::client::ApiError;
using vck::client::ErrorKind;

asio::awaitable<int> answer(std::optional<ErrorKind> failure) {
    if (failure) throw ApiError(*failure, "DELETE", "/api/v1/namespaces/a/pods/p", "refused");
    co_return 1;
}

bool found_after(std::optional<ErrorKind> failure) {
    asio::io_context ioc;
    auto f = asio::co_spawn(ioc, vck::client::ignore_not_found(answer(failure)), asio::use_future);
    ioc.run();
    return f.get();
}

} // namespace

TEST_CASE("ignore_not_found: a request that succeeds reports the object was there") {
    CHECK(found_after(std::nullopt));
}

TEST_CASE("ignore_not_found: a 404 is done and reports the object gone") {
    CHECK_FALSE(found_after(ErrorKind::NotFound));
}

TEST_CASE("ignore_not_found: every other error reaches the caller unchanged") {
    for (auto kind : {ErrorKind::Conflict, ErrorKind::Forbidden, ErrorKind::Network}) {
        try {
            found_after(kind);
            FAIL("no error");
        } catch (const ApiError& e) {
            CHECK(e.is(kind));
        }
    }
}
