#!/usr/bin/env bash
# A changed source reuses what the nodes hold, end to end: vck-controller in vck-sandbox
# against s3rver (behind tests/e2e/throttle_proxy.py, which counts the bytes the store sends),
# two nodes whose kubelet really runs vck-fetch. A VolumeManager of 20 objects with replicas 2
# is edited to a sourceURL holding the same objects but one changed, one added and one
# removed: each node's new copy takes the unchanged files from the old copy beside it (a copy,
# never a link) and only the changed and added objects leave the store, once (peer fill); the
# new copies are byte-identical to the new source, the status switches to them, and the old
# copies are removed from both disks.
# Usage: local_reuse_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
# Prints TAP lines; exits non-zero if any check failed. Stops everything it started.
set -u
# shellcheck source=../lifecycle/lib.sh
. "$(dirname "$(realpath "$0")")/../lifecycle/lib.sh"
harness_init local-reuse "$@"

start_s3rver
A=$WORK/src/a B=$WORK/src/b
mkdir -p "$A/sub"
for i in $(seq -w 0 19); do head -c $((64 * 1024 + 10#$i)) /dev/urandom >"$A/obj$i.bin"; done
mv "$A/obj05.bin" "$A/sub/obj05.bin"
cp -r "$A" "$B"
head -c 400000 /dev/urandom >"$B/obj03.bin"
head -c 300000 /dev/urandom >"$B/obj20.bin"
rm "$B/obj07.bin"
CHANGED=$((400000 + 300000))
for d in a b; do
  rm -rf "$WORK/upload" && cp -r "$WORK/src/$d" "$WORK/upload" && seed "$WORK/upload" "s3://data/$d/"
done
rm -rf "$WORK/upload" "$WORK/upload.vck-fetch"

start_throttle 0 "$WORK/egress"
ENDPOINT=$THROTTLED  # the volumes read the store through the counting proxy
egress() { cat "$WORK/egress" 2>/dev/null || echo 0; }
start_sandbox 2
start_controller
controller_ready || bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"
SPELLING=current

copies() { # the Ready copies as "node path" lines
  k get vckvm ds -o json | "$PYTHON" -c '
import json, sys
for c in json.load(sys.stdin)["status"].get("copies", []):
    if c.get("phase") == "Ready": print(c["node"], c["path"])'
}

vm ds "$(s3vol data 2 "      sourceURL: s3://data/a/")" || bail "applying ds failed" "$(cat "$WORK/last-apply.log")"
wait_state ds Running 180 || bail "ds never Running" "$(k get vckvm ds -o yaml)"
mapfile -t OLD < <(copies)
check "two Ready copies of the first source" test "${#OLD[@]}" = 2
before=$(egress)

k patch vckvm ds --type=json -p '[{"op":"replace","path":"/spec/volumeConfigs/0/options/sourceURL","value":"s3://data/b/"}]' \
  >/dev/null || bail "patching ds failed"
switched() {
  local path; path=$(jp ds '{.status.volumes[0].volumeSource.hostPath.path}')
  [ -n "$path" ] && [[ " ${OLD[*]} " != *" $path"* ]] && state_is ds Running &&
    [ "$(copies | wc -l)" = 2 ] && [ -z "$(copies | awk '{print $2}' | grep -Fx -f <(printf '%s\n' "${OLD[@]}" | awk '{print $2}'))" ]
}
if wait_for 180 switched; then ok "the edited volume switches to new copies"
else not_ok "the edited volume switches to new copies" "$(k get vckvm ds -o yaml | tail -n 40)"; fi
sleep 0.5  # the proxy rewrites its count as bytes pass
sent=$(( $(egress) - before ))
echo "# the store sent $sent bytes for the new version ($CHANGED bytes changed or added; the dataset is $(bytes_under "$B") bytes)"
check "only the changed and added objects left the store, once ($sent <= $((CHANGED * 11 / 10)))" \
  test "$sent" -le $((CHANGED * 11 / 10))
while read -r node path; do
  check "$node's new copy is byte-identical to the new source (the removed object absent)" \
    diff -r -q -x '.vck-fetch*' "$DATA/nodes/$node$path" "$B"
done < <(copies)
for line in "${OLD[@]}"; do
  read -r node path <<<"$line"
  wait_for 60 test ! -e "$DATA/nodes/$node$path"
  check "$node's old copy is gone from its disk" test ! -e "$DATA/nodes/$node$path"
done
# Each copy's summary lands when its pod ends (a serving pod lingers while its peers ask).
from_store() {
  k get vckvm ds -o json | "$PYTHON" -c '
import json, sys
cs = json.load(sys.stdin)["status"].get("copies", [])
print(sum(c["bytesFromStore"] for c in cs) if cs and all("bytesFromStore" in c for c in cs) else "")'
}
all_summed() { [ -n "$(from_store)" ]; }
wait_for 120 all_summed
total=$(from_store)
check "the copies' bytesFromStore add up to the changed and added bytes (${total:-none yet})" test "$total" = "$CHANGED"

tap_end
