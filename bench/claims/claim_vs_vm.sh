#!/usr/bin/env bash
# Time from asking for a dataset to a pod running on it, two ways, for the same dataset of
# 2,000 x 16 KiB files on s3rver, in vck-sandbox with vck-controller as its own process:
#   claim  a PersistentVolumeClaim of a vck StorageClass and a pod using it, created together:
#          until the pod is Running (scheduling, selected-node, download, PV, binding)
#   vm     a VolumeManager and a pod naming it (the pod injection label is not used: the pod
#          copies the status' hostPath and nodeAffinity once Running, as without webhooks):
#          until that pod is Running
# Each ROUNDS times in a fresh namespace; medians printed, and their ratio.
# Usage: bench/claims/claim_vs_vm.sh BUILD_DIR [ROUNDS]
#   (BUILD_DIR holds bin/vck-sandbox, bin/vck-controller, bin/vck-fetch; a release build)
set -u
B=$(realpath "${1:?usage: claim_vs_vm.sh BUILD_DIR [ROUNDS]}")
ROUNDS=${2:-3}
. "$(cd "$(dirname "$0")/../.." && pwd)/tests/lifecycle/lib.sh"
harness_init claims-bench "$B/bin/vck-sandbox" "$B/bin/vck-controller" "$B/bin/vck-fetch" "$(command -v kubectl)"

start_s3rver
SRC=$WORK/src/small
mkdir -p "$SRC"
for i in $(seq 1 2000); do head -c 16384 /dev/urandom >"$SRC/f-$i.bin"; done
rm -rf "$WORK/upload" && cp -r "$SRC" "$WORK/upload" && seed "$WORK/upload" s3://data/small/
start_sandbox 3 --image "bench/sleep=root:/"
start_controller
controller_ready || bail "vck-controller never became ready"
k apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: vck-small
provisioner: vck.intelai.org/data
volumeBindingMode: WaitForFirstConsumer
parameters:
  sourceType: S3
  sourceURL: s3://data/small/
  endpointURL: $ENDPOINT
  awsCredentialsSecretName: s3-creds
YAML
now() { date +%s.%N; }
running() { [ "$(k -n "$1" get pod "$2" -o jsonpath='{.status.phase}' 2>/dev/null)" = Running ]; }
claims=() vms=()
for r in $(seq 1 "$ROUNDS"); do
  ns=c$r
  k create namespace "$ns" >/dev/null
  k -n "$ns" create secret generic s3-creds --from-literal=awsAccessKeyID=S3RVER --from-literal=awsSecretAccessKey=S3RVER >/dev/null
  t0=$(now)
  k -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  storageClassName: vck-small
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: user}
spec:
  containers:
  - {name: main, image: bench/sleep, command: [/usr/bin/sleep, "600"], volumeMounts: [{name: data, mountPath: /data}]}
  volumes:
  - {name: data, persistentVolumeClaim: {claimName: data}}
YAML
  wait_for 600 running "$ns" user || bail "round $r: the claim's pod never ran"
  claims+=("$(awk -v a="$(now)" -v b="$t0" 'BEGIN {printf "%.2f", a - b}')")

  ns=v$r
  k create namespace "$ns" >/dev/null
  k -n "$ns" create secret generic s3-creds --from-literal=awsAccessKeyID=S3RVER --from-literal=awsSecretAccessKey=S3RVER >/dev/null
  t0=$(now)
  printf 'apiVersion: vck.intelai.org/v1alpha1\nkind: VolumeManager\nmetadata:\n  name: small\n  namespace: %s\nspec:\n  volumeConfigs:\n%s\n' \
    "$ns" "$(SPELLING=current s3vol data 1 '      sourceURL: s3://data/small/')" | k apply -f - >/dev/null
  until [ "$(k -n "$ns" get vckvm small -o jsonpath='{.status.state}' 2>/dev/null)" = Running ]; do sleep 0.1; done
  path=$(k -n "$ns" get vckvm small -o jsonpath='{.status.volumes[0].volumeSource.hostPath.path}')
  key=$(k -n "$ns" get vckvm small -o jsonpath='{.status.volumes[0].nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key}')
  val=$(k -n "$ns" get vckvm small -o jsonpath='{.status.volumes[0].nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]}')
  k -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: user}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: "$key", operator: In, values: ["$val"]}]}]
  containers:
  - {name: main, image: bench/sleep, command: [/usr/bin/sleep, "600"], volumeMounts: [{name: data, mountPath: /data}]}
  volumes:
  - {name: data, hostPath: {path: "$path"}}
YAML
  wait_for 600 running "$ns" user || bail "round $r: the VolumeManager's pod never ran"
  vms+=("$(awk -v a="$(now)" -v b="$t0" 'BEGIN {printf "%.2f", a - b}')")
  echo "round $r: claim ${claims[-1]} s, VolumeManager ${vms[-1]} s"
done
"$PYTHON" - "${claims[*]}" "${vms[*]}" <<'PY'
import statistics, sys
c = [float(x) for x in sys.argv[1].split()]
v = [float(x) for x in sys.argv[2].split()]
mc, mv = statistics.median(c), statistics.median(v)
print(f"median time to a running pod, 2,000 x 16 KiB: claim {mc:.2f} s, VolumeManager {mv:.2f} s, claim/VolumeManager {mc / mv:.2f}")
PY
stop_controller
tap_end >/dev/null
