// Table: the meta.k8s.io/v1 Table the API server returns when a client asks for
// `Accept: application/json;as=Table;g=meta.k8s.io;v=v1` (what kubectl get prints). Built-in
// kinds get kubectl's usual columns (pods: NAME READY STATUS RESTARTS AGE, nodes: NAME STATUS
// ROLES AGE VERSION, ...); custom resources get their CRD's additionalPrinterColumns
// (JSONPath; type date renders as an age) or NAME, AGE. Services, Endpoints, EndpointSlices and
// StatefulSets print as kube-apiserver 1.32 prints them (TYPE CLUSTER-IP EXTERNAL-IP PORT(S),
// ENDPOINTS, ADDRESSTYPE PORTS ENDPOINTS, READY). Guarantees: cells follow the
// column definitions one for one; ages are rendered like apimachinery's HumanDuration.
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/api/time.hpp>
#include <vck/sandbox/server/jsonpath.hpp>
#include <vck/sandbox/validation/resource_registry.hpp>
#include <vck/sandbox/storage/version_conversion.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

namespace json = boost::json;

/// One column: its definition as served, and how a cell is computed from an object.
struct TableColumn {
    std::string name;
    std::string type = "string";  // string, integer, number, boolean, date
    std::string format;           // "name" for the NAME column
    std::string description;
    int priority = 0;             // 1: shown only with -o wide
    std::function<json::value(const json::value& obj, std::chrono::system_clock::time_point now)> cell;
};

/// What to embed in each row: nothing, PartialObjectMetadata (the default), or the object.
enum class IncludeObject { None, Metadata, Object };

/// Parses "None" / "Metadata" / "Object"; nullopt for anything else.
inline std::optional<IncludeObject> parse_include_object(std::string_view s) {
    if (s.empty() || s == "Metadata") return IncludeObject::Metadata;
    if (s == "None") return IncludeObject::None;
    if (s == "Object") return IncludeObject::Object;
    return std::nullopt;
}

/// apimachinery's duration.HumanDuration: "45s", "3m20s", "5h4m", "2d3h", "2y30d".
inline std::string human_duration(std::chrono::seconds d) {
    auto s = d.count();
    if (s < -1) return "<invalid>";
    if (s < 0) return "0s";
    if (s < 60 * 2) return std::to_string(s) + "s";
    auto minutes = s / 60;
    if (minutes < 10) {
        auto sec = s % 60;
        return sec == 0 ? std::to_string(minutes) + "m" : std::to_string(minutes) + "m" + std::to_string(sec) + "s";
    }
    if (minutes < 60 * 3) return std::to_string(minutes) + "m";
    auto hours = minutes / 60;
    if (hours < 8) {
        auto m = minutes % 60;
        return m == 0 ? std::to_string(hours) + "h" : std::to_string(hours) + "h" + std::to_string(m) + "m";
    }
    if (hours < 48) return std::to_string(hours) + "h";
    if (hours < 24 * 8) {
        auto h = hours % 24;
        return h == 0 ? std::to_string(hours / 24) + "d" : std::to_string(hours / 24) + "d" + std::to_string(h) + "h";
    }
    if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
    if (hours < 24 * 365 * 8) {
        auto dy = (hours / 24) % 365;
        return dy == 0 ? std::to_string(hours / 24 / 365) + "y"
                       : std::to_string(hours / 24 / 365) + "y" + std::to_string(dy) + "d";
    }
    return std::to_string(hours / 24 / 365) + "y";
}

/// An RFC 3339 UTC timestamp ("2024-05-01T10:00:00Z", fractions allowed and kept: an Event's
/// eventTime is a MicroTime); nullopt if malformed.
inline std::optional<std::chrono::system_clock::time_point> parse_timestamp(std::string_view ts) {
    return api::parse_rfc3339(ts);
}

/// The age of a timestamp as kubectl shows it, or "<unknown>".
inline std::string age_of(std::string_view ts, std::chrono::system_clock::time_point now) {
    auto t = parse_timestamp(ts);
    if (!t) return "<unknown>";
    return human_duration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
}

namespace table_detail {

inline const json::value* at(const json::value& v, std::initializer_list<std::string_view> path) {
    const json::value* cur = &v;
    for (auto k : path) {
        const auto* o = cur->if_object();
        if (!o) return nullptr;
        cur = o->if_contains(k);
        if (!cur) return nullptr;
    }
    return cur;
}
inline std::string str(const json::value& v, std::initializer_list<std::string_view> path,
                       std::string fallback = {}) {
    const auto* p = at(v, path);
    return p && p->is_string() ? std::string(p->get_string()) : fallback;
}
/// An integer at `path`; 0 when absent (Go's omitempty zero).
inline std::int64_t integer(const json::value& v, std::initializer_list<std::string_view> path) {
    const auto* p = at(v, path);
    return p && (p->is_int64() || p->is_uint64()) ? p->to_number<std::int64_t>() : 0;
}
inline std::size_t count(const json::value& v, std::initializer_list<std::string_view> path) {
    const auto* p = at(v, path);
    if (!p) return 0;
    if (const auto* o = p->if_object()) return o->size();
    if (const auto* a = p->if_array()) return a->size();
    return 0;
}

inline TableColumn name_column() {
    return {"Name", "string", "name",
            "Name must be unique within a namespace. Is required when creating resources, although some resources "
            "may allow a client to request the generation of an appropriate name automatically. Name is primarily "
            "intended for creation idempotence and configuration definition. Cannot be updated.",
            0, [](const json::value& o, auto) -> json::value { return json::string(str(o, {"metadata", "name"})); }};
}
inline TableColumn age_column(std::string name = "Age") {
    return {std::move(name), "string", "",
            "CreationTimestamp is a timestamp representing the server time when this object was created.", 0,
            [](const json::value& o, auto now) -> json::value {
                return json::string(age_of(str(o, {"metadata", "creationTimestamp"}), now));
            }};
}
inline TableColumn string_column(std::string name, std::function<std::string(const json::value&)> f,
                                 int priority = 0) {
    return {std::move(name), "string", "", "", priority,
            [f = std::move(f)](const json::value& o, auto) -> json::value { return json::string(f(o)); }};
}
inline TableColumn integer_column(std::string name, std::function<std::int64_t(const json::value&)> f) {
    return {std::move(name), "integer", "", "", 0,
            [f = std::move(f)](const json::value& o, auto) -> json::value { return f(o); }};
}

inline void append_columns(std::vector<TableColumn>& to, std::vector<TableColumn> more) {
    for (auto& c : more) to.push_back(std::move(c));
}

/// A terminated container's reason as kubectl words it: its reason, else its signal or exit code.
inline std::string terminated_reason(const json::value& t, std::string_view prefix) {
    auto reason = str(t, {"reason"});
    if (!reason.empty()) return std::string(prefix) + reason;
    const auto* sig = at(t, {"signal"});
    if (sig && sig->is_number() && sig->to_number<std::int64_t>() != 0)
        return std::string(prefix) + "Signal:" + std::to_string(sig->to_number<std::int64_t>());
    const auto* code = at(t, {"exitCode"});
    return std::string(prefix) + "ExitCode:" + std::to_string(code && code->is_number() ? code->to_number<std::int64_t>() : 0);
}

inline bool condition_true(const json::value& obj, std::string_view type) {
    if (const auto* conds = at(obj, {"status", "conditions"}); conds && conds->is_array())
        for (const auto& c : conds->get_array())
            if (str(c, {"type"}) == type) return str(c, {"status"}) == "True";
    return false;
}

/// The STATUS kubectl prints for a pod (printPod's rules): the phase or reason (SchedulingGated
/// while its PodScheduled condition says so); an init
/// container's state while initializing (Init:N/M, Init:Error, Init:CrashLoopBackOff, ...);
/// else the first container with a waiting or terminated reason; Terminating while deleting.
inline std::string pod_status(const json::value& pod) {
    std::string phase = str(pod, {"status", "phase"});
    std::string reason = str(pod, {"status", "reason"}, phase);
    // A pod held by scheduling gates (the API server sets this condition when it stores one).
    if (const auto* cs = at(pod, {"status", "conditions"}); cs && cs->is_array())
        for (const auto& c : cs->get_array())
            if (str(c, {"type"}) == "PodScheduled" && str(c, {"reason"}) == "SchedulingGated") reason = "SchedulingGated";
    bool initializing = false;
    std::size_t inits = count(pod, {"spec", "initContainers"});
    if (const auto* is = at(pod, {"status", "initContainerStatuses"}); is && is->is_array()) {
        const auto& arr = is->get_array();
        for (std::size_t i = 0; i < arr.size(); ++i) {
            const auto& c = arr[i];
            const auto* terminated = at(c, {"state", "terminated"});
            const auto* code = terminated ? at(*terminated, {"exitCode"}) : nullptr;
            if (terminated && code && code->is_number() && code->to_number<std::int64_t>() == 0) continue;
            auto waiting = str(c, {"state", "waiting", "reason"});
            if (terminated) reason = terminated_reason(*terminated, "Init:");
            else if (!waiting.empty() && waiting != "PodInitializing") reason = "Init:" + waiting;
            else reason = "Init:" + std::to_string(i) + "/" + std::to_string(inits);
            initializing = true;
            break;
        }
    }
    if (!initializing || condition_true(pod, "Initialized")) {
        bool running = false;
        if (const auto* cs = at(pod, {"status", "containerStatuses"}); cs && cs->is_array()) {
            const auto& arr = cs->get_array();
            for (std::size_t i = arr.size(); i-- > 0;) {
                const auto& c = arr[i];
                auto waiting = str(c, {"state", "waiting", "reason"});
                const auto* terminated = at(c, {"state", "terminated"});
                const auto* ready = at(c, {"ready"});
                if (!waiting.empty()) reason = waiting;
                else if (terminated) reason = terminated_reason(*terminated, "");
                else if (ready && ready->is_bool() && ready->get_bool() && at(c, {"state", "running"})) running = true;
            }
        }
        if (reason == "Completed" && running) reason = condition_true(pod, "Ready") ? "Running" : "NotReady";
    }
    if (!str(pod, {"metadata", "deletionTimestamp"}).empty() && phase != "Succeeded" && phase != "Failed")
        reason = "Terminating";
    return reason;
}

inline std::string node_status(const json::value& node) {
    std::string s = "Unknown";
    if (const auto* conds = at(node, {"status", "conditions"}); conds && conds->is_array())
        for (const auto& c : conds->get_array())
            if (str(c, {"type"}) == "Ready") s = str(c, {"status"}) == "True" ? "Ready" : "NotReady";
    if (const auto* u = at(node, {"spec", "unschedulable"}); u && u->is_bool() && u->get_bool())
        s += ",SchedulingDisabled";
    return s;
}

inline std::string node_roles(const json::value& node) {
    std::string roles;
    if (const auto* labels = at(node, {"metadata", "labels"}); labels && labels->is_object())
        for (const auto& kv : labels->get_object()) {
            std::string_view k = kv.key();
            constexpr std::string_view prefix = "node-role.kubernetes.io/";
            if (k.starts_with(prefix) && k.size() > prefix.size())
                roles += (roles.empty() ? "" : ",") + std::string(k.substr(prefix.size()));
        }
    return roles.empty() ? "<none>" : roles;
}

/// A CRD printer column cell: the first JSONPath result, typed as the column says.
inline json::value printer_cell(const json::value& obj, const std::string& path, const std::string& type,
                                std::chrono::system_clock::time_point now) {
    std::vector<json::value> results;
    try {
        std::string expr = path.starts_with("{") ? path : "{" + path + "}";
        results = jsonpath_query(obj, expr);
    } catch (const std::exception&) {
        return nullptr;
    }
    if (results.empty() || results.front().is_null()) return nullptr;
    const auto& v = results.front();
    if (type == "date") return v.is_string() ? json::value(json::string(age_of(v.get_string(), now))) : nullptr;
    if (type == "integer" && v.is_number()) return v;
    if (type == "number" && v.is_number()) return v;
    if (type == "boolean" && v.is_bool()) return v;
    if (v.is_string()) return v;
    return json::string(json::serialize(v));
}

} // namespace table_detail

/// The Event columns of 1.32's printers (printEvent, wide as the server always prints): the
/// times fall back from lastTimestamp to firstTimestamp to eventTime, and a series' own
/// lastObservedTime and count win; the source is the reporting controller and instance when
/// the event has no source. Cells read the core/v1 form.
namespace table_detail {

/// "a, b, c + N more..." as kubectl's listWithMoreString: at most three entries, "<unset>"
/// for none when `unset` says so.
inline std::string list_with_more(const std::vector<std::string>& all, std::string_view unset) {
    std::string out;
    for (std::size_t i = 0; i < all.size() && i < 3; ++i) out += (i ? "," : "") + all[i];
    if (all.size() > 3) return out + " + " + std::to_string(all.size() - 3) + " more...";
    return out.empty() ? std::string(unset) : out;
}

/// A Service's columns: TYPE, CLUSTER-IP, EXTERNAL-IP, PORT(S), AGE, SELECTOR (wide).
inline std::vector<TableColumn> service_columns() {
    std::vector<TableColumn> cols;
    cols.push_back(string_column("Type", [](const json::value& o) { return str(o, {"spec", "type"}); }));
    cols.push_back(string_column("Cluster-IP", [](const json::value& o) { return str(o, {"spec", "clusterIP"}, "<none>"); }));
    cols.push_back(string_column("External-IP", [](const json::value& o) {
        auto type = str(o, {"spec", "type"});
        std::vector<std::string> ips;
        if (type == "ExternalName") return str(o, {"spec", "externalName"});
        if (type == "LoadBalancer")
            if (const auto* ing = at(o, {"status", "loadBalancer", "ingress"}); ing && ing->is_array())
                for (const auto& i : ing->get_array()) ips.push_back(str(i, {"ip"}).empty() ? str(i, {"hostname"}) : str(i, {"ip"}));
        if (const auto* ext = at(o, {"spec", "externalIPs"}); ext && ext->is_array())
            for (const auto& e : ext->get_array())
                if (e.is_string()) ips.emplace_back(e.get_string());
        std::string out;
        for (const auto& ip : ips) out += (out.empty() ? "" : ",") + ip;
        if (out.empty()) return std::string(type == "LoadBalancer" ? "<pending>" : "<none>");
        return out;
    }));
    cols.push_back(string_column("Port(s)", [](const json::value& o) {
        std::string out;
        if (const auto* ps = at(o, {"spec", "ports"}); ps && ps->is_array())
            for (const auto& p : ps->get_array()) {
                const auto* port = at(p, {"port"});
                const auto* node = at(p, {"nodePort"});
                std::string one = port && port->is_int64() ? std::to_string(port->get_int64()) : "0";
                if (node && node->is_int64() && node->get_int64() != 0) one += ":" + std::to_string(node->get_int64());
                out += (out.empty() ? "" : ",") + one + "/" + str(p, {"protocol"});
            }
        return out.empty() ? std::string("<none>") : out;
    }));
    cols.push_back(age_column());
    cols.push_back(string_column("Selector", [](const json::value& o) {
        std::vector<std::string> kv;
        if (const auto* sel = at(o, {"spec", "selector"}); sel && sel->is_object())
            for (const auto& e : sel->get_object())
                kv.push_back(std::string(e.key()) + "=" + (e.value().is_string() ? std::string(e.value().get_string()) : ""));
        std::sort(kv.begin(), kv.end());
        std::string out;
        for (const auto& e : kv) out += (out.empty() ? "" : ",") + e;
        return out.empty() ? std::string("<none>") : out;
    }, 1));
    return cols;
}

/// An Endpoints' ENDPOINTS: the ready addresses with each port (ip:port; the ip alone when
/// the subset has no ports), three at most; "<none>" without subsets.
inline std::string endpoints_cell(const json::value& o) {
    const auto* subsets = at(o, {"subsets"});
    if (!subsets || !subsets->is_array() || subsets->get_array().empty()) return "<none>";
    std::vector<std::string> all;
    for (const auto& ss : subsets->get_array()) {
        const auto* addrs = at(ss, {"addresses"});
        if (!addrs || !addrs->is_array()) continue;
        const auto* ports = at(ss, {"ports"});
        if (!ports || !ports->is_array() || ports->get_array().empty()) {
            for (const auto& a : addrs->get_array()) all.push_back(str(a, {"ip"}));
            continue;
        }
        for (const auto& p : ports->get_array())
            for (const auto& a : addrs->get_array()) {
                const auto* n = at(p, {"port"});
                all.push_back(str(a, {"ip"}) + ":" + (n && n->is_int64() ? std::to_string(n->get_int64()) : "0"));
            }
    }
    return list_with_more(all, "");
}

/// An EndpointSlice's columns: ADDRESSTYPE, PORTS, ENDPOINTS (every address, ready or not), AGE.
inline std::vector<TableColumn> endpoint_slice_columns() {
    std::vector<TableColumn> cols;
    cols.push_back(string_column("AddressType", [](const json::value& o) { return str(o, {"addressType"}); }));
    cols.push_back(string_column("Ports", [](const json::value& o) {
        std::vector<std::string> all;
        if (const auto* ps = at(o, {"ports"}); ps && ps->is_array())
            for (const auto& p : ps->get_array()) {
                const auto* n = at(p, {"port"});
                const auto* name = at(p, {"name"});
                all.push_back(n && n->is_int64() ? std::to_string(n->get_int64())
                              : name && name->is_string() ? std::string(name->get_string()) : "*");
            }
        return list_with_more(all, "<unset>");
    }));
    cols.push_back(string_column("Endpoints", [](const json::value& o) {
        std::vector<std::string> all;
        if (const auto* es = at(o, {"endpoints"}); es && es->is_array())
            for (const auto& e : es->get_array())
                if (const auto* as = at(e, {"addresses"}); as && as->is_array())
                    for (const auto& a : as->get_array())
                        if (a.is_string()) all.emplace_back(a.get_string());
        return list_with_more(all, "<unset>");
    }));
    cols.push_back(age_column());
    return cols;
}

/// A StatefulSet's columns: READY (ready/desired), AGE, CONTAINERS and IMAGES (wide).
inline std::vector<TableColumn> statefulset_columns() {
    std::vector<TableColumn> cols;
    cols.push_back(string_column("Ready", [](const json::value& o) {
        const auto* ready = at(o, {"status", "readyReplicas"});
        const auto* want = at(o, {"spec", "replicas"});
        return std::to_string(ready && ready->is_int64() ? ready->get_int64() : 0) + "/" +
               std::to_string(want && want->is_int64() ? want->get_int64() : 0);
    }));
    cols.push_back(age_column());
    auto containers = [](std::string_view field) {
        return [field](const json::value& o) {
            std::string out;
            if (const auto* cs = at(o, {"spec", "template", "spec", "containers"}); cs && cs->is_array())
                for (const auto& c : cs->get_array()) out += (out.empty() ? "" : ",") + str(c, {field});
            return out;
        };
    };
    cols.push_back(string_column("Containers", containers("name"), 1));
    cols.push_back(string_column("Images", containers("image"), 1));
    return cols;
}

/// printJob: STATUS (Complete, Failed, Terminating, Suspended, FailureTarget,
/// SuccessCriteriaMet, else Running), COMPLETIONS (succeeded/completions, or n/1 [of
/// parallelism] without completions), DURATION (start to completion, or to now), AGE; wide:
/// CONTAINERS, IMAGES, SELECTOR.
inline std::vector<TableColumn> job_columns() {
    std::vector<TableColumn> cols;
    cols.push_back(string_column("Status", [](const json::value& o) -> std::string {
        if (condition_true(o, "Complete")) return "Complete";
        if (condition_true(o, "Failed")) return "Failed";
        if (!str(o, {"metadata", "deletionTimestamp"}).empty()) return "Terminating";
        for (const char* c : {"Suspended", "FailureTarget", "SuccessCriteriaMet"})
            if (condition_true(o, c)) return c;
        return "Running";
    }));
    cols.push_back(string_column("Completions", [](const json::value& o) {
        const auto done = std::to_string(integer(o, {"status", "succeeded"}));
        if (at(o, {"spec", "completions"})) return done + "/" + std::to_string(integer(o, {"spec", "completions"}));
        const auto parallelism = integer(o, {"spec", "parallelism"});
        return parallelism > 1 ? done + "/1 of " + std::to_string(parallelism) : done + "/1";
    }));
    cols.push_back(TableColumn{"Duration", "string", "", "Time required to complete the job.", 0,
                               [](const json::value& o, auto now) -> json::value {
                                   auto start = parse_timestamp(str(o, {"status", "startTime"}));
                                   if (!start) return json::string();
                                   auto end = parse_timestamp(str(o, {"status", "completionTime"}));
                                   return json::string(human_duration(
                                       std::chrono::duration_cast<std::chrono::seconds>((end ? *end : now) - *start)));
                               }});
    cols.push_back(age_column());
    return cols;
}

} // namespace table_detail

inline std::vector<TableColumn> event_columns() {
    using namespace table_detail;
    using Clock = std::chrono::system_clock;
    auto first_seen = [](const json::value& o, Clock::time_point now) {
        auto first = str(o, {"firstTimestamp"});
        return age_of(first.empty() ? str(o, {"eventTime"}) : first, now);
    };
    auto described = [](std::string name, std::string description, int priority = 0) {
        TableColumn c;
        c.name = std::move(name);
        c.description = std::move(description);
        c.priority = priority;
        return c;
    };
    std::vector<TableColumn> cols;
    cols.push_back(described("Last Seen", "The time at which the most recent occurrence of this event was recorded."));
    cols.back().cell = [first_seen](const json::value& o, Clock::time_point now) -> json::value {
        if (const auto* series = at(o, {"series"}); series && series->is_object())
            return json::string(age_of(str(*series, {"lastObservedTime"}), now));
        auto last = str(o, {"lastTimestamp"});
        return json::string(last.empty() ? first_seen(o, now) : age_of(last, now));
    };
    cols.push_back(described("Type", "Type of this event (Normal, Warning), new types could be added in the future"));
    cols.back().cell = [](const json::value& o, auto) -> json::value { return json::string(str(o, {"type"})); };
    cols.push_back(described("Reason", "This should be a short, machine understandable string that gives the reason "
                                       "for the transition into the object's current status."));
    cols.back().cell = [](const json::value& o, auto) -> json::value { return json::string(str(o, {"reason"})); };
    cols.push_back(described("Object", "The object that this event is about."));
    cols.back().cell = [](const json::value& o, auto) -> json::value {
        auto kind = str(o, {"involvedObject", "kind"});
        for (auto& c : kind) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        auto name = str(o, {"involvedObject", "name"});
        return json::string(name.empty() ? kind : kind + "/" + name);
    };
    cols.push_back(described("Subobject", "If referring to a piece of an object instead of an entire object, this "
                                          "string should contain a valid JSON/Go field access statement, such as "
                                          "desiredState.manifest.containers[2]. For example, if the object reference "
                                          "is to a container within a pod, this would take on a value like: "
                                          "\"spec.containers{name}\" (where \"name\" refers to the name of the "
                                          "container that triggered the event) or if no container name is specified "
                                          "\"spec.containers[2]\" (container with index 2 in this pod). This syntax "
                                          "is chosen only to have some well-defined way of referencing a part of an "
                                          "object.", 1));
    cols.back().cell = [](const json::value& o, auto) -> json::value {
        return json::string(str(o, {"involvedObject", "fieldPath"}));
    };
    cols.push_back(described("Source", "The component reporting this event. Should be a short machine understandable "
                                       "string.", 1));
    cols.back().cell = [](const json::value& o, auto) -> json::value {
        auto component = str(o, {"source", "component"});
        if (component.empty()) component = str(o, {"reportingComponent"});
        auto instance = str(o, {"source", "host"});
        if (instance.empty()) instance = str(o, {"reportingInstance"});
        return json::string(instance.empty() ? component : component + ", " + instance);
    };
    cols.push_back(described("Message", "A human-readable description of the status of this operation."));
    cols.back().cell = [](const json::value& o, auto) -> json::value {
        auto m = str(o, {"message"});
        auto b = m.find_first_not_of(" \t\r\n\v\f");
        auto e = m.find_last_not_of(" \t\r\n\v\f");
        return json::string(b == std::string::npos ? std::string() : m.substr(b, e - b + 1));
    };
    cols.push_back(described("First Seen", "The time at which the event was first recorded. (Time of server receipt "
                                           "is in TypeMeta.)", 1));
    cols.back().cell = [first_seen](const json::value& o, Clock::time_point now) -> json::value {
        return json::string(first_seen(o, now));
    };
    cols.push_back(described("Count", "The number of times this event has occurred.", 1));
    cols.back().cell = [](const json::value& o, auto) -> json::value {
        auto number = [](const json::value* v) -> std::int64_t {
            return v && (v->is_int64() || v->is_uint64()) ? v->to_number<std::int64_t>() : 0;
        };
        if (const auto* series = at(o, {"series"}); series && series->is_object()) return number(at(*series, {"count"}));
        auto n = number(at(o, {"count"}));
        return n == 0 ? 1 : n;  // a singleton event of the new API has no count
    };
    auto name = name_column();
    name.priority = 1;
    cols.push_back(std::move(name));
    return cols;
}

namespace table_detail {
/// The wide columns of the workloads (Deployments, ReplicaSets, StatefulSets): their
/// template's container names and images, and the selector (when `with_selector`).
inline void append_template_columns(std::vector<TableColumn>& cols, bool with_selector) {
    auto joined = [](std::string_view key) {
        return [key](const json::value& o) {
            std::string s;
            if (const auto* cs = at(o, {"spec", "template", "spec", "containers"}); cs && cs->is_array())
                for (const auto& c : cs->get_array()) s += (s.empty() ? "" : ",") + str(c, {key});
            return s;
        };
    };
    cols.push_back(string_column("Containers", joined("name"), 1));
    cols.push_back(string_column("Images", joined("image"), 1));
    if (with_selector)
        cols.push_back(string_column("Selector", [](const json::value& o) {
            const auto* sel = at(o, {"spec", "selector"});
            if (!sel || !sel->is_object()) return std::string("<none>");
            try {
                auto text = api::LabelSelector::from_json(*sel).to_string();
                return text.empty() ? std::string("<none>") : text;
            } catch (const std::exception&) {
                return std::string("<error>");
            }
        }, 1));
}
} // namespace table_detail

/// The columns for a resource: built-in ones by plural, a CRD's printer columns, or NAME/AGE.
/// A version served from another's storage prints as that one does (the real server prints
/// the internal object, whatever version was asked for): its cells read the stored form.
inline std::vector<TableColumn> table_columns(const ResourceInfo& r) {
    using namespace table_detail;
    if (r.converts_on_write()) {
        ResourceInfo stored = r;
        stored.group = r.storage_group();
        stored.storage_api_version.clear();
        auto cols = table_columns(stored);
        // List items of built-ins carry no kind: it is named for the conversion.
        for (auto& c : cols)
            c.cell = [cell = std::move(c.cell), version = r.storage_api_version, kind = r.kind](const json::value& o,
                                                                                                  auto now) {
                json::value typed = o;
                if (auto* obj = typed.if_object()) (*obj)["kind"] = kind;
                return cell(convert_to_version(typed, version), now);
            };
        return cols;
    }
    std::vector<TableColumn> cols{name_column()};
    if (r.custom) {
        if (r.printer_columns.empty()) {
            cols.push_back(age_column());
            return cols;
        }
        for (const auto& pc : r.printer_columns) {
            if (!pc.is_object()) continue;
            TableColumn c;
            c.name = str(pc, {"name"});
            std::string type = str(pc, {"type"}, "string");
            c.type = type == "date" ? "date" : type;
            c.format = str(pc, {"format"});
            c.description = str(pc, {"description"});
            if (const auto* p = at(pc, {"priority"}); p && p->is_number()) c.priority = p->to_number<int>();
            std::string path = str(pc, {"jsonPath"});
            c.cell = [path, type](const json::value& o, auto now) { return printer_cell(o, path, type, now); };
            cols.push_back(std::move(c));
        }
        return cols;
    }
    const std::string& p = r.plural;
    if (p == "pods") {
        cols.push_back(string_column("Ready", [](const json::value& o) {
            std::size_t ready = 0;
            if (const auto* cs = at(o, {"status", "containerStatuses"}); cs && cs->is_array())
                for (const auto& c : cs->get_array())
                    if (const auto* b = at(c, {"ready"}); b && b->is_bool() && b->get_bool()) ++ready;
            return std::to_string(ready) + "/" + std::to_string(count(o, {"spec", "containers"}));
        }));
        cols.push_back(string_column("Status", pod_status));
        cols.push_back(integer_column("Restarts", [](const json::value& o) {
            std::int64_t n = 0;
            if (const auto* cs = at(o, {"status", "containerStatuses"}); cs && cs->is_array())
                for (const auto& c : cs->get_array())
                    if (const auto* rc = at(c, {"restartCount"}); rc && rc->is_number()) n += rc->to_number<std::int64_t>();
            return n;
        }));
        cols.push_back(age_column());
        cols.push_back(string_column("IP", [](const json::value& o) { return str(o, {"status", "podIP"}, "<none>"); }, 1));
        cols.push_back(string_column("Node", [](const json::value& o) { return str(o, {"spec", "nodeName"}, "<none>"); }, 1));
        cols.push_back(string_column("Nominated Node", [](const json::value& o) {
            return str(o, {"status", "nominatedNodeName"}, "<none>");
        }, 1));
        cols.push_back(string_column("Readiness Gates", [](const json::value& o) {
            std::size_t gates = count(o, {"spec", "readinessGates"});
            if (gates == 0) return std::string("<none>");
            std::size_t met = 0;
            if (const auto* rg = at(o, {"spec", "readinessGates"}); rg && rg->is_array())
                for (const auto& g : rg->get_array())
                    if (condition_true(o, str(g, {"conditionType"}))) ++met;
            return std::to_string(met) + "/" + std::to_string(gates);
        }, 1));
    } else if (p == "nodes") {
        cols.push_back(string_column("Status", table_detail::node_status));
        cols.push_back(string_column("Roles", node_roles));
        cols.push_back(age_column());
        cols.push_back(string_column("Version", [](const json::value& o) {
            return str(o, {"status", "nodeInfo", "kubeletVersion"});
        }));
        auto address = [](std::string type) {
            return [type](const json::value& o) {
                if (const auto* as = at(o, {"status", "addresses"}); as && as->is_array())
                    for (const auto& a : as->get_array())
                        if (str(a, {"type"}) == type) return str(a, {"address"});
                return std::string("<none>");
            };
        };
        auto info = [](std::string_view key) {
            return [key](const json::value& o) { return str(o, {"status", "nodeInfo", key}, "<unknown>"); };
        };
        cols.push_back(string_column("Internal-IP", address("InternalIP"), 1));
        cols.push_back(string_column("External-IP", address("ExternalIP"), 1));
        cols.push_back(string_column("OS-Image", info("osImage"), 1));
        cols.push_back(string_column("Kernel-Version", info("kernelVersion"), 1));
        cols.push_back(string_column("Container-Runtime", info("containerRuntimeVersion"), 1));
    } else if (p == "namespaces") {
        cols.push_back(string_column("Status", [](const json::value& o) { return str(o, {"status", "phase"}, "Active"); }));
        cols.push_back(age_column());
    } else if (p == "configmaps") {
        cols.push_back(integer_column("Data", [](const json::value& o) {
            return static_cast<std::int64_t>(count(o, {"data"}) + count(o, {"binaryData"}));
        }));
        cols.push_back(age_column());
    } else if (p == "secrets") {
        cols.push_back(string_column("Type", [](const json::value& o) { return str(o, {"type"}, "Opaque"); }));
        cols.push_back(integer_column("Data", [](const json::value& o) {
            return static_cast<std::int64_t>(count(o, {"data"}));
        }));
        cols.push_back(age_column());
    } else if (p == "persistentvolumes") {
        cols.push_back(string_column("Capacity", [](const json::value& o) { return str(o, {"spec", "capacity", "storage"}); }));
        cols.push_back(string_column("Access Modes", [](const json::value& o) {
            std::string s;
            if (const auto* m = at(o, {"spec", "accessModes"}); m && m->is_array())
                for (const auto& e : m->get_array()) {
                    std::string_view v = e.is_string() ? std::string_view(e.get_string()) : "";
                    std::string abbr = v == "ReadWriteOnce" ? "RWO" : v == "ReadOnlyMany" ? "ROX"
                                     : v == "ReadWriteMany" ? "RWX" : v == "ReadWriteOncePod" ? "RWOP" : std::string(v);
                    s += (s.empty() ? "" : ",") + abbr;
                }
            return s;
        }));
        cols.push_back(string_column("Reclaim Policy", [](const json::value& o) {
            return str(o, {"spec", "persistentVolumeReclaimPolicy"}, "Retain");
        }));
        cols.push_back(string_column("Status", [](const json::value& o) { return str(o, {"status", "phase"}, "Pending"); }));
        cols.push_back(string_column("Claim", [](const json::value& o) {
            auto n = str(o, {"spec", "claimRef", "name"});
            return n.empty() ? std::string() : str(o, {"spec", "claimRef", "namespace"}) + "/" + n;
        }));
        cols.push_back(string_column("StorageClass", [](const json::value& o) { return str(o, {"spec", "storageClassName"}); }));
        cols.push_back(age_column());
    } else if (p == "persistentvolumeclaims") {
        cols.push_back(string_column("Status", [](const json::value& o) { return str(o, {"status", "phase"}, "Pending"); }));
        cols.push_back(string_column("Volume", [](const json::value& o) { return str(o, {"spec", "volumeName"}); }));
        cols.push_back(string_column("Capacity", [](const json::value& o) { return str(o, {"status", "capacity", "storage"}); }));
        cols.push_back(string_column("StorageClass", [](const json::value& o) { return str(o, {"spec", "storageClassName"}); }));
        cols.push_back(age_column());
    } else if (p == "deployments" && r.group == "apps") {
        cols.push_back(string_column("Ready", [](const json::value& o) {
            return std::to_string(integer(o, {"status", "readyReplicas"})) + "/" + std::to_string(integer(o, {"spec", "replicas"}));
        }));
        cols.push_back(integer_column("Up-to-date", [](const json::value& o) { return integer(o, {"status", "updatedReplicas"}); }));
        cols.push_back(integer_column("Available", [](const json::value& o) { return integer(o, {"status", "availableReplicas"}); }));
        cols.push_back(age_column());
        append_template_columns(cols, true);
    } else if (p == "replicasets" && r.group == "apps") {
        cols.push_back(integer_column("Desired", [](const json::value& o) { return integer(o, {"spec", "replicas"}); }));
        cols.push_back(integer_column("Current", [](const json::value& o) { return integer(o, {"status", "replicas"}); }));
        cols.push_back(integer_column("Ready", [](const json::value& o) { return integer(o, {"status", "readyReplicas"}); }));
        cols.push_back(age_column());
        append_template_columns(cols, true);
    } else if (p == "events") {
        cols = event_columns();
    } else if (p == "services" && r.group.empty()) {
        append_columns(cols, service_columns());
    } else if (p == "endpoints" && r.group.empty()) {
        cols.push_back(string_column("Endpoints", endpoints_cell));
        cols.push_back(age_column());
    } else if (p == "endpointslices" && r.group == "discovery.k8s.io") {
        append_columns(cols, endpoint_slice_columns());
    } else if (p == "statefulsets" && r.group == "apps") {
        append_columns(cols, statefulset_columns());
    } else if (p == "jobs" && r.group == "batch") {
        append_columns(cols, job_columns());
        append_template_columns(cols, true);
    } else if (p == "serviceaccounts") {
        cols.push_back(integer_column("Secrets", [](const json::value& o) {
            return static_cast<std::int64_t>(count(o, {"secrets"}));
        }));
        cols.push_back(age_column());
    } else if (p == "leases") {
        cols.push_back(string_column("Holder", [](const json::value& o) { return str(o, {"spec", "holderIdentity"}); }));
        cols.push_back(age_column());
    } else if (p == "storageclasses") {
        cols.push_back(string_column("Provisioner", [](const json::value& o) { return str(o, {"provisioner"}); }));
        cols.push_back(age_column());
    } else if (p == "customresourcedefinitions") {
        cols.push_back(TableColumn{"Created At", "date", "", "", 0, [](const json::value& o, auto) -> json::value {
            return json::string(str(o, {"metadata", "creationTimestamp"}));
        }});
    } else {
        cols.push_back(age_column());
    }
    return cols;
}

/// A Table of `items` (objects in the served version). `with_headers` = false leaves out the
/// column definitions, as the real server does for watch events after the first.
inline json::object make_table(const std::vector<TableColumn>& cols, const json::array& items, IncludeObject include,
                               const json::object& list_metadata, bool with_headers = true,
                               std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) {
    json::object t;
    t["kind"] = "Table";
    t["apiVersion"] = "meta.k8s.io/v1";
    t["metadata"] = list_metadata;
    json::array defs;
    if (with_headers)
        for (const auto& c : cols) {
            json::object d{{"name", c.name}, {"type", c.type}, {"format", c.format}, {"description", c.description},
                           {"priority", c.priority}};
            defs.push_back(std::move(d));
        }
    t["columnDefinitions"] = std::move(defs);
    json::array rows;
    for (const auto& item : items) {
        json::array cells;
        for (const auto& c : cols) cells.push_back(c.cell(item, now));
        json::object row{{"cells", std::move(cells)}};
        if (include == IncludeObject::Object) {
            row["object"] = item;
        } else if (include == IncludeObject::Metadata) {
            json::object partial{{"kind", "PartialObjectMetadata"}, {"apiVersion", "meta.k8s.io/v1"}};
            if (const auto* md = table_detail::at(item, {"metadata"})) partial["metadata"] = *md;
            row["object"] = std::move(partial);
        }
        rows.push_back(std::move(row));
    }
    t["rows"] = std::move(rows);
    return t;
}

/// Whether an Accept header asks for a meta.k8s.io/v1 Table (as=Table;g=meta.k8s.io;v=v1).
} // namespace vck::sandbox
