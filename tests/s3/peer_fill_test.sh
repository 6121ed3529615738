#!/usr/bin/env bash
# vck-fetch's peer fill (fetch --serve / --peer) against s3rver on 127.0.0.1: a seed serving its
# copy while it fills and pullers taking the files from it, each byte leaving the store once;
# corrupt peer bytes refused (never visible); a seed killed mid-fill; the server's mutual TLS
# and path rules (curl); an --include subset taken from a peer.
# Usage: peer_fill_test.sh PATH/TO/vck-fetch
# Prints one TAP line per check; exits non-zero if any check failed. Always stops what it started.
# Needs node (s3rver, installed by scripts/bootstrap), python3, curl, openssl.
set -u
VCK_FETCH=${1:?usage: peer_fill_test.sh PATH/TO/vck-fetch}
VCK_FETCH=$(realpath "$VCK_FETCH")
ROOT=${VCK_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
S3RVER_DIR=${S3RVER_DIR:-$ROOT/.cache/s3rver}
PROXY_PY=$ROOT/tests/e2e/throttle_proxy.py
SMALL_FILES=${SMALL_FILES:-200}
BIG_MIB=${BIG_MIB:-24}

if [ ! -f "$S3RVER_DIR/node_modules/s3rver/package.json" ]; then
  echo "not ok - s3rver is not installed in $S3RVER_DIR (run scripts/bootstrap)"
  exit 1
fi
for tool in curl node python3 openssl; do
  command -v "$tool" >/dev/null || { echo "not ok - $tool is missing"; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/vck-peer-fill-test.XXXXXX")
PIDS=()  # every background process this script started (s3rver, proxies, vck-fetch, scanners)
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

FAILED=0
N=0
ok() { N=$((N + 1)); echo "ok - $1"; }
not_ok() { N=$((N + 1)); FAILED=$((FAILED + 1)); echo "not ok - $1"; [ $# -gt 1 ] && awk '{print "#   " $0}' <<<"$2"; }
check() { # check "description" command...
  local d=$1; shift
  if "$@"; then ok "$d"; else not_ok "$d"; fi
}
bail() { # a failure the rest cannot run after
  not_ok "$@"
  echo "1..$N"
  exit 1
}
json() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2" 2>/dev/null; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
secs() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$2"; }
# wait_pid PID SECONDS: PID's exit status, or 124 (after SIGKILL) if it runs longer.
wait_pid() {
  local pid=$1 end=$((SECONDS + $2))
  while kill -0 "$pid" 2>/dev/null; do
    if [ $SECONDS -ge "$end" ]; then kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; return 124; fi
    sleep 0.05
  done
  wait "$pid"
}

export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
unset AWS_SESSION_TOKEN VCK_FETCH_TEST_CORRUPT_PEER

# ---- s3rver ----
S3PORT=$(free_port)
EP=http://127.0.0.1:$S3PORT
mkdir -p "$WORK/s3data"
# Listings past 1000 keys need MD5 in s3rver's token code, which OpenSSL 3 hides without this.
S3RVER_DIR=$S3RVER_DIR NODE_OPTIONS=--openssl-legacy-provider \
  node "$ROOT/tests/s3/s3rver.js" "$S3PORT" "$WORK/s3data" >"$WORK/s3rver.log" 2>&1 &
PIDS+=("$!")
started=""
for _ in $(seq 1 100); do
  curl -s -o /dev/null "$EP/" && { started=1; break; }
  sleep 0.1
done
[ -n "$started" ] || bail "s3rver did not start on $EP" "$(cat "$WORK/s3rver.log")"

# start_proxy RATE [COUNT_FILE]: a fresh tests/e2e/throttle_proxy.py in front of s3rver
# (RATE bytes/s, 0: no limit; COUNT_FILE: the bytes the store sent); sets PROXY and PROXY_PID.
start_proxy() {
  local port; port=$(free_port)
  python3 "$PROXY_PY" "$port" 127.0.0.1 "$S3PORT" "$@" >"$WORK/proxy.$port.log" 2>&1 &
  PROXY_PID=$!
  PIDS+=("$PROXY_PID")
  PROXY=http://127.0.0.1:$port
  for _ in $(seq 1 100); do grep -qs listening "$WORK/proxy.$port.log" && return 0; sleep 0.05; done
  bail "the throttle proxy did not start" "$(cat "$WORK/proxy.$port.log")"
}
stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

# ---- dataset: small files (*.a and *.b, some in subdirectories, one key with a space and a
# plus) and two large files; all below sync-back's multipart threshold, so every ETag is an MD5 ----
SRC=$WORK/src
python3 - "$SRC" "$SMALL_FILES" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(11)
for i in range(n):
    ext = ".a" if i % 2 == 0 else ".b"
    if i < 20:
        rel = f"top{i:03d}{ext}"
    elif i == 20:
        rel = "sp ace/f 1+x.a"
    elif i == 21:
        rel = "deep/er/still/x.a"
    else:
        rel = f"d{i % 10:02d}/f{i:04d}{ext}"
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(rnd.randbytes(rnd.randint(1024, 20 * 1024)))
PY
mkdir -p "$SRC/big"
head -c $((BIG_MIB * 1024 * 1024)) /dev/urandom >"$SRC/big/b1.a"
head -c $((BIG_MIB * 1024 * 1024)) /dev/urandom >"$SRC/big/b2.b"
NFILES=$(find "$SRC" -type f | wc -l)
DATASET=$(find "$SRC" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
# The source's MD5s, for the scanner below.
python3 - "$SRC" "$WORK/sums.json" <<'PY'
import hashlib, json, os, sys
root, out = sys.argv[1], sys.argv[2]
sums = {}
for d, _, names in os.walk(root):
    for n in names:
        p = os.path.join(d, n)
        sums[os.path.relpath(p, root)] = hashlib.md5(open(p, "rb").read()).hexdigest()
json.dump(sums, open(out, "w"))
PY

out=$("$VCK_FETCH" sync-back "$SRC" s3://data/set/ --endpoint "$EP" --once --progress-interval 0 \
  --termination-log "$WORK/upload.json" 2>&1); rc=$?
if [ $rc -eq 0 ] && [ "$(json "$WORK/upload.json" files)" = "$NFILES" ]; then
  ok "sync-back uploads the dataset ($NFILES files, $DATASET bytes, each in one PUT)"
else
  bail "sync-back uploads the dataset (rc=$rc)" "$out"
fi

# The volume's peer certificate, and another one nobody should trust.
mkcert() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -out "$1.crt" \
    -subj /CN=vck-peer -addext subjectAltName=DNS:vck-peer -days 1 >/dev/null 2>&1
}
{ mkcert "$WORK/peer" && mkcert "$WORK/other"; } || bail "openssl cannot make the peer certificates"
CERT=$WORK/peer.crt KEY=$WORK/peer.key
CERT2=$WORK/other.crt KEY2=$WORK/other.key

# start_fetch NAME DEST ENDPOINT ARGS...: vck-fetch fetch of the dataset in the background, its
# output in $WORK/NAME.out and summary in $WORK/NAME.json; sets FETCH_PID (vck-fetch's own pid).
# FETCH_ENV (an array of NAME=VALUE) goes into its environment.
FETCH_ENV=()
start_fetch() {
  local name=$1 dest=$2 ep=$3; shift 3
  env "${FETCH_ENV[@]}" "$VCK_FETCH" fetch s3://data/set/ "$dest" --endpoint "$ep" --progress-interval 0 \
    --termination-log "$WORK/$name.json" "$@" >"$WORK/$name.out" 2>&1 &
  FETCH_PID=$!
  PIDS+=("$FETCH_PID")
}
# start_seed NAME DEST ENDPOINT ARGS...: a fetch that serves; sets SEED_PID and SEED_PORT.
start_seed() {
  local name=$1
  rm -f "$WORK/$name.port"
  start_fetch "$@" --serve 127.0.0.1:0 --serve-port-file "$WORK/$name.port" --peer-cert "$CERT" --peer-key "$KEY"
  SEED_PID=$FETCH_PID
  SEED_PORT=""
  for _ in $(seq 1 200); do
    # The file is whole once its line has its newline.
    if [ -s "$WORK/$name.port" ] && [ "$(wc -l <"$WORK/$name.port")" -ge 1 ]; then
      SEED_PORT=$(tr -d '[:space:]' <"$WORK/$name.port")
      return 0
    fi
    kill -0 "$SEED_PID" 2>/dev/null || break
    sleep 0.05
  done
  bail "seed $name wrote no port file" "$(cat "$WORK/$name.out")"
}
peer_args() { echo "--peer https://127.0.0.1:$SEED_PORT --peer-cert $CERT --peer-key $KEY"; }

same_tree() { diff -r "$1" "$2" >/dev/null 2>&1; }
tree_msg() { diff -rq "$1" "$2" 2>&1 | head -5; }

# start_scanner NAME DEST: lists DEST every ~20 ms and compares each visible file's MD5 with the
# source's (a file is hashed again only when its inode, size, mtime or ctime changed); records
# any file that differs or is not a dataset file. stop_scanner NAME: a last scan, then
# $WORK/NAME.scan holds {"scans": N, "bad": [...]}.
cat >"$WORK/scan.py" <<'PY'
import hashlib, json, os, sys, time
sums_path, dest, stop, report, ready = sys.argv[1:6]
sums = json.load(open(sums_path))
seen, bad, scans = {}, [], 0

def scan():
    for d, _, names in os.walk(dest):
        for n in names:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, dest)
            if rel not in sums:
                bad.append(f"{rel}: not a dataset file")
                continue
            try:
                fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)
            except OSError as e:
                if e.errno != 2:  # gone between the listing and the open: nothing to check
                    bad.append(f"{rel}: {e}")
                continue
            try:
                st = os.fstat(fd)
                key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                if seen.get(rel) == key:
                    continue
                h = hashlib.md5()
                with os.fdopen(os.dup(fd), "rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        h.update(block)
                if h.hexdigest() != sums[rel]:
                    bad.append(f"{rel}: visible with {st.st_size} bytes that differ from the source")
                seen[rel] = key
            finally:
                os.close(fd)

open(ready, "w").close()
while not os.path.exists(stop):
    scan()
    scans += 1
    time.sleep(0.02)
scan()
scans += 1
json.dump({"scans": scans, "bad": sorted(set(bad))}, open(report, "w"))
PY
declare -A SCAN_PID
start_scanner() {
  local name=$1 dest=$2
  rm -f "$WORK/$name.scan" "$WORK/$name.scan-stop" "$WORK/$name.scan-ready"
  python3 "$WORK/scan.py" "$WORK/sums.json" "$dest" "$WORK/$name.scan-stop" "$WORK/$name.scan" \
    "$WORK/$name.scan-ready" 2>"$WORK/$name.scan-err" &
  SCAN_PID[$name]=$!
  PIDS+=("$!")
  for _ in $(seq 1 200); do [ -e "$WORK/$name.scan-ready" ] && return 0; sleep 0.02; done
  bail "scanner $name did not start" "$(cat "$WORK/$name.scan-err")"
}
stop_scanner() {
  local name=$1
  touch "$WORK/$name.scan-stop"
  wait_pid "${SCAN_PID[$name]}" 60 >/dev/null 2>&1
}
# scan_clean NAME: the scanner ran and saw no visible file that differed from the source.
scan_clean() {
  python3 - "$WORK/$1.scan" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"#   no scanner report: {e}")
    sys.exit(1)
for b in r["bad"][:10]:
    print(f"#   {b}")
sys.exit(0 if r["scans"] > 1 and not r["bad"] else 1)
PY
}
scans() { json "$WORK/$1.scan" scans; }

# ============ 1. pipeline: one seed, three pullers started with it; each byte leaves the store once ============
start_proxy 0 "$WORK/count1"
COUNT_PROXY_PID=$PROXY_PID
S1=$WORK/seed1
start_seed seed1 "$S1" "$PROXY" --serve-linger 3
t0=$(now)
PULL_PIDS=()
for i in 1 2 3; do
  # shellcheck disable=SC2046  # peer_args is several words on purpose
  start_fetch "pull1-$i" "$WORK/pull1-$i" "$PROXY" $(peer_args)
  PULL_PIDS+=("$FETCH_PID")
done
rcs=""
for p in "${PULL_PIDS[@]}"; do wait_pid "$p" 120; rcs+="$? "; done
t_pullers=$(now)
wait_pid "$SEED_PID" 60; seed_rc=$?
t1=$(now)
sleep 0.3  # the proxy writes its count at each connection's end
store_bytes=$(cat "$WORK/count1")
stop_pid "$COUNT_PROXY_PID"
if [ "$seed_rc" = 0 ] && [ "$rcs" = "0 0 0 " ]; then ok "pipeline: the seed and its 3 pullers exit 0"
else
  not_ok "pipeline: the seed and its 3 pullers exit 0 (seed $seed_rc, pullers $rcs)" \
    "$(tail -n 5 "$WORK/seed1.out" "$WORK"/pull1-?.out)"
fi
all_same=1
for d in "$S1" "$WORK"/pull1-?; do same_tree "$SRC" "$d" || { all_same=0; tree_msg "$SRC" "$d"; }; done
check "pipeline: the seed's and every puller's copy are byte-identical to the source" test $all_same = 1
ratio=$(python3 -c "import sys; print(f'{int(sys.argv[1]) / int(sys.argv[2]):.4f}')" "$store_bytes" "$DATASET")
echo "# pipeline: the store sent $store_bytes bytes for a $DATASET-byte dataset fetched by 4 copies: ratio $ratio"
echo "# pipeline: pullers done in $(secs "$t0" "$t_pullers") s (their own: $(for i in 1 2 3; do printf '%s s ' "$(json "$WORK/pull1-$i.json" seconds)"; done| sed 's/ $//')), seed's run $(json "$WORK/seed1.json" seconds) s (its linger included), all exited after $(secs "$t0" "$t1") s (linger 3 s)"
check "pipeline: store bytes / dataset bytes <= 1.05 ($ratio)" \
  python3 -c "import sys; sys.exit(0 if int(sys.argv[1]) <= 1.05 * int(sys.argv[2]) else 1)" "$store_bytes" "$DATASET"
check "pipeline: the seed took the dataset from the store (bytesFromStore $DATASET, bytesFromPeers 0)" \
  test "$(json "$WORK/seed1.json" bytesFromStore)/$(json "$WORK/seed1.json" bytesFromPeers)" = "$DATASET/0"
for i in 1 2 3; do
  j=$WORK/pull1-$i.json
  got="files $(json "$j" files), bytesFromPeers $(json "$j" bytesFromPeers), bytesFromStore $(json "$j" bytesFromStore)"
  if [ "$got" = "files $NFILES, bytesFromPeers $DATASET, bytesFromStore 0" ]; then
    ok "pipeline: puller $i took every file from the peer ($got)"
  else not_ok "pipeline: puller $i took every file from the peer (wanted files $NFILES, bytesFromPeers $DATASET, bytesFromStore 0; got $got)" \
    "$(grep -v '^vck-fetch: peer .*taking it from elsewhere' "$WORK/pull1-$i.out" | tail -n 5)"
  fi
  check "pipeline: puller $i says it took $DATASET bytes from the peer" \
    grep -qxF "vck-fetch: took $DATASET bytes from peer https://127.0.0.1:$SEED_PORT" "$WORK/pull1-$i.out"
done
check "pipeline: the seed says it served every file three times ($((3 * NFILES)) files, $((3 * DATASET)) bytes)" \
  grep -qF "vck-fetch: served $((3 * NFILES)) files, $((3 * DATASET)) bytes to peers" "$WORK/seed1.out"

# ============ 2. a peer sending corrupt bytes: every file refused, none ever visible ============
S2=$WORK/seed2 P2=$WORK/pull2
FETCH_ENV=(VCK_FETCH_TEST_CORRUPT_PEER=1)
start_seed seed2 "$S2" "$EP" --serve-linger 2
FETCH_ENV=()
start_scanner s2 "$P2"
# shellcheck disable=SC2046
start_fetch pull2 "$P2" "$EP" $(peer_args)
wait_pid "$FETCH_PID" 120; rc=$?
stop_scanner s2
wait_pid "$SEED_PID" 60; seed_rc=$?
if [ $rc = 0 ] && same_tree "$SRC" "$P2"; then ok "corrupt peer: the puller exits 0 with a byte-identical copy"
else not_ok "corrupt peer: the puller exits 0 with a byte-identical copy (rc=$rc)" "$(tail -n 5 "$WORK/pull2.out"; tree_msg "$SRC" "$P2")"; fi
check "corrupt peer: the corrupting seed's own copy is intact and it exits 0" \
  test "$seed_rc" = 0 -a "$(same_tree "$SRC" "$S2" && echo same)" = same
md5_lines=$(grep -c "^vck-fetch: peer https://127.0.0.1:$SEED_PORT: .*MD5.*; taking it from elsewhere$" "$WORK/pull2.out")
check "corrupt peer: the puller refuses each file the peer sent for its MD5 ($md5_lines of $NFILES lines 'taking it from elsewhere')" \
  test "$md5_lines" = "$NFILES"
grep -m1 'taking it from elsewhere' "$WORK/pull2.out" | sed 's/^/#   e.g. /'
check "corrupt peer: the puller's bytesFromPeers is 0, bytesFromStore the dataset" \
  test "$(json "$WORK/pull2.json" bytesFromPeers)/$(json "$WORK/pull2.json" bytesFromStore)" = "0/$DATASET"
check "corrupt peer: no file visible in the puller's copy ever differed from the source ($(scans s2) scans)" scan_clean s2

# ============ 3. a seed killed (SIGKILL, then SIGTERM) while its pullers take from it ============
for sig in KILL TERM; do
  S3=$WORK/seed3-$sig P3=$WORK/pull3-$sig
  start_proxy $((2 * 1024 * 1024))  # the seed's store: 2 MiB/s, so its fill takes ~25 s
  SLOW_PROXY_PID=$PROXY_PID
  start_seed "seed3-$sig" "$S3" "$PROXY" --serve-linger 2
  start_scanner "s3$sig" "$P3"
  t0=$(now) t0s=$(date +%s)
  # shellcheck disable=SC2046
  start_fetch "pull3-$sig" "$P3" "$EP" $(peer_args)
  PULL_PID=$FETCH_PID
  for _ in $(seq 1 400); do  # some files taken from the peer, and at least 3 s into the fill
    n=$(find "$P3" -type f 2>/dev/null | wc -l)
    [ "$n" -ge 20 ] && [ $(($(date +%s) - t0s)) -ge 4 ] && break
    sleep 0.05
  done
  if kill -0 "$SEED_PID" 2>/dev/null && ! same_tree "$SRC" "$S3"; then mid=1; else mid=0; fi
  taken=$(find "$P3" -type f | wc -l)
  kill -s "$sig" "$SEED_PID"
  t_kill=$(now)
  wait_pid "$SEED_PID" 30 >/dev/null 2>&1
  wait_pid "$PULL_PID" 120; rc=$?
  t1=$(now)
  stop_scanner "s3$sig"
  stop_pid "$SLOW_PROXY_PID"
  check "seed SIG$sig: the seed was stopped mid-fill, the puller having $taken files ($(secs "$t0" "$t_kill") s in)" \
    test $mid = 1 -a "$taken" -ge 20
  if [ $rc = 0 ] && same_tree "$SRC" "$P3"; then
    ok "seed SIG$sig: the puller exits 0 with a byte-identical copy ($(secs "$t_kill" "$t1") s after the seed stopped)"
  else not_ok "seed SIG$sig: the puller exits 0 with a byte-identical copy (rc=$rc)" "$(tail -n 5 "$WORK/pull3-$sig.out"; tree_msg "$SRC" "$P3")"; fi
  j=$WORK/pull3-$sig.json
  fp=$(json "$j" bytesFromPeers) fs=$(json "$j" bytesFromStore)
  check "seed SIG$sig: the puller took part from the peer, the rest from the store ($fp + $fs = $DATASET)" \
    test "${fp:-0}" -gt 0 -a "${fs:-0}" -gt 0 -a "$((${fp:-0} + ${fs:-0}))" = "$DATASET"
  check "seed SIG$sig: no partial or wrong file was ever visible in the puller's copy ($(scans "s3$sig") scans)" scan_clean "s3$sig"
done

# ============ 4. and 5. a complete seed lingering: an --include subset from it, then its door ============
S4=$WORK/dest
start_seed seed4 "$S4" "$EP" --serve-linger 60 --peer-wait 1
for _ in $(seq 1 600); do same_tree "$SRC" "$S4" && break; kill -0 "$SEED_PID" 2>/dev/null || break; sleep 0.1; done
same_tree "$SRC" "$S4" || bail "the lingering seed completed its copy" "$(cat "$WORK/seed4.out")"
SEED4_PID=$SEED_PID

# 5: --include '*.a' (the distributionStrategy subset of a replica) taken from the complete seed.
P5=$WORK/pull5
# shellcheck disable=SC2046
start_fetch pull5 "$P5" "$EP" --include '*.a' $(peer_args)
wait_pid "$FETCH_PID" 120; rc=$?
expected=$(cd "$SRC" && find . -type f -name '*.a' | sort)
got=$(cd "$P5" 2>/dev/null && find . -type f | sort)
a_bytes=$(find "$SRC" -type f -name '*.a' -printf '%s\n' | awk '{s += $1} END {print s}')
same=1
while IFS= read -r f; do cmp -s "$SRC/$f" "$P5/$f" || same=0; done <<<"$expected"
if [ $rc = 0 ] && [ "$expected" = "$got" ] && [ $same = 1 ]; then
  ok "subset: --include '*.a' from a peer holds exactly the $(wc -l <<<"$expected") *.a files, byte-identical"
else not_ok "subset: --include '*.a' from a peer holds exactly the *.a files, byte-identical (rc=$rc)" \
  "$(tail -n 5 "$WORK/pull5.out"; diff <(echo "$expected") <(echo "$got") | head -5)"; fi
check "subset: all from the peer (bytesFromStore 0, bytesFromPeers $a_bytes)" \
  test "$(json "$WORK/pull5.json" bytesFromStore)/$(json "$WORK/pull5.json" bytesFromPeers)" = "0/$a_bytes"

# A puller holding another certificate: the seed does not let it in (nor does it trust the
# seed); it takes everything from the store.
P6=$WORK/pull6
start_fetch pull6 "$P6" "$EP" --peer "https://127.0.0.1:$SEED_PORT" --peer-cert "$CERT2" --peer-key "$KEY2"
wait_pid "$FETCH_PID" 120; rc=$?
if [ $rc = 0 ] && same_tree "$SRC" "$P6" && [ "$(json "$WORK/pull6.json" bytesFromPeers)" = 0 ]; then
  ok "a puller with another certificate takes nothing from the seed and completes from the store"
else not_ok "a puller with another certificate takes nothing from the seed (rc=$rc, bytesFromPeers $(json "$WORK/pull6.json" bytesFromPeers))" \
  "$(tail -n 5 "$WORK/pull6.out")"; fi

# 4: the server's door, with curl. peer_get OUT PATH [CURL ARGS...] prints "STATUS BYTES SECONDS".
peer_get() {
  local out=$1 path=$2; shift 2
  rm -f "$out"
  curl -s -k --path-as-is --max-time 20 -o "$out" -w '%{http_code} %{size_download} %{time_total}' "$@" \
    "https://127.0.0.1:$SEED_PORT$path" 2>/dev/null
  return 0
}
REL="sp ace/f 1+x.a"
ENC="sp%20ace/f%201%2Bx.a"
SIZE=$(stat -c %s "$SRC/$REL")
read -r code n _ < <(peer_get "$WORK/got" "/objects/$ENC?size=$SIZE" --cert "$CERT" --key "$KEY")
check "door: the right certificate gets a file by its percent-encoded path and size: 200, the same $SIZE bytes (got $code, $n bytes)" \
  test "$code" = 200 -a "$(cmp -s "$SRC/$REL" "$WORK/got" && echo same)" = same
read -r code n _ < <(curl -s --cacert "$CERT" --resolve "vck-peer:$SEED_PORT:127.0.0.1" --cert "$CERT" --key "$KEY" \
  -o "$WORK/got" -w '%{http_code} %{size_download}' "https://vck-peer:$SEED_PORT/objects/$ENC?size=$SIZE" 2>/dev/null)
check "door: the seed presents the volume's certificate as vck-peer (curl verifying it against that certificate: $code)" \
  test "$code" = 200 -a "$n" = "$SIZE"
read -r code n _ < <(peer_get "$WORK/got" "/objects/$ENC?size=$SIZE")
check "door: without a client certificate the handshake fails: no status, nothing received (got $code, $n bytes)" \
  test "$code" = 000 -a "$n" = 0 -a ! -s "$WORK/got"
read -r code n _ < <(peer_get "$WORK/got" "/objects/$ENC?size=$SIZE" --cert "$CERT2" --key "$KEY2")
check "door: with another certificate the handshake fails: no status, nothing received (got $code, $n bytes)" \
  test "$code" = 000 -a "$n" = 0 -a ! -s "$WORK/got"

# Paths that must get a bare 404 at once (the seed's --peer-wait is 1 s; a refusal does not wait).
TOP=top000.a
TOPSIZE=$(stat -c %s "$SRC/$TOP")
D1FILE=$(cd "$SRC" && find d01 -type f | sort | head -1)
D1SIZE=$(stat -c %s "$SRC/$D1FILE")
PASSWD=$(stat -c %s /etc/passwd)
JOURNAL=$(stat -c %s "$S4.vck-fetch/journal" 2>/dev/null || echo 1)
echo "outside the copy" >"$WORK/outside.txt"
OUTSIDE=$(stat -c %s "$WORK/outside.txt")
ln -s /etc/passwd "$S4/evil"
ln -s /etc "$S4/etcdir"
ln -s "$D1FILE" "$S4/inner-link"
ln "$WORK/outside.txt" "$S4/hardlinked"
mkfifo "$S4/fifo"
# A refusal is a bare 404: the same fixed body for every refusal (peer_server.hpp's refuse():
# "not served"), no byte of any file, nothing said of what exists.
bare404() { test "$1" = 404 -a "$2" = 11 -a "$(cat "$WORK/got" 2>/dev/null)" = "not served"; }
refused() { # refused DESCRIPTION PATH: a bare 404 within 0.9 s
  local code n t
  read -r code n t < <(peer_get "$WORK/got" "$2" --cert "$CERT" --key "$KEY")
  if bare404 "$code" "$n" && python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 0.9 else 1)" "$t"; then
    ok "door: $1 gets a bare 404 at once ($2)"
  else not_ok "door: $1 gets a bare 404 at once ($2: got $code, $n bytes, $t s)" "$(head -c 300 "$WORK/got" 2>/dev/null)"; fi
}
refused "a .. segment" "/objects/../dest/$TOP?size=$TOPSIZE"
refused "a .. climbing out of a subdirectory" "/objects/d01/../../etc/passwd?size=$PASSWD"
refused "a .. that would stay inside" "/objects/d01/../$TOP?size=$TOPSIZE"
refused "an absolute path" "/objects//etc/passwd?size=$PASSWD"
refused "a . segment" "/objects/./$TOP?size=$TOPSIZE"
refused "an empty segment" "/objects/d01//${D1FILE#d01/}?size=$D1SIZE"
refused "a percent-encoded .." "/objects/%2E%2E/dest/$TOP?size=$TOPSIZE"
refused "percent-encoded slashes around .." "/objects/d01%2F..%2F..%2Fdest.vck-fetch%2Fjournal?size=$JOURNAL"
refused "the state directory beside the copy" "/objects/../dest.vck-fetch/journal?size=$JOURNAL"
refused "a symlink in the copy to /etc/passwd" "/objects/evil?size=$PASSWD"
refused "a symlinked directory in the copy pointing outside" "/objects/etcdir/passwd?size=$PASSWD"
refused "a symlink in the copy to a file of the copy" "/objects/inner-link?size=$D1SIZE"
refused "a hard link in the copy to a file outside it" "/objects/hardlinked?size=$OUTSIDE"
refused "a FIFO in the copy" "/objects/fifo?size=0"
refused "a directory of the copy" "/objects/d01?size=4096"
# The seed's fetch has ended: a file it does not hold whole will never land, so it is refused
# at once rather than after --peer-wait (a puller goes to the store without waiting).
refused "a file asked with another size, once the seed's fetch ended," "/objects/$TOP?size=$((TOPSIZE + 1))"
refused "a file that is not there, once the seed's fetch ended," "/objects/not/there.a?size=5"
read -r code n _ < <(peer_get "$WORK/got" "/objects/$TOP?size=$TOPSIZE" --cert "$CERT" --key "$KEY")
check "door: after all that the seed still serves a real file (got $code, $n bytes)" \
  test "$code" = 200 -a "$(cmp -s "$SRC/$TOP" "$WORK/got" && echo same)" = same
stop_pid "$SEED4_PID"

echo "1..$N"
[ $FAILED -eq 0 ]
