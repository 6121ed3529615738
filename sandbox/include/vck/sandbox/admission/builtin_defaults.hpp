// BuiltinDefaults: the fields kube-apiserver 1.32 fills in on built-in kinds when a write
// leaves them out (the SetDefaults_* functions of k8s.io/kubernetes/pkg/apis/*/v1, run on
// every create and update), for the kinds the sandbox serves. apply_builtin_defaults(group,
// plural, obj) changes only what is absent; a value the client set is never replaced, and a
// part of another type than the API's (refused elsewhere) is left alone. Except for what the
// conversion and the registry strategies change before validating, done here too: a Node's
// podCIDR follows its podCIDRs, a Pod's negative terminationGracePeriodSeconds becomes 1, and
// a Lease loses strategy and preferredHolder (CoordinatedLeaderElection is off in 1.32).
// Jobs get their generated selector from generate_job_selector, on create only.
// Not modelled: admission plugins' additions (DefaultTolerationSeconds' tolerations, the
// default StorageClass of a claim); the ServiceAccount plugin's are service_accounts.hpp's.
#pragma once

#include <vck/sandbox/admission/webhook_configuration.hpp>

#include <boost/json.hpp>

#include <string>
#include <string_view>

namespace vck::sandbox {

namespace builtin_defaults_detail {

namespace json = boost::json;

inline void set_absent(json::object& o, std::string_view key, json::value v) {
    if (!o.contains(key)) o[key] = std::move(v);
}

inline json::object* object_at(json::object& o, std::string_view key) {
    auto* v = o.if_contains(key);
    return v ? v->if_object() : nullptr;
}

/// imagePullPolicy's default: Always for an image without a tag, or tagged latest;
/// IfNotPresent otherwise (a digest counts as a tag).
inline std::string pull_policy_for(std::string_view image) {
    if (image.find('@') != std::string_view::npos) return "IfNotPresent";
    auto slash = image.rfind('/');
    auto colon = image.rfind(':');
    bool tagged = colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash);
    if (!tagged || image.substr(colon + 1) == "latest") return "Always";
    return "IfNotPresent";
}

/// SetDefaults_Probe and SetDefaults_HTTPGetAction.
inline void probe_defaults(json::object& probe) {
    set_absent(probe, "timeoutSeconds", 1);
    set_absent(probe, "periodSeconds", 10);
    set_absent(probe, "successThreshold", 1);
    set_absent(probe, "failureThreshold", 3);
    if (auto* get = object_at(probe, "httpGet")) {
        set_absent(*get, "path", "/");
        set_absent(*get, "scheme", "HTTP");
    }
}

inline void container_defaults(json::object& c) {
    set_absent(c, "terminationMessagePath", "/dev/termination-log");
    set_absent(c, "terminationMessagePolicy", "File");
    // Defaulted from the image even when it is missing ("" has no tag: Always), as Go does.
    const auto* image = c.if_contains("image");
    set_absent(c, "imagePullPolicy",
               json::string(pull_policy_for(image && image->is_string() ? std::string_view(image->get_string()) : "")));
    set_absent(c, "resources", json::object());
    if (auto* ports = c.if_contains("ports"); ports && ports->is_array())
        for (auto& port : ports->get_array())
            if (auto* po = port.if_object()) set_absent(*po, "protocol", "TCP");
    for (const char* kind : {"livenessProbe", "readinessProbe", "startupProbe"})
        if (auto* probe = object_at(c, kind)) probe_defaults(*probe);
}

/// SetDefaults_ProjectedVolumeSource (defaultMode 0644) and
/// SetDefaults_ServiceAccountTokenProjection (an hour).
inline void projected_volume_defaults(json::object& vol) {
    auto* projected = object_at(vol, "projected");
    if (!projected) return;
    set_absent(*projected, "defaultMode", 420);
    if (auto* sources = projected->if_contains("sources"); sources && sources->is_array())
        for (auto& src : sources->get_array())
            if (auto* so = src.if_object())
                if (auto* token = object_at(*so, "serviceAccountToken")) set_absent(*token, "expirationSeconds", 3600);
}

inline void pod_defaults(json::object& pod) {
    // The spec is a struct, not a pointer, in Go: it is defaulted even when the body has none.
    if (!pod.contains("spec")) pod["spec"] = json::object();
    auto* spec = object_at(pod, "spec");
    if (!spec) return;
    set_absent(*spec, "restartPolicy", "Always");
    set_absent(*spec, "dnsPolicy", "ClusterFirst");
    set_absent(*spec, "schedulerName", "default-scheduler");
    set_absent(*spec, "terminationGracePeriodSeconds", 30);
    // The pod strategy turns a negative grace period into 1 (the shortest the kubelet honours).
    if (const auto* g = spec->if_contains("terminationGracePeriodSeconds"); g && g->is_int64() && g->get_int64() < 0)
        (*spec)["terminationGracePeriodSeconds"] = 1;
    set_absent(*spec, "securityContext", json::object());
    set_absent(*spec, "enableServiceLinks", true);
    for (const char* list : {"containers", "initContainers"})
        if (auto* cs = spec->if_contains(list); cs && cs->is_array())
            for (auto& c : cs->get_array())
                if (auto* co = c.if_object()) container_defaults(*co);
    if (auto* vols = spec->if_contains("volumes"); vols && vols->is_array())
        for (auto& v : vols->get_array())
            if (auto* vo = v.if_object()) projected_volume_defaults(*vo);
}

/// The v1 conversion of a Node's spec keeps podCIDR and podCIDRs in step: podCIDR alone
/// becomes podCIDRs, and podCIDR reads as the first of podCIDRs (one that disagrees is lost).
inline void node_pod_cidrs(json::object& node) {
    auto* spec = object_at(node, "spec");
    if (!spec) return;
    const auto* list = spec->if_contains("podCIDRs");
    const auto* single = spec->if_contains("podCIDR");
    if (list && list->is_array() && !list->get_array().empty()) {
        json::value first = list->get_array().front();  // a copy: assigning may move the members
        (*spec)["podCIDR"] = std::move(first);
    } else if (single && single->is_string() && !single->get_string().empty()) {
        json::array cidrs{*single};
        (*spec)["podCIDRs"] = std::move(cidrs);
    }
}

/// SetDefaults_Deployment / SetDefaults_ReplicaSet (apps/v1), and the pod template's spec
/// defaulted as a pod's (SetDefaults_PodSpec runs on every nested PodTemplateSpec).
inline void apps_defaults(std::string_view plural, json::object& o) {
    auto* spec = object_at(o, "spec");
    if (!spec) return;
    set_absent(*spec, "replicas", 1);
    if (auto* tmpl = object_at(*spec, "template")) pod_defaults(*tmpl);
    if (plural != "deployments") return;
    set_absent(*spec, "revisionHistoryLimit", 10);
    set_absent(*spec, "progressDeadlineSeconds", 600);
    auto* strategy = object_at(*spec, "strategy");
    if (!strategy) {
        (*spec)["strategy"] = json::object();
        strategy = object_at(*spec, "strategy");
    }
    set_absent(*strategy, "type", "RollingUpdate");
    const auto* type = strategy->if_contains("type");
    if (type && type->is_string() && type->get_string() == "RollingUpdate") {
        auto* ru = object_at(*strategy, "rollingUpdate");
        if (!ru) {
            (*strategy)["rollingUpdate"] = json::object();
            ru = object_at(*strategy, "rollingUpdate");
        }
        set_absent(*ru, "maxUnavailable", "25%");
        set_absent(*ru, "maxSurge", "25%");
    }
}

/// SetDefaults_Service: ClusterIP, sessionAffinity None, TCP ports whose targetPort is their
/// port, Cluster traffic policies (the external one only where there are node ports).
inline void service_defaults(json::object& svc) {
    if (!svc.contains("spec")) svc["spec"] = json::object();
    auto* spec = object_at(svc, "spec");
    if (!spec) return;
    set_absent(*spec, "type", "ClusterIP");
    set_absent(*spec, "sessionAffinity", "None");
    const auto* type = spec->if_contains("type");
    const std::string t = type && type->is_string() ? std::string(type->get_string()) : "";
    if (t != "ExternalName") set_absent(*spec, "internalTrafficPolicy", "Cluster");
    if (t == "NodePort" || t == "LoadBalancer") set_absent(*spec, "externalTrafficPolicy", "Cluster");
    if (t == "LoadBalancer") set_absent(*spec, "allocateLoadBalancerNodePorts", true);
    if (auto* ports = spec->if_contains("ports"); ports && ports->is_array())
        for (auto& port : ports->get_array())
            if (auto* po = port.if_object()) {
                set_absent(*po, "protocol", "TCP");
                const auto* target = po->if_contains("targetPort");
                const bool zero = !target || (target->is_int64() && target->get_int64() == 0) ||
                                  (target->is_string() && target->get_string().empty());
                if (const auto* p = po->if_contains("port"); zero && p) {
                    json::value port_number = *p;  // a copy: assigning may move the members
                    (*po)["targetPort"] = std::move(port_number);
                }
            }
}

/// SetDefaults_StatefulSet: OrderedReady, RollingUpdate with partition 0, one replica, ten
/// revisions, claims retained; the pod template and claim templates as their own kinds'.
inline void statefulset_defaults(json::object& sts) {
    if (!sts.contains("spec")) sts["spec"] = json::object();
    auto* spec = object_at(sts, "spec");
    if (!spec) return;
    set_absent(*spec, "podManagementPolicy", "OrderedReady");
    set_absent(*spec, "updateStrategy", json::object{{"type", "RollingUpdate"}});
    if (auto* us = object_at(*spec, "updateStrategy")) {
        set_absent(*us, "type", "RollingUpdate");
        if (const auto* t = us->if_contains("type"); t && *t == "RollingUpdate") {
            set_absent(*us, "rollingUpdate", json::object());
            if (auto* ru = object_at(*us, "rollingUpdate")) set_absent(*ru, "partition", 0);
        }
    }
    set_absent(*spec, "replicas", 1);
    set_absent(*spec, "revisionHistoryLimit", 10);
    set_absent(*spec, "persistentVolumeClaimRetentionPolicy", json::object());
    if (auto* policy = object_at(*spec, "persistentVolumeClaimRetentionPolicy")) {
        set_absent(*policy, "whenDeleted", "Retain");
        set_absent(*policy, "whenScaled", "Retain");
    }
    if (auto* tmpl = object_at(*spec, "template")) pod_defaults(*tmpl);
    if (auto* vcts = spec->if_contains("volumeClaimTemplates"); vcts && vcts->is_array())
        for (auto& c : vcts->get_array())
            if (auto* co = c.if_object()) {
                if (auto* cs = object_at(*co, "spec")) set_absent(*cs, "volumeMode", "Filesystem");
                set_absent(*co, "status", json::object{{"phase", "Pending"}});
            }
}

/// The PVC strategy's NormalizeDataSources (AnyVolumeDataSource, on in 1.32): a claim with
/// only dataSource gets the same dataSourceRef, and one with only a dataSourceRef that names
/// no namespace gets the same dataSource, so older clients reading dataSource see it too.
inline void claim_data_sources(json::object& spec) {
    const auto* ref = spec.if_contains("dataSourceRef");
    const auto* ds = spec.if_contains("dataSource");
    bool has_ref = ref && ref->is_object(), has_ds = ds && ds->is_object();
    if (has_ds && !has_ref) {
        spec["dataSourceRef"] = *ds;
    } else if (has_ref && !has_ds && !ref->get_object().contains("namespace")) {
        json::object copy;
        for (const char* k : {"apiGroup", "kind", "name"})
            if (const auto* v = ref->get_object().if_contains(k)) copy[k] = *v;
        spec["dataSource"] = std::move(copy);
    }
}

/// A Job without labels gets its template's (SetDefaults_Job runs again when the stored
/// object is read back, so the labels generate_job_selector adds are copied too).
inline void job_labels_from_template(json::object& job) {
    const auto* spec = object_at(job, "spec");
    const auto* tmpl = spec ? spec->if_contains("template") : nullptr;
    const auto* tmd = tmpl && tmpl->is_object() ? tmpl->get_object().if_contains("metadata") : nullptr;
    const auto* tlabels = tmd && tmd->is_object() ? tmd->get_object().if_contains("labels") : nullptr;
    if (!tlabels || !tlabels->is_object() || tlabels->get_object().empty()) return;
    json::value copy = *tlabels;  // a copy: inserting may move the members
    auto& md = job["metadata"];
    if (!md.is_object()) md = json::object();
    auto* labels = md.get_object().if_contains("labels");
    if (labels && labels->is_object() && !labels->get_object().empty()) return;
    md.get_object()["labels"] = std::move(copy);
}

/// SetDefaults_Job (batch/v1): completions and parallelism 1 when both are unset (else an
/// unset parallelism is 1), backoffLimit 6 (2147483647 with backoffLimitPerIndex), NonIndexed,
/// not suspended, pods replaced once TerminatingOrFailed (Failed under a podFailurePolicy), the
/// template's labels copied to a Job that has none; the template's pod spec as a pod's.
inline void job_defaults(json::object& job) {
    if (!job.contains("spec")) job["spec"] = json::object();
    auto* spec = object_at(job, "spec");
    if (!spec) return;
    if (!spec->contains("completions") && !spec->contains("parallelism")) {
        (*spec)["completions"] = 1;
        (*spec)["parallelism"] = 1;
    }
    set_absent(*spec, "parallelism", 1);
    set_absent(*spec, "backoffLimit", spec->contains("backoffLimitPerIndex") ? 2147483647 : 6);
    set_absent(*spec, "completionMode", "NonIndexed");
    set_absent(*spec, "suspend", false);
    set_absent(*spec, "podReplacementPolicy", spec->contains("podFailurePolicy") ? "Failed" : "TerminatingOrFailed");
    if (auto* tmpl = object_at(*spec, "template")) {
        pod_defaults(*tmpl);
        job_labels_from_template(job);
    }
}

} // namespace builtin_defaults_detail

/// The Job strategy's generateSelector, on create when spec.manualSelector is not true: the
/// template gets batch.kubernetes.io/controller-uid and controller-uid (the Job's uid),
/// batch.kubernetes.io/job-name and job-name (its name), each unless already set (a
/// conflicting one is left for validation to refuse), and the selector matchLabels
/// batch.kubernetes.io/controller-uid=<uid>. Needs metadata.uid and name, so it runs after
/// the store assigns them.
inline void generate_job_selector(boost::json::value& obj) {
    using namespace builtin_defaults_detail;
    auto* o = obj.if_object();
    auto* spec = o ? object_at(*o, "spec") : nullptr;
    auto* md = o ? object_at(*o, "metadata") : nullptr;
    if (!spec || !md) return;
    if (const auto* manual = spec->if_contains("manualSelector"); manual && manual->is_bool() && manual->get_bool()) return;
    const auto* uid_v = md->if_contains("uid");
    const auto* name_v = md->if_contains("name");
    const json::string uid = uid_v && uid_v->is_string() ? uid_v->get_string() : json::string();
    const json::string name = name_v && name_v->is_string() ? name_v->get_string() : json::string();
    auto& tmpl = (*spec)["template"];
    if (!tmpl.is_object()) tmpl = json::object();
    auto& tmd = tmpl.get_object()["metadata"];
    if (!tmd.is_object()) tmd = json::object();
    auto& labels = tmd.get_object()["labels"];
    if (!labels.is_object()) labels = json::object();
    for (const char* k : {"job-name", "batch.kubernetes.io/job-name"}) set_absent(labels.get_object(), k, name);
    for (const char* k : {"controller-uid", "batch.kubernetes.io/controller-uid"}) set_absent(labels.get_object(), k, uid);
    auto& sel = (*spec)["selector"];
    if (!sel.is_object()) sel = json::object();
    auto& ml = sel.get_object()["matchLabels"];
    if (!ml.is_object()) ml = json::object();
    set_absent(ml.get_object(), "batch.kubernetes.io/controller-uid", uid);
    job_labels_from_template(*o);
}

/// The status a kind's object always has when kube-apiserver returns it, because Go's encoder
/// writes these fields even when nothing set them (struct fields, and integers without
/// omitempty): Service `{"loadBalancer": {}}`, Deployment and Job `{}`, ReplicaSet
/// `{"replicas": 0}`, StatefulSet `{"replicas": 0, "availableReplicas": 0}`. A client that reads
/// `status` of a created object (the Python client's models) finds it.
inline void status_always_written(std::string_view group, std::string_view plural, boost::json::object& o) {
    using namespace builtin_defaults_detail;
    const bool service = group.empty() && plural == "services";
    const bool apps = group == "apps" && (plural == "deployments" || plural == "replicasets" || plural == "statefulsets");
    const bool job = group == "batch" && plural == "jobs";
    if (!service && !apps && !job) return;
    auto& status = o["status"];
    if (!status.is_object()) status = json::object();
    auto& st = status.get_object();
    if (service) set_absent(st, "loadBalancer", json::object());
    if (plural == "replicasets" || plural == "statefulsets") set_absent(st, "replicas", 0);
    if (plural == "statefulsets") set_absent(st, "availableReplicas", 0);
}

inline void apply_builtin_defaults(std::string_view group, std::string_view plural, boost::json::value& obj) {
    using namespace builtin_defaults_detail;
    auto* o = obj.if_object();
    if (!o) return;
    status_always_written(group, plural, *o);
    if (group.empty() && plural == "pods") {
        pod_defaults(*o);
    } else if (group.empty() && plural == "namespaces") {
        // Every namespace carries its own name as a label (for namespaceSelectors).
        auto* md = object_at(*o, "metadata");
        const auto* found = md ? md->if_contains("name") : nullptr;
        if (found && found->is_string()) {
            json::string name = found->get_string();  // a copy: inserting "labels" may move md's members
            auto& labels = (*md)["labels"];
            if (!labels.is_object()) labels = json::object();
            labels.get_object()["kubernetes.io/metadata.name"] = std::move(name);
        }
        // SetDefaults_NamespaceStatus: an empty phase is Active.
        auto& status = (*o)["status"];
        if (!status.is_object()) status = json::object();
        if (auto* phase = status.get_object().if_contains("phase"); !phase || !phase->is_string() || phase->get_string().empty())
            status.get_object()["phase"] = "Active";
    } else if (group.empty() && plural == "nodes") {
        node_pod_cidrs(*o);
    } else if (group == "coordination.k8s.io" && plural == "leases") {
        // The lease strategy drops the fields of CoordinatedLeaderElection, off in 1.32.
        if (auto* spec = object_at(*o, "spec")) {
            spec->erase("strategy");
            spec->erase("preferredHolder");
        }
    } else if (group.empty() && plural == "persistentvolumes") {
        if (auto* spec = object_at(*o, "spec")) {
            set_absent(*spec, "persistentVolumeReclaimPolicy", "Retain");
            set_absent(*spec, "volumeMode", "Filesystem");
        }
    } else if (group.empty() && plural == "persistentvolumeclaims") {
        if (auto* spec = object_at(*o, "spec")) {
            set_absent(*spec, "volumeMode", "Filesystem");
            claim_data_sources(*spec);
        }
    } else if (group == "apps" && (plural == "deployments" || plural == "replicasets")) {
        apps_defaults(plural, *o);
    } else if (group.empty() && plural == "services") {
        service_defaults(*o);
    } else if (group == "admissionregistration.k8s.io") {
        webhook_configuration_defaults(plural == "mutatingwebhookconfigurations", obj);
    } else if (group == "apps" && plural == "statefulsets") {
        statefulset_defaults(*o);
    } else if (group == "batch" && plural == "jobs") {
        job_defaults(*o);
    } else if (group == "storage.k8s.io" && plural == "storageclasses") {
        set_absent(*o, "reclaimPolicy", "Delete");
        set_absent(*o, "volumeBindingMode", "Immediate");
    }
}

} // namespace vck::sandbox
