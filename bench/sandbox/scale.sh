#!/usr/bin/env bash
# vck-sandbox at scale: the writes vck-controller makes for N NFS VolumeManagers (create,
# finalizer patch, pre-bound PV and claim, status patch, event), sent 32 at a time by
# bench/controller/load_vms `raw`, against a fresh 3-node vck-sandbox for each N. Reports
# writes/s, the seconds until the sandbox's PV binder has bound every claim, and the sandbox's
# CPU seconds per VolumeManager from its start until then plus 5 s of quiet (its simulated
# controllers' steady cost). Goals (#46): >= 4,000 writes/s; CPU per object at 10,000 at most
# 1.3x that at 1,000.
#   bench/sandbox/scale.sh BUILD_DIR [N ...]   (BUILD_DIR: a release build with -Dbench=true;
#                                              default N: 1000 10000)
set -euo pipefail
B=$(realpath "${1:?usage: scale.sh BUILD_DIR [N ...]}")
shift
[ $# -gt 0 ] || set -- 1000 10000
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d /tmp/vck-bench-scale.XXXXXX)
SPID=
trap '[ -n "$SPID" ] && kill $SPID 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
hz=$(getconf CLK_TCK)
cpu_of() { awk -v hz="$hz" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }
for N in "$@"; do
  rm -f "$W/kc"
  "$B/bin/vck-sandbox" --port 0 --nodes 3 --kubeconfig-out "$W/kc" >"$W/sandbox.log" 2>&1 & SPID=$!
  for _ in $(seq 100); do [ -s "$W/kc" ] && break; sleep 0.1; done
  kubectl --kubeconfig "$W/kc" apply -f "$ROOT/crds/volumemanager.yaml" >/dev/null
  until kubectl --kubeconfig "$W/kc" get vckvm >/dev/null 2>&1; do sleep 0.1; done
  before=$(cpu_of $SPID)
  t0=$(date +%s.%N)
  rate=$("$B/bench/controller/load_vms" "$W/kc" raw "$N")
  until [ "$(kubectl --kubeconfig "$W/kc" get pvc -o jsonpath='{range .items[?(@.status.phase=="Bound")]}x{end}' | wc -c)" -ge "$N" ]; do
    sleep 2
  done
  bound=$(python3 -c "import time; print(round(time.time() - $t0, 1))")
  sleep 5
  after=$(cpu_of $SPID)
  echo "N=$N: $rate; every claim Bound after ${bound}s; sandbox CPU $(python3 -c "print(round($after - $before, 2))")s," \
       "$(python3 -c "print(round(($after - $before) * 1000 / $N, 3))") ms per VolumeManager"
  kill $SPID; wait $SPID 2>/dev/null || true; SPID=
done
