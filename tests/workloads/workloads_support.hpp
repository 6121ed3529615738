// What the workload specifications share (tests/workloads/: the sandbox's apps/v1 controllers,
// Services and their endpoints over an ObjectStore, no socket): the resources, objects from
// text, pods made Running and Ready the way the kubelet reports it, the controllers' passes run
// until nothing changes, the events about an object, and the Status of a refused write (a test
// fails when the write is not refused).
#pragma once

#include <vck/sandbox/cluster/deployment_controller.hpp>
#include <vck/sandbox/storage/object_store.hpp>
#include <vck/sandbox/cluster/replicaset_controller.hpp>

#include <doctest.h>

#include <boost/json.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox::workloads_test {

namespace json = boost::json;

inline const ResourceId pods{"", "v1", "pods"};
inline const ResourceId events{"", "v1", "events"};
inline const ResourceId replicasets{"apps", "v1", "replicasets"};
inline const ResourceId deployments{"apps", "v1", "deployments"};
inline const ResourceId statefulsets{"apps", "v1", "statefulsets"};
inline const ResourceId pvcs{"", "v1", "persistentvolumeclaims"};
inline const ResourceId services{"", "v1", "services"};
inline const ResourceId endpoints{"", "v1", "endpoints"};
inline const ResourceId slices{"discovery.k8s.io", "v1", "endpointslices"};

inline json::value parse(std::string_view text) { return json::parse(text); }

/// A string at a path of keys ("" when absent).
inline std::string text_at(const json::value& v, std::initializer_list<std::string_view> path) {
    const json::value* cur = &v;
    for (auto k : path) {
        const auto* o = cur->if_object();
        cur = o ? o->if_contains(k) : nullptr;
        if (!cur) return {};
    }
    return cur->is_string() ? std::string(cur->get_string()) : std::string();
}
/// An integer at a path of keys (0 when absent, as Go's omitempty counts read).
inline std::int64_t int_at(const json::value& v, std::initializer_list<std::string_view> path) {
    const json::value* cur = &v;
    for (auto k : path) {
        const auto* o = cur->if_object();
        cur = o ? o->if_contains(k) : nullptr;
        if (!cur) return 0;
    }
    return cur->is_int64() ? cur->get_int64() : 0;
}

/// The spec.template of an app labelled app=<app>, one container of `image`.
inline std::string template_of(std::string_view app, std::string_view image = "busybox:1") {
    return R"({"metadata": {"labels": {"app": ")" + std::string(app) +
           R"("}}, "spec": {"containers": [{"name": "c", "image": ")" + std::string(image) + R"("}]}})";
}

/// A ReplicaSet or Deployment body named `name` selecting app=<name>.
inline json::value workload(std::string_view name, std::int64_t replicas, std::string_view image = "busybox:1",
                            std::string_view extra_spec = "") {
    std::string text = R"({"metadata": {"name": ")" + std::string(name) + R"("}, "spec": {"replicas": )" +
                       std::to_string(replicas) + R"(, "selector": {"matchLabels": {"app": ")" + std::string(name) +
                       R"("}}, "template": )" + template_of(name, image) +
                       (extra_spec.empty() ? "" : ", " + std::string(extra_spec)) + "}}";
    return parse(text);
}

/// The pods of namespace default whose controller has uid `owner_uid` ("" for every pod).
inline std::vector<json::value> pods_in(ObjectStore& store, const std::string& owner_uid = {}) {
    std::vector<json::value> out;
    auto list = store.list(pods, "default");
    for (const auto& p : list.at("items").as_array())
        if (owner_uid.empty() || controller_ref::controller_uid(p) == owner_uid) out.push_back(p);
    return out;
}

inline bool pod_ready(const json::value& pod) { return workload_pods::ready_since(pod).has_value(); }

/// Marks the pod Running and Ready (since `ago` before now), as the kubelet reports it.
inline void make_ready(ObjectStore& store, const json::value& pod, std::chrono::seconds ago = std::chrono::seconds(0)) {
    auto since = vck::api::format_rfc3339(std::chrono::system_clock::now() - ago);
    json::value patch = json::object{
        {"status", json::object{{"phase", "Running"},
                                {"conditions", json::array{json::object{{"type", "Ready"}, {"status", "True"},
                                                                        {"lastTransitionTime", since}}}}}}};
    store.patch(pods, "default", text_at(pod, {"metadata", "name"}), client::PatchType::Merge, patch, "status");
}

/// Every pod of the namespace Ready.
inline void make_all_ready(ObjectStore& store) {
    for (const auto& p : pods_in(store))
        if (!pod_ready(p) && text_at(p, {"metadata", "deletionTimestamp"}).empty()) make_ready(store, p);
}

/// Runs the given passes until a round of them writes nothing (at most 50 rounds).
inline void settle(ObjectStore& store, const std::vector<std::function<void()>>& passes) {
    for (int round = 0; round < 50; ++round) {
        auto before = store.resource_version();
        for (const auto& p : passes) p();
        if (store.resource_version() == before) return;
    }
    FAIL("the controllers did not settle in 50 rounds");
}

/// The messages of the events with `reason` about the object named `name`, oldest first.
inline std::vector<std::string> event_messages(ObjectStore& store, std::string_view name, std::string_view reason) {
    std::vector<std::string> out;
    auto list = store.list(events, "default");
    for (const auto& e : list.at("items").as_array())
        if (text_at(e, {"involvedObject", "name"}) == name && text_at(e, {"reason"}) == reason)
            out.push_back(text_at(e, {"message"}));
    return out;
}

/// The messages of every event about the object `ns`/`name`, in creation order.
inline std::vector<std::string> event_messages_about(ObjectStore& store, std::string_view ns, std::string_view name) {
    std::vector<std::string> out;
    auto list = store.list(events, ns);
    for (const auto& e : list.at("items").as_array())
        if (text_at(e, {"involvedObject", "name"}) == name) out.push_back(text_at(e, {"message"}));
    return out;
}

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
vck::api::Status refusal(F&& f) {
    try {
        f();
    } catch (const StoreError& e) {
        return e.status();
    }
    FAIL("expected the store to refuse");
    return {};
}

} // namespace vck::sandbox::workloads_test
