// Everything `ncclwatch diff` found comparing two runs: the figures side by side (each judged
// against the runs' noise, figure.h), what appeared or disappeared, what changed underneath,
// what could not be compared and why, and the verdict line. Built by compare_runs
// (run_comparison.h); rendered as text, JSON and HTML by diff_render.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "diff/figure.h"
#include "diff/run_summary.h"

namespace ncclwatch::diff {

// A straggler or slow link, by rank or host, in one run or both.
struct FindingChange {
  std::string kind;   // "straggler", "slow link"
  std::string who;    // "rank 17 (node-c)", "node-b"
  std::string cause;  // "gpu-slow", "host-stall", "network", "unknown"
  std::string where;  // "NEW only", "BASE only", "both"
  // Its cost in each run (the findings' unit: share of the job's rank-time and time per step);
  // none in the run it is not in.
  std::optional<FindingCost> base_cost, new_cost;
  double lateness_us = 0;  // of the run it is in (NEW when both)
  bool flagged = false;    // one-sided and at warning level (>= 1 % of step time)
};

struct EnvChange {
  std::string label, base, now;  // "" = not recorded by that run
  bool changed = false;          // both recorded, different
};

struct DiffResult {
  RunSummary base, now;
  bool comparable_steps = false;  // both runs have a step time
  Compared step;
  std::vector<Compared> parts;         // the basis' parts, in breakdown order
  std::vector<Compared> rank_classes;  // compute of the median and of the slowest rank
  std::vector<Compared> rank_compute;  // per rank (same ranks in both): significant ones
  std::vector<Compared> buckets;       // overlap % and exposed time per bucket
  std::vector<Compared> busbw;         // per op, size class and scope
  std::vector<FindingChange> stragglers, slow_links;
  std::string pattern_base, pattern_new;
  bool pattern_flagged = false;   // changed while some step part changed beyond noise
  std::vector<Compared> kernels;  // compute kernels, largest change first
  std::vector<EnvChange> environment;
  bool comm_differs = false;              // the runs' communication differs (what, in not_compared)
  bool compute_differs = false;           // their compute kernels differ (different model or build)
  std::vector<std::string> not_compared;  // what cannot be compared, and why
  std::vector<std::string> notes;         // sizes, step counts, older reports
  std::string verdict;
  bool regression = false;  // step time longer beyond the noise: exit status 3

  // Every figure judged beyond the noise, and the one-sided findings: what the diff flags.
  std::vector<std::string> flagged_keys() const;
};

}  // namespace ncclwatch::diff
