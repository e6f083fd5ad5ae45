#include "analysis/step_breakdown_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "analysis/step_spread.h"
#include "analysis/units.h"
#include "model/vocabulary.h"

namespace ncclwatch::analysis {
namespace {

constexpr std::size_t kMaxRankRows = 32;

using model::us;

double pct(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}
std::string per(int64_t ns, std::size_t n) {
  return human_time(static_cast<double>(ns) / static_cast<double>(std::max<std::size_t>(1, n)));
}

// A JSON object built key by key. nlohmann's objects are std::maps: operator[] and initializer
// lists cost a lookup and temporaries per key, which for per_step (every rank x step) was half
// of analyze(). Keys given in sorted order go in at the end in O(1); others still land right.
class ObjectBuilder {
 public:
  template <typename T>
  ObjectBuilder& add(const char* key, T&& value) {
    object_.emplace_hint(object_.end(), key, std::forward<T>(value));
    return *this;
  }
  nlohmann::json done() { return nlohmann::json(std::move(object_)); }

 private:
  nlohmann::json::object_t object_;
};

// Which steps a per_step entry covers: keys that go in among the StepTimes ones.
struct StepIds {
  std::size_t step = 0, last_step = 0, merged_steps = 0;
  bool warmup = false;
  bool partial = false;  // written only when true (one unmerged step: the last, partial)
  double step_us_max = 0;
  bool has_max = false;
  int sampled = -1;  // a sampled rank's entry: 1 when compute was recorded in it (-1: no key)
};

// The StepTimes fields (and a per_step entry's StepIds), keys in sorted order (see
// ObjectBuilder): per_step entries used to get their five keys by operator[] afterwards, a map
// lookup and insert each, for every rank x step.
nlohmann::json times_json(const StepTimes& t, BreakdownBasis basis, std::size_t n,
                          const StepIds* ids = nullptr) {
  const double d = static_cast<double>(std::max<std::size_t>(1, n));
  auto mean = [d](int64_t ns) { return us(ns) / d; };
  ObjectBuilder j;
  if (basis == BreakdownBasis::kGpu) {
    j.add("comm_overlapped_us", mean(t.comm_overlapped_ns))
        .add("compute_kernels", static_cast<double>(t.kernels) / d)
        .add("compute_us", mean(t.compute_ns))
        .add("exposed_transfer_us", mean(t.exposed_transfer_ns))
        .add("exposed_wait_us", mean(t.exposed_wait_ns))
        .add("idle_before_comm_us", mean(t.idle_before_comm_ns))
        .add("idle_other_us", mean(t.idle_other_ns))
        .add("idle_step_boundary_us", mean(t.idle_step_boundary_ns));
    if (ids) j.add("last_step", ids->last_step);
    j.add("memcpy_us", mean(t.memcpy_ns));
    if (ids) j.add("merged_steps", ids->merged_steps);
    if (ids && ids->partial) j.add("partial", true);
    if (ids && ids->sampled >= 0) j.add("sampled", ids->sampled == 1);
    j.add("smi_util_pct", pct(t.compute_ns + t.exposed_ns(), t.step_ns));
    if (ids) j.add("step", ids->step);
    j.add("step_us", mean(t.step_ns));
    if (ids && ids->has_max) j.add("step_us_max", ids->step_us_max);
    j.add("useful_compute_pct", pct(t.compute_ns, t.step_ns));
  } else {
    j.add("host_between_us", mean(t.host_between_ns))
        .add("host_in_nccl_us", mean(t.host_in_nccl_ns));
    if (ids) j.add("last_step", ids->last_step).add("merged_steps", ids->merged_steps);
    if (ids && ids->partial) j.add("partial", true);
    if (ids) j.add("step", ids->step);
    j.add("step_us", mean(t.step_ns));
    if (ids && ids->has_max) j.add("step_us_max", ids->step_us_max);
  }
  if (ids) j.add("warmup", ids->warmup);
  return j.done();
}

}  // namespace

double JobBreakdown::smi_pct() const {
  return pct(gpu.smi_busy_ns(), gpu.step_ns);
}
double JobBreakdown::useful_pct() const {
  return pct(gpu.compute_ns, gpu.step_ns);
}
double JobBreakdown::gpu_share(int64_t ns) const {
  return pct(ns, gpu.step_ns);
}

JobBreakdown JobBreakdown::of(const std::vector<RankBreakdown>& ranks) {
  JobBreakdown j;
  for (const RankBreakdown& r : ranks) {
    if (r.basis == BreakdownBasis::kGpu && r.sampled && r.steady_steps == 0) {
      ++j.unsampled_ranks;  // no step with its compute recorded: nothing to say about its GPU
    } else if (r.basis == BreakdownBasis::kGpu) {
      ++j.gpu_ranks;
      j.sampled_ranks += r.sampled;
      j.gpu += r.steady;
      j.gpu_rank_steps += r.steady_steps;
    } else {
      ++j.host_ranks;
      j.host += r.steady;
      j.host_rank_steps += r.steady_steps;
    }
  }
  return j;
}

std::size_t StepBreakdownReport::per_step_limit(std::size_t ranks) {
  return std::clamp(kPerStepBudget / std::max<std::size_t>(1, ranks), kMinPerStepEntries,
                    kMaxPerStepEntries);
}

nlohmann::json StepBreakdownReport::per_step_json(const RankBreakdown& r, std::size_t limit) {
  // Entries [first, last) of r.steps merged into one (means per step).
  // A sampled rank's entry covers only its steps inside the windows (if any).
  auto entry = [&r](std::size_t first, std::size_t last) {
    StepTimes sum;
    int64_t longest = 0;
    std::size_t measured = 0;
    for (std::size_t k = first; k < last; ++k) {
      if (r.sampled && !r.steps[k].sampled) continue;
      sum += r.steps[k].times;
      longest = std::max(longest, r.steps[k].times.step_ns);
      ++measured;
    }
    StepIds ids;
    if (r.sampled) ids.sampled = measured > 0 ? 1 : 0;
    ids.step = r.steps[first].index + 1;
    ids.last_step = r.steps[last - 1].index + 1;
    ids.merged_steps = last - first;
    ids.warmup = r.steps[first].warmup;
    ids.partial = last - first == 1 && r.steps[first].partial;
    ids.has_max = last - first > 1;
    ids.step_us_max = us(longest);
    return times_json(sum, r.basis, std::max<std::size_t>(1, r.sampled ? measured : last - first),
                      &ids);
  };
  nlohmann::json out = nlohmann::json::array();
  std::size_t warmup = 0;
  while (warmup < r.steps.size() && r.steps[warmup].warmup) ++warmup;
  if (r.steps.size() <= limit) {
    for (std::size_t k = 0; k < r.steps.size(); ++k) out.push_back(entry(k, k + 1));
    return out;
  }
  // Warm-up steps stay on their own (they are unlike the rest: a merged mean would hide both).
  for (std::size_t k = 0; k < warmup; ++k) out.push_back(entry(k, k + 1));
  const std::size_t n = r.steps.size() - warmup;
  const std::size_t groups = std::min(n, std::max<std::size_t>(1, limit - std::min(limit, warmup)));
  for (std::size_t g = 0; g < groups; ++g) {
    const std::size_t first = warmup + g * n / groups, last = warmup + (g + 1) * n / groups;
    if (last > first) out.push_back(entry(first, last));
  }
  return out;
}

nlohmann::json StepBreakdownReport::rank_json(const RankBreakdown& r, std::size_t job_ranks) {
  nlohmann::json row = times_json(r.steady, r.basis, r.steady_steps);
  row["rank"] = r.rank;
  row["host"] = r.host;
  row["basis"] = to_string(r.basis);
  row["steps"] = r.steady_steps;
  row["steps_found"] = r.steps_found;
  if (r.sampled) row["sampled"] = true;  // figures over its steady steps inside the windows
  row["per_step"] = per_step_json(r, per_step_limit(job_ranks));
  return row;
}

void StepBreakdownReport::write(const std::vector<RankBreakdown>& ranks,
                                std::vector<nlohmann::json> rows, const DataSupport& support,
                                model::Report& report) {
  const JobBreakdown job = JobBreakdown::of(ranks);
  const std::string& kernel_scope = support.kernel_scope;
  std::string body;
  if (!support.cross_rank && job.gpu_ranks > 0) {
    body +=
        "one rank traced: waiting for peers cannot be measured (no peer's arrival is known); the "
        "exposed communication is all counted as xfer.\n";
  }
  if (!kernel_scope.empty()) {
    body += fmt::format(
        "compute kernels left out on request ({}): GPU figures come only from the steady steps "
        "wholly inside the windows where compute was recorded ({} ranks measured so, {} with no "
        "such step and not counted); ranks without any compute kernel get the host-side "
        "split.\n",
        kernel_scope, job.sampled_ranks, job.unsampled_ranks);
  }
  if (job.gpu_ranks > 0) {
    body += fmt::format(
        "GPU-timed ranks ({}): nvidia-smi would show {:.1f}% utilization (any kernel running); "
        "useful compute {:.1f}% of the step; exposed communication {:.1f}% (waiting for peers "
        "{:.1f}%), memcpy/memset {:.1f}%, idle {:.1f}% (before collectives {:.1f}%, at the step "
        "boundary {:.1f}%, other {:.1f}%). Well-tuned jobs keep 80-90% useful.\n",
        job.gpu_ranks, job.smi_pct(), job.useful_pct(), job.gpu_share(job.gpu.exposed_ns()),
        job.gpu_share(job.gpu.exposed_wait_ns), job.gpu_share(job.gpu.memcpy_ns),
        job.gpu_share(job.gpu.idle_ns()), job.gpu_share(job.gpu.idle_before_comm_ns),
        job.gpu_share(job.gpu.idle_step_boundary_ns), job.gpu_share(job.gpu.idle_other_ns));
  }
  if (job.host_ranks > 0) {
    body += fmt::format(
        "host-side split ({} ranks without compute kernels{}): {:.1f}% of the step inside NCCL "
        "calls, {:.1f}% between them (host time, not GPU time).\n",
        job.host_ranks, kernel_scope.empty() ? "" : ": " + kernel_scope,
        pct(job.host.host_in_nccl_ns, job.host.step_ns),
        pct(job.host.host_between_ns, job.host.step_ns));
  }
  body +=
      "Per steady step (mean); compute + wait + xfer + memcpy + idle parts = step; 'hidden' is "
      "comm running under compute; idle: pre-comm = gaps ending at a collective, boundary = idle "
      "at the step's edges plus its longest other gap (data loading, syncs, checkpoints).\n\n";
  body += fmt::format(
      "{:>6} {:<12} {:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} {:>6}\n",
      "rank", "host", "on", "step", "compute", "hidden", "wait", "xfer", "memcpy", "pre-comm",
      "boundary", "other", "smi", "useful");
  for (std::size_t i = 0; i < ranks.size() && i < kMaxRankRows; ++i) {
    const RankBreakdown& r = ranks[i];
    const StepTimes& t = r.steady;
    const std::size_t n = r.steady_steps;
    if (r.basis == BreakdownBasis::kHost) {
      body += fmt::format("{:>6} {:<12} {:>4} {:>9}  host-side: in NCCL {} ({:.1f}%), between {}\n",
                          r.rank, r.host.substr(0, 12), "host", per(t.step_ns, n),
                          per(t.host_in_nccl_ns, n), pct(t.host_in_nccl_ns, t.step_ns),
                          per(t.host_between_ns, n));
      continue;
    }
    body += fmt::format(
        "{:>6} {:<12} {:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>5.1f}% "
        "{:>5.1f}%\n",
        r.rank, r.host.substr(0, 12), "gpu", per(t.step_ns, n), per(t.compute_ns, n),
        per(t.comm_overlapped_ns, n), per(t.exposed_wait_ns, n), per(t.exposed_transfer_ns, n),
        per(t.memcpy_ns, n), per(t.idle_before_comm_ns, n), per(t.idle_step_boundary_ns, n),
        per(t.idle_other_ns, n), r.smi_pct(), r.useful_pct());
  }
  if (ranks.size() > kMaxRankRows) {
    body += fmt::format("... {} more ranks (JSON breakdown[])\n", ranks.size() - kMaxRankRows);
  }
  report.sections.push_back({"Step breakdown", body});

  const std::size_t limit = per_step_limit(ranks.size());
  report.json["breakdown"] = nlohmann::json(std::move(rows));
  nlohmann::json summary = {
      {"gpu_ranks", job.gpu_ranks}, {"host_ranks", job.host_ranks}, {"per_step_limit", limit}};
  if (job.gpu_ranks > 0) {
    summary["smi_util_pct"] = job.smi_pct();
    summary["useful_compute_pct"] = job.useful_pct();
    summary["exposed_comm_pct"] = job.gpu_share(job.gpu.exposed_ns());
    summary["idle_pct"] = job.gpu_share(job.gpu.idle_ns());
    summary["idle_step_boundary_pct"] = job.gpu_share(job.gpu.idle_step_boundary_ns);
  }
  if (job.host_ranks > 0) {
    summary["host_in_nccl_pct"] = pct(job.host.host_in_nccl_ns, job.host.step_ns);
  }
  summary["steady"] = StepSpread::steady_json(ranks);
  report.json["breakdown_analysis"] = std::move(summary);
}

}  // namespace ncclwatch::analysis
