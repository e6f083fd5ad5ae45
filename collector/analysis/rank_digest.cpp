#include "analysis/rank_digest.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "analysis/data_support.h"
#include "analysis/step_breakdown.h"

namespace ncclwatch::analysis {

StepKernels StepKernels::of(const model::RankTrace& rank, const StepPlan& plan) {
  StepKernels k;
  k.step_windows = StepBreakdownAnalysis::windows_of(plan);
  k.per_step = StepBreakdownAnalysis::compute_kernels_in(rank, k.step_windows);
  k.table_windows = KernelTable::windows_of(plan);
  k.table = KernelTable::of_rank(rank, k.table_windows);
  return k;
}

bool StepKernels::fits(const StepPlan& plan) const {
  return step_windows == StepBreakdownAnalysis::windows_of(plan) &&
         table_windows == KernelTable::windows_of(plan);
}

std::vector<int64_t> kernel_duration_sample(const model::RankTrace& rank) {
  const auto counted = [](const model::KernelEvent& k) {
    return k.kind == format::ActivityKind::kKernel && !k.nccl && k.end_ns >= k.start_ns;
  };
  const auto n =
      static_cast<std::size_t>(std::count_if(rank.kernels.begin(), rank.kernels.end(), counted));
  const std::size_t stride = (n + kKernelSamplePerRank - 1) / kKernelSamplePerRank;
  std::vector<int64_t> out;
  out.reserve(std::min(n, kKernelSamplePerRank));
  std::size_t i = 0;
  for (const model::KernelEvent& k : rank.kernels) {
    if (!counted(k)) continue;
    if (i++ % stride == 0) out.push_back(k.end_ns - k.start_ns);
  }
  return out;
}

RankDigest RankDigest::of(const model::RankTrace& rank) {
  RankDigest d;
  d.activity = PackedActivity::pack(RankActivity::of(rank));
  d.compute_windows = DataSupport::compute_windows_of(rank);
  d.step_kernels =
      StepKernels::of(rank, StepDetector::detect(rank, d.activity.first_ns, d.activity.last_ns));
  d.kernel_sample = kernel_duration_sample(rank);
  return d;
}

bool records_are_one_whole_run(const model::RankTrace& rank) {
  return rank.windows.empty() ||
         std::any_of(rank.windows.begin(), rank.windows.end(), [](const model::WindowMark& w) {
           return w.trigger == format::WindowTrigger::kWholeRun;
         });
}

model::DroppedGpuRecords dropped_records_of(const model::RankTrace& rank) {
  model::DroppedGpuRecords d;
  d.kernels = rank.kernels.size();
  // A sorted vector, not a hash set: one node allocation per kernel was a tenth of the reduce.
  std::vector<uint32_t> ran;
  ran.reserve(rank.kernels.size());
  for (const model::KernelEvent& k : rank.kernels) {
    ran.push_back(k.correlation);
    const auto f = static_cast<std::size_t>(k.family);
    if (k.nccl && f != 0 && f < d.comm_kernels.size()) ++d.comm_kernels[f];
  }
  // Correlation ids grow with the launches: mostly sorted already.
  if (!std::is_sorted(ran.begin(), ran.end())) std::sort(ran.begin(), ran.end());
  for (const format::KernelLinkRecord& l : rank.links) {
    if (!std::binary_search(ran.begin(), ran.end(), l.correlation))
      d.launched_without_kernel.emplace_back(l.comm_id, l.seq);
  }
  std::sort(d.launched_without_kernel.begin(), d.launched_without_kernel.end());
  d.launched_without_kernel.erase(
      std::unique(d.launched_without_kernel.begin(), d.launched_without_kernel.end()),
      d.launched_without_kernel.end());
  return d;
}

void digest_and_drop(model::RankTrace& rank,
                     std::function<std::optional<model::RankTrace>(std::string& why)> reload) {
  auto digest = std::make_shared<RankDigest>(RankDigest::of(rank));
  digest->reload = std::move(reload);
  rank.dropped = std::make_shared<model::DroppedGpuRecords>(dropped_records_of(rank));
  rank.digest = std::move(digest);
  std::vector<model::KernelEvent>().swap(rank.kernels);
  std::vector<model::LaunchEvent>().swap(rank.launches);
  std::vector<format::KernelLinkRecord>().swap(rank.links);
  std::vector<format::CollGpuRecord>().swap(rank.coll_gpu);
}

std::shared_ptr<const StepKernels> step_kernels_for(const model::RankTrace& rank,
                                                    const StepPlan& plan, std::string& why) {
  if (!rank.digest) return std::make_shared<const StepKernels>(StepKernels::of(rank, plan));
  if (rank.digest->step_kernels.fits(plan))  // the digest's, kept alive with it
    return std::shared_ptr<const StepKernels>(rank.digest, &rank.digest->step_kernels);
  if (rank.digest->reload) {
    if (std::optional<model::RankTrace> whole = rank.digest->reload(why))
      return std::make_shared<const StepKernels>(StepKernels::of(*whole, plan));
  } else {
    why = "its GPU records were dropped and cannot be read again";
  }
  auto none = std::make_shared<StepKernels>();
  none->step_windows = StepBreakdownAnalysis::windows_of(plan);
  none->table_windows = KernelTable::windows_of(plan);
  return none;
}

}  // namespace ncclwatch::analysis
