// ObjectWriter: the write path (POST, PUT, PATCH) as kube-apiserver's handlers and registry
// strategies run it, in this order: decoding (field validation: unknown fields are pruned and,
// under Strict, refuse the write with the error the decoder gives; type checks), the
// namespace and name rules (generateName, a terminating namespace or CRD refuses creates),
// what the strategy sets (uid, creationTimestamp, generation, the status a subresource
// keeps, defaults of built-ins and of CRD schemas), validation (metadata, built-in specs and
// their immutable fields, CRD schemas, the CRD itself), preconditions (resourceVersion and
// uid: 409), then the write. A write that changes nothing is not stored; an update that
// removes the last finalizer of a deleting object removes it. Writing a CRD (re)establishes
// the resources it serves (crd_registration.hpp). Used under ObjectStore's lock; under a dry
// run it answers what would be stored.
#pragma once

#include <vck/api/meta.hpp>
#include <vck/sandbox/validation/apps_validation.hpp>
#include <vck/client/base64.hpp>
#include <vck/client/request_options.hpp>
#include <vck/sandbox/admission/builtin_defaults.hpp>
#include <vck/sandbox/validation/builtin_schemas.hpp>
#include <vck/sandbox/validation/core_validation.hpp>
#include <vck/sandbox/storage/crd_registration.hpp>
#include <vck/sandbox/validation/crd_schema.hpp>
#include <vck/sandbox/storage/event_conversion.hpp>
#include <vck/sandbox/validation/event_validation.hpp>
#include <vck/sandbox/validation/field_error.hpp>
#include <vck/sandbox/validation/field_validation.hpp>
#include <vck/sandbox/validation/lease_validation.hpp>
#include <vck/sandbox/validation/namespace_validation.hpp>
#include <vck/sandbox/validation/node_validation.hpp>
#include <vck/sandbox/validation/object_meta_validation.hpp>
#include <vck/sandbox/validation/object_name.hpp>
#include <vck/sandbox/storage/patch.hpp>
#include <vck/sandbox/validation/pod_validation.hpp>
#include <vck/sandbox/validation/rbac_validation.hpp>
#include <vck/sandbox/admission/service_accounts.hpp>
#include <vck/sandbox/storage/scale_subresource.hpp>
#include <vck/sandbox/storage/service_allocation.hpp>
#include <vck/sandbox/validation/service_validation.hpp>
#include <vck/sandbox/validation/statefulset_validation.hpp>
#include <vck/sandbox/admission/storage_protection_admission.hpp>
#include <vck/sandbox/validation/job_validation.hpp>
#include <vck/sandbox/storage/store_state.hpp>
#include <vck/sandbox/storage/type_meta.hpp>
#include <vck/sandbox/storage/version_conversion.hpp>
#include <vck/sandbox/validation/volume_validation.hpp>
#include <vck/sandbox/admission/webhook_configuration.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vck::sandbox {

class ObjectWriter {
public:
    explicit ObjectWriter(StoreState& state) : s(state) {}

    /// POST: the object created, as served in id's version.
    json::value create(const ResourceId& id, const std::string& ns, json::value obj, const WriteOptions& w) {
        auto r = s.resolve(id);
        decode_body(r, obj, w);
        HooksScope scope{hooks_, w.admission};
        if (hooks_ && hooks_->mutate) hooks_->mutate(obj, nullptr);
        return StoreState::served(create_decoded(id, ns, std::move(obj)), r);
    }

    /// PUT of the object or its status subresource (`subresource` "" or "status").
    json::value update(const ResourceId& id, const std::string& ns, const std::string& name, json::value obj,
                       std::string_view subresource, const WriteOptions& w) {
        auto r = s.resolve(id);
        if (subresource == "scale") return update_scale(r, ns, name, std::move(obj));
        decode_body(r, obj, w);
        HooksScope scope{hooks_, w.admission};
        if (hooks_ && hooks_->mutate)
            if (const auto* found = s.find(r, r.namespaced ? ns : std::string(), name)) {
                // (a missing object is refused by update_decoded, before admission as in kube-apiserver)
                auto old = StoreState::served(*found, r);
                hooks_->mutate(obj, &old);
            }
        return StoreState::served(update_decoded(r, ns, name, std::move(obj), subresource), r);
    }

    /// PATCH: applied to the object in the version the client speaks, then written as an update.
    json::value patch(const ResourceId& id, const std::string& ns, const std::string& name, client::PatchType type,
                      const json::value& patch, std::string_view subresource, const WriteOptions& w) {
        auto r = s.resolve(id);
        check_subresource(r, subresource);
        if (subresource == "scale") {
            // The patch applies to the Scale (a strategic merge patch of a Scale is a merge patch).
            auto current = scale_of(s.find_or_throw(r, ns, name));
            return update_scale(r, ns, name, patched_or_throw(r, name, current,
                type == client::PatchType::StrategicMerge ? client::PatchType::Merge : type, patch));
        }
        // The patch applies to the object in the version the client speaks; converted (a
        // copy) only when that is not the stored version, so a patch reads the stored
        // object in place otherwise (it is not touched before update_decoded).
        const json::value& stored = s.find_or_throw(r, ns, name);
        std::optional<json::value> converted;
        if (!served_in(stored, r.api_version())) converted = StoreState::served(stored, r);
        const json::value& existing = converted ? *converted : stored;
        if (type == client::PatchType::StrategicMerge && r.custom)
            throw StoreError(store_status::unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"));
        json::value patched = patched_or_throw(r, name, existing, type, patch);
        if (!patched.is_object())
            throw StoreError(store_status::bad_request("the patched object is not a JSON object"));
        // The apiserver names a refused strategic merge patch by the patch (Go's %+v of it),
        // the others by the patched object's JSON.
        const json::value as_patched =
            type == client::PatchType::StrategicMerge ? json::value(go_value_v(patch)) : json::value(go_json(patched));
        check_patched_type(r, existing, patched, as_patched);
        decode_fields(r, patched, w, &as_patched);
        HooksScope scope{hooks_, w.admission};
        if (hooks_ && hooks_->mutate) hooks_->mutate(patched, &existing);
        return StoreState::served(update_decoded(r, ns, name, std::move(patched), subresource), r);
    }

    /// The create strategy on a body already decoded (no field validation), as create() and
    /// the store's own namespaces use it; returns what is stored, in the storage version.
    json::value create_decoded(const ResourceId& id, std::string ns, json::value body) {
        using namespace stored_object;
        auto r = s.resolve(id);
        if (!body.is_object()) throw StoreError(store_status::bad_request("the request body must be a JSON object"));
        // Top-level keys first: inserting into an object may move its members, metadata included.
        body.get_object()["apiVersion"] = r.api_version();
        body.get_object()["kind"] = r.kind;
        const bool pod = !r.custom && r.group.empty() && r.plural == "pods";
        if (pod && !body.get_object().contains("spec")) body.get_object()["spec"] = json::object();  // admission writes it
        auto& md = meta(body);
        auto body_ns = str(&md, "namespace");
        if (r.namespaced) {
            if (!ns.empty() && !body_ns.empty() && body_ns != ns)
                throw StoreError(store_status::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"));
            if (ns.empty()) ns = body_ns;
            if (ns.empty())
                throw StoreError(store_status::bad_request("a namespace is required to create " +
                                                           qualified_resource(r.group, r.plural)));
            md["namespace"] = ns;
            check_namespace_accepts(r, ns, str(&md, "name"));
        } else {
            md.erase("namespace");
            ns.clear();
        }
        if (r.custom) check_crd_not_terminating(r);
        if (pod) admit_pod_service_account(body, ns);
        if (!r.custom) admit_storage_protection(r.group, r.plural, body);  // StorageObjectInUseProtection

        auto name = str(&md, "name");
        if (name.empty() && !str(&md, "generateName").empty()) {
            for (int attempt = 0; attempt < 8; ++attempt) {
                name = generate_name(str(&md, "generateName"), s.rng);
                if (!s.find(r, ns, name)) break;
            }
            md["name"] = name;
        }

        std::vector<FieldError> errs;
        if (name.empty()) errs.push_back(field::required("metadata.name", "name or generateName is required"));
        else {
            // core/v1 Events and the RBAC kinds only need a name that is a path segment (the
            // Events registry's legacy rule; ValidateRBACName).
            const bool segment = (r.plural == "events" && r.group.empty()) || is_rbac_resource(r.group, r.plural);
            auto more = r.plural == "namespaces" && r.group.empty() ? validate_dns1123_label(name, "metadata.name")
                        : segment                                   ? validate_path_segment_name(name, "metadata.name")
                                                                    : validate_dns1123_subdomain(name, "metadata.name");
            errs.insert(errs.end(), more.begin(), more.end());
        }

        md.erase("deletionTimestamp");
        md.erase("deletionGracePeriodSeconds");
        md.erase("resourceVersion");
        md["uid"] = s.new_uid();
        md["creationTimestamp"] = s.now();
        if (keeps_generation(r)) md["generation"] = 1;
        else md.erase("generation");

        if (r.converts_on_write()) body = convert_to_version(body, r.storage_api_version);
        prepare_create(r, body);
        auto more = validate(r, body, name, nullptr);
        errs.insert(errs.end(), more.begin(), more.end());
        if (!errs.empty()) throw StoreError(store_status::invalid(r.kind, r.group, name, errs));
        if (s.find(r, ns, name)) throw StoreError(store_status::already_exists(r.group, r.plural, name));

        if (is_crd(r)) set_crd_status(body, nullptr, s.now());
        // Taken once: what this write creates besides (a namespace's account) is not admitted.
        if (const auto* h = std::exchange(hooks_, nullptr); h && h->validate) h->validate(StoreState::served(body, r), nullptr);
        auto stored = s.write(r, ns, name, std::move(body));
        if (is_crd(r) && !s.dry) establish_crd(s.registry, stored);
        // Synchronously, so that a pod created right after its namespace finds its account.
        if (!r.custom && r.group.empty() && r.plural == "namespaces") publish_namespace_identity(name);
        return stored;
    }

    /// What kube-controller-manager's serviceaccounts-controller and root-ca-cert-publisher
    /// keep in namespace `ns` (service_accounts.hpp), (re)created when missing; the ConfigMap
    /// only once the store knows the CA, rewritten when it holds another. Nothing in a dry
    /// run or in a namespace being deleted.
    void publish_namespace_identity(const std::string& ns) {
        namespace sa = service_accounts;
        if (s.dry) return;
        const auto* nso = s.find(*s.registry.find("", "v1", "namespaces"), "", ns);
        if (!nso || stored_object::deleting(*nso)) return;
        const ResourceId accounts{"", "v1", "serviceaccounts"}, config_maps{"", "v1", "configmaps"};
        if (!s.find(s.resolve(accounts), ns, std::string(sa::default_name)))
            create_decoded(accounts, ns, sa::default_service_account());
        if (s.root_ca_pem.empty()) return;
        const auto* cm = s.find(s.resolve(config_maps), ns, std::string(sa::root_ca_config_map));
        if (!cm) {
            create_decoded(config_maps, ns, sa::root_ca_config_map_body(s.root_ca_pem));
        } else if (!sa::holds_ca(*cm, s.root_ca_pem)) {
            json::value next = *cm;
            next.get_object()["data"] = json::object{{sa::root_ca_key, s.root_ca_pem}};
            update_decoded(s.resolve(config_maps), ns, std::string(sa::root_ca_config_map), std::move(next), {});
        }
    }

    /// publish_namespace_identity() for every namespace: re-creates what was deleted.
    void publish_identities() {
        if (s.dry) return;
        std::vector<std::string> names;
        if (auto b = s.data.find(s.resolve({"", "v1", "namespaces"}).storage_key()); b != s.data.end())
            for (const auto& [key, obj] : b->second) names.push_back(stored_object::meta_str(obj, "name"));
        for (const auto& ns : names) publish_namespace_identity(ns);
    }

private:
    /// The ServiceAccount admission plugin (service_accounts.hpp) on a pod being created.
    void admit_pod_service_account(json::value& pod, const std::string& ns) {
        const auto accounts = s.resolve({"", "v1", "serviceaccounts"});
        service_accounts::admit_pod(pod, ns, [&](const std::string& name) { return s.find(accounts, ns, name); }, s.rng);
    }

    /// `existing` with `patch` applied; a patch that does not apply is refused with 422.
    static json::value patched_or_throw(const ResourceInfo& r, const std::string& name, const json::value& existing,
                                        client::PatchType type, const json::value& patch) {
        try {
            switch (type) {
            case client::PatchType::Merge: return apply_merge_patch(existing, patch);
            case client::PatchType::Json: return apply_json_patch(existing, patch);
            case client::PatchType::StrategicMerge: return apply_strategic_merge_patch(existing, patch, r.kind);
            }
        } catch (const PatchError& e) {
            auto st = store_status::invalid(r.kind, r.group, name, {});
            st.message = e.what();
            st.details->causes.clear();
            throw StoreError(std::move(st));
        }
        return existing;
    }

    /// PUT .../scale (scale_subresource.hpp): the Scale's replicas become the object's
    /// spec.replicas, written by the object's update strategy; answers the new Scale.
    json::value update_scale(const ResourceInfo& r, const std::string& ns, const std::string& name, json::value scale) {
        using namespace stored_object;
        check_subresource(r, "scale");
        if (!scale.is_object()) throw StoreError(store_status::bad_request("the request body must be a JSON object"));
        auto body_name = meta_str(scale, "name");
        if (body_name != name)
            throw StoreError(store_status::bad_request("the name of the object (" + body_name +
                                                       ") does not match the name on the URL (" + name + ")"));
        json::value old = s.find_or_throw(r, ns, name);
        auto errs = validate_scale(scale);
        if (!errs.empty()) throw StoreError(store_status::invalid("Scale", "autoscaling", name, errs));
        auto want_rv = meta_str(scale, "resourceVersion");
        if (!want_rv.empty() && want_rv != meta_str(old, "resourceVersion"))
            throw StoreError(store_status::modified_conflict(r.group, r.plural, name));
        return scale_of(update_decoded(r, ns, name, scaled(std::move(old), scale), ""));
    }

    /// A request body's decoding: strict decoding errors (see decode_fields), then its type.
    void decode_body(const ResourceInfo& r, json::value& obj, const WriteOptions& w) {
        check_body_decodes(r, obj);
        decode_fields(r, obj, w, nullptr);
        check_body_type(r, obj);
    }

    /// The update strategy on a decoded body (update and patch): returns what is stored.
    json::value update_decoded(const ResourceInfo& r, std::string ns, const std::string& name, json::value body,
                               std::string_view sub) {
        using namespace stored_object;
        check_subresource(r, sub);
        if (!body.is_object()) throw StoreError(store_status::bad_request("the request body must be a JSON object"));
        auto& md = meta(body);
        auto body_name = str(&md, "name");
        if (body_name != name)
            throw StoreError(store_status::bad_request("the name of the object (" + body_name +
                                                       ") does not match the name on the URL (" + name + ")"));
        if (r.namespaced) {
            auto body_ns = str(&md, "namespace");
            if (!body_ns.empty() && body_ns != ns)
                throw StoreError(store_status::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"));
        } else {
            ns.clear();
        }
        const json::value& old = s.find_or_throw(r, ns, name);
        auto want_rv = str(&md, "resourceVersion");
        if (!want_rv.empty() && want_rv != meta_str(old, "resourceVersion"))
            throw StoreError(store_status::modified_conflict(r.group, r.plural, name));
        auto want_uid = str(&md, "uid");
        if (!want_uid.empty() && want_uid != meta_str(old, "uid"))
            throw StoreError(store_status::conflict(
                r.group, r.plural, name,
                StoreState::storage_precondition_error(r, ns, name, "UID", want_uid, meta_str(old, "uid"))));

        json::value n;
        if (sub == "status") {
            n = old;
            if (const auto* st = body.get_object().if_contains("status")) n.get_object()["status"] = *st;
            else n.get_object().erase("status");
        } else {
            n = std::move(body);
            if (r.has_status()) {
                if (const auto* st = old.get_object().if_contains("status")) n.get_object()["status"] = *st;
                else n.get_object().erase("status");
            }
        }
        n.get_object()["apiVersion"] = r.api_version();
        n.get_object()["kind"] = r.kind;
        {
            auto& nm = meta(n);
            const auto* om = meta(old);
            for (const char* k : {"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                                  "generation", "name", "namespace", "resourceVersion"}) {
                if (const auto* v = om->if_contains(k)) nm[k] = *v;
                else nm.erase(k);
            }
        }

        if (r.converts_on_write()) n = convert_to_version(n, r.storage_api_version);

        std::vector<FieldError> errs;
        if (deleting(old)) {
            auto before = finalizers(old);
            std::vector<std::string> added;
            for (const auto& f : finalizers(n))
                if (std::find(before.begin(), before.end(), f) == before.end()) added.push_back(f);
            if (!added.empty()) {
                std::string list = "[]string{";
                for (std::size_t i = 0; i < added.size(); ++i) list += (i ? ", " : "") + go::quote(added[i]);
                list += "}";
                errs.push_back(field::forbidden(
                    "metadata.finalizers", "no new finalizers can be added if the object is being deleted, found new finalizers " + list));
            }
        }
        prepare_update(r, n, old);
        auto more = validate(r, n, name, &old, sub);
        errs.insert(errs.end(), more.begin(), more.end());
        if (!errs.empty()) throw StoreError(store_status::invalid(r.kind, r.group, name, errs));

        if (keeps_generation(r) && !json_equal(spec_part(n, r.has_status()), spec_part(old, r.has_status())))
            meta(n)["generation"] = generation(old) + 1;
        if (is_crd(r)) set_crd_status(n, &old, s.now());
        if (const auto* h = std::exchange(hooks_, nullptr); h && h->validate) {
            auto served_old = StoreState::served(old, r);
            h->validate(StoreState::served(n, r), &served_old);
        }
        if (json_equal(n, old)) return old;  // a no-op write is not a write, as in etcd3's GuaranteedUpdate
        auto stored = s.commit(r, ns, name, std::move(n));
        if (is_crd(r) && !s.dry && s.find(r, ns, name)) establish_crd(s.registry, stored);
        return stored;
    }

    /// The strict decoding errors of a write (the request's own, then the unknown fields of
    /// `obj` sorted by path, which are dropped from it), answered as `w.validation` says.
    /// Unknown fields are those the schema of a custom resource lacks (metadata: ObjectMeta's
    /// fields), or the 1.32 types of a built-in kind (builtin_schemas.hpp). `patched` is the
    /// text a refused patch is named by (its errors are 422s), nullptr for a create or update
    /// (400s).
    void decode_fields(const ResourceInfo& r, json::value& obj, const WriteOptions& w, const json::value* patched) {
        std::vector<std::string> errors = w.body_errors;
        std::vector<std::string> unknown;
        if (r.custom && r.schema && obj.is_object()) {
            unknown = r.schema->prune(obj);
            auto meta_unknown = prune_object_meta(obj);
            unknown.insert(unknown.end(), meta_unknown.begin(), meta_unknown.end());
            std::sort(unknown.begin(), unknown.end());
        } else if (!r.custom && obj.is_object()) {
            unknown = BuiltinSchemas::instance().prune(BuiltinSchemas::kind_type(r.group, r.kind), obj);
        }
        for (const auto& u : unknown) {
            s.unknown_seen.push_back(r.kind + " " + u);
            std::string e = "unknown field " + go::quote(u);
            if (std::find(errors.begin(), errors.end(), e) == errors.end()) errors.push_back(std::move(e));
        }
        if (errors.empty() || w.validation == FieldValidation::Ignore) return;
        if (w.validation == FieldValidation::Warn) {
            if (w.warnings)
                for (auto& e : errors)
                    if (std::find(w.warnings->begin(), w.warnings->end(), e) == w.warnings->end()) w.warnings->push_back(e);
            return;
        }
        if (patched) {
            throw StoreError(store_status::invalid(
                "", "", "", {field::invalid("patch", *patched, strict_decoding_error(errors))}));
        }
        // The decoder names the kind and version the body declares (the URL's when it has none).
        std::string kind = stored_object::str(obj.if_object(), "kind");
        std::string version = stored_object::str(obj.if_object(), "apiVersion");
        if (auto slash = version.find('/'); slash != std::string::npos) version = version.substr(slash + 1);
        if (kind.empty()) kind = r.kind;
        if (version.empty()) version = r.version;
        throw StoreError(store_status::bad_request(kind + " in version " + go::quote(version) + " cannot be handled as a " +
                                                   r.kind + ": " + strict_decoding_error(errors)));
    }

    /// Defaults a registry strategy applies on create.
    void prepare_create(const ResourceInfo& r, json::value& obj) {
        auto& o = obj.get_object();
        if (!r.custom && r.group.empty()) {
            if (r.plural == "pods") {
                o["status"] = json::object{{"phase", "Pending"}, {"qosClass", pod_qos_class(obj)}};
                // A pod stored with scheduling gates says so until the scheduler places it.
                const auto* spec = o.if_contains("spec");
                const auto* gates = spec && spec->is_object() ? spec->get_object().if_contains("schedulingGates") : nullptr;
                if (gates && gates->is_array() && !gates->get_array().empty())
                    o["status"].get_object()["conditions"] = json::array{json::object{
                        {"type", "PodScheduled"}, {"status", "False"}, {"lastProbeTime", nullptr},
                        {"lastTransitionTime", nullptr}, {"reason", "SchedulingGated"},
                        {"message", "Scheduling is blocked due to non-empty scheduling gates"}}};
            } else if (r.plural == "namespaces") {
                o["status"] = json::object{{"phase", "Active"}};
                auto& spec = o["spec"];
                if (!spec.is_object()) spec = json::object();
                // The kubernetes finalizer is added to whatever finalizers the body lists.
                auto& fins = spec.get_object()["finalizers"];
                if (!fins.is_array()) fins = json::array();
                if (std::find(fins.get_array().begin(), fins.get_array().end(), json::value("kubernetes")) ==
                    fins.get_array().end())
                    fins.get_array().push_back("kubernetes");
            } else if (r.plural == "persistentvolumeclaims" || r.plural == "persistentvolumes") {
                o["status"] = json::object{{"phase", "Pending"}};
            } else if (r.plural == "secrets") {
                merge_string_data(obj);
                if (!o.contains("type")) o["type"] = "Opaque";
            }
        }
        // The strategies of custom resources and apps/v1 workloads start with an empty status.
        if ((r.custom || r.group == "apps" || r.group == "batch") && r.has_status()) o.erase("status");
        if (!r.custom) apply_builtin_defaults(r.group, r.plural, obj);
        if (!r.custom && r.group == "batch" && r.plural == "jobs") generate_job_selector(obj);
        if (is_service(r)) allocate_service_addresses(s, r, obj, nullptr);
        if (!r.custom && is_rbac_resource(r.group, r.plural)) rbac_defaults(r.plural, obj);
        if (r.custom && r.schema) {
            r.schema->prune(obj);
            r.schema->apply_defaults(obj);
        }
    }

    void prepare_update(const ResourceInfo& r, json::value& obj, const json::value& old) {
        if (!r.custom && r.group.empty() && r.plural == "namespaces") keep_namespace_finalizers(obj, old);
        if (!r.custom && r.group.empty() && r.plural == "secrets") {
            merge_string_data(obj);
            // SetDefaults_Secret runs on every write: a type-less update means Opaque.
            if (!obj.get_object().contains("type")) obj.get_object()["type"] = "Opaque";
        }
        if (!r.custom) apply_builtin_defaults(r.group, r.plural, obj);
        if (is_service(r)) allocate_service_addresses(s, r, obj, &old);
        if (!r.custom && is_rbac_resource(r.group, r.plural)) rbac_defaults(r.plural, obj);
        if (r.custom && r.schema) {
            r.schema->prune(obj);
            r.schema->apply_defaults(obj);
        }
    }

    static bool is_service(const ResourceInfo& r) { return !r.custom && r.group.empty() && r.plural == "services"; }

    /// The kinds outside the core API's registry (custom resources, CRDs, webhook
    /// configurations): they keep metadata.generation on a 1.32 server (pods, PVs, claims,
    /// ConfigMaps, Secrets and the rest have none) and get generic metadata validation.
    static bool generic_kind(const ResourceInfo& r) {
        return r.custom || is_crd(r) || r.group == "admissionregistration.k8s.io";
    }
    /// apps/v1 workloads keep a generation too (bumped on spec changes: their controllers
    /// report observedGeneration).
    static bool keeps_generation(const ResourceInfo& r) {
        return generic_kind(r) || (!r.custom && (r.group == "apps" || r.group == "batch"));
    }

    /// Validation beyond the name: metadata, CRD schemas, and the CRD object itself.
    std::vector<FieldError> validate(const ResourceInfo& r, const json::value& obj, const std::string& name,
                                            const json::value* old, std::string_view sub = {}) const {
        // Core validation's finalizer rule covers the built-ins of the core API's registry,
        // not CRDs, webhook configurations (generic validation) or custom resources.
        std::vector<FieldError> errs = validate_object_meta(obj, ObjectMetaRules{.kube_finalizer_names = !generic_kind(r)});
        if (r.custom && r.schema) {
            auto more = r.schema->validate(obj);
            errs.insert(errs.end(), more.begin(), more.end());
        }
        if (is_crd(r)) {
            auto more = validate_crd(obj, name, old);
            errs.insert(errs.end(), more.begin(), more.end());
        }
        if (!r.custom && sub.empty()) {
            auto more = validate_builtin(r, obj, old);
            errs.insert(errs.end(), more.begin(), more.end());
        }
        if (!r.custom && sub == "status" && old) {
            auto more = validate_builtin_status(r, obj, *old);
            errs.insert(errs.end(), more.begin(), more.end());
        }
        return errs;
    }

    /// The status rules of the built-in kinds whose status strategy has any.
    static std::vector<FieldError> validate_builtin_status(const ResourceInfo& r, const json::value& obj,
                                                           const json::value& old) {
        if (r.group.empty() && r.plural == "nodes") return validate_node_status_update(obj, old);
        if (r.group.empty() && r.plural == "namespaces") return validate_namespace_status_update(obj);
        return {};
    }

    /// The spec rules of the built-in kinds (pod_validation.hpp, ...): a write of the object
    /// itself; its status subresource keeps the spec, so its writes have none of these.
    static std::vector<FieldError> validate_builtin(const ResourceInfo& r, const json::value& obj,
                                                    const json::value* old) {
        if (auto rules = event_rules(r)) return old ? validate_event_update(obj, *old, *rules) : validate_event_create(obj, *rules);
        if (r.group.empty()) {
            if (r.plural == "pods") return old ? validate_pod_update(obj, *old) : validate_pod_create(obj);
            if (r.plural == "persistentvolumes")
                return old ? validate_persistent_volume_update(obj, *old) : validate_persistent_volume(obj);
            if (r.plural == "persistentvolumeclaims")
                return old ? validate_persistent_volume_claim_update(obj, *old) : validate_persistent_volume_claim(obj);
            if (r.plural == "configmaps") return old ? validate_config_map_update(obj, *old) : validate_config_map(obj);
            if (r.plural == "secrets") return old ? validate_secret_update(obj, *old) : validate_secret(obj);
            if (r.plural == "nodes") return old ? validate_node_update(obj, *old) : validate_node(obj);
            if (r.plural == "namespaces") return validate_namespace(obj);
            if (r.plural == "services") return validate_service(obj, old);
        } else if (r.group == "apps" && r.plural == "statefulsets") {
            return validate_statefulset(obj, old);
        } else if (r.group == "coordination.k8s.io" && r.plural == "leases") {
            return validate_lease(obj);
        } else if (r.group == "apps" && r.plural == "deployments") {
            return validate_deployment(obj, old);
        } else if (r.group == "apps" && r.plural == "replicasets") {
            return validate_replica_set(obj, old);
        } else if (r.group == "batch" && r.plural == "jobs") {
            return validate_job(obj, old);
        } else if (r.group == "storage.k8s.io" && r.plural == "storageclasses") {
            return old ? validate_storage_class_update(obj, *old) : validate_storage_class(obj);
        } else if (is_rbac_resource(r.group, r.plural)) {
            return validate_rbac_object(r.plural, obj, old);
        } else if (r.group == "admissionregistration.k8s.io") {
            return validate_webhook_configuration(r.plural == "mutatingwebhookconfigurations", obj, old);
        }
        return {};
    }

    static std::string pod_qos_class(const json::value& pod) {
        // Enough of v1qos.GetPodQOS for what clients print: no requests/limits at all is BestEffort.
        const auto* spec = pod.get_object().if_contains("spec");
        if (spec && spec->is_object())
            if (const auto* cs = spec->get_object().if_contains("containers"); cs && cs->is_array())
                for (const auto& c : cs->get_array())
                    if (const auto* res = c.is_object() ? c.get_object().if_contains("resources") : nullptr;
                        res && res->is_object() && !res->get_object().empty())
                        return "Burstable";
        return "BestEffort";
    }

    /// Secret.stringData is write-only: merged into data (base64) and dropped, like the real server.
    static void merge_string_data(json::value& obj) {
        auto& o = obj.get_object();
        const auto* found = o.if_contains("stringData");
        if (!found) return;
        json::value sd = *found;  // a copy: inserting "data" may move the members of o
        if (sd.is_object()) {
            auto& data = o["data"];
            if (!data.is_object()) data = json::object();
            for (const auto& kv : sd.get_object())
                if (kv.value().is_string())
                    data.get_object()[kv.key()] = client::base64_encode(std::string_view(kv.value().get_string()));
        }
        o.erase("stringData");
    }

    void check_namespace_accepts(const ResourceInfo& r, const std::string& ns, const std::string& name) const {
        const auto* nsr = s.registry.find("", "v1", "namespaces");
        const auto* nso = s.find(*nsr, "", ns);
        if (!nso) throw StoreError(store_status::not_found("", "namespaces", ns));
        if (stored_object::deleting(*nso)) {
            std::string why = "unable to create new content in namespace " + ns + " because it is being terminated";
            auto st = store_status::forbidden(r.group, r.plural, name, why);
            st.details->causes.push_back(api::StatusCause{"NamespaceTerminating", why, "metadata.namespace"});
            throw StoreError(std::move(st));
        }
    }

    void check_crd_not_terminating(const ResourceInfo& r) const {
        auto crdr = *s.registry.find("apiextensions.k8s.io", "v1", "customresourcedefinitions");
        const auto* crd = s.find(crdr, "", r.plural + "." + r.group);
        if (crd && stored_object::deleting(*crd))
            throw StoreError(store_status::method_not_allowed(
                r.group, r.plural, "create not allowed while custom resource definition is terminating"));
    }

    static void check_subresource(const ResourceInfo& r, std::string_view sub) {
        if (sub.empty()) return;
        if (sub == "scale" && r.has_subresource("scale")) return;
        if (sub != "status" || !r.has_status()) throw StoreError(store_status::no_such_resource());
    }

    /// The admission hooks of the write being served (WriteOptions::admission), for as long
    /// as it is served; nested writes (update_scale's, a namespace's account) see none once
    /// the validation hook has been taken.
    struct HooksScope {
        const AdmissionHooks*& slot;
        HooksScope(const AdmissionHooks*& s, const AdmissionHooks* h) : slot(s) { slot = h; }
        ~HooksScope() { slot = nullptr; }
    };

    StoreState& s;  // the store's state, named short: nearly every line uses it
    const AdmissionHooks* hooks_ = nullptr;
};

} // namespace vck::sandbox
