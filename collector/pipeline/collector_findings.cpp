// The collector's findings: what a person acts on first (a hang, a desync), worded with ranks,
// op, seq and comm so that the line alone says where to look.
#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "match/func_name.h"
#include "match/rank_list.h"
#include "pipeline/collector_parts.h"

namespace ncclwatch::pipeline {

namespace {

using match::format_rank_list;
using match::func_name;
using model::Severity;

std::string ranks_word(const std::vector<int32_t>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + format_rank_list(ranks);
}

void add(model::Report& report, Severity s, std::string text) {
  report.findings.push_back(model::Finding{s, "collector", std::move(text)});
}

// Dropped records explain a missing call without any hang; say so next to the claim.
std::string drop_note(const model::JobTrace& job,
                      const std::unordered_map<int32_t, std::size_t>& index,
                      const std::vector<int32_t>& ranks) {
  uint64_t dropped = 0;
  bool cut = false;
  for (int32_t r : ranks) {
    auto it = index.find(r);
    if (it == index.end()) continue;
    dropped += job.ranks[it->second].info.losses.ring_full;
    cut = cut || !job.ranks[it->second].info.complete;
  }
  std::string note;
  if (dropped > 0)
    note += fmt::format(" ({} dropped {} records)", ranks.size() == 1 ? "it" : "they", dropped);
  if (cut) note += " (trace cut short: the process died or was killed)";
  return note;
}

void incomplete_findings(const model::JobTrace& job, const model::MatchResult& match,
                         model::Report& report) {
  std::unordered_map<int32_t, std::size_t> index;  // global rank -> rank index
  for (std::size_t i = 0; i < job.ranks.size(); ++i) index.emplace(job.ranks[i].info.rank, i);
  std::unordered_map<uint64_t, uint64_t>
      last_complete;  // comm -> highest complete collective seq + 1
  for (const auto& inst : match.instances) {
    if (!format::is_collective(inst.func)) continue;
    uint64_t& v = last_complete[inst.comm_id];
    v = std::max(v, inst.seq + 1);
  }
  // The last run of each comm is the one that says where the job stopped.
  std::map<uint64_t, const model::IncompleteInstance*> last_run;
  for (const auto& run : match.incomplete) {
    if (format::is_collective(run.func)) last_run[run.comm_id] = &run;
  }
  std::size_t listed = 0, omitted = 0;
  for (const auto& run : match.incomplete) {
    bool collective = format::is_collective(run.func);
    bool final_run =
        collective && last_run[run.comm_id] == &run && run.seq >= last_complete[run.comm_id];
    if (!final_run && listed >= 6) {
      ++omitted;
      continue;
    }
    std::string comm = comm_hex(run.comm_id);
    std::string note = drop_note(job, index, run.missing_ranks);
    if (!collective) {
      bool send = run.func == format::Func::kSend;
      std::string seqs = run.count == 1 ? fmt::format("#{}", run.seq)
                                        : fmt::format("#{}-#{}", run.seq, run.seq_last);
      add(report, Severity::kWarning,
          send ? fmt::format("send {} from rank {} to rank {} on comm {} was never received (no "
                             "matching recv){}",
                             seqs, format_rank_list(run.present_ranks),
                             format_rank_list(run.missing_ranks), comm, note)
               : fmt::format("recv {} on rank {} from rank {} on comm {} has no matching send{}",
                             seqs, format_rank_list(run.present_ranks),
                             format_rank_list(run.missing_ranks), comm, note));
    } else if (final_run && run.count == 1) {
      add(report, Severity::kCritical,
          fmt::format("{} never entered {} #{} on comm {}; {} waited there{}",
                      ranks_word(run.missing_ranks), func_name(run.func), run.seq, comm,
                      ranks_word(run.present_ranks), note));
    } else if (final_run) {
      add(report, Severity::kCritical,
          fmt::format("{} never entered {} #{} on comm {}; {} went on through #{} without {} ({} "
                      "instances): "
                      "a real NCCL job hangs at #{}, so its trace is cut short or lost records{}",
                      ranks_word(run.missing_ranks), func_name(run.func), run.seq, comm,
                      ranks_word(run.present_ranks), run.seq_last,
                      run.missing_ranks.size() == 1 ? "it" : "them", run.count, run.seq, note));
    } else {
      std::string seqs =
          run.count == 1 ? fmt::format("#{}", run.seq)
                         : fmt::format("#{}-#{} ({} instances)", run.seq, run.seq_last, run.count);
      add(report, Severity::kWarning,
          fmt::format(
              "{} left no record of {} {} on comm {} that {} entered and the job later completed{}",
              ranks_word(run.missing_ranks), func_name(run.func), seqs, comm,
              ranks_word(run.present_ranks), note.empty() ? " (records lost)" : note));
    }
    ++listed;
  }
  if (omitted > 0) {
    add(report, Severity::kWarning,
        fmt::format("{} more runs of incomplete instances: see section \"Incomplete instances\"",
                    omitted));
  }
}

void desync_findings(const model::MatchResult& match, model::Report& report) {
  std::map<uint64_t, uint64_t> total;  // comm -> desynced instances
  for (const auto& c : match.comms) total[c.id] = c.desyncs;
  std::map<uint64_t, int> shown;
  for (const auto& d : match.desyncs) {
    if (shown[d.comm_id]++ >= 3) continue;  // the first ones say where the ranks diverged
    std::string more =
        total[d.comm_id] > 1 && shown[d.comm_id] == 1
            ? fmt::format(" ({} desynced instances on this comm in all)", total[d.comm_id])
            : "";
    add(report, Severity::kCritical,
        fmt::format("desync on comm {} #{}: {} issued {}{}", comm_hex(d.comm_id), d.seq,
                    ranks_word(d.ranks), d.what, more));
  }
}

void comm_findings(const model::JobTrace& job, const model::MatchResult& match,
                   model::Report& report) {
  for (const auto& c : match.comms) {
    if (c.size_disagreement) {
      std::map<int32_t, std::vector<int32_t>> by_size;
      for (const auto& r : job.ranks) {
        for (const auto& ci : r.comms) {
          if (ci.id == c.id) by_size[ci.nranks].push_back(r.info.rank);
        }
      }
      std::string detail;
      for (const auto& [size, ranks] : by_size) {
        detail += fmt::format("{}{} says {}", detail.empty() ? "" : ", ", ranks_word(ranks), size);
      }
      add(report, Severity::kCritical,
          fmt::format("members of comm {} disagree on its size: {} (majority {})", comm_hex(c.id),
                      detail, c.nranks));
    }
    if (c.untraced > 0) {
      add(report, Severity::kWarning,
          fmt::format(
              "comm {} has {} members but only {} left a trace: {} ranks are not in this report",
              comm_hex(c.id), c.nranks, c.ranks.size(), c.untraced));
    }
    if (c.duplicate_seqs > 0) {
      add(report, Severity::kWarning,
          fmt::format(
              "comm {}: {} calls reused a sequence number already seen on the same rank (ignored)",
              comm_hex(c.id), c.duplicate_seqs));
    }
  }
}

void rank_findings(const model::JobTrace& job, model::Report& report) {
  // Records dropped (ring full) are in the one loss warning (add_loss_finding), not here again.
  std::vector<int32_t> cut, salvaged;
  for (const auto& r : job.ranks) {
    if (r.info.salvaged) salvaged.push_back(r.info.rank);
    if (!r.info.complete && !r.info.salvaged) cut.push_back(r.info.rank);
  }
  if (!salvaged.empty()) {
    add(report, Severity::kWarning,
        fmt::format("{} {} killed: records salvaged from shared memory", ranks_word(salvaged),
                    salvaged.size() == 1 ? "died or was" : "died or were"));
  }
  if (!cut.empty()) {
    add(report, Severity::kWarning,
        fmt::format("{}: trace not closed (process died?); run `ncclwatch collect` on its node to "
                    "salvage the rest",
                    ranks_word(cut)));
  }
  if (!job.problems.empty()) {
    add(report, Severity::kWarning,
        fmt::format("{} input problems: see section \"Input problems\"", job.problems.size()));
  }
}

void clock_findings(const model::ClockAlignment& clock, model::Report& report) {
  if (clock.hosts.size() < 2) return;
  uint64_t samples = 0;
  std::vector<const model::HostOffset*> kept;  // estimate not significant: wall clock kept
  for (const auto& h : clock.hosts) {
    samples += h.samples;
    if (!h.significant) kept.push_back(&h);
    if (h.method.find("no support") != std::string::npos) {
      add(report, Severity::kWarning,
          fmt::format(
              "host {}: no collective shared with the other hosts to align its clock; cross-host "
              "timing "
              "for its ranks rests on {}",
              h.host,
              h.method.rfind("wall", 0) == 0 ? "NTP (wall clock)" : "nothing (no clock anchors)"));
    }
  }
  if (kept.empty()) {
    add(report, Severity::kInfo,
        fmt::format(
            "clocks of {} hosts aligned from {} matched collectives; residual skew {:.1f} us",
            clock.hosts.size(), samples, static_cast<double>(clock.residual_ns) / 1000.0));
    return;
  }
  // An estimate that is not significant is no measurement of skew: say what was kept instead.
  std::string names;
  for (std::size_t i = 0; i < kept.size() && i < 4; ++i) names += (i ? ", " : "") + kept[i]->host;
  if (kept.size() > 4) names += fmt::format(", ... ({} hosts)", kept.size());
  const std::size_t aligned = clock.hosts.size() - kept.size();
  add(report, Severity::kInfo,
      fmt::format("clocks of {} hosts: {} kept on the wall clock (NTP) — the collectives could not "
                  "tell {} offset from zero{}",
                  clock.hosts.size(), names, kept.size() == 1 ? "its" : "their",
                  aligned > 1
                      ? fmt::format("; the other {} aligned with residual skew {:.1f} us",
                                    aligned - 1, static_cast<double>(clock.residual_ns) / 1000.0)
                      : std::string()));
}

// Which families of communication kernels the job ran, when any is not NCCL's: the analyses
// count them all as communication, and the reader should know which kernels those were.
void comm_kernel_findings(const model::JobTrace& job, model::Report& report) {
  const auto counts = comm_kernel_counts(job);
  bool other = false;
  for (const auto& c : counts) other = other || c.family != model::CommFamily::kNccl;
  if (!other) return;
  std::string list;
  for (const auto& c : counts)
    list +=
        fmt::format("{}{} {} kernels on {} rank{}", list.empty() ? "" : ", ",
                    model::comm_family_name(c.family), c.kernels, c.ranks, c.ranks == 1 ? "" : "s");
  add(report, Severity::kInfo,
      fmt::format("communication kernels: {} — all count as communication (overlap, breakdown, "
                  "pattern); the families are listed in docs/inputs.md",
                  list));
}

void note_findings(const model::JobTrace& job, model::Report& report) {
  for (const auto& n : job.notes) add(report, Severity::kInfo, model::problem_line(n));
}

}  // namespace

void add_collector_findings(const model::JobTrace& job, const model::MatchResult& match,
                            const model::ClockAlignment& clock, model::Report& report) {
  incomplete_findings(job, match, report);
  desync_findings(match, report);
  comm_findings(job, match, report);
  rank_findings(job, report);
  clock_findings(clock, report);
  add_loss_finding(job, report);
  comm_kernel_findings(job, report);
  note_findings(job, report);
  uint64_t instances = 0, incomplete = 0, desyncs = 0;
  for (const auto& c : match.comms) {
    instances += c.instances;
    incomplete += c.incomplete;
    desyncs += c.desyncs;
  }
  if (incomplete == 0 && desyncs == 0) {
    // "No hang" only when every rank is known to have got out of NCCL: none died or was killed,
    // none left a call it never returned from, every trace was closed.
    std::vector<int32_t> stopped, waiting;
    for (const auto& r : job.ranks) {
      if (!r.never_returned.empty()) waiting.push_back(r.info.rank);
      if (r.info.salvaged || !r.info.complete) stopped.push_back(r.info.rank);
    }
    std::string line =
        fmt::format("{} ranks, {} comm{}: all {} instances matched on every rank", job.ranks.size(),
                    match.comms.size(), match.comms.size() == 1 ? "" : "s", instances);
    if (waiting.empty() && stopped.empty()) {
      add(report, Severity::kInfo, line + " (no hang, no desync)");
    } else {
      std::string known;
      if (!waiting.empty())
        known += fmt::format("; {} entered an NCCL call and never returned", ranks_word(waiting));
      if (!stopped.empty())
        known += fmt::format("; {} did not exit normally (died, was killed, or still running)",
                             ranks_word(stopped));
      add(report, Severity::kWarning,
          line + " (no desync) but the job did not end cleanly" + known);
    }
  }
}

}  // namespace ncclwatch::pipeline
