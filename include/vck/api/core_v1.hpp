// Typed core/v1 objects the library and VCK touch: Namespace, Node, Pod, PersistentVolume,
// PersistentVolumeClaim, Secret, ConfigMap, Event, and the pieces they share (NodeAffinity,
// Toleration, VolumeSource, ...). Only what our code reads or writes is modelled; every other
// field the server sends stays in each struct's `unknown` and is written back untouched.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/meta.hpp>
#include <vck/api/resource.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vck::api {

// ---- scheduling --------------------------------------------------------------------------

struct NodeSelectorRequirement {
    std::string key;
    std::string operator_;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
    std::vector<std::string> values;
};
BOOST_DESCRIBE_STRUCT(NodeSelectorRequirement, (), (key, operator_, values))

struct NodeSelectorTerm {
    std::vector<NodeSelectorRequirement> matchExpressions;
    std::vector<NodeSelectorRequirement> matchFields;
};
BOOST_DESCRIBE_STRUCT(NodeSelectorTerm, (), (matchExpressions, matchFields))

struct NodeSelector {
    std::vector<NodeSelectorTerm> nodeSelectorTerms;
};
BOOST_DESCRIBE_STRUCT(NodeSelector, (), (nodeSelectorTerms))

struct NodeAffinity {
    std::optional<NodeSelector> requiredDuringSchedulingIgnoredDuringExecution;
    json::value preferredDuringSchedulingIgnoredDuringExecution;  // kept as given
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(NodeAffinity, (),
    (requiredDuringSchedulingIgnoredDuringExecution, preferredDuringSchedulingIgnoredDuringExecution))

struct LabelSelectorRequirement {
    std::string key;
    std::string operator_;  // In, NotIn, Exists, DoesNotExist
    std::vector<std::string> values;
};
BOOST_DESCRIBE_STRUCT(LabelSelectorRequirement, (), (key, operator_, values))

struct LabelSelectorSpec {
    Labels matchLabels;
    std::vector<LabelSelectorRequirement> matchExpressions;
};
BOOST_DESCRIBE_STRUCT(LabelSelectorSpec, (), (matchLabels, matchExpressions))

struct PodAffinityTerm {
    std::optional<LabelSelectorSpec> labelSelector;
    std::string topologyKey;
    std::vector<std::string> namespaces;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(PodAffinityTerm, (), (labelSelector, topologyKey, namespaces))

struct PodAntiAffinity {
    std::vector<PodAffinityTerm> requiredDuringSchedulingIgnoredDuringExecution;
    json::value preferredDuringSchedulingIgnoredDuringExecution;
};
BOOST_DESCRIBE_STRUCT(PodAntiAffinity, (),
    (requiredDuringSchedulingIgnoredDuringExecution, preferredDuringSchedulingIgnoredDuringExecution))

struct Affinity {
    std::optional<NodeAffinity> nodeAffinity;
    json::value podAffinity;
    std::optional<PodAntiAffinity> podAntiAffinity;
};
BOOST_DESCRIBE_STRUCT(Affinity, (), (nodeAffinity, podAffinity, podAntiAffinity))

struct Toleration {
    std::string key;
    std::string operator_;  // Equal (default), Exists
    std::string value;
    std::string effect;     // NoSchedule, PreferNoSchedule, NoExecute, "" = all
    std::optional<std::int64_t> tolerationSeconds;
};
BOOST_DESCRIBE_STRUCT(Toleration, (), (key, operator_, value, effect, tolerationSeconds))

struct Taint {
    std::string key;
    std::string value;
    std::string effect;
    std::string timeAdded;
};
BOOST_DESCRIBE_STRUCT(Taint, (), (key, value, effect, timeAdded))

// ---- volumes -----------------------------------------------------------------------------

struct HostPathVolumeSource {
    std::string path;
    std::string type;  // "", DirectoryOrCreate, Directory, ...
};
BOOST_DESCRIBE_STRUCT(HostPathVolumeSource, (), (path, type))

struct PersistentVolumeClaimVolumeSource {
    std::string claimName;
    std::optional<bool> readOnly;
};
BOOST_DESCRIBE_STRUCT(PersistentVolumeClaimVolumeSource, (), (claimName, readOnly))

struct NFSVolumeSource {
    std::string server;
    std::string path;
    std::optional<bool> readOnly;
};
BOOST_DESCRIBE_STRUCT(NFSVolumeSource, (), (server, path, readOnly))

/// core/v1 VolumeSource: the kinds we create are typed; the rest stay in `unknown`.
struct VolumeSource {
    std::optional<HostPathVolumeSource> hostPath;
    std::optional<PersistentVolumeClaimVolumeSource> persistentVolumeClaim;
    std::optional<NFSVolumeSource> nfs;
    json::value emptyDir;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(VolumeSource, (), (hostPath, persistentVolumeClaim, nfs, emptyDir))

struct Volume : VolumeSource {
    std::string name;
};
BOOST_DESCRIBE_STRUCT(Volume, (VolumeSource), (name))

// ---- pods --------------------------------------------------------------------------------

struct SecretKeySelector {
    std::string name;
    std::string key;
    std::optional<bool> optional;
};
BOOST_DESCRIBE_STRUCT(SecretKeySelector, (), (name, key, optional))

struct EnvVarSource {
    std::optional<SecretKeySelector> secretKeyRef;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(EnvVarSource, (), (secretKeyRef))

struct EnvVar {
    std::string name;
    std::string value;
    std::optional<EnvVarSource> valueFrom;
};
BOOST_DESCRIBE_STRUCT(EnvVar, (), (name, value, valueFrom))

struct VolumeMount {
    std::string name;
    std::string mountPath;
    std::optional<bool> readOnly;
    std::string subPath;
};
BOOST_DESCRIBE_STRUCT(VolumeMount, (), (name, mountPath, readOnly, subPath))

struct Container {
    std::string name;
    std::string image;
    std::vector<std::string> command;
    std::vector<std::string> args;
    std::vector<EnvVar> env;
    std::vector<VolumeMount> volumeMounts;
    std::string imagePullPolicy;
    std::string terminationMessagePath;
    std::string terminationMessagePolicy;
    json::value resources;
    json::value securityContext;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(Container, (),
    (name, image, command, args, env, volumeMounts, imagePullPolicy, terminationMessagePath,
     terminationMessagePolicy, resources, securityContext))

struct PodSpec {
    std::vector<Container> initContainers;
    std::vector<Container> containers;
    std::vector<Volume> volumes;
    std::string restartPolicy;  // Always, OnFailure, Never
    std::string nodeName;
    StringMap nodeSelector;
    std::optional<Affinity> affinity;
    std::vector<Toleration> tolerations;
    std::string serviceAccountName;
    std::optional<std::int64_t> activeDeadlineSeconds;
    std::optional<std::int64_t> terminationGracePeriodSeconds;
    json::value securityContext;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(PodSpec, (),
    (initContainers, containers, volumes, restartPolicy, nodeName, nodeSelector, affinity, tolerations,
     serviceAccountName, activeDeadlineSeconds, terminationGracePeriodSeconds, securityContext))

struct ContainerStateTerminated {
    std::int64_t exitCode = 0;
    std::string reason;
    std::string message;
    std::string startedAt;
    std::string finishedAt;
};
BOOST_DESCRIBE_STRUCT(ContainerStateTerminated, (), (exitCode, reason, message, startedAt, finishedAt))

struct ContainerStateWaiting {
    std::string reason;
    std::string message;
};
BOOST_DESCRIBE_STRUCT(ContainerStateWaiting, (), (reason, message))

struct ContainerStateRunning {
    std::string startedAt;
};
BOOST_DESCRIBE_STRUCT(ContainerStateRunning, (), (startedAt))

struct ContainerState {
    std::optional<ContainerStateWaiting> waiting;
    std::optional<ContainerStateRunning> running;
    std::optional<ContainerStateTerminated> terminated;
};
BOOST_DESCRIBE_STRUCT(ContainerState, (), (waiting, running, terminated))

struct ContainerStatus {
    std::string name;
    std::optional<bool> ready;
    std::int64_t restartCount = 0;
    std::string image;
    std::optional<ContainerState> state;
    std::optional<ContainerState> lastState;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(ContainerStatus, (), (name, ready, restartCount, image, state, lastState))

struct Condition {
    std::string type;
    std::string status;  // "True", "False", "Unknown"
    std::string reason;
    std::string message;
    std::string lastTransitionTime;
    std::optional<std::int64_t> observedGeneration;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(Condition, (), (type, status, reason, message, lastTransitionTime, observedGeneration))

struct PodStatus {
    std::string phase;  // Pending, Running, Succeeded, Failed, Unknown
    std::vector<Condition> conditions;
    std::string message;
    std::string reason;
    std::string hostIP;
    std::string podIP;  // where peers reach a download pod that serves its copy (peer fill)
    std::string startTime;
    std::vector<ContainerStatus> initContainerStatuses;
    std::vector<ContainerStatus> containerStatuses;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(PodStatus, (), (phase, conditions, message, reason, hostIP, podIP, startTime, initContainerStatuses,
                                      containerStatuses))

struct Pod {
    static constexpr ResourceType resource{"", "v1", "pods", "Pod", true};
    std::string apiVersion = "v1";
    std::string kind = "Pod";
    ObjectMeta metadata;
    PodSpec spec;
    std::optional<PodStatus> status;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(Pod, (), (apiVersion, kind, metadata, spec, status))

// ---- nodes and namespaces ----------------------------------------------------------------

struct NodeSpec {
    std::vector<Taint> taints;
    std::optional<bool> unschedulable;
    std::string podCIDR;
    std::string providerID;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(NodeSpec, (), (taints, unschedulable, podCIDR, providerID))

struct NodeStatus {
    StringMap capacity;     // quantities as strings ("4", "16Gi")
    StringMap allocatable;
    std::vector<Condition> conditions;
    json::value addresses;
    json::value nodeInfo;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(NodeStatus, (), (capacity, allocatable, conditions, addresses, nodeInfo))

struct Node {
    static constexpr ResourceType resource{"", "v1", "nodes", "Node", false};
    std::string apiVersion = "v1";
    std::string kind = "Node";
    ObjectMeta metadata;
    NodeSpec spec;
    std::optional<NodeStatus> status;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(Node, (), (apiVersion, kind, metadata, spec, status))

struct Namespace {
    static constexpr ResourceType resource{"", "v1", "namespaces", "Namespace", false};
    std::string apiVersion = "v1";
    std::string kind = "Namespace";
    ObjectMeta metadata;
    json::value spec;
    json::value status;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(Namespace, (), (apiVersion, kind, metadata, spec, status))

// ---- storage -----------------------------------------------------------------------------

struct ObjectReference {
    std::string apiVersion;
    std::string kind;
    std::string namespace_;
    std::string name;
    std::string uid;
    std::string resourceVersion;
    std::string fieldPath;
};
BOOST_DESCRIBE_STRUCT(ObjectReference, (), (apiVersion, kind, namespace_, name, uid, resourceVersion, fieldPath))

struct VolumeNodeAffinity {
    std::optional<NodeSelector> required;
};
BOOST_DESCRIBE_STRUCT(VolumeNodeAffinity, (), (required))

struct LocalVolumeSource {
    std::string path;
    std::string fsType;
};
BOOST_DESCRIBE_STRUCT(LocalVolumeSource, (), (path, fsType))

struct PersistentVolumeSpec {
    StringMap capacity;  // {"storage": "10Gi"}
    std::vector<std::string> accessModes;
    std::string persistentVolumeReclaimPolicy;     // Retain, Delete, Recycle
    std::string storageClassName;
    std::string volumeMode;
    std::optional<ObjectReference> claimRef;
    std::optional<NFSVolumeSource> nfs;
    std::optional<HostPathVolumeSource> hostPath;
    std::optional<LocalVolumeSource> local;
    std::optional<VolumeNodeAffinity> nodeAffinity;
    std::vector<std::string> mountOptions;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(PersistentVolumeSpec, (),
    (capacity, accessModes, persistentVolumeReclaimPolicy, storageClassName, volumeMode, claimRef, nfs, hostPath,
     local, nodeAffinity, mountOptions))

struct PersistentVolumeStatus {
    std::string phase;  // Pending, Available, Bound, Released, Failed
    std::string message;
    std::string reason;
};
BOOST_DESCRIBE_STRUCT(PersistentVolumeStatus, (), (phase, message, reason))

struct PersistentVolume {
    static constexpr ResourceType resource{"", "v1", "persistentvolumes", "PersistentVolume", false};
    std::string apiVersion = "v1";
    std::string kind = "PersistentVolume";
    ObjectMeta metadata;
    PersistentVolumeSpec spec;
    std::optional<PersistentVolumeStatus> status;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(PersistentVolume, (), (apiVersion, kind, metadata, spec, status))

struct ResourceRequirements {
    StringMap requests;
    StringMap limits;
};
BOOST_DESCRIBE_STRUCT(ResourceRequirements, (), (requests, limits))

/// The object a claim's data comes from (spec.dataSourceRef): any kind, a volume populator's.
struct TypedObjectReference {
    std::string apiGroup;  // "" for the core group
    std::string kind;
    std::string name;
    std::optional<std::string> namespace_;  // cross-namespace sources need a feature gate
};
BOOST_DESCRIBE_STRUCT(TypedObjectReference, (), (apiGroup, kind, name, namespace_))

struct PersistentVolumeClaimSpec {
    std::vector<std::string> accessModes;
    ResourceRequirements resources;
    std::string volumeName;
    std::optional<std::string> storageClassName;  // "" (no class) differs from absent (default class)
    std::string volumeMode;
    std::optional<LabelSelectorSpec> selector;
    std::optional<TypedObjectReference> dataSourceRef;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(PersistentVolumeClaimSpec, (),
    (accessModes, resources, volumeName, storageClassName, volumeMode, selector, dataSourceRef))

struct PersistentVolumeClaimStatus {
    std::string phase;  // Pending, Bound, Lost
    std::vector<std::string> accessModes;
    StringMap capacity;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(PersistentVolumeClaimStatus, (), (phase, accessModes, capacity))

struct PersistentVolumeClaim {
    static constexpr ResourceType resource{"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true};
    std::string apiVersion = "v1";
    std::string kind = "PersistentVolumeClaim";
    ObjectMeta metadata;
    PersistentVolumeClaimSpec spec;
    std::optional<PersistentVolumeClaimStatus> status;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(PersistentVolumeClaim, (), (apiVersion, kind, metadata, spec, status))

// ---- config ------------------------------------------------------------------------------

struct Secret {
    static constexpr ResourceType resource{"", "v1", "secrets", "Secret", true};
    std::string apiVersion = "v1";
    std::string kind = "Secret";
    ObjectMeta metadata;
    StringMap data;        // base64, as on the wire
    StringMap stringData;  // write-only plain text
    std::string type;
    std::optional<bool> immutable;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(Secret, (), (apiVersion, kind, metadata, data, stringData, type, immutable))

struct ConfigMap {
    static constexpr ResourceType resource{"", "v1", "configmaps", "ConfigMap", true};
    std::string apiVersion = "v1";
    std::string kind = "ConfigMap";
    ObjectMeta metadata;
    StringMap data;
    StringMap binaryData;
    std::optional<bool> immutable;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(ConfigMap, (), (apiVersion, kind, metadata, data, binaryData, immutable))

// ---- events ------------------------------------------------------------------------------

struct EventSource {
    std::string component;
    std::string host;
};
BOOST_DESCRIBE_STRUCT(EventSource, (), (component, host))

struct Event {
    static constexpr ResourceType resource{"", "v1", "events", "Event", true};
    std::string apiVersion = "v1";
    std::string kind = "Event";
    ObjectMeta metadata;
    ObjectReference involvedObject;
    std::string reason;
    std::string message;
    std::string type;  // Normal, Warning
    std::optional<EventSource> source;
    std::string firstTimestamp;
    std::string lastTimestamp;
    std::optional<std::int64_t> count;
    std::string eventTime;
    std::string reportingComponent;
    std::string reportingInstance;
    std::string action;
    json::object unknown;
};
BOOST_DESCRIBE_STRUCT(Event, (),
    (apiVersion, kind, metadata, involvedObject, reason, message, type, source, firstTimestamp, lastTimestamp,
     count, eventTime, reportingComponent, reportingInstance, action))

} // namespace vck::api
