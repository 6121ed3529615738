// PodValidation: what kube-apiserver 1.32 refuses in a Pod's spec (ValidatePodCreate,
// ValidatePodUpdate of pkg/apis/core/validation), with its messages and field paths:
// - validate_pod_spec: containers (required; name a DNS label unique across containers and
//   init containers; image; imagePullPolicy; ports; volumeMounts naming a volume), volumes
//   (name a DNS label, unique, exactly one source and its required fields), restartPolicy,
//   dnsPolicy, nodeSelector, activeDeadlineSeconds, tolerations;
// - validate_pod_update: the spec of a pod is immutable but for container and init container
//   images, activeDeadlineSeconds (set, or lowered), additions to tolerations,
//   terminationGracePeriodSeconds from negative to 1, and removed schedulingGates; anything
//   else (spec.nodeName included: only pods/binding sets it) is Forbidden at "spec" with the
//   real message's list of what may change, then a diff. The real server appends go-cmp's
//   diff of the Go structs; this one names the changed top-level fields in a go-cmp-like
//   layout (Go field names, JSON values), not byte-for-byte go-cmp.
// The object is validated after defaulting (builtin_defaults.hpp), as the real server does;
// pods/status writes keep the spec and are not validated here.
#pragma once

#include <vck/sandbox/validation/spec_validation.hpp>

#include <boost/json.hpp>

#include <cctype>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace vck::sandbox {

namespace pod_validation_detail {

using namespace spec_validation;

/// The volume sources of a pod volume, in the order validateVolumeSource checks them, with
/// the field name its "more than 1 volume type" error names (cephFS and the historical
/// "downwarAPI" spelling are the real server's).
struct Source {
    const char* json;
    const char* reported;
};
inline constexpr Source pod_volume_sources[] = {
    {"emptyDir", "emptyDir"}, {"hostPath", "hostPath"}, {"gitRepo", "gitRepo"},
    {"gcePersistentDisk", "gcePersistentDisk"}, {"awsElasticBlockStore", "awsElasticBlockStore"},
    {"secret", "secret"}, {"nfs", "nfs"}, {"iscsi", "iscsi"}, {"glusterfs", "glusterfs"}, {"flocker", "flocker"},
    {"persistentVolumeClaim", "persistentVolumeClaim"}, {"rbd", "rbd"}, {"cinder", "cinder"}, {"cephfs", "cephFS"},
    {"quobyte", "quobyte"}, {"downwardAPI", "downwarAPI"}, {"fc", "fc"}, {"flexVolume", "flexVolume"},
    {"configMap", "configMap"}, {"azureFile", "azureFile"}, {"vsphereVolume", "vsphereVolume"},
    {"photonPersistentDisk", "photonPersistentDisk"}, {"portworxVolume", "portworxVolume"},
    {"azureDisk", "azureDisk"}, {"storageos", "storageos"}, {"projected", "projected"}, {"scaleIO", "scaleIO"},
    {"csi", "csi"}, {"ephemeral", "ephemeral"},
};

/// The required fields of the common sources (their own validate*VolumeSource).
inline Errors source_fields(std::string_view kind, const json::value* src, const std::string& path) {
    Errors errs;
    auto need = [&](std::string_view f) {
        if (str(src, f).empty()) errs.push_back(field::required(child(path, f)));
    };
    if (kind == "hostPath") need("path");
    else if (kind == "persistentVolumeClaim") need("claimName");
    else if (kind == "nfs") {
        need("server");
        need("path");
    } else if (kind == "csi") need("driver");
    else if (kind == "projected") {
        // validateProjectedVolumeSource's rules for the service-account token source.
        const auto* sources = at(src, "sources");
        if (sources && sources->is_array())
            for (std::size_t i = 0; i < sources->get_array().size(); ++i) {
                const auto* token = at(&sources->get_array()[i], "serviceAccountToken");
                if (!token) continue;
                auto p = child(index(child(path, "sources"), i), "serviceAccountToken");
                const auto* e = at(token, "expirationSeconds");
                std::int64_t seconds = e && e->is_number() ? e->to_number<std::int64_t>() : 0;
                if (seconds < 600)
                    errs.push_back(field::invalid(child(p, "expirationSeconds"), json::value(seconds),
                                                  "may not specify a duration less than 10 minutes"));
                if (seconds > (std::int64_t(1) << 32))
                    errs.push_back(field::invalid(child(p, "expirationSeconds"), json::value(seconds),
                                                  "may not specify a duration larger than 2^32 seconds"));
                if (str(token, "path").empty()) errs.push_back(field::required(child(path, "path")));
            }
    }
    return errs;
}

inline Errors volume_source(const json::value& vol, const std::string& path) {
    Errors errs;
    int count = 0;
    for (const auto& s : pod_volume_sources) {
        if (!has(&vol, s.json)) continue;
        if (count > 0) {
            errs.push_back(field::forbidden(child(path, s.reported), "may not specify more than 1 volume type"));
            continue;
        }
        ++count;
        append(errs, source_fields(s.json, at(&vol, s.json), child(path, s.json)));
    }
    if (count == 0) errs.push_back(field::required(path, "must specify a volume type"));
    return errs;
}

/// ValidateVolumes; returns the names of the volumes that are valid by name.
inline Errors volumes(const json::array* list, const std::string& path, std::set<std::string>& names) {
    Errors errs;
    if (!list) return errs;
    for (std::size_t i = 0; i < list->size(); ++i) {
        const auto& vol = (*list)[i];
        auto p = index(path, i);
        append(errs, volume_source(vol, p));
        auto name = str(&vol, "name");
        Errors el = dns_label(name, child(p, "name"));
        if (names.count(name)) el.push_back(field::duplicate(child(p, "name"), sv(name)));
        if (el.empty()) names.insert(name);
        else append(errs, std::move(el));
    }
    return errs;
}

/// validation.IsValidPortName.
inline std::vector<std::string> port_name_problems(std::string_view n) {
    std::vector<std::string> out;
    if (n.size() > 15) out.push_back("must be no more than 15 characters");
    bool letter = false, ok = true;
    for (char c : n) {
        if (c >= 'a' && c <= 'z') letter = true;
        else if (!(c >= '0' && c <= '9') && c != '-') ok = false;
    }
    if (!ok) out.push_back("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    if (n.find("--") != std::string_view::npos) out.push_back("must not contain consecutive hyphens");
    if (!letter) out.push_back("must contain at least one letter (a-z)");
    if (!n.empty() && (n.front() == '-' || n.back() == '-')) out.push_back("must not begin or end with a hyphen");
    return out;
}

inline Errors ports(const json::array* list, const std::string& path) {
    Errors errs;
    if (!list) return errs;
    std::set<std::string> names;
    for (std::size_t i = 0; i < list->size(); ++i) {
        const auto& port = (*list)[i];
        auto p = index(path, i);
        auto name = str(&port, "name");
        if (!name.empty()) {
            auto problems = port_name_problems(name);
            for (const auto& m : problems) errs.push_back(field::invalid(child(p, "name"), sv(name), m));
            if (problems.empty() && !names.insert(name).second)
                errs.push_back(field::duplicate(child(p, "name"), sv(name)));
        }
        auto cp = integer(&port, "containerPort").value_or(0);
        if (cp == 0) errs.push_back(field::required(child(p, "containerPort")));
        else append(errs, port_number(cp, child(p, "containerPort")));
        if (auto hp = integer(&port, "hostPort").value_or(0); hp != 0) append(errs, port_number(hp, child(p, "hostPort")));
        append(errs, one_of(&port, "protocol", child(p, "protocol"), {"SCTP", "TCP", "UDP"}));
    }
    return errs;
}

inline Errors volume_mounts(const json::array* list, const std::string& path, const std::set<std::string>& vols) {
    Errors errs;
    if (!list) return errs;
    std::set<std::string> paths;
    for (std::size_t i = 0; i < list->size(); ++i) {
        const auto& m = (*list)[i];
        auto p = index(path, i);
        auto name = str(&m, "name");
        if (name.empty()) errs.push_back(field::required(child(p, "name")));
        if (!vols.count(name)) errs.push_back(field::not_found(child(p, "name"), sv(name)));
        auto mp = str(&m, "mountPath");
        if (mp.empty()) errs.push_back(field::required(child(p, "mountPath")));
        if (paths.count(mp)) errs.push_back(field::invalid(child(p, "mountPath"), sv(mp), "must be unique"));
        paths.insert(mp);
    }
    return errs;
}

inline Errors container(const json::value& c, const std::string& p, std::set<std::string>& names,
                        const std::set<std::string>& vols) {
    Errors errs;
    auto name = str(&c, "name");
    append(errs, dns_label(name, child(p, "name")));
    if (names.count(name)) errs.push_back(field::duplicate(child(p, "name"), sv(name)));
    else names.insert(name);
    auto image = str(&c, "image");
    if (image.empty()) errs.push_back(field::required(child(p, "image")));
    else if (std::isspace(static_cast<unsigned char>(image.front())) ||
             std::isspace(static_cast<unsigned char>(image.back())))
        errs.push_back(field::invalid(child(p, "image"), sv(image), "must not have leading or trailing whitespace"));
    append(errs, ports(array_at(&c, "ports"), child(p, "ports")));
    append(errs, volume_mounts(array_at(&c, "volumeMounts"), child(p, "volumeMounts"), vols));
    append(errs, one_of(&c, "imagePullPolicy", child(p, "imagePullPolicy"), {"Always", "IfNotPresent", "Never"}));
    return errs;
}

/// Go's %#v of a core.Toleration, the bad value of some toleration errors.
inline std::string toleration_go(const json::value& t) {
    std::string out = "core.Toleration{Key:" + go::quote(str(&t, "key")) + ", Operator:" +
                      go::quote(str(&t, "operator")) + ", Value:" + go::quote(str(&t, "value")) +
                      ", Effect:" + go::quote(str(&t, "effect")) + ", TolerationSeconds:";
    out += has(&t, "tolerationSeconds") ? "(*int64)(0xc000000000)" : "(*int64)(nil)";
    return out + "}";
}

inline Errors tolerations(const json::array* list, const std::string& path) {
    Errors errs;
    if (!list) return errs;
    for (std::size_t i = 0; i < list->size(); ++i) {
        const auto& t = (*list)[i];
        auto p = index(path, i);
        auto k = str(&t, "key"), op = str(&t, "operator"), value = str(&t, "value"), effect = str(&t, "effect");
        if (!k.empty())
            if (auto problem = api::qualified_name_problem(k); !problem.empty())
                errs.push_back(field::invalid(child(p, "key"), sv(k), problem));
        if (k.empty() && op != "Exists")
            errs.push_back(field::invalid(child(p, "operator"), sv(op),
                                          "operator must be Exists when `key` is empty, which means \"match all "
                                          "values and all keys\""));
        if (has(&t, "tolerationSeconds") && effect != "NoExecute")
            errs.push_back(field::invalid(child(p, "effect"), sv(effect),
                                          "effect must be 'NoExecute' when `tolerationSeconds` is set"));
        if (op.empty() || op == "Equal") {
            if (auto problem = api::label_value_problem(value); !problem.empty())
                errs.push_back(field::invalid_go(child(p, "operator"), toleration_go(t), problem));
        } else if (op == "Exists") {
            if (!value.empty())
                errs.push_back(field::invalid_go(child(p, "operator"), toleration_go(t),
                                          "value must be empty when `operator` is 'Exists'"));
        } else {
            errs.push_back(field::not_supported(child(p, "operator"), sv(op), {"Equal", "Exists"}));
        }
        if (!effect.empty())
            append(errs, one_of(&t, "effect", child(p, "effect"), {"NoSchedule", "PreferNoSchedule", "NoExecute"}));
    }
    return errs;
}

} // namespace pod_validation_detail

/// ValidatePodSpec for the fields listed above; `path` is "spec".
inline std::vector<FieldError> validate_pod_spec(const boost::json::value* spec, const std::string& path = "spec") {
    using namespace pod_validation_detail;
    Errors errs;
    std::set<std::string> vols;
    append(errs, volumes(array_at(spec, "volumes"), child(path, "volumes"), vols));

    std::set<std::string> names;
    const auto* cs = array_at(spec, "containers");
    if (!cs || cs->empty()) {
        errs.push_back(field::required(child(path, "containers")));
    } else {
        for (std::size_t i = 0; i < cs->size(); ++i)
            append(errs, container((*cs)[i], index(child(path, "containers"), i), names, vols));
    }
    // Init containers' names must differ from the containers' and from each other's.
    if (const auto* ics = array_at(spec, "initContainers"))
        for (std::size_t i = 0; i < ics->size(); ++i)
            append(errs, container((*ics)[i], index(child(path, "initContainers"), i), names, vols));

    append(errs, one_of(spec, "restartPolicy", child(path, "restartPolicy"), {"Always", "OnFailure", "Never"}));
    append(errs, one_of(spec, "dnsPolicy", child(path, "dnsPolicy"),
                        {"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"}));
    append(errs, labels_map(object_at(spec, "nodeSelector"), child(path, "nodeSelector")));
    if (auto sa = str(spec, "serviceAccountName"); !sa.empty())
        append(errs, validate_dns1123_subdomain(sa, child(path, "serviceAccountName")));
    if (auto node = str(spec, "nodeName"); !node.empty())
        append(errs, validate_dns1123_subdomain(node, child(path, "nodeName")));
    if (auto ads = integer(spec, "activeDeadlineSeconds"); ads && (*ads < 1 || *ads > std::numeric_limits<std::int32_t>::max()))
        errs.push_back(field::invalid(child(path, "activeDeadlineSeconds"), json::value(*ads),
                                      inclusive_range(1, std::numeric_limits<std::int32_t>::max())));
    append(errs, tolerations(array_at(spec, "tolerations"), child(path, "tolerations")));
    return errs;
}

inline std::vector<FieldError> validate_pod_create(const boost::json::value& pod) {
    return validate_pod_spec(pod_validation_detail::at(&pod, "spec"));
}

namespace pod_validation_detail {

inline const std::string updatable_fields =
    "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it "
    "was previously negative)";

/// Containers with each image taken from `images` (same length), the way the real server
/// takes the mutable images out before comparing.
inline void copy_images(json::value& spec, std::string_view list, const json::value& from) {
    auto* to = spec.get_object().if_contains(list);
    const auto* src = array_at(&from, list);
    if (!to || !to->is_array() || !src || src->size() != to->get_array().size()) return;
    for (std::size_t i = 0; i < src->size(); ++i) {
        auto* c = to->get_array()[i].if_object();
        if (!c) continue;
        if (const auto* img = at(&(*src)[i], "image")) (*c)["image"] = *img;
        else c->erase("image");
    }
}

/// %#v of the internal core.NodeSelectorTerm (as field.Invalid prints it).
inline std::string go_selector_term(const json::value& term) {
    auto requirements = [&](std::string_view key) {
        const auto* list = array_at(&term, key);
        if (!list) return std::string("[]core.NodeSelectorRequirement(nil)");
        std::string out = "[]core.NodeSelectorRequirement{";
        for (std::size_t i = 0; i < list->size(); ++i) {
            const auto& r = (*list)[i];
            out += (i ? ", " : "") + std::string("core.NodeSelectorRequirement{Key:") + go::quote(str(&r, "key")) +
                   ", Operator:" + go::quote(str(&r, "operator")) + ", Values:" + go::string_slice(at(&r, "values")) + "}";
        }
        return out + "}";
    };
    return "core.NodeSelectorTerm{MatchExpressions:" + requirements("matchExpressions") +
           ", MatchFields:" + requirements("matchFields") + "}";
}

/// The old list of requirements is a prefix of the new one.
inline bool only_added(const json::array* added_to, const json::array* old) {
    if (!old || old->empty()) return true;
    if (!added_to || added_to->size() < old->size()) return false;
    for (std::size_t i = 0; i < old->size(); ++i)
        if (!same(&(*old)[i], &(*added_to)[i])) return false;
    return true;
}

/// What a gated pod (one whose old spec has scheduling gates) may change besides: additions
/// to spec.nodeSelector, and required node affinity narrowed (requirements added to each
/// existing term; any terms when there were none); preferred node affinity freely. Adds the
/// errors and makes `munged` carry the old values of what was checked.
inline void gated_pod_mutations(Errors& errs, json::value& munged, const json::value& ospec) {
    auto& m = munged.get_object();
    const auto* new_sel = at(&munged, "nodeSelector");
    const auto* old_sel = at(&ospec, "nodeSelector");
    if (!same(new_sel, old_sel)) {
        bool kept = true;
        if (const auto* o = old_sel ? old_sel->if_object() : nullptr)
            for (const auto& kv : *o) {
                const auto* n = at(new_sel, kv.key());
                kept = kept && n && n->is_string() && kv.value().is_string() && n->get_string() == kv.value().get_string();
            }
        if (!kept) {
            errs.push_back(field::invalid_go("spec.nodeSelector", go::string_map(new_sel ? new_sel->if_object() : nullptr),
                                          "only additions to spec.nodeSelector are allowed (no mutations or deletions)"));
        }
        if (old_sel) m["nodeSelector"] = *old_sel;
        else m.erase("nodeSelector");
    }

    const auto* old_affinity = at(&ospec, "affinity");
    const auto* old_na = at(old_affinity, "nodeAffinity");
    const auto* new_affinity = at(&munged, "affinity");
    const auto* new_na = at(new_affinity, "nodeAffinity");
    if (same(old_na, new_na)) return;
    const std::string terms_path = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
    const auto* old_terms = array_at(at(old_na, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms");
    const auto* new_terms = array_at(at(new_na, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms");
    if (old_terms && !old_terms->empty()) {
        if (!new_terms || new_terms->size() != old_terms->size()) {
            std::string shown = "[]core.NodeSelectorTerm(nil)";
            if (new_terms) {
                shown = "[]core.NodeSelectorTerm{";
                for (std::size_t i = 0; i < new_terms->size(); ++i) shown += (i ? ", " : "") + go_selector_term((*new_terms)[i]);
                shown += "}";
            }
            errs.push_back(field::invalid_go(terms_path, shown, "no additions/deletions to non-empty NodeSelectorTerms list are allowed"));
        } else {
            for (std::size_t i = 0; i < old_terms->size(); ++i) {
                const auto& o = (*old_terms)[i];
                const auto& n = (*new_terms)[i];
                if (!only_added(array_at(&n, "matchExpressions"), array_at(&o, "matchExpressions")) ||
                    !only_added(array_at(&n, "matchFields"), array_at(&o, "matchFields")))
                    errs.push_back(field::invalid_go(terms_path + "[" + std::to_string(i) + "]", go_selector_term(n),
                                                  "only additions are allowed (no mutations or deletions)"));
            }
        }
    }
    // The checked node affinity takes its old value, so the comparison of the rest ignores it.
    const bool new_has_pod_affinity = has(new_affinity, "podAffinity") || has(new_affinity, "podAntiAffinity");
    if (!new_affinity || new_affinity->is_null()) {
        if (old_na) m["affinity"] = json::object{{"nodeAffinity", *old_na}};
    } else if (!old_affinity && !new_has_pod_affinity) {
        m.erase("affinity");
    } else if (auto* a = m["affinity"].if_object()) {
        if (old_na) (*a)["nodeAffinity"] = *old_na;
        else a->erase("nodeAffinity");
    }
}

} // namespace pod_validation_detail

/// ValidatePodUpdate's spec rules (the new spec is validated in full besides).
inline std::vector<FieldError> validate_pod_update(const boost::json::value& pod, const boost::json::value& old) {
    using namespace pod_validation_detail;
    Errors errs = validate_pod_create(pod);
    const json::value empty = json::object();
    const auto* ns = at(&pod, "spec");
    const auto* os = at(&old, "spec");
    const json::value& nspec = ns && ns->is_object() ? *ns : empty;
    const json::value& ospec = os && os->is_object() ? *os : empty;

    for (const char* list : {"containers", "initContainers"}) {
        const auto* a = array_at(&nspec, list);
        const auto* b = array_at(&ospec, list);
        if ((a ? a->size() : 0) != (b ? b->size() : 0)) {
            errs.push_back(field::forbidden(child("spec", list), "pod updates may not add or remove containers"));
            return errs;
        }
    }
    // activeDeadlineSeconds: may be set, or lowered; never raised or removed.
    auto new_ads = integer(&nspec, "activeDeadlineSeconds");
    auto old_ads = integer(&ospec, "activeDeadlineSeconds");
    if (new_ads) {
        if (*new_ads < 0 || *new_ads > std::numeric_limits<std::int32_t>::max()) {
            errs.push_back(field::invalid("spec.activeDeadlineSeconds", json::value(*new_ads),
                                          inclusive_range(0, std::numeric_limits<std::int32_t>::max())));
            return errs;
        }
        if (old_ads && *old_ads < *new_ads) {
            errs.push_back(field::invalid("spec.activeDeadlineSeconds", json::value(*new_ads),
                                          "must be less than or equal to previous value"));
            return errs;
        }
    } else if (old_ads) {
        errs.push_back(field::invalid("spec.activeDeadlineSeconds", json::value(nullptr),
                                      "must not update from a positive integer to nil value"));
    }
    auto old_grace = integer(&ospec, "terminationGracePeriodSeconds");
    auto new_grace = integer(&nspec, "terminationGracePeriodSeconds");
    if (old_grace && *old_grace < 0 && new_grace.value_or(0) != 1)
        errs.push_back(field::forbidden("spec.terminationGracePeriodSeconds",
                                        "value can only be set to 1 if previously negative"));
    // Tolerations: every old one must still be there (its tolerationSeconds may change).
    if (const auto* olds = array_at(&ospec, "tolerations")) {
        const auto* news = array_at(&nspec, "tolerations");
        for (const auto& o : *olds) {
            bool found = false;
            for (std::size_t i = 0; news && i < news->size() && !found; ++i) {
                json::value a = o, b = (*news)[i];
                if (a.is_object()) a.get_object().erase("tolerationSeconds");
                if (b.is_object()) b.get_object().erase("tolerationSeconds");
                found = same(&a, &b);
            }
            if (!found) {
                errs.push_back(field::forbidden("spec.tolerations",
                                                "existing toleration can not be modified except its tolerationSeconds"));
                break;
            }
        }
    }
    // Scheduling gates may only be removed.
    if (const auto* ng = array_at(&nspec, "schedulingGates")) {
        const auto* og = array_at(&ospec, "schedulingGates");
        for (const auto& g : *ng) {
            bool known = false;
            for (std::size_t i = 0; og && i < og->size() && !known; ++i) known = same(&g, &(*og)[i]);
            if (!known) {
                errs.push_back(field::forbidden("spec.schedulingGates",
                                                "only deletion is allowed, but found new scheduling gate '" +
                                                    str(&g, "name") + "'"));
                break;
            }
        }
    }

    // What is left must be the old spec.
    json::value munged = nspec;
    auto& m = munged.get_object();
    copy_images(munged, "containers", ospec);
    copy_images(munged, "initContainers", ospec);
    for (const char* k : {"activeDeadlineSeconds", "tolerations", "schedulingGates"}) {
        if (const auto* v = ospec.get_object().if_contains(k)) m[k] = *v;
        else m.erase(k);
    }
    if (old_grace && *old_grace < 0 && new_grace == 1) m["terminationGracePeriodSeconds"] = *old_grace;
    if (const auto* gates = array_at(&ospec, "schedulingGates"); gates && !gates->empty())
        gated_pod_mutations(errs, munged, ospec);
    if (!same(&munged, &ospec))
        errs.push_back(field::forbidden("spec", "pod updates may not change fields other than " + updatable_fields +
                                                    "\n" + cmp_diff("core.PodSpec", ospec, munged)));
    return errs;
}

} // namespace vck::sandbox
