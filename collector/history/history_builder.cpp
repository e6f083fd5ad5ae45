// build_history (history.h): every rank's summaries joined by step number, one step at a time,
// into the PeriodFolder; then what the periods show (history_findings.h).
#include <sys/resource.h>

#include <algorithm>
#include <map>

#include "history/history.h"
#include "history/history_findings.h"
#include "history/period_folder.h"
#include "history/step_stream.h"

namespace ncclwatch::history {

namespace {

GpuSwitchInfo gpu_switch_of(const std::vector<std::unique_ptr<StepSource>>& sources) {
  GpuSwitchInfo info;
  for (const auto& source : sources) {
    const format::GpuTimingRecord* g = source->gpu_decision();
    if (g == nullptr) continue;
    ++info.ranks;
    if (info.known) continue;
    info.known = true;
    info.windows_only = g->prefix.u8a == 0;
    info.automatic = g->prefix.u8b == static_cast<uint8_t>(format::GpuTimingReason::kAuto);
    info.lite = g->prefix.tid == 2;
    info.units_per_step = g->units_per_step_x100 / 100.0;
    info.unit_cost_us = g->unit_cost_ns / 1e3;
    info.step_ms = static_cast<double>(g->step_ns) / 1e6;
    info.cost_pct = g->step_ns > 0 ? 100.0 * info.units_per_step * g->unit_cost_ns /
                                         static_cast<double>(g->step_ns)
                                   : 0.0;
  }
  return info;
}

// Where a summary stands in its rank's order: a rank that counted seconds of the clock while it
// learned its steps switches once to learned steps, whose numbers restart below the Unix seconds
// (shim/record/step_summarizer.h), so its seconds come first; within a source numbers increase.
// Ranks' summaries are joined on this key: seconds with seconds, learned steps with learned ones.
uint64_t order_of(const format::StepRecord& s) {
  const bool clock = s.prefix.u8a == static_cast<uint8_t>(format::StepSource::kInterval);
  return (uint64_t{clock ? 0u : 1u} << 32) | s.step;
}

}  // namespace

History build_history(std::vector<RankSource> ranks,
                      std::vector<std::unique_ptr<StepSource>>& sources,
                      const HistoryOptions& options) {
  History h;
  h.ranks = std::move(ranks);
  const std::size_t n = std::min(h.ranks.size(), sources.size());
  h.ranks.resize(n);
  std::map<std::string, std::size_t> hosts;
  std::vector<std::size_t> host_of;
  std::vector<int64_t> offsets;
  for (const RankSource& r : h.ranks) {
    host_of.push_back(hosts.emplace(r.host, hosts.size()).first->second);
    offsets.push_back(r.wall_offset_ns);
  }
  PeriodFolder folder(std::move(host_of), std::move(offsets), options.max_periods);

  std::vector<format::StepRecord> head(n), taken(n);
  std::vector<bool> live(n, false);
  for (std::size_t r = 0; r < n; ++r) live[r] = sources[r]->next(head[r]);
  std::vector<const format::StepRecord*> cur(n, nullptr);
  for (;;) {
    uint64_t key = UINT64_MAX;
    for (std::size_t r = 0; r < n; ++r)
      if (live[r]) key = std::min(key, order_of(head[r]));
    if (key == UINT64_MAX) break;
    const uint64_t step = key & 0xffffffffu;
    for (std::size_t r = 0; r < n; ++r) {
      cur[r] = nullptr;
      if (!live[r] || order_of(head[r]) != key) continue;
      taken[r] = head[r];
      cur[r] = &taken[r];
      // A step number this rank passed already (summarized twice, or its numbering went back)
      // cannot join its peers any more: skipped and counted.
      bool more = sources[r]->next(head[r]);
      while (more && order_of(head[r]) <= key) {
        ++h.out_of_order;
        more = sources[r]->next(head[r]);
      }
      live[r] = more;
      if (h.steps == 0) {
        h.source = static_cast<format::StepSource>(taken[r].prefix.u8a);
      }
      if (h.timing == format::StepTiming::kNone)
        h.timing = static_cast<format::StepTiming>(taken[r].prefix.u8b);
    }
    if (h.steps == 0) h.first_step = step;
    h.last_step = step;
    ++h.steps;
    folder.add(step, cur);
  }
  h.gpu_switch = gpu_switch_of(sources);
  h.periods = folder.finish();
  h.clocks_from_sync = folder.clocks_from_sync();
  if (!h.periods.empty()) {
    h.start_wall_ns = h.periods.front().start_wall_ns;
    h.end_wall_ns = h.periods.back().end_wall_ns;
  }
  h.regressions = find_regressions(h.periods);
  h.slow_ranks = find_slow_ranks(h.periods, h.timing);
  link_regressions(h);
  return h;
}

namespace {

// One trace file stays open per rank while the ranks are read together: a job of thousands of
// ranks needs more descriptors than the usual soft limit (1024); the hard limit allows it.
void allow_open_files(std::size_t n) {
  rlimit l{};
  if (getrlimit(RLIMIT_NOFILE, &l) != 0 || l.rlim_cur == RLIM_INFINITY || l.rlim_cur >= n) return;
  l.rlim_cur = l.rlim_max == RLIM_INFINITY ? n : std::min<rlim_t>(n, l.rlim_max);
  setrlimit(RLIMIT_NOFILE, &l);
}

}  // namespace

History build_history(std::vector<RankSource> ranks, std::vector<std::string>& problems,
                      const HistoryOptions& options) {
  allow_open_files(ranks.size() + 256);
  std::vector<std::unique_ptr<StepSource>> sources;
  std::vector<StepStream*> streams;
  for (const RankSource& r : ranks) {
    auto s = std::make_unique<StepStream>(r.parts);
    streams.push_back(s.get());
    sources.push_back(std::move(s));
  }
  History h = build_history(std::move(ranks), sources, options);
  for (const StepStream* s : streams)
    problems.insert(problems.end(), s->problems().begin(), s->problems().end());
  return h;
}

}  // namespace ncclwatch::history
