// listen_on: opens, binds and listens an acceptor for a server of the manager (health,
// metrics, webhooks) on BIND:PORT. Guarantee: whatever fails is a std::runtime_error naming the
// flag that set the address and the address, in Go's lower-case strerror words
// ("--metrics-bind-address 127.0.0.1:8080: address already in use"), and the acceptor is left
// closed.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/socket_base.hpp>

#include <cctype>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <system_error>

namespace vck::runtime {

inline void listen_on(boost::asio::ip::tcp::acceptor& a, const std::string& bind, std::uint16_t port,
                      const std::string& flag) {
    namespace asio = boost::asio;
    auto fail = [&](const std::string& why) {
        std::string host = bind.find(':') != std::string::npos ? "[" + bind + "]" : bind;
        std::string where = host + ":" + std::to_string(port);
        return std::runtime_error(flag.empty() ? where + ": " + why : flag + " " + where + ": " + why);
    };
    boost::system::error_code ec;
    auto address = asio::ip::make_address(bind, ec);
    if (ec) throw fail("not an IP address");
    auto ep = asio::ip::tcp::endpoint(address, port);
    a.open(ep.protocol(), ec);
    if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) a.bind(ep, ec);
    if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
        auto why = std::system_category().message(ec.value());
        a.close(ec);
        if (!why.empty()) why[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(why[0])));
        throw fail(why);
    }
}

} // namespace vck::runtime
