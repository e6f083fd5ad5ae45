#include "analysis/straggler_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "analysis/units.h"

namespace ncclwatch::analysis {
namespace {

constexpr std::size_t kMaxFindings = 5;
constexpr std::size_t kMaxTableRows = 32;

std::string who(int32_t rank, const std::string& host) {
  return host.empty() ? fmt::format("rank {}", rank) : fmt::format("rank {} ({})", rank, host);
}

std::string step_list(const std::vector<std::size_t>& steps) {
  std::string out;
  for (std::size_t i = 0; i < steps.size() && i < 4; ++i) {
    out += (i ? ", " : "") + std::to_string(steps[i] + 1);
  }
  if (steps.size() > 4) out += ", ...";
  return out;
}

double us(double ns) {
  return ns / 1000.0;
}

std::string ordinal(std::size_t n) {
  const char* suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return std::to_string(n) + suffix;
}

}  // namespace

std::string StragglerReport::line(const Straggler& s, const std::string& what) {
  switch (s.pattern) {
    case Pattern::kPeriodic:
      return fmt::format("{} is late every {} step (steps {}), +{} each; {}", who(s.rank, s.host),
                         ordinal(s.period_steps), step_list(s.spike_steps),
                         human_time(s.spike_lateness_ns), s.because);
    case Pattern::kSpikes:
      return fmt::format("{} is late in {} steps (steps {}), +{} each; {}", who(s.rank, s.host),
                         s.spike_steps.size(), step_list(s.spike_steps),
                         human_time(s.spike_lateness_ns), s.because);
    case Pattern::kPersistent:
      break;
  }
  // "+X each time": its lateness when it was the one everybody waited for (the mean over all
  // instances, diluted by the ones it was on time for, is in the section and JSON).
  return fmt::format(
      "{} arrives last at {:.0f}% of {}, +{} each time; {}", who(s.rank, s.host),
      s.arrived_last_pct, what,
      human_time(s.lateness_when_last_ns > 0 ? s.lateness_when_last_ns : s.mean_lateness_ns),
      s.because);
}

void StragglerReport::write(const StragglerResult& r, model::Report& report) {
  const bool host_only = r.gpu_instances == 0 && r.host_instances > 0;
  // Findings: node problems first (they explain several ranks at once), then single ranks.
  for (const NodeProblem& n : r.nodes) {
    std::string ranks;
    for (int32_t k : n.ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(k);
    const auto first = std::find_if(r.stragglers.begin(), r.stragglers.end(),
                                    [&](const Straggler& s) { return s.host == n.host; });
    report.findings.push_back(
        {model::Severity::kWarning, "stragglers",
         fmt::format("node {} (ranks {}) arrives last at {:.0f}% of {}, +{} — node problem (its "
                     "data loading, storage, CPU or NIC){}",
                     n.host, ranks, n.arrived_last_pct, r.what, human_time(n.mean_lateness_ns),
                     first != r.stragglers.end() ? "; " + first->cause + ": " + first->evidence
                                                 : std::string())});
  }
  std::size_t shown = 0;
  for (const Straggler& s : r.stragglers) {
    if (s.node_problem || shown == kMaxFindings) continue;
    ++shown;
    report.findings.push_back({model::Severity::kWarning, "stragglers", line(s, r.what)});
  }
  double worst_last = 0, worst_fair = 0, worst_late = 0;
  for (const RankArrivalStats& s : r.stats.ranks) {
    if (s.instances && s.last_pct() >= worst_last) {
      worst_last = s.last_pct();
      worst_fair = s.fair_last_pct;
    }
    worst_late = std::max(worst_late, s.mean_lateness_ns());
  }
  if (r.stragglers.empty() && r.instances > 0) {
    report.findings.push_back(
        {model::Severity::kInfo, "stragglers",
         fmt::format("no straggler: ranks take turns arriving last (at most {:.0f}% vs {:.0f}% "
                     "fair share), worst mean lateness {} (threshold {}){}",
                     worst_last, worst_fair, signed_time(worst_late),
                     human_time(static_cast<double>(r.late_ns)),
                     host_only ? "; arrivals are host call entries (host-only records)" : "")});
  }

  // Section.
  std::string body = fmt::format(
      "{} matched collective instances; arrival = {}.\n"
      "noise (median per-rank lateness jitter) {}; median step {}.\n"
      "straggler: mean lateness >= {} (max(3 x noise, 100 µs, 1% of a step)) and last at more "
      "than halfway between fair share and 100% (last% and fair% count instances not tied), or "
      "spike-late in half its steps; spike step: >= {} late (max(10 x noise, 500 µs, 10% of a "
      "step)), 3+ on one spacing = periodic, 3+ = spikes; ties within {} are nobody's.\n\n",
      r.instances, r.timestamps, human_time(static_cast<double>(r.stats.noise_ns)),
      human_time(static_cast<double>(r.step_ns)), human_time(static_cast<double>(r.late_ns)),
      human_time(static_cast<double>(r.spike_ns)), human_time(static_cast<double>(r.tie_ns)));
  body += fmt::format("{:>6} {:<16} {:>9} {:>7} {:>7} {:>11} {:>11} {:>10}\n", "rank", "host",
                      "instances", "last%", "fair%", "lateness", "inflicted", "jitter");
  std::vector<const RankArrivalStats*> rows;
  for (const RankArrivalStats& s : r.stats.ranks) {
    if (s.instances) rows.push_back(&s);
  }
  std::sort(rows.begin(), rows.end(), [](const RankArrivalStats* a, const RankArrivalStats* b) {
    return a->inflicted_wait_ns > b->inflicted_wait_ns;
  });
  for (std::size_t i = 0; i < rows.size() && i < kMaxTableRows; ++i) {
    const RankArrivalStats& s = *rows[i];
    body += fmt::format("{:>6} {:<16} {:>9} {:>6.1f}% {:>6.1f}% {:>11} {:>11} {:>10}\n", s.rank,
                        s.host.substr(0, 16), s.instances, s.last_pct(), s.fair_last_pct,
                        signed_time(s.mean_lateness_ns()),
                        human_time(static_cast<double>(s.inflicted_wait_ns)),
                        human_time(static_cast<double>(s.lateness_spread_ns)));
  }
  if (rows.size() > kMaxTableRows)
    body += fmt::format("... {} more ranks\n", rows.size() - kMaxTableRows);
  body +=
      "\nper node (last = its latest rank beat every other node's by more than the tie "
      "epsilon):\n";
  for (const HostArrivalStats& h : r.stats.hosts) {
    if (h.instances) {
      body += fmt::format("  {:<16} {} ranks, last at {:.1f}% of {} instances\n", h.host,
                          h.rank_indices.size(), h.last_pct(), h.instances);
    }
  }
  if (r.stragglers.empty()) body += "\nno straggler.\n";
  for (const Straggler& s : r.stragglers) {
    body +=
        fmt::format("\n{} [{}{}]: {}\n  cause {}: {}\n", who(s.rank, s.host), to_string(s.pattern),
                    s.node_problem ? ", node" : "", line(s, r.what), s.cause, s.evidence);
  }
  if (!r.one_offs.empty()) {
    body += "\none-off late steps (not counted as stragglers):\n";
    for (const std::string& o : r.one_offs) body += "  " + o + "\n";
  }
  report.sections.push_back({"Stragglers", body});

  // JSON.
  nlohmann::json list = nlohmann::json::array();
  for (const Straggler& s : r.stragglers) {
    nlohmann::json steps = nlohmann::json::array();
    for (std::size_t k : s.spike_steps) steps.push_back(k + 1);
    list.push_back({{"rank", s.rank},
                    {"host", s.host},
                    {"arrived_last_pct", s.arrived_last_pct},
                    {"mean_lateness_us", us(s.mean_lateness_ns)},
                    {"inflicted_wait_us", us(static_cast<double>(s.inflicted_wait_ns))},
                    {"lateness_when_last_us", us(s.lateness_when_last_ns)},
                    {"cause", s.cause},
                    {"evidence", s.evidence},
                    {"pattern", to_string(s.pattern)},
                    {"period_steps", s.period_steps},
                    {"spike_steps", steps},
                    {"spike_lateness_us", us(s.spike_lateness_ns)},
                    {"node_problem", s.node_problem}});
  }
  report.json["stragglers"] = list;
  nlohmann::json nodes = nlohmann::json::array();
  for (const NodeProblem& n : r.nodes) {
    nodes.push_back({{"host", n.host},
                     {"ranks", n.ranks},
                     {"arrived_last_pct", n.arrived_last_pct},
                     {"mean_lateness_us", us(n.mean_lateness_ns)}});
  }
  report.json["straggler_analysis"] = {{"timestamps", r.host_instances == 0  ? "gpu_kernel_start"
                                                      : r.gpu_instances == 0 ? "call_entry"
                                                                             : "mixed"},
                                       {"instances", r.instances},
                                       {"noise_us", us(static_cast<double>(r.stats.noise_ns))},
                                       {"late_threshold_us", us(static_cast<double>(r.late_ns))},
                                       {"spike_threshold_us", us(static_cast<double>(r.spike_ns))},
                                       {"step_us", us(static_cast<double>(r.step_ns))},
                                       {"tie_us", us(static_cast<double>(r.tie_ns))},
                                       {"node_problems", nodes}};
}

}  // namespace ncclwatch::analysis
