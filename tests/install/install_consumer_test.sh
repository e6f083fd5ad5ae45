#!/usr/bin/env bash
# install_consumer_test.sh BUILD_DIR CONSUMER_SRC CMAKE CXX [BREAK]
# Installs BUILD_DIR into a temporary prefix and checks what a packager relies on: the SONAME of
# libncclwatch.so, format.h in include/ncclwatch, that the installed CLI finds and preloads the
# installed library by itself and passes the command's exit status through (`ncclwatch run` on
# a command that makes no NCCL call and exits 7: a crash or a missing library is another
# status); then builds the consumer project against the prefix with find_package(ncclwatch) and
# runs it.
# BREAK damages the installed tree first, to show that the checks fail when they should
# (CTest runs each and expects the FAIL line): no-library (libncclwatch.so removed),
# crashing-cli (bin/ncclwatch replaced by a program that dies of SIGSEGV).
set -euo pipefail
build=$1 src=$2 cmake=$3 cxx=$4 break=${5:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() {
  echo "FAIL: $*"
  exit 1
}

"$cmake" --install "$build" --prefix "$prefix" >/dev/null
case "$break" in
  "") ;;
  no-library) find "$prefix" -name 'libncclwatch.so*' -delete ;;
  crashing-cli) printf '#!/bin/sh\nkill -SEGV $$\n' >"$prefix/bin/ncclwatch" ;;
  *) fail "unknown BREAK '$break'" ;;
esac

lib=$(find "$prefix" -name 'libncclwatch.so' -print -quit)
[ -n "$lib" ] || fail "no libncclwatch.so installed"
soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}') || fail "objdump cannot read $lib"
[ "$soname" = "libncclwatch.so.0" ] || fail "SONAME is '$soname'"
[ -f "$prefix/include/ncclwatch/format.h" ] || fail "format.h not installed"
[ -x "$prefix/bin/ncclwatch" ] || fail "bin/ncclwatch not installed"

# The installed CLI finds the installed library by itself (no NCCLWATCH_LIB), preloads it, and
# exits with the command's status.
rc=0
(cd "$tmp" && env -u NCCLWATCH_LIB -u LD_PRELOAD "$prefix/bin/ncclwatch" run --dir "$tmp/traces" \
  -- sh -c 'echo "preloaded=$LD_PRELOAD"; exit 7') >"$tmp/run.log" 2>&1 || rc=$?
if [ "$rc" != 7 ]; then
  cat "$tmp/run.log"
  fail "installed ncclwatch run exited with $rc, not with the command's status 7"
fi
preloaded=$(sed -n 's/^preloaded=//p' "$tmp/run.log" | head -1)
[ -n "$preloaded" ] && [ "$(realpath -e "${preloaded%%[: ]*}")" = "$(realpath -e "$lib")" ] ||
  { cat "$tmp/run.log"; fail "installed ncclwatch run preloaded '$preloaded', not $lib"; }

"$cmake" -S "$src" -B "$tmp/consumer" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; exit 1; }
"$cmake" --build "$tmp/consumer" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
out=$("$tmp/consumer/consumer") || fail "the consumer exited with $?"
echo "$out"
grep -q "cli=$prefix/bin/ncclwatch" <<<"$out" || fail "ncclwatch::ncclwatch not in prefix"

# `ncclwatch demo` from the prefix: its stand-ins only in libexec/ncclwatch/demo (libraries in its
# lib/, no development symlink, RUNPATH $ORIGIN/lib), none of them anywhere else in the prefix;
# the demo runs from there and says SIMULATED in the report, the JSON and the page.
demo=$(dirname "$(find "$prefix" -name fake_launcher -type f -print -quit)")
[ "$demo" = "$prefix/libexec/ncclwatch/demo" ] || fail "the demo directory is '$demo'"
for f in fake_launcher fake_train fake_rank; do
  [ -x "$demo/$f" ] || fail "$demo/$f not installed"
done
for f in libnccl.so.2 libcudart.so.13 libcupti.so.13; do
  [ -e "$demo/lib/$f" ] || fail "$demo/lib/$f not installed"
done
stray=$(find "$prefix" \( -name 'libnccl.so*' -o -name 'libcudart.so*' -o -name 'libcupti.so*' \
  -o -name 'fake_*' \) ! -path "$demo/*")
[ -z "$stray" ] || fail "stand-ins outside the demo directory: $stray"
[ ! -e "$demo/lib/libnccl.so" ] || fail "a development symlink $demo/lib/libnccl.so"
for f in fake_train fake_rank; do
  runpath=$(objdump -p "$demo/$f" | awk '/RUNPATH|RPATH/ {print $2}')
  [ "$runpath" = '$ORIGIN/lib' ] || fail "$f's RUNPATH is '$runpath'"
done
(cd "$tmp" && env -u NCCLWATCH_LIB -u LD_LIBRARY_PATH -u LD_PRELOAD "$prefix/bin/ncclwatch" demo \
  healthy --json "$tmp/demo.json" --html "$tmp/demo.html") >"$tmp/demo.log" 2>&1 ||
  { cat "$tmp/demo.log"; fail "ncclwatch demo from the prefix"; }
head -1 "$tmp/demo.log" | grep -q '^SIMULATED job (ncclwatch demo healthy)' ||
  { cat "$tmp/demo.log"; fail "the demo's report does not open with SIMULATED"; }
grep -q '"simulated": "SIMULATED job (ncclwatch demo healthy)' "$tmp/demo.json" ||
  fail "the demo's JSON lacks 'simulated'"
grep -q 'SIMULATED-demo-healthy' "$tmp/demo.html" || fail "the page lacks SIMULATED"
echo "install_consumer: ok"
