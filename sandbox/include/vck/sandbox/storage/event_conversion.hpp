// EventConversion: core/v1 Event <-> events.k8s.io/v1 Event, the two views kube-apiserver
// 1.32 serves of one Event storage (pkg/apis/events/v1/conversion.go and the generated
// conversions around it). The sandbox stores Events as core/v1 objects; events.k8s.io/v1
// reads convert from that form and its writes convert to it. Guarantees:
// - the renamed fields map both ways: note<->message, regarding<->involvedObject,
//   reportingController<->reportingComponent, deprecatedSource<->source,
//   deprecatedFirstTimestamp<->firstTimestamp, deprecatedLastTimestamp<->lastTimestamp,
//   deprecatedCount<->count; the rest (metadata, eventTime, series, related, action, reason,
//   type, reportingInstance) keep their names;
// - only the fields of the target type survive, as a decode into the Go struct drops the
//   others (a "message" posted to events.k8s.io/v1 is gone, as on a real server);
// - an events.k8s.io/v1 Event is written as the real server encodes it: eventTime and the
//   deprecated timestamps are null when unset, regarding and deprecatedSource {} (no
//   omitempty reaches a struct), the deprecated count left out when 0;
// - field selectors of events.k8s.io/v1 name the core labels through the real server's
//   label mapping (regarding.name -> involvedObject.name, ...); any other label is refused.
#pragma once

#include <boost/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace vck::sandbox {

inline constexpr std::string_view events_api_version = "events.k8s.io/v1";

namespace event_conversion_detail {

namespace json = boost::json;

/// (core field, events.k8s.io/v1 field) for every field of an Event but metadata.
struct FieldPair {
    std::string_view core;
    std::string_view events;
};
inline constexpr FieldPair event_fields[] = {
    {"eventTime", "eventTime"},
    {"series", "series"},
    {"reportingComponent", "reportingController"},
    {"reportingInstance", "reportingInstance"},
    {"action", "action"},
    {"reason", "reason"},
    {"involvedObject", "regarding"},
    {"related", "related"},
    {"message", "note"},
    {"type", "type"},
    {"source", "deprecatedSource"},
    {"firstTimestamp", "deprecatedFirstTimestamp"},
    {"lastTimestamp", "deprecatedLastTimestamp"},
    {"count", "deprecatedCount"},
};

inline json::object with_type_meta(const json::object& from, std::string_view api_version) {
    json::object out;
    out["kind"] = "Event";
    out["apiVersion"] = api_version;
    if (const auto* m = from.if_contains("metadata")) out["metadata"] = *m;
    return out;
}

} // namespace event_conversion_detail

/// A core/v1 Event as events.k8s.io/v1 serves it.
inline boost::json::value event_to_events_v1(const boost::json::value& core) {
    using namespace event_conversion_detail;
    const auto* in = core.if_object();
    if (!in) return core;
    json::object out = with_type_meta(*in, events_api_version);
    for (const auto& f : event_fields)
        if (const auto* v = in->if_contains(f.core)) out[f.events] = *v;
    // Go's encoding of the struct: no omitempty reaches a struct, and a zero Time is null.
    for (std::string_view always_null : {"eventTime", "deprecatedFirstTimestamp", "deprecatedLastTimestamp"})
        if (!out.contains(always_null)) out[always_null] = nullptr;
    for (std::string_view always_object : {"regarding", "deprecatedSource"})
        if (const auto* v = out.if_contains(always_object); !v || v->is_null()) out[always_object] = json::object();
    if (const auto* c = out.if_contains("deprecatedCount"); c && c->is_number() && c->to_number<double>() == 0)
        out.erase("deprecatedCount");
    return out;
}

/// An events.k8s.io/v1 Event as core/v1 stores it. Nulls (unset times and pointers) are left
/// out, as the core form omits them.
inline boost::json::value event_to_core(const boost::json::value& events) {
    using namespace event_conversion_detail;
    const auto* in = events.if_object();
    if (!in) return events;
    json::object out = with_type_meta(*in, "v1");
    for (const auto& f : event_fields)
        if (const auto* v = in->if_contains(f.events); v && !v->is_null()) out[f.core] = *v;
    return out;
}

/// An Event in `api_version` ("v1" or "events.k8s.io/v1"); nullopt for other versions, which
/// have no Event to convert to.
inline std::optional<boost::json::value> convert_event(const boost::json::value& obj, std::string_view api_version) {
    if (api_version == events_api_version) return event_to_events_v1(obj);
    if (api_version == "v1") return event_to_core(obj);
    return std::nullopt;
}

/// The core field label an events.k8s.io/v1 field selector label stands for (the real
/// server's AddFieldLabelConversionsForEvent), or nullopt: "field label not supported".
inline std::optional<std::string> events_v1_field_label(std::string_view label) {
    static constexpr std::pair<std::string_view, std::string_view> mapping[] = {
        {"reason", "reason"},
        {"regarding.kind", "involvedObject.kind"},
        {"regarding.namespace", "involvedObject.namespace"},
        {"regarding.name", "involvedObject.name"},
        {"regarding.uid", "involvedObject.uid"},
        {"regarding.apiVersion", "involvedObject.apiVersion"},
        {"regarding.resourceVersion", "involvedObject.resourceVersion"},
        {"regarding.fieldPath", "involvedObject.fieldPath"},
        {"reportingController", "reportingComponent"},
        {"source", "source"},
        {"type", "type"},
        {"metadata.namespace", "metadata.namespace"},
        {"metadata.name", "metadata.name"},
    };
    for (const auto& [from, to] : mapping)
        if (from == label) return std::string(to);
    return std::nullopt;
}

/// A stored (core) Event as its field selectors see it: the "source" label is the source's
/// component, or the reporting controller when the event has no source (the core registry's
/// ToSelectableFields); every other label is the field at its own path.
inline boost::json::value event_selectable_fields(const boost::json::value& core) {
    boost::json::value out = core;
    auto* o = out.if_object();
    if (!o) return out;
    std::string source;
    if (const auto* s = o->if_contains("source"); s && s->is_object())
        if (const auto* c = s->get_object().if_contains("component"); c && c->is_string()) source = c->get_string();
    if (source.empty())
        if (const auto* rc = o->if_contains("reportingComponent"); rc && rc->is_string()) source = rc->get_string();
    (*o)["source"] = source;
    return out;
}

} // namespace vck::sandbox
