#include "analysis/cross_node_comm.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <set>

#include "analysis/units.h"
#include "model/median.h"

namespace ncclwatch::analysis {
namespace {

struct CommMembers {
  std::set<std::string> hosts;
  int32_t nranks = 0;
  std::vector<std::size_t> rank_indices;
};

// The step whose window holds GPU time `t`, -1 outside every step. Calls are placed by their
// GPU start rather than their host entry: the overlap and interleaving judged here are on the
// GPU timeline, and a host that runs ahead of its GPU (or is descheduled between launches)
// would otherwise move calls into the next step's window.
int32_t step_at(const StepPlan& plan, int64_t t) {
  const auto it = std::upper_bound(plan.steps.begin(), plan.steps.end(), t,
                                   [](int64_t v, const Interval& s) { return v < s.begin; });
  if (it == plan.steps.begin()) return -1;
  const auto step = std::prev(it);
  return t < step->end ? static_cast<int32_t>(step - plan.steps.begin()) : -1;
}

// step_at for a rank's calls in order: the last step found is checked first (calls of one step
// follow each other), a binary search otherwise; the same step either way.
class StepCursor {
 public:
  explicit StepCursor(const StepPlan& plan) : plan_(plan) {}
  int32_t step_at(int64_t t) {
    const auto& steps = plan_.steps;
    if (last_ < steps.size() && steps[last_].begin <= t) {
      // upper_bound - 1: the last step whose begin is <= t.
      while (last_ + 1 < steps.size() && steps[last_ + 1].begin <= t) ++last_;
      return t < steps[last_].end ? static_cast<int32_t>(last_) : -1;
    }
    const int32_t s = analysis::step_at(plan_, t);
    if (s >= 0) last_ = static_cast<std::size_t>(s);
    return s;
  }

 private:
  const StepPlan& plan_;
  std::size_t last_ = static_cast<std::size_t>(-1);
};

// |compute ∩ [from, to)| for a rank's calls in order: the cursor form of length_within while
// the windows move forward (calls on one stream), a fresh search when one starts earlier
// (another stream's call); the same figure either way.
class ComputeCursor {
 public:
  explicit ComputeCursor(const IntervalSet& set) : set_(set) {}
  int64_t length_within(int64_t from, int64_t to) {
    if (from < last_from_) return set_.length_within(from, to);
    last_from_ = from;
    return set_.length_within(from, to, hint_);
  }

 private:
  const IntervalSet& set_;
  std::size_t hint_ = 0;
  int64_t last_from_ = std::numeric_limits<int64_t>::min();
};

}  // namespace

std::vector<CrossNodeComm> CrossNodeComm::find(const model::JobTrace& job,
                                               const RankActivities& activities,
                                               const std::vector<const StepPlan*>& plans) {
  std::map<uint64_t, CommMembers> comms;
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    for (const model::CommInfo& c : job.ranks[i].comms) {
      CommMembers& m = comms[c.id];
      m.hosts.insert(job.ranks[i].info.host);
      m.nranks = std::max(m.nranks, c.nranks);
      if (m.rank_indices.empty() || m.rank_indices.back() != i) m.rank_indices.push_back(i);
    }
  }
  std::vector<CrossNodeComm> out;
  for (const auto& [id, m] : comms) {
    if (m.hosts.size() < 2) continue;
    CrossNodeComm x;
    x.comm_id = id;
    x.nranks = m.nranks;
    x.hosts = m.hosts.size();
    std::vector<double> per_step;
    std::vector<uint64_t> bytes;
    std::array<std::size_t, static_cast<std::size_t>(format::Func::kCount)> funcs{};
    int64_t gpu_ns = 0, overlapped_ns = 0;
    std::size_t pairs = 0, interleaved = 0;
    for (std::size_t i : m.rank_indices) {
      if (i >= activities.size() || i >= plans.size() || plans[i] == nullptr) continue;
      const StepPlan& plan = *plans[i];
      if (!activities.summary(i).has_compute || plan.steady_steps() == 0) continue;
      const std::shared_ptr<const IntervalSet> compute_set = activities.compute(i);
      const model::RankTrace& rank = job.ranks[i];
      std::size_t count = 0;
      int32_t prev_step = -1;
      int64_t prev_end = 0;
      ComputeCursor compute{*compute_set};
      StepCursor steps{plan};
      for (std::size_t c = 0; c < rank.calls.size(); ++c) {
        const model::CallEvent& call = rank.calls[c];
        if (call.comm_id != id || !format::is_collective(call.func) || !call.has_gpu()) continue;
        const int32_t step = steps.step_at(call.gpu_start_ns);
        if (step < static_cast<int32_t>(plan.warmup)) continue;
        ++count;
        if (bytes.size() < 100'000) bytes.push_back(call.bytes());
        ++funcs[static_cast<std::size_t>(call.func) % funcs.size()];
        gpu_ns += call.gpu_end_ns - call.gpu_start_ns;
        overlapped_ns += compute.length_within(call.gpu_start_ns, call.gpu_end_ns);
        if (step == prev_step) {
          ++pairs;
          interleaved += compute.length_within(prev_end, call.gpu_start_ns) > 0;
        }
        prev_step = step;
        prev_end = call.gpu_end_ns;
      }
      ++x.gpu_ranks;
      per_step.push_back(static_cast<double>(count) / static_cast<double>(plan.steady_steps()));
    }
    if (x.gpu_ranks == 0) continue;
    x.per_step = model::median(per_step);
    x.median_bytes = model::median(bytes);
    x.overlap_pct =
        gpu_ns > 0 ? 100.0 * static_cast<double>(overlapped_ns) / static_cast<double>(gpu_ns) : 0;
    x.interleaved_pct =
        pairs > 0 ? 100.0 * static_cast<double>(interleaved) / static_cast<double>(pairs) : 0;
    format::Func top = format::Func::kUnknown;
    std::size_t top_n = 0, total = 0;
    for (std::size_t f = 0; f < funcs.size(); ++f) {
      total += funcs[f];
      if (funcs[f] > top_n) top = static_cast<format::Func>(f), top_n = funcs[f];
    }
    x.what = top_n * 10 >= total * 9 ? func_name(top) + "s" : "collectives";
    x.tensor_parallel_like = x.per_step >= kTpMinPerStep && x.median_bytes <= kTpMaxBytes &&
                             x.overlap_pct < 100 * kTpMaxOverlap &&
                             x.interleaved_pct >= 100 * kTpMinInterleaved;
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace ncclwatch::analysis
