// KubernetesService: the `kubernetes` Service of namespace default that kube-apiserver keeps
// (its controlplane endpoint reconciler), pointing at the sandbox's own API server:
// ClusterIP 10.96.0.1 (the first address of the service CIDR), port 443 "https" with
// targetPort the server's port, labels component=apiserver and provider=kubernetes, and the
// Endpoints and EndpointSlice (both named kubernetes) listing 127.0.0.1:<port>. Written again
// (create or update) whenever called, so a restarted server's port replaces the old one.
#pragma once

#include <vck/sandbox/storage/object_store.hpp>

#include <boost/json.hpp>

#include <cstdint>

namespace vck::sandbox {

namespace kubernetes_service_detail {

namespace json = boost::json;

/// Creates `obj` (named in its metadata) or replaces the stored one's labels and content.
inline void put(ObjectStore& store, const ResourceId& id, json::value obj) {
    const auto name = std::string(obj.at("metadata").at("name").as_string());
    try {
        auto existing = store.get(id, "default", name);
        for (const auto& kv : obj.as_object())
            if (kv.key() != "metadata") existing.as_object()[kv.key()] = kv.value();
        existing.at("metadata").as_object()["labels"] = obj.at("metadata").at("labels");
        store.update(id, "default", name, std::move(existing));
    } catch (const StoreError& e) {
        if (e.status().code != 404) throw;
        store.create(id, "default", std::move(obj));
    }
}

} // namespace kubernetes_service_detail

inline void publish_kubernetes_service(ObjectStore& store, std::uint16_t port) {
    namespace json = boost::json;
    using kubernetes_service_detail::put;
    auto md = [](json::object labels) {
        return json::object{{"name", "kubernetes"}, {"namespace", "default"}, {"labels", std::move(labels)}};
    };
    const std::int64_t p = port;
    json::value svc = json::object{
        {"metadata", md({{"component", "apiserver"}, {"provider", "kubernetes"}})},
        {"spec", json::object{{"type", "ClusterIP"},
                              {"clusterIP", "10.96.0.1"},
                              {"ports", json::array{json::object{{"name", "https"}, {"port", 443}, {"protocol", "TCP"}, {"targetPort", p}}}}}}};
    // A service updated without clusterIP keeps its own: only a create carries it.
    try {
        auto existing = store.get({"", "v1", "services"}, "default", "kubernetes");
        svc.at("spec").as_object()["clusterIP"] = existing.at("spec").at("clusterIP");
        svc.at("spec").as_object()["clusterIPs"] = existing.at("spec").at("clusterIPs");
    } catch (const StoreError& e) {
        if (e.status().code != 404) throw;
    }
    put(store, {"", "v1", "services"}, std::move(svc));
    put(store, {"", "v1", "endpoints"},
        json::object{{"metadata", md({{"endpointslice.kubernetes.io/skip-mirror", "true"}})},
                     {"subsets", json::array{json::object{
                                     {"addresses", json::array{json::object{{"ip", "127.0.0.1"}}}},
                                     {"ports", json::array{json::object{{"name", "https"}, {"port", p}, {"protocol", "TCP"}}}}}}}});
    put(store, {"discovery.k8s.io", "v1", "endpointslices"},
        json::object{{"metadata", md({{"kubernetes.io/service-name", "kubernetes"}})},
                     {"addressType", "IPv4"},
                     {"endpoints", json::array{json::object{{"addresses", json::array{"127.0.0.1"}},
                                                            {"conditions", json::object{{"ready", true}}}}}},
                     {"ports", json::array{json::object{{"name", "https"}, {"port", p}, {"protocol", "TCP"}}}}});
}

} // namespace vck::sandbox
