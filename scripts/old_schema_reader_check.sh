#!/usr/bin/env bash
# The old-schema check: PyTorch 1.8-style traces (the 2021 Kineto schema: capitalised categories,
# "external id", no distributedInfo), written by tests/collector/kineto/old_schema_writer.cpp, read
# by `ncclwatch report` and by TensorBoard's profiler plugin (torch-tb-profiler), which agree on
# each rank's overlapped communication and compute per step (scripts/tb_old_schema_check.py).
# Skips (exit 77) when the venv lacks the plugin.
#   old_schema_reader_check.sh NCCLWATCH TRACE_WRITER VENV WORKDIR
set -euo pipefail
ncclwatch=$1 writer=$2 venv=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
python="$venv/bin/python"
if [ ! -x "$python" ] || ! "$python" -c "import torch_tb_profiler" 2>/dev/null; then
  echo "SKIP: no torch-tb-profiler in $venv (scripts/test.sh installs it from PyPI)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work/traces"
"$writer" "$work/traces" 4 3 250
rc=0
"$ncclwatch" report "$work/traces" --json "$work/report.json" >"$work/report.txt" 2>&1 || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then cat "$work/report.txt"; exit 1; fi
exec "$python" "$here/tb_old_schema_check.py" "$work/report.json" \
  "$work"/traces/worker0.pt.trace.json "$work"/traces/worker1.pt.trace.json \
  "$work"/traces/worker2.pt.trace.json "$work"/traces/worker3.pt.trace.json
