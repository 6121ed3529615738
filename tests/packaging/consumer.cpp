// A program as a user of vck writes it, built by tests/packaging/packaging_test.sh three ways:
// by an outside meson project (dependency('vck') through pkg-config), by a plain
// `g++ $(pkg-config --cflags --libs vck)`, and by a parent project that has vck as a subproject.
// It touches what the core package must carry: the API types and their JSON (Boost.JSON), a
// quantity, a compressed store (zstd) and a work queue (Asio, threads); no network.
// Prints "consumer: ok vck VERSION" and exits 0, or names what went wrong and exits 1.
#include <vck/api/core_v1.hpp>
#include <vck/api/json_decoder.hpp>
#include <vck/api/quantity.hpp>
#include <vck/runtime/store.hpp>
#include <vck/runtime/work_queue.hpp>
#include <vck/version.hpp>

#include <boost/asio/io_context.hpp>

#include <cstdio>
#include <memory>
#include <string>

namespace {

int fail(const char* what) {
    std::fprintf(stderr, "consumer: %s\n", what);
    return 1;
}

} // namespace

int main() {
    auto gi = vck::api::quantity_value("1Gi");
    if (!gi || *gi != 1073741824.0) return fail("1Gi is not 2^30");

    auto cm = vck::api::decode_json<vck::api::ConfigMap>(
        R"({"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7"}, "data": {"k": "v"}})");
    vck::runtime::StoreOptions compressed;
    compressed.compressed = true;
    compressed.recent_whole = 0;  // compress at once
    vck::runtime::Store<vck::api::ConfigMap> store(compressed);
    store.apply(vck::runtime::ChangeType::Added, std::make_shared<const vck::api::ConfigMap>(cm));
    auto back = store.get(vck::runtime::ObjectKey{"ns", "a"});
    if (!back || back->data.size() != 1 || back->metadata.resourceVersion != "7")
        return fail("the store does not give back the ConfigMap it was given");

    boost::asio::io_context ioc;
    vck::runtime::WorkQueue<std::string> queue(ioc.get_executor());
    queue.add("ns/a");
    queue.add("ns/a");
    if (queue.len() != 1) return fail("the work queue does not deduplicate");
    queue.shut_down();

    std::printf("consumer: ok vck %s\n", std::string(vck::version).c_str());
    return 0;
}
