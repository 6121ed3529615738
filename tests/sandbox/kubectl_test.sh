#!/usr/bin/env bash
# kubectl against vck-sandbox: the sandbox is judged by a client no one here wrote.
# Usage: kubectl_test.sh PATH/TO/vck-sandbox [kubectl]
# Prints one TAP line per check ("ok - ..." / "not ok - ...") and exits non-zero on failure.
set -u

SANDBOX=${1:?usage: kubectl_test.sh PATH/TO/vck-sandbox [kubectl]}
KUBECTL=${2:-${KUBECTL:-kubectl}}
HERE=$(cd "$(dirname "$0")" && pwd)
M=$HERE/manifests
WORK=$(mktemp -d)
KCFG=$WORK/kubeconfig
PID=
BG=()

cleanup() {
    for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done
    if [ -n "$PID" ]; then
        kill -TERM "$PID" 2>/dev/null
        wait "$PID" 2>/dev/null
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

failures=0
count=0
pass() { count=$((count + 1)); echo "ok - $1"; }
fail() {
    count=$((count + 1))
    failures=$((failures + 1))
    echo "not ok - $1"
    [ -n "${2:-}" ] && printf '%s\n' "$2" | head -40 | sed 's/^/#   /'
    return 0
}
k() { "$KUBECTL" --kubeconfig "$KCFG" --cache-dir "$WORK/cache" --request-timeout=20s "$@"; }

# check NAME CMD...: the command succeeds.
check() {
    local name=$1
    shift
    local out
    if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "$out"; fi
}
# expect NAME REGEX CMD...: the command succeeds and its output matches REGEX (grep -E).
expect() {
    local name=$1 re=$2
    shift 2
    local out
    if out=$("$@" 2>&1) && printf '%s\n' "$out" | grep -Eq -- "$re"; then pass "$name"; else fail "$name" "$out"; fi
}
# refuse NAME REGEX CMD...: the command fails and its output matches REGEX.
refuse() {
    local name=$1 re=$2
    shift 2
    local out
    if ! out=$("$@" 2>&1) && printf '%s\n' "$out" | grep -Eq -- "$re"; then pass "$name"; else fail "$name" "$out"; fi
}

"$SANDBOX" --port 0 --admin-port 0 --kubeconfig-out "$KCFG" >"$WORK/sandbox.log" 2>&1 &
PID=$!
for _ in $(seq 1 300); do
    grep -q '^admin: ' "$WORK/sandbox.log" 2>/dev/null && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
done
if ! grep -q '^admin: ' "$WORK/sandbox.log"; then
    fail "vck-sandbox starts and writes a kubeconfig" "$(cat "$WORK/sandbox.log")"
    exit 1
fi
pass "vck-sandbox starts and writes a kubeconfig"
ADMIN=$(sed -n 's/^admin: //p' "$WORK/sandbox.log")
admin() { curl -sS -f -X POST -H 'Content-Type: application/json' -d "$2" "$ADMIN$1"; }

expect "kubectl version reaches the server" 'Server Version: v1\.32' k version
expect "kubectl get --raw /readyz answers ok" '^ok$' k get --raw /readyz
expect "kubectl get --raw '/readyz?verbose' lists each check" '^\[\+\]etcd ok$' k get --raw '/readyz?verbose'
expect "kubectl get --raw '/readyz?verbose' ends as kube-apiserver's" '^readyz check passed$' k get --raw '/readyz?verbose'
expect "kubectl get --raw '/livez?verbose' ends as kube-apiserver's" '^livez check passed$' k get --raw '/livez?verbose'
expect "kubectl get --raw /readyz/etcd answers ok" '^ok$' k get --raw /readyz/etcd
refuse "kubectl get --raw /readyz/nonesuch is 404" 'NotFound|not found' k get --raw /readyz/nonesuch

# A custom resource definition, then a custom resource.
expect "apply a CRD from a file" 'widgets.example.vck.io (created|configured)' k apply -f "$M/crd.yaml"
expect "get crd lists it" '^widgets\.example\.vck\.io' k get crd
expect "api-resources lists the CRD's resource with its short name" \
    '^widgets +wd +example\.vck\.io/v1 +true +Widget' k api-resources
expect "api-resources lists built-in pods" '^pods +po +v1 +true +Pod' k api-resources
expect "api-resources lists batch/v1 jobs, without a short name" '^jobs +batch/v1 +true +Job' k api-resources
scale=$(k get --raw /apis/apps/v1 2>&1 | python3 -c 'import json, sys
r = [x for x in json.load(sys.stdin)["resources"] if x["name"] == "deployments/scale"][0]
print(",".join(r["verbs"]), r.get("group"), r.get("version"), r["kind"])' 2>&1)
expect "discovery lists deployments/scale as kube-apiserver does: get, patch, update of autoscaling/v1 Scale" \
    '^get,patch,update autoscaling v1 Scale$' echo "$scale"
expect "apply a custom resource" 'widget.example.vck.io/w1 created' k apply -f "$M/widget.yaml"
expect "get shows the CRD's printer columns" 'NAME +SIZE +COLOR +PHASE +AGE' k get widgets
expect "get shows the printer column values (a missing one blank)" '^w1 +3 +red +[0-9]+s' k get widgets
expect "get by short name works" '^w1 ' k get wd
expect "get -o json returns the object" '"color": "red"' k get widget w1 -o json
expect "get -o yaml returns the object" '^  size: 3$' k get widget w1 -o yaml
expect "get -o jsonpath extracts a field" '^red$' k get widget w1 -o 'jsonpath={.spec.color}'
expect "get -o name" '^widget\.example\.vck\.io/w1$' k get widgets -o name
expect "get with a label selector selects" '^w1 ' k get widgets -l team=blue
expect "get with a non-matching label selector selects nothing" 'No resources found' k get widgets -l team=red
expect "get -A lists across namespaces" '^default +w1 ' k get widgets -A
refuse "get of a missing object says NotFound" 'widgets.example.vck.io "nope" not found' k get widget nope

# Metadata and patches.
expect "label" 'widget.example.vck.io/w1 labeled' k label widget w1 tier=gold
expect "label is visible" '"tier": "gold"' k get widget w1 -o json
expect "annotate" 'widget.example.vck.io/w1 annotated' k annotate widget w1 note=hello
expect "annotation is visible" '^hello$' k get widget w1 -o 'jsonpath={.metadata.annotations.note}'
expect "patch --type=merge" 'widget.example.vck.io/w1 patched' k patch widget w1 --type=merge -p '{"spec":{"size":5}}'
expect "merge patch took effect" '^5$' k get widget w1 -o 'jsonpath={.spec.size}'
expect "patch --type=json" 'widget.example.vck.io/w1 patched' \
    k patch widget w1 --type=json -p '[{"op":"replace","path":"/spec/color","value":"blue"}]'
expect "json patch took effect" '^blue$' k get widget w1 -o 'jsonpath={.spec.color}'
refuse "a failing json patch test op is refused" 'invalid' \
    k patch widget w1 --type=json -p '[{"op":"test","path":"/spec/color","value":"pink"}]'
refuse "strategic merge patch on a custom resource is refused with 415" 'strategic-merge-patch\+json is not supported' \
    k patch widget w1 --type=strategic -p '{"spec":{"size":6}}'
refuse "a schema violation is refused as Invalid" 'spec.size' k patch widget w1 --type=merge -p '{"spec":{"size":0}}'
# Server-side dry runs go through the same checks as the write, and store nothing.
bad_widget() {
    k apply --dry-run=server -f - <<'EOF'
apiVersion: example.vck.io/v1
kind: Widget
metadata:
  name: w-bad
spec:
  size: 0
EOF
}
refuse "apply --dry-run=server of an invalid object fails as the write would" 'spec.size' bad_widget
refuse "apply --dry-run=server into a missing namespace fails" 'namespaces "nowhere" not found' \
    k apply --dry-run=server -n nowhere -f "$M/configmap.yaml"
expect "apply --dry-run=server of a valid object answers (server dry run)" 'configmap/cm1 created \(server dry run\)' \
    k apply --dry-run=server -f "$M/configmap.yaml"
refuse "the server dry run stored nothing" 'not found' k get configmap cm1
expect "replace" 'widget.example.vck.io/w1 replaced' k replace -f "$M/widget-replace.yaml"
expect "replace took effect" '^9 green$' k get widget w1 -o 'jsonpath={.spec.size} {.spec.color}'

# Status subresource, wait.
( k wait widget/w1 --for=condition=Ready --timeout=30s >"$WORK/wait-cond.out" 2>&1; echo $? >"$WORK/wait-cond.rc" ) &
BG+=($!)
( k wait widget/w1 --for=jsonpath='{.status.phase}'=Done --timeout=30s >"$WORK/wait-jp.out" 2>&1; echo $? >"$WORK/wait-jp.rc" ) &
BG+=($!)
sleep 1
expect "patch --subresource=status" 'patched' k patch widget w1 --subresource=status --type=merge \
    -p '{"status":{"phase":"Done","conditions":[{"type":"Ready","status":"True","reason":"Built","message":"ok","lastTransitionTime":"2025-01-01T00:00:00Z"}]}}'
expect "the status patch shows in the printer columns" '^w1 +9 +green +Done ' k get widgets
for _ in $(seq 1 300); do [ -f "$WORK/wait-cond.rc" ] && [ -f "$WORK/wait-jp.rc" ] && break; sleep 0.1; done
if [ "$(cat "$WORK/wait-cond.rc" 2>/dev/null)" = 0 ] && grep -q 'condition met' "$WORK/wait-cond.out"; then
    pass "wait --for=condition=Ready returns once the status says so"
else
    fail "wait --for=condition=Ready returns once the status says so" "$(cat "$WORK/wait-cond.out" 2>/dev/null)"
fi
if [ "$(cat "$WORK/wait-jp.rc" 2>/dev/null)" = 0 ] && grep -q 'condition met' "$WORK/wait-jp.out"; then
    pass "wait --for=jsonpath returns once the field matches"
else
    fail "wait --for=jsonpath returns once the field matches" "$(cat "$WORK/wait-jp.out" 2>/dev/null)"
fi
OUT=$(k patch widget w1 --type=merge -p '{"status":{"phase":"Other"}}' 2>&1; k get widget w1 -o 'jsonpath={.spec.size} {.status.phase}')
if printf '%s' "$OUT" | grep -q '9 Done'; then pass "status is only written through /status"; else fail "status is only written through /status" "$OUT"; fi

# describe lists the object's events.
UID_W1=$(k get widget w1 -o 'jsonpath={.metadata.uid}')
cat >"$WORK/event.yaml" <<EOF
apiVersion: v1
kind: Event
metadata:
  name: w1.built
involvedObject:
  apiVersion: example.vck.io/v1
  kind: Widget
  name: w1
  namespace: default
  uid: $UID_W1
reason: Built
message: widget w1 was built
type: Normal
count: 1
firstTimestamp: "2025-01-01T00:00:00Z"
lastTimestamp: "2025-01-01T00:00:00Z"
source:
  component: vck-test
EOF
expect "create an event" 'event/w1.built created' k create -f "$WORK/event.yaml"
expect "describe shows the object" 'Name: +w1' k describe widget w1
expect "describe lists the object's events" 'Normal +Built .*widget w1 was built' k describe widget w1
expect "get events shows the event" 'Built +widget/w1 +widget w1 was built' k get events

# events.k8s.io/v1: the same Events in their newer shape (client-go's tools/events, kube-rs'
# recorder), one storage with core/v1: written through one version, read through the other.
cat >"$WORK/event-v1.yaml" <<EOF
apiVersion: events.k8s.io/v1
kind: Event
metadata:
  name: w1.delivered
eventTime: "2025-01-01T00:00:00.000000Z"
reportingController: vck.io/test
reportingInstance: test-0
action: Delivering
reason: Delivered
type: Normal
regarding:
  apiVersion: example.vck.io/v1
  kind: Widget
  name: w1
  namespace: default
  uid: $UID_W1
note: widget w1 was delivered
EOF
expect "create an events.k8s.io/v1 event" 'event.events.k8s.io/w1.delivered created' k create -f "$WORK/event-v1.yaml"
expect "get events (core/v1) shows the events.k8s.io/v1 event" 'Delivered +widget/w1 +widget w1 was delivered' k get events
expect "get events.v1.events.k8s.io shows the core/v1 event" 'Built +widget/w1 +widget w1 was built' k get events.v1.events.k8s.io
expect "get events.v1.events.k8s.io -o wide shows the reporting controller as source" 'vck.io/test, test-0 +widget w1 was delivered' k get events.v1.events.k8s.io -o wide
expect "the core/v1 view has the note as message" '^widget w1 was delivered$' k get events w1.delivered -o 'jsonpath={.message}'
expect "the events.k8s.io/v1 view has the message as note" '^widget w1 was built$' k get events.v1.events.k8s.io w1.built -o 'jsonpath={.note}'
# sorted: kubectl asks for Table rows with whole objects (includeObject=Object) and reads the
# field from each; an object without kind and apiVersion prints <unknown> in every column.
sorted_ok() {
    local name=$1 re=$2 out
    shift 2
    if out=$("$@" 2>&1) && printf '%s\n' "$out" | grep -Eq -- "$re" && ! printf '%s\n' "$out" | grep -q '<unknown>'; then
        pass "$name"
    else
        fail "$name" "$out"
    fi
}
sorted_ok "get events --sort-by=.lastTimestamp prints the rows, no <unknown>" 'Built +widget/w1 +widget w1 was built' \
    k get events --sort-by=.lastTimestamp
expect "describe lists the events.k8s.io/v1 event" 'Normal +Delivered .*widget w1 was delivered' k describe widget w1
expect "kubectl events lists both" 'Delivered +Widget/w1 +widget w1 was delivered' k events
expect "kubectl events --for selects the object's events" 'Built +Widget/w1 +widget w1 was built' k events --for widget/w1
expect "a field selector of events.k8s.io/v1 names regarding" '^event.events.k8s.io/w1.delivered$' \
    k get events.v1.events.k8s.io --field-selector regarding.name=w1,reason=Delivered -o name
cat >"$WORK/event-untimed.yaml" <<'EOF'
apiVersion: events.k8s.io/v1
kind: Event
metadata:
  name: w1.untimed
reportingController: vck.io/test
reportingInstance: test-0
action: Delivering
reason: Delivered
type: Normal
regarding: {kind: Widget, name: w1, namespace: default}
EOF
refuse "an events.k8s.io/v1 event needs an eventTime" 'eventTime: Required value' k create -f "$WORK/event-untimed.yaml"
refuse "an events.k8s.io/v1 event's note is immutable" 'message: Invalid value: "changed": field is immutable' \
    k patch events.v1.events.k8s.io w1.delivered --type=merge -p '{"note":"changed"}'

# Watch: add, modify, delete arrive at kubectl get -w.
k get widgets -w --output-watch-events >"$WORK/watch.out" 2>&1 &
WPID=$!
BG+=($WPID)
sleep 1.5
k create -f - >/dev/null 2>&1 <<'EOF'
apiVersion: example.vck.io/v1
kind: Widget
metadata:
  name: w2
spec:
  size: 2
  color: teal
EOF
k patch widget w2 --type=merge -p '{"spec":{"size":7}}' >/dev/null 2>&1
k delete widget w2 >/dev/null 2>&1
for _ in $(seq 1 100); do grep -q 'DELETED' "$WORK/watch.out" && break; sleep 0.1; done
kill "$WPID" 2>/dev/null
W=$(cat "$WORK/watch.out")
if printf '%s\n' "$W" | grep -Eq '^ADDED +w2 +2 +teal' && printf '%s\n' "$W" | grep -Eq '^MODIFIED +w2 +7 +teal' &&
    printf '%s\n' "$W" | grep -Eq '^DELETED +w2 '; then
    pass "get -w receives ADDED, MODIFIED and DELETED"
else
    fail "get -w receives ADDED, MODIFIED and DELETED" "$W"
fi

expect "delete" 'widget.example.vck.io "w1" deleted' k delete widget w1
refuse "the deleted object is gone" 'not found' k get widget w1

# Field validation (kubectl sends fieldValidation=Strict unless told otherwise) and the CRD's
# OpenAPI v3 schema, with vck's own VolumeManager CRD.
expect "apply the VolumeManager CRD from crds/" 'volumemanagers.vck.intelai.org (created|configured)' \
    k apply -f "$HERE/../../crds/volumemanager.yaml"
apply_typo() {
    k apply "$@" -f - <<'EOF'
apiVersion: vck.intelai.org/v1alpha1
kind: VolumeManager
metadata:
  name: vm-typo
spec:
  nodeAfinity: {}
  volumeConfigs:
  - id: data
    sorceType: S3
    sourceType: NFS
    accessMode: ReadWriteOnce
    labels: {team: a}
EOF
}
refuse "apply of a VolumeManager with typos fails with the strict decoding error" \
    'VolumeManager in version "v1alpha1" cannot be handled as a VolumeManager: strict decoding error: unknown field "spec.nodeAfinity", unknown field "spec.volumeConfigs\[0\].sorceType"' \
    apply_typo
refuse "the refused VolumeManager was not stored" 'not found' k get volumemanager vm-typo
expect "apply --validate=warn of it succeeds and prints the server's warnings" \
    '^Warning: unknown field "spec.volumeConfigs\[0\].sorceType"' apply_typo --validate=warn
expect "the VolumeManager was stored without the unknown fields" '^NFS $' \
    k get volumemanager vm-typo -o 'jsonpath={.spec.volumeConfigs[0].sourceType} {.spec.nodeAfinity}'
refuse "apply (a merge patch) of it again under Strict is refused, naming the field" \
    'strict decoding error: unknown field \\?"spec.nodeAfinity' apply_typo
expect "apply --validate=false of it is silent" '^volumemanager.vck.intelai.org/vm-typo (unchanged|configured)$' \
    apply_typo --validate=false
KMINOR=$(k version --client -o json 2>/dev/null | sed -n 's/.*"minor": *"\([0-9]*\).*/\1/p' | head -1)
if [ "${KMINOR:-0}" -lt 27 ]; then
    count=$((count + 1))
    echo "ok - kubectl explain prints the CRD's fields # skip kubectl 1.${KMINOR:-?} reads OpenAPI v2"
else
    expect "explain volumemanager.spec --recursive prints the schema's fields" \
        '^ +sourceType\s+<string> -required-' k explain volumemanager.spec --recursive
    expect "explain of a field prints its description" 'Nodes that get a copy' \
        k explain volumemanager.spec.volumeConfigs.replicas
    described() { # described FIELD: kubectl explain FIELD prints a description for it and each of its fields
        local out
        out=$(k explain "$1" 2>&1) && grep -q 'DESCRIPTION:' <<<"$out" && ! grep -q '<no description>' <<<"$out" ||
            { printf '%s\n' "$out"; return 1; }
    }
    expect "explain volumemanager.status and each of its lists: a description for every field" '^$' \
        eval 'for f in status status.conditions status.copies status.volumes; do described volumemanager.$f || exit 1; done'
    expect "explain volumemanagers names the kind and its top-level fields" 'KIND: +VolumeManager' k explain volumemanagers
fi
expect "get -o wide adds the Volumes, Nodes and Observed columns to the default ones" \
    '^NAME +STATE +READY +PROGRESS +MESSAGE +AGE +VOLUMES +NODES +OBSERVED$' k get volumemanager vm-typo -o wide
expect "plain get shows the default columns only" '^NAME +STATE +READY +PROGRESS +MESSAGE +AGE$' k get volumemanager vm-typo
k delete volumemanager vm-typo >/dev/null 2>&1

# Built-in kinds: unknown fields as kube-apiserver 1.32 treats them (kubectl sends Strict), and
# kubectl apply computing strategic merge patches (merge keys from its compiled-in types).
twins() {
    k apply "$@" -f - <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: twins
spec:
  nodeName: node-1
  containers:
  - name: first
    image: ${FIRST_IMAGE:-busybox}
  - name: second
    image: busybox
    ${TYPO:-}
EOF
}
twins_typo() { TYPO='imagee: busybox' twins "$@"; }
twins_new_image() { FIRST_IMAGE=busybox:1.36 twins "$@"; }
refuse "apply of a pod with a typo fails with the strict decoding error" \
    'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.containers\[1\].imagee"' \
    twins_typo
refuse "the refused pod was not stored" 'not found' k get pod twins
expect "apply --validate=warn of it warns and creates the pod" '^Warning: unknown field "spec.containers\[1\].imagee"' \
    twins_typo --validate=warn
expect "the pod was stored without the unknown field" '^first second$' \
    k get pod twins -o 'jsonpath={.spec.containers[*].name}{.spec.containers[1].imagee}'
expect "apply of a change to one container sends a strategic merge patch keyed by container name" \
    'setElementOrder/containers' twins_new_image -v=8
expect "the changed container has its new image, the other is kept as it was" '^first=busybox:1.36 second=busybox $' \
    k get pod twins -o 'jsonpath={range .spec.containers[*]}{.name}={.image} {end}'
k delete pod twins --grace-period=0 --force >/dev/null 2>&1

# Built-in kinds.
# kubectl's typed create commands (1.32 sends their bodies as protobuf, older ones as JSON).
expect "create secret generic" 'secret/s1 created' k create secret generic s1 --from-literal=key=value
expect "the secret's data is base64" '^dmFsdWU=$' k get secret s1 -o 'jsonpath={.data.key}'
expect "get secrets shows type and data count" '^s1 +Opaque +1 ' k get secrets
if openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/tls.key" -out "$WORK/tls.crt" -subj /CN=vck-test \
    -days 1 >/dev/null 2>&1; then
    expect "create secret tls" 'secret/t1 created' k create secret tls t1 --cert="$WORK/tls.crt" --key="$WORK/tls.key"
    expect "the tls secret has its type and both keys" '^kubernetes.io/tls [A-Za-z0-9+/=]+ [A-Za-z0-9+/=]+$' \
        k get secret t1 -o 'jsonpath={.type} {.data.tls\.crt} {.data.tls\.key}'
fi
expect "create secret docker-registry" 'secret/r1 created' \
    k create secret docker-registry r1 --docker-server=registry.example --docker-username=u --docker-password=p
expect "the registry secret is a dockerconfigjson" '^kubernetes.io/dockerconfigjson$' k get secret r1 -o 'jsonpath={.type}'
expect "create configmap" 'configmap/c1 created' k create configmap c1 --from-literal=a=b
expect "the configmap holds the literal" '^b$' k get configmap c1 -o 'jsonpath={.data.a}'
expect "create namespace" 'namespace/n1 created' k create namespace n1
expect "the created namespace is Active" '^Active$' k get namespace n1 -o 'jsonpath={.status.phase}'
expect "create serviceaccount" 'serviceaccount/sa1 created' k create serviceaccount sa1 -n n1
expect "the service account is in its namespace" '^sa1$' k get serviceaccount sa1 -n n1 -o 'jsonpath={.metadata.name}'
refuse "create of an existing secret is AlreadyExists" 'already exists' k create secret generic s1 --from-literal=key=value
expect "apply a configmap" 'configmap/cm1 created' k apply -f "$M/configmap.yaml"
expect "apply again is unchanged" 'configmap/cm1 unchanged' k apply -f "$M/configmap.yaml"
expect "create a node" 'node/node-1 created' k create -f "$M/node.yaml"
expect "patch the node's status" 'patched' k patch node node-1 --subresource=status --type=merge \
    -p '{"status":{"conditions":[{"type":"Ready","status":"True"}],"nodeInfo":{"kubeletVersion":"v1.32.0-vck"}}}'
expect "get nodes shows STATUS ROLES AGE VERSION" '^node-1 +Ready +worker +[0-9]+s +v1\.32\.0-vck' k get nodes
expect "get nodes -o wide adds INTERNAL-IP EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME" \
    'VERSION +INTERNAL-IP +EXTERNAL-IP +OS-IMAGE +KERNEL-VERSION +CONTAINER-RUNTIME' k get nodes -o wide
expect "apply a pod" 'pod/logger created' k apply -f "$M/pod.yaml"
expect "get pods shows READY STATUS RESTARTS AGE" '^logger +0/1 +Pending +0 ' k get pods
sorted_ok "get pods -A --sort-by=.metadata.name prints the rows, no <unknown>" '^default +logger +0/1 +Pending +0 ' \
    k get pods -A --sort-by=.metadata.name
expect "kubectl get --raw /metrics counts the pod lists under kube-apiserver's name" \
    '^apiserver_request_total\{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"\} [1-9]' \
    k get --raw /metrics
expect "strategic merge patch on a pod merges containers by name" 'pod/logger patched' \
    k patch pod logger -p '{"spec":{"containers":[{"name":"main","image":"busybox:1.36"}]}}'
expect "the strategic patch kept the container's env" '^busybox:1\.36 A$' \
    k get pod logger -o 'jsonpath={.spec.containers[0].image} {.spec.containers[0].env[0].name}'
admin /pod-logs '{"namespace":"default","pod":"logger","container":"main","text":"hello from logger\nsecond line\n"}' >/dev/null
expect "logs POD prints the container's log" 'hello from logger' k logs logger
expect "logs --tail=1 prints the last line" '^second line$' k logs logger --tail=1
refuse "logs of a missing container is refused" 'not valid for pod' k logs logger -c nope
# logs -f: started in the background (bounded by timeout), it prints a line appended after it
# started and returns once the container terminates (the admin API closes its log).
timeout 20 "$KUBECTL" --kubeconfig "$KCFG" logs -f logger >"$WORK/follow.out" 2>&1 &
FOLLOW=$!
for _ in $(seq 1 100); do grep -q '^second line$' "$WORK/follow.out" 2>/dev/null && break; sleep 0.1; done
admin /pod-logs '{"namespace":"default","pod":"logger","container":"main","text":"appended while following\n"}' >/dev/null
for _ in $(seq 1 100); do grep -q 'appended while following' "$WORK/follow.out" 2>/dev/null && break; sleep 0.1; done
if kill -0 "$FOLLOW" 2>/dev/null; then pass "logs -f is still following before the container terminates"; else
    fail "logs -f is still following before the container terminates" "$(cat "$WORK/follow.out")"; fi
admin /pod-logs '{"namespace":"default","pod":"logger","container":"main","text":"last words\n","close":true}' >/dev/null
if wait "$FOLLOW" && grep -q '^appended while following$' "$WORK/follow.out" && grep -q '^last words$' "$WORK/follow.out"; then
    pass "logs -f prints lines appended after it started and returns when the container terminates"
else
    fail "logs -f prints lines appended after it started and returns when the container terminates" "$(cat "$WORK/follow.out")"
fi
expect "logs -f of a terminated container prints the whole log and returns" '^last words$' timeout 20 "$KUBECTL" --kubeconfig "$KCFG" logs -f logger
expect "logs --timestamps prefixes each line with its RFC3339Nano time" \
    '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z hello from logger$' k logs logger --timestamps
expect "logs --since=1h prints the lines of the last hour" '^hello from logger$' k logs logger --since=1h
expect "logs --since-time in the past prints them too" '^last words$' k logs logger --since-time=2000-01-01T00:00:00Z
refuse "logs -p with no previous instance is refused as the kubelet refuses it" \
    'previous terminated container "main" in pod "logger" not found' k logs logger -p
admin /pod-logs '{"namespace":"default","pod":"logger","container":"main","text":"after restart\n","restart":true}' >/dev/null
expect "logs -p prints the previous instance's log after a restart" '^last words$' k logs logger -p
expect "logs prints the new instance's log after a restart" '^after restart$' k logs logger
k create -f - >/dev/null 2>&1 <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: staged
spec:
  initContainers:
  - name: fetch
    image: busybox:1.36
  containers:
  - name: main
    image: busybox:1.36
EOF
admin /pod-logs '{"namespace":"default","pod":"staged","container":"fetch","text":"download failed: 403\n"}' >/dev/null
expect "logs -c of an init container prints its log" '^download failed: 403$' k logs staged -c fetch
refuse "logs --tail of a negative count is refused as kube-apiserver refuses it" 'tailLines.*must be greater than or equal to 0' \
    k get --raw '/api/v1/namespaces/default/pods/staged/log?container=fetch&tailLines=-1'
k delete pod staged --wait=false >/dev/null 2>&1
expect "delete the pod" 'pod "logger" deleted' k delete pod logger --wait=false

# kubectl debug: the pods it creates (a node's debugging pod, a pod's copy) are what a cluster
# would hold. kubectl 1.32 sends them as protobuf, older ones as JSON.
skip() { count=$((count + 1)); echo "ok - $1 # SKIP $2"; }
if k debug --help >/dev/null 2>&1; then
    kminor=$(k version --client -o json 2>/dev/null | python3 -c 'import json, re, sys; print(re.sub(r"\D", "", json.load(sys.stdin)["clientVersion"]["minor"]))' 2>/dev/null)
    out=$(k debug node/node-1 --image=busybox -- true 2>&1)
    nodedbg=$(k get pods -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null | grep -m1 '^node-debugger-node-1-')
    if [ -n "$nodedbg" ]; then pass "debug node/node-1 creates a debugging pod"; else fail "debug node/node-1 creates a debugging pod" "$out"; fi
    expect "the node's debugging pod is on node-1 in its namespaces, the host's / mounted at /host" '^node-1 true true true / /host$' \
        k get pod "${nodedbg:-none}" -o 'jsonpath={.spec.nodeName} {.spec.hostNetwork} {.spec.hostPID} {.spec.hostIPC} {.spec.volumes[?(@.name=="host-root")].hostPath.path} {.spec.containers[0].volumeMounts[?(@.name=="host-root")].mountPath}'
    [ -n "$nodedbg" ] && k delete pod "$nodedbg" --grace-period=0 --force >/dev/null 2>&1
    k create -f - >"$WORK/rich.out" 2>&1 <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: rich
  labels: {app: rich}
spec:
  nodeName: node-1
  shareProcessNamespace: false
  terminationGracePeriodSeconds: 0
  enableServiceLinks: false
  setHostnameAsFQDN: false
  hostname: rich
  subdomain: pods
  nodeSelector: {disk: ssd}
  os: {name: linux}
  securityContext:
    runAsNonRoot: true
    runAsUser: 1000
    supplementalGroups: [1000, 2000]
    fsGroup: 2000
    sysctls: [{name: net.core.somaxconn, value: "1024"}]
    seccompProfile: {type: RuntimeDefault}
  imagePullSecrets: [{name: pull}]
  tolerations:
  - {key: dedicated, operator: Equal, value: ci, effect: NoSchedule}
  - {operator: Exists, effect: NoExecute, tolerationSeconds: 0}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: kubernetes.io/os, operator: In, values: [linux]}]
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        preference: {matchExpressions: [{key: zone, operator: Exists}]}
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm: {labelSelector: {matchLabels: {app: rich}}, topologyKey: kubernetes.io/hostname}
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app: rich}}}
  hostAliases: [{ip: 10.0.0.1, hostnames: [db, db.local]}]
  dnsConfig: {nameservers: [1.1.1.1], searches: [svc.local], options: [{name: ndots, value: "2"}]}
  readinessGates: [{conditionType: example.com/ready}]
  volumes:
  - {name: scratch, emptyDir: {sizeLimit: 1Gi}}
  - {name: host, hostPath: {path: /var/log, type: Directory}}
  - name: cfg
    configMap: {name: c1, items: [{key: a, path: a.txt, mode: 0400}], defaultMode: 0644, optional: true}
  - {name: sec, secret: {secretName: s1, optional: false}}
  - {name: data, persistentVolumeClaim: {claimName: claim, readOnly: true}}
  - name: proj
    projected:
      sources:
      - serviceAccountToken: {audience: vault, expirationSeconds: 3600, path: token}
      - downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}
      - configMap: {name: c1, items: [{key: a, path: cm-a}]}
  - name: down
    downwardAPI: {items: [{path: cpu, resourceFieldRef: {containerName: main, resource: limits.cpu, divisor: 1m}}]}
  - {name: csi, csi: {driver: csi.example.com, readOnly: true, volumeAttributes: {k: v}}}
  - {name: nfs, nfs: {server: nfs.example.com, path: /exports}}
  - name: eph
    ephemeral:
      volumeClaimTemplate:
        metadata: {labels: {app: rich}}
        spec: {accessModes: [ReadWriteOnce], storageClassName: fast, resources: {requests: {storage: 1Gi}}}
  initContainers:
  - name: proxy
    image: busybox
    restartPolicy: Always
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  containers:
  - name: main
    image: busybox
    command: [sleep, "3600"]
    workingDir: /work
    ports: [{name: http, containerPort: 8080}]
    envFrom: [{prefix: CFG_, configMapRef: {name: c1, optional: true}}]
    env:
    - {name: PLAIN, value: v}
    - {name: TOKEN, valueFrom: {secretKeyRef: {name: s1, key: token, optional: true}}}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    resources:
      limits: {cpu: 500m, memory: 128Mi}
      requests: {cpu: 100m, memory: 64Mi}
    resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}]
    volumeMounts:
    - {name: data, mountPath: /data, readOnly: true}
    - {name: cfg, mountPath: /etc/cfg/app.conf, subPath: a.txt}
    livenessProbe:
      httpGet: {path: /healthz, port: http, httpHeaders: [{name: X-Probe, value: "1"}]}
      initialDelaySeconds: 5
    readinessProbe:
      tcpSocket: {port: 8080}
      terminationGracePeriodSeconds: 0
    startupProbe:
      grpc: {port: 9090}
      failureThreshold: 30
    lifecycle:
      postStart: {exec: {command: [touch, /tmp/up]}}
      preStop: {sleep: {seconds: 5}}
    securityContext:
      privileged: false
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      runAsGroup: 0
      capabilities: {add: [NET_BIND_SERVICE], drop: [ALL]}
    stdin: true
    tty: true
EOF
    if grep -q 'pod/rich created' "$WORK/rich.out"; then
        out=$(k debug rich --copy-to=rich-copy --image=busybox --container=dbg -- true 2>&1)
        k get pod rich -o json >"$WORK/rich.json" 2>&1
        if k get pod rich-copy -o json >"$WORK/rich-copy.json" 2>&1 &&
            diff=$(python3 - "$WORK/rich.json" "$WORK/rich-copy.json" "${kminor:-32}" 2>&1 <<'PY'
import json, sys
orig, copy = (json.load(open(p))["spec"] for p in sys.argv[1:3])
minor = int(sys.argv[3])
# An older kubectl reads the pod into its compiled types and sends what they hold, as it
# would to a cluster: the fields newer than it are not in its copy.
if minor < 23:
    orig.pop("os", None)
for c in orig.get("initContainers", []) + orig.get("containers", []):
    if minor < 27:
        c.pop("resizePolicy", None)
    if minor < 28:
        c.pop("restartPolicy", None)
    for handler in c.get("lifecycle", {}).values():
        if minor < 29:
            handler.pop("sleep", None)
    for probe in (c[p] for p in ("livenessProbe", "readinessProbe", "startupProbe") if p in c):
        if minor < 23:
            probe.pop("grpc", None)
        if minor < 21:
            probe.pop("terminationGracePeriodSeconds", None)
# A JSON body from Go writes an unset time as null (a template's creationTimestamp); the
# sandbox keeps it as sent, a cluster would read both as unset.
def unset_dropped(v):
    if isinstance(v, dict):
        return {k: unset_dropped(x) for k, x in v.items() if x is not None}
    return [unset_dropped(x) for x in v] if isinstance(v, list) else v
orig, copy = unset_dropped(orig), unset_dropped(copy)
added = copy["containers"].pop()
assert added["name"] == "dbg" and added["image"] == "busybox" and added["command"] == ["true"], added
# What kubectl debug --copy-to itself changes: the node (unless --same-node), the process
# namespace (when asked), the original's ephemeral containers.
for spec in (orig, copy):
    for f in ("nodeName", "shareProcessNamespace", "ephemeralContainers"):
        spec.pop(f, None)
if orig != copy:
    for k in sorted(set(orig) | set(copy)):
        if orig.get(k) != copy.get(k):
            print(k, json.dumps(orig.get(k)), "!=", json.dumps(copy.get(k)))
    sys.exit(1)
PY
            ); then
            pass "debug --copy-to copies the pod's whole spec (volumes, resources, probes, env, affinity, ...) and adds the container"
        else
            fail "debug --copy-to copies the pod's whole spec (volumes, resources, probes, env, affinity, ...) and adds the container" \
                "$out${diff:+
$diff}
$(cat "$WORK/rich-copy.json")"
        fi
    else
        fail "create a pod with a rich spec to copy" "$(cat "$WORK/rich.out")"
    fi
    k delete pod rich rich-copy --grace-period=0 --force >/dev/null 2>&1
else
    skip "debug node/node-1 creates a debugging pod" "this kubectl has no debug"
    skip "the node's debugging pod is on node-1 in its namespaces, the host's / mounted at /host" "this kubectl has no debug"
    skip "debug --copy-to copies the pod's whole spec (volumes, resources, probes, env, affinity, ...) and adds the container" \
        "this kubectl has no debug"
fi

# Faults from the admin port reach kubectl as server errors.
admin /faults/fail '{"verb":"list","resource":"configmaps","code":500,"count":20,"message":"injected by kubectl_test"}' >/dev/null
refuse "an injected 500 reaches kubectl" 'injected by kubectl_test|Internal' k get configmaps
admin /faults/clear '{}' >/dev/null
expect "after clearing faults kubectl works again" '^cm1 ' k get configmaps

# Authentication.
BAD=$WORK/bad.kubeconfig
sed 's/token: .*/token: not-the-token/' "$KCFG" >"$BAD"
refuse "a wrong token is refused with 401" 'Unauthorized|must be logged in' \
    "$KUBECTL" --kubeconfig "$BAD" --cache-dir "$WORK/cache2" get pods

# Authorization: another user, through a token the admin API adds; RBAC grants what it may do.
admin /tokens '{"token":"jane-token","user":"jane","groups":["dev"]}' >/dev/null
JANE=$WORK/jane.kubeconfig
sed 's/token: .*/token: jane-token/' "$KCFG" >"$JANE"
kj() { "$KUBECTL" --kubeconfig "$JANE" --cache-dir "$WORK/cache3" --request-timeout=20s "$@"; }
expect "kubectl auth whoami names the token's user and its groups" 'Username +jane' kj auth whoami
expect "kubectl auth whoami lists system:authenticated among the groups" 'Groups +\[dev system:authenticated\]' kj auth whoami
refuse "a user without RBAC is refused with kube-apiserver's 403" \
    'pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "default"' kj get pods
refuse "kubectl auth can-i says no before a binding" '^no' kj auth can-i list pods
check "kubectl apply of deploy/'s namespace, ServiceAccount, roles and bindings" \
    k apply -f "$HERE/../../deploy/base/namespace.yaml" -f "$HERE/../../deploy/base/service_account.yaml" \
    -f "$HERE/../../deploy/base/cluster_role.yaml" -f "$HERE/../../deploy/base/cluster_role_binding.yaml" \
    -f "$HERE/../../deploy/base/leader_election_role.yaml" -f "$HERE/../../deploy/base/leader_election_role_binding.yaml"
expect "kubectl get clusterroles lists deploy/'s ClusterRole" '^vck-controller ' k get clusterroles
expect "kubectl get rolebindings lists deploy/'s leader election binding (kustomize would put it in vck-system)" \
    '^vck-controller-leader-election ' k get rolebindings
check "kubectl create role" k create role pod-reader --verb=get,list,watch --resource=pods -n default
check "kubectl create rolebinding for the group dev" k create rolebinding dev-pods --role=pod-reader --group=dev -n default
expect "the bound user lists pods" 'logger' kj get pods
expect "kubectl auth can-i says yes once bound" '^yes' kj auth can-i list pods
refuse "kubectl auth can-i says no to what the role does not grant" '^no' kj auth can-i delete pods
refuse "the role grants in its namespace only" '^no' kj auth can-i list pods -n kube-system
expect "kubectl auth can-i --list shows the role's rules" '^pods +\[\] +\[\] +\[get list watch\]' kj auth can-i --list
check "kubectl create role for writing rolebindings" \
    k create role binding-writer --verb=create --resource=rolebindings.rbac.authorization.k8s.io -n default
check "kubectl create rolebinding of it for jane" k create rolebinding jane-binds --role=binding-writer --user=jane -n default
refuse "a user may not bind a role whose permissions it does not hold" \
    'user "jane" \(groups=\["dev" "system:authenticated"\]\) is attempting to grant RBAC permissions not currently held' \
    kj create rolebinding self-admin --clusterrole=cluster-admin --user=jane -n default
check "a user may bind a role it holds" kj create rolebinding tom-pods --role=pod-reader --user=tom -n default
# Impersonation (--as, --as-group): the request runs as the user named, once the caller may
# impersonate it; kubectl auth can-i --as is how an operator's RBAC is checked before a deploy.
expect "kubectl auth whoami --as names the impersonated user" 'Username +jane' k auth whoami --as=jane
expect "an impersonated user gets system:authenticated" 'Groups +\[system:authenticated\]' k auth whoami --as=jane
expect "--as-group adds the groups asked" 'Groups +\[dev system:authenticated\]' k auth whoami --as=jane --as-group=dev
expect "kubectl auth can-i --as --as-group answers for the impersonated user: yes where its group's role grants" '^yes' \
    k auth can-i list pods --as=jane --as-group=dev
refuse "kubectl auth can-i --as --as-group: no where the role does not grant" '^no' k auth can-i delete pods --as=jane --as-group=dev
refuse "kubectl auth can-i --as alone: no, since the role is bound to the group dev, which was not asked" '^no' \
    k auth can-i list pods --as=jane
refuse "deploy/'s controller service account may not delete nodes" '^no' \
    k auth can-i delete nodes --as=system:serviceaccount:vck-system:vck-controller
expect "deploy/'s controller service account may list pods everywhere" '^yes' \
    k auth can-i list pods -A --as=system:serviceaccount:vck-system:vck-controller
refuse "a user without the impersonate verb is refused with kube-apiserver's words" \
    'users "bob" is forbidden: User "jane" cannot impersonate resource "users" in API group "" at the cluster scope' \
    kj get pods --as=bob

# Service accounts: every namespace has "default"; kubectl create token asks TokenRequest.
expect "every namespace has the ServiceAccount default" '^default ' k get serviceaccounts -n kube-public
expect "every namespace has the ConfigMap kube-root-ca.crt" '^kube-root-ca\.crt +1 ' k get configmaps -n kube-public
if SATOKEN=$(k create token default --duration=10m 2>&1); then pass "kubectl create token default"; else fail "kubectl create token default" "$SATOKEN"; fi
expect "kubectl --token=<service-account token> auth whoami names the service account" \
    'Username +system:serviceaccount:default:default' k --token="$SATOKEN" auth whoami
expect "a service-account token's groups are system:serviceaccounts, the namespace's and system:authenticated" \
    'Groups +\[system:serviceaccounts system:serviceaccounts:default system:authenticated\]' k --token="$SATOKEN" auth whoami
refuse "kubectl create token refuses less than ten minutes as kube-apiserver does" \
    'may not specify a duration less than 10 minutes' k create token default --duration=5m

# apps/v1 workloads, in a second sandbox with nodes (the replicaset and deployment controllers
# run with the simulated cluster; containers of any image run until stopped).
KAPPS=$WORK/apps.kubeconfig
"$SANDBOX" --port 0 --nodes 2 --default-image forever --image registry.example/job:1=succeed \
    --image registry.example/crash:1=fail:1 --kubeconfig-out "$KAPPS" --user jane:dev,qa >"$WORK/apps.log" 2>&1 &
BG+=($!)
for _ in $(seq 1 300); do
    grep -q '^nodes: ' "$WORK/apps.log" 2>/dev/null && break
    sleep 0.1
done
ka() { "$KUBECTL" --kubeconfig "$KAPPS" --cache-dir "$WORK/cache4" --request-timeout=20s "$@"; }
# The pods of app=web that run and are not being deleted, counted.
running_web() { ka get pods -l app=web --no-headers | grep -c ' Running '; }
# A crash loop, left to run while the workloads below are checked: its back-offs are a node's
# (10s, then 20s, ...), and its BackOff events one event counted up.
check "kubectl run of a pod whose container always fails" ka run crasher --image=registry.example/crash:1 --restart=Always
check "kubectl create deployment" ka create deployment web --image=registry.example/web:1 --replicas=2
expect "kubectl rollout status ends once the pods are available" 'deployment "web" successfully rolled out' \
    ka rollout status deploy/web --timeout=60s
expect "kubectl get deploy prints the columns of a real cluster" '^NAME +READY +UP-TO-DATE +AVAILABLE +AGE$' ka get deploy
expect "kubectl get deploy counts the ready, updated and available replicas" '^web +2/2 +2 +2 +[0-9]+s$' ka get deploy
expect "kubectl get rs prints the columns of a real cluster" '^NAME +DESIRED +CURRENT +READY +AGE$' ka get rs
expect "the ReplicaSet is named after the template's hash" '^web-[a-z0-9]+ +2 +2 +2 +[0-9]+s$' ka get rs
expect "kubectl get deploy -o wide adds containers, images and selector" 'web +registry.example/web:1 +app=web$' ka get deploy -o wide
expect "kubectl get all lists the deployment" '^deployment\.apps/web +2/2 +2 +2 ' ka get all
expect "kubectl get all lists its ReplicaSet" '^replicaset\.apps/web-[a-z0-9]+ +2 +2 +2 ' ka get all
expect "kubectl get all lists its pods" '^pod/web-[a-z0-9]+-[a-z0-9]{5} +1/1 +Running ' ka get all
expect "kubectl get all lists the kubernetes Service" '^service/kubernetes +ClusterIP +10\.96\.0\.1 +<none> +443/TCP ' ka get all
expect "kubectl scale scales through the scale subresource" 'deployment.apps/web scaled' ka scale deploy/web --replicas=3
expect "the scaled deployment rolls out" 'successfully rolled out' ka rollout status deploy/web --timeout=60s
expect "three pods run after kubectl scale" '^3$' running_web
expect "kubectl set image updates the template" 'deployment.apps/web image updated' \
    ka set image deploy/web web=registry.example/web:2
expect "kubectl rollout status follows the rolling update to its end" 'deployment "web" successfully rolled out' \
    ka rollout status deploy/web --timeout=90s
expect "the old ReplicaSet is scaled to 0" '^web-[a-z0-9]+ +0 +0 +0 ' ka get rs
expect "the new ReplicaSet runs the new image" 'registry.example/web:2' ka get rs -o wide
expect "kubectl rollout history lists both revisions" '^2 ' ka rollout history deploy/web
expect "the deployment's events name the scaled ReplicaSets as 1.32 does" 'Scaled down replica set web-[a-z0-9]+ to 0 from 1' \
    ka get events --field-selector involvedObject.kind=Deployment
backoff_count() { ka get events --field-selector involvedObject.name=crasher,reason=BackOff -o jsonpath='{.items[*].count}'; }
for _ in $(seq 1 60); do [ "$(backoff_count)" -ge 2 ] 2>/dev/null && break; sleep 1; done
expect "a crash loop's BackOff events are one event whose count grows, as client-go's recorder aggregates them" '^[2-9]$' \
    backoff_count
expect "kubectl describe pod shows the BackOff event counted, as on a cluster" \
    'Warning +BackOff +[0-9ms]+ \(x[2-9] over [0-9ms]+\) +kubelet +Back-off restarting failed container crasher in pod crasher_default\(' \
    ka describe pod crasher
waiting_message() {
    for _ in $(seq 1 40); do
        m=$(ka get pod crasher -o jsonpath='{.status.containerStatuses[0].state.waiting.message}')
        [ -n "$m" ] && { echo "$m"; return; }
        sleep 0.5
    done
}
expect "a crash loop waits as a node's kubelet does: 10s doubled per crash, in Go's duration words" \
    '^back-off (10|20|40)s restarting failed container=crasher pod=crasher_default\([0-9a-f-]+\)$' waiting_message
# --user jane:dev,qa: another principal with a context of its name, held to RBAC.
expect "--user gives a context acting as that user" 'Username +jane' ka --context jane auth whoami
expect "--user's groups, and system:authenticated" 'Groups +\[dev qa system:authenticated\]' ka --context jane auth whoami
refuse "a --user principal is refused what RBAC does not grant it" \
    'deployments.apps is forbidden: User "jane" cannot list resource "deployments" in API group "apps" in the namespace "default"' \
    ka --context jane get deployments
check "kubectl delete deployment" ka delete deployment web --wait=true --timeout=60s
expect "deleting the deployment deletes its ReplicaSets" '^No resources found' ka get rs

# batch/v1 Jobs in the same sandbox (the job controller runs with the nodes): containers of
# registry.example/job:1 exit 0, those of registry.example/crash:1 exit 1.
check "kubectl create job" ka create job once --image=registry.example/job:1
expect "kubectl wait --for=condition=complete returns once the Job is Complete" 'job.batch/once condition met' \
    ka wait --for=condition=complete job/once --timeout=60s
expect "kubectl get jobs prints the columns of a real 1.32 cluster" '^NAME +STATUS +COMPLETIONS +DURATION +AGE$' ka get jobs
expect "kubectl get jobs prints the completed Job's status, completions and duration" \
    '^once +Complete +1/1 +[0-9]+s +[0-9]+s$' ka get jobs
expect "kubectl get jobs -o wide adds containers, images and the generated selector" \
    '^once +Complete +1/1 +[0-9]+s +[0-9]+s +once +registry.example/job:1 +batch.kubernetes.io/controller-uid=[0-9a-f-]+$' \
    ka get jobs -o wide
expect "the Job's pod carries the generated job-name labels" '^once-[a-z0-9]{5} +0/1 +Completed ' \
    ka get pods -l batch.kubernetes.io/job-name=once
check "kubectl logs job/ finds the Job's pod through its selector" ka logs job/once
cat >"$WORK/job.yaml" <<'EOF2'
apiVersion: batch/v1
kind: Job
metadata:
  name: batch
spec:
  parallelism: 2
  completions: 3
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: registry.example/job:1
EOF2
expect "kubectl apply of a Job" 'job.batch/batch created' ka apply -f "$WORK/job.yaml"
expect "a Job with parallelism 2 and completions 3 completes" 'job.batch/batch condition met' \
    ka wait --for=condition=complete job/batch --timeout=90s
expect "kubectl get jobs counts its three completions" '^batch +Complete +3/3 ' ka get jobs
expect "kubectl apply of the unchanged Job changes nothing" 'job.batch/batch unchanged' ka apply -f "$WORK/job.yaml"
sed 's/restartPolicy: Never/restartPolicy: Always/; s/name: batch/name: always/' "$WORK/job.yaml" >"$WORK/always.yaml"
refuse "a Job whose pods restart Always is refused as kube-apiserver refuses it" \
    'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"' ka apply -f "$WORK/always.yaml"
sed 's/name: batch/name: crash/; s/parallelism: 2/backoffLimit: 1/; s/completions: 3/completions: 1/; s#registry.example/job:1#registry.example/crash:1#' \
    "$WORK/job.yaml" >"$WORK/crash.yaml"
check "kubectl create of a Job whose pods fail" ka create -f "$WORK/crash.yaml"
expect "a Job whose pods fail more than backoffLimit times is Failed" 'job.batch/crash condition met' \
    ka wait --for=condition=failed job/crash --timeout=90s
expect "kubectl get jobs prints the failed Job" '^crash +Failed +0/1 ' ka get jobs
expect "the failed Job's condition says why, as 1.32 does" 'BackoffLimitExceeded' \
    ka get job crash -o 'jsonpath={.status.conditions[?(@.type=="Failed")].reason}'
check "kubectl delete job" ka delete job once --wait=true --timeout=60s
expect "deleting the Job deletes its pods" '^No resources found' ka get pods -l job-name=once

# Services, Endpoints, EndpointSlices and StatefulSets, in a second sandbox with a node whose
# containers run until stopped (the endpoints and statefulset controllers run with the nodes).
"$SANDBOX" --port 0 --nodes 1 --default-image forever --kubeconfig-out "$WORK/cluster.kubeconfig" >"$WORK/cluster.log" 2>&1 &
CPID=$!
BG+=("$CPID")
for _ in $(seq 1 300); do
    grep -q '^data-root: ' "$WORK/cluster.log" 2>/dev/null && break
    kill -0 "$CPID" 2>/dev/null || break
    sleep 0.1
done
kc() { "$KUBECTL" --kubeconfig "$WORK/cluster.kubeconfig" --cache-dir "$WORK/cache4" --request-timeout=20s "$@"; }
# eventually NAME REGEX CMD...: within 60 s the command succeeds with output matching REGEX.
eventually() {
    local name=$1 re=$2
    shift 2
    local out
    for _ in $(seq 1 120); do
        if out=$("$@" 2>&1) && printf '%s\n' "$out" | grep -Eq -- "$re"; then
            pass "$name"
            return 0
        fi
        sleep 0.5
    done
    fail "$name" "$out"
}
expect "the kubernetes Service is 10.96.0.1:443 (kubectl get svc)" '^kubernetes +ClusterIP +10\.96\.0\.1 +<none> +443/TCP +[0-9]' \
    kc get svc kubernetes
expect "its Endpoints point at the API server" '^kubernetes +127\.0\.0\.1:[0-9]+ ' kc get endpoints kubernetes
check "apply two PersistentVolumes, a headless Service and a StatefulSet with a claim template" kc apply -f - <<'YAML'
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-a}
spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /pv-a}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-b}
spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /pv-b}}
---
apiVersion: v1
kind: Service
metadata: {name: nginx}
spec:
  clusterIP: None
  selector: {app: nginx}
  ports: [{name: web, port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: nginx
  replicas: 2
  selector: {matchLabels: {app: nginx}}
  template:
    metadata: {labels: {app: nginx}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports: [{name: web, containerPort: 8080}]
  volumeClaimTemplates:
  - metadata: {name: www}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
YAML
eventually "kubectl get sts shows NAME READY AGE, both replicas ready" '^web +2/2 +[0-9]' kc get sts web
expect "kubectl get pvc lists the claims the StatefulSet made, bound" '^www-web-1 +Bound +pv-[ab] +1Gi ' kc get pvc
expect "the pods have stable names, web-0 and web-1" '^web-1 +1/1 +Running ' kc get pods
expect "kubectl expose a pod" 'service/web0 exposed' kc expose pod web-0 --port=80 --target-port=web --name=web0
expect "kubectl get svc prints TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE" \
    '^web0 +ClusterIP +10\.(9[6-9]|10[0-9]|11[01])\.[0-9]+\.[0-9]+ +<none> +80/TCP +[0-9]' kc get svc web0
expect "kubectl create service nodeport (a protobuf body)" 'service/np created' kc create service nodeport np --tcp=80:8080
expect "a NodePort service prints its node port in PORT(S)" '^np +NodePort +10\.[0-9.]+ +<none> +80:3[0-9]{4}/TCP ' kc get svc np
expect "kubectl create service's port: name, targetPort, selector" '^80-8080 8080 np$' \
    kc get svc np -o 'jsonpath={.spec.ports[0].name} {.spec.ports[0].targetPort} {.spec.selector.app}'
expect "a headless service prints CLUSTER-IP None" '^nginx +ClusterIP +None +<none> +80/TCP ' kc get svc nginx
eventually "kubectl get endpoints lists the ready pod's IP and container port" '^web0 +127\.[0-9]+\.[0-9]+\.[0-9]+:8080 +[0-9]' \
    kc get endpoints web0
eventually "kubectl get endpointslices prints ADDRESSTYPE PORTS ENDPOINTS" \
    '^web0-[a-z0-9]{5} +IPv4 +8080 +127\.[0-9]+\.[0-9]+\.[0-9]+ +[0-9]' kc get endpointslices -l kubernetes.io/service-name=web0
expect "kubectl get svc,ep,endpointslices together" 'service/nginx' kc get svc,ep,endpointslices
refuse "a Service's clusterIP may not change" 'spec\.clusterIPs\[0\]: Invalid value: \[\]string\{"10\.96\.0\.99"\}: may not change once set' \
    kc patch svc web0 -p '{"spec":{"clusterIP":"10.96.0.99"}}'
# --wait=false: kubectl's wait for the deletion may list the pod already recreated under the
# same name and then wait forever for its deletion; the new pod is told by its uid.
OLD_UID=$(kc get pod web-1 -o 'jsonpath={.metadata.uid}')
expect "kubectl delete pod web-1" 'pod "web-1" deleted' kc delete pod web-1 --wait=false
web1_replaced() {
    local u
    u=$(kc get pod web-1 -o 'jsonpath={.metadata.uid} {.status.phase}') || return 1
    [ -n "$OLD_UID" ] && [ "${u%% *}" != "$OLD_UID" ] && echo "$u"
}
eventually "the deleted StatefulSet pod comes back under its name" ' Running$' web1_replaced
expect "the StatefulSet scaled to one (replicas patched; kubectl scale needs the scale subresource)" \
    'statefulset.apps/web patched' kc patch sts web -p '{"spec":{"replicas":1}}'
eventually "it scales down from the highest ordinal" '^web +1/1 ' kc get sts web
expect "the claim of the removed pod is kept" '^www-web-1 +Bound ' kc get pvc www-web-1

# An admission webhook run as a process (python3's http.server over TLS, with a certificate
# made here): kubectl prints its refusal and its warning as it does against a real cluster.
if command -v python3 >/dev/null && command -v openssl >/dev/null; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
        -keyout "$WORK/hook.key" -out "$WORK/hook.crt" >/dev/null 2>&1
    cat >"$WORK/hook.py" <<'PY'
import json, os, ssl, sys
from http.server import HTTPServer, BaseHTTPRequestHandler

class Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        req = review["request"]
        name = ((req.get("object") or {}).get("metadata") or {}).get("name", "")
        if name.startswith("bad-"):
            resp = {"uid": req["uid"], "allowed": False, "status": {"message": "names starting with bad- are not allowed"}}
        else:
            resp = {"uid": req["uid"], "allowed": True, "warnings": ["ConfigMap " + name + " is checked by check.vck.test"]}
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = HTTPServer(("127.0.0.1", 0), Hook)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = ctx.wrap_socket(server.socket, server_side=True)
with open(sys.argv[3] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(sys.argv[3] + ".tmp", sys.argv[3])
server.serve_forever()
PY
    python3 "$WORK/hook.py" "$WORK/hook.crt" "$WORK/hook.key" "$WORK/hook.port" &
    BG+=($!)
    for _ in $(seq 1 100); do [ -s "$WORK/hook.port" ] && break; sleep 0.1; done
    HOOK_PORT=$(cat "$WORK/hook.port" 2>/dev/null)
    cat >"$WORK/hook-config.yaml" <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: check
webhooks:
- name: check.vck.test
  clientConfig:
    url: https://127.0.0.1:${HOOK_PORT}/check
    caBundle: $(base64 -w0 "$WORK/hook.crt")
  rules:
  - operations: ["CREATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["configmaps"]
  namespaceSelector:
    matchLabels:
      webhook: "on"
  sideEffects: None
  admissionReviewVersions: ["v1"]
YAML
    printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad-one\n  namespace: hooked\n' >"$WORK/bad-cm.yaml"
    printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good-one\n  namespace: hooked\n' >"$WORK/good-cm.yaml"
    check "create a namespace the webhook watches" k create namespace hooked
    check "label it for the webhook" k label namespace hooked webhook=on
    expect "apply a ValidatingWebhookConfiguration pointing at the webhook process" \
        'validatingwebhookconfiguration.admissionregistration.k8s.io/check created' k apply -f "$WORK/hook-config.yaml"
    refuse "kubectl prints the webhook's denial as from a real cluster" \
        "^Error from server: error when creating \"$WORK/bad-cm.yaml\": admission webhook \"check.vck.test\" denied the request: names starting with bad- are not allowed$" \
        k create -f "$WORK/bad-cm.yaml"
    refuse "a denied object is not stored" 'NotFound' k get configmap bad-one -n hooked
    expect "kubectl prints the webhook's warning" '^Warning: ConfigMap good-one is checked by check\.vck\.test$' \
        k create -f "$WORK/good-cm.yaml"
    expect "a namespace the webhook's namespaceSelector leaves out is not checked" 'configmap/bad-two created' \
        k create configmap bad-two -n default
    check "delete the webhook configuration" k delete validatingwebhookconfiguration check
fi

# deploy/'s two certificate modes, as kustomize renders them (docs/ops.md "Webhooks").
render() { "$KUBECTL" kustomize "$HERE/../../$1" 2>&1; }
self_managed=$(render deploy)
with_cm=$(render deploy/cert-manager)
if grep -q -- '--webhook-cert-mode=self-managed' <<<"$self_managed" && grep -q 'mutatingwebhookconfigurations' <<<"$self_managed" &&
   grep -q 'name: vck-controller-webhook-certificate' <<<"$self_managed"; then
  pass "deploy/: the self-managed certificate mode, with its Secret Role and webhook configuration rules"
else fail "deploy/: the self-managed certificate mode, with its Secret Role and webhook configuration rules" "$self_managed"; fi
if grep -q -- '--webhook-cert-mode=files' <<<"$with_cm" && ! grep -q -- 'self-managed' <<<"$with_cm" &&
   [ "$(grep -c 'cert-manager.io/inject-ca-from: vck-system/vck-webhook-cert' <<<"$with_cm")" = 2 ] &&
   [ "$(grep -c 'secretName: vck-webhook-server-cert' <<<"$with_cm")" = 2 ] && grep -q '^kind: Certificate$' <<<"$with_cm" &&
   ! grep -q 'vck-controller-webhook-certificate' <<<"$with_cm" && ! grep -q 'webhookconfigurations$' <<<"$with_cm"; then
  pass "deploy/cert-manager/: files mode, the Secret mounted, caBundles injected by cert-manager, no Secret or configuration rights"
else fail "deploy/cert-manager/: files mode, the Secret mounted, caBundles injected by cert-manager, no Secret or configuration rights" "$with_cm"; fi

# deploy/monitoring/: the PodMonitor scrapes the controller pods' metrics port (the port name
# the Deployment gives), and the dashboard ConfigMap holds deploy/monitoring/vck-data-plane.json.
monitoring=$(render deploy/monitoring)
printf '%s\n' "$monitoring" >"$WORK/monitoring.yaml"
if python3 - "$WORK/monitoring.yaml" "$HERE/../../deploy/monitoring/vck-data-plane.json" <<'PY'
import json, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
by_kind = {d["kind"]: d for d in docs}
pm, dep, cm = by_kind["PodMonitor"], by_kind["Deployment"], by_kind["ConfigMap"]
ports = {p["name"] for c in dep["spec"]["template"]["spec"]["containers"] for p in c.get("ports", [])}
assert pm["spec"]["selector"]["matchLabels"].items() <= dep["spec"]["template"]["metadata"]["labels"].items(), "selector"
assert all(e["port"] in ports and e.get("honorLabels") for e in pm["spec"]["podMetricsEndpoints"]), "port"
assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
assert json.loads(cm["data"]["vck-data-plane.json"]) == json.load(open(sys.argv[2])), "dashboard"
PY
then pass "deploy/monitoring/: a PodMonitor on the controller pods' metrics port, the Grafana dashboard in a labelled ConfigMap"
else fail "deploy/monitoring/: a PodMonitor on the controller pods' metrics port, the Grafana dashboard in a labelled ConfigMap" "$monitoring"; fi

echo "1..$count"
if [ "$failures" -ne 0 ]; then
    echo "# $failures of $count checks failed; sandbox log tail:"
    tail -20 "$WORK/sandbox.log" | sed 's/^/#   /'
    exit 1
fi
exit 0
