#!/usr/bin/env bash
# A trace reader check: a 4-rank fake job under `ncclwatch run --trace`, then a real reader of
# that timeline, from a venv scripts/test.sh creates when PyPI is reachable, must read it:
#   hta          HolisticTraceAnalysis agrees with ncclwatch on comm/compute overlap within
#                0.1 pp (scripts/hta_trace_check.py; venv build/hta-venv)
#   tensorboard  TensorBoard's PyTorch profiler plugin (torch-tb-profiler) loads it, one file per
#                rank, and builds its views without an error (scripts/tb_trace_check.py; venv
#                build/tb-venv)
# Skips (exit 77) when the venv lacks the reader.
#   trace_reader_check.sh hta|tensorboard NCCLWATCH SHIM_LIB FAKE_LAUNCHER FAKE_TRAIN VENV WORKDIR
set -euo pipefail
reader=$1 ncclwatch=$2 shim=$3 launcher=$4 train=$5 venv=$6 work=$7
here=$(cd "$(dirname "$0")" && pwd)
case "$reader" in
  hta) module=hta package=HolisticTraceAnalysis check=hta_trace_check.py ;;
  tensorboard) module=torch_tb_profiler package=torch-tb-profiler check=tb_trace_check.py ;;
  *) echo "usage: trace_reader_check.sh hta|tensorboard ..." >&2; exit 2 ;;
esac
python="$venv/bin/python"
if [ ! -x "$python" ] || ! "$python" -c "import $module" 2>/dev/null; then
  echo "SKIP: no $package in $venv (scripts/test.sh installs it from PyPI)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
NCCLWATCH_LIB="$shim" "$ncclwatch" run --dir "$work" --json "$work/report.json" \
  --trace "$work/trace.json" -- "$launcher" --nproc 4 -- "$train" --steps 8 --fwd-us 3000 \
  --bwd-us 6000 --opt-us 1000 --bucket-mb 25 --nvtx >"$work/log.txt" 2>&1 ||
  { cat "$work/log.txt"; exit 1; }
exec "$python" "$here/$check" "$work/trace.json"
