// Are the two runs the same job? Runs of different size or length are compared per step and
// per rank class (a note says so). Runs whose communication differs (an op or message size one
// of them does not have, other gradient buckets, much more data per step) or whose compute
// kernels differ (different model, or a build that renamed every kernel) are told apart, and
// the figures that would compare unlike things say so instead of a cause.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analysis/units.h"
#include "diff/comparisons.h"

namespace ncclwatch::diff {
namespace {

// (op, size class) -> calls per steady step, for the classes a run calls at least every other
// step; `bytes` the collective bytes per step (sizes as nccl-tests counts them; the class's lower
// bound x 1.5 for reports without mean_bytes).
std::map<std::pair<std::string, double>, double> comm_classes(const RunSummary& s, double& bytes) {
  std::map<std::pair<std::string, double>, double> out;
  const double steps = std::max<double>(1.0, static_cast<double>(s.steps));
  bytes = 0;
  for (const BusbwFigures& b : s.busbw) {
    out[{b.op, b.size_min}] += b.calls / steps;
    bytes += b.calls / steps * (b.mean_bytes > 0 ? b.mean_bytes : 1.5 * b.size_min);
  }
  std::erase_if(out, [](const auto& kv) { return kv.second < 0.5; });
  return out;
}

std::string class_name(const std::pair<std::string, double>& c) {
  return fmt::format("{} of {}-{}", c.first, analysis::human_bytes(static_cast<uint64_t>(c.second)),
                     analysis::human_bytes(static_cast<uint64_t>(2 * c.second)));
}

void communication(DiffResult& r) {
  if (!r.base.has_busbw || !r.now.has_busbw) return;
  double base_bytes = 0, now_bytes = 0;
  const auto base = comm_classes(r.base, base_bytes), now = comm_classes(r.now, now_bytes);
  if (base.empty() || now.empty()) return;
  std::vector<std::string> what;
  for (const auto& [c, rate] : now) {
    if (!base.count(c))
      what.push_back(fmt::format("NEW has {} ({:.1f}/step), BASE has none", class_name(c), rate));
  }
  for (const auto& [c, rate] : base) {
    if (!now.count(c))
      what.push_back(fmt::format("BASE has {} ({:.1f}/step), NEW has none", class_name(c), rate));
  }
  if (what.empty() && base_bytes > 0 && now_bytes > 0 &&
      std::max(base_bytes, now_bytes) > 1.25 * std::min(base_bytes, now_bytes)) {
    what.push_back(
        fmt::format("NEW moves {:.2f}x the collective bytes per step", now_bytes / base_bytes));
  }
  if (what.empty()) return;
  r.comm_differs = true;
  std::string text;
  for (const auto& w : what) text += (text.empty() ? "" : "; ") + w;
  r.not_compared.push_back("communication differs (" + text +
                           "): bus bandwidth and buckets are compared only where both runs have "
                           "them, and exposed communication is not blamed on the links");
}

void buckets(DiffResult& r) {
  if (r.base.buckets.empty() || r.now.buckets.empty()) return;
  auto layout = [](const RunSummary& s) {
    std::set<std::pair<std::size_t, double>> out;
    for (const BucketFigures& b : s.buckets) out.insert({b.ordinal, b.bytes});
    return out;
  };
  auto text = [](const std::set<std::pair<std::size_t, double>>& l) {
    std::map<double, int> by_size;
    for (const auto& [o, bytes] : l) ++by_size[bytes];
    std::string t;
    for (const auto& [bytes, n] : by_size)
      t += fmt::format("{}{} x {}", t.empty() ? "" : " + ", n,
                       analysis::human_bytes(static_cast<uint64_t>(bytes)));
    return t;
  };
  const auto b = layout(r.base), n = layout(r.now);
  if (b == n) return;
  r.not_compared.push_back(fmt::format(
      "gradient buckets differ (BASE {}, NEW {}): overlap per bucket only where they agree",
      text(b), text(n)));
}

void compute(DiffResult& r) {
  if (!r.base.has_kernels || !r.now.has_kernels) return;
  std::map<std::string, double> base, now;
  for (const KernelFigures& k : r.base.kernels) {
    if (!k.nccl) base[k.name] += k.us_per_step.value;
  }
  for (const KernelFigures& k : r.now.kernels) {
    if (!k.nccl) now[k.name] += k.us_per_step.value;
  }
  auto shared_share = [](const std::map<std::string, double>& a,
                         const std::map<std::string, double>& other) {
    double all = 0, shared = 0;
    for (const auto& [name, us] : a) {
      all += us;
      if (other.count(name)) shared += us;
    }
    return all > 0 ? shared / all : 1.0;
  };
  if (base.empty() || now.empty()) return;
  const double sb = shared_share(base, now), sn = shared_share(now, base);
  if (std::min(sb, sn) >= 0.5) return;
  r.compute_differs = true;
  r.not_compared.push_back(fmt::format(
      "compute kernels differ: kernels both runs have take {:.0f} % of BASE's and {:.0f} % of "
      "NEW's listed compute time (a different model, or a build that changed every kernel): "
      "kernels are not compared name by name",
      100 * sb, 100 * sn));
}

}  // namespace

void match_jobs(DiffResult& r) {
  const RunSummary &b = r.base, &n = r.now;
  if (b.ranks != n.ranks || b.hosts != n.hosts) {
    r.notes.push_back(fmt::format(
        "runs of different size: BASE {} ranks on {} hosts, NEW {} on {}: figures are per step "
        "(mean over ranks) and per rank class (median and slowest rank), not rank by rank",
        b.ranks, b.hosts, n.ranks, n.hosts));
  }
  if (b.steps != n.steps && b.steps > 0 && n.steps > 0) {
    r.notes.push_back(fmt::format("BASE has {} steady steps, NEW {}: figures are means per step",
                                  b.steps, n.steps));
  }
  for (const RunSummary* s : {&b, &n}) {
    if (s->steps > 0 && s->steps < 5) {
      r.notes.push_back(
          fmt::format("{} has only {} steady steps: its step-to-step spread is a rough estimate",
                      s->side, s->steps));
    }
  }
  communication(r);
  buckets(r);
  compute(r);
}

}  // namespace ncclwatch::diff
