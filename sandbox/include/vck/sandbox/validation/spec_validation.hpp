// SpecValidation: the small pieces kube-apiserver's validation of built-in kinds is made of,
// shared by pod_validation.hpp, volume_validation.hpp and core_validation.hpp: reading the
// decoded JSON (a part of another type than the API's was refused when decoded, so here it
// reads as absent), paths built the way field.Path prints them, and the generic checks of
// k8s.io/apimachinery/pkg/util/validation (DNS labels, qualified names, port numbers, enums),
// worded as apimachinery words them.
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/sandbox/validation/field_error.hpp>
#include <vck/sandbox/validation/object_name.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vck::sandbox::spec_validation {

namespace json = boost::json;
using Errors = std::vector<FieldError>;

inline const json::value* at(const json::value* v, std::string_view key) {
    const auto* o = v ? v->if_object() : nullptr;
    return o ? o->if_contains(key) : nullptr;
}
inline const json::object* object_at(const json::value* v, std::string_view key) {
    const auto* f = at(v, key);
    return f ? f->if_object() : nullptr;
}
inline const json::array* array_at(const json::value* v, std::string_view key) {
    const auto* f = at(v, key);
    return f ? f->if_array() : nullptr;
}
/// A string field; "" when absent (Go's zero value).
inline std::string str(const json::value* v, std::string_view key) {
    const auto* f = at(v, key);
    return f && f->is_string() ? std::string(f->get_string()) : std::string();
}
inline std::optional<std::int64_t> integer(const json::value* v, std::string_view key) {
    const auto* f = at(v, key);
    if (!f) return std::nullopt;
    if (f->is_int64()) return f->get_int64();
    if (f->is_uint64()) return static_cast<std::int64_t>(f->get_uint64());
    return std::nullopt;
}
/// Present and not null: a Go pointer or struct that is set.
inline bool has(const json::value* v, std::string_view key) {
    const auto* f = at(v, key);
    return f && !f->is_null();
}
/// Absent, null, "", [], {} and 0 are all Go's zero value / an unset pointer alike.
inline bool empty_value(const json::value* v) {
    if (!v || v->is_null()) return true;
    if (v->is_string()) return v->get_string().empty();
    if (v->is_array()) return v->get_array().empty();
    if (v->is_object()) return v->get_object().empty();
    return false;
}
/// Equality as Go's DeepEqual sees the typed structs: a field absent and a field at its
/// zero value ({} / [] / "" / null) are the same.
inline bool same(const json::value* a, const json::value* b) {
    if (empty_value(a) && empty_value(b)) return true;
    if (!a || !b) return false;
    if (a->is_object() && b->is_object()) {
        const auto &x = a->get_object(), &y = b->get_object();
        for (const auto& kv : x)
            if (!same(&kv.value(), y.if_contains(kv.key()))) return false;
        for (const auto& kv : y)
            if (!x.contains(kv.key()) && !empty_value(&kv.value())) return false;
        return true;
    }
    if (a->is_array() && b->is_array()) {
        const auto &x = a->get_array(), &y = b->get_array();
        if (x.size() != y.size()) return false;
        for (std::size_t i = 0; i < x.size(); ++i)
            if (!same(&x[i], &y[i])) return false;
        return true;
    }
    if (a->is_number() && b->is_number()) return a->to_number<double>() == b->to_number<double>();
    return *a == *b;
}

inline std::string child(const std::string& path, std::string_view name) {
    return path.empty() ? std::string(name) : path + "." + std::string(name);
}
inline std::string index(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }
inline std::string key(const std::string& path, std::string_view k) { return path + "[" + std::string(k) + "]"; }

inline json::value sv(std::string_view s) { return json::value(json::string(s)); }

/// parent.key, when present, is not negative ("must be greater than or equal to 0").
inline Errors non_negative(const json::value* parent, std::string_view key, const std::string& parent_path) {
    if (auto v = integer(parent, key); v && *v < 0)
        return {field::invalid(child(parent_path, key), json::value(*v), "must be greater than or equal to 0")};
    return {};
}

inline void append(Errors& to, Errors more) {
    for (auto& e : more) to.push_back(std::move(e));
}

/// validation.InclusiveRangeError.
inline std::string inclusive_range(std::int64_t lo, std::int64_t hi) {
    return "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", inclusive";
}

/// A field that must be a DNS-1123 label: Required when empty, Invalid otherwise.
inline Errors dns_label(const std::string& value, const std::string& path) {
    if (value.empty()) return {field::required(path)};
    return validate_dns1123_label(value, path);
}

/// ValidateLabels: every key a qualified name, every value a label value; errors at `path`.
inline Errors labels_map(const json::object* m, const std::string& path) {
    Errors errs;
    if (!m) return errs;
    std::vector<std::pair<std::string_view, std::string_view>> sorted;
    for (const auto& [k, v] : *m)
        sorted.emplace_back(std::string_view(k), v.is_string() ? std::string_view(v.get_string()) : "");
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [k, v] : sorted) {
        if (auto p = api::qualified_name_problem(k); !p.empty()) errs.push_back(field::invalid(path, sv(k), p));
        if (auto p = api::label_value_problem(v); !p.empty()) errs.push_back(field::invalid(path, sv(v), p));
    }
    return errs;
}

/// An enum field: Required when empty (unless it may be), NotSupported outside `allowed`
/// (listed in the order the real server lists them).
inline Errors one_of(const json::value* parent, std::string_view name, const std::string& path,
                     const std::vector<std::string>& allowed, bool required = true) {
    auto v = str(parent, name);
    if (v.empty()) return required ? Errors{field::required(path)} : Errors{};
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
        return {field::not_supported(path, sv(v), allowed)};
    return {};
}

/// validation.IsValidPortNum.
inline Errors port_number(std::int64_t port, const std::string& path) {
    if (port < 1 || port > 65535) return {field::invalid(path, json::value(port), inclusive_range(1, 65535))};
    return {};
}

/// The top-level keys whose values differ (the zero value and absence count as equal).
inline std::vector<std::string> changed_keys(const json::value* a, const json::value* b) {
    std::vector<std::string> out;
    const auto* x = a ? a->if_object() : nullptr;
    const auto* y = b ? b->if_object() : nullptr;
    auto consider = [&](std::string_view k) {
        if (std::find(out.begin(), out.end(), k) != out.end()) return;
        if (!same(x ? x->if_contains(k) : nullptr, y ? y->if_contains(k) : nullptr)) out.emplace_back(k);
    };
    if (x)
        for (const auto& kv : *x) consider(kv.key());
    if (y)
        for (const auto& kv : *y) consider(kv.key());
    std::sort(out.begin(), out.end());
    return out;
}

/// What follows a Forbidden immutability error: a go-cmp-like account of the changed
/// top-level fields of `type` (Go field names, JSON values), not go-cmp's exact text.
inline std::string cmp_diff(std::string_view type, const json::value& before, const json::value& after) {
    std::string out = "  " + std::string(type) + "{\n";
    for (const auto& k : changed_keys(&before, &after)) {
        std::string go_name = k;
        go_name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(go_name[0])));
        if (const auto* v = at(&before, k); !empty_value(v)) out += "- \t" + go_name + ": " + json::serialize(*v) + ",\n";
        if (const auto* v = at(&after, k); !empty_value(v)) out += "+ \t" + go_name + ": " + json::serialize(*v) + ",\n";
    }
    return out + "  }\n";
}

/// apimachinery's ValidateImmutableField: "field is immutable" at `path` when they differ.
inline Errors immutable(const json::value* now, const json::value* before, const std::string& path) {
    if (same(now, before)) return {};
    return {field::invalid(path, now ? *now : json::value(nullptr), "field is immutable")};
}

} // namespace vck::sandbox::spec_validation
