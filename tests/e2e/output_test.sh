#!/usr/bin/env bash
# Output volumes end to end: vck-controller in vck-sandbox (3 nodes whose kubelet really runs
# vck-fetch, and `cp` as a user's job) against s3rver. Jobs pinned by the status'
# nodeAffinity write files into the hostPath of an S3-Output volume; the files are in the
# bucket, byte for byte, under <sourceURL>/<replica>/ after spec.state Completed, and after
# a delete of another VolumeManager. With the S3 server down (a proxy in front of it,
# stopped) a deleted VolumeManager keeps its finalizer and its data, its status says why;
# once the proxy is back the upload finishes and cleanup proceeds. The discard-output
# annotation gives output up without upload.
# Usage: output_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
# Prints TAP lines; exits non-zero if any check failed. Stops everything it started.
set -u
# shellcheck source=../lifecycle/lib.sh
. "$(dirname "$(realpath "$0")")/../lifecycle/lib.sh"
harness_init output "$@"

AWS=/usr/bin/aws
[ -x "$AWS" ] || { echo "1..0 # SKIP /usr/bin/aws (Debian's awscli) is not installed"; exit 0; }
export AWS_DEFAULT_REGION=us-east-1
unset AWS_CA_BUNDLE AWS_PROFILE

start_s3rver
# A plain relay to s3rver (no throttling to speak of) that the test stops and restarts on
# the same port: "the S3 server is down" for the uploads that go through it.
PROXY_PORT=$(free_port) PROXY_PID=""
PROXY="http://127.0.0.1:$PROXY_PORT"
start_proxy() {
  "$PYTHON" "$ROOT/tests/e2e/throttle_proxy.py" "$PROXY_PORT" 127.0.0.1 "${ENDPOINT##*:}" $((1 << 30)) >>"$WORK/proxy.log" 2>&1 &
  PROXY_PID=$!
  PIDS+=("$PROXY_PID")
  wait_for 30 curl -s -o /dev/null "$PROXY/" || bail "the proxy did not start" "$(tail -n 5 "$WORK/proxy.log")"
}
stop_proxy() { stop_process "$PROXY_PID"; PROXY_PID=""; }
start_proxy

start_sandbox 3 --image "job:e2e=exec:$(command -v cp)"
start_controller
controller_ready || bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"

outvol() { # outvol ID REPLICAS PREFIX ENDPOINT
  printf '  - id: %s\n    replicas: %s\n    sourceType: S3-Output\n    accessMode: ReadWriteOnce\n    capacity: 1Gi\n    labels:\n      key1: val1\n    options:\n      awsCredentialsSecretName: s3-creds\n      endpointURL: %s\n      sourceURL: %s\n' \
    "$1" "$2" "$4" "$3"
}

# job VM REPLICA: a pod that copies $WORK/job/VM/REPLICA into the volume, on the node of that
# replica's copy, through the hostPath and nodeAffinity the status gives.
job() {
  local vm=$1 r=$2 node path affinity src=$WORK/job/$1/$2
  node=$(jp "$vm" "{.status.copies[?(@.replica==$r)].node}")
  path=$(jp "$vm" '{.status.volumes[0].volumeSource.hostPath.path}')
  affinity=$(k get vckvm "$vm" -o json | "$PYTHON" -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["status"]["volumes"][0]["nodeAffinity"]))')
  mkdir -p "$src/deep/er"
  for i in 1 2 3; do head -c $((1000 * i + RANDOM % 777)) /dev/urandom >"$src/result-$i.bin"; done
  head -c 70000 /dev/urandom >"$src/deep/er/model.bin"
  : >"$src/empty.txt"
  cat <<EOF | k apply -f - >>"$WORK/jobs.log" 2>&1
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "job-$vm-$r", "namespace": "default"},
 "spec": {"restartPolicy": "Never",
          "affinity": {"nodeAffinity": $affinity},
          "nodeSelector": {"kubernetes.io/hostname": "$node"},
          "containers": [{"name": "job", "image": "job:e2e", "command": ["cp"],
                          "args": ["-r", "$src/.", "/output"],
                          "volumeMounts": [{"name": "out", "mountPath": "/output"}]}],
          "volumes": [{"name": "out", "hostPath": {"path": "$path"}}]}}
EOF
}
job_done() { [ "$(k get pod "job-$1-$2" -o 'jsonpath={.status.phase}' 2>/dev/null)" = Succeeded ]; }
# in_bucket VM REPLICA PREFIX: the bucket's PREFIX/REPLICA/ is byte for byte what the job wrote
in_bucket() {
  local got=$WORK/got/$1/$2
  rm -rf "$got" && mkdir -p "$got"
  "$AWS" --endpoint-url "$ENDPOINT" s3 cp --recursive --only-show-errors "$3/$2/" "$got" >>"$WORK/aws.log" 2>&1 || return 1
  diff -r "$WORK/job/$1/$2" "$got" >>"$WORK/aws.log" 2>&1
}
node_dir() { # node_dir VM REPLICA: the copy's directory on its node, as the sandbox keeps it
  echo "$DATA/nodes/$(jp "$1" "{.status.copies[?(@.replica==$2)].node}")$(jp "$1" "{.status.copies[?(@.replica==$2)].path}")"
}
event_has() { # event_has VM REASON TEXT
  k get events -o 'jsonpath={range .items[*]}{.involvedObject.name}{"|"}{.reason}{"|"}{.message}{"\n"}{end}' 2>/dev/null |
    grep -q -- "^$1|$2|.*$3"
}
completed() { [ "$(jp "$1" '{.status.message}')" = "completed: sub-resources and data removed" ]; }
finalizer_on() { [ "$(jp "$1" '{.metadata.finalizers[*]}')" = vck.intelai.org/cleanup ]; }

# ---- spec.state Completed uploads every replica's files ----
vm out1 "$(outvol results 2 s3://data/results/run1 "$ENDPOINT")"
wait_state out1 Running 120 || bail "out1 never became Running" "$(k get vckvm out1 -o yaml)"
check "an S3-Output volume is Running at once: 2 empty directories, hostPath and nodeAffinity in status" \
  test "$(jp out1 '{.status.copies[*].phase}')" = "Ready Ready"
job out1 0; job out1 1
if wait_for 120 job_done out1 0 && wait_for 120 job_done out1 1; then ok "jobs pinned by the status' nodeAffinity wrote into both replicas"
else bail "the jobs did not finish" "$(k get pods -o wide; cat "$WORK/jobs.log")"; fi
DIR0=$(node_dir out1 0) DIR1=$(node_dir out1 1)
check "the job's files are in the replicas' host directories" test -s "$DIR0/deep/er/model.bin" -a -s "$DIR1/result-1.bin"
k patch vckvm out1 --type merge -p '{"spec":{"state":"Completed"}}' >/dev/null
if wait_for 180 completed out1; then ok "spec.state Completed: the VolumeManager completes (data uploaded and removed)"
else not_ok "spec.state Completed: the VolumeManager completes" "$(k get vckvm out1 -o yaml | tail -n 40)"; fi
check "after Completed, replica 0's files are in s3://data/results/run1/0/, byte for byte" in_bucket out1 0 s3://data/results/run1
check "after Completed, replica 1's files are in s3://data/results/run1/1/, byte for byte" in_bucket out1 1 s3://data/results/run1
check "after Completed, the directories are gone from the nodes" test ! -e "$DIR0" -a ! -e "$DIR1"
FILES=$(find "$WORK/job/out1" -type f | wc -l)
BYTES=$(find "$WORK/job/out1" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
if [ "$(jp out1 '{.status.volumes[0].filesUploaded}')/$(jp out1 '{.status.volumes[0].bytesUploaded}')" = "$FILES/$BYTES" ]; then
  ok "the volume's status sums what was uploaded ($FILES files, $BYTES bytes)"
else not_ok "the volume's status sums what was uploaded ($FILES files, $BYTES bytes)" "$(k get vckvm out1 -o yaml | sed -n '/^status:/,$p')"; fi
both_uploaded() { event_has out1 OutputUploaded 'replica 0 on node .* uploaded: [0-9]* files' && event_has out1 OutputUploaded 'replica 1 on node .* uploaded: [0-9]* files'; }
check "an OutputUploaded event names each replica's counts" both_uploaded
check "metrics: two uploads succeeded, none failed, with the bytes the status sums" \
  test "$(metric 'vck_uploads_total{result="succeeded"}') $(metric 'vck_uploads_total{result="failed"}') $(metric vck_upload_bytes_total)" = "2 0 $BYTES"

# ---- deleting another VolumeManager uploads its output first ----
vm out2 "$(outvol scratch 1 s3://data/results/run2/ "$ENDPOINT")"
wait_state out2 Running 120 || bail "out2 never became Running" "$(k get vckvm out2 -o yaml)"
job out2 0
wait_for 120 job_done out2 0 || bail "the job of out2 did not finish" "$(k get pods -o wide)"
DIR=$(node_dir out2 0)
k delete vckvm out2 --wait=false >/dev/null 2>&1
if wait_for 180 gone out2; then ok "delete: the VolumeManager goes once its output is uploaded and removed"
else not_ok "delete: the VolumeManager goes" "$(k get vckvm out2 -o yaml | tail -n 30)"; fi
check "after the delete, its files are in s3://data/results/run2/0/, byte for byte" in_bucket out2 0 s3://data/results/run2
check "after the delete, its directory is gone from the node" test ! -e "$DIR"

# ---- the S3 server down: data and finalizer stay, the status says why ----
vm out3 "$(outvol held 1 s3://data/results/run3 "$PROXY")"
wait_state out3 Running 120 || bail "out3 never became Running" "$(k get vckvm out3 -o yaml)"
job out3 0
wait_for 120 job_done out3 0 || bail "the job of out3 did not finish" "$(k get pods -o wide)"
DIR=$(node_dir out3 0)
stop_proxy
k delete vckvm out3 --wait=false >/dev/null 2>&1
upload_failed() { jp out3 '{.status.copies[0].message}' | grep -q '^upload attempt [0-9]* failed'; }
if wait_for 180 upload_failed; then ok "S3 down: the copy record says the upload failed and is retried ($(jp out3 '{.status.copies[0].message}' | cut -c1-100)...)"
else not_ok "S3 down: the copy record says the upload failed" "$(k get vckvm out3 -o yaml | tail -n 30)"; fi
check "S3 down: the copy waits in phase Uploading" test "$(jp out3 '{.status.copies[0].phase}')" = Uploading
check "S3 down: the VolumeManager keeps its finalizer" finalizer_on out3
check "S3 down: the job's files stay on the node" diff -r "$WORK/job/out3/0" "$DIR"
check "S3 down: a Warning event OutputUploadFailed says why" event_has out3 OutputUploadFailed 'upload attempt'
# Every failed attempt counts once: the attempts made so far less the one running or due.
failed_counted() { [ "$(metric 'vck_uploads_total{result="failed"}')" = "$(( $(jp out3 '{.status.copies[0].uploadAttempts}') - 1 ))" ]; }
if wait_for 10 failed_counted; then ok "metrics: each failed upload attempt counts once"
else not_ok "metrics: each failed upload attempt counts once" "$(metric 'vck_uploads_total{result="failed"}') vs uploadAttempts $(jp out3 '{.status.copies[0].uploadAttempts}')"; fi
check "S3 down: kubectl get says the deletion waits for the failing upload" \
  grep -q 'deleting: volume .*upload attempt [0-9]* failed' <<<"$(k get vckvm out3 --no-headers)"
start_proxy
if wait_for 240 gone out3; then ok "S3 back: the upload finishes and the VolumeManager goes"
else not_ok "S3 back: the VolumeManager goes" "$(k get vckvm out3 -o yaml | tail -n 30)"; fi
check "S3 back: the files are in s3://data/results/run3/0/, byte for byte" in_bucket out3 0 s3://data/results/run3
check "S3 back: the directory is gone from the node" test ! -e "$DIR"

# ---- giving output up ----
vm out4 "$(outvol lost 1 s3://data/results/run4 "http://127.0.0.1:$(free_port)")"  # nothing listens there
wait_state out4 Running 120 || bail "out4 never became Running" "$(k get vckvm out4 -o yaml)"
job out4 0
wait_for 120 job_done out4 0 || bail "the job of out4 did not finish" "$(k get pods -o wide)"
DIR=$(node_dir out4 0)
k patch vckvm out4 --type merge -p '{"spec":{"state":"Completed"}}' >/dev/null
stuck() { jp out4 '{.status.message}' | grep -q 'not uploaded yet: upload attempt'; }
if wait_for 180 stuck; then ok "Completed with S3 unreachable: the status message says the output is not uploaded yet"
else not_ok "Completed with S3 unreachable: the status message says why" "$(k get vckvm out4 -o yaml | tail -n 30)"; fi
held_back() { ! completed out4 && [ "$(jp out4 '{.status.conditions[?(@.type=="Ready")].status}')" = False ] && diff -r "$WORK/job/out4/0" "$DIR"; }
check "Completed with S3 unreachable: not completed (Ready False), the files stay" held_back
k annotate vckvm out4 vck.intelai.org/discard-output=true >/dev/null
if wait_for 180 completed out4; then ok "vck.intelai.org/discard-output=true: the output is given up and the VolumeManager completes"
else not_ok "discard-output: the VolumeManager completes" "$(k get vckvm out4 -o yaml | tail -n 30)"; fi
check "discard-output: the directory is gone from the node" test ! -e "$DIR"
check "discard-output: a Warning event OutputDiscarded says so" event_has out4 OutputDiscarded 'removed without upload'

tap_end
