#!/usr/bin/env python3
"""Checks the always-on tier of one trace (scripts/gpu-check.sh) from `ncclwatch dump --header`.

Usage: gpu_always_check.py DUMP.jsonl NAME MIN_STEPS [TRIGGER...]
Prints one summary line; exits 1 with a FAIL line per problem. Runs on traces of the fakes too
(tests/fakes keep the record shapes), so the checker itself is tried without a GPU.

What an always-on trace must show (docs/always-on.md):
- one step summary per step (at least MIN_STEPS), numbered upwards, with a positive duration and,
  in full mode, GPU figures (compute, exposed communication, idle) that fit in the step;
- capture windows opened and closed in pairs; for every TRIGGER named ("schedule", "on-demand",
  "step-time", ...) a window of that trigger holding kernels (full mode) or calls;
- no detail record (NCCL call, kernel) far outside every window: the tiers keep detail to
  windows. A window's end is known only once the drain thread sees the next step begin (with NVTX
  steps: when CUPTI hands over the range, up to its flush period later), so records that describe
  up to SPILL_NS after a window's end may already be on disk: counted and printed, not a failure.
"""
import collections
import json
import sys

SLACK_NS = 5_000_000  # records are judged by the time they describe; CUPTI's clock mapping adds noise
SPILL_NS = 2_000_000_000  # how late past its end a window may still have let detail through


def main():
    path, name, min_steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    triggers = sys.argv[4:]
    recs = [json.loads(line) for line in open(path, encoding="utf-8")]
    hdr = recs[0]
    kinds = collections.defaultdict(list)
    for r in recs[1:]:
        kinds[r.get("kind")].append(r)
    problems = []

    def need(cond, msg):
        if not cond:
            problems.append(msg)

    full = hdr.get("mode") == 1
    steps = kinds["step"]
    need(len(steps) >= min_steps, f"only {len(steps)} step summaries (want >= {min_steps})")
    numbers = [s["step"] for s in steps]
    need(numbers == sorted(numbers) and len(set(numbers)) == len(numbers), "step numbers not increasing")
    with_gpu = 0
    for s in steps:
        need(s["duration_us"] > 0, f"step {s['step']} has no duration")
        parts = [s.get(k) for k in ("compute_us", "exposed_us", "idle_us")]
        if all(p is not None for p in parts):
            with_gpu += 1
            need(sum(parts) <= s["duration_us"] * 1.02 + 2,
                 f"step {s['step']}: compute+exposed+idle {sum(parts)} us > step {s['duration_us']} us")
    if full and steps:
        need(with_gpu >= 0.9 * len(steps), f"only {with_gpu} of {len(steps)} steps with GPU figures")
    sources = collections.Counter(s["source"] for s in steps)

    opened = {w["id"]: w for w in kinds["window"] if w["event"] == "open"}
    closed = {w["id"]: w for w in kinds["window"] if w["event"] == "close"}
    last_ns = max([r.get("t_exit_ns", 0) for r in kinds["call"]] +
                  [r.get("end_ns", 0) for r in kinds["kernel"]] + [s["start_ns"] for s in steps] + [0])
    spans = []
    for wid, w in opened.items():
        end = closed[wid]["end_ns"] if wid in closed else last_ns
        spans.append((w["start_ns"] - SLACK_NS, end + SLACK_NS, w["trigger"], wid))
    need(set(closed) <= set(opened), f"windows closed but never opened: {sorted(set(closed) - set(opened))}")

    def inside(t, spill=0):
        return any(a <= t <= b + spill for a, b, _, _ in spans)

    detail = [(c["t_enter_ns"], "call") for c in kinds["call"]]
    detail += [(k["start_ns"], "kernel") for k in kinds["kernel"] if k.get("activity") == "kernel"]
    spilled = [t for t, _ in detail if not inside(t)]
    outside = [what for t, what in detail if not inside(t, SPILL_NS)]
    need(not outside, f"{len(outside)} detail records outside every window {dict(collections.Counter(outside))}")
    spill_ms = max((min((t - b + SLACK_NS for a, b, _, _ in spans if t > b), default=0) for t in spilled), default=0) / 1e6
    for trig in triggers:
        ws = [s for s in spans if s[2] == trig]
        need(ws, f"no {trig} window (windows: {[s[2] for s in spans]})")
        for a, b, _, wid in ws:
            n_kernels = sum(1 for k in kinds["kernel"] if a <= k["start_ns"] <= b)
            n_calls = sum(1 for c in kinds["call"] if a <= c["t_enter_ns"] <= b)
            need(n_calls > 0 and (n_kernels > 0 or not full),
                 f"{trig} window {wid} holds {n_calls} calls and {n_kernels} kernels")
    windows = ", ".join(f"{s[2]}#{s[3]} {(s[1] - s[0] - 2 * SLACK_NS) / 1e6:.0f} ms" for s in spans)
    print(f"  [{name}] {len(steps)} step summaries {dict(sources)} ({with_gpu} with GPU figures); "
          f"windows: {windows or 'none'}; {len(kinds['call'])} calls, {len(kinds['kernel'])} GPU records kept; "
          f"evicted {hdr.get('losses', {}).get('detail_evicted', 0)}; "
          f"{len(spilled)} detail records up to {spill_ms:.1f} ms past a window's end")
    for p in problems[:10]:
        print(f"FAIL: {name}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
