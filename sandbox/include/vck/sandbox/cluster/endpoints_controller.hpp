// EndpointsController: the sandbox's endpoints and endpointslice controllers (of
// kube-controller-manager), one SimLoop pass over services and pods. For every Service with a
// non-empty selector (not ExternalName):
// - an Endpoints of the service's name whose subsets list the selected pods that have a podIP
//   and have not finished: ready ones (or all, with publishNotReadyAddresses) as addresses,
//   the others as notReadyAddresses; terminating pods are left out; pods are grouped by the
//   ports they resolve (a named targetPort is looked up among the pod's containerPorts of the
//   port's protocol; a pod lacking it lacks that port), addresses sorted by IP;
// - EndpointSlices <service>-<5 random> (addressType IPv4, labels kubernetes.io/service-name
//   and endpointslice.kubernetes.io/managed-by endpointslice-controller.k8s.io, owned by the
//   service), one per port group (one empty slice when there is nothing to list), each
//   endpoint with conditions ready / serving / terminating (terminating pods stay listed,
//   not ready), nodeName and targetRef.
// Both carry the service's labels (and service.kubernetes.io/headless for headless services).
// A service's Endpoints go when it goes (the slices by garbage collection); Endpoints and
// slices of services without a selector are left to whoever writes them (the Sandbox writes
// those of the `kubernetes` service).
// Cost: work per change, as upstream's controllers do it from their informers. Started, it
// follows the store's change feed with the selector of each selecting service (listed once): a
// service's change syncs that service, a pod's change (before or after it) the services of its
// namespace that select it, a change to an Endpoints or a managed slice the service it belongs
// to; a service is synced against the pods its selector lists in its namespace, its Endpoints
// and its slices. Not started (tests calling sync_all()), a pass goes over every service.
#pragma once

#include <vck/sandbox/storage/object_store.hpp>
#include <vck/sandbox/cluster/change_feed.hpp>
#include <vck/sandbox/cluster/sim_loop.hpp>
#include <vck/sandbox/cluster/controller_ref.hpp>
#include <vck/sandbox/cluster/workload_pods.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace vck::sandbox {

class EndpointsController {
public:
    static inline const char* managed_by = "endpointslice-controller.k8s.io";

    explicit EndpointsController(ObjectStore& store)
        : store_(store), feed_(store, wanted),
          loop_(store, "endpoints-controller", wanted,
                [this] {
                    pass();
                    return std::optional<SimLoop::Clock::time_point>{};
                }) {}
    ~EndpointsController() { stop(); }
    EndpointsController(const EndpointsController&) = delete;
    EndpointsController& operator=(const EndpointsController&) = delete;

    void start() {
        feed_.start();  // before the loop, so no change falls between its first list and the feed
        loop_.start();
    }
    void stop() {
        loop_.stop();
        feed_.stop();
        loaded_ = false;
    }

    /// The loop's pass: the services changes name (every one when not started).
    void pass() {
        if (!feed_.started()) return sync_all();
        std::lock_guard lock(pass_mu_);
        std::set<std::string> due;
        due.swap(retry_);
        if (!loaded_) load(due);
        else take_feed(due);
        for (const auto& k : due) sync_service(k);
    }

    /// One pass over every service (what the loop runs; tests may call it directly).
    void sync_all() {
        std::lock_guard lock(pass_mu_);
        auto svc_list = store_.list(services_id, "");
        const auto& svcs = svc_list.at("items").as_array();
        // Most wake-ups are pod writes in a cluster without selecting services: one list then.
        if (written_.empty() && std::none_of(svcs.begin(), svcs.end(), [](const json::value& svc) {
                return !selector_of(svc).empty() &&
                       workload_pods::str(workload_pods::at(&svc, "spec"), "type") != "ExternalName";
            }))
            return;
        auto pod_list = store_.list(pods_id, "");
        auto ep_list = store_.list(endpoints_id, "");
        auto slice_list = store_.list(slices_id, "");
        std::set<std::string> services;
        for (const auto& svc : svcs) {
            services.insert(key(svc));
            const auto* spec = workload_pods::at(&svc, "spec");
            if (selector_of(svc).empty() || workload_pods::str(spec, "type") == "ExternalName") continue;
            auto groups = backends(svc, pod_list.at("items").as_array());
            sync_endpoints(svc, groups, ep_list.at("items").as_array());
            sync_slices(svc, groups, slice_list.at("items").as_array());
            written_.insert(key(svc));
        }
        for (const auto& ep : ep_list.at("items").as_array()) {
            auto k = key(ep);
            if (services.count(k) || !written_.count(k)) continue;
            try {
                store_.remove(endpoints_id, workload_pods::meta(ep, "namespace"), workload_pods::meta(ep, "name"));
            } catch (const StoreError&) {
            }
            written_.erase(k);
        }
    }

private:
    static bool wanted(const StoreChange& c) {
        if (c.group == "discovery.k8s.io") return c.resource == "endpointslices";
        return c.group.empty() && (c.resource == "services" || c.resource == "pods" || c.resource == "endpoints");
    }
    /// Whether the controller keeps this service's Endpoints: a selector, not ExternalName.
    static bool selecting(const json::value& svc) {
        return !selector_of(svc).empty() && workload_pods::str(workload_pods::at(&svc, "spec"), "type") != "ExternalName";
    }

    /// The selecting services from a list (all due), and Endpoints written for services now gone removed.
    void load(std::set<std::string>& due) {
        feed_.clear();  // the list below is at least as new
        selectors_.clear();
        const auto svc_list = store_.list(services_id, "");
        std::set<std::string> all;
        for (const auto& svc : svc_list.at("items").as_array()) {
            all.insert(key(svc));
            if (!selecting(svc)) continue;
            selectors_[key(svc)] = json::object{{"matchLabels", selector_of(svc)}};
            due.insert(key(svc));
        }
        for (auto it = written_.begin(); it != written_.end();) {
            if (all.count(*it)) {
                ++it;
                continue;
            }
            auto k = *it++;
            drop(k);
        }
        loaded_ = true;
    }

    void take_feed(std::set<std::string>& due) {
        for (const auto& c : feed_.take()) {
            auto k = c.namespace_ + "/" + c.name;
            if (c.resource == "services") {
                if (c.type != "DELETED" && selecting(*c.object)) {
                    selectors_[k] = json::object{{"matchLabels", selector_of(*c.object)}};
                    due.insert(k);
                    continue;
                }
                selectors_.erase(k);
                due.erase(k);
                if (c.type == "DELETED") drop(k);
                continue;
            }
            if (c.resource == "endpoints") {
                if (selectors_.count(k)) due.insert(k);
                continue;
            }
            if (c.resource == "endpointslices") {
                const auto* labels = workload_pods::at(workload_pods::at(c.object.get(), "metadata"), "labels");
                auto svc = c.namespace_ + "/" + workload_pods::str(labels, "kubernetes.io/service-name");
                if (selectors_.count(svc)) due.insert(svc);
                continue;
            }
            // A pod: the services of its namespace that select it, before or after the change.
            const auto prefix = c.namespace_ + "/";
            for (auto it = selectors_.lower_bound(prefix); it != selectors_.end() && it->first.rfind(prefix, 0) == 0; ++it)
                for (const auto* pod : {c.previous.get(), c.object.get()})
                    if (pod && workload_pods::selected_by(*pod, it->second)) due.insert(it->first);
        }
    }

    /// One service against the pods its selector lists in its namespace, its Endpoints and slices.
    void sync_service(const std::string& k) {
        const auto slash = k.find('/');
        const auto ns = k.substr(0, slash), name = k.substr(slash + 1);
        json::value svc;
        try {
            svc = store_.get(services_id, ns, name);
        } catch (const StoreError&) {
            return;  // gone: its DELETED change drops its Endpoints
        }
        if (!selecting(svc)) return;
        StoreListOptions pods_opts;
        pods_opts.label_selector = selector_text(selector_of(svc));
        StoreListOptions ep_opts;
        ep_opts.field_selector = "metadata.name=" + name;
        StoreListOptions slice_opts;
        slice_opts.label_selector = "kubernetes.io/service-name=" + name;
        const auto pod_list = store_.list(pods_id, ns, pods_opts);
        const auto ep_list = store_.list(endpoints_id, ns, ep_opts);
        const auto slice_list = store_.list(slices_id, ns, slice_opts);
        syncing_ = k;
        auto groups = backends(svc, pod_list.at("items").as_array());
        sync_endpoints(svc, groups, ep_list.at("items").as_array());
        sync_slices(svc, groups, slice_list.at("items").as_array());
        syncing_.clear();
        written_.insert(k);
    }

    /// A selector's matchLabels as a list's labelSelector ("" lists every pod: backends() still
    /// selects, so a value the selector syntax cannot carry costs a longer list, not a wrong one).
    static std::string selector_text(const json::object& sel) {
        std::string out;
        for (const auto& kv : sel) {
            if (!kv.value().is_string() || kv.value().get_string().empty()) return "";
            out += (out.empty() ? "" : ",") + std::string(kv.key()) + "=" + std::string(kv.value().get_string());
        }
        return out;
    }

    /// Removes the Endpoints this controller wrote for a service that is gone.
    void drop(const std::string& k) {
        if (!written_.erase(k)) return;
        const auto slash = k.find('/');
        try {
            store_.remove(endpoints_id, k.substr(0, slash), k.substr(slash + 1));
        } catch (const StoreError&) {
        }
    }

    static inline const ResourceId services_id{"", "v1", "services"};
    static inline const ResourceId pods_id{"", "v1", "pods"};
    static inline const ResourceId endpoints_id{"", "v1", "endpoints"};
    static inline const ResourceId slices_id{"discovery.k8s.io", "v1", "endpointslices"};

    struct Backend {
        std::string ip, node, name, uid;
        bool ready = false, terminating = false;
    };
    /// Pods resolving the same ports (`ports`: the resolved {name, port, protocol} list).
    struct Group {
        json::array ports;
        std::vector<Backend> pods;
    };
    using Groups = std::map<std::string, Group>;  // serialized ports -> group

    /// A Service's selector (empty when it has none).
    static json::object selector_of(const json::value& svc) {
        const auto* sel = workload_pods::at(workload_pods::at(&svc, "spec"), "selector");
        return sel && sel->is_object() ? sel->get_object() : json::object();
    }

    static std::string key(const json::value& obj) {
        return workload_pods::meta(obj, "namespace") + "/" + workload_pods::meta(obj, "name");
    }

    /// podutil.FindPort: a number as it is, a name among the containers' ports.
    static std::optional<std::int64_t> find_port(const json::value& pod, const json::value& svc_port) {
        const auto* target = workload_pods::at(&svc_port, "targetPort");
        if (target && target->is_int64()) return target->get_int64();
        if (!target || !target->is_string()) return std::nullopt;
        auto protocol = workload_pods::str(&svc_port, "protocol");
        const auto* cs = workload_pods::at(workload_pods::at(&pod, "spec"), "containers");
        if (cs && cs->is_array())
            for (const auto& c : cs->get_array())
                if (const auto* ps = workload_pods::at(&c, "ports"); ps && ps->is_array())
                    for (const auto& p : ps->get_array())
                        if (workload_pods::str(&p, "name") == target->get_string() &&
                            workload_pods::str(&p, "protocol") == protocol)
                            if (const auto* n = workload_pods::at(&p, "containerPort"); n && n->is_int64())
                                return n->get_int64();
        return std::nullopt;
    }

    static Groups backends(const json::value& svc, const json::array& pods) {
        Groups groups;
        const auto ns = workload_pods::meta(svc, "namespace");
        const auto* spec = workload_pods::at(&svc, "spec");
        const json::value selector = json::object{{"matchLabels", selector_of(svc)}};
        const auto* publish = workload_pods::at(spec, "publishNotReadyAddresses");
        const bool all_ready = publish && publish->is_bool() && publish->get_bool();
        const auto* svc_ports = workload_pods::at(spec, "ports");
        const bool has_ports = svc_ports && svc_ports->is_array() && !svc_ports->get_array().empty();
        for (const auto& pod : pods) {
            if (workload_pods::meta(pod, "namespace") != ns || !workload_pods::selected_by(pod, selector)) continue;
            const auto* status = workload_pods::at(&pod, "status");
            auto ip = workload_pods::str(status, "podIP");
            if (ip.empty() || workload_pods::finished(pod)) continue;
            json::array ports;
            if (has_ports)
                for (const auto& sp : svc_ports->get_array())
                    if (auto n = find_port(pod, sp))
                        ports.push_back(json::object{{"name", workload_pods::str(&sp, "name")},
                                                     {"port", *n},
                                                     {"protocol", workload_pods::str(&sp, "protocol")}});
            if (has_ports && ports.empty()) continue;
            auto& g = groups[json::serialize(ports)];
            g.ports = ports;
            g.pods.push_back(Backend{ip, workload_pods::str(workload_pods::at(&pod, "spec"), "nodeName"),
                                     workload_pods::meta(pod, "name"), workload_pods::meta(pod, "uid"),
                                     all_ready || workload_pods::ready(pod), workload_pods::terminating(pod)});
        }
        for (auto& [k, g] : groups)
            std::sort(g.pods.begin(), g.pods.end(), [](const Backend& a, const Backend& b) { return a.ip < b.ip; });
        return groups;
    }

    static json::object target_ref(const std::string& ns, const Backend& b) {
        return json::object{{"kind", "Pod"}, {"namespace", ns}, {"name", b.name}, {"uid", b.uid}};
    }

    /// The service's labels, and the headless marker when it is headless.
    static json::object labels_for(const json::value& svc) {
        json::object labels;
        if (const auto* l = workload_pods::at(workload_pods::at(&svc, "metadata"), "labels"); l && l->is_object())
            labels = l->get_object();
        if (workload_pods::str(workload_pods::at(&svc, "spec"), "clusterIP") == "None")
            labels["service.kubernetes.io/headless"] = "";
        return labels;
    }

    void sync_endpoints(const json::value& svc, const Groups& groups, const json::array& existing) {
        const auto ns = workload_pods::meta(svc, "namespace");
        const auto name = workload_pods::meta(svc, "name");
        json::array subsets;
        for (const auto& [k, g] : groups) {
            json::array ready, not_ready;
            for (const auto& b : g.pods) {
                if (b.terminating) continue;
                json::object addr{{"ip", b.ip}};
                if (!b.node.empty()) addr["nodeName"] = b.node;
                addr["targetRef"] = target_ref(ns, b);
                (b.ready ? ready : not_ready).push_back(std::move(addr));
            }
            if (ready.empty() && not_ready.empty()) continue;
            json::object subset;
            if (!ready.empty()) subset["addresses"] = std::move(ready);
            if (!not_ready.empty()) subset["notReadyAddresses"] = std::move(not_ready);
            json::array ports;
            for (const auto& p : g.ports) {
                json::object port = p.as_object();
                if (const auto* n = port.if_contains("name"); n && n->is_string() && n->get_string().empty()) port.erase("name");  // EndpointPort.name is omitempty
                ports.push_back(std::move(port));
            }
            if (!ports.empty()) subset["ports"] = std::move(ports);
            subsets.push_back(std::move(subset));
        }
        const json::value* found = nullptr;
        for (const auto& ep : existing)
            if (workload_pods::meta(ep, "namespace") == ns && workload_pods::meta(ep, "name") == name) found = &ep;
        json::value want = found ? *found : json::value(json::object{{"metadata", json::object{{"name", name}, {"namespace", ns}}}});
        auto& o = want.as_object();
        o["metadata"].as_object()["labels"] = labels_for(svc);
        if (subsets.empty()) o.erase("subsets");
        else o["subsets"] = std::move(subsets);
        if (found && *found == want) return;
        write(endpoints_id, ns, name, std::move(want), found != nullptr);
    }

    void sync_slices(const json::value& svc, const Groups& groups, const json::array& existing) {
        const auto ns = workload_pods::meta(svc, "namespace");
        const auto name = workload_pods::meta(svc, "name");
        std::vector<const json::value*> mine;
        for (const auto& s : existing) {
            const auto* labels = workload_pods::at(workload_pods::at(&s, "metadata"), "labels");
            if (workload_pods::meta(s, "namespace") == ns && workload_pods::str(labels, "kubernetes.io/service-name") == name &&
                workload_pods::str(labels, "endpointslice.kubernetes.io/managed-by") == managed_by)
                mine.push_back(&s);
        }
        auto labels = labels_for(svc);
        labels["kubernetes.io/service-name"] = name;
        labels["endpointslice.kubernetes.io/managed-by"] = managed_by;
        std::vector<std::pair<json::value, json::value>> wanted;  // (endpoints, ports)
        for (const auto& [k, g] : groups) {
            json::array eps;
            for (const auto& b : g.pods) {
                json::object ep{{"addresses", json::array{json::string(b.ip)}},
                                {"conditions", json::object{{"ready", b.ready && !b.terminating},
                                                            {"serving", b.ready},
                                                            {"terminating", b.terminating}}}};
                if (!b.node.empty()) ep["nodeName"] = b.node;
                ep["targetRef"] = target_ref(ns, b);
                eps.push_back(std::move(ep));
            }
            wanted.emplace_back(std::move(eps), g.ports.empty() ? json::value(nullptr) : json::value(g.ports));
        }
        if (wanted.empty()) wanted.emplace_back(nullptr, nullptr);
        // A slice already holding a wanted port set keeps it; the others are reused, then created or removed.
        std::vector<const json::value*> spare;
        std::vector<bool> placed(wanted.size(), false);
        for (const auto* s : mine) {
            const auto* ports = workload_pods::at(s, "ports");
            bool used = false;
            for (std::size_t i = 0; i < wanted.size() && !used; ++i)
                if (!placed[i] && (ports ? *ports : json::value(nullptr)) == wanted[i].second) {
                    placed[i] = used = true;
                    update_slice(*s, labels, wanted[i]);
                }
            if (!used) spare.push_back(s);
        }
        for (std::size_t i = 0; i < wanted.size(); ++i) {
            if (placed[i]) continue;
            if (!spare.empty()) {
                update_slice(*spare.back(), labels, wanted[i]);
                spare.pop_back();
                continue;
            }
            json::object md{{"generateName", name + "-"}, {"namespace", ns}, {"labels", labels},
                            {"ownerReferences", json::array{controller_ref::owner_reference(svc, "v1", "Service")}}};
            json::value slice = json::object{{"metadata", std::move(md)}, {"addressType", "IPv4"},
                                             {"endpoints", wanted[i].first}, {"ports", wanted[i].second}};
            write(slices_id, ns, "", std::move(slice), false);
        }
        for (const auto* s : spare) try {
                store_.remove(slices_id, ns, workload_pods::meta(*s, "name"));
            } catch (const StoreError&) {
            }
    }

    void update_slice(const json::value& slice, const json::object& labels, const std::pair<json::value, json::value>& want) {
        json::value next = slice;
        auto& o = next.as_object();
        o["metadata"].as_object()["labels"] = labels;
        o["endpoints"] = want.first;
        o["ports"] = want.second;
        if (next == slice) return;
        write(slices_id, workload_pods::meta(slice, "namespace"), workload_pods::meta(slice, "name"), std::move(next), true);
    }

    /// A create or update; a conflict or a vanished object is left to the next pass.
    void write(const ResourceId& id, const std::string& ns, const std::string& name, json::value obj, bool update) {
        try {
            if (update) store_.update(id, ns, name, std::move(obj));
            else store_.create(id, ns, std::move(obj));
        } catch (const StoreError&) {
            if (!syncing_.empty()) retry_.insert(syncing_);  // a started pass syncs it again
            loop_.wake();
        }
    }

    ObjectStore& store_;
    std::mutex pass_mu_;               // a test's direct pass never overlaps the loop's
    std::set<std::string> written_;    // ns/name of the Endpoints this controller has written
    ChangeFeed feed_;
    bool loaded_ = false;
    std::map<std::string, json::value> selectors_;  // ns/name -> {matchLabels} of each selecting service
    std::set<std::string> retry_;      // services whose write failed, for the next pass
    std::string syncing_;              // the service being synced by pass()
    SimLoop loop_;
};

} // namespace vck::sandbox
