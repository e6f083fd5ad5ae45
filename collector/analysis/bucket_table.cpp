#include "analysis/bucket_table.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <unordered_map>

namespace ncclwatch::analysis {

namespace {

struct KeyHash {
  std::size_t operator()(const std::tuple<uint64_t, std::size_t, uint64_t>& k) const {
    uint64_t h = std::get<0>(k) * 0x9E3779B97F4A7C15ull;
    h ^= std::get<1>(k) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    h ^= std::get<2>(k) * 0xBF58476D1CE4E5B9ull + (h << 6) + (h >> 2);
    return static_cast<std::size_t>(h);
  }
};

double sd(double sum, double sum_sq, uint64_t n) {
  if (n < 2) return 0;
  const double dn = static_cast<double>(n), mean = sum / dn;
  return std::sqrt(std::max(0.0, (sum_sq - dn * mean * mean) / (dn - 1)));
}

}  // namespace

double BucketRow::overlapped_pct_sd() const {
  return 100.0 * sd(share_sum, share_sq, occurrences);
}

double BucketRow::exposed_ns_sd() const {
  return sd(static_cast<double>(gpu_ns - overlapped_ns), exposed_sq_ns2, occurrences);
}

std::vector<BucketRow> BucketTable::of(const model::JobTrace& job,
                                       const std::vector<RankOverlap>& overlaps,
                                       const RankActivities& activities) {
  using Key = std::tuple<uint64_t, std::size_t, uint64_t>;  // comm, ordinal, bytes
  std::unordered_map<Key, std::size_t, KeyHash> index;
  std::vector<BucketRow> rows;
  uint64_t steady_pairs = 0;
  for (std::size_t r = 0; r < overlaps.size() && r < job.ranks.size(); ++r) {
    const RankOverlap& ro = overlaps[r];
    const model::RankTrace& rank = job.ranks[r];
    const StepPlan& plan = ro.plan;
    if (plan.steps.empty() || r >= activities.size()) continue;
    // Ordinal of the next all-reduce per comm within the current step (calls in time order).
    std::vector<std::pair<uint64_t, std::size_t>> ordinal;
    int32_t ordinal_step = -1;
    std::size_t cursor = 0;
    bool any = false;
    std::shared_ptr<const IntervalSet> compute_set;  // unpacked at the first all-reduce
    for (std::size_t i = 0; i < rank.calls.size() && i < plan.step_of_call.size(); ++i) {
      const model::CallEvent& c = rank.calls[i];
      const int32_t step = plan.step_of_call[i];
      if (c.func != format::Func::kAllReduce || step < static_cast<int32_t>(plan.warmup) ||
          !c.has_gpu()) {
        continue;
      }
      // Compute recorded only in windows: its overlap is known only in the steps inside them.
      if (ro.sampled &&
          (static_cast<std::size_t>(step) >= ro.steps.size() || !ro.steps[step].sampled)) {
        continue;
      }
      if (step != ordinal_step) {
        ordinal.clear();
        ordinal_step = step;
      }
      auto slot = std::find_if(ordinal.begin(), ordinal.end(),
                               [&](const auto& o) { return o.first == c.comm_id; });
      if (slot == ordinal.end()) slot = ordinal.insert(ordinal.end(), {c.comm_id, 0});
      const std::size_t ord = slot->second++;
      // try_emplace: no node is allocated when the bucket exists (every call but the first).
      auto [it, inserted] = index.try_emplace(Key{c.comm_id, ord, c.bytes()}, rows.size());
      if (inserted) {
        BucketRow added;
        added.comm_id = c.comm_id;
        added.ordinal = ord;
        added.bytes = c.bytes();
        rows.push_back(added);
      }
      BucketRow& row = rows[it->second];
      ++row.occurrences;
      row.gpu_ns += c.gpu_end_ns - c.gpu_start_ns;
      if (!compute_set) compute_set = activities.compute(r);
      const IntervalSet& compute = *compute_set;
      if (i > 0 && c.gpu_start_ns < rank.calls[i - 1].gpu_start_ns) cursor = 0;  // not in order
      const int64_t gpu = c.gpu_end_ns - c.gpu_start_ns;
      const int64_t under = compute.length_within(c.gpu_start_ns, c.gpu_end_ns, cursor);
      row.overlapped_ns += under;
      const double share = gpu > 0 ? static_cast<double>(under) / static_cast<double>(gpu) : 0.0;
      const double exposed = static_cast<double>(gpu - under);
      row.share_sum += share;
      row.share_sq += share * share;
      row.exposed_sq_ns2 += exposed * exposed;
      any = true;
    }
    if (any) steady_pairs += ro.steady_steps;
  }
  std::vector<BucketRow> out;
  for (const BucketRow& row : rows) {
    if (2 * row.occurrences >= steady_pairs) out.push_back(row);
  }
  std::sort(out.begin(), out.end(), [](const BucketRow& a, const BucketRow& b) {
    return std::tie(a.comm_id, a.ordinal, a.bytes) < std::tie(b.comm_id, b.ordinal, b.bytes);
  });
  return out;
}

}  // namespace ncclwatch::analysis
