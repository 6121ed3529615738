#!/usr/bin/env bash
# Copies that follow their source, end to end: vck-controller (with --min-refresh-interval=2s)
# in vck-sandbox against s3rver (behind tests/e2e/throttle_proxy.py, which counts the bytes the
# store sends), two nodes whose kubelet really runs vck-fetch.
#   ask  a VolumeManager of 20 objects, replicas 2; a pod reads the copy on one node; in the
#        store 1 object changes and 1 is added; the annotation vck.intelai.org/refresh asks for
#        a refresh: the store sends at most 1.1 x the changed and added bytes; the new version
#        is byte-identical to the source on both nodes; the status switched only once both
#        were Ready; the old version stays on the reader's node while it runs, then goes.
#   tick options.refreshInterval 2s on a source that does not change: listings only, no new
#        directory, no pod, and nothing in the status moves but status.refreshes[].checkedAt.
# Usage: refresh_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
# Prints TAP lines; exits non-zero if any check failed. Stops everything it started.
set -u
# shellcheck source=../lifecycle/lib.sh
. "$(dirname "$(realpath "$0")")/../lifecycle/lib.sh"
harness_init refresh "$@"

start_s3rver
S=$WORK/src/r
mkdir -p "$S/sub"
for i in $(seq -w 0 19); do head -c $((64 * 1024 + 10#$i)) /dev/urandom >"$S/obj$i.bin"; done
mv "$S/obj05.bin" "$S/sub/obj05.bin"
rm -rf "$WORK/upload" && cp -r "$S" "$WORK/upload" && seed "$WORK/upload" s3://data/r/
T=$WORK/src/still
mkdir -p "$T" && for i in 1 2 3; do head -c 100000 /dev/urandom >"$T/still-$i.bin"; done
rm -rf "$WORK/upload" "$WORK/upload.vck-fetch" && cp -r "$T" "$WORK/upload" && seed "$WORK/upload" s3://data/still/

start_throttle 0 "$WORK/egress"
ENDPOINT=$THROTTLED  # the volumes (and the controller's listings) go through the counting proxy
egress() { cat "$WORK/egress" 2>/dev/null || echo 0; }
# Users' pods run host programs.
start_sandbox 2 --image "e2e/reader=root:/"
start_controller --min-refresh-interval=2s
controller_ready || bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"
SPELLING=current

copies() { # copies VM: its copies as "node phase path" lines
  k get vckvm "$1" -o json | "$PYTHON" -c '
import json, sys
for c in json.load(sys.stdin)["status"].get("copies", []): print(c["node"], c["phase"], c["path"])'
}
served() { jp "$1" '{.status.volumes[0].volumeSource.hostPath.path}'; }

# ---- ask: a changed source, refreshed on request ----
vm ds "$(s3vol data 2 "      sourceURL: s3://data/r/")" || bail "applying ds failed" "$(cat "$WORK/last-apply.log")"
wait_state ds Running 180 || bail "ds never Running" "$(k get vckvm ds -o yaml)"
OLD_PATH=$(served ds)
READER_NODE=$(copies ds | awk 'NR == 1 {print $1}')
k apply -f - >"$WORK/reader.log" 2>&1 <<YAML || bail "creating the reader failed" "$(cat "$WORK/reader.log")"
apiVersion: v1
kind: Pod
metadata:
  name: reader
  namespace: default
  labels: {vck.intelai.org/volume-manager: ds}
spec:
  nodeName: $READER_NODE
  restartPolicy: Never
  containers:
  - name: read
    image: e2e/reader
    # The sandbox rewrites a mountPath in a whole argument or env value only: the paths go in env.
    command: ["/bin/sh", "-c", 'while [ ! -e "\$RELEASE" ]; do cat "\$DATA/obj00.bin" >/dev/null || exit 1; sleep 0.2; done']
    env: [{name: DATA, value: /var/datasets/data}, {name: RELEASE, value: "$WORK/release"}]
    volumeMounts: [{name: data, mountPath: /var/datasets/data, readOnly: true}]
  volumes:
  - name: data
    hostPath: {path: $OLD_PATH}
YAML
reader_is() { [ "$(k get pod reader -o 'jsonpath={.status.phase}')" = "$1" ]; }
wait_for 60 reader_is Running || bail "the reader never ran"

head -c 300000 /dev/urandom >"$S/obj03.bin"
head -c 200000 /dev/urandom >"$S/obj20.bin"
CHANGED=$((300000 + 200000))
rm -rf "$WORK/upload" "$WORK/upload.vck-fetch" && cp -r "$S" "$WORK/upload" && seed "$WORK/upload" s3://data/r/
before=$(egress)
k annotate vckvm ds vck.intelai.org/refresh=first --overwrite >/dev/null || bail "annotating ds failed"

# While the new version downloads the status names the old one; it switches when both are Ready.
switched_early=0
switched() {
  local now; now=$(served ds)
  if [ -n "$now" ] && [ "$now" != "$OLD_PATH" ]; then
    [ "$(copies ds | awk -v p="$now" '$3 == p && $2 == "Ready"' | wc -l)" = 2 ] || switched_early=1
    return 0
  fi
  return 1
}
if wait_for 180 switched; then ok "ask: the status switches to the new version"
else not_ok "ask: the status switches to the new version" "$(k get vckvm ds -o yaml | tail -n 50)"; fi
check "ask: it switched only when both replicas of the new version were Ready" test "$switched_early" = 0
check "ask: the record says version 1, answering the request" \
  test "$(jp ds '{.status.refreshes[0].version}/{.status.refreshes[0].request}')" = "1/first"
events=$(k get events --field-selector involvedObject.name=ds -o 'jsonpath={range .items[*]}{.reason}: {.message}{"\n"}{end}')
check "ask: a Normal event Refreshing says a new version is being built" \
  grep -q "^Refreshing: volume data: the source changed; building version 1 beside the current one$" <<<"$events"
NEW_PATH=$(served ds)
sleep 0.5  # the proxy rewrites its count as bytes pass
sent=$(( $(egress) - before ))
echo "# ask: the store sent $sent bytes for $CHANGED changed and added bytes (the dataset is $(bytes_under "$S") bytes)"
check "ask: the store sent at most 1.1x the changed and added objects ($sent <= $((CHANGED * 11 / 10)))" \
  test "$sent" -le $((CHANGED * 11 / 10))
for node in $(copies ds | awk -v p="$NEW_PATH" '$3 == p {print $1}'); do
  check "ask: $node's new version is byte-identical to the source" diff -r -q -x '.vck-fetch*' "$DATA/nodes/$node$NEW_PATH" "$S"
done
sleep 2
check "ask: the old version stays on the reader's node while it runs" test -d "$DATA/nodes/$READER_NODE$OLD_PATH"
check "ask: the reader still runs" test "$(k get pod reader -o 'jsonpath={.status.phase}')" = Running
touch "$WORK/release"
wait_for 60 reader_is Succeeded
check "ask: the reader read its data to the end" test "$(k get pod reader -o 'jsonpath={.status.phase}')" = Succeeded
k delete pod reader --wait=false >/dev/null 2>&1
for node in $(k get nodes -o 'jsonpath={.items[*].metadata.name}'); do
  wait_for 60 test ! -e "$DATA/nodes/$node$OLD_PATH"
  check "ask: the old version is gone from $node" test ! -e "$DATA/nodes/$node$OLD_PATH"
done
wait_state ds Running 60
check "ask: only the new version's copies are left" test "$(copies ds | awk '{print $3}' | sort -u)" = "$NEW_PATH"

# ---- tick: an interval refresh of a source that does not change ----
vm tick "$(s3vol data 1 "      sourceURL: s3://data/still/
      refreshInterval: 2s")" || bail "applying tick failed" "$(cat "$WORK/last-apply.log")"
wait_state tick Running 180 || bail "tick never Running" "$(k get vckvm tick -o yaml)"
checked() { jp tick '{.status.refreshes[0].checkedAt}'; }
has_checked() { [ -n "$(checked)" ]; }
wait_for 30 has_checked
first_check=$(checked)
status_but_checks() { k get vckvm tick -o json | "$PYTHON" -c '
import json, sys
st = json.load(sys.stdin)["status"]
for r in st.get("refreshes", []): r.pop("checkedAt", None)
print(json.dumps(st, sort_keys=True))'; }
st_before=$(status_but_checks)
dirs_before=$(ls "$DATA"/nodes/*/var/datasets | sort | tr '\n' ' ')
pods_before=$(k get pods -o name | sort | tr '\n' ' ')
before=$(egress)
checked_again() { [ "$(checked)" != "$first_check" ]; }
if wait_for 30 checked_again; then ok "tick: the source is looked at again after the interval"
else not_ok "tick: the source is looked at again after the interval" "$(k get vckvm tick -o jsonpath='{.status.refreshes}')"; fi
sleep 3
check "tick: nothing in the status moved but checkedAt" test "$(status_but_checks)" = "$st_before"
check "tick: no new directory on any node" test "$(ls "$DATA"/nodes/*/var/datasets | sort | tr '\n' ' ')" = "$dirs_before"
check "tick: no new pod" test "$(k get pods -o name | sort | tr '\n' ' ')" = "$pods_before"
sent=$(( $(egress) - before ))
echo "# tick: the store sent $sent bytes (listings only) in about 5 s"
check "tick: the store sent listings only, no object ($sent bytes < one object of 100000 bytes)" test "$sent" -lt 100000

tap_end
