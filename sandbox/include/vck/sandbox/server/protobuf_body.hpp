// ProtobufBody: request bodies sent as application/vnd.kubernetes.protobuf (kubectl's typed
// create commands: create secret, configmap, namespace, serviceaccount, service, role, rolebinding,
// deployment, job, ...; the pods kubectl debug node/... and debug --copy-to create;
// kubectl auth's self reviews) turned into the same
// JSON object a client sending JSON would have sent, so the store sees no difference.
// Format: the magic "k8s\0", then a runtime.Unknown envelope {typeMeta{apiVersion, kind}, raw,
// contentEncoding, contentType} whose raw holds the object's message. Field numbers are the
// published ones of k8s.io/api core/v1, apps/v1, batch/v1, coordination/v1, rbac/v1, authorization/v1,
// authentication/v1 and apimachinery meta/v1; the tables
// below are our own, read by protobuf's CodedInputStream (the library does the wire format).
// Guarantees, as kube-apiserver's protobuf decoder and its JSON encoder behave:
// - proto2 presence: a field absent on the wire is absent in JSON; a present zero value is
//   dropped when Go's field is a plain omitempty value, kept when Go's field is a pointer
//   (immutable: false stays false) or has no omitempty (ownerReferences' names);
// - meta/v1 Time and MicroTime {seconds, nanos} become RFC 3339 strings in UTC (MicroTime
//   with microseconds); an empty Time (what Go writes for an unset time) is absent;
// - maps are their entry messages (key 1, value 2), bytes (Secret.data) are base64;
// - resource.Quantity {string = 1} is its string ("0" when the message is empty, Go's zero);
//   a repeated int64 is read unpacked or packed; an embedded (`json:",inline"`) message's
//   fields are its parent's;
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
#include <limits>
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
    Quantity,     // api/resource Quantity {string = 1}: that string in JSON (absent: Go's zero, "0")
    QuantityMap,  // map<string, Quantity> (core/v1 ResourceList): an object of strings
    Int64s,       // repeated int64, unpacked (as Go writes it) or packed: an array of numbers
    Inline,       // a nested message Go embeds with `json:",inline"`: its fields are the parent's
};

struct Message;

struct Field {
    int number;
    std::string_view json;
    Type type;
    const Message* message = nullptr;  // Message, Messages, IntOrString and Inline
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

// core/v1 Pod and pod templates (k8s.io/api core/v1 generated.proto and types.go, 1.32): the
// whole PodSpec, so a pod kubectl debug --copy-to re-sends, a Deployment's or a Job's template
// keeps every field a JSON body would carry. Tables in Go's field order; kKeep where Go's field
// is a pointer or has no omitempty; Type::Inline where Go embeds a struct with `json:",inline"`
// (Volume's VolumeSource, Probe's ProbeHandler, EphemeralContainer's common part, the
// LocalObjectReference of configMap/secret references); quantities are resource.Quantity's
// canonical strings.
inline constexpr Message no_fields{};
// Volumes: every VolumeSource of 1.32, each a pointer in Go (present when set, even empty).
inline constexpr Field host_path_volume_source_fields[] = {
    {1, "path", Type::String, nullptr, kKeep}, {2, "type", Type::String, nullptr, kKeep}};
inline constexpr Message host_path_volume_source{host_path_volume_source_fields};
inline constexpr Field empty_dir_volume_source_fields[] = {
    {1, "medium", Type::String}, {2, "sizeLimit", Type::Quantity, nullptr, kKeep}};
inline constexpr Message empty_dir_volume_source{empty_dir_volume_source_fields};
inline constexpr Field gce_persistent_disk_volume_source_fields[] = {
    {1, "pdName", Type::String, nullptr, kKeep}, {2, "fsType", Type::String}, {3, "partition", Type::Int32},
    {4, "readOnly", Type::Bool}};
inline constexpr Message gce_persistent_disk_volume_source{gce_persistent_disk_volume_source_fields};
inline constexpr Field aws_elastic_block_store_volume_source_fields[] = {
    {1, "volumeID", Type::String, nullptr, kKeep}, {2, "fsType", Type::String}, {3, "partition", Type::Int32},
    {4, "readOnly", Type::Bool}};
inline constexpr Message aws_elastic_block_store_volume_source{aws_elastic_block_store_volume_source_fields};
inline constexpr Field git_repo_volume_source_fields[] = {
    {1, "repository", Type::String, nullptr, kKeep}, {2, "revision", Type::String}, {3, "directory", Type::String}};
inline constexpr Message git_repo_volume_source{git_repo_volume_source_fields};
inline constexpr Field key_to_path_fields[] = {
    {1, "key", Type::String, nullptr, kKeep}, {2, "path", Type::String, nullptr, kKeep},
    {3, "mode", Type::Int32, nullptr, kKeep}};
inline constexpr Message key_to_path{key_to_path_fields};
inline constexpr Field secret_volume_source_fields[] = {
    {1, "secretName", Type::String}, {2, "items", Type::Messages, &key_to_path},
    {3, "defaultMode", Type::Int32, nullptr, kKeep}, {4, "optional", Type::Bool, nullptr, kKeep}};
inline constexpr Message secret_volume_source{secret_volume_source_fields};
inline constexpr Field nfs_volume_source_fields[] = {
    {1, "server", Type::String, nullptr, kKeep}, {2, "path", Type::String, nullptr, kKeep},
    {3, "readOnly", Type::Bool}};
inline constexpr Message nfs_volume_source{nfs_volume_source_fields};
inline constexpr Field iscsi_volume_source_fields[] = {
    {1, "targetPortal", Type::String, nullptr, kKeep}, {2, "iqn", Type::String, nullptr, kKeep},
    {3, "lun", Type::Int32, nullptr, kKeep}, {4, "iscsiInterface", Type::String}, {5, "fsType", Type::String},
    {6, "readOnly", Type::Bool}, {7, "portals", Type::Strings}, {8, "chapAuthDiscovery", Type::Bool},
    {11, "chapAuthSession", Type::Bool}, {10, "secretRef", Type::Message, &local_object_reference},
    {12, "initiatorName", Type::String, nullptr, kKeep}};
inline constexpr Message iscsi_volume_source{iscsi_volume_source_fields};
inline constexpr Field glusterfs_volume_source_fields[] = {
    {1, "endpoints", Type::String, nullptr, kKeep}, {2, "path", Type::String, nullptr, kKeep},
    {3, "readOnly", Type::Bool}};
inline constexpr Message glusterfs_volume_source{glusterfs_volume_source_fields};
inline constexpr Field persistent_volume_claim_volume_source_fields[] = {
    {1, "claimName", Type::String, nullptr, kKeep}, {2, "readOnly", Type::Bool}};
inline constexpr Message persistent_volume_claim_volume_source{persistent_volume_claim_volume_source_fields};
inline constexpr Field rbd_volume_source_fields[] = {
    {1, "monitors", Type::Strings}, {2, "image", Type::String, nullptr, kKeep}, {3, "fsType", Type::String},
    {4, "pool", Type::String}, {5, "user", Type::String}, {6, "keyring", Type::String},
    {7, "secretRef", Type::Message, &local_object_reference}, {8, "readOnly", Type::Bool}};
inline constexpr Message rbd_volume_source{rbd_volume_source_fields};
inline constexpr Field flex_volume_source_fields[] = {
    {1, "driver", Type::String, nullptr, kKeep}, {2, "fsType", Type::String},
    {3, "secretRef", Type::Message, &local_object_reference}, {4, "readOnly", Type::Bool},
    {5, "options", Type::StringMap}};
inline constexpr Message flex_volume_source{flex_volume_source_fields};
inline constexpr Field cinder_volume_source_fields[] = {
    {1, "volumeID", Type::String, nullptr, kKeep}, {2, "fsType", Type::String}, {3, "readOnly", Type::Bool},
    {4, "secretRef", Type::Message, &local_object_reference}};
inline constexpr Message cinder_volume_source{cinder_volume_source_fields};
inline constexpr Field ceph_fs_volume_source_fields[] = {
    {1, "monitors", Type::Strings}, {2, "path", Type::String}, {3, "user", Type::String},
    {4, "secretFile", Type::String}, {5, "secretRef", Type::Message, &local_object_reference},
    {6, "readOnly", Type::Bool}};
inline constexpr Message ceph_fs_volume_source{ceph_fs_volume_source_fields};
inline constexpr Field flocker_volume_source_fields[] = {
    {1, "datasetName", Type::String}, {2, "datasetUUID", Type::String}};
inline constexpr Message flocker_volume_source{flocker_volume_source_fields};
inline constexpr Field object_field_selector_fields[] = {
    {1, "apiVersion", Type::String}, {2, "fieldPath", Type::String, nullptr, kKeep}};
inline constexpr Message object_field_selector{object_field_selector_fields};
inline constexpr Field resource_field_selector_fields[] = {
    {1, "containerName", Type::String}, {2, "resource", Type::String, nullptr, kKeep},
    {3, "divisor", Type::Quantity}};
inline constexpr Message resource_field_selector{resource_field_selector_fields};
inline constexpr Field downward_api_volume_file_fields[] = {
    {1, "path", Type::String, nullptr, kKeep}, {2, "fieldRef", Type::Message, &object_field_selector},
    {3, "resourceFieldRef", Type::Message, &resource_field_selector}, {4, "mode", Type::Int32, nullptr, kKeep}};
inline constexpr Message downward_api_volume_file{downward_api_volume_file_fields};
inline constexpr Field downward_api_volume_source_fields[] = {
    {1, "items", Type::Messages, &downward_api_volume_file}, {2, "defaultMode", Type::Int32, nullptr, kKeep}};
inline constexpr Message downward_api_volume_source{downward_api_volume_source_fields};
inline constexpr Field fc_volume_source_fields[] = {
    {1, "targetWWNs", Type::Strings}, {2, "lun", Type::Int32, nullptr, kKeep}, {3, "fsType", Type::String},
    {4, "readOnly", Type::Bool}, {5, "wwids", Type::Strings}};
inline constexpr Message fc_volume_source{fc_volume_source_fields};
inline constexpr Field azure_file_volume_source_fields[] = {
    {1, "secretName", Type::String, nullptr, kKeep}, {2, "shareName", Type::String, nullptr, kKeep},
    {3, "readOnly", Type::Bool}};
inline constexpr Message azure_file_volume_source{azure_file_volume_source_fields};
inline constexpr Field config_map_volume_source_fields[] = {
    {1, "", Type::Inline, &local_object_reference}, {2, "items", Type::Messages, &key_to_path},
    {3, "defaultMode", Type::Int32, nullptr, kKeep}, {4, "optional", Type::Bool, nullptr, kKeep}};
inline constexpr Message config_map_volume_source{config_map_volume_source_fields};
inline constexpr Field vsphere_virtual_disk_volume_source_fields[] = {
    {1, "volumePath", Type::String, nullptr, kKeep}, {2, "fsType", Type::String},
    {3, "storagePolicyName", Type::String}, {4, "storagePolicyID", Type::String}};
inline constexpr Message vsphere_virtual_disk_volume_source{vsphere_virtual_disk_volume_source_fields};
inline constexpr Field quobyte_volume_source_fields[] = {
    {1, "registry", Type::String, nullptr, kKeep}, {2, "volume", Type::String, nullptr, kKeep},
    {3, "readOnly", Type::Bool}, {4, "user", Type::String}, {5, "group", Type::String}, {6, "tenant", Type::String}};
inline constexpr Message quobyte_volume_source{quobyte_volume_source_fields};
inline constexpr Field azure_disk_volume_source_fields[] = {
    {1, "diskName", Type::String, nullptr, kKeep}, {2, "diskURI", Type::String, nullptr, kKeep},
    {3, "cachingMode", Type::String, nullptr, kKeep}, {4, "fsType", Type::String, nullptr, kKeep},
    {5, "readOnly", Type::Bool, nullptr, kKeep}, {6, "kind", Type::String, nullptr, kKeep}};
inline constexpr Message azure_disk_volume_source{azure_disk_volume_source_fields};
inline constexpr Field photon_persistent_disk_volume_source_fields[] = {
    {1, "pdID", Type::String, nullptr, kKeep}, {2, "fsType", Type::String}};
inline constexpr Message photon_persistent_disk_volume_source{photon_persistent_disk_volume_source_fields};
inline constexpr Field secret_projection_fields[] = {
    {1, "", Type::Inline, &local_object_reference}, {2, "items", Type::Messages, &key_to_path},
    {4, "optional", Type::Bool, nullptr, kKeep}};
inline constexpr Message secret_projection{secret_projection_fields};
inline constexpr Field downward_api_projection_fields[] = {
    {1, "items", Type::Messages, &downward_api_volume_file}};
inline constexpr Message downward_api_projection{downward_api_projection_fields};
inline constexpr Field config_map_projection_fields[] = {
    {1, "", Type::Inline, &local_object_reference}, {2, "items", Type::Messages, &key_to_path},
    {4, "optional", Type::Bool, nullptr, kKeep}};
inline constexpr Message config_map_projection{config_map_projection_fields};
inline constexpr Field service_account_token_projection_fields[] = {
    {1, "audience", Type::String}, {2, "expirationSeconds", Type::Int64, nullptr, kKeep},
    {3, "path", Type::String, nullptr, kKeep}};
inline constexpr Message service_account_token_projection{service_account_token_projection_fields};
inline constexpr Field cluster_trust_bundle_projection_fields[] = {
    {1, "name", Type::String, nullptr, kKeep}, {2, "signerName", Type::String, nullptr, kKeep},
    {3, "labelSelector", Type::Message, &label_selector}, {5, "optional", Type::Bool, nullptr, kKeep},
    {4, "path", Type::String, nullptr, kKeep}};
inline constexpr Message cluster_trust_bundle_projection{cluster_trust_bundle_projection_fields};
inline constexpr Field volume_projection_fields[] = {
    {1, "secret", Type::Message, &secret_projection}, {2, "downwardAPI", Type::Message, &downward_api_projection},
    {3, "configMap", Type::Message, &config_map_projection},
    {4, "serviceAccountToken", Type::Message, &service_account_token_projection},
    {5, "clusterTrustBundle", Type::Message, &cluster_trust_bundle_projection}};
inline constexpr Message volume_projection{volume_projection_fields};
inline constexpr Field projected_volume_source_fields[] = {
    {1, "sources", Type::Messages, &volume_projection}, {2, "defaultMode", Type::Int32, nullptr, kKeep}};
inline constexpr Message projected_volume_source{projected_volume_source_fields};
inline constexpr Field portworx_volume_source_fields[] = {
    {1, "volumeID", Type::String, nullptr, kKeep}, {2, "fsType", Type::String}, {3, "readOnly", Type::Bool}};
inline constexpr Message portworx_volume_source{portworx_volume_source_fields};
inline constexpr Field scale_io_volume_source_fields[] = {
    {1, "gateway", Type::String, nullptr, kKeep}, {2, "system", Type::String, nullptr, kKeep},
    {3, "secretRef", Type::Message, &local_object_reference}, {4, "sslEnabled", Type::Bool},
    {5, "protectionDomain", Type::String}, {6, "storagePool", Type::String}, {7, "storageMode", Type::String},
    {8, "volumeName", Type::String}, {9, "fsType", Type::String}, {10, "readOnly", Type::Bool}};
inline constexpr Message scale_io_volume_source{scale_io_volume_source_fields};
inline constexpr Field storage_os_volume_source_fields[] = {
    {1, "volumeName", Type::String}, {2, "volumeNamespace", Type::String}, {3, "fsType", Type::String},
    {4, "readOnly", Type::Bool}, {5, "secretRef", Type::Message, &local_object_reference}};
inline constexpr Message storage_os_volume_source{storage_os_volume_source_fields};
inline constexpr Field csi_volume_source_fields[] = {
    {1, "driver", Type::String, nullptr, kKeep}, {2, "readOnly", Type::Bool, nullptr, kKeep},
    {3, "fsType", Type::String, nullptr, kKeep}, {4, "volumeAttributes", Type::StringMap},
    {5, "nodePublishSecretRef", Type::Message, &local_object_reference}};
inline constexpr Message csi_volume_source{csi_volume_source_fields};
inline constexpr Field volume_resource_requirements_fields[] = {
    {1, "limits", Type::QuantityMap}, {2, "requests", Type::QuantityMap}};
inline constexpr Message volume_resource_requirements{volume_resource_requirements_fields};
inline constexpr Field typed_local_object_reference_fields[] = {
    {1, "apiGroup", Type::String, nullptr, kKeep}, {2, "kind", Type::String, nullptr, kKeep},
    {3, "name", Type::String, nullptr, kKeep}};
inline constexpr Message typed_local_object_reference{typed_local_object_reference_fields};
inline constexpr Field typed_object_reference_fields[] = {
    {1, "apiGroup", Type::String, nullptr, kKeep}, {2, "kind", Type::String, nullptr, kKeep},
    {3, "name", Type::String, nullptr, kKeep}, {4, "namespace", Type::String, nullptr, kKeep}};
inline constexpr Message typed_object_reference{typed_object_reference_fields};
inline constexpr Field persistent_volume_claim_spec_fields[] = {
    {1, "accessModes", Type::Strings}, {4, "selector", Type::Message, &label_selector},
    {2, "resources", Type::Message, &volume_resource_requirements}, {3, "volumeName", Type::String},
    {5, "storageClassName", Type::String, nullptr, kKeep}, {6, "volumeMode", Type::String, nullptr, kKeep},
    {7, "dataSource", Type::Message, &typed_local_object_reference},
    {8, "dataSourceRef", Type::Message, &typed_object_reference},
    {9, "volumeAttributesClassName", Type::String, nullptr, kKeep}};
inline constexpr Message persistent_volume_claim_spec{persistent_volume_claim_spec_fields};
inline constexpr Field persistent_volume_claim_template_fields[] = {
    {1, "metadata", Type::Message, &object_meta}, {2, "spec", Type::Message, &persistent_volume_claim_spec}};
inline constexpr Message persistent_volume_claim_template{persistent_volume_claim_template_fields};
inline constexpr Field ephemeral_volume_source_fields[] = {
    {1, "volumeClaimTemplate", Type::Message, &persistent_volume_claim_template}};
inline constexpr Message ephemeral_volume_source{ephemeral_volume_source_fields};
inline constexpr Field image_volume_source_fields[] = {
    {1, "reference", Type::String}, {2, "pullPolicy", Type::String}};
inline constexpr Message image_volume_source{image_volume_source_fields};
inline constexpr Field volume_source_fields[] = {
    {1, "hostPath", Type::Message, &host_path_volume_source},
    {2, "emptyDir", Type::Message, &empty_dir_volume_source},
    {3, "gcePersistentDisk", Type::Message, &gce_persistent_disk_volume_source},
    {4, "awsElasticBlockStore", Type::Message, &aws_elastic_block_store_volume_source},
    {5, "gitRepo", Type::Message, &git_repo_volume_source}, {6, "secret", Type::Message, &secret_volume_source},
    {7, "nfs", Type::Message, &nfs_volume_source}, {8, "iscsi", Type::Message, &iscsi_volume_source},
    {9, "glusterfs", Type::Message, &glusterfs_volume_source},
    {10, "persistentVolumeClaim", Type::Message, &persistent_volume_claim_volume_source},
    {11, "rbd", Type::Message, &rbd_volume_source}, {12, "flexVolume", Type::Message, &flex_volume_source},
    {13, "cinder", Type::Message, &cinder_volume_source}, {14, "cephfs", Type::Message, &ceph_fs_volume_source},
    {15, "flocker", Type::Message, &flocker_volume_source},
    {16, "downwardAPI", Type::Message, &downward_api_volume_source}, {17, "fc", Type::Message, &fc_volume_source},
    {18, "azureFile", Type::Message, &azure_file_volume_source},
    {19, "configMap", Type::Message, &config_map_volume_source},
    {20, "vsphereVolume", Type::Message, &vsphere_virtual_disk_volume_source},
    {21, "quobyte", Type::Message, &quobyte_volume_source},
    {22, "azureDisk", Type::Message, &azure_disk_volume_source},
    {23, "photonPersistentDisk", Type::Message, &photon_persistent_disk_volume_source},
    {26, "projected", Type::Message, &projected_volume_source},
    {24, "portworxVolume", Type::Message, &portworx_volume_source},
    {25, "scaleIO", Type::Message, &scale_io_volume_source},
    {27, "storageos", Type::Message, &storage_os_volume_source}, {28, "csi", Type::Message, &csi_volume_source},
    {29, "ephemeral", Type::Message, &ephemeral_volume_source}, {30, "image", Type::Message, &image_volume_source}};
inline constexpr Message volume_source{volume_source_fields};
inline constexpr Field volume_fields[] = {
    {1, "name", Type::String, nullptr, kKeep}, {2, "", Type::Inline, &volume_source}};
inline constexpr Message volume{volume_fields};
// Containers (init, sidecar, ephemeral: EphemeralContainerCommon has Container's fields and numbers).
inline constexpr Field container_port_fields[] = {
    {1, "name", Type::String}, {2, "hostPort", Type::Int32}, {3, "containerPort", Type::Int32, nullptr, kKeep},
    {4, "protocol", Type::String}, {5, "hostIP", Type::String}};
inline constexpr Message container_port{container_port_fields};
inline constexpr Field config_map_env_source_fields[] = {
    {1, "", Type::Inline, &local_object_reference}, {2, "optional", Type::Bool, nullptr, kKeep}};
inline constexpr Message config_map_env_source{config_map_env_source_fields};
inline constexpr Field secret_env_source_fields[] = {
    {1, "", Type::Inline, &local_object_reference}, {2, "optional", Type::Bool, nullptr, kKeep}};
inline constexpr Message secret_env_source{secret_env_source_fields};
inline constexpr Field env_from_source_fields[] = {
    {1, "prefix", Type::String}, {2, "configMapRef", Type::Message, &config_map_env_source},
    {3, "secretRef", Type::Message, &secret_env_source}};
inline constexpr Message env_from_source{env_from_source_fields};
inline constexpr Field config_map_key_selector_fields[] = {
    {1, "", Type::Inline, &local_object_reference}, {2, "key", Type::String, nullptr, kKeep},
    {3, "optional", Type::Bool, nullptr, kKeep}};
inline constexpr Message config_map_key_selector{config_map_key_selector_fields};
inline constexpr Field secret_key_selector_fields[] = {
    {1, "", Type::Inline, &local_object_reference}, {2, "key", Type::String, nullptr, kKeep},
    {3, "optional", Type::Bool, nullptr, kKeep}};
inline constexpr Message secret_key_selector{secret_key_selector_fields};
inline constexpr Field env_var_source_fields[] = {
    {1, "fieldRef", Type::Message, &object_field_selector},
    {2, "resourceFieldRef", Type::Message, &resource_field_selector},
    {3, "configMapKeyRef", Type::Message, &config_map_key_selector},
    {4, "secretKeyRef", Type::Message, &secret_key_selector}};
inline constexpr Message env_var_source{env_var_source_fields};
inline constexpr Field env_var_fields[] = {
    {1, "name", Type::String, nullptr, kKeep}, {2, "value", Type::String},
    {3, "valueFrom", Type::Message, &env_var_source}};
inline constexpr Message env_var{env_var_fields};
inline constexpr Field resource_claim_fields[] = {
    {1, "name", Type::String, nullptr, kKeep}, {2, "request", Type::String}};
inline constexpr Message resource_claim{resource_claim_fields};
inline constexpr Field resource_requirements_fields[] = {
    {1, "limits", Type::QuantityMap}, {2, "requests", Type::QuantityMap},
    {3, "claims", Type::Messages, &resource_claim}};
inline constexpr Message resource_requirements{resource_requirements_fields};
inline constexpr Field container_resize_policy_fields[] = {
    {1, "resourceName", Type::String, nullptr, kKeep}, {2, "restartPolicy", Type::String, nullptr, kKeep}};
inline constexpr Message container_resize_policy{container_resize_policy_fields};
inline constexpr Field volume_mount_fields[] = {
    {1, "name", Type::String, nullptr, kKeep}, {2, "readOnly", Type::Bool},
    {7, "recursiveReadOnly", Type::String, nullptr, kKeep}, {3, "mountPath", Type::String, nullptr, kKeep},
    {4, "subPath", Type::String}, {5, "mountPropagation", Type::String, nullptr, kKeep},
    {6, "subPathExpr", Type::String}};
inline constexpr Message volume_mount{volume_mount_fields};
inline constexpr Field volume_device_fields[] = {
    {1, "name", Type::String, nullptr, kKeep}, {2, "devicePath", Type::String, nullptr, kKeep}};
inline constexpr Message volume_device{volume_device_fields};
inline constexpr Field exec_action_fields[] = {
    {1, "command", Type::Strings}};
inline constexpr Message exec_action{exec_action_fields};
inline constexpr Field http_header_fields[] = {
    {1, "name", Type::String, nullptr, kKeep}, {2, "value", Type::String, nullptr, kKeep}};
inline constexpr Message http_header{http_header_fields};
inline constexpr Field http_get_action_fields[] = {
    {1, "path", Type::String}, {2, "port", Type::IntOrString, &int_or_string}, {3, "host", Type::String},
    {4, "scheme", Type::String}, {5, "httpHeaders", Type::Messages, &http_header}};
inline constexpr Message http_get_action{http_get_action_fields};
inline constexpr Field tcp_socket_action_fields[] = {
    {1, "port", Type::IntOrString, &int_or_string}, {2, "host", Type::String}};
inline constexpr Message tcp_socket_action{tcp_socket_action_fields};
inline constexpr Field grpc_action_fields[] = {
    {1, "port", Type::Int32, nullptr, kKeep}, {2, "service", Type::String, nullptr, kKeep}};
inline constexpr Message grpc_action{grpc_action_fields};
inline constexpr Field probe_handler_fields[] = {
    {1, "exec", Type::Message, &exec_action}, {2, "httpGet", Type::Message, &http_get_action},
    {3, "tcpSocket", Type::Message, &tcp_socket_action}, {4, "grpc", Type::Message, &grpc_action}};
inline constexpr Message probe_handler{probe_handler_fields};
inline constexpr Field probe_fields[] = {
    {1, "", Type::Inline, &probe_handler}, {2, "initialDelaySeconds", Type::Int32},
    {3, "timeoutSeconds", Type::Int32}, {4, "periodSeconds", Type::Int32}, {5, "successThreshold", Type::Int32},
    {6, "failureThreshold", Type::Int32}, {7, "terminationGracePeriodSeconds", Type::Int64, nullptr, kKeep}};
inline constexpr Message probe{probe_fields};
inline constexpr Field sleep_action_fields[] = {
    {1, "seconds", Type::Int64, nullptr, kKeep}};
inline constexpr Message sleep_action{sleep_action_fields};
inline constexpr Field lifecycle_handler_fields[] = {
    {1, "exec", Type::Message, &exec_action}, {2, "httpGet", Type::Message, &http_get_action},
    {3, "tcpSocket", Type::Message, &tcp_socket_action}, {4, "sleep", Type::Message, &sleep_action}};
inline constexpr Message lifecycle_handler{lifecycle_handler_fields};
inline constexpr Field lifecycle_fields[] = {
    {1, "postStart", Type::Message, &lifecycle_handler}, {2, "preStop", Type::Message, &lifecycle_handler}};
inline constexpr Message lifecycle{lifecycle_fields};
inline constexpr Field capabilities_fields[] = {
    {1, "add", Type::Strings}, {2, "drop", Type::Strings}};
inline constexpr Message capabilities{capabilities_fields};
inline constexpr Field se_linux_options_fields[] = {
    {1, "user", Type::String}, {2, "role", Type::String}, {3, "type", Type::String}, {4, "level", Type::String}};
inline constexpr Message se_linux_options{se_linux_options_fields};
inline constexpr Field windows_security_context_options_fields[] = {
    {1, "gmsaCredentialSpecName", Type::String, nullptr, kKeep},
    {2, "gmsaCredentialSpec", Type::String, nullptr, kKeep}, {3, "runAsUserName", Type::String, nullptr, kKeep},
    {4, "hostProcess", Type::Bool, nullptr, kKeep}};
inline constexpr Message windows_security_context_options{windows_security_context_options_fields};
inline constexpr Field seccomp_profile_fields[] = {
    {1, "type", Type::String, nullptr, kKeep}, {2, "localhostProfile", Type::String, nullptr, kKeep}};
inline constexpr Message seccomp_profile{seccomp_profile_fields};
inline constexpr Field app_armor_profile_fields[] = {
    {1, "type", Type::String, nullptr, kKeep}, {2, "localhostProfile", Type::String, nullptr, kKeep}};
inline constexpr Message app_armor_profile{app_armor_profile_fields};
inline constexpr Field security_context_fields[] = {
    {1, "capabilities", Type::Message, &capabilities}, {2, "privileged", Type::Bool, nullptr, kKeep},
    {3, "seLinuxOptions", Type::Message, &se_linux_options},
    {10, "windowsOptions", Type::Message, &windows_security_context_options},
    {4, "runAsUser", Type::Int64, nullptr, kKeep}, {8, "runAsGroup", Type::Int64, nullptr, kKeep},
    {5, "runAsNonRoot", Type::Bool, nullptr, kKeep}, {6, "readOnlyRootFilesystem", Type::Bool, nullptr, kKeep},
    {7, "allowPrivilegeEscalation", Type::Bool, nullptr, kKeep}, {9, "procMount", Type::String, nullptr, kKeep},
    {11, "seccompProfile", Type::Message, &seccomp_profile},
    {12, "appArmorProfile", Type::Message, &app_armor_profile}};
inline constexpr Message security_context{security_context_fields};
inline constexpr Field container_fields[] = {
    {1, "name", Type::String, nullptr, kKeep}, {2, "image", Type::String}, {3, "command", Type::Strings},
    {4, "args", Type::Strings}, {5, "workingDir", Type::String}, {6, "ports", Type::Messages, &container_port},
    {19, "envFrom", Type::Messages, &env_from_source}, {7, "env", Type::Messages, &env_var},
    {8, "resources", Type::Message, &resource_requirements},
    {23, "resizePolicy", Type::Messages, &container_resize_policy},
    {24, "restartPolicy", Type::String, nullptr, kKeep}, {9, "volumeMounts", Type::Messages, &volume_mount},
    {21, "volumeDevices", Type::Messages, &volume_device}, {10, "livenessProbe", Type::Message, &probe},
    {11, "readinessProbe", Type::Message, &probe}, {22, "startupProbe", Type::Message, &probe},
    {12, "lifecycle", Type::Message, &lifecycle}, {13, "terminationMessagePath", Type::String},
    {20, "terminationMessagePolicy", Type::String}, {14, "imagePullPolicy", Type::String},
    {15, "securityContext", Type::Message, &security_context}, {16, "stdin", Type::Bool},
    {17, "stdinOnce", Type::Bool}, {18, "tty", Type::Bool}};
inline constexpr Message container{container_fields};
inline constexpr Field ephemeral_container_fields[] = {
    {1, "", Type::Inline, &container}, {2, "targetContainerName", Type::String}};
inline constexpr Message ephemeral_container{ephemeral_container_fields};
// The pod's own fields: security context, affinity, tolerations, DNS, topology spread, ...
inline constexpr Field sysctl_fields[] = {
    {1, "name", Type::String, nullptr, kKeep}, {2, "value", Type::String, nullptr, kKeep}};
inline constexpr Message sysctl{sysctl_fields};
inline constexpr Field pod_security_context_fields[] = {
    {1, "seLinuxOptions", Type::Message, &se_linux_options},
    {8, "windowsOptions", Type::Message, &windows_security_context_options},
    {2, "runAsUser", Type::Int64, nullptr, kKeep}, {6, "runAsGroup", Type::Int64, nullptr, kKeep},
    {3, "runAsNonRoot", Type::Bool, nullptr, kKeep}, {4, "supplementalGroups", Type::Int64s},
    {12, "supplementalGroupsPolicy", Type::String, nullptr, kKeep}, {5, "fsGroup", Type::Int64, nullptr, kKeep},
    {7, "sysctls", Type::Messages, &sysctl}, {9, "fsGroupChangePolicy", Type::String, nullptr, kKeep},
    {10, "seccompProfile", Type::Message, &seccomp_profile},
    {11, "appArmorProfile", Type::Message, &app_armor_profile},
    {13, "seLinuxChangePolicy", Type::String, nullptr, kKeep}};
inline constexpr Message pod_security_context{pod_security_context_fields};
inline constexpr Field node_selector_requirement_fields[] = {
    {1, "key", Type::String, nullptr, kKeep}, {2, "operator", Type::String, nullptr, kKeep},
    {3, "values", Type::Strings}};
inline constexpr Message node_selector_requirement{node_selector_requirement_fields};
inline constexpr Field node_selector_term_fields[] = {
    {1, "matchExpressions", Type::Messages, &node_selector_requirement},
    {2, "matchFields", Type::Messages, &node_selector_requirement}};
inline constexpr Message node_selector_term{node_selector_term_fields};
inline constexpr Field node_selector_fields[] = {
    {1, "nodeSelectorTerms", Type::Messages, &node_selector_term}};
inline constexpr Message node_selector{node_selector_fields};
inline constexpr Field preferred_scheduling_term_fields[] = {
    {1, "weight", Type::Int32, nullptr, kKeep}, {2, "preference", Type::Message, &node_selector_term}};
inline constexpr Message preferred_scheduling_term{preferred_scheduling_term_fields};
inline constexpr Field node_affinity_fields[] = {
    {1, "requiredDuringSchedulingIgnoredDuringExecution", Type::Message, &node_selector},
    {2, "preferredDuringSchedulingIgnoredDuringExecution", Type::Messages, &preferred_scheduling_term}};
inline constexpr Message node_affinity{node_affinity_fields};
inline constexpr Field pod_affinity_term_fields[] = {
    {1, "labelSelector", Type::Message, &label_selector}, {2, "namespaces", Type::Strings},
    {3, "topologyKey", Type::String, nullptr, kKeep}, {4, "namespaceSelector", Type::Message, &label_selector},
    {5, "matchLabelKeys", Type::Strings}, {6, "mismatchLabelKeys", Type::Strings}};
inline constexpr Message pod_affinity_term{pod_affinity_term_fields};
inline constexpr Field weighted_pod_affinity_term_fields[] = {
    {1, "weight", Type::Int32, nullptr, kKeep}, {2, "podAffinityTerm", Type::Message, &pod_affinity_term}};
inline constexpr Message weighted_pod_affinity_term{weighted_pod_affinity_term_fields};
inline constexpr Field pod_affinity_fields[] = {
    {1, "requiredDuringSchedulingIgnoredDuringExecution", Type::Messages, &pod_affinity_term},
    {2, "preferredDuringSchedulingIgnoredDuringExecution", Type::Messages, &weighted_pod_affinity_term}};
inline constexpr Message pod_affinity{pod_affinity_fields};
inline constexpr Field affinity_fields[] = {
    {1, "nodeAffinity", Type::Message, &node_affinity}, {2, "podAffinity", Type::Message, &pod_affinity},
    {3, "podAntiAffinity", Type::Message, &pod_affinity}};  // PodAntiAffinity has PodAffinity's fields
inline constexpr Message affinity{affinity_fields};
inline constexpr Field toleration_fields[] = {
    {1, "key", Type::String}, {2, "operator", Type::String}, {3, "value", Type::String}, {4, "effect", Type::String},
    {5, "tolerationSeconds", Type::Int64, nullptr, kKeep}};
inline constexpr Message toleration{toleration_fields};
inline constexpr Field host_alias_fields[] = {
    {1, "ip", Type::String, nullptr, kKeep}, {2, "hostnames", Type::Strings}};
inline constexpr Message host_alias{host_alias_fields};
inline constexpr Field pod_dns_config_option_fields[] = {
    {1, "name", Type::String}, {2, "value", Type::String, nullptr, kKeep}};
inline constexpr Message pod_dns_config_option{pod_dns_config_option_fields};
inline constexpr Field pod_dns_config_fields[] = {
    {1, "nameservers", Type::Strings}, {2, "searches", Type::Strings},
    {3, "options", Type::Messages, &pod_dns_config_option}};
inline constexpr Message pod_dns_config{pod_dns_config_fields};
inline constexpr Field pod_readiness_gate_fields[] = {
    {1, "conditionType", Type::String, nullptr, kKeep}};
inline constexpr Message pod_readiness_gate{pod_readiness_gate_fields};
inline constexpr Field topology_spread_constraint_fields[] = {
    {1, "maxSkew", Type::Int32, nullptr, kKeep}, {2, "topologyKey", Type::String, nullptr, kKeep},
    {3, "whenUnsatisfiable", Type::String, nullptr, kKeep}, {4, "labelSelector", Type::Message, &label_selector},
    {5, "minDomains", Type::Int32, nullptr, kKeep}, {6, "nodeAffinityPolicy", Type::String, nullptr, kKeep},
    {7, "nodeTaintsPolicy", Type::String, nullptr, kKeep}, {8, "matchLabelKeys", Type::Strings}};
inline constexpr Message topology_spread_constraint{topology_spread_constraint_fields};
inline constexpr Field pod_os_fields[] = {
    {1, "name", Type::String, nullptr, kKeep}};
inline constexpr Message pod_os{pod_os_fields};
inline constexpr Field pod_scheduling_gate_fields[] = {
    {1, "name", Type::String, nullptr, kKeep}};
inline constexpr Message pod_scheduling_gate{pod_scheduling_gate_fields};
inline constexpr Field pod_resource_claim_fields[] = {
    {1, "name", Type::String, nullptr, kKeep}, {3, "resourceClaimName", Type::String, nullptr, kKeep},
    {4, "resourceClaimTemplateName", Type::String, nullptr, kKeep}};
inline constexpr Message pod_resource_claim{pod_resource_claim_fields};
inline constexpr Field pod_spec_fields[] = {
    {1, "volumes", Type::Messages, &volume}, {20, "initContainers", Type::Messages, &container},
    {2, "containers", Type::Messages, &container}, {34, "ephemeralContainers", Type::Messages, &ephemeral_container},
    {3, "restartPolicy", Type::String}, {4, "terminationGracePeriodSeconds", Type::Int64, nullptr, kKeep},
    {5, "activeDeadlineSeconds", Type::Int64, nullptr, kKeep}, {6, "dnsPolicy", Type::String},
    {7, "nodeSelector", Type::StringMap}, {8, "serviceAccountName", Type::String},
    {9, "serviceAccount", Type::String}, {21, "automountServiceAccountToken", Type::Bool, nullptr, kKeep},
    {10, "nodeName", Type::String}, {11, "hostNetwork", Type::Bool}, {12, "hostPID", Type::Bool},
    {13, "hostIPC", Type::Bool}, {27, "shareProcessNamespace", Type::Bool, nullptr, kKeep},
    {14, "securityContext", Type::Message, &pod_security_context},
    {15, "imagePullSecrets", Type::Messages, &local_object_reference}, {16, "hostname", Type::String},
    {17, "subdomain", Type::String}, {18, "affinity", Type::Message, &affinity}, {19, "schedulerName", Type::String},
    {22, "tolerations", Type::Messages, &toleration}, {23, "hostAliases", Type::Messages, &host_alias},
    {24, "priorityClassName", Type::String}, {25, "priority", Type::Int32, nullptr, kKeep},
    {26, "dnsConfig", Type::Message, &pod_dns_config}, {28, "readinessGates", Type::Messages, &pod_readiness_gate},
    {29, "runtimeClassName", Type::String, nullptr, kKeep}, {30, "enableServiceLinks", Type::Bool, nullptr, kKeep},
    {31, "preemptionPolicy", Type::String, nullptr, kKeep}, {32, "overhead", Type::QuantityMap},
    {33, "topologySpreadConstraints", Type::Messages, &topology_spread_constraint},
    {35, "setHostnameAsFQDN", Type::Bool, nullptr, kKeep}, {36, "os", Type::Message, &pod_os},
    {37, "hostUsers", Type::Bool, nullptr, kKeep}, {38, "schedulingGates", Type::Messages, &pod_scheduling_gate},
    {39, "resourceClaims", Type::Messages, &pod_resource_claim},
    {40, "resources", Type::Message, &resource_requirements}};
inline constexpr Message pod_spec{pod_spec_fields};

inline constexpr Field pod_template_spec_fields[] = {
    {1, "metadata", Type::Message, &object_meta}, {2, "spec", Type::Message, &pod_spec}};
inline constexpr Message pod_template_spec{pod_template_spec_fields};

// A Pod's status is not read: it is not the client's to write (kube-apiserver drops it from
// a create and from an update of the pod itself); Go writes an empty one, so "status": {}.
inline constexpr Field pod_fields[] = {
    {1, "metadata", Type::Message, &object_meta}, {2, "spec", Type::Message, &pod_spec}, {3, "status", Type::Message, &no_fields}};

// apps/v1 Deployment (k8s.io/api apps/v1 generated.proto): the whole spec, its template the
// full pod template above; the status is not read (the server keeps its own).
inline constexpr Field rolling_update_deployment_fields[] = {
    {1, "maxUnavailable", Type::IntOrString, &int_or_string}, {2, "maxSurge", Type::IntOrString, &int_or_string}};
inline constexpr Message rolling_update_deployment{rolling_update_deployment_fields};
inline constexpr Field deployment_strategy_fields[] = {
    {1, "type", Type::String}, {2, "rollingUpdate", Type::Message, &rolling_update_deployment}};
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
    {"v1", "Pod", {pod_fields}},
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

/// Pushes the limit of the length-delimited field at the stream's position. A length past
/// the enclosing message's end is malformed (protobuf would keep the enclosing limit and let
/// the field end early, where Go's decoder answers unexpected EOF).
inline CodedInputStream::Limit push_length(CodedInputStream& in, std::string_view path) {
    std::uint32_t length = 0;
    if (!in.ReadVarint32(&length)) malformed("truncated length at " + std::string(path));
    const int room = in.BytesUntilLimit();  // -1: no limit pushed
    if (length > static_cast<std::uint32_t>(std::numeric_limits<int>::max()) || (room >= 0 && static_cast<int>(length) > room))
        malformed("truncated message at " + std::string(path));
    return in.PushLimit(static_cast<int>(length));
}

/// Runs `body` on the length-delimited field at the stream's position, bounded by its length.
template <class F>
void nested(CodedInputStream& in, std::string_view path, F&& body) {
    auto limit = push_length(in, path);
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

/// A resource.Quantity message: its string (field 1). Go's decoder leaves a Quantity without
/// one at its zero value, which its JSON encoder writes as "0".
inline json::string read_quantity(CodedInputStream& in, std::string_view path) {
    std::optional<std::string> s;
    nested(in, path, [&] {
        while (std::uint32_t tag = in.ReadTag()) {
            auto n = WFL::GetTagFieldNumber(tag);
            if (n == 1) {
                if (WFL::GetTagWireType(tag) != WFL::WIRETYPE_LENGTH_DELIMITED)
                    malformed("wrong wire type " + std::to_string(WFL::GetTagWireType(tag)) + " at " + std::string(path));
                s = read_bytes(in, path);
            } else if (!WFL::SkipField(&in, tag)) {
                malformed("truncated field " + std::to_string(n) + " at " + std::string(path));
            }
        }
        if (!in.ConsumedEntireMessage()) malformed("truncated message at " + std::string(path));
    });
    return json::string(s ? *s : std::string("0"));
}

/// A ResourceList entry {key = 1, value = 2 (a Quantity)}; absent parts are Go's zero values.
inline std::pair<std::string, json::string> read_quantity_entry(CodedInputStream& in, std::string_view path) {
    std::pair<std::string, json::string> kv{std::string(), json::string("0")};
    nested(in, path, [&] {
        while (std::uint32_t tag = in.ReadTag()) {
            auto n = WFL::GetTagFieldNumber(tag);
            if (n == 1 || n == 2) {
                if (WFL::GetTagWireType(tag) != WFL::WIRETYPE_LENGTH_DELIMITED)
                    malformed("wrong wire type " + std::to_string(WFL::GetTagWireType(tag)) + " at " + std::string(path));
                if (n == 1) kv.first = read_bytes(in, path);
                else kv.second = read_quantity(in, path);
            } else if (!WFL::SkipField(&in, tag)) {
                malformed("truncated field " + std::to_string(n) + " at " + std::string(path));
            }
        }
        if (!in.ConsumedEntireMessage()) malformed("truncated message at " + std::string(path));
    });
    return kv;
}

/// Moves the fields of `m` (through its inline parts) from `from` to `to`, in the table's order.
inline void take_in_order(json::object& from, json::object& to, const Message& m) {
    for (const auto& f : m.fields) {
        if (f.type == Type::Inline) take_in_order(from, to, *f.message);
        else if (auto* v = from.if_contains(f.json)) to[f.json] = std::move(*v);
    }
}

/// One field's value into `out` (maps and lists accumulate).
inline void read_field(CodedInputStream& in, const Field& f, json::object& out, const std::string& path, bool packed = false) {
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
    case Type::Inline: {
        // Its fields are the parent's; a repeated occurrence merges as for a Message.
        nested(in, path, [&] {
            auto part = read_message(in, *f.message, path);
            for (auto& kv : part) out[kv.key()] = std::move(kv.value());
        });
        return;
    }
    case Type::Quantity:
        out[key] = read_quantity(in, path);
        return;
    case Type::QuantityMap: {
        auto kv = read_quantity_entry(in, path);
        auto* m = out.if_contains(key);
        if (!m) m = &(out[key] = json::object());
        m->get_object()[kv.first] = std::move(kv.second);
        return;
    }
    case Type::Int64s: {
        // Unpacked (one varint per element, as Go writes it) or packed (one length-delimited
        // run of varints); read_message passed the wire type on in `packed`.
        auto* a = out.if_contains(key);
        if (!a) a = &(out[key] = json::array());
        auto one = [&] {
            std::uint64_t v = 0;
            if (!in.ReadVarint64(&v)) malformed("truncated varint at " + path);
            a->get_array().push_back(static_cast<std::int64_t>(v));
        };
        if (!packed) {
            one();
            return;
        }
        auto limit = push_length(in, path);
        while (in.BytesUntilLimit() > 0) one();  // a varint cut at the limit fails in one()
        in.PopLimit(limit);
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
        std::string sub = f->type == Type::Inline ? std::string(path)
                          : path.empty()           ? std::string(f->json)
                                                   : std::string(path) + "." + std::string(f->json);
        auto want = length_delimited(f->type) ? WFL::WIRETYPE_LENGTH_DELIMITED : WFL::WIRETYPE_VARINT;
        const bool packed = f->type == Type::Int64s && wt == WFL::WIRETYPE_LENGTH_DELIMITED;
        if (f->type == Type::Int64s && !packed) want = WFL::WIRETYPE_VARINT;
        if (wt != want) malformed("wrong wire type " + std::to_string(wt) + " for field " + (sub.empty() ? std::string("the object") : sub));
        read_field(in, *f, out, sub, packed);
    }
    // ReadTag gives 0 at the limit and on a broken tag; ConsumedEntireMessage tells them apart.
    if (!in.ConsumedEntireMessage()) malformed("truncated or invalid tag in " + (path.empty() ? std::string("the object") : std::string(path)));
    // In Go's field order (the order of the tables), as its JSON encoder writes them.
    json::object ordered;
    take_in_order(out, ordered, m);
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
