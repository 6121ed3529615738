#!/usr/bin/env bash
# vck's binaries on their command lines (TAP, one line per check): `--version` prints
# "NAME VERSION" (the project's one version) and exits 0; --help exits 0; a usage error
# (unknown flag or subcommand, a value out of range or not a number, a missing value or
# argument) exits 2 with one short line "NAME: ..." on stderr, at most followed by the
# "Run with --help" hint, and nothing on stdout. Nothing here starts a server: every run
# stops at its command line.
# Usage: command_line_test.sh VERSION PATH/TO/vck-controller PATH/TO/vck-sandbox PATH/TO/vck-fetch
set -u

VERSION=${1:?usage: command_line_test.sh VERSION vck-controller vck-sandbox vck-fetch}
CONTROLLER=$(realpath "$2")
SANDBOX=$(realpath "$3")
FETCH=$(realpath "$4")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vck-command-line.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
trap 'exit 143' INT TERM  # through the EXIT trap: a stopped test leaves nothing behind
cd "$WORK" || exit 1  # vck-sandbox writes its kubeconfig where it runs, were it to start

failures=0
pass() { echo "ok - $1"; }
fail() {
    failures=$((failures + 1))
    echo "not ok - $1"
    [ -n "${2:-}" ] && printf '%s\n' "$2" | head -20 | sed 's/^/#   /'
    return 0
}
run() { timeout 60 "$@" >"$WORK/out" 2>"$WORK/err"; echo $?; }

# version BIN NAME
version() {
    local rc
    rc=$(run "$1" --version)
    if [ "$rc" -eq 0 ] && [ "$(cat "$WORK/out")" = "$2 $VERSION" ] && [ ! -s "$WORK/err" ]; then
        pass "$2 --version prints \"$2 $VERSION\" and exits 0"
    else
        fail "$2 --version prints \"$2 $VERSION\" and exits 0" "rc=$rc; stdout: $(cat "$WORK/out"); stderr: $(cat "$WORK/err")"
    fi
}
# helps BIN NAME [ARGS...]
helps() {
    local bin=$1 name=$2 rc
    shift 2
    name="$name${*:+ $*}"
    rc=$(run "$bin" "$@" --help)
    if [ "$rc" -eq 0 ] && grep -q -- '--help' "$WORK/out"; then pass "$name --help exits 0"; else
        fail "$name --help exits 0" "rc=$rc; $(cat "$WORK/err")"; fi
}
# usage NAME BIN_NAME REGEX BIN ARGS...: exit 2, stdout empty, stderr one line "BIN_NAME: ..."
# matching REGEX (and under 160 characters), optionally followed by the --help hint.
usage() {
    local name=$1 prog=$2 re=$3 bin=$4 rc first lines
    shift 4
    rc=$(run "$bin" "$@")
    first=$(head -1 "$WORK/err")
    lines=$(wc -l <"$WORK/err")
    if [ "$rc" -eq 2 ] && [ ! -s "$WORK/out" ] && [ "${#first}" -lt 160 ] &&
        printf '%s\n' "$first" | grep -Eq -- "^$prog: .*$re" &&
        { [ "$lines" -eq 1 ] || { [ "$lines" -eq 2 ] && [ "$(sed -n 2p "$WORK/err")" = "Run with --help for more information." ]; }; }; then
        pass "$name"
    else
        fail "$name" "rc=$rc; stdout: $(head -c 300 "$WORK/out"); stderr ($lines lines): $(head -c 600 "$WORK/err")"
    fi
}

version "$CONTROLLER" vck-controller
version "$SANDBOX" vck-sandbox
version "$FETCH" vck-fetch
helps "$CONTROLLER" vck-controller
helps "$SANDBOX" vck-sandbox
helps "$FETCH" vck-fetch
for sub in fetch sync-back delete prepare; do helps "$FETCH" vck-fetch "$sub"; done

C=vck-controller S=vck-sandbox F=vck-fetch
# name | program | message | binary and arguments
usage "$C: an unknown flag is a usage error" $C 'not expected: --bogus' "$CONTROLLER" --bogus
usage "$C: a flag without its value is a usage error" $C '--kubeconfig' "$CONTROLLER" --kubeconfig
usage "$C: --workers 0 names the range" $C '--workers: 0 is not in \[1, 1000\]$' "$CONTROLLER" --workers 0
usage "$C: --workers two is not a number" $C '--workers: two is not an integer in \[1, 1000\]$' "$CONTROLLER" --workers two
usage "$C: --qps 0 names the range" $C '--qps: 0 is not in \(0, 100000\]$' "$CONTROLLER" --qps 0
usage "$C: --v 11 names the range" $C '--v: 11 is not in \[0, 10\]$' "$CONTROLLER" -v 11
usage "$C: a relative --allowed-data-roots is a usage error" $C '"data" is not an absolute path' \
    "$CONTROLLER" --allowed-data-roots /var/datasets,data
usage "$C: a malformed --node-lost-timeout is a usage error" $C 'Go duration' "$CONTROLLER" --node-lost-timeout soon
usage "$C: an unknown --log-format is a usage error" $C '--log-format' "$CONTROLLER" --log-format xml

usage "$S: an unknown flag is a usage error" $S 'not expected: --bogus' "$SANDBOX" --bogus
usage "$S: --nodes -1 names the range" $S '--nodes: -1 is not in \[0, 1000\]$' "$SANDBOX" --nodes -1
usage "$S: --nodes 1.5 is not an integer" $S '--nodes: 1.5 is not an integer in \[0, 1000\]$' "$SANDBOX" --nodes 1.5
usage "$S: --port 70000 names the range" $S '--port: 70000 is not in \[0, 65535\]$' "$SANDBOX" --port 70000
usage "$S: --admin-port -2 names the range" $S '--admin-port: -2 is not in \[0, 65535\]$' "$SANDBOX" --admin-port -2
usage "$S: --nodes with --nodes-file is a usage error" $S 'excludes' "$SANDBOX" --nodes 1 --nodes-file x.yaml

usage "$F: no subcommand is a usage error" $F 'subcommand' "$FETCH"
# CLI11 checks for a subcommand before it looks at the extra argument.
usage "$F: an unknown subcommand is a usage error" $F 'subcommand is required|not expected: fly' "$FETCH" fly
usage "$F fetch: missing arguments are a usage error" $F 'SRC' "$FETCH" fetch
usage "$F fetch: an unknown flag is a usage error" $F 'not expected: --bogus' "$FETCH" fetch s3://b/k "$WORK/d" --bogus
usage "$F fetch: --parallel 0 names the range" $F '--parallel: 0 is not in \[1, 256\]$' \
    "$FETCH" fetch s3://b/k "$WORK/d" --parallel 0
usage "$F fetch: --progress-interval -1 names the range" $F '--progress-interval: -1 is not in \[0, 86400\]$' \
    "$FETCH" fetch s3://b/k "$WORK/d" --progress-interval -1
usage "$F fetch: --part-size 0.5 names the range" $F '--part-size: 0.5 is not in \[1, 5120\]$' \
    "$FETCH" fetch s3://b/k "$WORK/d" --part-size 0.5
usage "$F sync-back: --interval 0 names the range" $F '--interval: 0 is not in \(0, 86400\]$' \
    "$FETCH" sync-back "$WORK/d" s3://b/p/ --interval 0
usage "$F sync-back: --multipart-threshold 1 names the range" $F '--multipart-threshold: 1 is not in \[5, 1000000\]$' \
    "$FETCH" sync-back "$WORK/d" s3://b/p/ --multipart-threshold 1
usage "$F delete: a missing --allowed-root is a usage error" $F 'allowed-root' "$FETCH" delete "$WORK/d"
usage "$F prepare: a missing --owner is a usage error" $F 'owner' "$FETCH" prepare "$WORK/d"

[ "$failures" -eq 0 ]
