// Step time and its parts (breakdown_analysis.steady of each run), and compute per rank class
// and per rank from breakdown[].
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "diff/comparisons.h"

namespace ncclwatch::diff {
namespace {

Compared part_figure(const DiffResult& r, const std::string& key, const std::string& label) {
  Compared c;
  c.key = key == "step_us" ? "step" : key.substr(0, key.size() - 3);  // "compute_us" -> "compute"
  c.label = label;
  c.unit = "us";
  if (const Figure* f = r.base.part(key)) c.base = *f;
  if (const Figure* f = r.now.part(key)) c.now = *f;
  c.floor = time_floor_us(r);
  c.judge();
  return c;
}

// Compute of the GPU-timed ranks, ascending.
std::vector<const RankFigures*> gpu_ranks_by_compute(const RunSummary& s) {
  std::vector<const RankFigures*> out;
  for (const RankFigures& rf : s.rank_rows) {
    if (rf.gpu) out.push_back(&rf);
  }
  std::stable_sort(out.begin(), out.end(), [](const RankFigures* a, const RankFigures* b) {
    return a->compute_us < b->compute_us;
  });
  return out;
}

// "compute, median rank" and "compute, slowest rank": comparable whatever the runs' sizes.
void rank_classes(DiffResult& r) {
  const auto base = gpu_ranks_by_compute(r.base), now = gpu_ranks_by_compute(r.now);
  if (base.empty() || now.empty()) return;
  const Figure* bc = r.base.part("compute_us");
  const Figure* nc = r.now.part("compute_us");
  auto figure = [](const RankFigures* rf, const Figure* job) {
    // A rank's own spread where its per_step entries gave one, else the job's.
    const double spread = rf->compute_spread_us > 0 ? rf->compute_spread_us : job ? job->spread : 0;
    return Figure{rf->compute_us, spread, 0};
  };
  Compared median;
  median.key = "compute_median_rank";
  median.label = "compute, median rank";
  median.unit = "us";
  median.base = figure(base[(base.size() - 1) / 2], bc);
  median.now = figure(now[(now.size() - 1) / 2], nc);
  median.floor = time_floor_us(r);
  median.judge();
  Compared slowest = median;
  slowest.key = "compute_slowest_rank";
  slowest.label =
      fmt::format("compute, slowest rank (rank {} / rank {})", base.back()->rank, now.back()->rank);
  slowest.base = figure(base.back(), bc);
  slowest.now = figure(now.back(), nc);
  slowest.judge();
  r.rank_classes = {median, slowest};
}

// Per rank, when both runs have the same GPU-timed ranks: the ones whose compute changed.
void per_rank(DiffResult& r) {
  std::map<int, const RankFigures*> base;
  for (const RankFigures& rf : r.base.rank_rows) {
    if (rf.gpu) base[rf.rank] = &rf;
  }
  std::size_t matched = 0, gpu_now = 0;
  const Figure* job = r.base.part("compute_us");
  for (const RankFigures& rf : r.now.rank_rows) {
    if (!rf.gpu) continue;
    ++gpu_now;
    const auto it = base.find(rf.rank);
    if (it == base.end()) continue;
    ++matched;
    Compared c;
    c.key = fmt::format("compute_rank_{}", rf.rank);
    c.label = rf.host.empty() ? fmt::format("compute, rank {}", rf.rank)
                              : fmt::format("compute, rank {} ({})", rf.rank, rf.host);
    c.unit = "us";
    const double job_spread = job ? job->spread : 0;
    c.base = Figure{it->second->compute_us, std::max(it->second->compute_spread_us, job_spread), 0};
    c.now = Figure{rf.compute_us, std::max(rf.compute_spread_us, job_spread), 0};
    c.floor = time_floor_us(r);
    c.judge();
    if (c.significant) r.rank_compute.push_back(std::move(c));
  }
  if (matched != base.size() || matched != gpu_now) r.rank_compute.clear();
}

}  // namespace

double time_floor_us(const DiffResult& r) {
  const double step = r.base.step_us() > 0 ? r.base.step_us() : r.now.step_us();
  return std::max(1.0, 0.01 * step);
}

void compare_steps(DiffResult& r) {
  r.step = part_figure(r, "step_us", "step time");
  r.comparable_steps = r.step.both();
  if (r.base.basis != r.now.basis && !r.base.basis.empty() && !r.now.basis.empty()) {
    r.not_compared.push_back(fmt::format(
        "the step's parts: BASE is split on the {} timeline, NEW on the {} one (GPU kernels vs "
        "host-side NCCL calls); only the step time is compared",
        r.base.basis, r.now.basis));
    return;
  }
  if (r.base.basis == "gpu") {
    for (const StepPart& p : kGpuParts) r.parts.push_back(part_figure(r, p.key, p.label));
    rank_classes(r);
    per_rank(r);
  } else if (r.base.basis == "host") {
    for (const StepPart& p : kHostParts) r.parts.push_back(part_figure(r, p.key, p.label));
  }
}

}  // namespace ncclwatch::diff
