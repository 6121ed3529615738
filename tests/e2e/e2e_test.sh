#!/usr/bin/env bash
# End to end: vck-controller against vck-sandbox (3 simulated nodes whose kubelet really runs
# vck-fetch, and a stand-in pachctl) and s3rver, driven by kubectl. Every case of the original
# VCK's e2e suite, each checking state, messages, status and the sub-resources that exist,
# then deletion cleaning data and node labels.
# Usage: e2e_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
# Prints TAP lines; exits non-zero if any check failed. Stops everything it started.
set -u
SANDBOX=$(realpath "${1:?usage: e2e_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]}")
CONTROLLER=$(realpath "${2:?missing VCK_CONTROLLER}")
FETCH=$(realpath "${3:?missing VCK_FETCH}")
KUBECTL=${4:-kubectl}
ROOT=${VCK_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
S3RVER_DIR=${S3RVER_DIR:-$ROOT/.cache/s3rver}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/vck-e2e.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

N=0 FAILED=0
ok() { N=$((N + 1)); echo "ok - $1"; }
not_ok() { N=$((N + 1)); FAILED=$((FAILED + 1)); echo "not ok - $1"; [ $# -gt 1 ] && sed 's/^/#   /' <<<"$2"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d"; fi; }
bail() { echo "not ok - $1"; [ $# -gt 1 ] && sed 's/^/#   /' <<<"$2"; echo "# log tails:"; tail -n 20 "$WORK"/*.log | sed 's/^/#   /'; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { # wait_for SECONDS command...
  local limit=$1; shift
  for _ in $(seq 1 $((limit * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  return 1
}
k() { "$KUBECTL" --kubeconfig "$WORK/kubeconfig" "$@"; }
jp() { k get vckvm "$1" -o "jsonpath=$2" 2>/dev/null; }
state_is() { [ "$(jp "$1" '{.status.state}')" = "$2" ]; }
wait_state() { # wait_state NAME STATE: waits up to 120 s
  wait_for 120 state_is "$1" "$2"
}

[ -f "$S3RVER_DIR/node_modules/s3rver/package.json" ] || bail "s3rver is not installed in $S3RVER_DIR (run scripts/bootstrap)"

# ---- s3rver with bucket "data", seeded by vck-fetch itself ----
S3PORT=$(free_port)
ENDPOINT="http://127.0.0.1:$S3PORT"
mkdir -p "$WORK/s3"
S3RVER_DIR=$S3RVER_DIR NODE_OPTIONS=--openssl-legacy-provider \
  node "$ROOT/tests/s3/s3rver.js" "$S3PORT" "$WORK/s3" >"$WORK/s3rver.log" 2>&1 &
PIDS+=($!)
wait_for 30 curl -s -o /dev/null "$ENDPOINT/" || bail "s3rver did not start"
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
SRC=$WORK/src
mkdir -p "$SRC/set/sub"
for i in $(seq 1 12); do head -c $((1000 * i)) /dev/urandom >"$SRC/set/file-$i.txt"; done
for i in $(seq 1 6); do head -c $((3000 * i)) /dev/urandom >"$SRC/set/sub/img-$i.jpg"; done
echo "one object" >"$SRC/set/single.csv"
"$FETCH" sync-back "$SRC/set" s3://data/set/ --endpoint "$ENDPOINT" --once --progress-interval 0 \
  --termination-log "$WORK/seed.json" >"$WORK/seed.log" 2>&1 || bail "seeding the bucket failed" "$(cat "$WORK/seed.log")"
mkdir -p "$WORK/rs"; echo "resync me" >"$WORK/rs/notes.txt"
"$FETCH" sync-back "$WORK/rs" s3://data/resync/ --endpoint "$ENDPOINT" --once --progress-interval 0 \
  --termination-log "$WORK/seed2.json" >>"$WORK/seed.log" 2>&1 || bail "seeding the resync prefix failed"

# ---- the cluster: 3 nodes whose kubelet runs vck-fetch and a stand-in pachctl ----
DATA=$WORK/cluster
"$SANDBOX" --port 0 --nodes 3 --data-root "$DATA" --kubeconfig-out "$WORK/kubeconfig" \
  --image "vck-fetch:e2e=exec:$FETCH" --image "pachctl:e2e=exec:$ROOT/tests/e2e/fake-pachctl" \
  >"$WORK/sandbox.log" 2>&1 &
PIDS+=($!)
wait_for 60 test -s "$WORK/kubeconfig" || bail "vck-sandbox did not write its kubeconfig"
wait_for 60 k get nodes || bail "kubectl cannot reach vck-sandbox"
k apply -f "$ROOT/crds/volumemanager.yaml" >"$WORK/apply.log" 2>&1 || bail "applying the CRD failed" "$(cat "$WORK/apply.log")"
wait_for 30 k get vckvm || bail "the VolumeManager resource is not served"
k create secret generic s3-creds --from-literal=awsAccessKeyID=S3RVER --from-literal=awsSecretAccessKey=S3RVER \
  --dry-run=client -o json | k create -f - >/dev/null || bail "creating the credentials Secret failed"

# ---- the controller ----
HP=$(free_port)
MP=$(free_port)
"$CONTROLLER" --kubeconfig "$WORK/kubeconfig" --data-mover-image vck-fetch:e2e --pachctl-image pachctl:e2e \
  --health-probe-bind-address "127.0.0.1:$HP" --metrics-bind-address "127.0.0.1:$MP" --workers 4 \
  >"$WORK/controller.log" 2>&1 &
PIDS+=($!)
if wait_for 60 curl -sf "http://127.0.0.1:$HP/readyz"; then ok "vck-controller becomes ready once its caches synced"; else bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"; fi

vm() { # vm NAME VOLUME_YAML...: applies a VolumeManager whose volumeConfigs are the given items
  local name=$1; shift
  { printf 'apiVersion: vck.intelai.org/v1alpha1\nkind: VolumeManager\nmetadata:\n  name: %s\n  namespace: default\nspec:\n  volumeConfigs:\n' "$name"
    for v in "$@"; do printf '%s\n' "$v"; done; } | k apply -f - >"$WORK/last-apply.log" 2>&1
}
s3vol() { # s3vol ID REPLICAS [EXTRA OPTION LINES]
  printf '  - id: %s\n    replicas: %s\n    sourceType: S3\n    accessMode: ReadWriteOnce\n    capacity: 1Gi\n    labels:\n      key1: val1\n    options:\n      awsCredentialsSecretName: s3-creds\n      endpointURL: %s\n%s' \
    "$1" "$2" "$ENDPOINT" "${3:-      sourceURL: s3://data/set/}"
}
nfsvol() { # nfsvol ID [OPTION LINES]
  printf '  - id: %s\n    replicas: 1\n    sourceType: NFS\n    accessMode: ReadWriteMany\n    capacity: 1Gi\n    labels:\n      key1: val1\n    options:\n%s' \
    "$1" "${2:-      server: 10.0.0.10
      path: /exports/data}"
}
volmsg() { jp "$1" "{.status.volumes[?(@.id==\"$2\")].message}"; }
node_dir_of() { # node_dir_of VM ID: the host directories (one per node) holding the volume
  local path; path=$(jp "$1" "{.status.volumes[?(@.id==\"$2\")].volumeSource.hostPath.path}")
  [ -n "$path" ] && ls -d "$DATA"/nodes/*"$path" 2>/dev/null
}

# ---- S3, one replica ----
vm s3-single "$(s3vol data 1)"
if wait_state s3-single Running; then ok "S3 single: Running"; else not_ok "S3 single: Running" "$(k get vckvm s3-single -o yaml)"; fi
check "S3 single: overall message" test "$(jp s3-single '{.status.message}')" = "successfully deployed all sub-resources"
check "S3 single: volume message is success" test "$(volmsg s3-single data)" = "success"
dirs=$(node_dir_of s3-single data)
check "S3 single: the data is on exactly one node" test "$(wc -w <<<"$dirs")" = 1
check "S3 single: byte-identical to the bucket" diff -r -x .vck-fetch "$SRC/set" "$dirs"
key=$(jp s3-single '{.status.volumes[0].nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key}')
check "S3 single: status nodeAffinity requires the node label" test -n "$key"
check "S3 single: exactly the node holding the data carries that label" \
  test "$(k get nodes -l "$key" -o name | wc -l)" = 1
check "S3 single: Ready condition is True" test "$(jp s3-single '{.status.conditions[?(@.type=="Ready")].status}')" = True

# ---- S3 with distributionStrategy ----
vm s3-dist "$(s3vol dist 2 '      sourceURL: s3://data/set/
      distributionStrategy: "{\"*.txt\": 1, \"sub/*.jpg\": 1}"')"
if wait_state s3-dist Running; then ok "S3 distributionStrategy: Running"; else not_ok "S3 distributionStrategy: Running" "$(k get vckvm s3-dist -o yaml)"; fi
dirs=$(node_dir_of s3-dist dist)
check "S3 distributionStrategy: two nodes hold data" test "$(wc -w <<<"$dirs")" = 2
txt_only=0 jpg_only=0
for d in $dirs; do
  n_txt=$(find "$d" -name '*.txt' | wc -l); n_jpg=$(find "$d" -name '*.jpg' | wc -l)
  [ "$n_txt" = 12 ] && [ "$n_jpg" = 0 ] && txt_only=1
  [ "$n_jpg" = 6 ] && [ "$n_txt" = 0 ] && jpg_only=1
done
check "S3 distributionStrategy: each replica holds only its glob's subset" test "$txt_only$jpg_only" = 11

# ---- S3 with resync ----
vm s3-resync "$(s3vol rs 1 '      sourceURL: s3://data/resync/
      resync: "true"')"
if wait_state s3-resync Running; then ok "S3 resync: Running"; else not_ok "S3 resync: Running" "$(k get vckvm s3-resync -o yaml)"; fi
d=$(node_dir_of s3-resync rs)
check "S3 resync: the download ran first (an init container) and landed in the volume" test "$(cat "$d/notes.txt" 2>/dev/null)" = "resync me"
echo "written on the node" >"$d/from-node.txt" 2>/dev/null
if wait_for 90 "$FETCH" fetch s3://data/resync/from-node.txt "$WORK/back" --endpoint "$ENDPOINT" \
     --progress-interval 0 --termination-log "$WORK/back.json" && cmp -s "$d/from-node.txt" "$WORK/back/from-node.txt"; then
  ok "S3 resync: a file written on the node is synced back to the bucket"
else
  not_ok "S3 resync: a file written on the node is synced back to the bucket"
fi

# ---- NFS, and S3 beside NFS ----
vm nfs "$(nfsvol share)"
if wait_state nfs Running; then ok "NFS: Running"; else not_ok "NFS: Running" "$(k get vckvm nfs -o yaml)"; fi
claim=$(jp nfs '{.status.volumes[0].volumeSource.persistentVolumeClaim.claimName}')
check "NFS: status names a claim that exists and is Bound" test "$(k get pvc "$claim" -o 'jsonpath={.status.phase}' 2>/dev/null)" = Bound
pv=$(k get pvc "$claim" -o 'jsonpath={.spec.volumeName}' 2>/dev/null)
check "NFS: the claim is pre-bound to a PV for the export" test "$(k get pv "$pv" -o 'jsonpath={.spec.nfs.server}:{.spec.nfs.path}' 2>/dev/null)" = "10.0.0.10:/exports/data"
vm both "$(s3vol s3 1)" "$(nfsvol nfs)"
if wait_state both Running; then ok "S3 and NFS together: Running"; else not_ok "S3 and NFS together: Running" "$(k get vckvm both -o yaml)"; fi
check "S3 and NFS together: both volumes succeed" test "$(volmsg both s3)/$(volmsg both nfs)" = "success/success"

# ---- Pachyderm, recursive and not ----
pachvol() { # pachvol ID INPUT
  printf '  - id: %s\n    replicas: 1\n    sourceType: Pachyderm\n    accessMode: ReadWriteOnce\n    capacity: 1Gi\n    labels:\n      key1: val1\n    options:\n      repo: images\n      branch: master\n      inputPath: %s\n      outputPath: out\n' "$1" "$2"
}
vm pach "$(pachvol rec /train/)" "$(pachvol one /train/a.png)"
if wait_state pach Running; then ok "Pachyderm recursive and single file: Running"; else not_ok "Pachyderm: Running" "$(k get vckvm pach -o yaml)"; fi
rec=$(node_dir_of pach rec); one=$(node_dir_of pach one)
check "Pachyderm recursive: pachctl got --recursive and wrote into the volume directory" grep -qx -- --recursive "$rec/out/pachyderm-file"
check "Pachyderm single file: no --recursive, output is the file" test -f "$one/out" -a -z "$(grep -x -- --recursive "$one/out")"

# ---- failures: state Failed with the original's messages ----
fails() { # fails NAME ID EXPECTED-MESSAGE-PREFIX
  if wait_state "$1" Failed && [[ "$(volmsg "$1" "$2")" == "$3"* ]]; then ok "$1: Failed with \"$3\""
  else not_ok "$1: Failed with \"$3\"" "state=$(jp "$1" '{.status.state}') message=$(volmsg "$1" "$2")"; fi
}
nolabels=$(s3vol v 1 | sed '/labels:/,/key1/d')
vm no-labels "$nolabels"
if grep -q "labels" "$WORK/last-apply.log" && ! k get vckvm no-labels >/dev/null 2>&1; then
  ok "no labels: refused at admission ($(head -n1 "$WORK/last-apply.log" | cut -c1-80))"
else
  fails no-labels v "labels cannot be empty"
fi
vm no-creds "$(s3vol v 1 | sed '/awsCredentialsSecretName/d')"
fails no-creds v "awsCredentialsSecretName key has to be set in options"
vm bad-resync "$(s3vol v 1 '      sourceURL: s3://data/set/
      resync: "maybe"')"
fails bad-resync v "error while parsing resync option"
vm resync-replicas "$(s3vol v 2 '      sourceURL: s3://data/set/
      resync: "true"')"
fails resync-replicas v "replicas cannot be > 1 when resync is set"
vm nfs-no-server "$(nfsvol v '      path: /exports/data')"
fails nfs-no-server v "server has to be set in options"
vm nfs-no-path "$(nfsvol v '      server: 10.0.0.10')"
fails nfs-no-path v "path has to be set in options"
vm s3-missing "$(s3vol v 1 '      sourceURL: s3://data/no/such/object.bin')"
fails s3-missing v "error during data download using pod"
vm s3-bad-endpoint "$(s3vol v 1 '      sourceURL: s3://data/set/' | sed "s#$ENDPOINT#http://127.0.0.1:1#")"
fails s3-bad-endpoint v "error during data download using pod"
# A data path that a symlink on the nodes leads out of the allowed root: the kubelet refuses
# to mount it, the volume fails, nothing is written through the link, and delete finishes.
mkdir -p "$WORK/outside"
for n in "$DATA"/nodes/*/; do mkdir -p "$n/var/datasets" && ln -s "$WORK/outside" "$n/var/datasets/escape"; done
vm s3-symlink "$(s3vol v 1 '      sourceURL: s3://data/set/
      dataPath: /var/datasets/escape')"
fails s3-symlink v "error during data download using pod"
check "s3-symlink: the message says the kubelet refused the subPath" grep -q "failed to create subPath directory" <<<"$(volmsg s3-symlink v)"
check "s3-symlink: nothing was written through the link" test -z "$(ls -A "$WORK/outside")"
k delete vckvm s3-symlink --wait=false >/dev/null 2>&1
if wait_for 120 bash -c "! $KUBECTL --kubeconfig $WORK/kubeconfig get vckvm s3-symlink"; then ok "s3-symlink: delete finishes"; else not_ok "s3-symlink: delete finishes" "$(k get vckvm s3-symlink -o yaml)"; fi
check "s3-symlink: the link's target is untouched" test -d "$WORK/outside" -a -z "$(ls -A "$WORK/outside")"
vm mixed "$(s3vol bad 1 '      sourceURL: s3://data/no/such/object.bin')" "$(nfsvol good)"
fails mixed bad "error during data download using pod"
check "mixed: the healthy NFS volume still succeeds" test "$(volmsg mixed good)" = success
check "mixed: overall message is the original's" test "$(jp mixed '{.status.message}')" = "failed to deploy all the sub-resources"

# ---- deletion cleans data on every node, node labels and sub-resources ----
held=$(node_dir_of s3-dist dist)
k delete vckvm s3-dist --wait=false >/dev/null 2>&1
if wait_for 120 bash -c "! $KUBECTL --kubeconfig $WORK/kubeconfig get vckvm s3-dist"; then ok "delete: the VolumeManager goes once cleanup is done"; else not_ok "delete: the VolumeManager goes" "$(k get vckvm s3-dist -o yaml)"; fi
gone=1; for d in $held; do [ -e "$d" ] && gone=0; done
check "delete: the data directories on both nodes are removed" test $gone = 1
check "delete: no node keeps a label for the volume" test -z "$(k get nodes -o jsonpath='{.items[*].metadata.labels}' | grep -o 's3-dist' || true)"

curl -sf "http://127.0.0.1:$MP/metrics" >"$WORK/metrics.txt"
check "metrics: reconciles are counted per controller and result" grep -q 'controller_runtime_reconcile_total{controller="volumemanager",result="success"}' "$WORK/metrics.txt"

echo "1..$N"
[ $FAILED -eq 0 ]
