// Binding a pod to a node (POST pods/<name>/binding), as the pod registry's binding storage
// does for the scheduler: the pod must exist, not be deleting, be on no node yet and have no
// scheduling gates (else 409);
// it gets spec.nodeName, the binding's annotations and a PodScheduled=True condition, and the
// answer is the Success Status the real server sends. Used under ObjectStore's lock.
#pragma once

#include <vck/sandbox/validation/field_error.hpp>
#include <vck/sandbox/storage/store_state.hpp>

#include <boost/json.hpp>

#include <string>

namespace vck::sandbox {

/// Binds the pod ns/pod_name to binding.target.name; returns the Success Status.
inline json::value bind_pod(StoreState& s, const std::string& ns, const std::string& pod_name,
                            const json::value& binding) {
    using namespace stored_object;
    auto r = s.resolve({"", "v1", "pods"});
    const auto& pod = s.find_or_throw(r, ns, pod_name);
    const json::object* target = nullptr;
    if (binding.is_object())
        if (const auto* t = binding.get_object().if_contains("target")) target = t->if_object();
    auto node = str(target, "name");
    if (node.empty())
        throw StoreError(store_status::invalid("Binding", "", pod_name, {field::required("target.name", "")}));
    if (deleting(pod))
        throw StoreError(store_status::conflict("", "pods/binding", pod_name,
                                                "pod " + pod_name + " is being deleted, cannot be assigned to a host"));
    const auto* spec = pod.get_object().if_contains("spec");
    auto current = str(spec ? spec->if_object() : nullptr, "nodeName");
    if (!current.empty())
        throw StoreError(store_status::conflict("", "pods/binding", pod_name,
                                                "pod " + pod_name + " is already assigned to node " + go::quote(current)));
    if (const auto* gates = spec && spec->is_object() ? spec->get_object().if_contains("schedulingGates") : nullptr;
        gates && gates->is_array() && !gates->get_array().empty())
        throw StoreError(store_status::conflict("", "pods/binding", pod_name,
                                                "pod " + pod_name + " has non-empty .spec.schedulingGates"));
    json::value obj = pod;
    auto& o = obj.get_object();
    if (!o["spec"].is_object()) o["spec"] = json::object();
    o["spec"].get_object()["nodeName"] = node;
    if (const auto* bm = meta(binding))
        if (const auto* ann = bm->if_contains("annotations"); ann && ann->is_object()) {
            auto& dst = meta(obj)["annotations"];
            if (!dst.is_object()) dst = json::object();
            for (const auto& kv : ann->get_object()) dst.get_object()[kv.key()] = kv.value();
        }
    auto& st = o["status"];
    if (!st.is_object()) st = json::object();
    auto& conds = st.get_object()["conditions"];
    if (!conds.is_array()) conds = json::array();
    json::object scheduled{{"type", "PodScheduled"}, {"status", "True"}, {"lastProbeTime", nullptr},
                           {"lastTransitionTime", s.now()}};
    bool replaced = false;
    for (auto& c : conds.get_array())
        if (c.is_object() && str(&c.get_object(), "type") == "PodScheduled") {
            c = scheduled;
            replaced = true;
        }
    if (!replaced) conds.get_array().push_back(std::move(scheduled));
    s.write(r, ns, pod_name, std::move(obj));
    return json::object{{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()},
                        {"status", "Success"}, {"code", 201}};
}

} // namespace vck::sandbox
