#include "analysis/step_swimlane.h"

#include <algorithm>
#include <set>

#include "analysis/time_bins.h"
#include "analysis/utilization_curve.h"

namespace ncclwatch::analysis {
namespace {

// The state that takes most of each bin, for one rank. Waiting is the exposed NCCL time inside
// the rank's peer-wait intervals (drawn as it happened; the breakdown's wait figure caps a
// chain's wait differently, step_breakdown.h).
std::vector<uint8_t> rank_states(const RankActivities& activities, std::size_t i,
                                 const IntervalSet& wait, int64_t offset, const TimeBins& bins) {
  const int64_t lo = bins.begin_ns - offset, hi = bins.end_ns() - offset;
  const RankActivity a = activities.clip(i, lo, hi);  // only the step's spans are decoded
  const IntervalSet& compute = a.compute;
  const IntervalSet& comm = a.comm;
  const IntervalSet exposed = comm.subtract(compute);
  const IntervalSet waiting = exposed.intersect(wait.clip(lo, hi));
  const IntervalSet parts[] = {compute, waiting, exposed.subtract(waiting),
                               a.busy.subtract(comm).subtract(compute)};
  std::vector<std::vector<float>> shares(std::size(parts));
  for (std::size_t p = 0; p < std::size(parts); ++p)
    cover_fractions(parts[p], offset, bins, shares[p]);
  std::vector<uint8_t> states(bins.count, static_cast<uint8_t>(LaneState::kIdle));
  for (std::size_t b = 0; b < bins.count; ++b) {
    float busy = 0, best = 0;
    for (std::size_t p = 0; p < std::size(parts); ++p) {
      busy += shares[p][b];
      if (shares[p][b] > best) {
        best = shares[p][b];
        states[b] = static_cast<uint8_t>(p + 1);  // LaneState order after kIdle
      }
    }
    if (1.0f - busy > best) states[b] = static_cast<uint8_t>(LaneState::kIdle);
  }
  return states;
}

std::vector<std::array<uint32_t, 3>> runs_of(const std::vector<uint8_t>& states) {
  std::vector<std::array<uint32_t, 3>> runs;
  for (std::size_t b = 0; b < states.size(); ++b) {
    if (!runs.empty() && runs.back()[2] == states[b]) {
      ++runs.back()[1];
    } else {
      runs.push_back({static_cast<uint32_t>(b), 1u, states[b]});
    }
  }
  return runs;
}

StepLanes lanes_of(const model::JobTrace& job, const model::ClockAlignment& clocks,
                   const RankActivities& activities, const std::vector<IntervalSet>& waits,
                   const std::vector<std::size_t>& order, const JobStep& step) {
  StepLanes l;
  l.step = step.index + 1;
  l.begin_ns = step.first_begin_ns;
  l.end_ns = std::max(step.last_end_ns, step.first_begin_ns + 1);
  l.step_ns = step.length();
  l.bins = kLaneBins;
  const TimeBins bins = TimeBins::exact(l.begin_ns, l.end_ns, kLaneBins);
  l.order = order;
  const std::size_t n = order.size(), groups = std::min(n, kMaxLaneRows);
  l.rows_aggregated = groups < n;
  for (std::size_t g = 0; g < groups; ++g) {
    const std::size_t a = g * n / groups, b = (g + 1) * n / groups;
    LaneRow row;
    std::vector<std::array<uint32_t, kLaneStates>> votes(kLaneBins,
                                                         std::array<uint32_t, kLaneStates>{});
    for (std::size_t k = a; k < b; ++k) {
      const std::size_t i = order[k];
      const model::RankTrace& rt = job.ranks[i];
      if (row.first_rank < 0) {
        row.first_rank = rt.info.rank;
        row.host = rt.info.host;
      }
      row.last_rank = rt.info.rank;
      const IntervalSet none;
      const std::vector<uint8_t> s =
          rank_states(activities, i, i < waits.size() ? waits[i] : none, clocks.at(i), bins);
      for (std::size_t bin = 0; bin < s.size(); ++bin) ++votes[bin][s[bin]];
    }
    row.ranks = b - a;
    std::vector<uint8_t> states(kLaneBins);
    for (std::size_t bin = 0; bin < kLaneBins; ++bin) {
      states[bin] = static_cast<uint8_t>(std::max_element(votes[bin].begin(), votes[bin].end()) -
                                         votes[bin].begin());
    }
    row.runs = runs_of(states);
    l.rows.push_back(std::move(row));
  }
  return l;
}

}  // namespace

const char* to_string(LaneState s) {
  switch (s) {
    case LaneState::kCompute:
      return "compute";
    case LaneState::kWait:
      return "wait";
    case LaneState::kTransfer:
      return "transfer";
    case LaneState::kMemcpy:
      return "memcpy";
    case LaneState::kIdle:
      break;
  }
  return "idle";
}

std::vector<StepLanes> StepSwimlanes::draw(const model::JobTrace& job,
                                           const model::ClockAlignment& clocks,
                                           const RankActivities& activities,
                                           const std::vector<const StepPlan*>& plans,
                                           const std::vector<IntervalSet>& waits) {
  std::vector<std::size_t> gpu;
  std::vector<const StepPlan*> gpu_plans(plans.size(), nullptr);
  for (std::size_t i = 0; i < activities.size() && i < job.ranks.size(); ++i) {
    if (!activities.summary(i).has_kernel_timeline()) continue;
    gpu.push_back(i);
    if (i < plans.size()) gpu_plans[i] = plans[i];
  }
  const std::vector<JobStep> steps = job_steps(gpu_plans, clocks);
  std::vector<const JobStep*> steady;
  for (const JobStep& s : steps) {
    if (!s.warmup && !s.partial && s.length() > 0) steady.push_back(&s);
  }
  if (steady.empty() || gpu.empty()) return {};
  std::vector<const JobStep*> by_length = steady;
  std::stable_sort(by_length.begin(), by_length.end(),
                   [](const JobStep* a, const JobStep* b) { return a->length() < b->length(); });
  const JobStep* representative = by_length[(by_length.size() - 1) / 2];
  const JobStep* worst = by_length.back();
  const std::vector<std::size_t> order = host_order(job, gpu);
  std::vector<StepLanes> out;
  out.push_back(lanes_of(job, clocks, activities, waits, order, *representative));
  out.back().why = "representative";
  // The worst step only when it stands out (2 % longer): else it is one more steady step.
  if (worst != representative && 50 * worst->length() > 51 * representative->length()) {
    out.push_back(lanes_of(job, clocks, activities, waits, order, *worst));
    out.back().why = "worst";
  }
  return out;
}

void StepSwimlanes::mark_stragglers(const model::JobTrace& job, const StragglerResult& stragglers,
                                    std::vector<StepLanes>& lanes) {
  std::set<std::size_t> late;
  std::set<std::string> late_hosts;
  for (const Straggler& s : stragglers.stragglers) late.insert(s.rank_index);
  for (const NodeProblem& n : stragglers.nodes) late_hosts.insert(n.host);
  for (StepLanes& l : lanes) {
    std::size_t k = 0;
    for (LaneRow& row : l.rows) {
      for (const std::size_t end = k + row.ranks; k < end && k < l.order.size(); ++k) {
        const std::size_t i = l.order[k];
        row.straggler = row.straggler || late.count(i) || late_hosts.count(job.ranks[i].info.host);
      }
    }
  }
}

}  // namespace ncclwatch::analysis
