// The straggler verdict's last steps (straggler_verdict_steps.h): what follows from the ranks
// named — where and how late each is and what it costs, node problems, causes and slow links,
// the order by cost, and the delays alike on every rank.
#include <algorithm>
#include <map>

#include "analysis/slow_link.h"
#include "analysis/straggler_cause.h"
#include "analysis/straggler_verdict_steps.h"

namespace ncclwatch::analysis::verdict_detail {
namespace {

// The most frequent value of `ordinal` over `steps` (ties: the smaller), with its func.
void late_at(const RankArrivalStats& r, const std::vector<std::size_t>& steps, Straggler& s) {
  std::map<uint16_t, std::size_t> counts;
  for (std::size_t k : steps) {
    if (k < r.step_late_ordinal.size() && r.step_late_ordinal[k] > 0)
      ++counts[r.step_late_ordinal[k]];
  }
  std::size_t best = 0;
  for (const auto& [ord, c] : counts) {
    if (c > best) {
      best = c;
      s.late_at_ordinal = ord;
    }
  }
  for (std::size_t k : steps) {
    if (k < r.step_late_ordinal.size() && r.step_late_ordinal[k] == s.late_at_ordinal) {
      s.late_at_func = r.step_late_func[k];
      break;
    }
  }
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const auto at = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(at), v.end());
  return v[at];
}

}  // namespace

// Where and how late a named straggler is, and what it costs.
void Verdict::cost(const RankArrivalStats& ra, const Samples& sm, double e, Straggler& s) const {
  const std::size_t r = s.rank_index;
  std::vector<std::size_t> affected;
  if (s.pattern == Pattern::kPersistent) {
    for (std::size_t k = sm.first; k < sm.d.size(); ++k) {
      if (sm.present[k] && sm.d[k] >= late_ / 2) affected.push_back(k);
    }
    s.lateness_ns = out_.per_step ? out_.rank_lateness_ns[r] : e;
    s.late_steps = affected.size();
  } else {
    double sum = 0;
    for (std::size_t k : s.spike_steps) sum += static_cast<double>((*lat_[r])[k]);
    s.spike_lateness_ns = sum / static_cast<double>(s.spike_steps.size());
    s.lateness_ns = s.spike_lateness_ns;
    s.late_steps = s.spike_steps.size();
    affected = s.spike_steps;
  }
  if (out_.per_step) late_at(ra, affected, s);
  s.cost_pct = out_.rank_cost_pct[r];
  s.cost_ns_per_step = out_.per_step ? s.cost_pct / 100.0 * out_.cost_unit_ns : 0;
  s.warning = window_sum_ <= 0 || s.cost_pct >= kWarnCostPct;
}

// Node problems: every rank of a host (2+ ranks, 2+ hosts) persistently late.
void Verdict::find_node_problems() {
  std::size_t active_hosts = 0;
  for (const HostArrivalStats& h : st_.hosts) {
    bool any = false;
    for (std::size_t r : h.rank_indices) any = any || st_.ranks[r].instances > 0;
    active_hosts += any;
  }
  std::vector<bool> node_late(n_, false);
  for (const HostArrivalStats& h : st_.hosts) {
    if (active_hosts < 2 || h.rank_indices.size() < 2) continue;
    bool all = true;
    for (std::size_t r : h.rank_indices) all = all && persistent_[r];
    if (!all) continue;
    NodeProblem np{h.host, {}, h.last_pct(), 0};
    for (std::size_t r : h.rank_indices) {
      np.ranks.push_back(st_.ranks[r].rank);
      node_late[r] = true;
    }
    out_.nodes.push_back(std::move(np));
  }
  for (Straggler& s : out_.stragglers) s.node_problem = node_late[s.rank_index];
}

// Causes, then the slow links: ranks late behind a slow transfer leave the stragglers.
void Verdict::attribute() {
  attribute_causes(job_, match_, clocks_, arrivals_, overlaps_, persistent_, out_);
  out_.links = SlowLink::find(job_, match_, clocks_, arrivals_);
  explained_by_links_ =
      attribute_to_links(job_, active_, steady_inflicted_, late_, window_sum_, out_);
  for (SlowLink& l : out_.links)
    l.cost_ns_per_step = out_.per_step ? l.cost_pct / 100.0 * out_.cost_unit_ns : 0;
}

void Verdict::sort_by_cost() {
  std::sort(out_.stragglers.begin(), out_.stragglers.end(),
            [](const Straggler& a, const Straggler& b) {
              if (a.cost_ns_per_step != b.cost_ns_per_step)
                return a.cost_ns_per_step > b.cost_ns_per_step;
              if (a.inflicted_wait_ns != b.inflicted_wait_ns)
                return a.inflicted_wait_ns > b.inflicted_wait_ns;
              return a.lateness_ns > b.lateness_ns;
            });
}

// A node problem's lateness and cost: those of its ranks.
void Verdict::summarize_nodes() {
  for (NodeProblem& np : out_.nodes) {
    std::size_t k = 0;
    for (const Straggler& s : out_.stragglers) {
      if (s.host != np.host || !s.node_problem) continue;
      np.mean_lateness_ns += s.mean_lateness_ns;
      np.lateness_ns += s.lateness_ns;
      np.cost_ns_per_step += s.cost_ns_per_step;
      np.cost_pct += s.cost_pct;
      ++k;
    }
    if (k) {
      np.mean_lateness_ns /= static_cast<double>(k);
      np.lateness_ns /= static_cast<double>(k);
    }
    np.warning = window_sum_ <= 0 || np.cost_pct >= kWarnCostPct;
  }
  std::sort(out_.nodes.begin(), out_.nodes.end(), [](const NodeProblem& a, const NodeProblem& b) {
    return a.cost_ns_per_step > b.cost_ns_per_step;
  });
}

// Delays alike on every rank: the waiting no straggler (or slow link) explains.
void Verdict::job_wide_delays() {
  double explained = explained_by_links_;
  std::vector<bool> named(n_, false);
  for (const Straggler& s : out_.stragglers) {
    explained += static_cast<double>(steady_inflicted_[s.rank_index]);
    named[s.rank_index] = true;
  }
  for (const SlowLink& l : out_.links) {
    for (std::size_t r : l.behind) named[r] = true;
  }
  const double noise_wait =
      std::max(0.0, static_cast<double>(st_.steady_exposed_wait_ns) - explained);
  std::vector<double> xs;
  for (std::size_t r : active_) {
    if (named[r]) continue;
    if (out_.per_step) {
      const auto& x = st_.ranks[r].step_lateness_ns;
      for (std::size_t k = warmup_of(r); k < x.size(); ++k) {
        if (x[k] != kNoStep) xs.push_back(static_cast<double>(x[k]));
      }
    } else {
      for (double d : smp_[r].d) xs.push_back(d);
    }
  }
  out_.delays.up_to_ns = std::max(0.0, percentile(std::move(xs), 0.99));
  out_.delays.cost_pct = cost_pct(noise_wait);
  out_.delays.cost_ns_per_step =
      out_.per_step ? out_.delays.cost_pct / 100.0 * out_.cost_unit_ns : 0;
  out_.delays.reported = out_.delays.cost_pct >= kWarnCostPct;
}

}  // namespace ncclwatch::analysis::verdict_detail
