#!/usr/bin/env bash
# Peer fill end to end: vck-controller in vck-sandbox (4 nodes whose kubelet runs vck-fetch as
# host processes, each pod on a loopback address of its own) against s3rver behind
# tests/e2e/throttle_proxy.py, which counts the bytes the store sends (a fresh proxy per
# scenario). Each scenario is one VolumeManager with one S3 volume of its own source prefix:
#   main   4 replicas: the store sends the dataset about once (<= 1.05), every copy is
#          byte-identical to the source, one download pod serves (--serve=) and the others pull
#          from its address (--peer=), status.copies[] says bytesFromStore and bytesFromPeers
#          (their sum the copy's bytes; at least 3 copies with peer bytes; kubectl describe
#          prints "Bytes From Peers")
#   off    4 replicas with options.peerFill "false": every replica reads the store (>= 3.5 x
#          the dataset), no pod has --peer= or --serve=
#   dist   3 replicas, distributionStrategy {"*.a": 2, "*.b": 1}: each copy holds exactly its
#          subset, the *.a replicas fill each other, the *.b one neither pulls nor serves, and
#          the store sends each object once
#   kill-pod, kill-proc   3 replicas, the store throttled: mid-fill the serving copy is lost
#          (its pod deleted; its host process SIGKILLed); the VolumeManager still reaches
#          Running, every copy ends byte-identical, the pullers finish from the store, and a
#          reader scanning every copy directory every ~20 ms never sees a file whose size (or
#          MD5) differs from the source's
#   corrupt  2 replicas, the serving copy sending every file with a byte flipped (a test
#          hook): the puller refuses each one for its MD5 and takes it from the store; every
#          copy byte-identical and no wrong file ever visible to the reader
#   intr   2 replicas, the store throttled: while a copy serves, pods that are not the
#          volume's pullers ask it for a file with curl: without a certificate and with another
#          volume's peer Secret they get nothing (no status, 0 bytes); a pod mounting this
#          volume's own Secret (the control: the Secret is the key, and RBAC on Secrets decides
#          who may mount it) gets the file
# Usage: peer_fill_e2e_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
# Prints TAP lines; exits non-zero if any check failed. Stops everything it started.
set -u
# shellcheck source=../lifecycle/lib.sh
. "$(dirname "$(realpath "$0")")/../lifecycle/lib.sh"
harness_init peer-fill-e2e "$@"
SPELLING=current   # capacity 1Gi

# ---- datasets ----
start_s3rver
# main: 150 files of 16 KiB under small/ and 2 of 4 MiB, about 10.3 MiB
SRC=$WORK/src/main
mkdir -p "$SRC/small"
for i in $(seq -w 1 150); do head -c $((16 * 1024)) /dev/urandom >"$SRC/small/f-$i.bin"; done
for i in 1 2; do head -c $((4 * 1024 * 1024)) /dev/urandom >"$SRC/large-$i.bin"; done
DATASET=$(bytes_under "$SRC")
FILES=$(find "$SRC" -type f | wc -l)
# dist: 60 *.a files of 16 KiB and one of 2 MiB, 30 *.b files of 16 KiB and one of 1 MiB
DSRC=$WORK/src/dist
mkdir -p "$DSRC"
for i in $(seq -w 1 60); do head -c $((16 * 1024)) /dev/urandom >"$DSRC/part-$i.a"; done
head -c $((2 * 1024 * 1024)) /dev/urandom >"$DSRC/large.a"
for i in $(seq -w 1 30); do head -c $((16 * 1024)) /dev/urandom >"$DSRC/part-$i.b"; done
head -c $((1024 * 1024)) /dev/urandom >"$DSRC/large.b"
A_BYTES=$(find "$DSRC" -type f -name '*.a' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
B_BYTES=$(find "$DSRC" -type f -name '*.b' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
seed_from() { # seed_from DIR PREFIX: uploaded from a copy (vck-fetch keeps its state beside what it syncs)
  rm -rf "$WORK/upload" "$WORK/upload.vck-fetch" && cp -r "$1" "$WORK/upload" && seed "$WORK/upload" "s3://data/$2/" &&
    rm -rf "$WORK/upload" "$WORK/upload.vck-fetch"
}
# Each scenario reads a prefix of its own: its pods and processes are told apart by it.
for p in pf-main pf-off pf-kill-pod pf-kill-proc pf-intr pf-corrupt; do seed_from "$SRC" "$p"; done
seed_from "$DSRC" pf-dist
echo "# datasets: main $FILES files, $DATASET bytes; dist *.a $A_BYTES bytes, *.b $B_BYTES bytes"

# ---- the cluster and the controller ----
# The download pods run vck-fetch through a wrapper that is the corrupt scenario's test hook:
# a serving vck-fetch of the prefix pf-corrupt/ flips a byte of every file it sends
# (VCK_FETCH_TEST_CORRUPT_PEER, fetch/peer_server.hpp), and every run of that prefix also
# writes its output to $WORK/corrupt-fetch.PID.log, which outlives the pod and its logs;
# every other run is vck-fetch as is.
cat >"$WORK/fetch-hook" <<SH
#!/bin/bash
case " \$* " in *" s3://data/pf-corrupt/ "*)
  case " \$*" in *" --serve="*) export VCK_FETCH_TEST_CORRUPT_PEER=1 ;; esac
  exec "$FETCH" "\$@" > >(tee -a "$WORK/corrupt-fetch.\$\$.log") 2> >(tee -a "$WORK/corrupt-fetch.\$\$.log" >&2) ;;
esac
exec "$FETCH" "\$@"
SH
chmod 0755 "$WORK/fetch-hook"
# vck-test/curl: the intruders' image (curl run as a host process on a pod address of its own).
FETCH=$WORK/fetch-hook start_sandbox 4 --image "vck-test/curl=exec:$(command -v curl)"
start_controller
controller_ready || bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"
ok "vck-controller is ready on a 4-node vck-sandbox"
if controller_has_flag --peer-fill; then echo "# this vck-controller has --peer-fill"
else echo "# this vck-controller has no --peer-fill: the peer fill checks are expected to fail"; fi

# ---- every version of every pod, for their arguments: "NAME|VCKNAME|IP|ARGS" ----
# kubectl itself is restarted when its watch ends; the loop stops it on SIGTERM.
: >"$WORK/pods.watch"
(
  trap 'kill "$kp" 2>/dev/null; wait "$kp" 2>/dev/null; exit 0' TERM
  kp=""
  while :; do
    "$KUBECTL" --kubeconfig "$WORK/kubeconfig" get pods -w -o \
      'jsonpath={.metadata.name}{"|"}{.metadata.labels.vckname}{"|"}{.status.podIP}{"|"}{.spec.containers[*].args}{"\n"}' \
      >>"$WORK/pods.watch" 2>>"$WORK/pods.watch.err" &
    kp=$!
    wait "$kp"
    sleep 0.5
  done
) &
PIDS+=($!)

# ---- helpers ----
# start_proxy NAME RATE: a fresh throttle_proxy.py in front of s3rver (RATE bytes/s, 0: no
# limit) counting what the store sends into $WORK/NAME.count; sets PROXY and COUNT.
start_proxy() {
  local port; port=$(free_port)
  COUNT=$WORK/$1.count
  "$PYTHON" "$ROOT/tests/e2e/throttle_proxy.py" "$port" 127.0.0.1 "${ENDPOINT##*:}" "$2" "$COUNT" \
    >"$WORK/proxy-$1.log" 2>&1 &
  PIDS+=($!)
  PROXY=http://127.0.0.1:$port
  wait_for 30 grep -q listening "$WORK/proxy-$1.log" || bail "the proxy for $1 did not start" "$(cat "$WORK/proxy-$1.log")"
}
store_bytes() { cat "$1" 2>/dev/null || echo 0; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }
between() { awk -v s="$1" -v d="$2" -v f="$3" 'BEGIN { exit !(d > 0 && s >= d && s <= f * d) }'; }  # between SENT DATASET FACTOR
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
# apply_vm NAME REPLICAS ENDPOINT OPTION-LINES: the VolumeManager with one S3 volume "data"
apply_vm() {
  local S3=$ENDPOINT
  ENDPOINT=$3
  vm "$1" "$(s3vol data "$2" "$4")"
  local rc=$?
  ENDPOINT=$S3
  [ "$rc" -eq 0 ] || bail "applying $1 failed" "$(cat "$WORK/last-apply.log")"
}
# wait_running NAME SECONDS: until status.state is Running; false after SECONDS, or once it
# has been Failed for 30 s on end (a copy out of attempts: it stays so)
wait_running() {
  local end=$((SECONDS + $2)) failed_since="" s
  while [ "$SECONDS" -lt "$end" ]; do
    s=$(jp "$1" '{.status.state}')
    [ "$s" = Running ] && return 0
    if [ "$s" = Failed ]; then
      [ -n "$failed_since" ] || failed_since=$SECONDS
      [ $((SECONDS - failed_since)) -ge 30 ] && return 1
    else failed_since=""; fi
    sleep 0.3
  done
  return 1
}
ready_dirs() { # ready_dirs NAME: the host directories of its Ready copies, one a line
  jp "$1" '{range .status.copies[?(@.phase=="Ready")]}{.node}{" "}{.path}{"\n"}{end}' |
    awk -v d="$DATA/nodes/" 'NF == 2 { print d $1 $2 }'
}
all_dirs() { # all_dirs NAME: the host directories of all its copy records
  jp "$1" '{range .status.copies[*]}{.node}{" "}{.path}{"\n"}{end}' | awk -v d="$DATA/nodes/" 'NF == 2 { print d $1 $2 }'
}
# identical NAME SRC REPLICAS: as many Ready copies as replicas, on distinct nodes, each
# byte-identical with SRC (diff -r, nothing excluded); prints why not
identical() {
  local dirs n=0 same=0 d nodes
  dirs=$(ready_dirs "$1")
  nodes=$(jp "$1" '{range .status.copies[?(@.phase=="Ready")]}{.node}{"\n"}{end}' | sort -u | grep -c .)
  for d in $dirs; do
    n=$((n + 1))
    if diff -r "$2" "$d" >/dev/null 2>&1; then same=$((same + 1)); else echo "$d differs: $(diff -rq "$2" "$d" 2>&1 | head -n 3)"; fi
  done
  [ "$n" = "$3" ] && [ "$same" = "$3" ] && [ "$nodes" = "$3" ] || { echo "$n Ready copies on $nodes nodes, $same identical; want $3"; return 1; }
}
active_pods() { # active_pods NAME: how many of its pods are Pending or Running
  k get pods -l "vckname=$1" -o 'jsonpath={range .items[*]}{.status.phase}{"\n"}{end}' 2>/dev/null | grep -c -E '^(Pending|Running)$'
}
# wait_ended NAME: until none of its pods is Pending or Running (a serving pod lingers a
# little after its copy is Ready), at most 60 s; then the proxy's count is final
wait_ended() {
  wait_for 60 test "$(active_pods "$1")" = 0
  sleep 0.5   # the proxy writes its count when each connection ends
}
# copy_fields NAME: per copy record "replica node phase bytesTotal bytesFromStore bytesFromPeers" (- when absent)
copy_fields() {
  k get vckvm "$1" -o json 2>/dev/null | "$PYTHON" -c '
import json, sys
for c in json.load(sys.stdin).get("status", {}).get("copies", []):
    print(c.get("replica", "-"), c.get("node", "-"), c.get("phase", "-"), c.get("bytesTotal", "-"),
          c.get("bytesFromStore", "-"), c.get("bytesFromPeers", "-"))'
}
# wait_fields NAME REPLICAS: until REPLICAS Ready copies all have bytesFromStore and
# bytesFromPeers; at most 60 s, and no longer than 10 s once none of its pods runs
wait_fields() {
  local end=$((SECONDS + 60)) idle_since=""
  while [ "$SECONDS" -lt "$end" ]; do
    [ "$(copy_fields "$1" | awk '$3 == "Ready" && $5 != "-" && $6 != "-"' | wc -l)" -ge "$2" ] && return 0
    if [ "$(active_pods "$1")" = 0 ]; then
      [ -n "$idle_since" ] || idle_since=$SECONDS
      [ $((SECONDS - idle_since)) -ge 10 ] && return 1
    else idle_since=""; fi
    sleep 0.5
  done
  return 1
}
# pod_args NAME: per pod of the VolumeManager NAME ever seen by the watch, one JSON line
# {"pod", "ip", "include", "serve", "peers": [...], "fetch": bool}
pod_args() {
  "$PYTHON" - "$WORK/pods.watch" "$1" <<'PY'
import json, re, sys
pods = {}
for line in open(sys.argv[1], errors="replace"):
    f = line.rstrip("\n").split("|", 3)
    if len(f) < 4 or f[1] != sys.argv[2]:
        continue
    p = pods.setdefault(f[0], {"pod": f[0], "ip": "", "args": set()})
    if f[2]:
        p["ip"] = f[2]
    p["args"].update(re.findall(r'"((?:[^"\\]|\\.)*)"', f[3]))
for p in pods.values():
    a = p.pop("args")
    p["fetch"] = "fetch" in a
    p["include"] = sorted(x[len("--include="):] for x in a if x.startswith("--include="))
    p["serve"] = sorted(x for x in a if x.startswith("--serve="))
    p["peers"] = sorted(x[len("--peer="):] for x in a if x.startswith("--peer="))
    print(json.dumps(p))
PY
}

# ======== main: 4 replicas fill each other; the store sends the dataset once ========
start_proxy main 0
apply_vm pf-main 4 "$PROXY" '      sourceURL: s3://data/pf-main/'
if wait_running pf-main 240; then ok "main: 4 replicas reach Running"
else not_ok "main: 4 replicas reach Running" "$(jp pf-main '{.status.state} {.status.message}'; tail -n 5 "$WORK/controller.log")"; fi
if out=$(identical pf-main "$SRC" 4); then ok "main: 4 Ready copies on 4 nodes, each byte-identical with the source"
else not_ok "main: 4 Ready copies on 4 nodes, each byte-identical with the source" "$out"; fi
# Where the copies live on a node (for the readers of the kill scenarios below).
COPY_ROOT=$(jp pf-main '{.status.copies[0].path}'); COPY_ROOT=${COPY_ROOT%/*}; COPY_ROOT=${COPY_ROOT:-/var/datasets}
fields_ok=0; wait_fields pf-main 4 && fields_ok=1
wait_ended pf-main
sent=$(store_bytes "$COUNT")
echo "# main: the store sent $sent bytes for a $DATASET-byte dataset on 4 replicas: $(ratio "$sent" "$DATASET") x"
# At least once: the dataset has to leave the store for the copies to exist.
check "main: the store sends the dataset once: 1 <= store bytes / dataset bytes <= 1.05 ($(ratio "$sent" "$DATASET"))" \
  between "$sent" "$DATASET" 1.05
args=$(pod_args pf-main)
served=$("$PYTHON" - "$args" <<'PY'
import json, sys
pods = [json.loads(l) for l in sys.argv[1].splitlines() if l.strip()]
pods = [p for p in pods if p["fetch"]]
# Every attempt of replica 0 serves; the others pull from the address of one of them.
servers = [p for p in pods if p["serve"]]
urls = {f"https://{p['ip']}:7443" for p in servers if p["ip"]}
pullers = [p for p in pods if not p["serve"] and set(p["peers"]) & urls]
bad = []
if not servers:
    bad.append(f"0 of {len(pods)} download pods have --serve=")
if len({p["pod"] for p in pullers}) < 3:
    bad.append(f"{len(pullers)} download pods pull (--peer=) from a serving pod's address; want 3")
print("; ".join(bad))
PY
)
check "main: one download pod serves (--serve=) and the three others pull from its address (--peer=https://IP:7443)" test -z "$served"
[ -z "$served" ] || echo "#   $served"
fields=$(copy_fields pf-main)
sed 's/^/#   copy: replica node phase bytesTotal bytesFromStore bytesFromPeers: /' <<<"$fields"
check "main: each Ready copy's status has bytesFromStore and bytesFromPeers once its pod ended" test "$fields_ok" = 1
check "main: each copy's bytesFromStore + bytesFromPeers is its bytes, the dataset's $DATASET" \
  test "$(awk -v d="$DATASET" '$3 == "Ready" && $5 != "-" && $6 != "-" && $5 + $6 == $4 && $4 == d' <<<"$fields" | wc -l)" = 4
from_store=$(awk '$3 == "Ready" && $5 != "-" { s += $5 } END { print s + 0 }' <<<"$fields")
with_peer=$(awk '$3 == "Ready" && $6 != "-" && $6 > 0' <<<"$fields" | wc -l)
check "main: the copies' bytesFromStore sum to at most 1.05 x the dataset ($from_store; fields present: $fields_ok)" \
  test "$fields_ok" = 1 -a "$(le "$from_store" "$(awk -v d="$DATASET" 'BEGIN { printf "%d", 1.05 * d }')" && echo y)" = y
check "main: at least 3 copies took bytes from peers ($with_peer)" test "$with_peer" -ge 3
check "main: kubectl describe prints Bytes From Peers" grep -q "Bytes From Peers" <<<"$(k describe vckvm pf-main 2>&1)"
# Which peer: every copy that took peer bytes names, in bytesByPeer, the node of the serving
# copy (the one that took nothing from peers) and as many bytes as its bytesFromPeers.
by_peer=$(k get vckvm pf-main -o json 2>/dev/null | "$PYTHON" -c '
import json, sys
copies = [c for c in json.load(sys.stdin).get("status", {}).get("copies", []) if c.get("phase") == "Ready"]
roots = {c["node"] for c in copies if c.get("bytesFromPeers") == 0}
bad, named = [], 0
for c in copies:
    if not c.get("bytesFromPeers"):
        continue
    by, node, peers = c.get("bytesByPeer", []), c["node"], c["bytesFromPeers"]
    if sum(b.get("bytes", 0) for b in by) != peers:
        bad.append(f"{node}: bytesByPeer {by} does not sum to bytesFromPeers {peers}")
    elif not all(b.get("node") in roots and b.get("address", "").startswith("https://") for b in by):
        bad.append(f"{node}: bytesByPeer {by} names a node other than the serving copy ({sorted(roots)})")
    else:
        named += 1
print(named, "; ".join(bad))')
read -r named_peers by_peer_bad <<<"$by_peer"
check "main: each puller's bytesByPeer names the serving copy's node with its bytesFromPeers ($named_peers copies${by_peer_bad:+: $by_peer_bad})" \
  test "${named_peers:-0}" -ge 3 -a -z "$by_peer_bad"
check "main: kubectl describe prints Bytes By Peer" grep -q "Bytes By Peer" <<<"$(k describe vckvm pf-main 2>&1)"

# ======== off: options.peerFill "false": every replica reads the store ========
start_proxy off 0
apply_vm pf-off 4 "$PROXY" '      sourceURL: s3://data/pf-off/
      peerFill: "false"'
if wait_running pf-off 240; then ok "peerFill false: 4 replicas reach Running"
else not_ok "peerFill false: 4 replicas reach Running" "$(jp pf-off '{.status.state} {.status.message}'; cat "$WORK/last-apply.log")"; fi
if out=$(identical pf-off "$SRC" 4); then ok "peerFill false: 4 copies, each byte-identical with the source"
else not_ok "peerFill false: 4 copies, each byte-identical with the source" "$out"; fi
wait_ended pf-off
sent=$(store_bytes "$COUNT")
check "peerFill false: every replica reads the store: store bytes / dataset >= 3.5 ($(ratio "$sent" "$DATASET"))" \
  ge "$sent" "$(awk -v d="$DATASET" 'BEGIN { printf "%d", 3.5 * d }')"
args=$(pod_args pf-off)
n_fetch=$(grep -c '"fetch": true' <<<"$args")
n_peer=$(grep -c -E '"(serve|peers)": \["' <<<"$args")
check "peerFill false: none of its $n_fetch download pods (4 or more seen) has --peer= or --serve=" \
  test "$n_fetch" -ge 4 -a "$n_peer" = 0

# ======== dist: replicas of different distributionStrategy subsets never pull from each other ========
start_proxy dist 0
apply_vm pf-dist 3 "$PROXY" '      sourceURL: s3://data/pf-dist/
      distributionStrategy: "{\"*.a\": 2, \"*.b\": 1}"'
if wait_running pf-dist 240; then ok "distributionStrategy: 3 replicas reach Running"
else not_ok "distributionStrategy: 3 replicas reach Running" "$(jp pf-dist '{.status.state} {.status.message}')"; fi
want_a=$(cd "$DSRC" && find . -type f -name '*.a' | sort) want_b=$(cd "$DSRC" && find . -type f -name '*.b' | sort)
n_a=0 n_b=0 why=""
for d in $(ready_dirs pf-dist); do
  got=$(cd "$d" && find . -type f | sort)
  if [ "$got" = "$want_a" ] && diff -r -x '*.b' "$DSRC" "$d" >/dev/null 2>&1; then n_a=$((n_a + 1))
  elif [ "$got" = "$want_b" ] && diff -r -x '*.a' "$DSRC" "$d" >/dev/null 2>&1; then n_b=$((n_b + 1))
  else why+="$d holds $(wc -l <<<"$got") files, neither exactly the *.a nor the *.b ones; "; fi
done
check "distributionStrategy: two copies hold exactly the *.a files and one exactly the *.b files, byte-identical ($n_a, $n_b)" \
  test "$n_a$n_b" = 21
[ -z "$why" ] || echo "#   $why"
wait_ended pf-dist
sent=$(store_bytes "$COUNT")
echo "# distributionStrategy: the store sent $sent bytes for *.a ($A_BYTES) + *.b ($B_BYTES) on 2 + 1 replicas"
check "distributionStrategy: the store sends each object once: 1 <= store bytes / (a + b bytes) <= 1.05 ($(ratio "$sent" $((A_BYTES + B_BYTES))))" \
  between "$sent" $((A_BYTES + B_BYTES)) 1.05
groups=$("$PYTHON" - "$(pod_args pf-dist)" <<'PY'
import json, sys
pods = [json.loads(l) for l in sys.argv[1].splitlines() if l.strip()]
pods = [p for p in pods if p["fetch"]]
a = [p for p in pods if p["include"] == ["*.a"]]
b = [p for p in pods if p["include"] == ["*.b"]]
bad = []
if len(a) < 2 or len(b) < 1:
    bad.append(f"{len(a)} *.a and {len(b)} *.b download pods seen")
a_servers = [p for p in a if p["serve"]]
urls = {f"https://{p['ip']}:7443" for p in a_servers if p["ip"]}
if not a_servers:
    bad.append("no *.a pod serves")
elif not any(set(p["peers"]) & urls for p in a if not p["serve"]):
    bad.append(f"no other *.a pod pulls from a serving *.a pod ({sorted(urls)})")
a_urls = {f"https://{p['ip']}:7443" for p in a}
for p in a:
    if set(p["peers"]) - a_urls:
        bad.append(f"*.a pod {p['pod']} pulls from {sorted(set(p['peers']) - a_urls)}, not an *.a pod")
for p in b:
    if p["peers"] or p["serve"]:
        bad.append(f"*.b pod {p['pod']} has peers {p['peers']} serve {p['serve']}")
print("; ".join(bad))
PY
)
check "distributionStrategy: the second *.a replica pulls from the first, and the *.b replica neither pulls nor serves" test -z "$groups"
[ -z "$groups" ] || echo "#   $groups"

# ======== kill-pod, kill-proc: the serving copy lost mid-fill ========
# The reader: every ~20 ms, every file visible in a copy directory that appeared after it
# started, against the source (its size every scan, its MD5 whenever its inode, size or
# mtime changed); anything else visible there is also wrong.
cat >"$WORK/reader.py" <<'PY'
import glob, hashlib, json, os, sys, time
src, pattern, stop, report, ready = sys.argv[1:6]

def md5(path):
    h = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()

want = {}
for d, _, names in os.walk(src):
    for n in names:
        p = os.path.join(d, n)
        want[os.path.relpath(p, src)] = (os.path.getsize(p), md5(p))

def copies():
    return [d for d in glob.glob(pattern) if not d.endswith(".vck-fetch") and os.path.isdir(d)]

before = set(copies())
seen, bad, scans, dirs, files = {}, [], 0, set(), 0

def scan():
    global files
    for cd in copies():
        if cd in before:
            continue
        dirs.add(cd)
        for d, _, names in os.walk(cd):
            for n in names:
                p = os.path.join(d, n)
                rel = os.path.relpath(p, cd)
                if rel not in want:
                    bad.append(f"{p}: not a file of the source")
                    continue
                try:
                    st = os.lstat(p)
                    if st.st_size != want[rel][0]:
                        bad.append(f"{p}: visible with {st.st_size} bytes, the source's has {want[rel][0]}")
                        continue
                    key = (st.st_ino, st.st_size, st.st_mtime_ns)
                    if seen.get(p) != key:
                        files += 1
                        if md5(p) != want[rel][1]:
                            bad.append(f"{p}: visible with other bytes than the source's")
                        seen[p] = key
                except FileNotFoundError:
                    pass  # gone between the listing and the look: nothing visible to check

open(ready, "w").close()
while not os.path.exists(stop):
    scan()
    scans += 1
    time.sleep(0.02)
scan()
scans += 1
json.dump({"scans": scans, "dirs": len(dirs), "files": files, "bad": sorted(set(bad))}, open(report, "w"))
PY
RATE=$((768 * 1024))   # the store's bytes/s: the serving copy alone fills in about 14 s
# kill_scenario MODE: MODE pod deletes the serving copy's pod, proc SIGKILLs its vck-fetch
kill_scenario() {
  local mode=$1 name=pf-kill-$1 url=s3://data/pf-kill-$1/ tag="serving copy lost ($1)" rpid end victim
  start_proxy "kill-$mode" "$RATE"
  rm -f "$WORK/$name.stop" "$WORK/$name.ready" "$WORK/$name.report"
  "$PYTHON" "$WORK/reader.py" "$SRC" "$DATA/nodes/*$COPY_ROOT/vck-resource-*" "$WORK/$name.stop" \
    "$WORK/$name.report" "$WORK/$name.ready" 2>"$WORK/$name.reader.err" &
  rpid=$!
  PIDS+=("$rpid")
  wait_for 30 test -e "$WORK/$name.ready" || bail "$tag: the reader did not start" "$(cat "$WORK/$name.reader.err")"
  apply_vm "$name" 3 "$PROXY" "      sourceURL: $url"
  # Mid-fill: its 3 download pods Running, every copy directory holding some files.
  mid() {
    [ "$(k get pods -l "vckname=$name" -o 'jsonpath={range .items[*]}{.status.phase}{"\n"}{end}' 2>/dev/null | grep -c '^Running$')" -ge 3 ] || return 1
    local dirs d; dirs=$(all_dirs "$name")
    [ "$(grep -c . <<<"$dirs")" -ge 3 ] || return 1
    for d in $dirs; do [ "$(find "$d" -type f 2>/dev/null | wc -l)" -ge 8 ] || return 1; done
  }
  wait_for 120 mid || echo "# $tag: not every copy had files 120 s in (pods: $(active_pods "$name") active)"
  # The victim: the download pod serving its copy; without one, replica 0's (for the rest).
  victim=$(k get pods -l "vckname=$name" -o json 2>/dev/null | "$PYTHON" -c '
import json, sys
copies = {}
pods = [p for p in json.load(sys.stdin)["items"] if p["status"].get("phase") == "Running"
        and any("fetch" in (c.get("args") or []) for c in p["spec"]["containers"])]
def args(p): return [a for c in p["spec"]["containers"] for a in (c.get("args") or [])]
serving = [p for p in pods if any(a.startswith("--serve=") for a in args(p))]
pick = serving or sorted(pods, key=lambda p: p["metadata"]["name"])
if pick:
    p = pick[0]
    print("serving" if serving else "replica", p["metadata"]["name"], p["spec"].get("nodeName", ""),
          p["metadata"].get("annotations", {}).get("vck.intelai.org/copy-path", ""))')
  read -r kind vpod vnode vpath <<<"$victim"
  if [ "${kind:-}" = serving ]; then ok "$tag: a download pod serves its copy (--serve=): $vpod"
  else not_ok "$tag: a download pod serves its copy (--serve=)" "none; losing the pod ${vpod:-?} instead, for the rest"; fi
  local vdir=$DATA/nodes/${vnode:-none}${vpath:-/none} had=0 others=0 d
  had=$(bytes_under "$vdir")
  for d in $(all_dirs "$name"); do [ "$d" = "$vdir" ] || others=$((others + $(find "$d" -type f | wc -l))); done
  local killed=""
  if [ -n "${vpod:-}" ]; then
    if [ "$mode" = pod ]; then
      k delete pod "$vpod" --wait=false >/dev/null 2>&1 && killed="pod $vpod deleted"
    else
      local pid
      pid=$(pgrep -f -- "fetch $url .*--serve=" | head -n 1)
      [ -n "$pid" ] || pid=$(pgrep -f -- "fetch $url $vdir " | head -n 1)
      if [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; then
        killed="vck-fetch $pid SIGKILLed"
        wait_for 10 sh -c "! kill -0 $pid" || killed+=" (still there 10 s later)"
      fi
    fi
  fi
  check "$tag: lost mid-fill ($killed): its copy held $had of $DATASET bytes, the 2 others $others files" \
    test -n "$killed" -a "$had" -lt "$DATASET" -a "$others" -gt 0
  if wait_running "$name" 300; then ok "$tag: the VolumeManager still reaches Running"
  else not_ok "$tag: the VolumeManager still reaches Running" "$(jp "$name" '{.status.state} {.status.message}'; copy_fields "$name")"; fi
  touch "$WORK/$name.stop"
  end=$((SECONDS + 60)); while kill -0 "$rpid" 2>/dev/null && [ "$SECONDS" -lt "$end" ]; do sleep 0.1; done
  if out=$(identical "$name" "$SRC" 3); then ok "$tag: 3 copies, each byte-identical with the source"
  else not_ok "$tag: 3 copies, each byte-identical with the source" "$out"; fi
  local rep; rep=$("$PYTHON" -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r["scans"], r["dirs"], r["files"], len(r["bad"]))
for b in r["bad"][:10]: print(b)' "$WORK/$name.report" 2>&1)
  local scans dirs files nbad
  read -r scans dirs files nbad <<<"$(head -n 1 <<<"$rep")"
  echo "# $tag: the reader made ${scans:-0} scans of ${dirs:-0} copy directories, ${files:-0} file versions checked"
  if [ "${nbad:-x}" = 0 ] && [ "${scans:-0}" -gt 1 ] && [ "${dirs:-0}" -ge 3 ]; then
    ok "$tag: no file of the wrong size or bytes was ever visible in a copy ($scans scans)"
  else not_ok "$tag: no file of the wrong size or bytes was ever visible in a copy" "$rep"; fi
  # The pullers (the copies not lost): part from the peer, the rest from the store.
  wait_fields "$name" 3 >/dev/null
  local fields; fields=$(copy_fields "$name")
  sed "s/^/#   copy: replica node phase bytesTotal bytesFromStore bytesFromPeers: /" <<<"$fields"
  local pulled
  pulled=$(awk -v n="$vnode" -v d="$DATASET" '$3 == "Ready" && $2 != n && $5 != "-" && $6 != "-" && $5 + $6 == d && $6 > 0 && $5 > 0' <<<"$fields" | wc -l)
  check "$tag: the 2 pullers took part from the peer and finished from the store ($pulled)" test "$pulled" -ge 2
  wait_ended "$name"
  echo "# $tag: the store sent $(store_bytes "$COUNT") bytes ($(ratio "$(store_bytes "$COUNT")" "$DATASET") x the dataset)"
}
kill_scenario pod
kill_scenario proc

# ======== corrupt: a peer that sends wrong bytes costs time, never correctness ========
start_proxy corrupt $((2 * 1024 * 1024))
rm -f "$WORK/pf-corrupt.stop" "$WORK/pf-corrupt.ready" "$WORK/pf-corrupt.report"
"$PYTHON" "$WORK/reader.py" "$SRC" "$DATA/nodes/*$COPY_ROOT/vck-resource-*" "$WORK/pf-corrupt.stop" \
  "$WORK/pf-corrupt.report" "$WORK/pf-corrupt.ready" 2>"$WORK/pf-corrupt.reader.err" &
rpid=$!
PIDS+=("$rpid")
wait_for 30 test -e "$WORK/pf-corrupt.ready" || bail "corrupt: the reader did not start" "$(cat "$WORK/pf-corrupt.reader.err")"
apply_vm pf-corrupt 2 "$PROXY" "      sourceURL: s3://data/pf-corrupt/"
# Until Running, the logs of its download pods are kept (they go once their copies are Ready).
end=$((SECONDS + 240)); running=0
while [ "$SECONDS" -lt "$end" ]; do
  for pod in $(k get pods -l vckname=pf-corrupt -o name 2>/dev/null); do
    k logs "$pod" -c fetch >"$WORK/corrupt.log.tmp" 2>/dev/null && [ -s "$WORK/corrupt.log.tmp" ] &&
      mv "$WORK/corrupt.log.tmp" "$WORK/corrupt-${pod#pod/}.log"
  done
  if [ "$(jp pf-corrupt '{.status.state}')" = Running ]; then running=1; break; fi
  sleep 0.5
done
if [ "$running" = 1 ]; then ok "corrupt peer: the VolumeManager reaches Running"
else not_ok "corrupt peer: the VolumeManager reaches Running" "$(jp pf-corrupt '{.status.state} {.status.message}'; copy_fields pf-corrupt)"; fi
touch "$WORK/pf-corrupt.stop"
end=$((SECONDS + 60)); while kill -0 "$rpid" 2>/dev/null && [ "$SECONDS" -lt "$end" ]; do sleep 0.1; done
if out=$(identical pf-corrupt "$SRC" 2); then ok "corrupt peer: 2 copies, each byte-identical with the source"
else not_ok "corrupt peer: 2 copies, each byte-identical with the source" "$out"; fi
rep=$("$PYTHON" -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r["scans"], r["dirs"], r["files"], len(r["bad"]))
for b in r["bad"][:10]: print(b)' "$WORK/pf-corrupt.report" 2>&1)
read -r scans dirs files nbad <<<"$(head -n 1 <<<"$rep")"
if [ "${nbad:-x}" = 0 ] && [ "${scans:-0}" -gt 1 ] && [ "${dirs:-0}" -ge 2 ]; then
  ok "corrupt peer: no file of the wrong size or bytes was ever visible in a copy ($scans scans, $files file versions)"
else not_ok "corrupt peer: no file of the wrong size or bytes was ever visible in a copy" "$rep"; fi
# From the download pods' own output (corrupt-fetch.*.log): a pod's logs go with the pod,
# which may be before a poll above read them.
refusals=$(cat "$WORK"/corrupt-fetch.*.log 2>/dev/null | grep -c 'is not the ETag .*taking it from elsewhere')
check "corrupt peer: the puller refused files the peer sent for their MD5 ($refusals 'taking it from elsewhere' lines)" \
  test "$refusals" -ge 1
wait_fields pf-corrupt 2 >/dev/null
fields=$(copy_fields pf-corrupt)
sed "s/^/#   copy: replica node phase bytesTotal bytesFromStore bytesFromPeers: /" <<<"$fields"
from_store=$(awk -v d="$DATASET" '$3 == "Ready" && $5 == d && $6 == 0' <<<"$fields" | wc -l)
check "corrupt peer: both copies' bytes came from the store, none from the corrupting peer ($from_store of 2)" \
  test "$from_store" = 2
wait_ended pf-corrupt

# ======== intr: pods that are not the volume's pullers get nothing from a serving copy ========
start_proxy intr $((512 * 1024))   # the serving copy fills in about 20 s
apply_vm pf-intr 2 "$PROXY" "      sourceURL: s3://data/pf-intr/"
serving() { # prints "POD IP SECRET" of pf-intr's Running serving pod
  k get pods -l vckname=pf-intr -o json 2>/dev/null | "$PYTHON" -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    args = [a for c in p["spec"]["containers"] for a in (c.get("args") or [])]
    ip = p["status"].get("podIP", "")
    if p["status"].get("phase") == "Running" and ip and any(a.startswith("--serve=") for a in args):
        sec = [v["secret"]["secretName"] for v in p["spec"].get("volumes", []) if v.get("name") == "vck-peer"]
        print(p["metadata"]["name"], ip, sec[0] if sec else "-")
        break'
}
wait_for 120 eval '[ -n "$(serving)" ]'
read -r spod sip ssecret <<<"$(serving)"
# Another volume's peer Secret: pf-dist's (its VolumeManager is still there).
other=$(k get pods -l vckname=pf-dist -o jsonpath='{.items[*].spec.volumes[?(@.name=="vck-peer")].secret.secretName}' 2>/dev/null | tr ' ' '\n' | sort -u | head -n 1)
[ -n "$other" ] || other=$(k get secrets -o name 2>/dev/null | sed -n 's#^secret/##p' | grep '^vck-peer-' | grep -vx "${ssecret:-none}" | head -n 1)
FILE=small/f-001.bin
FSIZE=$(stat -c %s "$SRC/$FILE")
# intruder NAME SECRET|-: a pod that asks the serving copy for FILE, printing "STATUS BYTES"
intruder() {
  local vols="" mounts="" certs=""
  if [ "$2" != - ]; then
    vols=$'  volumes:\n  - name: creds\n    secret:\n      secretName: '"$2"
    mounts=$'    volumeMounts:\n    - name: creds\n      mountPath: /creds\n      readOnly: true'
    certs='"--cert", "/creds/tls.crt", "--key", "/creds/tls.key", '
  fi
  k apply -f - >"$WORK/intruder-$1.apply" 2>&1 <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: default
spec:
  restartPolicy: Never
  containers:
  - name: curl
    image: vck-test/curl
    command: ["curl", "-s", "-k", "--max-time", "60", ${certs}"-o", "/dev/null", "-w", "%{http_code} %{size_download}\\n", "https://$sip:7443/objects/$FILE?size=$FSIZE"]
$mounts
$vols
YAML
}
ended() { local ph; ph=$(k get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null); [ "$ph" = Succeeded ] || [ "$ph" = Failed ]; }
if [ -n "${sip:-}" ]; then
  ok "intruders: pf-intr's copy serves on $sip:7443 ($spod, Secret $ssecret)"
  intruder intr-none -; intruder intr-other "${other:-none}"; intruder intr-own "$ssecret"
  for p in intr-none intr-other intr-own; do wait_for 90 ended "$p" || echo "# $p did not end in 90 s"; done
  got() { k logs "$1" 2>/dev/null | tail -n 1; }
  echo "# intruders: none '$(got intr-none)', other ($other) '$(got intr-other)', own '$(got intr-own)'; serving pod $(k get pod "$spod" -o jsonpath='{.status.phase}' 2>/dev/null)"
  check "intruders: a pod without a certificate gets nothing (no status, 0 bytes: '$(got intr-none)')" \
    test "$(got intr-none)" = "000 0"
  check "intruders: a pod holding another volume's peer Secret ($other) gets nothing ('$(got intr-other)')" \
    test -n "$other" -a "$(got intr-other)" = "000 0"
  check "intruders: the control, a pod mounting this volume's own Secret, gets the file ('$(got intr-own)')" \
    test "$(got intr-own)" = "200 $FSIZE"
else
  not_ok "intruders: pf-intr's copy serves" "no Running serving pod in 120 s; $(k get pods -l vckname=pf-intr -o wide 2>&1 | head -n 5)"
fi
if wait_running pf-intr 240 && out=$(identical pf-intr "$SRC" 2); then ok "intruders: pf-intr still reaches Running, 2 copies byte-identical"
else not_ok "intruders: pf-intr still reaches Running, 2 copies byte-identical" "$(jp pf-intr '{.status.state} {.status.message}') ${out:-}"; fi

tap_end
