#!/usr/bin/env python3
"""Checks the always-on tier of one trace (scripts/gpu-check.sh) from `ncclwatch dump --header`.

Usage: gpu_always_check.py DUMP.jsonl NAME MIN_STEPS [TRIGGER...] [--gpu=auto-off|auto-on]
Prints one summary line; exits 1 with a FAIL line per problem. Runs on traces of the fakes too
(tests/fakes keep the record shapes), so the checker itself is tried without a GPU.

What an always-on trace must show (docs/always-on.md):
- one step summary per step (at least MIN_STEPS), numbered upwards, with a positive duration and,
  in full mode where GPU timing ran, GPU figures (compute, exposed communication, idle) that fit
  in the step;
- GPU timing per window (NCCLWATCH_SUMMARY_GPU, `gpu_timing` records): steps wholly outside the
  spans it ran in are marked `gpu_off` with no GPU figures; no step has figures where it did not
  run; no kernel record lies outside those spans (CUPTI made none there). --gpu=auto-off: the auto
  decision switched it off outside windows (a launch-bound job), and every window's steps still
  have their figures (switched on ahead of it); --gpu=auto-on: auto kept it on;
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
    triggers = [a for a in sys.argv[4:] if not a.startswith("--gpu=")]
    gpu_expect = next((a[len("--gpu="):] for a in sys.argv[4:] if a.startswith("--gpu=")), None)
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
    # GPU timing per window: the spans it ran in (on from the start until a record says off).
    changes = sorted(kinds["gpu_timing"], key=lambda g: g["t_ns"])
    on_spans, start = [], -(1 << 62)
    for g in changes:
        if g["on"] and start is None:
            start = g["t_ns"]
        elif not g["on"] and start is not None:
            on_spans.append((start, g["t_ns"]))
            start = None
    if start is not None:
        on_spans.append((start, 1 << 62))

    def covered(a, b):
        return any(x <= a and b <= y for x, y in on_spans)

    def step_end(s):
        return s["start_ns"] + s["duration_us"] * 1000

    timed_steps = [s for s in steps if covered(s["start_ns"], step_end(s))]
    timed_with_gpu = sum(1 for s in timed_steps if s.get("compute_us") is not None)
    if full and steps:
        need(timed_with_gpu >= 0.9 * len(timed_steps),
             f"only {timed_with_gpu} of {len(timed_steps)} steps GPU timing covered have GPU figures")
    for s in steps:
        if s.get("compute_us") is not None and not covered(s["start_ns"], step_end(s)):
            need(False, f"step {s['step']} has GPU figures where GPU timing was off")
        if not any(x < step_end(s) and s["start_ns"] < y for x, y in on_spans):
            need(s.get("gpu_off") and s.get("compute_us") is None,
                 f"step {s['step']}: GPU timing off throughout, yet not marked gpu_off")
    off_steps = len(steps) - len(timed_steps)
    decision = next((g for g in changes if g["reason"] == "auto"), None)
    if gpu_expect == "auto-off":
        need(decision is not None and not decision["on"], f"auto did not switch GPU timing off: {decision}")
        need(off_steps >= 0.25 * len(steps), f"only {off_steps} of {len(steps)} steps without GPU timing")
        last = steps[-100:-1]  # the run's last steps, past every window (the very last may be cut)
        need(all(st.get("gpu_off") for st in last),
             f"{sum(1 for st in last if not st.get('gpu_off'))} of the last {len(last)} steps with GPU timing on")
    elif gpu_expect == "auto-on":
        need(decision is not None and decision["on"], f"auto did not keep GPU timing on: {decision}")
        need(not any(not g["on"] for g in changes), "GPU timing switched off")
    gpu_words = "GPU timing throughout" if not changes else "GPU timing off by setting"
    if decision is not None:
        gpu_words = (f"auto {'on' if decision['on'] else 'off'}: {decision['units_per_step']:.1f} units/step x "
                     f"{decision['unit_cost_ns'] / 1e3:.1f} us of a {decision['step_ns'] / 1e6:.2f} ms step")
    gpu_words += f", {len(changes)} changes, {off_steps} steps host-only"
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
    if changes:
        # A kernel launched just before GPU timing went off may run a little after: SLACK_NS.
        untimed = [k for k in kinds["kernel"]
                   if not any(x - SLACK_NS <= k["start_ns"] <= y + SLACK_NS for x, y in on_spans)]
        need(not untimed, f"{len(untimed)} GPU records where GPU timing was off (CUPTI made them anyway?)")
    spill_ms = max((min((t - b + SLACK_NS for a, b, _, _ in spans if t > b), default=0) for t in spilled), default=0) / 1e6
    for trig in triggers:
        ws = [s for s in spans if s[2] == trig]
        need(ws, f"no {trig} window (windows: {[s[2] for s in spans]})")
        for a, b, _, wid in ws:
            n_kernels = sum(1 for k in kinds["kernel"] if a <= k["start_ns"] <= b)
            n_calls = sum(1 for c in kinds["call"] if a <= c["t_enter_ns"] <= b)
            need(n_calls > 0 and (n_kernels > 0 or not full),
                 f"{trig} window {wid} holds {n_calls} calls and {n_kernels} kernels")
            inside_steps = [st for st in steps if a <= st["start_ns"] and step_end(st) <= b]
            with_fig = sum(1 for st in inside_steps if st.get("compute_us") is not None)
            need(not full or with_gpu == 0 or with_fig >= 0.8 * len(inside_steps),
                 f"{trig} window {wid}: {with_fig} of {len(inside_steps)} steps with GPU figures")
    windows = ", ".join(f"{s[2]}#{s[3]} {(s[1] - s[0] - 2 * SLACK_NS) / 1e6:.0f} ms" for s in spans)
    print(f"  [{name}] {len(steps)} step summaries {dict(sources)} ({with_gpu} with GPU figures); "
          f"windows: {windows or 'none'}; {len(kinds['call'])} calls, {len(kinds['kernel'])} GPU records kept; "
          f"evicted {hdr.get('losses', {}).get('detail_evicted', 0)}; "
          f"{len(spilled)} detail records up to {spill_ms:.1f} ms past a window's end; {gpu_words}")
    for p in problems[:10]:
        print(f"FAIL: {name}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
