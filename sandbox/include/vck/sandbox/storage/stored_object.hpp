// The metadata of a stored object, read and written as ObjectStore keeps objects: whole JSON
// documents. Readers tolerate any shape (a missing or mistyped field reads as empty, 0 or
// none), since objects reach them before validation; writers create metadata when it is missing.
#pragma once

#include <boost/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace vck::sandbox::stored_object {

namespace json = boost::json;

inline json::object& meta(json::value& obj) {
    auto& o = obj.get_object();
    auto& m = o["metadata"];
    if (!m.is_object()) m = json::object();
    return m.get_object();
}
inline const json::object* meta(const json::value& obj) {
    const auto* o = obj.if_object();
    if (!o) return nullptr;
    const auto* m = o->if_contains("metadata");
    return m ? m->if_object() : nullptr;
}
inline std::string str(const json::object* o, std::string_view key) {
    if (!o) return {};
    const auto* v = o->if_contains(key);
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
}
inline std::string meta_str(const json::value& obj, std::string_view key) { return str(meta(obj), key); }
inline std::vector<std::string> finalizers(const json::value& obj) {
    std::vector<std::string> out;
    if (const auto* m = meta(obj))
        if (const auto* f = m->if_contains("finalizers"); f && f->is_array())
            for (const auto& e : f->get_array())
                if (e.is_string()) out.emplace_back(e.get_string());
    return out;
}
inline void set_finalizers(json::value& obj, const std::vector<std::string>& fs) {
    auto& m = meta(obj);
    if (fs.empty()) {
        m.erase("finalizers");
        return;
    }
    json::array a;
    for (const auto& f : fs) a.emplace_back(f);
    m["finalizers"] = std::move(a);
}
inline bool deleting(const json::value& obj) { return !meta_str(obj, "deletionTimestamp").empty(); }
/// metadata.deletionGracePeriodSeconds (0 when absent).
inline std::int64_t deletion_grace(const json::value& obj) {
    if (const auto* m = meta(obj))
        if (const auto* g = m->if_contains("deletionGracePeriodSeconds"); g && (g->is_int64() || g->is_uint64()))
            return g->to_number<std::int64_t>();
    return 0;
}
/// The uids an object's ownerReferences name.
inline std::vector<std::string> owner_uids(const json::value& obj) {
    std::vector<std::string> out;
    if (const auto* m = meta(obj))
        if (const auto* refs = m->if_contains("ownerReferences"); refs && refs->is_array())
            for (const auto& ref : refs->get_array())
                if (auto uid = str(ref.if_object(), "uid"); !uid.empty()) out.push_back(std::move(uid));
    return out;
}
inline std::int64_t generation(const json::value& obj) {
    if (const auto* m = meta(obj))
        if (const auto* g = m->if_contains("generation"); g && g->is_number()) {
            std::error_code ec;
            auto n = g->to_number<std::int64_t>(ec);
            if (!ec) return n;
        }
    return 0;
}
/// The object without the parts that never count as a spec change.
inline json::value spec_part(const json::value& obj, bool ignore_status) {
    json::value v = obj;
    if (auto* o = v.if_object()) {
        o->erase("metadata");
        if (ignore_status) o->erase("status");
    }
    return v;
}
/// An object's key in its resource's bucket: "<namespace>/<name>", or the name alone.
inline std::string object_key(std::string_view ns, std::string_view name) {
    return ns.empty() ? std::string(name) : std::string(ns) + "/" + std::string(name);
}

} // namespace vck::sandbox::stored_object
