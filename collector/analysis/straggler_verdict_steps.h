// Internal to the straggler verdict (straggler_verdict.h): its steps, one class over the state
// they share. straggler_verdict.cpp judges each rank (samples, thresholds, the persistent,
// periodic and spikes tests, again beside the persistent stragglers);
// straggler_verdict_summary.cpp draws what follows from the ranks named (where and how late
// each is and what it costs, node problems, causes and slow links, the order, the delays alike
// on every rank).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "analysis/arrivals.h"
#include "analysis/overlap.h"
#include "analysis/straggler_stats.h"
#include "analysis/straggler_verdict.h"
#include "model/clock_alignment.h"
#include "model/job_trace.h"
#include "model/match_result.h"
#include "trace/parallel_for.h"

namespace ncclwatch::analysis::verdict_detail {

inline constexpr int64_t kNoStep = std::numeric_limits<int64_t>::min();

// One rank's samples: per step (index = its step index; absent steps not present) or, without
// usable steps, per instance it took part in.
struct Samples {
  std::vector<double> d;  // lateness minus the reference of its step (or instance)
  std::vector<bool> present;
  std::size_t first = 0;  // first steady index
  std::vector<double> values() const {
    std::vector<double> v;
    for (std::size_t k = first; k < d.size(); ++k) {
      if (present[k]) v.push_back(d[k]);
    }
    return v;
  }
};

// The verdict's steps, in order (StragglerResult::of), over the state they share.
class Verdict {
 public:
  Verdict(const model::JobTrace& job, const model::MatchResult& match,
          const model::ClockAlignment& clocks, const Arrivals& arrivals,
          const std::vector<RankOverlap>& overlaps, unsigned workers, StragglerResult& out)
      : job_(job),
        match_(match),
        clocks_(clocks),
        arrivals_(arrivals),
        overlaps_(overlaps),
        out_(out),
        st_(out.stats),
        n_(out.stats.ranks.size()),
        workers_(workers) {}

  void describe();
  bool find_active();  // false: fewer than 2 ranks took part, nothing to compare
  void residuals();
  void thresholds();
  void count_spikes();
  void null_of_medians();
  void judge_ranks();
  void find_node_problems();
  void attribute();
  void sort_by_cost();
  void summarize_nodes();
  void job_wide_delays();

 private:
  std::size_t warmup_of(std::size_t r) const {
    return r < overlaps_.size() ? overlaps_[r].plan.warmup : 0;
  }
  struct Shift {
    double p_sign = 1;     // sign test, corrected for the ranks
    bool shifted = false;  // a persistent straggler on these samples
  };
  Shift shift_of(const std::vector<double>& v) const;
  // One rank's verdict, computed apart (ranks in parallel) and applied in rank order.
  struct Judgement {
    bool named = false;
    Straggler straggler;
    std::vector<std::size_t> one_off_steps;  // spike steps no pattern explains
  };
  Judgement judge_rank(std::size_t r) const;
  bool step_residuals(const std::vector<bool>& excluded, std::vector<Samples>& out) const;
  void judge_beside_persistent(std::vector<Judgement>& judged);
  // A rank's lateness where it happens: the median over its steady steps of its worst lateness
  // per step (without usable steps: the median of its per-collective lateness). NaN: no sample.
  double typical_lateness(std::size_t r) const;
  // Exposed waiting caused (ns, steady state) as a share of the job's rank-time, in %.
  double cost_pct(double inflicted) const {
    return window_sum_ > 0 ? 100.0 * inflicted / window_sum_ : 0;
  }
  void cost(const RankArrivalStats& ra, const Samples& sm, double e, Straggler& s) const;
  // body(i) for each active_ index i, on the verdict's workers.
  template <typename Body>
  void for_active(Body&& body) const {
    trace::parallel_for(active_.size(), workers_, std::forward<Body>(body));
  }

  const model::JobTrace& job_;
  const model::MatchResult& match_;
  const model::ClockAlignment& clocks_;
  const Arrivals& arrivals_;
  const std::vector<RankOverlap>& overlaps_;
  StragglerResult& out_;
  const ArrivalStats& st_;
  const std::size_t n_;
  const unsigned workers_;

  std::vector<std::size_t> active_;
  double window_sum_ = 0;  // the job's rank-time: sum of the active ranks' steady windows
  double rank_steps_ = 0;  // ... and of their steady steps
  std::size_t max_steps_ = 0;
  std::vector<Samples> smp_;
  // Per rank index, the per-step lateness the samples are made of: ArrivalStats', or, after
  // judge_beside_persistent, that measured beside the persistent stragglers (beside_lateness_).
  std::vector<const std::vector<int64_t>*> lat_;
  std::vector<std::vector<int64_t>> beside_lateness_;
  std::vector<bool> beside_;  // ranks left out of the references and the spike background
  double sigma_ = 0, nact_ = 0, z_ = 0, late_ = 0, spike_t_ = 0, tie_ = 1;
  std::vector<std::vector<bool>> spike_;
  std::vector<std::size_t> nspikes_, nsteps_;
  std::size_t all_spikes_ = 0, all_steps_ = 0;
  double median_e_ = 0, spread_e_ = 0;
  std::vector<bool> persistent_;
  std::vector<int64_t> steady_inflicted_;
  double explained_by_links_ = 0;
};

}  // namespace ncclwatch::analysis::verdict_detail
