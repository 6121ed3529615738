#!/usr/bin/env bash
# Eviction under disk pressure end to end: vck-controller in vck-sandbox (3 nodes whose kubelet
# really runs vck-fetch) against s3rver. Three one-replica S3 VolumeManagers land on one node
# (the other two cordoned); one copy is held by a running pod made by hand (no VCK label: only
# the live pod listing sees it), one was used by a finished pod naming its VolumeManager (so
# its lastUsed is later than the third copy's readyAt). With DiskPressure=True on the node:
# the least recently used unused copy is evicted first (its directory leaves the node's disk),
# DataEvicted events land on the VolumeManager and the Node, the copy in use stays whole; once
# the condition is False again nothing more is evicted; the evicted volume is Running again
# with a copy on another node holding the dataset byte for byte. A claim's copy on the node (a
# vck StorageClass's PV) is never evicted: it is the claim's storage.
# Usage: eviction_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
# Prints TAP lines; exits non-zero if any check failed. Stops everything it started.
set -u
# shellcheck source=../lifecycle/lib.sh
. "$(dirname "$(realpath "$0")")/../lifecycle/lib.sh"
harness_init eviction "$@"

start_s3rver
make_dataset olds 3
make_dataset held 4
make_dataset newer 5

# Pods a user runs: `holder` runs until deleted, `brief` a few seconds.
start_sandbox 3 --image 'eviction/holder:1=forever' --image 'eviction/brief:1=succeed:3s'
# The settle time is longer than this script takes to clear the condition after an eviction:
# a second eviction before it would show that clearing did not stop it.
start_controller --disk-pressure-settle=25s
controller_ready || bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"

FULL=node-3
k cordon node-1 >/dev/null && k cordon node-2 >/dev/null || bail "cordoning failed"
SPELLING=current
for v in olds held newer; do
  vm "$v" "$(s3vol data 1 "      sourceURL: s3://data/$v/")" || bail "applying $v failed" "$(cat "$WORK/last-apply.log")"
  # One after the other: their readyAt times are in this order.
  wait_state "$v" Running 180 || bail "$v never got Running" "$(k get vckvm "$v" -o yaml)"
  sleep 1.1
done
k uncordon node-1 >/dev/null && k uncordon node-2 >/dev/null || bail "uncordoning failed"

copy_field() { # copy_field VM FIELD: the field of the VolumeManager's (first) Ready copy
  k get vckvm "$1" -o json 2>/dev/null | "$PYTHON" -c '
import json, sys
cs = [c for c in json.load(sys.stdin).get("status", {}).get("copies", []) if c.get("phase") == "Ready"]
print(cs[0].get(sys.argv[1], "") if cs else "")' "$2"
}
same_tree() { # same_tree DIR SOURCE: DIR holds exactly SOURCE's files, byte for byte
  [ -d "$1" ] && diff -r -q -x '.vck-fetch*' "$1" "$2" >/dev/null 2>&1
}
for v in olds held newer; do
  check "$v: its one copy is on $FULL" test "$(copy_field "$v" node)" = "$FULL"
done
OLDS=$DATA/nodes/$FULL$(copy_field olds path)
HELD=$DATA/nodes/$FULL$(copy_field held path)
NEWER=$DATA/nodes/$FULL$(copy_field newer path)
for v in OLDS HELD NEWER; do
  d=${!v}; src=$WORK/src/$(tr 'A-Z' 'a-z' <<<"$v")
  check "the copy of ${v,,} on $FULL's disk holds its dataset" same_tree "$d" "$src"
done

pod() { # pod NAME IMAGE PATH [LABEL]: a pod on $FULL mounting the host directory PATH
  local labels=""; [ -n "${4:-}" ] && labels="  labels: {vck.intelai.org/volume-manager: $4}"
  k apply -f - >"$WORK/pod.log" 2>&1 <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: default
$labels
spec:
  nodeName: $FULL
  restartPolicy: Never
  containers:
    - name: main
      image: $2
      volumeMounts: [{name: data, mountPath: /data}]
  volumes:
    - name: data
      hostPath: {path: $3}
EOF
}
pod_phase() { k get pod "$1" -o 'jsonpath={.status.phase}' 2>/dev/null; }
phase_is() { [ "$(pod_phase "$1")" = "$2" ]; }

# `olds` was used (by a pod naming it, which the controller watches) after `newer` got Ready.
pod reader eviction/brief:1 "$(copy_field olds path)" olds || bail "creating the reader pod failed" "$(cat "$WORK/pod.log")"
wait_for 60 phase_is reader Succeeded || bail "the reader pod never finished" "$(k get pod reader -o yaml)"
newer_ready=$(copy_field newer readyAt)
later() { [ -n "$(copy_field olds lastUsed)" ] && [[ "$(copy_field olds lastUsed)" > "$newer_ready" ]]; }
if wait_for 60 later; then ok "a finished pod that mounted olds' copy set its lastUsed ($(copy_field olds lastUsed)), after newer's readyAt ($newer_ready)"
else not_ok "a finished pod that mounted olds' copy set its lastUsed after newer's readyAt" "lastUsed '$(copy_field olds lastUsed)', newer readyAt '$newer_ready'"; fi
check "newer's copy was never used: no lastUsed" test -z "$(copy_field newer lastUsed)"
# `held` is in use by a pod made by hand: no VCK label, only the live listing of the node sees it.
pod holder eviction/holder:1 "$(copy_field held path)/sub" || bail "creating the holder pod failed" "$(cat "$WORK/pod.log")"
wait_for 60 phase_is holder Running || bail "the holder pod never ran" "$(k get pod holder -o yaml)"

# A claim's copy on the node (an empty vck class; a finished pod used it): its PV's storage.
k apply -f - >"$WORK/claim.log" 2>&1 <<EOF || bail "applying the claim failed" "$(cat "$WORK/claim.log")"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: vck-scratch}
provisioner: vck.intelai.org/data
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: scratch, namespace: default}
spec:
  storageClassName: vck-scratch
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: scratch-user, namespace: default}
spec:
  nodeSelector: {kubernetes.io/hostname: $FULL}
  restartPolicy: Never
  containers:
    - name: main
      image: eviction/brief:1
      volumeMounts: [{name: data, mountPath: /data}]
  volumes:
    - name: data
      persistentVolumeClaim: {claimName: scratch}
EOF
wait_for 120 phase_is scratch-user Succeeded || bail "the claim's pod never finished" "$(k describe pvc scratch | tail -n 8)"
SCRATCH=$DATA/nodes/$FULL$(k get pv "$(k get pvc scratch -o jsonpath='{.spec.volumeName}')" -o jsonpath='{.spec.local.path}')
echo kept >"$SCRATCH/written-by-the-job" || bail "the claim's directory is not on $FULL" "$SCRATCH"

set_pressure() { # set_pressure NODE True|False: the node's DiskPressure condition, as its kubelet would report it
  local reason=KubeletHasDiskPressure now body
  [ "$2" = True ] || reason=KubeletHasNoDiskPressure
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  body="{\"status\":{\"conditions\":[{\"type\":\"DiskPressure\",\"status\":\"$2\",\"reason\":\"$reason\",\"message\":\"eviction test\",\"lastTransitionTime\":\"$now\",\"lastHeartbeatTime\":\"$now\"}]}}"
  if k patch node "$1" --subresource=status --type=strategic -p "$body" >/dev/null 2>"$WORK/patch.err"; then return 0; fi
  grep -q -- "--subresource" "$WORK/patch.err" || return 1
  # An older kubectl without --subresource: the status subresource through the API directly.
  "$PYTHON" -c '
import sys, json
sys.path.insert(0, sys.argv[1])
from invariants import Api
api = Api(sys.argv[2])
import http.client
c = http.client.HTTPSConnection(api.server.hostname, api.server.port, context=api.ssl, timeout=20)
h = dict(api.headers); h["Content-Type"] = "application/strategic-merge-patch+json"
c.request("PATCH", "/api/v1/nodes/%s/status" % sys.argv[3], body=sys.argv[4], headers=h)
r = c.getresponse(); r.read()
sys.exit(0 if r.status == 200 else 1)' "$HARNESS_DIR" "$WORK/kubeconfig.json" "$1" "$body"
}
pressure_of() { k get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="DiskPressure")].status}' 2>/dev/null; }

# ---- DiskPressure=True on the node holding all three ----
set_pressure "$FULL" True || bail "setting DiskPressure failed" "$(cat "$WORK/patch.err")"
check "the node reports DiskPressure=True" test "$(pressure_of "$FULL")" = True
if wait_for 120 test ! -e "$NEWER"; then ok "the least recently used unused copy (newer's) leaves the node's disk first"
else not_ok "the least recently used unused copy (newer's) leaves the node's disk first" "$(ls "$DATA/nodes/$FULL/var/datasets" 2>&1; k get vckvm newer -o yaml | tail -n 30)"; fi
# Cleared as soon as its directory is gone, as a kubelet would once space was freed.
set_pressure "$FULL" False || bail "clearing DiskPressure failed" "$(cat "$WORK/patch.err")"
check "the copy used more recently (olds') is still whole on the node" same_tree "$OLDS" "$WORK/src/olds"
check "the copy in use by a running pod (held's) is still whole on the node" same_tree "$HELD" "$WORK/src/held"

events_of() { # events_of KIND NAME: the reasons and messages of the events about it
  k get events -A -o 'jsonpath={range .items[*]}{.involvedObject.kind}/{.involvedObject.name}{" "}{.reason}{": "}{.message}{"\n"}{end}' 2>/dev/null |
    sed -n "s#^$1/$2 ##p"
}
has_eviction_event() { events_of "$1" "$2" | grep -q "^DataEvicted: .*volume data of default/newer from node $FULL.*last used"; }
if wait_for 30 has_eviction_event VolumeManager newer; then ok "a DataEvicted event on VolumeManager newer names the volume, the node and the last use"
else not_ok "a DataEvicted event on VolumeManager newer names the volume, the node and the last use" "$(events_of VolumeManager newer)"; fi
if wait_for 30 has_eviction_event Node "$FULL"; then ok "a DataEvicted event on Node $FULL names the volume, the node and the last use"
else not_ok "a DataEvicted event on Node $FULL names the volume, the node and the last use" "$(events_of Node "$FULL")"; fi

# ---- the evicted volume converges elsewhere ----
elsewhere() { local n; n=$(copy_field newer node); [ -n "$n" ] && [ "$n" != "$FULL" ] && state_is newer Running; }
if wait_for 180 elsewhere; then ok "newer is Running again with its copy on another node ($(copy_field newer node))"
else not_ok "newer is Running again with its copy on another node" "$(k get vckvm newer -o yaml | tail -n 40)"; fi
MOVED=$DATA/nodes/$(copy_field newer node)$(copy_field newer path)
check "newer's new copy holds the dataset byte for byte" same_tree "$MOVED" "$WORK/src/newer"
check "newer keeps no entry on $FULL" test -z "$(k get vckvm newer -o json | "$PYTHON" -c '
import json, sys
print(" ".join(c["phase"] for c in json.load(sys.stdin)["status"].get("copies", []) if c["node"] == sys.argv[1]))' "$FULL")"

# ---- cleared: nothing more is evicted (longer than --disk-pressure-settle) ----
evicted_more() { [ ! -e "$OLDS" ] || [ "$(copy_field olds node)" != "$FULL" ]; }
if wait_for 40 evicted_more; then not_ok "with DiskPressure cleared, nothing more is evicted" "$(k get vckvm olds -o yaml | tail -n 30)"
else ok "with DiskPressure cleared, nothing more is evicted (40 s, beyond the 25 s settle time)"; fi
check "olds and held are still Running" eval 'state_is olds Running && state_is held Running'
check "only one eviction event on the node" test "$(events_of Node "$FULL" | grep -c '^DataEvicted')" = 1
check "metrics: one eviction counted, on that node" test "$(metric "vck_evictions_total{node=\"$FULL\"}")" = 1

# ---- pressure again: the copy in use stays, the other unused one goes ----
set_pressure "$FULL" True || bail "setting DiskPressure failed" "$(cat "$WORK/patch.err")"
if wait_for 120 test ! -e "$OLDS"; then ok "under pressure again, the remaining unused copy (olds') is evicted"
else not_ok "under pressure again, the remaining unused copy (olds') is evicted" "$(k get vckvm olds -o yaml | tail -n 30)"; fi
sleep 30  # beyond the settle time: only the copy in use is left, and it must stay
check "the copy in use stays under pressure, whole" same_tree "$HELD" "$WORK/src/held"
check "held's copy is still Ready on $FULL" test "$(copy_field held node)" = "$FULL"
check "a claim's copy on $FULL (unused, its PV's storage) is never evicted" test "$(cat "$SCRATCH/written-by-the-job" 2>&1)" = kept
check "and its claim is still Bound" test "$(k get pvc scratch -o jsonpath='{.status.phase}')" = Bound
set_pressure "$FULL" False >/dev/null

k delete pod holder reader scratch-user --wait=false >/dev/null 2>&1
k delete pvc scratch --wait=false >/dev/null 2>&1
for v in olds held newer; do k delete vckvm "$v" --wait=false >/dev/null 2>&1; done
stuck=""
for v in olds held newer; do wait_for 120 gone "$v" || stuck+=" $v"; done
check "deleting the VolumeManagers finishes${stuck:+ (stuck:$stuck)}" test -z "$stuck"

tap_end
