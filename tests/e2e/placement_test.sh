#!/usr/bin/env bash
# Placement that knows the disk, end to end: vck-controller in vck-sandbox against s3rver, three
# nodes whose kubelet really runs vck-fetch, with allocatable ephemeral-storage 1 GiB, 100 MiB
# and 1 GiB (the sandbox's nodes file). A 500 MiB dataset (capacity 500Mi, its size until a
# download lists it) with replicas 3 is Failed with a message saying the data fits on 2 nodes,
# before any download: no pod, no byte on any node. Edited to replicas 2, its copies land on
# the two large nodes only, byte for byte, and the status' nodeAffinity selects exactly those.
# Usage: placement_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
# Prints TAP lines; exits non-zero if any check failed. Stops everything it started.
set -u
# shellcheck source=../lifecycle/lib.sh
. "$(dirname "$(realpath "$0")")/../lifecycle/lib.sh"
harness_init placement "$@"

start_s3rver
make_dataset set 4
cat >"$WORK/nodes.yaml" <<'EOF'
nodes:
- name: large-1
  capacity: {ephemeral-storage: 1Gi}
- name: small
  capacity: {ephemeral-storage: 100Mi}
- name: large-2
  capacity: {ephemeral-storage: 1Gi}
EOF
start_sandbox "$WORK/nodes.yaml"
start_controller
controller_ready || bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"
SPELLING=current

bigvol() { # bigvol REPLICAS: the dataset, 500 MiB by its capacity
  s3vol data "$1" "      sourceURL: s3://data/set/" | sed 's/capacity: 1Gi/capacity: 500Mi/'
}
has() { [[ "$1" == *"$2"* ]]; }
node_bytes() { bytes_under "$DATA/nodes/$1"; }

# ---- more replicas than nodes with room: said before any download ----
vm big "$(bigvol 3)" || bail "applying big failed" "$(cat "$WORK/last-apply.log")"
if wait_state big Failed 60; then ok "replicas 3: Failed"; else not_ok "replicas 3: Failed" "$(k get vckvm big -o yaml)"; fi
msg=$(volmsg big data)
check "replicas 3: the volume's message says the data fits on 2 nodes" has "$msg" "the data (500.0 MiB) fits on 2 nodes"
check "replicas 3: and why the third is not eligible" has "$msg" "1 without room for 500.0 MiB"
check "replicas 3: no download pod was made" test "$(k get pods -o name | wc -l)" = 0
check "replicas 3: no byte landed on any node" test "$(bytes_under "$DATA"/nodes)" = 0

# ---- replicas 2: the two large nodes only ----
vm big "$(bigvol 2)" || bail "applying big failed" "$(cat "$WORK/last-apply.log")"
if wait_state big Running 180; then ok "replicas 2: Running"; else not_ok "replicas 2: Running" "$(k get vckvm big -o yaml)"; fi
copy_nodes=$(k get vckvm big -o json | "$PYTHON" -c '
import json, sys
print(" ".join(sorted(c["node"] for c in json.load(sys.stdin)["status"].get("copies", []) if c.get("phase") == "Ready")))')
check "replicas 2: the copies are on large-1 and large-2" test "$copy_nodes" = "large-1 large-2"
for n in large-1 large-2; do
  path=$(k get vckvm big -o json | "$PYTHON" -c '
import json, sys
print([c["path"] for c in json.load(sys.stdin)["status"]["copies"] if c["node"] == sys.argv[1]][0])' "$n")
  check "replicas 2: $n's disk holds the dataset byte for byte" diff -r -q -x '.vck-fetch*' "$DATA/nodes/$n$path" "$WORK/src/set"
done
check "replicas 2: the small node holds nothing" test "$(node_bytes small)" = 0
key=$(jp big '{.status.volumes[0].nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key}')
selected=$(k get nodes -l "$key" -o 'jsonpath={.items[*].metadata.name}' | tr ' ' '\n' | sort | tr '\n' ' ')
check "replicas 2: the status' nodeAffinity selects exactly large-1 and large-2" test "$selected" = "large-1 large-2 "

tap_end
