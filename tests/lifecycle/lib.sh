# The harness of the script tests that run vck-controller in vck-sandbox against s3rver
# (tests/e2e, tests/lifecycle): arguments, TAP output, bounded waits, the processes, the
# manifests. Sourced, not run. Guarantees: every process started here is stopped when the
# script exits (also on SIGTERM from meson's timeout); every wait has a bound.
# shellcheck shell=bash

HARNESS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Debian's interpreter when there is one: a version manager's shim first on PATH costs a
# second per start, and invariants.py runs every few hundred milliseconds.
PYTHON=$(command -v /usr/bin/python3 || command -v python3)

harness_init() { # harness_init NAME VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
  local name=$1; shift
  SANDBOX=$(realpath "${1:?usage: $name VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]}")
  CONTROLLER=$(realpath "${2:?missing VCK_CONTROLLER}")
  FETCH=$(realpath "${3:?missing VCK_FETCH}")
  KUBECTL=${4:-kubectl}
  ROOT=${VCK_SOURCE_ROOT:-$(cd "$HARNESS_DIR/../.." && pwd)}
  S3RVER_DIR=${S3RVER_DIR:-$ROOT/.cache/s3rver}
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/vck-$name.XXXXXX")
  PIDS=() SANDBOX_PID="" CONTROLLER_PID="" CLUSTERS=0 N=0 FAILED=0
  CONTROLLER_ARGS=()
  trap harness_cleanup EXIT
  trap 'exit 130' INT TERM
}

harness_cleanup() {
  stop_controller
  stop_sandbox
  for p in "${PIDS[@]}"; do stop_process "$p"; done
  if [ -n "${VCK_KEEP_WORK:-}" ]; then echo "# kept $WORK"; else rm -rf "$WORK"; fi
}

stop_process() { # stop_process PID: SIGTERM, SIGKILL after 20 s, reaped
  local p=$1
  [ -n "$p" ] || return 0
  kill "$p" 2>/dev/null || { wait "$p" 2>/dev/null; return 0; }
  for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
  kill -9 "$p" 2>/dev/null
  wait "$p" 2>/dev/null
  return 0
}

# ---- TAP ----
ok() { N=$((N + 1)); echo "ok - $1"; }
not_ok() { N=$((N + 1)); FAILED=$((FAILED + 1)); echo "not ok - $1"; [ $# -gt 1 ] && sed 's/^/#   /' <<<"$2"; return 0; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d"; fi; }
bail() {
  echo "not ok - $1"; [ $# -gt 1 ] && sed 's/^/#   /' <<<"$2"
  echo "# log tails:"; tail -n 20 "$WORK"/*.log | sed 's/^/#   /'
  exit 1
}
# The end of the plan: vck-controller and vck-sandbox are stopped first, so that what the
# sanitizers print at exit (a leak is only reported then) is in their logs and checked.
tap_end() {
  stop_controller
  stop_sandbox
  local reports
  reports=$(grep -h -A4 -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$WORK"/controller*.log "$WORK"/sandbox*.log 2>/dev/null | head -n 20)
  if [ -n "$reports" ]; then not_ok "vck-controller and vck-sandbox exited without a sanitizer report" "$reports"
  else ok "vck-controller and vck-sandbox exited without a sanitizer report"; fi
  echo "1..$N"; [ "$FAILED" -eq 0 ]
}

free_port() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { # wait_for SECONDS command...: true once the command succeeds, polled every 0.2 s
  local limit=$1; shift
  local end=$((SECONDS + limit))
  while :; do
    "$@" >/dev/null 2>&1 && return 0
    [ "$SECONDS" -ge "$end" ] && return 1
    sleep 0.2
  done
}

# ---- s3rver, bucket "data" ----
start_s3rver() { # sets ENDPOINT and the AWS credentials s3rver accepts
  [ -f "$S3RVER_DIR/node_modules/s3rver/package.json" ] || bail "s3rver is not installed in $S3RVER_DIR (run scripts/bootstrap)"
  local port; port=$(free_port)
  ENDPOINT="http://127.0.0.1:$port"
  mkdir -p "$WORK/s3"
  S3RVER_DIR=$S3RVER_DIR NODE_OPTIONS=--openssl-legacy-provider \
    node "$ROOT/tests/s3/s3rver.js" "$port" "$WORK/s3" >"$WORK/s3rver.log" 2>&1 &
  PIDS+=($!)
  wait_for 30 curl -s -o /dev/null "$ENDPOINT/" || bail "s3rver did not start"
  export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
}
start_throttle() { # start_throttle BYTES_PER_SECOND [COUNT_FILE]: sets THROTTLED, s3rver behind tests/e2e/throttle_proxy.py
  local port; port=$(free_port)
  "$PYTHON" "$ROOT/tests/e2e/throttle_proxy.py" "$port" 127.0.0.1 "${ENDPOINT##*:}" "$@" >"$WORK/throttle.log" 2>&1 &
  PIDS+=($!)
  THROTTLED="http://127.0.0.1:$port"
  wait_for 30 grep -q listening "$WORK/throttle.log" || bail "the throttling proxy did not start" "$(cat "$WORK/throttle.log")"
}
seed() { # seed DIR s3://data/PREFIX/: uploads DIR with vck-fetch itself
  "$FETCH" sync-back "$1" "$2" --endpoint "$ENDPOINT" --once --progress-interval 0 \
    --termination-log "$WORK/seed.json" >>"$WORK/seed.log" 2>&1 || bail "seeding $2 failed" "$(tail -n 5 "$WORK/seed.log")"
}

# ---- the simulated cluster ----
start_sandbox() { # start_sandbox NODES|NODES_FILE [SANDBOX ARGS...]: a fresh cluster; sets DATA, ADMIN
  local nodes=(--nodes "$1"); [ -f "$1" ] && nodes=(--nodes-file "$1"); shift
  CLUSTERS=$((CLUSTERS + 1))
  DATA=$WORK/cluster$CLUSTERS
  local log=$WORK/sandbox$CLUSTERS.log
  rm -f "$WORK/kubeconfig"
  "$SANDBOX" --port 0 --admin-port 0 "${nodes[@]}" --data-root "$DATA" --kubeconfig-out "$WORK/kubeconfig" \
    --image "vck-fetch:e2e=exec:$FETCH" "$@" >"$log" 2>&1 &
  SANDBOX_PID=$!
  wait_for 60 grep -q '^admin: ' "$log" || bail "vck-sandbox did not start" "$(tail -n 5 "$log")"
  ADMIN=$(sed -n 's/^admin: //p' "$log")
  wait_for 60 test -s "$WORK/kubeconfig" || bail "vck-sandbox did not write its kubeconfig"
  wait_for 60 k get nodes || bail "kubectl cannot reach vck-sandbox"
  k config view --raw -o json >"$WORK/kubeconfig.json"
  k apply -f "$ROOT/crds/volumemanager.yaml" >"$WORK/apply.log" 2>&1 || bail "applying the CRD failed" "$(cat "$WORK/apply.log")"
  wait_for 30 k get vckvm || bail "the VolumeManager resource is not served"
  k create secret generic s3-creds --from-literal=awsAccessKeyID=S3RVER --from-literal=awsSecretAccessKey=S3RVER \
    >/dev/null || bail "creating the credentials Secret failed"
}
stop_sandbox() { stop_process "$SANDBOX_PID"; SANDBOX_PID=""; }
admin() { # admin METHOD PATH [JSON]: the sandbox's fault injection API
  if [ $# -gt 2 ]; then curl -sf -X "$1" "$ADMIN$2" -H 'Content-Type: application/json' -d "$3"
  else curl -sf -X "$1" "$ADMIN$2"; fi
}
faults_fired() { admin GET /faults | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["fired"])'; }

# ---- the controller (CONTROLLER_ARGS are added to every start) ----
start_controller() { # start_controller [ARGS...]: returns at once; controller_ready waits
  HP=$(free_port) MP=$(free_port)
  "$CONTROLLER" --kubeconfig "$WORK/kubeconfig" --data-mover-image vck-fetch:e2e \
    --health-probe-bind-address "127.0.0.1:$HP" --metrics-bind-address "127.0.0.1:$MP" --workers 4 \
    "${CONTROLLER_ARGS[@]}" "$@" >>"$WORK/controller.log" 2>&1 &
  CONTROLLER_PID=$!
}
controller_ready() { wait_for "${1:-60}" curl -sf "http://127.0.0.1:$HP/readyz"; }
kill_controller() { # SIGKILL, as a crash: no cleanup of its own
  [ -n "$CONTROLLER_PID" ] || return 0
  kill -9 "$CONTROLLER_PID" 2>/dev/null; wait "$CONTROLLER_PID" 2>/dev/null
  CONTROLLER_PID=""
}
stop_controller() { stop_process "$CONTROLLER_PID"; CONTROLLER_PID=""; }
metric() { # metric 'NAME{LABELS}': its value on the controller's /metrics (exact labels, in order), 0 when absent
  curl -sf "http://127.0.0.1:$MP/metrics" | awk -v s="$1" 'index($0, s " ") == 1 { v = $2 } END { print v + 0 }'
}
bytes_under() { # bytes_under DIR...: the total size of the files under them, vck-fetch's own state aside (0 for none)
  [ $# -gt 0 ] || { echo 0; return; }
  find "$@" -type f -not -path '*/.vck-fetch*' -printf '%s\n' 2>/dev/null | awk '{ t += $1 } END { print t + 0 }'
}
controller_has_flag() { "$CONTROLLER" --help 2>&1 | grep -q -- "$1"; }

# ---- kubectl ----
k() { "$KUBECTL" --kubeconfig "$WORK/kubeconfig" --request-timeout=20s "$@"; }
jp() { k get vckvm "$1" -o "jsonpath=$2" 2>/dev/null; }
state_is() { [ "$(jp "$1" '{.status.state}')" = "$2" ]; }
wait_state() { # wait_state NAME STATE [SECONDS]: false at once when there is no such VolumeManager
  local end=$((SECONDS + ${3:-120})) s
  while :; do
    if s=$(k get vckvm "$1" -o 'jsonpath={.status.state}' 2>&1); then [ "$s" = "$2" ] && return 0
    elif grep -q NotFound <<<"$s"; then return 1; fi
    [ "$SECONDS" -ge "$end" ] && return 1
    sleep 0.2
  done
}
gone() { ! k get vckvm "$1" >/dev/null 2>&1; }
volmsg() { jp "$1" "{.status.volumes[?(@.id==\"$2\")].message}"; }

# ---- manifests, spelled as the original VCK's e2e suite wrote them ----
# (capacity .5Gi, NFS volumes without replicas). Tests about something else than spelling may
# set SPELLING=current: capacity 1Gi, NFS volumes with replicas 1.
SPELLING=original
vm() { # vm NAME VOLUME_YAML...: applies a VolumeManager whose volumeConfigs are the given items
  local name=$1; shift
  { printf 'apiVersion: vck.intelai.org/v1alpha1\nkind: VolumeManager\nmetadata:\n  name: %s\n  namespace: default\nspec:\n  volumeConfigs:\n' "$name"
    for v in "$@"; do printf '%s\n' "$v"; done; } | k apply -f - >"$WORK/last-apply.log" 2>&1
}
capacity() { if [ "$SPELLING" = original ]; then echo .5Gi; else echo 1Gi; fi; }
s3vol() { # s3vol ID REPLICAS [OPTION LINES, default: sourceURL s3://data/set/]
  printf '  - id: %s\n    replicas: %s\n    sourceType: S3\n    accessMode: ReadWriteOnce\n    capacity: %s\n    labels:\n      key1: val1\n    options:\n      awsCredentialsSecretName: s3-creds\n      endpointURL: %s\n%s' \
    "$1" "$2" "$(capacity)" "$ENDPOINT" "${3:-      sourceURL: s3://data/set/}"
}
nfsvol() { # nfsvol ID [OPTION LINES]
  local replicas=""; [ "$SPELLING" = original ] || replicas='    replicas: 1\n'
  printf "  - id: %s\n${replicas}    sourceType: NFS\n    accessMode: ReadWriteMany\n    capacity: %s\n    labels:\n      key1: val1\n    options:\n%s" \
    "$1" "$(capacity)" "${2:-      server: 10.0.0.10
      path: /exports/data}"
}

# ---- datasets and what a user can check of the copies (tests/lifecycle) ----
DATASETS=()
make_dataset() { # make_dataset NAME FILES: random files (and a subdirectory) in $WORK/src/NAME, seeded to s3://data/NAME/
  local d=$WORK/src/$1
  mkdir -p "$d/sub"
  for i in $(seq 1 "$2"); do head -c $((700 * i + RANDOM % 500)) /dev/urandom >"$d/$1-file-$i.bin"; done
  head -c 2048 /dev/urandom >"$d/sub/$1-nested.bin"
  # Uploaded from a copy: vck-fetch keeps its own state beside (or in) what it syncs.
  rm -rf "$WORK/upload" && cp -r "$d" "$WORK/upload" && seed "$WORK/upload" "s3://data/$1/" && rm -rf "$WORK/upload" "$WORK/upload.vck-fetch"
  DATASETS+=(--dataset "$1=$d")
}
invariants() { # invariants [--rules 1,2,3] [--report]: tests/lifecycle/invariants.py on this cluster
  "$PYTHON" "$HARNESS_DIR/invariants.py" --kubeconfig-json "$WORK/kubeconfig.json" --data "$DATA" \
    --state "$WORK/digests$CLUSTERS.json" "${DATASETS[@]}" "$@"
}
check_invariants() { # check_invariants LABEL: one TAP line; the violations are its diagnostics
  local out
  if out=$(invariants 2>&1); then ok "$1: copies, labels and node directories agree with status.copies"
  else not_ok "$1: copies, labels and node directories agree with status.copies" \
    "$(head -n 25 <<<"$out"; [ "$(wc -l <<<"$out")" -le 25 ] || echo "... $(($(wc -l <<<"$out") - 25)) more")"; fi
}
leftovers() { # prints whatever vck left in the cluster: data directories, node labels, pods, PVs, claims, peer Secrets
  find "$DATA/nodes" -name 'vck-resource-*' -prune -print 2>/dev/null | sed "s#^$DATA/##"
  k get nodes -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.metadata.labels}{"\n"}{end}' 2>/dev/null |
    grep -o '^[^ ]* \|"vck\.intelai\.org/[^"]*":"[^"]*"' | awk '/^[^"]/ {n=$1; next} {print "label " n " " $0}'
  k get pods,pv,pvc -A -o name 2>/dev/null
  k get secrets -A -o name 2>/dev/null | { grep '/vck-peer-' || true; }
  k get vckvm -A -o name 2>/dev/null
}
nothing_left() { [ -z "$(leftovers)" ]; }
