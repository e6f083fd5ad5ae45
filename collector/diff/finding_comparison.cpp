// Stragglers (by rank) and slow links (by host) present in one run or both, and the pattern
// verdict. Each run already tested its stragglers statistically (collector/analysis); what the
// diff adds is which of them are new or gone. One-sided ones at warning level (>= 1 % of step
// time) are flagged; info-level ones are listed only (chance can name one).
#include <map>

#include <fmt/format.h>

#include "diff/comparisons.h"

namespace ncclwatch::diff {
namespace {

template <typename T, typename KeyOf, typename Fill>
std::vector<FindingChange> sided(const std::vector<T>& base, const std::vector<T>& now,
                                 KeyOf key_of, Fill fill) {
  std::map<std::string, const T*> b, n;
  for (const T& x : base) b.emplace(key_of(x), &x);
  for (const T& x : now) n.emplace(key_of(x), &x);
  std::vector<FindingChange> out;
  for (const auto& [key, x] : n) {
    FindingChange c;
    const auto it = b.find(key);
    c.where = it == b.end() ? "NEW only" : "both";
    if (it != b.end()) c.base_cost = it->second->cost;
    c.new_cost = x->cost;
    fill(*x, c);
    c.flagged = it == b.end() && x->severity != "info";
    out.push_back(std::move(c));
  }
  for (const auto& [key, x] : b) {
    if (n.count(key)) continue;
    FindingChange c;
    c.where = "BASE only";
    c.base_cost = x->cost;
    fill(*x, c);
    c.flagged = x->severity != "info";
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

void compare_findings(DiffResult& r) {
  r.stragglers = sided(
      r.base.stragglers, r.now.stragglers,
      [](const StragglerFigures& s) { return std::to_string(s.rank); },
      [](const StragglerFigures& s, FindingChange& c) {
        c.kind = "straggler";
        c.who = s.host.empty() ? fmt::format("rank {}", s.rank)
                               : fmt::format("rank {} ({})", s.rank, s.host);
        c.cause = s.cause.empty() ? "unknown" : s.cause;
        c.lateness_us = s.lateness_us;
      });
  r.slow_links = sided(
      r.base.slow_links, r.now.slow_links, [](const SlowLinkFigures& s) { return s.host; },
      [](const SlowLinkFigures& s, FindingChange& c) {
        c.kind = "slow link";
        c.who = s.host;
        c.cause = "network";
      });
  r.pattern_base = r.base.pattern_row;
  r.pattern_new = r.now.pattern_row;
  bool parts_changed = false;
  for (const Compared& p : r.parts) parts_changed = parts_changed || p.significant;
  // A row can flip at a threshold (useful compute 79 % vs 81 %) with every figure within the
  // noise: that is not a change of the job.
  r.pattern_flagged = !r.pattern_base.empty() && !r.pattern_new.empty() &&
                      r.pattern_base != r.pattern_new && parts_changed;
}

}  // namespace ncclwatch::diff
