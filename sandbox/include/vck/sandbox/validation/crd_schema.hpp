// StructuralSchema: a CustomResourceDefinition version's openAPIV3Schema, applied to custom
// resources the way kube-apiserver applies it on create/update/patch: prune unknown fields,
// apply defaults, then validate. Guarantees: from_json rejects schemas the real server would
// not accept as structural (with a message naming the schema path); validate reports every
// failure as the apiserver words it (kube-openapi validation converted to field errors, then
// list-set/list-map duplicates, then embedded-resource checks), in a stable order (object
// properties alphabetically, then missing required fields). metadata at the root is the
// store's business: never pruned, defaulted or validated here. CEL rules are not evaluated.
#pragma once

#include <vck/api/json.hpp>
#include <vck/sandbox/validation/field_error.hpp>

#include <boost/json.hpp>

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

namespace crd_schema_detail {

namespace json = boost::json;

/// One node of the schema tree, immutable once parsed.
struct SchemaNode {
    std::vector<std::string> types;  // empty: any type (junctor sub-schemas, preserve-unknown)
    bool nullable = false;
    bool int_or_string = false;
    bool preserve_unknown = false;
    bool embedded = false;
    std::map<std::string, std::shared_ptr<const SchemaNode>> properties;  // sorted: stable error order
    std::shared_ptr<const SchemaNode> items;
    std::shared_ptr<const SchemaNode> additional;  // additionalProperties as a schema
    std::optional<bool> additional_allowed;  // additionalProperties as a bool
    std::vector<std::string> required;
    std::optional<json::array> enumeration;
    std::optional<double> minimum, maximum, multiple_of;
    bool exclusive_minimum = false, exclusive_maximum = false;
    std::optional<std::int64_t> min_length, max_length, min_items, max_items, min_properties, max_properties;
    std::string pattern;
    std::optional<std::regex> pattern_re;
    std::string format;
    std::string list_type;  // "", "atomic", "set", "map"
    std::vector<std::string> list_map_keys;
    std::optional<json::value> default_value;
    std::vector<std::shared_ptr<const SchemaNode>> all_of, any_of, one_of;
    std::shared_ptr<const SchemaNode> not_;
};

inline const char* kind_name(const json::value& v) {
    switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "boolean";
    case json::kind::int64: return "integer";
    // Go decodes an integer beyond int64 as a float64: a number.
    case json::kind::uint64: return v.get_uint64() > static_cast<std::uint64_t>(INT64_MAX) ? "number" : "integer";
    case json::kind::double_: return "number";
    case json::kind::string: return "string";
    case json::kind::array: return "array";
    case json::kind::object: return "object";
    }
    return "value";
}

[[noreturn]] inline void reject(const std::string& where, const std::string& problem) {
    throw std::invalid_argument("CRD schema " + where + ": " + problem);
}

inline bool bool_at(const json::object& o, std::string_view key, const std::string& where) {
    const auto* v = o.if_contains(key);
    if (!v) return false;
    if (!v->is_bool()) reject(where + "." + std::string(key), std::string("must be a boolean, got ") + kind_name(*v));
    return v->get_bool();
}

inline std::optional<double> number_at(const json::object& o, std::string_view key, const std::string& where) {
    const auto* v = o.if_contains(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) reject(where + "." + std::string(key), std::string("must be a number, got ") + kind_name(*v));
    return v->to_number<double>();
}

inline std::optional<std::int64_t> count_at(const json::object& o, std::string_view key, const std::string& where) {
    const auto* v = o.if_contains(key);
    if (!v) return std::nullopt;
    std::error_code ec;
    auto n = v->to_number<std::int64_t>(ec);
    if (ec || n < 0) reject(where + "." + std::string(key), "must be a non-negative integer");
    return n;
}

inline std::string string_at(const json::object& o, std::string_view key, const std::string& where) {
    const auto* v = o.if_contains(key);
    if (!v) return {};
    if (!v->is_string()) reject(where + "." + std::string(key), std::string("must be a string, got ") + kind_name(*v));
    return std::string(v->get_string());
}

inline std::shared_ptr<const SchemaNode> parse(const json::value& v, const std::string& where, bool junctor);

inline std::vector<std::shared_ptr<const SchemaNode>> parse_list(const json::object& o, std::string_view key,
                                                           const std::string& where) {
    std::vector<std::shared_ptr<const SchemaNode>> out;
    const auto* v = o.if_contains(key);
    if (!v) return out;
    std::string at = where + "." + std::string(key);
    if (!v->is_array()) reject(at, "must be an array of schemas");
    std::size_t i = 0;
    for (const auto& e : v->get_array()) out.push_back(parse(e, at + "[" + std::to_string(i++) + "]", true));
    return out;
}

/// `junctor`: inside allOf/anyOf/oneOf/not, where structural schemas need no type.
inline std::shared_ptr<const SchemaNode> parse(const json::value& v, const std::string& where, bool junctor) {
    if (!v.is_object()) reject(where, std::string("must be a schema object, got ") + kind_name(v));
    const auto& o = v.get_object();
    auto n = std::make_shared<SchemaNode>();

    if (o.contains("$ref")) reject(where + ".$ref", "references are not supported in CRD schemas");
    std::string type = string_at(o, "type", where);
    if (!type.empty()) {
        static const std::vector<std::string> known{"object", "array", "string", "integer", "number", "boolean"};
        if (std::find(known.begin(), known.end(), type) == known.end())
            reject(where + ".type", "unsupported type \"" + type + "\" (want object, array, string, integer, number or boolean)");
        n->types.push_back(type);
    }
    n->nullable = bool_at(o, "nullable", where);
    n->int_or_string = bool_at(o, "x-kubernetes-int-or-string", where);
    if (n->int_or_string) {
        if (!type.empty()) reject(where + ".type", "must be empty if x-kubernetes-int-or-string is true");
        n->types = {"integer", "string"};
    }
    n->preserve_unknown = bool_at(o, "x-kubernetes-preserve-unknown-fields", where);
    n->embedded = bool_at(o, "x-kubernetes-embedded-resource", where);
    if (n->embedded && type != "object")
        reject(where + ".type", "must be object if x-kubernetes-embedded-resource is true");
    if (!junctor && n->types.empty() && !n->preserve_unknown)
        reject(where + ".type", "must not be empty for specified fields (or set x-kubernetes-preserve-unknown-fields or x-kubernetes-int-or-string)");

    if (const auto* p = o.if_contains("properties")) {
        if (!p->is_object()) reject(where + ".properties", "must be an object of schemas");
        for (const auto& kv : p->get_object())
            n->properties.emplace(std::string(kv.key()),
                                  parse(kv.value(), where + ".properties[" + std::string(kv.key()) + "]", junctor));
    }
    if (const auto* it = o.if_contains("items")) {
        if (it->is_array()) reject(where + ".items", "must be a single schema, not an array of schemas");
        n->items = parse(*it, where + ".items", junctor);
    }
    if (type == "array" && !n->items && !junctor) reject(where + ".items", "must be specified for type array");
    if (const auto* ap = o.if_contains("additionalProperties")) {
        if (ap->is_bool()) n->additional_allowed = ap->get_bool();
        else n->additional = parse(*ap, where + ".additionalProperties", junctor);
        if (!n->properties.empty() && (n->additional || n->additional_allowed.value_or(false)))
            reject(where + ".additionalProperties", "additionalProperties and properties are mutual exclusive");
    }
    if (const auto* r = o.if_contains("required")) {
        if (!r->is_array()) reject(where + ".required", "must be an array of strings");
        for (const auto& e : r->get_array()) {
            if (!e.is_string()) reject(where + ".required", "must be an array of strings");
            n->required.emplace_back(e.get_string());
        }
    }
    if (const auto* e = o.if_contains("enum")) {
        if (!e->is_array()) reject(where + ".enum", "must be an array");
        n->enumeration = e->get_array();
    }
    n->minimum = number_at(o, "minimum", where);
    n->maximum = number_at(o, "maximum", where);
    n->multiple_of = number_at(o, "multipleOf", where);
    if (n->multiple_of && *n->multiple_of <= 0) reject(where + ".multipleOf", "must be greater than zero");
    n->exclusive_minimum = bool_at(o, "exclusiveMinimum", where);
    n->exclusive_maximum = bool_at(o, "exclusiveMaximum", where);
    n->min_length = count_at(o, "minLength", where);
    n->max_length = count_at(o, "maxLength", where);
    n->min_items = count_at(o, "minItems", where);
    n->max_items = count_at(o, "maxItems", where);
    n->min_properties = count_at(o, "minProperties", where);
    n->max_properties = count_at(o, "maxProperties", where);
    if (bool_at(o, "uniqueItems", where))
        reject(where + ".uniqueItems", "cannot be set to true since the runtime complexity becomes quadratic");
    n->pattern = string_at(o, "pattern", where);
    if (!n->pattern.empty()) {
        try {
            n->pattern_re.emplace(n->pattern, std::regex::ECMAScript);
        } catch (const std::regex_error& err) {
            reject(where + ".pattern", "\"" + n->pattern + "\" is not a valid regular expression: " + err.what());
        }
    }
    n->format = string_at(o, "format", where);
    if (const auto* d = o.if_contains("default")) n->default_value = *d;

    n->list_type = string_at(o, "x-kubernetes-list-type", where);
    if (!n->list_type.empty()) {
        if (n->list_type != "atomic" && n->list_type != "set" && n->list_type != "map")
            reject(where + ".x-kubernetes-list-type", "unsupported value \"" + n->list_type + "\" (want atomic, set or map)");
        if (type != "array") reject(where + ".x-kubernetes-list-type", "must only be used if type is array");
    }
    if (const auto* k = o.if_contains("x-kubernetes-list-map-keys")) {
        if (!k->is_array() || k->get_array().empty())
            reject(where + ".x-kubernetes-list-map-keys", "must be a non-empty array of strings");
        for (const auto& e : k->get_array()) {
            if (!e.is_string()) reject(where + ".x-kubernetes-list-map-keys", "must be a non-empty array of strings");
            n->list_map_keys.emplace_back(e.get_string());
        }
        if (n->list_type != "map")
            reject(where + ".x-kubernetes-list-map-keys", "must only be used if x-kubernetes-list-type is map");
    }
    if (n->list_type == "map") {
        if (n->list_map_keys.empty())
            reject(where + ".x-kubernetes-list-map-keys", "must not be empty if x-kubernetes-list-type is map");
        if (!n->items || n->items->types != std::vector<std::string>{"object"})
            reject(where + ".items.type", "must be object if parent array's x-kubernetes-list-type is map");
        for (const auto& key : n->list_map_keys)
            if (!n->items->properties.count(key))
                reject(where + ".x-kubernetes-list-map-keys", "entry \"" + key + "\" must be a property of items");
    }

    n->all_of = parse_list(o, "allOf", where);
    n->any_of = parse_list(o, "anyOf", where);
    n->one_of = parse_list(o, "oneOf", where);
    if (const auto* nt = o.if_contains("not")) n->not_ = parse(*nt, where + ".not", true);
    return n;
}

// ---- validation ------------------------------------------------------------------------

/// Whether the schema's "integer" takes the value: an int64, or a float64 that is whole and
/// within +-(2^53 - 1) (go-openapi's IsFloat64AJSONInteger; Go reads 1e23 or 2^64 - 1 as a
/// float64, so neither is an integer to the real server).
inline bool is_integral(const json::value& v) {
    if (v.is_int64()) return true;
    if (v.is_uint64()) return v.get_uint64() <= 9007199254740991ull;
    if (v.is_double()) {
        double d = v.get_double();
        return std::isfinite(d) && std::fabs(d) <= 9007199254740991.0 && d == std::trunc(d);
    }
    return false;
}

inline bool type_matches(const SchemaNode& s, const json::value& v) {
    if (s.types.empty()) return true;
    for (const auto& t : s.types) {
        if (t == "integer" && is_integral(v)) return true;
        if (t == "number" && v.is_number()) return true;
        if (t == kind_name(v)) return true;
    }
    return false;
}

inline std::string joined_types(const SchemaNode& s) {
    std::string out;
    for (const auto& t : s.types) out += (out.empty() ? "" : ",") + t;
    return out;
}

/// Go's json.Marshal spelling, used for non-string enum values in "supported values".
inline std::string json_text(const json::value& v) {
    if (v.is_double() && is_integral(v) && std::fabs(v.get_double()) < 1e21) {
        char buf[64];
        auto r = std::to_chars(buf, buf + sizeof buf, v.get_double(), std::chars_format::fixed);
        return std::string(buf, r.ptr);
    }
    return json::serialize(v);
}

inline bool values_equal(const json::value& a, const json::value& b) {
    if (a.is_number() && b.is_number()) {
        if (!a.is_double() && !b.is_double()) return a == b;
        return a.to_number<double>() == b.to_number<double>();
    }
    return a == b;
}

inline std::size_t rune_count(std::string_view s) {
    std::size_t n = 0;
    for (unsigned char c : s)
        if ((c & 0xc0) != 0x80) ++n;
    return n;
}

inline bool format_ok(const std::string& format, std::string_view s) {
    auto matches = [&](const std::regex& re) { return std::regex_match(s.begin(), s.end(), re); };
    if (format == "uuid" || format == "uuid3" || format == "uuid4" || format == "uuid5") {
        static const std::regex re("^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$");
        return matches(re);
    }
    if (format == "date") {
        static const std::regex re("^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])$");
        return matches(re);
    }
    if (format == "date-time" || format == "datetime") {
        static const std::regex re(
            "^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])[Tt ]([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(\\.\\d+)?([Zz]|[+-]\\d{2}:\\d{2})$");
        return matches(re);
    }
    if (format == "ipv4" || format == "ipv6") {
        std::string str(s);
        unsigned char buf[16];
        return inet_pton(format == "ipv4" ? AF_INET : AF_INET6, str.c_str(), buf) == 1;
    }
    if (format == "cidr") {
        auto slash = s.find('/');
        if (slash == std::string_view::npos) return false;
        std::string ip(s.substr(0, slash));
        unsigned char buf[16];
        bool v4 = inet_pton(AF_INET, ip.c_str(), buf) == 1;
        if (!v4 && inet_pton(AF_INET6, ip.c_str(), buf) != 1) return false;
        auto bits = s.substr(slash + 1);
        int n = -1;
        auto r = std::from_chars(bits.data(), bits.data() + bits.size(), n);
        return !bits.empty() && r.ptr == bits.data() + bits.size() && n >= 0 && n <= (v4 ? 32 : 128);
    }
    if (format == "byte") {
        static const std::regex re("^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$");
        return matches(re);
    }
    if (format == "hostname") {
        static const std::regex re(
            "^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$");
        return s.size() <= 255 && matches(re);
    }
    return true;  // formats the apiserver does not check (or strips) pass
}

/// Walks one value against one schema node, collecting errors in the apiserver's three passes.
struct Walker {
    std::vector<FieldError> schema;    // kube-openapi schema validation
    std::vector<FieldError> lists;     // x-kubernetes-list-type set/map uniqueness
    std::vector<FieldError> embedded;  // x-kubernetes-embedded-resource apiVersion/kind

    // kube-openapi names a value by a path that starts with "." under additionalProperties at
    // the root; the field path drops that dot, and the root itself is the nil path.
    static std::string field_of(const std::string& name) {
        std::string f = !name.empty() && name.front() == '.' ? name.substr(1) : name;
        return f.empty() ? "<nil>" : f;
    }
    static std::string child(const std::string& path, std::string_view key) {
        return path.empty() ? std::string(key) : path + "." + std::string(key);
    }

    void enum_check(const SchemaNode& s, const json::value& v, const std::string& path) {
        if (!s.enumeration) return;
        for (const auto& e : *s.enumeration)
            if (!v.is_null() && values_equal(v, e)) return;
        std::vector<std::string> supported;
        for (const auto& e : *s.enumeration)
            supported.push_back(e.is_string() ? std::string(e.get_string()) : json_text(e));
        schema.push_back(field::not_supported(field_of(path), v, supported));
    }

    /// The number of schema errors `v` has against `s`, for the junctors.
    static std::vector<FieldError> errors_against(const SchemaNode& s, const json::value& v, const std::string& path) {
        Walker w;
        w.walk(s, v, path, false);
        return std::move(w.schema);
    }

    void junctors(const SchemaNode& s, const json::value& v, const std::string& path) {
        std::string subject = path + " must";
        if (!s.all_of.empty()) {
            bool all = true;
            for (const auto& sub : s.all_of) {
                auto errs = errors_against(*sub, v, path);
                if (!errs.empty()) all = false;
                schema.insert(schema.end(), errs.begin(), errs.end());
            }
            if (!all) schema.push_back(field::invalid("<nil>", json::string(""), subject + " validate all the schemas (allOf)"));
        }
        if (!s.any_of.empty()) {
            std::optional<std::vector<FieldError>> best;
            bool any = false;
            for (const auto& sub : s.any_of) {
                auto errs = errors_against(*sub, v, path);
                if (errs.empty()) {
                    any = true;
                    break;
                }
                if (!best || errs.size() < best->size()) best = std::move(errs);
            }
            if (!any) {
                schema.push_back(field::invalid("<nil>", json::string(""), subject + " validate at least one schema (anyOf)"));
                schema.insert(schema.end(), best->begin(), best->end());
            }
        }
        if (!s.one_of.empty()) {
            std::size_t valid = 0;
            std::optional<std::vector<FieldError>> best;
            for (const auto& sub : s.one_of) {
                auto errs = errors_against(*sub, v, path);
                if (errs.empty()) ++valid;
                else if (!best || errs.size() < best->size()) best = std::move(errs);
            }
            if (valid != 1) {
                std::string why = valid == 0 ? "Found none valid" : "Found " + std::to_string(valid) + " valid alternatives";
                schema.push_back(field::invalid("<nil>", json::string(""),
                                                subject + " validate one and only one schema (oneOf). " + why));
                if (valid == 0) schema.insert(schema.end(), best->begin(), best->end());
            }
        }
        if (s.not_ && errors_against(*s.not_, v, path).empty())
            schema.push_back(field::invalid("<nil>", json::string(""), subject + " not validate the schema (not)"));
    }

    void string_checks(const SchemaNode& s, const json::string& str, const json::value& v, const std::string& path) {
        std::string subject = path + " in body";
        auto runes = static_cast<std::int64_t>(rune_count(str));
        // kube-openapi stops at the first failing string constraint.
        if (s.max_length && runes > *s.max_length) {
            schema.push_back(field::too_long(field_of(path), *s.max_length));
        } else if (s.min_length && runes < *s.min_length) {
            schema.push_back(field::invalid(field_of(path), v,
                subject + " should be at least " + std::to_string(*s.min_length) + " chars long"));
        } else if (s.pattern_re && !std::regex_search(str.begin(), str.end(), *s.pattern_re)) {
            schema.push_back(field::invalid(field_of(path), v, subject + " should match '" + s.pattern + "'"));
        }
        if (!s.format.empty() && !format_ok(s.format, str))
            schema.push_back(field::type_invalid(field_of(path), v,
                subject + " must be of type " + s.format + ": " + go::quote(str)));
    }

    void number_checks(const SchemaNode& s, const json::value& v, const std::string& path) {
        std::string subject = path + " in body";
        double d = v.to_number<double>();
        if (s.multiple_of) {
            double q = d / *s.multiple_of;
            if (q != std::trunc(q))
                schema.push_back(field::invalid(field_of(path), v,
                    subject + " should be a multiple of " + go::float_v(*s.multiple_of)));
        }
        if (s.minimum && (s.exclusive_minimum ? d <= *s.minimum : d < *s.minimum))
            schema.push_back(field::invalid(field_of(path), v,
                subject + (s.exclusive_minimum ? " should be greater than " : " should be greater than or equal to ") +
                go::float_v(*s.minimum)));
        if (s.maximum && (s.exclusive_maximum ? d >= *s.maximum : d > *s.maximum))
            schema.push_back(field::invalid(field_of(path), v,
                subject + (s.exclusive_maximum ? " should be less than " : " should be less than or equal to ") +
                go::float_v(*s.maximum)));
    }

    void list_checks(const SchemaNode& s, const json::array& a, const std::string& path) {
        auto fp = [&](std::size_t i) { return field_of(path) + "[" + std::to_string(i) + "]"; };
        if (s.list_type == "set") {
            for (std::size_t i = 0; i < a.size(); ++i)
                for (std::size_t j = 0; j < i; ++j)
                    if (values_equal(a[i], a[j]) && a[i].kind() == a[j].kind()) {
                        lists.push_back(field::duplicate(fp(i), a[i]));
                        break;
                    }
        } else if (s.list_type == "map") {
            std::vector<std::optional<json::object>> keys(a.size());
            for (std::size_t i = 0; i < a.size(); ++i) {
                if (a[i].is_null()) continue;
                if (!a[i].is_object()) {
                    lists.push_back(field::invalid(fp(i), a[i], "must be an object for an array of list-type map"));
                    continue;
                }
                json::object key;
                for (const auto& k : s.list_map_keys) {
                    if (const auto* kv = a[i].get_object().if_contains(k)) key[k] = *kv;
                    else if (auto p = s.items->properties.find(k);
                             p != s.items->properties.end() && p->second->default_value)
                        key[k] = *p->second->default_value;  // an absent key counts as its default
                }
                for (std::size_t j = 0; j < i; ++j)
                    if (keys[j] && *keys[j] == key) {
                        lists.push_back(field::duplicate(fp(i), key));
                        break;
                    }
                keys[i] = std::move(key);
            }
        }
    }

    void embedded_checks(const json::object& o, const std::string& path) {
        std::string base = field_of(path);
        for (std::string_view key : {"apiVersion", "kind"}) {
            std::string fp = base + "." + std::string(key);
            const auto* v = o.if_contains(key);
            if (!v) embedded.push_back(field::required(fp, "must not be empty"));
            else if (!v->is_string()) embedded.push_back(field::invalid(fp, *v, "must be a string"));
            else if (v->get_string().empty()) embedded.push_back(field::invalid(fp, *v, "must not be empty"));
        }
    }

    void walk(const SchemaNode& s, const json::value& v, const std::string& path, bool root) {
        std::string subject = path + " in body";
        if (v.is_null()) {
            if (!s.types.empty() && !s.nullable)
                schema.push_back(field::type_invalid(field_of(path), json::string("null"),
                    subject + " must be of type " + joined_types(s) + ": \"null\""));
            if (!s.nullable) enum_check(s, v, path);
            return;
        }
        if (!type_matches(s, v))
            schema.push_back(field::type_invalid(field_of(path), json::string(kind_name(v)),
                subject + " must be of type " + joined_types(s) + ": " + go::quote(kind_name(v))));
        junctors(s, v, path);
        if (const auto* str = v.if_string()) string_checks(s, *str, v, path);
        if (v.is_number()) number_checks(s, v, path);
        if (const auto* a = v.if_array()) {
            if (s.items)
                for (std::size_t i = 0; i < a->size(); ++i)
                    walk(*s.items, (*a)[i], path + "[" + std::to_string(i) + "]", false);
            auto size = static_cast<std::int64_t>(a->size());
            if (s.min_items && size < *s.min_items)
                schema.push_back(field::invalid(field_of(path), json::value(size),
                    subject + " should have at least " + std::to_string(*s.min_items) + " items"));
            if (s.max_items && size > *s.max_items) schema.push_back(field::too_many(field_of(path), size, *s.max_items));
            list_checks(s, *a, path);
        }
        enum_check(s, v, path);
        if (const auto* o = v.if_object()) walk_object(s, *o, path, root);
    }

    void walk_object(const SchemaNode& s, const json::object& o, const std::string& path, bool root) {
        std::string subject = path + " in body";
        auto count = static_cast<std::int64_t>(o.size());
        if (s.min_properties && count < *s.min_properties) {
            schema.push_back(field::invalid(field_of(path), json::value(count),
                subject + " should have at least " + std::to_string(*s.min_properties) + " properties"));
            return;
        }
        if (s.max_properties && count > *s.max_properties) {
            schema.push_back(field::too_many(field_of(path), count, *s.max_properties));
            return;
        }
        bool embedded_meta = s.embedded || root;
        auto implicit = [&](std::string_view key) {
            return embedded_meta && (key == "apiVersion" || key == "kind" || key == "metadata");
        };
        if (s.additional_allowed == false) {
            for (const auto& kv : o)
                if (!s.properties.count(std::string(kv.key())) && !implicit(kv.key()))
                    schema.push_back(field::invalid(field_of(path), json::string(kv.key()),
                        path + "." + std::string(kv.key()) + " in body is a forbidden property"));
        } else if (s.additional) {
            std::vector<std::string_view> keys;
            for (const auto& kv : o)
                if (!s.properties.count(std::string(kv.key())) && !implicit(kv.key())) keys.push_back(kv.key());
            std::sort(keys.begin(), keys.end());
            for (auto k : keys) walk(*s.additional, o.at(k), path + "." + std::string(k), false);
        }
        for (const auto& [name, prop] : s.properties) {
            if (root && name == "metadata") continue;
            if (const auto* pv = o.if_contains(name)) walk(*prop, *pv, child(path, name), false);
        }
        for (const auto& r : s.required)
            if (!o.contains(r) && !(root && r == "metadata")) schema.push_back(field::required(field_of(path + "." + r)));
        if (s.embedded && !root) embedded_checks(o, path);
    }
};

/// The apiserver refuses a CRD whose defaults its own schema would reject.
inline void check_defaults(const SchemaNode& s, const std::string& where) {
    if (s.default_value) {
        Walker w;
        w.walk(s, *s.default_value, "default", false);
        if (!w.schema.empty()) reject(where + ".default", "invalid default value: " + w.schema.front().body());
    }
    for (const auto& [name, prop] : s.properties) check_defaults(*prop, where + ".properties[" + name + "]");
    if (s.items) check_defaults(*s.items, where + ".items");
    if (s.additional) check_defaults(*s.additional, where + ".additionalProperties");
}

// ---- pruning and defaulting ------------------------------------------------------------

/// `path` is the value's field path as the apiserver reports pruned fields ("spec.a[0].b");
/// each dropped field's path goes to `dropped` when it is given.
inline void prune(const SchemaNode* s, json::value& v, bool root, const std::string& path = {},
                  std::vector<std::string>* dropped = nullptr) {
    if (!s) return;
    if (auto* a = v.if_array()) {
        std::size_t i = 0;
        for (auto& e : *a) prune(s->items.get(), e, false, path + "[" + std::to_string(i++) + "]", dropped);
        return;
    }
    auto* o = v.if_object();
    if (!o) return;
    bool keep_meta = root || s->embedded;
    std::vector<std::string> drop;
    for (auto& kv : *o) {
        std::string key(kv.key());
        if (keep_meta && (key == "apiVersion" || key == "kind" || key == "metadata")) continue;
        std::string at = path.empty() ? key : path + "." + key;
        if (auto p = s->properties.find(key); p != s->properties.end()) prune(p->second.get(), kv.value(), false, at, dropped);
        else if (s->additional) prune(s->additional.get(), kv.value(), false, at, dropped);
        else if (!s->preserve_unknown && s->additional_allowed != true) {
            drop.push_back(key);
            if (dropped) dropped->push_back(std::move(at));
        }
    }
    for (const auto& k : drop) o->erase(k);
}

inline bool non_nullable_null(const json::value& v, const SchemaNode* s) { return v.is_null() && s && !s->nullable; }

/// A null the schema neither allows nor can default is dropped, as if it had not been sent.
inline void prune_nulls(const SchemaNode* s, json::value& v, bool root) {
    if (auto* a = v.if_array()) {
        for (auto& e : *a) prune_nulls(s ? s->items.get() : nullptr, e, false);
        return;
    }
    auto* o = v.if_object();
    if (!o) return;
    std::vector<std::string> drop;
    for (auto& kv : *o) {
        if (root && kv.key() == "metadata") continue;
        const SchemaNode* sub = nullptr;
        if (s) {
            if (auto p = s->properties.find(std::string(kv.key())); p != s->properties.end()) sub = p->second.get();
            else sub = s->additional.get();
        }
        if (non_nullable_null(kv.value(), sub) && !sub->default_value) drop.emplace_back(kv.key());
        else prune_nulls(sub, kv.value(), false);
    }
    for (const auto& k : drop) o->erase(k);
}

inline void apply_defaults(const SchemaNode* s, json::value& v, bool root) {
    if (!s) return;
    if (auto* a = v.if_array()) {
        const SchemaNode* items = s->items.get();
        for (auto& e : *a) {
            if (non_nullable_null(e, items) && items->default_value) e = *items->default_value;
            else apply_defaults(items, e, false);
        }
        return;
    }
    auto* o = v.if_object();
    if (!o) return;
    for (const auto& [name, prop] : s->properties) {
        if (!prop->default_value || (root && (name == "metadata" || name == "apiVersion" || name == "kind"))) continue;
        const auto* cur = o->if_contains(name);
        if (!cur || non_nullable_null(*cur, prop.get())) (*o)[name] = *prop->default_value;
    }
    // A default that is itself an object is defaulted further, as the apiserver does.
    for (auto& kv : *o) {
        if (root && kv.key() == "metadata") continue;
        if (auto p = s->properties.find(std::string(kv.key())); p != s->properties.end()) {
            apply_defaults(p->second.get(), kv.value(), false);
        } else if (s->additional) {
            if (non_nullable_null(kv.value(), s->additional.get()) && s->additional->default_value)
                kv.value() = *s->additional->default_value;
            else apply_defaults(s->additional.get(), kv.value(), false);
        }
    }
}

} // namespace crd_schema_detail

class StructuralSchema {
public:
    /// From a CRD version's schema.openAPIV3Schema. Throws std::invalid_argument naming the
    /// offending schema path when the schema is not structural or uses what is unsupported.
    static StructuralSchema from_json(const boost::json::value& openAPIV3Schema) {
        auto root = crd_schema_detail::parse(openAPIV3Schema, "openAPIV3Schema", false);
        if (root->types != std::vector<std::string>{"object"})
            crd_schema_detail::reject("openAPIV3Schema.type", "must be object at the root");
        crd_schema_detail::check_defaults(*root, "openAPIV3Schema");
        StructuralSchema s;
        s.root_ = std::move(root);
        return s;
    }

    /// The schema of one served version of a CustomResourceDefinition object
    /// (spec.versions[name == version].schema.openAPIV3Schema), or std::invalid_argument
    /// saying which part is missing.
    static StructuralSchema from_crd(const boost::json::value& crd, std::string_view version) {
        const auto* versions = crd.is_object() && crd.get_object().contains("spec") && crd.at("spec").is_object()
                                   ? crd.at("spec").get_object().if_contains("versions")
                                   : nullptr;
        if (!versions || !versions->is_array())
            throw std::invalid_argument("CustomResourceDefinition has no spec.versions list");
        for (const auto& v : versions->get_array()) {
            if (!v.is_object() || vck::api::string_at(v, {"name"}) != version) continue;
            const auto* schema = v.get_object().if_contains("schema");
            const auto* open_api = schema && schema->is_object() ? schema->get_object().if_contains("openAPIV3Schema") : nullptr;
            if (!open_api)
                throw std::invalid_argument("CustomResourceDefinition version \"" + std::string(version) +
                                            "\" has no schema.openAPIV3Schema");
            return from_json(*open_api);
        }
        throw std::invalid_argument("CustomResourceDefinition has no version \"" + std::string(version) + "\"");
    }

    /// Every failure of the whole object (apiVersion/kind/metadata included, metadata not
    /// looked into): schema errors, then list-set/map duplicates, then embedded resources.
    /// Call after prune and apply_defaults, as the apiserver does.
    std::vector<FieldError> validate(const boost::json::value& object) const {
        crd_schema_detail::Walker w;
        w.walk(*root_, object, "", true);
        std::vector<FieldError> out = std::move(w.schema);
        out.insert(out.end(), w.lists.begin(), w.lists.end());
        out.insert(out.end(), w.embedded.begin(), w.embedded.end());
        return out;
    }

    /// Drops fields the schema does not specify, except below x-kubernetes-preserve-unknown-
    /// fields or additionalProperties, and never apiVersion/kind/metadata at the root or of an
    /// x-kubernetes-embedded-resource. Returns the dropped fields' paths ("spec.a[0].b"),
    /// sorted, as the apiserver reports unknown fields of custom resources.
    std::vector<std::string> prune(boost::json::value& object) const {
        std::vector<std::string> dropped;
        crd_schema_detail::prune(root_.get(), object, true, {}, &dropped);
        std::sort(dropped.begin(), dropped.end());
        return dropped;
    }

    /// Fills absent fields (and non-nullable nulls) that have a `default`, inside objects that
    /// exist, recursing into what was just defaulted; drops other non-nullable nulls.
    void apply_defaults(boost::json::value& object) const {
        crd_schema_detail::prune_nulls(root_.get(), object, true);
        crd_schema_detail::apply_defaults(root_.get(), object, true);
    }

    /// What the apiserver does to a custom resource on create/update/patch, in its order:
    /// defaulting, pruning, then validation. Returns the errors (empty: admit `object`).
    std::vector<FieldError> admit(boost::json::value& object) const {
        apply_defaults(object);
        prune(object);
        return validate(object);
    }

private:
    std::shared_ptr<const crd_schema_detail::SchemaNode> root_;
};

} // namespace vck::sandbox
