// NamespaceValidation: what kube-apiserver 1.32 refuses in Namespaces (ValidateNamespace,
// ValidateNamespaceUpdate, ValidateNamespaceStatusUpdate of pkg/apis/core/validation) and
// what its namespace strategy keeps, with the real messages and field paths:
// - spec.finalizers: each a qualified name, and a name without '/' one of the standard
//   finalizers (kubernetes, orphan, foregroundDeletion); reported at "spec.finalizers"
//   without an index, as the real server reports them on create and update;
// - an update of the namespace itself keeps spec.finalizers (only the finalize subresource,
//   which the sandbox does not serve, changes them) and the status;
// - a status update: status.phase (defaulted to Active when empty) is Active while the
//   namespace has no deletionTimestamp, Terminating once it has one, reported at
//   "status.Phase" (the real server's capital P).
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/sandbox/validation/spec_validation.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

namespace vck::sandbox {

/// validateFinalizerName: qualified name, and standard when it has no prefix.
inline std::vector<FieldError> validate_namespace_finalizer(const std::string& name, const std::string& path) {
    std::vector<FieldError> errs;
    if (auto problem = api::qualified_name_problem(name); !problem.empty())
        errs.push_back(field::invalid(path, spec_validation::sv(name), problem));
    static constexpr std::array<std::string_view, 3> standard{"kubernetes", "orphan", "foregroundDeletion"};
    if (name.find('/') == std::string::npos && std::find(standard.begin(), standard.end(), name) == standard.end())
        errs.push_back(field::invalid(path, spec_validation::sv(name),
                                      "name is neither a standard finalizer name nor is it fully qualified"));
    return errs;
}

/// ValidateNamespace (and, as the namespace strategy runs it on update, ValidateNamespaceUpdate).
inline std::vector<FieldError> validate_namespace(const boost::json::value& ns) {
    using namespace spec_validation;
    Errors errs;
    if (const auto* fins = array_at(at(&ns, "spec"), "finalizers"))
        for (const auto& f : *fins)
            append(errs, validate_namespace_finalizer(f.is_string() ? std::string(f.get_string()) : "", "spec.finalizers"));
    return errs;
}

/// The namespace strategy's PrepareForUpdate: spec.finalizers stay as they were.
inline void keep_namespace_finalizers(boost::json::value& ns, const boost::json::value& old) {
    const auto* before = spec_validation::at(spec_validation::at(&old, "spec"), "finalizers");
    auto* o = ns.if_object();
    if (!o) return;
    boost::json::value kept = before ? *before : boost::json::value(nullptr);  // a copy: inserting "spec" may move members
    auto& spec = (*o)["spec"];
    if (!spec.is_object()) spec = boost::json::object();
    if (kept.is_null()) spec.get_object().erase("finalizers");
    else spec.get_object()["finalizers"] = std::move(kept);
}

/// ValidateNamespaceStatusUpdate.
inline std::vector<FieldError> validate_namespace_status_update(const boost::json::value& ns) {
    using namespace spec_validation;
    auto phase = str(at(&ns, "status"), "phase");
    bool deleting = !str(at(&ns, "metadata"), "deletionTimestamp").empty();
    if (!deleting && phase != "Active")
        return {field::invalid("status.Phase", sv(phase), "may only be 'Active' if `deletionTimestamp` is empty")};
    if (deleting && phase != "Terminating")
        return {field::invalid("status.Phase", sv(phase), "may only be 'Terminating' if `deletionTimestamp` is not empty")};
    return {};
}

} // namespace vck::sandbox
