# The setup bench/fetch's store benchmarks share: the tools they need, a work directory and
# the processes started (all stopped and removed on exit), and s3rver on 127.0.0.1 with
# signature checking on. Sourced, not run; expects ROOT and S3RVER_DIR, sets WORK, PIDS,
# PORT, EP and the credentials s3rver accepts.
# shellcheck shell=bash
bench_start_s3rver() { # bench_start_s3rver NAME [TOOL...]: WORK is /tmp/vck-NAME-bench.XXXXXX
  local name=$1 tool; shift
  for tool in curl node python3 "$@"; do
    command -v "$tool" >/dev/null || { echo "bench: $tool is missing" >&2; exit 1; }
  done
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/vck-$name-bench.XXXXXX")
  PIDS=()
  trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT INT TERM
  PORT=$(free_port)
  EP=http://127.0.0.1:$PORT
  mkdir -p "$WORK/s3data"
  S3RVER_DIR=$S3RVER_DIR NODE_OPTIONS=--openssl-legacy-provider node "$ROOT/tests/s3/s3rver.js" "$PORT" "$WORK/s3data" \
    >"$WORK/s3rver.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 100); do curl -s -o /dev/null "$EP/" && break; sleep 0.1; done
  export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
