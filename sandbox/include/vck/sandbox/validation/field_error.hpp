// FieldError: one field-level validation failure, worded exactly as kube-apiserver words it
// (k8s.io/apimachinery field.Error), and the 422 Invalid metav1.Status built from a list of
// them. Guarantees: `message` is "<field>: <body>" with the bad value rendered the way Go's
// fmt renders it (%q strings, %v numbers, %#v maps and slices), so clients that match on
// server messages see the same text from the emulator as from a real cluster.
#pragma once

#include <vck/api/meta.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace vck::sandbox {

struct FieldError {
    std::string reason;   // metav1 cause type: "FieldValueRequired", "FieldValueInvalid", ...
    std::string field;    // "spec.volumeConfigs[0].replicas"
    std::string message;  // "spec.volumeConfigs[0].replicas: Invalid value: 0: ..."

    /// The message without its "<field>: " prefix: what a Status cause carries.
    std::string body() const {
        std::string prefix = field + ": ";
        if (message.compare(0, prefix.size(), prefix) == 0) return message.substr(prefix.size());
        return message;
    }
};

/// Go's fmt rendering of decoded JSON values (what the apiserver holds as interface{}).
namespace go {

/// strconv.Quote: double quotes, Go escapes, printable UTF-8 kept as is.
inline std::string quote(std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out = "\"";
    for (std::size_t i = 0; i < s.size();) {
        auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\a': out += "\\a"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\v': out += "\\v"; break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    out += "\\x";
                    out += hex[c >> 4];
                    out += hex[c & 0xf];
                } else {
                    out += static_cast<char>(c);
                }
            }
            ++i;
            continue;
        }
        // Keep a well-formed multi-byte sequence; escape a stray byte as Go does.
        std::size_t len = c >= 0xf0 && c < 0xf8 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
        bool ok = len != 0 && i + len <= s.size();
        for (std::size_t k = 1; ok && k < len; ++k)
            ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
        if (ok) {
            out.append(s.substr(i, len));
            i += len;
        } else {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xf];
            ++i;
        }
    }
    out += '"';
    return out;
}

/// %v of a float64: shortest digits, exponent form below 1e-4 and from 1e+06 on ("1e+06").
inline std::string float_v(double d) {
    char sci[64];
    auto r = std::to_chars(sci, sci + sizeof sci, d, std::chars_format::scientific);
    std::string_view s(sci, static_cast<std::size_t>(r.ptr - sci));
    auto e = s.find('e');
    int exp = 0;
    if (e != std::string_view::npos) {
        auto digits = s.substr(e + 1);
        if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
        std::from_chars(digits.data(), digits.data() + digits.size(), exp);
    }
    if (d == 0 || (exp >= -4 && exp < 6)) {
        char fix[400];
        auto f = std::to_chars(fix, fix + sizeof fix, d, std::chars_format::fixed);
        return std::string(fix, f.ptr);
    }
    return std::string(s);
}

inline std::string number_v(const boost::json::value& v) {
    if (v.is_int64()) return std::to_string(v.get_int64());
    if (v.is_uint64()) return float_v(static_cast<double>(v.get_uint64()));  // Go decodes it as float64
    return float_v(v.get_double());
}

/// %#v of a value nested in map[string]interface{} / []interface{}.
inline std::string go_syntax(const boost::json::value& v) {
    switch (v.kind()) {
    case boost::json::kind::null: return "interface {}(nil)";
    case boost::json::kind::bool_: return v.get_bool() ? "true" : "false";
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
    case boost::json::kind::double_: return number_v(v);
    case boost::json::kind::string: return quote(v.get_string());
    case boost::json::kind::array: {
        std::string out = "[]interface {}{";
        bool first = true;
        for (const auto& e : v.get_array()) {
            if (!first) out += ", ";
            first = false;
            out += go_syntax(e);
        }
        return out + "}";
    }
    case boost::json::kind::object: {
        // fmt prints map keys sorted.
        std::vector<std::pair<std::string_view, const boost::json::value*>> kv;
        for (const auto& e : v.get_object()) kv.emplace_back(e.key(), &e.value());
        std::sort(kv.begin(), kv.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        std::string out = "map[string]interface {}{";
        bool first = true;
        for (const auto& [k, val] : kv) {
            if (!first) out += ", ";
            first = false;
            out += quote(k) + ":" + go_syntax(*val);
        }
        return out + "}";
    }
    }
    return "";
}

/// %#v of a []string (`[]string{"a", "b"}`).
inline std::string string_slice(const std::vector<std::string>& v) {
    std::string out = "[]string{";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + quote(v[i]);
    return out + "}";
}
/// %#v of a []string held as JSON: `[]string(nil)` when absent or not an array.
inline std::string string_slice(const boost::json::value* v) {
    if (!v || !v->is_array()) return "[]string(nil)";
    std::vector<std::string> s;
    for (const auto& e : v->get_array()) s.emplace_back(e.is_string() ? std::string(e.get_string()) : std::string());
    return string_slice(s);
}

/// %#v of a map[string]string held as JSON (`map[string]string{"a":"b"}`, keys sorted;
/// `map[string]string(nil)` when absent).
inline std::string string_map(const boost::json::object* m) {
    if (!m) return "map[string]string(nil)";
    std::vector<std::pair<std::string, std::string>> kv;
    for (const auto& e : *m) kv.emplace_back(e.key(), e.value().is_string() ? std::string(e.value().get_string()) : "");
    std::sort(kv.begin(), kv.end());
    std::string out = "map[string]string{";
    for (std::size_t i = 0; i < kv.size(); ++i) out += (i ? ", " : "") + quote(kv[i].first) + ":" + quote(kv[i].second);
    return out + "}";
}

/// How field.Error prints a bad value: %q strings, %v scalars, %#v composites, "null" for nil.
inline std::string bad_value(const boost::json::value& v) {
    switch (v.kind()) {
    case boost::json::kind::null: return quote("null");
    case boost::json::kind::string: return quote(v.get_string());
    case boost::json::kind::bool_: return v.get_bool() ? "true" : "false";
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
    case boost::json::kind::double_: return number_v(v);
    default: return go_syntax(v);
    }
}

} // namespace go

/// Constructors named after k8s.io/apimachinery/pkg/util/validation/field's.
namespace field {

namespace detail {
inline FieldError make(std::string reason, std::string path, std::string body) {
    std::string message = path + ": " + body;
    return FieldError{std::move(reason), std::move(path), std::move(message)};
}
inline std::string with_detail(std::string body, std::string_view detail) {
    if (!detail.empty()) body += ": " + std::string(detail);
    return body;
}
} // namespace detail

inline FieldError required(std::string path, std::string_view detail = {}) {
    return detail::make("FieldValueRequired", std::move(path), detail::with_detail("Required value", detail));
}
inline FieldError forbidden(std::string path, std::string_view detail) {
    return detail::make("FieldValueForbidden", std::move(path), detail::with_detail("Forbidden", detail));
}
inline FieldError invalid(std::string path, const boost::json::value& value, std::string_view detail) {
    return detail::make("FieldValueInvalid", std::move(path),
                        detail::with_detail("Invalid value: " + go::bad_value(value), detail));
}
/// The value did not have the schema's type; worded like Invalid, typed FieldValueTypeInvalid.
inline FieldError type_invalid(std::string path, const boost::json::value& value, std::string_view detail) {
    return detail::make("FieldValueTypeInvalid", std::move(path),
                        detail::with_detail("Invalid value: " + go::bad_value(value), detail));
}
inline FieldError not_supported(std::string path, const boost::json::value& value,
                                const std::vector<std::string>& supported) {
    std::string detail;
    if (!supported.empty()) {
        detail = "supported values: ";
        for (std::size_t i = 0; i < supported.size(); ++i) {
            if (i) detail += ", ";
            detail += go::quote(supported[i]);
        }
    }
    return detail::make("FieldValueNotSupported", std::move(path),
                        detail::with_detail("Unsupported value: " + go::bad_value(value), detail));
}
inline FieldError not_found(std::string path, const boost::json::value& value) {
    return detail::make("FieldValueNotFound", std::move(path), "Not found: " + go::bad_value(value));
}
inline FieldError duplicate(std::string path, const boost::json::value& value) {
    return detail::make("FieldValueDuplicate", std::move(path), "Duplicate value: " + go::bad_value(value));
}
/// The value itself is never echoed for too-long errors. (Older servers
/// said "must have at most N bytes"; this is the current wording.)
inline FieldError too_long(std::string path, std::int64_t max_length) {
    return detail::make("FieldValueTooLong", std::move(path),
                        max_length >= 0 ? "Too long: may not be more than " + std::to_string(max_length) + " bytes"
                                        : std::string("Too long: value is too long"));
}
inline FieldError too_many(std::string path, std::int64_t actual, std::int64_t max) {
    std::string body = "Too many";
    if (actual >= 0) body += ": " + std::to_string(actual);
    body += max >= 0 ? ": must have at most " + std::to_string(max) + " items" : ": too many items";
    return detail::make("FieldValueTooMany", std::move(path), std::move(body));
}

/// Invalid and Duplicate with a bad value of a typed Go struct, already rendered as %#v.
inline FieldError invalid_go(std::string path, const std::string& rendered, std::string_view detail) {
    return detail::make("FieldValueInvalid", std::move(path), detail::with_detail("Invalid value: " + rendered, detail));
}
inline FieldError duplicate_go(std::string path, const std::string& rendered, std::string_view detail = {}) {
    return detail::make("FieldValueDuplicate", std::move(path), detail::with_detail("Duplicate value: " + rendered, detail));
}

} // namespace field

/// The 422 Invalid Status kube-apiserver returns for an object that failed validation:
/// message `Kind.group "name" is invalid: <error>` (several errors in [a, b], repeats
/// dropped), one cause per error carrying the message without its field prefix.
inline api::Status invalid_status(std::string_view kind, std::string_view group, std::string_view name,
                                  const std::vector<FieldError>& errors) {
    api::Status st;
    st.status = "Failure";
    st.reason = "Invalid";
    st.code = 422;
    std::string qualified(kind);
    if (!group.empty()) qualified += "." + std::string(group);
    st.message = qualified + " " + go::quote(name) + " is invalid";
    std::vector<std::string> unique;
    std::set<std::string> seen;
    for (const auto& e : errors)
        if (seen.insert(e.message).second) unique.push_back(e.message);
    if (unique.size() == 1) {
        st.message += ": " + unique.front();
    } else if (!unique.empty()) {
        st.message += ": [";
        for (std::size_t i = 0; i < unique.size(); ++i) st.message += (i ? ", " : "") + unique[i];
        st.message += "]";
    }
    api::StatusDetails details;
    details.name = std::string(name);
    details.group = std::string(group);
    details.kind = std::string(kind);
    for (const auto& e : errors) details.causes.push_back(api::StatusCause{e.reason, e.body(), e.field});
    st.details = std::move(details);
    return st;
}

} // namespace vck::sandbox
