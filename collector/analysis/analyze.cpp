#include "analysis/analyze.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/arrivals.h"
#include "analysis/bucket_table.h"
#include "analysis/cross_node_comm.h"
#include "analysis/data_support.h"
#include "analysis/kernel_table.h"
#include "analysis/overlap.h"
#include "analysis/overlap_report.h"
#include "analysis/pattern_report.h"
#include "analysis/rank_activities.h"
#include "analysis/rank_digest.h"
#include "analysis/step_breakdown.h"
#include "analysis/step_breakdown_report.h"
#include "analysis/step_plan.h"
#include "analysis/step_swimlane.h"
#include "analysis/straggler_report.h"
#include "analysis/straggler_verdict.h"
#include "analysis/utilization_curve.h"
#include "analysis/utilization_pattern.h"
#include "analysis/utilization_report.h"
#include "trace/parallel_for.h"

namespace ncclwatch::analysis {

namespace {

// Which analysis finding costs most (warnings only): "fix it first" goes there alone.
OverlapReport::Largest largest_cost(const StragglerResult& s, const PatternVerdict& v,
                                    const std::vector<RankOverlap>& overlaps) {
  double straggler = 0;
  for (const Straggler& x : s.stragglers)
    if (x.warning) straggler = std::max(straggler, x.cost_pct);
  for (const NodeProblem& x : s.nodes)
    if (x.warning) straggler = std::max(straggler, x.cost_pct);
  const double stall =
      v.severity == model::Severity::kWarning && v.row != PatternRow::kLagging ? v.cost_pct : 0.0;
  const double overlap = OverlapReport::cost_pct(JobOverlap::of(overlaps), s);
  if (straggler > 0 && straggler >= stall && straggler >= overlap)
    return OverlapReport::Largest::kStraggler;
  return stall > overlap ? OverlapReport::Largest::kOther : OverlapReport::Largest::kThis;
}

}  // namespace

void analyze(const model::JobTrace& job, const model::MatchResult& match,
             const model::ClockAlignment& clocks, model::Report& report, unsigned threads) {
  const unsigned workers = trace::worker_count(threads);
  const std::size_t n = job.ranks.size();
  const DataSupport support = DataSupport::of(job, match);
  // The arrivals (~100 bytes per rank-step) are measured twice: for the waits, then again for
  // the straggler verdict, so that they and the waits are never in memory together with the
  // per-rank results (the analyses' peak; Arrivals::of is a small part of their time).
  const int64_t tie_ns = default_tie_ns(clocks);
  std::vector<IntervalSet> waits =
      peer_wait_sets(job, match, clocks, Arrivals::of(job, match, clocks, tie_ns, workers));

  // Everything that looks at one rank alone: most of the work, and independent across ranks.
  // A rank's activity is its digest's, unpacked for one use at a time (packed: ~4 bytes a span
  // instead of 16), or computed here.
  const RankActivities activities(job, workers);
  std::vector<RankOverlap> overlaps(n);
  std::vector<RankBreakdown> breakdowns(n);
  std::vector<nlohmann::json> breakdown_rows(n);
  std::vector<StepPlan> plans(n);
  std::vector<Interval> bounds(n);
  trace::parallel_for(n, workers, [&](std::size_t i) {
    const model::RankTrace& rank = job.ranks[i];
    bounds[i] = {activities.summary(i).first_ns, activities.summary(i).last_ns};
    plans[i] = StepDetector::detect(rank, bounds[i].begin, bounds[i].end);
  });
  StepDetector::agree(job, bounds, plans);
  // What the steps need of the GPU records: from each rank's digest (or its records).
  std::vector<std::shared_ptr<const StepKernels>> step_kernels(n);
  std::vector<std::string> unread(n);
  trace::parallel_for(n, workers, [&](std::size_t i) {
    step_kernels[i] = step_kernels_for(job.ranks[i], plans[i], unread[i]);
  });
  trace::parallel_for(n, workers, [&](std::size_t i) {
    const model::RankTrace& rank = job.ranks[i];
    const std::shared_ptr<const RankActivity> held = activities.at(i);
    const RankActivity& a = *held;
    const std::optional<IntervalSet>& windows = support.ranks[i].compute_windows;
    const IntervalSet* compute_windows = windows ? &*windows : nullptr;
    overlaps[i] =
        OverlapAnalysis::of_rank(rank, i, a, std::move(plans[i]), waits[i], compute_windows);
    breakdowns[i] = StepBreakdownAnalysis::of_rank(rank, i, a, overlaps[i].plan, waits[i],
                                                   compute_windows, &step_kernels[i]->per_step);
    breakdown_rows[i] = StepBreakdownReport::rank_json(breakdowns[i], n);
  });
  std::vector<const StepPlan*> plan_of;  // each rank's plan, now held by its RankOverlap
  plan_of.reserve(n);
  for (const RankOverlap& o : overlaps) plan_of.push_back(&o.plan);
  // The swimlanes are the waits' last use: drawn now, the waits go before the straggler verdict.
  std::vector<StepLanes> lanes = StepSwimlanes::draw(job, clocks, activities, plan_of, waits);
  std::vector<IntervalSet>().swap(waits);

  // The straggler verdict (the longest pass left) beside the job-wide tables.
  std::optional<Arrivals> arrivals = Arrivals::of(job, match, clocks, tie_ns, workers);
  StragglerResult stragglers;
  std::vector<BucketRow> buckets;
  std::vector<CrossNodeComm> cross_node;
  trace::parallel_for(2, workers, [&](std::size_t task) {
    if (task == 0) {
      stragglers = StragglerResult::of(job, match, clocks, *arrivals, overlaps, workers);
      return;
    }
    buckets = BucketTable::of(job, overlaps, activities);
    cross_node = CrossNodeComm::find(job, activities, plan_of);
  });
  arrivals.reset();  // the verdict was their last use
  support.gate(stragglers.stragglers);
  StepSwimlanes::mark_stragglers(job, stragglers, lanes);
  const PatternVerdict verdict = PatternVerdict::judge(job, breakdowns, stragglers);
  // The shape behind the verdict, drawn: the curve, its sparkline, one step on every rank.
  const UtilizationCurve curve =
      UtilizationCurve::of(job, clocks, activities, plan_of, verdict, stragglers, workers);
  std::vector<RankKernels> kernel_parts(n);
  for (std::size_t i = 0; i < n; ++i) {
    kernel_parts[i] = step_kernels[i]->table;
    step_kernels[i].reset();
  }
  const KernelTable kernels = KernelTable::merge(kernel_parts);

  // Every finding carries its cost; the renderers order them by it (model::ordered_findings).
  StragglerReport::write(stragglers, support, report);
  PatternReport::write(verdict, stragglers, cross_node, support, report);
  OverlapReport::write(overlaps, buckets, stragglers, support,
                       largest_cost(stragglers, verdict, overlaps), report);
  StepBreakdownReport::write(breakdowns, std::move(breakdown_rows), support, report);
  UtilizationReport::write(curve, lanes, report);
  kernels.write_json(report);
  for (std::size_t i = 0; i < n; ++i) {
    if (unread[i].empty()) continue;
    report.findings.push_back(
        {model::Severity::kWarning, "collector",
         "rank " + std::to_string(job.ranks[i].info.rank) + ": " + unread[i] +
             "; its compute kernels per step and its kernel table are left out"});
  }
}

}  // namespace ncclwatch::analysis
