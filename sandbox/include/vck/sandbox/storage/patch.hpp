// Patches as the API server applies them: JSON merge patch (RFC 7386), JSON patch (RFC 6902
// with RFC 6901 pointers) and Kubernetes' strategic merge patch for built-in kinds.
// Guarantees: pure functions; the target is taken by value, so on PatchError the caller's
// document is untouched; PatchError::what() is fit for a 422 Status message.
// In the sandbox because only a server (the sandbox, the runtime tests' MemoryListWatch) applies
// patches; a controller only sends them.
#pragma once

#include <vck/api/json_pointer.hpp>
#include <vck/webhook/json_patch.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

/// A patch that cannot be applied. test_failed() is true when an RFC 6902 "test" op failed.
class PatchError : public std::runtime_error {
public:
    explicit PatchError(const std::string& message, bool test_failed = false)
        : std::runtime_error(message), test_failed_(test_failed) {}
    bool test_failed() const noexcept { return test_failed_; }

private:
    bool test_failed_;
};

/// JSON equality as RFC 6902 "test" defines it: numbers compare by value (1 == 1.0),
/// objects ignore member order (webhook/json_patch.hpp's json_same).
inline bool json_equal(const boost::json::value& a, const boost::json::value& b) { return webhook::json_same(a, b); }

// ---------------------------------------------------------------------------------------
// RFC 7386 JSON merge patch

/// Applies an RFC 7386 merge patch: objects merge recursively, null deletes, anything else
/// (arrays included) replaces.
inline boost::json::value apply_merge_patch(boost::json::value target, const boost::json::value& patch) {
    if (!patch.is_object()) return patch;
    if (!target.is_object()) target = boost::json::object();
    auto& t = target.get_object();
    for (const auto& kv : patch.get_object()) {
        if (kv.value().is_null()) {
            t.erase(kv.key());
            continue;
        }
        auto* existing = t.if_contains(kv.key());
        boost::json::value base = existing ? std::move(*existing) : boost::json::value();
        t[kv.key()] = apply_merge_patch(std::move(base), kv.value());
    }
    return target;
}

/// The merge patch that turns `from` into `to` (apply_merge_patch(from, result) == to).
/// A null inside `to` cannot be expressed by a merge patch and comes out as a deletion.
inline boost::json::value create_merge_patch(const boost::json::value& from, const boost::json::value& to) {
    if (!from.is_object() || !to.is_object()) return to;
    boost::json::object out;
    const auto& f = from.get_object();
    const auto& t = to.get_object();
    for (const auto& kv : f)
        if (!t.contains(kv.key())) out[kv.key()] = nullptr;
    for (const auto& kv : t) {
        const auto* old = f.if_contains(kv.key());
        if (!old) {
            out[kv.key()] = kv.value();
        } else if (!json_equal(*old, kv.value())) {
            if (old->is_object() && kv.value().is_object()) out[kv.key()] = create_merge_patch(*old, kv.value());
            else out[kv.key()] = kv.value();
        }
    }
    return out;
}

// ---------------------------------------------------------------------------------------
// RFC 6902 JSON patch

namespace patch_detail {

using api::parse_json_pointer;

// An array index per RFC 6901: digits without leading zeros. npos when not one.
inline std::size_t pointer_index(std::string_view tok) {
    if (tok.empty() || tok.size() > 18 || (tok.size() > 1 && tok[0] == '0')) return std::string_view::npos;
    std::size_t n = 0;
    for (char c : tok) {
        if (c < '0' || c > '9') return std::string_view::npos;
        n = n * 10 + static_cast<std::size_t>(c - '0');
    }
    return n;
}

inline boost::json::value* pointer_find(boost::json::value& doc, const std::vector<std::string>& toks,
                                        std::size_t count, std::string& why) {
    boost::json::value* cur = &doc;
    for (std::size_t i = 0; i < count; ++i) {
        const auto& t = toks[i];
        if (auto* o = cur->if_object()) {
            cur = o->if_contains(t);
            if (!cur) {
                why = "key \"" + t + "\" not found";
                return nullptr;
            }
        } else if (auto* a = cur->if_array()) {
            auto idx = pointer_index(t);
            if (idx == std::string_view::npos) {
                why = "\"" + t + "\" is not a valid array index";
                return nullptr;
            }
            if (idx >= a->size()) {
                why = "index " + t + " is out of range for an array of " + std::to_string(a->size());
                return nullptr;
            }
            cur = &(*a)[idx];
        } else {
            why = "cannot descend into a " + std::string(cur->is_null() ? "null" : cur->is_string() ? "string" : "scalar") +
                  " with \"" + t + "\"";
            return nullptr;
        }
    }
    return cur;
}

struct JsonPatchOp {
    std::size_t index;
    std::string op;
    std::string path;

    [[noreturn]] void fail(const std::string& why, bool test = false) const {
        throw PatchError("json patch operation " + std::to_string(index) + " (" + op + " \"" + path +
                             "\"): " + why,
                         test);
    }
};

inline std::vector<std::string> op_pointer(const JsonPatchOp& op, std::string_view text) {
    try {
        return parse_json_pointer(text);
    } catch (const std::invalid_argument& e) {
        op.fail(std::string("invalid pointer \"") + std::string(text) + "\": " + e.what());
    }
}

inline void pointer_add(const JsonPatchOp& op, boost::json::value& doc, const std::vector<std::string>& toks,
                        boost::json::value v) {
    if (toks.empty()) {
        doc = std::move(v);
        return;
    }
    std::string why;
    auto* parent = pointer_find(doc, toks, toks.size() - 1, why);
    if (!parent) op.fail("the parent of the target does not exist: " + why);
    const auto& last = toks.back();
    if (auto* o = parent->if_object()) {
        (*o)[last] = std::move(v);
    } else if (auto* a = parent->if_array()) {
        if (last == "-") {
            a->push_back(std::move(v));
            return;
        }
        auto idx = pointer_index(last);
        if (idx == std::string_view::npos) op.fail("\"" + last + "\" is not a valid array index");
        if (idx > a->size())
            op.fail("index " + last + " is out of range for an array of " + std::to_string(a->size()));
        a->insert(a->begin() + static_cast<std::ptrdiff_t>(idx), std::move(v));
    } else {
        op.fail("the parent of the target is neither an object nor an array");
    }
}

inline boost::json::value pointer_remove(const JsonPatchOp& op, boost::json::value& doc,
                                         const std::vector<std::string>& toks) {
    if (toks.empty()) op.fail("cannot remove the whole document");
    std::string why;
    auto* parent = pointer_find(doc, toks, toks.size() - 1, why);
    if (!parent) op.fail("path not found: " + why);
    const auto& last = toks.back();
    if (auto* o = parent->if_object()) {
        auto it = o->find(last);
        if (it == o->end()) op.fail("path not found: key \"" + last + "\" not found");
        boost::json::value out = std::move(it->value());
        o->erase(it);
        return out;
    }
    if (auto* a = parent->if_array()) {
        auto idx = pointer_index(last);
        if (idx == std::string_view::npos) op.fail("\"" + last + "\" is not a valid array index");
        if (idx >= a->size())
            op.fail("path not found: index " + last + " is out of range for an array of " + std::to_string(a->size()));
        boost::json::value out = std::move((*a)[idx]);
        a->erase(a->begin() + static_cast<std::ptrdiff_t>(idx));
        return out;
    }
    op.fail("path not found: the parent is neither an object nor an array");
}

inline const boost::json::value& op_member(const JsonPatchOp& op, const boost::json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    if (!v) op.fail("missing \"" + std::string(key) + "\"");
    return *v;
}

} // namespace patch_detail

/// Applies an RFC 6902 patch (add, remove, replace, move, copy, test). All operations apply
/// or none does. Errors name the operation's index, its op and its path.
inline boost::json::value apply_json_patch(boost::json::value target, const boost::json::value& patch) {
    using patch_detail::JsonPatchOp;
    if (!patch.is_array()) throw PatchError("a json patch must be a JSON array of operations");
    std::size_t index = 0;
    for (const auto& item : patch.get_array()) {
        JsonPatchOp op{index++, "?", ""};
        if (!item.is_object()) op.fail("an operation must be a JSON object");
        const auto& o = item.get_object();
        const auto* opv = o.if_contains("op");
        if (!opv || !opv->is_string()) op.fail("missing or non-string \"op\"");
        op.op = std::string(opv->get_string());
        const auto* pathv = o.if_contains("path");
        if (!pathv || !pathv->is_string()) op.fail("missing or non-string \"path\"");
        op.path = std::string(pathv->get_string());
        auto path = patch_detail::op_pointer(op, op.path);

        auto from = [&] {
            const auto& f = patch_detail::op_member(op, o, "from");
            if (!f.is_string()) op.fail("\"from\" must be a string");
            return std::string(f.get_string());
        };
        if (op.op == "add") {
            patch_detail::pointer_add(op, target, path, patch_detail::op_member(op, o, "value"));
        } else if (op.op == "remove") {
            patch_detail::pointer_remove(op, target, path);
        } else if (op.op == "replace") {
            const auto& v = patch_detail::op_member(op, o, "value");
            std::string why;
            auto* at = patch_detail::pointer_find(target, path, path.size(), why);
            if (!at) op.fail("path not found: " + why);
            *at = v;
        } else if (op.op == "move") {
            auto from_text = from();
            auto src = patch_detail::op_pointer(op, from_text);
            bool proper_prefix = src.size() < path.size() && std::equal(src.begin(), src.end(), path.begin());
            if (proper_prefix) op.fail("cannot move \"" + from_text + "\" into its own child");
            std::string why;
            if (!patch_detail::pointer_find(target, src, src.size(), why)) op.fail("\"from\" not found: " + why);
            if (src == path) continue;
            auto v = patch_detail::pointer_remove(op, target, src);
            patch_detail::pointer_add(op, target, path, std::move(v));
        } else if (op.op == "copy") {
            auto from_text = from();
            auto src = patch_detail::op_pointer(op, from_text);
            std::string why;
            auto* at = patch_detail::pointer_find(target, src, src.size(), why);
            if (!at) op.fail("\"from\" not found: " + why);
            boost::json::value copy = *at;
            patch_detail::pointer_add(op, target, path, std::move(copy));
        } else if (op.op == "test") {
            const auto& v = patch_detail::op_member(op, o, "value");
            std::string why;
            auto* at = patch_detail::pointer_find(target, path, path.size(), why);
            if (!at) op.fail("test failed: path not found: " + why, true);
            if (!json_equal(*at, v))
                op.fail("test failed: value is " + boost::json::serialize(*at) + ", expected " +
                            boost::json::serialize(v),
                        true);
        } else {
            op.fail("unknown operation \"" + op.op + "\" (expected add, remove, replace, move, copy or test)");
        }
    }
    return target;
}

// ---------------------------------------------------------------------------------------
// Kubernetes strategic merge patch

/// How one field of a built-in type merges, from its Go struct tags
/// (`patchStrategy:"merge" patchMergeKey:"name"`). Fields not described merge like a merge
/// patch: maps recursively, lists replaced whole (atomic).
struct StrategicField;
struct StrategicType {
    std::map<std::string, StrategicField, std::less<>> fields;
};
struct StrategicField {
    bool merge_list = false;          // patchStrategy=merge on a list
    std::string merge_key;            // empty for a merged set of primitives
    const StrategicType* type = nullptr; // the struct (or list item struct) below this field
};

namespace patch_detail {

// The tags of kubernetes/api (core/v1, apps/v1, batch/v1) and apimachinery's ObjectMeta, for
// the kinds the emulator serves. Nodes point at each other, so this lives in one static.
struct StrategicSchemas {
    StrategicType object_meta, container, pod_spec, pod_status, pod_template_spec, pod, pod_template,
        node_spec, node_status, node, service_spec, service, conditions_by_type, namespace_, pvc,
        service_account, meta_only, workload_spec, workload, job_template, cron_spec, cron_job;
    std::map<std::string, const StrategicType*, std::less<>> kinds;

    StrategicSchemas(const StrategicSchemas&) = delete;
    StrategicSchemas() {
        auto list = [](std::string key, const StrategicType* t = nullptr) { return StrategicField{true, std::move(key), t}; };
        auto sub = [](const StrategicType* t) { return StrategicField{false, {}, t}; };

        object_meta.fields = {{"ownerReferences", list("uid")}, {"finalizers", list("")}};
        container.fields = {{"ports", list("containerPort")},
                            {"env", list("name")},
                            {"volumeMounts", list("mountPath")},
                            {"volumeDevices", list("devicePath")}};
        pod_spec.fields = {{"volumes", list("name")},
                           {"initContainers", list("name", &container)},
                           {"containers", list("name", &container)},
                           {"ephemeralContainers", list("name", &container)},
                           {"imagePullSecrets", list("name")},
                           {"hostAliases", list("ip")},
                           {"topologySpreadConstraints", list("topologyKey")},
                           {"schedulingGates", list("name")},
                           {"resourceClaims", list("name")}};
        pod_status.fields = {{"conditions", list("type")},
                             {"hostIPs", list("ip")},
                             {"podIPs", list("ip")},
                             {"resourceClaimStatuses", list("name")}};
        pod_template_spec.fields = {{"metadata", sub(&object_meta)}, {"spec", sub(&pod_spec)}};
        pod.fields = {{"metadata", sub(&object_meta)}, {"spec", sub(&pod_spec)}, {"status", sub(&pod_status)}};
        pod_template.fields = {{"metadata", sub(&object_meta)}, {"template", sub(&pod_template_spec)}};

        node_spec.fields = {{"podCIDRs", list("")}}; // taints carry no patch strategy: atomic
        node_status.fields = {{"conditions", list("type")}, {"addresses", list("type")}};
        node.fields = {{"metadata", sub(&object_meta)}, {"spec", sub(&node_spec)}, {"status", sub(&node_status)}};
        service_spec.fields = {{"ports", list("port")}};
        conditions_by_type.fields = {{"conditions", list("type")}};
        service.fields = {{"metadata", sub(&object_meta)}, {"spec", sub(&service_spec)}, {"status", sub(&conditions_by_type)}};
        namespace_.fields = {{"metadata", sub(&object_meta)}, {"status", sub(&conditions_by_type)}};
        pvc.fields = namespace_.fields;
        service_account.fields = {{"metadata", sub(&object_meta)}, {"secrets", list("name")}};
        meta_only.fields = {{"metadata", sub(&object_meta)}};
        workload_spec.fields = {{"template", sub(&pod_template_spec)}};
        workload.fields = {{"metadata", sub(&object_meta)}, {"spec", sub(&workload_spec)}, {"status", sub(&conditions_by_type)}};
        job_template.fields = {{"metadata", sub(&object_meta)}, {"spec", sub(&workload_spec)}};
        cron_spec.fields = {{"jobTemplate", sub(&job_template)}};
        cron_job.fields = {{"metadata", sub(&object_meta)}, {"spec", sub(&cron_spec)}};

        kinds = {{"Pod", &pod},
                 {"PodTemplate", &pod_template},
                 {"Node", &node},
                 {"Service", &service},
                 {"Namespace", &namespace_},
                 {"PersistentVolumeClaim", &pvc},
                 {"PersistentVolume", &meta_only},
                 {"Secret", &meta_only},
                 {"ConfigMap", &meta_only},
                 {"Event", &meta_only},
                 {"Lease", &meta_only},
                 {"Endpoints", &meta_only},
                 {"LimitRange", &meta_only},
                 {"ResourceQuota", &meta_only},
                 {"ServiceAccount", &service_account},
                 {"ReplicationController", &workload},
                 {"Deployment", &workload},
                 {"ReplicaSet", &workload},
                 {"StatefulSet", &workload},
                 {"DaemonSet", &workload},
                 {"Job", &workload},
                 {"CronJob", &cron_job}};
    }
};

inline const StrategicSchemas& strategic_schemas() {
    static const StrategicSchemas s;
    return s;
}

constexpr std::string_view kPatchDirective = "$patch";
constexpr std::string_view kRetainKeys = "$retainKeys";
constexpr std::string_view kDeleteFromPrimitiveList = "$deleteFromPrimitiveList/";
constexpr std::string_view kSetElementOrder = "$setElementOrder/";

inline std::string short_json(const boost::json::value& v) {
    auto s = boost::json::serialize(v);
    if (s.size() > 200) s = s.substr(0, 197) + "...";
    return s;
}

// The value of a "$patch" directive in a map, or "" when there is none.
inline std::string patch_directive(const boost::json::object& o) {
    const auto* d = o.if_contains(kPatchDirective);
    if (!d) return {};
    if (!d->is_string())
        throw PatchError("invalid strategic merge patch: \"$patch\" must be a string, got " + short_json(*d));
    std::string s(d->get_string());
    if (s != "replace" && s != "delete" && s != "merge")
        throw PatchError("invalid strategic merge patch: unknown \"$patch\" directive \"" + s +
                         "\" (expected replace, delete or merge)");
    return s;
}

inline bool strategic_merge_map(boost::json::object& original, const boost::json::object& patch, const StrategicType* type);
inline void strategic_merge_list(boost::json::array& original, const boost::json::array& patch, const StrategicField* field);

// A patch value placed where the original has nothing: directives still apply (and vanish).
// nullopt when the value deletes itself ("$patch": "delete").
inline std::optional<boost::json::value> strategic_fresh(const boost::json::value& patch, const StrategicField* field) {
    if (const auto* o = patch.if_object()) {
        boost::json::object out;
        if (strategic_merge_map(out, *o, field ? field->type : nullptr)) return std::nullopt;
        return boost::json::value(std::move(out));
    }
    if (const auto* a = patch.if_array()) {
        boost::json::array out;
        strategic_merge_list(out, *a, field);
        return boost::json::value(std::move(out));
    }
    return patch;
}

// Merges `patch` into `original`; true when the map asked to be deleted.
inline bool strategic_merge_map(boost::json::object& original, const boost::json::object& patch,
                                const StrategicType* type) {
    auto directive = patch_directive(patch);
    if (directive == "delete") return true;
    if (directive == "replace") {
        original.clear();
        boost::json::object rest = patch;
        rest.erase(kPatchDirective);
        return strategic_merge_map(original, rest, type);
    }

    if (const auto* rk = patch.if_contains(kRetainKeys)) {
        if (!rk->is_array()) throw PatchError("invalid strategic merge patch: \"$retainKeys\" must be a list of field names");
        std::vector<std::string> keep;
        for (const auto& k : rk->get_array()) {
            if (!k.is_string()) throw PatchError("invalid strategic merge patch: \"$retainKeys\" must be a list of field names");
            keep.emplace_back(k.get_string());
        }
        auto kept = [&](std::string_view k) { return std::find(keep.begin(), keep.end(), k) != keep.end(); };
        for (const auto& kv : patch) {
            auto k = std::string_view(kv.key());
            if (kv.value().is_null() || k.starts_with('$')) continue;
            if (!kept(k))
                throw PatchError("invalid strategic merge patch: field \"" + std::string(k) +
                                 "\" is set but missing from \"$retainKeys\"");
        }
        std::vector<std::string> drop;
        for (const auto& kv : original)
            if (!kept(kv.key())) drop.emplace_back(kv.key());
        for (const auto& k : drop) original.erase(k);
    }

    auto field_of = [&](std::string_view k) -> const StrategicField* {
        if (!type) return nullptr;
        auto it = type->fields.find(k);
        return it == type->fields.end() ? nullptr : &it->second;
    };

    // Deletions from primitive sets first, so a value both deleted and added stays added.
    for (const auto& kv : patch) {
        auto k = std::string_view(kv.key());
        if (!k.starts_with(kDeleteFromPrimitiveList)) continue;
        auto field = k.substr(kDeleteFromPrimitiveList.size());
        if (!kv.value().is_array())
            throw PatchError("invalid strategic merge patch: \"" + std::string(k) + "\" must be a list");
        auto* target = original.if_contains(field);
        if (!target || !target->is_array()) continue;
        auto& arr = target->get_array();
        for (auto it = arr.begin(); it != arr.end();) {
            bool gone = false;
            for (const auto& d : kv.value().get_array())
                if (json_equal(*it, d)) gone = true;
            it = gone ? arr.erase(it) : it + 1;
        }
    }

    for (const auto& kv : patch) {
        auto k = std::string_view(kv.key());
        if (k == kPatchDirective || k == kRetainKeys || k.starts_with(kDeleteFromPrimitiveList)) continue;
        if (k.starts_with(kSetElementOrder)) {
            // Order hints are accepted but not applied: the emulator keeps server order.
            if (!kv.value().is_array())
                throw PatchError("invalid strategic merge patch: \"" + std::string(k) + "\" must be a list");
            continue;
        }
        if (k.starts_with('$'))
            throw PatchError("invalid strategic merge patch: unknown directive \"" + std::string(k) + "\"");
        const auto& pv = kv.value();
        if (pv.is_null()) {
            original.erase(k);
            continue;
        }
        const auto* field = field_of(k);
        auto* ov = original.if_contains(k);
        if (ov && ov->is_object() && pv.is_object()) {
            if (strategic_merge_map(ov->get_object(), pv.get_object(), field ? field->type : nullptr)) original.erase(k);
        } else if (ov && ov->is_array() && pv.is_array()) {
            strategic_merge_list(ov->get_array(), pv.get_array(), field);
        } else if (auto fresh = strategic_fresh(pv, field)) {
            original[k] = std::move(*fresh);
        } else {
            original.erase(k);
        }
    }
    return false;
}

inline void strategic_merge_list(boost::json::array& original, const boost::json::array& patch,
                                 const StrategicField* field) {
    const StrategicField* item_field = nullptr;
    StrategicField item_holder;
    if (field) {
        item_holder = StrategicField{false, {}, field->type};
        item_field = &item_holder;
    }
    auto fresh_items = [&](const boost::json::array& items) {
        boost::json::array out;
        for (const auto& it : items) {
            if (const auto* o = it.if_object(); o && patch_directive(*o) == "replace" && o->size() == 1) continue;
            if (auto v = strategic_fresh(it, item_field)) out.push_back(std::move(*v));
        }
        return out;
    };

    if (!field || !field->merge_list) {
        original = fresh_items(patch);
        return;
    }
    // {"$patch": "replace"} as an item replaces the whole list with the other items.
    for (const auto& it : patch) {
        if (const auto* o = it.if_object(); o && patch_directive(*o) == "replace") {
            original = fresh_items(patch);
            return;
        }
    }
    if (field->merge_key.empty()) {
        for (const auto& it : patch) {
            if (it.is_object())
                throw PatchError("invalid strategic merge patch: a list of primitives cannot contain the object " +
                                 short_json(it));
            bool present = false;
            for (const auto& o : original)
                if (json_equal(o, it)) present = true;
            if (!present) original.push_back(it);
        }
        return;
    }
    const auto& key = field->merge_key;
    for (const auto& it : patch) {
        const auto* po = it.if_object();
        if (!po)
            throw PatchError("invalid strategic merge patch: the list merges by \"" + key +
                             "\" but holds the non-object " + short_json(it));
        auto directive = patch_directive(*po);
        const auto* kv = po->if_contains(key);
        if (!kv) throw PatchError("map: " + short_json(it) + " does not contain declared merge key: " + key);
        auto same = [&](const boost::json::value& o) {
            const auto* oo = o.if_object();
            const auto* ok = oo ? oo->if_contains(key) : nullptr;
            return ok && json_equal(*ok, *kv);
        };
        if (directive == "delete") {
            for (auto o = original.begin(); o != original.end();) o = same(*o) ? original.erase(o) : o + 1;
            continue;
        }
        bool merged = false;
        for (auto& o : original) {
            if (!same(o)) continue;
            strategic_merge_map(o.get_object(), *po, field->type);
            merged = true;
            break;
        }
        if (!merged)
            if (auto v = strategic_fresh(it, item_field)) original.push_back(std::move(*v));
    }
}

} // namespace patch_detail

/// The merge schema of a built-in kind, or nullptr for kinds (custom resources) that have none.
inline const StrategicType* strategic_schema(std::string_view kind) {
    const auto& k = patch_detail::strategic_schemas().kinds;
    auto it = k.find(kind);
    return it == k.end() ? nullptr : it->second;
}

/// Applies a Kubernetes strategic merge patch for `kind`: lists tagged patchStrategy=merge
/// merge by their key (containers by name, conditions by type, ...), other lists are replaced;
/// directives $patch (replace/delete/merge), $retainKeys, $deleteFromPrimitiveList/<f> apply;
/// $setElementOrder/<f> is accepted and ignored. An unknown kind merges like a JSON merge patch
/// with directives still applied.
inline boost::json::value apply_strategic_merge_patch(boost::json::value target, const boost::json::value& patch,
                                                      std::string_view kind) {
    if (!patch.is_object()) throw PatchError("a strategic merge patch must be a JSON object, got " + patch_detail::short_json(patch));
    if (!target.is_object()) target = boost::json::object();
    if (patch_detail::strategic_merge_map(target.get_object(), patch.get_object(), strategic_schema(kind)))
        return boost::json::object();
    return target;
}

} // namespace vck::sandbox
