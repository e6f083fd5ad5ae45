#!/usr/bin/env python3
"""Checks one trace of a real-GPU run (scripts/gpu-check.sh) from `ncclwatch dump --header`.

Usage: gpu_trace_check.py DUMP.jsonl MODE NAME [MIN_STEPS]
MODE is full (CUPTI) or lite (CUDA events). Prints one summary line; exits 1 with a FAIL line
per problem. Also runs on traces of the fakes (tests/fakes), which keep the same record shapes,
so the checker itself is tried without a GPU.

What a real run must show: NCCL calls with ordered host timestamps; in full mode compute kernels,
each with the launch record of its host side, and, when the communicator has peers, an NCCL kernel tied to each call that starts after the
call entered (the launch happens inside the call); in lite mode a CUDA-event interval for each
collective. A one-rank communicator is special: NCCL completes a collective of one rank with a
copy or nothing at all, so no NCCL kernel is required there; what it did is reported.
"""
import collections
import json
import sys


def main():
    path, mode, name = sys.argv[1], sys.argv[2], sys.argv[3]
    min_calls = int(sys.argv[4]) if len(sys.argv) > 4 else 70
    recs = [json.loads(line) for line in open(path, encoding="utf-8")]
    hdr = recs[0]
    kinds = collections.defaultdict(list)
    for r in recs[1:]:
        kinds[r.get("kind")].append(r)
    problems = []

    def need(cond, msg):
        if not cond:
            problems.append(msg)

    need(hdr.get("kind") == "header", "first line is not the header")
    need(hdr.get("mode") == {"full": 1, "lite": 2}[mode], f"header mode {hdr.get('mode')} for {mode}")
    calls = kinds["call"]
    need(len(calls) >= min_calls, f"only {len(calls)} NCCL calls")
    for c in calls:
        need(c["t_enter_ns"] <= c["t_exit_ns"], f"call exits before it enters: {c}")
        need(c["result"] == 0, f"call failed: {c}")
    t0 = min((c["t_enter_ns"] for c in calls), default=0)
    t1 = max((c["t_exit_ns"] for c in calls), default=0)

    def plausible(t):  # same clock as the calls, within the run
        return t0 - 120e9 <= t <= t1 + 120e9

    nranks = max((c.get("nranks", 0) for c in kinds["comm"]), default=0)
    funcs = collections.Counter(c["func"] for c in calls)
    summary = f"[{name}] rank {hdr.get('rank')}/{hdr.get('world_size')} comm of {nranks}: {len(calls)} calls {dict(funcs)}"
    if mode == "full":
        activities = collections.Counter(k["activity"] for k in kinds["kernel"])
        kernels = [k for k in kinds["kernel"] if k["activity"] == "kernel"]
        nccl = {k["correlation"]: k for k in kernels if k["nccl"]}
        compute = [k for k in kernels if not k["nccl"]]
        need(len(compute) >= min_calls, f"only {len(compute)} compute kernels")
        for k in kinds["kernel"]:
            need(0 < k["start_ns"] <= k["end_ns"] and plausible(k["start_ns"]),
                 f"implausible {k['activity']} {k.get('name')} {k['start_ns']} {k['end_ns']}")
        by_key = {(c["comm_id"], c["seq"]): c for c in calls}
        tied = 0
        for link in kinds["kernel_link"]:
            k = nccl.get(link["correlation"])
            c = by_key.get((link["comm_id"], link["seq"]))
            if k is None or c is None:
                continue
            tied += 1
            # 1 ms of slack for CUPTI's mapping of GPU time onto the host clock.
            need(k["start_ns"] >= c["t_enter_ns"] - 1e6,
                 f"kernel starts before its call: {k['start_ns']} < {c['t_enter_ns']}")
        # The host side of each kernel's launch (CUPTI's runtime record for the application's
        # launches, the driver record for NCCL's): ties GPU work to the host thread and time.
        launched = {l["correlation"] for l in kinds["launch"]}
        with_launch = sum(1 for k in kernels if k["correlation"] in launched)
        need(with_launch >= len(kernels) * 0.95, f"only {with_launch} of {len(kernels)} kernels have a launch record")
        apis = collections.Counter(l["api"] for l in kinds["launch"])
        if nranks > 1:
            need(len(nccl) >= len(calls) * 0.95, f"{len(nccl)} NCCL kernels for {len(calls)} calls")
            need(tied >= len(calls) * 0.95, f"only {tied} of {len(calls)} calls tied to their kernel")
        no_kernel = sum(1 for c in calls if c.get("no_kernel"))
        summary += (f"; {len(nccl)} NCCL kernels ({tied} tied, {no_kernel} calls flagged no_kernel), "
                    f"{len(compute)} compute kernels, activities {dict(activities)}, "
                    f"{len(kinds['nvtx'])} NVTX ranges, {len(kinds['launch'])} launches {dict(apis)} ({with_launch} kernels with one)")
        for r in kinds["nvtx"]:
            need(r["start_ns"] <= r["end_ns"] and plausible(r["start_ns"]), f"implausible NVTX range {r}")
    else:
        coll = kinds["coll_gpu"]
        need(len(coll) >= len(calls) * 0.95, f"{len(coll)} GPU intervals for {len(calls)} calls")
        for g in coll:
            need(0 < g["start_ns"] <= g["end_ns"] and plausible(g["start_ns"]), f"implausible interval {g}")
        need(not kinds["kernel"], "kernel records in lite mode")
        summary += f"; {len(coll)} CUDA-event intervals"
    losses = {k: v for k, v in hdr.get("losses", {}).items() if v}
    summary += f"; dropped {hdr.get('dropped')} cupti_dropped {hdr.get('cupti_dropped')} losses {losses}"
    print("  " + summary)
    for p in problems[:10]:
        print(f"FAIL: {name}: {p}")
    if len(problems) > 10:
        print(f"FAIL: {name}: ... {len(problems) - 10} more")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
