#!/usr/bin/env bash
# vck as others carry it, tried from outside (TAP, one line per check):
#  - installed with `meson install` into a temporary prefix (headers and .pc files only), an
#    outside meson project finds `dependency('vck')` through PKG_CONFIG_PATH, builds
#    consumer.cpp and runs it; a plain `g++ consumer.cpp $(pkg-config --cflags --libs vck)`
#    does the same; the core package names no yaml-cpp, pugixml or protobuf, and each extra
#    package adds its own library; the sandbox installs under its own tag, and a user's test
#    builds against it (sandbox_consumer.cpp);
#  - a parent project with vck in its subprojects/ configures and builds consumer.cpp, and its
#    build has no vck target besides (no test, binary, example, benchmark or fuzzer) and
#    installs nothing.
# Usage: packaging_test.sh (VCK_SOURCE_ROOT: the source tree, default this file's ../..).
# Exits 77 (meson's "skipped") with a reason when meson, ninja, pkg-config or g++ is missing.
set -u

ROOT=${VCK_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
HERE=$ROOT/tests/packaging
for tool in meson ninja pkg-config g++; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "1..0 # SKIP $tool is not installed (scripts/bootstrap installs it)"
        exit 77
    fi
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vck-packaging.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
trap 'exit 143' INT TERM  # through the EXIT trap: a stopped test leaves nothing behind
# The builds below are the user's, not ours: none of the test build's sanitizer settings.
unset CFLAGS CXXFLAGS LDFLAGS PKG_CONFIG_PATH MESONINTROSPECT

failures=0
pass() { echo "ok - $1"; }
fail() {
    failures=$((failures + 1))
    echo "not ok - $1"
    [ -n "${2:-}" ] && printf '%s\n' "$2" | tail -40 | sed 's/^/#   /'
    return 0
}
# check NAME CMD...: CMD succeeds; its output is shown only when it does not.
check() {
    local name=$1 out
    shift
    if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "$out"; fi
}

# ---- installed, then used through pkg-config ----
PREFIX=$WORK/prefix
check "vck configures as a top-level project into a fresh prefix" \
    meson setup "$WORK/vck-build" "$ROOT" --prefix "$PREFIX" -Dtests=false -Dexamples=false -Dbench=false -Dfuzz=false
# Headers and .pc files are tagged devel: installing them builds nothing. The sandbox, a test
# tool, is a part of its own under the tag sandbox: the library installs without it.
check "meson install --tags devel installs the headers and .pc files without building" \
    meson install -C "$WORK/vck-build" --no-rebuild --tags devel
PCDIR=$(dirname "$(find "$PREFIX" -name vck.pc | head -1)")
export PKG_CONFIG_PATH=$PCDIR
sandbox_files=$(find "$PREFIX" -path '*/vck/sandbox*' -o -name 'vck-sandbox.pc' 2>&1)
if [ -z "$sandbox_files" ] && [ -f "$PREFIX/include/vck/api/meta.hpp" ]; then
    pass "the library installs without the sandbox's headers or package"
else
    fail "the library installs without the sandbox's headers or package" "$sandbox_files"
fi
leaks=$(grep -rlE '#include <vck/sandbox/' "$PREFIX/include/vck" 2>&1)
if [ -z "$leaks" ]; then pass "no installed library header includes the sandbox's"; else
    fail "no installed library header includes the sandbox's" "$leaks"; fi
check "meson install --tags sandbox adds the sandbox's headers and vck-sandbox.pc" \
    meson install -C "$WORK/vck-build" --no-rebuild --tags sandbox
check "the sandbox's kit headers are installed under vck/sandbox/" \
    test -f "$PREFIX/include/vck/sandbox/test_environment.hpp" -a -f "$PREFIX/include/vck/sandbox/server/api_server.hpp"
check "the generated version header is installed beside the others" test -f "$PREFIX/include/vck/version.hpp"
check "no build file of vck's is installed among the headers" \
    test ! -e "$PREFIX/include/vck/meson.build" -a ! -e "$PREFIX/include/vck/version.hpp.in"
for pc in vck vck-kubeconfig vck-s3 vck-sandbox; do
    check "pkg-config resolves $pc" pkg-config --exists --print-errors "$pc"
done
cflags=$(pkg-config --cflags vck 2>&1)
if printf '%s\n' "$cflags" | grep -Eq -- '-std=(c|gnu)\+\+(2a|20)'; then pass "vck.pc's Cflags carry C++20"; else
    fail "vck.pc's Cflags carry C++20" "$cflags"; fi
core=$(pkg-config --libs vck 2>&1)
if printf '%s\n' "$core" | grep -Eq -- '-l(yaml-cpp|pugixml|protobuf)'; then
    fail "the core package links no yaml-cpp, pugixml or protobuf" "$core"
else
    pass "the core package links no yaml-cpp, pugixml or protobuf"
fi
# extra NAME LIB: the extra package NAME adds LIB to the core's libraries.
extra() {
    local libs
    libs=$(pkg-config --libs "$1" 2>&1)
    if printf '%s\n' "$libs" | grep -q -- "-l$2" && printf '%s\n' "$libs" | grep -q -- "-lboost_json"; then
        pass "$1 adds -l$2 to the core"
    else
        fail "$1 adds -l$2 to the core" "$libs"
    fi
}
extra vck-kubeconfig yaml-cpp
extra vck-s3 pugixml
extra vck-sandbox protobuf-lite

mkdir -p "$WORK/outside"
cp "$HERE/outside/meson.build" "$HERE/consumer.cpp" "$WORK/outside/"
check "an outside meson project finds dependency('vck') through pkg-config" \
    meson setup "$WORK/outside-build" "$WORK/outside" -Doptimization=0
check "the outside project builds its program against the installed vck" ninja -C "$WORK/outside-build"
check "the outside project's program runs" "$WORK/outside-build/consumer"

# shellcheck disable=SC2046  # pkg-config's output is meant to split into arguments
check "g++ with \$(pkg-config --cflags --libs vck) builds the same program" \
    g++ -O0 -o "$WORK/consumer-gxx" "$HERE/consumer.cpp" $(pkg-config --cflags --libs vck)
check "the g++-built program runs" "$WORK/consumer-gxx"
# shellcheck disable=SC2046
check "a user's test builds against the installed vck-sandbox alone" \
    g++ -O0 -o "$WORK/sandbox-consumer" "$HERE/sandbox_consumer.cpp" $(pkg-config --cflags --libs vck-sandbox)
check "the user's sandbox test runs" "$WORK/sandbox-consumer"

# ---- a subproject of a parent project ----
mkdir -p "$WORK/parent/subprojects"
cp "$HERE/parent/meson.build" "$HERE/consumer.cpp" "$WORK/parent/"
ln -s "$ROOT" "$WORK/parent/subprojects/vck"
unset PKG_CONFIG_PATH
check "a parent project with vck in subprojects/ configures" \
    meson setup "$WORK/parent-build" "$WORK/parent" -Doptimization=0
# Meson's own phony targets (meson-internal__test and the like) are the parent's, not vck's.
targets=$(ninja -C "$WORK/parent-build" -t targets all 2>&1 | grep -v '^meson-')
vck_targets=$(printf '%s\n' "$targets" | grep -E '^subprojects/vck/' | grep -Ev '\.(hpp|h)(\.in)?:' || true)
if [ -z "$vck_targets" ] && printf '%s\n' "$targets" | grep -q '^consumer:'; then
    pass "the parent's build has no vck target: no test, binary, example, benchmark or fuzzer"
else
    fail "the parent's build has no vck target: no test, binary, example, benchmark or fuzzer" "$vck_targets"
fi
if printf '%s\n' "$targets" | grep -Eiq '(_test|test_|doctest|vck-(controller|sandbox|fetch))'; then
    fail "no vck test or binary appears anywhere in the parent's build.ninja" \
        "$(printf '%s\n' "$targets" | grep -Ei '(_test|test_|doctest|vck-(controller|sandbox|fetch))')"
else
    pass "no vck test or binary appears anywhere in the parent's build.ninja"
fi
installed=$(meson introspect --installed "$WORK/parent-build" 2>&1)
if [ "$installed" = "{}" ]; then pass "the parent installs nothing of vck's"; else
    fail "the parent installs nothing of vck's" "$installed"; fi
check "the parent builds its program with vck's headers" ninja -C "$WORK/parent-build"
check "the parent's program runs" "$WORK/parent-build/consumer"

[ "$failures" -eq 0 ]
