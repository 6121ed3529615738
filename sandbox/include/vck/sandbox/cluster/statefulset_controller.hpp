// StatefulSetController: the sandbox's statefulset controller (of kube-controller-manager), one
// SimLoop pass over StatefulSets, their pods and claims. For a StatefulSet `web` of N replicas:
// - pods web-0 .. web-(N-1), each from the template with labels
//   statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index and
//   controller-revision-hash (web-<hash of the template>; no ControllerRevision objects are
//   written: the hash is computed from the template alone), hostname = its name, subdomain =
//   spec.serviceName, owned (controller) by the set;
// - before a pod, each volumeClaimTemplate's claim <template>-web-<ordinal> (labels: the
//   template's and the selector's matchLabels), mounted in the pod as the template's name; the
//   claims outlive their pods (Retain) and a recreated pod uses them again;
// - OrderedReady creates one pod at a time, the next only once every lower one is Running and
//   Ready, and scales down from the highest ordinal, one at a time, only while all others are
//   Running and Ready; Parallel creates and deletes all at once;
// - a pod that is missing (deleted) comes back with the same name; a Failed or Succeeded one is
//   deleted to be recreated; a Pending one whose claims are missing has them made again;
// - RollingUpdate replaces, once all pods are Running and Ready, the highest-ordinal pod at or
//   above the partition whose revision is not the update revision, one at a time; OnDelete
//   only gives new pods the new template;
// - status: replicas, readyReplicas, currentReplicas, updatedReplicas, availableReplicas
//   (ready; minReadySeconds is not modelled), currentRevision, updateRevision,
//   observedGeneration, collisionCount;
// - Events as the real controller's: SuccessfulCreate "create Claim www-web-0 Pod web-0 in
//   StatefulSet web success", "create Pod web-0 in StatefulSet web successful",
//   SuccessfulDelete "delete Pod web-2 in StatefulSet web successful".
// Not modelled: whenDeleted/whenScaled Delete (claims are always retained), ordinals.start,
// maxUnavailable, orphan adoption.
// Cost: work per change. Started, a pass syncs only the StatefulSets a change names
// (owner_changes.hpp: the changed set, the controller of a changed pod, every set of the
// namespace of a changed claim); not started (tests calling sync_all()), every set.
#pragma once

#include <vck/sandbox/cluster/event_emitter.hpp>
#include <vck/sandbox/cluster/owner_changes.hpp>
#include <vck/sandbox/cluster/pod_creator.hpp>
#include <vck/sandbox/storage/object_store.hpp>
#include <vck/sandbox/cluster/sim_loop.hpp>
#include <vck/sandbox/cluster/controller_ref.hpp>
#include <vck/sandbox/cluster/workload_pods.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace vck::sandbox {

class StatefulSetController {
public:
    explicit StatefulSetController(ObjectStore& store)
        : store_(store), events_(store, "statefulset-controller"),
          changes_(store, sets_id, "StatefulSet",
                   {OwnerChanges::Dependent{"", "pods", true}, OwnerChanges::Dependent{"", "persistentvolumeclaims", false}}),
          loop_(store, "statefulset-controller",
                [](const StoreChange& c) {
                    if (c.group == "apps") return c.resource == "statefulsets";
                    return c.group.empty() && (c.resource == "pods" || c.resource == "persistentvolumeclaims");
                },
                [this] { return pass(); }) {}
    ~StatefulSetController() { stop(); }
    StatefulSetController(const StatefulSetController&) = delete;
    StatefulSetController& operator=(const StatefulSetController&) = delete;

    /// How pods are created (before start(); default: into the store, see pod_creator.hpp).
    void set_pod_creator(PodCreator c) { create_pod_ = std::move(c); }
    void start() {
        changes_.start();  // before the loop, so no change falls between its first list and the feed
        loop_.start();
    }
    void stop() {
        loop_.stop();
        changes_.stop();
    }

    /// The loop's pass: the StatefulSets changes name (every one when not started).
    std::optional<SimLoop::Clock::time_point> pass() {
        if (!changes_.started()) {
            sync_all();
            return std::nullopt;
        }
        std::lock_guard lock(pass_mu_);
        return changes_.sync_due("apps/v1", [this](const json::value& set) -> std::optional<SimLoop::Clock::time_point> {
            if (workload_pods::terminating(set)) return std::nullopt;
            try {
                sync(set);
            } catch (const StoreError&) {
                // A conflict or a vanished object: again shortly, against the new state.
                return SimLoop::Clock::now() + std::chrono::milliseconds(100);
            }
            return std::nullopt;
        });
    }

    /// One pass over every StatefulSet (tests may call it directly).
    void sync_all() {
        std::lock_guard lock(pass_mu_);
        auto sets = store_.list(sets_id, "");
        for (auto& set : sets.at("items").as_array()) {
            if (workload_pods::terminating(set)) continue;
            set.as_object()["apiVersion"] = "apps/v1";  // list items carry no kind; events need it
            set.as_object()["kind"] = "StatefulSet";
            try {
                sync(set);
            } catch (const StoreError&) {
                loop_.wake();  // a conflict or a vanished object: the next pass sees the new state
            }
        }
    }

    /// The controller-revision-hash of a template: FNV-1a (32 bit) of its canonical JSON,
    /// its decimal digits spelled in the alphabet of apimachinery's SafeEncodeString.
    static std::string revision_hash(const json::value& tmpl) {
        std::uint32_t h = 2166136261u;
        for (unsigned char c : canonical(tmpl)) {
            h ^= c;
            h *= 16777619u;
        }
        static constexpr char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
        std::string out;
        for (char d : std::to_string(h)) out += alphabet[static_cast<unsigned char>(d) % 27];
        return out;
    }

private:
    static inline const ResourceId sets_id{"apps", "v1", "statefulsets"};
    static inline const ResourceId pods_id{"", "v1", "pods"};
    static inline const ResourceId pvcs_id{"", "v1", "persistentvolumeclaims"};

    /// JSON with object keys sorted, so equal templates hash equally whatever their key order.
    static std::string canonical(const json::value& v) {
        if (const auto* o = v.if_object()) {
            std::vector<std::string_view> keys;
            for (const auto& kv : *o) keys.push_back(kv.key());
            std::sort(keys.begin(), keys.end());
            std::string out = "{";
            for (std::size_t i = 0; i < keys.size(); ++i)
                out += (i ? "," : "") + json::serialize(json::string(keys[i])) + ":" + canonical(o->at(keys[i]));
            return out + "}";
        }
        if (const auto* a = v.if_array()) {
            std::string out = "[";
            for (std::size_t i = 0; i < a->size(); ++i) out += (i ? "," : "") + canonical((*a)[i]);
            return out + "]";
        }
        return json::serialize(v);
    }

    static bool running_and_ready(const json::value& pod) {
        return workload_pods::str(workload_pods::at(&pod, "status"), "phase") == "Running" && workload_pods::ready(pod) &&
               !workload_pods::terminating(pod);
    }

    static std::int64_t int_at(const json::value* v, std::string_view key, std::int64_t fallback) {
        const auto* x = workload_pods::at(v, key);
        return x && x->is_int64() ? x->get_int64() : fallback;
    }

    /// The ordinal of a pod named <set>-<n>, or -1.
    static std::int64_t ordinal_of(const std::string& set, const std::string& pod) {
        if (pod.size() <= set.size() + 1 || pod.compare(0, set.size(), set) != 0 || pod[set.size()] != '-') return -1;
        std::int64_t n = 0;
        for (std::size_t i = set.size() + 1; i < pod.size(); ++i) {
            if (pod[i] < '0' || pod[i] > '9' || n > 100000000) return -1;
            n = n * 10 + (pod[i] - '0');
        }
        return n;
    }

    static std::string claim_name(const json::value& vct, const std::string& pod) {
        return workload_pods::meta(vct, "name") + "-" + pod;
    }

    void sync(const json::value& set) {
        deleted_.clear();
        const auto ns = workload_pods::meta(set, "namespace");
        const auto name = workload_pods::meta(set, "name");
        const auto uid = workload_pods::meta(set, "uid");
        const auto* spec = workload_pods::at(&set, "spec");
        const auto replicas = int_at(spec, "replicas", 1);
        const bool parallel = workload_pods::str(spec, "podManagementPolicy") == "Parallel";
        const auto* strategy = workload_pods::at(spec, "updateStrategy");
        const bool rolling = workload_pods::str(strategy, "type") != "OnDelete";
        const auto partition = int_at(workload_pods::at(strategy, "rollingUpdate"), "partition", 0);
        const auto* tmpl = workload_pods::at(spec, "template");
        const std::string update_rev = name + "-" + revision_hash(tmpl ? *tmpl : json::value());

        auto pod_list = store_.list(pods_id, ns);
        std::map<std::int64_t, json::value> pods;  // ordinal -> pod
        std::vector<json::value> extra;             // ordinals at or above replicas
        for (const auto& p : pod_list.at("items").as_array()) {
            if (controller_ref::controller_uid(p) != uid) continue;
            auto ord = ordinal_of(name, workload_pods::meta(p, "name"));
            if (ord < 0) continue;
            if (ord < replicas) pods[ord] = p;
            else extra.push_back(p);
        }
        auto revision = [](const json::value& p) {
            return workload_pods::str(workload_pods::at(workload_pods::at(&p, "metadata"), "labels"), "controller-revision-hash");
        };

        // Failed or Succeeded pods are deleted, to be created again.
        for (auto it = pods.begin(); it != pods.end();)
            if (workload_pods::finished(it->second) && !workload_pods::terminating(it->second)) {
                delete_pod(set, it->second);
                it = pods.erase(it);
            } else {
                ++it;
            }

        bool waiting = false;  // OrderedReady: an earlier pod is not yet Running and Ready
        for (std::int64_t i = 0; i < replicas && !waiting; ++i) {
            auto found = pods.find(i);
            if (found == pods.end()) {
                pods[i] = create_pod(set, i, update_rev);
                if (!parallel) waiting = true;
                continue;
            }
            // A Pending pod whose claim was deleted (its node lost, say) would wait forever:
            // its missing claims are made again, as the real controller does.
            if (pending(found->second)) create_missing_claims(set, workload_pods::meta(found->second, "name"));
            if (!parallel && !running_and_ready(found->second)) waiting = true;
        }

        // Scale down, from the highest ordinal.
        std::sort(extra.begin(), extra.end(), [&](const json::value& a, const json::value& b) {
            return ordinal_of(name, workload_pods::meta(a, "name")) > ordinal_of(name, workload_pods::meta(b, "name"));
        });
        bool all_healthy = !waiting;
        for (const auto& [i, p] : pods) all_healthy = all_healthy && running_and_ready(p);
        for (const auto& p : extra) all_healthy = all_healthy && (workload_pods::terminating(p) || running_and_ready(p));
        for (const auto& p : extra) {
            if (workload_pods::terminating(p)) {
                if (!parallel) break;
                continue;
            }
            if (!parallel && !all_healthy) break;
            delete_pod(set, p);
            if (!parallel) break;
        }

        // Rolling update: the highest ordinal not yet at the update revision, one at a time.
        if (rolling && extra.empty() && all_healthy && static_cast<std::int64_t>(pods.size()) == replicas)
            for (auto it = pods.rbegin(); it != pods.rend() && it->first >= partition; ++it)
                if (revision(it->second) != update_rev) {
                    delete_pod(set, it->second);
                    break;
                }

        write_status(set, pods, extra, update_rev, revision);
    }

    template <class RevisionOf>
    void write_status(const json::value& set, const std::map<std::int64_t, json::value>& pods,
                      const std::vector<json::value>& extra, const std::string& update_rev, RevisionOf&& revision) {
        const auto* old_status = workload_pods::at(&set, "status");
        std::string current_rev = workload_pods::str(old_status, "currentRevision");
        if (current_rev.empty()) current_rev = update_rev;
        std::int64_t count = 0, ready = 0, current = 0, updated = 0;
        // As the real controller counts: pods being deleted (or deleted by this pass) are not
        // replicas; ready means Running and Ready.
        auto tally = [&](const json::value& p) {
            if (workload_pods::terminating(p) || deleted_.count(workload_pods::meta(p, "name"))) return;
            ++count;
            if (running_and_ready(p)) ++ready;
            if (revision(p) == current_rev) ++current;
            if (revision(p) == update_rev) ++updated;
        };
        for (const auto& [i, p] : pods) tally(p);
        for (const auto& p : extra) tally(p);
        const auto replicas = int_at(workload_pods::at(&set, "spec"), "replicas", 1);
        // The update is complete once every wanted pod runs the update revision.
        if (updated == replicas && ready == replicas && count == replicas) {
            current_rev = update_rev;
            current = updated;
        }
        json::object status{{"observedGeneration", int_at(workload_pods::at(&set, "metadata"), "generation", 1)},
                            {"replicas", count},
                            {"readyReplicas", ready},
                            {"currentReplicas", current},
                            {"updatedReplicas", updated},
                            {"availableReplicas", ready},
                            {"currentRevision", current_rev},
                            {"updateRevision", update_rev},
                            {"collisionCount", 0}};
        // Zero counts are omitted, as Go's omitempty drops them.
        for (const char* k : {"readyReplicas", "currentReplicas", "updatedReplicas"})
            if (status.at(k).as_int64() == 0) status.erase(k);
        if (old_status && *old_status == json::value(status)) return;
        json::value next = set;
        next.as_object()["status"] = std::move(status);
        store_.update(sets_id, workload_pods::meta(set, "namespace"), workload_pods::meta(set, "name"), std::move(next), "status");
    }

    json::value create_pod(const json::value& set, std::int64_t ordinal, const std::string& rev) {
        const auto ns = workload_pods::meta(set, "namespace");
        const auto set_name = workload_pods::meta(set, "name");
        const auto pod_name = set_name + "-" + std::to_string(ordinal);
        const auto* spec = workload_pods::at(&set, "spec");
        const auto* tmpl = workload_pods::at(spec, "template");
        json::object md;
        if (const auto* tm = workload_pods::at(tmpl, "metadata"); tm && tm->is_object()) md = tm->get_object();
        md["name"] = pod_name;
        md["namespace"] = ns;
        md.erase("generateName");
        auto& labels = md["labels"];
        if (!labels.is_object()) labels = json::object();
        labels.get_object()["statefulset.kubernetes.io/pod-name"] = pod_name;
        labels.get_object()["apps.kubernetes.io/pod-index"] = std::to_string(ordinal);
        labels.get_object()["controller-revision-hash"] = rev;
        md["ownerReferences"] = json::array{controller_ref::owner_reference(set, "apps/v1", "StatefulSet")};
        json::object pod_spec;
        if (const auto* ts = workload_pods::at(tmpl, "spec"); ts && ts->is_object()) pod_spec = ts->get_object();
        pod_spec["hostname"] = pod_name;
        if (auto svc = workload_pods::str(spec, "serviceName"); !svc.empty()) pod_spec["subdomain"] = svc;

        // Claims first, then the pod that mounts them.
        if (const auto* vcts = workload_pods::at(spec, "volumeClaimTemplates"); vcts && vcts->is_array()) {
            auto& volumes = pod_spec["volumes"];
            if (!volumes.is_array()) volumes = json::array();
            for (const auto& vct : vcts->get_array()) {
                auto claim = claim_name(vct, pod_name);
                ensure_claim(set, vct, claim, pod_name);
                auto vol_name = workload_pods::meta(vct, "name");
                auto& vs = volumes.get_array();
                vs.erase(std::remove_if(vs.begin(), vs.end(),
                                        [&](const json::value& v) { return workload_pods::str(&v, "name") == vol_name; }),
                         vs.end());
                vs.push_back(json::object{{"name", vol_name}, {"persistentVolumeClaim", json::object{{"claimName", claim}}}});
            }
        }
        json::value pod = json::object{{"metadata", std::move(md)}, {"spec", std::move(pod_spec)}};
        try {
            auto created = create_pod_(ns, std::move(pod));
            events_.emit(set, "Normal", "SuccessfulCreate", "create Pod " + pod_name + " in StatefulSet " + set_name + " successful");
            return created;
        } catch (const StoreError& e) {
            events_.emit(set, "Warning", "FailedCreate",
                         "create Pod " + pod_name + " in StatefulSet " + set_name + " failed error: " + e.what());
            throw;
        }
    }

    static bool pending(const json::value& pod) {
        auto phase = workload_pods::str(workload_pods::at(&pod, "status"), "phase");
        return !workload_pods::terminating(pod) && (phase.empty() || phase == "Pending");
    }

    void create_missing_claims(const json::value& set, const std::string& pod_name) {
        const auto* vcts = workload_pods::at(workload_pods::at(&set, "spec"), "volumeClaimTemplates");
        if (!vcts || !vcts->is_array()) return;
        for (const auto& vct : vcts->get_array()) ensure_claim(set, vct, claim_name(vct, pod_name), pod_name);
    }

    void ensure_claim(const json::value& set, const json::value& vct, const std::string& claim, const std::string& pod_name) {
        const auto ns = workload_pods::meta(set, "namespace");
        try {
            store_.get(pvcs_id, ns, claim);
            return;
        } catch (const StoreError& e) {
            if (e.status().code != 404) throw;
        }
        json::object md;
        json::object labels;
        if (const auto* l = workload_pods::at(workload_pods::at(&vct, "metadata"), "labels"); l && l->is_object())
            labels = l->get_object();
        if (const auto* ml = workload_pods::at(workload_pods::at(workload_pods::at(&set, "spec"), "selector"), "matchLabels");
            ml && ml->is_object())
            for (const auto& kv : ml->get_object()) labels[kv.key()] = kv.value();
        md["name"] = claim;
        md["namespace"] = ns;
        if (!labels.empty()) md["labels"] = std::move(labels);
        if (const auto* a = workload_pods::at(workload_pods::at(&vct, "metadata"), "annotations"); a && a->is_object())
            md["annotations"] = *a;
        json::value pvc = json::object{{"metadata", std::move(md)}};
        if (const auto* s = workload_pods::at(&vct, "spec")) pvc.as_object()["spec"] = *s;
        const auto set_name = workload_pods::meta(set, "name");
        try {
            store_.create(pvcs_id, ns, std::move(pvc));
            events_.emit(set, "Normal", "SuccessfulCreate",
                         "create Claim " + claim + " Pod " + pod_name + " in StatefulSet " + set_name + " success");
        } catch (const StoreError& e) {
            events_.emit(set, "Warning", "FailedCreate",
                         "create Claim " + claim + " for Pod " + pod_name + " in StatefulSet " + set_name + " failed error: " + e.what());
            throw;
        }
    }

    void delete_pod(const json::value& set, const json::value& pod) {
        const auto pod_name = workload_pods::meta(pod, "name");
        try {
            store_.remove(pods_id, workload_pods::meta(pod, "namespace"), pod_name);
        } catch (const StoreError& e) {
            if (e.status().code == 404) return;
            throw;
        }
        deleted_.insert(pod_name);
        events_.emit(set, "Normal", "SuccessfulDelete",
                     "delete Pod " + pod_name + " in StatefulSet " + workload_pods::meta(set, "name") + " successful");
    }

    ObjectStore& store_;
    PodCreator create_pod_ = store_pod_creator(store_);
    EventEmitter events_;
    std::mutex pass_mu_;  // a test's direct pass never overlaps the loop's
    std::set<std::string> deleted_;  // the pods this pass of one set has deleted
    OwnerChanges changes_;
    SimLoop loop_;
};

} // namespace vck::sandbox
