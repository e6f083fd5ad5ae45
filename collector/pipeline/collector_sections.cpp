// The collector's sections: the per-rank table (what each rank recorded, how it was timed, what
// it lost), the communicators, the clock offsets, and, at the end, the input problems.
#include <algorithm>

#include <fmt/format.h>

#include "match/func_name.h"
#include "match/rank_list.h"
#include "pipeline/collector_parts.h"

namespace ncclwatch::pipeline {

namespace {

struct RankCounts {
  uint64_t colls = 0, p2p = 0, gpu = 0;
};

RankCounts count_calls(const model::RankTrace& r) {
  RankCounts c;
  for (const auto& call : r.calls) {
    c.colls += format::is_collective(call.func);
    c.p2p += format::is_p2p(call.func);
    c.gpu += call.has_gpu();
  }
  return c;
}

// "cupti", or with compute kernels left out on request "cupti:nccl", "cupti:sampled:4".
std::string timing_label(const model::RankInfo& info) {
  std::string t = model::timing_name(info.timing);
  if (info.kernels != model::KernelScope::kAll)
    t += ":" + model::kernel_scope_name(info.kernels, info.kernel_sample_every);
  return t;
}

std::string rank_row(const model::RankTrace& r) {
  RankCounts c = count_calls(r);
  std::string state = r.info.salvaged ? "salvaged" : (r.info.complete ? "" : "cut short");
  return fmt::format("{:>5}  {:<16} {:>4} {:>8} {:>9} {:>9} {:>7}  {:<11} {:>9} {:>8} {:>6}  {}\n",
                     r.info.rank < 0 ? std::string("?") : std::to_string(r.info.rank),
                     r.info.host.substr(0, 16), r.info.device, r.info.pid, r.calls.size(), c.colls,
                     c.p2p, timing_label(r.info), c.gpu, r.info.losses.dropped(),
                     r.info.losses.lost(), state);
}

std::string ranks_table(const model::JobTrace& job, std::size_t max_rows) {
  std::string body = fmt::format(
      "{:>5}  {:<16} {:>4} {:>8} {:>9} {:>9} {:>7}  {:<11} {:>9} {:>8} {:>6}\n", "rank", "host",
      "dev", "pid", "calls", "colls", "p2p", "timing", "gpu-timed", "dropped", "lost");
  const std::size_t n = job.ranks.size();
  if (n <= max_rows) {
    for (const auto& r : job.ranks) body += rank_row(r);
    return body;
  }
  // Thousands of ranks: the first and last few, and every rank with something to say.
  std::size_t shown = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& info = job.ranks[i].info;
    bool edge = i < 4 || i + 4 >= n;
    bool notable = info.losses.any() || !info.complete || info.salvaged;
    if (edge || (notable && shown < max_rows)) {
      body += rank_row(job.ranks[i]);
      ++shown;
    }
  }
  body += fmt::format(
      "  ... {} ranks in all ({} shown: the first, the last, and those that lost records); "
      "every rank is in the JSON\n",
      n, shown);
  return body;
}

std::string comms_table(const model::MatchResult& match) {
  std::string body = fmt::format("{:<18} {:>6}  {:<20} {:>10} {:>10} {:>7}\n", "comm", "nranks",
                                 "ranks", "matched", "incomplete", "desync");
  for (const auto& c : match.comms) {
    std::string ranks = match::format_rank_list(c.ranks);
    if (ranks.size() > 20) ranks = ranks.substr(0, 17) + "...";
    body += fmt::format("{:<18} {:>6}  {:<20} {:>10} {:>10} {:>7}{}{}\n", comm_hex(c.id), c.nranks,
                        ranks, c.instances, c.incomplete, c.desyncs,
                        c.size_disagreement ? "  size disagreement" : "",
                        c.untraced > 0 ? fmt::format("  {} untraced", c.untraced) : "");
  }
  return body;
}

std::string clock_table(const model::ClockAlignment& clock) {
  std::string body = fmt::format("{:<24} {:>14} {:>12} {:>9}  {}\n", "host", "offset_us",
                                 "residual_us", "samples", "method");
  for (const auto& h : clock.hosts) {
    // A host kept on its wall clock has no residual: its estimate was not used.
    body += fmt::format("{:<24} {:>14.1f} {:>12} {:>9}  {}\n", h.host.substr(0, 24),
                        static_cast<double>(h.offset_ns) / 1000.0,
                        h.significant
                            ? fmt::format("{:.1f}", static_cast<double>(h.residual_ns) / 1000.0)
                            : std::string("-"),
                        h.samples, h.method);
  }
  return body;
}

std::string incomplete_table(const model::MatchResult& match) {
  std::string body;
  for (const auto& run : match.incomplete) {
    std::string seqs = run.count == 1 ? fmt::format("#{}", run.seq)
                                      : fmt::format("#{}-#{}", run.seq, run.seq_last);
    body +=
        fmt::format("{} {:<14} {:<16} missing {:<12} present {}\n", comm_hex(run.comm_id),
                    match::func_name(run.func), seqs, match::format_rank_list(run.missing_ranks),
                    match::format_rank_list(run.present_ranks));
  }
  return body;
}

}  // namespace

void add_collector_sections(const model::JobTrace& job, const model::MatchResult& match,
                            const model::ClockAlignment& clock, std::size_t max_rank_rows,
                            model::Report& report) {
  report.sections.push_back({"Ranks", ranks_table(job, max_rank_rows)});
  if (std::string losses = losses_table(job); !losses.empty())
    report.sections.push_back({"Losses", std::move(losses)});
  if (!match.comms.empty()) report.sections.push_back({"Communicators", comms_table(match)});
  if (!match.incomplete.empty())
    report.sections.push_back({"Incomplete instances", incomplete_table(match)});
  if (clock.hosts.size() > 1) report.sections.push_back({"Clocks", clock_table(clock)});
}

void add_input_problems_section(const model::JobTrace& job, model::Report& report) {
  if (job.problems.empty()) return;
  std::string body;
  for (const auto& p : job.problems) body += fmt::format("{}: {}\n", p.source, p.message);
  report.sections.push_back({"Input problems", body});
}

std::vector<CommKernelCount> comm_kernel_counts(const model::JobTrace& job) {
  constexpr auto kFamilies = static_cast<std::size_t>(model::CommFamily::kCount);
  std::vector<CommKernelCount> counts(kFamilies);
  for (const auto& r : job.ranks) {
    if (r.dropped) {  // the loader dropped the GPU records and kept their counts
      for (std::size_t f = 1; f < kFamilies; ++f) {
        counts[f].kernels += r.dropped->comm_kernels[f];
        counts[f].ranks += r.dropped->comm_kernels[f] > 0;
      }
      continue;
    }
    std::vector<bool> seen(kFamilies, false);
    for (const auto& k : r.kernels) {
      const auto f = static_cast<std::size_t>(k.family);
      if (!k.nccl || f == 0 || f >= kFamilies) continue;
      ++counts[f].kernels;
      if (!seen[f]) ++counts[f].ranks;
      seen[f] = true;
    }
  }
  std::vector<CommKernelCount> present;
  for (std::size_t f = 1; f < kFamilies; ++f) {
    if (counts[f].kernels == 0) continue;
    counts[f].family = static_cast<model::CommFamily>(f);
    present.push_back(counts[f]);
  }
  return present;
}

}  // namespace ncclwatch::pipeline
