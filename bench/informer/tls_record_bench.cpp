// The floor TLS puts under bench/informer's watch figures: what OpenSSL alone costs to read
// watch events as they come over HTTPS, next to a raw boost::json::parse of the same events.
// A server flushes each watch event as it comes when its watcher keeps up (kube-apiserver
// flushes whenever its queue is empty; so does the sandbox), so most TLS records carry one
// event, and each record costs OpenSSL a fixed price (record header, IV and tag through the
// EVP layer, error-queue upkeep) however small it is. Here a client and a server SSL, made
// as vck's client and the sandbox make them (client/tls.hpp, sandbox/server/certs.hpp), talk TLS
// 1.3 through memory BIOs; the server writes records of K events each (K = 1, 2, 4, 8: what a
// server's backlog packs together), the client reads them as a socket delivers them (16 KB at
// a time) with one SSL_read per record, as asio's engine does. No socket, no HTTP parser, no
// decode, no cache: the informer's whole per-event cost, over TLS, is this plus its own.
// Usage: tls_record_bench [EVENTS=20000] [ROUNDS=7]
#include <vck/client/tls.hpp>
#include <vck/sandbox/server/certs.hpp>

#include <boost/json.hpp>

#include <fmt/core.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/// One watch event as the sandbox sends a configmap of bench/informer's catch-up, framed as
/// the HTTP chunk that carries it.
std::string event_chunk(int i, std::string& event) {
    json::value obj{{"type", "MODIFIED"},
                    {"object",
                     {{"metadata",
                       {{"name", fmt::format("cu0-{}", i)},
                        {"namespace", "bench"},
                        {"uid", fmt::format("fb237832-0c97-45b5-a2b9-{:012}", i)},
                        {"creationTimestamp", "2026-11-25T13:11:18Z"},
                        {"generation", 1},
                        {"resourceVersion", std::to_string(100000 + i)}}},
                      {"data", {{"k", std::string(200, 'y')}}},
                      {"apiVersion", "v1"},
                      {"kind", "ConfigMap"}}}};
    event = json::serialize(obj) + "\n";
    return fmt::format("{:x}\r\n{}\r\n", event.size(), event);
}

/// A TLS 1.3 connection between two SSLs through memory BIOs, handshaken.
struct Link {
    SSL* client = nullptr;
    SSL* server = nullptr;
    BIO* client_net = nullptr;  // the client's network side: what the server sent arrives here
    BIO* server_net = nullptr;

    Link(SSL_CTX* client_ctx, SSL_CTX* server_ctx) {
        client = SSL_new(client_ctx);
        server = SSL_new(server_ctx);
        BIO *ci = nullptr, *si = nullptr;
        BIO_new_bio_pair(&ci, 1 << 22, &client_net, 1 << 22);
        BIO_new_bio_pair(&si, 1 << 22, &server_net, 1 << 22);
        SSL_set_bio(client, ci, ci);
        SSL_set_bio(server, si, si);
        vck::client::prepare_tls_connection(client, "127.0.0.1", true);
        SSL_set_connect_state(client);
        SSL_set_accept_state(server);
        for (int i = 0; i < 10 && !(SSL_is_init_finished(client) && SSL_is_init_finished(server)); ++i) {
            SSL_do_handshake(client);
            shuttle(client_net, server_net);
            SSL_do_handshake(server);
            shuttle(server_net, client_net);
        }
        if (!SSL_is_init_finished(client) || !SSL_is_init_finished(server)) throw std::runtime_error("TLS handshake failed");
        char b[256];
        SSL_read(client, b, sizeof b);  // takes TLS 1.3's session tickets off the wire
        ERR_clear_error();
    }
    ~Link() {
        SSL_free(client);
        SSL_free(server);
        BIO_free(client_net);
        BIO_free(server_net);
    }
    static void shuttle(BIO* from, BIO* to) {
        char buf[16384];
        for (int n; (n = BIO_read(from, buf, sizeof buf)) > 0;) BIO_write(to, buf, n);
    }
};

} // namespace

int main(int argc, char** argv) {
    int n = std::max(argc > 1 ? std::atoi(argv[1]) : 20000, 1);
    int rounds = std::max(argc > 2 ? std::atoi(argv[2]) : 7, 1);

    vck::sandbox::CertificateAuthority ca;
    auto serving = ca.issue_server();
    vck::client::TlsSettings settings;
    settings.ca_pem = ca.cert_pem();
    auto client_ctx = vck::client::make_client_tls_context(settings);
    SSL_CTX* server_ctx = SSL_CTX_new(TLS_server_method());
    {
        BIO* b = BIO_new_mem_buf(serving.cert_pem.data(), static_cast<int>(serving.cert_pem.size()));
        X509* cert = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
        BIO_free(b);
        b = BIO_new_mem_buf(serving.key_pem.data(), static_cast<int>(serving.key_pem.size()));
        EVP_PKEY* key = PEM_read_bio_PrivateKey(b, nullptr, nullptr, nullptr);
        BIO_free(b);
        if (!cert || !key || SSL_CTX_use_certificate(server_ctx, cert) != 1 || SSL_CTX_use_PrivateKey(server_ctx, key) != 1)
            throw std::runtime_error("server certificate");
        X509_free(cert);
        EVP_PKEY_free(key);
    }

    std::vector<std::string> chunks(n), events(n);
    for (int i = 0; i < n; ++i) chunks[i] = event_chunk(i, events[i]);

    Link probe(client_ctx->native_handle(), server_ctx);
    fmt::print("{} {}, events of {} bytes ({} with chunk framing)\n", SSL_get_version(probe.client),
               SSL_get_cipher(probe.client), events[0].size(), chunks[0].size());

    std::vector<char> out(1 << 16);
    for (int k : {1, 2, 4, 8}) {
        std::vector<double> tls_us, parse_us;
        for (int r = 0; r < rounds; ++r) {
            Link link(client_ctx->native_handle(), server_ctx);
            // The server's records, K events each, as bytes on the wire.
            std::string wire, record;
            for (int i = 0; i < n; i += k) {
                record.clear();
                for (int j = i; j < std::min(n, i + k); ++j) record += chunks[j];
                if (SSL_write(link.server, record.data(), static_cast<int>(record.size())) <= 0)
                    throw std::runtime_error("SSL_write");
                char buf[65536];
                for (int m; (m = BIO_read(link.server_net, buf, sizeof buf)) > 0;) wire.append(buf, static_cast<std::size_t>(m));
            }
            auto t0 = Clock::now();
            std::size_t plain = 0;
            for (std::size_t off = 0; off < wire.size();) {
                std::size_t piece = std::min<std::size_t>(16384, wire.size() - off);
                BIO_write(link.client_net, wire.data() + off, static_cast<int>(piece));
                off += piece;
                for (;;) {
                    ERR_clear_error();  // as asio's engine does before each SSL call
                    int m = SSL_read(link.client, out.data(), static_cast<int>(out.size()));
                    if (m <= 0) break;
                    plain += static_cast<std::size_t>(m);
                }
            }
            double tls_s = std::chrono::duration<double>(Clock::now() - t0).count();
            std::size_t expected = 0;
            for (const auto& c : chunks) expected += c.size();
            if (plain != expected) throw std::runtime_error("client read " + std::to_string(plain) + " bytes, not " + std::to_string(expected));
            auto t1 = Clock::now();
            std::size_t sink = 0;
            for (const auto& e : events) sink += json::parse(e).as_object().size();
            double parse_s = std::chrono::duration<double>(Clock::now() - t1).count();
            if (sink == 0) fmt::print("(empty)\n");
            tls_us.push_back(tls_s / n * 1e6);
            parse_us.push_back(parse_s / n * 1e6);
        }
        double tls = median(tls_us), parse = median(parse_us);
        fmt::print("{} event(s) per record: TLS read {:.3f} us/event ({:.3f} us/record); raw parse {:.3f} us/event; TLS alone "
                   "= {:.2f} raw parses, so the informer's ratio to raw parse is at most {:.2f}\n",
                   k, tls, tls * k, parse, tls / parse, parse / tls);
    }
    SSL_CTX_free(server_ctx);
    return 0;
}
