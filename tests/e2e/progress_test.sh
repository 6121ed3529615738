#!/usr/bin/env bash
# Download progress end to end: vck-controller in vck-sandbox (2 nodes whose kubelet really runs
# vck-fetch) against s3rver behind a throttling proxy, so that a download is caught in its
# middle. Mid-download, `kubectl get vckvm` shows a Progress share strictly between 0% and
# 100% and the status' copy records non-zero bytes below their totals; at the end 100%, and
# each copy's totals are the dataset's exact file and byte counts (the volume's, their sum).
# Usage: progress_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
# Prints TAP lines; exits non-zero if any check failed. Stops everything it started.
set -u
# shellcheck source=../lifecycle/lib.sh
. "$(dirname "$(realpath "$0")")/../lifecycle/lib.sh"
harness_init progress "$@"

# ---- the dataset: 12 files of 160 KiB and an empty one, about 1.9 MiB ----
start_s3rver
SRC=$WORK/src/slow
mkdir -p "$SRC/sub"
for i in $(seq 1 12); do head -c $((160 * 1024)) /dev/urandom >"$SRC/sub/part-$i.bin"; done
: >"$SRC/empty.txt"
FILES=$(find "$SRC" -type f | wc -l)
BYTES=$(find "$SRC" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
rm -rf "$WORK/upload" && cp -r "$SRC" "$WORK/upload" && seed "$WORK/upload" s3://data/slow/ && rm -rf "$WORK/upload" "$WORK/upload.vck-fetch"
# Two replicas share 192 KiB/s: about 20 s per download, progress read every 2 s.
start_throttle $((192 * 1024))

start_sandbox 2
start_controller --download-progress-interval=2s
controller_ready || bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"

S3=$ENDPOINT ENDPOINT=$THROTTLED
vm slow "$(s3vol data 2 '      sourceURL: s3://data/slow/')"
ENDPOINT=$S3

progress_column() { # the PROGRESS cell of `kubectl get vckvm NAME`, read at its header's offset
  local table header row pre cell
  table=$(k get vckvm "$1" 2>/dev/null) || return 1
  header=${table%%$'\n'*} row=${table#*$'\n'}
  [[ "$header" == *PROGRESS* ]] || return 1
  pre=${header%%PROGRESS*}
  cell=${row:${#pre}}
  echo "${cell%% *}"
}
copies_mid() { # true when some copy record has 0 < bytesDone < bytesTotal
  k get vckvm "$1" -o json 2>/dev/null | "$PYTHON" -c '
import json, sys
copies = json.load(sys.stdin).get("status", {}).get("copies", [])
sys.exit(0 if any(0 < c.get("bytesDone", 0) < c.get("bytesTotal", 0) for c in copies) else 1)'
}

# ---- mid-download ----
seen="" mid_copy=0 end=$((SECONDS + 120))
while [ "$SECONDS" -lt "$end" ]; do
  p=$(progress_column slow)
  if [[ "$p" =~ ^([0-9]+)%$ ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] && [ "${BASH_REMATCH[1]}" -lt 100 ]; then
    seen=$p
    copies_mid slow && mid_copy=1
    [ "$mid_copy" = 1 ] && break
  fi
  state_is slow Running && break
  sleep 0.3
done
if [ -n "$seen" ]; then ok "mid-download: kubectl get shows Progress $seen, strictly between 0% and 100%"
else not_ok "mid-download: kubectl get shows Progress strictly between 0% and 100%" "$(k get vckvm slow; tail -n 5 "$WORK/controller.log")"; fi
check "mid-download: a copy record holds non-zero bytes below its total" test "$mid_copy" = 1
pod=$(k get pods -o name | head -n 1)
check "download pods ask vck-fetch for a progress line every second (half the 2 s read interval)" \
  grep -q -- '--progress-interval=1' <<<"$(k get "$pod" -o jsonpath='{.spec.containers[*].args}' 2>/dev/null)"

# ---- the end ----
if wait_state slow Running 180; then ok "the download finishes: Running"; else bail "the download never finished" "$(k get vckvm slow -o yaml)"; fi
check "at the end kubectl get shows Progress 100%" test "$(progress_column slow)" = "100%"
k get vckvm slow -o json >"$WORK/final.json"
exact=$("$PYTHON" - "$WORK/final.json" "$FILES" "$BYTES" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))["status"]
files, size = int(sys.argv[2]), int(sys.argv[3])
bad = []
copies = [c for c in st.get("copies", []) if c.get("phase") == "Ready"]
if len(copies) != 2:
    bad.append(f"{len(copies)} Ready copies, expected 2")
for c in copies:
    got = (c.get("filesDone"), c.get("filesTotal"), c.get("bytesDone"), c.get("bytesTotal"))
    if got != (files, files, size, size):
        bad.append(f"copy on {c.get('node')}: files {got[0]}/{got[1]}, bytes {got[2]}/{got[3]}; dataset {files} files, {size} bytes")
v = st["volumes"][0]
got = (v.get("filesDone"), v.get("filesTotal"), v.get("bytesDone"), v.get("bytesTotal"))
if got != (2 * files, 2 * files, 2 * size, 2 * size):
    bad.append(f"volume: files {got[0]}/{got[1]}, bytes {got[2]}/{got[3]}; expected twice {files} files, {size} bytes")
print("; ".join(bad))
PY
)
check "at the end each copy records the dataset's exact totals ($FILES files, $BYTES bytes) and the volume their sum" test -z "$exact"
[ -z "$exact" ] || echo "#   $exact"

# ---- deletion still cleans up ----
k delete vckvm slow --wait=false >/dev/null 2>&1
if wait_for 120 gone slow; then ok "delete: the VolumeManager goes once cleanup is done"; else not_ok "delete: the VolumeManager goes" "$(k get vckvm slow -o yaml)"; fi

tap_end
