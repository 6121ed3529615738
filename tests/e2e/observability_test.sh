#!/usr/bin/env bash
# What an operator sees of vck-controller, as controller-runtime users expect it (docs/ops.md):
# with --log-format json every line it prints, on stdout and stderr, through a run with faults
# (an invalid VolumeManager, refused API calls, dropped watches, a deletion, the API server
# gone) is one JSON object; reconcile lines carry controller, namespace, name, reconcileID
# (and error); a deletion ends without a "Reconciler error"; -v 2 adds a line per reconcile
# that -v 0 leaves out; /metrics names every family of the list; --metrics-bind-address=0
# serves no metrics; a busy port is an error naming the flag and address. TAP output.
# Usage: observability_test.sh VCK_SANDBOX VCK_CONTROLLER VCK_FETCH [KUBECTL]
set -u
. "$(dirname "$(realpath "$0")")/../lifecycle/lib.sh"
harness_init observability "$@"

start_sandbox 2

run_controller() { # run_controller LOG ARGS...: started in the background; sets CONTROLLER_PID, HP
  local log=$1; shift
  HP=$(free_port)
  "$CONTROLLER" --kubeconfig "$WORK/kubeconfig" --data-mover-image vck-fetch:e2e --workers 2 \
    --health-probe-bind-address "127.0.0.1:$HP" "$@" >"$WORK/$log" 2>&1 &
  CONTROLLER_PID=$!
}
json_lines() { # json_lines LOG [ARGS]: tests/e2e/json_log_check.py on it
  "$PYTHON" "$ROOT/tests/e2e/json_log_check.py" "$WORK/$1" "${@:2}"
}

# ---- -v 0, metrics off: routine lines left out, /metrics nowhere ----
run_controller quiet.log --log-format json -v 0 --metrics-bind-address 0
controller_ready || bail "vck-controller (-v 0) never became ready" "$(tail -n 20 "$WORK/quiet.log")"
vm quiet "$(nfsvol share)"
if wait_state quiet Running; then ok "-v 0: a VolumeManager becomes Running"; else not_ok "-v 0: a VolumeManager becomes Running" "$(k get vckvm quiet -o yaml)"; fi
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HP/metrics")
check "--metrics-bind-address 0: the probe port serves no /metrics (HTTP $code)" test "$code" = 404
stop_controller
if out=$(json_lines quiet.log --absent "Reconcile finished" --present "Starting workers"); then
  ok "-v 0: every line is JSON, lifecycle lines are there, no per-reconcile V(2) line"
else not_ok "-v 0: every line is JSON, lifecycle lines are there, no per-reconcile V(2) line" "$out"; fi

# ---- -v 2 through faults ----
MP=$(free_port)
run_controller verbose.log --log-format json -v 2 --metrics-bind-address "127.0.0.1:$MP"
controller_ready || bail "vck-controller (-v 2) never became ready" "$(tail -n 20 "$WORK/verbose.log")"

# A busy port: another controller on the same metrics address stops at once, naming it.
"$CONTROLLER" --kubeconfig "$WORK/kubeconfig" --log-format json --health-probe-bind-address 0 \
  --metrics-bind-address "127.0.0.1:$MP" >"$WORK/busy.log" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && grep -q -- "--metrics-bind-address 127.0.0.1:$MP: address already in use" "$WORK/busy.log" &&
   json_lines busy.log >/dev/null; then
  ok "a busy metrics port: exit $rc, the error names the flag and address"
else not_ok "a busy metrics port: exit $rc, the error names the flag and address" "$(cat "$WORK/busy.log")"; fi
"$CONTROLLER" --kubeconfig "$WORK/kubeconfig" --log-format json --metrics-bind-address 0 \
  --health-probe-bind-address "127.0.0.1:$HP" >"$WORK/busy-probe.log" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && grep -q -- "--health-probe-bind-address 127.0.0.1:$HP: address already in use" "$WORK/busy-probe.log"; then
  ok "a busy probe port: exit $rc, the error names the flag and address"
else not_ok "a busy probe port: exit $rc, the error names the flag and address" "$(cat "$WORK/busy-probe.log")"; fi

# Refused API calls: the first writes to a new VolumeManager (its finalizer) are forbidden.
admin POST /faults/fail '{"verb":"patch","resource":"volumemanagers","code":403,"count":2}' >/dev/null ||
  bail "the sandbox refused the fault"
vm refused "$(nfsvol share)"
if wait_state refused Running; then ok "refused writes: the VolumeManager still becomes Running"; else not_ok "refused writes: Running" "$(k get vckvm refused -o yaml)"; fi
vm invalid "$(nfsvol v '      path: /exports/data')"
if wait_state invalid Failed; then ok "an invalid VolumeManager is Failed"; else not_ok "an invalid VolumeManager is Failed" "$(k get vckvm invalid -o yaml)"; fi
admin POST /faults/drop-watches >/dev/null
vm after-drop "$(nfsvol share)"
if wait_state after-drop Running; then ok "after the watches were dropped, a new VolumeManager becomes Running"; else not_ok "after dropped watches: Running" "$(k get vckvm after-drop -o yaml)"; fi
for name in quiet refused invalid; do k delete vckvm "$name" --wait=false >/dev/null 2>&1; done
if wait_for 120 gone quiet && wait_for 120 gone refused && wait_for 120 gone invalid; then ok "deletions finish"; else not_ok "deletions finish" "$(k get vckvm -o name)"; fi

metrics=$(curl -sf "http://127.0.0.1:$MP/metrics")
missing=()
for family in controller_runtime_reconcile_total controller_runtime_reconcile_errors_total \
  controller_runtime_reconcile_time_seconds_bucket controller_runtime_max_concurrent_reconciles \
  controller_runtime_active_workers workqueue_depth workqueue_adds_total workqueue_queue_duration_seconds_bucket \
  workqueue_work_duration_seconds_bucket workqueue_unfinished_work_seconds workqueue_longest_running_processor_seconds \
  workqueue_retries_total rest_client_requests_total rest_client_request_duration_seconds_bucket \
  process_cpu_seconds_total process_resident_memory_bytes process_start_time_seconds process_open_fds vck_build_info; do
  grep -q "^$family[{ ]" <<<"$metrics" || missing+=("$family")
done
check "/metrics has every family of docs/ops.md${missing:+ (missing: ${missing[*]})}" test ${#missing[@]} -eq 0
check "/metrics: workqueue series carry the controller and name labels" \
  grep -q '^workqueue_adds_total{controller="volumemanager",name="volumemanager"}' <<<"$metrics"
check "/metrics: REST client series carry code, host and method" \
  grep -Eq '^rest_client_requests_total\{code="200",host="127\.0\.0\.1:[0-9]+",method="GET"\}' <<<"$metrics"
check "/metrics: max concurrent reconciles is --workers" \
  grep -q '^controller_runtime_max_concurrent_reconciles{controller="volumemanager"} 2$' <<<"$metrics"
check "/metrics: the injected 403s are counted" grep -q '^rest_client_requests_total{code="403"' <<<"$metrics"

# The API server gone for a while: the controller's complaints are JSON too.
stop_sandbox
sleep 3
stop_controller
if out=$(json_lines verbose.log --present "Reconcile finished" --present "Reconciler error" --reconcile-keys \
           --no-error-for quiet --no-error-for refused --no-error-for invalid); then
  ok "-v 2: every line is JSON, reconcile lines carry controller-runtime's keys, deletions end without errors"
else not_ok "-v 2: every line is JSON, reconcile lines carry controller-runtime's keys, deletions end without errors" "$out"; fi

tap_end
