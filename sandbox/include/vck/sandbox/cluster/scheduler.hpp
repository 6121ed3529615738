// Scheduler: the sandbox's default-scheduler. It binds every pending pod without a nodeName
// (and with schedulerName default-scheduler or none) to a feasible node through pods/binding,
// running the real scheduler's filters in its order: NodeUnschedulable, TaintToleration
// (NoSchedule/NoExecute; NotReady and pressure conditions count as the node lifecycle
// controller's taints), NodeAffinity (nodeSelector + required affinity), NodeResourcesFit
// (pods, cpu, memory), VolumeBinding (bound PVs' node affinity; WaitForFirstConsumer claims
// need an available PV on the node, or a class whose provisioner may make one there: its
// allowedTopologies admit the node; the claim then gets volume.kubernetes.io/selected-node and
// the pod waits, unbound, until the claim is bound) and InterPodAffinity (required anti-affinity, both the
// pod's own and that of pods already placed). Guarantees: a pod that fits nowhere stays Pending
// with PodScheduled=False/Unschedulable and one FailedScheduling Warning event per distinct
// message, worded like kube-scheduler's; a pod with scheduling gates is left alone until they
// are removed; unschedulable pods are retried on every change to
// nodes, pods, PVs, PVCs or storage classes; among feasible nodes the least loaded wins.
// Cost: work per change. Started, it keeps a view of the cluster (nodes, each node's placed
// pods' count and requests, the pending pods, PVs, claims, classes; listed once) from the
// store's change feed, as kube-scheduler keeps its cache from informers: a change decodes the
// one object it names, and a pass looks at the pending pods only. Not started (a caller's
// schedule_pending()), each pass lists the cluster afresh.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/label_selector.hpp>
#include <vck/api/quantity.hpp>
#include <vck/api/time.hpp>
#include <vck/sandbox/cluster/change_feed.hpp>
#include <vck/sandbox/cluster/event_emitter.hpp>
#include <vck/sandbox/cluster/node_affinity.hpp>
#include <vck/sandbox/cluster/sim_loop.hpp>
#include <vck/sandbox/cluster/volume_binder.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace vck::sandbox {

class Scheduler {
public:
    struct Options {
        std::string name = "default-scheduler";
    };

    explicit Scheduler(ObjectStore& store) : Scheduler(store, Options{}) {}
    Scheduler(ObjectStore& store, Options opts)
        : store_(store), opts_(std::move(opts)), events_(store, opts_.name), feed_(store, wanted),
          loop_(store, "scheduler", wanted,
                [this] {
                    schedule_pending();
                    return std::optional<SimLoop::Clock::time_point>{};
                }) {}
    ~Scheduler() { stop(); }

    void start() {
        feed_.start();  // before the loop, so no change falls between its first lists and the feed
        loop_.start();
    }
    void stop() {
        loop_.stop();
        feed_.stop();
        loaded_ = false;
    }

    /// One scheduling attempt for every pending pod; returns how many were bound.
    int schedule_pending() {
        if (!feed_.started() || !loaded_) load();
        else take_feed();
        // Pointers into the view: a pod bound leaves it only as schedule_one's last step, and
        // the others stay where they are (std::map).
        std::vector<const api::Pod*> queue;
        for (const auto& [key, p] : view_.pending) queue.push_back(&p);
        std::stable_sort(queue.begin(), queue.end(), [](const api::Pod* a, const api::Pod* b) {
            return a->metadata.creationTimestamp < b->metadata.creationTimestamp;
        });
        int bound = 0;
        for (const auto* pod : queue)
            if (schedule_one(*pod, view_)) ++bound;
        return bound;
    }

private:
    static inline const ResourceId pods_id{"", "v1", "pods"};
    static inline const ResourceId nodes_id{"", "v1", "nodes"};
    static inline const ResourceId pvs_id{"", "v1", "persistentvolumes"};
    static inline const ResourceId pvcs_id{"", "v1", "persistentvolumeclaims"};
    static inline const ResourceId classes_id{"storage.k8s.io", "v1", "storageclasses"};

    struct NodeView {
        api::Node node;
        NodeFacts facts;
        std::vector<api::Taint> taints;  // spec taints plus those its conditions imply
    };

    static bool wanted(const StoreChange& c) {
        if (c.group == "storage.k8s.io") return c.resource == "storageclasses";
        return c.group.empty() && (c.resource == "pods" || c.resource == "nodes" || c.resource == "persistentvolumes" ||
                                   c.resource == "persistentvolumeclaims");
    }

    /// A node's placed pods, as the filters and the scoring read them.
    struct NodeLoad {
        int pods = 0;
        // Summed requests in thousandths (millicores, millibytes), as integers: a pod's removal
        // then takes away exactly what its arrival added.
        std::map<std::string, std::int64_t> used;
    };
    static std::int64_t milli(double v) { return std::llround(v * 1000); }

    /// What the scheduler knows of the cluster; kept from the feed when started.
    struct View {
        std::map<std::string, NodeView> nodes;  // by name
        // Bound pods not terminated, by ns/name: only what the filters read (namespace, uid,
        // labels, nodeName, affinity), so the view stays small beside the store.
        std::map<std::string, api::Pod> placed;
        std::map<std::string, NodeLoad> load;                  // by node name
        std::set<std::string> anti;                            // placed pods with required anti-affinity
        std::map<std::string, api::Pod> pending;               // by ns/name
        // Pods this scheduler bound, by ns/name, with the resourceVersion read back after the
        // binding: the feed is filled after the store's lock is released, so a change older
        // than that (the pod still unbound) can arrive after the bind, and would otherwise
        // free the node for a pod its anti-affinity excludes (kube-scheduler's assumed pods).
        std::map<std::string, std::uint64_t> assumed;
        std::map<std::string, api::PersistentVolume> pvs;      // by name
        std::map<std::string, api::PersistentVolumeClaim> pvcs;  // ns/name
        json::value classes;                                   // the StorageClass list
        // The store's resourceVersion before the lists were read: every change up to it is in
        // them, so one the feed hands over late is not applied again over a newer state.
        std::int64_t listed_rv = 0;
    };

    /// Why a node was rejected; `resolvable` is false for UnschedulableAndUnresolvable.
    struct Rejection {
        std::vector<std::string> reasons;
        bool resolvable = false;
    };

    static std::uint64_t resource_version(const json::value& item) {
        auto rv = api::string_at(item, {"metadata", "resourceVersion"});
        std::uint64_t n = 0;
        std::from_chars(rv.data(), rv.data() + rv.size(), n);
        return n;
    }

    static std::string pod_key(const api::Pod& p) { return p.metadata.namespace_ + "/" + p.metadata.name; }

    /// The view from lists of the whole cluster.
    void load() {
        feed_.clear();  // the lists below are at least as new
        view_ = View{};
        view_.listed_rv = store_.resource_version();
        // Pods are listed first: every node, PV, PVC or class written before a pod was created
        // is then seen together with it (a cordon just before a create is never missed).
        // Each list is named: a range-for over `list(...).at("items")` would read a destroyed temporary.
        const auto pod_list = store_.list(pods_id, "");
        for (const auto& item : pod_list.at("items").as_array())
            set_pod(stored_object::object_key(api::string_at(item, {"metadata", "namespace"}),
                                              api::string_at(item, {"metadata", "name"})),
                    &item);
        const auto node_list = store_.list(nodes_id, "");
        for (const auto& item : node_list.at("items").as_array()) set_node(&item);
        const auto pv_list = store_.list(pvs_id, "");
        for (const auto& item : pv_list.at("items").as_array()) set_pv(std::string(api::string_at(item, {"metadata", "name"})), &item);
        const auto pvc_list = store_.list(pvcs_id, "");
        for (const auto& item : pvc_list.at("items").as_array())
            set_pvc(stored_object::object_key(api::string_at(item, {"metadata", "namespace"}),
                                              api::string_at(item, {"metadata", "name"})),
                    &item);
        view_.classes = store_.list(classes_id, "");
        loaded_ = true;
    }

    /// The feed's changes into the view, each object decoded once (its newest state).
    void take_feed() {
        std::map<std::pair<std::string, std::string>, const StoreChange*> newest;  // (resource, key)
        auto changes = feed_.take();
        bool classes = false;
        for (const auto& c : changes) {
            if (c.rv <= view_.listed_rv) continue;
            if (c.resource == "storageclasses") {
                classes = true;
                continue;
            }
            newest[{c.resource, c.namespace_.empty() ? c.name : c.namespace_ + "/" + c.name}] = &c;
        }
        for (const auto& [rk, c] : newest) {
            const json::value* obj = c->type == "DELETED" ? nullptr : c->object.get();
            const auto& [resource, key] = rk;
            if (resource == "pods") set_pod(key, obj);
            else if (resource == "nodes") set_node(obj, key);
            else if (resource == "persistentvolumes") set_pv(key, obj);
            else set_pvc(key, obj);
        }
        if (classes) view_.classes = store_.list(classes_id, "");
    }

    void set_node(const json::value* item, const std::string& gone = {}) {
        if (!item) {
            view_.nodes.erase(gone);
            return;
        }
        NodeView v;
        v.node = api::from_json<api::Node>(*item);
        v.facts.name = v.node.metadata.name;
        v.facts.labels = {v.node.metadata.labels.begin(), v.node.metadata.labels.end()};
        v.taints = v.node.spec.taints;
        std::string ready = "Unknown";
        if (v.node.status)
            for (const auto& c : v.node.status->conditions) {
                if (c.type == "Ready") ready = c.status;
                auto pressure = [&](const char* type, const char* key) {
                    if (c.type == type && c.status == "True") v.taints.push_back(api::Taint{key, "", "NoSchedule", ""});
                };
                pressure("DiskPressure", "node.kubernetes.io/disk-pressure");
                pressure("MemoryPressure", "node.kubernetes.io/memory-pressure");
                pressure("PIDPressure", "node.kubernetes.io/pid-pressure");
            }
        if (ready == "False") v.taints.push_back(api::Taint{"node.kubernetes.io/not-ready", "", "NoSchedule", ""});
        else if (ready != "True") v.taints.push_back(api::Taint{"node.kubernetes.io/unreachable", "", "NoSchedule", ""});
        auto name = v.facts.name;
        view_.nodes.insert_or_assign(std::move(name), std::move(v));
    }

    void set_pv(const std::string& name, const json::value* item) {
        if (item) view_.pvs.insert_or_assign(name, api::from_json<api::PersistentVolume>(*item));
        else view_.pvs.erase(name);
    }
    void set_pvc(const std::string& key, const json::value* item) {
        if (item) view_.pvcs.insert_or_assign(key, api::from_json<api::PersistentVolumeClaim>(*item));
        else view_.pvcs.erase(key);
    }

    /// A pod's newest state (none: deleted): placed (bound, not finished), pending, or neither.
    void set_pod(const std::string& key, const json::value* item) {
        if (auto a = view_.assumed.find(key); a != view_.assumed.end()) {
            if (item && resource_version(*item) < a->second) return;  // older than our own bind
            view_.assumed.erase(a);
        }
        unplace(key);
        view_.pending.erase(key);
        if (!item) return;
        using api::string_at;
        if (!string_at(*item, {"spec", "nodeName"}).empty()) {
            auto phase = string_at(*item, {"status", "phase"});
            if (phase != "Succeeded" && phase != "Failed") {
                auto pod = api::from_json<api::Pod>(*item);
                place(key, pod, pod.spec.nodeName);
            }
            return;
        }
        if (awaits_this_scheduler(*item)) view_.pending.insert_or_assign(key, api::from_json<api::Pod>(*item));
    }

    /// Counts a bound pod on `node`; keeps only what the filters read of it.
    void place(const std::string& key, const api::Pod& pod, const std::string& node) {
        unplace(key);
        auto& load = view_.load[node];
        ++load.pods;
        for (const auto& [k, v] : requests(pod)) load.used[k] += milli(v);
        api::Pod slim;
        slim.metadata.namespace_ = pod.metadata.namespace_;
        slim.metadata.name = pod.metadata.name;
        slim.metadata.uid = pod.metadata.uid;
        slim.metadata.labels = pod.metadata.labels;
        slim.spec.nodeName = node;
        slim.spec.containers = pod.spec.containers;  // their requests, to uncount them
        for (auto& c : slim.spec.containers) {
            api::Container kept;
            kept.name = c.name;
            kept.resources = std::move(c.resources);
            c = std::move(kept);
        }
        slim.spec.affinity = pod.spec.affinity;
        if (!anti_terms(slim).empty()) view_.anti.insert(key);
        view_.placed.insert_or_assign(key, std::move(slim));
    }
    void unplace(const std::string& key) {
        auto it = view_.placed.find(key);
        if (it == view_.placed.end()) return;
        auto& load = view_.load[it->second.spec.nodeName];
        --load.pods;
        for (const auto& [k, v] : requests(it->second)) load.used[k] -= milli(v);
        view_.anti.erase(key);
        view_.placed.erase(it);
    }

    /// A pod this scheduler should place: no node yet, its schedulerName (or none), not being
    /// deleted, not finished. Read from the JSON, so a pass with nothing to do decodes nothing.
    bool awaits_this_scheduler(const json::value& pod) const {
        using api::string_at;
        if (!string_at(pod, {"spec", "nodeName"}).empty() || !string_at(pod, {"metadata", "deletionTimestamp"}).empty())
            return false;
        auto phase = string_at(pod, {"status", "phase"});
        if (phase == "Succeeded" || phase == "Failed") return false;
        // Scheduling gates keep a pod out of the queue (the SchedulingGates PreEnqueue plugin):
        // no attempt, no event; the PodScheduled=False/SchedulingGated condition is the API
        // server's, set when the pod was stored.
        const auto* spec = pod.is_object() ? pod.get_object().if_contains("spec") : nullptr;
        const auto* gates = spec && spec->is_object() ? spec->get_object().if_contains("schedulingGates") : nullptr;
        if (gates && gates->is_array() && !gates->get_array().empty()) return false;
        auto scheduler = string_at(pod, {"spec", "schedulerName"});
        return scheduler.empty() || scheduler == opts_.name;
    }

    // ---- volumes ------------------------------------------------------------------------

    struct VolumePlan {
        std::vector<const api::PersistentVolume*> bound;           // must be reachable from the node
        std::vector<const api::PersistentVolumeClaim*> wait;       // WaitForFirstConsumer, unbound
    };

    /// The VolumeBinding plugin's PreFilter: a message when no node can help.
    static std::optional<std::string> plan_volumes(const api::Pod& pod, const View& s, VolumePlan& plan) {
        for (const auto& v : pod.spec.volumes) {
            if (!v.persistentVolumeClaim) continue;
            const auto& claim = v.persistentVolumeClaim->claimName;
            auto it = s.pvcs.find(pod.metadata.namespace_ + "/" + claim);
            if (it == s.pvcs.end()) return "persistentvolumeclaim \"" + claim + "\" not found";
            const auto& pvc = it->second;
            if (!pvc.metadata.deletionTimestamp.empty()) return "persistentvolumeclaim \"" + claim + "\" is being deleted";
            if (pvc.spec.volumeName.empty()) {
                auto cls = claim_class(pvc, s.classes);
                if (binding_mode(cls, s.classes) != "WaitForFirstConsumer")
                    return std::string("pod has unbound immediate PersistentVolumeClaims");
                plan.wait.push_back(&pvc);
                continue;
            }
            auto pv = s.pvs.find(pvc.spec.volumeName);
            if (pv == s.pvs.end()) return "persistentvolume \"" + pvc.spec.volumeName + "\" not found";
            plan.bound.push_back(&pv->second);
        }
        return std::nullopt;
    }

    static bool pv_reaches(const api::PersistentVolume& pv, const NodeFacts& node) {
        if (!pv.spec.nodeAffinity || !pv.spec.nodeAffinity->required) return true;
        return node_selector_matches(*pv.spec.nodeAffinity->required, node);
    }

    /// Whether a StorageClass's allowedTopologies admit `node` (none: every node). Terms are
    /// ORed, a term's expressions ANDed, each the node's label value among its values.
    static bool topology_allows(const json::object* cls, const NodeFacts& node) {
        const auto* terms = cls ? cls->if_contains("allowedTopologies") : nullptr;
        if (!terms || !terms->is_array() || terms->get_array().empty()) return true;
        for (const auto& term : terms->get_array()) {
            const auto* exprs = term.is_object() ? term.get_object().if_contains("matchLabelExpressions") : nullptr;
            bool all = true;
            if (exprs && exprs->is_array())
                for (const auto& e : exprs->get_array()) {
                    auto key = api::string_at(e, {"key"});
                    auto it = node.labels.find(std::string(key));
                    bool in = false;
                    if (const auto* vals = e.is_object() ? e.get_object().if_contains("values") : nullptr; vals && vals->is_array())
                        for (const auto& v : vals->get_array())
                            in = in || (it != node.labels.end() && v.is_string() && v.get_string() == it->second);
                    all = all && in;
                }
            if (all) return true;
        }
        return false;
    }

    /// The PVs chosen on `node` for the plan's WaitForFirstConsumer claims (nullptr: a volume
    /// to be provisioned there by the class's provisioner), or nullopt. A pre-made PV wins; a
    /// claim whose node was selected already is provisioned there only.
    static std::optional<std::vector<const api::PersistentVolume*>> pick_volumes(const VolumePlan& plan, const View& s,
                                                                                  const NodeFacts& node) {
        std::vector<const api::PersistentVolume*> chosen;
        for (const auto* pvc : plan.wait) {
            auto cls = claim_class(*pvc, s.classes);
            auto selected = pvc->metadata.annotations.find(selected_node_annotation);
            if (selected != pvc->metadata.annotations.end()) {
                if (selected->second != node.name) return std::nullopt;
                chosen.push_back(nullptr);  // being provisioned there
                continue;
            }
            auto* pv = best_pv_for(s.pvs, *pvc, cls, [&](const api::PersistentVolume& p) {
                return pv_reaches(p, node) && std::find(chosen.begin(), chosen.end(), &p) == chosen.end();
            });
            if (!pv && !dynamic_provisioner(cls, s.classes).empty() && topology_allows(find_class(cls, s.classes), node)) {
                chosen.push_back(nullptr);
                continue;
            }
            if (!pv) return std::nullopt;
            chosen.push_back(pv);
        }
        return chosen;
    }

    // ---- pods and resources ---------------------------------------------------------------

    static std::map<std::string, double> requests(const api::Pod& pod) {
        std::map<std::string, double> out;
        for (const auto& c : pod.spec.containers) {
            if (!c.resources.is_object()) continue;
            const auto* req = c.resources.as_object().if_contains("requests");
            if (!req || !req->is_object()) req = c.resources.as_object().if_contains("limits");  // defaulted from limits
            if (!req || !req->is_object()) continue;
            for (const auto& kv : req->as_object())
                if (kv.value().is_string())
                    if (auto q = api::quantity_value(kv.value().get_string())) out[std::string(kv.key())] += *q;
        }
        return out;
    }

    static bool selects(const api::PodAffinityTerm& term, const api::Pod& owner, const api::Pod& other) {
        if (!term.labelSelector) return false;  // a nil selector matches no pods
        auto namespaces = term.namespaces;
        if (namespaces.empty()) namespaces.push_back(owner.metadata.namespace_);
        if (std::find(namespaces.begin(), namespaces.end(), other.metadata.namespace_) == namespaces.end()) return false;
        try {
            return api::LabelSelector::from_json(api::to_json(*term.labelSelector)).matches(other.metadata.labels);
        } catch (const std::exception&) {
            return false;
        }
    }

    static const std::vector<api::PodAffinityTerm>& anti_terms(const api::Pod& p) {
        static const std::vector<api::PodAffinityTerm> none;
        if (p.spec.affinity && p.spec.affinity->podAntiAffinity)
            return p.spec.affinity->podAntiAffinity->requiredDuringSchedulingIgnoredDuringExecution;
        return none;
    }

    static const NodeView* find_node(const View& s, const std::string& name) {
        auto it = s.nodes.find(name);
        return it == s.nodes.end() ? nullptr : &it->second;
    }

    static bool same_domain(const NodeFacts& a, const NodeFacts& b, const std::string& key) {
        auto x = a.labels.find(key);
        auto y = b.labels.find(key);
        return x != a.labels.end() && y != b.labels.end() && x->second == y->second;
    }

    // ---- filters ----------------------------------------------------------------------------

    std::optional<Rejection> filter(const api::Pod& pod, const NodeView& n, const View& s, const VolumePlan& plan) const {
        auto hard = [](std::string why) { return Rejection{{std::move(why)}, false}; };
        if (n.node.spec.unschedulable.value_or(false) &&
            !tolerated(pod.spec.tolerations, api::Taint{"node.kubernetes.io/unschedulable", "", "NoSchedule", ""}))
            return hard("node(s) were unschedulable");
        for (const auto& t : n.taints) {
            if (t.effect != "NoSchedule" && t.effect != "NoExecute") continue;
            if (!tolerated(pod.spec.tolerations, t)) return hard("node(s) had untolerated taint {" + t.key + ": " + t.value + "}");
        }
        if (!pod_matches_node(pod.spec, n.facts)) return hard("node(s) didn't match Pod's node affinity/selector");

        Rejection insufficient{{}, true};
        static const NodeLoad idle;
        auto load_it = s.load.find(n.facts.name);
        const NodeLoad& load = load_it == s.load.end() ? idle : load_it->second;
        auto used = [&](const std::string& k) {
            auto it = load.used.find(k);
            return it == load.used.end() ? std::int64_t(0) : it->second;
        };
        const auto* alloc = n.node.status ? &n.node.status->allocatable : nullptr;
        auto allocatable = [&](const std::string& k) -> std::optional<double> {
            if (!alloc) return std::nullopt;
            auto it = alloc->find(k);
            if (it == alloc->end()) return std::nullopt;
            return api::quantity_value(it->second);
        };
        if (auto max = allocatable("pods"); max && load.pods + 1 > *max) insufficient.reasons.push_back("Too many pods");
        for (const auto& [k, v] : requests(pod)) {
            if (k != "cpu" && k != "memory" && k != "ephemeral-storage") continue;
            auto cap = allocatable(k);
            if (cap && used(k) + milli(v) > milli(*cap)) insufficient.reasons.push_back("Insufficient " + k);
        }
        if (!insufficient.reasons.empty()) return insufficient;

        for (const auto* pv : plan.bound)
            if (!pv_reaches(*pv, n.facts)) return hard("node(s) had volume node affinity conflict");
        if (!plan.wait.empty() && !pick_volumes(plan, s, n.facts))
            return hard("node(s) didn't find available persistent volumes to bind");

        // InterPodAffinity's order: the pod's own anti-affinity, then that of placed pods.
        for (const auto& term : anti_terms(pod))
            for (const auto& [key, other] : s.placed) {
                if (other.metadata.uid == pod.metadata.uid) continue;
                const auto* on = find_node(s, other.spec.nodeName);
                if (on && same_domain(on->facts, n.facts, term.topologyKey) && selects(term, pod, other))
                    return Rejection{{"node(s) didn't match pod anti-affinity rules"}, true};
            }
        for (const auto& key : s.anti) {
            const auto& other = s.placed.at(key);
            const auto* on = find_node(s, other.spec.nodeName);
            if (!on) continue;
            for (const auto& term : anti_terms(other))
                if (same_domain(on->facts, n.facts, term.topologyKey) && selects(term, other, pod))
                    return Rejection{{"node(s) didn't satisfy existing pods anti-affinity rules"}, true};
        }
        return std::nullopt;
    }

    static std::string histogram(const std::map<std::string, int>& counts) {
        std::vector<std::string> parts;
        for (const auto& [reason, n] : counts) parts.push_back(std::to_string(n) + " " + reason);
        std::sort(parts.begin(), parts.end());
        std::string out;
        for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
        return out;
    }

    // ---- one pod ---------------------------------------------------------------------------

    bool schedule_one(const api::Pod& pod, View& s) {
        std::size_t total = s.nodes.size();
        std::string head = "0/" + std::to_string(total) + " nodes are available: ";
        VolumePlan plan;
        if (auto why = plan_volumes(pod, s, plan)) {
            std::map<std::string, int> pre{{"Preemption is not helpful for scheduling", static_cast<int>(total)}};
            report_unschedulable(pod, head + *why + ". preemption: " + head + histogram(pre) + ".");
            return false;
        }
        std::map<std::string, int> reasons, preemption;
        std::vector<const NodeView*> feasible;
        for (const auto& [name, n] : s.nodes) {
            auto r = filter(pod, n, s, plan);
            if (!r) {
                feasible.push_back(&n);
                continue;
            }
            for (const auto& why : r->reasons) ++reasons[why];
            ++preemption[r->resolvable ? "No preemption victims found for incoming pod"
                                       : "Preemption is not helpful for scheduling"];
        }
        if (feasible.empty()) {
            std::string msg = head;
            if (total == 0) msg = "no nodes available to schedule pods";
            else msg += histogram(reasons) + ". preemption: " + head + histogram(preemption) + ".";
            report_unschedulable(pod, msg);
            return false;
        }
        auto load = [&](const NodeView* n) {
            auto it = s.load.find(n->facts.name);
            return it == s.load.end() ? 0 : it->second.pods;
        };
        auto best = *std::min_element(feasible.begin(), feasible.end(), [&](const NodeView* a, const NodeView* b) {
            auto la = load(a), lb = load(b);
            return la != lb ? la < lb : a->facts.name < b->facts.name;
        });
        bool provisioning = false;
        if (!plan.wait.empty()) {
            auto chosen = pick_volumes(plan, s, best->facts);
            for (std::size_t i = 0; i < plan.wait.size(); ++i) {
                if (!(*chosen)[i]) {
                    // VolumeBinding's PreBind: the claim is given its node, and the pod waits
                    // (unbound, no event) until the provisioner's PV is bound to the claim;
                    // a later pass then places it through that PV's node affinity.
                    provisioning = true;
                    const auto& claim = *plan.wait[i];
                    if (claim.metadata.annotations.contains(selected_node_annotation)) continue;
                    try {
                        json::value ann = json::object{
                            {"metadata", json::object{{"resourceVersion", claim.metadata.resourceVersion},
                                                      {"annotations", json::object{{selected_node_annotation, best->facts.name}}}}}};
                        store_.patch(pvcs_id, claim.metadata.namespace_, claim.metadata.name, client::PatchType::Merge, ann);
                    } catch (const StoreError&) {
                        return false;  // the claim changed meanwhile: the next pass tries again
                    }
                    continue;
                }
                const auto& pv = *(*chosen)[i];
                if (pv.spec.claimRef) continue;  // pre-bound to this claim already
                json::value patch = json::object{
                    {"metadata", json::object{{"resourceVersion", pv.metadata.resourceVersion},
                                              {"annotations", json::object{{"pv.kubernetes.io/bound-by-controller", "yes"}}}}},
                    {"spec", json::object{{"claimRef", claim_ref_for(*plan.wait[i])}}}};
                try {
                    auto updated = store_.patch(pvs_id, "", pv.metadata.name, client::PatchType::Merge, patch);
                    s.pvs.insert_or_assign(pv.metadata.name, api::from_json<api::PersistentVolume>(updated));
                } catch (const StoreError&) {
                    return false;  // the PV changed meanwhile: the next pass tries again
                }
            }
        }
        if (provisioning) return false;
        json::value binding = json::object{
            {"apiVersion", "v1"}, {"kind", "Binding"},
            {"metadata", json::object{{"name", pod.metadata.name}, {"namespace", pod.metadata.namespace_}}},
            {"target", json::object{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", best->facts.name}}}};
        try {
            store_.bind(pod.metadata.namespace_, pod.metadata.name, binding);
        } catch (const StoreError&) {
            return false;  // deleted or bound by someone else meanwhile
        }
        const auto key = pod_key(pod);
        place(key, pod, best->facts.name);
        try {
            auto stored = store_.get(pods_id, pod.metadata.namespace_, pod.metadata.name);
            s.assumed.insert_or_assign(key, resource_version(stored));
            events_.emit(stored, "Normal", "Scheduled",
                         "Successfully assigned " + pod.metadata.namespace_ + "/" + pod.metadata.name + " to " +
                             best->facts.name);
        } catch (const StoreError&) {
        }
        s.pending.erase(key);  // last: `pod` may be this entry
        return true;
    }

    /// PodScheduled=False/Unschedulable with `message`, and a FailedScheduling event, unless
    /// the pod already says exactly that.
    void report_unschedulable(const api::Pod& pod, const std::string& message) {
        json::array conditions;
        bool same = false;
        if (pod.status)
            for (const auto& c : pod.status->conditions) {
                if (c.type == "PodScheduled") {
                    same = c.status == "False" && c.reason == "Unschedulable" && c.message == message;
                    continue;
                }
                conditions.push_back(api::to_json(c));
            }
        if (same) return;
        conditions.push_back(json::object{{"type", "PodScheduled"}, {"status", "False"}, {"lastProbeTime", nullptr},
                                          {"lastTransitionTime", api::format_rfc3339(std::chrono::system_clock::now())},
                                          {"reason", "Unschedulable"}, {"message", message}});
        json::value patch = json::object{
            {"metadata", json::object{{"resourceVersion", pod.metadata.resourceVersion}}},
            {"status", json::object{{"conditions", std::move(conditions)}}}};
        json::value stored;
        try {
            stored = store_.patch(pods_id, pod.metadata.namespace_, pod.metadata.name, client::PatchType::Merge, patch, "status");
        } catch (const StoreError&) {
            return;  // changed meanwhile; the change brings another pass
        }
        events_.emit(stored, "Warning", "FailedScheduling", message);
    }

    ObjectStore& store_;
    Options opts_;
    EventEmitter events_;
    ChangeFeed feed_;
    bool loaded_ = false;
    View view_;  // the loop's thread only
    SimLoop loop_;
};

} // namespace vck::sandbox
