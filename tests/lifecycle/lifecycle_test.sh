#!/usr/bin/env bash
# The lifecycle of the copies vck-controller places, as a user sees it: status.copies, node
# labels and node directories of vck-sandbox's nodes, against datasets seeded into s3rver.
# Each case runs in a fresh cluster (3 nodes), then deletes its VolumeManagers and checks
# that nothing is left. Cases: a changed sourceURL replaced blue/green, replicas 2->1->2, a
# volume removed, a volume removed then its VolumeManager deleted (each also with the
# controller SIGKILLed midway), a failing node label patch, cordoned/tainted/NotReady nodes,
# nodes labelled after a Failed placement, a node deleted and one NotReady past
# --node-lost-timeout, a 422 on pod creation, bounded download retries.
# Usage: lifecycle_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
# VCK_LIFECYCLE_ONLY=REGEX runs the cases whose call (e.g. "case_ineligible tainted") matches.
# Prints TAP lines; exits non-zero if any check failed. Stops everything it started.
set -u
# shellcheck source=lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
harness_init lifecycle "$@"
SPELLING=current  # about copies, not manifest spellings (tests/e2e has those)

start_s3rver
make_dataset a 8
make_dataset b 5

if controller_has_flag --node-lost-timeout; then
  CONTROLLER_ARGS=(--node-lost-timeout 5s)
  ok "vck-controller takes --node-lost-timeout"
else
  not_ok "vck-controller takes --node-lost-timeout" "started without it; the node loss cases wait for its default"
fi

fresh_cluster() { # a new sandbox (3 nodes) and controller, nothing else in them
  stop_controller
  stop_sandbox
  start_sandbox 3
  start_controller
  controller_ready || bail "vck-controller never became ready" "$(tail -n 20 "$WORK/controller.log")"
}

# ---- what the status says of a volume ----
vol_key() { jp "$1" "{.status.volumes[?(@.id==\"$2\")].nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key}"; }
vol_digest() { jp "$1" "{.status.volumes[?(@.id==\"$2\")].nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]}"; }
vol_path() { jp "$1" "{.status.volumes[?(@.id==\"$2\")].volumeSource.hostPath.path}"; }
copies() { # copies VM: one line per status.copies entry: volume node phase config attempts path
  jp "$1" '{range .status.copies[*]}{.volume}{" "}{.node}{" "}{.phase}{" "}{.config}{" "}{.attempts}{" "}{.path}{"\n"}{end}'
}
labelled() { [ -n "$1" ] || return 0; k get nodes -l "$1" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null; }
count() { grep -c . <<<"$1"; }
dirs_named() { find "$DATA/nodes" -path "*$1" -prune -print 2>/dev/null; } # dirs_named HOSTPATH: that directory on every node
data_dirs_on() { find "$DATA/nodes/$1" -name 'vck-resource-*' ! -name '*.vck-fetch' -prune -print 2>/dev/null; }
holds() { [ -d "$DATA/nodes/$1$2" ] && diff -r "$WORK/src/$3" "$DATA/nodes/$1$2" >/dev/null 2>&1; } # holds NODE PATH DATASET
pod_names() { k get pods -o name 2>/dev/null | sort; }
status_of() { k get vckvm "$1" -o yaml 2>&1 | sed -n '/^status:/,$p'; }
holding() { # holding VM VOLUME DATASET: how many nodes the status label selects hold the dataset at its hostPath
  local path good=0; path=$(vol_path "$1" "$2")
  for n in $(labelled "$(vol_key "$1" "$2")=$(vol_digest "$1" "$2")"); do holds "$n" "$path" "$3" && good=$((good + 1)); done
  echo "$good"
}
running_first() { # running_first TAG VM WHAT: one TAP line; false (the case cleaned up) unless VM gets Running
  if wait_state "$2" Running 90; then ok "$1: $3"; return 0; fi
  not_ok "$1: $3" "$(status_of "$2")"; finish "$1" "$2"; return 1
}

set_ready() { # set_ready NODE True|False: the node's Ready condition, as a kubelet would report it
  local reason=KubeletReady now; [ "$2" = True ] || reason=KubeletNotReady
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  k patch node "$1" --subresource=status --type=strategic -p "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"$2\",\"reason\":\"$reason\",\"message\":\"lifecycle test\",\"lastTransitionTime\":\"$now\",\"lastHeartbeatTime\":\"$now\"}]}}" >/dev/null
}

finish() { # finish TAG VM...: deletes the VolumeManagers; nothing may be left
  local tag=$1; shift
  for v in "$@"; do k delete vckvm "$v" --wait=false >/dev/null 2>&1; done
  local stuck=""
  for v in "$@"; do wait_for 90 gone "$v" || stuck+=" $v"; done
  if [ -z "$stuck" ]; then ok "$tag: deleting the VolumeManager finishes"
  else not_ok "$tag: deleting the VolumeManager finishes" "still there:$stuck $(k get vckvm -o yaml | grep -A8 '^  status:' | head -n 30)"; fi
  if wait_for 30 nothing_left; then ok "$tag: after deletion nothing is left (data, state, labels, pods, PVs, claims)"
  else not_ok "$tag: after deletion nothing is left (data, state, labels, pods, PVs, claims)" "$(leftovers)"; fi
}

observe_once() { # one report of rule 1 appended to $WORK/observed; counts OBS, collects VIOLATIONS
  local out rc
  out=$(invariants --rules 1 --report 2>&1); rc=$?
  OBS=$((OBS + 1))
  [ $rc -ne 0 ] && VIOLATIONS+="$(grep -v '^volume \|^cleanup ' <<<"$out")"$'\n'
  { echo "--- $OBS"; echo "$out"; } >>"$WORK/observed"
}
# observe KILL SECONDS DONE...: checks rule 1 of the invariants at every observation (~0.2 s
# apart, each report appended to $WORK/observed) until DONE succeeds or SECONDS pass. KILL=1
# SIGKILLs the controller once (when a pod not in $BEFORE appears, or after 5 s) and restarts
# it at once. Sets OBS (observations) and VIOLATIONS.
observe() {
  local kill=$1 limit=$2; shift 2
  local start=$SECONDS killed=0
  OBS=0 VIOLATIONS=""
  : >"$WORK/observed"
  while :; do
    if [ "$kill" = 1 ] && [ $killed = 0 ] &&
       { [ $((SECONDS - start)) -ge 5 ] || [ -n "$(comm -13 <(echo "$BEFORE") <(pod_names))" ]; }; then
      kill_controller; start_controller; killed=1
      echo "# controller SIGKILLed and restarted $((SECONDS - start)) s into the change"
    fi
    observe_once
    if "$@"; then
      # DONE may have become true after this round's report: one more, so the last state
      # the change reached is among the observations too.
      observe_once
      return 0
    fi
    [ $((SECONDS - start)) -ge "$limit" ] && return 1
    sleep 0.2
  done
}
check_observed() { # check_observed TAG: one TAP line for rule 1 over the observations
  if [ -z "$VIOLATIONS" ]; then ok "$1: at each of $OBS observations the copies status names were complete and byte-identical"
  else not_ok "$1: at each of $OBS observations the copies status names were complete and byte-identical" \
    "$(grep . <<<"$VIOLATIONS" | sort | uniq -c | sort -rn | head -n 10 | sed 's/^ *\([0-9]*\) /(seen at \1 observations) /')"; fi
}
suffix() { [ "$1" = 1 ] && echo " (controller SIGKILLed midway)"; }

# ---- the judge itself: invariants.py on a record made by hand (no controller running) ----
case_checker() {
  local tag="invariants.py on a hand-made record" key=vck.intelai.org/default.fake.v cfg=00000000000000aa
  local dir=/var/datasets/vck-resource-0123456789abcdef out
  stop_controller
  stop_sandbox
  start_sandbox 3
  vm fake "$(s3vol v 1 '      sourceURL: s3://data/a/')"
  k patch vckvm fake --subresource=status --type=merge -p "{\"status\":{
    \"copies\":[{\"volume\":\"v\",\"node\":\"node-1\",\"path\":\"$dir\",\"config\":\"$cfg\",\"phase\":\"Ready\",\"attempts\":1}],
    \"volumes\":[{\"id\":\"v\",\"message\":\"success\",\"volumeSource\":{\"hostPath\":{\"path\":\"$dir\"}},
      \"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[
        {\"key\":\"$key\",\"operator\":\"In\",\"values\":[\"$cfg\"]}]}]}}}]}}" >/dev/null
  mkdir -p "$DATA/nodes/node-1$dir.vck-fetch" && cp -r "$WORK/src/a" "$DATA/nodes/node-1$dir"
  k label node node-1 "$key=$cfg" >/dev/null
  out=$(invariants --report 2>&1)
  check "$tag: a consistent record passes and names its dataset ($(grep '^volume' <<<"$out"))" \
    eval '[ -z "$(grep ^violation <<<"$out")" ] && grep -q "dataset=a digest=$cfg nodes=node-1 path=$dir" <<<"$out"'
  mkdir -p "$DATA/nodes/node-2/var/datasets/vck-resource-ffff"
  k label node node-3 "$key=$cfg" >/dev/null
  echo changed >>"$DATA/nodes/node-1$dir/sub/a-nested.bin"
  out=$(invariants 2>&1)
  check "$tag: names an unrecorded directory" grep -q "node node-2: /var/datasets/vck-resource-ffff is in no" <<<"$out"
  check "$tag: names an unrecorded label" grep -q "node node-3: label $key=$cfg matches no copy" <<<"$out"
  check "$tag: names a labelled node without the directory" grep -q "node node-3 carries $key=$cfg but has no directory" <<<"$out"
  check "$tag: names a copy that is not its dataset" grep -q "on node node-1 is no seeded dataset (closest a: differing sub/a-nested.bin)" <<<"$out"
  k delete vckvm fake --wait=false >/dev/null 2>&1
}

# ---- a changed sourceURL: blue/green ----
OLD_DIGEST="" OLD_PATH="" OLD_NODES="" KEY=""
switched_and_old_gone() {
  local d; d=$(vol_digest "$1" v)
  [ -n "$d" ] && [ "$d" != "$OLD_DIGEST" ] || return 1
  [ -z "$(labelled "$KEY=$OLD_DIGEST")" ] || return 1
  for n in $OLD_NODES; do [ -e "$DATA/nodes/$n$OLD_PATH" ] || [ -e "$DATA/nodes/$n$OLD_PATH.vck-fetch" ] && return 1; done
  return 0
}
case_source_change() { # case_source_change KILL
  local kill=$1 name=source$1 tag; tag="sourceURL a->b$(suffix "$1")"
  fresh_cluster
  vm "$name" "$(s3vol v 2 '      sourceURL: s3://data/a/')"
  running_first "$tag" "$name" "Running on dataset a" || return
  check_invariants "$tag: before the change"
  KEY=$(vol_key "$name" v) OLD_DIGEST=$(vol_digest "$name" v) OLD_PATH=$(vol_path "$name" v)
  OLD_NODES=$(labelled "$KEY=$OLD_DIGEST")
  BEFORE=$(pod_names)
  vm "$name" "$(s3vol v 2 '      sourceURL: s3://data/b/')"
  observe "$kill" 90 switched_and_old_gone "$name"
  local done=$?
  check_observed "$tag"
  # The dataset status named at each observation, in order, squeezed: a, then b, nothing else.
  local seq; seq=$(awk -v vm="default/$name/v" '$1 == "volume" && $2 == vm {sub("dataset=", "", $3); print $3}' "$WORK/observed" | uniq | tr '\n' ' ')
  check "$tag: status named dataset a until it switched to b, once (saw: $seq)" test "$seq" = "a b " -o "$seq" = "b "
  local first_b; first_b=$(awk -v vm="default/$name/v" '$1 == "volume" && $2 == vm && $3 == "dataset=b" {print $5; exit}' "$WORK/observed")
  check "$tag: at the switch both new replicas were ready ($first_b)" test "$(tr ',' '\n' <<<"${first_b#nodes=}" | grep -c .)" = 2
  if [ $done = 0 ]; then ok "$tag: the old copies and their labels are gone from the nodes that held them ($(echo $OLD_NODES))"
  else not_ok "$tag: the old copies and their labels are gone from the nodes that held them ($(echo $OLD_NODES))" \
    "old label holders: $(labelled "$KEY=$OLD_DIGEST" | tr '\n' ' '); old dirs: $(dirs_named "$OLD_PATH" | tr '\n' ' '); status: $(copies "$name")"; fi
  local cleaned; cleaned=$(awk -v d="$(basename "$OLD_PATH")" '$1 == "cleanup" && $3 == d {print $2}' "$WORK/observed" | sort -u)
  local stray; stray=$(comm -23 <(echo "$cleaned" | grep .) <(echo "$OLD_NODES" | sort))
  check "$tag: cleanup of the old copy ran only on nodes that held it (seen on: $(echo $cleaned))" test -z "$stray"
  local path; path=$(vol_path "$name" v)
  check "$tag: two replicas, each directory holding exactly dataset b" \
    test "$(holding "$name" v b)" = 2 -a "$(count "$(labelled "$KEY")")" = 2
  check "$tag: the new copies are in a directory of their own" test -n "$path" -a "$path" != "$OLD_PATH"
  check_invariants "$tag: after the change"
  finish "$tag" "$name"
}

# ---- replicas 2 -> 1 -> 2 ----
nodes_with_copy() { local p; p=$(vol_path "$1" v); [ -n "$p" ] && dirs_named "$p" | grep -c .; }
shrunk() { # shrunk VM: one labelled node, one directory of the volume left
  local key; key=$(vol_key "$1" v)
  [ -n "$key" ] && [ "$(labelled "$key" | grep -c .)" = 1 ] && [ "$(nodes_with_copy "$1")" = 1 ] &&
    [ "$(find "$DATA/nodes" -name "$(basename "$(vol_path "$1" v)").vck-fetch" | grep -c .)" -le 1 ]
}
grown() { # grown VM: Running with two labelled nodes holding the data
  local key; key=$(vol_key "$1" v)
  state_is "$1" Running && [ -n "$key" ] && [ "$(labelled "$key=$(vol_digest "$1" v)" | grep -c .)" = 2 ]
}
case_replicas() { # case_replicas KILL
  local kill=$1 name=replicas$1 tag; tag="replicas 2->1->2$(suffix "$1")"
  fresh_cluster
  vm "$name" "$(s3vol v 2 '      sourceURL: s3://data/a/')"
  running_first "$tag" "$name" "Running with 2 replicas" || return
  local key path before after removed kept
  key=$(vol_key "$name" v) path=$(vol_path "$name" v) before=$(labelled "$key")
  BEFORE=$(pod_names)
  vm "$name" "$(s3vol v 1 '      sourceURL: s3://data/a/')"
  if observe "$kill" 60 shrunk "$name"; then ok "$tag: 2->1 leaves one copy and one labelled node"
  else not_ok "$tag: 2->1 leaves one copy and one labelled node" "labelled: $(labelled "$key" | tr '\n' ' '); dirs: $(dirs_named "$path" | tr '\n' ' '); copies: $(copies "$name")"; fi
  check_observed "$tag: 2->1"
  after=$(labelled "$key") removed=$(comm -23 <(sort <<<"$before") <(sort <<<"$after") | tr '\n' ' ')
  kept=$(comm -12 <(sort <<<"$before") <(sort <<<"$after") | tr '\n' ' ')
  removed=${removed% } kept=${kept% }
  check "$tag: 2->1 removes the extra copy's data and state directories ($removed)" \
    eval '[ "$(wc -w <<<"$removed")" = 1 ] && [ ! -e "$DATA/nodes/$removed$path" ] && [ ! -e "$DATA/nodes/$removed$path.vck-fetch" ]'
  check "$tag: 2->1 keeps the other copy intact ($kept)" holds "$kept" "$path" a
  check "$tag: 2->1 leaves the VolumeManager Running" wait_state "$name" Running 30
  check_invariants "$tag: after 2->1"
  BEFORE=$(pod_names)
  vm "$name" "$(s3vol v 2 '      sourceURL: s3://data/a/')"
  if observe "$kill" 60 grown "$name"; then ok "$tag: 1->2 is Running with two labelled nodes"
  else not_ok "$tag: 1->2 is Running with two labelled nodes" "$(copies "$name")"; fi
  check_observed "$tag: 1->2"
  check "$tag: 1->2 adds a copy on a second node, both byte-identical" test "$(holding "$name" v a)" = 2
  check_invariants "$tag: after 1->2"
  finish "$tag" "$name"
}

# ---- a volume removed from the spec (then, maybe, the VolumeManager deleted) ----
volume_gone() { # volume_gone VM: nothing of volume w in status, on nodes or in labels
  [ -z "$(copies "$1" | awk '$1 == "w"')" ] && [ -z "$(jp "$1" '{.status.volumes[?(@.id=="w")].id}')" ] &&
    [ -z "$(labelled "$W_KEY")" ] && [ -z "$(dirs_named "$W_PATH")" ] && [ -z "$(dirs_named "$W_PATH.vck-fetch")" ]
}
case_volume_removed() { # case_volume_removed KILL DELETE
  local kill=$1 delete=$2 name=removed$1$2 tag
  tag="volume removed$([ "$delete" = 1 ] && echo ", VolumeManager deleted right after")$(suffix "$kill")"
  fresh_cluster
  local v1 w
  v1=$(s3vol v 1 '      sourceURL: s3://data/a/') w=$(s3vol w 2 '      sourceURL: s3://data/b/')
  vm "$name" "$v1" "$w"
  running_first "$tag" "$name" "Running with two volumes" || return
  W_KEY=$(vol_key "$name" w) W_PATH=$(vol_path "$name" w)
  BEFORE=$(pod_names)
  vm "$name" "$v1"
  if [ "$delete" = 1 ]; then
    k delete vckvm "$name" --wait=false >/dev/null 2>&1
    if observe "$kill" 90 gone "$name"; then ok "$tag: the VolumeManager goes"
    else not_ok "$tag: the VolumeManager goes" "$(status_of "$name")"; fi
    check_observed "$tag"
    if wait_for 30 nothing_left; then ok "$tag: nothing is left (data, state, labels, pods, PVs, claims)"
    else not_ok "$tag: nothing is left (data, state, labels, pods, PVs, claims)" "$(leftovers)"; fi
    return
  fi
  if observe "$kill" 60 volume_gone "$name"; then ok "$tag: every copy, directory and label of the removed volume goes"
  else not_ok "$tag: every copy, directory and label of the removed volume goes" \
    "labelled: $(labelled "$W_KEY" | tr '\n' ' '); dirs: $(dirs_named "$W_PATH" | tr '\n' ' '); copies: $(copies "$name")"; fi
  check_observed "$tag"
  local key path; key=$(vol_key "$name" v) path=$(vol_path "$name" v)
  check "$tag: the remaining volume keeps its copy" holds "$(labelled "$key=$(vol_digest "$name" v)" | head -n 1)" "$path" a
  check "$tag: the VolumeManager stays Running" wait_state "$name" Running 30
  check_invariants "$tag"
  finish "$tag" "$name"
}

any_data_dir() { [ -n "$(find "$DATA/nodes" -name 'vck-resource-*' ! -name '*.vck-fetch' 2>/dev/null)" ]; }

# ---- a node label patch that fails, then the VolumeManager deleted ----
case_label_patch_fails() {
  local tag="node label patch failing (500), VolumeManager deleted"
  fresh_cluster
  admin POST /faults/fail '{"verb":"patch","resource":"nodes","code":500,"count":100000,"message":"lifecycle test: node patches fail"}' >/dev/null ||
    bail "arming a fault rule failed"
  vm nolabel "$(s3vol v 1 '      sourceURL: s3://data/a/')"
  local dirs=""
  wait_for 60 any_data_dir && dirs=$(find "$DATA/nodes" -name 'vck-resource-*' -prune -print)
  check "$tag: the download still runs on a node" test -n "$dirs"
  sleep 3
  k delete vckvm nolabel --wait=false >/dev/null 2>&1
  if wait_for 45 gone nolabel; then ok "$tag: the VolumeManager goes while node patches still fail"
  else
    not_ok "$tag: the VolumeManager goes while node patches still fail" "$(status_of nolabel)"
    admin POST /faults/clear >/dev/null
    check "$tag: the VolumeManager goes once node patches work again" wait_for 60 gone nolabel
  fi
  admin POST /faults/clear >/dev/null
  local left=""; for d in $dirs; do [ -e "$d" ] && left+=" ${d#"$DATA"/}"; done
  check "$tag: no directory is left on the node that got the download${left}" test -z "$left"
  if wait_for 30 nothing_left; then ok "$tag: nothing is left"; else not_ok "$tag: nothing is left" "$(leftovers)"; fi
}

# ---- an ineligible node (cordoned, tainted, NotReady) and replicas 3 on 3 nodes ----
make_ineligible() { # make_ineligible HOW NODE
  case $1 in
    cordoned) k cordon "$2" >/dev/null ;;
    tainted) k taint node "$2" dedicated=lifecycle:NoSchedule >/dev/null ;;
    NotReady) set_ready "$2" False ;;
  esac
}
make_eligible() {
  case $1 in
    cordoned) k uncordon "$2" >/dev/null ;;
    tainted) k taint node "$2" dedicated=lifecycle:NoSchedule- >/dev/null ;;
    NotReady) set_ready "$2" True ;;
  esac
}
placement_sound() { # placement_sound VM NODE: no copy on NODE, no node with two copies or two download pods
  local dup
  [ -z "$(data_dirs_on "$2")" ] || { echo "a data directory on $2"; return 1; }
  [ -z "$(copies "$1" | awk -v n="$2" '$2 == n')" ] || { echo "status.copies has a copy on $2"; return 1; }
  [ -z "$(k get pods -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -x "$2")" ] || { echo "a pod is bound to $2"; return 1; }
  for n in "$DATA"/nodes/*/; do
    n=$(basename "$n")
    [ "$(data_dirs_on "$n" | grep -c .)" -le 1 ] || { echo "two data directories on $n"; return 1; }
  done
  dup=$(copies "$1" | awk '$3 != "Removing" && $3 != "Lost" && $3 != "Failed" {print $2}' | sort | uniq -d)
  [ -z "$dup" ] || { echo "status.copies has two live copies on $dup"; return 1; }
  dup=$(k get pods -l vckname="$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"|"}{.spec.containers[0].args[0]}{"\n"}{end}' |
    awk -F'|' '$2 != "delete" && $1 != "" {print $1}' | sort | uniq -d)
  [ -z "$dup" ] || { echo "two download pods on $dup"; return 1; }
}
case_ineligible() { # case_ineligible HOW
  local how=$1 name tag="replicas 3 on 3 nodes, one $1"
  name=$(tr 'A-Z' 'a-z' <<<"ineligible-$how")
  fresh_cluster
  make_ineligible "$how" node-3
  vm "$name" "$(s3vol v 3 '      sourceURL: s3://data/a/')"
  local end=$((SECONDS + 20)) bad="" msg=""
  while [ $SECONDS -lt $end ]; do
    msg=$(volmsg "$name" v)
    bad=$(placement_sound "$name" node-3) || break
    sleep 0.5
  done
  [ -n "$msg" ] || msg=$(volmsg "$name" v)
  check "$tag: node-3 never gets a copy, no node two ($bad)" test -z "$bad"
  check "$tag: the volume says why it cannot place (\"$msg\")" grep -q "replicas \[3\] greater than number of nodes \[2\]" <<<"$msg"
  make_eligible "$how" node-3
  if wait_state "$name" Running 90; then ok "$tag: Running on its own once node-3 is eligible again"
  else not_ok "$tag: Running on its own once node-3 is eligible again" "$(status_of "$name")"; fi
  local key; key=$(vol_key "$name" v)
  check "$tag: then three copies on three nodes" test -n "$key" -a "$(labelled "$key=$(vol_digest "$name" v)" | grep -c .)" = 3
  check_invariants "$tag"
  finish "$tag" "$name"
}

# ---- nodes labelled after a Failed placement ----
affinity() { # affinity KEY VALUE: volume lines requiring a node label
  printf '    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions:\n          - {key: %s, operator: In, values: [%s]}' "$1" "$2"
}
case_labels_after_failed() {
  local tag="nodes labelled after a Failed placement"
  fresh_cluster
  k label node node-1 disk=ssd >/dev/null
  vm nomatch "$(s3vol v 1 '      sourceURL: s3://data/a/')
$(affinity zone lifecycle)"
  vm toofew "$(s3vol v 2 '      sourceURL: s3://data/b/')
$(affinity disk ssd)"
  local g1 g2 m1 m2
  wait_state nomatch Failed 60; m1=$(volmsg nomatch v)
  wait_state toofew Failed 60; m2=$(volmsg toofew v)
  check "$tag: no node matches: Failed saying so (\"$m1\")" \
    eval 'state_is nomatch Failed && grep -q "no node matches\|greater than number of nodes \[0\]" <<<"$m1"'
  check "$tag: one node of two: Failed with \"replicas [2] greater than number of nodes [1]\" (\"$m2\")" \
    eval 'state_is toofew Failed && grep -q "replicas \[2\] greater than number of nodes \[1\]" <<<"$m2"'
  g1=$(jp nomatch '{.metadata.generation}') g2=$(jp toofew '{.metadata.generation}')
  k label node node-2 zone=lifecycle >/dev/null
  k label node node-3 disk=ssd >/dev/null
  check "$tag: no node matched: Running once one is labelled" wait_state nomatch Running 90
  check "$tag: too few nodes: Running once another is labelled" wait_state toofew Running 90
  check "$tag: the VolumeManagers were not touched" test "$(jp nomatch '{.metadata.generation}')/$(jp toofew '{.metadata.generation}')" = "$g1/$g2"
  check "$tag: the copies are on the labelled nodes" \
    test "$(labelled "$(vol_key nomatch v)" | tr '\n' ' ')/$(labelled "$(vol_key toofew v)" | tr '\n' ' ')" = "node-2 /node-1 node-3 "
  check_invariants "$tag"
  finish "$tag" nomatch toofew
}

# ---- a node lost (deleted, or NotReady past --node-lost-timeout) ----
LOST_SEEN="" PENDING_SEEN="" VICTIM=""
replaced() { # replaced VM: Running with two copies, none on $VICTIM; notes what it saw on the way
  local msg; msg=$(volmsg "$1" v)
  copies "$1" | awk -v n="$VICTIM" '$2 == n && $3 == "Lost"' | grep -q . && LOST_SEEN=1
  state_is "$1" Pending && grep -q -- "$VICTIM" <<<"$msg" && PENDING_SEEN="$msg"
  local key; key=$(vol_key "$1" v)
  state_is "$1" Running && [ -n "$key" ] && ! labelled "$key" | grep -qx "$VICTIM" &&
    [ "$(labelled "$key=$(vol_digest "$1" v)" | grep -c .)" = 2 ]
}
case_node_lost() { # case_node_lost deleted|NotReady
  local how=$1 name tag="a node holding a copy $1"
  name=$(tr 'A-Z' 'a-z' <<<"lost-$how")
  [ "$how" = NotReady ] && tag+=" past --node-lost-timeout"
  fresh_cluster
  vm "$name" "$(s3vol v 2 '      sourceURL: s3://data/a/')"
  running_first "$tag" "$name" "Running with 2 replicas" || return
  local key path
  key=$(vol_key "$name" v) path=$(vol_path "$name" v)
  VICTIM=$(labelled "$key" | head -n 1) LOST_SEEN="" PENDING_SEEN=""
  k get node "$VICTIM" -o json >"$WORK/victim.json"
  # Every status the controller writes, from a watch: the Pending one can be shorter than a poll.
  "$KUBECTL" --kubeconfig "$WORK/kubeconfig" get vckvm "$name" -w \
    -o 'jsonpath={.status.state}{"|"}{.status.volumes[0].message}{"\n"}' >"$WORK/watched" 2>&1 &
  local watcher=$!
  # The watch has printed the current state: it is listening before the node goes (kubectl
  # starting late under load would miss a short Pending).
  wait_for 30 test -s "$WORK/watched"
  if [ "$how" = deleted ]; then k delete node "$VICTIM" >/dev/null; else set_ready "$VICTIM" False; fi
  BEFORE=$(pod_names)
  if observe 0 90 replaced "$name"; then ok "$tag: a replacement copy on another node, Running again"
  else not_ok "$tag: a replacement copy on another node, Running again" "$(status_of "$name")"; fi
  kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null
  [ -n "$PENDING_SEEN" ] || PENDING_SEEN=$(grep -m1 "^Pending|.*$VICTIM" "$WORK/watched")
  check_observed "$tag"
  check "$tag: the lost copy is marked Lost in status.copies" test -n "$LOST_SEEN"
  check "$tag: meanwhile the volume was Pending naming $VICTIM (\"$PENDING_SEEN\")" test -n "$PENDING_SEEN"
  check "$tag: both copies byte-identical, neither on $VICTIM" \
    eval '[ "$(holding "$name" v a)" = 2 ] && ! labelled "$key" | grep -qx "$VICTIM"'
  if [ "$how" = deleted ]; then
    "$PYTHON" -c 'import json,sys; o=json.load(open(sys.argv[1])); m=o["metadata"]
for f in ("resourceVersion","uid","creationTimestamp","managedFields"): m.pop(f, None)
json.dump(o, open(sys.argv[1],"w"))' "$WORK/victim.json"
    k create -f "$WORK/victim.json" >/dev/null
  fi
  set_ready "$VICTIM" True
  if wait_for 60 eval "[ ! -e '$DATA/nodes/$VICTIM$path' ] && [ ! -e '$DATA/nodes/$VICTIM$path.vck-fetch' ]"; then
    ok "$tag: the stale copy is removed when $VICTIM returns"
  else not_ok "$tag: the stale copy is removed when $VICTIM returns" "$(copies "$name")"; fi
  check "$tag: $VICTIM carries no label of the volume" eval "! labelled '$key' | grep -qx '$VICTIM'"
  check_invariants "$tag"
  finish "$tag" "$name"
}

# ---- a refused create (422) ----
case_refused_create() {
  local tag="pod creation refused (422)" msg='Pod "vck" is invalid: spec.volumes[0].hostPath: Forbidden: lifecycle test refusal'
  fresh_cluster
  admin POST /faults/fail "{\"verb\":\"create\",\"resource\":\"pods\",\"code\":422,\"count\":100000,\"message\":\"${msg//\"/\\\"}\"}" >/dev/null ||
    bail "arming a fault rule failed"
  vm refused "$(s3vol v 1 '      sourceURL: s3://data/a/')"
  # Creates the sandbox refused: in the first 10 s, then in the 20 s after (every second: 20).
  local c1 c2
  sleep 10; c1=$(faults_fired); sleep 20; c2=$(faults_fired)
  check "$tag: retried with backoff: $c1 creates in the first 10 s, $((c2 - c1)) in the 20 s after" \
    test "$c1" -ge 2 -a $((c2 - c1)) -le 5
  if grep -qF "lifecycle test refusal" <<<"$(volmsg refused v)"; then ok "$tag: the server's message is in status.volumes[].message"
  else not_ok "$tag: the server's message is in status.volumes[].message" "message: $(volmsg refused v)"; fi
  check "$tag: a Warning event on the VolumeManager carries it" eval \
    "k get events --field-selector involvedObject.name=refused -o jsonpath='{range .items[?(@.type==\"Warning\")]}{.message}{\"\\n\"}{end}' | grep -qF 'lifecycle test refusal'"
  admin POST /faults/clear >/dev/null
  check "$tag: Running once creates are accepted" wait_state refused Running 150
  check_invariants "$tag"
  finish "$tag" refused
}

# ---- failed downloads: bounded retries ----
case_download_retries() {
  local tag="a failing download"
  fresh_cluster
  vm retries "$(s3vol v 1 '      sourceURL: s3://data/no/such/object.bin')"
  check "$tag: Failed in the end" wait_state retries Failed 150
  local attempts; attempts=$(copies retries | awk '$1 == "v" {print $5}' | sort -n | tail -n 1)
  check "$tag: after 3 attempts (--max-download-attempts default), as status.copies says (attempts=$attempts)" test "$attempts" = 3
  check_invariants "$tag"
  finish "$tag" retries
}

run() { # run CASE ARGS...: unless VCK_LIFECYCLE_ONLY (an extended regex) matches none of it
  [[ "$*" =~ ${VCK_LIFECYCLE_ONLY:-.} ]] && "$@"
}
run case_checker
for kill in 0 1; do
  run case_source_change $kill
  run case_replicas $kill
  run case_volume_removed $kill 0
  run case_volume_removed $kill 1
done
run case_label_patch_fails
for how in cordoned tainted NotReady; do run case_ineligible $how; done
run case_labels_after_failed
run case_node_lost deleted
run case_node_lost NotReady
run case_refused_create
run case_download_retries

tap_end
