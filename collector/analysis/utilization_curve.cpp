#include "analysis/utilization_curve.h"

#include <algorithm>
#include <map>
#include <set>

#include "model/median.h"
#include "trace/parallel_for.h"

namespace ncclwatch::analysis {
namespace {

constexpr int64_t kMinBinNs = 1000;
constexpr int64_t kSecondNs = 1'000'000'000;

// Shares 0..1 as 0..65535: a rank's bins of every series fit in a few KB even for 4096 ranks.
using Shares = std::vector<uint16_t>;
uint16_t quantize(float v) {
  return static_cast<uint16_t>(std::clamp(v, 0.0f, 1.0f) * 65535.0f + 0.5f);
}
float share(uint16_t q) {
  return static_cast<float>(q) / 65535.0f;
}

// One rank drawn: its index and the offset from its clock to the aligned axis. Its sets are
// unpacked when it is binned (RankActivities), one rank per worker at a time.
struct RankInput {
  std::size_t index = 0;
  int64_t offset = 0;
};

// Which series of one set of bins to compute.
enum Series : unsigned { kBusy = 1, kCompute = 2, kComm = 4 };

struct Binned {
  TimeBins bins;
  unsigned series = kBusy;
  // [rank][bin] per series (empty when not asked for).
  std::vector<Shares> busy, compute, comm;
};

void bin_rank(const RankInput& r, const RankActivity& a, const IntervalSet& kernels,
              std::size_t row, Binned& b, std::vector<float>& scratch) {
  auto put = [&](const IntervalSet& set, std::vector<Shares>& out) {
    cover_fractions(set, r.offset, b.bins, scratch);
    Shares& q = out[row];
    q.resize(scratch.size());
    for (std::size_t k = 0; k < scratch.size(); ++k) q[k] = quantize(scratch[k]);
  };
  if (b.series & kBusy) put(kernels, b.busy);
  if (b.series & kCompute) put(a.compute, b.compute);
  if (b.series & kComm) put(a.comm, b.comm);
}

// Per bin: median (and min, max) over the ranks' rows.
void column_stats(const std::vector<Shares>& rows, std::size_t bins, std::vector<float>* median,
                  std::vector<float>* lo = nullptr, std::vector<float>* hi = nullptr) {
  std::vector<uint16_t> column(rows.size());
  if (median) median->assign(bins, 0.0f);
  if (lo) lo->assign(bins, 0.0f);
  if (hi) hi->assign(bins, 0.0f);
  if (rows.empty()) return;
  for (std::size_t b = 0; b < bins; ++b) {
    for (std::size_t r = 0; r < rows.size(); ++r) column[r] = rows[r][b];
    if (lo) (*lo)[b] = share(*std::min_element(column.begin(), column.end()));
    if (hi) (*hi)[b] = share(*std::max_element(column.begin(), column.end()));
    if (median) (*median)[b] = share(model::median_in_place(std::span<uint16_t>(column)));
  }
}

JobCurve job_curve(const Binned& b) {
  JobCurve c;
  c.bins = b.bins;
  column_stats(b.busy, b.bins.count, &c.busy, &c.busy_min, &c.busy_max);
  if (b.series & kCompute) column_stats(b.compute, b.bins.count, &c.compute);
  if (b.series & kComm) column_stats(b.comm, b.bins.count, &c.comm);
  return c;
}

// Every set of bins at once, one rank per task.
void bin_all(const std::vector<RankInput>& ranks, const RankActivities& activities,
             std::vector<Binned*> sets, unsigned threads) {
  for (Binned* b : sets) {
    if (b->series & kBusy) b->busy.resize(ranks.size());
    if (b->series & kCompute) b->compute.resize(ranks.size());
    if (b->series & kComm) b->comm.resize(ranks.size());
  }
  trace::parallel_for(ranks.size(), threads, [&](std::size_t i) {
    std::vector<float> scratch;
    const std::shared_ptr<const RankActivity> a = activities.at(ranks[i].index);
    const IntervalSet kernels = a->comm.unite(a->compute);  // the busy series: any kernel
    for (Binned* b : sets) bin_rank(ranks[i], *a, kernels, i, *b, scratch);
  });
}

// Stall and checkpoint steps (0-based): the verdict's spike steps and the stragglers' own.
std::map<std::size_t, std::string> special_steps(const PatternVerdict& verdict,
                                                 const StragglerResult& stragglers) {
  std::map<std::size_t, std::string> kinds;
  for (const Straggler& s : stragglers.stragglers) {
    for (std::size_t k : s.spike_steps) kinds[k] = "stall";
  }
  for (std::size_t one_based : verdict.spike_steps) {
    if (one_based == 0) continue;
    kinds[one_based - 1] = verdict.row == PatternRow::kCheckpoint ? "checkpoint" : "stall";
  }
  return kinds;
}

std::vector<StepMark> step_marks(const std::vector<JobStep>& steps,
                                 const std::map<std::size_t, std::string>& special) {
  std::vector<StepMark> marks;
  for (const JobStep& s : steps) {
    StepMark m{s.index + 1, s.begin_ns, s.end_ns, ""};
    if (s.warmup) m.kind = "warmup";
    if (s.partial) m.kind = "partial";
    if (auto it = special.find(s.index); it != special.end() && m.kind.empty()) m.kind = it->second;
    marks.push_back(std::move(m));
  }
  return marks;
}

std::size_t first_steady(const std::vector<JobStep>& steps) {
  std::size_t k = 0;
  while (k < steps.size() && steps[k].warmup) ++k;
  return k < steps.size() ? k : 0;
}

// Steps without the trailing partial one.
std::size_t whole_steps(const std::vector<JobStep>& steps) {
  return !steps.empty() && steps.back().partial ? steps.size() - 1 : steps.size();
}

// The first stall/checkpoint step at or after `from` (0-based), or SIZE_MAX.
std::size_t first_special(const std::vector<StepMark>& marks, std::size_t from) {
  for (std::size_t k = from; k < marks.size(); ++k) {
    if (marks[k].kind == "checkpoint" || marks[k].kind == "stall") return k;
  }
  return SIZE_MAX;
}

// Steps [first, last] (0-based) of the fine window.
std::pair<std::size_t, std::size_t> window_steps(const std::vector<JobStep>& steps,
                                                 const std::vector<StepMark>& marks) {
  const std::size_t n = steps.size();
  if (n <= kCurveWindowSteps) return {0, n - 1};
  std::size_t first = first_steady(steps);
  const std::size_t special = first_special(marks, first);
  if (special != SIZE_MAX && special >= first + kCurveWindowSteps) first = special - 2;
  first = std::min(first, n - kCurveWindowSteps);
  return {first, first + kCurveWindowSteps - 1};
}

// Steps [first, last] (0-based) of the sparkline: a few steady steps, or the steps around the
// first stall/checkpoint step (two before it, it, one after) when there is one.
std::pair<std::size_t, std::size_t> sparkline_steps(const std::vector<JobStep>& steps,
                                                    const std::vector<StepMark>& marks) {
  const std::size_t n = whole_steps(steps) > 0 ? whole_steps(steps) : steps.size();
  std::size_t first = first_steady(steps);
  const std::size_t special = first_special(marks, first);
  if (special != SIZE_MAX && special < n) first = special >= 2 ? special - 2 : 0;
  if (first + kSparklineSteps > n) first = n > kSparklineSteps ? n - kSparklineSteps : 0;
  return {first, std::min(n, first + kSparklineSteps) - 1};
}

std::vector<CurveRow> curve_rows(const model::JobTrace& job, const std::vector<RankInput>& ranks,
                                 const Binned& window, const StragglerResult& stragglers,
                                 bool& aggregated) {
  std::vector<std::size_t> indices;
  for (const RankInput& r : ranks) indices.push_back(r.index);
  const std::vector<std::size_t> order = host_order(job, indices);
  std::map<std::size_t, std::size_t> row_of_index;  // rank index -> position in `ranks`
  for (std::size_t i = 0; i < ranks.size(); ++i) row_of_index[ranks[i].index] = i;
  std::set<std::size_t> late;
  std::set<std::string> late_hosts;
  for (const Straggler& s : stragglers.stragglers) late.insert(s.rank_index);
  for (const NodeProblem& n : stragglers.nodes) late_hosts.insert(n.host);
  const std::size_t n = order.size(), groups = std::min(n, kCurveMaxRows);
  aggregated = groups < n;
  std::vector<CurveRow> rows;
  for (std::size_t g = 0; g < groups; ++g) {
    const std::size_t a = g * n / groups, b = (g + 1) * n / groups;
    CurveRow row;
    std::vector<double> sum(window.bins.count, 0.0);
    std::set<std::string> hosts;
    for (std::size_t k = a; k < b; ++k) {
      const model::RankTrace& rt = job.ranks[order[k]];
      if (row.first_rank < 0) {
        row.first_rank = rt.info.rank;
        row.host = rt.info.host;
      }
      row.last_rank = rt.info.rank;
      hosts.insert(rt.info.host);
      row.straggler = row.straggler || late.count(order[k]) || late_hosts.count(rt.info.host);
      const Shares& busy = window.busy[row_of_index[order[k]]];
      for (std::size_t bin = 0; bin < busy.size(); ++bin) sum[bin] += share(busy[bin]);
    }
    row.ranks = b - a;
    row.hosts = hosts.size();
    row.busy.resize(sum.size());
    for (std::size_t bin = 0; bin < sum.size(); ++bin)
      row.busy[bin] = static_cast<float>(sum[bin] / static_cast<double>(row.ranks));
    rows.push_back(std::move(row));
  }
  return rows;
}

Binned sampled_bins(int64_t origin, int64_t end, int64_t period) {
  Binned b;
  b.series = kBusy;
  const int64_t n = (end - origin) / period;
  const int64_t merged = std::max<int64_t>(
      1, (n + static_cast<int64_t>(kCurveMaxSamples) - 1) / static_cast<int64_t>(kCurveMaxSamples));
  b.bins.begin_ns = origin;
  b.bins.width_ns = period * merged;
  b.bins.count = static_cast<std::size_t>(n / merged);
  return b;
}

}  // namespace

std::vector<std::size_t> host_order(const model::JobTrace& job,
                                    const std::vector<std::size_t>& rank_indices) {
  std::map<std::string, std::size_t> host_rank;  // host -> order of first appearance
  for (std::size_t i : rank_indices) host_rank.emplace(job.ranks[i].info.host, host_rank.size());
  std::vector<std::size_t> out = rank_indices;
  std::stable_sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) {
    const std::size_t ha = host_rank[job.ranks[a].info.host];
    const std::size_t hb = host_rank[job.ranks[b].info.host];
    if (ha != hb) return ha < hb;
    return job.ranks[a].info.rank < job.ranks[b].info.rank;
  });
  return out;
}

UtilizationCurve UtilizationCurve::of(const model::JobTrace& job,
                                      const model::ClockAlignment& clocks,
                                      const RankActivities& activities,
                                      const std::vector<const StepPlan*>& plans,
                                      const PatternVerdict& verdict,
                                      const StragglerResult& stragglers, unsigned threads) {
  UtilizationCurve c;
  c.ranks = job.ranks.size();
  std::vector<RankInput> ranks;
  std::vector<const StepPlan*> gpu_plans(plans.size(), nullptr);
  int64_t begin = INT64_MAX, end = INT64_MIN;
  for (std::size_t i = 0; i < activities.size() && i < job.ranks.size(); ++i) {
    const RankActivities::Summary& a = activities.summary(i);
    if (!a.has_kernel_timeline() || !a.any_kernel) continue;
    RankInput r{i, clocks.at(i)};
    begin = std::min(begin, a.kernels_begin + r.offset);
    end = std::max(end, a.kernels_end + r.offset);
    if (i < plans.size()) gpu_plans[i] = plans[i];
    ranks.push_back(r);
  }
  c.gpu_ranks = ranks.size();
  if (ranks.empty()) return c;

  const std::vector<JobStep> steps = job_steps(gpu_plans, clocks);
  // x = 0 where the first step or the first kernel begins, whichever is first.
  c.origin_ns = steps.empty() ? begin : std::min(begin, steps.front().begin_ns);
  c.steps = step_marks(steps, special_steps(verdict, stragglers));
  c.total_steps = steps.size();
  Binned window, overview, spark;
  window.series = overview.series = kBusy | kCompute | kComm;
  spark.series = kCompute;
  const int64_t max_window_bins = static_cast<int64_t>(kCurveWindowSteps * kCurveBinsPerStep);
  if (steps.empty()) {
    window.bins = TimeBins::nice(begin, end, (end - begin) / max_window_bins, kMinBinNs);
    spark.bins = TimeBins::exact(begin, end, kSparklineChars);
  } else {
    const auto [a, b] = window_steps(steps, c.steps);
    c.first_step = a + 1;
    c.last_step = b + 1;
    const int64_t wb = steps[a].begin_ns, we = steps[b].end_ns;
    window.bins =
        TimeBins::nice(wb, we, median_step_ns(steps) / static_cast<int64_t>(kCurveBinsPerStep),
                       std::max(kMinBinNs, (we - wb) / (2 * max_window_bins)));
    const auto [sa, sb] = sparkline_steps(steps, c.steps);
    c.sparkline.first_step = sa + 1;
    c.sparkline.last_step = sb + 1;
    spark.bins = TimeBins::exact(steps[sa].begin_ns, steps[sb].end_ns, kSparklineChars);
  }
  const int64_t overview_width =
      std::max(window.bins.width_ns,
               nice_ceil((end - begin) / static_cast<int64_t>(kCurveOverviewBins) + 1));
  overview.bins = TimeBins::nice(begin, end, overview_width, overview_width);
  Binned second = sampled_bins(begin, end, kSecondNs);
  Binned tenth = sampled_bins(begin, end, kSecondNs / 10);
  bin_all(ranks, activities, {&window, &overview, &spark, &second, &tenth}, threads);

  c.window = job_curve(window);
  c.overview = job_curve(overview);
  c.rows = curve_rows(job, ranks, window, stragglers, c.rows_aggregated);
  for (const auto* s : {&second, &tenth}) {
    SampledCurve sc;
    sc.period_ns = s == &second ? kSecondNs : kSecondNs / 10;
    sc.merged = static_cast<std::size_t>(s->bins.width_ns / sc.period_ns);
    sc.bins = s->bins;
    column_stats(s->busy, s->bins.count, &sc.busy, &sc.busy_min, &sc.busy_max);
    c.sampled.push_back(std::move(sc));
  }
  c.sparkline.bins = spark.bins;
  column_stats(spark.compute, spark.bins.count, &c.sparkline.compute);
  return c;
}

}  // namespace ncclwatch::analysis
