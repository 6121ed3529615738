// The progress wire format between vck-fetch and the controller (fetch/transfer_counts.hpp,
// fetch/progress.hpp): what vck-fetch prints is what the controller reads back, and a reader
// given anything else gets nothing rather than a guess.
#include <vck/fetch/progress.hpp>
#include <vck/fetch/run_summary.hpp>
#include <vck/fetch/transfer_counts.hpp>

#include <doctest.h>

#include <string>

namespace {

using vck::fetch::TransferCounts;

/// A progress line for these counters (Progress holds atomics: filled in place, not returned).
std::string line_of(std::uint64_t files_done, std::uint64_t files_total, std::uint64_t bytes_done,
                    std::uint64_t bytes_total) {
    vck::fetch::Progress p;
    p.files_done = files_done;
    p.files_total = files_total;
    p.bytes_done = bytes_done;
    p.bytes_total = bytes_total;
    return p.line("fetched");
}

} // namespace

TEST_CASE("a progress line reads for people and ends with counts the controller parses back exactly") {
    auto line = line_of(120, 2000, 34'812'312, 281'455'123);
    CHECK(line.starts_with("vck-fetch: fetched 120/2000 files, 33.2/268.4 MiB, "));
    CHECK(line.ends_with(R"({"filesDone":120,"filesTotal":2000,"bytesDone":34812312,"bytesTotal":281455123})"));
    auto c = vck::fetch::parse_progress_counts(line + "\n");
    REQUIRE(c);
    CHECK(*c == TransferCounts{120, 2000, 34'812'312, 281'455'123});
}

TEST_CASE("the line a whole fetch prints before it serves on tells its listing's digest; an unfinished one's is not read") {
    vck::fetch::Progress p;
    p.files_done = p.files_total = 3;
    p.bytes_done = p.bytes_total = 300;
    auto line = p.line("fetched", "d1");
    CHECK(line.ends_with(R"({"filesDone":3,"filesTotal":3,"bytesDone":300,"bytesTotal":300,"listingDigest":"d1"})"));
    auto c = vck::fetch::parse_progress_counts(line + "\n");
    REQUIRE(c);
    CHECK(c->listing_digest == "d1");
    CHECK(p.line("fetched").find("listingDigest") == std::string::npos);  // told only when given
    auto cut = vck::fetch::parse_progress_counts(
        R"(vck-fetch: fetched 1/3 files {"filesDone":1,"filesTotal":3,"bytesDone":100,"bytesTotal":300,"listingDigest":"d1"})"
        "\n");
    REQUIRE(cut);
    CHECK(cut->listing_digest.empty());
}

TEST_CASE("files an earlier attempt left unchanged count as done and in the totals of a progress line") {
    vck::fetch::Progress p;
    p.files_done = 1;
    p.files_total = 3;
    p.bytes_done = 100;
    p.bytes_total = 300;
    p.files_unchanged = 2;
    p.bytes_unchanged = 50;
    CHECK(p.counts() == TransferCounts{3, 5, 150, 350});
    CHECK(p.line("fetched").starts_with("vck-fetch: fetched 1/3 files"));  // people see this run's work
}

TEST_CASE("the last complete progress line of a log tail wins; a cut or unfinished line is skipped") {
    std::string first = line_of(1, 10, 100, 1000);
    std::string second = line_of(4, 10, 400, 1000);
    auto c = vck::fetch::parse_progress_counts(first + "\n" + second + "\n" + second.substr(0, 60));
    REQUIRE(c);
    CHECK(c->files_done == 4);
    // The first line of a byte-limited tail may start mid-line: it is not taken.
    CHECK_FALSE(vck::fetch::parse_progress_counts(second.substr(5) + "\n"));
    // Other vck-fetch lines after the last progress line do not hide it.
    c = vck::fetch::parse_progress_counts(second + "\nvck-fetch: skipping unsafe key ../x\n");
    REQUIRE(c);
    CHECK(c->bytes_done == 400);
    // A log read ending right after a complete line, without its newline, still counts.
    CHECK(vck::fetch::parse_progress_counts(second));
}

TEST_CASE("a progress line tells the landed prefix in key order once it is known, and it parses back") {
    vck::fetch::Progress p;
    p.files_done = 3;
    p.files_total = 10;
    p.bytes_done = 300;
    p.bytes_total = 1000;
    p.files_unchanged = 1;
    p.bytes_unchanged = 50;
    CHECK(p.line("fetched").find("prefix") == std::string::npos);  // not listed yet: no prefix told
    p.prefix_files = 2;
    p.prefix_bytes = 150;
    p.prefix_known = true;
    auto line = p.line("fetched");
    CHECK(line.ends_with(R"({"filesDone":4,"filesTotal":11,"bytesDone":350,"bytesTotal":1050,"prefixFiles":2,"prefixBytes":150})"));
    auto c = vck::fetch::parse_progress_counts(line + "\n");
    REQUIRE(c);
    CHECK(*c == TransferCounts{4, 11, 350, 1050, 2, 150});
}

TEST_CASE("a line without prefix fields (an older vck-fetch) still parses, its prefix unknown") {
    auto c = vck::fetch::parse_progress_counts(
        R"(vck-fetch: x {"filesDone":1,"filesTotal":2,"bytesDone":5,"bytesTotal":9})" "\n");
    REQUIRE(c);
    CHECK(*c == TransferCounts{1, 2, 5, 9});
    CHECK_FALSE(c->prefix_files);
    // A prefix beyond what is done, or half of one, is not trusted; the counts still are.
    c = vck::fetch::parse_progress_counts(
        R"(vck-fetch: x {"filesDone":1,"filesTotal":2,"bytesDone":5,"bytesTotal":9,"prefixFiles":2,"prefixBytes":5})" "\n");
    REQUIRE(c);
    CHECK_FALSE(c->prefix_files);
    c = vck::fetch::parse_progress_counts(
        R"(vck-fetch: x {"filesDone":1,"filesTotal":2,"bytesDone":5,"bytesTotal":9,"prefixFiles":1})" "\n");
    REQUIRE(c);
    CHECK_FALSE(c->prefix_bytes);
}

TEST_CASE("no counts are read from lines that do not carry well-formed ones") {
    CHECK_FALSE(vck::fetch::parse_progress_counts(""));
    CHECK_FALSE(vck::fetch::parse_progress_counts("pachctl: got file\n"));
    CHECK_FALSE(vck::fetch::parse_progress_counts("vck-fetch: fetched 1/2 files\n"));
    CHECK_FALSE(vck::fetch::parse_progress_counts(R"(vck-fetch: x {"filesDone":1,"filesTotal":2,"bytesDone":5})" "\n"));
    CHECK_FALSE(vck::fetch::parse_progress_counts(
        R"(vck-fetch: x {"filesDone":3,"filesTotal":2,"bytesDone":5,"bytesTotal":9})" "\n"));  // done > total
    CHECK_FALSE(vck::fetch::parse_progress_counts(
        R"(vck-fetch: x {"filesDone":-1,"filesTotal":2,"bytesDone":5,"bytesTotal":9})" "\n"));
    CHECK_FALSE(vck::fetch::parse_progress_counts(
        R"(someone else: x {"filesDone":1,"filesTotal":2,"bytesDone":5,"bytesTotal":9})" "\n"));
}

TEST_CASE("a successful fetch's summary gives the dataset's exact totals, unchanged files included") {
    vck::fetch::RunSummary s;
    s.command = "fetch";
    s.files = 3;
    s.skipped = 2;
    s.bytes = 3000;
    s.skipped_bytes = 1234;
    s.store_bytes = 1000;
    s.peer_bytes = 2000;
    auto c = vck::fetch::summary_counts(s.to_json_line() + "\n");
    REQUIRE(c);
    // The landed prefix is everything; where this run's bytes came from rides along.
    CHECK(*c == TransferCounts{5, 5, 4234, 4234, 5, 4234, 1000, 2000});
    CHECK(c->complete());
}

TEST_CASE("a fetch's summary lists its peer bytes by peer, peers that sent nothing left out, and they read back") {
    vck::fetch::RunSummary s;
    s.command = "fetch";
    s.files = 2;
    s.bytes = 300;
    s.store_bytes = 20;
    s.peer_bytes = 280;
    s.bytes_by_peer = {{"https://10.0.0.1:7443", 250}, {"https://[fd00::1]:7443", 30}, {"https://10.0.0.9:7443", 0}};
    auto line = s.to_json_line();
    CHECK(boost::json::parse(line).at("bytesByPeer") ==
          boost::json::parse(R"({"https://10.0.0.1:7443": 250, "https://[fd00::1]:7443": 30})"));
    auto c = vck::fetch::summary_counts(line + "\n");
    REQUIRE(c);
    using Entry = std::pair<std::string, std::uint64_t>;
    CHECK(c->bytes_by_peer == std::vector<Entry>{{"https://10.0.0.1:7443", 250}, {"https://[fd00::1]:7443", 30}});

    // However many peers a run was given, the line names at most 16 (it stays under 4096 bytes).
    for (int i = 0; i < 40; ++i) s.bytes_by_peer["https://10.0.1." + std::to_string(i) + ":7443"] = 1;
    line = s.to_json_line();
    CHECK(line.size() <= 4096);
    CHECK(boost::json::parse(line).at("bytesByPeer").as_object().size() == vck::fetch::RunSummary::max_peers_listed);

    // Without peers (or in an older summary) there is no such field, and nothing is read back.
    s.bytes_by_peer.clear();
    CHECK_FALSE(boost::json::parse(s.to_json_line()).as_object().contains("bytesByPeer"));
    CHECK(vck::fetch::summary_counts(s.to_json_line())->bytes_by_peer.empty());
}

TEST_CASE("a failed run, another command or a non-summary gives no final counts") {
    vck::fetch::RunSummary s;
    s.command = "fetch";
    s.files = 1;
    s.exit_code = 4;
    s.error = "NoSuchBucket";
    CHECK_FALSE(vck::fetch::summary_counts(s.to_json_line()));
    s.exit_code = 0;
    s.error.clear();
    s.command = "sync-back";
    CHECK_FALSE(vck::fetch::summary_counts(s.to_json_line()));
    CHECK_FALSE(vck::fetch::summary_counts("Error: something broke"));
    CHECK_FALSE(vck::fetch::summary_counts(""));
}
