#!/usr/bin/env python3
"""Where `ncclwatch report`'s heap peak goes, per allocation site, in bytes per rank-step.

A measuring script, not part of CI (issue 24; tests/bench/scale/README.md). It needs heaptrack.
heaptrack_print's own peak list merges inlined frames into one site and says that its merged
peaks are not exact; this reads the peak flame-graph stacks instead (every live allocation at the
peak with its whole stack) and sums them by the innermost ncclwatch frames.

  build/tests/bench/scale/ncclwatch_scale_bench --ncclwatch build/tools/ncclwatch \\
      --ranks 256 --steps 800 --kernels 40 --dir /var/tmp/jobs --max-disk-gb 4 --keep
  heaptrack -o /var/tmp/report build/tools/ncclwatch report /var/tmp/jobs/ncclwatch-scale-bench.* \\
      --json /var/tmp/report.json
  scripts/heaptrack_peak_sites.py /var/tmp/report.zst --rank-steps 204800

--depth 2 (the default) names each site by its innermost ncclwatch frame and that frame's
caller; more tells the callers apart.
"""
import argparse
import collections
import re
import subprocess
import sys


def stacks_at_peak(path):
    """(frames from the root, bytes) for every allocation live at the peak."""
    out = subprocess.run(
        ["heaptrack_print", "-f", path, "--print-peaks", "0", "--print-allocators", "0",
         "--print-temporary", "0", "--print-leaks", "0", "--flamegraph-cost-type", "peak",
         "-F", "/dev/stdout"],
        check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        stack, _, cost = line.rstrip().rpartition(" ")
        if stack and cost.isdigit():
            yield [f.strip() for f in stack.split(";") if f.strip()], int(cost)


def site(frames, depth):
    """The innermost `depth` ncclwatch frames, innermost first, without arguments and files."""
    names = [re.sub(r"\(.*", "", f).strip() for f in frames]  # arguments name other types
    ours = [n for n in names if n.startswith("ncclwatch::")]
    return " <- ".join(reversed(ours[-depth:])) if ours else "(outside ncclwatch)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("heaptrack_file")
    ap.add_argument("--rank-steps", type=int, required=True, help="ranks x steps of the job")
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    by_site = collections.Counter()
    for frames, cost in stacks_at_peak(a.heaptrack_file):
        by_site[site(frames, a.depth)] += cost
    total = sum(by_site.values())
    print(f"heap at its peak: {total / 2**20:.1f} MiB = {total / a.rank_steps:.0f} bytes per "
          f"rank-step ({a.rank_steps} rank-steps)")
    for name, cost in by_site.most_common(a.top):
        print(f"{cost / 2**20:9.2f} MiB {cost / a.rank_steps:7.1f} B/rank-step  {name[:200]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
