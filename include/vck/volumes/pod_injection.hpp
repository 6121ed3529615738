// PodInjection: what the VCK admission webhook and reconciler decide for a pod that names a
// dataset, as pure functions over the pod's JSON (as the AdmissionReview carries it, so no
// field is ever dropped) and the VolumeManager (or its absence). No I/O: the webhook server
// and the reconciler send what these return. Guarantees (each a test in
// tests/volumes/pod_injection_test.cpp):
// - inject_pod either refuses with a message saying what to fix, or returns the pod with one
//   volume per chosen VolumeManager volume, its mounts in the chosen containers, the data's
//   required node affinity ANDed into the pod's own, and, while some chosen volume is not
//   ready, the scheduling gate vck.intelai.org/data: a pod never runs on a node before the
//   complete data is there.
// - The hostPath a pod gets is the directory the data will have (it is deterministic: the
//   data path, VolumeManager uid, volume id and source config), of type Directory: a missing
//   directory fails the mount instead of handing the pod an empty one.
// - ungate says, for a pod it admitted, when the gate may go (and the affinity narrowed to
//   the nodes holding the data, which a 1.32 API server allows on a gated pod), when the pod
//   must wait, when it can never run as made, and when a running pod's data is gone.
// - Deciding twice is harmless: a pod already injected is left as it is.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/json.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/data_handler.hpp>
#include <vck/handlers/data_path.hpp>
#include <vck/handlers/handler_registry.hpp>
#include <vck/handlers/naming.hpp>
#include <vck/handlers/option_values.hpp>
#include <vck/volumes/copy_planner.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace vck::volumes {

/// The label a pod opts in with (a webhook's objectSelector matches labels only): the name of
/// a VolumeManager in the pod's namespace.
inline constexpr std::string_view volume_manager_label = "vck.intelai.org/volume-manager";
/// Which of its volumes, "id1,id2" (default: all of the VolumeManager's volumes).
inline constexpr std::string_view volumes_annotation = "vck.intelai.org/volumes";
/// The base directory the volumes are mounted under, each at <base>/<volume id>.
inline constexpr std::string_view mount_path_annotation = "vck.intelai.org/mount-path";
/// Per-volume mount paths, "id1=/data/train,id2=/data/test" (override the base for those).
inline constexpr std::string_view mount_paths_annotation = "vck.intelai.org/mount-paths";
/// Which containers mount them, "a,b" (default: every container; init containers only if named).
inline constexpr std::string_view containers_annotation = "vck.intelai.org/containers";
/// Written by inject_pod: the volume ids it injected. It marks the pod as done (a reinvoked
/// webhook changes nothing) and tells ungate which volumes the pod waits for.
inline constexpr std::string_view injected_annotation = "vck.intelai.org/injected-volumes";
/// The scheduling gate of a pod whose data is not there yet.
inline constexpr std::string_view data_gate = "vck.intelai.org/data";
inline constexpr std::string_view default_mount_base = "/var/datasets";

/// What the webhook answers for one pod.
struct PodInjection {
    bool allowed = true;
    std::string message;               // why not (the AdmissionReview's status.message), when refused
    boost::json::value pod;            // the pod to create: the input itself when nothing changes
    bool changed = false;              // pod differs from the input
    bool gated = false;                // pod carries the data gate
    std::vector<std::string> volumes;  // the VolumeManager volume ids injected
    std::vector<std::string> warnings; // for the AdmissionReview's warnings
};

/// What to do about a pod inject_pod admitted, as its VolumeManager changes.
enum class PodDataAction {
    None,      // nothing: not a VCK pod, or its data is fine
    Wait,      // gated, and some volume is not ready yet (`message` says which): keep the gate
    Ungate,    // gated, and every volume is ready: replace the pod with `pod` (gate removed,
               // node affinity narrowed to the nodes holding the data)
    Stuck,     // gated, and it can never run as it is (its VolumeManager or a volume is gone or
               // failed, or the volume's source changed so the directory it mounts will never
               // be filled): keep the gate, report `message` (an event on the pod); the user
               // deletes or recreates the pod
    DataLost,  // scheduled or running, and its node no longer holds the data it mounts (the
               // copy was lost or removed, or the VolumeManager is gone): the pod is not
               // touched; report `message` (a Warning event on the pod and on the VolumeManager)
};

inline std::string_view to_string(PodDataAction a) {
    switch (a) {
        case PodDataAction::None: return "None";
        case PodDataAction::Wait: return "Wait";
        case PodDataAction::Ungate: return "Ungate";
        case PodDataAction::Stuck: return "Stuck";
        case PodDataAction::DataLost: return "DataLost";
    }
    return "None";
}

struct PodDataDecision {
    PodDataAction action = PodDataAction::None;
    std::string message;
    boost::json::value pod;  // with Ungate: the pod as it should become
};

namespace injection_detail {

namespace json = boost::json;

inline const json::object* object_at(const json::value& v, std::string_view key) {
    if (!v.is_object()) return nullptr;
    const auto* p = v.get_object().if_contains(key);
    return p && p->is_object() ? &p->get_object() : nullptr;
}
inline const json::object* object_at(const json::object* o, std::string_view key) {
    if (!o) return nullptr;
    const auto* p = o->if_contains(key);
    return p && p->is_object() ? &p->get_object() : nullptr;
}
inline const json::array* array_at(const json::object* o, std::string_view key) {
    if (!o) return nullptr;
    const auto* p = o->if_contains(key);
    return p && p->is_array() ? &p->get_array() : nullptr;
}
inline std::optional<std::string> string_at(const json::object* o, std::string_view key) {
    if (!o) return std::nullopt;
    const auto* p = o->if_contains(key);
    if (!p || !p->is_string()) return std::nullopt;
    return std::string(p->get_string());
}
/// o[key] as an object, made (or replaced, when it is not an object) if needed.
inline json::object& make_object(json::object& o, std::string_view key) {
    auto& v = o[key];
    if (!v.is_object()) v = json::object();
    return v.get_object();
}
inline json::array& make_array(json::object& o, std::string_view key) {
    auto& v = o[key];
    if (!v.is_array()) v = json::array();
    return v.get_array();
}

/// The items of a comma-separated list, trimmed, empty ones and repeats dropped, in order.
inline std::vector<std::string> split_list(std::string_view text) {
    std::vector<std::string> out;
    while (!text.empty()) {
        auto comma = text.find(',');
        auto item = text.substr(0, comma);
        while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
        while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
        if (!item.empty() && std::find(out.begin(), out.end(), item) == out.end()) out.emplace_back(item);
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
    }
    return out;
}

inline std::string quoted_list(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items) out += (out.empty() ? "\"" : ", \"") + i + "\"";
    return out.empty() ? "none" : out;
}

/// A volume id usable as one directory name under the mount base.
inline bool path_component(std::string_view id) {
    if (id.empty() || id == "." || id == "..") return false;
    return std::all_of(id.begin(), id.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
               c == '.';
    });
}

/// What one chosen VolumeManager volume is for a pod.
struct DataVolume {
    std::string id;
    bool copies = false;                           // copies on nodes (hostPath), else e.g. a claim
    std::optional<api::VolumeSource> source;       // what the pod mounts (predicted or from the status)
    bool writable = false;
    bool ready = false;
    std::optional<api::NodeAffinity> affinity;     // the data's, once ready
    std::set<std::string> nodes;                   // nodes with a Ready copy of `source` (copies only)
    std::string waiting;                           // why not ready
    std::string failed;                            // why it will not become ready as it is
    std::vector<std::string> lost;                 // messages of Lost copies of `source`
};

inline const api::VolumeStatus* status_of(const api::VolumeManager& vm, const std::string& id) {
    if (!vm.status) return nullptr;
    for (const auto& v : vm.status->volumes)
        if (v.id == id) return &v;
    return nullptr;
}

/// The version of volume `id`'s data that refreshes made (status.refreshes; 0 before any).
inline std::int64_t data_version(const api::VolumeManager& vm, const std::string& id) {
    if (vm.status)
        for (const auto& r : vm.status->refreshes)
            if (r.volume == id) return r.version;
    return 0;
}

/// The directory the record gives volume `id`'s copies of config key `config`, or "".
inline std::string recorded_directory(const api::VolumeManager& vm, const std::string& id, const std::string& config) {
    if (vm.status)
        for (const auto& c : vm.status->copies)
            if (c.volume == id && c.config == config && !c.path.empty()) return c.path;
    return {};
}

/// The status reflects the current spec (or no generation is known to compare).
inline bool status_current(const api::VolumeManager& vm) {
    return vm.status && (!vm.status->observedGeneration || !vm.metadata.generation ||
                         *vm.status->observedGeneration == *vm.metadata.generation);
}

/// What volume `vc` of `vm` is for a pod. Readiness is per volume, not the VolumeManager's
/// state (Pending while any other volume downloads or old copies are being removed): a copied
/// volume is ready when its status names the directory this spec's copies have (not an older
/// config's, which goes once the new one is complete), with a node affinity, and the record
/// holds a Ready copy there (the planner labels exactly those nodes); any other volume when its
/// status says "success" with a volume source.
inline DataVolume describe(const api::VolumeManager& vm, const api::VolumeConfig& vc,
                           const handlers::HandlerRegistry& registry, const handlers::HandlerOptions& options) {
    DataVolume d;
    d.id = vc.id;
    auto lookup = registry.find(vc.sourceType);
    if (!lookup.handler) {
        d.failed = lookup.error;
        return d;
    }
    handlers::HandlerContext ctx;
    ctx.options = options;
    const auto* st = status_of(vm, vc.id);
    if (lookup.handler->copies()) {
        d.copies = true;
        auto layout = lookup.handler->copy_layout(ctx, vc);
        if (!layout) {
            auto why = lookup.handler->validate(ctx, vm, vc);
            d.failed = why ? *why : "its copies cannot be laid out";
            return d;
        }
        // The directory of this spec's copies at the current version of its data: where the
        // record puts that config's copies, else where the copy planner will put them (the
        // config's shared directory when the volume shares, else one of its own).
        std::string config = handlers::naming::versioned_config(layout->config, data_version(vm, vc.id));
        std::string path = recorded_directory(vm, vc.id, config);
        if (path.empty())
            path = handlers::shares_copies(vc, options) && !lookup.handler->uploads()
                       ? handlers::naming::shared_copy_directory(layout->where.path, config)
                       : handlers::naming::copy_directory(layout->where.path, vm.metadata.uid, vc.id, config);
        d.source = api::VolumeSource{};
        d.source->hostPath = api::HostPathVolumeSource{path, "Directory"};
        // A job writes its output into an output volume's copy; a dataset's copy is read
        // only, unless resync (which syncs the job's writes back) is on.
        d.writable = vc.accessMode != "ReadOnlyMany" &&
                     (lookup.handler->uploads() || (vc.has_option("resync") &&
                                                    handlers::parse_go_bool(vc.option("resync")).value_or(false)));
        if (vm.status)
            for (const auto& c : vm.status->copies) {
                if (c.volume != vc.id || c.path != path) continue;
                if (copy_usable(c)) d.nodes.insert(c.node);  // Ready, or its first batch landed
                if (copy_phase(c) == CopyPhase::Lost) d.lost.push_back(c.message);
            }
        bool serves = st && st->volumeSource && st->volumeSource->hostPath && st->volumeSource->hostPath->path == path;
        d.ready = serves && st->nodeAffinity && !d.nodes.empty();
        if (d.ready) d.affinity = st->nodeAffinity;
        else if (st && st->volumeSource && st->volumeSource->hostPath && !serves)
            d.waiting = "its previous source config still serves while the current one downloads" +
                        (st->message.empty() ? std::string() : " (" + st->message + ")");
    } else {
        d.writable = vc.accessMode != "ReadOnlyMany";
        if (st && st->message == "success" && st->volumeSource) {
            d.ready = true;
            d.source = st->volumeSource;
            d.affinity = st->nodeAffinity;
        } else if (auto why = lookup.handler->validate(ctx, vm, vc)) {
            d.failed = *why;
            return d;
        } else {
            // The claim is named before it exists (deterministic names), so the pod can wait.
            auto desired = lookup.handler->desired(ctx, vm, vc);
            if (desired.claims.size() == 1) {
                d.source = api::VolumeSource{};
                d.source->persistentVolumeClaim =
                    api::PersistentVolumeClaimVolumeSource{desired.claims.front().metadata.name, std::nullopt};
            }
        }
    }
    if (!d.ready && d.waiting.empty())
        d.waiting = st && !st->message.empty() ? st->message : "not reported in the VolumeManager's status yet";
    // No per-volume phase is written: a Failed VolumeManager whose status is current fails
    // every volume of it that is not Ready (the reconciler keeps it Failed until the spec or
    // the cluster changes; a stale status is waited for instead).
    if (!d.ready && status_current(vm) && vm.status->state == "Failed")
        d.failed = st && !st->message.empty() ? st->message : vm.status->message;
    return d;
}

/// Why the VolumeManager as a whole cannot serve a pod, or "".
inline std::string unusable(const api::VolumeManager& vm) {
    std::string who = "volumemanager \"" + vm.metadata.name + "\" in namespace \"" + vm.metadata.namespace_ + "\"";
    if (!vm.metadata.deletionTimestamp.empty())
        return who + " is being deleted and its data removed: create the pod with another VolumeManager";
    if (vm.spec.state == "Failed" || vm.spec.state == "Completed")
        return who + " has spec.state " + vm.spec.state + ", so it serves no data: set spec.state to Running "
                                                          "(or remove it) first";
    return {};
}

/// t AND d for node selector terms. An empty term matches no node, and stays so.
inline json::object and_terms(const json::object& t, const json::object& d) {
    const auto* te = array_at(&t, "matchExpressions");
    const auto* tf = array_at(&t, "matchFields");
    if ((!te || te->empty()) && (!tf || tf->empty())) return t;
    json::object out = t;
    for (std::string_view key : {"matchExpressions", "matchFields"}) {
        const auto* add = array_at(&d, key);
        if (!add || add->empty()) continue;
        auto& into = make_array(out, key);
        for (const auto& r : *add)
            if (std::find(into.begin(), into.end(), r) == into.end()) into.push_back(r);
    }
    return out;
}

/// The pod's required node selector terms, or nullptr when it has none.
inline json::array* required_terms(json::object& spec) {
    auto* aff = spec.if_contains("affinity");
    if (!aff || !aff->is_object()) return nullptr;
    auto* na = aff->get_object().if_contains("nodeAffinity");
    if (!na || !na->is_object()) return nullptr;
    auto* req = na->get_object().if_contains("requiredDuringSchedulingIgnoredDuringExecution");
    if (!req || !req->is_object()) return nullptr;
    auto* terms = req->get_object().if_contains("nodeSelectorTerms");
    if (!terms || !terms->is_array() || terms->get_array().empty()) return nullptr;
    return &terms->get_array();
}

/// ANDs every affinity of `data` into the pod's required node affinity: the terms become
/// every (pod term AND data term); preferred terms and other affinity stay as they are.
/// `narrow_only` (a gated pod's update): the number of existing terms may not change, so a
/// data affinity with several terms is refused (false) unless the pod had no required terms.
inline bool merge_required_affinity(json::object& spec, const std::vector<api::NodeAffinity>& data, bool narrow_only) {
    std::vector<json::array> data_terms;
    for (const auto& a : data) {
        if (!a.requiredDuringSchedulingIgnoredDuringExecution) continue;
        const auto& ts = a.requiredDuringSchedulingIgnoredDuringExecution->nodeSelectorTerms;
        if (ts.empty()) continue;
        json::array arr;
        for (const auto& t : ts) arr.push_back(api::to_json(t));
        data_terms.push_back(std::move(arr));
    }
    if (data_terms.empty()) return true;
    json::array* existing = required_terms(spec);
    if (narrow_only && existing)
        for (const auto& d : data_terms)
            if (d.size() > 1) return false;
    // No required terms yet: no constraint, and the first data affinity's terms are the terms.
    std::optional<json::array> terms;
    if (existing) terms = *existing;
    for (const auto& d : data_terms) {
        if (!terms) {
            terms = d;
            continue;
        }
        json::array next;
        for (const auto& t : *terms)
            for (const auto& dt : d) {
                auto merged = and_terms(t.is_object() ? t.get_object() : json::object(),
                                        dt.is_object() ? dt.get_object() : json::object());
                if (std::find(next.begin(), next.end(), json::value(merged)) == next.end()) next.push_back(merged);
            }
        terms = std::move(next);
    }
    auto& required = make_object(make_object(make_object(spec, "affinity"), "nodeAffinity"),
                                 "requiredDuringSchedulingIgnoredDuringExecution");
    required["nodeSelectorTerms"] = std::move(*terms);
    return true;
}

inline bool has_gate(const json::object* spec) {
    const auto* gates = array_at(spec, "schedulingGates");
    if (!gates) return false;
    return std::any_of(gates->begin(), gates->end(), [](const json::value& g) {
        return g.is_object() && string_at(&g.get_object(), "name") == std::string(data_gate);
    });
}

inline std::string label_of(const json::value& pod, std::string_view key, std::string_view where = "labels") {
    auto v = string_at(object_at(object_at(pod, "metadata"), where), key);
    return v ? *v : std::string();
}

inline std::vector<std::string> container_names(const json::object* spec, std::string_view list) {
    std::vector<std::string> out;
    if (const auto* cs = array_at(spec, list))
        for (const auto& c : *cs)
            if (c.is_object())
                if (auto n = string_at(&c.get_object(), "name")) out.push_back(*n);
    return out;
}

} // namespace injection_detail

/// The VolumeManager a pod names with its label, or nullopt when it names none (the webhook
/// then allows the pod unchanged). The webhook looks it up in the pod's namespace.
inline std::optional<std::string> requested_volume_manager(const boost::json::value& pod) {
    auto name = injection_detail::label_of(pod, volume_manager_label);
    if (name.empty()) return std::nullopt;
    return name;
}

/// The pod volume name of VolumeManager volume `volume_id`: "vck-<id fragment>-<hash>", a
/// DNS-1123 label, the same for the same id, different for different ids.
inline std::string pod_volume_name(std::string_view volume_id) {
    std::string hash = handlers::naming::short_hash(volume_id, 8);
    std::string id = handlers::naming::detail::dns_fragment(volume_id, 63 - 4 - 1 - hash.size());
    return "vck-" + (id.empty() ? std::string() : id + "-") + hash;
}

/// The admission decision for `pod` (the AdmissionReview's request.object), created in
/// namespace `ns`, whose label names `vm` (nullptr: no such VolumeManager in `ns`).
/// `registry` and `options` are the controller's, so paths and claims are those the
/// reconciler makes. A pod without the label is allowed unchanged.
inline PodInjection inject_pod(const boost::json::value& pod, std::string_view ns, const api::VolumeManager* vm,
                               const handlers::HandlerRegistry& registry,
                               const handlers::HandlerOptions& options = {}) {
    namespace json = boost::json;
    using namespace injection_detail;
    PodInjection out;
    out.pod = pod;
    auto refuse = [&](std::string message) {
        out.allowed = false;
        out.message = std::move(message);
        out.pod = pod;
        out.changed = false;
        out.gated = false;
        out.volumes.clear();
        out.warnings.clear();
        return out;
    };
    if (!pod.is_object()) return refuse("the object is not a pod");
    auto vm_name = requested_volume_manager(pod);
    if (!vm_name) return out;
    if (!label_of(pod, injected_annotation, "annotations").empty()) return out;  // done already
    if (vm && vm->metadata.namespace_ != ns) vm = nullptr;  // only the pod's own namespace counts
    if (!vm)
        return refuse("volumemanager \"" + *vm_name + "\" not found in namespace \"" + std::string(ns) +
                      "\": create it first or fix the label " + std::string(volume_manager_label));
    if (auto why = unusable(*vm); !why.empty()) return refuse(why);

    // Which volumes.
    std::vector<std::string> known;
    for (const auto& vc : vm->spec.volumeConfigs)
        if (std::find(known.begin(), known.end(), vc.id) == known.end()) known.push_back(vc.id);
    std::vector<std::string> ids = known;
    if (auto chosen = label_of(pod, volumes_annotation, "annotations"); !chosen.empty()) {
        ids = split_list(chosen);
        for (const auto& id : ids)
            if (std::find(known.begin(), known.end(), id) == known.end())
                return refuse("volume \"" + id + "\" named in " + std::string(volumes_annotation) +
                              " does not exist in volumemanager \"" + *vm_name + "\": its volumes are " +
                              quoted_list(known));
    }
    if (ids.empty()) return refuse("volumemanager \"" + *vm_name + "\" has no volumes to mount");

    // Where.
    std::string base(default_mount_base);
    if (auto b = label_of(pod, mount_path_annotation, "annotations"); !b.empty()) {
        auto normal = handlers::normalize_data_path(b);
        if (!normal) return refuse(std::string(mount_path_annotation) + " \"" + b + "\" has to be an absolute path");
        base = *normal;
    }
    std::map<std::string, std::string> mount_at;
    for (const auto& item : split_list(label_of(pod, mount_paths_annotation, "annotations"))) {
        auto eq = item.find('=');
        if (eq == std::string::npos)
            return refuse(std::string(mount_paths_annotation) + " entry \"" + item +
                          "\" has to be <volume id>=<absolute path>");
        std::string id = item.substr(0, eq), path = item.substr(eq + 1);
        if (std::find(ids.begin(), ids.end(), id) == ids.end())
            return refuse(std::string(mount_paths_annotation) + " names volume \"" + id +
                          "\", which the pod does not mount: its volumes are " + quoted_list(ids));
        auto normal = handlers::normalize_data_path(path);
        if (!normal)
            return refuse(std::string(mount_paths_annotation) + " path \"" + path + "\" of volume \"" + id +
                          "\" has to be an absolute path");
        mount_at[id] = *normal;
    }
    for (const auto& id : ids) {
        if (mount_at.contains(id)) continue;
        if (!path_component(id))
            return refuse("volume id \"" + id + "\" cannot be a directory name under " + base + ": give it a mount path "
                          "in " + std::string(mount_paths_annotation) + " (\"" + id + "=/some/path\")");
        mount_at[id] = (base == "/" ? "" : base) + "/" + id;
    }
    {
        std::map<std::string, std::string> by_path;
        for (const auto& id : ids)
            if (auto [it, fresh] = by_path.emplace(mount_at[id], id); !fresh)
                return refuse("volumes \"" + it->second + "\" and \"" + id + "\" would both be mounted at \"" +
                              mount_at[id] + "\": give one another path in " + std::string(mount_paths_annotation));
    }

    // Which containers.
    const json::object* spec = object_at(pod, "spec");
    auto containers = container_names(spec, "containers");
    auto init_containers = container_names(spec, "initContainers");
    std::vector<std::string> targets = containers;
    if (auto named = label_of(pod, containers_annotation, "annotations"); !named.empty()) {
        targets = split_list(named);
        for (const auto& c : targets)
            if (std::find(containers.begin(), containers.end(), c) == containers.end() &&
                std::find(init_containers.begin(), init_containers.end(), c) == init_containers.end()) {
                auto all = containers;
                all.insert(all.end(), init_containers.begin(), init_containers.end());
                return refuse("container \"" + c + "\" named in " + std::string(containers_annotation) +
                              " does not exist in the pod: its containers are " + quoted_list(all));
            }
    }
    if (targets.empty()) return refuse("the pod has no containers to mount volumemanager \"" + *vm_name + "\" into");

    // What each volume is now.
    std::vector<DataVolume> data;
    for (const auto& id : ids) {
        const api::VolumeConfig* vc = nullptr;
        for (const auto& c : vm->spec.volumeConfigs)
            if (c.id == id && !vc) vc = &c;
        data.push_back(describe(*vm, *vc, registry, options));
        const auto& d = data.back();
        if (!d.failed.empty())
            return refuse("volume \"" + id + "\" of volumemanager \"" + *vm_name + "\" failed: " + d.failed);
        if (!d.source)
            return refuse("volume \"" + id + "\" of volumemanager \"" + *vm_name + "\" is not ready (" + d.waiting +
                          ") and its " + vc->sourceType +
                          " source does not say in advance what a pod mounts: create the pod once it is Ready");
    }

    // Clashes with what the pod has.
    std::set<std::string> pod_volumes;
    if (const auto* vs = array_at(spec, "volumes"))
        for (const auto& v : *vs)
            if (v.is_object())
                if (auto n = string_at(&v.get_object(), "name")) pod_volumes.insert(*n);
    for (const auto& id : ids)
        if (pod_volumes.contains(pod_volume_name(id)))
            return refuse("the pod already has a volume named \"" + pod_volume_name(id) + "\", the name VCK gives volume \"" +
                          id + "\": rename the pod's volume");
    for (std::string_view list : {"containers", "initContainers"})
        if (const auto* cs = array_at(spec, list))
            for (const auto& c : *cs) {
                auto name = c.is_object() ? string_at(&c.get_object(), "name") : std::nullopt;
                if (!name || std::find(targets.begin(), targets.end(), *name) == targets.end()) continue;
                if (const auto* mounts = array_at(&c.get_object(), "volumeMounts"))
                    for (const auto& m : *mounts) {
                        auto at = m.is_object() ? string_at(&m.get_object(), "mountPath") : std::nullopt;
                        if (!at) continue;
                        auto normal = handlers::normalize_data_path(*at);
                        for (const auto& id : ids)
                            if (normal && *normal == mount_at[id])
                                return refuse("container \"" + *name + "\" already mounts something at \"" + *at +
                                              "\", where volume \"" + id + "\" would go: choose another " +
                                              std::string(mount_path_annotation) + " or " +
                                              std::string(mount_paths_annotation));
                    }
            }

    // A pod bound to a node already cannot wait at the scheduler, nor move to the data.
    auto node_name = string_at(spec, "nodeName");
    if (node_name && !node_name->empty())
        for (const auto& d : data) {
            if (!d.ready)
                return refuse("volume \"" + d.id + "\" is not ready (" + d.waiting + ") and the pod is bound to node \"" +
                              *node_name + "\" (spec.nodeName), so it cannot wait for the data: remove spec.nodeName "
                              "or create the pod once the volume is Ready");
            if (d.copies && !d.nodes.contains(*node_name)) {
                std::vector<std::string> nodes(d.nodes.begin(), d.nodes.end());
                return refuse("the pod is bound to node \"" + *node_name + "\" (spec.nodeName), which does not hold "
                              "volume \"" + d.id + "\": its data is on " + quoted_list(nodes) +
                              ": remove spec.nodeName or pick one of those nodes");
            }
        }

    // The mutated pod.
    json::value mutated = pod;
    auto& obj = mutated.get_object();
    auto& mspec = make_object(obj, "spec");
    auto& volumes = make_array(mspec, "volumes");
    std::vector<api::NodeAffinity> affinities;
    for (const auto& d : data) {
        json::value v = api::to_json(*d.source);
        if (!v.is_object()) v = json::object();
        json::object named{{"name", pod_volume_name(d.id)}};
        for (const auto& kv : v.get_object()) named[kv.key()] = kv.value();
        volumes.push_back(std::move(named));
        if (d.ready && d.affinity) affinities.push_back(*d.affinity);
    }
    for (std::string_view list : {"containers", "initContainers"}) {
        auto* cs = mspec.if_contains(list);
        if (!cs || !cs->is_array()) continue;
        for (auto& c : cs->get_array()) {
            if (!c.is_object()) continue;
            auto name = string_at(&c.get_object(), "name");
            if (!name || std::find(targets.begin(), targets.end(), *name) == targets.end()) continue;
            auto& mounts = make_array(c.get_object(), "volumeMounts");
            for (const auto& d : data) {
                json::object m{{"name", pod_volume_name(d.id)}, {"mountPath", mount_at[d.id]}};
                if (!d.writable) m["readOnly"] = true;
                mounts.push_back(std::move(m));
            }
        }
    }
    merge_required_affinity(mspec, affinities, false);
    for (const auto& d : data) {
        if (d.ready) continue;
        out.gated = true;
        out.warnings.push_back("volume \"" + d.id + "\" is not ready yet (" + d.waiting + "); the pod waits for it " +
                               "(scheduling gate " + std::string(data_gate) + ")");
    }
    if (out.gated && !has_gate(&mspec)) make_array(mspec, "schedulingGates").push_back(json::object{{"name", data_gate}});
    std::string injected;
    for (const auto& id : ids) injected += (injected.empty() ? "" : ",") + id;
    make_object(make_object(obj, "metadata"), "annotations")[injected_annotation] = injected;
    out.volumes = ids;
    out.pod = std::move(mutated);
    out.changed = true;
    return out;
}

namespace injection_detail {

/// The hostPath each volume of a pod mounts, by volume name.
inline std::map<std::string, std::string> mounted_host_paths(const json::object* spec) {
    std::map<std::string, std::string> out;
    if (const auto* vs = array_at(spec, "volumes"))
        for (const auto& v : *vs) {
            if (!v.is_object()) continue;
            auto name = string_at(&v.get_object(), "name");
            auto path = string_at(object_at(&v.get_object(), "hostPath"), "path");
            if (name && path) out[*name] = *path;
        }
    return out;
}

} // namespace injection_detail

/// For a pod bound to `node_name` and not gated: DataLost when a copied volume it mounts is
/// no longer on that node (its record there is Lost or gone), whatever the spec now says: a
/// copy that is no longer wanted stays while a running pod uses it (volumes/copy_planner.hpp),
/// so a change of the VolumeManager alone never takes data from a running pod.
inline PodDataDecision data_lost(const boost::json::value& pod, const api::VolumeManager& vm,
                                 const std::vector<std::string>& injected, const std::string& node_name,
                                 const std::string& who) {
    using namespace injection_detail;
    PodDataDecision out;
    auto mounted = mounted_host_paths(object_at(pod, "spec"));
    static const std::vector<api::CopyRecord> none;
    const auto& copies = vm.status ? vm.status->copies : none;
    for (const auto& id : injected) {
        auto it = mounted.find(pod_volume_name(id));
        if (it == mounted.end()) continue;
        bool recorded = false;
        const api::CopyRecord* here = nullptr;
        for (const auto& c : copies) {
            if (c.volume != id) continue;
            recorded = true;
            if (c.node == node_name && c.path == it->second && copy_phase(c) != CopyPhase::Lost) here = &c;
        }
        if (!recorded || here) continue;  // not a copied volume, or its copy is still there
        std::string detail;
        for (const auto& c : copies)
            if (c.volume == id && c.node == node_name && c.path == it->second && !c.message.empty())
                detail = " (" + c.phase + ": " + c.message + ")";
        out.action = PodDataAction::DataLost;
        out.message = who + " on node \"" + node_name + "\" mounts " + it->second +
                      ", but that node no longer holds volume \"" + id + "\"" + detail;
        return out;
    }
    return out;
}

/// What to do now about `pod`, which inject_pod admitted (it carries the injected-volumes
/// annotation), given its VolumeManager `vm` (nullptr: gone). Called by the reconciler for
/// the pods labelled with a VolumeManager's name whenever it or they change.
/// - Gated: Ungate once every injected volume is ready at the directory the pod mounts (the
///   returned pod has the gate removed and the data's node affinity ANDed into each of its
///   required terms: only requirements are added, as a 1.32 API server allows on a gated
///   pod); Wait while some is not (lost data is downloaded again: the pod keeps waiting);
///   Stuck when it never will be as the pod is (VolumeManager or volume gone, being deleted
///   or failed, the source changed so the directory the pod mounts will never be filled, or
///   a data affinity of several terms that cannot be added to the pod's terms).
/// - Not gated and bound to a node: data_lost() (the VolumeManager gone, or a copy it mounts
///   lost with its node); the pod is never changed. Claims are left to Kubernetes (the claim
///   outlives copies).
/// - Anything else: None.
inline PodDataDecision ungate(const boost::json::value& pod, const api::VolumeManager* vm,
                              const handlers::HandlerRegistry& registry,
                              const handlers::HandlerOptions& options = {}) {
    namespace json = boost::json;
    using namespace injection_detail;
    PodDataDecision out;
    if (!pod.is_object()) return out;
    auto injected = split_list(label_of(pod, injected_annotation, "annotations"));
    auto vm_name = label_of(pod, volume_manager_label);
    if (injected.empty() || vm_name.empty()) return out;
    const json::object* spec = object_at(pod, "spec");
    bool gated = has_gate(spec);
    auto node_name = string_at(spec, "nodeName").value_or("");
    if (!gated && node_name.empty()) return out;
    std::string pod_name = string_at(object_at(pod, "metadata"), "name").value_or("");
    std::string who = "pod \"" + pod_name + "\"";

    auto verdict = [&](PodDataAction a, std::string message) {
        out.action = a;
        out.message = std::move(message);
        return out;
    };
    auto gone = [&](std::string why) {
        return gated ? verdict(PodDataAction::Stuck, who + " waits for data that will not come: " + why)
                     : verdict(PodDataAction::DataLost, who + " on node \"" + node_name + "\" relies on data that is "
                                                                                          "going away: " + why);
    };
    if (!gated) {  // a finished pod loses nothing
        auto phase = string_at(object_at(pod, "status"), "phase").value_or("");
        if (phase == "Succeeded" || phase == "Failed") return out;
    }
    if (!vm) return gone("volumemanager \"" + vm_name + "\" no longer exists");
    if (!gated) return data_lost(pod, *vm, injected, node_name, who);
    if (auto why = unusable(*vm); !why.empty()) return gone(why);

    // The directory each volume of the pod mounts.
    auto mounted = mounted_host_paths(spec);

    std::vector<std::string> waiting;
    std::vector<api::NodeAffinity> affinities;
    for (const auto& id : injected) {
        const api::VolumeConfig* vc = nullptr;
        for (const auto& c : vm->spec.volumeConfigs)
            if (c.id == id && !vc) vc = &c;
        if (!vc) return gone("volume \"" + id + "\" is no longer in volumemanager \"" + vm_name + "\"");
        auto d = describe(*vm, *vc, registry, options);
        if (!d.failed.empty()) return gone("volume \"" + id + "\" failed: " + d.failed);
        auto it = mounted.find(pod_volume_name(id));
        if (d.copies && d.source && d.source->hostPath && it != mounted.end() && it->second != d.source->hostPath->path)
            return gone("volume \"" + id + "\" changed its source since the pod was made, so the directory it mounts (" +
                        it->second + ") will never be filled: delete the pod and create it again");
        if (!d.ready) {
            std::string why = d.waiting;
            if (!d.lost.empty()) why += "; lost: " + d.lost.front();
            waiting.push_back("volume \"" + id + "\": " + why);
        } else if (d.affinity) {
            affinities.push_back(*d.affinity);
        }
    }
    if (!waiting.empty()) {
        std::string msg;
        for (const auto& w : waiting) msg += (msg.empty() ? "" : "; ") + w;
        return verdict(PodDataAction::Wait, who + " waits for its data: " + msg);
    }
    json::value next = pod;
    auto& nspec = next.get_object()["spec"].get_object();
    if (!merge_required_affinity(nspec, affinities, true))
        return gone("the data's node affinity has several terms, which cannot be added to the pod's own terms while it "
                    "is gated: delete the pod and create it again");
    auto& gates = make_array(nspec, "schedulingGates");
    json::array kept;
    for (const auto& g : gates)
        if (!(g.is_object() && string_at(&g.get_object(), "name") == std::string(data_gate))) kept.push_back(g);
    if (kept.empty()) nspec.erase("schedulingGates");
    else gates = std::move(kept);
    out.pod = std::move(next);
    return verdict(PodDataAction::Ungate, who + ": every volume is ready, the gate " + std::string(data_gate) +
                                              " is removed");
}

} // namespace vck::volumes
