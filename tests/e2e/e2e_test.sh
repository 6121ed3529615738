#!/usr/bin/env bash
# End to end: vck-controller against vck-sandbox (3 simulated nodes whose kubelet really runs
# vck-fetch, and a stand-in pachctl) and s3rver, driven by kubectl. Every case of the original
# VCK's e2e suite, each checking state, messages, status and the sub-resources that exist,
# then deletion cleaning data and node labels.
# The manifests are spelled as the original suite wrote them (NFS volumes without replicas,
# capacity .5Gi: see s3vol and nfsvol in tests/lifecycle/lib.sh).
# Usage: e2e_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
# Prints TAP lines; exits non-zero if any check failed. Stops everything it started.
set -u
# shellcheck source=../lifecycle/lib.sh
. "$(dirname "$(realpath "$0")")/../lifecycle/lib.sh"
harness_init e2e "$@"

# ---- s3rver with bucket "data", seeded by vck-fetch itself ----
start_s3rver
SRC=$WORK/src
mkdir -p "$SRC/set/sub"
for i in $(seq 1 12); do head -c $((1000 * i)) /dev/urandom >"$SRC/set/file-$i.txt"; done
for i in $(seq 1 6); do head -c $((3000 * i)) /dev/urandom >"$SRC/set/sub/img-$i.jpg"; done
echo "one object" >"$SRC/set/single.csv"
seed "$SRC/set" s3://data/set/
mkdir -p "$WORK/rs"; echo "resync me" >"$WORK/rs/notes.txt"
seed "$WORK/rs" s3://data/resync/

# ---- the cluster: 3 nodes whose kubelet runs vck-fetch and a stand-in pachctl image ----
# The image is a directory laid out as pachyderm/pachctl is: /bin/sh and /usr/local/bin/pachctl,
# the latter the fake of pachctl 1.8 or of 2.x, as each Pachyderm case sets (pachctl_is). Its
# sh is the host's with the image's /usr/local/bin first on PATH: the sandbox runs host
# programs with the host's PATH, where no pachctl is.
PACHCTL_IMAGE=$WORK/pachctl-image
mkdir -p "$PACHCTL_IMAGE/bin" "$PACHCTL_IMAGE/usr/local/bin"
printf '#!/bin/sh\nPATH=%s:$PATH exec /bin/sh "$@"\n' "'$PACHCTL_IMAGE/usr/local/bin'" >"$PACHCTL_IMAGE/bin/sh"
chmod +x "$PACHCTL_IMAGE/bin/sh"
pachctl_is() { ln -sfn "$ROOT/tests/e2e/fake-pachctl-$1" "$PACHCTL_IMAGE/usr/local/bin/pachctl"; }
start_sandbox 3 --image "pachctl:e2e=root:$PACHCTL_IMAGE"

# ---- the controller ----
start_controller --pachctl-image pachctl:e2e
if controller_ready; then ok "vck-controller becomes ready once its caches synced"; else bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"; fi

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

# ---- /metrics: the data plane's figures against what happened (docs/ops.md "Data-plane metrics") ----
# Each replica's download read its files from the bucket once: the counter of a volume is the
# bytes its copies hold on the nodes; a node's gauge is the bytes of the copies on its disk.
copy_dirs() { for v in "$@"; do jp "$v" '{range .status.copies[*]}{.node} {.path}{"\n"}{end}'; done; }
read_as_held() { # read_as_held VM ID
  local want; want=$(bytes_under $(node_dir_of "$1" "$2"))
  [ "$want" -gt 0 ] && [ "$(metric "vck_source_read_bytes_total{namespace=\"default\",volumemanager=\"$1\",volume=\"$2\",source_type=\"S3\"}")" = "$want" ]
}
for v in "s3-single data" "s3-dist dist"; do
  set -- $v
  if wait_for 10 read_as_held "$1" "$2"; then ok "metrics: bytes read from S3 for $1 are the bytes its copies hold"
  else not_ok "metrics: bytes read from S3 for $1 are the bytes its copies hold" "$(curl -sf "http://127.0.0.1:$MP/metrics" | grep '^vck_source'; bytes_under $(node_dir_of "$1" "$2"))"; fi
done
node_bytes_match() {
  local n want
  for n in $(k get nodes -o 'jsonpath={.items[*].metadata.name}'); do
    want=$(bytes_under $(copy_dirs s3-single s3-dist | awk -v n="$n" -v d="$DATA/nodes/" '$1 == n { print d n $2 }'))
    [ "$(metric "vck_node_bytes{node=\"$n\"}")" = "$want" ] || return 1
  done
}
if wait_for 10 node_bytes_match; then ok "metrics: each node's bytes held are the bytes of the copies on its disk"
else not_ok "metrics: each node's bytes held are the bytes of the copies on its disk" "$(curl -sf "http://127.0.0.1:$MP/metrics" | grep '^vck_node'; copy_dirs s3-single s3-dist)"; fi
check "metrics: three S3 copies Ready, none downloading" \
  test "$(metric 'vck_copies{phase="Ready",source_type="S3"}') $(metric 'vck_copies{phase="Downloading",source_type="S3"}')" = "3 0"
check "metrics: each was timed from placement to Ready" test "$(metric 'vck_copy_ready_seconds_count{source_type="S3"}')" = 3
# deploy/monitoring/'s dashboard reads only families this controller declares.
undeclared=$(curl -sf "http://127.0.0.1:$MP/metrics" | "$PYTHON" -c '
import json, re, sys
declared = {l.split()[2] for l in sys.stdin if l.startswith("# HELP ")}
dash = json.load(open(sys.argv[1]))
used = {re.sub("_(bucket|sum|count)$", "", n) for p in dash["panels"] for t in p["targets"] for n in re.findall(r"\bvck_[a-z_]+", t["expr"])}
print(" ".join(sorted(used - declared)) if used else "none used")' "$ROOT/deploy/monitoring/vck-data-plane.json")
check "metrics: every family deploy/monitoring/vck-data-plane.json reads is declared on /metrics${undeclared:+ (not: $undeclared)}" test -z "$undeclared"

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

# ---- Pachyderm: pachctl 1.8 and 2.x, recursive, a single file, values a shell would misread ----
pachvol() { # pachvol ID REPO BRANCH INPUT (the values in YAML single quotes: none may hold one)
  printf "  - id: %s\n    replicas: 1\n    sourceType: Pachyderm\n    accessMode: ReadWriteOnce\n    capacity: 1Gi\n    labels:\n      key1: val1\n    options:\n      repo: '%s'\n      branch: '%s'\n      inputPath: '%s'\n      outputPath: out\n" "$@"
}
fake_refuses() { # fake_refuses VERSION ARGS...: fake-pachctl-VERSION exits non-zero, says why on stderr, writes nothing
  rm -rf "$WORK/refused"
  ! "$ROOT/tests/e2e/fake-pachctl-$1" "${@:2}" >/dev/null 2>"$WORK/refusal.txt" && [ -s "$WORK/refusal.txt" ] && [ ! -e "$WORK/refused" ]
}
check "fake pachctl 1.8 refuses 2.x's get file" fake_refuses 1.8 get file --recursive --output "$WORK/refused" -- images@master:/train/
check "fake pachctl 2.x refuses 1.x's get-file" fake_refuses 2 get-file --recursive --output="$WORK/refused" -- images master /train/
check "fake pachctl 2.x refuses 1.x's three arguments after get file" fake_refuses 2 get file --output "$WORK/refused" -- images master /a.png
odd_branch="\$(touch $WORK/pwned)" odd_input="-rf; touch $WORK/pwned #"
pachyderm_case() { # pachyderm_case VERSION NAME: recursive, single file and odd values against fake-pachctl-VERSION
  local version=$1 name=$2 rec one odd expect_rec expect_one expect_odd
  pachctl_is "$version"
  vm "$name" "$(pachvol rec images master /train/)" "$(pachvol one images master /train/a.png)" \
    "$(pachvol odd images "$odd_branch" "$odd_input")"
  if wait_state "$name" Running; then ok "Pachyderm on pachctl $version: Running"; else not_ok "Pachyderm on pachctl $version: Running" "$(k get vckvm "$name" -o yaml)"; fi
  rec=$(node_dir_of "$name" rec)/out one=$(node_dir_of "$name" one)/out odd=$(node_dir_of "$name" odd)/out
  local address=PACHD_ADDRESS=pachd.default.svc:650
  if [ "$version" = 1.8 ]; then
    expect_rec=$(printf '%s\n' get-file --recursive "--output=$rec" -- images master /train/ "$address")
    expect_one=$(printf '%s\n' get-file "--output=$one" -- images master /train/a.png "$address")
    expect_odd=$(printf '%s\n' get-file "--output=$odd" -- images "$odd_branch" "$odd_input" "$address")
  else
    expect_rec=$(printf '%s\n' get file --recursive --output "$rec" -- images@master:/train/ "$address")
    expect_one=$(printf '%s\n' get file --output "$one" -- images@master:/train/a.png "$address")
    expect_odd=$(printf '%s\n' get file --output "$odd" -- "images@$odd_branch:$odd_input" "$address")
  fi
  if [ "$(cat "$rec/pachyderm-file" 2>/dev/null)" = "$expect_rec" ]; then ok "Pachyderm on pachctl $version, recursive: its syntax with --recursive, written into the volume directory"
  else not_ok "Pachyderm on pachctl $version, recursive: its syntax with --recursive, written into the volume directory" "$(cat "$rec/pachyderm-file" 2>&1)"; fi
  if [ -f "$one" ] && [ "$(cat "$one")" = "$expect_one" ]; then ok "Pachyderm on pachctl $version, single file: its syntax, the output is the file"
  else not_ok "Pachyderm on pachctl $version, single file: its syntax, the output is the file" "$(cat "$one" 2>&1)"; fi
  if [ "$(cat "$odd" 2>/dev/null)" = "$expect_odd" ] && [ ! -e "$WORK/pwned" ]; then ok "Pachyderm on pachctl $version: \$(...), ';' and a leading '-' reach pachctl literally, nothing ran"
  else not_ok "Pachyderm on pachctl $version: \$(...), ';' and a leading '-' reach pachctl literally, nothing ran" "$(cat "$odd" 2>&1; ls "$WORK/pwned" 2>&1)"; fi
}
pachyderm_case 1.8 pach-v1
pachyderm_case 2 pach-v2

# ---- failures: state Failed with the original's messages ----
fails() { # fails NAME ID EXPECTED-MESSAGE-PREFIX
  if wait_state "$1" Failed && [[ "$(volmsg "$1" "$2")" == "$3"* ]]; then ok "$1: Failed with \"$3\""
  else not_ok "$1: Failed with \"$3\"" "state=$(jp "$1" '{.status.state}') message=$(volmsg "$1" "$2")"; fi
}
nolabels=$(s3vol v 1 | sed '/labels:/,/key1/d')
vm no-labels "$nolabels"
if grep -q "labels cannot be empty\|volumeConfigs\[0\]\.labels" "$WORK/last-apply.log" && ! k get vckvm no-labels >/dev/null 2>&1; then
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
vm pach-dash "$(pachvol v -images master /train/)"
fails pach-dash v "repo cannot start with '-'"
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
# Copy pods mount the data path itself, which the link is: the kubelet words that "failed to prepare subPath".
check "s3-symlink: the message says the kubelet refused the subPath" grep -Eq "failed to (create subPath directory|prepare subPath)" <<<"$(volmsg s3-symlink v)"
check "s3-symlink: nothing was written through the link" test -z "$(ls -A "$WORK/outside")"
k delete vckvm s3-symlink --wait=false >/dev/null 2>&1
if wait_for 120 gone s3-symlink; then ok "s3-symlink: delete finishes"; else not_ok "s3-symlink: delete finishes" "$(k get vckvm s3-symlink -o yaml)"; fi
check "s3-symlink: the link's target is untouched" test -d "$WORK/outside" -a -z "$(ls -A "$WORK/outside")"
vm mixed "$(s3vol bad 1 '      sourceURL: s3://data/no/such/object.bin')" "$(nfsvol good)"
fails mixed bad "error during data download using pod"
check "mixed: the healthy NFS volume still succeeds" test "$(volmsg mixed good)" = success
check "mixed: overall message is the original's" test "$(jp mixed '{.status.message}')" = "failed to deploy all the sub-resources"

# ---- deletion cleans data on every node, node labels and sub-resources ----
held=$(node_dir_of s3-dist dist)
k delete vckvm s3-dist --wait=false >/dev/null 2>&1
if wait_for 120 gone s3-dist; then ok "delete: the VolumeManager goes once cleanup is done"; else not_ok "delete: the VolumeManager goes" "$(k get vckvm s3-dist -o yaml)"; fi
removed=1; for d in $held; do [ -e "$d" ] && removed=0; done
check "delete: the data directories on both nodes are removed" test -n "$held" -a $removed = 1
check "delete: no node keeps a label for the volume" test -z "$(k get nodes -o jsonpath='{.items[*].metadata.labels}' | grep -o 's3-dist' || true)"

curl -sf "http://127.0.0.1:$MP/metrics" >"$WORK/metrics.txt"
check "metrics: reconciles are counted per controller and result" grep -q 'controller_runtime_reconcile_total{controller="volumemanager",result="success"}' "$WORK/metrics.txt"

tap_end
