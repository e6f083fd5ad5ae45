// Overlap finding, the "Overlap" section (per-rank, per-step and per-bucket tables) and JSON
// overlap[] / overlap_analysis / buckets[].
#pragma once

#include <vector>

#include "analysis/bucket_table.h"
#include "analysis/data_support.h"
#include "analysis/overlap.h"
#include "analysis/straggler_verdict.h"
#include "model/report.h"

namespace ncclwatch::analysis {

// Job-wide sums over the ranks whose overlap is measurable.
struct JobOverlap {
  std::size_t ranks = 0;
  std::size_t rank_steps = 0;  // steady steps summed over those ranks
  OverlapTotals totals;
  double overlap_pct() const;
  double per_step(int64_t ns) const;  // mean per (rank, steady step); whole window if no steps
  double step_ns() const;             // mean steady step length
  static JobOverlap of(const std::vector<RankOverlap>& overlaps);
};

class OverlapReport {
 public:
  // Which finding of the report costs most: this one, the front straggler, or another (the
  // pattern's stall): "fix it first" and similar advice go to the largest only.
  enum class Largest : uint8_t { kThis, kStraggler, kOther };
  // `stragglers` names whom the exposed wait is spent on; `support` what the data supports
  // (single rank: no waiting/transfer split; sampled compute: labelled; lossy: information).
  static void write(const std::vector<RankOverlap>& overlaps, const std::vector<BucketRow>& buckets,
                    const StragglerResult& stragglers, const DataSupport& support, Largest largest,
                    model::Report& report);
  static std::string headline(const JobOverlap& job, const StragglerResult& stragglers,
                              const DataSupport& support = {}, Largest largest = Largest::kThis);
  // Exposed communication as a share of the step (the line's figure), and the finding's cost:
  // that, less the exposed waiting the straggler, node and slow-link findings already count.
  static double exposed_pct(const JobOverlap& job);
  static double cost_pct(const JobOverlap& job, const StragglerResult& stragglers);
  static std::string not_measurable(const std::vector<RankOverlap>& overlaps,
                                    const DataSupport& support);
  // The two halves of write(): the "Overlap" section's text, and JSON overlap[] /
  // overlap_analysis / buckets[].
  static std::string text(const std::vector<RankOverlap>& overlaps,
                          const std::vector<BucketRow>& buckets);
  static void write_json(const std::vector<RankOverlap>& overlaps,
                         const std::vector<BucketRow>& buckets, model::Report& report);
};

}  // namespace ncclwatch::analysis
