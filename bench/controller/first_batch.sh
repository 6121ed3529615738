#!/usr/bin/env bash
# How much sooner a job can start with options.firstBatch: one S3 VolumeManager (REPLICAS
# copies, firstBatch FIRST) downloads 2,000 x 16 KiB + 4 x 64 MiB files (about 287 MiB; the
# small files first in key order) from s3rver in vck-sandbox with vck-controller as its own
# process (--download-progress-interval=1s), RUNS times. Per run, from the apply:
#   first    Ready True with reason FirstBatchReady (the first batch on every replica)
#   complete DataComplete True (everything on every replica)
# and the medians over the runs. RATE (bytes/s, optional) puts s3rver behind the throttling
# proxy, shared by all downloads.
# Usage: bench/controller/first_batch.sh BUILD_DIR [RUNS] [REPLICAS] [FIRST] [RATE]
#   (BUILD_DIR holds bin/vck-sandbox, bin/vck-controller, bin/vck-fetch; any build type)
set -u
B=$(realpath "${1:?usage: first_batch.sh BUILD_DIR [RUNS] [REPLICAS] [FIRST] [RATE]}")
RUNS=${2:-3}
REPLICAS=${3:-2}
FIRST=${4:-10%}
RATE=${5:-}
. "$(cd "$(dirname "$0")/../.." && pwd)/tests/lifecycle/lib.sh"
harness_init first-batch-bench "$B/bin/vck-sandbox" "$B/bin/vck-controller" "$B/bin/vck-fetch" "$(command -v kubectl)"

start_s3rver
SRC=$WORK/src/bench
mkdir -p "$SRC/big"
head -c $((2000 * 16 * 1024)) /dev/urandom >"$WORK/small.bin"
split -b $((16 * 1024)) -a 4 -d "$WORK/small.bin" "$SRC/a-" && rm -f "$WORK/small.bin"   # a-0000 .. a-1999
for i in 1 2 3 4; do head -c $((64 * 1024 * 1024)) /dev/urandom >"$SRC/big/z-$i.bin"; done
rm -rf "$WORK/upload" && cp -r "$SRC" "$WORK/upload" && seed "$WORK/upload" s3://data/bench/ && rm -rf "$WORK/upload" "$WORK/upload.vck-fetch"
URL=$ENDPOINT
if [ -n "$RATE" ]; then start_throttle "$RATE"; URL=$THROTTLED; fi
start_sandbox "$REPLICAS"
start_controller --download-progress-interval=1s
controller_ready || bail "vck-controller never became ready"

moment() { # prints "first" or "complete" once the VolumeManager reaches it, else nothing
  k get vckvm "$1" -o json 2>/dev/null | "$PYTHON" -c '
import json, sys
c = {x["type"]: x for x in (json.load(sys.stdin).get("status") or {}).get("conditions", [])}
if c.get("DataComplete", {}).get("status") == "True": print("complete")
elif c.get("Ready", {}).get("status") == "True" and c["Ready"].get("reason") == "FirstBatchReady": print("first")'
}
for run in $(seq 1 "$RUNS"); do
  S3=$ENDPOINT ENDPOINT=$URL
  t0=$(date +%s.%N)
  vm "bench$run" "$(s3vol data "$REPLICAS" "      sourceURL: s3://data/bench/
      firstBatch: \"$FIRST\"")"
  ENDPOINT=$S3
  first="" complete="" end=$((SECONDS + 1800))
  while [ -z "$complete" ] && [ "$SECONDS" -lt "$end" ]; do
    m=$(moment "bench$run")
    now=$(date +%s.%N)
    [ "$m" = first ] && [ -z "$first" ] && first=$now
    [ "$m" = complete ] && complete=$now
    sleep 0.2
  done
  [ -n "$complete" ] || bail "run $run did not complete"
  echo "$run ${first:-none} $complete $t0" >>"$WORK/times.txt"
  k delete vckvm "bench$run" --wait=false >/dev/null 2>&1
  wait_for 300 gone "bench$run" || bail "run $run was not cleaned up"
done
"$PYTHON" - "$WORK/times.txt" "$REPLICAS" "$FIRST" "${RATE:-unthrottled}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
firsts = [float(f) - float(t0) for _, f, c, t0 in rows if f != "none"]
completes = [float(c) - float(t0) for _, f, c, t0 in rows]
print(f"{len(rows)} run(s), {sys.argv[2]} replicas, firstBatch {sys.argv[3]}, rate {sys.argv[4]}; 2000 x 16 KiB + 4 x 64 MiB")
for _, f, c, t0 in rows:
    print(f"  first batch Ready {float(f) - float(t0) if f != 'none' else float('nan'):7.2f} s   complete {float(c) - float(t0):7.2f} s")
if firsts:
    print(f"median: first batch Ready {statistics.median(firsts):.2f} s, DataComplete {statistics.median(completes):.2f} s "
          f"({len(firsts)}/{len(rows)} runs saw the first batch before completion)")
else:
    print(f"median: DataComplete {statistics.median(completes):.2f} s; no run saw a first batch before completion")
PY
tap_end >/dev/null
