// SyncBack: the original VCK's `resync` — after a fetch, upload every file of the directory
// that is new or changed (size or mtime differs from the Journal) to the source prefix, by
// periodic scans. Files above the multipart threshold go up as multipart uploads.
// Guarantees: a file changed while it uploads is uploaded again by the next scan (the stamp is
// taken before reading); vck-fetch's own state (its StateDir, outside DIR, and an older
// version's DIR/.vck-fetch) is never uploaded; local deletions are not propagated (as
// `aws s3 sync` without --delete).
// Files upload `parallel` at a time, as coroutines on a single-threaded executor (as Fetcher).
#pragma once

#include <vck/fetch/fetcher.hpp>
#include <vck/fetch/journal.hpp>
#include <vck/fetch/progress.hpp>
#include <vck/s3/s3_client.hpp>
#include <vck/s3/s3_url.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace vck::fetch {

struct SyncBackRequest {
    std::filesystem::path dir;
    s3::S3Url dest;  // a prefix (trailing '/' added if missing)
    std::filesystem::path state_dir = {};  // empty: <dir>.vck-fetch, as the fetch that filled dir
    std::uint64_t multipart_threshold = 64u << 20;
    std::uint64_t part_size = 16u << 20;
    int parallel = 8;
};

struct ScanResult {
    std::uint64_t uploaded = 0, bytes = 0, unchanged = 0;
    std::uint64_t unchanged_bytes = 0;  // the unchanged files' sizes: bytes + this is the directory's
};

class SyncBack {
public:
    SyncBack(s3::S3Client& client, SyncBackRequest req, Progress& progress)
        : client_(client), req_(std::move(req)), progress_(progress), state_(req_.dir, req_.state_dir),
          journal_(ready(state_)) {
        if (!req_.dest.key.empty() && req_.dest.key.back() != '/') req_.dest.key += '/';
        if (req_.parallel < 1) req_.parallel = 1;
    }

    /// One pass over the directory. Throws S3Error/LocalError on the first failure.
    asio::awaitable<ScanResult> scan_once() {
        namespace fs = std::filesystem;
        ScanResult r;
        std::error_code ec;
        if (!fs::is_directory(req_.dir, ec))
            throw LocalError("cannot sync back " + req_.dir.string() + ": it is not a directory");
        std::vector<std::pair<std::string, fs::path>> changed;
        for (auto it = fs::recursive_directory_iterator(req_.dir, ec); !ec && it != fs::recursive_directory_iterator();
             it.increment(ec)) {
            if (it.depth() == 0 && it->path().filename() == StateDir::legacy(req_.dir).filename()) {
                it.disable_recursion_pending();
                continue;
            }
            if (!it->is_regular_file()) continue;
            auto rel = it->path().lexically_relative(req_.dir).generic_string();
            if (journal_.unchanged_on_disk(rel, it->path())) {
                ++r.unchanged;
                r.unchanged_bytes += it->file_size(ec);
                ec.clear();
                continue;
            }
            changed.emplace_back(rel, it->path());
        }
        if (ec) throw LocalError("cannot scan " + req_.dir.string() + ": " + ec.message());
        progress_.files_total += changed.size();
        // `parallel` uploaders pull from the list; the first failure stops them all.
        std::size_t next = 0;
        std::exception_ptr failure;
        int running = req_.parallel;
        auto ex = co_await asio::this_coro::executor;
        asio::steady_timer all_done(ex, asio::steady_timer::time_point::max());
        for (int w = 0; w < req_.parallel; ++w)
            asio::co_spawn(ex, uploader(changed, next, failure, r), [&](std::exception_ptr e) {
                if (e && !failure) failure = e;
                if (--running == 0) all_done.cancel();
            });
        boost::system::error_code ec_wait;
        co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ec_wait));
        if (failure) std::rethrow_exception(failure);
        co_return r;
    }

private:
    /// The journal's path, once the state directory exists (and a legacy one is retired).
    static std::filesystem::path ready(const StateDir& s) {
        s.ensure();
        return s.journal();
    }

    asio::awaitable<void> uploader(const std::vector<std::pair<std::string, std::filesystem::path>>& changed,
                                   std::size_t& next, const std::exception_ptr& failure, ScanResult& r) {
        while (!failure && next < changed.size()) {
            const auto& [rel, abs] = changed[next++];
            auto stamp = file_stamp(abs);
            if (!stamp) continue;  // deleted since the scan
            std::string key = req_.dest.key + rel;
            // Plain if/else: GCC 12 destroys temporaries twice for co_await inside ?:.
            std::string etag;
            if (stamp->first > req_.multipart_threshold) {
                etag = co_await upload_multipart(key, abs);
            } else {
                auto body = read_range(abs, 0, stamp->first);
                etag = co_await client_.put_object(req_.dest.bucket, key, std::move(body));
            }
            journal_.record(rel, JournalEntry{stamp->first, etag, stamp->second});
            ++r.uploaded;
            r.bytes += stamp->first;
            progress_.files_done++;
            progress_.bytes_done += stamp->first;
        }
    }

    static std::string read_range(const std::filesystem::path& p, std::uint64_t off, std::uint64_t n) {
        std::ifstream in(p, std::ios::binary);
        if (!in) throw LocalError::from_errno("read", p);
        std::string data(n, '\0');
        in.seekg(static_cast<std::streamoff>(off));
        in.read(data.data(), static_cast<std::streamsize>(n));
        data.resize(static_cast<std::size_t>(in.gcount()));
        return data;
    }

    asio::awaitable<std::string> upload_multipart(std::string key, std::filesystem::path abs) {
        auto size = std::filesystem::file_size(abs);
        auto id = co_await client_.create_multipart_upload(req_.dest.bucket, key);
        std::vector<std::pair<int, std::string>> parts;
        std::exception_ptr err;
        try {
            int n = 1;
            for (std::uint64_t off = 0; off < size; off += req_.part_size, ++n) {
                auto data = read_range(abs, off, std::min<std::uint64_t>(req_.part_size, size - off));
                parts.emplace_back(n, co_await client_.upload_part(req_.dest.bucket, key, id, n, std::move(data)));
            }
            co_return co_await client_.complete_multipart_upload(req_.dest.bucket, key, id, parts);
        } catch (...) {
            err = std::current_exception();
        }
        try {
            co_await client_.abort_multipart_upload(req_.dest.bucket, key, id);
        } catch (const s3::S3Error&) {
            // The original failure is the one to report.
        }
        std::rethrow_exception(err);
    }

    s3::S3Client& client_;
    SyncBackRequest req_;
    Progress& progress_;
    StateDir state_;
    Journal journal_;
};

} // namespace vck::fetch
