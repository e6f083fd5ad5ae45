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
77 (CTest's skip code) when HTA cannot be imported.
"""
import argparse
import json
import logging
import os
import sys
import tempfile


def split_by_rank(path, out_dir):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    per_pid, ours = {}, {}
    for ev in doc["traceEvents"]:
        per_pid.setdefault(ev.get("pid"), []).append(ev)
        if ev.get("ph") == "M" and ev.get("name") == "process_labels":
            ours[ev["pid"]] = ev["args"].get("ncclwatch_overlap_pct")
    world = doc["distributedInfo"]["world_size"]
    files = {}
    for pid, events in per_pid.items():
        rank_doc = {k: v for k, v in doc.items() if k != "traceEvents"}
        rank_doc["distributedInfo"] = dict(doc["distributedInfo"], rank=pid, world_size=world)
        rank_doc["traceEvents"] = events
        files[pid] = os.path.join(out_dir, f"rank{pid}.json")
        with open(files[pid], "w", encoding="utf-8") as f:
            json.dump(rank_doc, f)
    return files, ours


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--tolerance-pp", type=float, default=0.1)
    args = ap.parse_args()
    os.environ.setdefault("HTA_DISABLE_NS_ROUNDING", "1")
    try:
        from hta.trace_analysis import TraceAnalysis
    except Exception as e:  # noqa: BLE001 - any import failure means "not installed here"
        print(f"SKIP: HolisticTraceAnalysis cannot be imported ({e}); scripts/test.sh installs it")
        return 77
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
    if bad:
        print("MISMATCH: " + "; ".join(bad))
        return 1
    print(f"OK: {len(df)} ranks, largest difference {worst:.4f} pp (tolerance {args.tolerance_pp})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
