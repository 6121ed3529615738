// Conversions between API structs and Boost.JSON values, through tag_invoke.
// A struct opts in with BOOST_DESCRIBE_STRUCT; each described member maps to the JSON key
// of the same name (a trailing '_' is dropped, for C++ keywords: namespace_, operator_).
// Guarantees: keys the struct does not model are kept in its `unknown` member (when it has
// one) and written back, so a read-modify-write never drops fields the server sent; empty
// optionals, strings, containers and null values are omitted on write (Go's omitempty);
// a value of the wrong type raises DecodeError naming the field path ("spec.replicas").
// from_json, to_json and decode_json (json_decoder.hpp) convert every described struct this
// way, whatever its namespace: an operator's own custom-resource types need nothing more.
// (json::value_to/value_from find these overloads by argument-dependent lookup, so only for
// structs in vck::api; elsewhere they would use Boost.JSON's own described-struct
// conversion, which refuses keys the struct does not model and writes empty fields.)
#pragma once

#include <boost/describe.hpp>
#include <boost/json.hpp>
#include <boost/mp11/algorithm.hpp>

#include <concepts>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace vck::api {

namespace json = boost::json;

/// A JSON document that does not have the shape its type needs. `what()` names the path.
class DecodeError : public std::runtime_error {
public:
    DecodeError(std::string path, std::string problem)
        : std::runtime_error(path.empty() ? problem : path + ": " + problem),
          path_(std::move(path)), problem_(std::move(problem)) {}
    const std::string& path() const noexcept { return path_; }
    const std::string& problem() const noexcept { return problem_; }
    /// The same problem one level further out: "spec" + "replicas" -> "spec.replicas".
    DecodeError within(std::string_view outer) const {
        std::string p(outer);
        if (!path_.empty()) p += (path_.front() == '[' ? "" : ".") + path_;
        return DecodeError(std::move(p), problem_);
    }

private:
    std::string path_;
    std::string problem_;
};

template <class T>
concept Described = boost::describe::has_describe_members<T>::value;

namespace detail {

template <Described T>
T read_described(const json::value& jv);
template <Described T>
void write_described(json::value& jv, const T& t);

constexpr std::string_view json_key(std::string_view member) {
    if (!member.empty() && member.back() == '_') member.remove_suffix(1);
    return member;
}

template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};

template <class T>
bool is_empty(const T& v) {
    if constexpr (is_optional<T>::value) return !v.has_value();
    else if constexpr (std::is_same_v<T, json::value>) return v.is_null();
    else if constexpr (requires { v.empty(); }) return v.empty();
    else return false;
}

inline const char* kind_name(const json::value& v) {
    switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "boolean";
    case json::kind::int64:
    case json::kind::uint64: return "integer";
    case json::kind::double_: return "number";
    case json::kind::string: return "string";
    case json::kind::array: return "array";
    case json::kind::object: return "object";
    }
    return "value";
}

template <class T>
void read_value(const json::value& v, T& out) {
    if constexpr (is_optional<T>::value) {
        typename T::value_type inner{};
        read_value(v, inner);
        out = std::move(inner);
    } else if constexpr (std::is_same_v<T, json::value>) {
        out = v;
    } else if constexpr (std::is_same_v<T, json::object>) {
        if (!v.is_object()) throw DecodeError("", std::string("expected object, got ") + kind_name(v));
        out = v.get_object();
    } else if constexpr (std::is_same_v<T, std::string>) {
        if (!v.is_string()) throw DecodeError("", std::string("expected string, got ") + kind_name(v));
        out.assign(v.get_string().data(), v.get_string().size());
    } else if constexpr (std::is_same_v<T, bool>) {
        if (!v.is_bool()) throw DecodeError("", std::string("expected boolean, got ") + kind_name(v));
        out = v.get_bool();
    } else if constexpr (std::is_integral_v<T>) {
        std::error_code ec;
        auto n = v.to_number<T>(ec);
        if (ec) throw DecodeError("", std::string("expected integer, got ") + kind_name(v));
        out = n;
    } else if constexpr (std::is_floating_point_v<T>) {
        if (!v.is_number()) throw DecodeError("", std::string("expected number, got ") + kind_name(v));
        out = v.to_number<T>();
    } else if constexpr (requires { typename T::mapped_type; }) {
        if (!v.is_object()) throw DecodeError("", std::string("expected object, got ") + kind_name(v));
        out.clear();
        if constexpr (requires { out.reserve(std::size_t{}); }) out.reserve(v.get_object().size());
        for (const auto& kv : v.get_object()) {
            if (kv.value().is_null()) continue;
            typename T::mapped_type m{};
            try {
                read_value(kv.value(), m);
            } catch (const DecodeError& e) {
                throw e.within(std::string(kv.key()));
            }
            out.emplace(std::string(kv.key()), std::move(m));
        }
    } else if constexpr (requires { out.push_back(std::declval<typename T::value_type>()); }) {
        if (!v.is_array()) throw DecodeError("", std::string("expected array, got ") + kind_name(v));
        out.clear();
        std::size_t i = 0;
        for (const auto& e : v.get_array()) {
            typename T::value_type item{};
            try {
                read_value(e, item);
            } catch (const DecodeError& err) {
                throw err.within("[" + std::to_string(i) + "]");
            }
            out.push_back(std::move(item));
            ++i;
        }
    } else if constexpr (Described<T>) {
        out = read_described<T>(v);
    } else {
        out = json::value_to<T>(v);
    }
}

/// Whether T is a described struct or holds them (in optionals, sequences or maps): what
/// write_value converts itself rather than through json::value_from.
template <class T>
constexpr bool holds_described() {
    if constexpr (is_optional<T>::value) return holds_described<typename T::value_type>();
    else if constexpr (Described<T>) return true;
    else if constexpr (std::is_same_v<T, json::value> || std::is_same_v<T, json::object> || std::is_same_v<T, std::string>)
        return false;
    else if constexpr (requires { typename T::mapped_type; }) return holds_described<typename T::mapped_type>();
    else if constexpr (requires(const T& c) {
                           typename T::value_type;
                           c.begin();
                       })
        return holds_described<typename T::value_type>();
    else return false;
}

template <class T>
void write_value(json::value& jv, const T& v) {
    if constexpr (is_optional<T>::value) {
        if (v) write_value(jv, *v);
        else jv = nullptr;
    } else if constexpr (Described<T>) {
        write_described(jv, v);
    } else if constexpr (holds_described<T>() && requires { typename T::mapped_type; }) {
        json::object o(jv.storage());
        for (const auto& [k, m] : v) write_value(o[k], m);
        jv = std::move(o);
    } else if constexpr (holds_described<T>()) {
        json::array a(jv.storage());
        a.reserve(v.size());
        for (const auto& e : v) write_value(a.emplace_back(nullptr), e);
        jv = std::move(a);
    } else {
        jv = json::value_from(v, jv.storage());
    }
}

} // namespace detail

/// Decodes `v` as T, raising DecodeError with the field path on a shape mismatch.
template <class T>
T from_json(const json::value& v) {
    T out{};
    detail::read_value(v, out);
    return out;
}

/// `v` as JSON, allocated from `sp` (the default heap when none is given).
template <class T>
json::value to_json(const T& v, json::storage_ptr sp = {}) {
    json::value jv(std::move(sp));
    detail::write_value(jv, v);
    return jv;
}

template <Described T>
void tag_invoke(json::value_from_tag, json::value& jv, const T& t) {
    detail::write_described(jv, t);
}

template <Described T>
T tag_invoke(json::value_to_tag<T>, const json::value& jv) {
    return detail::read_described<T>(jv);
}

template <Described T>
void detail::write_described(json::value& jv, const T& t) {
    json::object o(jv.storage());
    if constexpr (requires { t.unknown; }) o = t.unknown;
    boost::mp11::mp_for_each<boost::describe::describe_members<T, boost::describe::mod_public | boost::describe::mod_inherited>>(
        [&](auto D) {
            const auto& field = t.*D.pointer;
            auto key = detail::json_key(D.name);
            if (detail::is_empty(field)) {
                o.erase(key);
                return;
            }
            detail::write_value(o[key], field);
        });
    jv = std::move(o);
}

template <Described T>
T detail::read_described(const json::value& jv) {
    if (!jv.is_object())
        throw DecodeError("", std::string("expected object, got ") + detail::kind_name(jv));
    const auto& o = jv.get_object();
    T t{};
    using Members = boost::describe::describe_members<T, boost::describe::mod_public | boost::describe::mod_inherited>;
    if constexpr (requires { t.unknown; }) {
        // Only the keys T does not model are copied. (Copying the whole object and erasing the
        // modelled keys deep-copied every nested level once per level, and each emptied
        // `unknown` kept a hash table sized for all the keys: a third of a cached object.)
        for (const auto& kv : o) {
            bool modelled = false;
            boost::mp11::mp_for_each<Members>([&](auto D) { modelled = modelled || detail::json_key(D.name) == kv.key(); });
            if (!modelled) t.unknown.emplace(kv.key(), kv.value());
        }
    }
    boost::mp11::mp_for_each<Members>(
        [&](auto D) {
            auto key = detail::json_key(D.name);
            const json::value* p = o.if_contains(key);
            if (!p || p->is_null()) return;
            try {
                detail::read_value(*p, t.*D.pointer);
            } catch (const DecodeError& e) {
                throw e.within(key);
            } catch (const std::exception& e) {
                throw DecodeError(std::string(key), e.what());
            }
        });
    return t;
}

/// Parses text as JSON, raising DecodeError ("invalid JSON: ...") instead of system_error.
inline json::value parse(std::string_view text) {
    boost::system::error_code ec;
    auto v = json::parse(text, ec);
    if (ec) throw DecodeError("", "invalid JSON: " + ec.message());
    return v;
}

/// The string at a dotted path of nested objects ("metadata.name"), or "" when absent.
inline std::string_view string_at(const json::value& v, std::initializer_list<std::string_view> path) {
    const json::value* cur = &v;
    for (auto key : path) {
        const auto* o = cur->if_object();
        if (!o) return {};
        cur = o->if_contains(key);
        if (!cur) return {};
    }
    if (const auto* s = cur->if_string()) return {s->data(), s->size()};
    return {};
}

} // namespace vck::api
