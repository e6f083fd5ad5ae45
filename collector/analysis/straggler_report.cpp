#include "analysis/straggler_report.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "analysis/units.h"
#include "model/vocabulary.h"

namespace ncclwatch::analysis {
namespace {

using model::us;

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

nlohmann::json us_or_null(double ns) {
  return std::isnan(ns) ? nlohmann::json() : nlohmann::json(us(ns));
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

std::string rank_list(const std::vector<int32_t>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size() && i < 8; ++i)
    out += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > 8) out += fmt::format(", ... ({} ranks)", ranks.size());
  return out;
}

std::string host_list(const std::vector<std::string>& hosts) {
  std::string out;
  for (std::size_t i = 0; i < hosts.size() && i < 4; ++i) out += (i ? ", " : "") + hosts[i];
  if (hosts.size() > 4) out += fmt::format(", ... ({} hosts)", hosts.size());
  return out;
}

}  // namespace

std::string StragglerReport::evidence(const Straggler& s) {
  const CauseEvidence& e = s.evidence;
  const char* base = e.against_own_steps ? "in its other steps" : "on its peers";
  switch (s.cause) {
    case Cause::kGpuSlow:
      return fmt::format("compute {}/step vs {} {} (+{}); GPU idle {}/step vs {}",
                         human_time(e.compute_ns), human_time(e.base_compute_ns), base,
                         human_time(e.compute_ns - e.base_compute_ns), human_time(e.idle_ns),
                         human_time(e.base_idle_ns));
    case Cause::kHostStall:
      return fmt::format(
          "GPU idle {}/step vs {} {} (+{}), {} of it right before collectives; compute {}/step "
          "vs {}",
          human_time(e.idle_ns), human_time(e.base_idle_ns), base,
          human_time(e.idle_ns - e.base_idle_ns), human_time(e.idle_before_comm_ns),
          human_time(e.compute_ns), human_time(e.base_compute_ns));
    case Cause::kNetwork:
      return fmt::format("transfer time per byte on its comms is {:.1f}x that of comms without it",
                         e.transfer_ratio);
    case Cause::kCpuContention:
      return fmt::format(
          "its NCCL-calling threads waited for a CPU {}/step vs {} {} (+{}; run-queue wait, "
          "/proc schedstat){}",
          human_time(e.cpu_wait_ns), human_time(e.base_cpu_wait_ns), base,
          human_time(e.cpu_wait_ns - e.base_cpu_wait_ns),
          e.host_only || e.no_compute
              ? ""
              : fmt::format("; GPU idle {}/step vs {}", human_time(e.idle_ns),
                            human_time(e.base_idle_ns)));
    case Cause::kUnknown:
    case Cause::kCount:
      break;
  }
  if (e.host_only) {
    return fmt::format(
        "host-only records: its calls enter {} after the median rank's; GPU timing is needed to "
        "tell gpu-slow from host-stall or a slow network link",
        human_time(std::max(0.0, s.lateness_ns)));
  }
  if (e.no_compute) {
    return fmt::format(
        "no compute kernels recorded for it (lite mode?): its collectives start {} after the "
        "median rank's",
        human_time(std::max(0.0, s.lateness_ns)));
  }
  return "neither its compute nor its GPU idle time differs enough to explain the lateness";
}

std::string StragglerReport::cause_text(const Straggler& s) {
  const bool own = s.evidence.against_own_steps;
  switch (s.cause) {
    case Cause::kGpuSlow:
      return own ? "extra GPU work (evaluation?)"
                 : "slow GPU (clocks, thermals, a noisy neighbour?)";
    case Cause::kHostStall:
      return own ? "host-side stall (checkpoint or evaluation?)"
                 : "host-side stall (data loading?)";
    case Cause::kNetwork:
      return "network (NIC, link, switch?)";
    case Cause::kCpuContention:
      return "CPU contention (other processes or threads on its cores: pinning, data-loader "
             "workers, an oversubscribed node?)";
    case Cause::kUnknown:
    case Cause::kCount:
      break;
  }
  return "cause unknown";
}

std::string StragglerReport::because(const Straggler& s) {
  const CauseEvidence& e = s.evidence;
  const char* base = e.against_own_steps ? "in its other steps" : "on its peers";
  switch (s.cause) {
    case Cause::kGpuSlow:
      return fmt::format("its compute takes {}/step vs {} {} — {}: {}", human_time(e.compute_ns),
                         human_time(e.base_compute_ns), base, to_string(s.cause), cause_text(s));
    case Cause::kHostStall:
      return fmt::format("its GPU idles {}/step ({} {}) — {}: {}", human_time(e.idle_ns),
                         human_time(e.base_idle_ns), base, to_string(s.cause), cause_text(s));
    case Cause::kNetwork:
      return fmt::format("its collectives transfer {:.1f}x slower than comms without it — {}: {}",
                         e.transfer_ratio, to_string(s.cause), cause_text(s));
    case Cause::kCpuContention:
      return fmt::format("its process waited for a CPU {}/step ({} {}) — {}: {}",
                         human_time(e.cpu_wait_ns), human_time(e.base_cpu_wait_ns), base,
                         to_string(s.cause), cause_text(s));
    case Cause::kUnknown:
    case Cause::kCount:
      break;
  }
  if (e.host_only || e.no_compute) return "cause unknown (" + evidence(s) + ")";
  return "cause unknown (compute and GPU idle look like its peers')";
}

std::string StragglerReport::link_line(const SlowLink& l) {
  const std::string where =
      l.hosts_alike.empty()
          ? fmt::format("at {}", l.host)
          : fmt::format("at one of {}, {} (they share every communicator: cannot be told apart)",
                        l.host, host_list(l.hosts_alike));
  const std::string late = l.late_ranks.empty()
                               ? std::string()
                               : fmt::format(" — late because of it, not stragglers: ranks {} ({})",
                                             rank_list(l.late_ranks), host_list(l.late_hosts));
  return fmt::format(
      "slow network link {}: its {} cross-node communicators transfer {:.1f}x slower per byte "
      "than the {} without it ({} vs {} per collective) — its NIC, cable or switch port; "
      "{}{}",
      where, l.comms.size(), l.slowdown, l.comms_without, human_time(l.transfer_ns),
      human_time(l.others_transfer_ns), cost_words(l.cost_pct, l.cost_ns_per_step), late);
}

std::string StragglerReport::where(const Straggler& s) {
  static const char* const kWords[] = {"", "first", "second", "third"};
  const std::string nth =
      s.late_at_ordinal < 4 ? kWords[s.late_at_ordinal] : ordinal(s.late_at_ordinal);
  return fmt::format("the {} {}", nth, func_name(s.late_at_func));
}

std::string StragglerReport::cost_words(double pct, double ns_per_step) {
  // Without steps there is no per-step figure: the share alone (of the traced time).
  if (ns_per_step <= 0)
    return fmt::format("costing {:.1f}% of the traced time in exposed waiting", pct);
  return fmt::format("costing {}/step ({:.1f}% of step time) in exposed waiting",
                     human_time(ns_per_step), pct);
}

std::string StragglerReport::cost(const Straggler& s) {
  return cost_words(s.cost_pct, s.cost_ns_per_step);
}

std::string StragglerReport::line(const Straggler& s, const std::string& what) {
  switch (s.pattern) {
    case Pattern::kPeriodic:
      return fmt::format("{} is {} late every {} step (steps {}) at {} of the step, {}; {}",
                         who(s.rank, s.host), human_time(s.lateness_ns), ordinal(s.period_steps),
                         step_list(s.spike_steps), where(s), cost(s), because(s));
    case Pattern::kSpikes:
      return fmt::format(
          "{} is {} late in {} of {} steps (steps {}), more often than its peers, at {} of the "
          "step, {}; {}",
          who(s.rank, s.host), human_time(s.lateness_ns), s.spike_steps.size(), s.steady_steps,
          step_list(s.spike_steps), where(s), cost(s), because(s));
    case Pattern::kPersistent:
    case Pattern::kCount:
      break;
  }
  if (s.steady_steps == 0 || s.late_steps == 0) {  // no steps: per-collective samples
    return fmt::format("{} is {} late at its {} (median), {}; {}", who(s.rank, s.host),
                       human_time(s.lateness_ns), what, cost(s), because(s));
  }
  const std::string when =
      10 * s.late_steps >= 9 * s.steady_steps
          ? std::string("every step")
          : fmt::format("the step in {} of {} steps", s.late_steps, s.steady_steps);
  return fmt::format("{} is {} late at {} of {}, {}; {}", who(s.rank, s.host),
                     human_time(s.lateness_ns), where(s), when, cost(s), because(s));
}

void StragglerReport::write(const StragglerResult& r, const DataSupport& support,
                            model::Report& report) {
  write_findings(r, support, report);
  write_section(r, support, report);
  write_json(r, report);
}

// Findings, costliest first; the "no straggler" and job-wide delay lines.
void StragglerReport::write_findings(const StragglerResult& r, const DataSupport& support,
                                     model::Report& report) {
  const bool host_only = r.gpu_instances == 0 && r.host_instances > 0;
  if (!support.cross_rank) {
    if (support.any_instance) {
      report.findings.push_back(
          {model::Severity::kInfo, "stragglers",
           "stragglers not judged: no collective was matched across two or more traced ranks "
           "(one rank's trace?), so nobody's lateness or waiting for peers can be measured"});
    }
    return;
  }
  // Findings, costliest first: a node problem explains several ranks at once and costs their sum.
  struct Line {
    double cost;
    model::Finding finding;
  };

  std::vector<Line> lines;
  for (const NodeProblem& n : r.nodes) {
    std::string ranks;
    for (int32_t k : n.ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(k);
    const auto first = std::find_if(r.stragglers.begin(), r.stragglers.end(),
                                    [&](const Straggler& s) { return s.host == n.host; });
    std::string at = "its collectives";
    if (first != r.stragglers.end() && first->late_steps) at = where(*first) + " of every step";
    lines.push_back(
        {n.cost_ns_per_step,
         {n.warning ? model::Severity::kWarning : model::Severity::kInfo, "stragglers",
          fmt::format("node {} (ranks {}) is {} late at {}, {} — node problem (its data "
                      "loading, storage, CPU or NIC){}",
                      n.host, ranks, human_time(n.lateness_ns), at,
                      cost_words(n.cost_pct, n.cost_ns_per_step),
                      first != r.stragglers.end()
                          ? fmt::format("; {}: {}", to_string(first->cause), evidence(*first))
                          : std::string()),
          model::FindingCost{n.cost_pct, n.cost_ns_per_step}}});
  }
  for (const SlowLink& l : r.links) {
    lines.push_back({l.cost_ns_per_step,
                     {l.warning ? model::Severity::kWarning : model::Severity::kInfo, "stragglers",
                      link_line(l), model::FindingCost{l.cost_pct, l.cost_ns_per_step}}});
  }
  std::size_t shown = 0;
  for (const Straggler& s : r.stragglers) {
    if (s.node_problem || shown == kMaxFindings) continue;
    ++shown;
    lines.push_back(
        {s.cost_ns_per_step,
         {s.warning ? model::Severity::kWarning : model::Severity::kInfo, "stragglers",
          line(s, r.what) + s.unsupported, model::FindingCost{s.cost_pct, s.cost_ns_per_step}}});
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const Line& a, const Line& b) { return a.cost > b.cost; });
  for (Line& l : lines) report.findings.push_back(std::move(l.finding));
  if (r.stragglers.empty() && r.links.empty() && r.instances > 0) {
    report.findings.push_back(
        {model::Severity::kInfo, "stragglers",
         fmt::format("no straggler: no rank's lateness differs from its peers' (sign and phase "
                     "tests at {:.0f}% family-wise error over {} ranks){}",
                     100 * r.alpha, r.ranks,
                     host_only ? "; arrivals are host call entries (host-only records)" : "")});
  }
  if (r.delays.reported) {
    report.findings.push_back(
        {model::Severity::kInfo, "stragglers",
         fmt::format("random delays of up to {} on every rank (OS jitter, GC, CPU contention), "
                     "{}; no rank is singled out",
                     human_time(r.delays.up_to_ns),
                     cost_words(r.delays.cost_pct, r.delays.cost_ns_per_step)),
         model::FindingCost{r.delays.cost_pct, r.delays.cost_ns_per_step}});
  }
}

// The "Stragglers" section: how it was measured, the rank table, every verdict with its cause.
void StragglerReport::write_section(const StragglerResult& r, const DataSupport& support,
                                    model::Report& report) {
  if (!support.cross_rank) {
    report.sections.push_back(
        {"Stragglers",
         "not judged: no collective was matched across two or more traced ranks, so no rank's "
         "lateness (against the others' arrivals) can be measured.\n"});
    return;
  }
  std::string body = fmt::format(
      "{} matched collective instances; arrival = {}.\n"
      "samples: {}; noise σ (median per-rank 1.4826 x MAD of lateness minus the step's median "
      "rank) {}; median step {}.\n"
      "straggler: lateness differs from its peers' — more late {} than a fair coin allows "
      "(sign test) or a median excess beyond z x σ/√n (Bonferroni over {} ranks, {:.0f}% "
      "family-wise), and median excess >= {} (max(100 µs, 1% of a step)); periodic: spikes "
      "(>= {} = max(500 µs, 10% of a step, 5σ)) on one phase of a period in >= 80% of its "
      "steps, chance excluded after correction; spikes: more spike steps than the peers' rate "
      "explains. A straggler costing < 1% of step time is info. Ties within {} are nobody's.\n"
      "late/step: median over its steady steps of its worst lateness per step (a persistent "
      "straggler's figure; periodic ones give the mean over their late steps); cost: the exposed "
      "waiting it causes its peers, as time per step and share of step time (docs/verdicts.md); "
      "last%: share of decided collectives it arrived last at (fair%: by chance).\n\n",
      r.instances, r.timestamps,
      r.per_step ? fmt::format("worst lateness per steady step ({} steps)", r.steady_steps)
                 : std::string("lateness per collective (no usable steps)"),
      human_time(static_cast<double>(r.stats.noise_ns)), human_time(static_cast<double>(r.step_ns)),
      r.per_step ? "steps" : "collectives", r.ranks, 100 * r.alpha,
      human_time(static_cast<double>(r.late_ns)), human_time(static_cast<double>(r.spike_ns)),
      human_time(static_cast<double>(r.tie_ns)));
  body += fmt::format("{:>6} {:<16} {:>9} {:>7} {:>7} {:>11} {:>11} {:>7} {:>10}\n", "rank", "host",
                      "instances", "last%", "fair%", "late/step", "cost/step", "cost%", "jitter");
  std::vector<const RankArrivalStats*> rows;
  for (const RankArrivalStats& s : r.stats.ranks) {
    if (s.instances) rows.push_back(&s);
  }
  const auto cost_of = [&](const RankArrivalStats* s) {
    return s->rank_index < r.rank_cost_pct.size() ? r.rank_cost_pct[s->rank_index] : 0.0;
  };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const RankArrivalStats* a, const RankArrivalStats* b) {
                     return cost_of(a) > cost_of(b);
                   });
  for (std::size_t i = 0; i < rows.size() && i < kMaxTableRows; ++i) {
    const RankArrivalStats& s = *rows[i];
    const double late = s.rank_index < r.rank_lateness_ns.size()
                            ? r.rank_lateness_ns[s.rank_index]
                            : std::numeric_limits<double>::quiet_NaN();
    const double cost = cost_of(&s);
    body += fmt::format("{:>6} {:<16} {:>9} {:>6.1f}% {:>6.1f}% {:>11} {:>11} {:>6.1f}% {:>10}\n",
                        s.rank, s.host.substr(0, 16), s.instances, s.last_pct(), s.fair_last_pct,
                        std::isnan(late) ? std::string("-") : signed_time(late),
                        r.per_step ? human_time(cost / 100.0 * r.cost_unit_ns) : std::string("-"),
                        cost, human_time(static_cast<double>(s.lateness_spread_ns)));
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
    body += fmt::format("\n{} [{}{}]: {}\n  cause {}: {}\n", who(s.rank, s.host),
                        to_string(s.pattern), s.node_problem ? ", node" : "", line(s, r.what),
                        to_string(s.cause), evidence(s));
  }
  for (const SlowLink& l : r.links) body += "\n" + link_line(l) + "\n";
  body += fmt::format(
      "\nslow link: a host each of whose cross-node communicators transfers >= {:.1f}x slower "
      "per byte (median over collectives of >= {} KiB) than those without it.\n",
      kLinkSlowdown, kLinkMinBytes / 1024);
  if (!r.one_offs.empty()) {
    body += "\none-off late steps (not counted as stragglers):\n";
    for (const std::string& o : r.one_offs) body += "  " + o + "\n";
    if (r.one_offs_total > r.one_offs.size())
      body += fmt::format("  ... {} more\n", r.one_offs_total - r.one_offs.size());
  }
  if (r.delays.cost_pct >= 0.1) {
    body += fmt::format(
        "\ndelays alike on every rank: up to {} (99th percentile of the unnamed ranks' worst "
        "lateness per step), {:.1f}% of step time ({}/step of waiting summed over ranks).\n",
        human_time(r.delays.up_to_ns), r.delays.cost_pct, human_time(r.delays.cost_ns_per_step));
  }
  report.sections.push_back({"Stragglers", body});
}

// JSON stragglers[], slow_links[] and straggler_analysis (docs/report-schema.md).
void StragglerReport::write_json(const StragglerResult& r, model::Report& report) {
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
                    {"cause", to_string(s.cause)},
                    {"cause_text", cause_text(s)},
                    {"evidence", evidence(s)},
                    {"cpu_wait_us_per_step", us_or_null(s.evidence.cpu_wait_ns)},
                    {"cpu_wait_baseline_us_per_step", us_or_null(s.evidence.base_cpu_wait_ns)},
                    {"pattern", to_string(s.pattern)},
                    {"period_steps", s.period_steps},
                    {"spike_steps", steps},
                    {"spike_lateness_us", us(s.spike_lateness_ns)},
                    {"node_problem", s.node_problem},
                    {"lateness_us", us(s.lateness_ns)},
                    {"late_at", where(s)},
                    {"late_at_call", s.late_at_ordinal},
                    {"late_steps", s.late_steps},
                    {"steady_steps", s.steady_steps},
                    {"cost_us_per_step", us(s.cost_ns_per_step)},
                    {"cost_pct", s.cost_pct},
                    {"severity", s.warning ? "warning" : "info"},
                    {"p_value", s.p_value}});
  }
  report.json["stragglers"] = list;
  nlohmann::json nodes = nlohmann::json::array();
  for (const NodeProblem& n : r.nodes) {
    nodes.push_back({{"host", n.host},
                     {"ranks", n.ranks},
                     {"arrived_last_pct", n.arrived_last_pct},
                     {"mean_lateness_us", us(n.mean_lateness_ns)},
                     {"lateness_us", us(n.lateness_ns)},
                     {"cost_us_per_step", us(n.cost_ns_per_step)},
                     {"cost_pct", n.cost_pct},
                     {"severity", n.warning ? "warning" : "info"}});
  }
  nlohmann::json links = nlohmann::json::array();
  for (const SlowLink& l : r.links) {
    links.push_back({{"host", l.host},
                     {"hosts_alike", l.hosts_alike},
                     {"cause", to_string(Cause::kNetwork)},
                     {"slowdown", l.slowdown},
                     {"transfer_us", us(l.transfer_ns)},
                     {"others_transfer_us", us(l.others_transfer_ns)},
                     {"comms", l.comms.size()},
                     {"comms_without", l.comms_without},
                     {"late_ranks", l.late_ranks},
                     {"cost_us_per_step", us(l.cost_ns_per_step)},
                     {"cost_pct", l.cost_pct},
                     {"severity", l.warning ? "warning" : "info"}});
  }
  report.json["slow_links"] = links;
  report.json["straggler_analysis"] = {{"timestamps", r.host_instances == 0  ? "gpu_kernel_start"
                                                      : r.gpu_instances == 0 ? "call_entry"
                                                                             : "mixed"},
                                       {"instances", r.instances},
                                       {"noise_us", us(static_cast<double>(r.stats.noise_ns))},
                                       {"late_threshold_us", us(static_cast<double>(r.late_ns))},
                                       {"spike_threshold_us", us(static_cast<double>(r.spike_ns))},
                                       {"step_us", us(static_cast<double>(r.step_ns))},
                                       {"tie_us", us(static_cast<double>(r.tie_ns))},
                                       {"node_problems", nodes},
                                       {"samples", r.per_step ? "steps" : "instances"},
                                       {"steady_steps", r.steady_steps},
                                       {"ranks", r.ranks},
                                       {"alpha", r.alpha},
                                       {"job_wide_delays",
                                        {{"up_to_us", us(r.delays.up_to_ns)},
                                         {"cost_us_per_step", us(r.delays.cost_ns_per_step)},
                                         {"cost_pct", r.delays.cost_pct},
                                         {"reported", r.delays.reported}}}};
}

}  // namespace ncclwatch::analysis
