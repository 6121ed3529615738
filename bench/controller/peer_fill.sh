#!/usr/bin/env bash
# Peer fill end to end ("each byte leaves S3 once"): vck-controller in vck-sandbox (4 nodes, or
# REPLICAS when more, whose kubelet runs vck-fetch as host processes, each pod on a loopback
# address of its own) against s3rver behind tests/e2e/throttle_proxy.py, which limits what the
# store sends (one token bucket shared by every connection, as an object store's egress link)
# and counts it, so that the store's bandwidth is the bottleneck. Three kinds of run, each a fresh
# VolumeManager with one S3 volume of the same dataset, through a fresh proxy:
#   A  1 replica
#   B  REPLICAS replicas, peer fill (the default)
#   C  REPLICAS replicas, options.peerFill "false" (every replica reads the store)
# Per run: the seconds from `kubectl apply` until status.state is Running (every copy Ready),
# seen on a watch, and the bytes the store sent per dataset byte (the proxy's count once the
# VolumeManager is gone, so nothing it started is still reading). Runs are interleaved
# A,B,C,A,B,C...; each VolumeManager is deleted, and gone with its node directories, before
# the next starts. At the end: medians, B/A and C/A, and the issue's targets
# (B time <= 1.3 x A; B store bytes / dataset <= 1.05; C about REPLICAS x on both).
# Usage: bench/controller/peer_fill.sh BUILD_DIR [RUNS]   (RUNS: 3; an optimized, unsanitized
#   build for figures worth quoting; BUILD_DIR holds bin/vck-sandbox, bin/vck-controller,
#   bin/vck-fetch; VCK_KEEP_WORK=1 keeps the logs)
# The proxy's bucket holds at most one second of bytes, which a run's first requests may take
# at once: every kind of run gets that second's head start, so A's share of it is the largest.
# Env: REPLICAS (4), RATE_MIB (8, the store's MiB/s; may be fractional), SMALL_FILES (300),
#      SMALL_KIB (32), LARGE_FILES (2), LARGE_MIB (24), RUNS (when not given as an argument).
set -u
export LC_ALL=C   # a decimal point in $EPOCHREALTIME and printf
B=$(realpath "${1:?usage: peer_fill.sh BUILD_DIR [RUNS]}")
RUNS=${2:-${RUNS:-3}}
REPLICAS=${REPLICAS:-4}; RATE_MIB=${RATE_MIB:-8}
SMALL_FILES=${SMALL_FILES:-300}; SMALL_KIB=${SMALL_KIB:-32}
LARGE_FILES=${LARGE_FILES:-2}; LARGE_MIB=${LARGE_MIB:-24}
. "$(cd "$(dirname "$0")/../.." && pwd)/tests/lifecycle/lib.sh"
harness_init peer-fill-bench "$B/bin/vck-sandbox" "$B/bin/vck-controller" "$B/bin/vck-fetch" "$(command -v kubectl)"
SPELLING=current   # capacity 1Gi
RATE=$(awk -v m="$RATE_MIB" 'BEGIN { printf "%d", m * 1024 * 1024 }')
[ "$RATE" -gt 0 ] || bail "RATE_MIB has to be above 0"

# ---- the dataset: SMALL_FILES x SMALL_KIB KiB in small/, LARGE_FILES x LARGE_MIB MiB ----
start_s3rver
SRC=$WORK/src/bench
mkdir -p "$SRC/small"
if [ "$SMALL_FILES" -gt 0 ]; then
  head -c $((SMALL_FILES * SMALL_KIB * 1024)) /dev/urandom >"$WORK/small.bin"
  split -b $((SMALL_KIB * 1024)) -a 5 -d "$WORK/small.bin" "$SRC/small/f-" && rm -f "$WORK/small.bin"
fi
for i in $(seq 1 "$LARGE_FILES"); do head -c $((LARGE_MIB * 1024 * 1024)) /dev/urandom >"$SRC/large-$i.bin"; done
DATASET=$(bytes_under "$SRC")
FILES=$(find "$SRC" -type f | wc -l)
[ "$DATASET" -gt 0 ] || bail "the dataset is empty"
rm -rf "$WORK/upload" && cp -r "$SRC" "$WORK/upload" && seed "$WORK/upload" s3://data/bench/ && rm -rf "$WORK/upload" "$WORK/upload.vck-fetch"

NODES=$((REPLICAS > 4 ? REPLICAS : 4))   # a copy per node
start_sandbox "$NODES"
start_controller
controller_ready 60 || bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"
PEER_FILL=yes
controller_has_flag --peer-fill || PEER_FILL=no

# ---- the header ----
build=$("$PYTHON" - "$B/meson-info/intro-buildoptions.json" <<'PY' 2>/dev/null
import json, sys
o = {x["name"]: x["value"] for x in json.load(open(sys.argv[1]))}
print(f'{o.get("buildtype")}, sanitizers {o.get("b_sanitize")}')
PY
) || build=unknown
echo "# peer fill bench (bench/controller/peer_fill.sh), source $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# machine: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), $(uname -sr)"
echo "# build: $B (${build:-unknown}); controller has --peer-fill: $PEER_FILL"
echo "# dataset: $SMALL_FILES x $SMALL_KIB KiB + $LARGE_FILES x $LARGE_MIB MiB = $FILES files, $DATASET bytes ($(awk -v b="$DATASET" 'BEGIN { printf "%.1f", b / 1048576 }') MiB)"
echo "# store: s3rver behind throttle_proxy.py at $RATE_MIB MiB/s ($RATE B/s), shared by all connections; a fresh proxy per run"
echo "# sandbox: $NODES nodes; A: 1 replica; B: $REPLICAS replicas, peer fill; C: $REPLICAS replicas, peerFill \"false\"; $RUNS run(s) each, interleaved"
[ "$PEER_FILL" = yes ] || echo "# note: this vck-controller has no peer fill: B reads the store per replica as C does, and C's peerFill option is left out"
case $build in *address*|*undefined*|*thread*) echo "# note: a sanitized build: its times are not the product's";; esac

# ---- a watch on the VolumeManagers: "EPOCHREALTIME NAME STATE" per event ----
# kubectl itself is the background job (so stopping it stops the watch); the stamping loop
# ends when kubectl's output does.
WATCH_PID=""
start_watch() {
  if [ -n "$WATCH_PID" ]; then
    stop_process "$WATCH_PID"
    local keep=() p; for p in "${PIDS[@]}"; do [ "$p" = "$WATCH_PID" ] || keep+=("$p"); done; PIDS=("${keep[@]}")
  fi
  "$KUBECTL" --kubeconfig "$WORK/kubeconfig" get vckvm -w -o 'jsonpath={.metadata.name}{" "}{.status.state}{"\n"}' \
    2>>"$WORK/watch.err" > >(while read -r n s; do echo "$EPOCHREALTIME $n $s"; done >>"$WORK/events.txt") &
  WATCH_PID=$!
  PIDS+=("$WATCH_PID")
}
: >"$WORK/events.txt"
start_watch
sleep 1

# ---- a fresh throttling, counting proxy per run: sets PROXY, PROXY_PID, COUNT ----
start_proxy() {
  local port; port=$(free_port)
  COUNT=$WORK/count.$port
  "$PYTHON" "$ROOT/tests/e2e/throttle_proxy.py" "$port" 127.0.0.1 "${ENDPOINT##*:}" "$RATE" "$COUNT" \
    >"$WORK/proxy.$port.log" 2>&1 &
  PROXY_PID=$!
  PIDS+=("$PROXY_PID")
  PROXY=http://127.0.0.1:$port
  wait_for 30 grep -q listening "$WORK/proxy.$port.log" || bail "the throttling proxy did not start" "$(cat "$WORK/proxy.$port.log")"
}
stop_proxy() {
  stop_process "$PROXY_PID"
  local keep=() p; for p in "${PIDS[@]}"; do [ "$p" = "$PROXY_PID" ] || keep+=("$p"); done; PIDS=("${keep[@]}")
  PROXY_PID=""
}

copy_dirs() { find "$DATA/nodes" -name 'vck-resource-*' ! -name '*.vck-fetch' -prune -type d -print 2>/dev/null; }
no_dirs() { [ -z "$(find "$DATA/nodes" -name 'vck-resource-*' -prune -print -quit 2>/dev/null)" ]; }
no_pods() { [ -z "$(k get pods -o name 2>/dev/null)" ]; }

diagnose() { # diagnose NAME: why it is not Running, as comment lines: its volume's message, its pods, the controller's last complaints
  echo "#   volume: $(volmsg "$1" data)"
  k get pods -o jsonpath='{range .items[*]}{.metadata.name}{" on "}{.spec.nodeName}{" ip "}{.status.podIP}{": "}{.status.phase}{" "}{.status.containerStatuses[0].state.terminated.message}{"\n"}{end}' 2>&1 |
    head -n 12 | cut -c1-300 | sed 's/^/#   pod /'
  grep -i -E 'error|fail|warn' "$WORK/controller.log" | tail -n 8 | cut -c1-300 | sed 's/^/#   controller: /'
  k get vckvm "$1" -o yaml >"$WORK/$1.failed.yaml" 2>&1
}

# run MODE RUN: one measurement; appends "MODE RUN SECONDS STORE_BYTES COPIES_OK COPIES" to results.txt
FAILED_RUNS=0
run() {
  local mode=$1 i=$2 name replicas options label t0 t1="" via=watch bytes ok=0 dirs d limit end next_poll
  name="pf-${mode,,}-$i"
  case $mode in
    A) replicas=1 label="1 replica"; options='      sourceURL: s3://data/bench/' ;;
    B) replicas=$REPLICAS label="$REPLICAS replicas, peer fill"; options='      sourceURL: s3://data/bench/' ;;
    C) replicas=$REPLICAS label="$REPLICAS replicas, no peer fill"; options='      sourceURL: s3://data/bench/'
       [ "$PEER_FILL" = yes ] && options+=$'\n      peerFill: "false"' ;;
  esac
  start_proxy
  # Bound: three times every replica reading the store alone, plus pod start-up.
  limit=$(( 3 * replicas * DATASET / RATE + 180 ))
  local S3=$ENDPOINT; ENDPOINT=$PROXY
  t0=$EPOCHREALTIME
  vm "$name" "$(s3vol data "$replicas" "$options")"
  local applied=$?
  ENDPOINT=$S3
  [ "$applied" -eq 0 ] || bail "applying $name failed" "$(cat "$WORK/last-apply.log")"
  end=$((SECONDS + limit)) next_poll=$((SECONDS + 2))
  while [ "$SECONDS" -lt "$end" ]; do
    t1=$(awk -v n="$name" '$2 == n && $3 == "Running" { print $1; exit }' "$WORK/events.txt")
    [ -n "$t1" ] && break
    if [ "$SECONDS" -ge "$next_poll" ]; then   # the watch ended? restart it; meanwhile poll
      next_poll=$((SECONDS + 2))
      # Failed is final (every download attempt of a copy failed, docs/user.md): no use waiting.
      [ "$(awk -v n="$name" '$2 == n { s = $3 } END { print s }' "$WORK/events.txt")" = Failed ] &&
        state_is "$name" Failed && break
      if ! kill -0 "$WATCH_PID" 2>/dev/null; then
        echo "# the watch ended; restarted (times of this run may be late by up to 2 s)"
        start_watch
        if state_is "$name" Running; then t1=$EPOCHREALTIME via=poll; break; fi
      fi
    fi
    sleep 0.1
  done
  if [ -n "$t1" ]; then
    # Every copy the same as the source: a copy per replica, nothing missing or different.
    dirs=$(copy_dirs)
    for d in $dirs; do diff -rq "$SRC" "$d" >/dev/null 2>&1 && ok=$((ok + 1)); done
  else
    FAILED_RUNS=$((FAILED_RUNS + 1))
    echo "# $name is not Running after $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }') s (bound $limit s): $(jp "$name" '{.status.state}: {.status.message}')"
    diagnose "$name"
  fi
  k delete vckvm "$name" --wait=false >/dev/null 2>&1
  wait_for 300 gone "$name" || bail "$name was not deleted within 300 s" "$(k get vckvm "$name" -o yaml 2>&1 | tail -n 30)"
  wait_for 120 no_dirs || echo "# $name: node directories are still there 120 s after it was gone: $(find "$DATA/nodes" -name 'vck-resource-*' -prune -print | head -n 4)"
  wait_for 60 no_pods || echo "# $name: pods are still there 60 s after it was gone"
  sleep 0.5   # the proxy writes its count when each connection ends
  bytes=$(cat "$COUNT" 2>/dev/null || echo 0)
  stop_proxy
  if [ -n "$t1" ]; then
    local secs; secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    echo "$mode $i $secs $bytes $ok $replicas" >>"$WORK/results.txt"
    printf 'run %d %s %-26s %7.2f s  store bytes / dataset %6.3f  copies identical to the source %d/%d%s\n' \
      "$i" "$mode" "$label" "$secs" "$(awk -v b="$bytes" -v d="$DATASET" 'BEGIN { print b / d }')" "$ok" "$replicas" \
      "$( [ "$via" = poll ] && echo " (time polled)" )"
  else
    printf 'run %d %s %-26s FAILED (never Running: %s); store bytes / dataset %.3f\n' "$i" "$mode" "$label" \
      "$(awk -v n="$name" '$2 == n { s = $3 } END { print s }' "$WORK/events.txt")" \
      "$(awk -v b="$bytes" -v d="$DATASET" 'BEGIN { print b / d }')"
  fi
}

: >"$WORK/results.txt"
for i in $(seq 1 "$RUNS"); do
  for mode in A B C; do run "$mode" "$i"; done
done

# ---- the summary ----
"$PYTHON" - "$WORK/results.txt" "$DATASET" "$REPLICAS" "$RUNS" "$FAILED_RUNS" "$(nproc)" "$RATE_MIB" \
  "$SMALL_FILES x $SMALL_KIB KiB + $LARGE_FILES x $LARGE_MIB MiB" "$PEER_FILL" "$build" "$NODES" <<'PY'
import statistics, sys
path, dataset, replicas, runs, failed, cpus, rate, shape, peer, build, nodes = sys.argv[1:12]
dataset, replicas = int(dataset), int(replicas)
rows = [l.split() for l in open(path) if l.strip()]
secs = {m: [float(r[2]) for r in rows if r[0] == m] for m in "ABC"}
ratio = {m: [int(r[3]) / dataset for r in rows if r[0] == m] for m in "ABC"}
bad = sum(1 for r in rows if r[4] != r[5])
med = lambda xs: statistics.median(xs) if xs else float("nan")
print()
print("---- summary ----")
print(f"vck-controller peer fill in vck-sandbox ({nodes} nodes), {cpus} CPUs; build {build}; controller peer fill: {peer}")
print(f"dataset {shape} = {dataset / 1048576:.1f} MiB; store limited to {rate} MiB/s; medians of {runs} run(s) each")
labels = {"A": "A 1 replica", "B": f"B {replicas} replicas, peer fill", "C": f"C {replicas} replicas, no peer fill"}
for m in "ABC":
    t, s = med(secs[m]), med(ratio[m])
    print(f"  {labels[m]:<30} {t:7.2f} s  store bytes / dataset {s:.3f}  ({len(secs[m])} run(s))")
a, b, c = med(secs["A"]), med(secs["B"]), med(secs["C"])
sb, sc = med(ratio["B"]), med(ratio["C"])
yes = lambda ok: "met" if ok else "NOT met"
print(f"  time:  B/A {b / a:.2f} (target <= 1.3: {yes(b / a <= 1.3)}); C/A {c / a:.2f} (about {replicas} expected)")
print(f"  store: B {sb:.3f} x dataset (target <= 1.05: {yes(sb <= 1.05)}); C {sc:.3f} x dataset (about {replicas} expected)")
if bad or int(failed):
    print(f"  problems: {int(failed)} run(s) never Running; {bad} run(s) with a copy missing or unlike the source")
PY
[ "$FAILED_RUNS" -eq 0 ] && awk '$5 != $6 { bad = 1 } END { exit bad }' "$WORK/results.txt"
