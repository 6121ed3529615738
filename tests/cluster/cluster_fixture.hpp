// What the cluster tests share: a Sandbox to drive, waiting for the simulated components to
// converge (with a generous ceiling, never a timed assertion), and short object builders.
#pragma once

#include <vck/sandbox/eventually.hpp>
#include <vck/sandbox/sandbox.hpp>

#include <doctest.h>

#include <boost/json.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace cluster_test {

namespace json = boost::json;
using vck::sandbox::ResourceId;

inline const ResourceId pods{"", "v1", "pods"};
inline const ResourceId nodes{"", "v1", "nodes"};
inline const ResourceId events{"", "v1", "events"};
inline const ResourceId secrets{"", "v1", "secrets"};
inline const ResourceId pvs{"", "v1", "persistentvolumes"};
inline const ResourceId pvcs{"", "v1", "persistentvolumeclaims"};
inline const ResourceId classes{"storage.k8s.io", "v1", "storageclasses"};

/// Polls `done` until it holds; false after 30 s (a hung component, not a slow machine).
/// (An object not there yet counts as not done.)
inline bool eventually(const std::function<bool()>& done) {
    return vck::sandbox::eventually([&] {
        try {
            return done();
        } catch (const vck::sandbox::StoreError&) {
            return false;
        }
    }, std::chrono::seconds(30));
}

/// The value at a dotted path ("status.phase"; "[0]" indexes arrays), or null.
inline json::value at(const json::value& v, const std::string& path) {
    try {
        std::string p = "/";
        for (char c : path) p += c == '.' ? '/' : c;
        std::string ptr;
        for (std::size_t i = 0; i < p.size(); ++i) {
            if (p[i] == '[') ptr += '/';
            else if (p[i] != ']') ptr += p[i];
        }
        boost::system::error_code ec;
        if (const auto* r = v.find_pointer(ptr, ec)) return *r;
    } catch (...) {
    }
    return nullptr;
}

inline std::string str(const json::value& v, const std::string& path) {
    auto x = at(v, path);
    return x.is_string() ? std::string(x.get_string()) : std::string();
}

inline json::value pod(const std::string& name, const std::string& image = "busybox", json::object spec_extra = {}) {
    json::object spec{{"restartPolicy", "Never"},
                      {"containers", json::array{json::object{{"name", "main"}, {"image", image}}}}};
    for (auto& kv : spec_extra) spec[kv.key()] = kv.value();
    return json::object{{"apiVersion", "v1"}, {"kind", "Pod"},
                        {"metadata", json::object{{"name", name}, {"namespace", "default"}}}, {"spec", std::move(spec)}};
}

inline json::value get_pod(vck::sandbox::Sandbox& sb, const std::string& name) {
    return sb.store().get(pods, "default", name);
}

inline bool pod_exists(vck::sandbox::Sandbox& sb, const std::string& name) {
    try {
        get_pod(sb, name);
        return true;
    } catch (const vck::sandbox::StoreError& e) {
        if (e.code() != 404) throw;
        return false;
    }
}

inline std::string phase(vck::sandbox::Sandbox& sb, const std::string& name) {
    return str(get_pod(sb, name), "status.phase");
}

inline std::string node_of(vck::sandbox::Sandbox& sb, const std::string& name) {
    return str(get_pod(sb, name), "spec.nodeName");
}

/// The events about pod `name` with `reason`, oldest first.
inline std::vector<json::value> events_for(vck::sandbox::Sandbox& sb, const std::string& name, const std::string& reason) {
    vck::sandbox::StoreListOptions o;
    o.field_selector = "involvedObject.name=" + name + ",reason=" + reason;
    std::vector<json::value> out;
    auto list = sb.store().list(events, "default", o);
    for (const auto& e : list.at("items").as_array()) out.push_back(e);
    return out;
}

inline vck::sandbox::Sandbox::Options quiet_options(int nodes = 3) {
    vck::sandbox::Sandbox::Options o;
    o.nodes = nodes;
    o.serve = false;
    o.max_grace_period = std::chrono::seconds(2);
    o.restart_backoff = std::chrono::milliseconds(50);
    return o;
}

} // namespace cluster_test
