#!/usr/bin/env bash
# install_consumer_test.sh BUILD_DIR CONSUMER_SRC CMAKE CXX
# Installs BUILD_DIR into a temporary prefix, builds the consumer project against it with
# find_package(ncclwatch), runs it, and checks what a packager relies on: the SONAME of
# libncclwatch.so, format.h in include/ncclwatch, and that the installed CLI finds the installed
# library (`ncclwatch run` on a command that makes no NCCL call).
set -euo pipefail
build=$1 src=$2 cmake=$3 cxx=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

"$cmake" --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name 'libncclwatch.so' | head -1)")
[ -n "$libdir" ] || { echo "FAIL: no libncclwatch.so installed"; exit 1; }
soname=$(objdump -p "$libdir/libncclwatch.so" | awk '/SONAME/ {print $2}')
[ "$soname" = "libncclwatch.so.0" ] || { echo "FAIL: SONAME is '$soname'"; exit 1; }
[ -f "$prefix/include/ncclwatch/format.h" ] || { echo "FAIL: format.h not installed"; exit 1; }
[ -x "$prefix/bin/ncclwatch" ] || { echo "FAIL: bin/ncclwatch not installed"; exit 1; }

"$cmake" -S "$src" -B "$tmp/consumer" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; exit 1; }
"$cmake" --build "$tmp/consumer" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
out=$("$tmp/consumer/consumer")
echo "$out"
grep -q "cli=$prefix/bin/ncclwatch" <<<"$out" || { echo "FAIL: ncclwatch::ncclwatch not in prefix"; exit 1; }

# The installed CLI finds the installed library by itself (no NCCLWATCH_LIB).
(cd "$tmp" && env -u NCCLWATCH_LIB "$prefix/bin/ncclwatch" run --dir "$tmp/traces" -- true) \
  >"$tmp/run.log" 2>&1 || true
if grep -q "cannot find libncclwatch.so" "$tmp/run.log"; then
  cat "$tmp/run.log"
  echo "FAIL: installed ncclwatch run does not find the installed library"
  exit 1
fi
echo "install_consumer: ok"
