#!/usr/bin/env bash
# The volume option reclaimPolicy (handlers/reclaim_policy.hpp) as an operator sees it with
# kubectl: vck-controller in vck-sandbox (whose PV controller marks a retained PV Released
# once its claim is gone, as kube-controller-manager does). Retain: when the volume goes (the
# VolumeManager deleted, or the volume removed from its spec) its PV stays, Released, with its
# labels and its NFS source, marked retained-from, and the controller never deletes it later;
# Delete (the default) removes the PV with the claim. A value other than Delete or Retain is
# refused with the option's message and deploys nothing. NFS volumes only: no s3rver needed.
# Usage: reclaim_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
set -u
. "$(dirname "$(realpath "$0")")/../lifecycle/lib.sh"
harness_init reclaim "$@"

start_sandbox 1
start_controller
controller_ready || bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"

pv_of() { # pv_of VM VOLUME_ID: the name of the PV vck made for it (labels vckname, vcid)
  k get pv -l "vckname=$1,vcid=$2" -o jsonpath='{.items[*].metadata.name}' 2>/dev/null
}
pv_field() { k get pv "$1" -o "jsonpath=$2" 2>/dev/null; }
pv_phase_is() { [ "$(pv_field "$1" '{.status.phase}')" = "$2" ]; }
pv_gone() { [ -z "$(k get pv "$1" -o name 2>/dev/null)" ]; }

vm keep "$(nfsvol share '      server: 10.0.0.10
      path: /exports/keep
      reclaimPolicy: Retain')"
vm drop "$(nfsvol share)"
vm partly "$(nfsvol a '      server: 10.0.0.10
      path: /exports/a
      reclaimPolicy: Retain')" "$(nfsvol b)"
for n in keep drop partly; do
  wait_state "$n" Running || bail "$n never became Running" "$(k get vckvm "$n" -o yaml; tail -n 20 "$WORK/controller.log")"
done
ok "three NFS VolumeManagers are Running"
KEEP=$(pv_of keep share) DROP=$(pv_of drop share) A=$(pv_of partly a)
check "each has its PV (keep: $KEEP, drop: $DROP, partly/a: $A)" test -n "$KEEP" -a -n "$DROP" -a -n "$A"
check "the PVs say RECLAIM POLICY Retain in kubectl get pv (vck deletes the ones it must itself)" \
  grep -q "Retain" <<<"$(k get pv "$KEEP" "$DROP")"

# ---- the VolumeManagers deleted ----
k delete vckvm keep drop --wait=true --timeout=60s >/dev/null 2>&1
check "both VolumeManagers are gone once their cleanup is done" wait_for 60 gone keep
if wait_for 30 pv_phase_is "$KEEP" Released; then ok "Retain: the PV stays, Released"
else not_ok "Retain: the PV stays, Released" "$(k get pv "$KEEP" -o yaml 2>&1)"; fi
check "kubectl get pv shows it Released with reclaim policy Retain" \
  grep -Eq "^$KEEP +[^ ]+ +[^ ]+ +Retain +Released" <<<"$(k get pv "$KEEP")"
check "Retain: its NFS source is intact (server and path: the data stays where it is)" \
  test "$(pv_field "$KEEP" '{.spec.nfs.server}:{.spec.nfs.path}')" = "10.0.0.10:/exports/keep"
check "Retain: it keeps vck's labels (vckname, vcid, its own)" \
  test "$(pv_field "$KEEP" '{.metadata.labels.vckname}/{.metadata.labels.vcid}/{.metadata.labels.key1}')" = "keep/share/val1"
check "Retain: it says where it was retained from, and is no longer owned by vck" \
  test "$(pv_field "$KEEP" '{.metadata.annotations.vck\.intelai\.org/retained-from}|{.metadata.annotations.vck\.intelai\.org/owner}')" = "default/keep volume share|"
check "Retain: a VolumeRetained event names the PV" \
  grep -q "$KEEP" <<<"$(k get events --field-selector reason=VolumeRetained -o jsonpath='{.items[*].message}')"
check "Delete (the default): the PV is deleted with its claim" wait_for 30 pv_gone "$DROP"
check "no claim of either is left" test -z "$(k get pvc -l vckname=keep -o name; k get pvc -l vckname=drop -o name)"

# ---- a volume removed from the spec ----
vm partly "$(nfsvol b)"
if wait_for 60 pv_phase_is "$A" Released; then ok "Retain: a volume removed from the spec leaves its PV Released"
else not_ok "Retain: a volume removed from the spec leaves its PV Released" "$(k get pv "$A" -o yaml 2>&1; k get vckvm partly -o yaml)"; fi
check "the VolumeManager goes on with its other volume" wait_state partly Running 60

# ---- later passes leave retained PVs alone ----
stop_controller
start_controller
controller_ready || bail "vck-controller never became ready again" "$(tail -n 20 "$WORK/controller.log")"
k delete vckvm partly --wait=true --timeout=60s >/dev/null 2>&1
sleep 3
check "after a restart and another deletion, both retained PVs are still there" \
  test -n "$(k get pv "$KEEP" -o name 2>/dev/null)" -a -n "$(k get pv "$A" -o name 2>/dev/null)"

# ---- refused values ----
vm bad "$(nfsvol share '      server: 10.0.0.10
      path: /exports/data
      reclaimPolicy: Keep')"
if wait_state bad Failed 60; then ok "reclaimPolicy Keep: the VolumeManager is Failed"; else not_ok "reclaimPolicy Keep: the VolumeManager is Failed" "$(k get vckvm bad -o yaml)"; fi
check "its message names the option and the allowed values" \
  grep -q 'reclaimPolicy has to be Delete or Retain, not "Keep"' <<<"$(volmsg bad share)"
check "and nothing was deployed for it" test -z "$(k get pv -l vckname=bad -o name; k get pvc -l vckname=bad -o name)"

stop_controller
tap_end
