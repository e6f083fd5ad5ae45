#include "analysis/step_spread.h"

#include <cmath>
#include <utility>

#include "analysis/robust_stats.h"
#include "model/robust_spread.h"

namespace ncclwatch::analysis {
namespace {

struct Field {
  const char* key;
  int64_t StepTimes::*member;
};

constexpr Field kGpuFields[] = {
    {"step_us", &StepTimes::step_ns},
    {"compute_us", &StepTimes::compute_ns},
    {"comm_overlapped_us", &StepTimes::comm_overlapped_ns},
    {"exposed_wait_us", &StepTimes::exposed_wait_ns},
    {"exposed_transfer_us", &StepTimes::exposed_transfer_ns},
    {"memcpy_us", &StepTimes::memcpy_ns},
    {"idle_before_comm_us", &StepTimes::idle_before_comm_ns},
    {"idle_step_boundary_us", &StepTimes::idle_step_boundary_ns},
    {"idle_other_us", &StepTimes::idle_other_ns},
};
constexpr Field kHostFields[] = {
    {"step_us", &StepTimes::step_ns},
    {"host_in_nccl_us", &StepTimes::host_in_nccl_ns},
    {"host_between_us", &StepTimes::host_between_ns},
};

// Step index -> (sum over ranks, ranks), steady steps of ranks on `basis`.
std::vector<std::pair<StepTimes, std::size_t>> per_step_sums(
    const std::vector<RankBreakdown>& ranks, BreakdownBasis basis, std::size_t& nranks) {
  std::vector<std::pair<StepTimes, std::size_t>> sums;
  nranks = 0;
  for (const RankBreakdown& r : ranks) {
    if (r.basis != basis || r.steady_steps == 0) continue;
    ++nranks;
    for (const StepBreakdown& s : r.steps) {
      if (s.warmup) continue;
      if (s.index >= sums.size()) sums.resize(s.index + 1);
      sums[s.index].first += s.times;
      ++sums[s.index].second;
    }
  }
  return sums;
}

template <std::size_t N>
nlohmann::json series_json(const std::vector<std::pair<StepTimes, std::size_t>>& sums,
                           std::size_t nranks, const Field (&fields)[N], const char* basis) {
  // A step index only some ranks reached (a rank with one step more) would be a mean of few.
  std::vector<const std::pair<StepTimes, std::size_t>*> steps;
  for (const auto& s : sums) {
    if (s.second > 0 && 2 * s.second >= nranks) steps.push_back(&s);
  }
  if (steps.empty()) return nullptr;
  nlohmann::json mean = nlohmann::json::object(), spread = mean, sem = mean;
  const double n = static_cast<double>(steps.size());
  for (const Field& f : fields) {
    std::vector<double> v;
    v.reserve(steps.size());
    double sum = 0;
    for (const auto* s : steps) {
      v.push_back(static_cast<double>(s->first.*f.member) / static_cast<double>(s->second) / 1e3);
      sum += v.back();
    }
    const double m = sum / n;
    double sq = 0;
    for (double x : v) sq += (x - m) * (x - m);
    const double sd = steps.size() > 1 ? std::sqrt(sq / (n - 1)) : 0.0;
    mean[f.key] = m;
    spread[f.key] = model::robust_spread(v);
    sem[f.key] = sd / std::sqrt(n);
  }
  return {{"basis", basis},  {"ranks", nranks},     {"steps", steps.size()},
          {"mean_us", mean}, {"spread_us", spread}, {"sem_us", sem}};
}

}  // namespace

nlohmann::json StepSpread::steady_json(const std::vector<RankBreakdown>& ranks) {
  std::size_t nranks = 0;
  const auto gpu = per_step_sums(ranks, BreakdownBasis::kGpu, nranks);
  if (nranks > 0) return series_json(gpu, nranks, kGpuFields, "gpu");
  const auto host = per_step_sums(ranks, BreakdownBasis::kHost, nranks);
  if (nranks > 0) return series_json(host, nranks, kHostFields, "host");
  return nullptr;
}

}  // namespace ncclwatch::analysis
