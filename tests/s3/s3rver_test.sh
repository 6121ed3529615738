#!/usr/bin/env bash
# vck-fetch against a real S3 implementation (s3rver, SigV4 checking on) on 127.0.0.1.
# Usage: s3rver_test.sh PATH/TO/vck-fetch
# Prints one TAP line per check; exits non-zero if any check failed. Always stops s3rver.
set -u
VCK_FETCH=${1:?usage: s3rver_test.sh PATH/TO/vck-fetch}
VCK_FETCH=$(realpath "$VCK_FETCH")
ROOT=${VCK_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
S3RVER_DIR=${S3RVER_DIR:-$ROOT/.cache/s3rver}
SMALL_FILES=${SMALL_FILES:-2000}
BIG_MIB=${BIG_MIB:-64}

if [ ! -f "$S3RVER_DIR/node_modules/s3rver/package.json" ]; then
  echo "not ok - s3rver is not installed in $S3RVER_DIR (run scripts/bootstrap)"
  exit 1
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/vck-s3rver-test.XXXXXX")
SERVER_PID=""
FETCH_PID=""
PROXY_PID=""
stop_server() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=""; fi
}
cleanup() {
  [ -n "$FETCH_PID" ] && kill -9 "$FETCH_PID" 2>/dev/null
  [ -n "$PROXY_PID" ] && kill -9 "$PROXY_PID" 2>/dev/null
  stop_server
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ENDPOINT="http://127.0.0.1:$PORT"
start_server() {
  mkdir -p "$WORK/s3data"
  # Listings past 1000 keys need MD5 in s3rver's token code, which OpenSSL 3 hides without this.
  # tests/s3/s3rver.js puts a SigV4 verifier in front of s3rver, which does not check V4 itself.
  S3RVER_DIR=$S3RVER_DIR NODE_OPTIONS=--openssl-legacy-provider \
    node "$(dirname "$0")/s3rver.js" "$PORT" "$WORK/s3data" &
  SERVER_PID=$!
  for _ in $(seq 1 100); do
    curl -s -o /dev/null "$ENDPOINT/" && return 0
    sleep 0.1
  done
  echo "not ok - s3rver did not start on $ENDPOINT"
  exit 1
}

FAILED=0
N=0
ok() { N=$((N + 1)); echo "ok - $1"; }
not_ok() { N=$((N + 1)); FAILED=$((FAILED + 1)); echo "not ok - $1"; [ $# -gt 1 ] && sed 's/^/#   /' <<<"$2"; }
check() { # check "description" command...
  local d=$1; shift
  if "$@"; then ok "$d"; else not_ok "$d"; fi
}
json() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2" 2>/dev/null; }

export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
unset AWS_SESSION_TOKEN
vf() { "$VCK_FETCH" "$@" --endpoint "$ENDPOINT" --progress-interval 0 --termination-log "$WORK/term.json"; }

# ---- dataset: many small files in nested directories, one mid-size and two large files ----
SRC=$WORK/src
python3 - "$SRC" "$SMALL_FILES" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(7)
for i in range(n):
    d = os.path.join(root, "small", f"d{i % 20:02d}")
    os.makedirs(d, exist_ok=True)
    ext = ".jpg" if i % 4 == 0 else ".txt"
    with open(os.path.join(d, f"f{i:05d}{ext}"), "wb") as f:
        f.write(rnd.randbytes(rnd.randint(0, 16384)))
os.makedirs(os.path.join(root, "mid"), exist_ok=True)
with open(os.path.join(root, "mid", "m 1+x.bin"), "wb") as f:  # space and plus in the key
    f.write(rnd.randbytes(20 * 1024 * 1024 + 3))
PY
mkdir -p "$SRC/big"
head -c $((BIG_MIB * 1024 * 1024)) /dev/urandom >"$SRC/big/b1.bin"
head -c $((BIG_MIB * 1024 * 1024)) /dev/urandom >"$SRC/big/b2.bin"
NFILES=$(find "$SRC" -type f | wc -l)

start_server

# Seed the bucket with our own sync-back (large files as multipart uploads).
out=$(vf sync-back "$SRC" s3://data/set/ --once --multipart-threshold 32 --part-size 16 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ "$(json "$WORK/term.json" files)" = "$NFILES" ]; then
  ok "sync-back uploads a fresh directory ($NFILES files, large ones multipart)"
else
  not_ok "sync-back uploads a fresh directory (rc=$rc)" "$out"
fi

# vck-fetch's own state lives beside a destination (DEST.vck-fetch), so a destination holds
# exactly the dataset: trees are compared whole, hidden entries included.
same_tree() { diff -r "$1" "$2" >/dev/null; }
visible_files_complete() { # every file under $1 is byte-identical to its source in $2
  local bad=0
  while IFS= read -r -d '' f; do
    cmp -s "$f" "$2/${f#"$1"/}" || { echo "# partial or wrong: $f"; bad=1; }
  done < <(find "$1" -type f -print0)
  return $bad
}

# ---- full fetch ----
D1=$WORK/d1
# Small ranges, so the ranged path (parallel ranges, MD5 of the single-part mid file checked in
# order across 2 MiB ranges) is the one proven byte-identical; later runs use the defaults.
out=$(vf fetch s3://data/set/ "$D1" --parallel 16 --multipart-threshold 4 --part-size 2 2>&1); rc=$?
if [ $rc -eq 0 ] && same_tree "$SRC" "$D1"; then ok "a full fetch is byte-identical to the source"
else not_ok "a full fetch is byte-identical to the source (rc=$rc)" "$out"; fi
check "the termination log counts every file" test "$(json "$WORK/term.json" files)" = "$NFILES"
check "the termination log has no error on success" test "$(json "$WORK/term.json" errors)" = "0"
check "the destination holds exactly the dataset's entries, nothing hidden" \
  test "$(cd "$D1" && find . | sort)" = "$(cd "$SRC" && find . | sort)"
check "the journal and staging directory are beside the destination" test -s "$D1.vck-fetch/journal" -a -d "$D1.vck-fetch/tmp"

out=$(vf fetch s3://data/set/ "$D1" 2>&1); rc=$?
if [ $rc -eq 0 ] && [ "$(json "$WORK/term.json" skipped)" = "$NFILES" ] && [ "$(json "$WORK/term.json" files)" = "0" ]; then
  ok "a re-run skips every unchanged file"
else not_ok "a re-run skips every unchanged file (rc=$rc)" "$out"; fi

echo "changed locally" >"$D1/small/d00/f00000.jpg"
vf fetch s3://data/set/ "$D1" >/dev/null 2>&1
check "a re-run replaces a locally changed file" cmp -s "$SRC/small/d00/f00000.jpg" "$D1/small/d00/f00000.jpg"

out=$(vf fetch "s3://data/set/mid/m 1+x.bin" "$WORK/single" 2>&1); rc=$?
check "a single object lands under its base name" cmp -s "$SRC/mid/m 1+x.bin" "$WORK/single/m 1+x.bin"

# ---- glob subsets ----
D2=$WORK/d2
out=$(vf fetch s3://data/set/ "$D2" --include '*.jpg' --include 'small/d01/**' 2>&1); rc=$?
expected=$(cd "$SRC" && find . -type f \( -name '*.jpg' -o -path './small/d01/*' \) | sort)
got=$(cd "$D2" && find . -type f -print | sort)
if [ $rc -eq 0 ] && [ "$expected" = "$got" ] && [ -n "$got" ]; then ok "include globs fetch exactly the matching subset"
else not_ok "include globs fetch exactly the matching subset (rc=$rc)" "$out"; fi
D3=$WORK/d3
vf fetch s3://data/set/ "$D3" --include 'big/b?.bin' >/dev/null 2>&1
check "a ? glob selects both large files and nothing else" \
  test "$(cd "$D3" && find . -type f -print | sort | tr '\n' ' ')" = "./big/b1.bin ./big/b2.bin "

# ---- key order and the landed prefix (options.firstBatch) ----
DO=$WORK/d-order
"$VCK_FETCH" fetch s3://data/set/ "$DO" --endpoint "$ENDPOINT" --in-order --parallel 4 --progress-interval 0.05 \
  --termination-log "$WORK/order.json" >"$WORK/order.out" 2>&1
prefixes=$(python3 - "$WORK/order.out" <<'PY'
import json, sys
bad, seen, last = [], 0, (0, 0)
for line in open(sys.argv[1]):
    at = line.find(' {"filesDone":')
    if not line.startswith("vck-fetch: ") or at < 0:
        continue
    c = json.loads(line[at + 1:])
    if c["filesTotal"] == 0:  # before the listing: nothing known, no prefix told
        continue
    seen += 1
    if "prefixFiles" not in c or "prefixBytes" not in c:
        bad.append("no prefix in " + line.strip())
        continue
    p = (c["prefixFiles"], c["prefixBytes"])
    if p < last or p[0] > c["filesDone"] or p[1] > c["bytesDone"]:
        bad.append(f"prefix {p} after {last}, done {c['filesDone']}/{c['bytesDone']}")
    last = p
print("; ".join(bad) if bad or seen else "no progress line")
PY
)
check "--in-order progress lines (once listed) carry a landed prefix that never shrinks nor exceeds what is done" test -z "$prefixes"
[ -z "$prefixes" ] || echo "#   $prefixes"
check "--in-order fetches the same tree" same_tree "$SRC" "$DO"

# ---- kill mid-transfer, then resume ----
D4=$WORK/d4
"$VCK_FETCH" fetch s3://data/set/ "$D4" --endpoint "$ENDPOINT" --parallel 4 --progress-interval 0 \
  --multipart-threshold 4 --part-size 1 --termination-log "$WORK/kill.json" >/dev/null 2>&1 &
FETCH_PID=$!
for _ in $(seq 1 400); do
  [ -s "$D4.vck-fetch/journal" ] && [ -n "$(find "$D4.vck-fetch/tmp" -type f -size +1k 2>/dev/null | head -1)" ] && break
  sleep 0.025
done
kill -9 "$FETCH_PID" 2>/dev/null; wait "$FETCH_PID" 2>/dev/null; FETCH_PID=""
check "after a kill mid-transfer no partial file is visible" visible_files_complete "$D4" "$SRC"
out=$(vf fetch s3://data/set/ "$D4" 2>&1); rc=$?
if [ $rc -eq 0 ] && same_tree "$SRC" "$D4" && [ "$(json "$WORK/term.json" skipped)" -gt 0 ]; then
  ok "a restarted fetch resumes: skips what landed, completes the rest"
else not_ok "a restarted fetch resumes (rc=$rc, skipped=$(json "$WORK/term.json" skipped))" "$out"; fi
check "the staging directory is empty after a completed run" test -z "$(ls -A "$D4.vck-fetch/tmp")"

# ---- the layout of older versions: state in DEST/.vck-fetch ----
mv "$D2.vck-fetch" "$D2/.vck-fetch"
out=$(vf fetch s3://data/set/ "$D2" --include '*.jpg' --include 'small/d01/**' 2>&1); rc=$?
if [ $rc -eq 0 ] && [ "$(json "$WORK/term.json" files)" = "0" ] && [ ! -e "$D2/.vck-fetch" ] && [ -s "$D2.vck-fetch/journal" ]; then
  ok "an old DEST/.vck-fetch is retired: its journal moves beside DEST (nothing refetched), the rest is removed"
else not_ok "an old DEST/.vck-fetch is retired (rc=$rc, files=$(json "$WORK/term.json" files))" "$out"; fi

# ---- sync-back of changed files ----
echo "new content" >"$D1/small/d02/f00002.txt"
echo "brand new" >"$D1/small/new-file.txt"
out=$(vf sync-back "$D1" s3://data/set/ --once 2>&1); rc=$?
# f00000.jpg was restored by the fetch above, so exactly the two edits go up.
check "sync-back uploads only the changed and new files" test "$rc/$(json "$WORK/term.json" files)" = "0/2"
# An output volume's upload (`sync-back --once`) reports the whole directory: what went up
# now plus what an earlier run had uploaded already (skipped), files and bytes.
d1_files=$(find "$D1" -type f | wc -l)
d1_bytes=$(find "$D1" -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}')
check "sync-back --once counts the unchanged files as skipped ($((d1_files - 2)) files)" \
  test "$(json "$WORK/term.json" skipped)" = "$((d1_files - 2))"
check "sync-back --once: bytes plus skippedBytes are the directory's bytes ($d1_bytes)" \
  test "$(( $(json "$WORK/term.json" bytes) + $(json "$WORK/term.json" skippedBytes) ))" = "$d1_bytes"
D5=$WORK/d5
vf fetch s3://data/set/small/ "$D5" --include 'f00002.txt' --include 'new-file.txt' >/dev/null 2>&1
check "the synced-back files are in the bucket" \
  bash -c "cmp -s '$D1/small/d02/f00002.txt' '$D5/d02/f00002.txt' && cmp -s '$D1/small/new-file.txt' '$D5/new-file.txt'"

# ---- errors: message and exit code ----
expect_fail() { # description, expected exit code, expected text in the first error line, command...
  local d=$1 code=$2 text=$3; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  local line
  line=$(grep -m1 'vck-fetch: error:' <<<"$out")
  if [ $rc -eq "$code" ] && grep -qF -- "$text" <<<"$line"; then ok "$d (exit $code)"
  else not_ok "$d (wanted exit $code and \"$text\", got exit $rc)" "$out"; fi
}
# s3rver 3.7.1 checks the access key id but does not verify SigV4 signatures (its code says
# "unimplemented"), so a wrong key id is the credential error it can produce.
expect_fail "wrong credentials are an authentication error" 3 "AWS_ACCESS_KEY_ID" \
  env AWS_ACCESS_KEY_ID=wrong "$VCK_FETCH" fetch s3://data/set/ "$WORK/e1" --endpoint "$ENDPOINT" --termination-log "$WORK/e.json"
expect_fail "a wrong secret key fails the signature check, an authentication error" 3 "SignatureDoesNotMatch" \
  env AWS_SECRET_ACCESS_KEY=wrong "$VCK_FETCH" fetch s3://data/set/ "$WORK/e1" --endpoint "$ENDPOINT" --termination-log "$WORK/e.json"
# The server's SigV4 check is itself checked: botocore's signatures pass, a changed one does not.
if /usr/bin/aws --version >/dev/null 2>&1; then
  check "the signature check accepts the AWS CLI's (botocore's) signatures" \
    bash -c "AWS_DEFAULT_REGION=us-east-1 /usr/bin/aws --endpoint-url '$ENDPOINT' s3 ls s3://data/set/ >/dev/null"
  check "the signature check refuses a request signed with another secret" \
    bash -c "! AWS_DEFAULT_REGION=us-east-1 AWS_SECRET_ACCESS_KEY=other /usr/bin/aws --endpoint-url '$ENDPOINT' s3 ls s3://data/set/ >/dev/null 2>&1"
  url=$(AWS_DEFAULT_REGION=us-east-1 /usr/bin/aws --endpoint-url "$ENDPOINT" s3 presign "s3://data/set/mid/m 1+x.bin")
  check "the signature check accepts a presigned URL" bash -c "curl -sf -o /dev/null '$url'"
  last=${url: -1}; [ "$last" = a ] && other=b || other=a
  check "the signature check refuses a presigned URL whose signature was changed" \
    bash -c "! curl -sf -o /dev/null '${url%?}$other'"
else
  not_ok "/usr/bin/aws (Debian's awscli) is needed to check the server's signature check"
fi
check "the termination log carries the error's first line" grep -q '"exitCode":3' "$WORK/e.json"
expect_fail "a missing bucket is not found" 4 'bucket "nobucket" does not exist' \
  "$VCK_FETCH" fetch s3://nobucket/x/ "$WORK/e2" --endpoint "$ENDPOINT"
expect_fail "a missing key is not found" 4 "s3://data/set/nokey.bin does not exist" \
  "$VCK_FETCH" fetch s3://data/set/nokey.bin "$WORK/e3" --endpoint "$ENDPOINT"
expect_fail "an empty prefix is not found" 4 "no objects under s3://data/nothing/" \
  "$VCK_FETCH" fetch s3://data/nothing/ "$WORK/e4" --endpoint "$ENDPOINT"
DEAD_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
expect_fail "an unreachable endpoint is a network error" 5 "cannot reach the S3 server at http://127.0.0.1:$DEAD_PORT" \
  "$VCK_FETCH" fetch s3://data/set/ "$WORK/e5" --endpoint "http://127.0.0.1:$DEAD_PORT" --max-attempts 2
expect_fail "a malformed glob is a bad argument" 2 "invalid glob" \
  "$VCK_FETCH" fetch s3://data/set/ "$WORK/e6" --endpoint "$ENDPOINT" --include 'a[b'
expect_fail "a malformed source URL is a bad argument" 2 "must start with s3://" \
  "$VCK_FETCH" fetch http://data/set/ "$WORK/e7" --endpoint "$ENDPOINT"
"$VCK_FETCH" fetch >/dev/null 2>&1
check "missing arguments exit 2" test $? -eq 2

# ---- ETag verification, whole and in ranges ----
# s3rver keeps each object's MD5 (its ETag) beside the object; a wrong one stands for bytes
# that changed or were damaged on the way.
MD5FILE="$WORK/s3data/data/set/mid/m 1+x.bin._S3rver_object.md5"
if [ -f "$MD5FILE" ]; then
  cp "$MD5FILE" "$WORK/md5.saved"
  printf 0123456789abcdef0123456789abcdef >"$MD5FILE"
  expect_fail "a whole object whose bytes do not match its ETag is refused" 5 "does not match its ETag" \
    vf fetch s3://data/set/mid/ "$WORK/bad-whole"
  check "the mismatched whole object is not left under its name" test ! -e "$WORK/bad-whole/m 1+x.bin"
  expect_fail "an object fetched in ranges whose bytes do not match its ETag is refused" 5 "does not match its ETag" \
    vf fetch s3://data/set/mid/ "$WORK/bad-ranged" --multipart-threshold 4 --part-size 2
  check "the mismatched ranged object is not left under its name" test ! -e "$WORK/bad-ranged/m 1+x.bin"
  cp "$WORK/md5.saved" "$MD5FILE"
else
  not_ok "s3rver keeps object MD5s at $MD5FILE" "its storage layout changed; the ETag checks cannot run"
fi

# ---- delete ----
R=$WORK/roots/data
mkdir -p "$R/vck-resource-1/x" "$R/vck-resource-1.vck-fetch/tmp" "$WORK/outside/keep" "$R/victim"
ln -s "$WORK/outside" "$R/escape"
expect_fail "delete refuses /" 7 "refusing to delete \"/\"" "$VCK_FETCH" delete / --allowed-root "$R"
expect_fail "delete refuses a path outside the roots" 7 "not inside any allowed root" \
  "$VCK_FETCH" delete "$WORK/outside" --allowed-root "$R"
expect_fail "delete refuses .." 7 '".."' "$VCK_FETCH" delete "$R/victim/../../../outside" --allowed-root "$R"
expect_fail "delete refuses a symlink escape" 7 "symbolic link" "$VCK_FETCH" delete "$R/escape" --allowed-root "$R"
expect_fail "delete refuses a path through a symlink escape" 7 "not inside any allowed root" \
  "$VCK_FETCH" delete "$R/escape/keep" --allowed-root "$R"
check "refused deletes removed nothing" test -d "$WORK/outside/keep" -a -d "$R/victim"
"$VCK_FETCH" delete "$R/vck-resource-1" --allowed-root "$WORK/elsewhere" --allowed-root "$R" \
  --termination-log "$WORK/del.json" >/dev/null 2>&1
check "delete removes a directory inside an allowed root, and its state beside it" \
  test $? -eq 0 -a ! -e "$R/vck-resource-1" -a ! -e "$R/vck-resource-1.vck-fetch"

# ---- prepare ----
expect_fail "prepare refuses a path outside the roots" 7 "not inside any allowed root" \
  "$VCK_FETCH" prepare "$WORK/outside/new" --owner 0:0 --allowed-root "$R" --termination-log "$WORK/e.json"
expect_fail "prepare refuses a path through a symlink escape" 7 "not inside any allowed root" \
  "$VCK_FETCH" prepare "$R/escape/new" --owner 0:0 --allowed-root "$R" --termination-log "$WORK/e.json"
expect_fail "prepare needs UID:GID" 2 "expected UID:GID" \
  "$VCK_FETCH" prepare "$R/p" --owner nobody --allowed-root "$R" --termination-log "$WORK/e.json"
check "refused prepares created nothing" test ! -e "$WORK/outside/new" -a ! -e "$WORK/outside/keep/new" -a ! -e "$R/p"
OWNER=$(id -u):$(id -g)
[ "$(id -u)" = 0 ] && OWNER=65532:65532
"$VCK_FETCH" prepare "$R/sets/vck-resource-2" --owner "$OWNER" --allowed-root "$R" --termination-log "$WORK/prep.json" \
  >/dev/null 2>&1
check "prepare creates the directory and its state directory, owned by --owner, mode 0755" \
  test $? -eq 0 -a "$(stat -c %u:%g:%a "$R/sets/vck-resource-2")" = "$OWNER:755" \
  -a "$(stat -c %u:%g:%a "$R/sets/vck-resource-2.vck-fetch")" = "$OWNER:755" \
  -a "$(stat -c %u:%a "$R/sets")" = "$(id -u):755"
check "prepare's summary counts the directories it created" test "$(json "$WORK/prep.json" files)" = 3
"$VCK_FETCH" prepare "$R/sets/vck-resource-2" --owner "$OWNER" --allowed-root "$R" --termination-log "$WORK/prep.json" \
  >/dev/null 2>&1
check "prepare again changes nothing" test $? -eq 0 -a "$(json "$WORK/prep.json" files)" = 0

# ---- a new version built from an older one on the disk (--reuse-from) ----
# 20 objects; then one changed, one added, one removed in the store. The new version takes
# the 18 unchanged files from the older copy and downloads only the other two: the bytes the
# store sends (counted by tests/e2e/throttle_proxy.py in front of it) stay within 1.1x theirs.
V=$WORK/v-src
python3 - "$V" <<'PY'
import os, random, sys
root = sys.argv[1]
rnd = random.Random(5)
for i in range(20):
    path = os.path.join(root, "sub" if i % 5 == 0 else "", f"obj{i:02d}.bin")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(rnd.randbytes(256 * 1024 + i))
PY
vf sync-back "$V" s3://data/v/ --once >/dev/null 2>&1
vf fetch s3://data/v/ "$WORK/v1" >/dev/null 2>&1
check "the first version is byte-identical to the source" same_tree "$V" "$WORK/v1"
cp -r "$V" "$WORK/v-old"
head -c 300000 /dev/urandom >"$V/obj03.bin"
head -c 200000 /dev/urandom >"$V/obj20.bin"
vf sync-back "$V" s3://data/v/ --once >/dev/null 2>&1
rm "$V/obj07.bin"
AWS_DEFAULT_REGION=us-east-1 /usr/bin/aws --endpoint-url "$ENDPOINT" s3 rm s3://data/v/obj07.bin >/dev/null 2>&1
CHANGED=$((300000 + 200000))

PROXY_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 "$ROOT/tests/e2e/throttle_proxy.py" "$PROXY_PORT" 127.0.0.1 "$PORT" 0 "$WORK/egress" >"$WORK/proxy.log" 2>&1 &
PROXY_PID=$!
for _ in $(seq 1 100); do grep -qs listening "$WORK/proxy.log" && break; sleep 0.05; done
# egress_of ARGS...: a fetch of s3://data/v/ through the proxy; prints the bytes the store sent.
egress_of() {
  local before; before=$(cat "$WORK/egress" 2>/dev/null || echo 0)
  "$VCK_FETCH" fetch s3://data/v/ "$@" --endpoint "http://127.0.0.1:$PROXY_PORT" --progress-interval 0 \
    --termination-log "$WORK/term.json" >"$WORK/reuse.out" 2>&1 || echo "# fetch failed: $(cat "$WORK/reuse.out")" >&2
  sleep 0.2  # the proxy rewrites its count as bytes pass
  echo $(( $(cat "$WORK/egress") - before ))
}
sent=$(egress_of "$WORK/v2" --reuse-from "$WORK/v1")
echo "# --reuse-from: the store sent $sent bytes for $CHANGED changed and added bytes"
check "with --reuse-from the store sends at most 1.1x the changed and added objects ($sent <= $((CHANGED * 11 / 10)))" \
  test "$sent" -le $((CHANGED * 11 / 10))
check "the new version is byte-identical to the changed source, the removed object absent" same_tree "$V" "$WORK/v2"
check "the summary counts 18 files reused and 2 downloaded" \
  test "$(json "$WORK/term.json" reused)/$(json "$WORK/term.json" files)/$(json "$WORK/term.json" bytesFromStore)" = "18/2/$CHANGED"
check "the older version is untouched" same_tree "$WORK/v-old" "$WORK/v1"
check "a reused file is a file of its own, not a link to the older one" \
  test "$(stat -c %i "$WORK/v1/obj01.bin")" != "$(stat -c %i "$WORK/v2/obj01.bin")" -a "$(stat -c %h "$WORK/v2/obj01.bin")" = 1
echo "written by a job" >>"$WORK/v2/obj01.bin"
check "a job's write to the new version does not change the older one" cmp -s "$WORK/v1/obj01.bin" "$WORK/v-old/obj01.bin"

# A file of the older copy changed since it landed (same size, new bytes) is not trusted.
head -c $((256 * 1024 + 6)) /dev/urandom >"$WORK/v1/obj06.bin"
egress_of "$WORK/v3" --reuse-from "$WORK/v1" >/dev/null
check "a file changed in the older copy since it landed is downloaded, not copied" \
  test "$(json "$WORK/term.json" reused)" = 17 -a "$(cmp -s "$V/obj06.bin" "$WORK/v3/obj06.bin" && echo same)" = same
full=$(egress_of "$WORK/v4")
echo "# without --reuse-from: the store sent $full bytes"
check "without --reuse-from every byte comes from the store" test "$full" -gt $((CHANGED * 5))
kill "$PROXY_PID" 2>/dev/null; wait "$PROXY_PID" 2>/dev/null; PROXY_PID=""

# ---- server killed during a transfer ----
D6=$WORK/d6
"$VCK_FETCH" fetch s3://data/set/big/ "$D6" --endpoint "$ENDPOINT" --parallel 2 --max-attempts 3 \
  --progress-interval 0 --termination-log "$WORK/dead.json" >"$WORK/dead.out" 2>&1 &
FETCH_PID=$!
for _ in $(seq 1 400); do
  [ -n "$(find "$D6.vck-fetch/tmp" -type f -size +1k 2>/dev/null | head -1)" ] && break
  sleep 0.025
done
stop_server
wait "$FETCH_PID"; rc=$?; FETCH_PID=""
line=$(grep -m1 'vck-fetch: error:' "$WORK/dead.out")
if [ $rc -eq 5 ] && grep -qF "cannot reach the S3 server" <<<"$line"; then
  ok "a server killed mid-transfer is a network error (exit 5)"
else not_ok "a server killed mid-transfer is a network error (rc=$rc)" "$(cat "$WORK/dead.out")"; fi
check "after the server died no partial file is visible" visible_files_complete "$D6" "$SRC"

echo "1..$N"
[ $FAILED -eq 0 ]
