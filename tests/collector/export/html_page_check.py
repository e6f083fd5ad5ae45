#!/usr/bin/env python3
"""Checks what the --html page drew, from chromium's --dump-dom of it (html_browser_check.sh).

    html_page_check.py SCENARIO PAGE.dom.html

The page writes what each plot drew (its series as drawn, its axes, its marks) as JSON into
<pre id="drawn">. Every page: status ok, every plot has data, every plot's axes say their unit,
the per-step plots hold no partial last step (no column at 100 % busy, no step time at the
floor), the breakdown bars fill their canvas, the tables hold numbers for people. Then the shape
the scenario's verdict names, read from the drawn curves:
  sawtooth    the fine curve drops to ~0 inside (nearly) every step of the window while the
              1 s samples (what nvidia-smi shows) stay high;
  checkpoint  steps 3, 7, 11 are marked checkpoint; step 3 holds a run of ~0 busy of >= 40 ms,
              an ordinary step none of 20 ms;
  flat-low    the fine curve stays in the middle (median 25-75 %) with few bins near 0, and so
              do the 100 ms samples;
  straggler   the straggler's row (rank 1) is highlighted in the per-rank rows and the swimlane,
              where the other ranks wait for it and it does not;
  any         only the common checks;
  zoom:A-B    the page opened as PAGE#steps=A-B: the fine window drew steps A..B and no other.
Prints one line per failed check; exit 0 when none failed.
"""
import html
import json
import re
import statistics
import sys

CANVASES = ["ov", "win", "rows", "heat", "bd", "steps", "waits"]
UNIT = re.compile(r"\((s|ms|µs|%|ms per step)\)")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
    return ok


def drawn_of(dom):
    m = re.search(r'<pre id="drawn" hidden="">(.*?)</pre>', dom, re.S)
    if not m:
        return None
    return json.loads(html.unescape(m.group(1)))


def common(dom, d):
    status = re.search(r'data-status="([^"]*)"', dom)
    check(status and status.group(1) == "ok", f"page status {status.group(1) if status else None}")
    for plot in CANVASES + ["lanes", "buckets"]:
        check(d.get(plot, {}).get("points", 0) > 0, f"{plot}: no data drawn")
    for plot in CANVASES:
        axes = d.get(plot, {}).get("axes", {})
        check(axes.get("x") and axes.get("y"), f"{plot}: an axis has no label: {axes}")
    for plot in ["ov", "win", "rows", "bd"]:
        check(UNIT.search(d[plot]["axes"]["x"]), f"{plot}: x axis without a unit: {d[plot]['axes']['x']}")
    for plot in ["ov", "win", "steps", "waits"]:
        check(UNIT.search(d[plot]["axes"]["y"]), f"{plot}: y axis without a unit: {d[plot]['axes']['y']}")
        check(len(d[plot]["axes"]["y_ticks"]) >= 3, f"{plot}: fewer than 3 y ticks")
    for plot in ["ov", "win", "rows", "heat", "bd", "steps"]:
        check(len(d[plot]["axes"]["x_ticks"]) >= 2, f"{plot}: fewer than 2 x ticks")
    for lane in d["lanes"]["lanes"]:
        check(UNIT.search(lane["axes"]["x"]), f"swimlane step {lane['step']}: x axis without a unit")
    # The last step is not an artifact: no step time at the floor, no column far above the rest.
    step_ms = d["steps"]["step_ms"]
    check(step_ms[-1] >= 0.5 * statistics.median(step_ms), f"steps: the last point drops to {step_ms[-1]} ms")
    cols = [v for v in d["heat"]["col_mean_pct"] if v is not None]
    check(cols[-1] <= statistics.median(cols) + 15, f"heat: the last column is {cols[-1]} % against {statistics.median(cols)} %")
    check(d["bd"]["filled_pct"] >= 80, f"bd: the bars fill {d['bd']['filled_pct']} % of the canvas")
    for row in d["buckets"]["cells"]:
        for cell in row[1:]:
            check(re.fullmatch(r"[0-9,]+(\.[0-9]{1,2})?", cell), f"buckets: '{cell}' is not a number for people")
    check(d["ov"]["bin_us"] > 0 and d["win"]["bin_us"] > 0, "curve bins missing")


def window_steps(d):
    """Per drawn window step that is whole and ordinary: its busy values."""
    win = d["win"]
    out = {}
    for s in win["steps"]:
        first = round((s["begin_us"] - win["begin_us"]) / win["bin_us"])
        last = round((s["end_us"] - win["begin_us"]) / win["bin_us"])
        if first >= 0 and last <= len(win["busy"]) and last > first:
            out[s["step"]] = (s["kind"], win["busy"][first:last])
    return out


def longest_run(values, at_most):
    best = run = 0
    for v in values:
        run = run + 1 if v <= at_most else 0
        best = max(best, run)
    return best


def sawtooth(d):
    steps = [v for k, v in window_steps(d).values() if k == ""]
    dips = sum(1 for v in steps if min(v) <= 10 and max(v) >= 80)
    check(len(steps) >= 4 and dips >= len(steps) - 1, f"sawtooth: {dips} of {len(steps)} steps drop to ~0 and rise to >= 80 %")
    smi = d["ov"]["smi_1s"] or d["ov"]["smi_100ms"]
    check(smi and statistics.median(smi) >= 50, f"sawtooth: the sampled monitor shows {smi}")


def checkpoint(d):
    kinds = {m["step"]: m["kind"] for m in d["ov"]["marked"]}
    check(all(kinds.get(s) == "checkpoint" for s in (3, 7, 11)), f"checkpoint: marked steps {kinds}")
    steps = window_steps(d)
    bin_ms = d["win"]["bin_us"] / 1000
    check(3 in steps and longest_run(steps[3][1], 5) * bin_ms >= 40,
          f"checkpoint: step 3 has no >= 40 ms run at ~0 ({longest_run(steps.get(3, ('', []))[1], 5) * bin_ms} ms)")
    ordinary = [v for k, v in steps.values() if k == ""]
    check(ordinary and max(longest_run(v, 5) for v in ordinary) * bin_ms < 20, "checkpoint: an ordinary step has a 20 ms drop")


def flat_low(d):
    busy = d["win"]["busy"]
    med = statistics.median(busy)
    near_zero = sum(1 for v in busy if v <= 5) / len(busy)
    check(25 <= med <= 75, f"flat-low: the fine curve's median is {med} %")
    check(near_zero < 0.15, f"flat-low: {near_zero:.0%} of the bins are at ~0")
    smi = d["ov"]["smi_100ms"]
    check(smi and 25 <= statistics.median(smi) <= 75, f"flat-low: 100 ms samples {smi}")


def straggler(d):
    rows = d["rows"]["rows"]
    check([r["label"] for r in rows if r["straggler"]] == ["rank 1"], f"straggler: rows highlighted {rows}")
    lane = d["lanes"]["lanes"][0]
    late = [r for r in lane["rows"] if r["straggler"]]
    others = [r["share_pct"]["wait"] for r in lane["rows"] if not r["straggler"]]
    if check(len(late) == 1 and late[0]["label"] == "rank 1", f"straggler: swimlane highlights {late}"):
        mine = late[0]["share_pct"]["wait"]
        check(min(others) >= 8 and min(others) >= 2 * mine + 3,
              f"straggler: the others wait {others} % of the step, the straggler {mine} %")


def zoomed(d, first, last):
    drawn = sorted(s["step"] for s in d["win"]["steps"])
    check(drawn == list(range(first, last + 1)), f"zoom: steps {first}-{last} asked for, the window drew {drawn}")


def main():
    scenario, path = sys.argv[1], sys.argv[2]
    dom = open(path, encoding="utf-8").read()
    d = drawn_of(dom)
    if not check(d is not None, "no <pre id=drawn> in the page"):
        print(f"FAIL [{scenario}]: {failures[0]}")
        return 1
    common(dom, d)
    if not failures and scenario.startswith("zoom:"):
        first, last = (int(v) for v in scenario[5:].split("-"))
        zoomed(d, first, last)
    elif not failures:
        {"sawtooth": sawtooth, "checkpoint": checkpoint, "flat-low": flat_low,
         "straggler": straggler, "any": lambda d: None}[scenario](d)
    for f in failures:
        print(f"FAIL [{scenario}]: {f}")
    if not failures:
        print(f"[{scenario}] every plot drew the expected data")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
