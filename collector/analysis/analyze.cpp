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
#include "trace/parallel_for.h"

namespace ncclwatch::analysis {

void analyze(const model::JobTrace& job, const model::MatchResult& match,
             const model::ClockAlignment& clocks, model::Report& report, unsigned threads) {
  const unsigned workers = trace::worker_count(threads);
  const std::size_t n = job.ranks.size();
  const Arrivals arrivals = Arrivals::of(job, match, clocks, default_tie_ns(clocks), workers);
  const std::vector<IntervalSet> waits = peer_wait_sets(job, match, clocks, arrivals);

  // Everything that looks at one rank alone: most of the work, and independent across ranks.
  std::vector<RankActivity> activities(n);
  std::vector<RankOverlap> overlaps(n);
  std::vector<RankBreakdown> breakdowns(n);
  std::vector<nlohmann::json> breakdown_rows(n);
  std::vector<StepPlan> plans(n);
  std::vector<Interval> bounds(n);
  trace::parallel_for(n, workers, [&](std::size_t i) {
    activities[i] = RankActivity::of(job.ranks[i]);
    bounds[i] = {activities[i].first_ns, activities[i].last_ns};
    plans[i] = StepDetector::detect(job.ranks[i], bounds[i].begin, bounds[i].end);
  });
  StepDetector::agree(job, bounds, plans);
  trace::parallel_for(n, workers, [&](std::size_t i) {
    const model::RankTrace& rank = job.ranks[i];
    const RankActivity& a = activities[i];
    overlaps[i] = OverlapAnalysis::of_rank(rank, i, a, std::move(plans[i]), waits[i]);
    breakdowns[i] = StepBreakdownAnalysis::of_rank(rank, i, a, overlaps[i].plan, waits[i]);
    breakdown_rows[i] = StepBreakdownReport::rank_json(breakdowns[i], n);
  });

  // The straggler verdict (the longest pass left) beside the job-wide tables.
  StragglerResult stragglers;
  std::vector<BucketRow> buckets;
  std::vector<CrossNodeComm> cross_node;
  trace::parallel_for(2, workers, [&](std::size_t task) {
    if (task == 0) {
      stragglers = StragglerResult::of(job, match, clocks, arrivals, overlaps, workers);
      return;
    }
    buckets = BucketTable::of(job, overlaps, activities);
    std::vector<const StepPlan*> plans;
    plans.reserve(n);
    for (const RankOverlap& o : overlaps) plans.push_back(&o.plan);
    cross_node = CrossNodeComm::find(job, activities, plans);
  });
  const PatternVerdict verdict = PatternVerdict::judge(job, breakdowns, stragglers);

  // Finding order: stragglers, the pattern verdict, overlap (the terminal sorts by severity).
  StragglerReport::write(stragglers, report);
  PatternReport::write(verdict, stragglers, cross_node, report);
  OverlapReport::write(overlaps, buckets, stragglers, report);
  StepBreakdownReport::write(breakdowns, std::move(breakdown_rows), report);
}

}  // namespace ncclwatch::analysis
