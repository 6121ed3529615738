#!/usr/bin/env bash
# Chaos: a bounded run of random (seeded) VolumeManager operations against vck-controller in
# vck-sandbox (3 nodes) while the controller is SIGKILLed and restarted every ~2 s and the API
# server fails requests (5xx, 429 with Retry-After), drops every watch and compacts its
# history (410 on the next re-watch). The operations include refreshes (the annotation
# vck.intelai.org/refresh) and new versions of a source (one object replaced in the store), and
# VolumeManagers of one dataset share their copies (docs/arch.md, "Shared copies"). Then quiet: every VolumeManager converges, the copies
# agree with status.copies (tests/lifecycle/invariants.py), and once all are deleted they go
# within a bound and leave no label, data directory, pod, PV or claim behind.
# Usage: chaos_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
# VCK_CHAOS_SEED repeats a run's choices (the timing is not repeatable); VCK_CHAOS_OPS sets
# the number of operations (200).
set -u
# shellcheck source=lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
harness_init chaos "$@"
SPELLING=current  # about copies, not manifest spellings (tests/e2e has those)
SEED=${VCK_CHAOS_SEED:-$(( $(date +%s) % 100000 ))}
OPS=${VCK_CHAOS_OPS:-200}
echo "# seed $SEED, $OPS operations (VCK_CHAOS_SEED=$SEED repeats the choices)"

start_s3rver
make_dataset a 4
make_dataset b 3
make_dataset c 6
SOURCES=(a b c)
controller_has_flag --node-lost-timeout && CONTROLLER_ARGS=(--node-lost-timeout 5s)
start_sandbox 3
start_controller
controller_ready || bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"
ok "cluster and controller up"
RANDOM=$SEED

# ---- the model: what the spec of each live VolumeManager says ----
declare -A VOLS  # VM name -> "id:source:replicas ..." (source "nfs" for an NFS volume)
LIVE=()          # names of VolumeManagers not deleted
NEXT_VM=0 NEXT_VOL=0
# Random choices are made in this shell, never in $(...): a subshell would not advance (or
# would reseed) RANDOM, and the seed would not repeat the run.
pick() { local a=("$@"); PICKED=${a[RANDOM % ${#a[@]}]}; }
log() { echo "# op $op: $*" >>"$WORK/ops.log"; }
new_volume() { # sets NEW_VOL
  NEXT_VOL=$((NEXT_VOL + 1))
  if [ $((RANDOM % 6)) = 0 ]; then NEW_VOL="v$NEXT_VOL:nfs:1"
  else pick "${SOURCES[@]}"; NEW_VOL="v$NEXT_VOL:$PICKED:$((RANDOM % 3 + 1))"; fi
}
apply_vm() { # apply_vm NAME: the spec the model holds, applied (kubectl retried: faults hit it too)
  local items=() id src rep
  for v in ${VOLS[$1]}; do
    IFS=: read -r id src rep <<<"$v"
    if [ "$src" = nfs ]; then items+=("$(nfsvol "$id")"); else items+=("$(s3vol "$id" "$rep" "      sourceURL: s3://data/$src/")"); fi
  done
  for _ in 1 2 3; do vm "$1" "${items[@]}" && return 0; sleep 0.3; done
  APPLY_FAILED=$((APPLY_FAILED + 1))
}
set_volume() { # set_volume VM INDEX NEW: replaces the INDEX-th volume of VM
  local vols=(${VOLS[$1]}); vols[$2]=$3; VOLS[$1]="${vols[*]}"
}
declare -A VERSION  # dataset -> its latest version (1: as seeded)
new_version() { # new_version DATASET: one object of it replaced in the store (one PUT, so a listing sees one version or the next)
  local from=$WORK/src/$1 v=${VERSION[$1]:-1}
  [ "$v" -gt 1 ] && from=$WORK/src/$1@$v
  v=$((v + 1)); VERSION[$1]=$v
  local to=$WORK/src/$1@$v
  cp -r "$from" "$to"
  head -c $((600 + RANDOM % 900)) /dev/urandom >"$to/$1-file-1.bin"
  rm -rf "$WORK/one" "$WORK/one.vck-fetch" && mkdir -p "$WORK/one" && cp "$to/$1-file-1.bin" "$WORK/one/"
  seed "$WORK/one" "s3://data/$1/" && rm -rf "$WORK/one" "$WORK/one.vck-fetch"
  DATASETS+=(--dataset "$1@$v=$to")
}
drop_live() { local keep=() v; for v in "${LIVE[@]}"; do [ "$v" != "$1" ] && keep+=("$v"); done; LIVE=("${keep[@]}"); }

operation() { # one random operation, logged; false when the draw did not apply (nothing done)
  local vm vols i id src rep
  if [ ${#LIVE[@]} -eq 0 ] || { [ ${#LIVE[@]} -lt 4 ] && [ $((RANDOM % 5)) = 0 ]; }; then
    NEXT_VM=$((NEXT_VM + 1)); vm=chaos-$NEXT_VM
    new_volume; VOLS[$vm]=$NEW_VOL
    [ $((RANDOM % 2)) = 0 ] && { new_volume; VOLS[$vm]+=" $NEW_VOL"; }
    LIVE+=("$vm"); apply_vm "$vm"; log "create $vm: ${VOLS[$vm]}"; return
  fi
  pick "${LIVE[@]}"; vm=$PICKED; vols=(${VOLS[$vm]}); i=$((RANDOM % ${#vols[@]}))
  IFS=: read -r id src rep <<<"${vols[$i]}"
  case $((RANDOM % 12)) in
    0|1|2) [ "$src" = nfs ] && return 1
       pick "${SOURCES[@]}"; src=$PICKED; set_volume "$vm" "$i" "$id:$src:$rep"; apply_vm "$vm"; log "$vm/$id sourceURL -> $src" ;;
    3|4|5) [ "$src" = nfs ] && return 1
       rep=$((RANDOM % 3 + 1)); set_volume "$vm" "$i" "$id:$src:$rep"; apply_vm "$vm"; log "$vm/$id replicas -> $rep" ;;
    6) [ ${#vols[@]} -ge 3 ] && return 1
       new_volume; VOLS[$vm]+=" $NEW_VOL"; apply_vm "$vm"; log "$vm add $NEW_VOL" ;;
    7) [ ${#vols[@]} -le 1 ] && return 1
       unset 'vols[i]'; VOLS[$vm]="${vols[*]}"; apply_vm "$vm"; log "$vm remove $id" ;;
    8) for _ in 1 2 3; do k annotate vckvm "$vm" "vck.intelai.org/refresh=op-$op" --overwrite >/dev/null 2>&1 && break; sleep 0.3; done
       log "$vm refresh asked" ;;
    9) [ "$src" = nfs ] && return 1
       new_version "$src"; log "source $src: version ${VERSION[$src]}" ;;
    *) k delete vckvm "$vm" --wait=false >/dev/null 2>&1; drop_live "$vm"; unset 'VOLS[$vm]'; log "delete $vm" ;;
  esac
}

# Faults aimed at the controller's requests only: the operations' kubectl apply/delete on
# volumemanagers must go through, or the model would not be the spec.
FAULT_TARGETS=("create pods" "delete pods" "list pods" "watch pods" "patch nodes" "list nodes" "watch nodes"
  "update volumemanagers/status" "patch volumemanagers/status" "update volumemanagers" "watch volumemanagers"
  "create persistentvolumes" "create persistentvolumeclaims" "delete persistentvolumes" "create events")
inject_fault() {
  local verb res code count extra=""
  case $((RANDOM % 6)) in
    0) admin POST /faults/drop-watches >/dev/null; log "fault: drop watches"; return ;;
    1) admin POST /faults/compact >/dev/null; admin POST /faults/drop-watches >/dev/null; log "fault: compact + drop watches (410 on re-watch)"; return ;;
  esac
  pick "${FAULT_TARGETS[@]}"; verb=${PICKED% *} res=${PICKED#* }
  pick 500 503 429 500; code=$PICKED count=$((RANDOM % 3 + 1))
  [ "$code" = 429 ] && extra=',"retryAfterSeconds":1'
  admin POST /faults/fail "{\"verb\":\"$verb\",\"resource\":\"$res\",\"code\":$code,\"count\":$count$extra}" >/dev/null
  log "fault: $code x$count on $verb $res"
}

# ---- the storm ----
APPLY_FAILED=0 KILLS=0
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
next_kill=$(( $(now_ms) + 1500 + RANDOM % 1000 ))
storm_start=$SECONDS
op=0
while [ "$op" -lt "$OPS" ]; do
  op=$((op + 1))
  operation || { op=$((op - 1)); continue; }
  [ $((RANDOM % 8)) = 0 ] && inject_fault
  if [ "$(now_ms)" -ge "$next_kill" ]; then
    kill_controller; start_controller; KILLS=$((KILLS + 1))
    next_kill=$(( $(now_ms) + 1500 + RANDOM % 1000 ))
  fi
  sleep "0.$((RANDOM % 2))"
done
storm=$((SECONDS - storm_start))
echo "# storm: $OPS operations in $storm s, $KILLS controller kills, $(grep -c 'fault:' "$WORK/ops.log") faults, $APPLY_FAILED applies failed," \
  "$(grep -c 'refresh asked' "$WORK/ops.log") refreshes asked, $(grep -c ': version ' "$WORK/ops.log") new source versions"
check "every operation's apply went through (the model is the spec)" test "$APPLY_FAILED" = 0

# ---- quiet ----
admin POST /faults/clear >/dev/null
[ -n "$CONTROLLER_PID" ] && kill -0 "$CONTROLLER_PID" 2>/dev/null || start_controller
controller_ready || bail "vck-controller never became ready after the storm" "$(tail -n 20 "$WORK/controller.log")"
settled() { # every live VolumeManager Running, at the generation it observed
  local v
  for v in "${LIVE[@]}"; do
    [ "$(jp "$v" '{.status.state}/{.status.observedGeneration}')" = "Running/$(jp "$v" '{.metadata.generation}')" ] || return 1
  done
}
if wait_for 150 settled; then ok "all ${#LIVE[@]} remaining VolumeManagers converge to Running"
else
  not_ok "all ${#LIVE[@]} remaining VolumeManagers converge to Running" \
    "$(for v in "${LIVE[@]}"; do
         echo "$v: $(jp "$v" '{.status.state} gen {.metadata.generation} observed {.status.observedGeneration}: {.status.message}')"
         jp "$v" '{range .status.volumes[*]}  volume {.id}: {.message}{"\n"}{end}{range .status.copies[*]}  copy {.volume} {.node} {.phase} {.config} digest={.sourceDigest} from={.sharedFrom}{"\n"}{end}'
       done)"
fi
check_invariants "after the storm"
# How much of it sharing carries (a join is an entry that names the copy's maker).
joined=$(k get vckvm -o jsonpath='{range .items[*]}{range .status.copies[*]}{.sharedFrom}{"\n"}{end}{end}' 2>/dev/null | grep -c .)
shared=$(k get vckvm -o jsonpath='{range .items[*]}{range .status.copies[*]}{.node}{.path}{"\n"}{end}{end}' 2>/dev/null |
  grep -c 'vck-resource-shared-')
echo "# sharing: $joined of $shared entries in shared directories joined another VolumeManager's copy"
# Each S3 volume's status names the dataset its spec asks for.
report=$(invariants --report 2>/dev/null | grep '^volume ')
wrong=""
for v in "${LIVE[@]}"; do
  for vol in ${VOLS[$v]}; do
    IFS=: read -r id src rep <<<"$vol"
    [ "$src" = nfs ] && continue
    got=$(awk -v n="default/$v/$id" '$2 == n {print $3 "," $5}' <<<"$report")
    holders=${got#*,nodes=}
    got=$(sed 's/@[0-9]*//g' <<<"$got")  # any version of the source
    [ "${got%%,*}" = "dataset=$src" ] && [ "$(tr ',' '\n' <<<"$holders" | grep -c .)" = "$rep" ] ||
      wrong+="$v/$id wants $src x$rep, status names: ${got:-nothing}"$'\n'
  done
done
if [ -z "$wrong" ]; then ok "every S3 volume's status names its spec's dataset on as many nodes as replicas"
else not_ok "every S3 volume's status names its spec's dataset on as many nodes as replicas" "$wrong"; fi

# ---- delete everything: no stuck finalizer, nothing left ----
k delete vckvm --all --wait=false >/dev/null 2>&1
if wait_for 120 eval '[ -z "$(k get vckvm -o name 2>/dev/null)" ]'; then ok "0 stuck finalizers: every VolumeManager is gone within 120 s"
else not_ok "0 stuck finalizers: every VolumeManager is gone within 120 s" "$(k get vckvm -o jsonpath='{range .items[*]}{.metadata.name}: {.status.message}{"\n"}{end}')"; fi
wait_for 30 nothing_left
left=$(leftovers)
check "0 orphan node labels" test -z "$(grep '^label ' <<<"$left")"
check "0 orphan data directories" test -z "$(grep 'vck-resource-' <<<"$left")"
check "0 orphan pods" test -z "$(grep '^pod/' <<<"$left")"
check "0 orphan PVs and claims" test -z "$(grep '^persistentvolume' <<<"$left")"
check "0 orphan peer certificate Secrets" test -z "$(grep '^secret/' <<<"$left")"
[ -n "$left" ] && sed 's/^/# left: /' <<<"$left" | head -n 30
echo "# took $SECONDS s"
tap_end
