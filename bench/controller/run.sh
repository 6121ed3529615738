#!/usr/bin/env bash
# VCK controller benchmark: N VolumeManagers to Running against vck-sandbox, with
# vck-controller as its own process. KIND nfs (default): one NFS volume each (the sandbox's
# PV binder binds the pre-bound claims). KIND s3: one S3 copy each (the sandbox's kubelet
# runs the download pods, which succeed); its figures are the writes per copy.
# Reports wall time, API requests per VolumeManager by verb (from the controller's
# rest_client_requests_total), controller CPU seconds and peak RSS (VmHWM). With OTHER > 0,
# that many pods that are not VCK's are created first (the rest of a real cluster).
#   bench/controller/run.sh BUILD_DIR [N] [OTHER] [KIND]   (BUILD_DIR: a release build with -Dbench=true)
# QPS (default 1000, burst twice it) is the controller's client rate limit: at 10,000
# VolumeManagers its 50,000 writes take 50 s at 1000/s, so QPS=10000 measures the sandbox and
# the controller instead of the limit.
set -euo pipefail
B=$(realpath "${1:?usage: run.sh BUILD_DIR [N] [OTHER] [KIND]}")
N=${2:-1000}
OTHER=${3:-0}
KIND=${4:-nfs}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d /tmp/vck-bench-ctl.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$W"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
"$B/bin/vck-sandbox" --port 0 --nodes 3 --kubeconfig-out "$W/kc" >"$W/sandbox.log" 2>&1 & SPID=$!; pids+=($SPID)
for _ in $(seq 100); do [ -s "$W/kc" ] && break; sleep 0.1; done
kubectl --kubeconfig "$W/kc" apply -f "$ROOT/crds/volumemanager.yaml" >/dev/null
until kubectl --kubeconfig "$W/kc" get vckvm >/dev/null 2>&1; do sleep 0.1; done
if [ "$OTHER" -gt 0 ]; then "$B/bench/controller/load_vms" "$W/kc" pods "$OTHER"; fi
MP=$(port)
"$B/bin/vck-controller" --kubeconfig "$W/kc" --metrics-bind-address "127.0.0.1:$MP" --health-probe-bind-address 0 \
  --qps ${QPS:-1000} --burst $((2 * ${QPS:-1000})) --workers 4 >"$W/controller.log" 2>&1 & CPID=$!; pids+=($CPID)
until curl -sf "http://127.0.0.1:$MP/metrics" >/dev/null; do sleep 0.1; done
sleep 1
curl -s "http://127.0.0.1:$MP/metrics" | grep '^rest_client_requests_total' >"$W/before"
secs=$("$B/bench/controller/load_vms" "$W/kc" "$N" default "$KIND")
sleep 2
curl -s "http://127.0.0.1:$MP/metrics" | grep '^rest_client_requests_total' >"$W/after"
hz=$(getconf CLK_TCK)
read -r ut st < <(awk '{print $14, $15}' "/proc/$CPID/stat")
read -r sut sst < <(awk '{print $14, $15}' "/proc/$SPID/stat")
cpu=$(python3 -c "print(($ut + $st) / $hz)")
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$CPID/status")
reconciles=$(curl -s "http://127.0.0.1:$MP/metrics" | awk '/^controller_runtime_reconcile_total/ {s += $2} END {print s}')
echo "N=$N $KIND VolumeManagers to Running: ${secs}s"
python3 - "$W/before" "$W/after" "$N" <<'PY'
import re, sys
def load(p):
    out = {}
    for line in open(p):
        m = re.match(r'rest_client_requests_total\{(.*)\} (\S+)', line)
        if not m: continue
        labels = dict(kv.split('=', 1) for kv in m.group(1).split(','))
        method = labels.get('method', '?').strip('"')
        out[method] = out.get(method, 0) + float(m.group(2))
    return out
b, a, n = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
for m in sorted(a):
    print(f"  {m:6s} {(a[m] - b.get(m, 0)) / n:.2f} requests per VolumeManager")
PY
echo "  controller CPU: ${cpu}s total, $(python3 -c "print(round($cpu * 1000 / max(1, $reconciles), 3))") ms per reconcile ($reconciles reconciles)"
echo "  controller peak RSS: $((hwm / 1024)) MiB"
echo "  sandbox CPU: $(python3 -c "print(($sut + $sst) / $hz)")s"
