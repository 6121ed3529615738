// Specification of the public test kit an operator's own tests use (sandbox/test_environment.hpp
// and sandbox/eventually.hpp): an API server with the operator's CRDs, reached by a real client.
#include <vck/api/core_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/client/client.hpp>
#include <vck/sandbox/eventually.hpp>
#include <vck/sandbox/test_environment.hpp>

#include <doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace {

std::filesystem::path repository_root() {
    const char* r = std::getenv("VCK_SOURCE_ROOT");
    REQUIRE_MESSAGE(r, "VCK_SOURCE_ROOT must be set (meson test sets it)");
    return r;
}

} // namespace

TEST_CASE("a test environment serves the CRDs it was given, and a client reaches their objects") {
    vck::sandbox::TestEnvironment::Options o;
    o.manifests = {repository_root() / "crds/volumemanager.yaml"};
    vck::sandbox::TestEnvironment env(o);
    env.apply(boost::json::parse(R"({"apiVersion": "vck.intelai.org/v1alpha1", "kind": "VolumeManager",
        "metadata": {"name": "vm1", "namespace": "default"}, "spec": {"volumeConfigs": [{"id": "data", "sourceType": "NFS", "accessMode": "ReadOnlyMany",
        "labels": {"team": "a"}, "options": {"server": "10.0.0.1", "path": "/exports/data"}}]}})"));

    boost::asio::io_context io;
    vck::client::Client c(io.get_executor(), env.config());
    auto got = boost::asio::co_spawn(io, c.get<vck::api::VolumeManager>("default", "vm1"), boost::asio::use_future);
    io.run();
    CHECK(got.get().metadata.name == "vm1");
}

TEST_CASE("in process, a client gets the same answers as over HTTPS without a socket: reads, refusals, watches, logs") {
    vck::sandbox::TestEnvironment::Options o;
    o.manifests = {repository_root() / "crds/volumemanager.yaml"};
    vck::sandbox::TestEnvironment env(o);
    auto handshakes = env.server().tls_handshakes();
    const vck::api::ResourceType& cms = vck::api::ConfigMap::resource;

    boost::asio::io_context io;
    vck::client::Client c(io.get_executor(), env.in_process_config());
    auto run = [&](auto op) {
        auto f = boost::asio::co_spawn(io, std::move(op), boost::asio::use_future);
        io.restart();
        io.run();
        return f.get();
    };
    // A watch opened first sees the create below, as a stream read piece by piece.
    auto watch = run(c.watch(cms, "default", vck::client::WatchOptions().timeout(5)));
    auto made = run(c.create(cms, "default", boost::json::parse(R"({"metadata": {"name": "one"}, "data": {"k": "v"}})")));
    CHECK(vck::api::string_at(made, {"metadata", "uid"}).size() > 0);  // stored and defaulted by the server
    auto event = run(watch.next());
    REQUIRE(event);
    CHECK(event->type == vck::client::WatchEventType::Added);
    CHECK(vck::api::string_at(event->object, {"metadata", "name"}) == "one");
    watch.cancel();

    // Refusals as over HTTPS: the server's Status becomes the same ApiError kinds.
    std::string refused;
    try {
        run(c.create(cms, "default", boost::json::parse(R"({"metadata": {"name": "Not_A_Name"}})")));
    } catch (const vck::client::ApiError& e) {
        CHECK(e.is(vck::client::ErrorKind::Invalid));
        refused = e.what();
    }
    CHECK(refused.find("Not_A_Name") != std::string::npos);
    CHECK_THROWS_AS(run(c.get(cms, "default", "missing")), vck::client::ApiError);

    // Without the token, nobody: 401, as over HTTPS.
    auto anonymous = env.in_process_config();
    anonymous.token.clear();
    vck::client::Client nobody(io.get_executor(), anonymous);
    bool unauthorized = false;
    try {
        run(nobody.list(cms, "default"));
    } catch (const vck::client::ApiError& e) {
        unauthorized = e.is(vck::client::ErrorKind::Unauthorized);
    }
    CHECK(unauthorized);

    CHECK(env.server().tls_handshakes() == handshakes);
    CHECK(env.server().in_process_requests() >= 5);  // the watch, two creates, the get and the list
}

TEST_CASE("a test environment refuses what the API server refuses, and a kind it does not serve names the file") {
    vck::sandbox::TestEnvironment env;
    // No CRD applied: VolumeManagers are not served.
    auto dir = std::filesystem::temp_directory_path() / "vck-test-environment";
    std::filesystem::create_directories(dir);
    auto file = dir / "vm.yaml";
    std::ofstream(file) << "apiVersion: vck.intelai.org/v1alpha1\nkind: VolumeManager\nmetadata:\n  name: vm1\n";
    std::string error;
    try {
        env.apply_file(file);
    } catch (const std::invalid_argument& e) {
        error = e.what();
    }
    CHECK(error == file.string() + ": the server does not serve kind \"VolumeManager\" of \"vck.intelai.org/v1alpha1\"");
    std::filesystem::remove_all(dir);

    // Admission as over HTTPS: a Pod without containers is invalid.
    CHECK_THROWS_AS(env.apply(boost::json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}})")),
                    vck::sandbox::StoreError);
}

TEST_CASE("eventually is true as soon as its condition holds, and false with the final state when it never does") {
    int calls = 0;
    CHECK(vck::sandbox::eventually([&] { return ++calls >= 3; }));
    CHECK(calls == 3);
    calls = 0;
    CHECK_FALSE(vck::sandbox::eventually([&] { ++calls; return false; }, std::chrono::seconds(0)));
    CHECK(calls == 1);  // asked once more after the deadline
}
