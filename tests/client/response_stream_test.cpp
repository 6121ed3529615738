// Specification of ResponseStream's reads: what the connection already holds is read without
// a trip through the event loop per chunk, and the body comes out whole and in order.
#include <vck/client/http_transport.hpp>

#include "../support/sync.hpp"

#include <doctest.h>

#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

#include <string>
#include <thread>

namespace asio = boost::asio;
using namespace vck;

TEST_CASE("a body of many small chunks already received is read without one event-loop trip per chunk") {
    // A plain HTTP server that answers with 200 small chunks, all in one write.
    asio::io_context server_ioc;
    asio::ip::tcp::acceptor acceptor(server_ioc, {asio::ip::make_address("127.0.0.1"), 0});
    std::string want, response = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 200; ++i) {
        std::string event = "{\"n\":" + std::to_string(i) + "}\n";
        want += event;
        char size[16];
        std::snprintf(size, sizeof size, "%zx\r\n", event.size());
        response += size + event + "\r\n";
    }
    response += "0\r\n\r\n";
    std::thread server([&] {
        auto socket = acceptor.accept();
        asio::streambuf request;
        asio::read_until(socket, request, "\r\n\r\n");
        asio::write(socket, asio::buffer(response));
        boost::system::error_code ec;
        socket.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
        asio::read(socket, request, ec);  // until the client closes
    });

    asio::io_context ioc;
    client::HttpTransport transport(ioc.get_executor(),
                                    client::Endpoint::parse("http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port())));
    client::HttpRequest req;
    req.target = "/watch";
    auto stream = test::sync(ioc, transport.open(req));
    std::string body;
    char buf[64 * 1024];
    for (;;) {
        auto n = test::sync(ioc, stream.read_some(buf, sizeof buf));
        if (n == 0) break;
        body.append(buf, n);
    }
    CHECK(body == want);
    // One read per chunk would be 200; the bytes arrived together, so a few reads take them.
    CHECK(stream.async_reads() < 10);
    stream.close();
    transport.drop_idle();
    server.join();
}

TEST_CASE("a TLS connection keeps its record buffers between records") {
    // Asio's stream asks OpenSSL to free them whenever they are empty: a watch, receiving a
    // record per event or two, would pay a free and a 16 KB malloc per record.
    asio::io_context ioc;
    auto ctx = client::make_client_tls_context({});
    asio::ssl::stream<asio::ip::tcp::socket> tls(ioc, *ctx);
    REQUIRE((SSL_get_mode(tls.native_handle()) & SSL_MODE_RELEASE_BUFFERS) != 0);
    client::prepare_tls_connection(tls.native_handle(), "127.0.0.1", true);
    CHECK((SSL_get_mode(tls.native_handle()) & SSL_MODE_RELEASE_BUFFERS) == 0);
}
