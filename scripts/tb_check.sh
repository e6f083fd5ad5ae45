#!/usr/bin/env bash
# The `tensorboard` check: a 4-rank fake job under `ncclwatch run --trace`, then TensorBoard's
# PyTorch profiler plugin (torch-tb-profiler) loads the exported timeline, one file per rank, and
# must build its views without an error (scripts/tb_trace_check.py). Skips (exit 77) when the
# venv with the plugin is missing: scripts/test.sh creates it (build/tb-venv) when PyPI is
# reachable.
#   tb_check.sh NCCLWATCH SHIM_LIB FAKE_LAUNCHER FAKE_TRAIN VENV WORKDIR
set -euo pipefail
ncclwatch=$1 shim=$2 launcher=$3 train=$4 venv=$5 work=$6
here=$(cd "$(dirname "$0")" && pwd)
python="$venv/bin/python"
if [ ! -x "$python" ] || ! "$python" -c "import torch_tb_profiler" 2>/dev/null; then
  echo "SKIP: no torch-tb-profiler in $venv (scripts/test.sh installs it from PyPI)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
NCCLWATCH_LIB="$shim" "$ncclwatch" run --dir "$work" --json "$work/report.json" \
  --trace "$work/trace.json" -- "$launcher" --nproc 4 -- "$train" --steps 8 --fwd-us 3000 \
  --bwd-us 6000 --opt-us 1000 --bucket-mb 25 --nvtx >"$work/log.txt" 2>&1 ||
  { cat "$work/log.txt"; exit 1; }
exec "$python" "$here/tb_trace_check.py" "$work/trace.json"
