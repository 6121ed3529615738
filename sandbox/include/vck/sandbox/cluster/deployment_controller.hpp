// DeploymentController: kube-controller-manager's deployment controller for the sandbox, one
// SimLoop pass over every apps/v1 Deployment, following pkg/controller/deployment's rules.
// Guarantees, per Deployment not being deleted:
// - it claims the ReplicaSets of its namespace its selector matches (controller_ref.hpp);
//   the new one is the ReplicaSet whose template equals the Deployment's ignoring the
//   pod-template-hash label; it is created as <deployment>-<hash> (the hash of the template
//   and status.collisionCount, stable across passes, encoded as the real controller encodes
//   it), with pod-template-hash added to its labels, selector and template labels, the
//   Deployment's annotations and the annotations deployment.kubernetes.io/revision (one more
//   than the old ReplicaSets' highest), desired-replicas and max-replicas (replicas +
//   maxSurge); the Deployment carries the new revision too;
// - RollingUpdate: maxSurge rounded up and maxUnavailable rounded down from percentages of
//   spec.replicas (both 0 count as maxUnavailable 1); the new ReplicaSet grows while the
//   ReplicaSets' replicas stay within replicas + maxSurge; old ReplicaSets shrink (unhealthy
//   replicas first, oldest ReplicaSet first) while availability stays at least
//   replicas - maxUnavailable. Recreate: old ReplicaSets go to 0, and once none of their pods
//   is still running, the new one is created at full size. Scaling a Deployment scales its
//   new ReplicaSet the same way (proportional scaling during a rollout is not modelled);
// - paused: nothing is rolled out or scaled; Progressing is Unknown/DeploymentPaused;
// - once complete, old ReplicaSets at 0 are deleted beyond revisionHistoryLimit, oldest
//   revision first;
// - events ScalingReplicaSet "Scaled up replica set X to N" on creation and
//   "Scaled up|down replica set X to N from M" after, as 1.32 words them;
// - status (written only when it changes): replicas, updatedReplicas, readyReplicas,
//   availableReplicas, unavailableReplicas from the ReplicaSets, observedGeneration, and the
//   conditions Available (MinimumReplicasAvailable / MinimumReplicasUnavailable) and
//   Progressing (NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated,
//   NewReplicaSetAvailable, ProgressDeadlineExceeded) with the real messages and timestamps
//   rules, so `kubectl rollout status` ends as on a real cluster; a pass is scheduled for when
//   the progress deadline would pass.
// sync_all() runs one pass over every Deployment from the caller's thread (tests drive it
// directly). Started, a pass syncs only the Deployments a change names (owner_changes.hpp: the
// changed one, the controller of a changed ReplicaSet, every one of the namespace of a changed
// pod), as upstream's does from its informers.
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/api/time.hpp>
#include <vck/sandbox/cluster/controller_ref.hpp>
#include <vck/sandbox/cluster/event_emitter.hpp>
#include <vck/sandbox/cluster/owner_changes.hpp>
#include <vck/sandbox/cluster/replicaset_controller.hpp>
#include <vck/sandbox/cluster/sim_loop.hpp>
#include <vck/sandbox/validation/spec_validation.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vck::sandbox {

namespace deployment_detail {

namespace json = boost::json;
using spec_validation::at;
using spec_validation::integer;
using spec_validation::str;

inline constexpr const char* hash_label = "pod-template-hash";
inline constexpr const char* revision_annotation = "deployment.kubernetes.io/revision";
inline constexpr const char* desired_annotation = "deployment.kubernetes.io/desired-replicas";
inline constexpr const char* max_annotation = "deployment.kubernetes.io/max-replicas";

/// GetScaledValueFromIntOrPercent: an int as is, "N%" of `total` rounded up or down.
inline std::int64_t scaled_value(const json::value* v, std::int64_t total, bool round_up) {
    if (!v) return 0;
    if (v->is_int64()) return v->get_int64();
    if (!v->is_string()) return 0;
    std::string s(v->get_string());
    if (s.empty() || s.back() != '%') return 0;
    std::int64_t pct = 0;
    try {
        pct = std::stoll(s.substr(0, s.size() - 1));
    } catch (const std::exception&) {
        return 0;
    }
    return round_up ? (pct * total + 99) / 100 : (pct * total) / 100;
}

/// Canonical JSON (object keys sorted), so equal templates hash equally whatever their order.
inline void canonical(const json::value& v, std::string& out) {
    if (const auto* o = v.if_object()) {
        std::vector<std::string_view> keys;
        for (const auto& kv : *o) keys.push_back(kv.key());
        std::sort(keys.begin(), keys.end());
        out += '{';
        for (std::size_t i = 0; i < keys.size(); ++i) {
            out += (i ? "," : "") + json::serialize(json::value(json::string(keys[i]))) + ":";
            canonical(o->at(keys[i]), out);
        }
        out += '}';
    } else if (const auto* a = v.if_array()) {
        out += '[';
        for (std::size_t i = 0; i < a->size(); ++i) {
            if (i) out += ',';
            canonical((*a)[i], out);
        }
        out += ']';
    } else {
        out += json::serialize(v);
    }
}

/// The pod-template-hash: FNV-1a (32 bit) of the template's canonical JSON and the collision
/// count (the sandbox's own input, so not a real cluster's value), its decimal digits mapped
/// onto rand.SafeEncodeString's alphabet, as ComputeHash encodes its hash.
inline std::string template_hash(const json::value& tmpl, std::int64_t collisions) {
    std::string text;
    canonical(tmpl, text);
    if (collisions) text += "#" + std::to_string(collisions);
    std::uint32_t h = 2166136261u;
    for (unsigned char c : text) {
        h ^= c;
        h *= 16777619u;
    }
    static constexpr std::string_view alphabet = "bcdfghjklmnpqrstvwxz2456789";
    std::string digits = std::to_string(h), out;
    for (char d : digits) out += alphabet[static_cast<unsigned char>(d) % alphabet.size()];
    return out;
}

/// The template without the pod-template-hash label (EqualIgnoreHash's view).
inline json::value without_hash(const json::value* tmpl) {
    json::value t = tmpl ? *tmpl : json::value(json::object());
    if (auto* md = t.is_object() ? t.get_object().if_contains("metadata") : nullptr; md && md->is_object())
        if (auto* labels = md->get_object().if_contains("labels"); labels && labels->is_object()) {
            labels->get_object().erase(hash_label);
            if (labels->get_object().empty()) md->get_object().erase("labels");
        }
    return t;
}

inline std::int64_t spec_replicas(const json::value& rs) { return integer(at(&rs, "spec"), "replicas").value_or(0); }
inline std::int64_t status_count(const json::value& rs, std::string_view key) {
    return integer(at(&rs, "status"), key).value_or(0);
}
inline std::int64_t revision_of(const json::value& obj) {
    auto s = str(spec_validation::at(at(&obj, "metadata"), "annotations"), revision_annotation);
    try {
        return s.empty() ? 0 : std::stoll(s);
    } catch (const std::exception&) {
        return 0;
    }
}
inline std::string created_at(const json::value& obj) { return str(at(&obj, "metadata"), "creationTimestamp"); }

/// One entry of status.conditions.
struct RolloutCondition {
    std::string type, status, reason, message, last_update, last_transition;
    json::value to_json() const {
        return json::object{{"type", type},           {"status", status},
                            {"lastUpdateTime", last_update}, {"lastTransitionTime", last_transition},
                            {"reason", reason},       {"message", message}};
    }
    static RolloutCondition from_json(const json::value& c) {
        return {str(&c, "type"), str(&c, "status"), str(&c, "reason"), str(&c, "message"),
                str(&c, "lastUpdateTime"), str(&c, "lastTransitionTime")};
    }
};

inline RolloutCondition* find_condition(std::vector<RolloutCondition>& cs, std::string_view type) {
    for (auto& c : cs)
        if (c.type == type) return &c;
    return nullptr;
}

/// SetDeploymentCondition: the same status and reason change nothing; the same status keeps
/// its transition time; the condition goes last.
inline void set_condition(std::vector<RolloutCondition>& cs, RolloutCondition c) {
    if (auto* old = find_condition(cs, c.type)) {
        if (old->status == c.status && old->reason == c.reason) return;
        if (old->status == c.status) c.last_transition = old->last_transition;
    }
    std::erase_if(cs, [&](const RolloutCondition& x) { return x.type == c.type; });
    cs.push_back(std::move(c));
}

} // namespace deployment_detail

class DeploymentController {
public:
    using Clock = SimLoop::Clock;

    explicit DeploymentController(ObjectStore& store)
        : store_(store), events_(store, "deployment-controller"),
          changes_(store, deployments_id, "Deployment",
                   {OwnerChanges::Dependent{"apps", "replicasets", true}, OwnerChanges::Dependent{"", "pods", false}}),
          loop_(store, "deployment-controller",
                [](const StoreChange& c) {
                    return (c.group == "apps" && (c.resource == "deployments" || c.resource == "replicasets")) ||
                           (c.group.empty() && c.resource == "pods");
                },
                [this] { return pass(); }) {}
    ~DeploymentController() { stop(); }

    void start() {
        changes_.start();  // before the loop, so no change falls between its first list and the feed
        loop_.start();
    }
    void stop() {
        loop_.stop();
        changes_.stop();
    }

    /// The loop's pass: the Deployments changes name (every one when not started).
    std::optional<Clock::time_point> pass() {
        if (!changes_.started()) return sync_all();
        return changes_.sync_due("apps/v1", [this](const json::value& d) { return sync_one(d); });
    }

    /// One pass over every Deployment; returns when a progress deadline would pass, if any.
    std::optional<Clock::time_point> sync_all() {
        auto d_list = store_.list(deployments_id, "");
        std::optional<Clock::time_point> next;
        for (auto d : d_list.at("items").as_array()) {
            d.as_object()["apiVersion"] = "apps/v1";
            d.as_object()["kind"] = "Deployment";
            auto when = sync_one(d);
            if (when && (!next || *when < *next)) next = when;
        }
        return next;
    }

private:
    static inline const ResourceId pods_id{"", "v1", "pods"};
    static inline const ResourceId replicasets_id{"apps", "v1", "replicasets"};
    static inline const ResourceId deployments_id{"apps", "v1", "deployments"};

    /// What one pass knows of a Deployment.
    struct Rollout {
        json::value d;
        std::string ns, name;
        std::int64_t replicas = 1;
        bool rolling = true;
        std::optional<json::value> new_rs;
        std::vector<json::value> old_rs;  // oldest first
        std::vector<deployment_detail::RolloutCondition> conditions;
    };

    std::optional<Clock::time_point> sync_one(const json::value& d) {
        using namespace deployment_detail;
        if (controller_ref::deleting(d)) return std::nullopt;
        const auto* spec = at(&d, "spec");
        std::optional<api::LabelSelector> selector;
        try {
            if (const auto* sel = at(spec, "selector")) selector = api::LabelSelector::from_json(*sel);
        } catch (const std::exception&) {
        }
        if (!selector || selector->empty()) return std::nullopt;
        Rollout r;
        r.d = d;
        r.ns = str(at(&d, "metadata"), "namespace");
        r.name = str(at(&d, "metadata"), "name");
        r.replicas = integer(spec, "replicas").value_or(1);
        r.rolling = str(at(spec, "strategy"), "type") != "Recreate";
        if (const auto* cs = spec_validation::array_at(at(&d, "status"), "conditions"))
            for (const auto& c : *cs) r.conditions.push_back(RolloutCondition::from_json(c));

        auto all = controller_ref::claim(store_, replicasets_id, d, *selector,
                                         controller_ref::items_in(store_.list(replicasets_id, r.ns), r.ns));
        std::sort(all.begin(), all.end(), [](const json::value& a, const json::value& b) {
            return created_at(a) != created_at(b) ? created_at(a) < created_at(b)
                                                  : str(at(&a, "metadata"), "name") < str(at(&b, "metadata"), "name");
        });
        const auto want = without_hash(at(spec, "template"));
        for (auto& rs : all) {
            const json::value has = without_hash(at(at(&rs, "spec"), "template"));
            if (!r.new_rs && spec_validation::same(&want, &has))
                r.new_rs = rs;
            else
                r.old_rs.push_back(rs);
        }

        if (spec_validation::has(spec, "paused") && at(spec, "paused")->is_bool() && at(spec, "paused")->as_bool()) {
            set_condition(r.conditions, condition("Progressing", "Unknown", "DeploymentPaused", "Deployment is paused"));
            return write_status(r, false);
        }
        if (auto* c = find_condition(r.conditions, "Progressing"); c && c->reason == "DeploymentPaused")
            set_condition(r.conditions, condition("Progressing", "Unknown", "DeploymentResumed", "Deployment is resumed"));

        if (r.rolling) {
            ensure_new_rs(r);
            if (!reconcile_new(r)) reconcile_old(r);
        } else {
            recreate(r);
        }
        if (complete_counts(r)) cleanup(r);
        return write_status(r, true);
    }

    // ---- the new ReplicaSet ------------------------------------------------------------------

    std::int64_t max_surge(const Rollout& r) const {
        using namespace deployment_detail;
        if (!r.rolling) return 0;
        auto [surge, unavailable] = fenceposts(r);
        (void)unavailable;
        return surge;
    }
    /// MaxUnavailable: at most spec.replicas; 0 for Recreate or no replicas.
    std::int64_t max_unavailable(const Rollout& r) const {
        if (!r.rolling || r.replicas == 0) return 0;
        auto [surge, unavailable] = fenceposts(r);
        (void)surge;
        return std::min(unavailable, r.replicas);
    }
    std::pair<std::int64_t, std::int64_t> fenceposts(const Rollout& r) const {
        using namespace deployment_detail;
        const auto* ru = at(at(at(&r.d, "spec"), "strategy"), "rollingUpdate");
        auto surge = scaled_value(at(ru, "maxSurge"), r.replicas, true);
        auto unavailable = scaled_value(at(ru, "maxUnavailable"), r.replicas, false);
        if (surge == 0 && unavailable == 0) unavailable = 1;
        return {surge, unavailable};
    }

    std::int64_t total_spec(const Rollout& r) const {
        std::int64_t n = r.new_rs ? deployment_detail::spec_replicas(*r.new_rs) : 0;
        for (const auto& rs : r.old_rs) n += deployment_detail::spec_replicas(rs);
        return n;
    }

    /// NewRSNewReplicas: what the new ReplicaSet may grow to now.
    std::int64_t new_rs_target(const Rollout& r, std::int64_t current_new) const {
        if (!r.rolling) return r.replicas;
        auto max_total = r.replicas + max_surge(r);
        auto current = total_spec(r);
        if (!r.new_rs) current += current_new;
        if (current >= max_total) return current_new;
        return current_new + std::min(max_total - current, r.replicas - current_new);
    }

    deployment_detail::RolloutCondition condition(std::string type, std::string status, std::string reason, std::string message) const {
        auto now = api::format_rfc3339(std::chrono::system_clock::now());
        return {std::move(type), std::move(status), std::move(reason), std::move(message), now, now};
    }

    /// The annotations the new ReplicaSet carries: the Deployment's (but kubectl's and the
    /// controller's own), the revision, desired-replicas and max-replicas.
    json::object new_rs_annotations(const Rollout& r, const json::object* current, std::int64_t revision) const {
        using namespace deployment_detail;
        json::object out = current ? *current : json::object();
        if (const auto* da = spec_validation::object_at(at(&r.d, "metadata"), "annotations"))
            for (const auto& kv : *da) {
                std::string_view k = kv.key();
                if (k == "kubectl.kubernetes.io/last-applied-configuration" || k.starts_with("deployment.kubernetes.io/"))
                    continue;
                out[k] = kv.value();
            }
        const auto* old_v = current ? current->if_contains(revision_annotation) : nullptr;
        std::string old = old_v && old_v->is_string() ? std::string(old_v->get_string()) : std::string();
        std::int64_t old_rev = 0;
        try {
            old_rev = old.empty() ? 0 : std::stoll(old);
        } catch (const std::exception&) {
        }
        if (old_rev < revision) out[revision_annotation] = std::to_string(revision);
        out[desired_annotation] = std::to_string(r.replicas);
        out[max_annotation] = std::to_string(r.replicas + max_surge(r));
        return out;
    }

    /// getNewReplicaSet: keeps the existing new ReplicaSet's annotations and the Deployment's
    /// revision current, or creates it (Recreate: only when `create`).
    void ensure_new_rs(Rollout& r, bool create = true) {
        using namespace deployment_detail;
        std::int64_t max_old = 0;
        for (const auto& rs : r.old_rs) max_old = std::max(max_old, revision_of(rs));
        const std::int64_t revision = max_old + 1;
        if (r.new_rs) {
            json::value rs = *r.new_rs;
            auto& md = rs.as_object()["metadata"].as_object();
            const auto* cur = md.if_contains("annotations");
            auto ann = new_rs_annotations(r, cur ? cur->if_object() : nullptr, revision);
            const auto* spec = at(&r.d, "spec");
            auto min_ready = integer(spec, "minReadySeconds").value_or(0);
            const json::value ann_v = ann;
            bool changed = !cur || !spec_validation::same(cur, &ann_v) ||
                           integer(at(&rs, "spec"), "minReadySeconds").value_or(0) != min_ready;
            if (changed) {
                md["annotations"] = std::move(ann);
                rs.as_object()["spec"].as_object()["minReadySeconds"] = min_ready;
                const auto name = str(at(&rs, "metadata"), "name");  // before rs is moved from
                try {
                    r.new_rs = store_.update(replicasets_id, r.ns, name, std::move(rs));
                } catch (const StoreError&) {
                }
            }
            sync_revision(r, revision_of(*r.new_rs));
            if (!find_condition(r.conditions, "Progressing"))
                set_condition(r.conditions, condition("Progressing", "True", "FoundNewReplicaSet",
                                                      "Found new replica set \"" + str(&r.new_rs->at("metadata"), "name") + "\""));
            return;
        }
        if (!create) return;
        const auto* spec = at(&r.d, "spec");
        auto collisions = integer(at(&r.d, "status"), "collisionCount").value_or(0);
        auto hash = template_hash(*at(spec, "template"), collisions);
        json::value tmpl = *at(spec, "template");
        auto& tmd = tmpl.as_object()["metadata"];
        if (!tmd.is_object()) tmd = json::object();
        auto& tlabels = tmd.as_object()["labels"];
        if (!tlabels.is_object()) tlabels = json::object();
        tlabels.as_object()[hash_label] = hash;
        json::value selector = *at(spec, "selector");
        auto& ml = selector.as_object()["matchLabels"];
        if (!ml.is_object()) ml = json::object();
        ml.as_object()[hash_label] = hash;
        const std::string name = r.name + "-" + hash;
        auto replicas = new_rs_target(r, 0);
        json::object meta{{"name", name}, {"namespace", r.ns}, {"labels", tlabels},
                          {"annotations", new_rs_annotations(r, nullptr, revision)},
                          {"ownerReferences", json::array{controller_ref::owner_reference(r.d)}}};
        json::value rs = json::object{
            {"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"metadata", std::move(meta)},
            {"spec", json::object{{"replicas", replicas}, {"minReadySeconds", integer(spec, "minReadySeconds").value_or(0)},
                                  {"selector", std::move(selector)}, {"template", std::move(tmpl)}}}};
        try {
            r.new_rs = store_.create(replicasets_id, r.ns, std::move(rs));
        } catch (const StoreError& e) {
            if (e.status().code == 409) {
                // A ReplicaSet of that name with another template: the next hash is tried.
                bump_collision_count(r);
            }
            return;
        }
        if (replicas > 0)
            events_.emit(r.d, "Normal", "ScalingReplicaSet",
                         "Scaled up replica set " + name + " to " + std::to_string(replicas));
        set_condition(r.conditions, condition("Progressing", "True", "NewReplicaSetCreated",
                                              "Created new replica set \"" + name + "\""));
        sync_revision(r, revision);
    }

    void bump_collision_count(Rollout& r) {
        json::value body = r.d;
        auto& st = body.as_object()["status"];
        if (!st.is_object()) st = json::object();
        st.as_object()["collisionCount"] = deployment_detail::integer(&st, "collisionCount").value_or(0) + 1;
        try {
            store_.update(deployments_id, r.ns, r.name, std::move(body), "status");
        } catch (const StoreError&) {
        }
    }

    /// The Deployment's deployment.kubernetes.io/revision follows its new ReplicaSet's.
    void sync_revision(Rollout& r, std::int64_t revision) {
        using namespace deployment_detail;
        if (revision_of(r.d) == revision) return;
        json::value d = r.d;
        auto& md = d.as_object()["metadata"].as_object();
        auto& ann = md["annotations"];
        if (!ann.is_object()) ann = json::object();
        ann.as_object()[revision_annotation] = std::to_string(revision);
        try {
            auto stored = store_.update(deployments_id, r.ns, r.name, std::move(d));
            stored.as_object()["apiVersion"] = "apps/v1";
            stored.as_object()["kind"] = "Deployment";
            r.d = std::move(stored);
        } catch (const StoreError&) {
        }
    }

    /// scaleReplicaSet: spec.replicas and the replicas annotations; an event when the size changes.
    bool scale(Rollout& r, json::value& rs, std::int64_t to) {
        using namespace deployment_detail;
        const auto from = spec_replicas(rs);
        const auto desired = std::to_string(r.replicas);
        const auto max = std::to_string(r.replicas + max_surge(r));
        const auto* ann = spec_validation::object_at(at(&rs, "metadata"), "annotations");
        const json::value ann_v = ann ? json::value(*ann) : json::value(json::object());
        bool annotations_stale = str(&ann_v, desired_annotation) != desired || str(&ann_v, max_annotation) != max;
        if (from == to && !annotations_stale) return false;
        json::value body = rs;
        auto& md = body.as_object()["metadata"].as_object();
        auto& a = md["annotations"];
        if (!a.is_object()) a = json::object();
        a.as_object()[desired_annotation] = desired;
        a.as_object()[max_annotation] = max;
        body.as_object()["spec"].as_object()["replicas"] = to;
        const auto name = str(at(&rs, "metadata"), "name");
        try {
            rs = store_.update(replicasets_id, r.ns, name, std::move(body));
        } catch (const StoreError&) {
            return false;
        }
        if (from != to)
            events_.emit(r.d, "Normal", "ScalingReplicaSet",
                         std::string("Scaled ") + (to > from ? "up" : "down") + " replica set " + name + " to " +
                             std::to_string(to) + " from " + std::to_string(from));
        return from != to;
    }

    // ---- RollingUpdate -----------------------------------------------------------------------

    /// reconcileNewReplicaSet: true when it scaled.
    bool reconcile_new(Rollout& r) {
        if (!r.new_rs) return false;
        auto current = deployment_detail::spec_replicas(*r.new_rs);
        if (current == r.replicas) return false;
        if (current > r.replicas) return scale(r, *r.new_rs, r.replicas);
        return scale(r, *r.new_rs, new_rs_target(r, current));
    }

    /// reconcileOldReplicaSets: unhealthy replicas first, then as availability allows.
    bool reconcile_old(Rollout& r) {
        using namespace deployment_detail;
        std::int64_t old_count = 0;
        for (const auto& rs : r.old_rs) old_count += spec_replicas(rs);
        if (old_count == 0 || !r.new_rs) return false;
        const auto min_available = r.replicas - max_unavailable(r);
        const auto new_unavailable = spec_replicas(*r.new_rs) - status_count(*r.new_rs, "availableReplicas");
        auto max_scaled_down = total_spec(r) - min_available - new_unavailable;
        if (max_scaled_down <= 0) return false;
        std::int64_t cleaned = 0;
        for (auto& rs : r.old_rs) {
            if (cleaned >= max_scaled_down) break;
            auto want = spec_replicas(rs), avail = status_count(rs, "availableReplicas");
            if (want == 0 || want == avail) continue;
            auto down = std::min(max_scaled_down - cleaned, want - avail);
            if (scale(r, rs, want - down)) cleaned += down;
        }
        std::int64_t available = r.new_rs ? status_count(*r.new_rs, "availableReplicas") : 0;
        for (const auto& rs : r.old_rs) available += status_count(rs, "availableReplicas");
        std::int64_t scaled = 0;
        if (available > min_available) {
            const auto budget = available - min_available;
            for (auto& rs : r.old_rs) {
                if (scaled >= budget) break;
                auto want = spec_replicas(rs);
                if (want == 0) continue;
                auto down = std::min(want, budget - scaled);
                if (scale(r, rs, want - down)) scaled += down;
            }
        }
        return cleaned + scaled > 0;
    }

    // ---- Recreate ----------------------------------------------------------------------------

    void recreate(Rollout& r) {
        using namespace deployment_detail;
        ensure_new_rs(r, false);
        bool scaled_down = false;
        for (auto& rs : r.old_rs)
            if (spec_replicas(rs) != 0) scaled_down = scale(r, rs, 0) || scaled_down;
        if (scaled_down || old_pods_running(r)) return;
        if (!r.new_rs) ensure_new_rs(r, true);
        if (r.new_rs) scale(r, *r.new_rs, r.replicas);
    }

    /// oldPodsRunning: old ReplicaSets still report replicas, or own a pod not finished.
    bool old_pods_running(const Rollout& r) {
        using namespace deployment_detail;
        std::vector<std::string> uids;
        for (const auto& rs : r.old_rs) {
            if (status_count(rs, "replicas") > 0) return true;
            uids.push_back(str(at(&rs, "metadata"), "uid"));
        }
        auto pods = store_.list(pods_id, r.ns);
        for (const auto& p : pods.at("items").as_array())
            if (std::find(uids.begin(), uids.end(), controller_ref::controller_uid(p)) != uids.end() &&
                !workload_pods::finished(p))
                return true;
        return false;
    }

    // ---- history and status --------------------------------------------------------------------

    bool complete_counts(const Rollout& r) const {
        using namespace deployment_detail;
        if (!r.new_rs) return false;
        std::int64_t replicas = status_count(*r.new_rs, "replicas");
        for (const auto& rs : r.old_rs) replicas += status_count(rs, "replicas");
        return status_count(*r.new_rs, "replicas") == r.replicas && replicas == r.replicas &&
               status_count(*r.new_rs, "availableReplicas") == r.replicas;
    }

    /// cleanupDeployment: old ReplicaSets beyond revisionHistoryLimit, oldest revision first.
    void cleanup(Rollout& r) {
        using namespace deployment_detail;
        const auto limit = integer(at(&r.d, "spec"), "revisionHistoryLimit");
        if (!limit) return;
        std::vector<json::value*> alive;
        for (auto& rs : r.old_rs)
            if (!controller_ref::deleting(rs)) alive.push_back(&rs);
        auto diff = static_cast<std::int64_t>(alive.size()) - *limit;
        if (diff <= 0) return;
        std::stable_sort(alive.begin(), alive.end(),
                         [](const json::value* a, const json::value* b) { return revision_of(*a) < revision_of(*b); });
        for (std::int64_t i = 0; i < diff; ++i) {
            const auto& rs = *alive[i];
            if (status_count(rs, "replicas") != 0 || spec_replicas(rs) != 0 ||
                integer(at(&rs, "metadata"), "generation").value_or(0) > status_count(rs, "observedGeneration"))
                continue;
            try {
                store_.remove(replicasets_id, r.ns, str(at(&rs, "metadata"), "name"));
            } catch (const StoreError&) {
            }
        }
    }

    /// calculateStatus and syncRolloutStatus; returns when the progress deadline would pass.
    std::optional<Clock::time_point> write_status(Rollout& r, bool track_progress) {
        using namespace deployment_detail;
        std::int64_t replicas = 0, ready = 0, available = 0, total = 0;
        auto add = [&](const json::value& rs) {
            replicas += status_count(rs, "replicas");
            ready += status_count(rs, "readyReplicas");
            available += status_count(rs, "availableReplicas");
            total += spec_replicas(rs);
        };
        if (r.new_rs) add(*r.new_rs);
        for (const auto& rs : r.old_rs) add(rs);
        const std::int64_t updated = r.new_rs ? status_count(*r.new_rs, "replicas") : 0;
        const auto* old = at(&r.d, "status");
        if (available >= r.replicas - max_unavailable(r))
            set_condition(r.conditions, condition("Available", "True", "MinimumReplicasAvailable",
                                                  "Deployment has minimum availability."));
        else
            set_condition(r.conditions, condition("Available", "False", "MinimumReplicasUnavailable",
                                                  "Deployment does not have minimum availability."));
        const auto generation = integer(at(&r.d, "metadata"), "generation").value_or(0);
        const auto deadline = integer(at(&r.d, "spec"), "progressDeadlineSeconds");
        std::optional<Clock::time_point> next;
        const std::string rs_name = r.new_rs ? str(at(&*r.new_rs, "metadata"), "name") : std::string();
        auto subject = [&](const char* what) {
            return r.new_rs ? "ReplicaSet \"" + rs_name + "\" " + what : "Deployment \"" + r.name + "\" " + what;
        };
        auto* current = find_condition(r.conditions, "Progressing");
        const bool was_complete = replicas == updated && current && current->reason == "NewReplicaSetAvailable";
        if (track_progress && deadline && !was_complete) {
            const bool complete = updated == r.replicas && replicas == r.replicas && available == r.replicas;
            const auto old_old = status_count(r.d, "replicas") - status_count(r.d, "updatedReplicas");
            const bool progressing = updated > status_count(r.d, "updatedReplicas") || (replicas - updated) < old_old ||
                                     ready > status_count(r.d, "readyReplicas") ||
                                     available > status_count(r.d, "availableReplicas");
            if (complete) {
                set_condition(r.conditions, condition("Progressing", "True", "NewReplicaSetAvailable",
                                                      subject("has successfully progressed.")));
            } else if (progressing) {
                auto c = condition("Progressing", "True", "ReplicaSetUpdated", subject("is progressing."));
                if (current && current->status == "True") c.last_transition = current->last_transition;
                std::erase_if(r.conditions, [](const RolloutCondition& x) { return x.type == "Progressing"; });
                r.conditions.push_back(std::move(c));
            } else if (current && current->reason != "ProgressDeadlineExceeded") {
                auto from = api::parse_rfc3339(current->last_update);
                auto now = std::chrono::system_clock::now();
                if (from && *from + std::chrono::seconds(*deadline) < now)
                    set_condition(r.conditions, condition("Progressing", "False", "ProgressDeadlineExceeded",
                                                          subject("has timed out progressing.")));
                else if (from)
                    next = Clock::now() + (*from + std::chrono::seconds(*deadline) - now) + std::chrono::seconds(1);
            }
        }
        json::array conds;
        for (const auto& c : r.conditions) conds.push_back(c.to_json());
        json::object status{{"observedGeneration", generation}};
        // Zero counts are omitted, as the real status (omitempty) serializes them.
        if (replicas) status["replicas"] = replicas;
        if (updated) status["updatedReplicas"] = updated;
        if (ready) status["readyReplicas"] = ready;
        if (available) status["availableReplicas"] = available;
        if (total - available > 0) status["unavailableReplicas"] = total - available;
        status["conditions"] = std::move(conds);
        if (auto cc = integer(old, "collisionCount")) status["collisionCount"] = *cc;
        const json::value wanted = status;
        if (old && spec_validation::same(old, &wanted)) return next;
        json::value body = r.d;
        body.as_object()["status"] = std::move(status);
        try {
            store_.update(deployments_id, r.ns, r.name, std::move(body), "status");
        } catch (const StoreError&) {
        }
        return next;
    }

    ObjectStore& store_;
    EventEmitter events_;
    OwnerChanges changes_;
    SimLoop loop_;
};

} // namespace vck::sandbox
