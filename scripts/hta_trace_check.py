#!/usr/bin/env python3
"""HTA reads ncclwatch's exported timeline and agrees on comm/compute overlap (label `hta`).

  hta_trace_check.py TRACE.json [--tolerance-pp 0.1]

TRACE.json is `ncclwatch report|run --trace` output: one process per rank. HolisticTraceAnalysis
analyses one file per rank, so the merged file is split by pid into rank files (each with its own
distributedInfo) in a temporary directory; HTA's TraceAnalysis(trace_dir=...) loads them
(include_last_profiler_step=True: the export's ProfilerStep ranges end where a step ends, and
HTA_DISABLE_NS_ROUNDING=1: the export has ns resolution) and get_comm_comp_overlap() gives each
rank's overlap. ncclwatch's figure over the same kernels is in each process_labels event
(ncclwatch_overlap_pct). Exit 0 when every rank agrees within the tolerance, 1 when one does not,
77 (CTest's skip code) when HTA cannot be imported (trace_reader_common.py).
"""
import logging
import os
import sys
import tempfile

from trace_reader_common import import_reader, run, split_by_rank


def hta_trace_analysis():
    from hta.trace_analysis import TraceAnalysis
    return TraceAnalysis


def check(args):
    os.environ.setdefault("HTA_DISABLE_NS_ROUNDING", "1")
    TraceAnalysis = import_reader("HolisticTraceAnalysis", hta_trace_analysis)
    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        files, ours = split_by_rank(args.trace, tmp)
        analyzer = TraceAnalysis(trace_files=files, trace_dir=tmp, include_last_profiler_step=True)
        df = analyzer.get_comm_comp_overlap(visualize=False)
    worst, bad = 0.0, []
    for _, row in df.iterrows():
        rank = int(row["rank"])
        hta = float(row["comp_comm_overlap_pctg"])
        mine = ours.get(rank)
        if mine is None:
            bad.append(f"rank {rank}: ncclwatch has no overlap figure")
            continue
        diff = abs(hta - mine)
        worst = max(worst, diff)
        print(f"rank {rank}: HTA {hta:.2f}%  ncclwatch {mine:.4f}%  diff {diff:.4f} pp")
        # HTA rounds its percentage to 2 decimals: allow that on top of the tolerance.
        if diff > args.tolerance_pp + 0.005:
            bad.append(f"rank {rank}: HTA {hta:.2f}% vs ncclwatch {mine:.4f}%")
    if len(df) != len(ours):
        bad.append(f"HTA analysed {len(df)} ranks, the trace has {len(ours)}")
    return bad, f"{len(df)} ranks, largest difference {worst:.4f} pp (tolerance {args.tolerance_pp})"


if __name__ == "__main__":
    sys.exit(run(__doc__, check, [("--tolerance-pp", {"type": float, "default": 0.1})]))
