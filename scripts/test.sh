#!/usr/bin/env bash
# Runs every test: the normal build, then the product alone as a packager builds it (tests off),
# then the whole suite under ASan+UBSan, then the ring's concurrency tests (label "tsan") under
# TSan, then each libFuzzer target (Clang) for a bounded time. `scripts/test.sh --quick` runs the
# normal build only.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
quick=0
[ "${1:-}" = "--quick" ] && quick=1

# Disk: the four build trees take several GB (the normal one ~2.6 GB; debug info is most of it)
# and some machines have little to spare (a CI run once failed on a full disk halfway through the
# tests). The sanitizer and fuzzer trees compress their debug info (-gz); a finished stage's
# objects and static libraries (needed only to rebuild, never to run a test) are removed when
# less than NCCLWATCH_TEST_MIN_FREE_GIB (default 8) GiB are left; the throwaway product-alone
# tree always is.
free_gib() { df --output=avail -B1G . | tail -1 | tr -d ' '; }
trim_stage() {
  local dir=$1 free
  free=$(free_gib)
  if [ "$free" -lt "${NCCLWATCH_TEST_MIN_FREE_GIB:-8}" ]; then
    echo "== only $free GiB free: removing $dir's objects (a later build there rebuilds them)"
    find "$dir" \( -name '*.o' -o -name '*.a' \) -type f -delete
  fi
}
compressed_debug=(-DCMAKE_C_FLAGS=-gz -DCMAKE_CXX_FLAGS=-gz -DCMAKE_EXE_LINKER_FLAGS=-gz
  -DCMAKE_SHARED_LINKER_FLAGS=-gz -DCMAKE_MODULE_LINKER_FLAGS=-gz)
echo "== $(free_gib) GiB free on $(df --output=target . | tail -1)"

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
# The trace reader checks (`hta`, `tensorboard`: scripts/trace_reader_check.sh) read ncclwatch's
# --trace export with the real readers, each from a venv under build/ installed from PyPI once;
# offline or failing, the check skips with a message.
#   reader_venv VENV MODULE PACKAGE==VERSION CHECK
reader_venv() {
  local venv=$1 module=$2 package=$3 check=$4
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import $module" 2>/dev/null; then return; fi
  echo "== installing $package into $venv (for the $check check; bounded to 10 min)"
  (python3 -m venv "$venv" &&
    timeout 600 "$venv/bin/pip" install -q --disable-pip-version-check "$package") ||
    echo "   $package not installed: the $check check will be skipped"
}
reader_venv build/hta-venv hta "HolisticTraceAnalysis==${NCCLWATCH_HTA_VERSION:-0.5.0}" hta
reader_venv build/tb-venv torch_tb_profiler \
  "torch-tb-profiler==${NCCLWATCH_TB_PROFILER_VERSION:-0.4.3}" tensorboard
# py-spy for the stacks test (tests/e2e/stacks_test.cpp: a real Python rank stuck in a known
# function): a PyPI wheel, installed into build/pyspy-venv once; offline or failing, that test
# skips with a message (the no-py-spy path is tested either way).
if [ ! -x build/pyspy-venv/bin/py-spy ]; then
  echo "== installing py-spy into build/pyspy-venv (for the stacks test; bounded to 5 min)"
  (python3 -m venv build/pyspy-venv &&
    timeout 300 build/pyspy-venv/bin/pip install -q --disable-pip-version-check \
      "py-spy==${NCCLWATCH_PY_SPY_VERSION:-0.4.3}") ||
    echo "   py-spy not installed: the stacks test will be skipped"
fi
(cd build && ctest --output-on-failure -j "$jobs" -LE bench)

if [ "$quick" = 1 ]; then exit 0; fi
trim_stage build

echo "== Product alone (NCCLWATCH_BUILD_TESTS=OFF: no GoogleTest or benchmarks)"
# Only that it configures, builds and runs (the CLI, and `ncclwatch demo` on the stand-ins it
# builds for the demo alone): -O0 without debug info keeps the stage short.
cmake -S . -B build-notests -G Ninja -DNCCLWATCH_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DCMAKE_C_FLAGS_DEBUG=-O0 >/dev/null
cmake --build build-notests -j "$jobs"
build-notests/tools/ncclwatch --help >/dev/null
demo_out=$(mktemp -d)
build-notests/tools/ncclwatch demo healthy --html "$demo_out/page.html" >/dev/null
rm -rf "$demo_out" build-notests

echo "== ASan+UBSan"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DNCCLWATCH_SANITIZE=address \
  -DNCCLWATCH_BENCHMARKS=OFF "${compressed_debug[@]}" >/dev/null
cmake --build build-asan -j "$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure -j "$jobs" -LE "bench|nosan")
trim_stage build-asan

echo "== TSan (ring, worker loop, analyses on threads)"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNCCLWATCH_SANITIZE=thread \
  -DNCCLWATCH_BENCHMARKS=OFF "${compressed_debug[@]}" >/dev/null
cmake --build build-tsan -j "$jobs" --target ncclwatch_tsan_tests
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ctest --output-on-failure -j "$jobs" -L tsan)
trim_stage build-tsan

echo "== Fuzzers (Clang, libFuzzer, ${NCCLWATCH_FUZZ_TIME:=60} s each)"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DNCCLWATCH_FUZZ=ON -DNCCLWATCH_BENCHMARKS=OFF -DNCCLWATCH_FUZZ_TIME="$NCCLWATCH_FUZZ_TIME" \
  "${compressed_debug[@]}" >/dev/null
cmake --build build-fuzz -j "$jobs" --target fuzz_nccl_log fuzz_nccl_xml trace_reader_fuzz node_rank_fuzz
(cd build-fuzz && ctest --output-on-failure -j "$jobs" -L fuzz)
