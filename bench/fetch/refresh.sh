#!/usr/bin/env bash
# What a new version of a dataset costs when most of it is unchanged: vck-fetch building it
# with --reuse-from the previous version on the same disk (what a refresh or an overlapping
# config change does on each node), against fetching it whole, both through
# tests/e2e/throttle_proxy.py limiting what the store sends (an object store's egress link) and
# counting it. Prints per-mode medians of the time, the ratio to the whole fetch, and the
# store bytes per changed-and-added byte.
# Usage: bench/fetch/refresh.sh PATH/TO/vck-fetch [RUNS]   (an optimized, unsanitized build
#        for times; the byte counts do not depend on the build)
# Env: SMALL_FILES (400), SMALL_KIB (32), LARGE_FILES (2), LARGE_MIB (16), CHANGED (1: small
#      files changed), RATE_MIB (16, the store's MiB/s).
set -u
VCK_FETCH=$(realpath "${1:?usage: refresh.sh PATH/TO/vck-fetch [RUNS]}")
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
S3RVER_DIR=${S3RVER_DIR:-$ROOT/.cache/s3rver}
SMALL_FILES=${SMALL_FILES:-400}; SMALL_KIB=${SMALL_KIB:-32}
LARGE_FILES=${LARGE_FILES:-2}; LARGE_MIB=${LARGE_MIB:-16}
CHANGED=${CHANGED:-1}; RATE_MIB=${RATE_MIB:-16}
# shellcheck source=lib.sh
. "$ROOT/bench/fetch/lib.sh"
bench_start_s3rver refresh
upload() { # upload DIR: DIR as s3://data/bench/
  rm -rf "$WORK/up" "$WORK/up.vck-fetch" && cp -r "$1" "$WORK/up"
  "$VCK_FETCH" sync-back "$WORK/up" s3://data/bench/ --endpoint "$EP" --once --progress-interval 0 \
    --termination-log /dev/null >/dev/null 2>&1 || { echo "bench: upload failed" >&2; exit 1; }
}

# Version 1 in the store and on the disk; then version 2 in the store: CHANGED small files
# rewritten and one small file added.
SRC=$WORK/src
mkdir -p "$SRC/small"
for i in $(seq 1 "$SMALL_FILES"); do head -c $((SMALL_KIB * 1024)) /dev/urandom >"$SRC/small/f$i"; done
for i in $(seq 1 "$LARGE_FILES"); do head -c $((LARGE_MIB * 1024 * 1024)) /dev/urandom >"$SRC/large$i"; done
upload "$SRC"
"$VCK_FETCH" fetch s3://data/bench/ "$WORK/v1" --endpoint "$EP" --progress-interval 0 --termination-log /dev/null \
  >/dev/null 2>&1 || { echo "bench: the first version failed" >&2; exit 1; }
for i in $(seq 1 "$CHANGED"); do head -c $((SMALL_KIB * 1024)) /dev/urandom >"$SRC/small/f$i"; done
head -c $((SMALL_KIB * 1024)) /dev/urandom >"$SRC/small/added"
upload "$SRC"
DATASET=$(find "$SRC" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
DELTA=$(( (CHANGED + 1) * SMALL_KIB * 1024 ))

# run MODE: one measurement of version 2 into a fresh directory; prints "SECONDS STORE_BYTES".
run() {
  local mode=$1 port t0 t1 args=()
  rm -rf "$WORK/v2" "$WORK/v2.vck-fetch"
  port=$(free_port)
  python3 "$ROOT/tests/e2e/throttle_proxy.py" "$port" 127.0.0.1 "$PORT" $((RATE_MIB * 1024 * 1024)) "$WORK/count" \
    >"$WORK/proxy.log" 2>&1 &
  local proxy=$!
  for _ in $(seq 1 100); do grep -q listening "$WORK/proxy.log" && break; sleep 0.05; done
  [ "$mode" = reuse ] && args=(--reuse-from "$WORK/v1")
  t0=$(date +%s.%N)
  "$VCK_FETCH" fetch s3://data/bench/ "$WORK/v2" --endpoint "http://127.0.0.1:$port" --progress-interval 0 \
    --termination-log /dev/null "${args[@]}" >"$WORK/v2.log" 2>&1 || { echo "bench: $mode failed" >&2; exit 1; }
  t1=$(date +%s.%N)
  sleep 0.3  # the proxy rewrites its count as bytes pass
  kill "$proxy" 2>/dev/null; wait "$proxy" 2>/dev/null
  diff -rq "$SRC" "$WORK/v2" >/dev/null || { echo "bench: $mode differs from the source" >&2; exit 1; }
  echo "$(python3 -c "print($t1 - $t0)") $(cat "$WORK/count")"
}

median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo "dataset: $SMALL_FILES x $SMALL_KIB KiB + $LARGE_FILES x $LARGE_MIB MiB = $DATASET bytes; $((CHANGED + 1)) files changed or added ($DELTA bytes); store limited to $RATE_MIB MiB/s; $RUNS runs"
declare -A secs bytes
for i in $(seq 1 "$RUNS"); do
  for mode in whole reuse; do
    read -r s b < <(run "$mode")
    secs[$mode]+="$s "
    bytes[$mode]+="$b "
  done
done
base=$(echo "${secs[whole]}" | tr ' ' '\n' | grep . | median)
for mode in whole reuse; do
  m=$(echo "${secs[$mode]}" | tr ' ' '\n' | grep . | median)
  b=$(echo "${bytes[$mode]}" | tr ' ' '\n' | grep . | median)
  printf '%-6s median %6.2f s  x%.3f of the whole fetch  store bytes %d = %.3f x the changed bytes, %.4f x the dataset\n' \
    "$mode" "$m" "$(python3 -c "print($m / $base)")" "$b" "$(python3 -c "print($b / $DELTA)")" \
    "$(python3 -c "print($b / $DATASET)")"
done
