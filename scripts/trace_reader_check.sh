#!/usr/bin/env bash
# A trace reader check: a 4-rank fake job under `ncclwatch run --trace`, then a real reader of
# that timeline, from a venv scripts/test.sh creates when PyPI is reachable, must read it:
#   hta          HolisticTraceAnalysis agrees with ncclwatch on comm/compute overlap within
#                0.1 pp (scripts/hta_trace_check.py; venv build/hta-venv)
#   tensorboard  TensorBoard's PyTorch profiler plugin (torch-tb-profiler) loads it, one file per
#                rank, and builds its views without an error (scripts/tb_trace_check.py; venv
#                build/tb-venv)
#   hta-kineto   the same HTA check on the --trace export of `ncclwatch report` of a synthetic
#                Kineto trace whose GPU runs 6 ms (2.5 steps) behind the host (3 CPU steps; each GPU-side
#                ProfilerStep#N after its CPU range, the last after the last CPU step; the
#                GPU work of the 2 steps before the first one still running, launched before
#                the trace began): the export must have the 3 steps
# Skips (exit 77) when the venv lacks the reader.
#   trace_reader_check.sh hta|tensorboard NCCLWATCH SHIM_LIB FAKE_LAUNCHER FAKE_TRAIN VENV WORKDIR
#   trace_reader_check.sh hta-kineto NCCLWATCH KINETO_TRACE_WRITER VENV WORKDIR
set -euo pipefail
reader=$1
here=$(cd "$(dirname "$0")" && pwd)
case "$reader" in
  hta) module=hta package=HolisticTraceAnalysis check=hta_trace_check.py ;;
  hta-kineto) module=hta package=HolisticTraceAnalysis check=hta_trace_check.py ;;
  tensorboard) module=torch_tb_profiler package=torch-tb-profiler check=tb_trace_check.py ;;
  *) echo "usage: trace_reader_check.sh hta|tensorboard|hta-kineto ..." >&2; exit 2 ;;
esac
if [ "$reader" = hta-kineto ]; then
  ncclwatch=$2 writer=$3 venv=$4 work=$5
else
  ncclwatch=$2 shim=$3 launcher=$4 train=$5 venv=$6 work=$7
fi
python="$venv/bin/python"
if [ ! -x "$python" ] || ! "$python" -c "import $module" 2>/dev/null; then
  echo "SKIP: no $package in $venv (scripts/test.sh installs it from PyPI)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
if [ "$reader" = hta-kineto ]; then
  # 200 kernels per step (2.4 ms steps): HTA 0.5.0 fails on a trace of under ~128 GPU events.
  "$writer" "$work/kineto.json" --steps 3 --gpu-step-annotations --gpu-lag-us 6000 \
    --compute-kernels 200 --unlaunched-steps 2
  status=0
  "$ncclwatch" report --kineto "$work/kineto.json" --json "$work/report.json" \
    --trace "$work/trace.json" >"$work/log.txt" 2>&1 || status=$?
  # 3: the report warns (an all-reduce hardly overlapped); anything else is a failure.
  if [ "$status" != 0 ] && [ "$status" != 3 ]; then cat "$work/log.txt"; exit 1; fi
  steps=$(grep -o '"name":"ProfilerStep#[0-9]*"' "$work/trace.json" | wc -l)
  if [ "$steps" != 3 ]; then echo "FAIL: the export has $steps ProfilerStep ranges, not 3"; exit 1; fi
  exec "$python" "$here/$check" "$work/trace.json"
fi
NCCLWATCH_LIB="$shim" "$ncclwatch" run --dir "$work" --json "$work/report.json" \
  --trace "$work/trace.json" -- "$launcher" --nproc 4 -- "$train" --steps 8 --fwd-us 3000 \
  --bwd-us 6000 --opt-us 1000 --bucket-mb 25 --nvtx >"$work/log.txt" 2>&1 ||
  { cat "$work/log.txt"; exit 1; }
exec "$python" "$here/$check" "$work/trace.json"
