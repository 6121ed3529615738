// The local side of vck-fetch: confined delete, prepare, the state directory beside the data,
// atomic files, the journal, the fetch plan, the run summary and exit codes.
#include <vck/fetch/atomic_file.hpp>
#include <vck/fetch/confined_delete.hpp>
#include <vck/fetch/exit_code.hpp>
#include <vck/fetch/fetch_plan.hpp>
#include <vck/fetch/landed_prefix.hpp>
#include <vck/fetch/peer_file.hpp>
#include <vck/fetch/fetcher.hpp>
#include <vck/fetch/journal.hpp>
#include <vck/fetch/prepare_dir.hpp>
#include <vck/fetch/range_digest.hpp>
#include <vck/fetch/run_summary.hpp>
#include <vck/fetch/state_dir.hpp>
#include <vck/s3/listing_digest.hpp>

#include <boost/json.hpp>

#include <doctest.h>

#include <algorithm>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace vck::fetch;
using vck::s3::ObjectInfo;

namespace {

/// A fresh directory under the system temp dir, removed afterwards.
struct TempDir {
    fs::path path;
    TempDir() {
        std::string t = (fs::temp_directory_path() / "vck-s3-test-XXXXXX").string();
        REQUIRE(::mkdtemp(t.data()));
        path = fs::canonical(t);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

void write(const fs::path& p, std::string_view text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
}

std::string read(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

struct stat stat_of(const fs::path& p) {
    struct stat st {};
    REQUIRE(::lstat(p.c_str(), &st) == 0);
    return st;
}

/// This process's umask for the scope (process-wide; no other test runs meanwhile).
struct Umask {
    mode_t old;
    explicit Umask(mode_t m) : old(::umask(m)) {}
    ~Umask() { ::umask(old); }
};

/// The names under `dir`, hidden ones included, relative and sorted.
std::vector<std::string> entries(const fs::path& dir) {
    std::vector<std::string> out;
    for (auto& e : fs::recursive_directory_iterator(dir)) out.push_back(e.path().lexically_relative(dir).string());
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace

TEST_CASE("delete removes a directory inside an allowed root") {
    TempDir t;
    write(t.path / "root/vck-resource-1/a/b.txt", "x");
    CHECK(confined_remove(t.path / "root/vck-resource-1", {t.path / "root"}) == DeleteOutcome::Removed);
    CHECK_FALSE(fs::exists(t.path / "root/vck-resource-1"));
    CHECK(fs::exists(t.path / "root"));
}

TEST_CASE("delete of something already gone inside a root succeeds as absent") {
    TempDir t;
    fs::create_directories(t.path / "root");
    CHECK(confined_remove(t.path / "root/gone", {t.path / "root"}) == DeleteOutcome::AlreadyAbsent);
}

TEST_CASE("delete refuses the filesystem root, the allowed root itself and paths outside the roots") {
    TempDir t;
    fs::create_directories(t.path / "root");
    write(t.path / "other/keep.txt", "x");
    CHECK_THROWS_WITH_AS(confined_remove("/", {t.path / "root"}), doctest::Contains("filesystem root"), DeleteRefused);
    CHECK_THROWS_WITH_AS(confined_remove("/", {"/"}), doctest::Contains("filesystem root"), DeleteRefused);
    CHECK_THROWS_WITH_AS(confined_remove(t.path / "root", {t.path / "root"}), doctest::Contains("allowed root itself"),
                         DeleteRefused);
    CHECK_THROWS_WITH_AS(confined_remove(t.path / "other", {t.path / "root"}),
                         doctest::Contains("not inside any allowed root"), DeleteRefused);
    CHECK_THROWS_WITH_AS(confined_remove(t.path / "rootx", {t.path / "root"}),
                         doctest::Contains("not inside any allowed root"), DeleteRefused);
    CHECK(fs::exists(t.path / "other/keep.txt"));
}

TEST_CASE("delete refuses paths with .. segments even when they would resolve inside") {
    TempDir t;
    fs::create_directories(t.path / "root/a");
    write(t.path / "other/keep.txt", "x");
    CHECK_THROWS_WITH_AS(confined_remove(t.path / "root/../other", {t.path / "root"}), doctest::Contains("\"..\""),
                         DeleteRefused);
    CHECK_THROWS_WITH_AS(confined_remove(t.path / "root/a/..", {t.path / "root"}), doctest::Contains("\"..\""),
                         DeleteRefused);
    CHECK(fs::exists(t.path / "other/keep.txt"));
}

TEST_CASE("delete refuses a symlink, and a directory reached through a symlink out of the root") {
    TempDir t;
    fs::create_directories(t.path / "root");
    write(t.path / "outside/data/keep.txt", "x");
    fs::create_directory_symlink(t.path / "outside", t.path / "root/link");
    CHECK_THROWS_WITH_AS(confined_remove(t.path / "root/link", {t.path / "root"}), doctest::Contains("symbolic link"),
                         DeleteRefused);
    CHECK_THROWS_WITH_AS(confined_remove(t.path / "root/link/data", {t.path / "root"}),
                         doctest::Contains("not inside any allowed root"), DeleteRefused);
    CHECK(fs::exists(t.path / "outside/data/keep.txt"));
}

TEST_CASE("delete refuses relative paths and an empty root list") {
    TempDir t;
    CHECK_THROWS_WITH_AS(confined_remove("rel/dir", {t.path}), doctest::Contains("must be absolute"), DeleteRefused);
    CHECK_THROWS_WITH_AS(confined_remove(t.path / "x", {}), doctest::Contains("no --allowed-root"), DeleteRefused);
}

TEST_CASE("delete also refuses a state directory that is a symlink, after removing DIR") {
    TempDir t;
    fs::create_directories(t.path / "root/vck-resource-1");
    fs::create_directories(t.path / "outside");
    fs::create_directory_symlink(t.path / "outside", t.path / "root/vck-resource-1.vck-fetch");
    CHECK(confined_remove(t.path / "root/vck-resource-1", {t.path / "root"}) == DeleteOutcome::Removed);
    CHECK_THROWS_AS(confined_remove(StateDir(t.path / "root/vck-resource-1").dir(), {t.path / "root"}), DeleteRefused);
    CHECK(fs::exists(t.path / "outside"));
}

TEST_CASE("prepare creates the directory owned by --owner, mode 0755, its missing parents root's, and is idempotent") {
    TempDir t;
    fs::create_directories(t.path / "root");
    bool root = ::geteuid() == 0;
    if (!root) MESSAGE("not root: prepare chowns to this test's own user and group; the chown to 65532 needs root");
    Owner owner = root ? Owner{65532, 65532} : Owner{::geteuid(), ::getegid()};
    PrepareResult r;
    {
        Umask strict(077);  // the modes are prepare's, whatever the umask
        r = prepare_directory(t.path / "root/sets/vck-resource-1", owner, {t.path / "root"});
    }
    CHECK(r.created == 2);
    auto dir = stat_of(t.path / "root/sets/vck-resource-1");
    CHECK((dir.st_mode & 07777) == 0755);
    CHECK(dir.st_uid == owner.uid);
    CHECK(dir.st_gid == owner.gid);
    auto parent = stat_of(t.path / "root/sets");
    CHECK((parent.st_mode & 07777) == 0755);
    CHECK(parent.st_uid == ::geteuid());

    // Again, with a file inside: nothing created, and the file keeps its owner.
    write(t.path / "root/sets/vck-resource-1/f", "x");
    CHECK(prepare_directory(t.path / "root/sets/vck-resource-1", owner, {t.path / "root"}).created == 0);
    CHECK(stat_of(t.path / "root/sets/vck-resource-1/f").st_uid == ::geteuid());
    CHECK(stat_of(t.path / "root/sets/vck-resource-1").st_uid == owner.uid);
}

TEST_CASE("prepare refuses paths outside the root, the root itself, a symlink at DIR and one leading out, creating nothing") {
    TempDir t;
    fs::create_directories(t.path / "root/inside");
    fs::create_directories(t.path / "outside");
    fs::create_directory_symlink(t.path / "outside", t.path / "root/escape");
    fs::create_directory_symlink(t.path / "root/inside", t.path / "root/link");
    Owner me{::geteuid(), ::getegid()};
    std::vector<fs::path> roots{t.path / "root"};
    CHECK_THROWS_WITH_AS(prepare_directory(t.path / "outside/new", me, roots),
                         doctest::Contains("not inside any allowed root"), PathRefused);
    CHECK_THROWS_WITH_AS(prepare_directory(t.path / "root/escape/new", me, roots),
                         doctest::Contains(("resolves to " + (t.path / "outside/new").string()).c_str()), PathRefused);
    CHECK_THROWS_WITH_AS(prepare_directory(t.path / "root", me, roots), doctest::Contains("allowed root itself"),
                         PathRefused);
    CHECK_THROWS_WITH_AS(prepare_directory(t.path / "root/link", me, roots), doctest::Contains("symbolic link"),
                         PathRefused);
    CHECK_THROWS_WITH_AS(prepare_directory(t.path / "root/inside/../../outside", me, roots),
                         doctest::Contains("\"..\""), PathRefused);
    CHECK_THROWS_WITH_AS(prepare_directory("rel/dir", me, {}), doctest::Contains("must be absolute"), PathRefused);
    CHECK_THROWS_WITH_AS(prepare_directory("/", me, {}), doctest::Contains("filesystem root"), PathRefused);
    CHECK(fs::is_empty(t.path / "outside"));
    // A link that stays inside the root is followed: DIR is created where it leads.
    CHECK(prepare_directory(t.path / "root/link/new", me, roots).created == 1);
    CHECK(fs::is_directory(t.path / "root/inside/new"));
    CHECK(exit_code_for(std::make_exception_ptr(PathRefused("x"))) == ExitCode::Refused);
}

TEST_CASE("--owner is UID:GID, two numbers") {
    CHECK(Owner::parse("65532:65532").uid == 65532);
    CHECK(Owner::parse("0:7").gid == 7);
    for (const char* bad : {"65532", "nobody:nogroup", "1:", ":1", "1:2:3", "-1:0", "4294967295:0", "1 :2"}) {
        CAPTURE(bad);
        CHECK_THROWS_WITH_AS(Owner::parse(bad), doctest::Contains("expected UID:GID"), std::invalid_argument);
    }
}

TEST_CASE("the state directory is the destination's sibling, never inside it, and ensure() leaves the destination empty") {
    TempDir t;
    CHECK(StateDir(t.path / "data").dir() == t.path / "data.vck-fetch");
    CHECK(StateDir(t.path / "data/").dir() == t.path / "data.vck-fetch");
    CHECK(StateDir(t.path / "data", t.path / "state").dir() == t.path / "state");
    CHECK_THROWS_AS(StateDir(t.path / "data", t.path / "data/.state"), std::invalid_argument);
    CHECK_THROWS_AS(StateDir(t.path / "data", t.path / "data"), std::invalid_argument);
    CHECK_THROWS_AS(StateDir(t.path / "data", t.path), std::invalid_argument);

    StateDir s(t.path / "data");
    s.ensure();
    CHECK(fs::is_directory(t.path / "data"));
    CHECK(fs::is_empty(t.path / "data"));
    CHECK(fs::is_directory(s.staging()));
    write(s.staging() / "part-1", "partial");
    s.clear_staging();
    CHECK(fs::is_empty(s.staging()));
}

TEST_CASE("an old DEST/.vck-fetch is retired: its journal moves beside DEST, the rest is removed") {
    TempDir t;
    write(t.path / "data/a.txt", "abc");
    write(t.path / "data/.vck-fetch/tmp/part-9", "partial");
    {
        Journal old(t.path / "data/.vck-fetch/journal");
        old.record("a.txt", t.path / "data/a.txt", "etag-a");
    }
    StateDir s(t.path / "data");
    s.ensure();
    CHECK(entries(t.path / "data") == std::vector<std::string>{"a.txt"});
    Journal j(s.journal());
    CHECK(j.unchanged("a.txt", t.path / "data/a.txt", 3, "etag-a"));
}

TEST_CASE("an atomic file is invisible under its final name until commit") {
    TempDir t;
    fs::create_directories(t.path / "tmp");
    auto final_path = t.path / "d/e/f.bin";
    {
        AtomicFile f(final_path, t.path / "tmp");
        f.write_at(5, "world", 5);
        f.write_at(0, "hello", 5);
        CHECK_FALSE(fs::exists(final_path));
        CHECK(fs::exists(f.temp_path()));
        f.commit();
    }
    CHECK(read(final_path) == "helloworld");
    CHECK(fs::is_empty(t.path / "tmp"));
}

TEST_CASE("an atomic file abandoned before commit leaves nothing behind") {
    TempDir t;
    fs::create_directories(t.path / "tmp");
    write(t.path / "f.bin", "old");
    {
        AtomicFile f(t.path / "f.bin", t.path / "tmp");
        f.write_at(0, "new-partial", 11);
    }
    CHECK(read(t.path / "f.bin") == "old");
    CHECK(fs::is_empty(t.path / "tmp"));
}

TEST_CASE("an atomic file in a missing staging directory fails with a LocalError naming it") {
    TempDir t;
    CHECK_THROWS_WITH_AS(AtomicFile(t.path / "f", t.path / "nope"), doctest::Contains("cannot create temporary file"),
                         LocalError);
}

TEST_CASE("the journal remembers files across instances and notices local changes") {
    TempDir t;
    write(t.path / "a.txt", "abc");
    {
        Journal j(t.path / "journal");
        j.record("a.txt", t.path / "a.txt", "etag-1");
    }
    Journal j(t.path / "journal");
    CHECK(j.unchanged("a.txt", t.path / "a.txt", 3, "etag-1"));
    CHECK_FALSE(j.unchanged("a.txt", t.path / "a.txt", 3, "etag-2"));  // object changed
    CHECK_FALSE(j.unchanged("b.txt", t.path / "b.txt", 3, "etag-1"));
    write(t.path / "a.txt", "abcd");  // file changed locally
    CHECK_FALSE(j.unchanged("a.txt", t.path / "a.txt", 3, "etag-1"));
    CHECK_FALSE(j.unchanged_on_disk("a.txt", t.path / "a.txt"));
}

TEST_CASE("a torn last journal line is ignored and compaction keeps the latest entry") {
    TempDir t;
    write(t.path / "a", "1");
    {
        Journal j(t.path / "journal");
        j.record("a", t.path / "a", "e1");
        j.record("a", t.path / "a", "e2");
    }
    std::ofstream(t.path / "journal", std::ios::app) << "{\"p\":\"b\",\"s\":";
    Journal j(t.path / "journal");
    CHECK(j.size() == 1);
    CHECK(j.find("a")->etag == "e2");
    j.compact();
    auto text = read(t.path / "journal");
    CHECK(std::count(text.begin(), text.end(), '\n') == 1);
}

TEST_CASE("the plan strips the prefix, applies globs, skips directory markers and unchanged files") {
    TempDir t;
    write(t.path / "same.bin", "12345");
    Journal j(t.path / "journal");
    j.record("same.bin", t.path / "same.bin", "e-same");
    std::vector<ObjectInfo> objs{{"set/same.bin", 5, "e-same", ""}, {"set/new.bin", 3, "e-new", ""},
                                 {"set/sub/", 0, "d", ""},           {"set/sub/x.txt", 2, "e-x", ""},
                                 {"set/sub/y.jpg", 0, "e-y", ""}};
    PlanOptions opt;
    opt.prefix = "set/";
    opt.includes = {vck::s3::Glob("*.bin"), vck::s3::Glob("*.jpg")};
    auto plan = make_plan(objs, opt, t.path, j);
    CHECK(plan.skipped_unchanged == 1);
    CHECK(plan.bytes_unchanged == 5);  // the skipped file's bytes still count toward the dataset's total
    CHECK(plan.filtered_out == 1);
    REQUIRE(plan.downloads.size() == 2);
    CHECK(plan.downloads[0].relative == "new.bin");
    CHECK(plan.downloads[1].relative == "sub/y.jpg");
    CHECK(plan.downloads[1].ranges.empty());
    CHECK(plan.bytes_to_fetch == 3);
}

TEST_CASE("the plan is in key order whatever the listing's order, and orders unchanged files with the rest") {
    TempDir t;
    write(t.path / "b.bin", "12345");
    Journal j(t.path / "journal");
    j.record("b.bin", t.path / "b.bin", "e-b");
    std::vector<ObjectInfo> objs{{"p/c.bin", 3, "e-c", ""}, {"p/a.bin", 1, "e-a", ""}, {"p/b.bin", 5, "e-b", ""},
                                 {"p/a/z.bin", 2, "e-z", ""}};
    PlanOptions opt;
    opt.prefix = "p/";
    auto plan = make_plan(objs, opt, t.path, j);
    // Byte order: "a.bin" < "a/z.bin" ('.' is 0x2e, '/' 0x2f) < "b.bin" < "c.bin".
    REQUIRE(plan.downloads.size() == 3);
    CHECK(plan.downloads[0].relative == "a.bin");
    CHECK(plan.downloads[1].relative == "a/z.bin");
    CHECK(plan.downloads[2].relative == "c.bin");
    CHECK(plan.ordered_sizes == std::vector<std::uint64_t>{1, 2, 5, 3});
    CHECK(plan.ordered_landed == std::vector<bool>{false, false, true, false});
    CHECK(plan.downloads[2].position == 3);
}

TEST_CASE("the landed prefix grows only by whole files in key order, and stops at a file not landed") {
    vck::fetch::LandedPrefix prefix({10, 20, 30, 40, 50}, {false, false, true, false, false});
    using C = vck::fetch::LandedPrefix::Counts;
    CHECK(prefix.counts() == C{0, 0});  // an unchanged file in the middle is no prefix yet
    prefix.land(1);
    CHECK(prefix.counts() == C{0, 0});  // file 0 is still missing
    prefix.land(0);
    CHECK(prefix.counts() == C{3, 60});  // 0, 1 and the unchanged 2 at once
    prefix.land(4);
    CHECK(prefix.counts() == C{3, 60});  // 3 missing: 4 does not count yet
    prefix.land(3);
    CHECK(prefix.counts() == C{5, 150});
    prefix.land(7);  // out of range: ignored
    CHECK(prefix.counts() == C{5, 150});
}

TEST_CASE("a dataset whose first files are unchanged starts with them as its prefix") {
    vck::fetch::LandedPrefix prefix({1, 2, 3}, {true, true, false});
    CHECK(prefix.counts() == vck::fetch::LandedPrefix::Counts{2, 3});
}

TEST_CASE("the plan rejects keys that would escape the destination") {
    TempDir t;
    Journal j(t.path / "journal");
    std::vector<ObjectInfo> objs{{"p/../../etc/passwd", 1, "e", ""}, {"p//x", 1, "e", ""}, {"p/./y", 1, "e", ""},
                                 {"p/ok", 1, "e", ""}};
    PlanOptions opt;
    opt.prefix = "p/";
    auto plan = make_plan(objs, opt, t.path, j);
    REQUIRE(plan.downloads.size() == 1);
    CHECK(plan.downloads[0].relative == "ok");
    REQUIRE(plan.rejected.size() == 3);
    CHECK(plan.rejected[0].find("\"..\"") != std::string::npos);
}

TEST_CASE("a single named object lands under its base name") {
    TempDir t;
    Journal j(t.path / "journal");
    auto plan = make_plan({{"deep/dir/model.pt", 10, "e", ""}}, PlanOptions{}, t.path, j, true);
    REQUIRE(plan.downloads.size() == 1);
    CHECK(plan.downloads[0].relative == "model.pt");
}

TEST_CASE("large objects are split into inclusive ranges covering every byte once") {
    CHECK(split_ranges(0, 8, 16).empty());
    CHECK(split_ranges(10, 8, 16) == std::vector<std::pair<std::uint64_t, std::uint64_t>>{{0, 9}});
    auto r = split_ranges(20, 8, 16);
    CHECK(r == std::vector<std::pair<std::uint64_t, std::uint64_t>>{{0, 7}, {8, 15}, {16, 19}});
}

TEST_CASE("only 32-hex-digit ETags are taken as the content's MD5") {
    CHECK(is_md5_etag("9e107d9d372bb6826bd81d3542a419d6"));
    CHECK_FALSE(is_md5_etag("9e107d9d372bb6826bd81d3542a419d6-3"));
    CHECK_FALSE(is_md5_etag("XYZ07d9d372bb6826bd81d3542a419d6"));
}

TEST_CASE("a RangeDigest hashes ranges in file order whatever order they are written in") {
    TempDir t;
    std::string text = "The quick brown fox jumps over the lazy dog";  // 43 bytes
    write(t.path / "f", text);
    RangeDigest d(t.path / "f", {{0, 9}, {10, 19}, {20, 29}, {30, 42}});
    d.range_written(2);
    CHECK(d.hashed() == 0);  // range 0 is not on disk yet: nothing can be hashed
    d.range_written(1);
    CHECK(d.hashed() == 0);
    d.range_written(0);
    CHECK(d.hashed() == 3);  // 0, 1 and 2 are contiguous now
    CHECK(d.finish() == "9e107d9d372bb6826bd81d3542a419d6");
    CHECK(d.finish() == "9e107d9d372bb6826bd81d3542a419d6");  // asking twice gives the same answer
}

TEST_CASE("a RangeDigest that cannot read its file back says so from finish()") {
    TempDir t;
    RangeDigest missing(t.path / "gone", {{0, 9}, {10, 19}});
    missing.range_written(0);  // the failure is kept, not thrown on the hashing thread
    CHECK_THROWS_WITH_AS(missing.finish(), doctest::Contains("cannot read back"), LocalError);

    write(t.path / "short", "12345");
    RangeDigest truncated(t.path / "short", {{0, 9}, {10, 19}});
    CHECK_THROWS_WITH_AS(truncated.finish(), doctest::Contains("shorter than the bytes written"), LocalError);
}

TEST_CASE("the run summary is one JSON line with the counters and the error's first line") {
    RunSummary s;
    s.command = "fetch";
    s.files = 3;
    s.bytes = 1024;
    s.seconds = 1.5;
    s.errors = 1;
    s.exit_code = 4;
    s.error = "bucket \"x\" does not exist\nmore detail";
    auto line = s.to_json_line();
    CHECK(line.find('\n') == std::string::npos);
    auto v = boost::json::parse(line).as_object();
    CHECK(boost::json::value_to<std::uint64_t>(v.at("files")) == 3);
    CHECK(boost::json::value_to<std::uint64_t>(v.at("bytes")) == 1024);
    CHECK(boost::json::value_to<std::uint64_t>(v.at("errors")) == 1);
    CHECK(v.at("exitCode").as_int64() == 4);
    CHECK(v.at("error").as_string() == "bucket \"x\" does not exist");
    // A fetch says where its bytes came from (peer fill); other commands have no such split.
    s.store_bytes = 24;
    s.peer_bytes = 1000;
    auto split = boost::json::parse(s.to_json_line());
    CHECK(split.at("bytesFromStore") == 24);
    CHECK(split.at("bytesFromPeers") == 1000);
    s.command = "delete";
    CHECK_FALSE(boost::json::parse(s.to_json_line()).as_object().contains("bytesFromPeers"));
}

TEST_CASE("a huge error is shortened so the summary fits the kubelet's 4096 bytes") {
    RunSummary s;
    s.command = "fetch";
    s.error = std::string(10000, '"');
    auto line = s.to_json_line();
    CHECK(line.size() <= 4096);
    CHECK(boost::json::parse(line).as_object().at("error").as_string().ends_with("..."));
}

TEST_CASE("the summary is written to the termination log path") {
    TempDir t;
    RunSummary s;
    s.command = "delete";
    CHECK(s.write_to((t.path / "termination-log").string()));
    CHECK(read(t.path / "termination-log").find("\"command\":\"delete\"") != std::string::npos);
    CHECK_FALSE(s.write_to((t.path / "no/such/dir/log").string()));
}

TEST_CASE("each class of failure has its own exit code") {
    using vck::s3::S3Error;
    using vck::s3::S3ErrorKind;
    auto code = [](auto ex) { return exit_code_for(std::make_exception_ptr(ex)); };
    CHECK(code(S3Error(S3ErrorKind::BadCredentials, "")) == ExitCode::Authentication);
    CHECK(code(S3Error(S3ErrorKind::AccessDenied, "")) == ExitCode::Authentication);
    CHECK(code(S3Error(S3ErrorKind::NoSuchBucket, "")) == ExitCode::NotFound);
    CHECK(code(S3Error(S3ErrorKind::NoSuchKey, "")) == ExitCode::NotFound);
    CHECK(code(S3Error(S3ErrorKind::Network, "")) == ExitCode::Network);
    CHECK(code(LocalError("disk full")) == ExitCode::LocalDisk);
    CHECK(code(DeleteRefused("no")) == ExitCode::Refused);
    CHECK(code(std::invalid_argument("bad glob")) == ExitCode::BadArguments);
    CHECK(code(std::runtime_error("other")) == ExitCode::Failed);
}

// ---- fetch/peer_file.hpp: what a peer may be served ----

TEST_CASE("open_peer_file opens a file of the copy, read only, with its size") {
    TempDir t;
    write(t.path / "dest/sub/a.bin", "hello");
    auto f = open_peer_file(t.path / "dest", "sub/a.bin");
    REQUIRE(f.fd >= 0);
    CHECK(f.size == 5);
    char buf[8] = {};
    CHECK(::pread(f.fd, buf, sizeof buf, 0) == 5);
    CHECK(std::string(buf) == "hello");
    CHECK(::write(f.fd, "x", 1) < 0);  // opened for reading only
    ::close(f.fd);
}

TEST_CASE("open_peer_file refuses every path out of the copy, and says a missing file may come") {
    TempDir t;
    write(t.path / "dest/sub/a.bin", "hello");
    write(t.path / "outside.txt", "secret");
    write(t.path / "dest.vck-fetch/journal", "state");
    fs::create_symlink(t.path / "outside.txt", t.path / "dest/link");
    fs::create_directory_symlink(t.path, t.path / "dest/up");
    fs::create_hard_link(t.path / "outside.txt", t.path / "dest/hard");
    fs::create_directory(t.path / "dest/dir");
    for (const char* bad : {"../outside.txt", "sub/../../outside.txt", "/etc/passwd", "./sub/a.bin", "sub//a.bin", "",
                            "link", "up/outside.txt", "hard", "dir", "../dest.vck-fetch/journal"}) {
        CAPTURE(std::string(bad));
        auto f = open_peer_file(t.path / "dest", bad);
        CHECK(f.fd < 0);
        CHECK_FALSE(f.missing);
        CHECK_FALSE(f.refused.empty());
    }
    auto later = open_peer_file(t.path / "dest", "sub/b.bin");
    CHECK(later.fd < 0);
    CHECK(later.missing);
    auto no_dir_yet = open_peer_file(t.path / "not-yet", "a.bin");
    CHECK(no_dir_yet.fd < 0);
    CHECK(no_dir_yet.missing);
}

TEST_CASE("a listing's digest changes with any path, size or ETag, and not with the listing's order or what fetch skips") {
    using vck::s3::ObjectInfo;
    std::vector<ObjectInfo> a{{"p/x.bin", 10, "e1", ""}, {"p/d/y.bin", 20, "e2", ""}};
    auto d = vck::s3::listing_digest(a, "p/");
    CHECK(d.size() == 32);
    auto b = a;
    std::reverse(b.begin(), b.end());
    b.push_back({"p/", 0, "marker", ""});       // the prefix itself
    b.push_back({"p/dir/", 0, "marker", ""});   // a directory marker
    b.push_back({"q/other.bin", 5, "e9", ""});  // outside the prefix
    CHECK(vck::s3::listing_digest(b, "p/") == d);
    auto c = a;
    c[0].etag = "e3";
    CHECK(vck::s3::listing_digest(c, "p/") != d);
    c = a;
    c[1].size = 21;
    CHECK(vck::s3::listing_digest(c, "p/") != d);
    c = a;
    c.push_back({"p/z.bin", 0, "e4", ""});
    CHECK(vck::s3::listing_digest(c, "p/") != d);
    // Another prefix holding the same objects under the same paths: the same data.
    std::vector<ObjectInfo> moved{{"other/x.bin", 10, "e1", ""}, {"other/d/y.bin", 20, "e2", ""}};
    CHECK(vck::s3::listing_digest(moved, "other/") == d);
}
