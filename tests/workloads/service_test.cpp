// Services in the store: what kube-apiserver defaults, allocates and refuses, and the
// Endpoints and EndpointSlices the endpoints controllers (sandbox/cluster/endpoints_controller.hpp)
// publish for them, pass by pass; the `kubernetes` Service of the sandbox.
#include "workloads_support.hpp"

#include <vck/sandbox/cluster/endpoints_controller.hpp>
#include <vck/sandbox/cluster/kubernetes_service.hpp>
#include <vck/sandbox/eventually.hpp>
#include <vck/sandbox/server/table.hpp>

#include <doctest.h>

#include <set>
#include <string>

namespace {

using namespace vck::sandbox;
using namespace vck::sandbox::workloads_test;

/// A Service `web` selecting app=web, port 80 named http to the pods' port named `web`.
json::value svc_web() {
    return parse(R"({"metadata":{"name":"web","labels":{"tier":"front"}},"spec":{"selector":{"app":"web"},
        "ports":[{"name":"http","port":80,"targetPort":"web"}]}})");
}

/// A pod `name` labelled app=`app` serving container port 8080 named web.
json::value svc_pod(std::string_view name, std::string_view app = "web") {
    auto v = parse(R"({"metadata":{"labels":{}},"spec":{"containers":[{"name":"c","image":"nginx",
        "ports":[{"name":"web","containerPort":8080}]}]}})");
    v.at("metadata").as_object()["name"] = name;
    v.at("metadata").at("labels").as_object()["app"] = app;
    return v;
}

/// The header and the cells of the first row kubectl get would print for `obj` of resource `id`
/// (columns of priority 0 only), e.g. "NAME TYPE ..." and "web ClusterIP ...", `|`-separated.
std::pair<std::string, std::string> svc_table_row(ObjectStore& store, const ResourceId& id, const json::value& obj) {
    auto cols = table_columns(*store.find_resource(id.group, id.version, id.resource));
    auto table = make_table(cols, json::array{obj}, IncludeObject::None, json::object{});
    std::string header, row;
    const auto& defs = table.at("columnDefinitions").as_array();
    const auto& cells = table.at("rows").at(0).at("cells").as_array();
    for (std::size_t i = 0; i < defs.size(); ++i) {
        if (defs[i].at("priority") != 0 || text_of(defs[i].at("name")) == "Age") continue;
        header += (header.empty() ? "" : "|") + text_of(defs[i].at("name"));
        row += (row.empty() ? "" : "|") + (cells[i].is_string() ? text_of(cells[i]) : json::serialize(cells[i]));
    }
    return {header, row};
}

/// The one EndpointSlice the controller keeps for `service`.
json::value svc_slice_of(ObjectStore& store, std::string_view service) {
    StoreListOptions sel;
    sel.label_selector = "kubernetes.io/service-name=" + std::string(service);
    auto list = store.list(slices, "default", sel);
    REQUIRE(list.at("items").as_array().size() == 1);
    return list.at("items").at(0);
}

} // namespace

TEST_CASE("a Service is defaulted and given a cluster IP from 10.96.0.0/12 as kube-apiserver does") {
    ObjectStore store;
    auto svc = store.create(services, "default", parse(R"({"metadata":{"name":"a"},"spec":{"ports":[{"port":80}]}})"));
    // Returned with the status kube-apiserver returns (a struct field: written even when empty).
    CHECK(svc.at("status") == parse(R"({"loadBalancer":{}})"));
    const auto& spec = svc.at("spec");
    CHECK(spec.at("type") == "ClusterIP");
    CHECK(spec.at("sessionAffinity") == "None");
    CHECK(spec.at("internalTrafficPolicy") == "Cluster");
    CHECK(spec.at("ipFamilies") == parse(R"(["IPv4"])"));
    CHECK(spec.at("ipFamilyPolicy") == "SingleStack");
    CHECK(spec.at("ports").at(0) == parse(R"({"port":80,"protocol":"TCP","targetPort":80})"));
    auto ip = text_of(spec.at("clusterIP"));
    CHECK(ip.rfind("10.", 0) == 0);
    auto second = std::stoi(ip.substr(3, ip.find('.', 3) - 3));
    CHECK(second >= 96);
    CHECK(second <= 111);
    CHECK(spec.at("clusterIPs") == json::array{json::string(ip)});

    auto headless = store.create(services, "default", parse(R"({"metadata":{"name":"h"},"spec":{"clusterIP":"None","selector":{"app":"x"}}})"));
    CHECK(headless.at("spec").at("clusterIP") == "None");
    CHECK(headless.at("spec").at("clusterIPs") == parse(R"(["None"])"));

    // No two services share an address.
    std::set<std::string> ips{ip};
    for (int i = 0; i < 20; ++i) {
        auto s = store.create(services, "default", parse(R"({"metadata":{"generateName":"s-"},"spec":{"ports":[{"port":80}]}})"));
        CHECK(ips.insert(text_of(s.at("spec").at("clusterIP"))).second);
    }
}

TEST_CASE("a Service's cluster IP is kept by an update that leaves it out and may not change once set") {
    ObjectStore store;
    auto svc = store.create(services, "default", svc_web());
    auto ip = svc.at("spec").at("clusterIP");
    auto body = svc_web();
    auto kept = store.update(services, "default", "web", body);
    CHECK(kept.at("spec").at("clusterIP") == ip);

    auto changed = kept;
    changed.at("spec").as_object()["clusterIP"] = ip == "10.96.0.77" ? "10.96.0.78" : "10.96.0.77";
    auto st = refusal([&] { store.update(services, "default", "web", changed); });
    CHECK(st.code == 422);
    CHECK(st.message == "Service \"web\" is invalid: spec.clusterIPs[0]: Invalid value: []string{\"" +
                            text_of(changed.at("spec").at("clusterIP")) + "\"}: may not change once set");
}

TEST_CASE("a Service asking for a cluster IP in use or outside the range is refused with kube-apiserver's words") {
    ObjectStore store;
    store.create(services, "default", parse(R"({"metadata":{"name":"a"},"spec":{"clusterIP":"10.96.0.10","ports":[{"port":80}]}})"));
    auto st = refusal([&] {
        store.create(services, "default", parse(R"({"metadata":{"name":"b"},"spec":{"clusterIP":"10.96.0.10","ports":[{"port":80}]}})"));
    });
    CHECK(st.message == "Service \"b\" is invalid: spec.clusterIPs: Invalid value: []string{\"10.96.0.10\"}: "
                        "failed to allocate IP 10.96.0.10: provided IP is already allocated");
    st = refusal([&] {
        store.create(services, "default", parse(R"({"metadata":{"name":"c"},"spec":{"clusterIP":"192.168.0.1","ports":[{"port":80}]}})"));
    });
    CHECK(st.message == "Service \"c\" is invalid: spec.clusterIPs: Invalid value: []string{\"192.168.0.1\"}: failed to "
                        "allocate IP 192.168.0.1: the provided IP (192.168.0.1) is not in the valid range. The range of "
                        "valid IPs is 10.96.0.0/12");
}

TEST_CASE("a Service that kube-apiserver refuses is refused with its words") {
    ObjectStore store;
    SUBCASE("no ports") {
        auto st = refusal([&] { store.create(services, "default", parse(R"({"metadata":{"name":"a"},"spec":{}})")); });
        CHECK(st.message == "Service \"a\" is invalid: spec.ports: Required value");
    }
    SUBCASE("two ports, one unnamed") {
        auto st = refusal([&] {
            store.create(services, "default",
                         parse(R"({"metadata":{"name":"a"},"spec":{"ports":[{"name":"http","port":80},{"port":443}]}})"));
        });
        CHECK(st.message == "Service \"a\" is invalid: spec.ports[1].name: Required value");
    }
    SUBCASE("a port name that is not a DNS label (a service port's name is no IANA name: 80-8080 is one)") {
        store.create(services, "default", parse(R"({"metadata":{"name":"ok"},"spec":{"ports":[{"name":"80-8080","port":80}]}})"));
        auto st = refusal([&] {
            store.create(services, "default", parse(R"({"metadata":{"name":"a"},"spec":{"ports":[{"name":"Web_1","port":80}]}})"));
        });
        CHECK(st.message.rfind("Service \"a\" is invalid: spec.ports[0].name: Invalid value: \"Web_1\": a lowercase RFC 1123 label must consist of", 0) == 0);
    }
    SUBCASE("an unknown type and a port out of range") {
        auto st = refusal([&] {
            store.create(services, "default", parse(R"({"metadata":{"name":"a"},"spec":{"type":"Magic","ports":[{"port":70000}]}})"));
        });
        CHECK(st.message == "Service \"a\" is invalid: [spec.type: Unsupported value: \"Magic\": supported values: \"ClusterIP\", "
                            "\"ExternalName\", \"LoadBalancer\", \"NodePort\", spec.ports[0].port: Invalid value: 70000: "
                            "must be between 1 and 65535, inclusive, spec.ports[0].targetPort: Invalid value: 70000: must be "
                            "between 1 and 65535, inclusive]");
    }
}

TEST_CASE("a NodePort Service gets a free node port in 30000-32767 and keeps it") {
    ObjectStore store;
    auto a = store.create(services, "default", parse(R"({"metadata":{"name":"a"},"spec":{"type":"NodePort","ports":[{"port":80}]}})"));
    auto port = a.at("spec").at("ports").at(0).at("nodePort").as_int64();
    CHECK(port >= 30000);
    CHECK(port <= 32767);
    CHECK(a.at("spec").at("externalTrafficPolicy") == "Cluster");
    auto again = store.update(services, "default", "a",
                              parse(R"({"metadata":{"name":"a"},"spec":{"type":"NodePort","ports":[{"port":80}]}})"));
    CHECK(again.at("spec").at("ports").at(0).at("nodePort") == port);
    auto body = parse(R"({"metadata":{"name":"b"},"spec":{"type":"NodePort","ports":[{"port":80}]}})");
    body.at("spec").at("ports").at(0).as_object()["nodePort"] = port;
    auto st = refusal([&] { store.create(services, "default", body); });
    CHECK(st.message == "Service \"b\" is invalid: spec.ports[0].nodePort: Invalid value: " + std::to_string(port) +
                            ": provided port is already allocated");
}

TEST_CASE("a Service's Endpoints and EndpointSlice list exactly its selected pods with an IP, ready or not") {
    ObjectStore store;
    EndpointsController ctl(store);
    store.create(services, "default", svc_web());
    for (const char* name : {"a", "b", "c"}) store.create(pods, "default", svc_pod(name));
    store.create(pods, "default", svc_pod("other", "db"));
    run_pod(store, "default", "a", "10.244.1.2");
    run_pod(store, "default", "b", "10.244.1.3", false);
    run_pod(store, "default", "other", "10.244.1.9");
    // c has no IP yet: it is listed nowhere.
    ctl.sync_all();

    auto ep = store.get(endpoints, "default", "web");
    CHECK(ep.at("metadata").at("labels") == parse(R"({"tier":"front"})"));
    REQUIRE(ep.at("subsets").as_array().size() == 1);
    const auto& subset = ep.at("subsets").at(0);
    REQUIRE(subset.at("addresses").as_array().size() == 1);
    CHECK(subset.at("addresses").at(0).at("ip") == "10.244.1.2");
    CHECK(subset.at("addresses").at(0).at("targetRef").at("name") == "a");
    REQUIRE(subset.at("notReadyAddresses").as_array().size() == 1);
    CHECK(subset.at("notReadyAddresses").at(0).at("ip") == "10.244.1.3");
    CHECK(subset.at("ports") == parse(R"([{"name":"http","port":8080,"protocol":"TCP"}])"));

    auto slice = svc_slice_of(store, "web");
    auto slice_name = text_of(slice.at("metadata").at("name"));
    CHECK(slice_name.size() == std::string("web-").size() + 5);
    CHECK(slice_name.rfind("web-", 0) == 0);
    CHECK(slice.at("addressType") == "IPv4");
    CHECK(slice.at("metadata").at("labels").at("endpointslice.kubernetes.io/managed-by") == "endpointslice-controller.k8s.io");
    CHECK(slice.at("metadata").at("labels").at("tier") == "front");
    CHECK(slice.at("metadata").at("ownerReferences").at(0).at("kind") == "Service");
    CHECK(slice.at("ports") == parse(R"([{"name":"http","port":8080,"protocol":"TCP"}])"));
    REQUIRE(slice.at("endpoints").as_array().size() == 2);
    CHECK(slice.at("endpoints").at(0).at("addresses") == parse(R"(["10.244.1.2"])"));
    CHECK(slice.at("endpoints").at(0).at("conditions") == parse(R"({"ready":true,"serving":true,"terminating":false})"));
    CHECK(slice.at("endpoints").at(1).at("addresses") == parse(R"(["10.244.1.3"])"));
    CHECK(slice.at("endpoints").at(1).at("conditions").at("ready") == false);

    SUBCASE("readiness lost moves a pod to notReadyAddresses, and ready:false") {
        run_pod(store, "default", "a", "10.244.1.2", false);
        ctl.sync_all();
        auto after = store.get(endpoints, "default", "web");
        CHECK_FALSE(after.at("subsets").at(0).as_object().contains("addresses"));
        CHECK(after.at("subsets").at(0).at("notReadyAddresses").as_array().size() == 2);
        auto s = svc_slice_of(store, "web");
        CHECK(text_of(s.at("metadata").at("name")) == slice_name);  // the same slice, updated
        CHECK(s.at("endpoints").at(0).at("conditions").at("ready") == false);
    }
    SUBCASE("a pod gone is gone from both; a service gone takes its Endpoints and slices") {
        store.remove(pods, "default", "b");
        ctl.sync_all();
        CHECK_FALSE(store.get(endpoints, "default", "web").at("subsets").at(0).as_object().contains("notReadyAddresses"));
        CHECK(svc_slice_of(store, "web").at("endpoints").as_array().size() == 1);
        store.remove(services, "default", "web");
        ctl.sync_all();
        CHECK_FALSE(exists(store, endpoints, "default", "web"));
        CHECK_FALSE(exists(store, slices, "default", slice_name));
    }
    SUBCASE("a headless service's are marked headless, and a selectorless one gets none") {
        store.create(services, "default", parse(R"({"metadata":{"name":"hl"},"spec":{"clusterIP":"None","selector":{"app":"web"}}})"));
        store.create(services, "default", parse(R"({"metadata":{"name":"manual"},"spec":{"ports":[{"port":80}]}})"));
        ctl.sync_all();
        auto hl = store.get(endpoints, "default", "hl");
        CHECK(hl.at("metadata").at("labels").at("service.kubernetes.io/headless") == "");
        CHECK(hl.at("subsets").at(0).at("addresses").at(0).at("ip") == "10.244.1.2");
        CHECK_FALSE(hl.at("subsets").at(0).as_object().contains("ports"));
        CHECK_FALSE(exists(store, endpoints, "default", "manual"));
    }
}

TEST_CASE("started, the endpoints controller follows the changes: a pod that comes to match, one that stops, a "
          "service's selector changed, a service gone") {
    ObjectStore store;
    EndpointsController ctl(store);
    store.create(services, "default", svc_web());
    store.create(pods, "default", svc_pod("a"));
    run_pod(store, "default", "a", "10.244.1.2");
    ctl.start();
    auto addresses = [&](std::string_view svc) {
        std::set<std::string> ips;
        auto ep = store.get(endpoints, "default", svc);
        if (const auto* subsets = ep.as_object().if_contains("subsets"))
            for (const auto& s : subsets->as_array())
                if (const auto* a = s.as_object().if_contains("addresses"))
                    for (const auto& addr : a->as_array()) ips.insert(text_of(addr.at("ip")));
        return ips;
    };
    using Ips = std::set<std::string>;
    CHECK(eventually([&] { return exists(store, endpoints, "default", "web") && addresses("web") == Ips{"10.244.1.2"}; }));
    // A pod that comes to match (its labels changed), and another that stops matching.
    store.create(pods, "default", svc_pod("b", "db"));
    run_pod(store, "default", "b", "10.244.1.3");
    store.patch(pods, "default", "b", vck::client::PatchType::Merge, parse(R"({"metadata":{"labels":{"app":"web"}}})"));
    CHECK(eventually([&] { return addresses("web") == Ips{"10.244.1.2", "10.244.1.3"}; }));
    store.patch(pods, "default", "a", vck::client::PatchType::Merge, parse(R"({"metadata":{"labels":{"app":"gone"}}})"));
    CHECK(eventually([&] { return addresses("web") == Ips{"10.244.1.3"}; }));
    CHECK(eventually([&] {
        StoreListOptions sel;
        sel.label_selector = "kubernetes.io/service-name=web";
        auto list = store.list(slices, "default", sel);
        const auto& items = list.at("items").as_array();
        return items.size() == 1 && items[0].at("endpoints").as_array().size() == 1;
    }));
    // An Endpoints changed by someone else is put back.
    auto ep = store.get(endpoints, "default", "web");
    ep.as_object().erase("subsets");
    store.update(endpoints, "default", "web", ep);
    CHECK(eventually([&] { return addresses("web") == Ips{"10.244.1.3"}; }));
    // The selector changed: the pods it selects now.
    store.patch(services, "default", "web", vck::client::PatchType::Merge, parse(R"({"spec":{"selector":{"app":"gone"}}})"));
    CHECK(eventually([&] { return addresses("web") == Ips{"10.244.1.2"}; }));
    // A service gone takes its Endpoints.
    store.remove(services, "default", "web");
    CHECK(eventually([&] { return !exists(store, endpoints, "default", "web"); }));
    ctl.stop();
}

TEST_CASE("the kubernetes Service points at the API server's port through 10.96.0.1:443") {
    ObjectStore store;
    publish_kubernetes_service(store, 6443);
    auto svc = store.get(services, "default", "kubernetes");
    CHECK(svc.at("spec").at("clusterIP") == "10.96.0.1");
    CHECK(svc.at("spec").at("ports") == parse(R"([{"name":"https","port":443,"protocol":"TCP","targetPort":6443}])"));
    auto ep = store.get(endpoints, "default", "kubernetes");
    CHECK(ep.at("subsets") == parse(R"([{"addresses":[{"ip":"127.0.0.1"}],"ports":[{"name":"https","port":6443,"protocol":"TCP"}]}])"));
    auto slice = store.get(slices, "default", "kubernetes");
    CHECK(slice.at("endpoints").at(0).at("addresses") == parse(R"(["127.0.0.1"])"));
    CHECK(slice.at("ports").at(0).at("port") == 6443);

    publish_kubernetes_service(store, 7443);  // a restarted server
    CHECK(store.get(services, "default", "kubernetes").at("spec").at("ports").at(0).at("targetPort") == 7443);
    CHECK(store.get(services, "default", "kubernetes").at("spec").at("clusterIP") == "10.96.0.1");
    CHECK(store.get(endpoints, "default", "kubernetes").at("subsets").at(0).at("ports").at(0).at("port") == 7443);
}

TEST_CASE("services, endpoints, endpointslices and statefulsets print kubectl get's columns as kube-apiserver does") {
    ObjectStore store;
    EndpointsController ctl(store);
    auto svc = store.create(services, "default", parse(R"({"metadata":{"name":"web"},"spec":{"type":"NodePort",
        "clusterIP":"10.96.0.20","selector":{"app":"web"},
        "ports":[{"name":"http","port":80,"targetPort":"web","nodePort":30080},{"name":"metrics","port":9090,"protocol":"UDP"}]}})"));
    auto [sh, sr] = svc_table_row(store, services, svc);
    CHECK(sh == "Name|Type|Cluster-IP|External-IP|Port(s)");
    CHECK(sr == "web|NodePort|10.96.0.20|<none>|80:30080/TCP,9090:" +
                    std::to_string(svc.at("spec").at("ports").at(1).at("nodePort").as_int64()) + "/UDP");
    auto headless = store.create(services, "default", parse(R"({"metadata":{"name":"hl"},"spec":{"clusterIP":"None","selector":{"app":"web"}}})"));
    CHECK(svc_table_row(store, services, headless).second == "hl|ClusterIP|None|<none>|<none>");

    for (const char* name : {"a", "b", "c", "d", "e"}) store.create(pods, "default", svc_pod(name));
    int n = 2;
    for (const char* name : {"a", "b", "c", "d"}) run_pod(store, "default", name, "10.244.1." + std::to_string(n++));
    run_pod(store, "default", "e", "10.244.1.9", false);
    ctl.sync_all();
    auto [eh, er] = svc_table_row(store, endpoints, store.get(endpoints, "default", "web"));
    CHECK(eh == "Name|Endpoints");
    CHECK(er == "web|10.244.1.2:8080,10.244.1.3:8080,10.244.1.4:8080 + 5 more...");  // 4 ready pods, 2 ports
    CHECK(svc_table_row(store, endpoints, store.get(endpoints, "default", "hl")).second ==
          "hl|10.244.1.2,10.244.1.3,10.244.1.4 + 1 more...");
    auto [lh, lr] = svc_table_row(store, slices, svc_slice_of(store, "web"));
    CHECK(lh == "Name|AddressType|Ports|Endpoints");
    CHECK(lr.substr(lr.find('|')) == "|IPv4|8080,9090|10.244.1.2,10.244.1.3,10.244.1.4 + 2 more...");
    CHECK(svc_table_row(store, slices, svc_slice_of(store, "hl")).second.find("|IPv4|<unset>|") != std::string::npos);

    auto sts = parse(R"({"metadata":{"name":"db"},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"db"}},
        "template":{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}},
        "status":{"replicas":2,"readyReplicas":1}})");
    CHECK(svc_table_row(store, statefulsets, sts) == std::pair<std::string, std::string>{"Name|Ready", "db|1/3"});
}
