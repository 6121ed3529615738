#!/usr/bin/env bash
# Shared copies, what users pay for: TEAMS VolumeManagers, one per namespace (each with its own
# Secret), all asking for the same S3 dataset with REPLICAS replicas, applied together to
# vck-controller in vck-sandbox (NODES nodes whose kubelet runs vck-fetch) against s3rver behind
# tests/e2e/throttle_proxy.py (which counts the bytes the store sends). Two modes, interleaved:
#   shared  vck-controller as it ships (--share-copies, on by default): the first downloads, the others
#           join its copies after a listing with their own credentials;
#   own     --share-copies=false: every VolumeManager downloads copies of its own.
# Per run: the seconds from the apply until every VolumeManager is Running, the bytes the store
# sent, and the bytes on the fullest node's disk. At the end: medians and own/shared ratios.
# Usage: bench/controller/shared_copies.sh BUILD_DIR [RUNS]   (RUNS: 3; BUILD_DIR holds
#   bin/vck-sandbox, bin/vck-controller, bin/vck-fetch; an optimized, unsanitized build for
#   figures worth quoting)
# Env: TEAMS (3), REPLICAS (2), NODES (3), FILES (40), FILE_KIB (256).
# Measured 2026-12-07 (153d3b8, a release build, 3 runs, defaults): shared reads the dataset once
# (1.00x its size; own 3.01x) and its fullest node holds one copy (own: 3.00x the bytes); all
# Running takes 3.15 s against own's 2.41 s (shared 0.77x as fast): a joiner waits for the maker's
# progress line that tells its listing's digest, read once per progress interval. Before that line
# (5644b58, sanitized build) a joiner waited for the maker's pod to end after --serve-linger:
# 36.3 s against own's 11.0 s.
set -u
export LC_ALL=C
B=$(realpath "${1:?usage: shared_copies.sh BUILD_DIR [RUNS]}")
RUNS=${2:-${RUNS:-3}}
TEAMS=${TEAMS:-3}; REPLICAS=${REPLICAS:-2}; NODES=${NODES:-3}
FILES=${FILES:-40}; FILE_KIB=${FILE_KIB:-256}
. "$(cd "$(dirname "$0")/../.." && pwd)/tests/lifecycle/lib.sh"
harness_init shared-copies-bench "$B/bin/vck-sandbox" "$B/bin/vck-controller" "$B/bin/vck-fetch" "$(command -v kubectl)"
SPELLING=current

start_s3rver
SRC=$WORK/src/bench
mkdir -p "$SRC"
for i in $(seq 1 "$FILES"); do head -c $((FILE_KIB * 1024)) /dev/urandom >"$SRC/f-$i.bin"; done
DATASET=$(bytes_under "$SRC")
rm -rf "$WORK/upload" && cp -r "$SRC" "$WORK/upload" && seed "$WORK/upload" s3://data/bench/ && rm -rf "$WORK/upload" "$WORK/upload.vck-fetch"
start_throttle 0 "$WORK/egress"
ENDPOINT=$THROTTLED
egress() { cat "$WORK/egress" 2>/dev/null || echo 0; }
start_sandbox "$NODES"
for t in $(seq 1 "$TEAMS"); do
  k create namespace "team-$t" >/dev/null
  k -n "team-$t" create secret generic s3-creds --from-literal=awsAccessKeyID=S3RVER \
    --from-literal=awsSecretAccessKey=S3RVER >/dev/null
done

echo "# shared copies bench (bench/controller/shared_copies.sh), source $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# machine: $(nproc) CPUs, $(uname -sr); build: $B"
echo "# $TEAMS VolumeManagers (one per namespace) x $REPLICAS replicas of one dataset ($FILES x $FILE_KIB KiB = $DATASET bytes) on $NODES nodes; $RUNS run(s) per mode, interleaved"

vm_in() { # vm_in NAMESPACE NAME
  { printf 'apiVersion: vck.intelai.org/v1alpha1\nkind: VolumeManager\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  volumeConfigs:\n' "$2" "$1"
    s3vol data "$REPLICAS" "      sourceURL: s3://data/bench/"; echo; } | k apply -f - >"$WORK/last-apply.log" 2>&1
}
all_running() {
  local t
  for t in $(seq 1 "$TEAMS"); do
    [ "$(k -n "team-$t" get vckvm ds -o 'jsonpath={.status.state}' 2>/dev/null)" = Running ] || return 1
  done
}
fullest_node() { # the bytes on the fullest node's disk (vck-fetch's own state aside)
  local n max=0 b
  for n in "$DATA"/nodes/*; do b=$(bytes_under "$n"); [ "$b" -gt "$max" ] && max=$b; done
  echo "$max"
}

run() { # run MODE I: appends "MODE SECONDS STORE_BYTES FULLEST_NODE_BYTES" to results.txt
  local mode=$1 t0 t1 before sent disk
  stop_controller
  if [ "$mode" = own ]; then start_controller --share-copies=false; else start_controller; fi
  controller_ready 60 || bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"
  sleep 0.5
  before=$(egress)
  t0=$EPOCHREALTIME
  for t in $(seq 1 "$TEAMS"); do vm_in "team-$t" ds || bail "applying team-$t/ds failed" "$(cat "$WORK/last-apply.log")"; done
  wait_for 600 all_running || bail "$mode run $2: not every VolumeManager became Running" "$(k get vckvm -A)"
  t1=$EPOCHREALTIME
  sleep 1  # the proxy rewrites its count as bytes pass
  sent=$(( $(egress) - before ))
  disk=$(fullest_node)
  echo "$mode $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') $sent $disk" | tee -a "$WORK/results.txt" | sed 's/^/# run: /'
  for t in $(seq 1 "$TEAMS"); do k -n "team-$t" delete vckvm ds --wait=false >/dev/null; done
  wait_for 300 nothing_left_here || bail "$mode run $2: the VolumeManagers did not go" "$(leftovers | head)"
}
nothing_left_here() { [ -z "$(k get vckvm -A -o name 2>/dev/null)" ] && [ -z "$(find "$DATA/nodes" -name 'vck-resource-*' -print -quit)" ]; }

for i in $(seq 1 "$RUNS"); do run shared "$i"; run own "$i"; done

median() { sort -n | awk '{v[NR] = $1} END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for mode in shared own; do
  for col in 2 3 4; do
    eval "${mode}_$col=$(awk -v m="$mode" -v c="$col" '$1 == m {print $c}' "$WORK/results.txt" | median)"
  done
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
echo "mode    seconds_to_all_running  store_bytes  store_bytes/dataset  fullest_node_bytes"
for mode in shared own; do
  eval "s=\$${mode}_2 b=\$${mode}_3 d=\$${mode}_4"
  printf '%-7s %22s %12s %20s %19s\n' "$mode" "$s" "$b" "$(ratio "$b" "$DATASET")" "$d"
done
echo "own/shared: time $(ratio "$own_2" "$shared_2")x, store bytes $(ratio "$own_3" "$shared_3")x, fullest node's disk $(ratio "$own_4" "$shared_4")x"
tap_end >/dev/null
