#!/usr/bin/env python3
"""Compare ncclwatch's Kineto overlap figures and speed with HolisticTraceAnalysis (HTA).

A check script, not part of CI. It needs HTA (pip install HolisticTraceAnalysis) and, for the
ncclwatch side, the probe built from tests/bench/kineto (target kineto_overlap_probe), which
prints ncclwatch's figures as JSON lines.

  scripts/hta_compare.py --probe build/tests/bench/kineto/kineto_overlap_probe \
      ../shared/traces/kineto            # overlap table (markdown) for every trace found
  scripts/hta_compare.py --time big.json # HTA's wall time for TraceAnalysis + overlap

For each file HTA runs TraceAnalysis(trace_files={rank: file}) twice, with
include_last_profiler_step False (its default: the last ProfilerStep is dropped) and True, then
get_comm_comp_overlap(visualize=False), whose comp_comm_overlap_pctg is rounded to 2 decimals.
"""
import argparse
import json
import logging
import os
import subprocess
import sys
import time


def find_traces(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                out += [os.path.join(root, f) for f in files if f.endswith((".json", ".json.gz"))]
        else:
            out.append(p)
    return sorted(out)


def hta_overlap(path, include_last):
    from hta.trace_analysis import TraceAnalysis  # imported late: slow, and optional for --help

    t0 = time.perf_counter()
    analyzer = TraceAnalysis(trace_files={0: path}, include_last_profiler_step=include_last)
    t1 = time.perf_counter()
    df = analyzer.get_comm_comp_overlap(visualize=False)
    t2 = time.perf_counter()
    return float(df["comp_comm_overlap_pctg"].iloc[0]), t1 - t0, t2 - t1


def probe(probe_bin, path):
    out = subprocess.run([probe_bin, path], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--probe", help="path of kineto_overlap_probe (ncclwatch's figures)")
    ap.add_argument("--time", action="store_true", help="only time HTA on the given files")
    args = ap.parse_args()
    logging.disable(logging.WARNING)  # HTA logs a warning per trace

    files = find_traces(args.traces)
    if args.time:
        import resource

        def cpu_s():  # this process and its waited-for children (HTA may use worker processes)
            own = resource.getrusage(resource.RUSAGE_SELF)
            kids = resource.getrusage(resource.RUSAGE_CHILDREN)
            return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

        for f in files:
            size = os.path.getsize(f)
            cpu0 = cpu_s()
            pct, load_s, overlap_s = hta_overlap(f, False)
            cpu = cpu_s() - cpu0
            total = load_s + overlap_s
            print(f"{f}: {size / 1e6:.1f} MB, HTA TraceAnalysis {load_s:.2f} s + get_comm_comp_overlap "
                  f"{overlap_s:.2f} s = {total:.2f} s wall ({size / 1e6 / total:.2f} MB/s), "
                  f"{cpu:.2f} s CPU ({size / 1e6 / cpu:.2f} MB/s per CPU second), overlap {pct:.2f} %")
        return 0

    # (HTA setting, ncclwatch probe key): last step dropped / kept, HTA's default rounding of
    # sub-µs timestamps to whole µs on / off (HTA_DISABLE_NS_ROUNDING=1).
    cases = [
        ("drop last, µs", False, False, "hta_selection_us_pct"),
        ("keep last, µs", True, False, "hta_selection_with_last_step_us_pct"),
        ("drop last, ns", False, True, "hta_selection_pct"),
        ("keep last, ns", True, True, "hta_selection_with_last_step_pct"),
    ]
    head = " | ".join(f"HTA {c[0]} | ncclwatch" for c in cases)
    print(f"| trace | rank | {head} | ncclwatch, all kernels |")
    print("|---|---|" + "---|---|" * len(cases) + "---|")
    worst = 0.0
    for f in files:
        ours = probe(args.probe, f) if args.probe else {}
        cells = []
        for _, include_last, no_rounding, key in cases:
            os.environ["HTA_DISABLE_NS_ROUNDING"] = "1" if no_rounding else "0"
            theirs, _, _ = hta_overlap(f, include_last)
            mine = ours.get(key)
            if mine is not None:
                worst = max(worst, abs(mine - theirs))
            cells.append(f"{theirs:.2f} | {'n/a' if mine is None else f'{mine:.3f}'}")
        all_k = ours.get("all_kernels_pct")
        print(f"| {os.path.relpath(f, os.path.commonpath(files + [os.getcwd()]))} | {ours.get('rank', '?')} | "
              + " | ".join(cells) + f" | {'n/a' if all_k is None else f'{all_k:.3f}'} |")
    if args.probe:
        print(f"\nlargest difference: {worst:.3f} percentage points (HTA prints 2 decimals)")
        return 0 if worst <= 0.1 else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
