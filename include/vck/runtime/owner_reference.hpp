// set_controller_reference / set_owner_reference: controller-runtime's controllerutil helpers
// that make one object (the owner) own another (the child), so the garbage collector deletes
// the child with its owner and owns<>() maps the child's changes back to the owner.
// Guarantees: the child gets the reference {apiVersion, kind, name, uid} (plus controller and
// blockOwnerDeletion true for a controller reference); a reference already naming the same
// owner (same API group, kind and name) is replaced in place, so a second call changes
// nothing; every other reference is kept, in order. Refused with OwnerReferenceError, the
// child left unchanged: an owner without uid (or, untyped, without apiVersion or kind), a
// namespaced owner of a child in another namespace or of a cluster-scoped child (the garbage
// collector would delete the child at once), and a second controller (the error names both).
// The owner and child are typed API objects or untyped JSON, in any mix; sub_resource_meta
// sets a reference on bare metadata before its object exists.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/meta.hpp>
#include <vck/api/resource.hpp>
#include <vck/runtime/kube_object.hpp>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vck::runtime {

class OwnerReferenceError : public std::invalid_argument {
public:
    enum class Reason { NoUid, NoKind, CrossNamespace, ClusterScopedChild, AlreadyOwned };
    OwnerReferenceError(Reason r, const std::string& what) : std::invalid_argument(what), reason_(r) {}
    Reason reason() const noexcept { return reason_; }

private:
    Reason reason_;
};

namespace detail {

inline std::string_view api_group(std::string_view api_version) {
    auto slash = api_version.find('/');
    return slash == std::string_view::npos ? std::string_view{} : api_version.substr(0, slash);
}

/// Whether two references name the same object: group, kind and name (not version, which
/// may differ between clients, nor uid, as controller-runtime's referSameObject).
inline bool refer_to_same(const api::OwnerReference& a, const api::OwnerReference& b) {
    return api_group(a.apiVersion) == api_group(b.apiVersion) && a.kind == b.kind && a.name == b.name;
}

inline std::string describe(const api::OwnerReference& r) {
    return r.kind + " " + r.name + " (uid " + r.uid + ")";
}

/// Checks `ref` (owner in namespace owner_ns) against a child in child_ns with `refs`, then
/// adds or replaces it there.
inline void upsert_owner_reference(const api::OwnerReference& ref, std::string_view owner_ns, std::string_view child_ns,
                                   std::string_view child_name, std::vector<api::OwnerReference>& refs) {
    using R = OwnerReferenceError::Reason;
    auto child = "\"" + std::string(child_ns) + (child_ns.empty() ? "" : "/") + std::string(child_name) + "\"";
    if (ref.uid.empty())
        throw OwnerReferenceError(R::NoUid, "cannot make " + ref.kind + " " + ref.name + " own " + child +
                                                ": the owner has no uid (it must be read from the API server first)");
    if (ref.apiVersion.empty() || ref.kind.empty())
        throw OwnerReferenceError(R::NoKind, "cannot make " + ref.name + " own " + child +
                                                 ": the owner has no apiVersion or kind");
    if (!owner_ns.empty() && child_ns.empty())
        throw OwnerReferenceError(R::ClusterScopedChild, "cannot make " + ref.kind + " " + std::string(owner_ns) + "/" +
                                                             ref.name + " own cluster-scoped " + child +
                                                             ": a namespaced object cannot own a cluster-scoped one");
    if (!owner_ns.empty() && owner_ns != child_ns)
        throw OwnerReferenceError(R::CrossNamespace, "cannot make " + ref.kind + " " + std::string(owner_ns) + "/" +
                                                         ref.name + " own " + child +
                                                         ": cross-namespace owner references are not allowed");
    if (ref.controller.value_or(false))
        for (const auto& r : refs)
            if (r.controller.value_or(false) && !refer_to_same(r, ref))
                throw OwnerReferenceError(R::AlreadyOwned, "cannot make " + describe(ref) + " the controller of " +
                                                               child + ": it is already controlled by " + describe(r));
    for (auto& r : refs)
        if (refer_to_same(r, ref)) {
            auto unknown = std::move(r.unknown);  // fields this version does not model stay
            r = ref;
            r.unknown = std::move(unknown);
            return;
        }
    refs.push_back(ref);
}

template <class Owner>
api::OwnerReference reference_to(const Owner& owner) {
    api::OwnerReference r;
    if constexpr (api::ApiObject<Owner>) {
        r.apiVersion = Owner::resource.api_version();
        r.kind = std::string(Owner::resource.kind);
    } else {
        r.apiVersion = std::string(api::string_at(owner, {"apiVersion"}));
        r.kind = std::string(api::string_at(owner, {"kind"}));
    }
    r.name = key_of(owner).name;
    r.uid = uid_of(owner);
    return r;
}

template <class Owner>
concept OwnerObject = api::ApiObject<Owner> || std::same_as<Owner, boost::json::value>;

template <class Owner, class Child>
void set_reference(const Owner& owner, Child& child, bool controller) {
    auto ref = reference_to(owner);
    if (controller) {
        ref.controller = true;
        ref.blockOwnerDeletion = true;
    }
    auto owner_ns = key_of(owner).namespace_;
    if constexpr (std::same_as<Child, api::ObjectMeta>) {
        upsert_owner_reference(ref, owner_ns, child.namespace_, child.name, child.ownerReferences);
    } else if constexpr (TypedObject<Child>) {
        upsert_owner_reference(ref, owner_ns, child.metadata.namespace_, child.metadata.name, child.metadata.ownerReferences);
    } else {
        auto key = key_of(child);  // also: child is an object
        std::vector<api::OwnerReference> refs;
        if (const auto* v = meta_field(child, "ownerReferences")) refs = api::from_json<std::vector<api::OwnerReference>>(*v);
        upsert_owner_reference(ref, owner_ns, key.namespace_, key.name, refs);
        auto& meta = child.as_object()["metadata"];
        if (!meta.is_object()) meta = boost::json::object{};
        meta.as_object()["ownerReferences"] = api::to_json(refs);
    }
}

} // namespace detail

/// Makes `owner` the controller of `child` (typed object, JSON, or bare api::ObjectMeta).
template <detail::OwnerObject Owner, class Child>
    requires KubeObject<Child> || std::same_as<Child, api::ObjectMeta>
void set_controller_reference(const Owner& owner, Child& child) {
    detail::set_reference(owner, child, true);
}

/// Makes `owner` an owner of `child`, not its controller. Like controller-runtime, an existing
/// reference to the same owner is replaced, a controller reference included.
template <detail::OwnerObject Owner, class Child>
    requires KubeObject<Child> || std::same_as<Child, api::ObjectMeta>
void set_owner_reference(const Owner& owner, Child& child) {
    detail::set_reference(owner, child, false);
}

} // namespace vck::runtime
