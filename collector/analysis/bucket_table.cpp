#include "analysis/bucket_table.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace ncclwatch::analysis {

std::vector<BucketRow> BucketTable::of(const model::JobTrace& job,
                                       const std::vector<RankOverlap>& overlaps,
                                       const std::vector<RankActivity>& activities) {
  using Key = std::tuple<uint64_t, std::size_t, uint64_t>;  // comm, ordinal, bytes
  std::map<Key, BucketRow> rows;
  uint64_t steady_pairs = 0;
  for (std::size_t r = 0; r < overlaps.size() && r < job.ranks.size(); ++r) {
    const RankOverlap& ro = overlaps[r];
    const model::RankTrace& rank = job.ranks[r];
    const StepPlan& plan = ro.plan;
    if (plan.steps.empty() || r >= activities.size()) continue;
    // Ordinal of the next all-reduce per (comm, step); calls are in time order.
    std::map<std::pair<uint64_t, int32_t>, std::size_t> ordinal;
    bool any = false;
    for (std::size_t i = 0; i < rank.calls.size() && i < plan.step_of_call.size(); ++i) {
      const model::CallEvent& c = rank.calls[i];
      const int32_t step = plan.step_of_call[i];
      if (c.func != format::Func::kAllReduce || step < static_cast<int32_t>(plan.warmup) ||
          !c.has_gpu()) {
        continue;
      }
      const std::size_t ord = ordinal[{c.comm_id, step}]++;
      BucketRow& row = rows[{c.comm_id, ord, c.bytes}];
      row.comm_id = c.comm_id;
      row.ordinal = ord;
      row.bytes = c.bytes;
      ++row.occurrences;
      row.gpu_ns += c.gpu_end_ns - c.gpu_start_ns;
      row.overlapped_ns += activities[r].compute.length_within(c.gpu_start_ns, c.gpu_end_ns);
      any = true;
    }
    if (any) steady_pairs += plan.steady_steps();
  }
  std::vector<BucketRow> out;
  for (auto& [key, row] : rows) {
    if (2 * row.occurrences >= steady_pairs) out.push_back(row);
  }
  return out;  // map order: comm, ordinal, bytes
}

}  // namespace ncclwatch::analysis
