#!/usr/bin/env bash
# Claims that come with their data (volumes/claim_provisioner.hpp), as a user sees them with
# kubectl: vck-controller is the provisioner vck.intelai.org/data in vck-sandbox (whose
# scheduler selects a node for a WaitForFirstConsumer claim and whose PV controller hands the
# claim over, as kube-scheduler and kube-controller-manager do), the real vck-fetch downloads
# from s3rver. Checked on the nodes' directories, not only in the API:
# - a pod with a claim of an S3 class runs on the selected node and reads the dataset there,
#   byte for byte; deleting the claim (Delete) removes the directory and the PV; Retain leaves
#   the PV Released with its data;
# - a claim whose dataSourceRef names a VolumeManager gets that volume's data;
# - an empty class gives a directory that a second pod finds on the same node, as the first
#   left it;
# - a 3-replica StatefulSet gets three copies on three nodes; a deleted pod comes back to its
#   node and data; a replica whose node is deleted runs again elsewhere with its data there (its
#   claim released: NodeLost); scaled to 0 with its claims deleted, no directory is left;
# - an unreachable source is a ProvisioningFailed event that resolves once the source is back
#   (its selected node deleted meanwhile, the scheduler selects another);
# - an Immediate class is refused (ProvisioningFailed).
# Usage: claims_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
set -u
. "$(dirname "$(realpath "$0")")/../lifecycle/lib.sh"
harness_init claims "$@"

start_s3rver
make_dataset set 6
SRC=$WORK/src/set
start_sandbox 4 --image "e2e/reader=root:/"
start_controller
controller_ready || bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"
LATE_PORT=$(free_port)

classes() { # the StorageClasses of this test
  for c in "vck-set Delete" "vck-set-retain Retain"; do
    set -- $c
    printf 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: %s\nprovisioner: vck.intelai.org/data\nvolumeBindingMode: WaitForFirstConsumer\nreclaimPolicy: %s\nparameters:\n  sourceType: S3\n  sourceURL: s3://data/set/\n  endpointURL: %s\n  awsCredentialsSecretName: s3-creds\n---\n' "$1" "$2" "$ENDPOINT"
  done
  printf 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: vck-late\nprovisioner: vck.intelai.org/data\nvolumeBindingMode: WaitForFirstConsumer\nparameters:\n  sourceType: S3\n  sourceURL: s3://data/set/\n  endpointURL: http://127.0.0.1:%s\n  awsCredentialsSecretName: s3-creds\n  timeoutForDataDownload: 15s\n---\n' "$LATE_PORT"
  printf 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: vck-scratch\nprovisioner: vck.intelai.org/data\nvolumeBindingMode: WaitForFirstConsumer\n'
}
classes | k apply -f - >"$WORK/classes.log" 2>&1 || bail "applying the StorageClasses failed" "$(cat "$WORK/classes.log")"

claim() { # claim NAME CLASS [EXTRA SPEC LINES]
  printf 'apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: %s\nspec:\n  storageClassName: %s\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n%s' "$1" "$2" "${3:-}"
}
pod() { # pod NAME CLAIM COMMAND...: a pod of e2e/reader mounting CLAIM at /data
  local name=$1 claim=$2; shift 2
  local cmd; cmd=$(printf '"%s", ' "$@"); cmd=${cmd%, }
  printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  restartPolicy: Never\n  containers:\n  - name: main\n    image: e2e/reader\n    command: [%s]\n    volumeMounts:\n    - {name: data, mountPath: /data}\n  volumes:\n  - name: data\n    persistentVolumeClaim: {claimName: %s}\n' "$name" "$cmd" "$claim"
}
apply() { k apply -f - >"$WORK/apply.log" 2>&1 || { echo "kubectl apply failed: $(cat "$WORK/apply.log")"; return 1; }; }
pod_phase() { k get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null; }
phase_is() { [ "$(pod_phase "$1")" = "$2" ]; }
wait_pod() { wait_for "${2:-120}" phase_is "$1" "${3:-Succeeded}"; }
pv_gone() { [ -z "$(k get pv "$1" -o name 2>/dev/null)" ]; }
pv_phase_is() { [ "$(k get pv "$1" -o jsonpath='{.status.phase}' 2>/dev/null)" = "$2" ]; }
no_claim_dirs_but() { [ -z "$(claim_dirs | grep -v "$1")" ]; }
pv_count_is() { [ "$(k get pv -o name | wc -l)" = "$1" ]; }
has_events() { [ -n "$(events_of "$1" "$2")" ]; }
node_of() { k get pod "$1" -o jsonpath='{.spec.nodeName}' 2>/dev/null; }
claim_pv() { k get pvc "$1" -o jsonpath='{.spec.volumeName}' 2>/dev/null; }
pv_path() { k get pv "$1" -o jsonpath='{.spec.local.path}' 2>/dev/null; }
on_node() { echo "$DATA/nodes/$1$2"; } # on_node NODE HOSTPATH: where the sandbox keeps it
same_data() { diff -r -x '*.vck-fetch' "$SRC" "$1" >/dev/null 2>&1; }
events_of() { k get events --field-selector "involvedObject.name=$1,reason=$2" -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' 2>/dev/null; }
# The claims' directories on the nodes there are (a deleted node's disk went with it).
claim_dirs() { find "$DATA/nodes" -maxdepth 4 -name 'vck-claim-*' 2>/dev/null | grep -v '\.vck-fetch$' | grep -v "/nodes/${LOST:-none}/" | sort; }

# ---- a claim of an S3 class ----
{ claim reader-data vck-set; echo ---; pod reader reader-data /usr/bin/diff -r -x .vck-fetch /data "$SRC"; } | apply
if wait_pod reader 180; then ok "a pod with a claim of an S3 class runs and reads the whole dataset (diff -r in the pod)"
else not_ok "a pod with a claim of an S3 class runs and reads the whole dataset" "$(k describe pvc reader-data | tail -n 15; k get pod reader -o yaml | tail -n 30; tail -n 20 "$WORK/controller.log")"; fi
NODE=$(node_of reader) PV=$(claim_pv reader-data)
check "the claim names the node the pod ran on (selected-node $NODE)" \
  test "$(k get pvc reader-data -o jsonpath='{.metadata.annotations.volume\.kubernetes\.io/selected-node}')" = "$NODE"
check "its PV is vck's, local, pinned to that node, pre-bound to the claim" \
  test "$(k get pv "$PV" -o jsonpath='{.metadata.annotations.pv\.kubernetes\.io/provisioned-by}|{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}|{.spec.claimRef.name}|{.status.phase}')" = "vck.intelai.org/data|$NODE|reader-data|Bound"
DIR=$(pv_path "$PV")
check "the dataset is byte-identical in that node's directory ($DIR)" same_data "$(on_node "$NODE" "$DIR")"
others=0
for n in $(k get nodes -o name | sed 's#node/##'); do [ "$n" = "$NODE" ] || [ ! -e "$(on_node "$n" "$DIR")" ] || others=1; done
check "and on no other node" test "$others" = 0
check "kubectl describe pvc shows ProvisioningSucceeded" grep -q "Successfully provisioned volume $PV on node $NODE" <<<"$(events_of reader-data ProvisioningSucceeded)"
k delete pod reader --wait=true --timeout=120s >/dev/null 2>&1
k delete pvc reader-data --wait=false >/dev/null 2>&1
check "Delete: deleting the claim removes the directory on its node" wait_for 60 test ! -e "$(on_node "$NODE" "$DIR")"
check "Delete: and the PV" wait_for 60 pv_gone "$PV"

# ---- Retain ----
{ claim kept vck-set-retain; echo ---; pod keeper kept /usr/bin/true; } | apply
wait_pod keeper 180 || bail "a pod of the Retain class never ran" "$(k describe pvc kept | tail; tail -n 20 "$WORK/controller.log")"
KNODE=$(node_of keeper) KPV=$(claim_pv kept)
KDIR=$(pv_path "$KPV")
k delete pod keeper --wait=true --timeout=120s >/dev/null 2>&1
k delete pvc kept --wait=true --timeout=120s >/dev/null 2>&1
check "Retain: the PV stays, Released" wait_for 60 pv_phase_is "$KPV" Released
sleep 2
check "Retain: its directory and data stay on the node" same_data "$(on_node "$KNODE" "$KDIR")"

# ---- dataSourceRef: a VolumeManager's volume ----
vm cifar "$(SPELLING=current s3vol data 1)"
wait_state cifar Running 180 || bail "VolumeManager cifar never became Running" "$(k get vckvm cifar -o yaml)"
{ claim from-vm vck-scratch '  dataSourceRef:
    apiGroup: vck.intelai.org
    kind: VolumeManager
    name: cifar
'; echo ---; pod from-vm-reader from-vm /usr/bin/diff -r -x .vck-fetch /data "$SRC"; } | apply
if wait_pod from-vm-reader 180; then ok "a claim whose dataSourceRef names a VolumeManager gets that volume's data"
else not_ok "a claim whose dataSourceRef names a VolumeManager gets that volume's data" "$(k describe pvc from-vm | tail -n 15; tail -n 20 "$WORK/controller.log")"; fi

# ---- an empty class: a directory that outlives its pods ----
head -c 300000 /dev/urandom >"$WORK/payload"
{ claim scratch vck-scratch; echo ---; pod writer scratch /usr/bin/cp "$WORK/payload" /data/payload; } | apply
wait_pod writer 120 || bail "the writer never ran" "$(k describe pvc scratch | tail; k get pod writer -o yaml | tail -n 20)"
SNODE=$(node_of writer)
k delete pod writer --wait=true --timeout=120s >/dev/null 2>&1
pod rereader scratch /usr/bin/cmp "$WORK/payload" /data/payload | apply
if wait_pod rereader 120; then ok "an empty class: a second pod finds the first pod's file, byte for byte"
else not_ok "an empty class: a second pod finds the first pod's file, byte for byte" "$(k get pod rereader -o yaml | tail -n 20)"; fi
check "on the same node ($SNODE)" test "$(node_of rereader)" = "$SNODE"

# ---- a StatefulSet: three replicas, three nodes, each its copy ----
k delete pod rereader from-vm-reader --wait=true --timeout=120s >/dev/null 2>&1
k delete pvc scratch from-vm --wait=true --timeout=120s >/dev/null 2>&1
cat <<EOF | apply
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  replicas: 3
  serviceName: web
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
            labelSelector:
              matchLabels: {app: web}
      containers:
      - name: main
        image: e2e/reader
        command: [/usr/bin/sleep, "3600"]
        volumeMounts:
        - {name: data, mountPath: /data}
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      storageClassName: vck-set
      accessModes: [ReadWriteOnce]
      resources:
        requests:
          storage: 1Gi
EOF
running() { [ "$(k get pods -l app=web -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' 2>/dev/null | grep -c Running)" = "$1" ]; }
if wait_for 300 running 3; then ok "a 3-replica StatefulSet of an S3 class runs"
else not_ok "a 3-replica StatefulSet of an S3 class runs" "$(k get pods,pvc -o wide; tail -n 20 "$WORK/controller.log")"; fi
nodes=$(for i in 0 1 2; do node_of "web-$i"; echo; done | sort -u | grep -c .)
check "its pods are on three nodes" test "$nodes" = 3
copies=0
for i in 0 1 2; do
  p=$(claim_pv "data-web-$i"); n=$(node_of "web-$i")
  same_data "$(on_node "$n" "$(pv_path "$p")")" && copies=$((copies + 1))
done
check "each node holds its replica's copy, byte-identical" test "$copies" = 3
N1=$(node_of web-1) D1=$(pv_path "$(claim_pv data-web-1)") U1=$(k get pod web-1 -o jsonpath='{.metadata.uid}')
# Not `kubectl delete --wait`: the StatefulSet controller recreates web-1 under the same name,
# and kubectl's watch for the deletion can start after it and then wait for a week.
k delete pod web-1 --wait=false >/dev/null 2>&1
web1_back() { local u; u=$(k get pod web-1 -o jsonpath='{.metadata.uid}' 2>/dev/null); [ -n "$u" ] && [ "$u" != "$U1" ] && phase_is web-1 Running; }
if wait_for 120 web1_back; then ok "a deleted pod comes back"; else not_ok "a deleted pod comes back" "$(k get pods -o wide)"; fi
check "to the same node and data ($N1)" test "$(node_of web-1)" = "$N1" -a "$(pv_path "$(claim_pv data-web-1)")" = "$D1"

# ---- a node lost: its replica's claim is released and its data provisioned again elsewhere ----
LOST=$(node_of web-2) P2=$(claim_pv data-web-2) C2=$(k get pvc data-web-2 -o jsonpath='{.metadata.uid}')
k delete node "$LOST" >/dev/null 2>&1
claim_renewed() { local u; u=$(k get pvc data-web-2 -o jsonpath='{.metadata.uid}' 2>/dev/null); [ -n "$u" ] && [ "$u" != "$C2" ]; }
web2_elsewhere() { local n; n=$(node_of web-2); phase_is web-2 Running && [ -n "$n" ] && [ "$n" != "$LOST" ]; }
# The sandbox's pod garbage collector lets the pod go 40 s after its node, as kube-controller-manager's.
if wait_for 240 web2_elsewhere; then ok "a node lost ($LOST): its replica runs again on another node ($(node_of web-2))"
else not_ok "a node lost ($LOST): its replica runs again on another node" "$(k get pods,pvc -o wide; k describe pvc data-web-2 | tail -n 8; tail -n 20 "$WORK/controller.log")"; fi
check "its claim is a new one (the lost one deleted, the StatefulSet made it again)" claim_renewed
check "a NodeLost event on the claim says why" grep -q "node $LOST is gone and the claim's data with it" <<<"$(events_of data-web-2 NodeLost)"
check "the new claim's copy is byte-identical on the new node" \
  same_data "$(on_node "$(node_of web-2)" "$(pv_path "$(claim_pv data-web-2)")")"
check "the lost claim's PV is gone (Delete)" wait_for 60 pv_gone "$P2"

k scale statefulset web --replicas=0 >/dev/null 2>&1
web_gone() { [ -z "$(k get pods -l app=web -o name 2>/dev/null)" ]; }
wait_for 120 web_gone
k delete pvc data-web-0 data-web-1 data-web-2 --wait=false >/dev/null 2>&1
check "scaled to 0 and its claims deleted (Delete), no copy is left on any node" wait_for 120 no_claim_dirs_but "$KDIR"
check "nor its PVs (only the retained one is left)" wait_for 60 pv_count_is 1

# ---- an unreachable source: ProvisioningFailed, then provisioned once it is back ----
{ claim late vck-late; echo ---; pod late-reader late /usr/bin/diff -r -x .vck-fetch /data "$SRC"; } | apply
if wait_for 120 has_events late ProvisioningFailed; then ok "an unreachable source: a ProvisioningFailed event on the claim"
else not_ok "an unreachable source: a ProvisioningFailed event on the claim" "$(k describe pvc late | tail)"; fi
check "it says why (the download failed)" grep -q "failed to provision volume with StorageClass \"vck-late\": download pod" <<<"$(events_of late ProvisioningFailed)"
selected_of() { k get pvc "$1" -o jsonpath='{.metadata.annotations.volume\.kubernetes\.io/selected-node}' 2>/dev/null; }
GONE=$(selected_of late)
k delete node "$GONE" >/dev/null 2>&1
reselected() { local n; n=$(selected_of late); [ -n "$n" ] && [ "$n" != "$GONE" ]; }
if wait_for 60 reselected; then ok "its selected node deleted meanwhile ($GONE), the scheduler selects another ($(selected_of late))"
else not_ok "its selected node deleted meanwhile ($GONE), the scheduler selects another" "$(k describe pvc late | tail)"; fi
check "a ProvisioningFailed event says the selected node is gone" \
  grep -q "the selected node $GONE does not exist; the scheduler selects another" <<<"$(events_of late ProvisioningFailed)"
"$PYTHON" "$ROOT/tests/e2e/throttle_proxy.py" "$LATE_PORT" 127.0.0.1 "${ENDPOINT##*:}" 100000000 >"$WORK/late-proxy.log" 2>&1 &
PIDS+=($!)
if wait_pod late-reader 240; then ok "once the source is back the claim is provisioned and its pod reads the dataset"
else not_ok "once the source is back the claim is provisioned and its pod reads the dataset" "$(k describe pvc late | tail; tail -n 20 "$WORK/controller.log")"; fi

# ---- a class vck cannot serve: Immediate binding ----
printf 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: vck-now\nprovisioner: vck.intelai.org/data\nvolumeBindingMode: Immediate\n' | apply
claim now vck-now | apply
if wait_for 60 has_events now ProvisioningFailed; then ok "a claim of an Immediate class: ProvisioningFailed"
else not_ok "a claim of an Immediate class: ProvisioningFailed" "$(k describe pvc now | tail)"; fi
check "saying the class must be WaitForFirstConsumer" grep -q "StorageClass vck-now must have volumeBindingMode WaitForFirstConsumer" <<<"$(events_of now ProvisioningFailed)"
check "it stays Pending, with no PV" test "$(k get pvc now -o jsonpath='{.status.phase}')" = Pending -a -z "$(k get pvc now -o jsonpath='{.spec.volumeName}')"

tap_end
