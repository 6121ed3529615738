// LocalTransport: where a Client sends its requests instead of the network, when its Config
// names one (Config::local): an API server in the same process, such as the sandbox's
// in-process transport (sandbox/server/in_process_transport.hpp), so that an operator's
// tests run the same client, informers and reconcilers without sockets or TLS.
// Contract for implementations: answer each request as the server would over HTTP (status,
// headers, body; a watch or a followed log as a body read piece by piece); be callable from
// several coroutines at once; never block the calling thread while the server works (the
// server may call back into the caller, e.g. an admission webhook it serves).
// Everything above the transport is the Client's as over HTTPS: authentication headers,
// the rate limiter, retries, the write gate, request metrics.
#pragma once

#include <vck/client/http_transport.hpp>

#include <boost/asio/awaitable.hpp>

namespace vck::client {

class LocalTransport {
public:
    virtual ~LocalTransport() = default;
    /// The whole answer to `req`.
    virtual asio::awaitable<HttpResponse> send(HttpRequest req) = 0;
    /// The answer to `req`, its body left to read (watches, followed logs, large bodies).
    virtual asio::awaitable<ResponseStream> open(HttpRequest req) = 0;
};

} // namespace vck::client
