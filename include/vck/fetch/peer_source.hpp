// PeerSource: takes files from peer copies of the same volume (`vck-fetch fetch --peer URL`)
// instead of the object store, over mutual TLS with the volume's peer certificate
// (peer_tls.hpp), from the peers' PeerServer.
// Guarantees:
// - What a peer sends is checked against this fetch's own listing of the store before it can
//   land: its exact size, and the MD5 when the ETag is one (a single-part upload). A file that
//   fails either, or that a peer cannot give (absent within its wait, refused, a broken or
//   stalled connection), is reported false and the caller takes it from the store; nothing a
//   peer sent is ever kept then (the caller's staging file is rewritten from offset 0, and
//   is renamed into place only after its own checks: atomic_file.hpp).
// - Peers are asked in the order given; a peer that fails at the connection level (refused,
//   TLS, a timeout) is not asked again in this run; one that merely lacks a file is.
// - Bytes taken from each peer are counted (by URL), for the summary line.
#pragma once

#include <vck/api/digest.hpp>
#include <vck/client/http_transport.hpp>
#include <vck/fetch/atomic_file.hpp>
#include <vck/fetch/fetch_plan.hpp>
#include <vck/fetch/peer_tls.hpp>

#include <boost/url/encode.hpp>
#include <boost/url/rfc/pchars.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace vck::fetch {

class PeerSource {
public:
    struct Options {
        Options() {}
        /// How long a peer may take to have a file (its server waits for it to land), on top
        /// of the transfer at `min_rate`.
        std::chrono::milliseconds wait{90'000};
        double min_rate = 1024.0 * 1024;  // bytes per second below which a transfer counts as stalled
        bool verify = true;  // check single-part ETags (MD5)
    };

    PeerSource(boost::asio::any_io_executor ex, const std::vector<std::string>& urls, const PeerCredentials& creds,
               Options o = {})
        : opts_(std::move(o)) {
        auto tls = creds.client_settings();
        for (const auto& u : urls) {
            Peer p;
            p.url = u;
            client::TransportOptions to;
            to.connect_timeout = std::chrono::seconds(5);
            to.user_agent = "vck-fetch-peer";
            p.transport = std::make_unique<client::HttpTransport>(ex, client::Endpoint::parse(u), tls, to);
            peers_.push_back(std::move(p));
        }
    }

    bool empty() const { return peers_.empty(); }

    /// Bytes taken from each peer so far, by URL.
    std::map<std::string, std::uint64_t> bytes_by_peer() const {
        std::map<std::string, std::uint64_t> out;
        for (const auto& p : peers_) out[p.url] = p.bytes;
        return out;
    }
    std::uint64_t bytes() const {
        std::uint64_t n = 0;
        for (const auto& p : peers_) n += p.bytes;
        return n;
    }
    std::uint64_t rejected() const { return rejected_; }

    /// Writes `relative` (`size` bytes, ETag `etag`) into `out` from the first peer that has it
    /// and whose bytes check out. False: take it from the store (the caller rewrites `out` from
    /// offset 0).
    boost::asio::awaitable<bool> fetch(const std::string& relative, std::uint64_t size, const std::string& etag,
                                       AtomicFile& out, std::vector<char>& buf) {
        const bool md5_etag = opts_.verify && is_md5_etag(etag);
        for (auto& p : peers_) {
            if (p.dead) continue;
            client::HttpRequest req;
            req.target = "/objects/" + encode(relative) + "?size=" + std::to_string(size);
            req.timeout = opts_.wait + std::chrono::milliseconds(static_cast<long long>(1000.0 * double(size) / opts_.min_rate));
            std::uint64_t got = 0;
            std::optional<api::Digest> md5;
            if (md5_etag) md5.emplace(api::Digest::md5());
            std::string failure;
            try {
                auto rs = co_await p.transport->open(req);
                if (rs.status() != 200) {
                    rs.close();
                    continue;  // not there (within its wait): the next peer, or the store
                }
                for (;;) {
                    auto n = co_await rs.read_some(buf.data(), buf.size());
                    if (n == 0) break;
                    if (got + n > size) {
                        failure = "sent more bytes than the listing gives";
                        rs.close();
                        break;
                    }
                    out.write_at(got, buf.data(), n);
                    if (md5) md5->update(buf.data(), n);
                    got += n;
                }
            } catch (const client::ApiError& e) {
                p.dead = true;  // unreachable, refused, stalled: not asked again
                failure = e.what();
            }
            if (failure.empty() && got != size) failure = "sent " + std::to_string(got) + " of " + std::to_string(size) + " bytes";
            if (failure.empty() && md5)
                if (auto h = md5->hex(); h != etag) failure = "sent bytes whose MD5 " + h + " is not the ETag " + etag;
            if (!failure.empty()) {
                ++rejected_;
                std::fprintf(stderr, "vck-fetch: peer %s: %s: %s; taking it from elsewhere\n", p.url.c_str(),
                             relative.c_str(), failure.c_str());
                continue;
            }
            p.bytes += got;
            co_return true;
        }
        co_return false;
    }

private:
    struct Peer {
        std::string url;
        std::unique_ptr<client::HttpTransport> transport;
        bool dead = false;
        std::uint64_t bytes = 0;
    };

    static std::string encode(const std::string& relative) {
        // Each segment percent-encoded; the slashes between them kept.
        std::string out;
        std::size_t start = 0;
        for (;;) {
            auto slash = relative.find('/', start);
            out += boost::urls::encode(relative.substr(start, slash == std::string::npos ? std::string::npos : slash - start),
                                       boost::urls::pchars);
            if (slash == std::string::npos) return out;
            out += '/';
            start = slash + 1;
        }
    }

    Options opts_;
    std::vector<Peer> peers_;
    std::uint64_t rejected_ = 0;
};

} // namespace vck::fetch
