// Service accounts as a real cluster gives them to pods, the store's side (no I/O, no
// OpenSSL): what kube-controller-manager's serviceaccounts-controller and
// root-ca-cert-publisher keep in every namespace (ServiceAccount "default", ConfigMap
// "kube-root-ca.crt" holding the API server's CA under ca.crt), and the ServiceAccount
// admission plugin on pod create (plugin/pkg/admission/serviceaccount): spec.serviceAccountName
// defaults to "default" (spec.serviceAccount mirrors it), a pod naming a service account
// that does not exist is forbidden with the plugin's words, and unless automountServiceAccountToken
// is false on the pod or its service account, the pod gets the projected volume
// kube-api-access-<5 random> (a bound token, ca.crt, the namespace) mounted read-only at
// /var/run/secrets/kubernetes.io/serviceaccount in every container and init container that
// mounts nothing there yet. Mirror pods are left alone.
#pragma once

#include <vck/api/json.hpp>
#include <vck/sandbox/validation/object_name.hpp>
#include <vck/sandbox/validation/store_error.hpp>

#include <boost/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace vck::sandbox {

namespace service_accounts {

namespace json = boost::json;

inline constexpr std::string_view default_name = "default";
inline constexpr std::string_view root_ca_config_map = "kube-root-ca.crt";
inline constexpr std::string_view root_ca_key = "ca.crt";
inline constexpr std::string_view token_mount_path = "/var/run/secrets/kubernetes.io/serviceaccount";
inline constexpr std::string_view api_access_volume_prefix = "kube-api-access-";
/// The lifetime the admission plugin asks for (serviceaccount.WarnOnlyBoundTokenExpirationSeconds).
inline constexpr std::int64_t projected_token_seconds = 3607;
inline constexpr std::string_view mirror_pod_annotation = "kubernetes.io/config.mirror";

/// The ServiceAccount the serviceaccounts-controller creates in a namespace.
inline json::value default_service_account() {
    return json::object{{"apiVersion", "v1"}, {"kind", "ServiceAccount"},
                        {"metadata", json::object{{"name", default_name}}}};
}

/// The ConfigMap root-ca-cert-publisher keeps in a namespace.
inline json::value root_ca_config_map_body(const std::string& ca_pem) {
    return json::object{{"apiVersion", "v1"}, {"kind", "ConfigMap"},
                        {"metadata", json::object{{"name", root_ca_config_map}}},
                        {"data", json::object{{root_ca_key, ca_pem}}}};
}

/// Whether a stored kube-root-ca.crt ConfigMap holds exactly `ca_pem`.
inline bool holds_ca(const json::value& cm, const std::string& ca_pem) {
    const auto* data = cm.is_object() ? cm.get_object().if_contains("data") : nullptr;
    const auto* v = data && data->is_object() ? data->get_object().if_contains(root_ca_key) : nullptr;
    return v && v->is_string() && v->get_string() == ca_pem;
}

/// The projected volume the admission plugin adds (its createVolume), as stored.
inline json::value api_access_volume(const std::string& name) {
    json::object token{{"expirationSeconds", projected_token_seconds}, {"path", "token"}};
    json::object ca{{"name", root_ca_config_map},
                    {"items", json::array{json::object{{"key", root_ca_key}, {"path", root_ca_key}}}}};
    json::object ns{{"items", json::array{json::object{
                        {"path", "namespace"},
                        {"fieldRef", json::object{{"apiVersion", "v1"}, {"fieldPath", "metadata.namespace"}}}}}}};
    return json::object{
        {"name", name},
        {"projected", json::object{{"defaultMode", 420},
                                   {"sources", json::array{json::object{{"serviceAccountToken", std::move(token)}},
                                                           json::object{{"configMap", std::move(ca)}},
                                                           json::object{{"downwardAPI", std::move(ns)}}}}}}};
}

namespace detail {

inline const json::value* member(const json::value* v, std::string_view key) {
    return v && v->is_object() ? v->get_object().if_contains(key) : nullptr;
}

inline std::string string_at(const json::value* v, std::string_view key) {
    const auto* m = member(v, key);
    return m && m->is_string() ? std::string(m->get_string()) : std::string();
}

/// What admission.NewForbidden names a pod by before its name is generated.
inline std::string admission_name(const json::value& pod) {
    const auto* md = member(&pod, "metadata");
    if (auto n = string_at(md, "name"); !n.empty()) return n;
    if (auto g = string_at(md, "generateName"); !g.empty()) return g;
    return "Unknown";
}

} // namespace detail

/// The ServiceAccount admission plugin on a pod being created in `ns` (the body as decoded,
/// before its name is generated). `find_service_account(name)` is the stored account or
/// null. Throws the plugin's 403 when the account does not exist.
template <class Rng>
void admit_pod(json::value& pod, const std::string& ns,
               const std::function<const json::value*(const std::string&)>& find_service_account, Rng& rng) {
    using namespace detail;
    if (!pod.is_object()) return;
    auto& o = pod.get_object();
    if (const auto* ann = member(member(&pod, "metadata"), "annotations"); ann && member(ann, mirror_pod_annotation))
        return;
    if (!o.contains("spec") || !o["spec"].is_object()) o["spec"] = json::object();
    auto& spec = o["spec"].get_object();
    // The v1 conversion reads the deprecated field when the new one is empty.
    std::string sa = string_at(&o["spec"], "serviceAccountName");
    if (sa.empty()) sa = string_at(&o["spec"], "serviceAccount");
    if (sa.empty()) sa = default_name;
    spec["serviceAccountName"] = sa;
    spec["serviceAccount"] = sa;

    const json::value* account = find_service_account(sa);
    if (!account)
        throw StoreError(store_status::forbidden(
            "", "pods", admission_name(pod),
            "error looking up service account " + ns + "/" + sa + ": serviceaccount " + go::quote(sa) + " not found"));

    // shouldAutomount: the pod's choice, else the account's, else yes.
    const auto* pod_choice = spec.if_contains("automountServiceAccountToken");
    const auto* sa_choice = member(account, "automountServiceAccountToken");
    bool automount = pod_choice && pod_choice->is_bool()  ? pod_choice->get_bool()
                     : sa_choice && sa_choice->is_bool() ? sa_choice->get_bool()
                                                          : true;
    if (!automount) return;

    // An existing kube-api-access-* volume is reused (as on a pod re-created from its own spec).
    std::string volume;
    if (auto* vols = spec.if_contains("volumes"); vols && vols->is_array())
        for (const auto& v : vols->get_array())
            if (auto n = string_at(&v, "name"); n.starts_with(api_access_volume_prefix)) {
                volume = n;
                break;
            }
    const bool had_volume = !volume.empty();
    if (!had_volume) volume = generate_name(api_access_volume_prefix, rng);

    bool needed = false;
    for (const char* list : {"initContainers", "containers"}) {
        auto* cs = spec.if_contains(list);
        if (!cs || !cs->is_array()) continue;
        for (auto& c : cs->get_array()) {
            if (!c.is_object()) continue;
            auto& mounts = c.get_object()["volumeMounts"];
            if (!mounts.is_array()) mounts = json::array();
            bool mounted = false;
            for (const auto& m : mounts.get_array())
                if (string_at(&m, "mountPath") == token_mount_path) mounted = true;
            if (mounted) continue;
            mounts.get_array().push_back(
                json::object{{"name", volume}, {"readOnly", true}, {"mountPath", token_mount_path}});
            needed = true;
        }
    }
    if (needed && !had_volume) {
        auto& vols = spec["volumes"];
        if (!vols.is_array()) vols = json::array();
        vols.get_array().push_back(api_access_volume(volume));
    }
}

} // namespace service_accounts

} // namespace vck::sandbox
