// EventValidation: what kube-apiserver 1.32 refuses in Events (ValidateEventCreate and
// ValidateEventUpdate of pkg/apis/core/validation/events.go), with its messages and field
// paths. Events are checked in their stored, core form whichever version wrote them, so the
// paths are core ones (involvedObject.namespace, reportingController, message), as the real
// server's; the version of the request decides how strict:
// - every Event (legacy rules): one without eventTime has involvedObject.namespace agreeing
//   with its namespace (or "default" for an object without one); one with eventTime (a "new"
//   Event, whoever posts it) also needs reportingController (a qualified name),
//   reportingInstance, action and reason (at most 128 characters each) and a message of at
//   most 1024 characters, and its involvedObject.namespace may only be empty in default or
//   kube-system;
// - events.k8s.io/v1 writes (strict): eventTime required; type Normal or Warning; the
//   deprecated fields (firstTimestamp, lastTimestamp, count, source) unset; a series counts
//   at least 2 and has a lastObservedTime; on update nothing but the series (and metadata)
//   may change.
// Writes through core/v1 get the legacy rules only, on create and on update alike.
#pragma once

#include <vck/sandbox/validation/resource_registry.hpp>
#include <vck/sandbox/validation/spec_validation.hpp>

#include <boost/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

namespace event_validation_detail {

using namespace spec_validation;

inline constexpr std::size_t reporting_instance_limit = 128;
inline constexpr std::size_t action_limit = 128;
inline constexpr std::size_t reason_limit = 128;
inline constexpr std::size_t note_limit = 1024;

/// A metav1.Time / MicroTime field at its zero value (absent, null or "").
inline bool zero_time(const json::value* ev, std::string_view key) { return empty_value(at(ev, key)); }

/// validation.IsQualifiedName: every problem, in its order (an empty name has two).
inline std::vector<std::string> qualified_name_problems(std::string_view value) {
    static const std::string name_rule =
        " must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    std::vector<std::string> out;
    std::string_view name = value;
    if (auto slash = value.find('/'); slash != std::string_view::npos) {
        if (value.find('/', slash + 1) != std::string_view::npos)
            return {"a qualified name" + name_rule + " with an optional DNS subdomain prefix and '/' (e.g. "
                    "'example.com/MyName')"};
        auto prefix = value.substr(0, slash);
        name = value.substr(slash + 1);
        if (prefix.empty()) {
            out.push_back("prefix part must be non-empty");
        } else {
            if (prefix.size() > 253) out.push_back("prefix part must be no more than 253 characters");
            if (!object_name_detail::is_subdomain(prefix))
                out.push_back("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                              "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
                              "'example.com', regex used for validation is '" +
                              std::string(object_name_detail::subdomain_regex) + "')");
        }
    }
    auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
    if (name.empty()) out.push_back("name part must be non-empty");
    else if (name.size() > 63) out.push_back("name part must be no more than 63 characters");
    bool ok = !name.empty() && alnum(name.front()) && alnum(name.back());
    for (char c : name) ok = ok && (alnum(c) || c == '-' || c == '_' || c == '.');
    if (!ok) out.push_back("name part" + name_rule);
    return out;
}

/// Go's String() of a time.Time parsed from RFC 3339 in UTC: "2024-05-01 10:00:00.5 +0000 UTC"
/// (the zero time when unset); a text it cannot read is shown as it is.
inline std::string go_time(const json::value* v) {
    if (empty_value(v) || !v->is_string()) return "0001-01-01 00:00:00 +0000 UTC";
    std::string s(v->get_string());
    if (s.size() < 20 || s[10] != 'T' || s.back() != 'Z') return s;
    std::string frac = s.substr(19, s.size() - 20);  // ".123456" or ""
    while (!frac.empty() && (frac.back() == '0' || frac.back() == '.')) {
        bool dot = frac.back() == '.';
        frac.pop_back();
        if (dot) break;
    }
    return s.substr(0, 10) + " " + s.substr(11, 8) + frac + " +0000 UTC";
}

/// %#v of a core.ObjectReference / core.EventSource held in JSON.
inline std::string go_struct(std::string_view type, const json::value* v,
                             std::initializer_list<std::pair<std::string_view, std::string_view>> fields) {
    std::string out = std::string(type) + "{";
    bool first = true;
    for (const auto& [go_name, key] : fields) {
        out += (first ? "" : ", ") + std::string(go_name) + ":" + go::quote(str(v, key));
        first = false;
    }
    return out + "}";
}
inline std::string go_object_reference(const json::value* v) {
    return go_struct("core.ObjectReference", v,
                     {{"Kind", "kind"}, {"Namespace", "namespace"}, {"Name", "name"}, {"UID", "uid"},
                      {"APIVersion", "apiVersion"}, {"ResourceVersion", "resourceVersion"}, {"FieldPath", "fieldPath"}});
}

/// ValidateImmutableField with the new value printed as field.Error prints its Go type.
inline Errors unchanged(const json::value& ev, const json::value& old, std::string_view key, std::string path) {
    const auto* now = at(&ev, key);
    if (same(now, at(&old, key))) return {};
    std::string shown;
    if (key == "involvedObject") shown = go_object_reference(now);
    else if (key == "related") shown = empty_value(now) ? go::quote("null") : go_object_reference(now);
    else if (key == "source") shown = go_struct("core.EventSource", now, {{"Component", "component"}, {"Host", "host"}});
    else if (key == "firstTimestamp" || key == "lastTimestamp" || key == "eventTime") shown = go_time(now);
    else if (key == "count") shown = std::to_string(integer(&ev, key).value_or(0));
    else shown = go::quote(str(&ev, key));
    return {field::detail::make("FieldValueInvalid", std::move(path), "Invalid value: " + shown + ": field is immutable")};
}

inline FieldError too_long_text(std::string path, std::size_t limit) {
    return field::invalid(std::move(path), sv(""), "can have at most " + std::to_string(limit) + " characters");
}

inline Errors legacy(const json::value& ev) {
    Errors errs;
    const auto ns = str(at(&ev, "metadata"), "namespace");
    const auto* involved = at(&ev, "involvedObject");
    const auto involved_ns = str(involved, "namespace");
    auto mismatch = [&] {
        errs.push_back(field::invalid("involvedObject.namespace", sv(involved_ns), "does not match event.namespace"));
    };
    if (zero_time(&ev, "eventTime")) {
        if (involved_ns.empty() ? !ns.empty() && ns != "default" : ns != involved_ns) mismatch();
    } else {
        if (involved_ns.empty() && ns != "default" && ns != "kube-system") mismatch();
        const auto controller = str(&ev, "reportingComponent");
        if (controller.empty()) errs.push_back(field::required("reportingController"));
        for (const auto& p : qualified_name_problems(controller))
            errs.push_back(field::invalid("reportingController", sv(controller), p));
        const auto instance = str(&ev, "reportingInstance");
        if (instance.empty()) errs.push_back(field::required("reportingInstance"));
        if (instance.size() > reporting_instance_limit) errs.push_back(too_long_text("reportingInstance", reporting_instance_limit));
        const auto action = str(&ev, "action");
        if (action.empty()) errs.push_back(field::required("action"));
        if (action.size() > action_limit) errs.push_back(too_long_text("action", action_limit));
        const auto reason = str(&ev, "reason");
        if (reason.empty()) errs.push_back(field::required("reason"));
        if (reason.size() > reason_limit) errs.push_back(too_long_text("reason", reason_limit));
        if (str(&ev, "message").size() > note_limit) errs.push_back(too_long_text("message", note_limit));
    }
    append(errs, validate_dns1123_subdomain(ns, "namespace"));
    return errs;
}

inline Errors series(const json::value& ev) {
    const auto* s = at(&ev, "series");
    if (!s || s->is_null()) return {};  // a nil *EventSeries; {} is a series, and checked
    Errors errs;
    if (integer(s, "count").value_or(0) < 2) errs.push_back(field::invalid("series.count", sv(""), "should be at least 2"));
    if (zero_time(s, "lastObservedTime")) errs.push_back(field::required("series.lastObservedTime"));
    return errs;
}

} // namespace event_validation_detail

/// Which rules an Event write gets: those of its request's API version.
enum class EventRules {
    Legacy,  // core/v1 (and events.k8s.io/v1beta1)
    Strict,  // events.k8s.io/v1
};

/// The rules of Event writes through `r`, or nullopt when `r` serves no Events.
inline std::optional<EventRules> event_rules(const ResourceInfo& r) {
    if (r.custom || r.plural != "events") return std::nullopt;
    if (r.group.empty()) return EventRules::Legacy;
    if (r.group == "events.k8s.io") return r.version == "v1beta1" ? EventRules::Legacy : EventRules::Strict;
    return std::nullopt;
}

/// ValidateEventCreate; `ev` in core/v1 form.
inline std::vector<FieldError> validate_event_create(const boost::json::value& ev, EventRules rules) {
    using namespace event_validation_detail;
    Errors errs = legacy(ev);
    if (rules == EventRules::Legacy) return errs;
    append(errs, series(ev));
    if (zero_time(&ev, "eventTime")) errs.push_back(field::required("eventTime"));
    if (auto type = str(&ev, "type"); type != "Normal" && type != "Warning")
        errs.push_back(field::invalid("type", sv(""), "has invalid value: " + type));
    for (const char* deprecated : {"firstTimestamp", "lastTimestamp"})
        if (!zero_time(&ev, deprecated)) errs.push_back(field::invalid(deprecated, sv(""), "needs to be unset"));
    if (integer(&ev, "count").value_or(0) != 0) errs.push_back(field::invalid("count", sv(""), "needs to be unset"));
    const auto* source = at(&ev, "source");
    if (!str(source, "component").empty() || !str(source, "host").empty())
        errs.push_back(field::invalid("source", sv(""), "needs to be unset"));
    return errs;
}

/// ValidateEventUpdate; both in core/v1 form.
inline std::vector<FieldError> validate_event_update(const boost::json::value& ev, const boost::json::value& old,
                                                     EventRules rules) {
    using namespace event_validation_detail;
    Errors errs = legacy(ev);
    if (rules == EventRules::Legacy) return errs;
    if (!same(at(&ev, "series"), at(&old, "series"))) append(errs, series(ev));
    // In the real server's order; reason is checked twice there, and so reported twice.
    static constexpr std::pair<std::string_view, std::string_view> frozen[] = {
        {"involvedObject", "involvedObject"}, {"reason", "reason"}, {"message", "message"}, {"source", "source"},
        {"firstTimestamp", "firstTimestamp"}, {"lastTimestamp", "lastTimestamp"}, {"count", "count"},
        {"reason", "reason"}, {"type", "type"}, {"eventTime", "eventTime"}, {"action", "action"},
        {"related", "related"}, {"reportingComponent", "reportingController"},
        {"reportingInstance", "reportingInstance"},
    };
    for (const auto& [key, path] : frozen) append(errs, unchanged(ev, old, key, std::string(path)));
    return errs;
}

} // namespace vck::sandbox
