#!/usr/bin/env bash
# vck-sandbox's simulated cluster seen through kubectl: --nodes gives Ready nodes, pods are
# scheduled and run, a malformed --nodes-file or --image is refused with one clear line, and
# (when s3rver is installed) a pod whose image runs the real vck-fetch lands its data under
# DATA_ROOT/nodes/<its node>/; run as root, an image whose user is 65532 cannot write into a
# DirectoryOrCreate directory until `vck-fetch prepare`, in an init container of uid 0, hands
# it over.
# Usage: sandbox_cli_test.sh PATH/TO/vck-sandbox KUBECTL [PATH/TO/vck-fetch]
# Prints one TAP line per check and exits non-zero on failure. No timed assertions: every wait
# polls for a condition with a generous ceiling.
set -u

SANDBOX=$(realpath "${1:?usage: sandbox_cli_test.sh PATH/TO/vck-sandbox KUBECTL [vck-fetch]}")
KUBECTL=${2:-${KUBECTL:-kubectl}}
VCK_FETCH=${3:+$(realpath "$3")}
ROOT=${VCK_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
S3RVER_DIR=${S3RVER_DIR:-$ROOT/.cache/s3rver}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vck-cluster-cli.XXXXXX")
KCFG=$WORK/kubeconfig
PID=
S3PID=

cleanup() {
    if [ -n "$PID" ]; then kill -TERM "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; fi
    if [ -n "$S3PID" ]; then kill "$S3PID" 2>/dev/null; wait "$S3PID" 2>/dev/null; fi
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

failures=0
pass() { echo "ok - $1"; }
fail() {
    failures=$((failures + 1))
    echo "not ok - $1"
    [ -n "${2:-}" ] && printf '%s\n' "$2" | head -40 | sed 's/^/#   /'
    return 0
}
k() { "$KUBECTL" --kubeconfig "$KCFG" --cache-dir "$WORK/cache" --request-timeout=20s "$@"; }
# eventually NAME REGEX CMD...: within 60 s the command's output matches REGEX.
eventually() {
    local name=$1 re=$2 out=
    shift 2
    for _ in $(seq 1 300); do
        if out=$("$@" 2>&1) && printf '%s\n' "$out" | grep -Eq -- "$re"; then pass "$name"; return 0; fi
        sleep 0.2
    done
    fail "$name" "$out"
}
# refused NAME REGEX ARGS...: vck-sandbox exits non-zero at once with one line matching REGEX.
refused() {
    local name=$1 re=$2 out rc
    shift 2
    out=$(timeout 60 "$SANDBOX" --port 0 --kubeconfig-out "$WORK/unused" "$@" 2>&1)
    rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] &&
        printf '%s\n' "$out" | grep -Eq -- "$re"; then
        pass "$name"
    else
        fail "$name (rc=$rc)" "$out"
    fi
}
# start ARGS...: runs vck-sandbox in the background until it prints its kubeconfig line.
start() {
    # Emptied here, not by the background job's redirection: that may run after the first
    # grep below, which would then read the previous sandbox's log and kubeconfig.
    : >"$WORK/sandbox.log"
    rm -f "$KCFG"
    "$SANDBOX" --port 0 --kubeconfig-out "$KCFG" "$@" >"$WORK/sandbox.log" 2>&1 &
    PID=$!
    for _ in $(seq 1 600); do
        grep -q '^data-root: ' "$WORK/sandbox.log" 2>/dev/null && return 0
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.1
    done
    fail "vck-sandbox $* starts" "$(cat "$WORK/sandbox.log")"
    exit 1
}
stop() {
    kill -TERM "$PID" 2>/dev/null
    wait "$PID"
    local rc=$?
    PID=
    return $rc
}

# ---- bad input ----
printf 'nodes:\n- name: a\n  taints: [{key: k, effect: Sometimes}]\n' >"$WORK/bad-nodes.yaml"
refused "a malformed nodes file names the file and the field" \
    "bad-nodes.yaml: nodes\[0\]\.taints\[0\]\.effect: Unsupported value: \"Sometimes\"" --nodes-file "$WORK/bad-nodes.yaml"
refused "a missing nodes file is refused" "missing.yaml: cannot read the nodes file" --nodes-file "$WORK/missing.yaml"
refused "an unknown image behaviour is refused" 'invalid image behaviour "dance"' --nodes 1 --image 'x=dance'
refused "--image without --nodes is refused" 'need --nodes or --nodes-file' --image 'x=forever'

# ---- --nodes 3: Ready nodes, a scheduled and completed pod ----
mkdir -p "$WORK/data"
start --nodes 3 --data-root "$WORK/data" --image 'sleeper=forever'
eventually "kubectl get nodes lists 3 Ready nodes" '^3$' \
    sh -c "\"$KUBECTL\" --kubeconfig \"$KCFG\" --cache-dir \"$WORK/cache\" get nodes --no-headers | grep -Ec '^node-[123] +Ready '"

server_version=$(k version -o json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')
kubelet_versions=$(k get nodes -o 'jsonpath={range .items[*]}{.status.nodeInfo.kubeletVersion}{"\n"}{end}' | sort -u)
if [ -n "$server_version" ] && [ "$kubelet_versions" = "$server_version" ]; then pass "the nodes' kubelets report the server's version ($server_version)"
else fail "the nodes' kubelets report the server's version ($server_version)" "$kubelet_versions"; fi

cat >"$WORK/pod.json" <<'EOF'
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hello", "namespace": "default"},
 "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}
EOF
eventually "a pod is created" 'pod/hello created' k create -f "$WORK/pod.json"
eventually "the pod is bound to one of the nodes" '^node-[123]$' k get pod hello -o 'jsonpath={.spec.nodeName}'
eventually "the pod completes" '^hello +0/1 +Completed ' k get pod hello --no-headers

sed 's/"hello"/"sleeper"/; s/"busybox"/"sleeper"/' "$WORK/pod.json" >"$WORK/sleeper.json"
k create -f "$WORK/sleeper.json" >/dev/null 2>&1
eventually "a run-forever image keeps its pod Running" '^sleeper +1/1 +Running ' k get pod sleeper --no-headers
eventually "a Scheduled event names the node" 'Successfully assigned default/sleeper to node-[123]' \
    k get events --field-selector involvedObject.name=sleeper -o 'jsonpath={.items[*].message}'
# ---- header sizes: kube-apiserver (Go's server) reads up to 1 MiB of request line and headers ----
server=$(k config view --minify -o 'jsonpath={.clusters[0].cluster.server}')
token=$(k config view --minify --raw -o 'jsonpath={.users[0].user.token}')
head -c 70000 /dev/zero | tr '\0' a | sed 's/^/X-Big: /' >"$WORK/big-header"
head -c 70000 /dev/zero | tr '\0' a | sed 's/^/Authorization: Bearer /' >"$WORK/big-token"
code_of() { curl -sk -o /dev/null -w '%{http_code}' "$@" "$server/api/v1/namespaces"; }
code=$(code_of -H "Authorization: Bearer $token" -H @"$WORK/big-header")
if [ "$code" = 200 ] && kill -0 "$PID" 2>/dev/null; then pass "a 70,000-byte header field is read: 200, and the sandbox lives"
else fail "a 70,000-byte header field is read: 200, and the sandbox lives" "HTTP $code; $(tail -n 5 "$WORK/sandbox.log")"; fi
code=$(code_of -H @"$WORK/big-token")
if [ "$code" = 401 ]; then pass "a 70,000-byte bearer token is an invalid credential: 401"
else fail "a 70,000-byte bearer token is an invalid credential: 401" "HTTP $code"; fi
# curl will not send a header this large (it fails "Out of memory"): a plain TLS client does.
code=$(python3 - "$server" <<'PY'
import socket, ssl, sys
host, port = sys.argv[1].removeprefix("https://").rsplit(":", 1)
s = ssl._create_unverified_context().wrap_socket(socket.create_connection((host, int(port))))
try:
    s.sendall(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: sandbox\r\nX-Huge: " + b"a" * (2 * 1024 * 1024) + b"\r\n\r\n")
except OSError:
    pass  # the server may answer and close before it has read everything
print(s.recv(64).split(b" ")[1].decode())
PY
)
if [ "$code" = 431 ]; then pass "a 2 MiB header is answered 431 Request Header Fields Too Large"
else fail "a 2 MiB header is answered 431 Request Header Fields Too Large" "HTTP $code"; fi
# A request target Beast cannot hold (over 64 KiB; kube-apiserver reads up to 1 MiB): 431, documented.
code=$(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
  "$server/api/v1/namespaces?labelSelector=app%3D$(head -c 70000 /dev/zero | tr '\0' x)")
if [ "$code" = 431 ]; then pass "a 70,000-byte request target is answered 431 (docs/sandbox.md)"
else fail "a 70,000-byte request target is answered 431 (docs/sandbox.md)" "HTTP $code"; fi
eventually "after them the sandbox still serves" '^3$' sh -c "\"$KUBECTL\" --kubeconfig \"$KCFG\" get nodes --no-headers | wc -l"

if stop; then pass "vck-sandbox stops cleanly on SIGTERM"; else fail "vck-sandbox stops cleanly on SIGTERM"; fi

# ---- a nodes file; an unschedulable pod ----
cat >"$WORK/nodes.yaml" <<'EOF'
nodes:
- name: gpu-1
  zone: z1
  labels: {accelerator: gpu}
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
  capacity: {cpu: "8", memory: 64Gi}
- name: cpu-1
  zone: z2
EOF
start --nodes-file "$WORK/nodes.yaml"
eventually "the nodes file's nodes are Ready with their labels" '^gpu-1 z1 gpu$' \
    k get node gpu-1 -o 'jsonpath={.metadata.name} {.metadata.labels.topology\.kubernetes\.io/zone} {.metadata.labels.accelerator}'
sed 's/"hello"/"wants-gpu"/; s/"containers"/"nodeSelector": {"accelerator": "gpu"}, "containers"/' "$WORK/pod.json" >"$WORK/gpu.json"
k create -f "$WORK/gpu.json" >/dev/null 2>&1
eventually "a pod that tolerates nowhere stays Pending with the scheduler's reasons" \
    '0/2 nodes are available: 1 node\(s\) didn.t match Pod.s node affinity/selector, 1 node\(s\) had untolerated taint \{dedicated: gpu\}' \
    k get events --field-selector involvedObject.name=wants-gpu,reason=FailedScheduling -o 'jsonpath={.items[*].message}'
stop >/dev/null

# ---- the real vck-fetch as a container, writing into its node's directory ----
if [ -z "$VCK_FETCH" ]; then
    echo "ok - vck-fetch in a pod # SKIP no vck-fetch given"
elif [ ! -x "$VCK_FETCH" ]; then
    fail "vck-fetch in a pod: $VCK_FETCH is not an executable (build it first)"
elif [ ! -f "$S3RVER_DIR/node_modules/s3rver/package.json" ]; then
    echo "ok - vck-fetch in a pod # SKIP s3rver is not installed in $S3RVER_DIR"
else
    PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    ENDPOINT="http://127.0.0.1:$PORT"
    mkdir -p "$WORK/s3data"
    S3RVER_DIR=$S3RVER_DIR NODE_OPTIONS=--openssl-legacy-provider \
      node "$ROOT/tests/s3/s3rver.js" "$PORT" "$WORK/s3data" &
    S3PID=$!
    for _ in $(seq 1 300); do curl -s -o /dev/null "$ENDPOINT/" && break; sleep 0.1; done
    mkdir -p "$WORK/src/sub"
    echo "first" >"$WORK/src/a.txt"
    echo "second" >"$WORK/src/sub/b.txt"
    if out=$(AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER "$VCK_FETCH" sync-back "$WORK/src" s3://data/set/ \
        --once --endpoint "$ENDPOINT" --progress-interval 0 2>&1); then
        pass "the bucket is seeded"
    else
        fail "the bucket is seeded" "$out"
    fi
    rm -rf "$WORK/data"
    start --nodes 2 --data-root "$WORK/data" --image "vck/vck-fetch:*=exec:$VCK_FETCH"
    cat >"$WORK/fetch.json" <<EOF
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "fetch", "namespace": "default"},
 "spec": {"restartPolicy": "Never",
  "volumes": [{"name": "data", "hostPath": {"path": "/srv/vck", "type": "DirectoryOrCreate"}}],
  "containers": [{"name": "fetch", "image": "vck/vck-fetch:0.1",
    "command": ["vck-fetch"],
    "args": ["fetch", "s3://data/set/", "/data/set", "--endpoint", "$ENDPOINT", "--progress-interval", "0",
             "--termination-log", "/dev/termination-log"],
    "env": [{"name": "AWS_ACCESS_KEY_ID", "value": "S3RVER"}, {"name": "AWS_SECRET_ACCESS_KEY", "value": "S3RVER"}],
    "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}}
EOF
    k create -f "$WORK/fetch.json" >/dev/null 2>&1
    eventually "the vck-fetch pod succeeds" '^fetch +0/1 +Completed ' k get pod fetch --no-headers
    NODE=$(k get pod fetch -o 'jsonpath={.spec.nodeName}')
    if [ -n "$NODE" ] && diff -r "$WORK/src" "$WORK/data/nodes/$NODE/srv/vck/set" >/dev/null 2>&1; then
        pass "the data landed under data-root/nodes/$NODE/srv/vck"
    else
        fail "the data landed under data-root/nodes/<node>/srv/vck" "$(find "$WORK/data" | head -20; k logs fetch 2>&1 | tail -5)"
    fi
    OTHER=$([ "$NODE" = node-1 ] && echo node-2 || echo node-1)
    if [ ! -e "$WORK/data/nodes/$OTHER/srv/vck/set" ]; then pass "the other node's directory has none of it"
    else fail "the other node's directory has none of it"; fi
    eventually "the termination message is vck-fetch's summary" '"files": ?2' \
        k get pod fetch -o 'jsonpath={.status.containerStatuses[0].state.terminated.message}'
    stop >/dev/null

    # ---- users: the image runs as 65532, as the real one (USER 65532:65532) ----
    if [ "$(id -u)" != 0 ]; then
        echo "ok - a non-root vck-fetch needs prepare # SKIP the sandbox runs containers as their user only as root"
    else
        chmod 755 "$WORK"  # containers of other users reach their volumes through it
        rm -rf "$WORK/data"
        start --nodes 1 --data-root "$WORK/data" --image "vck/vck-fetch:*=exec:$VCK_FETCH;user=65532:65532"
        # fetch_pod NAME DIR [prepare]: a download pod on /var/datasets, mounted at /vck/root.
        fetch_pod() {
            local init=
            [ -n "${3:-}" ] && init='"initContainers": [{"name": "prepare", "image": "vck/vck-fetch:0.1",
    "command": ["vck-fetch"], "args": ["prepare", "/vck/root/'"$2"'", "--owner", "65532:65532", "--allowed-root", "/vck/root",
             "--termination-log", "/dev/termination-log"],
    "securityContext": {"runAsUser": 0, "runAsNonRoot": false, "allowPrivilegeEscalation": false,
                        "capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}},
    "volumeMounts": [{"name": "data", "mountPath": "/vck/root"}]}],'
            cat <<EOF
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "$1", "namespace": "default"},
 "spec": {"restartPolicy": "Never", $init
  "volumes": [{"name": "data", "hostPath": {"path": "/var/datasets", "type": "DirectoryOrCreate"}}],
  "containers": [{"name": "fetch", "image": "vck/vck-fetch:0.1", "command": ["vck-fetch"],
    "args": ["fetch", "s3://data/set/", "/vck/root/$2", "--endpoint", "$ENDPOINT", "--progress-interval", "0",
             "--termination-log", "/dev/termination-log"],
    "securityContext": {"runAsNonRoot": true, "capabilities": {"drop": ["ALL"]}},
    "env": [{"name": "AWS_ACCESS_KEY_ID", "value": "S3RVER"}, {"name": "AWS_SECRET_ACCESS_KEY", "value": "S3RVER"}],
    "volumeMounts": [{"name": "data", "mountPath": "/vck/root"}]}]}}
EOF
        }
        fetch_pod unprepared vck-resource-1 >"$WORK/unprepared.json"
        k create -f "$WORK/unprepared.json" >/dev/null 2>&1
        eventually "vck-fetch as uid 65532 cannot write into the root-owned DirectoryOrCreate directory" \
            '"exitCode": ?6.*Permission denied' \
            k get pod unprepared -o 'jsonpath={.status.containerStatuses[0].state.terminated.message}'
        fetch_pod prepared vck-resource-2 prepare >"$WORK/prepared.json"
        k create -f "$WORK/prepared.json" >/dev/null 2>&1
        eventually "after vck-fetch prepare as uid 0, vck-fetch as uid 65532 fetches" '^prepared +0/1 +Completed ' \
            k get pod prepared --no-headers
        DS=$WORK/data/nodes/node-1/var/datasets
        if diff -r "$WORK/src" "$DS/vck-resource-2" >/dev/null 2>&1 && [ -s "$DS/vck-resource-2.vck-fetch/journal" ]; then
            pass "the destination holds exactly the dataset, its state beside it"
        else
            fail "the destination holds exactly the dataset, its state beside it" \
                "$(find "$DS" | head -20; k logs prepared -c fetch 2>&1 | tail -5)"
        fi
        owners=$(stat -c '%u:%g' "$DS" "$DS/vck-resource-2" "$DS/vck-resource-2.vck-fetch" "$DS/vck-resource-2/a.txt" | tr '\n' ' ')
        if [ "$owners" = "0:0 65532:65532 65532:65532 65532:65532 " ]; then
            pass "the data root stays root's; the prepared directory, its state and the data are 65532's"
        else
            fail "the data root stays root's; the prepared directory, its state and the data are 65532's" "$owners"
        fi
        stop >/dev/null
    fi
fi

[ "$failures" -eq 0 ]
