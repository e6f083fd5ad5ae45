#!/usr/bin/env bash
# gpu-check.sh: ncclwatch on a real GPU, end to end, in under 5 minutes, no input.
#
# Needs: one NVIDIA GPU, its driver, CUDA (headers at /usr/local/cuda or $CUDA_HOME, for the
# build), Python with PyTorch built for CUDA, torchrun, and the build dependencies of
# scripts/setup.sh. It:
#  1. builds libncclwatch.so and the ncclwatch CLI (build-gpucheck/);
#  2. runs a small PyTorch DDP job (torchrun --nproc_per_node=1; also 2 ranks on the one GPU
#     when NCCL >= 2.30 allows it with NCCL_MULTI_RANK_GPU_ENABLE=1) three ways: without the
#     shim, under the shim in full mode (CUPTI) and in lite mode (CUDA events);
#  3. checks each trace with `ncclwatch dump`: NCCL calls recorded; full mode: NCCL kernels
#     tied to their calls, compute kernels, NVTX step ranges, all with ordered, plausible
#     timestamps on the host clock; lite mode: a GPU interval for every collective;
#  4. prints the step-time overhead of full and lite mode against no shim (targets: <= 1 % full,
#     <= 0.3 % lite), and a block to paste into the README with the date and GPU.
#  5. runs the front door too (`ncclwatch run --mode full -- torchrun ...`) and writes the report
#     of each run (text, JSON, HTML) where the results go;
#  6. always on (docs/always-on.md): the step-time overhead of the always tier alone (plain
#     LD_PRELOAD, NCCLWATCH_CAPTURE=off: step summaries, no detail on disk; NCCLWATCH_SUMMARY_GPU
#     auto: CUPTI measures the first steps, then, on the launch-bound batch, is switched off),
#     which must stay under GPUCHECK_ALWAYS_MAX_PCT (default 8 %; it was +33 % with CUPTI on
#     throughout) on the launch-bound batch; and a long job under the defaults where `ncclwatch
#     capture` asks for a window mid-run: step summaries for every step, detail only in the
#     first-50-steps window and the one asked for, CUPTI on only for those windows (switched on
#     ahead of the one asked for, with GPU figures for its steps) and the summaries outside them
#     host-only (scripts/gpu_always_check.py --gpu=auto-off). GPUCHECK_ALWAYS=0 skips both.
# The full and lite runs set NCCLWATCH_DETAIL=all (detail for the whole run, as `ncclwatch run`
# does); GPUCHECK_CONFIGS (default "none full lite always") picks the timed configurations.
# NCCLWATCH_PREBUILT=DIR skips the build and uses DIR/lib/libncclwatch.so and DIR/tools/ncclwatch
# (a build tree's layout), with DIR/deps on the CLI's library path (for a machine that lacks the
# build dependencies). Results (log, reports, traces) go to $NCCLWATCH_GPUCHECK_OUT when set.
# Exit status: 0 when every check passed, 1 otherwise (2 when the machine lacks something).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$(pwd)
build=$root/build-gpucheck
work=$(mktemp -d /tmp/ncclwatch-gpucheck.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

command -v nvidia-smi >/dev/null || { echo "gpu-check: no nvidia-smi: not a GPU machine"; exit 2; }
command -v torchrun >/dev/null || { echo "gpu-check: no torchrun (PyTorch) on PATH"; exit 2; }
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
  { echo "gpu-check: PyTorch sees no CUDA device"; exit 2; }

results=${NCCLWATCH_GPUCHECK_OUT:-}
[ -n "$results" ] && mkdir -p "$results"
if [ -n "${NCCLWATCH_PREBUILT:-}" ]; then
  echo "== prebuilt: $NCCLWATCH_PREBUILT"
  shim=$NCCLWATCH_PREBUILT/lib/libncclwatch.so
  cli_bin=$NCCLWATCH_PREBUILT/tools/ncclwatch
  cli() { LD_LIBRARY_PATH="$NCCLWATCH_PREBUILT/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$cli_bin" "$@"; }
else
  echo "== build"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNCCLWATCH_BENCHMARKS=OFF >"$work/cmake.log" 2>&1 ||
    { tail -20 "$work/cmake.log"; exit 1; }
  cmake --build "$build" -j "$(nproc)" --target ncclwatch_shim ncclwatch >"$work/build.log" 2>&1 ||
    { tail -30 "$work/build.log"; exit 1; }
  shim=$build/lib/libncclwatch.so
  cli_bin=$build/tools/ncclwatch
  cli() { "$cli_bin" "$@"; }
fi
[ -f "$shim" ] && cli --version >/dev/null || { echo "gpu-check: no usable shim/CLI ($shim, $cli_bin)"; exit 2; }

# A small DDP job: an MLP big enough for several gradient buckets, NVTX "step" ranges,
# GPUCHECK_WARMUP (10) warm-up steps then GPUCHECK_STEPS (200) timed steps of GPUCHECK_BATCH (256) rows, each ended by
# a synchronize as a training loop that logs its loss is. Rank 0 prints the median step time.
# Batch 256 is launch-bound (~80 kernels of a few us per step: the worst case for a tracer's
# per-kernel cost); 4096 is a GPU-bound step.
cat >"$work/train_ddp.py" <<'PY'
import os, statistics, time, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count())
model = torch.nn.Sequential(*[m for _ in range(8) for m in (torch.nn.Linear(2048, 2048), torch.nn.ReLU())]).cuda()
ddp = DDP(model, bucket_cap_mb=8)
opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
x = torch.randn(int(os.environ.get("GPUCHECK_BATCH", "256")), 2048, device="cuda")
# GPUCHECK_A2A=1: an all-to-all per step too. With one rank NCCL completes all-reduces without
# a kernel; its send/receive to itself runs one, so the NCCL kernel path is exercised.
a2a = os.environ.get("GPUCHECK_A2A") == "1"
a2a_in = torch.randn(1 << 18, device="cuda")
a2a_out = torch.empty_like(a2a_in)
def step():
    with torch.cuda.nvtx.range("step"):
        opt.zero_grad(set_to_none=True)
        ddp(x).square().mean().backward()
        if a2a:
            dist.all_to_all_single(a2a_out, a2a_in)
        opt.step()
    torch.cuda.synchronize()
for _ in range(int(os.environ.get("GPUCHECK_WARMUP", "10"))):
    step()
times = []
for _ in range(int(os.environ.get("GPUCHECK_STEPS", "200"))):
    t0 = time.perf_counter()
    step()
    times.append(time.perf_counter() - t0)
if rank == 0:
    print(f"STEP_MS {statistics.median(times) * 1000:.4f}", flush=True)
dist.destroy_process_group()
PY

# run_job NAME NPROC [ENV...]: runs the job, leaves traces in $work/NAME and the step time (ms)
# in $work/NAME.ms ("nan" when it failed). RUN_PREFIX (an array) goes before torchrun.
RUN_PREFIX=()
run_job() {
  local name=$1 nproc=$2
  shift 2
  mkdir -p "$work/$name"
  echo nan >"$work/$name.ms"
  env "$@" NCCLWATCH_DIR="$work/$name" NCCLWATCH_JOB="gpucheck-$name" \
    timeout 180 "${RUN_PREFIX[@]}" torchrun --standalone --nproc_per_node="$nproc" "$work/train_ddp.py" \
    >"$work/$name.out" 2>"$work/$name.err"
  local rc=$?
  grep -h '^ncclwatch:' "$work/$name.err" | sort | uniq -c | head -20 | sed "s/^/  [$name] /"
  [ -n "$results" ] && cp "$work/$name.out" "$work/$name.err" "$results/" 2>/dev/null
  if [ $rc -ne 0 ]; then
    fail "$name: job exited $rc"
    tail -15 "$work/$name.err"
    return 1
  fi
  awk '/^STEP_MS/ {print $2}' "$work/$name.out" | head -1 >"$work/$name.ms"
}

# NVTX ranges reach CUPTI only through NVTX's injection hook, which must name the same libcupti
# the shim uses: PyTorch's own (pip package nvidia-cuda-cupti) when it has one.
cupti=$(python3 - <<'PY' 2>/dev/null
# pip's CUDA 12 layout: nvidia/cuda_cupti/lib; CUDA 13: nvidia/cu13/lib (beside libcudart).
import glob, os, nvidia
hits = sorted(h for d in nvidia.__path__ for h in glob.glob(os.path.join(d, "**", "libcupti.so*"), recursive=True))
print(hits[0] if hits else "")
PY
)
cupti_env=()
if [ -n "$cupti" ]; then
  cupti_env=(NCCLWATCH_CUPTI="$cupti" NVTX_INJECTION64_PATH="$cupti")
  echo "== using PyTorch's CUPTI: $cupti"
fi

# check_traces NAME MODE: every trace of the job checked with `ncclwatch dump` and
# scripts/gpu_trace_check.py, then the job's report (text, JSON, HTML) kept with the results.
check_traces() {
  local name=$1 mode=$2 n=0
  for trace in "$work/$name"/*.trace; do
    [ -e "$trace" ] || { fail "$name: no trace file"; return; }
    n=$((n + 1))
    cli dump "$trace" --header >"$trace.jsonl" 2>"$trace.dump.err" || { fail "$name: dump failed"; cat "$trace.dump.err"; continue; }
    python3 "$root/scripts/gpu_trace_check.py" "$trace.jsonl" "$mode" "$name" || failures=$((failures + 1))
  done
  cli report "$work/$name" --json "$work/$name.report.json" --html "$work/$name.report.html" \
    >"$work/$name.report.txt" 2>"$work/$name.report.err"
  local rc=$?
  # 0: nothing at warning level; 3: findings at warning level (README, exit codes).
  [ $rc -eq 0 ] || [ $rc -eq 3 ] || { fail "$name: report exited $rc"; cat "$work/$name.report.err"; }
  sed "s/^/  [$name report] /" "$work/$name.report.txt" | head -40
  if [ -n "$results" ]; then
    cp "$work/$name".report.* "$results/" 2>/dev/null
    tar -C "$work" -czf "$results/$name-traces.tar.gz" "$name" 2>/dev/null
  fi
}

rounds=${GPUCHECK_ROUNDS:-3}
configs=" ${GPUCHECK_CONFIGS:-none full lite always} "
has() { [[ $configs == *" $1 "* ]]; }
if [ "${GPUCHECK_QUICK:-0}" = 1 ]; then
  # The traces of one full-mode run and the front door's, no overhead figures.
  echo "== quick: one full-mode run (1 rank, batch 256, with an all-to-all per step)"
  run_job full-256-1 1 GPUCHECK_BATCH=256 GPUCHECK_A2A=1 LD_PRELOAD="$shim" NCCLWATCH_MODE=full NCCLWATCH_DETAIL=all "${cupti_env[@]}"
  check_traces full-256-1 full
else
  echo "== runs (1 rank): no shim, full mode, lite mode; two sizes, interleaved, $rounds rounds"
  for round in $(seq 1 "$rounds"); do
    for batch in 256 4096; do
      has none && run_job "none-$batch-$round" 1 GPUCHECK_BATCH=$batch
      has full && run_job "full-$batch-$round" 1 GPUCHECK_BATCH=$batch LD_PRELOAD="$shim" NCCLWATCH_MODE=full NCCLWATCH_DETAIL=all "${cupti_env[@]}"
      has lite && run_job "lite-$batch-$round" 1 GPUCHECK_BATCH=$batch LD_PRELOAD="$shim" NCCLWATCH_MODE=lite NCCLWATCH_DETAIL=all
      # Warm-up of ~6 s: the auto decision of NCCLWATCH_SUMMARY_GPU is taken once the steps are
      # known (up to 3 s: the wait for NVTX step ranges) and 25 are summarized; the timed steps
      # come after it, as every step of a long job does.
      has always && run_job "always-$batch-$round" 1 GPUCHECK_BATCH=$batch GPUCHECK_WARMUP=$([ "$batch" = 256 ] && echo 2000 || echo 300) LD_PRELOAD="$shim" NCCLWATCH_CAPTURE=off "${cupti_env[@]}"
    done
  done
  has full && check_traces full-256-1 full
  has lite && check_traces lite-256-1 lite
  has full && check_traces full-4096-1 full
  if has always; then
    for trace in "$work/always-256-1"/*.trace; do
      cli dump "$trace" --header >"$trace.jsonl" 2>/dev/null || { fail "always: dump failed"; continue; }
      python3 "$root/scripts/gpu_always_check.py" "$trace.jsonl" always-256 200 --gpu=auto-off || failures=$((failures + 1))
    done
  fi
fi

if [ "${GPUCHECK_ALWAYS:-1}" = 1 ]; then
  # A long job under the defaults (detail for the first 50 steps), a window asked for mid-run.
  echo "== always on: 3000 launch-bound steps under the defaults, ncclwatch capture --steps 20 mid-run"
  mkdir -p "$work/capture"
  GPUCHECK_STEPS=3000 run_job capture 1 GPUCHECK_STEPS=3000 LD_PRELOAD="$shim" "${cupti_env[@]}" &
  job=$!
  for _ in $(seq 1 120); do
    compgen -G "$work/capture/*.trace" >/dev/null && break
    sleep 0.5
  done
  sleep 4  # past the first 50 steps (about 3 ms each) and the warm-up
  t_ask=$(date +%s.%N)
  cli capture --job gpucheck-capture --dir "$work/capture" --steps 20 2>&1 | sed 's/^/  [capture] /'
  wait $job
  echo "  [capture] asked at +$(python3 -c "import sys; print(f'{float(sys.argv[1]) - float(sys.argv[2]):.1f}')" "$t_ask" "$(stat -c %Y "$work/capture.out")") s before the job ended"
  for trace in "$work/capture"/*.trace; do
    [ -e "$trace" ] || { fail "capture: no trace file"; break; }
    cli dump "$trace" --header >"$trace.jsonl" 2>/dev/null || { fail "capture: dump failed"; continue; }
    python3 "$root/scripts/gpu_always_check.py" "$trace.jsonl" capture 3000 schedule on-demand --gpu=auto-off || failures=$((failures + 1))
  done
  cli report "$work/capture" --json "$work/capture.report.json" >"$work/capture.report.txt" 2>&1
  sed "s/^/  [capture report] /" "$work/capture.report.txt" | head -40
  if [ -n "$results" ]; then
    cp "$work"/capture.report.* "$results/" 2>/dev/null
    tar -C "$work" -czf "$results/capture-traces.tar.gz" capture 2>/dev/null
  fi
fi

echo "== the front door: ncclwatch run --mode full -- torchrun ... (with an all-to-all per step)"
RUN_PREFIX=("$cli_bin" run --mode full --no-progress --dir "$work/run" --)
if [ -n "${NCCLWATCH_PREBUILT:-}" ]; then
  RUN_PREFIX=(env LD_LIBRARY_PATH="$NCCLWATCH_PREBUILT/deps" "${RUN_PREFIX[@]}")
fi
GPUCHECK_STEPS=60 run_job run 1 GPUCHECK_STEPS=60 GPUCHECK_A2A=1 "${cupti_env[@]}" && check_traces run full
RUN_PREFIX=()

nccl_version=$(python3 -c 'import torch; print(".".join(map(str, torch.cuda.nccl.version())))' 2>/dev/null || echo unknown)
# NCCL refuses two ranks of one communicator on one GPU ("Duplicate GPU detected") unless a
# version that allows it is told to; tried either way, reported, not required.
echo "== 2 ranks on one GPU (NCCL $nccl_version, NCCL_MULTI_RANK_GPU_ENABLE=1): tried, not required"
before=$failures
if [ "${GPUCHECK_TRY_2:-1}" != 1 ]; then
  echo "  [full2] skipped (GPUCHECK_TRY_2=0)"
elif run_job full2 2 LD_PRELOAD="$shim" NCCLWATCH_MODE=full NCCLWATCH_DETAIL=all NCCL_MULTI_RANK_GPU_ENABLE=1 GPUCHECK_STEPS=60 "${cupti_env[@]}"; then
  check_traces full2 full
else
  grep -m1 -i 'duplicate gpu\|invalid usage' "$work/full2.err" | sed 's/^/  [full2] /'
  failures=$before
  echo "  [full2] not possible on this machine (not counted as a failure)"
fi

# median_ms CONFIG BATCH: the median over the rounds of each run's median step time.
median_ms() {
  cat "$work/$1-$2-"[0-9].ms | python3 -c 'import sys, statistics; v=[float(x) for x in sys.stdin.read().split() if x != "nan"]; print(f"{statistics.median(v):.4f}" if v else "nan")'
}
overhead() { python3 -c "import sys; b=float(sys.argv[1]); print(f'{(float(sys.argv[2])-b)/b*100:+.2f} %')" "$1" "$2" 2>/dev/null || echo "n/a"; }
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
torch_version=$(python3 -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)')
echo
echo "== result (paste into README)"
echo "gpu-check.sh on $(date -u +%Y-%m-%d): $gpu; PyTorch $torch_version; NCCL $nccl_version"
echo "  median step time over $rounds interleaved rounds (each run's median of 200 steps; 1 rank):"
for batch in 256 4096; do
  [ "${GPUCHECK_QUICK:-0}" = 1 ] && break
  base=$(median_ms none $batch)
  echo "  batch $batch: no shim $base ms (runs: $(cat "$work/none-$batch-"[0-9].ms | tr '\n' ' '))"
  for config in full lite always; do
    has $config || continue
    label=$(case $config in full) echo "full mode (CUPTI):      " ;; lite) echo "lite mode (CUDA events):" ;; always) echo "always tier (defaults): " ;; esac)
    m=$(median_ms $config $batch)
    echo "    $label $m ms, overhead $(overhead "$base" "$m") (runs: $(cat "$work/$config-$batch-"[0-9].ms | tr '\n' ' '))"
  done
done
# The always tier on the launch-bound batch: CUPTI off outside windows (NCCLWATCH_SUMMARY_GPU=auto)
# must leave the step time within GPUCHECK_ALWAYS_MAX_PCT of no shim.
if [ "${GPUCHECK_QUICK:-0}" != 1 ] && has always && has none; then
  base=$(median_ms none 256)
  m=$(median_ms always 256)
  if python3 -c "import sys; b, m, lim = map(float, sys.argv[1:]); sys.exit(0 if (m - b) / b * 100 <= lim else 1)" \
      "$base" "$m" "${GPUCHECK_ALWAYS_MAX_PCT:-8}" 2>/dev/null; then
    echo "  always tier, launch-bound batch: $(overhead "$base" "$m") (limit ${GPUCHECK_ALWAYS_MAX_PCT:-8} %): passed"
  else
    fail "always tier, launch-bound batch: $(overhead "$base" "$m") over no shim (limit ${GPUCHECK_ALWAYS_MAX_PCT:-8} %)"
  fi
fi
echo "  checks: $([ $failures -eq 0 ] && echo passed || echo "$failures FAILED")"
[ $failures -eq 0 ]
