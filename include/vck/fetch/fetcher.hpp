// Fetcher: copies an S3 object or prefix into a local directory — objects in parallel, large
// objects in parallel byte ranges, each file staged in its StateDir's tmp/ (outside DEST, on
// DEST's mount) and renamed into place only when complete and (for single-part ETags) MD5-verified, then journaled so a
// re-run skips it. A broken stream resumes from the last byte written, with backoff.
// Guarantees: no partial file ever appears under its final name; a fatal error (credentials,
// bucket, network after retries) stops all workers and is reported once; per-object failures
// (an object deleted since the listing) are counted and the rest still lands.
// Runs its workers as coroutines on the caller's executor, which must be single-threaded
// (one io_context thread). File writes stay on that thread (a pwrite into the page cache is
// short); the MD5 of a file fetched in ranges is computed by one hashing thread of its own
// (RangeDigest), range by range as they land, so it neither stalls the network nor waits for
// the whole file. A small file fetched in one piece is hashed as it streams in.
// Order: with `in_order`, work starts in key order (a file's ranges together), so files land
// roughly in that order and the landed prefix (fetch/landed_prefix.hpp, reported with the
// progress counts) grows steadily; without it, ranges of big files start first (long poles).
// Either way the progress counts tell the prefix.
// Peers: with FetchRequest::peers, each file is first asked of the volume's peer copies
// (peer_source.hpp) and taken from the store only when no peer gives bytes that check out.
// Reuse: with FetchRequest::reuse_from, files an older version on the same disk holds
// unchanged are copied from it before any download (local_reuse.hpp).
#pragma once

#include <vck/fetch/atomic_file.hpp>
#include <vck/fetch/fetch_plan.hpp>
#include <vck/fetch/journal.hpp>
#include <vck/fetch/landed_prefix.hpp>
#include <vck/fetch/local_reuse.hpp>
#include <vck/fetch/peer_source.hpp>
#include <vck/fetch/progress.hpp>
#include <vck/fetch/range_digest.hpp>
#include <vck/fetch/state_dir.hpp>
#include <vck/api/digest.hpp>
#include <vck/s3/listing_digest.hpp>
#include <vck/s3/s3_client.hpp>
#include <vck/s3/s3_url.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace vck::fetch {

namespace asio = boost::asio;

struct FetchRequest {
    s3::S3Url source;
    std::filesystem::path dest;
    std::filesystem::path state_dir;  // empty: <dest>.vck-fetch (see StateDir)
    PlanOptions plan;  // prefix is filled in from source
    int parallel = 16;
    bool verify = true;
    std::size_t buffer_size = 1u << 20;
    bool in_order = false;  // start work in key order (for a first batch), not long poles first
    /// Peer copies to take files from before the store (peer_source.hpp); null: the store only.
    /// With peers, every file is one task (a peer sends it whole, and a file is never written
    /// from two sources at once).
    PeerSource* peers = nullptr;
    /// An older version of the dataset on the same disk whose unchanged files are copied rather
    /// than downloaded (local_reuse.hpp); empty: none.
    std::filesystem::path reuse_from;
};

struct FetchResult {
    std::uint64_t files = 0, skipped = 0, bytes = 0, errors = 0;
    std::uint64_t skipped_bytes = 0;  // the unchanged files' bytes
    std::uint64_t store_bytes = 0, peer_bytes = 0;  // where `bytes` came from
    std::uint64_t reused = 0, reused_bytes = 0;  // of the skipped: copied from reuse_from
    std::string listing_digest;  // of the listing the copy was made from (s3/listing_digest.hpp)
    std::exception_ptr first_error;  // the fatal error, or the first per-object one
};

class Fetcher {
public:
    Fetcher(s3::S3Client& client, FetchRequest req, Progress& progress)
        : client_(client), req_(std::move(req)), progress_(progress) {
        req_.plan.prefix = req_.source.recursive() ? req_.source.key : "";
        if (req_.parallel < 1) req_.parallel = 1;
        if (req_.peers && !req_.peers->empty()) req_.plan.multipart_threshold = UINT64_MAX;
    }

    /// Runs the whole transfer. Throws only for errors before any download starts
    /// (listing, destination); later failures are in FetchResult.
    asio::awaitable<FetchResult> run() {
        StateDir state(req_.dest, req_.state_dir);
        state.ensure();
        state.clear_staging();
        staging_ = state.staging();
        journal_ = std::make_unique<Journal>(state.journal());

        std::vector<s3::ObjectInfo> objects;
        const auto& src = req_.source;
        if (src.recursive()) {
            objects = co_await client_.list_all(src.bucket, src.key);
            if (objects.empty())
                throw s3::S3Error(s3::S3ErrorKind::NoSuchKey,
                                  "there are no objects under " + src.str() + " at " + client_.endpoint_url() +
                                      "; check the prefix (keys are case-sensitive)",
                                  "NoSuchKey", 404);
        } else {
            objects.push_back(co_await client_.head_object(src.bucket, src.key));
        }
        auto plan = make_plan(objects, req_.plan, req_.dest, *journal_, !src.recursive());
        // Before any download: the copies of an older version are then planned as unchanged
        // files (the landed prefix and the progress counts include them from the start).
        ReuseCounts reused;
        if (!req_.reuse_from.empty() && !plan.downloads.empty()) {
            reused = reuse_local(plan, req_.dest, staging_, *journal_, req_.reuse_from);
            if (reused.files) plan = make_plan(objects, req_.plan, req_.dest, *journal_, !src.recursive());
        }
        journal_->compact();

        FetchResult result;
        result.listing_digest = s3::listing_digest(objects, req_.plan.prefix, !src.recursive());
        result.reused = reused.files;
        result.reused_bytes = reused.bytes;
        result.skipped = plan.skipped_unchanged;
        result.skipped_bytes = plan.bytes_unchanged;
        for (const auto& r : plan.rejected) {
            ++result.errors;
            std::fprintf(stderr, "vck-fetch: skipping unsafe key %s\n", r.c_str());
            if (!result.first_error)
                result.first_error = std::make_exception_ptr(std::invalid_argument(
                    "object key would land outside the destination, skipped: " + r));
        }
        progress_.files_total = plan.downloads.size();
        progress_.bytes_total = plan.bytes_to_fetch;
        progress_.files_unchanged = plan.skipped_unchanged;
        progress_.bytes_unchanged = plan.bytes_unchanged;
        prefix_ = std::make_unique<LandedPrefix>(std::move(plan.ordered_sizes), std::move(plan.ordered_landed));
        publish_prefix();
        progress_.prefix_known = true;
        progress_.listed = true;

        files_.reserve(plan.downloads.size());
        for (auto& f : plan.downloads) {
            auto st = std::make_unique<FileState>();
            st->remaining = std::max<std::size_t>(1, f.ranges.size());  // an empty file is one task
            st->plan = std::move(f);
            files_.push_back(std::move(st));
        }
        if (req_.in_order) {
            for (std::size_t i = 0; i < files_.size(); ++i)
                for (std::size_t r = 0; r < std::max<std::size_t>(1, files_[i]->plan.ranges.size()); ++r)
                    tasks_.push_back({i, r});
        } else {
            // Long poles first: ranges of big files start before the many small files.
            for (std::size_t i = 0; i < files_.size(); ++i)
                if (files_[i]->plan.ranges.size() > 1)
                    for (std::size_t r = 0; r < files_[i]->plan.ranges.size(); ++r) tasks_.push_back({i, r});
            for (std::size_t i = 0; i < files_.size(); ++i)
                if (files_[i]->plan.ranges.size() <= 1) tasks_.push_back({i, 0});
        }

        auto ex = co_await asio::this_coro::executor;
        auto workers = std::make_shared<std::atomic<int>>(req_.parallel);
        asio::steady_timer all_done(ex, asio::steady_timer::time_point::max());
        for (int w = 0; w < req_.parallel; ++w)
            asio::co_spawn(ex, worker(), [&, workers](std::exception_ptr e) {
                if (e) record_failure(e, true);
                if (--*workers == 0) all_done.cancel();
            });
        boost::system::error_code wait_ec;
        co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, wait_ec));

        std::lock_guard lk(mu_);
        result.files = files_done_;
        result.bytes = bytes_done_;
        result.peer_bytes = peer_bytes_;
        result.store_bytes = bytes_done_ - peer_bytes_;
        result.errors += errors_;
        if (fatal_) result.first_error = fatal_;
        else if (!result.first_error) result.first_error = first_error_;
        co_return result;
    }

private:
    struct FileState {
        PlannedFile plan;
        std::mutex open_mu;
        std::unique_ptr<AtomicFile> out;
        std::optional<RangeDigest> digest;  // used on hasher_'s thread only, after creation
        std::atomic<std::size_t> remaining{0};
        std::atomic<bool> failed{false};
    };
    struct Task {
        std::size_t file;
        std::size_t range;
    };

    void record_failure(std::exception_ptr e, bool fatal) {
        std::lock_guard lk(mu_);
        ++errors_;
        progress_.errors++;
        if (fatal && !fatal_) fatal_ = e;
        if (!first_error_) first_error_ = e;
        if (fatal) stop_ = true;
    }

    static bool per_object(const std::exception_ptr& e) {
        try {
            std::rethrow_exception(e);
        } catch (const s3::S3Error& x) {
            return x.kind() == s3::S3ErrorKind::NoSuchKey || x.kind() == s3::S3ErrorKind::InvalidRange;
        } catch (...) {
            return false;
        }
    }

    asio::awaitable<void> worker() {
        std::vector<char> buf(req_.buffer_size);
        for (;;) {
            if (stop_) co_return;
            std::size_t i = next_task_++;
            if (i >= tasks_.size()) co_return;
            auto& fs = *files_[tasks_[i].file];
            if (fs.failed) continue;
            std::exception_ptr err;
            try {
                co_await run_task(fs, tasks_[i].range, buf);
            } catch (...) {
                err = std::current_exception();
            }
            if (err) {
                if (!fs.failed.exchange(true)) record_failure(err, !per_object(err));
                std::lock_guard lk(fs.open_mu);
                fs.out.reset();  // removes the temporary file
            }
        }
    }

    AtomicFile& open_file(FileState& fs) {
        std::lock_guard lk(fs.open_mu);
        if (!fs.out) {
            fs.out = std::make_unique<AtomicFile>(req_.dest / fs.plan.relative, staging_);
            if (req_.verify && is_md5_etag(fs.plan.etag) && fs.plan.ranges.size() > 1)
                fs.digest.emplace(fs.out->temp_path(), fs.plan.ranges);
        }
        return *fs.out;
    }

    asio::awaitable<void> run_task(FileState& fs, std::size_t range_index, std::vector<char>& buf) {
        const auto& p = fs.plan;
        auto& out = open_file(fs);
        bool whole = p.ranges.size() == 1;
        bool verify_inline = whole && req_.verify && is_md5_etag(p.etag);
        std::optional<api::Digest> md5;
        if (verify_inline) md5.emplace(api::Digest::md5());
        bool from_peer = false;
        if (req_.peers && whole) {
            // A peer's bytes are checked against this listing (size, MD5 ETag) by PeerSource;
            // on any failure the store's bytes are written over them from offset 0.
            from_peer = co_await req_.peers->fetch(p.relative, p.size, p.etag, out, buf);
            if (from_peer) {
                md5.reset();
                add_bytes(p.size);
                std::lock_guard lk(mu_);
                peer_bytes_ += p.size;
            }
        }
        if (!from_peer && !p.ranges.empty()) {
            auto [first, last] = p.ranges[range_index];
            std::uint64_t cur = first;
            const int max_attempts = client_.config().max_attempts;
            for (int attempt = 0;; ++attempt) {
                std::optional<s3::S3Error> failure;
                try {
                    std::optional<s3::ByteRange> range;
                    if (!whole || cur > first) range = s3::ByteRange{cur, last};
                    auto os = co_await client_.open_object(req_.source.bucket, p.key, range);
                    for (;;) {
                        if (stop_) co_return;
                        std::size_t n = 0;
                        try {
                            n = co_await os.body.read_some(buf.data(), buf.size());
                        } catch (const client::ApiError& e) {
                            throw client_.network_error(e, req_.source.bucket, p.key);
                        }
                        if (n == 0) break;
                        if (cur + n > last + 1)
                            throw s3::S3Error(s3::S3ErrorKind::InvalidResponse,
                                              "the server sent more bytes of s3://" + req_.source.bucket + "/" + p.key +
                                                  " than the listing said it has; did the object change during the transfer?");
                        out.write_at(cur, buf.data(), n);
                        if (md5) md5->update(buf.data(), n);
                        cur += n;
                        add_bytes(n);
                    }
                    if (cur != last + 1)
                        throw s3::S3Error(s3::S3ErrorKind::Network,
                                          "the connection to " + client_.endpoint_url() + " ended early while reading s3://" +
                                              req_.source.bucket + "/" + p.key);
                    break;
                } catch (const s3::S3Error& e) {
                    failure.emplace(e);
                }
                if (!failure->retryable() || attempt + 1 >= max_attempts) throw *failure;
                co_await client_.sleep(client_.backoff(attempt));
            }
        }
        if (--fs.remaining > 0) {
            if (fs.digest) asio::post(hasher_, [&fs, range_index] { fs.digest->range_written(range_index); });
            co_return;
        }
        // Last range of this file: verify (whichever digest was kept), rename into place, journal.
        std::optional<std::string> got;
        if (md5) got = md5->hex();
        else if (fs.digest)
            got = co_await asio::co_spawn(
                hasher_, [&fs]() -> asio::awaitable<std::string> { co_return fs.digest->finish(); }, asio::use_awaitable);
        if (got && *got != p.etag)
            throw s3::S3Error(s3::S3ErrorKind::InvalidResponse,
                              "downloaded s3://" + req_.source.bucket + "/" + p.key + " does not match its ETag (MD5 " +
                                  *got + ", expected " + p.etag + "); the object may have changed, run again");
        out.commit();
        journal_->record(p.relative, out.final_path(), p.etag);
        {
            std::lock_guard lk(fs.open_mu);
            fs.out.reset();
        }
        prefix_->land(p.position);
        publish_prefix();
        std::lock_guard lk(mu_);
        ++files_done_;
        progress_.files_done++;
    }

    void publish_prefix() {
        auto c = prefix_->counts();
        progress_.prefix_files = c.files;
        progress_.prefix_bytes = c.bytes;
    }

    void add_bytes(std::size_t n) {
        progress_.bytes_done += n;
        std::lock_guard lk(mu_);
        bytes_done_ += n;
    }

    s3::S3Client& client_;
    FetchRequest req_;
    Progress& progress_;
    std::filesystem::path staging_;
    std::unique_ptr<Journal> journal_;
    std::unique_ptr<LandedPrefix> prefix_;
    std::vector<std::unique_ptr<FileState>> files_;
    std::vector<Task> tasks_;
    std::atomic<std::size_t> next_task_{0};
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    std::uint64_t files_done_ = 0, bytes_done_ = 0, errors_ = 0, peer_bytes_ = 0;
    std::exception_ptr fatal_, first_error_;
    // Last member: destroyed (joined) first, so no hashing job outlives the files_ it reads.
    asio::thread_pool hasher_{1};
};

} // namespace vck::fetch
