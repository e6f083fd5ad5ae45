#include "analysis/kernel_table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "analysis/kernel_names.h"

namespace ncclwatch::analysis {
namespace {

double stddev(const RankKernel& k, std::size_t n) {
  const double dn = static_cast<double>(n);
  const double mean = static_cast<double>(k.total_ns) / dn;
  return std::sqrt(std::max(0.0, k.sum_sq / dn - mean * mean));
}

struct JobKernel {
  bool nccl = false;
  double ns_per_step_sum = 0, calls_per_step_sum = 0, spread_sum = 0;
  std::size_t ranks = 0;
};

}  // namespace

std::vector<Interval> KernelTable::windows_of(const StepPlan& plan) {
  if (plan.steady_steps() == 0) return {plan.steady};
  return {plan.steps.begin() + static_cast<std::ptrdiff_t>(plan.warmup), plan.steps.end()};
}

RankKernels KernelTable::of_rank(const model::RankTrace& rank,
                                 const std::vector<Interval>& windows) {
  RankKernels out;
  std::vector<int32_t> slot_of_name(rank.names.size(), -1);
  std::unordered_map<std::string, int32_t> slot_of_normalized;
  const auto fold = [](RankKernel& k) {
    k.sum_sq += static_cast<double>(k.window_ns) * static_cast<double>(k.window_ns);
    k.window_ns = 0;
  };
  std::size_t w = 0;
  bool any = false;
  for (const model::KernelEvent& e : rank.kernels) {
    if (e.kind != format::ActivityKind::kKernel) continue;
    while (w < windows.size() && e.start_ns >= windows[w].end) ++w;
    if (w == windows.size()) break;
    if (e.start_ns < windows[w].begin) continue;
    const uint32_t id = e.name < rank.names.size() ? e.name : 0;
    int32_t& slot = slot_of_name[id];
    if (slot < 0) {
      std::string name = normalize_kernel_name(rank.names[id]);
      if (name.empty()) name = e.nccl ? "(unnamed NCCL kernel)" : "(unnamed kernel)";
      const auto [it, inserted] =
          slot_of_normalized.try_emplace(name, static_cast<int32_t>(out.kernels.size()));
      if (inserted) out.kernels.push_back({std::move(name), e.nccl});
      slot = it->second;
    }
    RankKernel& k = out.kernels[static_cast<std::size_t>(slot)];
    if (k.window != w) {
      fold(k);
      k.window = w;
    }
    const int64_t d = std::max<int64_t>(0, e.end_ns - e.start_ns);
    k.total_ns += d;
    k.window_ns += d;
    ++k.calls;
    any = true;
  }
  for (RankKernel& k : out.kernels) fold(k);
  out.windows = any ? windows.size() : 0;
  return out;
}

KernelTable KernelTable::merge(const std::vector<RankKernels>& per_rank) {
  KernelTable t;
  std::map<std::string, JobKernel> merged;  // ordered: the same table at any thread count
  for (const RankKernels& r : per_rank) {
    if (r.windows == 0) continue;
    ++t.ranks;
    t.rank_steps += r.windows;
    const double steps = static_cast<double>(r.windows);
    for (const RankKernel& k : r.kernels) {
      JobKernel& j = merged[k.name];
      j.nccl = j.nccl || k.nccl;
      j.ns_per_step_sum += static_cast<double>(k.total_ns) / steps;
      j.calls_per_step_sum += static_cast<double>(k.calls) / steps;
      j.spread_sum += stddev(k, r.windows);
      ++j.ranks;
    }
  }
  if (t.ranks == 0) return t;
  const double ranks = static_cast<double>(t.ranks);
  std::map<std::string, double> algorithms;
  std::vector<KernelRow> all;
  all.reserve(merged.size());
  for (auto& [name, j] : merged) {
    KernelRow row{name,
                  j.nccl,
                  j.ns_per_step_sum / ranks,
                  j.calls_per_step_sum / ranks,
                  j.spread_sum / ranks,
                  j.ranks};
    (j.nccl ? t.nccl_ns_per_step : t.compute_ns_per_step) += row.ns_per_step;
    if (j.nccl) {
      const std::string a = nccl_algorithm_of(name);
      algorithms[a.empty() ? "other" : a] += row.ns_per_step;
    }
    all.push_back(std::move(row));
  }
  t.names = all.size();
  std::stable_sort(all.begin(), all.end(), [](const KernelRow& a, const KernelRow& b) {
    return a.ns_per_step > b.ns_per_step;
  });
  for (std::size_t i = kMaxRows; i < all.size(); ++i) t.unlisted_ns_per_step += all[i].ns_per_step;
  if (all.size() > kMaxRows) all.resize(kMaxRows);
  t.rows = std::move(all);
  for (const auto& [a, ns] : algorithms) {
    t.nccl_algorithms.emplace_back(a, t.nccl_ns_per_step > 0 ? 100.0 * ns / t.nccl_ns_per_step : 0);
  }
  std::stable_sort(t.nccl_algorithms.begin(), t.nccl_algorithms.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return t;
}

void KernelTable::write_json(model::Report& report) const {
  nlohmann::json list = nlohmann::json::array();
  for (const KernelRow& r : rows) {
    list.push_back({{"name", r.name},
                    {"nccl", r.nccl},
                    {"us_per_step", r.ns_per_step / 1000.0},
                    {"calls_per_step", r.calls_per_step},
                    {"spread_us", r.spread_ns / 1000.0},
                    {"ranks", r.ranks}});
  }
  report.json["kernels"] = std::move(list);
  nlohmann::json algorithms = nlohmann::json::object();
  for (const auto& [a, pct] : nccl_algorithms) algorithms[a] = pct;
  report.json["kernels_analysis"] = {{"ranks", ranks},
                                     {"rank_steps", rank_steps},
                                     {"names", names},
                                     {"listed", rows.size()},
                                     {"compute_us_per_step", compute_ns_per_step / 1000.0},
                                     {"nccl_us_per_step", nccl_ns_per_step / 1000.0},
                                     {"unlisted_us_per_step", unlisted_ns_per_step / 1000.0},
                                     {"nccl_algorithms", std::move(algorithms)}};
}

}  // namespace ncclwatch::analysis
