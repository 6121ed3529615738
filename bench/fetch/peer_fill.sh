#!/usr/bin/env bash
# Peer fill against a store whose bandwidth is the bottleneck: the same dataset fetched by
# REPLICAS vck-fetch processes (one seed serving, the others pulling from it: --serve, --peer),
# against one vck-fetch alone, and against REPLICAS fetching from the store each, all through
# tests/e2e/throttle_proxy.py limiting what the store sends (shared by every connection, as an
# object store's egress link is) and counting it. Prints per-mode medians of the time until
# every replica is complete, the ratio to one replica alone, and the store bytes per dataset
# byte.
# Usage: bench/fetch/peer_fill.sh PATH/TO/vck-fetch [RUNS]   (an optimized, unsanitized build)
# Env: REPLICAS (4), RATE_MIB (16, the store's MiB/s), SMALL_FILES (400), SMALL_KIB (32),
#      LARGE_FILES (2), LARGE_MIB (48).
set -u
VCK_FETCH=$(realpath "${1:?usage: peer_fill.sh PATH/TO/vck-fetch [RUNS]}")
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
S3RVER_DIR=${S3RVER_DIR:-$ROOT/.cache/s3rver}
REPLICAS=${REPLICAS:-4}; RATE_MIB=${RATE_MIB:-16}
SMALL_FILES=${SMALL_FILES:-400}; SMALL_KIB=${SMALL_KIB:-32}
LARGE_FILES=${LARGE_FILES:-2}; LARGE_MIB=${LARGE_MIB:-48}
# shellcheck source=lib.sh
. "$ROOT/bench/fetch/lib.sh"
bench_start_s3rver peer openssl

SRC=$WORK/src
mkdir -p "$SRC/small"
for i in $(seq 1 "$SMALL_FILES"); do head -c $((SMALL_KIB * 1024)) /dev/urandom >"$SRC/small/f$i"; done
for i in $(seq 1 "$LARGE_FILES"); do head -c $((LARGE_MIB * 1024 * 1024)) /dev/urandom >"$SRC/large$i"; done
DATASET=$(find "$SRC" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
cp -r "$SRC" "$WORK/up"
"$VCK_FETCH" sync-back "$WORK/up" s3://data/bench/ --endpoint "$EP" --once --progress-interval 0 \
  --termination-log "$WORK/seed.json" >/dev/null 2>&1 || { echo "bench: upload failed" >&2; exit 1; }
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$WORK/peer.key" -out "$WORK/peer.crt" \
  -subj /CN=vck-peer -addext subjectAltName=DNS:vck-peer -days 1 >/dev/null 2>&1

# proxy: a fresh throttling, counting proxy in front of s3rver; sets PROXY and COUNT.
proxy() {
  local port; port=$(free_port)
  COUNT=$WORK/count.$port
  python3 "$ROOT/tests/e2e/throttle_proxy.py" "$port" 127.0.0.1 "$PORT" $((RATE_MIB * 1024 * 1024)) "$COUNT" \
    >"$WORK/proxy.$port.log" 2>&1 &
  PIDS+=($!)
  PROXY_PID=$!
  PROXY=http://127.0.0.1:$port
  for _ in $(seq 1 100); do grep -q listening "$WORK/proxy.$port.log" && return 0; sleep 0.05; done
  echo "bench: the proxy did not start" >&2; exit 1
}
fetch() { # fetch DEST ARGS...: one vck-fetch through $PROXY
  local dest=$1; shift
  "$VCK_FETCH" fetch s3://data/bench/ "$dest" --endpoint "$PROXY" --progress-interval 0 \
    --termination-log /dev/null "$@" >"$dest.log" 2>&1
}
now() { date +%s.%N; }

# run MODE: one measurement; prints "SECONDS STORE_BYTES".
run() {
  local mode=$1 t0 t1 pids=() r
  rm -rf "$WORK"/d* && proxy
  t0=$(now)
  case $mode in
    one) fetch "$WORK/d0" ;;
    store)
      for r in $(seq 1 "$REPLICAS"); do fetch "$WORK/d$r" & pids+=($!); done
      wait "${pids[@]}" ;;
    peers)
      fetch "$WORK/d0" --serve 127.0.0.1:0 --serve-port-file "$WORK/port" --serve-linger 0 \
        --peer-cert "$WORK/peer.crt" --peer-key "$WORK/peer.key" & pids+=($!)
      for _ in $(seq 1 200); do [ -s "$WORK/port" ] && break; sleep 0.01; done
      for r in $(seq 2 "$REPLICAS"); do
        fetch "$WORK/d$r" --peer "https://127.0.0.1:$(cat "$WORK/port")" \
          --peer-cert "$WORK/peer.crt" --peer-key "$WORK/peer.key" & pids+=($!)
      done
      wait "${pids[@]}" ;;
  esac
  t1=$(now)
  rm -f "$WORK/port"
  kill "$PROXY_PID" 2>/dev/null; wait "$PROXY_PID" 2>/dev/null
  for d in "$WORK"/d[0-9]; do diff -rq "$SRC" "$d" >/dev/null || { echo "bench: $d differs from the source" >&2; exit 1; }; done
  echo "$(python3 -c "print($t1 - $t0)") $(cat "$COUNT")"
}

median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo "dataset: $SMALL_FILES x $SMALL_KIB KiB + $LARGE_FILES x $LARGE_MIB MiB = $DATASET bytes; store limited to $RATE_MIB MiB/s; $REPLICAS replicas; $RUNS runs"
declare -A secs bytes
for i in $(seq 1 "$RUNS"); do
  for mode in one peers store; do
    read -r s b < <(run "$mode")
    secs[$mode]+="$s "
    bytes[$mode]="$b"
  done
done
base=$(echo "${secs[one]}" | tr ' ' '\n' | grep . | median)
for mode in one peers store; do
  m=$(echo "${secs[$mode]}" | tr ' ' '\n' | grep . | median)
  printf '%-6s median %6.2f s  x%.2f of one replica alone  store bytes / dataset %.3f\n' "$mode" "$m" \
    "$(python3 -c "print($m / $base)")" "$(python3 -c "print(${bytes[$mode]} / $DATASET)")"
done
