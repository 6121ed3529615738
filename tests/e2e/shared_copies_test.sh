#!/usr/bin/env bash
# Shared copies, end to end: vck-controller in vck-sandbox against s3rver (behind
# tests/e2e/throttle_proxy.py, which counts the bytes the store sends), three nodes whose
# kubelet really runs vck-fetch. VolumeManager a (namespace default) downloads 20 objects with
# replicas 2; b (default) and c (namespace team-b, a Secret of its own) have the same config:
# they join a's copies after one listing each with their own credentials, so each node holds
# one directory, all three Running with the same hostPath, and the store sends listings only.
# d (namespace team-c) has credentials the store refuses: no access, and a message that says
# so. Deleting a and b keeps the copy (c reads it on); deleting c removes it and the labels.
# With --share-copies=false two such VolumeManagers have copies of their own.
# Usage: shared_copies_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
# Prints TAP lines; exits non-zero if any check failed. Stops everything it started.
set -u
# shellcheck source=../lifecycle/lib.sh
. "$(dirname "$(realpath "$0")")/../lifecycle/lib.sh"
harness_init shared-copies "$@"

start_s3rver
S=$WORK/src/shared
mkdir -p "$S/sub"
for i in $(seq -w 0 19); do head -c $((50 * 1024 + 10#$i)) /dev/urandom >"$S/obj$i.bin"; done
mv "$S/obj05.bin" "$S/sub/obj05.bin"
rm -rf "$WORK/upload" && cp -r "$S" "$WORK/upload" && seed "$WORK/upload" s3://data/shared/
rm -rf "$WORK/upload" "$WORK/upload.vck-fetch"
SIZE=$(bytes_under "$S")

start_throttle 0 "$WORK/egress"
ENDPOINT=$THROTTLED  # the volumes (and the controller's listings) read the store through the counting proxy
egress() { cat "$WORK/egress" 2>/dev/null || echo 0; }
start_sandbox 3
start_controller  # sharing is on by default
controller_ready || bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"
SPELLING=current

for ns in team-b team-c; do k create namespace "$ns" >/dev/null || bail "creating namespace $ns failed"; done
k -n team-b create secret generic s3-creds --from-literal=awsAccessKeyID=S3RVER --from-literal=awsSecretAccessKey=S3RVER \
  >/dev/null || bail "creating team-b's Secret failed"
k -n team-c create secret generic s3-creds --from-literal=awsAccessKeyID=NOT-S3RVER --from-literal=awsSecretAccessKey=wrong \
  >/dev/null || bail "creating team-c's Secret failed"

vm_in() { # vm_in NAMESPACE NAME: a VolumeManager of the shared dataset, replicas 2
  { printf 'apiVersion: vck.intelai.org/v1alpha1\nkind: VolumeManager\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  volumeConfigs:\n' "$2" "$1"
    s3vol data 2 "      sourceURL: s3://data/shared/"; echo; } | k apply -f - >"$WORK/last-apply.log" 2>&1
}
kn() { local ns=$1; shift; k -n "$ns" "$@"; }
state_in() { [ "$(kn "$1" get vckvm "$2" -o 'jsonpath={.status.state}' 2>/dev/null)" = "$3" ]; }
served_in() { kn "$1" get vckvm "$2" -o 'jsonpath={.status.volumes[0].volumeSource.hostPath.path}'; }
nodes_in() { kn "$1" get vckvm "$2" -o json | "$PYTHON" -c '
import json, sys
print(" ".join(sorted(c["node"] for c in json.load(sys.stdin)["status"].get("copies", []))))'; }
labelled() { # labelled NS NAME: how many nodes carry the volume's label
  k get nodes -o json | "$PYTHON" -c '
import json, sys
ns, name = sys.argv[1], sys.argv[2]
key = "vck.intelai.org/%s.%s.data" % (ns, name)
print(sum(1 for n in json.load(sys.stdin)["items"] if key in n["metadata"].get("labels", {})))' "$1" "$2"; }
dirs_on() { find "$DATA/nodes/$1" -name 'vck-resource-*' ! -name '*.vck-fetch' -prune -print 2>/dev/null; }

# ---- a downloads; b and c join ----
vm_in default a || bail "applying a failed" "$(cat "$WORK/last-apply.log")"
wait_for 180 state_in default a Running || bail "a never Running" "$(k get vckvm a -o yaml)"
PATH_A=$(served_in default a)
NODES=$(nodes_in default a)
check "a's copies are in a shared directory" grep -q '/vck-resource-shared-' <<<"$PATH_A"
sleep 0.5
before=$(egress)
vm_in default b || bail "applying b failed" "$(cat "$WORK/last-apply.log")"
vm_in team-b c || bail "applying c failed" "$(cat "$WORK/last-apply.log")"
if wait_for 120 state_in default b Running; then ok "b (same namespace) is Running"; else not_ok "b (same namespace) is Running" "$(k get vckvm b -o yaml)"; fi
if wait_for 120 state_in team-b c Running; then ok "c (namespace team-b, its own Secret) is Running"; else not_ok "c (namespace team-b, its own Secret) is Running" "$(kn team-b get vckvm c -o yaml)"; fi
check "b's hostPath is a's" test "$(served_in default b)" = "$PATH_A"
check "c's hostPath is a's" test "$(served_in team-b c)" = "$PATH_A"
check "b's copies are on a's nodes" test "$(nodes_in default b)" = "$NODES"
check "c's copies are on a's nodes" test "$(nodes_in team-b c)" = "$NODES"
check "c joined a's copies" test "$(kn team-b get vckvm c -o 'jsonpath={.status.copies[*].sharedFrom}')" = "default/a default/a"
check "no download pod for b or c" test "$(k get pods -A -o name | wc -l)" -le 2
sleep 0.5
sent=$(( $(egress) - before ))
echo "# joining: the store sent $sent bytes (listings) for b and c; the dataset is $SIZE bytes"
check "b and c cost listings only ($sent bytes < one object)" test "$sent" -lt 50000
for node in $NODES; do
  check "$node holds one directory" test "$(dirs_on "$node" | wc -l)" = 1
  check "$node's copy is byte-identical to the source" diff -r -q -x '.vck-fetch*' "$DATA/nodes/$node$PATH_A" "$S"
done
for vm in default/a default/b team-b/c; do
  check "$vm's label is on 2 nodes" test "$(labelled "${vm%/*}" "${vm#*/}")" = 2
done

# ---- d's credentials are refused ----
vm_in team-c d || bail "applying d failed" "$(cat "$WORK/last-apply.log")"
if wait_for 60 state_in team-c d Failed; then ok "d (refused credentials) is Failed"; else not_ok "d (refused credentials) is Failed" "$(kn team-c get vckvm d -o yaml)"; fi
msg=$(kn team-c get vckvm d -o 'jsonpath={.status.volumes[0].message}')
echo "# d: $msg"
check "d's message says it has no access to the shared copy, and why" \
  grep -q "^no access to the copy of this source that default/a shares: listing s3://data/shared/ with this volume's own credentials (Secret team-c/s3-creds) failed: " <<<"$msg"
check "d has no copy and no pod" test -z "$(kn team-c get vckvm d -o 'jsonpath={.status.copies}')$(kn team-c get pods -o name)"
check "d's label is on no node" test "$(labelled team-c d)" = 0
kn team-c delete vckvm d --wait=false >/dev/null

# ---- deleting a and b keeps the copy; deleting c removes it ----
k delete vckvm a b --wait=false >/dev/null
both_gone() { gone a && gone b; }
if wait_for 120 both_gone; then ok "a and b are deleted"; else not_ok "a and b are deleted" "$(k get vckvm -o yaml | tail -n 40)"; fi
for node in $NODES; do
  check "$node still holds the copy, byte-identical" diff -r -q -x '.vck-fetch*' "$DATA/nodes/$node$PATH_A" "$S"
done
check "c is still Running on the copy" state_in team-b c Running
check "a's and b's labels are gone" test "$(labelled default a)$(labelled default b)" = 00
check "c's label stays on 2 nodes" test "$(labelled team-b c)" = 2
kn team-b delete vckvm c --wait=false >/dev/null
c_gone() { ! kn team-b get vckvm c >/dev/null 2>&1; }
if wait_for 120 c_gone; then ok "c is deleted"; else not_ok "c is deleted" "$(kn team-b get vckvm c -o yaml)"; fi
for node in $NODES; do
  check "$node's copy is removed with its last user" test -z "$(dirs_on "$node")"
done
check "c's label is gone" test "$(labelled team-b c)" = 0
wait_for 60 nothing_left
check "nothing is left in the cluster" nothing_left

# ---- --share-copies=false: every volume has copies of its own ----
stop_controller
start_controller --share-copies=false
controller_ready || bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"
vm_in default e || bail "applying e failed" "$(cat "$WORK/last-apply.log")"
vm_in default f || bail "applying f failed" "$(cat "$WORK/last-apply.log")"
wait_for 180 state_in default e Running && wait_for 180 state_in default f Running ||
  bail "e or f never Running" "$(k get vckvm -o yaml | tail -n 40)"
check "--share-copies=false: e and f have directories of their own" test "$(served_in default e)" != "$(served_in default f)"
all_dirs() { find "$DATA/nodes" -name 'vck-resource-*' ! -name '*.vck-fetch' -prune -print | wc -l; }
check "--share-copies=false: four directories for two volumes of two replicas" test "$(all_dirs)" = 4
k delete vckvm e f --wait=false >/dev/null
wait_for 120 nothing_left
check "--share-copies=false: nothing is left once they are deleted" nothing_left

tap_end
