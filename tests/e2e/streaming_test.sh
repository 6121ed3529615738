#!/usr/bin/env bash
# First batches end to end (options.firstBatch, docs/user.md "Starting on the first batch"):
# vck-controller in vck-sandbox (2 nodes whose kubelet really runs vck-fetch) against s3rver
# behind a throttling proxy. A volume with firstBatch "10%" is Ready (reason FirstBatchReady)
# while its downloads still run; at that moment the files the status names as the first batch
# (the first prefixFiles in key order) are on every labelled node, whole and byte-identical to
# the source; at no poll during the download does the destination show a partial file; then
# DataComplete follows (kubectl wait), the state is Running, and every file is identical.
# Usage: streaming_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
# Prints TAP lines; exits non-zero if any check failed. Stops everything it started.
set -u
# shellcheck source=../lifecycle/lib.sh
. "$(dirname "$(realpath "$0")")/../lifecycle/lib.sh"
harness_init streaming "$@"

# ---- the dataset: 40 small files first in key order, then 2 large ones (about 4.6 MiB) ----
start_s3rver
SRC=$WORK/src/stream
mkdir -p "$SRC/sub"
for i in $(seq -w 0 39); do head -c $((16 * 1024)) /dev/urandom >"$SRC/a-$i.bin"; done
head -c $((2 * 1024 * 1024)) /dev/urandom >"$SRC/sub/z-big-1.bin"
head -c $((2 * 1024 * 1024)) /dev/urandom >"$SRC/z-big-2.bin"
FILES=$(find "$SRC" -type f | wc -l)
rm -rf "$WORK/upload" && cp -r "$SRC" "$WORK/upload" && seed "$WORK/upload" s3://data/stream/ && rm -rf "$WORK/upload" "$WORK/upload.vck-fetch"
# Two replicas share 320 KiB/s: about 30 s for everything, the first 10% in a few seconds.
start_throttle $((320 * 1024))

start_sandbox 2
start_controller --download-progress-interval=1s
controller_ready || bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"

# ---- refused values are refused with the accepted forms ----
S3=$ENDPOINT ENDPOINT=$THROTTLED
if vm bad "$(s3vol data 1 '      sourceURL: s3://data/stream/
      firstBatch: "a quarter"')"; then
  wait_state bad Failed 30
  msg=$(volmsg bad data)
else msg=$(cat "$WORK/last-apply.log"); fi
check "an invalid firstBatch is refused, naming the accepted forms" grep -q 'firstBatch has to be a share of the data such as "25%"' <<<"$msg"
[ -n "$msg" ] && echo "#   $msg"
k delete vckvm bad --wait=false >/dev/null 2>&1

vm stream "$(s3vol data 2 '      sourceURL: s3://data/stream/
      firstBatch: "10%"')"
ENDPOINT=$S3

# ---- the poller: every visible file of each node's copy, compared with the source ----
"$PYTHON" - "$WORK/kubeconfig" "$KUBECTL" "$DATA" "$SRC" "$WORK/poll" <<'PY' >"$WORK/poll.log" 2>&1 &
import json, os, subprocess, sys, time
kubeconfig, kubectl, data, src, out = sys.argv[1:]
def copies():
    r = subprocess.run([kubectl, "--kubeconfig", kubeconfig, "get", "vckvm", "stream", "-o", "json"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return []
    return (json.loads(r.stdout).get("status") or {}).get("copies") or []
source = {}
for d, _, names in os.walk(src):
    for n in names:
        p = os.path.join(d, n)
        source[os.path.relpath(p, src)] = open(p, "rb").read()
polls = violations = 0
seen_files = set()
deadline = time.time() + 240
dirs = []
while time.time() < deadline and not os.path.exists(out + ".stop"):
    if not dirs or polls % 20 == 0:
        dirs = [os.path.join(data, "nodes", c["node"], c["path"].lstrip("/")) for c in copies()]
    for root in dirs:
        for d, _, names in os.walk(root):
            for n in names:
                p = os.path.join(d, n)
                rel = os.path.relpath(p, root)
                try:
                    got = open(p, "rb").read()
                except FileNotFoundError:
                    continue
                seen_files.add(rel)
                if rel not in source:
                    violations += 1
                    print(f"unknown file {p} ({len(got)} bytes)")
                elif got != source[rel]:
                    violations += 1
                    print(f"partial or wrong file {p}: {len(got)} of {len(source[rel])} bytes")
    polls += 1
    time.sleep(0.05)
json.dump({"polls": polls, "violations": violations, "seen": len(seen_files)}, open(out, "w"))
PY
POLLER=$!
PIDS+=($POLLER)

# ---- the first batch ----
# Polls the whole object each time: the Ready reason, DataComplete, prefixFiles and the copies
# are read from one version of it.
first="" end=$((SECONDS + 120))
while [ "$SECONDS" -lt "$end" ]; do
  k get vckvm stream -o json >"$WORK/first.json" 2>/dev/null || { sleep 0.3; continue; }
  first=$("$PYTHON" - "$WORK/first.json" <<'PY'
import json, sys
st = json.load(open(sys.argv[1])).get("status") or {}
cond = {c["type"]: c for c in st.get("conditions", [])}
r = cond.get("Ready", {})
if r.get("status") == "True" and r.get("reason") == "FirstBatchReady":
    print("first")
elif cond.get("DataComplete", {}).get("status") == "True":
    print("complete")
PY
)
  [ -n "$first" ] && break
  sleep 0.2
done
if [ "$first" = first ]; then ok "the volume is Ready with reason FirstBatchReady before its download completes"
else bail "the volume was never Ready on its first batch alone (got: ${first:-nothing})" "$(k get vckvm stream -o yaml; tail -n 5 "$WORK/controller.log")"; fi

verdict=$("$PYTHON" - "$WORK/first.json" "$WORK/kubeconfig" "$KUBECTL" "$DATA" "$SRC" <<'PY'
import json, os, subprocess, sys
doc, kubeconfig, kubectl, data, src = sys.argv[1:]
st = json.load(open(doc))["status"]
bad = []
cond = {c["type"]: c for c in st.get("conditions", [])}
if cond.get("DataComplete", {}).get("status") != "False":
    bad.append(f"DataComplete is {cond.get('DataComplete')} while the first batch is Ready")
if st.get("state") == "Running":
    bad.append("state Running before the data is complete")
v = st["volumes"][0]
n = v.get("prefixFiles")
if not n:
    bad.append(f"volume status names no first batch (prefixFiles {n}): {v}")
    n = 0
msg = v.get("message", "")
if "first batch ready" not in msg or f"the first {n} files in key order" not in msg:
    bad.append(f"volume message does not say how much: {msg!r}")
total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(src) for f in fs)
if n and v.get("prefixBytes", 0) * 10 < total:
    bad.append(f"prefixBytes {v.get('prefixBytes')} is below 10% of {total}")
path = v["volumeSource"]["hostPath"]["path"]
expr = v["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"][0]
nodes = json.loads(subprocess.run([kubectl, "--kubeconfig", kubeconfig, "get", "nodes", "-o", "json"],
                                  capture_output=True, text=True, check=True).stdout)["items"]
selected = [x["metadata"]["name"] for x in nodes if x["metadata"].get("labels", {}).get(expr["key"]) in expr["values"]]
if len(selected) != 2:
    bad.append(f"the status selects {selected}, expected both replicas' nodes")
copies = {c["node"]: c for c in st["copies"]}
downloading = [c for c in st["copies"] if c["phase"] == "Downloading"]
if not downloading:
    bad.append("no copy is still downloading at the first batch")
keys = sorted(os.path.relpath(os.path.join(d, f), src) for d, _, fs in os.walk(src) for f in fs)
batch = keys[:n]
for node in selected:
    c = copies.get(node)
    if not c or (c["phase"] != "Ready" and not c.get("firstBatchAt")):
        bad.append(f"node {node} is selected but its copy has no first batch: {c}")
    root = os.path.join(data, "nodes", node, path.lstrip("/"))
    for rel in batch:
        p = os.path.join(root, rel)
        if not os.path.isfile(p):
            bad.append(f"{node}: first-batch file {rel} missing")
        elif open(p, "rb").read() != open(os.path.join(src, rel), "rb").read():
            bad.append(f"{node}: first-batch file {rel} differs from the source")
print(json.dumps({"bad": bad, "batch": n, "first": batch[:1], "last": batch[-1:]}))
PY
)
check "at that moment DataComplete is False, the state not Running, a copy still downloading" \
  test -z "$(grep -o 'DataComplete is[^"]*\|state Running[^"]*\|no copy is still[^"]*' <<<"$verdict")"
check "the first batch's files (the first prefixFiles in key order) are whole and identical to the source on every selected node" \
  "$PYTHON" -c 'import json,sys; sys.exit(1 if json.loads(sys.argv[1])["bad"] else 0)' "$verdict"
echo "#   $verdict"

# ---- the rest ----
if k wait vckvm/stream --for=condition=DataComplete --timeout=180s >/dev/null 2>&1; then
  ok "kubectl wait --for=condition=DataComplete returns once everything has landed"
else bail "DataComplete never came" "$(k get vckvm stream -o yaml)"; fi
check "with all data landed the state is Running and Ready's reason is Running" \
  test "$(jp stream '{.status.state}/{.status.conditions[?(@.type=="Ready")].reason}')" = "Running/Running"
touch "$WORK/poll.stop"
wait "$POLLER" 2>/dev/null
polls=$(cat "$WORK/poll" 2>/dev/null)
check "no poll of the nodes' directories during the download showed a partial or unknown file" \
  "$PYTHON" -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if d["violations"] == 0 and d["polls"] > 10 and d["seen"] > 0 else 1)' "${polls:-{\}}"
echo "#   poller: ${polls:-none}"; grep -m 5 . "$WORK/poll.log" | sed 's/^/#   /'
path=$(jp stream '{.status.volumes[0].volumeSource.hostPath.path}')
same=0
for node in $(k get vckvm stream -o jsonpath='{.status.copies[*].node}'); do
  diff -r "$SRC" "$DATA/nodes/$node/${path#/}" >/dev/null 2>&1 && same=$((same + 1))
done
check "every file is byte-identical to the source on both replicas ($FILES files)" test "$same" = 2

k delete vckvm stream --wait=false >/dev/null 2>&1
if wait_for 120 gone stream; then ok "delete: the VolumeManager goes once cleanup is done"; else not_ok "delete: the VolumeManager goes" "$(k get vckvm stream -o yaml)"; fi

tap_end
