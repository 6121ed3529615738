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

# The image's filesystem: where deploy/deployment.yaml and the download pods find the programs.
IMAGE=$WORK/image
mkdir -p "$IMAGE/usr/local/bin"
ln -s "$CONTROLLER" "$IMAGE/usr/local/bin/vck-controller"
ln -s "$FETCH" "$IMAGE/usr/local/bin/vck-fetch"
start_sandbox 3 --image "ghcr.io/vck/vck:*=root:$IMAGE;user=65532:65532"

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
vm s3-denied "$(s3vol denied 1)"
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
if wait_for 120 eval 'gone s3-in-cluster && gone nfs-in-cluster && gone s3-after && gone s3-denied'; then ok "deleting the VolumeManagers completes through the in-cluster controller"
else not_ok "deleting the VolumeManagers completes through the in-cluster controller"; fi
check "no data directory is left on the nodes" test -z "$(ls -d "$DATA"/nodes/*"$path" 2>/dev/null)"
tap_end
