#!/usr/bin/env bash
# deploy/ on vck-sandbox, as an operator installs vck: `kubectl apply -k deploy/` creates the
# namespace, CRD, ServiceAccount, RBAC and the Deployment, whose pods run vck-controller in-cluster
# (the image ghcr.io/vck/vck is a directory holding the built vck-controller and vck-fetch, run
# as the image's user 65532), with the projected service-account token and deploy/'s roles only.
# Checks: the rollout completes and the probes pass; S3 and NFS VolumeManagers reach Running
# through it; `kubectl logs deploy/vck-controller` shows its log; a deleted controller pod is
# replaced through the ReplicaSet and work resumes; without one of deploy/'s rules the controller
# reports the 403 its ServiceAccount gets (in an event for a pod create; in its log, and not
# Ready, for a list its cache needs), and resumes once the rule is back. Every grant in turn:
# tests/volumes/rbac_test.cpp.
# Usage: in_cluster_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
# Prints TAP lines; exits non-zero if any check failed. Stops everything it started.
set -u
# shellcheck source=../lifecycle/lib.sh
. "$(dirname "$(realpath "$0")")/../lifecycle/lib.sh"
harness_init in-cluster "$@"

start_s3rver
SRC=$WORK/src
mkdir -p "$SRC/set"
for i in $(seq 1 8); do head -c $((1500 * i)) /dev/urandom >"$SRC/set/file-$i.bin"; done
seed "$SRC/set" s3://data/set/
mkdir -p "$SRC/next"
for i in 1 2; do head -c $((900 * i)) /dev/urandom >"$SRC/next/next-$i.bin"; done
seed "$SRC/next" s3://data/next/
# The same files under prefixes of their own: s3-later and s3-denied are about one
# VolumeManager's own copies, which an equal config would share with s3-in-cluster's.
for prefix in later denied; do
  rm -rf "$WORK/$prefix" && cp -r "$SRC/set" "$WORK/$prefix" && seed "$WORK/$prefix" "s3://data/$prefix/"
done

# The image's filesystem: where deploy/base/deployment.yaml and the download pods find the programs.
IMAGE=$WORK/image
mkdir -p "$IMAGE/usr/local/bin"
ln -s "$CONTROLLER" "$IMAGE/usr/local/bin/vck-controller"
ln -s "$FETCH" "$IMAGE/usr/local/bin/vck-fetch"
# Pods of users' jobs run host programs (diff reads what the pod mounts).
start_sandbox 3 --image "ghcr.io/vck/vck:*=root:$IMAGE;user=65532:65532" --image "e2e/reader=root:/"

if k apply -k "$ROOT/deploy" >"$WORK/deploy.log" 2>&1; then ok "kubectl apply -k deploy/ applies every object"
else bail "kubectl apply -k deploy/ failed" "$(cat "$WORK/deploy.log")"; fi
kn() { k -n vck-system "$@"; }
if kn rollout status deploy/vck-controller --timeout=180s >"$WORK/rollout.log" 2>&1; then
  ok "the vck-controller Deployment rolls out: its pods pass their readiness probes"
else
  bail "the vck-controller Deployment did not roll out" "$(cat "$WORK/rollout.log"; kn get pods -o wide; kn describe pods | tail -n 40)"
fi
check "two controller pods run, each on its own pod IP" \
  test "$(kn get pods -l app.kubernetes.io/name=vck-controller -o 'jsonpath={range .items[*]}{.status.podIP}{"\n"}{end}' | sort -u | grep -c '^127\.')" = 2
check "they run as the vck-controller ServiceAccount" \
  test "$(kn get pods -l app.kubernetes.io/name=vck-controller -o 'jsonpath={.items[0].spec.serviceAccountName}')" = vck-controller
check "their resources are noted: QoS class Burstable (requests below the memory limit)" \
  test "$(kn get pods -l app.kubernetes.io/name=vck-controller -o 'jsonpath={.items[0].status.qosClass}')" = Burstable

vm s3-in-cluster "$(s3vol data 1)"
if wait_state s3-in-cluster Running 180; then ok "an S3 VolumeManager reaches Running through the in-cluster controller"
else not_ok "an S3 VolumeManager reaches Running through the in-cluster controller" "$(k get vckvm s3-in-cluster -o yaml; kn logs deploy/vck-controller --tail=30)"; fi
path=$(jp s3-in-cluster '{.status.volumes[0].volumeSource.hostPath.path}')
dirs=$(ls -d "$DATA"/nodes/*"$path" 2>/dev/null)
check "its data is byte-identical to the bucket on the node" diff -r -x .vck-fetch "$SRC/set" "$dirs"
vm nfs-in-cluster "$(nfsvol nfs)"
if wait_state nfs-in-cluster Running 120; then ok "an NFS VolumeManager reaches Running through the in-cluster controller"
else not_ok "an NFS VolumeManager reaches Running through the in-cluster controller" "$(k get vckvm nfs-in-cluster -o yaml)"; fi

# ---- Admission webhooks, served by the controller pods through the Service vck-webhook ----
bundle() { k get "$1" "$2" -o 'jsonpath={.webhooks[0].clientConfig.caBundle}'; }
check "self-managed certificate: the pod injection webhook's caBundle is set" test -n "$(bundle mutatingwebhookconfiguration vck-pod-injection)"
check "self-managed certificate: the validation webhook's caBundle is set" test -n "$(bundle validatingwebhookconfiguration vck-volumemanager-validation)"
check "self-managed certificate: its Secret holds the CA and the serving pair" \
  test "$(kn get secret vck-webhook-server-cert -o 'jsonpath={.type} {.data.ca\.crt}' | cut -c1-18)" = "kubernetes.io/tls "

# A VolumeManager the schema accepts but VCK cannot serve is refused at kubectl apply.
refused_apply() { # refused_apply DESCRIPTION EXPECTED_TEXT VOLUME_YAML
  local out; out=$({ printf 'apiVersion: vck.intelai.org/v1alpha1\nkind: VolumeManager\nmetadata:\n  name: refused\n  namespace: default\nspec:\n  volumeConfigs:\n%s\n' "$3"; } | k apply -f - 2>&1)
  if grep -qF -- "$2" <<<"$out" && ! k get vckvm refused >/dev/null 2>&1; then ok "$1"; else not_ok "$1" "$out"; fi
}
refused_apply "validation webhook: an S3 volume without sourceURL is refused at kubectl apply with the original's words" \
  'admission webhook "volumemanagers.vck.intelai.org" denied the request: VolumeManager.vck.intelai.org "refused" is invalid: spec.volumeConfigs[0].options.sourceURL: sourceURL has to be set in options' \
  "$(s3vol nourl 1 '      region: x')"
refused_apply "validation webhook: an S3 volume without its credentials Secret name is refused" \
  'awsCredentialsSecretName key has to be set in options' "$(s3vol nocreds 1 | grep -v awsCredentialsSecretName)"
refused_apply "validation webhook: distributionStrategy counts that do not add up to replicas are refused" \
  'distributionStrategy' "$(s3vol dist 3 '      sourceURL: s3://data/set/
      distributionStrategy: "{\"*.bin\": 1}"')"
refused_apply "validation webhook: resync with two replicas is refused" \
  'replicas cannot be > 1 when resync is set' "$(s3vol rs 2 '      sourceURL: s3://data/set/
      resync: "true"')"
refused_apply "validation webhook: a dataPath outside the allowed roots is refused" \
  'dataPath' "$(s3vol dp 1 '      sourceURL: s3://data/set/
      dataPath: /etc')"
refused_apply "validation webhook: an unknown sourceType is refused" \
  'spec.volumeConfigs[0].sourceType' "$(s3vol un 1 | sed 's/sourceType: S3/sourceType: FTP/')"
if vm valid-check "$(s3vol ok 1)"; then ok "validation webhook: a valid manifest passes"; else not_ok "validation webhook: a valid manifest passes" "$(cat "$WORK/last-apply.log")"; fi
k delete vckvm valid-check --wait=false >/dev/null 2>&1

reader_pod() { # reader_pod NAME VOLUMEMANAGER: a pod that names its data and checks every byte of it
  printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: default\n  labels:\n    vck.intelai.org/volume-manager: %s\nspec:\n  restartPolicy: Never\n  containers:\n  - name: check\n    image: e2e/reader\n    command: ["/usr/bin/diff", "-r", "-x", ".vck-fetch", "/var/datasets/data", "%s"]\n' "$1" "$2" "$SRC/set"
}
phase_of() { k get pod "$1" -o 'jsonpath={.status.phase}' 2>/dev/null; }
# Data ready: the pod gets the volume, its mount and the data's node affinity, and runs there.
reader_pod reader-ready s3-in-cluster | k apply -f - >"$WORK/reader.log" 2>&1
if wait_for 90 eval '[ "$(phase_of reader-ready)" = Succeeded ]'; then ok "pod injection: a pod naming a Running VolumeManager reads the dataset's files, byte for byte"
else not_ok "pod injection: a pod naming a Running VolumeManager reads the dataset's files, byte for byte" "$(cat "$WORK/reader.log"; k get pod reader-ready -o yaml | tail -n 40)"; fi
node=$(k get pod reader-ready -o 'jsonpath={.spec.nodeName}')
check "pod injection: it ran on a node holding the copy" test -d "$DATA/nodes/$node$path"
check "pod injection: it carries the data's required node affinity" \
  test -n "$(k get pod reader-ready -o 'jsonpath={.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[*].key}')"
# Data not there yet: the pod waits behind its scheduling gate, then runs next to the data.
vm s3-later "$(s3vol data 1 '      sourceURL: s3://data/later/')"
reader_pod reader-gated s3-later | k apply -f - >"$WORK/gated.log" 2>&1
gated_status=$(k get pod reader-gated --no-headers 2>&1 | awk '{print $3}')
if [ "$gated_status" = SchedulingGated ] || [ "$(phase_of reader-gated)" = Succeeded ]; then
  ok "pod injection: a pod created before its data is there waits (kubectl get: SchedulingGated)"
else not_ok "pod injection: a pod created before its data is there waits (kubectl get: SchedulingGated)" "$gated_status $(cat "$WORK/gated.log")"; fi
if wait_for 180 eval '[ "$(phase_of reader-gated)" = Succeeded ]'; then ok "pod injection: once the data is Ready the gate is lifted and the pod reads it on a data node"
else not_ok "pod injection: once the data is Ready the gate is lifted and the pod reads it on a data node" "$(k get pod reader-gated -o yaml | tail -n 40; k get vckvm s3-later -o yaml | tail -n 20)"; fi
later_path=$(jp s3-later '{.status.volumes[0].volumeSource.hostPath.path}')
check "pod injection: the ungated pod ran where s3-later's copy is" test -d "$DATA/nodes/$(k get pod reader-gated -o 'jsonpath={.spec.nodeName}')$later_path"

# A running job keeps its data through a change of its VolumeManager: "holder" compares what it
# mounts with the bucket every 0.2 s until released, and fails at the first difference.
holder_cmd='["/usr/bin/python3", "-c", "import filecmp,os,sys,time\nsame=lambda d: not (d.left_only or d.right_only or d.diff_files or d.funny_files)\nn=0\nwhile not os.path.exists(sys.argv[3]):\n  d=filecmp.dircmp(sys.argv[1], sys.argv[2], ignore=[\x27.vck-fetch\x27])\n  if not same(d): print(\x27MISSING\x27, d.left_only, d.right_only, d.diff_files, flush=True); sys.exit(1)\n  n+=1; time.sleep(0.2)\nprint(\x27whole in\x27, n, \x27checks\x27, flush=True)", "/var/datasets/data", "'"$SRC/set"'", "'"$WORK/release-holder"'"]'
printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: holder\n  namespace: default\n  labels:\n    vck.intelai.org/volume-manager: s3-later\nspec:\n  restartPolicy: Never\n  containers:\n  - name: check\n    image: e2e/reader\n    command: %s\n' "$holder_cmd" |
  k apply -f - >"$WORK/holder.log" 2>&1
if wait_for 90 eval '[ "$(phase_of holder)" = Running ]'; then ok "in use: a job reading s3-later runs"
else not_ok "in use: a job reading s3-later runs" "$(cat "$WORK/holder.log"; k get pod holder -o yaml | tail -n 30)"; fi
holder_node=$(k get pod holder -o 'jsonpath={.spec.nodeName}')
k patch vckvm s3-later --type=json -p '[{"op":"replace","path":"/spec/volumeConfigs/0/options/sourceURL","value":"s3://data/next/"}]' >/dev/null
switched() { p=$(jp s3-later '{.status.volumes[0].volumeSource.hostPath.path}'); [ -n "$p" ] && [ "$p" != "$later_path" ]; }
if wait_for 120 switched; then ok "in use: s3-later's sourceURL changed, its status switches to the new copy"
else not_ok "in use: s3-later's sourceURL changed, its status switches to the new copy" "$(k get vckvm s3-later -o yaml | tail -n 40)"; fi
reader_pod reader-next s3-later | sed "s#$SRC/set#$SRC/next#" | k apply -f - >"$WORK/next.log" 2>&1
if wait_for 90 eval '[ "$(phase_of reader-next)" = Succeeded ]'; then ok "in use: a pod created after the change reads the new data"
else not_ok "in use: a pod created after the change reads the new data" "$(k get pod reader-next -o yaml | tail -n 30)"; fi
sleep 4  # what removed the old copy did so about 3 s after the switch
check "in use: the old copy stays on the job's node while the job runs" test -d "$DATA/nodes/$holder_node$later_path"
check "in use: its record says which pod keeps it" grep -q 'kept while pod holder uses it' <<<"$(jp s3-later '{.status.copies[*].message}')"
check "in use: the volume's message says so (kubectl get)" grep -q 'an old copy stays until pod holder, which uses it, ends' <<<"$(k get vckvm s3-later)"
check "in use: one RemovalWaits event names the job"   test "$(k get events --field-selector involvedObject.name=s3-later,reason=RemovalWaits -o 'jsonpath={range .items[*]}{.message}{"\n"}{end}' | grep -c 'removed when pod holder ends')" = 1
touch "$WORK/release-holder"
if wait_for 60 eval '[ "$(phase_of holder)" = Succeeded ]'; then ok "in use: the job read its old data whole until it ended"
else not_ok "in use: the job read its old data whole until it ended" "$(k logs holder 2>&1 | tail -n 5; k get pod holder -o yaml | tail -n 20)"; fi
check "in use: the job was never told DataLost" test -z "$(k get events --field-selector involvedObject.name=holder,reason=DataLost -o name)"
if wait_for 60 eval '! test -d "$DATA/nodes/$holder_node$later_path"'; then ok "in use: once it ended, the old copy is removed"
else not_ok "in use: once it ended, the old copy is removed" "$(k get vckvm s3-later -o yaml | tail -n 30)"; fi
# A pod naming what does not exist is refused with what to fix.
out=$(reader_pod reader-none no-such-vm | k apply -f - 2>&1)
check "pod injection: a pod naming a VolumeManager that does not exist is refused, saying what to fix" \
  grep -qF 'admission webhook "pods.vck.intelai.org" denied the request: volumemanager "no-such-vm" not found in namespace "default"' <<<"$out"
# Whichever controller pod the Service sent it to counted it.
refusals() {
  local ip v t=0
  for ip in $(kn get pods -l app.kubernetes.io/name=vck-controller -o 'jsonpath={.items[*].status.podIP}'); do
    v=$(curl -sf "http://$ip:8080/metrics" | awk 'index($0, "vck_admission_refusals_total{webhook=\"/mutate-v1-pod\",code=\"403\"} ") == 1 { print $2 }')
    t=$((t + ${v:-0}))
  done
  echo "$t"
}
check "metrics: the refused pod counts in vck_admission_refusals_total (summed over the controller pods)" test "$(refusals)" -ge 1
# An output volume through injection: a job labelled with an S3-Output VolumeManager writes
# its result into the injected volume (mounted writable), and on Completed it lands in S3.
vm out-in-cluster "$(printf '  - id: results\n    replicas: 1\n    sourceType: S3-Output\n    accessMode: ReadWriteOnce\n    capacity: 1Gi\n    labels:\n      key1: val1\n    options:\n      awsCredentialsSecretName: s3-creds\n      endpointURL: %s\n      sourceURL: s3://data/results/in-cluster\n' "$ENDPOINT")"
wait_state out-in-cluster Running 120 || not_ok "an S3-Output VolumeManager is Running" "$(k get vckvm out-in-cluster -o yaml | tail -n 20)"
printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: writer\n  namespace: default\n  labels:\n    vck.intelai.org/volume-manager: out-in-cluster\nspec:\n  restartPolicy: Never\n  containers:\n  - name: job\n    image: e2e/reader\n    command: ["/usr/bin/python3", "-c", "import sys; open(sys.argv[1] + \x27/result.txt\x27, \x27w\x27).write(\x27written by the job\x27)", "/var/datasets/results"]\n' |
  k apply -f - >"$WORK/writer.log" 2>&1
if wait_for 90 eval '[ "$(phase_of writer)" = Succeeded ]'; then ok "output injection: a labelled job writes its result through the injected volume"
else not_ok "output injection: a labelled job writes its result through the injected volume" "$(cat "$WORK/writer.log"; k logs writer 2>&1 | tail -n 5; k get pod writer -o yaml | tail -n 30)"; fi
check "output injection: its mount is not read-only" \
  test -z "$(k get pod writer -o 'jsonpath={.spec.containers[0].volumeMounts[?(@.mountPath=="/var/datasets/results")].readOnly}')"
k patch vckvm out-in-cluster --type merge -p '{"spec":{"state":"Completed"}}' >/dev/null
uploaded() {
  rm -rf "$WORK/result" && "$FETCH" fetch s3://data/results/in-cluster/0/result.txt "$WORK/result" --endpoint "$ENDPOINT" \
    --progress-interval 0 --termination-log "$WORK/result.json" >/dev/null 2>&1 &&
    [ "$(cat "$WORK/result/result.txt")" = "written by the job" ]
}
if wait_for 120 uploaded; then ok "output injection: on Completed the job's result lands in s3://data/results/in-cluster/0/"
else not_ok "output injection: on Completed the job's result lands in s3://data/results/in-cluster/0/" "$(k get vckvm out-in-cluster -o yaml | tail -n 30)"; fi
# Long-running readers: compare the mounted dataset with the source, then stay up (Ready) if
# they match (a container of a Deployment or StatefulSet must not exit).
stays_up_if_same='["/usr/bin/python3", "-c", "import filecmp,sys,time; same=lambda d: not (d.left_only or d.right_only or d.diff_files or d.funny_files) and all(same(s) for s in d.subdirs.values()); sys.exit(1) if not same(filecmp.dircmp(sys.argv[1], sys.argv[2], ignore=[\x27.vck-fetch\x27])) else time.sleep(3600)", "/var/datasets/data", "'"$SRC/set"'"]'
# A Deployment's pods get the same.
cat <<EOF2 | k apply -f - >"$WORK/deploy-reader.log" 2>&1
apiVersion: apps/v1
kind: Deployment
metadata:
  name: readers
  namespace: default
spec:
  replicas: 2
  selector:
    matchLabels: {app: readers}
  template:
    metadata:
      labels: {app: readers, vck.intelai.org/volume-manager: s3-in-cluster}
    spec:
      containers:
      - name: check
        image: e2e/reader
        command: $stays_up_if_same
EOF2
readers_ready() { [ "$(k get deploy readers -o 'jsonpath={.status.readyReplicas}')" = 2 ]; }
if wait_for 120 readers_ready; then ok "pod injection: a Deployment's pods get the dataset and run on its node"
else not_ok "pod injection: a Deployment's pods get the dataset and run on its node" "$(cat "$WORK/deploy-reader.log"; k get pods -l app=readers -o wide; k describe pods -l app=readers | tail -n 30)"; fi
check "pod injection: every Deployment pod is on the node holding the data" \
  test "$(k get pods -l app=readers -o 'jsonpath={range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u)" = "$node"
# A Job's pod gets the same: the Job completes once its pod has read every byte.
cat <<EOF2 | k apply -f - >"$WORK/job-reader.log" 2>&1
apiVersion: batch/v1
kind: Job
metadata:
  name: reader-job
  namespace: default
spec:
  backoffLimit: 0
  template:
    metadata:
      labels: {vck.intelai.org/volume-manager: s3-in-cluster}
    spec:
      restartPolicy: Never
      containers:
      - name: check
        image: e2e/reader
        command: ["/usr/bin/diff", "-r", "-x", ".vck-fetch", "/var/datasets/data", "$SRC/set"]
EOF2
if k wait --for=condition=complete job/reader-job --timeout=120s >"$WORK/job-wait.log" 2>&1; then ok "pod injection: a Job's pod gets the dataset, reads it and the Job completes"
else not_ok "pod injection: a Job's pod gets the dataset, reads it and the Job completes" "$(cat "$WORK/job-reader.log" "$WORK/job-wait.log"; k get pods -l job-name=reader-job -o yaml | tail -n 40)"; fi
check "pod injection: the Job's pod ran on the node holding the data" \
  test "$(k get pods -l job-name=reader-job -o 'jsonpath={.items[0].spec.nodeName}')" = "$node"
k delete job reader-job --wait=false >/dev/null 2>&1

# A StatefulSet's pods too (the sandbox's controllers create pods through admission, as
# kube-controller-manager does).
cat <<EOF2 | k apply -f - >"$WORK/sts-reader.log" 2>&1
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: sts-readers
  namespace: default
spec:
  serviceName: sts-readers
  replicas: 1
  selector:
    matchLabels: {app: sts-readers}
  template:
    metadata:
      labels: {app: sts-readers, vck.intelai.org/volume-manager: s3-in-cluster}
    spec:
      containers:
      - name: check
        image: e2e/reader
        command: $stays_up_if_same
EOF2
sts_ready() { [ "$(k get sts sts-readers -o 'jsonpath={.status.readyReplicas}')" = 1 ]; }
if wait_for 120 sts_ready; then ok "pod injection: a StatefulSet's pod gets the dataset and runs on its node"
else not_ok "pod injection: a StatefulSet's pod gets the dataset and runs on its node" "$(cat "$WORK/sts-reader.log"; k describe pods -l app=sts-readers | tail -n 30)"; fi
check "pod injection: the StatefulSet's pod is on the node holding the data" \
  test "$(k get pod sts-readers-0 -o 'jsonpath={.spec.nodeName}')" = "$node"
k delete sts sts-readers --wait=false >/dev/null 2>&1
k delete deploy readers --wait=false >/dev/null 2>&1
k delete pod reader-ready reader-gated --wait=false >/dev/null 2>&1
k delete vckvm s3-later --wait=false >/dev/null 2>&1

logs=$(kn logs deploy/vck-controller 2>&1)
check "kubectl logs deploy/vck-controller shows the controller's log" grep -q . <<<"$logs"

# A controller pod deleted: the ReplicaSet brings a new one, and work goes on through it.
victim=$(kn get pods -l app.kubernetes.io/name=vck-controller -o 'jsonpath={.items[0].metadata.name}')
kn delete pod "$victim" --wait=false >/dev/null
replaced() { [ "$(kn get pods -l app.kubernetes.io/name=vck-controller -o 'jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -v "^$victim " | grep -c ' True$')" = 2 ]; }
if wait_for 120 replaced; then ok "a deleted controller pod is replaced through the ReplicaSet"
else not_ok "a deleted controller pod is replaced through the ReplicaSet" "$(kn get pods -o wide)"; fi
vm s3-after "$(s3vol data 1)"
if wait_state s3-after Running 180; then ok "work resumes: a new VolumeManager reaches Running after the replacement"
else not_ok "work resumes: a new VolumeManager reaches Running after the replacement" "$(k get vckvm s3-after -o yaml)"; fi

# Least privilege, one rule taken away: without "create pods" the controller says so, in the
# words kube-apiserver gives its ServiceAccount, and carries on once the rule is back.
pods_rule=$(k get clusterrole vck-controller -o json | "$PYTHON" -c 'import json,sys; r=json.load(sys.stdin)["rules"]; print([i for i,x in enumerate(r) if x["resources"]==["pods"]][0])')
k patch clusterrole vck-controller --type=json \
  -p "[{\"op\":\"replace\",\"path\":\"/rules/$pods_rule/verbs\",\"value\":[\"list\",\"watch\",\"delete\"]}]" >/dev/null
vm s3-denied "$(s3vol denied 1 '      sourceURL: s3://data/denied/')"
refused() { k get events --field-selector involvedObject.name=s3-denied,reason=CreateRefused -o 'jsonpath={.items[*].message}' |
  grep -q 'pods is forbidden: User "system:serviceaccount:vck-system:vck-controller" cannot create resource "pods" in API group "" in the namespace "default"'; }
if wait_for 90 refused; then ok "without create on pods, the controller reports the 403 its ServiceAccount gets in a CreateRefused event"
else not_ok "without create on pods, the controller reports the 403 its ServiceAccount gets in a CreateRefused event" "$(k get events --field-selector involvedObject.name=s3-denied)"; fi
check "the VolumeManager is not Running meanwhile" test "$(jp s3-denied '{.status.state}')" != Running
k apply -k "$ROOT/deploy" >/dev/null 2>&1
if wait_state s3-denied Running 240; then ok "with the rule restored, the refused VolumeManager reaches Running"
else not_ok "with the rule restored, the refused VolumeManager reaches Running" "$(k get vckvm s3-denied -o yaml)"; fi
k delete vckvm s3-denied --wait=false >/dev/null

# A rule a cache needs taken away: a controller pod started without "list secrets" never becomes
# Ready (its informers cannot sync, so /readyz fails), and its log says why at every retry.
secrets_rule=$(k get clusterrole vck-controller -o json | "$PYTHON" -c 'import json,sys; r=json.load(sys.stdin)["rules"]; print([i for i,x in enumerate(r) if x["resources"]==["secrets"]][0])')
k patch clusterrole vck-controller --type=json \
  -p "[{\"op\":\"replace\",\"path\":\"/rules/$secrets_rule/verbs\",\"value\":[\"watch\"]}]" >/dev/null
before=$(kn get pods -l app.kubernetes.io/name=vck-controller -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}')
kn delete pod "$(head -n 1 <<<"$before")" --wait=false >/dev/null
newcomer() { kn get pods -l app.kubernetes.io/name=vck-controller -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}' | grep -vxF "$before" | head -n 1; }
blind() { p=$(newcomer); [ -n "$p" ] && kn logs "$p" 2>/dev/null | grep 'Failed to watch' | grep -q 'secrets is forbidden: User \\"system:serviceaccount:vck-system:vck-controller\\" cannot list resource \\"secrets\\"'; }
if wait_for 90 blind; then ok "without list on secrets, a new controller pod logs the 403 its cache gets"
else not_ok "without list on secrets, a new controller pod logs the 403 its cache gets" "$(kn logs "$(newcomer)" 2>&1 | tail -n 5)"; fi
check "and it is not Ready" test "$(kn get pod "$(newcomer)" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = False
k apply -k "$ROOT/deploy" >/dev/null 2>&1
ready_again() { [ "$(kn get pod "$(newcomer)" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
if wait_for 120 ready_again; then ok "with the rule restored, it syncs and becomes Ready"
else not_ok "with the rule restored, it syncs and becomes Ready" "$(kn get pods -o wide)"; fi

k delete vckvm s3-in-cluster nfs-in-cluster s3-after --wait=false >/dev/null
if wait_for 120 eval 'gone s3-in-cluster && gone nfs-in-cluster && gone s3-after && gone s3-denied && gone s3-later'; then ok "deleting the VolumeManagers completes through the in-cluster controller"
else not_ok "deleting the VolumeManagers completes through the in-cluster controller"; fi
check "no data directory is left on the nodes" test -z "$(ls -d "$DATA"/nodes/*"$path" 2>/dev/null)"
tap_end
