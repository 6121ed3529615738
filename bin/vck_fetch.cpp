// vck-fetch: the data mover inside VCK's download pods. Flags and wiring only; the work is
// in include/vck/s3 and include/vck/fetch.
//   vck-fetch fetch SRC DEST [--endpoint URL] [--include GLOB]... [--parallel N] [--in-order] [--resync]
//                 [--reuse-from OLDER_COPY]
//                 [--serve ADDR:PORT [--ready-port PORT]] [--peer URL]... --peer-cert FILE --peer-key FILE
//   vck-fetch sync-back DIR DEST_URL [--interval S] [--once]
//   vck-fetch delete DIR --allowed-root ROOT...
//   vck-fetch prepare DIR --owner UID:GID [--allowed-root ROOT]...
// Each keeps or finds DIR's state in <DIR>.vck-fetch unless --state-dir says otherwise.
#include <vck/fetch/atomic_file.hpp>
#include <vck/fetch/confined_delete.hpp>
#include <vck/fetch/exit_code.hpp>
#include <vck/fetch/fetcher.hpp>
#include <vck/fetch/peer_server.hpp>
#include <vck/fetch/peer_source.hpp>
#include <vck/runtime/bind_address.hpp>
#include <vck/fetch/prepare_dir.hpp>
#include <vck/fetch/run_summary.hpp>
#include <vck/fetch/state_dir.hpp>
#include <vck/fetch/sync_back.hpp>

#include "command_line.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

namespace asio = boost::asio;
using namespace vck;

namespace {

struct Common {
    std::string endpoint;
    std::string region = "us-east-1";
    int parallel = 16;
    std::string termination_log = "/dev/termination-log";
    double progress_seconds = 5;
    int max_attempts = 5;
};

s3::S3Config s3_config(const Common& c) {
    s3::S3Config cfg;
    cfg.endpoint = c.endpoint;
    cfg.region = c.region;
    cfg.credentials = s3::Credentials::from_environment();
    cfg.max_attempts = c.max_attempts;
    cfg.transport.max_idle = static_cast<std::size_t>(std::max(16, c.parallel));
    cfg.transport.user_agent = "vck-fetch/" VCK_VERSION;
    cfg.transport.request_timeout = std::chrono::minutes(10);
    return cfg;
}

std::chrono::milliseconds interval(double seconds) {
    return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

/// Runs `body` on a single-threaded io_context; returns its exception, if any.
template <class F>
std::exception_ptr run_on_io(F body) {
    asio::io_context ioc(1);
    std::exception_ptr err;
    asio::co_spawn(ioc, body(ioc.get_executor()), [&](std::exception_ptr e) {
        err = e;
        ioc.stop();
    });
    ioc.run();
    return err;
}

std::string first_line(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        std::string s = x.what();
        return s.substr(0, s.find('\n'));
    } catch (...) {
        return "unknown error";
    }
}

int finish(fetch::RunSummary& s, const Common& c, fetch::Progress& p, std::exception_ptr err) {
    s.seconds = p.seconds();
    if (err) {
        s.error = first_line(err);
        s.exit_code = static_cast<int>(fetch::exit_code_for(err));
        if (s.errors == 0) s.errors = 1;
        std::fprintf(stderr, "vck-fetch: error: %s\n", s.error.c_str());
    }
    if (!c.termination_log.empty() && !s.write_to(c.termination_log) && c.termination_log != "/dev/termination-log")
        std::fprintf(stderr, "vck-fetch: warning: cannot write the summary to %s\n", c.termination_log.c_str());
    std::fprintf(stderr, "%s\n", s.to_json_line().c_str());
    return s.exit_code;
}

/// Scans until stopped (or once); `last` is the last scan's result (its unchanged files are
/// the summary's `skipped`: with --once, files + skipped is the whole directory).
asio::awaitable<void> sync_loop(fetch::SyncBack& sb, double every, bool once, fetch::ScanResult& last) {
    auto ex = co_await asio::this_coro::executor;
    asio::steady_timer t(ex);
    asio::signal_set signals(ex, SIGTERM, SIGINT);
    bool stopping = false;
    // A signal ends the wait early; one last scan then uploads what changed meanwhile.
    signals.async_wait([&](auto ec, int) {
        if (ec) return;
        stopping = true;
        t.cancel();
    });
    for (;;) {
        auto r = co_await sb.scan_once();
        last = r;
        if (r.uploaded)
            std::fprintf(stderr, "vck-fetch: synced back %llu changed files\n", static_cast<unsigned long long>(r.uploaded));
        if (once || stopping) break;
        t.expires_after(interval(every));
        boost::system::error_code ec;
        co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    signals.cancel();
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"vck-fetch: moves datasets between S3 and a node's disk for VCK download pods.\n"
                 "Credentials come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN."};
    cli::add_version_flag(app, "vck-fetch");
    app.require_subcommand(1);
    Common c;
    // Tests of a full disk (tests/e2e/placement_test.sh): writes fail with ENOSPC past this.
    if (const char* full = std::getenv("VCK_FETCH_TEST_DISK_FULL_AFTER"))
        fetch::AtomicFile::disk_full_after(std::strtoll(full, nullptr, 10));
    auto add_common = [&](CLI::App* sub, bool network) {
        sub->add_option("--termination-log", c.termination_log, "Where to write the one-line JSON summary");
        if (!network) return;
        sub->add_option("--endpoint", c.endpoint, "S3 endpoint URL (default: AWS, virtual-host style)");
        sub->add_option("--region", c.region, "Signing region")->capture_default_str();
        sub->add_option("--parallel", c.parallel, "Concurrent transfers")->check(cli::in_range(1, 256))->capture_default_str();
        sub->add_option("--progress-interval", c.progress_seconds, "Seconds between progress lines (0: none)")
            ->check(cli::in_range(0.0, 86400.0));
        sub->add_option("--max-attempts", c.max_attempts, "Attempts per request")->check(cli::in_range(1, 50));
    };

    std::string src, dest, dir, dest_url, state_dir, owner;
    std::vector<std::string> includes, roots;
    auto add_state_dir = [&](CLI::App* sub) {
        sub->add_option("--state-dir", state_dir,
                        "Where vck-fetch keeps its journal and staging files (default: <dir>.vck-fetch beside the "
                        "directory; on the same mount, outside it)");
    };
    double part_mib = 0, threshold_mib = 0, sync_every = 10;  // sizes: used only when given
    bool no_verify = false, resync = false, once = false, in_order = false;

    auto* f = app.add_subcommand("fetch", "Copy s3://bucket/key (or s3://bucket/prefix/, recursively) into DEST");
    f->add_option("SRC", src, "s3://bucket/key or s3://bucket/prefix/")->required();
    f->add_option("DEST", dest, "Destination directory")->required();
    f->add_option("--include", includes, "Only keys matching this glob (repeatable)");
    f->add_option("--part-size", part_mib, "MiB per ranged GET of a large object (default 32)")->check(cli::in_range(1.0, 5120.0));
    f->add_option("--multipart-threshold", threshold_mib, "MiB above which an object is fetched in ranges (default 256)")
        ->check(cli::in_range(1.0, 1e6));
    f->add_flag("--no-verify", no_verify, "Do not check single-part ETags (MD5)");
    f->add_flag("--in-order", in_order,
                "Start files in key order (for a first batch: the landed prefix grows steadily), not big files first");
    f->add_flag("--resync", resync, "After the fetch, keep syncing local changes back to SRC (as sync-back)");
    f->add_option("--interval", sync_every, "With --resync: seconds between scans")->check(cli::positive_up_to(86400.0));
    std::string reuse_from;
    f->add_option("--reuse-from", reuse_from,
                  "An older copy of the dataset on the same disk: files it holds unchanged (same path, size and ETag "
                  "as listed, untouched since they landed) are copied from it, not downloaded");
    std::string serve, serve_port_file, peer_cert, peer_key;
    std::vector<std::string> peer_urls;
    double serve_linger = 30, peer_wait = 60;
    std::uint16_t ready_port = 0;
    f->add_option("--serve", serve,
                  "Serve DEST's files to the volume's other download pods on ADDR:PORT (port 0: any) while fetching, "
                  "over TLS with the peer certificate")
        ;
    f->add_option("--serve-port-file", serve_port_file, "With --serve: write the port served on to this file");
    f->add_option("--serve-linger", serve_linger,
                  "With --serve: after the fetch, keep serving until no peer has asked for this many seconds")
        ->check(cli::in_range(0.0, 86400.0));
    f->add_option("--ready-port", ready_port,
                  "With --serve: once the fetch has succeeded, accept TCP connections on this port of the served address "
                  "(for a tcpSocket readiness probe: the copy is complete while it still serves)")
        ->check(cli::in_range(1, 65535));
    f->add_option("--peer", peer_urls, "https://ADDR:PORT of a peer copy to take files from before the store (repeatable, in order)");
    f->add_option("--peer-wait", peer_wait, "Seconds a peer waits for a file to land before saying it has not")
        ->check(cli::in_range(0.0, 3600.0));
    f->add_option("--peer-cert", peer_cert, "The volume's peer certificate (PEM), for --serve and --peer");
    f->add_option("--peer-key", peer_key, "The volume's peer key (PEM), for --serve and --peer");
    add_state_dir(f);
    add_common(f, true);

    auto* sb = app.add_subcommand("sync-back", "Upload new and changed files of DIR to DEST_URL, periodically");
    sb->add_option("DIR", dir, "Local directory (a fetch destination)")->required();
    sb->add_option("DEST_URL", dest_url, "s3://bucket/prefix/")->required();
    sb->add_option("--interval", sync_every, "Seconds between scans")->check(cli::positive_up_to(86400.0));
    sb->add_flag("--once", once, "Scan and upload once, then exit");
    sb->add_option("--part-size", part_mib, "MiB per part of a multipart upload")->check(cli::in_range(5.0, 5120.0));
    sb->add_option("--multipart-threshold", threshold_mib, "MiB above which a file goes up in parts")
        ->check(cli::in_range(5.0, 1e6));
    add_state_dir(sb);
    add_common(sb, true);

    auto* d = app.add_subcommand("delete", "Remove DIR and its state directory, only if they lie inside an --allowed-root");
    d->add_option("DIR", dir, "Directory to remove")->required();
    d->add_option("--allowed-root", roots, "A root DIR must lie under (repeatable)")->required();
    add_state_dir(d);
    add_common(d, false);

    auto* pr = app.add_subcommand("prepare", "Create DIR and its state directory, owned by --owner, for an "
                                             "unprivileged fetch (run as root)");
    pr->add_option("DIR", dir, "Directory to prepare (absolute)")->required();
    pr->add_option("--owner", owner, "UID:GID that will own DIR and its state directory")->required();
    pr->add_option("--allowed-root", roots, "A root DIR must lie under (repeatable; none: any absolute path)");
    add_state_dir(pr);
    add_common(pr, false);

    static_assert(cli::usage_error == static_cast<int>(fetch::ExitCode::BadArguments));
    if (auto rc = cli::parse(app, "vck-fetch", argc, argv)) return *rc;

    fetch::Progress progress;
    fetch::RunSummary summary;
    std::exception_ptr err;

    std::vector<std::filesystem::path> root_paths(roots.begin(), roots.end());
    if (*d) {
        summary.command = "delete";
        try {
            auto outcome = fetch::confined_remove(dir, root_paths);
            summary.files = outcome == fetch::DeleteOutcome::Removed ? 1 : 0;
            std::fprintf(stderr, "vck-fetch: %s %s\n", outcome == fetch::DeleteOutcome::Removed ? "deleted" : "already absent:",
                         dir.c_str());
            // DIR's own state goes with it, under the same rules.
            auto state = fetch::StateDir(dir, state_dir).dir();
            if (fetch::confined_remove(state, root_paths) == fetch::DeleteOutcome::Removed)
                std::fprintf(stderr, "vck-fetch: deleted %s\n", state.c_str());
        } catch (...) {
            err = std::current_exception();
        }
        return finish(summary, c, progress, err);
    }

    if (*pr) {
        summary.command = "prepare";
        try {
            auto who = fetch::Owner::parse(owner);
            for (const auto& target : {std::filesystem::path(dir), fetch::StateDir(dir, state_dir).dir()}) {
                auto r = fetch::prepare_directory(target, who, root_paths);
                summary.files += r.created;
                std::fprintf(stderr, "vck-fetch: prepared %s for %s (%llu directories created)\n", target.c_str(),
                             owner.c_str(), static_cast<unsigned long long>(r.created));
            }
        } catch (...) {
            err = std::current_exception();
        }
        return finish(summary, c, progress, err);
    }

    auto sync_back = [&](s3::S3Client& client, std::string local, s3::S3Url to) -> asio::awaitable<void> {
        fetch::Progress sp;
        fetch::SyncBackRequest sreq{local, to};
        sreq.state_dir = state_dir;
        sreq.parallel = c.parallel;
        if (sb->count("--part-size")) sreq.part_size = static_cast<std::uint64_t>(part_mib * 1024 * 1024);
        if (sb->count("--multipart-threshold"))
            sreq.multipart_threshold = static_cast<std::uint64_t>(threshold_mib * 1024 * 1024);
        fetch::SyncBack s(client, sreq, sp);
        std::exception_ptr e;
        fetch::ScanResult last;
        try {
            co_await sync_loop(s, sync_every, once, last);
        } catch (...) {
            e = std::current_exception();
        }
        summary.files += sp.files_done;
        summary.bytes += sp.bytes_done;
        summary.skipped = last.unchanged;
        summary.skipped_bytes = last.unchanged_bytes;
        if (e) std::rethrow_exception(e);
    };

    if (*f) {
        summary.command = "fetch";
        err = run_on_io([&](asio::any_io_executor ex) -> asio::awaitable<void> {
            fetch::FetchRequest req;
            req.source = s3::S3Url::parse(src);
            req.dest = dest;
            req.state_dir = state_dir;
            for (const auto& g : includes) req.plan.includes.emplace_back(g);
            if (f->count("--part-size")) req.plan.part_size = static_cast<std::uint64_t>(part_mib * 1024 * 1024);
            if (f->count("--multipart-threshold"))
                req.plan.multipart_threshold = static_cast<std::uint64_t>(threshold_mib * 1024 * 1024);
            req.parallel = c.parallel;
            req.verify = !no_verify;
            req.in_order = in_order;
            req.reuse_from = reuse_from;
            std::optional<fetch::PeerCredentials> creds;
            if (!serve.empty() || !peer_urls.empty()) {
                if (peer_cert.empty() || peer_key.empty())
                    throw std::invalid_argument("--serve and --peer need --peer-cert and --peer-key");
                creds = fetch::PeerCredentials::load(peer_cert, peer_key);
            }
            std::shared_ptr<fetch::PeerServer> server;
            if (!serve.empty()) {
                fetch::PeerServer::Options so;
                auto where = runtime::BindAddress::parse(serve);
                if (!where) throw std::invalid_argument("--serve needs ADDR:PORT");
                so.bind = where->host;
                so.port = where->port;
                so.wait = interval(peer_wait);
                so.corrupt = std::getenv("VCK_FETCH_TEST_CORRUPT_PEER") != nullptr;
                server = fetch::PeerServer::make(ex, dest, *creds, so);
                auto port = server->start();
                std::fprintf(stderr, "vck-fetch: serving %s to peers on %s:%u\n", dest.c_str(), so.bind.c_str(), port);
                if (!serve_port_file.empty()) std::ofstream(serve_port_file) << port << "\n";
            }
            std::unique_ptr<fetch::PeerSource> peers;
            if (!peer_urls.empty()) {
                fetch::PeerSource::Options po;
                po.wait = interval(peer_wait) + std::chrono::seconds(30);
                po.verify = !no_verify;
                peers = std::make_unique<fetch::PeerSource>(ex, peer_urls, *creds, po);
                req.peers = peers.get();
            }
            s3::S3Client client(ex, s3_config(c));
            asio::co_spawn(ex, fetch::report_progress(progress, "fetched", interval(c.progress_seconds)), asio::detached);
            fetch::Fetcher fetcher(client, req, progress);
            std::exception_ptr inner;
            try {
                auto r = co_await fetcher.run();
                summary.files = r.files;
                summary.skipped = r.skipped;
                summary.skipped_bytes = r.skipped_bytes;
                summary.bytes = r.bytes;
                summary.store_bytes = r.store_bytes;
                summary.peer_bytes = r.peer_bytes;
                summary.reused = r.reused;
                summary.listing_digest = r.listing_digest;
                summary.reused_bytes = r.reused_bytes;
                if (r.reused)
                    std::fprintf(stderr, "vck-fetch: reused %llu unchanged files (%llu bytes) from %s\n",
                                 static_cast<unsigned long long>(r.reused), static_cast<unsigned long long>(r.reused_bytes),
                                 reuse_from.c_str());
                summary.errors = r.errors;
                inner = r.first_error;
            } catch (...) {
                inner = std::current_exception();
            }
            progress.finished = true;
            if (peers) {
                summary.bytes_by_peer = peers->bytes_by_peer();
                for (const auto& [url, n] : summary.bytes_by_peer)
                    std::fprintf(stderr, "vck-fetch: took %llu bytes from peer %s\n", static_cast<unsigned long long>(n), url.c_str());
            }
            if (server) {
                server->fetched();
                if (!inner && ready_port) try {
                    server->open_ready_port(ready_port);
                } catch (const std::exception& e) {  // the pod is then Ready only when it ends
                    std::fprintf(stderr, "vck-fetch: warning: cannot open the ready port %u: %s\n", ready_port, e.what());
                }
                // A complete copy keeps serving while its peers still ask (a failed one stops at
                // once: its pullers go elsewhere); then it ends, and the pod with it. Its last
                // progress line tells the listing's digest first: the controller may share the
                // copy now, not only when the summary comes after the linger.
                if (!inner) {
                    std::fprintf(stderr, "%s\n", progress.line("fetched", summary.listing_digest).c_str());
                    co_await fetch::linger_while_asked(*server, interval(serve_linger));
                }
                server->stop();
                auto n = server->counts();
                std::fprintf(stderr, "vck-fetch: served %llu files, %llu bytes to peers (%llu requests refused)\n",
                             static_cast<unsigned long long>(n.files), static_cast<unsigned long long>(n.bytes),
                             static_cast<unsigned long long>(n.refused));
            }
            if (inner) std::rethrow_exception(inner);
            if (resync) {
                if (!req.source.recursive())
                    throw std::invalid_argument("--resync needs a prefix source (ending in /), not a single object");
                summary.command = "fetch+sync-back";
                co_await sync_back(client, dest, req.source);
            }
        });
        if (err) progress.finished = true;
        return finish(summary, c, progress, err);
    }

    summary.command = "sync-back";
    err = run_on_io([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto to = s3::S3Url::parse(dest_url);
        s3::S3Client client(ex, s3_config(c));
        co_await sync_back(client, dir, to);
    });
    return finish(summary, c, progress, err);
}
