// The terminal output of `ncclwatch diff` (diff_render.h).
#include <cmath>

#include <fmt/format.h>

#include "analysis/units.h"
#include "diff/diff_render.h"

namespace ncclwatch::diff {

std::string value_text(double v, const std::string& unit) {
  if (unit == "us") return analysis::human_time(v * 1e3);
  if (unit == "pct") return fmt::format("{:.1f} %", v);
  if (unit == "gbs") return fmt::format("{:.1f} GB/s", v);
  return fmt::format("{:.3g}", v);
}

std::string cost_text(const std::optional<FindingCost>& cost) {
  if (!cost) return "—";
  return fmt::format("{}/step ({:.1f}% of step time)",
                     analysis::human_time(cost->us_per_step * 1e3), cost->pct);
}

std::string change_text(const Compared& c) {
  if (!c.both()) return "";
  const double d = c.delta();
  if (c.unit == "us") return analysis::signed_time(d * 1e3);
  if (c.unit == "pct") return fmt::format("{:+.1f} pt", d);
  return fmt::format("{:+.1f} %", c.delta_pct());
}

namespace {

std::string side_line(const char* name, const RunSummary& s, const std::string& path,
                      const std::string& kind) {
  std::string l = fmt::format("{:<5} {} ({}", name, path, kind);
  if (!s.job.empty()) l += "; job " + s.job;
  l += fmt::format("; {} ranks on {} hosts", s.ranks, s.hosts);
  if (s.steps > 0) l += fmt::format("; {} steady steps", s.steps);
  if (!s.pattern_row.empty()) l += "; pattern " + s.pattern_row;
  return l + ")\n";
}

std::string table(const std::vector<Compared>& rows, const std::string& title,
                  bool only_changed = false) {
  std::string out;
  for (const Compared& c : rows) {
    if (only_changed && !c.significant) continue;
    out += fmt::format("{} {:<44} {:>12} {:>12} {:>11} {:>12}\n", c.significant ? '*' : ' ',
                       c.label.substr(0, 44), c.base ? value_text(c.base->value, c.unit) : "—",
                       c.now ? value_text(c.now->value, c.unit) : "—", change_text(c),
                       c.both() ? "±" + value_text(c.threshold, c.unit) : "");
  }
  if (out.empty()) return "";
  return fmt::format("\n== {}\n  {:<44} {:>12} {:>12} {:>11} {:>12}\n", title, "", "BASE", "NEW",
                     "change", "limit") +
         out;
}

std::string findings(const DiffResult& r) {
  std::string out;
  for (const auto* list : {&r.stragglers, &r.slow_links}) {
    for (const FindingChange& f : *list) {
      out += fmt::format("{} {:<10} {:<24} {:<10} cause {:<11} cost {} → {}\n",
                         f.flagged ? '*' : ' ', f.kind, f.who, f.where, f.cause,
                         cost_text(f.base_cost), cost_text(f.new_cost));
    }
  }
  if (out.empty()) out = "  none in either run\n";
  return "\n== Stragglers and slow links (each run's own tests; * = in one run only, >= 1 % of "
         "step time)\n" +
         out;
}

std::string environment(const DiffResult& r) {
  std::string out;
  for (const EnvChange& e : r.environment) {
    out += fmt::format("{} {:<40} {:<28} {}\n", e.changed ? '*' : ' ', e.label.substr(0, 40),
                       e.base.empty() ? "—" : e.base, e.now.empty() ? "—" : e.now);
  }
  if (out.empty()) return "";
  return fmt::format(
             "\n== Environment as recorded (* = changed; — = not recorded)\n  {:<40} {:<28} {}\n",
             "", "BASE", "NEW") +
         out;
}

}  // namespace

std::string render_text(const DiffResult& r, const Sides& sides) {
  std::string out = r.verdict + "\n\n";
  out += side_line("BASE", r.base, sides.base_path, sides.base_kind);
  out += side_line("NEW", r.now, sides.new_path, sides.new_kind);
  for (const std::string& n : r.notes) out += "note: " + n + "\n";
  std::vector<Compared> step = {r.step};
  step.insert(step.end(), r.parts.begin(), r.parts.end());
  const std::string basis = r.base.basis == "host" ? "host-side split" : "GPU timeline";
  out += table(step, fmt::format("Step time, mean per steady step over the ranks ({}); * = beyond "
                                 "the noise (limit: the larger step-to-step spread, 3 standard "
                                 "errors, or 1 % of the step)",
                                 basis));
  out += table(r.rank_classes, "Compute per rank class");
  out += table(r.rank_compute, "Compute per rank (ranks whose compute changed)");
  out += table(r.buckets, "Gradient buckets (overlap with compute; exposed time per step)");
  out += table(r.busbw, "Bus bandwidth (median per op, size class and scope)");
  out += findings(r);
  out += fmt::format("\n== Pattern\n{} BASE {}\n  NEW  {}\n", r.pattern_flagged ? '*' : ' ',
                     r.base.pattern_text.empty() ? r.pattern_base : r.base.pattern_text,
                     r.now.pattern_text.empty() ? r.pattern_new : r.now.pattern_text);
  out += table(r.kernels, "Compute kernels whose time per step changed most (normalized names)");
  out += environment(r);
  if (!r.not_compared.empty()) {
    out += "\n== Not compared\n";
    for (const std::string& n : r.not_compared) out += "  " + n + "\n";
  }
  return out;
}

}  // namespace ncclwatch::diff
