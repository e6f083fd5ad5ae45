#!/usr/bin/env python3
"""TensorBoard's PyTorch profiler plugin and `ncclwatch report` on the same old-schema traces.

  tb_old_schema_check.py REPORT.json RANK0_TRACE RANK1_TRACE ...

The traces are in the 2021 Kineto schema (PyTorch 1.8-1.9), which the plugin was written for;
the report is ncclwatch's JSON of the same files (ranks numbered in the order of the files, as
the report's note says). Per rank, the plugin's steps (ProfilerStep#N) after the first, which
ncclwatch leaves out as warm-up, give per step: the communication time that overlaps compute
kernels (the plugin's `overlap`) and the compute kernel time (`computation`). ncclwatch's
`overlap[]` row of that rank gives the same two over its steady steps. The plugin's
`communication` also counts the host time of the nccl:* op outside its kernel, which ncclwatch
does not count as communication, so it is not compared (the traces put that op between two
compute kernels, so that it adds nothing to the plugin's overlap). Exit 0 when every rank agrees within
0.5 µs per step, 1 when not, 77 when the plugin cannot be imported.
"""
import json
import sys
import tempfile

from trace_reader_common import SKIP, ReaderMissing, import_reader


def plugin():
    from torch_tb_profiler.profiler.data import RunProfileData
    return RunProfileData


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    try:
        RunProfileData = import_reader("torch-tb-profiler", plugin)
    except ReaderMissing as e:
        print(f"SKIP: {e}; scripts/test.sh installs it")
        return SKIP
    with open(sys.argv[1], encoding="utf-8") as f:
        report = json.load(f)
    rows = {row["rank"]: row for row in report["overlap"]}
    problems, lines = [], []
    for rank, path in enumerate(sys.argv[2:]):
        with tempfile.TemporaryDirectory() as tmp:
            data = RunProfileData.parse(f"rank{rank}", "1", path, tmp)
        costs = data.comm_overlap_costs[1:]  # ncclwatch drops step 1 as warm-up
        if not data.has_communication or not data.has_kernel or not costs:
            problems.append(f"rank {rank}: the plugin found no communication or kernels")
            continue
        tb_overlap = sum(c.overlap for c in costs) / len(costs)
        tb_compute = sum(c.computation for c in costs) / len(costs)
        row = rows.get(rank)
        if row is None or row.get("overlap_pct") is None:
            problems.append(f"rank {rank}: no overlap in ncclwatch's report")
            continue
        steps = row["steps"]
        ours_overlap = row["comm_us"] * row["overlap_pct"] / 100.0 / steps
        ours_compute = row["compute_us"] / steps
        lines.append(f"rank {rank}: steps {len(costs)}/{steps}, overlapped {tb_overlap:.1f}/"
                     f"{ours_overlap:.1f} us/step, compute {tb_compute:.1f}/{ours_compute:.1f} us/step")
        if len(costs) != steps:
            problems.append(f"rank {rank}: {len(costs)} steady steps in the plugin, {steps} in ncclwatch")
        if abs(tb_overlap - ours_overlap) > 0.5 or abs(tb_compute - ours_compute) > 0.5:
            problems.append(lines[-1])
    print("\n".join(lines))
    if problems:
        print("FAIL: " + "; ".join(problems))
        return 1
    print(f"OK: the plugin and ncclwatch agree on {len(lines)} ranks (plugin/ncclwatch above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
