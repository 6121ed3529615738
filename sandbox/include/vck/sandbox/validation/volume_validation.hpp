// VolumeValidation: what kube-apiserver 1.32 refuses in PersistentVolumes,
// PersistentVolumeClaims (pkg/apis/core/validation) and StorageClasses
// (pkg/apis/storage/validation), with its messages and field paths:
// - a PV needs accessModes (known ones; ReadWriteOncePod alone), capacity with storage only,
//   exactly one volume source (hostPath, nfs, local, csi, ... in the real server's order) and
//   its required fields, a known reclaim policy and volumeMode; a local volume needs
//   nodeAffinity. On update its source is immutable ("spec.persistentvolumesource is
//   immutable after creation" and a diff), so is volumeMode (at the real server's path
//   "volumeMode"), and nodeAffinity once set;
// - a claim needs accessModes and resources.requests.storage (positive); on update its spec
//   is immutable but for volumeName set once from empty (the binder's write), a
//   storageClassName set from none, and resources.requests.storage of a bound claim (never
//   lowered);
// - a StorageClass needs a provisioner (a qualified name), a known reclaimPolicy and
//   volumeBindingMode; parameters, provisioner, reclaimPolicy and volumeBindingMode never
//   change.
// Diffs after a Forbidden are go-cmp-like (changed top-level fields, JSON values), not
// byte-for-byte go-cmp. Quantities are compared by value (api/quantity.hpp).
#pragma once

#include <vck/api/quantity.hpp>
#include <vck/sandbox/validation/spec_validation.hpp>

#include <boost/json.hpp>

#include <cctype>
#include <string>
#include <vector>

namespace vck::sandbox {

namespace volume_validation_detail {

using namespace spec_validation;

/// The sources of a PersistentVolume, in the order ValidatePersistentVolumeSpec checks them.
inline constexpr const char* pv_sources[] = {
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "flocker", "nfs", "rbd", "quobyte",
    "cephfs", "iscsi", "cinder", "fc", "flexVolume", "azureFile", "vsphereVolume", "photonPersistentDisk",
    "portworxVolume", "azureDisk", "scaleIO", "local", "storageos", "csi",
};

/// The spec fields of a PV that are not its source.
inline constexpr const char* pv_non_source_fields[] = {
    "capacity", "accessModes", "claimRef", "persistentVolumeReclaimPolicy", "storageClassName", "mountOptions",
    "volumeMode", "nodeAffinity", "volumeAttributesClassName",
};

inline const std::vector<std::string> access_modes = {"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce",
                                                      "ReadWriteOncePod"};

inline Errors access_modes_of(const json::value* spec, const std::string& path, std::string_view required_detail) {
    Errors errs;
    const auto* modes = array_at(spec, "accessModes");
    if (!modes || modes->empty()) {
        errs.push_back(field::required(path, required_detail));
        return errs;
    }
    bool rwop = false, other = false;
    for (const auto& m : *modes) {
        std::string mode = m.is_string() ? std::string(m.get_string()) : "";
        if (std::find(access_modes.begin(), access_modes.end(), mode) == access_modes.end())
            errs.push_back(field::not_supported(path, sv(mode), access_modes));
        (mode == "ReadWriteOncePod" ? rwop : other) = true;
    }
    if (rwop && other) errs.push_back(field::forbidden(path, "may not use ReadWriteOncePod with other access modes"));
    return errs;
}

/// ValidatePositiveQuantityValue (and an unparsable quantity, refused when decoded by the
/// real server, is refused here the same way as a non-positive one).
inline Errors positive_quantity(const json::value* q, const std::string& path) {
    std::string text = q && q->is_string() ? std::string(q->get_string()) : "";
    auto v = q && q->is_number() ? std::optional<double>(q->to_number<double>()) : api::quantity_value(text);
    if (!v || *v <= 0) return {field::invalid(path, sv(q && q->is_string() ? text : "0"), "must be greater than zero")};
    return {};
}

inline std::optional<double> quantity_at(const json::value* obj, std::initializer_list<std::string_view> keys) {
    const json::value* v = obj;
    for (auto k : keys) v = at(v, k);
    if (!v) return std::nullopt;
    if (v->is_number()) return v->to_number<double>();
    if (v->is_string()) return api::quantity_value(std::string(v->get_string()));
    return std::nullopt;
}

inline json::value pv_source(const json::value* spec) {
    json::object out;
    if (const auto* o = spec ? spec->if_object() : nullptr)
        for (const auto& kv : *o) {
            bool other = false;
            for (const char* f : pv_non_source_fields) other = other || kv.key() == f;
            if (!other) out[kv.key()] = kv.value();
        }
    return out;
}

inline json::value spec_or_empty(const json::value& obj) {
    const auto* s = at(&obj, "spec");
    return s && s->is_object() ? *s : json::value(json::object());
}

} // namespace volume_validation_detail

inline std::vector<FieldError> validate_persistent_volume(const boost::json::value& pv) {
    using namespace volume_validation_detail;
    Errors errs;
    const auto* spec = at(&pv, "spec");
    append(errs, access_modes_of(spec, "spec.accessModes", ""));
    const auto* cap = object_at(spec, "capacity");
    if (!cap || cap->empty()) {
        errs.push_back(field::required("spec.capacity"));
        auto e = field::not_supported("spec.capacity", json::value(nullptr), {"storage"});
        e.message = "spec.capacity: Unsupported value: core.ResourceList(nil): supported values: \"storage\"";
        errs.push_back(std::move(e));
    } else {
        for (const auto& kv : *cap) {
            auto p = key("spec.capacity", kv.key());
            if (kv.key() != "storage") errs.push_back(field::not_supported(p, sv(kv.key()), {"storage"}));
            else append(errs, positive_quantity(&kv.value(), p));
        }
    }
    if (auto cls = str(spec, "storageClassName"); !cls.empty())
        append(errs, validate_dns1123_subdomain(cls, "spec.storageClassName"));
    if (auto mode = str(spec, "volumeMode"); !mode.empty() && mode != "Block" && mode != "Filesystem")
        errs.push_back(field::not_supported("spec.volumeMode", sv(mode), {"Block", "Filesystem"}));
    if (auto policy = str(spec, "persistentVolumeReclaimPolicy"); !policy.empty() && policy != "Delete" &&
                                                                   policy != "Recycle" && policy != "Retain")
        errs.push_back(field::not_supported("spec.persistentVolumeReclaimPolicy", sv(policy),
                                            {"Delete", "Recycle", "Retain"}));
    int count = 0;
    for (const char* s : pv_sources) {
        if (!has(spec, s)) continue;
        if (count++ > 0) {
            errs.push_back(field::forbidden(child("spec", s), "may not specify more than 1 volume type"));
            continue;
        }
        const auto* src = at(spec, s);
        auto need = [&](std::string_view f) {
            if (str(src, f).empty()) errs.push_back(field::required(child(child("spec", s), f)));
        };
        std::string_view kind = s;
        if (kind == "hostPath" || kind == "local") need("path");
        else if (kind == "nfs") {
            need("server");
            need("path");
        } else if (kind == "csi") {
            need("driver");
            need("volumeHandle");
        }
        if (kind == "local" && !has(spec, "nodeAffinity"))
            errs.push_back(field::required("spec.nodeAffinity", "Local volume requires node affinity"));
    }
    if (count == 0) errs.push_back(field::required("spec", "must specify a volume type"));
    return errs;
}

inline std::vector<FieldError> validate_persistent_volume_update(const boost::json::value& pv,
                                                                 const boost::json::value& old) {
    using namespace volume_validation_detail;
    Errors errs = validate_persistent_volume(pv);
    auto nspec = spec_or_empty(pv), ospec = spec_or_empty(old);
    auto nsrc = pv_source(&nspec), osrc = pv_source(&ospec);
    if (!same(&nsrc, &osrc))
        errs.push_back(field::forbidden("spec.persistentvolumesource",
                                        "spec.persistentvolumesource is immutable after creation\n" +
                                            cmp_diff("core.PersistentVolumeSource", osrc, nsrc)));
    append(errs, immutable(at(&nspec, "volumeMode"), at(&ospec, "volumeMode"), "volumeMode"));
    if (has(&ospec, "nodeAffinity") && !same(at(&nspec, "nodeAffinity"), at(&ospec, "nodeAffinity"))) {
        // The bad value is the new *VolumeNodeAffinity, which Go prints with a pointer inside.
        std::string rendered = has(&nspec, "nodeAffinity")
                                   ? "core.VolumeNodeAffinity{Required:(*core.NodeSelector)(0xc000000000)}"
                                   : "\"null\"";
        auto e = field::invalid("nodeAffinity", json::value(nullptr), "");
        e.message = "nodeAffinity: Invalid value: " + rendered +
                    ": field is immutable, except for updating from beta label to GA";
        errs.push_back(std::move(e));
    }
    return errs;
}

inline std::vector<FieldError> validate_persistent_volume_claim(const boost::json::value& pvc) {
    using namespace volume_validation_detail;
    Errors errs;
    const auto* spec = at(&pvc, "spec");
    append(errs, access_modes_of(spec, "spec.accessModes", "at least 1 access mode is required"));
    const auto* storage = at(at(at(spec, "resources"), "requests"), "storage");
    if (!storage) errs.push_back(field::required("spec.resources[storage]"));
    else append(errs, positive_quantity(storage, "spec.resources[storage]"));
    if (auto cls = str(spec, "storageClassName"); !cls.empty())
        append(errs, validate_dns1123_subdomain(cls, "spec.storageClassName"));
    if (auto mode = str(spec, "volumeMode"); !mode.empty() && mode != "Block" && mode != "Filesystem")
        errs.push_back(field::not_supported("spec.volumeMode", sv(mode), {"Block", "Filesystem"}));
    return errs;
}

inline std::vector<FieldError> validate_persistent_volume_claim_update(const boost::json::value& pvc,
                                                                       const boost::json::value& old) {
    using namespace volume_validation_detail;
    Errors errs = validate_persistent_volume_claim(pvc);
    auto nspec = spec_or_empty(pvc), ospec = spec_or_empty(old);
    json::value a = ospec, b = nspec;
    // The binder sets volumeName once; a class may be given to a claim that had none.
    if (str(&ospec, "volumeName").empty()) {
        if (const auto* v = at(&nspec, "volumeName")) a.get_object()["volumeName"] = *v;
        else a.get_object().erase("volumeName");
    }
    if (!has(&ospec, "storageClassName")) b.get_object().erase("storageClassName");
    // A bound claim may ask for more storage.
    const bool bound = str(at(&pvc, "status"), "phase") == "Bound";
    if (bound)
        if (auto* req = b.get_object().if_contains("resources"))
            if (auto* r = req->is_object() ? req->get_object().if_contains("requests") : nullptr; r && r->is_object()) {
                if (const auto* os = at(at(at(&ospec, "resources"), "requests"), "storage"))
                    r->get_object()["storage"] = *os;
                else
                    r->get_object().erase("storage");
            }
    if (!same(&a, &b))
        errs.push_back(field::forbidden("spec",
                                        "spec is immutable after creation except resources.requests and "
                                        "volumeAttributesClassName for bound claims\n" +
                                            cmp_diff("core.PersistentVolumeClaimSpec", a, b)));
    auto new_size = quantity_at(&nspec, {"resources", "requests", "storage"});
    auto old_size = quantity_at(&ospec, {"resources", "requests", "storage"});
    if (new_size && old_size && *new_size < *old_size)
        errs.push_back(field::forbidden("spec.resources.requests.storage", "field can not be less than previous value"));
    return errs;
}

inline std::vector<FieldError> validate_storage_class(const boost::json::value& sc) {
    using namespace volume_validation_detail;
    Errors errs;
    auto provisioner = str(&sc, "provisioner");
    if (provisioner.empty()) {
        errs.push_back(field::required("provisioner"));
    } else {
        std::string lower = provisioner;
        for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (auto p = api::qualified_name_problem(lower); !p.empty())
            errs.push_back(field::invalid("provisioner", sv(provisioner), p));
    }
    append(errs, one_of(&sc, "reclaimPolicy", "reclaimPolicy", {"Delete", "Retain"}, false));
    append(errs, one_of(&sc, "volumeBindingMode", "volumeBindingMode", {"Immediate", "WaitForFirstConsumer"}));
    return errs;
}

inline std::vector<FieldError> validate_storage_class_update(const boost::json::value& sc,
                                                             const boost::json::value& old) {
    using namespace volume_validation_detail;
    Errors errs = validate_storage_class(sc);
    if (!same(at(&sc, "parameters"), at(&old, "parameters")))
        errs.push_back(field::forbidden("parameters", "updates to parameters are forbidden."));
    if (str(&sc, "provisioner") != str(&old, "provisioner"))
        errs.push_back(field::forbidden("provisioner", "updates to provisioner are forbidden."));
    if (str(&sc, "reclaimPolicy") != str(&old, "reclaimPolicy"))
        errs.push_back(field::forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."));
    append(errs, immutable(at(&sc, "volumeBindingMode"), at(&old, "volumeBindingMode"), "volumeBindingMode"));
    return errs;
}

} // namespace vck::sandbox
