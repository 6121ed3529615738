// ProtobufBody: request bodies sent as application/vnd.kubernetes.protobuf (kubectl's typed
// create commands: create secret, configmap, namespace, serviceaccount, service, role, rolebinding,
// deployment, job, ...;
// kubectl auth's self reviews) turned into the same
// JSON object a client sending JSON would have sent, so the store sees no difference.
// Format: the magic "k8s\0", then a runtime.Unknown envelope {typeMeta{apiVersion, kind}, raw,
// contentEncoding, contentType} whose raw holds the object's message. Field numbers are the
// published ones of k8s.io/api core/v1, apps/v1, coordination/v1, rbac/v1, authorization/v1,
// authentication/v1 and apimachinery meta/v1; the tables
// below are our own, read by protobuf's CodedInputStream (the library does the wire format).
// Guarantees, as kube-apiserver's protobuf decoder and its JSON encoder behave:
// - proto2 presence: a field absent on the wire is absent in JSON; a present zero value is
//   dropped when Go's field is a plain omitempty value, kept when Go's field is a pointer
//   (immutable: false stays false) or has no omitempty (ownerReferences' names);
// - meta/v1 Time and MicroTime {seconds, nanos} become RFC 3339 strings in UTC (MicroTime
//   with microseconds); an empty Time (what Go writes for an unset time) is absent;
// - maps are their entry messages (key 1, value 2), bytes (Secret.data) are base64;
// - unknown fields are skipped, as Go's generated decoders skip them;
// - a kind without a table here is ProtobufBodyError::Unsupported (the caller answers 415
//   naming protobuf_kinds_accepted()), anything that is not a well-formed envelope and message
//   (wrong magic, truncated, a wrong wire type) is ProtobufBodyError::Malformed (400).
// Only this header includes protobuf; keep it out of headers that do not decode bodies.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/time.hpp>
#include <vck/client/base64.hpp>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace vck::sandbox {

/// The media type kube-apiserver's protobuf serializer answers to (parameters stripped).
inline constexpr std::string_view protobuf_media_type = "application/vnd.kubernetes.protobuf";

struct ProtobufBodyError : std::runtime_error {
    enum class Kind { Unsupported, Malformed };
    ProtobufBodyError(Kind k, const std::string& what) : std::runtime_error(what), kind(k) {}
    Kind kind;
};

namespace protobuf_body_detail {

namespace json = boost::json;
using google::protobuf::io::CodedInputStream;
using WFL = google::protobuf::internal::WireFormatLite;

enum class Type {
    String,     // optional string
    Bytes,      // optional bytes, base64 in JSON
    Bool,
    Int32,
    Int64,
    Message,    // a nested message, an object in JSON (present even when empty, as Go writes it)
    Time,       // meta/v1 Time: RFC 3339, seconds
    MicroTime,  // meta/v1 MicroTime: RFC 3339, microseconds
    FieldsV1,   // meta/v1 FieldsV1: its Raw (field 1) is the JSON itself
    StringMap,  // map<string, string>
    BytesMap,   // map<string, bytes>
    Strings,    // repeated string
    Messages,   // repeated message
    IntOrString,  // util/intstr IntOrString {type, intVal, strVal}: a number or a string in JSON
};

struct Message;

struct Field {
    int number;
    std::string_view json;
    Type type;
    const Message* message = nullptr;  // Message and Messages
    bool keep_zero = false;            // Go pointer (or not omitempty): a present zero stays
};

struct Message {
    std::span<const Field> fields;
};

constexpr bool kKeep = true;

// meta/v1 (apimachinery pkg/apis/meta/v1/generated.proto), in Go's field order.
inline constexpr Field owner_reference_fields[] = {
    {5, "apiVersion", Type::String, nullptr, kKeep}, {1, "kind", Type::String, nullptr, kKeep},
    {3, "name", Type::String, nullptr, kKeep},       {4, "uid", Type::String, nullptr, kKeep},
    {6, "controller", Type::Bool, nullptr, kKeep},   {7, "blockOwnerDeletion", Type::Bool, nullptr, kKeep},
};
inline constexpr Message owner_reference{owner_reference_fields};
inline constexpr Field managed_fields_entry_fields[] = {
    {1, "manager", Type::String},   {2, "operation", Type::String}, {3, "apiVersion", Type::String},
    {4, "time", Type::Time},        {6, "fieldsType", Type::String}, {7, "fieldsV1", Type::FieldsV1},
    {8, "subresource", Type::String},
};
inline constexpr Message managed_fields_entry{managed_fields_entry_fields};
inline constexpr Field object_meta_fields[] = {
    {1, "name", Type::String},
    {2, "generateName", Type::String},
    {3, "namespace", Type::String},
    {4, "selfLink", Type::String},
    {5, "uid", Type::String},
    {6, "resourceVersion", Type::String},
    {7, "generation", Type::Int64},
    {8, "creationTimestamp", Type::Time},
    {9, "deletionTimestamp", Type::Time},
    {10, "deletionGracePeriodSeconds", Type::Int64, nullptr, kKeep},
    {11, "labels", Type::StringMap},
    {12, "annotations", Type::StringMap},
    {13, "ownerReferences", Type::Messages, &owner_reference},
    {14, "finalizers", Type::Strings},
    {17, "managedFields", Type::Messages, &managed_fields_entry},
};
inline constexpr Message object_meta{object_meta_fields};

// core/v1 (k8s.io/api core/v1/generated.proto).
inline constexpr Field object_reference_fields[] = {
    {1, "kind", Type::String},       {2, "namespace", Type::String},       {3, "name", Type::String},
    {4, "uid", Type::String},        {5, "apiVersion", Type::String},      {6, "resourceVersion", Type::String},
    {7, "fieldPath", Type::String},
};
inline constexpr Message object_reference{object_reference_fields};
inline constexpr Field local_object_reference_fields[] = {{1, "name", Type::String}};
inline constexpr Message local_object_reference{local_object_reference_fields};

inline constexpr Field secret_fields[] = {
    {1, "metadata", Type::Message, &object_meta}, {5, "immutable", Type::Bool, nullptr, kKeep},
    {2, "data", Type::BytesMap},                  {4, "stringData", Type::StringMap},
    {3, "type", Type::String},
};
inline constexpr Field config_map_fields[] = {
    {1, "metadata", Type::Message, &object_meta}, {4, "immutable", Type::Bool, nullptr, kKeep},
    {2, "data", Type::StringMap},                 {3, "binaryData", Type::BytesMap},
};
inline constexpr Field namespace_spec_fields[] = {{1, "finalizers", Type::Strings}};
inline constexpr Message namespace_spec{namespace_spec_fields};
inline constexpr Field namespace_condition_fields[] = {
    {1, "type", Type::String, nullptr, kKeep}, {2, "status", Type::String, nullptr, kKeep},
    {4, "lastTransitionTime", Type::Time},     {5, "reason", Type::String},
    {6, "message", Type::String},
};
inline constexpr Message namespace_condition{namespace_condition_fields};
inline constexpr Field namespace_status_fields[] = {
    {1, "phase", Type::String}, {2, "conditions", Type::Messages, &namespace_condition}};
inline constexpr Message namespace_status{namespace_status_fields};
inline constexpr Field namespace_fields[] = {
    {1, "metadata", Type::Message, &object_meta},
    {2, "spec", Type::Message, &namespace_spec},
    {3, "status", Type::Message, &namespace_status},
};
inline constexpr Field service_account_fields[] = {
    {1, "metadata", Type::Message, &object_meta},
    {2, "secrets", Type::Messages, &object_reference},
    {3, "imagePullSecrets", Type::Messages, &local_object_reference},
    {4, "automountServiceAccountToken", Type::Bool, nullptr, kKeep},
};
inline constexpr Field int_or_string_fields[] = {
    {1, "type", Type::Int64, nullptr, kKeep}, {2, "intVal", Type::Int32, nullptr, kKeep}, {3, "strVal", Type::String, nullptr, kKeep}};
inline constexpr Message int_or_string{int_or_string_fields};
// What kubectl create service and kubectl expose send. Pointers in Go: ipFamilyPolicy,
// allocateLoadBalancerNodePorts, loadBalancerClass, internalTrafficPolicy,
// trafficDistribution, appProtocol; port has no omitempty.
inline constexpr Field service_port_fields[] = {
    {1, "name", Type::String},           {2, "protocol", Type::String},
    {6, "appProtocol", Type::String, nullptr, kKeep}, {3, "port", Type::Int32, nullptr, kKeep},
    {4, "targetPort", Type::IntOrString, &int_or_string}, {5, "nodePort", Type::Int32},
};
inline constexpr Message service_port{service_port_fields};
inline constexpr Field client_ip_config_fields[] = {{1, "timeoutSeconds", Type::Int32, nullptr, kKeep}};
inline constexpr Message client_ip_config{client_ip_config_fields};
inline constexpr Field session_affinity_config_fields[] = {{1, "clientIP", Type::Message, &client_ip_config}};
inline constexpr Message session_affinity_config{session_affinity_config_fields};
inline constexpr Field service_spec_fields[] = {
    {1, "ports", Type::Messages, &service_port},
    {2, "selector", Type::StringMap},
    {3, "clusterIP", Type::String},
    {18, "clusterIPs", Type::Strings},
    {4, "type", Type::String},
    {5, "externalIPs", Type::Strings},
    {7, "sessionAffinity", Type::String},
    {8, "loadBalancerIP", Type::String},
    {9, "loadBalancerSourceRanges", Type::Strings},
    {10, "externalName", Type::String},
    {11, "externalTrafficPolicy", Type::String},
    {12, "healthCheckNodePort", Type::Int32},
    {13, "publishNotReadyAddresses", Type::Bool},
    {14, "sessionAffinityConfig", Type::Message, &session_affinity_config},
    {19, "ipFamilies", Type::Strings},
    {17, "ipFamilyPolicy", Type::String, nullptr, kKeep},
    {20, "allocateLoadBalancerNodePorts", Type::Bool, nullptr, kKeep},
    {21, "loadBalancerClass", Type::String, nullptr, kKeep},
    {22, "internalTrafficPolicy", Type::String, nullptr, kKeep},
    {23, "trafficDistribution", Type::String, nullptr, kKeep},
};
inline constexpr Message service_spec{service_spec_fields};
inline constexpr Field service_fields[] = {
    {1, "metadata", Type::Message, &object_meta}, {2, "spec", Type::Message, &service_spec}};
inline constexpr Field event_source_fields[] = {{1, "component", Type::String}, {2, "host", Type::String}};
inline constexpr Message event_source{event_source_fields};
inline constexpr Field event_series_fields[] = {{1, "count", Type::Int32}, {2, "lastObservedTime", Type::MicroTime}};
inline constexpr Message event_series{event_series_fields};
inline constexpr Field event_fields[] = {
    {1, "metadata", Type::Message, &object_meta},
    {2, "involvedObject", Type::Message, &object_reference},
    {3, "reason", Type::String},
    {4, "message", Type::String},
    {5, "source", Type::Message, &event_source},
    {6, "firstTimestamp", Type::Time},
    {7, "lastTimestamp", Type::Time},
    {8, "count", Type::Int32},
    {9, "type", Type::String},
    {10, "eventTime", Type::MicroTime},
    {11, "series", Type::Message, &event_series},
    {12, "action", Type::String},
    {13, "related", Type::Message, &object_reference},
    {14, "reportingComponent", Type::String},
    {15, "reportingInstance", Type::String},
};

// coordination/v1 (k8s.io/api coordination/v1/generated.proto): LeaseSpec's fields are pointers.
inline constexpr Field lease_spec_fields[] = {
    {1, "holderIdentity", Type::String, nullptr, kKeep},     {2, "leaseDurationSeconds", Type::Int32, nullptr, kKeep},
    {3, "acquireTime", Type::MicroTime},                     {4, "renewTime", Type::MicroTime},
    {5, "leaseTransitions", Type::Int32, nullptr, kKeep},    {6, "strategy", Type::String, nullptr, kKeep},
    {7, "preferredHolder", Type::String, nullptr, kKeep},
};
inline constexpr Message lease_spec{lease_spec_fields};
inline constexpr Field lease_fields[] = {
    {1, "metadata", Type::Message, &object_meta}, {2, "spec", Type::Message, &lease_spec}};

// meta/v1 LabelSelector, for aggregationRule.
inline constexpr Field label_selector_requirement_fields[] = {
    {1, "key", Type::String, nullptr, kKeep}, {2, "operator", Type::String, nullptr, kKeep}, {3, "values", Type::Strings}};
inline constexpr Message label_selector_requirement{label_selector_requirement_fields};
inline constexpr Field label_selector_fields[] = {
    {1, "matchLabels", Type::StringMap}, {2, "matchExpressions", Type::Messages, &label_selector_requirement}};
inline constexpr Message label_selector{label_selector_fields};

// rbac/v1 (k8s.io/api rbac/v1/generated.proto): what kubectl create role/clusterrole/
// rolebinding/clusterrolebinding send.
inline constexpr Field policy_rule_fields[] = {
    {1, "verbs", Type::Strings}, {2, "apiGroups", Type::Strings}, {3, "resources", Type::Strings},
    {4, "resourceNames", Type::Strings}, {5, "nonResourceURLs", Type::Strings}};
inline constexpr Message policy_rule{policy_rule_fields};
inline constexpr Field aggregation_rule_fields[] = {{1, "clusterRoleSelectors", Type::Messages, &label_selector}};
inline constexpr Message aggregation_rule{aggregation_rule_fields};
inline constexpr Field role_fields[] = {
    {1, "metadata", Type::Message, &object_meta}, {2, "rules", Type::Messages, &policy_rule},
    {3, "aggregationRule", Type::Message, &aggregation_rule}};  // 3: ClusterRole only
inline constexpr Field role_ref_fields[] = {
    {1, "apiGroup", Type::String, nullptr, kKeep}, {2, "kind", Type::String, nullptr, kKeep}, {3, "name", Type::String, nullptr, kKeep}};
inline constexpr Message role_ref{role_ref_fields};
inline constexpr Field subject_fields[] = {
    {1, "kind", Type::String, nullptr, kKeep}, {2, "apiGroup", Type::String}, {3, "name", Type::String, nullptr, kKeep},
    {4, "namespace", Type::String}};
inline constexpr Message subject{subject_fields};
inline constexpr Field role_binding_fields[] = {
    {1, "metadata", Type::Message, &object_meta}, {2, "subjects", Type::Messages, &subject}, {3, "roleRef", Type::Message, &role_ref}};

// authorization/v1 and authentication/v1: the self reviews kubectl auth can-i and whoami send.
inline constexpr Field resource_attributes_fields[] = {
    {1, "namespace", Type::String}, {2, "verb", Type::String},        {3, "group", Type::String}, {4, "version", Type::String},
    {5, "resource", Type::String},  {6, "subresource", Type::String}, {7, "name", Type::String}};
inline constexpr Message resource_attributes{resource_attributes_fields};
inline constexpr Field non_resource_attributes_fields[] = {{1, "path", Type::String}, {2, "verb", Type::String}};
inline constexpr Message non_resource_attributes{non_resource_attributes_fields};
inline constexpr Field access_review_spec_fields[] = {
    {1, "resourceAttributes", Type::Message, &resource_attributes},
    {2, "nonResourceAttributes", Type::Message, &non_resource_attributes}};
inline constexpr Message access_review_spec{access_review_spec_fields};
inline constexpr Field access_review_fields[] = {{1, "metadata", Type::Message, &object_meta}, {2, "spec", Type::Message, &access_review_spec}};
inline constexpr Field rules_review_spec_fields[] = {{1, "namespace", Type::String}};
inline constexpr Message rules_review_spec{rules_review_spec_fields};
inline constexpr Field rules_review_fields[] = {{1, "metadata", Type::Message, &object_meta}, {2, "spec", Type::Message, &rules_review_spec}};
inline constexpr Field self_review_fields[] = {{1, "metadata", Type::Message, &object_meta}};
// authentication/v1 TokenRequest: what kubectl create token sends.
inline constexpr Field bound_object_reference_fields[] = {
    {1, "kind", Type::String}, {2, "apiVersion", Type::String}, {3, "name", Type::String}, {4, "uid", Type::String}};
inline constexpr Message bound_object_reference{bound_object_reference_fields};
inline constexpr Field token_request_spec_fields[] = {
    {1, "audiences", Type::Strings}, {3, "boundObjectRef", Type::Message, &bound_object_reference},
    {4, "expirationSeconds", Type::Int64}};
inline constexpr Message token_request_spec{token_request_spec_fields};
inline constexpr Field token_request_fields[] = {{1, "metadata", Type::Message, &object_meta}, {2, "spec", Type::Message, &token_request_spec}};

// core/v1 pod templates and apps/v1 Deployment (k8s.io/api core/v1 and apps/v1
// generated.proto): what kubectl create deployment sends, a template of containers (name,
// image, command, args, workingDir, ports, env, an empty resources) and the pod spec's scalar
// fields. Fields outside these tables (volumes, probes, security contexts, affinity,
// tolerations, resource quantities, a strategy's rollingUpdate) are skipped: send
// Deployments that carry them as JSON (kubectl apply and create -f do).
inline constexpr Message no_fields{};
inline constexpr Field container_port_fields[] = {
    {1, "name", Type::String},          {2, "hostPort", Type::Int32}, {3, "containerPort", Type::Int32, nullptr, kKeep},
    {4, "protocol", Type::String},      {5, "hostIP", Type::String}};
inline constexpr Message container_port{container_port_fields};
inline constexpr Field env_var_fields[] = {{1, "name", Type::String, nullptr, kKeep}, {2, "value", Type::String}};
inline constexpr Message env_var{env_var_fields};
inline constexpr Field container_fields[] = {
    {1, "name", Type::String, nullptr, kKeep},    {2, "image", Type::String},
    {3, "command", Type::Strings},                {4, "args", Type::Strings},
    {5, "workingDir", Type::String},              {6, "ports", Type::Messages, &container_port},
    {7, "env", Type::Messages, &env_var},         {8, "resources", Type::Message, &no_fields},
    {13, "terminationMessagePath", Type::String}, {14, "imagePullPolicy", Type::String},
    {20, "terminationMessagePolicy", Type::String}};
inline constexpr Message container{container_fields};
inline constexpr Field pod_spec_fields[] = {
    {2, "containers", Type::Messages, &container},
    {3, "restartPolicy", Type::String},
    {4, "terminationGracePeriodSeconds", Type::Int64, nullptr, kKeep},
    {5, "activeDeadlineSeconds", Type::Int64, nullptr, kKeep},
    {6, "dnsPolicy", Type::String},
    {7, "nodeSelector", Type::StringMap},
    {8, "serviceAccountName", Type::String},
    {10, "nodeName", Type::String},
    {11, "hostNetwork", Type::Bool},
    {16, "hostname", Type::String},
    {17, "subdomain", Type::String},
    {19, "schedulerName", Type::String},
    {20, "initContainers", Type::Messages, &container},
    {21, "automountServiceAccountToken", Type::Bool, nullptr, kKeep}};
inline constexpr Message pod_spec{pod_spec_fields};
inline constexpr Field pod_template_spec_fields[] = {
    {1, "metadata", Type::Message, &object_meta}, {2, "spec", Type::Message, &pod_spec}};
inline constexpr Message pod_template_spec{pod_template_spec_fields};
inline constexpr Field deployment_strategy_fields[] = {{1, "type", Type::String}};
inline constexpr Message deployment_strategy{deployment_strategy_fields};
inline constexpr Field deployment_spec_fields[] = {
    {1, "replicas", Type::Int32, nullptr, kKeep},
    {2, "selector", Type::Message, &label_selector},
    {3, "template", Type::Message, &pod_template_spec},
    {4, "strategy", Type::Message, &deployment_strategy},
    {5, "minReadySeconds", Type::Int32},
    {6, "revisionHistoryLimit", Type::Int32, nullptr, kKeep},
    {7, "paused", Type::Bool},
    {9, "progressDeadlineSeconds", Type::Int32, nullptr, kKeep}};
inline constexpr Message deployment_spec{deployment_spec_fields};
inline constexpr Field deployment_fields[] = {
    {1, "metadata", Type::Message, &object_meta}, {2, "spec", Type::Message, &deployment_spec}};
// batch/v1 Job (k8s.io/api batch/v1 generated.proto): what kubectl create job sends; its
// pointer fields keep a present zero (backoffLimit: 0, suspend: false). podFailurePolicy and
// successPolicy are skipped: send Jobs that carry them as JSON.
inline constexpr Field job_spec_fields[] = {
    {1, "parallelism", Type::Int32, nullptr, kKeep},
    {2, "completions", Type::Int32, nullptr, kKeep},
    {3, "activeDeadlineSeconds", Type::Int64, nullptr, kKeep},
    {4, "selector", Type::Message, &label_selector},
    {5, "manualSelector", Type::Bool, nullptr, kKeep},
    {6, "template", Type::Message, &pod_template_spec},
    {7, "backoffLimit", Type::Int32, nullptr, kKeep},
    {8, "ttlSecondsAfterFinished", Type::Int32, nullptr, kKeep},
    {9, "completionMode", Type::String, nullptr, kKeep},
    {10, "suspend", Type::Bool, nullptr, kKeep},
    {12, "backoffLimitPerIndex", Type::Int32, nullptr, kKeep},
    {13, "maxFailedIndexes", Type::Int32, nullptr, kKeep},
    {14, "podReplacementPolicy", Type::String, nullptr, kKeep},
    {15, "managedBy", Type::String, nullptr, kKeep}};
inline constexpr Message job_spec{job_spec_fields};
inline constexpr Field job_fields[] = {{1, "metadata", Type::Message, &object_meta}, {2, "spec", Type::Message, &job_spec}};

struct Kind {
    std::string_view api_version;
    std::string_view kind;
    Message message;
};
inline constexpr Kind kinds[] = {
    {"v1", "ConfigMap", {config_map_fields}},
    {"v1", "Event", {event_fields}},
    {"v1", "Namespace", {namespace_fields}},
    {"v1", "Secret", {secret_fields}},
    {"v1", "ServiceAccount", {service_account_fields}},
    {"v1", "Service", {service_fields}},
    {"coordination.k8s.io/v1", "Lease", {lease_fields}},
    {"rbac.authorization.k8s.io/v1", "Role", {std::span(role_fields).first(2)}},
    {"rbac.authorization.k8s.io/v1", "ClusterRole", {role_fields}},
    {"rbac.authorization.k8s.io/v1", "RoleBinding", {role_binding_fields}},
    {"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", {role_binding_fields}},
    {"authorization.k8s.io/v1", "SelfSubjectAccessReview", {access_review_fields}},
    {"authorization.k8s.io/v1", "SelfSubjectRulesReview", {rules_review_fields}},
    {"authentication.k8s.io/v1", "SelfSubjectReview", {self_review_fields}},
    {"authentication.k8s.io/v1", "TokenRequest", {token_request_fields}},
    {"apps/v1", "Deployment", {deployment_fields}},
    {"batch/v1", "Job", {job_fields}},
};

inline const Kind* find_kind(std::string_view api_version, std::string_view kind) {
    for (const auto& k : kinds)
        if (k.api_version == api_version && k.kind == kind) return &k;
    return nullptr;
}

[[noreturn]] inline void malformed(const std::string& what) {
    throw ProtobufBodyError(ProtobufBodyError::Kind::Malformed, what);
}

/// RFC 3339 in UTC as metav1.Time (seconds) and metav1.MicroTime (microseconds) write it.
inline std::string rfc3339(std::int64_t seconds, std::int64_t nanos, bool micro) {
    try {
        return api::format_unix_rfc3339(seconds, nanos, micro ? 6 : 0);
    } catch (const std::out_of_range& e) {
        malformed(e.what());
    }
}

json::object read_message(CodedInputStream& in, const Message& m, std::string_view path);

/// Runs `body` on the length-delimited field at the stream's position, bounded by its length.
template <class F>
void nested(CodedInputStream& in, std::string_view path, F&& body) {
    auto limit = in.ReadLengthAndPushLimit();
    body();
    if (!in.CheckEntireMessageConsumedAndPopLimit(limit)) malformed("truncated message at " + std::string(path));
}

inline std::string read_bytes(CodedInputStream& in, std::string_view path) {
    std::string s;
    if (!WFL::ReadBytes(&in, &s)) malformed("truncated bytes at " + std::string(path));
    return s;
}

/// A Time or MicroTime message; nullopt when it is empty (Go's unset time).
inline std::optional<std::string> read_time(CodedInputStream& in, bool micro, std::string_view path) {
    std::optional<std::string> out;
    nested(in, path, [&] {
        std::int64_t seconds = 0, nanos = 0;
        bool any = false;
        while (std::uint32_t tag = in.ReadTag()) {
            auto wt = WFL::GetTagWireType(tag);
            auto n = WFL::GetTagFieldNumber(tag);
            if ((n == 1 || n == 2) && wt != WFL::WIRETYPE_VARINT)
                malformed("wrong wire type " + std::to_string(wt) + " at " + std::string(path));
            std::uint64_t v = 0;
            if (n == 1 || n == 2) {
                if (!in.ReadVarint64(&v)) malformed("truncated varint at " + std::string(path));
                (n == 1 ? seconds : nanos) = n == 1 ? static_cast<std::int64_t>(v)
                                                    : static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
                any = true;
            } else if (!WFL::SkipField(&in, tag)) {
                malformed("truncated field " + std::to_string(n) + " at " + std::string(path));
            }
        }
        if (!in.ConsumedEntireMessage()) malformed("truncated message at " + std::string(path));
        if (any) out = rfc3339(seconds, nanos, micro);
    });
    return out;
}

/// A map entry {key = 1, value = 2}; absent parts are empty, as in Go.
inline std::pair<std::string, std::string> read_entry(CodedInputStream& in, std::string_view path) {
    std::pair<std::string, std::string> kv;
    nested(in, path, [&] {
        while (std::uint32_t tag = in.ReadTag()) {
            auto n = WFL::GetTagFieldNumber(tag);
            if (n == 1 || n == 2) {
                if (WFL::GetTagWireType(tag) != WFL::WIRETYPE_LENGTH_DELIMITED)
                    malformed("wrong wire type " + std::to_string(WFL::GetTagWireType(tag)) + " at " + std::string(path));
                (n == 1 ? kv.first : kv.second) = read_bytes(in, path);
            } else if (!WFL::SkipField(&in, tag)) {
                malformed("truncated field " + std::to_string(n) + " at " + std::string(path));
            }
        }
        if (!in.ConsumedEntireMessage()) malformed("truncated message at " + std::string(path));
    });
    return kv;
}

inline bool length_delimited(Type t) {
    return t != Type::Bool && t != Type::Int32 && t != Type::Int64;
}

/// One field's value into `out` (maps and lists accumulate).
inline void read_field(CodedInputStream& in, const Field& f, json::object& out, const std::string& path) {
    const std::string_view key = f.json;
    switch (f.type) {
    case Type::String: {
        auto s = read_bytes(in, path);
        if (!s.empty() || f.keep_zero) out[key] = json::string(s);
        else out.erase(key);
        return;
    }
    case Type::Bytes: {
        auto s = read_bytes(in, path);
        if (!s.empty() || f.keep_zero) out[key] = json::string(client::base64_encode(s));
        else out.erase(key);
        return;
    }
    case Type::Bool:
    case Type::Int32:
    case Type::Int64: {
        std::uint64_t v = 0;
        if (!in.ReadVarint64(&v)) malformed("truncated varint at " + path);
        json::value j;
        if (f.type == Type::Bool) j = v != 0;
        else if (f.type == Type::Int32) j = static_cast<std::int64_t>(static_cast<std::int32_t>(static_cast<std::uint32_t>(v)));
        else j = static_cast<std::int64_t>(v);
        if (v != 0 || f.keep_zero) out[key] = std::move(j);
        else out.erase(key);
        return;
    }
    case Type::Message: {
        // A repeated occurrence of a singular message merges into the first, as proto2 does.
        json::object merged;
        if (auto* prev = out.if_contains(key); prev && prev->is_object()) merged = std::move(prev->get_object());
        nested(in, path, [&] {
            auto part = read_message(in, *f.message, path);
            for (auto& kv : part) merged[kv.key()] = std::move(kv.value());
        });
        out[key] = std::move(merged);
        return;
    }
    case Type::IntOrString: {
        json::object parts;
        nested(in, path, [&] { parts = read_message(in, *f.message, path); });
        const auto* type = parts.if_contains("type");
        if (type && type->is_int64() && type->get_int64() == 1) {
            const auto* sv = parts.if_contains("strVal");
            out[key] = sv ? *sv : json::value(json::string());
        } else {
            const auto* iv = parts.if_contains("intVal");
            out[key] = iv ? *iv : json::value(0);
        }
        return;
    }
    case Type::Time:
    case Type::MicroTime:
        if (auto t = read_time(in, f.type == Type::MicroTime, path)) out[key] = json::string(*t);
        else out.erase(key);
        return;
    case Type::FieldsV1: {
        std::string raw;
        nested(in, path, [&] {
            while (std::uint32_t tag = in.ReadTag()) {
                if (WFL::GetTagFieldNumber(tag) == 1 && WFL::GetTagWireType(tag) == WFL::WIRETYPE_LENGTH_DELIMITED)
                    raw = read_bytes(in, path);
                else if (!WFL::SkipField(&in, tag))
                    malformed("truncated field at " + path);
            }
            if (!in.ConsumedEntireMessage()) malformed("truncated message at " + path);
        });
        if (raw.empty()) return;
        boost::system::error_code ec;
        auto v = json::parse(raw, ec);
        if (ec) malformed(path + " is not JSON: " + ec.message());
        out[key] = std::move(v);
        return;
    }
    case Type::StringMap:
    case Type::BytesMap: {
        auto kv = read_entry(in, path);
        auto* m = out.if_contains(key);
        if (!m) m = &(out[key] = json::object());
        m->get_object()[kv.first] =
            json::string(f.type == Type::BytesMap ? client::base64_encode(kv.second) : kv.second);
        return;
    }
    case Type::Strings:
    case Type::Messages: {
        auto* a = out.if_contains(key);
        if (!a) a = &(out[key] = json::array());
        const std::string item = path + "[" + std::to_string(a->get_array().size()) + "]";
        if (f.type == Type::Strings) {
            a->get_array().push_back(json::string(read_bytes(in, item)));
        } else {
            json::object o;
            nested(in, item, [&] { o = read_message(in, *f.message, item); });
            a->get_array().push_back(std::move(o));
        }
        return;
    }
    }
}

/// The fields of message `m` up to the current limit, as a JSON object.
inline json::object read_message(CodedInputStream& in, const Message& m, std::string_view path) {
    json::object out;
    while (std::uint32_t tag = in.ReadTag()) {
        auto n = WFL::GetTagFieldNumber(tag);
        auto wt = WFL::GetTagWireType(tag);
        const Field* f = nullptr;
        for (const auto& c : m.fields)
            if (c.number == n) f = &c;
        if (!f) {  // unknown to us: skipped, as Go's generated code skips it
            if (!WFL::SkipField(&in, tag)) malformed("truncated field " + std::to_string(n) + " at " + std::string(path));
            continue;
        }
        std::string sub = path.empty() ? std::string(f->json) : std::string(path) + "." + std::string(f->json);
        auto want = length_delimited(f->type) ? WFL::WIRETYPE_LENGTH_DELIMITED : WFL::WIRETYPE_VARINT;
        if (wt != want) malformed("wrong wire type " + std::to_string(wt) + " for field " + sub);
        read_field(in, *f, out, sub);
    }
    // ReadTag gives 0 at the limit and on a broken tag; ConsumedEntireMessage tells them apart.
    if (!in.ConsumedEntireMessage()) malformed("truncated or invalid tag in " + (path.empty() ? std::string("the object") : std::string(path)));
    // In Go's field order (the order of the tables), as its JSON encoder writes them.
    json::object ordered;
    for (const auto& f : m.fields)
        if (auto* v = out.if_contains(f.json)) ordered[f.json] = std::move(*v);
    return ordered;
}

inline std::string kinds_accepted() {
    std::string out;
    for (const auto& k : kinds) out += (out.empty() ? "" : ", ") + std::string(k.api_version) + " " + std::string(k.kind);
    return out;
}

} // namespace protobuf_body_detail

/// Whether a Content-Type (without parameters) is Kubernetes protobuf.
inline bool is_protobuf_media_type(std::string_view content_type) { return content_type == protobuf_media_type; }

/// Whether bodies of this kind are decoded here.
inline bool decodes_protobuf(std::string_view api_version, std::string_view kind) {
    return protobuf_body_detail::find_kind(api_version, kind) != nullptr;
}

/// The kinds decoded here, for messages: "v1 ConfigMap, v1 Event, ...".
inline std::string protobuf_kinds_accepted() { return protobuf_body_detail::kinds_accepted(); }

/// The JSON object of a protobuf request body. `api_version` and `kind` are the resource's:
/// the envelope's typeMeta, when set, names the kind decoded (as Go defaults an empty one to
/// the endpoint's), and the JSON carries it, so a mismatch is the store's to refuse as it
/// refuses one in JSON. Throws ProtobufBodyError.
inline boost::json::value decode_protobuf_body(std::string_view body, std::string_view api_version, std::string_view kind) {
    namespace d = protobuf_body_detail;
    using Kind = ProtobufBodyError::Kind;
    static constexpr std::string_view magic("k8s\0", 4);
    if (!body.starts_with(magic))
        d::malformed("provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]");
    body.remove_prefix(magic.size());
    std::string type_api_version, type_kind, raw, content_encoding, content_type;
    {
        d::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(body.data()), static_cast<int>(body.size()));
        auto top = in.PushLimit(static_cast<int>(body.size()));
        while (std::uint32_t tag = in.ReadTag()) {
            auto n = d::WFL::GetTagFieldNumber(tag);
            bool ld = d::WFL::GetTagWireType(tag) == d::WFL::WIRETYPE_LENGTH_DELIMITED;
            if (n >= 1 && n <= 4 && !ld) d::malformed("wrong wire type " + std::to_string(d::WFL::GetTagWireType(tag)) + " in the envelope");
            if (n == 1) {
                d::nested(in, "typeMeta", [&] {
                    while (std::uint32_t t = in.ReadTag()) {
                        auto m = d::WFL::GetTagFieldNumber(t);
                        if ((m == 1 || m == 2) && d::WFL::GetTagWireType(t) == d::WFL::WIRETYPE_LENGTH_DELIMITED)
                            (m == 1 ? type_api_version : type_kind) = d::read_bytes(in, "typeMeta");
                        else if (!d::WFL::SkipField(&in, t))
                            d::malformed("truncated field in typeMeta");
                    }
                    if (!in.ConsumedEntireMessage()) d::malformed("truncated typeMeta");
                });
            } else if (n == 2) {
                raw = d::read_bytes(in, "raw");
            } else if (n == 3) {
                content_encoding = d::read_bytes(in, "contentEncoding");
            } else if (n == 4) {
                content_type = d::read_bytes(in, "contentType");
            } else if (!d::WFL::SkipField(&in, tag)) {
                d::malformed("truncated field " + std::to_string(n) + " in the envelope");
            }
        }
        if (!in.ConsumedEntireMessage()) d::malformed("truncated or invalid tag in the envelope");
        in.PopLimit(top);
    }
    if (!content_encoding.empty()) d::malformed("unsupported contentEncoding \"" + content_encoding + "\" in the envelope");
    if (!content_type.empty() && content_type != protobuf_media_type)
        d::malformed("unsupported contentType \"" + content_type + "\" in the envelope");
    if (type_api_version.empty()) type_api_version = api_version;
    if (type_kind.empty()) type_kind = kind;
    const d::Kind* k = d::find_kind(type_api_version, type_kind);
    if (!k)
        throw ProtobufBodyError(Kind::Unsupported, "the vck sandbox decodes protobuf bodies of " + d::kinds_accepted() +
                                                       " only, not " + type_api_version + " " + type_kind +
                                                       "; send it as application/json");
    d::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(raw.data()), static_cast<int>(raw.size()));
    auto top = in.PushLimit(static_cast<int>(raw.size()));
    auto fields = d::read_message(in, k->message, "");
    in.PopLimit(top);
    boost::json::object out;
    out["apiVersion"] = boost::json::string(type_api_version);
    out["kind"] = boost::json::string(type_kind);
    for (auto& kv : fields) out[kv.key()] = std::move(kv.value());
    return out;
}

} // namespace vck::sandbox
