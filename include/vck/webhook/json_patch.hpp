// JSON Patch (RFC 6902) from a difference: create_json_patch(from, to) gives operations that,
// applied in order to `from`, give a document equal to `to` (numbers compare by value, member
// order is ignored). It emits only add, remove and replace, with RFC 6901 pointers ('~' as
// "~0", '/' as "~1"); objects are compared member by member, arrays element by element, then
// grown or shrunk at the end; an empty patch means no difference. It is minimal for changes in
// place, not for an insertion in the middle of an array (every later element is replaced),
// which is still correct. apply_json_patch_leniently replays such a patch on another document
// that resembles `from` (see its comment). No networking here.
#pragma once

#include <vck/api/json_pointer.hpp>

#include <boost/json.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vck::webhook {

namespace json = boost::json;

using api::escape_json_pointer_token;

/// JSON equality by value: 1, 1u and 1.0 are equal; object member order does not matter.
inline bool json_same(const json::value& a, const json::value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_double() || b.is_double()) return a.to_number<double>() == b.to_number<double>();
        if (a.is_int64() && b.is_int64()) return a.get_int64() == b.get_int64();
        if (a.is_uint64() && b.is_uint64()) return a.get_uint64() == b.get_uint64();
        const auto& s = a.is_int64() ? a : b;
        const auto& u = a.is_int64() ? b : a;
        return s.get_int64() >= 0 && static_cast<std::uint64_t>(s.get_int64()) == u.get_uint64();
    }
    if (a.kind() != b.kind()) return false;
    if (a.is_array()) {
        const auto& x = a.get_array();
        const auto& y = b.get_array();
        if (x.size() != y.size()) return false;
        for (std::size_t i = 0; i < x.size(); ++i)
            if (!json_same(x[i], y[i])) return false;
        return true;
    }
    if (a.is_object()) {
        const auto& x = a.get_object();
        const auto& y = b.get_object();
        if (x.size() != y.size()) return false;
        for (const auto& kv : x) {
            const auto* other = y.if_contains(kv.key());
            if (!other || !json_same(kv.value(), *other)) return false;
        }
        return true;
    }
    return a == b;
}

namespace detail {

inline void patch_op(json::array& ops, std::string_view op, const std::string& path, const json::value* value) {
    json::object o;
    o["op"] = op;
    o["path"] = path;
    if (value) o["value"] = *value;
    ops.emplace_back(std::move(o));
}

inline void diff_into(json::array& ops, const std::string& path, const json::value& from, const json::value& to) {
    if (json_same(from, to)) return;
    if (from.is_object() && to.is_object()) {
        const auto& f = from.get_object();
        const auto& t = to.get_object();
        for (const auto& kv : f)
            if (!t.contains(kv.key())) patch_op(ops, "remove", path + "/" + escape_json_pointer_token(kv.key()), nullptr);
        for (const auto& kv : t) {
            auto child = path + "/" + escape_json_pointer_token(kv.key());
            if (const auto* old = f.if_contains(kv.key())) diff_into(ops, child, *old, kv.value());
            else patch_op(ops, "add", child, &kv.value());
        }
        return;
    }
    if (from.is_array() && to.is_array()) {
        const auto& f = from.get_array();
        const auto& t = to.get_array();
        std::size_t common = std::min(f.size(), t.size());
        for (std::size_t i = 0; i < common; ++i) diff_into(ops, path + "/" + std::to_string(i), f[i], t[i]);
        for (std::size_t i = common; i < t.size(); ++i) patch_op(ops, "add", path + "/" + std::to_string(i), &t[i]);
        // From the end, so that each index is still the last one when it is removed.
        for (std::size_t i = f.size(); i > common; --i) patch_op(ops, "remove", path + "/" + std::to_string(i - 1), nullptr);
        return;
    }
    patch_op(ops, "replace", path, &to);  // a scalar changed, or the type did ("" is the whole document)
}

inline bool array_index(std::string_view tok, std::size_t& out) {
    if (tok.empty() || tok.size() > 18) return false;
    std::size_t n = 0;
    for (char c : tok) {
        if (c < '0' || c > '9') return false;
        n = n * 10 + static_cast<std::size_t>(c - '0');
    }
    out = n;
    return true;
}

} // namespace detail

/// Operations that turn `from` into `to` (an empty array when they are equal).
inline json::array create_json_patch(const json::value& from, const json::value& to) {
    json::array ops;
    detail::diff_into(ops, "", from, to);
    return ops;
}

/// Replays add, remove and replace operations (as create_json_patch makes them) on `target`,
/// which need not be the document the patch was computed from but one that resembles it: a
/// missing parent along an add or replace is created as an object, a replace of a missing
/// member adds it, an add or replace past an array's end appends, a remove of something
/// missing does nothing. This is for carrying changes made to one rendering of an object
/// (a typed struct's JSON, which omits empty and unmodelled values) over to another (the raw
/// JSON the API server sent) without touching what the change did not touch. Throws
/// std::invalid_argument for other operations, or a path through a scalar.
inline void apply_json_patch_leniently(json::value& target, const json::array& ops) {
    for (const auto& opv : ops) {
        const auto* op = opv.if_object();
        if (!op) throw std::invalid_argument("a patch operation is not an object");
        const auto* name = op->if_contains("op");
        const auto* path = op->if_contains("path");
        if (!name || !name->is_string() || !path || !path->is_string())
            throw std::invalid_argument("a patch operation needs string op and path");
        std::string_view kind = name->get_string();
        if (kind != "add" && kind != "remove" && kind != "replace")
            throw std::invalid_argument("patch operation \"" + std::string(kind) + "\" is not add, remove or replace");
        bool removing = kind == "remove";
        const json::value* value = op->if_contains("value");
        if (!removing && !value) throw std::invalid_argument("patch operation " + std::string(kind) + " has no value");
        auto toks = api::parse_json_pointer(path->get_string());
        if (toks.empty()) {
            if (!removing) target = *value;
            else target = nullptr;
            continue;
        }
        json::value* cur = &target;
        for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
            const auto& tok = toks[i];
            if (cur->is_null()) {
                if (removing) {
                    cur = nullptr;
                    break;
                }
                *cur = json::object();
            }
            if (auto* o = cur->if_object()) {
                auto* next = o->if_contains(tok);
                if (!next) {
                    if (removing) {
                        cur = nullptr;
                        break;
                    }
                    next = &o->emplace(tok, json::object()).first->value();
                }
                cur = next;
            } else if (auto* a = cur->if_array()) {
                std::size_t idx = 0;
                if (!detail::array_index(tok, idx)) throw std::invalid_argument("\"" + tok + "\" is not an array index");
                if (idx >= a->size()) {
                    if (removing) {
                        cur = nullptr;
                        break;
                    }
                    a->emplace_back(json::object());
                    idx = a->size() - 1;
                }
                cur = &(*a)[idx];
            } else {
                throw std::invalid_argument("patch path " + std::string(path->get_string()) + " goes through a scalar");
            }
        }
        if (!cur) continue;  // removing something already missing
        if (cur->is_null()) {
            if (removing) continue;
            *cur = json::object();
        }
        const auto& last = toks.back();
        if (auto* o = cur->if_object()) {
            if (removing) o->erase(last);
            else (*o)[last] = *value;
        } else if (auto* a = cur->if_array()) {
            std::size_t idx = 0;
            bool end = last == "-";
            if (!end && !detail::array_index(last, idx)) throw std::invalid_argument("\"" + last + "\" is not an array index");
            if (removing) {
                if (!end && idx < a->size()) a->erase(a->begin() + static_cast<std::ptrdiff_t>(idx));
            } else if (end || idx >= a->size()) {
                a->push_back(*value);
            } else if (kind == "add") {
                a->insert(a->begin() + static_cast<std::ptrdiff_t>(idx), *value);
            } else {
                (*a)[idx] = *value;
            }
        } else {
            throw std::invalid_argument("patch path " + std::string(path->get_string()) + " goes through a scalar");
        }
    }
}

} // namespace vck::webhook
