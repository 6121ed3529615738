#!/usr/bin/env bash
# The data-path race: the same dataset fetched from one s3rver by vck-fetch, `aws s3 cp
# --recursive` (/usr/bin/aws) and `rclone copy`, plus the server's own limit measured with
# parallel raw GETs of presigned URLs (curl --parallel). Prints per-tool medians and ratios.
# Usage: bench/fetch/run.sh PATH/TO/vck-fetch [RUNS]   (use an optimized, unsanitized build)
# Env: SMALL_FILES (2000), SMALL_KIB (16), LARGE_FILES (4), LARGE_MIB (64), PARALLEL (16).
set -u
VCK_FETCH=$(realpath "${1:?usage: run.sh PATH/TO/vck-fetch [RUNS]}")
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
S3RVER_DIR=${S3RVER_DIR:-$ROOT/.cache/s3rver}
SMALL_FILES=${SMALL_FILES:-2000}; SMALL_KIB=${SMALL_KIB:-16}
LARGE_FILES=${LARGE_FILES:-4}; LARGE_MIB=${LARGE_MIB:-64}
PARALLEL=${PARALLEL:-16}
AWS=/usr/bin/aws
for tool in "$AWS" rclone curl node python3; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is missing" >&2; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/vck-fetch-bench.XXXXXX")
SERVER_PID=""
trap '[ -n "$SERVER_PID" ] && kill $SERVER_PID 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT INT TERM
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
EP=http://127.0.0.1:$PORT
mkdir -p "$WORK/s3data"
S3RVER_DIR=$S3RVER_DIR NODE_OPTIONS=--openssl-legacy-provider node "$ROOT/tests/s3/s3rver.js" "$PORT" "$WORK/s3data" &
SERVER_PID=$!
for _ in $(seq 1 100); do curl -s -o /dev/null "$EP/" && break; sleep 0.1; done

export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_DEFAULT_REGION=us-east-1
unset AWS_SESSION_TOKEN

echo "bench: generating $SMALL_FILES x ${SMALL_KIB} KiB and $LARGE_FILES x ${LARGE_MIB} MiB" >&2
mkdir -p "$WORK/src/small" "$WORK/src/large"
python3 - "$WORK/src/small" "$SMALL_FILES" "$SMALL_KIB" <<'PY'
import os, sys
d, n, kib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    with open(os.path.join(d, f"f{i:05d}.bin"), "wb") as f:
        f.write(os.urandom(kib * 1024))
PY
for i in $(seq 1 "$LARGE_FILES"); do head -c $((LARGE_MIB << 20)) /dev/urandom >"$WORK/src/large/l$i.bin"; done
"$VCK_FETCH" sync-back "$WORK/src" s3://data/ --once --endpoint "$EP" --termination-log "" >/dev/null 2>&1 ||
  { echo "bench: seeding the bucket failed" >&2; exit 1; }

# Presigned URLs for the raw run (botocore signs; curl only downloads).
presign() { # prefix dir -> curl config on stdout
  python3 - "$EP" "$1" "$2" <<'PY'
import sys, boto3
ep, prefix, out = sys.argv[1:4]
s3 = boto3.client("s3", endpoint_url=ep, region_name="us-east-1", aws_access_key_id="S3RVER",
                  aws_secret_access_key="S3RVER",
                  config=boto3.session.Config(signature_version="s3v4", s3={"addressing_style": "path"}))
keys = []
tok = None
while True:
    kw = {"Bucket": "data", "Prefix": prefix}
    if tok: kw["ContinuationToken"] = tok
    r = s3.list_objects_v2(**kw)
    keys += [o["Key"] for o in r.get("Contents", [])]
    if not r.get("IsTruncated"): break
    tok = r["NextContinuationToken"]
for k in keys:
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "data", "Key": k}, ExpiresIn=3600)
    print(f'url = "{url}"\noutput = "{out}/{k.rsplit("/", 1)[-1]}"')
PY
}

time_of() { # command... -> seconds on stdout; the command's output is discarded
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$WORK/last.log" 2>&1 || { echo "bench: failed: $*" >&2; tail -5 "$WORK/last.log" >&2; echo nan; return; }
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.3f}')"
}
median() { python3 -c 'import sys, statistics; v=[float(x) for x in sys.argv[1:] if x != "nan"]; print(f"{statistics.median(v):.3f}" if v else "nan")' "$@"; }

run_vck() { "$VCK_FETCH" fetch "s3://data/$1/" "$2" --endpoint "$EP" --parallel "$PARALLEL" --progress-interval 0 --termination-log ""; }
run_vckranged() { "$VCK_FETCH" fetch "s3://data/$1/" "$2" --endpoint "$EP" --parallel "$PARALLEL" --progress-interval 0 --termination-log "" --multipart-threshold 16 --part-size 8; }
run_aws() { "$AWS" --endpoint-url "$EP" s3 cp --recursive --only-show-errors "s3://data/$1/" "$2"; }
run_rclone() { # backend flags, not a connection string: its ':' and ',' syntax cannot carry a URL unquoted
  env -u AWS_CA_BUNDLE timeout 300 rclone copy --transfers "$PARALLEL" --s3-provider Other --s3-endpoint "$EP" \
    --s3-access-key-id S3RVER --s3-secret-access-key S3RVER --s3-region us-east-1 ":s3:data/$1" "$2"; }
run_raw() { mkdir -p "$2" && curl -sf --parallel --parallel-max "$PARALLEL" -K "$WORK/$1.curl"; }

declare -A RESULT
for set in small large; do
  mkdir -p "$WORK/rawdir-$set"
  presign "$set/" "$WORK/rawdir-$set" >"$WORK/$set.curl"
  for tool in raw vck vckranged aws rclone; do
    [ $tool = vckranged ] && [ $set = small ] && continue  # small files are never ranged
    times=()
    for r in $(seq 1 "$RUNS"); do
      dest=$WORK/out-$tool-$set-$r
      if [ $tool = raw ]; then dest=$WORK/rawdir-$set; rm -rf "$dest"; fi
      times+=("$(time_of run_$tool "$set" "$dest")")
      [ $tool = raw ] || { diff -rq -x .vck-fetch "$WORK/src/$set" "$dest" >/dev/null || echo "bench: $tool copy of $set differs" >&2; }
      rm -rf "$dest"
    done
    RESULT[$tool-$set]=$(median "${times[@]}")
    echo "bench: $set $tool runs: ${times[*]}" >&2
  done
done

echo
printf '%-8s %10s %10s %10s %10s\n' dataset raw vck-fetch aws rclone
for set in small large; do
  printf '%-8s %9ss %9ss %9ss %9ss\n' "$set" "${RESULT[raw-$set]}" "${RESULT[vck-$set]}" "${RESULT[aws-$set]}" "${RESULT[rclone-$set]}"
done
echo
echo "large, vck-fetch in 8 MiB ranges (--multipart-threshold 16 --part-size 8): ${RESULT[vckranged-large]}s"
echo
python3 - "${RESULT[raw-small]}" "${RESULT[vck-small]}" "${RESULT[aws-small]}" "${RESULT[rclone-small]}" \
  "${RESULT[raw-large]}" "${RESULT[vck-large]}" "${RESULT[aws-large]}" "${RESULT[rclone-large]}" <<'PY'
import sys
v = [float(x) for x in sys.argv[1:]]
for name, (raw, vck, aws, rcl), goal_aws in (("small", v[0:4], 1.5), ("large", v[4:8], 1.2)):
    print(f"{name}: speed vs awscli {aws / vck:.2f}x (goal >= {goal_aws}), vs rclone {rcl / vck:.2f}x, "
          f"fraction of server limit {raw / vck:.2f} (goal >= 0.8)")
PY
