#!/usr/bin/env bash
# Runs every test: the normal build, then the whole suite under ASan+UBSan, then the ring's
# concurrency tests (label "tsan") under TSan, then each libFuzzer target (Clang) for a bounded
# time. `scripts/test.sh --quick` runs the normal build only.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
quick=0
[ "${1:-}" = "--quick" ] && quick=1

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
# HolisticTraceAnalysis for the `hta` check (it reads ncclwatch's --trace export): a venv in
# build/hta-venv, installed from PyPI once; offline or failing, the check skips with a message.
if [ ! -x build/hta-venv/bin/python ] || ! build/hta-venv/bin/python -c "import hta" 2>/dev/null; then
  echo "== installing HolisticTraceAnalysis into build/hta-venv (for the hta check; bounded to 10 min)"
  (python3 -m venv build/hta-venv &&
    timeout 600 build/hta-venv/bin/pip install -q --disable-pip-version-check \
      "HolisticTraceAnalysis==${NCCLWATCH_HTA_VERSION:-0.5.0}") ||
    echo "   HolisticTraceAnalysis not installed: the hta check will be skipped"
fi
# TensorBoard's PyTorch profiler plugin for the `tensorboard` check (it loads the --trace
# export): a venv in build/tb-venv, same rules.
if [ ! -x build/tb-venv/bin/python ] || ! build/tb-venv/bin/python -c "import torch_tb_profiler" 2>/dev/null; then
  echo "== installing torch-tb-profiler into build/tb-venv (for the tensorboard check; bounded to 10 min)"
  (python3 -m venv build/tb-venv &&
    timeout 600 build/tb-venv/bin/pip install -q --disable-pip-version-check \
      "torch-tb-profiler==${NCCLWATCH_TB_PROFILER_VERSION:-0.4.3}") ||
    echo "   torch-tb-profiler not installed: the tensorboard check will be skipped"
fi
(cd build && ctest --output-on-failure -j "$jobs" -LE bench)

if [ "$quick" = 1 ]; then exit 0; fi

echo "== ASan+UBSan"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DNCCLWATCH_SANITIZE=address \
  -DNCCLWATCH_BENCHMARKS=OFF >/dev/null
cmake --build build-asan -j "$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure -j "$jobs" -LE "bench|nosan")

echo "== TSan (ring concurrency)"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNCCLWATCH_SANITIZE=thread \
  -DNCCLWATCH_BENCHMARKS=OFF >/dev/null
cmake --build build-tsan -j "$jobs" --target ncclwatch_tsan_tests
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ctest --output-on-failure -j "$jobs" -L tsan)

echo "== Fuzzers (Clang, libFuzzer, ${NCCLWATCH_FUZZ_TIME:=60} s each)"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DNCCLWATCH_FUZZ=ON -DNCCLWATCH_BENCHMARKS=OFF -DNCCLWATCH_FUZZ_TIME="$NCCLWATCH_FUZZ_TIME" >/dev/null
cmake --build build-fuzz -j "$jobs" --target fuzz_nccl_log fuzz_nccl_xml trace_reader_fuzz
(cd build-fuzz && ctest --output-on-failure -j "$jobs" -L fuzz)
