// ControllerRef: how the sandbox's workload controllers (replicaset_controller.hpp,
// deployment_controller.hpp) own their dependents, as controller-runtime's and
// kube-controller-manager's ControllerRefManager do: an owner reference with controller and
// blockOwnerDeletion true; claim() keeps what the owner controls and its selector still
// matches, releases what it controls but no longer matches, adopts orphans that match (only
// while neither is being deleted), and leaves what another controller owns alone. Adoption and
// release are merge patches carrying the dependent's resourceVersion, so a dependent that
// changed meanwhile is left for the next pass (the controllers are level-triggered).
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/sandbox/storage/object_store.hpp>
#include <vck/sandbox/validation/spec_validation.hpp>
#include <vck/sandbox/cluster/workload_pods.hpp>

#include <boost/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox::controller_ref {

namespace json = boost::json;
using spec_validation::at;
using spec_validation::str;

/// The ownerReference a controller puts on what it creates; list items carry no apiVersion
/// or kind, so a caller may give them.
inline json::value owner_reference(const json::value& owner, std::string_view api_version = {}, std::string_view kind = {}) {
    const auto* md = at(&owner, "metadata");
    return json::object{{"apiVersion", api_version.empty() ? str(&owner, "apiVersion") : std::string(api_version)},
                        {"kind", kind.empty() ? str(&owner, "kind") : std::string(kind)},
                        {"name", str(md, "name")}, {"uid", str(md, "uid")},
                        {"controller", true}, {"blockOwnerDeletion", true}};
}

/// The uid of the object's controller ("" when it has none).
inline std::string controller_uid(const json::value& obj) {
    if (const auto* refs = spec_validation::array_at(at(&obj, "metadata"), "ownerReferences"))
        for (const auto& r : *refs)
            if (const auto* c = at(&r, "controller"); c && c->is_bool() && c->get_bool()) return str(&r, "uid");
    return {};
}

inline bool deleting(const json::value& obj) { return workload_pods::terminating(obj); }

inline const json::object* labels_of(const json::value& obj) {
    return spec_validation::object_at(at(&obj, "metadata"), "labels");
}

/// The dependents (of resource `id`, in the owner's namespace) `owner` controls after
/// adopting and releasing; each as stored after the claim.
inline std::vector<json::value> claim(ObjectStore& store, const ResourceId& id, const json::value& owner,
                                      const api::LabelSelector& selector, const std::vector<json::value>& candidates) {
    std::vector<json::value> mine;
    const auto owner_uid = str(at(&owner, "metadata"), "uid");
    for (const auto& c : candidates) {
        const auto ns = str(at(&c, "metadata"), "namespace");
        const auto name = str(at(&c, "metadata"), "name");
        const auto rv = str(at(&c, "metadata"), "resourceVersion");
        const auto ctrl = controller_uid(c);
        const bool matches = selector.matches(labels_of(c));
        if (ctrl == owner_uid) {
            if (matches) {
                mine.push_back(c);
                continue;
            }
            json::array rest;  // release: every reference but the owner's
            for (const auto& r : *spec_validation::array_at(at(&c, "metadata"), "ownerReferences"))
                if (str(&r, "uid") != owner_uid) rest.push_back(r);
            json::value refs = rest.empty() ? json::value(nullptr) : json::value(std::move(rest));
            try {
                store.patch(id, ns, name, client::PatchType::Merge,
                            json::object{{"metadata", json::object{{"resourceVersion", rv}, {"ownerReferences", refs}}}});
            } catch (const StoreError&) {
            }
            continue;
        }
        if (!ctrl.empty() || !matches || deleting(owner) || deleting(c)) continue;
        json::array refs;
        if (const auto* old = spec_validation::array_at(at(&c, "metadata"), "ownerReferences")) refs = *old;
        refs.push_back(owner_reference(owner));
        try {
            mine.push_back(store.patch(id, ns, name, client::PatchType::Merge,
                                       json::object{{"metadata", json::object{{"resourceVersion", rv},
                                                                              {"ownerReferences", std::move(refs)}}}}));
        } catch (const StoreError&) {
        }
    }
    return mine;
}

/// The stored objects of `id` in namespace `ns` (all namespaces for ""), by namespace.
inline std::vector<json::value> items_in(const json::value& list, const std::string& ns) {
    std::vector<json::value> out;
    for (const auto& item : list.at("items").as_array())
        if (str(at(&item, "metadata"), "namespace") == ns) out.push_back(item);
    return out;
}

/// A new pod of `owner`'s spec.template, as the ReplicaSet and Job controllers make it
/// (controller.GetPodFromTemplate): generateName "<owner>-", the template's labels and
/// annotations, a controller reference to `owner`, the template's spec.
inline json::value pod_from_template(const json::value& owner) {
    using namespace workload_pods;
    const auto* md = at(&owner, "metadata");
    const auto* tmpl = at(at(&owner, "spec"), "template");
    json::object meta{{"generateName", str(md, "name") + "-"}, {"namespace", str(md, "namespace")},
                      {"ownerReferences", json::array{owner_reference(owner)}}};
    for (const char* k : {"labels", "annotations"})
        if (const auto* v = at(at(tmpl, "metadata"), k)) meta[k] = *v;
    const auto* tspec = at(tmpl, "spec");
    return json::object{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", std::move(meta)},
                        {"spec", tspec ? *tspec : json::value(json::object())}};
}

} // namespace vck::sandbox::controller_ref
