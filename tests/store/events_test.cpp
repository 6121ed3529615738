// Events as kube-apiserver 1.32 serves them: core/v1 and events.k8s.io/v1 are two views of one
// storage. An Event written through either version is read, listed, watched, patched and
// selected through the other, converted field by field (event_conversion.hpp), with one
// resourceVersion history; and Event writes are validated as pkg/apis/core/validation/events.go
// validates them (legacy rules for core/v1, strict ones for events.k8s.io/v1).
#include "store_support.hpp"

#include <vck/sandbox/storage/event_conversion.hpp>
#include <vck/sandbox/storage/object_store.hpp>
#include <vck/sandbox/server/table.hpp>

#include <doctest.h>

#include <string>
#include <vector>

using namespace vck::sandbox;
using vck::client::PatchType;
using namespace vck::sandbox::store_test;
namespace json = boost::json;

namespace {


/// A valid events.k8s.io/v1 Event, as client-go's tools/events and kube-rs' recorder post it.
const char* const new_event = R"({"apiVersion": "events.k8s.io/v1", "kind": "Event",
  "metadata": {"name": "web.17c8e2a1", "namespace": "default"},
  "eventTime": "2024-05-01T10:00:00.123456Z",
  "reportingController": "vck.intelai.org/controller", "reportingInstance": "controller-0",
  "action": "Provisioning", "reason": "Provisioned", "type": "Normal",
  "regarding": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u-1", "apiVersion": "v1"},
  "related": {"kind": "Node", "name": "n1"},
  "note": "volume ready",
  "series": {"count": 2, "lastObservedTime": "2024-05-01T10:01:00.000000Z"}})";

/// A core/v1 Event as the legacy recorders (and the sandbox's own emitter) post it.
const char* const old_event = R"({"apiVersion": "v1", "kind": "Event",
  "metadata": {"name": "web.1", "namespace": "default"},
  "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "fieldPath": "spec.containers{c}"},
  "reason": "Started", "message": "Started container c", "type": "Normal",
  "source": {"component": "kubelet", "host": "n1"},
  "firstTimestamp": "2024-05-01T10:00:00Z", "lastTimestamp": "2024-05-01T10:05:00Z", "count": 3})";

StoreWatchOptions watch_from(std::string rv) {
    StoreWatchOptions o;
    o.resource_version = std::move(rv);
    return o;
}
StoreWatchOptions watch_selecting(std::string fields) {
    StoreWatchOptions o;
    o.field_selector = std::move(fields);
    return o;
}

} // namespace

TEST_CASE("event conversion: every field maps both ways, as pkg/apis/events/v1/conversion.go maps it") {
    auto events = parse(new_event);
    auto core = event_to_core(events);
    CHECK(core.at("apiVersion") == "v1");
    CHECK(core.at("kind") == "Event");
    CHECK(core.at("message") == "volume ready");
    CHECK(core.at("reportingComponent") == "vck.intelai.org/controller");
    CHECK(core.at("reportingInstance") == "controller-0");
    CHECK(core.at("involvedObject").at("name") == "web");
    CHECK(core.at("related").at("kind") == "Node");
    CHECK(core.at("eventTime") == "2024-05-01T10:00:00.123456Z");
    CHECK(core.at("series").at("count") == 2);
    CHECK(core.at("action") == "Provisioning");
    CHECK(core.at("reason") == "Provisioned");
    CHECK(core.at("type") == "Normal");
    CHECK(core.at("metadata") == events.at("metadata"));
    for (const char* gone : {"note", "regarding", "reportingController", "deprecatedSource"})
        CHECK_MESSAGE(!core.get_object().contains(gone), gone);
    // And back again: nothing lost.
    auto back = event_to_events_v1(core);
    for (const auto& kv : events.get_object()) CHECK_MESSAGE(back.at(kv.key()) == kv.value(), kv.key());

    auto legacy = event_to_events_v1(parse(old_event));
    CHECK(legacy.at("apiVersion") == "events.k8s.io/v1");
    CHECK(legacy.at("note") == "Started container c");
    CHECK(legacy.at("regarding").at("fieldPath") == "spec.containers{c}");
    CHECK(legacy.at("deprecatedSource").at("host") == "n1");
    CHECK(legacy.at("deprecatedFirstTimestamp") == "2024-05-01T10:00:00Z");
    CHECK(legacy.at("deprecatedLastTimestamp") == "2024-05-01T10:05:00Z");
    CHECK(legacy.at("deprecatedCount") == 3);
    // Encoded as the Go struct is: an unset eventTime is null, never left out.
    CHECK(legacy.at("eventTime").is_null());
    for (const char* gone : {"message", "involvedObject", "source", "firstTimestamp", "count"})
        CHECK_MESSAGE(!legacy.get_object().contains(gone), gone);
}

TEST_CASE("event conversion: fields the target version does not have are dropped, as decoding drops them") {
    auto events = parse(new_event);
    events.get_object()["message"] = "not a field of events.k8s.io/v1";
    events.get_object()["spec"] = json::object{{"x", 1}};
    auto core = event_to_core(events);
    CHECK(core.at("message") == "volume ready");
    CHECK(!core.get_object().contains("spec"));

    auto bare = event_to_events_v1(parse(R"({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}})"));
    CHECK(bare.at("regarding") == json::object());
    CHECK(bare.at("deprecatedSource") == json::object());
    CHECK(bare.at("deprecatedFirstTimestamp").is_null());
    CHECK(!bare.get_object().contains("deprecatedCount"));
}

TEST_CASE("events.k8s.io/v1 events are served and share storage with core/v1 Events") {
    ObjectStore store;
    REQUIRE(store.find_resource("events.k8s.io", "v1", "events"));
    CHECK(store.find_resource("events.k8s.io", "v1", "events")->kind == "Event");

    SUBCASE("created through events.k8s.io/v1, read through core/v1") {
        auto created = store.create(events_v1, "default", parse(new_event));
        CHECK(created.at("apiVersion") == "events.k8s.io/v1");
        CHECK(created.at("note") == "volume ready");
        auto core = store.get(core_events, "default", "web.17c8e2a1");
        CHECK(core.at("apiVersion") == "v1");
        CHECK(core.at("message") == "volume ready");
        CHECK(core.at("involvedObject").at("name") == "web");
        CHECK(core.at("reportingComponent") == "vck.intelai.org/controller");
        CHECK(core.at("metadata").at("resourceVersion") == created.at("metadata").at("resourceVersion"));
        CHECK(core.at("metadata").at("uid") == created.at("metadata").at("uid"));
        auto listed = store.list(core_events, "default");
        REQUIRE(listed.at("items").as_array().size() == 1);
        CHECK(listed.at("items").at(0).at("message") == "volume ready");
    }

    SUBCASE("created through core/v1, read, listed and watched through events.k8s.io/v1") {
        auto w = store.watch(events_v1, "default");
        auto created = store.create(core_events, "default", parse(old_event));
        auto got = store.get(events_v1, "default", "web.1");
        CHECK(got.at("kind") == "Event");
        CHECK(got.at("apiVersion") == "events.k8s.io/v1");
        CHECK(got.at("note") == "Started container c");
        CHECK(got.at("deprecatedCount") == 3);
        auto listed = store.list(events_v1, "default");
        CHECK(listed.at("kind") == "EventList");
        CHECK(listed.at("apiVersion") == "events.k8s.io/v1");
        REQUIRE(listed.at("items").as_array().size() == 1);
        CHECK(listed.at("items").at(0).at("regarding").at("kind") == "Pod");
        auto seen = w->drain();
        REQUIRE(seen.size() == 1);
        CHECK(seen[0].type == "ADDED");
        CHECK(seen[0].object->at("note") == "Started container c");
        CHECK(seen[0].object->at("metadata").at("resourceVersion") == created.at("metadata").at("resourceVersion"));
    }

    SUBCASE("a watch of core/v1 sees writes made through events.k8s.io/v1, converted") {
        auto rv = std::to_string(store.resource_version());
        auto w = store.watch(core_events, "", watch_from(rv));
        store.create(events_v1, "default", parse(new_event));
        store.patch(events_v1, "default", "web.17c8e2a1", PatchType::Merge,
                    parse(R"({"series": {"count": 3, "lastObservedTime": "2024-05-01T10:02:00.000000Z"}})"));
        store.remove(events_v1, "default", "web.17c8e2a1");
        auto seen = w->drain();
        REQUIRE(seen.size() == 3);
        CHECK(seen[0].type == "ADDED");
        CHECK(seen[1].type == "MODIFIED");
        CHECK(seen[1].object->at("series").at("count") == 3);
        CHECK(seen[2].type == "DELETED");
        for (const auto& e : seen) {
            CHECK(e.object->at("apiVersion") == "v1");
            CHECK(e.object->at("message") == "volume ready");
        }
    }

    SUBCASE("a patch applies to the version the client speaks") {
        store.create(core_events, "default", parse(old_event));
        // "note" is events.k8s.io/v1's name for the message, which its strict rules freeze.
        auto st = refusal([&] {
            store.patch(events_v1, "default", "web.1", PatchType::Merge, parse(R"({"note": "again"})"));
        });
        CHECK(st.message == R"(Event.events.k8s.io "web.1" is invalid: message: Invalid value: "again": field is immutable)");
        auto patched = store.patch(events_v1, "default", "web.1", PatchType::Merge,
                                   parse(R"({"series": {"count": 2, "lastObservedTime": "2024-05-01T10:06:00.000000Z"}})"));
        CHECK(patched.at("series").at("count") == 2);
        CHECK(store.get(core_events, "default", "web.1").at("series").at("count") == 2);
        store.patch(events_v1, "default", "web.1", PatchType::StrategicMerge, parse(R"({"series": {"count": 4}})"));
        CHECK(store.get(core_events, "default", "web.1").at("series").at("count") == 4);
        // A JSON patch's paths are those of the client's version too.
        store.patch(events_v1, "default", "web.1", PatchType::Json, parse(R"([
            {"op": "test", "path": "/note", "value": "Started container c"},
            {"op": "test", "path": "/deprecatedCount", "value": 3},
            {"op": "replace", "path": "/series/count", "value": 5}])"));
        CHECK(store.get(core_events, "default", "web.1").at("series").at("count") == 5);
        // Through core/v1 the fields are the core ones: "note" is not one, and is dropped;
        // and the legacy rules let the message change.
        store.patch(core_events, "default", "web.1", PatchType::Merge, parse(R"({"note": "x"})"));
        CHECK(store.get(core_events, "default", "web.1").at("message") == "Started container c");
        store.patch(core_events, "default", "web.1", PatchType::Merge, parse(R"({"message": "again"})"));
        CHECK(store.get(events_v1, "default", "web.1").at("note") == "again");
    }

    SUBCASE("an update through events.k8s.io/v1 keeps one object and one resourceVersion line") {
        auto created = store.create(events_v1, "default", parse(new_event));
        auto obj = store.get(events_v1, "default", "web.17c8e2a1");
        obj.get_object()["series"] = parse(R"({"count": 5, "lastObservedTime": "2024-05-01T10:09:00.000000Z"})");
        auto updated = store.update(events_v1, "default", "web.17c8e2a1", obj);
        CHECK(updated.at("series").at("count") == 5);
        CHECK(updated.at("metadata").at("resourceVersion") != created.at("metadata").at("resourceVersion"));
        auto core = store.get(core_events, "default", "web.17c8e2a1");
        CHECK(core.at("series").at("count") == 5);
        CHECK(core.at("metadata").at("resourceVersion") == updated.at("metadata").at("resourceVersion"));
        // A resourceVersion read through one view is stale for the other after a write.
        auto st = refusal([&] { store.update(core_events, "default", "web.17c8e2a1", event_to_core(obj)); });
        CHECK(st.code == 409);
    }

    SUBCASE("deleted through one version, gone from both") {
        store.create(core_events, "default", parse(old_event));
        auto gone = store.remove(events_v1, "default", "web.1");
        CHECK(gone.finished);
        CHECK(gone.object.at("apiVersion") == "events.k8s.io/v1");
        auto st = refusal([&] { store.get(core_events, "default", "web.1"); });
        CHECK(st.code == 404);
        st = refusal([&] { store.get(events_v1, "default", "web.1"); });
        CHECK(st.message == "events.events.k8s.io \"web.1\" not found");
    }

    SUBCASE("a namespace's deletion takes its events, whichever version wrote them") {
        store.create(namespaces, "", named("team"));
        auto e = parse(new_event);
        e.at("metadata").as_object()["namespace"] = "team";
        e.at("regarding").as_object()["namespace"] = "team";
        store.create(events_v1, "team", e);
        store.remove(namespaces, "", "team");
        CHECK(store.list(events_v1, "team").at("items").as_array().empty());
    }
}

TEST_CASE("field selectors of events.k8s.io/v1 are its own labels, mapped onto the core ones") {
    ObjectStore store;
    store.create(core_events, "default", parse(old_event));
    store.create(events_v1, "default", parse(new_event));
    auto names = [&](const ResourceId& id, std::string selector) {
        std::vector<std::string> out;
        StoreListOptions o;
        o.field_selector = std::move(selector);
        auto listed = store.list(id, "default", o);
        for (const auto& i : listed.at("items").as_array())
            out.emplace_back(i.at("metadata").at("name").as_string());
        return out;
    };
    using V = std::vector<std::string>;
    CHECK(names(events_v1, "regarding.name=web") == V{"web.1", "web.17c8e2a1"});
    CHECK(names(events_v1, "reportingController=vck.intelai.org/controller") == V{"web.17c8e2a1"});
    CHECK(names(events_v1, "reason=Started") == V{"web.1"});
    CHECK(names(events_v1, "type=Normal,metadata.name=web.1") == V{"web.1"});
    // "source" is the source's component, or the reporting controller when there is none.
    CHECK(names(events_v1, "source=kubelet") == V{"web.1"});
    CHECK(names(core_events, "source=kubelet") == V{"web.1"});
    CHECK(names(core_events, "source=vck.intelai.org/controller") == V{"web.17c8e2a1"});
    CHECK(names(core_events, "involvedObject.fieldPath=spec.containers{c}") == V{"web.1"});

    // The core spellings are not labels of events.k8s.io/v1, and the new ones not of core/v1.
    auto st = refusal([&] { names(events_v1, "involvedObject.name=web"); });
    CHECK(st.code == 400);
    CHECK(st.message == "field label not supported: involvedObject.name");
    st = refusal([&] { names(core_events, "regarding.name=web"); });
    CHECK(st.message == "field label not supported: regarding.name");

    // A watch selects the same way.
    auto w = store.watch(events_v1, "default", watch_selecting("regarding.name=web,reason=Provisioned"));
    auto seen = w->drain();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].object->at("metadata").at("name") == "web.17c8e2a1");
}

namespace {

/// Merges `patch` (an RFC 7386 merge patch) into `base`.
json::value merged(const char* base, std::string_view patch) {
    return vck::sandbox::apply_merge_patch(parse(base), parse(patch));
}

struct EventCase {
    const char* what;
    const ResourceId* via;
    const char* body;   // the Event written
    const char* patch;  // merged into it first ("" for none)
    const char* message;  // the 422's whole message, "" when the write is accepted
};

} // namespace

TEST_CASE("Event validation on create, as ValidateEventCreate: legacy rules for core/v1, strict for events.k8s.io/v1") {
    const std::vector<EventCase> cases = {
        {"a legacy core/v1 event", &core_events, old_event, "", ""},
        {"a new events.k8s.io/v1 event", &events_v1, new_event, "", ""},
        {"core/v1: involvedObject.namespace must match", &core_events, old_event,
         R"({"involvedObject": {"namespace": "other"}})",
         R"(Event "web.1" is invalid: involvedObject.namespace: Invalid value: "other": does not match event.namespace)"},
        {"core/v1: an object without a namespace may have its events in default", &core_events, old_event,
         R"({"involvedObject": {"namespace": null, "kind": "Node"}})", ""},
        {"core/v1: no rule asks a legacy event for a type or a reporting controller", &core_events, old_event,
         R"({"type": "Unusual", "source": null, "reportingComponent": null})", ""},
        {"core/v1 with an eventTime: the new event's fields are required", &core_events, old_event,
         R"({"eventTime": "2024-05-01T10:00:00.000000Z", "reason": null})",
         R"(Event "web.1" is invalid: [reportingController: Required value, reportingController: Invalid value: "": name part must be non-empty, reportingController: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), reportingInstance: Required value, action: Required value, reason: Required value])"},
        {"events.k8s.io/v1: eventTime is required", &events_v1, new_event, R"({"eventTime": null})",
         R"(Event.events.k8s.io "web.17c8e2a1" is invalid: eventTime: Required value)"},
        {"events.k8s.io/v1: the reporting controller is a qualified name", &events_v1, new_event,
         R"({"reportingController": "vck/controller/x"})",
         R"(Event.events.k8s.io "web.17c8e2a1" is invalid: reportingController: Invalid value: "vck/controller/x": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName'))"},
        {"events.k8s.io/v1: reportingInstance and action are required", &events_v1, new_event,
         R"({"reportingInstance": "", "action": null})",
         R"(Event.events.k8s.io "web.17c8e2a1" is invalid: [reportingInstance: Required value, action: Required value])"},
        {"events.k8s.io/v1: type is Normal or Warning", &events_v1, new_event, R"({"type": "Info"})",
         R"(Event.events.k8s.io "web.17c8e2a1" is invalid: type: Invalid value: "": has invalid value: Info)"},
        {"events.k8s.io/v1: a series counts at least 2 and has a lastObservedTime", &events_v1, new_event,
         R"({"series": {"count": 1, "lastObservedTime": null}})",
         R"(Event.events.k8s.io "web.17c8e2a1" is invalid: [series.count: Invalid value: "": should be at least 2, series.lastObservedTime: Required value])"},
        {"events.k8s.io/v1: the deprecated fields must be unset", &events_v1, new_event,
         R"({"deprecatedCount": 2, "deprecatedSource": {"component": "x"}, "deprecatedFirstTimestamp": "2024-05-01T10:00:00Z"})",
         R"(Event.events.k8s.io "web.17c8e2a1" is invalid: [firstTimestamp: Invalid value: "": needs to be unset, count: Invalid value: "": needs to be unset, source: Invalid value: "": needs to be unset])"},
        {"events.k8s.io/v1: an event about a cluster-scoped object lives in default or kube-system", &events_v1,
         new_event, R"({"metadata": {"namespace": "kube-system"}, "regarding": {"kind": "Node", "namespace": null}})", ""},
    };
    for (const auto& c : cases) {
        CAPTURE(c.what);
        ObjectStore store;
        auto body = *c.patch ? merged(c.body, c.patch) : parse(c.body);
        auto ns = std::string(body.at("metadata").at("namespace").as_string());
        if (!*c.message) {
            CHECK_NOTHROW(store.create(*c.via, ns, body));
            continue;
        }
        auto st = refusal([&] { store.create(*c.via, ns, body); });
        CHECK(st.code == 422);
        CHECK(st.message == c.message);
        // A dry run is refused the same way.
        auto dry = refusal([&] { store.create(*c.via, ns, body, DryRun::All); });
        CHECK(dry.message == c.message);
    }
}

TEST_CASE("Event validation: the length limits of a new event's texts") {
    ObjectStore store;
    const std::string long129(129, 'a');
    auto body = parse(new_event);
    auto& o = body.as_object();
    o["reportingInstance"] = long129;
    o["action"] = long129;
    o["reason"] = long129;
    o["note"] = std::string(1025, 'n');
    auto st = refusal([&] { store.create(events_v1, "default", body); });
    CHECK(st.message == "Event.events.k8s.io \"web.17c8e2a1\" is invalid: [reportingInstance: Invalid value: \"\": can have "
                        "at most 128 characters, action: Invalid value: \"\": can have at most 128 characters, reason: "
                        "Invalid value: \"\": can have at most 128 characters, message: Invalid value: \"\": can have "
                        "at most 1024 characters]");
    REQUIRE(st.details);
    CHECK(st.details->group == "events.k8s.io");
    CHECK(st.details->kind == "Event");
    CHECK(st.details->causes.at(3).field == "message");  // core paths, whichever version wrote it
    o["reportingInstance"] = std::string(128, 'a');
    o["action"] = std::string(128, 'a');
    o["reason"] = std::string(128, 'a');
    o["note"] = std::string(1024, 'n');
    CHECK_NOTHROW(store.create(events_v1, "default", body));
}

TEST_CASE("Event validation on update, as ValidateEventUpdate: through events.k8s.io/v1 only the series may change") {
    ObjectStore store;
    store.create(events_v1, "default", parse(new_event));
    auto patch = [&](const ResourceId& via, std::string_view p) {
        return store.patch(via, "default", "web.17c8e2a1", PatchType::Merge, parse(p));
    };
    CHECK_NOTHROW(patch(events_v1, R"({"series": {"count": 3, "lastObservedTime": "2024-05-01T10:03:00.000000Z"}})"));
    CHECK_NOTHROW(patch(events_v1, R"({"metadata": {"labels": {"a": "b"}}})"));
    auto st = refusal([&] { patch(events_v1, R"({"series": {"count": 1}})"); });
    CHECK(st.message == R"(Event.events.k8s.io "web.17c8e2a1" is invalid: series.count: Invalid value: "": should be at least 2)");

    const std::vector<std::pair<const char*, const char*>> frozen = {
        {R"({"note": "changed"})", R"(message: Invalid value: "changed": field is immutable)"},
        {R"({"type": "Warning"})", R"(type: Invalid value: "Warning": field is immutable)"},
        {R"({"action": "Other"})", R"(action: Invalid value: "Other": field is immutable)"},
        {R"({"reportingInstance": "controller-1"})", R"(reportingInstance: Invalid value: "controller-1": field is immutable)"},
        {R"({"reportingController": "other"})", R"(reportingController: Invalid value: "other": field is immutable)"},
        {R"({"eventTime": "2024-05-01T11:00:00.500000Z"})",
         R"(eventTime: Invalid value: 2024-05-01 11:00:00.5 +0000 UTC: field is immutable)"},
        {R"({"regarding": {"name": "db"}})",
         R"(involvedObject: Invalid value: core.ObjectReference{Kind:"Pod", Namespace:"default", Name:"db", UID:"u-1", APIVersion:"v1", ResourceVersion:"", FieldPath:""}: field is immutable)"},
        {R"({"related": null})", R"(related: Invalid value: "null": field is immutable)"},
    };
    for (const auto& [p, message] : frozen) {
        CAPTURE(p);
        auto refused = refusal([&] { patch(events_v1, p); });
        CHECK(refused.code == 422);
        CHECK(refused.message == std::string("Event.events.k8s.io \"web.17c8e2a1\" is invalid: ") + message);
    }
    // The reason is checked twice by the real server; the Status lists it once.
    st = refusal([&] { patch(events_v1, R"({"reason": "Other"})"); });
    CHECK(st.message == R"(Event.events.k8s.io "web.17c8e2a1" is invalid: reason: Invalid value: "Other": field is immutable)");
    CHECK(st.details->causes.size() == 2);

    // core/v1 writes keep the legacy rules only: the same change goes through.
    CHECK(patch(core_events, R"({"message": "changed", "type": "Warning"})").at("message") == "changed");
    // ... but not one that breaks them.
    st = refusal([&] { patch(core_events, R"({"reportingComponent": ""})"); });
    CHECK(st.message.starts_with(R"(Event "web.17c8e2a1" is invalid: [reportingController: Required value)"));
}

TEST_CASE("Event names: a path segment through core/v1, a DNS subdomain through events.k8s.io/v1") {
    ObjectStore store;
    auto named_event = [](const char* base, std::string name) {
        auto e = parse(base);
        e.at("metadata").as_object()["name"] = name;
        return e;
    };
    CHECK_NOTHROW(store.create(core_events, "default", named_event(old_event, "Web_Pod.1")));
    auto st = refusal([&] { store.create(core_events, "default", named_event(old_event, "web%1")); });
    CHECK(st.message == R"(Event "web%1" is invalid: metadata.name: Invalid value: "web%1": may not contain '%')");
    st = refusal([&] { store.create(core_events, "default", named_event(old_event, "..")); });
    CHECK(st.message == R"(Event ".." is invalid: metadata.name: Invalid value: "..": may not be '..')");
    st = refusal([&] { store.create(events_v1, "default", named_event(new_event, "Web_Pod.2")); });
    CHECK(st.message.starts_with(R"(Event.events.k8s.io "Web_Pod.2" is invalid: metadata.name: Invalid value: "Web_Pod.2": a lowercase RFC 1123 subdomain)"));
}

TEST_CASE("Event tables: the columns of 1.32's printers, the same through either version") {
    ObjectStore store;
    store.create(core_events, "default", parse(old_event));
    store.create(events_v1, "default", parse(new_event));
    const auto now = *parse_timestamp("2024-05-01T10:10:00Z");
    auto table = [&](const ResourceId& id) {
        auto r = *store.find_resource(id.group, id.version, id.resource);
        auto items = store.list(id, "default").at("items").as_array();
        return make_table(table_columns(r), items, IncludeObject::None, {}, true, now);
    };
    auto names = [](const json::object& t) {
        std::vector<std::string> out;
        for (const auto& d : t.at("columnDefinitions").as_array())
            out.emplace_back(std::string(d.at("name").as_string()) + (d.at("priority") == 1 ? "*" : ""));
        return out;
    };
    auto core = table(core_events);
    CHECK(names(core) == std::vector<std::string>{"Last Seen", "Type", "Reason", "Object", "Subobject*", "Source*",
                                                  "Message", "First Seen*", "Count*", "Name*"});
    const auto& rows = core.at("rows").as_array();
    REQUIRE(rows.size() == 2);
    // The legacy event: its own timestamps and count, its source with the host.
    CHECK(rows[0].at("cells") == parse(R"(["5m", "Normal", "Started", "pod/web", "spec.containers{c}", "kubelet, n1",
        "Started container c", "10m", 3, "web.1"])"));
    // The new one: its series' time and count, the reporting controller and instance as source.
    CHECK(rows[1].at("cells") == parse(R"(["9m", "Normal", "Provisioned", "pod/web", "",
        "vck.intelai.org/controller, controller-0", "volume ready", "9m59s", 2, "web.17c8e2a1"])"));

    auto events = table(events_v1);
    CHECK(events.at("columnDefinitions") == core.at("columnDefinitions"));
    CHECK(events.at("rows") == core.at("rows"));
}

TEST_CASE("Event tables: a singleton event counts 1, and an object without a name prints as its kind") {
    auto cols = event_columns();
    const auto now = *parse_timestamp("2024-05-01T10:00:30Z");
    auto row = make_table(cols, json::array{parse(R"({"metadata": {"name": "e"}, "involvedObject": {"kind": "Node"},
        "eventTime": "2024-05-01T10:00:00.000001Z", "message": "  spaced out \n"})")}, IncludeObject::None, {}, true, now);
    // 29.999999s: HumanDuration truncates.
    CHECK(row.at("rows").at(0).at("cells") == parse(R"(["29s", "", "", "node", "", "", "spaced out", "29s", 1, "e"])"));
}
