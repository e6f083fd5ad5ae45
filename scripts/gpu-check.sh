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

echo "== build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNCCLWATCH_BENCHMARKS=OFF >"$work/cmake.log" 2>&1 ||
  { tail -20 "$work/cmake.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" --target ncclwatch_shim ncclwatch >"$work/build.log" 2>&1 ||
  { tail -30 "$work/build.log"; exit 1; }
shim=$build/lib/libncclwatch.so
cli=$build/tools/ncclwatch

# A small DDP job: an MLP big enough for several gradient buckets, NVTX "step" ranges, 10
# warm-up steps then 60 timed steps. Rank 0 prints the mean step time.
cat >"$work/train_ddp.py" <<'PY'
import os, time, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count())
model = torch.nn.Sequential(*[m for _ in range(8) for m in (torch.nn.Linear(2048, 2048), torch.nn.ReLU())]).cuda()
ddp = DDP(model, bucket_cap_mb=8)
opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
x = torch.randn(256, 2048, device="cuda")
def step():
    with torch.cuda.nvtx.range("step"):
        opt.zero_grad(set_to_none=True)
        ddp(x).square().mean().backward()
        opt.step()
for _ in range(10):
    step()
torch.cuda.synchronize()
t0 = time.perf_counter()
n = 60
for _ in range(n):
    step()
torch.cuda.synchronize()
ms = (time.perf_counter() - t0) * 1000 / n
if rank == 0:
    print(f"STEP_MS {ms:.3f}", flush=True)
dist.destroy_process_group()
PY

# run_job NAME NPROC [ENV...]: runs the job, leaves traces in $work/NAME and the step time (ms)
# in $work/NAME.ms ("nan" when it failed).
run_job() {
  local name=$1 nproc=$2
  shift 2
  mkdir -p "$work/$name"
  echo nan >"$work/$name.ms"
  env "$@" NCCLWATCH_DIR="$work/$name" NCCLWATCH_JOB="gpucheck-$name" \
    timeout 120 torchrun --standalone --nproc_per_node="$nproc" "$work/train_ddp.py" \
    >"$work/$name.out" 2>"$work/$name.err"
  local rc=$?
  grep -h '^ncclwatch:' "$work/$name.err" | sort | uniq -c | sed "s/^/  [$name] /"
  if [ $rc -ne 0 ]; then
    fail "$name: job exited $rc"
    tail -15 "$work/$name.err"
    return
  fi
  awk '/^STEP_MS/ {print $2}' "$work/$name.out" | head -1 >"$work/$name.ms"
}

# NVTX ranges reach CUPTI only through NVTX's injection hook, which must name the same libcupti
# the shim uses: PyTorch's own (pip package nvidia-cuda-cupti) when it has one.
cupti=$(python3 - <<'PY' 2>/dev/null
import glob, os
try:
    import nvidia.cuda_cupti as m
    hits = sorted(glob.glob(os.path.join(list(m.__path__)[0], "lib", "libcupti.so*")))
    print(hits[0] if hits else "")
except Exception:
    print("")
PY
)
cupti_env=()
if [ -n "$cupti" ]; then
  cupti_env=(NCCLWATCH_CUPTI="$cupti" NVTX_INJECTION64_PATH="$cupti")
  echo "== using PyTorch's CUPTI: $cupti"
fi

# check_traces NAME MODE: every trace of the job checked with `ncclwatch dump` + a small parser.
check_traces() {
  local name=$1 mode=$2 n=0
  for trace in "$work/$name"/*.trace; do
    [ -e "$trace" ] || { fail "$name: no trace file"; return; }
    n=$((n + 1))
    "$cli" dump "$trace" --header >"$trace.jsonl" 2>"$trace.dump.err" || { fail "$name: dump failed"; cat "$trace.dump.err"; continue; }
    python3 - "$trace.jsonl" "$mode" "$name" <<'PY' || failures=$((failures + 1))
import json, sys
path, mode, name = sys.argv[1], sys.argv[2], sys.argv[3]
recs = [json.loads(l) for l in open(path)]
hdr = recs[0]
kinds = {}
for r in recs[1:]:
    kinds.setdefault(r.get("kind"), []).append(r)
calls = kinds.get("call", [])
problems = []
def need(cond, msg):
    if not cond:
        problems.append(msg)
need(hdr.get("mode") == {"full": 1, "lite": 2}[mode], f"header mode {hdr.get('mode')} for {mode}")
need(len(calls) >= 70, f"only {len(calls)} NCCL calls")
for c in calls:
    need(c["t_enter_ns"] <= c["t_exit_ns"], f"call exits before it enters: {c}")
t0 = min(c["t_enter_ns"] for c in calls) if calls else 0
t1 = max(c["t_exit_ns"] for c in calls) if calls else 0
plausible = lambda t: t0 - 120e9 <= t <= t1 + 120e9  # same clock, within the run
if mode == "full":
    kernels = [k for k in kinds.get("kernel", []) if k["activity"] == "kernel"]
    nccl = {k["correlation"]: k for k in kernels if k["nccl"]}
    compute = [k for k in kernels if not k["nccl"]]
    need(len(nccl) >= len(calls), f"{len(nccl)} NCCL kernels for {len(calls)} calls")
    need(len(compute) >= 60 * 10, f"only {len(compute)} compute kernels")
    for k in kernels:
        need(0 < k["start_ns"] <= k["end_ns"] and plausible(k["start_ns"]), f"implausible kernel {k['name']} {k['start_ns']} {k['end_ns']}")
    by_key = {(c["comm_id"], c["seq"]): c for c in calls}
    tied = 0
    for l in kinds.get("kernel_link", []):
        k = nccl.get(l["correlation"])
        c = by_key.get((l["comm_id"], l["seq"]))
        if k is None or c is None:
            continue
        tied += 1
        # The launch happens inside the call; the kernel cannot start before it (1 ms slack for
        # CUPTI's interpolation onto the host clock).
        need(k["start_ns"] >= c["t_enter_ns"] - 1e6, f"kernel starts before its call: {k['start_ns']} < {c['t_enter_ns']}")
    need(tied >= len(calls) * 0.95, f"only {tied} of {len(calls)} calls tied to their kernel")
    steps = [r for r in kinds.get("nvtx", [])]
    # Reported, not required: NVTX reaches CUPTI only with NVTX_INJECTION64_PATH (see above).
    for r in steps:
        need(r["start_ns"] <= r["end_ns"] and plausible(r["start_ns"]), f"implausible NVTX range {r}")
    print(f"  [{name}] {len(calls)} calls, {len(nccl)} NCCL kernels ({tied} tied), {len(compute)} compute kernels, {len(steps)} NVTX ranges")
else:
    coll = kinds.get("coll_gpu", [])
    need(len(coll) >= len(calls) * 0.95, f"{len(coll)} GPU intervals for {len(calls)} calls")
    for g in coll:
        need(0 < g["start_ns"] <= g["end_ns"] and plausible(g["start_ns"]), f"implausible interval {g}")
    need(not kinds.get("kernel"), "kernel records in lite mode")
    print(f"  [{name}] {len(calls)} calls, {len(coll)} CUDA-event intervals")
for p in problems[:10]:
    print(f"FAIL: {name}: {p}")
sys.exit(1 if problems else 0)
PY
  done
}

echo "== runs (1 rank)"
run_job none 1
run_job full 1 LD_PRELOAD="$shim" NCCLWATCH_MODE=full "${cupti_env[@]}"
run_job lite 1 LD_PRELOAD="$shim" NCCLWATCH_MODE=lite
run_job none2 1  # again, to see the run-to-run noise the overheads sit in
base=$(cat "$work/none.ms") full=$(cat "$work/full.ms") lite=$(cat "$work/lite.ms") base2=$(cat "$work/none2.ms")
check_traces full full
check_traces lite lite

nccl_version=$(python3 -c 'import torch; print(".".join(map(str, torch.cuda.nccl.version())))' 2>/dev/null || echo unknown)
if python3 -c 'import torch, sys; v = torch.cuda.nccl.version(); sys.exit(0 if tuple(v) >= (2, 30) else 1)' 2>/dev/null; then
  echo "== 2 ranks on one GPU (NCCL $nccl_version, NCCL_MULTI_RANK_GPU_ENABLE=1)"
  run_job full2 2 LD_PRELOAD="$shim" NCCLWATCH_MODE=full NCCL_MULTI_RANK_GPU_ENABLE=1 "${cupti_env[@]}"
  check_traces full2 full
else
  echo "== 2 ranks on one GPU: skipped (NCCL $nccl_version < 2.30)"
fi

overhead() { python3 -c "import sys; b=(float(sys.argv[1])+float(sys.argv[3]))/2; print(f'{(float(sys.argv[2])-b)/b*100:+.2f} %')" "$base" "$1" "$base2" 2>/dev/null || echo "n/a"; }
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
torch_version=$(python3 -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)')
echo
echo "== result (paste into README)"
echo "gpu-check.sh on $(date -u +%Y-%m-%d): $gpu; PyTorch $torch_version; NCCL $nccl_version"
echo "  step time without shim: $base ms / $base2 ms (two runs)"
echo "  full mode (CUPTI):      $full ms, overhead $(overhead "$full") (target <= 1 %)"
echo "  lite mode (CUDA events): $lite ms, overhead $(overhead "$lite") (target <= 0.3 %)"
echo "  checks: $([ $failures -eq 0 ] && echo passed || echo "$failures FAILED")"
[ $failures -eq 0 ]
