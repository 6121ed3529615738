// EventEmitter: how the simulated cluster components (scheduler, kubelet, PV binder) write
// core/v1 Events about objects, shaped like the real components' (involvedObject, source
// {component, host}, reportingComponent, first/lastTimestamp, count). An event equal to one
// this emitter wrote before (same object, field path, type, reason, message and source) is not
// written again: the earlier one's count grows and its lastTimestamp moves, as client-go's event
// correlator does (its cache too forgets the oldest of 4096; an aggregated event deleted
// meanwhile is written anew). Guarantee: writing an event never throws (a refused event, e.g.
// in a terminating namespace, is dropped as the real recorders drop it); emit() may be called
// from any thread.
#pragma once

#include <vck/api/time.hpp>
#include <vck/sandbox/cluster/simulated_node.hpp>
#include <vck/sandbox/storage/object_store.hpp>

#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <string>

namespace vck::sandbox {

class EventEmitter {
public:
    EventEmitter(ObjectStore& store, std::string component, std::string host = {})
        : store_(store), component_(std::move(component)), host_(std::move(host)) {}

    /// Records an event about `obj` (a stored object). `field_path` names a part of it
    /// ("spec.containers{main}"); `host` overrides the emitter's host (the kubelet's node).
    void emit(const boost::json::value& obj, const std::string& type, const std::string& reason,
              const std::string& message, const std::string& field_path = {}, const std::string& host = {}) noexcept {
        namespace json = boost::json;
        try {
            const auto& o = obj.as_object();
            const auto& md = o.at("metadata").as_object();
            auto s = [](const json::object& from, const char* key) -> std::string {
                const auto* v = from.if_contains(key);
                return v && v->is_string() ? std::string(v->get_string()) : std::string();
            };
            auto ns = s(md, "namespace");
            auto name = s(md, "name");
            json::object involved{{"kind", s(o, "kind")}, {"apiVersion", s(o, "apiVersion")}, {"name", name},
                                  {"uid", s(md, "uid")}, {"resourceVersion", s(md, "resourceVersion")}};
            if (!ns.empty()) involved["namespace"] = ns;
            if (!field_path.empty()) involved["fieldPath"] = field_path;
            auto now = api::format_rfc3339(std::chrono::system_clock::now());
            const auto& h = host.empty() ? host_ : host;
            json::object source{{"component", component_}};
            if (!h.empty()) source["host"] = h;
            // Events about cluster-scoped objects live in "default", as the real recorders put them.
            std::string event_ns = ns.empty() ? "default" : ns;
            auto key = event_ns + '\n' + s(involved, "uid") + '\n' + field_path + '\n' + type + '\n' + reason + '\n' +
                       message + '\n' + h;
            std::lock_guard lock(mu_);
            if (auto seen = seen_.find(key); seen != seen_.end()) {
                try {
                    store_.patch({"", "v1", "events"}, event_ns, seen->second.name, client::PatchType::Merge,
                                 json::object{{"count", seen->second.count + 1}, {"lastTimestamp", now}});
                    ++seen->second.count;
                    return;
                } catch (const std::exception&) {
                    // Gone (or refused): written anew below.
                }
            }
            char suffix[32];
            std::snprintf(suffix, sizeof suffix, ".%016llx", static_cast<unsigned long long>(next_id()));
            json::object ev{{"metadata", json::object{{"name", name + suffix}, {"namespace", event_ns}}},
                            {"involvedObject", std::move(involved)},
                            {"reason", reason},
                            {"message", message},
                            {"type", type},
                            {"source", std::move(source)},
                            {"firstTimestamp", now},
                            {"lastTimestamp", now},
                            {"count", 1},
                            {"reportingComponent", component_},
                            {"reportingInstance", h.empty() ? component_ : component_ + "-" + h}};
            auto name_of = ev["metadata"].as_object()["name"].as_string();
            store_.create({"", "v1", "events"}, event_ns, std::move(ev));
            remember(key, std::string(name_of));
        } catch (const std::exception&) {
            // Dropped, as client-go's recorder drops events it cannot write.
        }
    }

private:
    struct Written {
        std::string name;
        std::int64_t count = 1;
    };
    static constexpr std::size_t cache_size = 4096;  // client-go's maxLruCacheEntries

    void remember(const std::string& key, std::string name) {
        if (seen_.insert_or_assign(key, Written{std::move(name), 1}).second) order_.push_back(key);
        while (order_.size() > cache_size) {
            seen_.erase(order_.front());
            order_.pop_front();
        }
    }

    static std::uint64_t next_id() {
        static std::atomic<std::uint64_t> id{
            static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) * 1000};
        return ++id;
    }

    ObjectStore& store_;
    std::string component_;
    std::string host_;
    std::mutex mu_;
    std::map<std::string, Written> seen_;  // event key -> the event written for it
    std::deque<std::string> order_;        // keys, oldest first
};

} // namespace vck::sandbox
