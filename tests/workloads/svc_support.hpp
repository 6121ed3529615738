// What the StatefulSet and Service specifications share: an ObjectStore, JSON from text, the
// resources they write, a pod made Running (Ready or not) by writing its status as a kubelet
// would, the Status of a refused write (the test fails when it is not refused), and the events
// recorded about an object.
#pragma once

#include <vck/testing/object_store.hpp>

#include <doctest.h>

#include <boost/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace vck::testing::svc_test {

namespace json = boost::json;

inline const ResourceId pods{"", "v1", "pods"};
inline const ResourceId pvcs{"", "v1", "persistentvolumeclaims"};
inline const ResourceId services{"", "v1", "services"};
inline const ResourceId endpoints{"", "v1", "endpoints"};
inline const ResourceId slices{"discovery.k8s.io", "v1", "endpointslices"};
inline const ResourceId statefulsets{"apps", "v1", "statefulsets"};
inline const ResourceId events{"", "v1", "events"};

inline json::value parse(std::string_view text) { return json::parse(text); }

inline std::string text_of(const json::value& v) { return std::string(v.as_string()); }

/// Whether ns/name of `id` exists.
inline bool exists(ObjectStore& store, const ResourceId& id, std::string_view ns, std::string_view name) {
    try {
        store.get(id, ns, name);
        return true;
    } catch (const StoreError& e) {
        if (e.status().code == 404) return false;
        throw;
    }
}

/// Writes the status a kubelet writes for a running pod with `ip` (Ready as `ready` says).
inline void run_pod(ObjectStore& store, std::string_view ns, std::string_view name, std::string_view ip, bool ready = true) {
    auto pod = store.get(pods, ns, name);
    const char* r = ready ? "True" : "False";
    pod.as_object()["status"] = json::object{
        {"phase", "Running"},
        {"podIP", ip},
        {"podIPs", json::array{json::object{{"ip", ip}}}},
        {"conditions", json::array{json::object{{"type", "Ready"}, {"status", r}}, json::object{{"type", "ContainersReady"}, {"status", r}}}}};
    store.update(pods, ns, name, std::move(pod), "status");
}

/// The Status a write is refused with; the test fails if `f` does not throw StoreError.
template <class F>
vck::api::Status refused(F&& f) {
    try {
        f();
    } catch (const StoreError& e) {
        return e.status();
    }
    FAIL("expected the store to refuse");
    return {};
}

/// The messages of the events about the object named `name`, in creation order.
inline std::vector<std::string> event_messages(ObjectStore& store, std::string_view ns, std::string_view name) {
    std::vector<std::string> out;
    auto list = store.list(events, ns);
    for (const auto& e : list.at("items").as_array())
        if (e.at("involvedObject").at("name") == json::value(json::string(name))) out.push_back(text_of(e.at("message")));
    return out;
}

} // namespace vck::testing::svc_test
