#!/usr/bin/env bash
# Placement that knows the disk, end to end: vck-controller in vck-sandbox against s3rver, three
# nodes whose kubelet really runs vck-fetch, with allocatable ephemeral-storage 1 GiB, 100 MiB
# and 1 GiB (the sandbox's nodes file). A 500 MiB dataset (capacity 500Mi, its size until a
# download lists it) with replicas 3 is Failed with a message saying the data fits on 2 nodes,
# before any download: no pod, no byte on any node. Edited to replicas 2, its copies land on
# the two large nodes only, byte for byte, and the status' nodeAffinity selects exactly those.
# A disk that fills anyway: the first download of another dataset meets ENOSPC (vck-fetch's
# test hook VCK_FETCH_TEST_DISK_FULL_AFTER, set by a wrapper); its copy fails cleanly (a
# Warning event says so, no partial data stays on that node) and lands on another node whole.
# Usage: placement_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
# Prints TAP lines; exits non-zero if any check failed. Stops everything it started.
set -u
# shellcheck source=../lifecycle/lib.sh
. "$(dirname "$(realpath "$0")")/../lifecycle/lib.sh"
harness_init placement "$@"

start_s3rver
make_dataset set 4
make_dataset full 4
# The download pods run vck-fetch through a wrapper: the first download of s3://data/full/
# finds its disk full after 2000 bytes, and names its node in $WORK/full-node.
cat >"$WORK/fetch-hook" <<SH
#!/bin/bash
case " \$* " in *" s3://data/full/ "*)
  if mkdir "$WORK/full-once" 2>/dev/null; then
    for a in "\$@"; do case "\$a" in *"/nodes/"*) n=\${a#*/nodes/}; echo "\${n%%/*}" >"$WORK/full-node"; break ;; esac; done
    export VCK_FETCH_TEST_DISK_FULL_AFTER=2000
  fi ;;
esac
exec "$FETCH" "\$@"
SH
chmod 0755 "$WORK/fetch-hook"
cat >"$WORK/nodes.yaml" <<'EOF'
nodes:
- name: large-1
  capacity: {ephemeral-storage: 1Gi}
- name: small
  capacity: {ephemeral-storage: 100Mi}
- name: large-2
  capacity: {ephemeral-storage: 1Gi}
EOF
FETCH=$WORK/fetch-hook start_sandbox "$WORK/nodes.yaml"
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

# ---- a disk that fills anyway: the copy fails cleanly and goes elsewhere ----
vm full "$(s3vol data 1 "      sourceURL: s3://data/full/" | sed 's/capacity: 1Gi/capacity: 1Mi/')" ||
  bail "applying full failed" "$(cat "$WORK/last-apply.log")"
if wait_state full Running 180; then ok "ENOSPC: Running in the end"; else not_ok "ENOSPC: Running in the end" "$(k get vckvm full -o yaml)"; fi
full_node=$(cat "$WORK/full-node" 2>/dev/null)
check "ENOSPC: the first download met a full disk (on ${full_node:-no node})" test -n "$full_node"
read -r ready_node ready_path < <(k get vckvm full -o json | "$PYTHON" -c '
import json, sys
cs = [c for c in json.load(sys.stdin)["status"].get("copies", []) if c.get("phase") == "Ready"]
print(cs[0]["node"], cs[0]["path"]) if cs else print("", "")')
check "ENOSPC: the copy was placed on another node ($ready_node)" test -n "$ready_node" -a "$ready_node" != "$full_node"
check "ENOSPC: the new copy holds the dataset byte for byte" diff -r -q -x '.vck-fetch*' "$DATA/nodes/$ready_node$ready_path" "$WORK/src/full"
wait_for 60 test ! -e "$DATA/nodes/$full_node$ready_path"
check "ENOSPC: no partial data is left on the full node" test ! -e "$DATA/nodes/$full_node$ready_path"
events=$(k get events --field-selector involvedObject.name=full -o 'jsonpath={.items[*].message}')
check "ENOSPC: a Warning event says the disk was full and the copy moved" has "$events" "failed, its disk full"

tap_end
