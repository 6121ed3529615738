// Field validation (the fieldValidation query parameter of create, update and patch), as
// kube-apiserver 1.32 applies it: unknown and duplicate fields of a request are "strict
// decoding errors"; Strict refuses the write with all of them, Warn (the default when the
// parameter is absent) writes without the unknown fields and answers one Warning header per
// error, Ignore drops them silently. This header holds the pieces that know no store:
// - the parameter's values and the 422 the real server sends for any other;
// - duplicate_fields(): the duplicate keys of a JSON text with their field paths (Go's
//   decoder reports them; Boost.JSON keeps one of them silently, so the text is read again
//   with a basic_parser handler that only tracks keys: no JSON parser of our own);
// - prune_object_meta(): the unknown fields of metadata (ObjectMeta's fields are fixed);
// - the Warning header value and Go's encoding of a patched object (the "Invalid value" of a
//   patch refused under Strict).
// Paths are written as apimachinery writes them: "spec.a", "spec.list[0].b", "[0].op".
#pragma once

#include <vck/sandbox/validation/field_error.hpp>
#include <vck/sandbox/validation/store_error.hpp>

#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

enum class FieldValidation { Ignore, Warn, Strict };

/// The query parameter: "" is Warn (the server's default); nullopt for a value the server refuses.
inline std::optional<FieldValidation> parse_field_validation(std::string_view v) {
    if (v.empty() || v == "Warn") return FieldValidation::Warn;
    if (v == "Strict") return FieldValidation::Strict;
    if (v == "Ignore") return FieldValidation::Ignore;
    return std::nullopt;
}

/// The 422 for a refused value, from ValidateCreateOptions/UpdateOptions/PatchOptions:
/// `CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "x": ...`.
inline api::Status invalid_field_validation(std::string_view options_kind, std::string_view value) {
    return store_status::invalid(options_kind, "meta.k8s.io", "",
                                 {field::not_supported("fieldValidation", boost::json::string(value),
                                                       {"", "Ignore", "Strict", "Warn"})});
}

namespace field_validation_detail {

/// Tracks object keys and array indexes while Boost.JSON's basic_parser reads a text; records
/// "duplicate field" (and, for JSON patches, "unknown field" of an operation) in text order.
class KeyTracker {
public:
    static constexpr std::size_t max_object_size = std::numeric_limits<std::size_t>::max();
    static constexpr std::size_t max_array_size = std::numeric_limits<std::size_t>::max();
    static constexpr std::size_t max_key_size = std::numeric_limits<std::size_t>::max();
    static constexpr std::size_t max_string_size = std::numeric_limits<std::size_t>::max();

    bool json_patch = false;  // the text is a JSON patch: operations have op, path, from, value
    std::vector<std::string> errors;

    bool on_document_begin(boost::json::error_code&) { return true; }
    bool on_document_end(boost::json::error_code&) { return true; }
    bool on_array_begin(boost::json::error_code&) {
        frames_.push_back(Frame{false, {}, {}, 0});
        return true;
    }
    bool on_array_end(std::size_t, boost::json::error_code&) {
        frames_.pop_back();
        return value_done();
    }
    bool on_object_begin(boost::json::error_code&) {
        frames_.push_back(Frame{true, {}, {}, 0});
        return true;
    }
    bool on_object_end(std::size_t, boost::json::error_code&) {
        frames_.pop_back();
        return value_done();
    }
    bool on_string_part(boost::json::string_view, std::size_t, boost::json::error_code&) { return true; }
    bool on_string(boost::json::string_view, std::size_t, boost::json::error_code&) { return value_done(); }
    bool on_key_part(boost::json::string_view s, std::size_t, boost::json::error_code&) {
        key_.append(s.data(), s.size());
        return true;
    }
    bool on_key(boost::json::string_view s, std::size_t, boost::json::error_code&) {
        key_.append(s.data(), s.size());
        auto& f = frames_.back();
        std::string at = path() + (frames_.size() > 1 ? "." : "") + key_;
        if (!f.keys.insert(key_).second) record("duplicate field \"" + at + "\"");
        else if (json_patch && frames_.size() == 2 && !frames_.front().object &&
                 key_ != "op" && key_ != "path" && key_ != "from" && key_ != "value")
            record("unknown field \"" + at + "\"");
        f.key = std::move(key_);
        key_.clear();
        return true;
    }
    bool on_number_part(boost::json::string_view, boost::json::error_code&) { return true; }
    bool on_int64(std::int64_t, boost::json::string_view, boost::json::error_code&) { return value_done(); }
    bool on_uint64(std::uint64_t, boost::json::string_view, boost::json::error_code&) { return value_done(); }
    bool on_double(double, boost::json::string_view, boost::json::error_code&) { return value_done(); }
    bool on_bool(bool, boost::json::error_code&) { return value_done(); }
    bool on_null(boost::json::error_code&) { return value_done(); }
    bool on_comment_part(boost::json::string_view, boost::json::error_code&) { return true; }
    bool on_comment(boost::json::string_view, boost::json::error_code&) { return true; }

private:
    struct Frame {
        bool object;
        std::set<std::string> keys;
        std::string key;    // object: the key whose value is being read
        std::size_t index;  // array: the index of the element being read
    };
    /// The path of the value being read in the innermost frame's parent chain.
    std::string path() const {
        std::string out;
        for (std::size_t i = 0; i + 1 < frames_.size(); ++i) {
            const auto& f = frames_[i];
            if (f.object) out += (out.empty() ? "" : ".") + f.key;
            else out += "[" + std::to_string(f.index) + "]";
        }
        // Keys of the innermost frame are joined by the caller; a path that starts with an
        // index has no leading dot, one that starts with a key gets none either.
        return out;
    }
    bool value_done() {
        if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
        return true;
    }
    /// Go's decoder reports each distinct strict error once, at most 100 of them.
    void record(std::string e) {
        if (errors.size() >= 100 || std::find(errors.begin(), errors.end(), e) != errors.end()) return;
        errors.push_back(std::move(e));
    }

    std::vector<Frame> frames_;
    std::string key_;
};

} // namespace field_validation_detail

/// The strict decoding errors a JSON text carries by itself, in text order: `duplicate field
/// "spec.a"` (the path of the repeated key); for a JSON patch (`json_patch`) also `unknown
/// field "[0].x"` for an operation member other than op, path, from and value. Nothing for a
/// text that is not JSON (the caller's parse refuses it).
inline std::vector<std::string> duplicate_fields(std::string_view text, bool json_patch = false) {
    boost::json::basic_parser<field_validation_detail::KeyTracker> p{boost::json::parse_options{}};
    p.handler().json_patch = json_patch;
    boost::json::error_code ec;
    p.write_some(false, text.data(), text.size(), ec);
    if (ec) return {};
    return std::move(p.handler().errors);
}

namespace field_validation_detail {

/// ObjectMeta's fields (and those of its nested types), from the API reference.
struct MetaFields {
    std::set<std::string> top{"name",           "generateName",     "namespace",
                              "selfLink",       "uid",              "resourceVersion",
                              "generation",     "creationTimestamp", "deletionTimestamp",
                              "deletionGracePeriodSeconds", "labels", "annotations",
                              "ownerReferences", "finalizers",      "managedFields"};
    std::set<std::string> owner_reference{"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"};
    std::set<std::string> managed_fields_entry{"manager",    "operation", "apiVersion", "time",
                                               "fieldsType", "fieldsV1",  "subresource"};
};

inline void prune_keys(boost::json::object& o, const std::set<std::string>& known, const std::string& path,
                       std::vector<std::string>& dropped) {
    std::vector<std::string> drop;
    for (const auto& kv : o)
        if (!known.count(std::string(kv.key()))) drop.emplace_back(kv.key());
    for (const auto& k : drop) {
        dropped.push_back(path + "." + k);
        o.erase(k);
    }
}

} // namespace field_validation_detail

/// Drops the unknown fields of an object's metadata (top level, owner references, managed
/// fields entries) and returns their paths ("metadata.x", "metadata.ownerReferences[0].x"), as
/// the apiserver's ObjectMeta decoding of a custom resource does.
inline std::vector<std::string> prune_object_meta(boost::json::value& obj) {
    using namespace field_validation_detail;
    static const MetaFields known;
    std::vector<std::string> dropped;
    auto* o = obj.if_object();
    auto* m = o ? o->if_contains("metadata") : nullptr;
    if (!m || !m->is_object()) return dropped;
    prune_keys(m->get_object(), known.top, "metadata", dropped);
    auto nested = [&](const char* list, const std::set<std::string>& fields) {
        auto* a = m->get_object().if_contains(list);
        if (!a || !a->is_array()) return;
        std::size_t i = 0;
        for (auto& e : a->get_array()) {
            std::string at = std::string("metadata.") + list + "[" + std::to_string(i++) + "]";
            if (auto* eo = e.if_object()) prune_keys(*eo, fields, at, dropped);
        }
    };
    nested("ownerReferences", known.owner_reference);
    nested("managedFields", known.managed_fields_entry);
    return dropped;
}

/// "strict decoding error: a, b", as runtime.NewStrictDecodingError words several errors.
inline std::string strict_decoding_error(const std::vector<std::string>& errors) {
    std::string out = "strict decoding error: ";
    for (std::size_t i = 0; i < errors.size(); ++i) out += (i ? ", " : "") + errors[i];
    return out;
}

/// The value of a Warning response header for one warning text (RFC 7234: code 299, agent
/// "-", the text quoted with \ and " escaped), as the apiserver writes it.
inline std::string warning_header_value(std::string_view text) {
    std::string out = "299 - \"";
    for (char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

/// Go's %+v of a decoded JSON value (map[string]interface{} and the rest): how the apiserver
/// names a strategic merge patch it refuses: map[a:1 b:[x y]], keys sorted, nil as <nil>.
inline std::string go_value_v(const boost::json::value& v) {
    switch (v.kind()) {
    case boost::json::kind::null: return "<nil>";
    case boost::json::kind::bool_: return v.get_bool() ? "true" : "false";
    case boost::json::kind::string: return std::string(v.get_string());
    case boost::json::kind::array: {
        std::string out = "[";
        bool first = true;
        for (const auto& e : v.get_array()) {
            out += (first ? "" : " ") + go_value_v(e);
            first = false;
        }
        return out + "]";
    }
    case boost::json::kind::object: {
        std::vector<std::pair<std::string_view, const boost::json::value*>> kv;
        for (const auto& e : v.get_object()) kv.emplace_back(e.key(), &e.value());
        std::sort(kv.begin(), kv.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        std::string out = "map[";
        for (std::size_t i = 0; i < kv.size(); ++i)
            out += (i ? " " : "") + std::string(kv[i].first) + ":" + go_value_v(*kv[i].second);
        return out + "]";
    }
    default: return go::number_v(v);
    }
}

/// Go's json.Marshal of an unstructured object: compact, keys sorted, <, > and & escaped.
inline std::string go_json(const boost::json::value& v) {
    switch (v.kind()) {
    case boost::json::kind::object: {
        std::vector<std::pair<std::string_view, const boost::json::value*>> kv;
        for (const auto& e : v.get_object()) kv.emplace_back(e.key(), &e.value());
        std::sort(kv.begin(), kv.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        std::string out = "{";
        for (std::size_t i = 0; i < kv.size(); ++i)
            out += (i ? "," : "") + go_json(boost::json::string(kv[i].first)) + ":" + go_json(*kv[i].second);
        return out + "}";
    }
    case boost::json::kind::array: {
        std::string out = "[";
        bool first = true;
        for (const auto& e : v.get_array()) {
            out += (first ? "" : ",") + go_json(e);
            first = false;
        }
        return out + "]";
    }
    case boost::json::kind::string: {
        std::string s = boost::json::serialize(v), out;
        for (char c : s) {
            if (c == '<') out += "\\u003c";
            else if (c == '>') out += "\\u003e";
            else if (c == '&') out += "\\u0026";
            else out += c;
        }
        return out;
    }
    default: return boost::json::serialize(v);
    }
}

} // namespace vck::sandbox
