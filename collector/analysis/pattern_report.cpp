#include "analysis/pattern_report.h"

#include <fmt/format.h>

#include "analysis/straggler_report.h"
#include "analysis/units.h"
#include "model/vocabulary.h"

namespace ncclwatch::analysis {

namespace {

std::string steps_list(const std::vector<std::size_t>& one_based) {
  std::string s;
  for (std::size_t i = 0; i < one_based.size() && i < 8; ++i) {
    s += (i ? ", " : "") + std::to_string(one_based[i]);
  }
  if (one_based.size() > 8) s += ", ...";
  return s;
}

// Utilization graded against the 80-90 % well-tuned jobs sustain.
std::string grade(const PatternVerdict& v) {
  if (v.gpu_ranks == 0) return "";
  return fmt::format(
      " Utilization: nvidia-smi would show {:.0f}%, useful compute {:.0f}% ({} the 80-90% "
      "well-tuned jobs sustain{}).",
      v.smi_pct, v.useful_pct,
      v.useful_pct >= kWellTunedPct ? "within" : (v.useful_pct >= 50 ? "below" : "far below"),
      v.multi_node ? "; multi-node jobs with heavy cross-node traffic run somewhat lower" : "");
}

// "12.4 ms/step (7.0% of step time)": the findings' cost unit.
std::string cost_words(double pct, double ns_per_step) {
  return ns_per_step > 0
             ? fmt::format("{}/step ({:.1f}% of step time)", human_time(ns_per_step), pct)
             : fmt::format("{:.1f}% of step time", pct);
}

// The front straggler as its own finding says it: lateness where it happens, cost, cause.
std::string straggler_words(const Straggler& s) {
  return fmt::format("rank {} ({}) is {} late at {}, costing {}; cause {}: {}", s.rank, s.host,
                     human_time(s.lateness_ns), StragglerReport::where(s),
                     cost_words(s.cost_pct, s.cost_ns_per_step), to_string(s.cause),
                     StragglerReport::cause_text(s));
}

std::string side_note(const PatternVerdict& v, const StragglerResult& stragglers) {
  if (!v.straggler_is_side_note || stragglers.stragglers.empty()) return "";
  return fmt::format(" Also, smaller than this stall: {}.",
                     straggler_words(stragglers.stragglers.front()));
}

std::string lagging(const PatternVerdict& v, const StragglerResult& stragglers) {
  if (stragglers.stragglers.empty()) return "one GPU or node lagging the rest";
  const Straggler& s = stragglers.stragglers.front();
  std::string who;
  if (!stragglers.nodes.empty()) {
    const NodeProblem& n = stragglers.nodes.front();
    who = fmt::format("node {} ({} ranks) is {} late, costing {}; cause {}: {}", n.host,
                      n.ranks.size(), human_time(n.lateness_ns),
                      cost_words(n.cost_pct, n.cost_ns_per_step), to_string(s.cause),
                      StragglerReport::cause_text(s));
  } else {
    who = straggler_words(s);
  }
  const std::string spin =
      v.gpu_ranks == 0
          ? std::string()
          : fmt::format("; the ranks spin in NCCL waiting {:.0f}% of the step (busy to nvidia-smi)",
                        v.exposed_wait_pct);
  // The stall it beat, in the same unit: the two lines agree on which is bigger.
  const std::string stall =
      v.stall_ns > 0 ? fmt::format(
                           " Also, smaller than the straggler: every rank idles {} at the "
                           "step boundary ({:.1f}% of step time).",
                           human_time(static_cast<double>(v.stall_ns)), v.stall_cost_pct)
                     : std::string();
  return fmt::format(
      "one {} lagging the rest — {}{} — straggler (thermal, PCIe, NCCL): run DCGM diagnostics "
      "and nccl-tests on that node.{}{}",
      stragglers.nodes.empty() ? "GPU" : "node", who, spin, grade(v), stall);
}

// Why no GPU-timed rank could be judged.
std::string not_judged(const DataSupport& support) {
  if (support.any_sampled) {
    return fmt::format(
        "utilization pattern not judged: no steady step lies wholly inside a window where compute "
        "kernels were recorded ({}); record more steps or every kernel",
        support.kernel_scope);
  }
  if (!support.kernel_scope.empty()) {
    return fmt::format(
        "utilization pattern not judged: compute kernels left out on request ({}); see the "
        "host-side split in 'Step breakdown'",
        support.kernel_scope);
  }
  return "utilization pattern not judged: no compute-kernel timing (host-only or lite-mode "
         "records); see the host-side split in 'Step breakdown'";
}

// Where the figures come from when compute was sampled.
std::string sampled_label(const PatternVerdict& v, const DataSupport& support) {
  if (!support.any_sampled || v.gpu_ranks == 0) return "";
  return fmt::format(
      " (Measured on the {} rank-steps inside the windows where compute kernels "
      "were recorded, {}.)",
      v.rank_steps, support.kernel_scope);
}

}  // namespace

std::string PatternReport::text(const PatternVerdict& v, const StragglerResult& stragglers,
                                const DataSupport& support) {
  return row_text(v, stragglers, support) + sampled_label(v, support);
}

std::string PatternReport::row_text(const PatternVerdict& v, const StragglerResult& stragglers,
                                    const DataSupport& support) {
  switch (v.row) {
    case PatternRow::kLagging:
      return lagging(v, stragglers);
    case PatternRow::kNotJudged:
      return not_judged(support);
    case PatternRow::kCheckpoint:
      return fmt::format(
                 "sawtooth aligned with save intervals: steps {} (every {} steps) stall {} at the "
                 "step boundary on every rank (other steps {}) — synchronous checkpoint writes: "
                 "compare checkpoint write time with step time; save asynchronously or less "
                 "often.{}",
                 steps_list(v.spike_steps), v.period_steps, human_time(v.spike_idle_ns),
                 human_time(v.other_idle_ns), grade(v)) +
             side_note(v, stragglers);
    case PatternRow::kDataloader:
      return fmt::format(
                 "sawtooth: GPU idle {:.0f}% of each step at the step boundary on {} — the input "
                 "pipeline is not keeping up (or a host sync each step); check DataLoader "
                 "num_workers, pin_memory and storage throughput (iostat).{}",
                 v.boundary_idle_pct,
                 v.sawtooth_rank_share >= 1.0
                     ? std::string("every rank")
                     : fmt::format("{:.0f}% of ranks", 100 * v.sawtooth_rank_share),
                 grade(v)) +
             side_note(v, stragglers);
    case PatternRow::kCollectiveDrops:
      return fmt::format(
          "drops correlated with collectives: {:.0f}% of the step is exposed communication "
          "({}) or idle before a collective ({:.0f}%) — network fabric contention or "
          "communication not hidden behind compute; check NCCL debug logs (NCCL_DEBUG=INFO), "
          "switch counters, bucket order/size.{}",
          v.comm_drop_pct,
          support.cross_rank
              ? fmt::format("{:.0f}% transfer, {:.0f}% waiting for peers", v.exposed_transfer_pct,
                            v.exposed_wait_pct)
              : std::string("waiting for peers vs transfer not measured: one rank traced"),
          v.idle_before_comm_pct, grade(v));
    case PatternRow::kFlatLow:
      return fmt::format(
          "flat, steady low utilization: GPU busy {:.0f}% in every step (spread {:.1f} points), "
          "idle spread between kernels ({:.0f}% of the step), {:.0f} compute kernels per step of "
          "median {} — batch too small or kernels too short (launch-bound); check the batch "
          "size, torch.compile / fusion, CUDA graphs.{}",
          v.smi_pct, v.step_spread_pct, v.idle_other_pct, v.kernels_per_step,
          human_time(v.kernel_median_us * 1000.0), grade(v));
    case PatternRow::kNone:
      return fmt::format(
          "none of the usual patterns: useful compute {:.0f}%, nvidia-smi view {:.0f}%; per step "
          "exposed comm {:.0f}%, memcpy/memset {:.0f}%, idle {:.0f}% (at the step boundary "
          "{:.0f}%, before collectives {:.0f}%, between kernels {:.0f}%), per-step spread {:.1f} "
          "points — see 'Step breakdown'.{}",
          v.useful_pct, v.smi_pct, v.exposed_pct, v.memcpy_pct, v.idle_pct, v.boundary_idle_pct,
          v.idle_before_comm_pct, v.idle_other_pct, v.step_spread_pct, grade(v));
    case PatternRow::kHealthy:
      break;
  }
  return fmt::format(
      "no low-utilization pattern: useful compute {:.0f}% of the step, nvidia-smi would show "
      "{:.0f}% (well-tuned jobs: 80-90%)",
      v.useful_pct, v.smi_pct);
}

std::string PatternReport::cross_node_line(const CrossNodeComm& c) {
  return fmt::format(
      "comm {} ({} ranks, {} nodes) carries {:.0f} small {} per step across nodes (median {}, "
      "{:.0f}% hidden by compute, {:.0f}% issued between compute kernels): every layer blocks on "
      "the inter-node link — keep tensor parallelism inside a node",
      model::comm_hex(c.comm_id), c.nranks, c.hosts, c.per_step, c.what,
      human_bytes(c.median_bytes), c.overlap_pct, c.interleaved_pct);
}

double PatternReport::cost_ns_per_step(const PatternVerdict& v, const StragglerResult& stragglers) {
  if (v.row == PatternRow::kLagging) {
    if (!stragglers.nodes.empty()) return stragglers.nodes.front().cost_ns_per_step;
    if (!stragglers.stragglers.empty()) return stragglers.stragglers.front().cost_ns_per_step;
  }
  return v.cost_pct / 100.0 * v.mean_step_ns;
}

void PatternReport::write(const PatternVerdict& v, const StragglerResult& stragglers,
                          const std::vector<CrossNodeComm>& comms, const DataSupport& support,
                          model::Report& report) {
  std::string finding = text(v, stragglers, support);
  model::Severity severity = v.severity;
  // A verdict over ranks that lost much of their trace is information, naming the loss.
  if (severity == model::Severity::kWarning && !support.lossy.empty()) {
    severity = model::Severity::kInfo;
    finding += support.unsupported_by_losses();
  }
  std::optional<model::FindingCost> cost;
  if (v.cost_pct > 0) cost = model::FindingCost{v.cost_pct, cost_ns_per_step(v, stragglers)};
  report.findings.push_back({severity, "pattern", finding, cost});
  nlohmann::json tp = nlohmann::json::array();
  for (const CrossNodeComm& c : comms) {
    if (c.tensor_parallel_like) {
      report.findings.push_back({model::Severity::kWarning, "pattern", cross_node_line(c)});
    }
    tp.push_back({{"comm_id", model::comm_hex(c.comm_id)},
                  {"nranks", c.nranks},
                  {"hosts", c.hosts},
                  {"gpu_ranks", c.gpu_ranks},
                  {"per_step", c.per_step},
                  {"median_bytes", c.median_bytes},
                  {"overlap_pct", c.overlap_pct},
                  {"interleaved_pct", c.interleaved_pct},
                  {"what", c.what},
                  {"tensor_parallel_like", c.tensor_parallel_like}});
  }
  report.json["cross_node_comms"] = std::move(tp);
  nlohmann::json p = {{"row", to_string(v.row)},
                      {"text", finding},
                      {"severity", model::severity_name(severity)},
                      {"cost_pct", cost ? nlohmann::json(cost->pct) : nlohmann::json()},
                      {"gpu_ranks", v.gpu_ranks},
                      {"spike_steps", v.spike_steps},
                      {"period_steps", v.period_steps}};
  if (v.gpu_ranks > 0) {
    p["smi_util_pct"] = v.smi_pct;
    p["useful_compute_pct"] = v.useful_pct;
    p["idle_step_boundary_pct"] = v.boundary_idle_pct;
    p["comm_drop_pct"] = v.comm_drop_pct;
  }
  report.json["pattern"] = std::move(p);
}

}  // namespace ncclwatch::analysis
