#include "analysis/overlap_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "analysis/units.h"
#include "model/vocabulary.h"

namespace ncclwatch::analysis {
namespace {

constexpr std::size_t kMaxRankRows = 32;
constexpr std::size_t kMaxStepRows = 40;
// Exposed communication below this share of the step is not worth a user's time.
constexpr double kNotBottleneckShare = 0.05;

double pct(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}
using model::us;
std::string ht(double ns) {
  return human_time(ns);
}

}  // namespace

double JobOverlap::overlap_pct() const {
  return pct(totals.overlapped_ns, totals.comm_ns);
}

double JobOverlap::per_step(int64_t ns) const {
  const std::size_t n = rank_steps ? rank_steps : std::max<std::size_t>(1, ranks);
  return static_cast<double>(ns) / static_cast<double>(n);
}

double JobOverlap::step_ns() const {
  return per_step(totals.window_ns);
}

JobOverlap JobOverlap::of(const std::vector<RankOverlap>& overlaps) {
  JobOverlap j;
  for (const RankOverlap& o : overlaps) {
    if (!o.measurable) continue;
    ++j.ranks;
    j.rank_steps += o.steady_steps;
    OverlapTotals& t = j.totals;
    t.window_ns += o.steady.window_ns;
    t.comm_ns += o.steady.comm_ns;
    t.overlapped_ns += o.steady.overlapped_ns;
    t.exposed_ns += o.steady.exposed_ns;
    t.wait_ns += o.steady.wait_ns;
    t.peer_wait_ns += o.steady.peer_wait_ns;
    t.compute_ns += o.steady.compute_ns;
    t.busy_ns += o.steady.busy_ns;
    t.idle_before_comm_ns += o.steady.idle_before_comm_ns;
  }
  return j;
}

double OverlapReport::exposed_pct(const JobOverlap& j) {
  const double step = j.step_ns();
  return step > 0 ? 100.0 * j.per_step(j.totals.exposed_ns) / step : 0.0;
}

double OverlapReport::cost_pct(const JobOverlap& j, const StragglerResult& s) {
  // The exposed waiting the straggler, node and slow-link findings count is theirs: this line's
  // cost is what is left, so the order by cost does not count it twice.
  double theirs = 0;
  for (const Straggler& x : s.stragglers)
    if (!x.node_problem) theirs += x.cost_pct;
  for (const NodeProblem& n : s.nodes) theirs += n.cost_pct;
  for (const SlowLink& l : s.links) theirs += l.cost_pct;
  return std::max(0.0, exposed_pct(j) - theirs);
}

std::string OverlapReport::headline(const JobOverlap& j, const StragglerResult& s,
                                    const DataSupport& support, Largest largest) {
  const std::string word = s.what == "all-reduces" ? "all-reduce" : "communication";
  const double exposed = j.per_step(j.totals.exposed_ns);
  const double step = j.step_ns();
  const double share = step > 0 ? exposed / step : 0.0;
  const std::string unit = j.rank_steps ? "/step" : " over the trace";
  const std::string of_step = j.rank_steps
                                  ? fmt::format("{:.0f}% of a {} step", 100 * share, ht(step))
                                  : fmt::format("{:.0f}% of it", 100 * share);
  const std::string sampled = support.any_sampled
                                  ? fmt::format(
                                        " (measured on the {} rank-steps inside the windows where "
                                        "compute kernels were recorded, {})",
                                        j.rank_steps, support.kernel_scope)
                                  : std::string();
  if (share < kNotBottleneckShare) {
    return fmt::format(
        "{} is {:.0f}% overlapped; exposed comm is {}{} ({}) — communication is "
        "not the bottleneck{}",
        word, j.overlap_pct(), ht(exposed), unit, of_step, sampled);
  }
  // One rank alone: waiting for peers cannot be told from transfer (no peer was traced).
  if (!support.cross_rank) {
    return fmt::format(
        "{} is {}{:.0f}% overlapped; {}{} exposed ({}); waiting for peers vs transfer not "
        "measured: one rank traced{}{}",
        word, j.overlap_pct() < 50 ? "only " : "", j.overlap_pct(), ht(exposed), unit, of_step,
        largest == Largest::kThis
            ? " — start communication earlier behind backward (bucket order/size) or speed up "
              "the links"
            : " — not the largest cost: see the findings above",
        sampled);
  }
  const double wait = j.per_step(j.totals.wait_ns);
  const double transfer = j.per_step(j.totals.transfer_ns());
  std::string whom;
  if (!s.stragglers.empty()) whom = fmt::format(" (rank {})", s.stragglers.front().rank);
  // "Fix it first" only where it is the largest cost of the report.
  std::string advice;
  if (largest == Largest::kStraggler && !s.stragglers.empty()) {
    advice =
        fmt::format("rank {}'s lateness costs every rank; fix it first", s.stragglers.front().rank);
  } else if (largest == Largest::kOther) {
    advice = "not the largest cost: see the findings above";
  } else if (wait >= transfer) {
    advice = "ranks reach their collectives at different times";
  } else {
    advice =
        "communication is the bottleneck: start it earlier behind backward (bucket "
        "order/size) or speed up the links";
  }
  return fmt::format(
      "{} is {}{:.0f}% overlapped; {}{} exposed ({}): {} waiting for peers{}, {} "
      "transfer — {}{}",
      word, j.overlap_pct() < 50 ? "only " : "", j.overlap_pct(), ht(exposed), unit, of_step,
      ht(wait), whom, ht(transfer), advice, sampled);
}

namespace {

// The rank whose step plan the section header and overlap_analysis describe: the first
// measurable one, else the first.
const RankOverlap* reference_rank(const std::vector<RankOverlap>& overlaps) {
  const RankOverlap* ref = nullptr;
  for (const RankOverlap& o : overlaps) {
    if (!ref || (o.measurable && !ref->measurable)) ref = &o;
  }
  return ref;
}

// The steps line, the definitions and one row per rank (kMaxRankRows at most).
std::string rank_table(const std::vector<RankOverlap>& overlaps, const RankOverlap* ref) {
  std::string body;
  if (ref) {
    const StepPlan& p = ref->plan;
    body += fmt::format("steps: {} (rank {}: {} steps). ", p.source, ref->rank, p.steps.size());
    body += p.warmup ? fmt::format(
                           "Steady state = steps {}..{}: the first step is left out as "
                           "warm-up (rule: with {}+ steps, drop step 1).\n",
                           p.warmup + 1, p.steps.size(), kMinStepsForWarmup)
                     : fmt::format("All steps counted (warm-up is dropped only with {}+ steps).\n",
                                   kMinStepsForWarmup);
  }
  body +=
      "overlap = |comm ∩ compute| / |comm| (HTA); comm = communication kernels (NCCL's and the "
      "other families of docs/inputs.md), compute = other kernels, "
      "memcpy/memset neither; exposed = comm − compute = wait (before the last peer arrived) + "
      "transfer.\n\n";
  body += fmt::format("{:>6} {:<14} {:>5} {:>10} {:>8} {:>12} {:>10} {:>10} {:>6} {:>6} {:>12}\n",
                      "rank", "host", "steps", "comm/step", "overlap", "exposed/step", "wait/step",
                      "xfer/step", "busy", "idle", "idle-pre-comm");
  for (std::size_t i = 0; i < overlaps.size() && i < kMaxRankRows; ++i) {
    const RankOverlap& o = overlaps[i];
    const double n = static_cast<double>(std::max<std::size_t>(1, o.steady_steps));
    const OverlapTotals& t = o.steady;
    if (!o.measurable) {
      body +=
          fmt::format("{:>6} {:<14} {:>5} {:>10}  overlap n/a: {}\n", o.rank, o.host.substr(0, 14),
                      o.steady_steps, ht(static_cast<double>(t.comm_ns) / n),
                      o.sampled ? std::string("no steady step inside a sampled window")
                                : "comm timing from " + std::string(to_string(o.source)));
      continue;
    }
    body += fmt::format(
        "{:>6} {:<14} {:>5} {:>10} {:>7.1f}% {:>12} {:>10} {:>10} {:>5.1f}% {:>5.1f}% {:>12}\n",
        o.rank, o.host.substr(0, 14), o.steady_steps, ht(static_cast<double>(t.comm_ns) / n),
        o.overlap_pct(), ht(static_cast<double>(t.exposed_ns) / n),
        ht(static_cast<double>(t.wait_ns) / n), ht(static_cast<double>(t.transfer_ns()) / n),
        o.busy_pct(), 100.0 - o.busy_pct(), ht(static_cast<double>(t.idle_before_comm_ns) / n));
  }
  if (overlaps.size() > kMaxRankRows)
    body += fmt::format("... {} more ranks\n", overlaps.size() - kMaxRankRows);

  return body;
}

// Step k over every rank's step k (kMaxStepRows at most).
std::string step_table(const std::vector<RankOverlap>& overlaps) {
  std::string body;
  // Per step, over ranks (step k of every rank).
  std::size_t nsteps = 0;
  for (const RankOverlap& o : overlaps)
    nsteps = std::max(nsteps, o.measurable ? o.steps.size() : 0);
  if (nsteps > 0) {
    body += fmt::format("\nper step (over ranks): {:>5} {:>8} {:>14} {:>14}\n", "step", "overlap",
                        "max exposed", "max wait");
    for (std::size_t k = 0; k < nsteps && k < kMaxStepRows; ++k) {
      int64_t comm = 0, over = 0, max_exp = 0, max_wait = 0;
      bool warm = false, unsampled = false;
      for (const RankOverlap& o : overlaps) {
        if (!o.measurable || k >= o.steps.size()) continue;
        if (!o.steps[k].sampled) {  // its compute was not recorded: nothing to say
          unsampled = true;
          continue;
        }
        const OverlapTotals& t = o.steps[k].totals;
        comm += t.comm_ns;
        over += t.overlapped_ns;
        max_exp = std::max(max_exp, t.exposed_ns);
        max_wait = std::max(max_wait, t.wait_ns);
        warm = warm || o.steps[k].warmup;
      }
      if (unsampled && comm == 0) {
        body += fmt::format("{:>28}  (compute not recorded: outside the sampled windows)\n", k + 1);
        continue;
      }
      body += fmt::format("{:>28} {:>7.1f}% {:>14} {:>14}{}\n", k + 1, pct(over, comm),
                          ht(static_cast<double>(max_exp)), ht(static_cast<double>(max_wait)),
                          warm ? "  (warm-up)" : "");
    }
    if (nsteps > kMaxStepRows) body += fmt::format("{:>28}\n", "...");
  }
  return body;
}

std::string bucket_table(const std::vector<BucketRow>& buckets) {
  std::string body;
  if (!buckets.empty()) {
    body += fmt::format(
        "\nall-reduce buckets repeating each step (over ranks):\n{:>18} {:>3} {:>10} "
        "{:>10} {:>10} {:>13}\n",
        "comm", "#", "size", "GPU time", "overlap", "exposed/step");
    for (const BucketRow& b : buckets) {
      body += fmt::format("{:>18} {:>3} {:>10} {:>10} {:>9.1f}% {:>13}\n",
                          model::comm_hex(b.comm_id), b.ordinal + 1, human_bytes(b.bytes),
                          ht(b.mean_gpu_ns()), b.overlapped_pct(), ht(b.exposed_ns_per_step()));
    }
  }
  return body;
}

}  // namespace

void OverlapReport::write(const std::vector<RankOverlap>& overlaps,
                          const std::vector<BucketRow>& buckets, const StragglerResult& stragglers,
                          const DataSupport& support, Largest largest, model::Report& report) {
  const JobOverlap job = JobOverlap::of(overlaps);
  if (job.ranks > 0) {
    const double pct = cost_pct(job, stragglers);
    model::Severity severity = exposed_pct(job) < 100 * kNotBottleneckShare
                                   ? model::Severity::kInfo
                                   : model::Severity::kWarning;
    std::string text = headline(job, stragglers, support, largest);
    if (severity == model::Severity::kWarning && !support.lossy.empty()) {
      severity = model::Severity::kInfo;
      text += support.unsupported_by_losses();
    }
    report.findings.push_back(
        {severity, "overlap", text, model::FindingCost{pct, pct / 100.0 * job.step_ns()}});
  } else if (!overlaps.empty()) {
    report.findings.push_back(
        {model::Severity::kInfo, "overlap", not_measurable(overlaps, support)});
  }

  report.sections.push_back(
      {"Overlap", (support.cross_rank || job.ranks == 0
                       ? std::string()
                       : std::string("one rank traced: waiting for peers cannot be measured (no "
                                     "peer's arrival is known); wait/step reads 0 and xfer/step "
                                     "holds all of the exposed time.\n")) +
                      text(overlaps, buckets)});
  write_json(overlaps, buckets, report);
}

// Why no rank's overlap could be measured: say what is missing, not what is not.
std::string OverlapReport::not_measurable(const std::vector<RankOverlap>& overlaps,
                                          const DataSupport& support) {
  if (support.any_sampled) {
    return fmt::format(
        "overlap not measured: no steady step lies wholly inside a window where compute kernels "
        "were recorded ({})",
        support.kernel_scope);
  }
  if (!support.kernel_scope.empty()) {
    return fmt::format(
        "overlap not measured: compute kernels left out on request ({}); NCCL kernels are timed",
        support.kernel_scope);
  }
  const auto any_rank_from = [&overlaps](CommSource source) {
    return std::any_of(overlaps.begin(), overlaps.end(),
                       [source](const RankOverlap& o) { return o.source == source; });
  };
  if (any_rank_from(CommSource::kCallEvents)) {
    return "overlap not measurable: only collective GPU times were recorded (lite mode), no "
           "compute kernels";
  }
  if (any_rank_from(CommSource::kNcclKernels))
    return "overlap not measurable: no compute kernels recorded (NCCL kernels only)";
  // "Host-only" only when no rank has GPU timing at all: a trace with kernels is never that.
  if (any_rank_from(CommSource::kNoCommKernels)) {
    return "overlap not measurable: the trace has GPU kernels but none is a known communication "
           "kernel (NCCL, RCCL, MSCCL, NVSHMEM, DeepEP, custom all-reduce: docs/inputs.md lists "
           "the names and how to add a family)";
  }
  return "overlap not measurable: host-only records (no GPU timing)";
}

std::string OverlapReport::text(const std::vector<RankOverlap>& overlaps,
                                const std::vector<BucketRow>& buckets) {
  return rank_table(overlaps, reference_rank(overlaps)) + step_table(overlaps) +
         bucket_table(buckets);
}

void OverlapReport::write_json(const std::vector<RankOverlap>& overlaps,
                               const std::vector<BucketRow>& buckets, model::Report& report) {
  const JobOverlap job = JobOverlap::of(overlaps);
  const RankOverlap* ref = reference_rank(overlaps);
  nlohmann::json list = nlohmann::json::array();
  for (const RankOverlap& o : overlaps) {
    const OverlapTotals& t = o.steady;
    nlohmann::json row = {{"rank", o.rank},
                          {"host", o.host},
                          {"comm_us", us(t.comm_ns)},
                          {"wait_us", us(t.wait_ns)},
                          {"peer_wait_us", us(t.peer_wait_ns)},
                          {"steps", o.steady_steps},
                          {"window_us", us(t.window_ns)},
                          {"comm_source", to_string(o.source)}};
    if (o.measurable) {
      row["overlap_pct"] = o.overlap_pct();
      row["exposed_us"] = us(t.exposed_ns);
      row["transfer_us"] = us(t.transfer_ns());
      row["busy_pct"] = o.busy_pct();
      row["idle_before_comm_us"] = us(t.idle_before_comm_ns);
      row["compute_us"] = us(t.compute_ns);
    } else {
      for (const char* k : {"overlap_pct", "exposed_us", "transfer_us", "busy_pct",
                            "idle_before_comm_us", "compute_us"}) {
        row[k] = nullptr;
      }
    }
    list.push_back(row);
  }
  report.json["overlap"] = list;
  nlohmann::json bl = nlohmann::json::array();
  for (const BucketRow& b : buckets) {
    bl.push_back({{"comm_id", model::comm_hex(b.comm_id)},
                  {"ordinal", b.ordinal + 1},
                  {"bytes", b.bytes},
                  {"gpu_us", b.mean_gpu_ns() / 1000.0},
                  {"overlap_pct", b.overlapped_pct()},
                  {"exposed_us_per_step", b.exposed_ns_per_step() / 1000.0},
                  {"occurrences", b.occurrences},
                  {"overlap_pct_sd", b.overlapped_pct_sd()},
                  {"exposed_us_sd", b.exposed_ns_sd() / 1000.0}});
  }
  report.json["buckets"] = bl;
  nlohmann::json summary = {{"ranks", job.ranks}, {"rank_steps", job.rank_steps}};
  if (job.ranks) {
    summary["overlap_pct"] = job.overlap_pct();
    summary["exposed_us_per_step"] = job.per_step(job.totals.exposed_ns) / 1000.0;
    summary["wait_us_per_step"] = job.per_step(job.totals.wait_ns) / 1000.0;
    summary["transfer_us_per_step"] = job.per_step(job.totals.transfer_ns()) / 1000.0;
    summary["step_us"] = job.step_ns() / 1000.0;
  }
  if (ref) {
    summary["step_source"] = ref->plan.source;
    summary["warmup_steps_dropped"] = ref->plan.warmup;
  }
  report.json["overlap_analysis"] = summary;
}

}  // namespace ncclwatch::analysis
