#include "history/history_report.h"

#include <algorithm>
#include <ctime>

#include <fmt/format.h>

#include "analysis/units.h"
#include "trace/record_names.h"

namespace ncclwatch::history {
namespace {

constexpr int64_t kDayNs = 86'400'000'000'000;

bool with_date(const History& h) {
  if (h.end_wall_ns - h.start_wall_ns >= kDayNs) return true;
  return h.start_wall_ns / kDayNs != h.end_wall_ns / kDayNs;
}

std::string rank_name(const History& h, std::size_t r) {
  const RankSource& s = h.ranks[r];
  return s.rank >= 0 ? fmt::format("rank {}", s.rank) : fmt::format("rank ? ({})", s.host);
}

std::string ms(double v) {
  return v < 0 ? "-" : fmt::format("{:.1f}", v);
}

std::string timing_words(format::StepTiming t) {
  switch (t) {
    case format::StepTiming::kCupti:
      return "GPU figures from CUPTI";
    case format::StepTiming::kEvents:
      return "GPU figures from CUDA events (communication only)";
    default:
      return "host times only (no GPU figures)";
  }
}

// How GPU timing ran outside windows (NCCLWATCH_SUMMARY_GPU), with the auto decision's figures:
// "GPU figures only inside capture windows (auto: 80 kernels/step x 2 us = 5.5% of a 2.9 ms
// step)".
std::string gpu_switch_words(const History& h) {
  const GpuSwitchInfo& g = h.gpu_switch;
  if (!g.known) return timing_words(h.timing);
  std::string why = "NCCLWATCH_SUMMARY_GPU=off";
  if (g.automatic)
    why = fmt::format("auto: {:.4g} {}/step x {:.3g} us = {:.2g}% of a {} step", g.units_per_step,
                      g.lite ? "NCCL calls" : "kernels", g.unit_cost_us, g.cost_pct,
                      analysis::human_time(g.step_ms * 1e6));
  if (g.windows_only) return fmt::format("GPU figures only inside capture windows ({})", why);
  return fmt::format("{} ({}: kept on)", timing_words(h.timing), why);
}

std::string source_words(format::StepSource s) {
  switch (s) {
    case format::StepSource::kNvtx:
      return "steps from NVTX step ranges";
    case format::StepSource::kInterval:
      return "no step structure: one row per second";
    default:
      return "steps from the collective sequence";
  }
}

// The periods merged into at most `rows` groups of neighbours (step-weighted means).
std::vector<Period> rows_of(const std::vector<Period>& ps, std::size_t rows) {
  std::vector<Period> out;
  const std::size_t n = ps.size();
  const std::size_t k = std::min(n, std::max<std::size_t>(rows, 1));
  for (std::size_t g = 0; g < k; ++g) {
    const std::size_t a = g * n / k, b = (g + 1) * n / k;
    Period row = ps[a];
    double* parts[] = {&row.step_ms, &row.compute_ms, &row.exposed_ms, &row.wait_ms, &row.idle_ms};
    double Period::*fields[] = {&Period::step_ms, &Period::compute_ms, &Period::exposed_ms,
                                &Period::wait_ms, &Period::idle_ms};
    for (int f = 0; f < 5; ++f) {
      double sum = 0, w = 0;
      for (std::size_t i = a; i < b; ++i) {
        if (ps[i].*fields[f] < 0) continue;
        sum += ps[i].*fields[f] * static_cast<double>(ps[i].steps);
        w += static_cast<double>(ps[i].steps);
      }
      *parts[f] = w > 0 ? sum / w : -1;
    }
    row.steps = 0;
    for (std::size_t i = a; i < b; ++i) row.steps += ps[i].steps;
    row.last_step = ps[b - 1].last_step;
    row.end_wall_ns = ps[b - 1].end_wall_ns;
    out.push_back(std::move(row));
  }
  return out;
}

double run_time_ms(const History& h) {
  double sum = 0;
  for (const Period& p : h.periods) sum += p.step_ms * static_cast<double>(p.steps);
  return sum;
}

// The share of the run's time the late rank made every other rank wait.
model::FindingCost cost_of(const History& h, const SlowRank& s) {
  const double total = run_time_ms(h);
  double steps = 0;
  for (std::size_t i = s.first_period; i <= s.last_period; ++i)
    steps += static_cast<double>(h.periods[i].ranks[s.rank].late_steps);
  const double pct = total > 0 ? 100.0 * s.late_ms * steps / total : 0.0;
  const double mean_step_ns = h.steps > 0 ? total * 1e6 / static_cast<double>(h.steps) : 0.0;
  return {pct, pct / 100.0 * mean_step_ns};
}

// A warning costs the run at least what a straggler must (analysis::kWarnCostPct of its time);
// less is an info line: a few steps of a noisy machine, or a blip in a run of days.
model::Severity severity_of(const model::FindingCost& c) {
  return c.pct >= analysis::kWarnCostPct ? model::Severity::kWarning : model::Severity::kInfo;
}

model::FindingCost cost_of(const History& h, const Regression& g) {
  const double total = run_time_ms(h);
  const double steps = static_cast<double>(g.last_step - g.first_step + 1);
  const double pct = total > 0 ? 100.0 * (g.step_ms - g.baseline_ms) * steps / total : 0.0;
  const double mean_step_ns = h.steps > 0 ? total * 1e6 / static_cast<double>(h.steps) : 0.0;
  return {pct, pct / 100.0 * mean_step_ns};
}

std::string table(const History& h, std::size_t rows) {
  const bool date = with_date(h);
  std::string out =
      fmt::format("{:<{}}  {:<17} {:>8} {:>8} {:>8} {:>8} {:>8}\n", "from", date ? 19 : 8, "steps",
                  "step", "compute", "exposed", "waiting", "idle");
  for (const Period& p : rows_of(h.periods, rows)) {
    out += fmt::format("{:<{}}  {:<17} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
                       wall_text(p.start_wall_ns, date), date ? 19 : 8,
                       fmt::format("{}-{}", p.first_step, p.last_step), ms(p.step_ms),
                       ms(p.compute_ms), ms(p.exposed_ms), ms(p.wait_ms), ms(p.idle_ms));
  }
  out +=
      "(ms per step: the median rank's, averaged over the row's steps; exposed: communication "
      "not hidden behind compute, waiting for peers taken out)\n";
  return out;
}

// The `n` largest items by `weight`, in their original order; how many were left out.
template <typename T, typename W>
std::vector<const T*> largest(const std::vector<T>& v, std::size_t n, W weight,
                              std::size_t& left_out) {
  std::vector<const T*> p;
  for (const T& x : v) p.push_back(&x);
  if (p.size() > n) {
    std::stable_sort(p.begin(), p.end(),
                     [&](const T* a, const T* b) { return weight(*a) > weight(*b); });
    p.resize(n);
    std::stable_sort(p.begin(), p.end(), [](const T* a, const T* b) { return a < b; });
  }
  left_out = v.size() - p.size();
  return p;
}

}  // namespace

std::string wall_text(int64_t realtime_ns, bool date) {
  const std::time_t t = static_cast<std::time_t>(realtime_ns / 1'000'000'000);
  std::tm tm{};
  if (realtime_ns <= 0 || gmtime_r(&t, &tm) == nullptr) return "?";
  char buf[32];
  std::strftime(buf, sizeof buf, date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm);
  return buf;
}

std::string slow_rank_text(const History& h, const SlowRank& s) {
  const bool date = with_date(h);
  std::string text = fmt::format(
      "{} slow from {} to {} UTC (steps {}-{}): {} late per step ({:.0f}% of the step), cause {}",
      rank_name(h, s.rank), wall_text(s.start_wall_ns, date), wall_text(s.end_wall_ns, date),
      s.first_step, s.last_step, analysis::human_time(s.late_ms * 1e6),
      s.step_ms > 0 ? 100.0 * s.late_ms / s.step_ms : 0.0, analysis::to_string(s.cause));
  if (s.cause == analysis::Cause::kGpuSlow) {
    text += fmt::format(" (compute {} over its peers)",
                        analysis::signed_time(s.compute_excess_ms * 1e6));
  } else if (s.cause == analysis::Cause::kHostStall) {
    text += fmt::format(" (GPU idle {} over its peers: it waited for the host)",
                        analysis::signed_time(s.idle_excess_ms * 1e6));
  } else if (h.timing == format::StepTiming::kNone) {
    text += " (host times only)";
  }
  return text;
}

std::string regression_text(const History& h, const Regression& g) {
  const bool date = with_date(h);
  std::string text = fmt::format(
      "step time {:+.0f}% from step {} ({} UTC) {}: {} against {}",
      100.0 * (g.step_ms / g.baseline_ms - 1.0), g.first_step, wall_text(g.start_wall_ns, date),
      g.until_end ? std::string("to the end")
                  : fmt::format("to step {} ({} UTC)", g.last_step, wall_text(g.end_wall_ns, date)),
      analysis::human_time(g.step_ms * 1e6), analysis::human_time(g.baseline_ms * 1e6));
  if (!g.grew.empty())
    text += fmt::format("; {} grew most ({})", g.grew, analysis::signed_time(g.grew_ms * 1e6));
  if (g.late_rank < h.slow_ranks.size()) {
    const SlowRank& s = h.slow_ranks[g.late_rank];
    text += fmt::format("; {} was late meanwhile (cause {})", rank_name(h, s.rank),
                        analysis::to_string(s.cause));
  }
  return text;
}

void add_history(const History& h, model::Report& report, const HistoryReportOptions& o) {
  if (h.steps == 0) return;
  const bool date = with_date(h);
  std::string body =
      fmt::format("{} ranks, {} steps ({}-{}), {} to {} UTC; {}, {}{}\n", h.ranks.size(), h.steps,
                  h.first_step, h.last_step, wall_text(h.start_wall_ns, date),
                  wall_text(h.end_wall_ns, date), source_words(h.source), gpu_switch_words(h),
                  h.clocks_from_sync ? ", hosts aligned by the first collective's GPU end" : "");
  body += table(h, o.rows);
  std::size_t left = 0;
  const auto slow = largest(
      h.slow_ranks, o.max_lines, [&](const SlowRank& s) { return cost_of(h, s).pct; }, left);
  if (!slow.empty()) body += "late at the first collective:\n";
  for (const SlowRank* s : slow) {
    body += "  " + slow_rank_text(h, *s) + "\n";
    if (o.findings)
      report.findings.push_back(
          {severity_of(cost_of(h, *s)), "history", slow_rank_text(h, *s), cost_of(h, *s)});
  }
  if (left > 0) body += fmt::format("  and {} more span(s) (JSON: history.late_ranks)\n", left);
  const auto regs = largest(
      h.regressions, o.max_lines, [&](const Regression& g) { return cost_of(h, g).pct; }, left);
  if (!regs.empty()) body += "regressions:\n";
  for (const Regression* g : regs) {
    body += "  " + regression_text(h, *g) + "\n";
    if (o.findings)
      report.findings.push_back(
          {severity_of(cost_of(h, *g)), "history", regression_text(h, *g), cost_of(h, *g)});
  }
  if (left > 0) body += fmt::format("  and {} more (JSON: history.regressions)\n", left);
  if (slow.empty() && regs.empty()) body += "no rank late and no regression over the run\n";
  if (h.out_of_order > 0)
    body += fmt::format("{} summaries skipped: a step number their rank had passed already\n",
                        h.out_of_order);
  report.sections.insert(report.sections.begin(), {"History", body});
  report.json["history"] = history_json(h);
}

namespace {

nlohmann::json gpu_switch_json(const GpuSwitchInfo& g) {
  if (!g.known) return nullptr;
  nlohmann::json j = {{"outside_windows", g.windows_only ? "off" : "on"},
                      {"decided_by", g.automatic ? "auto" : "setting"},
                      {"ranks", g.ranks}};
  if (g.automatic) {
    j["units"] = g.lite ? "nccl_calls" : "kernels";
    j["units_per_step"] = g.units_per_step;
    j["unit_cost_us"] = g.unit_cost_us;
    j["step_ms"] = g.step_ms;
    j["cost_pct"] = g.cost_pct;
  }
  return j;
}

}  // namespace

nlohmann::json history_json(const History& h) {
  using nlohmann::json;
  const auto figure = [](double v) { return v < 0 ? json(nullptr) : json(v); };
  json periods = json::array();
  for (const Period& p : h.periods) {
    json worst = nullptr;
    std::size_t w = p.ranks.size();
    for (std::size_t r = 0; r < p.ranks.size(); ++r)
      if (p.ranks[r].late_steps > 0 &&
          (w == p.ranks.size() || p.ranks[r].late_ms > p.ranks[w].late_ms))
        w = r;
    if (w < p.ranks.size()) worst = {{"rank", h.ranks[w].rank}, {"late_ms", p.ranks[w].late_ms}};
    periods.push_back({{"first_step", p.first_step},
                       {"last_step", p.last_step},
                       {"steps", p.steps},
                       {"start_realtime_ns", p.start_wall_ns},
                       {"end_realtime_ns", p.end_wall_ns},
                       {"step_ms", p.step_ms},
                       {"compute_ms", figure(p.compute_ms)},
                       {"exposed_ms", figure(p.exposed_ms)},
                       {"wait_ms", figure(p.wait_ms)},
                       {"idle_ms", figure(p.idle_ms)},
                       {"calls", p.calls},
                       {"bytes", p.bytes},
                       {"latest", worst}});
  }
  json late = json::array();
  for (const SlowRank& s : h.slow_ranks) {
    const model::FindingCost c = cost_of(h, s);
    late.push_back({{"rank", h.ranks[s.rank].rank},
                    {"host", h.ranks[s.rank].host},
                    {"first_step", s.first_step},
                    {"last_step", s.last_step},
                    {"start_realtime_ns", s.start_wall_ns},
                    {"end_realtime_ns", s.end_wall_ns},
                    {"late_ms", s.late_ms},
                    {"step_ms", s.step_ms},
                    {"cause", analysis::to_string(s.cause)},
                    {"compute_excess_ms", figure(s.compute_excess_ms)},
                    {"idle_excess_ms", figure(s.idle_excess_ms)},
                    {"cost_pct", c.pct},
                    {"text", slow_rank_text(h, s)}});
  }
  json regs = json::array();
  for (const Regression& g : h.regressions) {
    regs.push_back({{"first_step", g.first_step},
                    {"last_step", g.last_step},
                    {"start_realtime_ns", g.start_wall_ns},
                    {"end_realtime_ns", g.end_wall_ns},
                    {"until_end", g.until_end},
                    {"baseline_ms", g.baseline_ms},
                    {"step_ms", g.step_ms},
                    {"grew", g.grew.empty() ? json(nullptr) : json(g.grew)},
                    {"grew_ms", g.grew.empty() ? json(nullptr) : json(g.grew_ms)},
                    {"late_rank", g.late_rank < h.slow_ranks.size()
                                      ? json(h.ranks[h.slow_ranks[g.late_rank].rank].rank)
                                      : json(nullptr)},
                    {"cost_pct", cost_of(h, g).pct},
                    {"text", regression_text(h, g)}});
  }
  return {{"ranks", h.ranks.size()},
          {"steps", h.steps},
          {"first_step", h.first_step},
          {"last_step", h.last_step},
          {"start_realtime_ns", h.start_wall_ns},
          {"end_realtime_ns", h.end_wall_ns},
          {"step_source", trace::step_source_name(static_cast<uint8_t>(h.source))},
          {"timing", trace::step_timing_name(static_cast<uint8_t>(h.timing))},
          {"gpu_timing", gpu_switch_json(h.gpu_switch)},
          {"clocks", h.clocks_from_sync ? "sync" : "wall"},
          {"out_of_order", h.out_of_order},
          {"periods", periods},
          {"late_ranks", late},
          {"regressions", regs}};
}

}  // namespace ncclwatch::history
