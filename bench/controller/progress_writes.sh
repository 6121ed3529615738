#!/usr/bin/env bash
# What download progress costs the API: one S3 VolumeManager (REPLICAS copies) downloads a
# dataset from s3rver behind a throttling proxy for about SECONDS seconds, in vck-sandbox with
# vck-controller as its own process (default --download-progress-interval unless INTERVAL is
# given). Counted while it downloads (from its first progress to Running):
#   writes   updates of the VolumeManager (a watch on it: every status write is one)
#   log GETs the controller's GET requests (rest_client_requests_total; its reads of objects
#            come from its caches, so its GETs are the pods/log reads of progress)
# and reported per download per minute.
# Usage: bench/controller/progress_writes.sh BUILD_DIR [SECONDS] [REPLICAS] [INTERVAL]
#   (BUILD_DIR holds bin/vck-sandbox, bin/vck-controller, bin/vck-fetch; any build type)
set -u
B=$(realpath "${1:?usage: progress_writes.sh BUILD_DIR [SECONDS] [REPLICAS] [INTERVAL]}")
DURATION=${2:-90}
REPLICAS=${3:-1}
INTERVAL=${4:-}
. "$(cd "$(dirname "$0")/../.." && pwd)/tests/lifecycle/lib.sh"
harness_init progress-bench "$B/bin/vck-sandbox" "$B/bin/vck-controller" "$B/bin/vck-fetch" "$(command -v kubectl)"

start_s3rver
SRC=$WORK/src/bench
mkdir -p "$SRC"
for i in $(seq 1 32); do head -c $((64 * 1024)) /dev/urandom >"$SRC/part-$i.bin"; done   # 2 MiB
rm -rf "$WORK/upload" && cp -r "$SRC" "$WORK/upload" && seed "$WORK/upload" s3://data/bench/
RATE=$((2 * 1024 * 1024 * REPLICAS / DURATION))
start_throttle "$RATE"
start_sandbox "$REPLICAS"
start_controller ${INTERVAL:+--download-progress-interval=$INTERVAL}
controller_ready || bail "vck-controller never became ready"

metric_gets() { curl -s "http://127.0.0.1:$MP/metrics" | awk '/^rest_client_requests_total/ && /method="GET"/ {s += $2} END {print s + 0}'; }
# Every update of the VolumeManager, timestamped, with its progress (a watch without k's request timeout).
"$KUBECTL" --kubeconfig "$WORK/kubeconfig" get vckvm -w -o 'jsonpath={.metadata.resourceVersion}{" "}{.status.progress}{"\n"}' 2>/dev/null |
  while read -r rv p; do echo "$(date +%s.%N) $rv $p"; done >"$WORK/updates.txt" &
PIDS+=($!)
sleep 1
S3=$ENDPOINT ENDPOINT=$THROTTLED
vm bench "$(s3vol data "$REPLICAS" '      sourceURL: s3://data/bench/')"
ENDPOINT=$S3
wait_for 60 grep -q ' [1-9][0-9]*%$' "$WORK/updates.txt" || bail "no progress was shown"
t0=$(date +%s.%N) g0=$(metric_gets)
n0=$(wc -l <"$WORK/updates.txt")
wait_state bench Running $((DURATION * 4)) || bail "the download did not finish"
t1=$(date +%s.%N) g1=$(metric_gets)
n1=$(wc -l <"$WORK/updates.txt")
"$PYTHON" - "$t0" "$t1" "$n0" "$n1" "$g0" "$g1" "$REPLICAS" "${INTERVAL:-10s (default)}" <<'PY'
import sys
t0, t1 = float(sys.argv[1]), float(sys.argv[2])
writes, gets, replicas = int(sys.argv[4]) - int(sys.argv[3]), int(sys.argv[6]) - int(sys.argv[5]), int(sys.argv[7])
minutes = (t1 - t0) / 60
print(f"progress interval {sys.argv[8]}, {replicas} download(s) of 2 MiB, measured over {t1 - t0:.0f} s of downloading")
print(f"VolumeManager writes: {writes} ({writes / minutes:.1f}/min, {writes / minutes / replicas:.1f} per download per minute)")
print(f"pods/log GETs:        {gets} ({gets / minutes:.1f}/min, {gets / minutes / replicas:.1f} per download per minute)")
PY
k delete vckvm bench --wait=false >/dev/null 2>&1
wait_for 120 gone bench
