// Overlap finding, the "Overlap" section (per-rank, per-step and per-bucket tables) and JSON
// overlap[] / overlap_analysis / buckets[].
#pragma once

#include <vector>

#include "analysis/bucket_table.h"
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
  // `stragglers` names whom the exposed wait is spent on.
  static void write(const std::vector<RankOverlap>& overlaps, const std::vector<BucketRow>& buckets,
                    const StragglerResult& stragglers, model::Report& report);
  static std::string headline(const JobOverlap& job, const StragglerResult& stragglers);
  // The two halves of write(): the "Overlap" section's text, and JSON overlap[] /
  // overlap_analysis / buckets[].
  static std::string text(const std::vector<RankOverlap>& overlaps,
                          const std::vector<BucketRow>& buckets);
  static void write_json(const std::vector<RankOverlap>& overlaps,
                         const std::vector<BucketRow>& buckets, model::Report& report);
};

}  // namespace ncclwatch::analysis
