// The informer's per-event work without any I/O: watch-stream bytes already in memory go
// through WatchDecoder (stream parse, event envelope), a typed decode (from_json<ConfigMap>,
// managedFields dropped as the VCK controller's transform does) and Store::apply, stage by
// stage, and through TypedWatchDecoder (what typed informers use: no DOM) and Store::apply,
// next to a raw boost::json::parse of each event. It bounds what bench/informer's
// network figures can reach: the ratio here is the best the pipeline gets with free I/O.
// Usage: pipeline_bench [EVENTS=20000] [managed-fields=1]
#include <vck/api/core_v1.hpp>
#include <vck/client/typed_watch_decoder.hpp>
#include <vck/client/watch_decoder.hpp>
#include <vck/runtime/store.hpp>

#include <fmt/core.h>

#include <chrono>
#include <string>
#include <vector>

using namespace vck;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

json::value configmap(int i, bool managed_fields) {
    json::value o{{"apiVersion", "v1"},
                  {"kind", "ConfigMap"},
                  {"metadata",
                   {{"name", fmt::format("cm-{}", i)},
                    {"namespace", "bench"},
                    {"uid", fmt::format("5f1c2d3e-0000-4000-8000-{:012}", i)},
                    {"resourceVersion", std::to_string(1000 + i)},
                    {"creationTimestamp", "2026-11-24T01:00:00Z"}}},
                  {"data", {{"k", std::string(200, 'x')}}}};
    if (managed_fields)
        o.at("metadata").as_object()["managedFields"] = json::array{
            {{"manager", "kubectl"}, {"operation", "Update"}, {"apiVersion", "v1"}, {"time", "2026-11-24T01:00:00Z"},
             {"fieldsType", "FieldsV1"}, {"fieldsV1", {{"f:data", {{"f:k", json::object{}}}}}}}};
    return o;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

} // namespace

int main(int argc, char** argv) {
    int n = argc > 1 ? std::atoi(argv[1]) : 20000;
    bool managed = argc > 2 ? std::atoi(argv[2]) != 0 : true;
    std::string stream;
    std::vector<std::string> events;
    for (int i = 0; i < n; ++i) {
        events.push_back(json::serialize(json::value{{"type", "ADDED"}, {"object", configmap(i, managed)}}));
        stream += events.back();
        stream += '\n';
    }
    auto t = Clock::now();
    std::size_t sink = 0;
    for (const auto& e : events) sink += json::parse(e).as_object().size();
    double parse_ns = seconds_since(t) / n * 1e9;
    fmt::print("{} events of {} bytes; raw parse {:.0f} ns/event\n", n, events.front().size(), parse_ns);

    struct Mode {
        client::EventStorage storage;
        bool strip_json;  // managedFields erased from the JSON before the typed decode
    };
    for (auto [storage, strip_json] : {Mode{client::EventStorage::Default, false}, Mode{client::EventStorage::Arena, false},
                                       Mode{client::EventStorage::Arena, true}}) {
        client::WatchDecoder decoder(storage);
        runtime::Store<api::ConfigMap> store;
        double decode_s = 0, typed_s = 0, store_s = 0;
        auto t0 = Clock::now();
        constexpr std::size_t read = 64 * 1024;  // a socket read's worth
        for (std::size_t off = 0; off < stream.size(); off += read) {
            auto a = Clock::now();
            decoder.feed(std::string_view(stream).substr(off, read));
            decode_s += seconds_since(a);
            while (auto e = decoder.next()) {
                auto b = Clock::now();
                if (strip_json) e->object.at("metadata").as_object().erase("managedFields");
                auto p = std::make_shared<api::ConfigMap>(api::from_json<api::ConfigMap>(e->object));
                p->metadata.unknown.erase("managedFields");
                auto c = Clock::now();
                store.apply(runtime::ChangeType::Added, p);
                typed_s += std::chrono::duration<double>(c - b).count();
                store_s += seconds_since(c);
            }
        }
        double total_ns = seconds_since(t0) / n * 1e9;
        fmt::print("{:7} storage{}: decoder {:.0f} ns, typed decode {:.0f} ns, store {:.0f} ns; total {:.0f} ns/event; "
                   "ratio to raw parse {:.2f}\n",
                   storage == client::EventStorage::Arena ? "arena" : "default",
                   strip_json ? ", managedFields dropped before decoding" : "", decode_s / n * 1e9, typed_s / n * 1e9,
                   store_s / n * 1e9, total_ns, parse_ns / total_ns);
        sink += store.list().size();
    }
    // What typed informers do: TypedWatchDecoder parses each event straight into ConfigMaps
    // (no DOM; managedFields skipped unread), so its decoder figure includes the typed decode.
    {
        client::TypedWatchDecoder<api::ConfigMap> decoder(true);
        runtime::Store<api::ConfigMap> store;
        double decode_s = 0, store_s = 0;
        auto t0 = Clock::now();
        constexpr std::size_t read = 64 * 1024;
        for (std::size_t off = 0; off < stream.size(); off += read) {
            auto a = Clock::now();
            decoder.feed(std::string_view(stream).substr(off, read));
            decode_s += seconds_since(a);
            while (auto e = decoder.next()) {
                auto c = Clock::now();
                store.apply(runtime::ChangeType::Added, std::shared_ptr<const api::ConfigMap>(std::move(e->object)));
                store_s += seconds_since(c);
            }
        }
        double total_ns = seconds_since(t0) / n * 1e9;
        fmt::print("typed decoder (no DOM, managedFields skipped): decoder and typed decode {:.0f} ns, store {:.0f} ns; "
                   "total {:.0f} ns/event; ratio to raw parse {:.2f}\n",
                   decode_s / n * 1e9, store_s / n * 1e9, total_ns, parse_ns / total_ns);
        sink += store.list().size();
    }
    return sink == 0 ? 1 : 0;
}
