// ContentNegotiation: what a response carries, from the request's Accept header, as
// kube-apiserver's negotiation decides it: the object itself (application/json, application/*,
// */*), a meta.k8s.io/v1 Table (`as=Table`), or its metadata only (`as=PartialObjectMetadata`
// for one object or a watch event, `as=PartialObjectMetadataList` for a list), which is what
// metadata-only informers ask for. Clauses are tried in the order given, q=0 ones skipped;
// one the sandbox cannot produce (YAML, protobuf, text/plain, an unknown `as`, the wrong one
// of the two metadata kinds) gives way to the next; when none is left the answer is 406
// NotAcceptable, worded as the real server words it but naming only JSON (the one encoding
// the sandbox writes). No Accept header means JSON.
#pragma once

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>

namespace vck::sandbox {

enum class Representation { Object, Table, Metadata };

inline constexpr std::string_view not_acceptable_message = "only the following media types are accepted: application/json";

namespace negotiation_detail {

inline std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

inline std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

/// One Accept clause: what it asks for, or nothing when the sandbox cannot answer it.
inline std::optional<Representation> clause(std::string_view text, bool list) {
    std::string media;
    std::string as, group, version;
    bool first = true;
    while (true) {
        auto semi = text.find(';');
        auto part = trim(text.substr(0, semi));
        if (first) {
            media = lower(part);
            first = false;
        } else if (auto eq = part.find('='); eq != std::string_view::npos) {
            auto key = lower(trim(part.substr(0, eq)));
            auto value = trim(part.substr(eq + 1));
            if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
            if (key == "q" && (value == "0" || value == "0.0" || value == "0.00" || value == "0.000")) return std::nullopt;
            if (key == "as") as = value;
            else if (key == "g") group = value;
            else if (key == "v") version = value;
        }
        if (semi == std::string_view::npos) break;
        text.remove_prefix(semi + 1);
    }
    if (media != "application/json" && media != "application/*" && media != "*/*") return std::nullopt;
    if (as.empty()) return Representation::Object;
    if (group != "meta.k8s.io" || version != "v1") return std::nullopt;
    if (as == "Table") return Representation::Table;
    if (as == (list ? "PartialObjectMetadataList" : "PartialObjectMetadata")) return Representation::Metadata;
    return std::nullopt;
}

} // namespace negotiation_detail

/// What to answer a request with `accept` for one object (`list` false) or a list; nothing
/// means 406 (not_acceptable_message).
inline std::optional<Representation> negotiate(std::string_view accept, bool list) {
    using namespace negotiation_detail;
    if (trim(accept).empty()) return Representation::Object;
    while (true) {
        auto comma = accept.find(',');
        if (auto r = clause(accept.substr(0, comma), list)) return r;
        if (comma == std::string_view::npos) return std::nullopt;
        accept.remove_prefix(comma + 1);
    }
}

/// An object as a meta.k8s.io/v1 PartialObjectMetadata: its kind and apiVersion replaced,
/// everything but its metadata left out.
inline boost::json::value as_partial_metadata(const boost::json::value& obj) {
    boost::json::object out{{"kind", "PartialObjectMetadata"}, {"apiVersion", "meta.k8s.io/v1"}};
    if (const auto* o = obj.if_object())
        if (const auto* md = o->if_contains("metadata")) out["metadata"] = *md;
    if (!out.contains("metadata")) out["metadata"] = boost::json::object();
    return out;
}

/// A list as a PartialObjectMetadataList: its list metadata, each item's metadata.
inline boost::json::value as_partial_metadata_list(const boost::json::value& list) {
    boost::json::object out{{"kind", "PartialObjectMetadataList"}, {"apiVersion", "meta.k8s.io/v1"}};
    boost::json::array items;
    if (const auto* o = list.if_object()) {
        if (const auto* md = o->if_contains("metadata")) out["metadata"] = *md;
        if (const auto* it = o->if_contains("items"); it && it->is_array())
            for (const auto& item : it->get_array()) items.push_back(as_partial_metadata(item));
    }
    if (!out.contains("metadata")) out["metadata"] = boost::json::object();
    out["items"] = std::move(items);
    return out;
}

} // namespace vck::sandbox
