#!/usr/bin/env bash
# A copy a running pod reads is never removed from under it (issue 42), end to end:
# vck-controller run directly (so it can be SIGKILLed and started again) in vck-sandbox (3
# nodes whose kubelet really runs vck-fetch) against s3rver. Four changes, each to its own
# VolumeManager while a "holder" pod on the copy's node reads it (it compares every file of
# its mount with the dataset every 0.2 s until released, and fails at the first difference):
#   rep  replicas 2 -> 1, the holder on the node whose replica goes;
#   rm   one of two volumes removed from spec.volumeConfigs, the holder reading it;
#   del  the VolumeManager deleted (two replicas, the holder on one);
#   url  options.sourceURL changed to another dataset.
# Each is run twice: as is, and with vck-controller SIGKILLed right after the change, again
# while the copy is held, and once more before the holder ends (which then ends while no
# controller runs). Checks, for each: the held copy's directory stays whole while the holder
# runs (across restarts too); its status.copies entry says "kept while pod H uses it"; what
# `kubectl get` shows (rep, url: "successfully deployed all sub-resources; an old copy stays
# until pod H, which uses it, ends", also in the volume's message; rm: "removing copies no
# longer wanted"; del: the object stays, Terminating, with "deleting: volume data: removing 1
# copies; an old copy stays until pod H, which uses it, ends"); a RemovalWaits event naming
# the holder; its node's label for the old data goes at once (docs/user.md: new pods go to the
# copies that stay); what is not held goes at once (del's other replica). A pod created after
# the change reads the new data (url) or a whole copy on the replica kept (rep), placed by the
# status' nodeAffinity. Once released, the holder Succeeded with its log saying it read its
# data whole throughout, it was never sent DataLost, and then the old directory and label go
# (and del's VolumeManager). At the end, everything deleted, vck leaves nothing behind.
# Usage: in_use_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
# Prints TAP lines; exits non-zero if any check failed. Stops everything it started.
set -u
# shellcheck source=../lifecycle/lib.sh
. "$(dirname "$(realpath "$0")")/../lifecycle/lib.sh"
harness_init in-use "$@"

start_s3rver
make_dataset olddata 4
make_dataset newdata 3
# Users' pods run host programs (python3 reads what the pod mounts).
start_sandbox 3 --image "e2e/reader=root:/"
# Each VolumeManager here is about its own copies; equal configs would share them (the
# shared-copies test covers that, and the copy planner's tests a shared copy a pod reads).
CONTROLLER_ARGS=(--share-copies=false)
start_controller
controller_ready || bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"

# The holder: compares every file under its mount (vck-fetch's own state aside) with the
# dataset, at least once, then every 0.2 s until its release file exists; "MISSING" and exit 1
# at the first difference (a file gone, changed or added), "whole in N checks" at the end.
cat >"$WORK/holder.py" <<'PY'
import os, sys, time
mount, src, release = sys.argv[1:4]
def files(root):
    out = {}
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".vck-fetch")]
        for n in names:
            if not n.startswith(".vck-fetch"):
                out[os.path.relpath(os.path.join(d, n), root)] = os.path.join(d, n)
    return out
def read(p):
    try:
        with open(p, "rb") as f: return f.read()
    except OSError: return None
want = {rel: read(p) for rel, p in files(src).items()}
n = 0
while True:
    have = files(mount)
    bad = sorted(set(want) ^ set(have)) + sorted(r for r in set(want) & set(have) if read(have[r]) != want[r])
    if bad or not want:
        print("MISSING after", n, "checks:", " ".join(bad[:5]), "files=%d" % len(have), flush=True)
        sys.exit(1)
    n += 1
    if n == 1: print("reading", len(have), "files", flush=True)
    if os.path.exists(release): break
    time.sleep(0.2)
print("whole in", n, "checks", flush=True)
PY

# shellcheck disable=SC2034 # read by lib.sh's s3vol: capacity 1Gi
SPELLING=current
OLD="      sourceURL: s3://data/olddata/"
make_vms() { # make_vms SUFFIX: the four VolumeManagers of one round
  vm "rep$1" "$(s3vol data 2 "$OLD")" && vm "rm$1" "$(s3vol keep 1 "$OLD")" "$(s3vol gone 1 "$OLD")" &&
    vm "del$1" "$(s3vol data 2 "$OLD")" && vm "url$1" "$(s3vol data 1 "$OLD")" && return 0
  bail "applying the VolumeManagers$1 failed" "$(cat "$WORK/last-apply.log")"
}
make_vms ""
make_vms -k
for v in rep rm del url rep-k rm-k del-k url-k; do
  wait_state "$v" Running 180 || bail "$v never got Running" "$(k get vckvm "$v" -o yaml | tail -n 40)"
done

copies() { # copies VM: status.copies, one line each: volume replica node phase path config message
  k get vckvm "$1" -o json 2>/dev/null | "$PYTHON" -c '
import json, sys
for c in json.load(sys.stdin).get("status", {}).get("copies", []):
    print(c.get("volume"), c.get("replica", -1), c.get("node"), c.get("phase"), c.get("path"), c.get("config"), c.get("message", ""), sep="\t")'
}
copy_field() { # copy_field VM VOLUME REPLICA FIELD(3 node, 5 path, 6 config, 7 message)
  copies "$1" | awk -F'\t' -v v="$2" -v r="$3" -v f="$4" '$1 == v && $2 == r && $4 == "Ready" {print $f; exit}'
}
entry_message() { # entry_message VM NODE PATH: the message of the copy entry there, whatever its phase
  copies "$1" | awk -F'\t' -v n="$2" -v p="$3" '$3 == n && $5 == p {print $7; exit}'
}
label_of() { # label_of NODE VM VOLUME: the node's label value for the volume ("" when none)
  k get node "$1" -o json 2>/dev/null | "$PYTHON" -c '
import json, sys
print(json.load(sys.stdin)["metadata"].get("labels", {}).get(sys.argv[1], ""))' "vck.intelai.org/default.$2.$3"
}
pod_phase() { k get pod "$1" -o 'jsonpath={.status.phase}' 2>/dev/null; }
phase_is() { [ "$(pod_phase "$1")" = "$2" ]; }
logs_of() { k logs "$1" 2>/dev/null; }
events_of() { # events_of NAME REASON: the messages of the events with that reason about that object, with their counts
  k get events --field-selector "involvedObject.name=$1,reason=$2" -o 'jsonpath={range .items[*]}{.count}{"|"}{.message}{"\n"}{end}' 2>/dev/null
}
event_count() { # event_count NAME REASON TEXT: how many times such an event was recorded (counts summed)
  events_of "$1" "$2" | grep -F -- "$3" | awk -F'|' '{s += ($1 == "" ? 1 : $1)} END {print s + 0}'
}
vm_row() { k get vckvm "$1" --no-headers 2>/dev/null; }
on_node() { [ -d "$DATA/nodes/$1$2" ]; }
same_tree() { diff -r -q -x '.vck-fetch*' "$1" "$2" >/dev/null 2>&1; }

holder_pod() { # holder_pod NAME VM NODE PATH DATASET: a pod on NODE reading the host directory PATH, as injection would mount it
  k apply -f - >"$WORK/pod-$1.log" 2>&1 <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: default
  labels: {vck.intelai.org/volume-manager: $2}
spec:
  nodeName: $3
  restartPolicy: Never
  containers:
  - name: read
    image: e2e/reader
    command: ["/usr/bin/python3", "$WORK/holder.py", "/var/datasets/data", "$WORK/src/$5", "$WORK/release-$1"]
    volumeMounts: [{name: data, mountPath: /var/datasets/data, readOnly: true}]
  volumes:
  - name: data
    hostPath: {path: $4}
EOF
}
reader_pod() { # reader_pod NAME VM VOLUME DATASET: a pod as injection makes it from the status (hostPath and nodeAffinity); reads once
  touch "$WORK/release-$1"
  k get vckvm "$2" -o json | "$PYTHON" -c '
import json, sys
name, vm, vol, script, src, release = sys.argv[1:]
v = [v for v in json.load(sys.stdin)["status"]["volumes"] if v["id"] == vol][0]
print(json.dumps({"apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": name, "namespace": "default", "labels": {"vck.intelai.org/volume-manager": vm}},
  "spec": {"restartPolicy": "Never", "affinity": {"nodeAffinity": v["nodeAffinity"]},
    "containers": [{"name": "read", "image": "e2e/reader",
      "command": ["/usr/bin/python3", script, "/var/datasets/data", src, release],
      "volumeMounts": [{"name": "data", "mountPath": "/var/datasets/data", "readOnly": True}]}],
    "volumes": [{"name": "data", "hostPath": {"path": v["volumeSource"]["hostPath"]["path"]}}]}}))' \
    "$1" "$2" "$3" "$WORK/holder.py" "$WORK/src/$4" "$WORK/release-$1" | k apply -f - >"$WORK/pod-$1.log" 2>&1
}

# ---- the holders: one per VolumeManager, on the node of the copy that is to go ----
# rep: replicas 2 -> 1 drops replica 1 (replica numbers beyond the count go, copy_planner.hpp);
# del: replica 0 is held, replica 1 is not (it goes at once); rm: the volume that leaves the spec.
declare -A NODE PATH_ CONFIG OTHER_NODE OTHER_PATH
held_copy() { # held_copy VM VOLUME REPLICA
  NODE[$1]=$(copy_field "$1" "$2" "$3" 3) PATH_[$1]=$(copy_field "$1" "$2" "$3" 5) CONFIG[$1]=$(copy_field "$1" "$2" "$3" 6)
  [ -n "${NODE[$1]}" ] && [ -n "${PATH_[$1]}" ] && return 0
  bail "$1 has no Ready copy of $2 replica $3" "$(copies "$1")"
}
for s in "" -k; do
  held_copy "rep$s" data 1
  held_copy "rm$s" gone 0
  held_copy "del$s" data 0
  held_copy "url$s" data 0
  OTHER_NODE[rep$s]=$(copy_field "rep$s" data 0 3) OTHER_PATH[rep$s]=$(copy_field "rep$s" data 0 5)
  OTHER_NODE[del$s]=$(copy_field "del$s" data 1 3) OTHER_PATH[del$s]=$(copy_field "del$s" data 1 5)
  OTHER_NODE[rm$s]=$(copy_field "rm$s" keep 0 3) OTHER_PATH[rm$s]=$(copy_field "rm$s" keep 0 5)
done
for v in rep rm del url rep-k rm-k del-k url-k; do
  holder_pod "h-$v" "$v" "${NODE[$v]}" "${PATH_[$v]}" olddata || bail "creating holder h-$v failed" "$(cat "$WORK/pod-h-$v.log")"
done
for v in rep rm del url rep-k rm-k del-k url-k; do
  wait_for 60 eval "phase_is h-$v Running && logs_of h-$v | grep -q '^reading'" ||
    bail "holder h-$v never read its copy" "$(k get pod "h-$v" -o yaml | tail -n 30; logs_of "h-$v")"
done
ok "eight holders run, each reading the copy that is to go (rep: ${NODE[rep]}, rm: ${NODE[rm]}, del: ${NODE[del]}, url: ${NODE[url]})"

volume_of() { case $1 in rm*) echo gone ;; *) echo data ;; esac; }
change() { # change VM: the round's change to it
  case $1 in
    rep*) k patch vckvm "$1" --type=json -p '[{"op":"replace","path":"/spec/volumeConfigs/0/replicas","value":1}]' ;;
    rm*) k patch vckvm "$1" --type=json -p '[{"op":"remove","path":"/spec/volumeConfigs/1"}]' ;;
    del*) k delete vckvm "$1" --wait=false ;;
    url*) k patch vckvm "$1" --type=json -p '[{"op":"replace","path":"/spec/volumeConfigs/0/options/sourceURL","value":"s3://data/newdata/"}]' ;;
  esac >/dev/null 2>"$WORK/change.err" || bail "changing $1 failed" "$(cat "$WORK/change.err")"
}
kept_msg() { echo "kept while pod h-$1 uses it"; }
held_note() { echo "an old copy stays until pod h-$1, which uses it, ends"; }
is_held() { [ "$(entry_message "$1" "${NODE[$1]}" "${PATH_[$1]}")" = "$(kept_msg "$1")" ]; }

# While held: what stays, what the user sees, what goes at once.
check_held() { # check_held SUFFIX ROUND
  local s=$1 r=$2 v
  for v in rep$s rm$s del$s url$s; do
    if wait_for 120 is_held "$v"; then ok "$r $v: the copy h-$v reads is kept, its entry says \"$(kept_msg "$v")\""
    else not_ok "$r $v: the copy h-$v reads is kept, its entry says \"$(kept_msg "$v")\"" "$(copies "$v"; vm_row "$v")"; fi
  done
  # What made the old bug visible came about 3 s after the change: a few seconds more.
  sleep 4
  for v in rep$s rm$s del$s url$s; do
    check "$r $v: the held copy is still whole on ${NODE[$v]}'s disk" same_tree "$DATA/nodes/${NODE[$v]}${PATH_[$v]}" "$WORK/src/olddata"
    check "$r $v: h-$v still runs, reading nothing but its whole data" eval "phase_is h-$v Running && ! logs_of h-$v | grep -q MISSING"
    check "$r $v: the node label for its old data went at once from ${NODE[$v]} (new pods are not sent there)" \
      test "$(label_of "${NODE[$v]}" "$v" "$(volume_of "$v")")" != "${CONFIG[$v]}"
  done
  for v in rep$s rm$s url$s; do
    if wait_for 60 eval "vm_row $v | grep -qF 'successfully deployed all sub-resources; $(held_note "$v")'"; then
      ok "$r $v: kubectl get says Running, \"successfully deployed all sub-resources; $(held_note "$v")\""
    else not_ok "$r $v: kubectl get says Running, \"successfully deployed all sub-resources; $(held_note "$v")\"" "$(vm_row "$v")"; fi
    # A volume out of the spec has no status.volumes entry: the VolumeManager's message names the pod.
    [ "$v" = "rm$s" ] && continue
    check "$r $v: so does the volume's message ($(volmsg "$v" data))" grep -qF "$(held_note "$v")" <<<"$(volmsg "$v" data)"
  done
  check "$r rm$s: Ready, not Pending, while only a running pod keeps the removed volume's copy" \
    test "$(jp "rm$s" '{.status.state}') $(jp "rm$s" '{.status.conditions[?(@.type=="Ready")].status}')" = "Running True"
  check "$r rm$s: the volume kept in the spec stays whole on ${OTHER_NODE[rm$s]}" \
    same_tree "$DATA/nodes/${OTHER_NODE[rm$s]}${OTHER_PATH[rm$s]}" "$WORK/src/olddata"
  # Deleted: the object stays (its finalizer) and says what it waits for; the copy nobody
  # reads does not wait.
  local want
  want="deleting: volume data: removing 1 copies; $(held_note "del$s")"
  if wait_for 60 eval "[ \"\$(jp del$s '{.status.message}')\" = \"$want\" ]"; then ok "$r del$s: the deleted VolumeManager stays, its message \"$want\""
  else not_ok "$r del$s: the deleted VolumeManager stays, its message \"$want\"" "$(k get vckvm "del$s" -o yaml | tail -n 30)"; fi
  check "$r del$s: kubectl get still lists it (Terminating, with its finalizer)" \
    eval "[ -n \"\$(jp del$s '{.metadata.deletionTimestamp}')\" ] && jp del$s '{.metadata.finalizers}' | grep -q vck.intelai.org/cleanup"
  if wait_for 60 eval "! on_node ${OTHER_NODE[del$s]} ${OTHER_PATH[del$s]}"; then ok "$r del$s: its other copy, which no pod reads, is removed meanwhile"
  else not_ok "$r del$s: its other copy, which no pod reads, is removed meanwhile" "$(copies "del$s")"; fi
  for v in rep$s rm$s del$s url$s; do
    local n; n=$(event_count "$v" RemovalWaits "it is removed when pod h-$v ends")
    # A SIGKILL between the record's write and the event's may lose the event, never repeat it.
    if [ -z "$s" ]; then check "$r $v: one RemovalWaits event says it is removed when pod h-$v ends" test "$n" = 1
    else check "$r $v: at most one RemovalWaits event for h-$v across the restarts ($n)" test "$n" -le 1; fi
  done
}

# After the change: new pods get data (no webhook here: made from the status as injection would).
check_new_pods() { # check_new_pods SUFFIX ROUND
  local s=$1 r=$2
  reader_pod "new-url$s" "url$s" data newdata
  reader_pod "new-rep$s" "rep$s" data olddata
  if wait_for 90 phase_is "new-url$s" Succeeded; then ok "$r url$s: a pod created after the change reads the new data"
  else not_ok "$r url$s: a pod created after the change reads the new data" "$(cat "$WORK/pod-new-url$s.log"; logs_of "new-url$s"; k get pod "new-url$s" -o yaml | tail -n 20)"; fi
  if wait_for 90 phase_is "new-rep$s" Succeeded; then ok "$r rep$s: a pod created after the change reads a whole copy"
  else not_ok "$r rep$s: a pod created after the change reads a whole copy" "$(cat "$WORK/pod-new-rep$s.log"; logs_of "new-rep$s"; k get pod "new-rep$s" -o yaml | tail -n 20)"; fi
  check "$r rep$s: it was placed on the replica kept (${OTHER_NODE[rep$s]}), not on the one going" \
    test "$(k get pod "new-rep$s" -o 'jsonpath={.spec.nodeName}')" = "${OTHER_NODE[rep$s]}"
}

release() { local v; for v in "$@"; do touch "$WORK/release-h-$v"; done; }
check_ended() { # check_ended SUFFIX ROUND: the holders were released
  local s=$1 r=$2 v
  for v in rep$s rm$s del$s url$s; do
    if wait_for 60 phase_is "h-$v" Succeeded && logs_of "h-$v" | grep -q '^whole in' && ! logs_of "h-$v" | grep -q MISSING; then ok "$r $v: h-$v read its old data whole until it ended ($(logs_of "h-$v" | tail -n 1))"
    else not_ok "$r $v: h-$v read its old data whole until it ended" "$(logs_of "h-$v" | tail -n 3; k get pod "h-$v" -o yaml | tail -n 20)"; fi
  done
}
check_gone() { # check_gone SUFFIX ROUND: once the holders ended, the old copies go
  local s=$1 r=$2 v
  for v in rep$s rm$s del$s url$s; do
    if wait_for 90 eval "! on_node ${NODE[$v]} ${PATH_[$v]}"; then ok "$r $v: once h-$v ended, the old directory is removed from ${NODE[$v]}"
    else not_ok "$r $v: once h-$v ended, the old directory is removed from ${NODE[$v]}" "$(copies "$v"; vm_row "$v")"; fi
    if [[ $v == rep* ]]; then  # same config: the kept replica's node keeps its label
      check "$r $v: and ${NODE[$v]} carries no label for it (${OTHER_NODE[$v]}, the replica kept, does)" \
        eval "[ -z \"\$(label_of ${NODE[$v]} $v data)\" ] && [ \"\$(label_of ${OTHER_NODE[$v]} $v data)\" = ${CONFIG[$v]} ]"
    else
      check "$r $v: and no node carries its old data's label" \
        test -z "$(leftovers | grep -F "\"vck.intelai.org/default.$v.$(volume_of "$v")\":\"${CONFIG[$v]}\"")"
    fi
    check "$r $v: h-$v was never told DataLost" test -z "$(events_of "h-$v" DataLost)"
  done
  if wait_for 60 gone "del$s"; then ok "$r del$s: the deleted VolumeManager goes"
  else not_ok "$r del$s: the deleted VolumeManager goes" "$(k get vckvm "del$s" -o yaml | tail -n 30)"; fi
  check "$r rep$s: its kept replica is still whole on ${OTHER_NODE[rep$s]}" \
    same_tree "$DATA/nodes/${OTHER_NODE[rep$s]}${OTHER_PATH[rep$s]}" "$WORK/src/olddata"
  check "$r rep$s, rm$s, url$s: Running, with no old copy left" \
    wait_for 30 eval "vm_row rep$s | grep -q 'Running.*successfully deployed all sub-resources *[0-9]' && vm_row rm$s | grep -q 'Running.*successfully deployed all sub-resources *[0-9]' && vm_row url$s | grep -q 'Running.*successfully deployed all sub-resources *[0-9]'"
}

# ---- round 1: the controller runs throughout ----
t0=$SECONDS
for v in rep rm del url; do change "$v"; done
check_held "" "running:"
check_new_pods "" "running:"
release rep rm del url
check_ended "" "running:"
check_gone "" "running:"
echo "# round 1 took $((SECONDS - t0)) s"

# ---- round 2: SIGKILLed right after the change, while the copies are held, and before the holders end ----
t0=$SECONDS
for v in rep-k rm-k del-k url-k; do change "$v"; done
kill_controller
# How far the killed controller got with each change (diagnostics: the kill lands at some point).
for v in rep-k rm-k del-k url-k; do
  echo "# at the kill: $v observed generation $(jp "$v" '{.status.observedGeneration}') of $(jp "$v" '{.metadata.generation}'): $(jp "$v" '{.status.message}')"
done
start_controller
controller_ready || bail "vck-controller did not start again" "$(tail -n 20 "$WORK/controller.log")"
check_held -k "killed after the change:"
kill_controller
start_controller
controller_ready || bail "vck-controller did not start again" "$(tail -n 20 "$WORK/controller.log")"
sleep 4  # a restarted controller's first passes find the holds in the record
for v in rep-k rm-k del-k url-k; do
  check "restarted while held: $v's held copy is still whole on ${NODE[$v]}" same_tree "$DATA/nodes/${NODE[$v]}${PATH_[$v]}" "$WORK/src/olddata"
  check "restarted while held: its entry still says \"$(kept_msg "$v")\"" is_held "$v"
done
check_new_pods -k "killed:"
# The holders end while no controller runs: it finds them finished when it starts.
kill_controller
release rep-k rm-k del-k url-k
check_ended -k "killed, ended while down:"
start_controller
controller_ready || bail "vck-controller did not start again" "$(tail -n 20 "$WORK/controller.log")"
check_gone -k "killed, ended while down:"
echo "# round 2 took $((SECONDS - t0)) s"

# ---- everything deleted: nothing left ----
for v in rep rm del url rep-k rm-k del-k url-k; do k delete pod "h-$v" --wait=false >/dev/null 2>&1; done
k delete pod new-url new-rep new-url-k new-rep-k --wait=false >/dev/null 2>&1
k delete vckvm --all --wait=false >/dev/null 2>&1
stuck=""
for v in rep rm url rep-k rm-k url-k; do wait_for 120 gone "$v" || stuck+=" $v"; done
check "deleting the VolumeManagers finishes${stuck:+ (stuck:$stuck)}" test -z "$stuck"
if wait_for 60 nothing_left; then ok "vck leaves nothing behind: no data directory, node label, pod, PV or claim"
else not_ok "vck leaves nothing behind: no data directory, node label, pod, PV or claim" "$(leftovers)"; fi

tap_end
