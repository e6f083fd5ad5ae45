#include "analysis/analyze.h"

#include <vector>

#include "analysis/arrivals.h"
#include "analysis/bucket_table.h"
#include "analysis/cross_node_comm.h"
#include "analysis/overlap.h"
#include "analysis/overlap_report.h"
#include "analysis/pattern_report.h"
#include "analysis/rank_activity.h"
#include "analysis/step_breakdown.h"
#include "analysis/step_breakdown_report.h"
#include "analysis/step_plan.h"
#include "analysis/straggler_report.h"
#include "analysis/straggler_verdict.h"
#include "analysis/utilization_pattern.h"

namespace ncclwatch::analysis {

void analyze(const model::JobTrace& job, const model::MatchResult& match,
             const model::ClockAlignment& clocks, model::Report& report) {
  std::vector<RankActivity> activities;
  activities.reserve(job.ranks.size());
  for (const model::RankTrace& r : job.ranks) activities.push_back(RankActivity::of(r));

  const Arrivals arrivals = Arrivals::of(job, match, clocks, default_tie_ns(clocks));
  const std::vector<IntervalSet> waits = peer_wait_sets(job, match, clocks, arrivals);

  std::vector<RankOverlap> overlaps;
  overlaps.reserve(job.ranks.size());
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    const RankActivity& a = activities[i];
    StepPlan plan = StepDetector::detect(job.ranks[i], a.first_ns, a.last_ns);
    overlaps.push_back(OverlapAnalysis::of_rank(job.ranks[i], i, a, std::move(plan), waits[i]));
  }
  const std::vector<BucketRow> buckets = BucketTable::of(job, overlaps, activities);
  const StragglerResult stragglers = StragglerResult::of(job, match, clocks, arrivals, overlaps);

  std::vector<RankBreakdown> breakdowns;
  breakdowns.reserve(job.ranks.size());
  std::vector<const StepPlan*> plans;
  plans.reserve(job.ranks.size());
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    breakdowns.push_back(
        StepBreakdownAnalysis::of_rank(job.ranks[i], i, activities[i], overlaps[i].plan, waits[i]));
    plans.push_back(&overlaps[i].plan);
  }
  const PatternVerdict verdict = PatternVerdict::judge(job, breakdowns, stragglers);
  const std::vector<CrossNodeComm> cross_node = CrossNodeComm::find(job, activities, plans);

  // Finding order: stragglers, the pattern verdict, overlap (the terminal sorts by severity).
  StragglerReport::write(stragglers, report);
  PatternReport::write(verdict, stragglers, cross_node, report);
  OverlapReport::write(overlaps, buckets, stragglers, report);
  StepBreakdownReport::write(breakdowns, report);
}

}  // namespace ncclwatch::analysis
