#include "history/capture_windows.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "history/history_report.h"
#include "trace/record_names.h"

namespace ncclwatch::history {

std::size_t CaptureWindow::closed() const {
  return static_cast<std::size_t>(
      std::count_if(spans.begin(), spans.end(), [](const Span& s) { return s.closed; }));
}

std::vector<CaptureWindow> join_windows(const model::JobTrace& job) {
  std::map<uint64_t, CaptureWindow> by_id;
  for (std::size_t r = 0; r < job.ranks.size(); ++r) {
    const model::RankTrace& rank = job.ranks[r];
    for (const model::WindowMark& m : rank.windows) {
      CaptureWindow& w = by_id[m.id];
      const bool first = w.spans.empty();
      w.id = m.id;
      w.trigger = m.trigger;
      if (w.text.empty()) w.text = m.text;
      if (w.requested_realtime_ns == 0) w.requested_realtime_ns = m.requested_realtime_ns;
      w.detail_records += m.detail_records;
      // A rank that opened one window twice (it cannot: ids are unique) keeps its first span.
      if (!w.spans.empty() && w.spans.back().rank == r) continue;
      w.spans.push_back({r, m.start_ns, m.closed ? m.end_ns : INT64_MAX, m.closed});
      if (m.first_step != format::kNoStep &&
          (first || w.first_step == format::kNoStep || m.first_step > w.first_step))
        w.first_step = m.first_step;
      if (m.closed && m.end_step != format::kNoStep &&
          (w.end_step == format::kNoStep || m.end_step < w.end_step))
        w.end_step = m.end_step;
      const int64_t off = rank.info.wall_offset_ns;
      const int64_t start = m.start_ns + off;
      if (first || start < w.start_wall_ns) w.start_wall_ns = start;
      if (m.closed) w.end_wall_ns = std::max(w.end_wall_ns, m.end_ns + off);
    }
  }
  std::vector<CaptureWindow> out;
  for (auto& [id, w] : by_id) out.push_back(std::move(w));
  std::stable_sort(out.begin(), out.end(), [](const CaptureWindow& a, const CaptureWindow& b) {
    return a.start_wall_ns < b.start_wall_ns;
  });
  return out;
}

bool one_whole_run(const std::vector<CaptureWindow>& windows) {
  return windows.empty() || std::any_of(windows.begin(), windows.end(), [](const CaptureWindow& w) {
           return w.trigger == format::WindowTrigger::kWholeRun;
         });
}

namespace {

template <typename T, typename Time>
void keep_inside(std::vector<T>& v, int64_t start, int64_t end, Time time) {
  std::erase_if(v, [&](const T& x) {
    const int64_t t = time(x);
    return t < start || t >= end;
  });
}

// Per comm, the collective seqs every rank that called on it inside the window captured: from
// the latest first seq, and (when every rank closed the window) to the earliest last one.
void trim_edges(model::JobTrace& job, bool trim_end) {
  struct Range {
    uint64_t lo = 0, hi = UINT64_MAX;
  };
  std::unordered_map<uint64_t, Range> common;
  for (const model::RankTrace& r : job.ranks) {
    std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> own;
    for (const model::CallEvent& c : r.calls) {
      if (!format::is_collective(c.func) || (c.flags & model::kCallNeverReturned) != 0) continue;
      auto [it, fresh] = own.try_emplace(c.comm_id, c.seq, c.seq);
      if (!fresh) {
        it->second.first = std::min(it->second.first, c.seq);
        it->second.second = std::max(it->second.second, c.seq);
      }
    }
    for (const auto& [comm, seqs] : own) {
      Range& g = common[comm];
      g.lo = std::max(g.lo, seqs.first);
      if (trim_end) g.hi = std::min(g.hi, seqs.second);
    }
  }
  for (model::RankTrace& r : job.ranks) {
    std::erase_if(r.calls, [&](const model::CallEvent& c) {
      if (!format::is_collective(c.func) || (c.flags & model::kCallNeverReturned) != 0)
        return false;
      const Range& g = common[c.comm_id];
      return c.seq < g.lo || c.seq > g.hi;
    });
  }
}

}  // namespace

model::JobTrace window_job(const model::JobTrace& job, const CaptureWindow& w, bool end_evidence) {
  model::JobTrace out;
  out.job = job.job;
  out.problems = job.problems;
  out.notes = job.notes;
  for (const CaptureWindow::Span& s : w.spans) {
    if (s.rank >= job.ranks.size()) continue;
    model::RankTrace r = job.ranks[s.rank];
    const int64_t a = s.start_ns, b = s.end_ns;
    // The calls never returned from are always-tier evidence (in-flight records): with
    // end_evidence they stay, wherever they are.
    std::erase_if(r.calls, [&](const model::CallEvent& c) {
      if (end_evidence && (c.flags & model::kCallNeverReturned) != 0) return false;
      return c.enter_ns < a || c.enter_ns >= b;
    });
    keep_inside(r.kernels, a, b, [](const model::KernelEvent& k) { return k.start_ns; });
    keep_inside(r.launches, a, b, [](const model::LaunchEvent& l) { return l.enter_ns; });
    keep_inside(r.ranges, a, b, [](const model::RangeEvent& g) { return g.start_ns; });
    keep_inside(r.links, a, b, [](const format::KernelLinkRecord& l) { return l.t_ns; });
    keep_inside(r.coll_gpu, a, b, [](const format::CollGpuRecord& g) { return g.start_ns; });
    keep_inside(r.sched, a, b, [](const model::SchedSample& x) { return x.t_ns; });
    if (!end_evidence)
      keep_inside(r.never_returned, a, b, [](const model::HookedCall& c) { return c.enter_ns; });
    std::erase_if(r.windows, [&](const model::WindowMark& m) { return m.id != w.id; });
    out.ranks.push_back(std::move(r));
  }
  // A rank whose span holds no call while others' do captured nothing of the window (it opened
  // there only as the process ended): left out, or it would read as a rank missing from every
  // collective (a hang that was not).
  const auto empty = [](const model::RankTrace& r) { return r.calls.empty(); };
  std::size_t left_out = 0;
  if (!std::all_of(out.ranks.begin(), out.ranks.end(), empty))
    left_out = std::erase_if(out.ranks, empty);
  if (out.ranks.size() < job.ranks.size())
    out.notes.push_back(
        {"capture window",
         fmt::format("{} of {} ranks took part in this window{}", out.ranks.size(),
                     job.ranks.size(),
                     left_out > 0 ? fmt::format(" ({} captured no call of it)", left_out)
                                  : std::string())});
  trim_edges(out, w.closed() == w.spans.size());
  return out;
}

std::string describe_window(const CaptureWindow& w, std::size_t index, std::size_t count) {
  std::string text = fmt::format("window {} of {}, {}", index + 1, count,
                                 trace::window_trigger_name(static_cast<uint8_t>(w.trigger)));
  if (w.first_step != format::kNoStep) {
    text += w.end_step != format::kNoStep && w.end_step > w.first_step
                ? fmt::format(": steps {}-{}", w.first_step, w.end_step - 1)
                : fmt::format(": from step {}", w.first_step);
  } else {
    text += ":";
  }
  text += fmt::format(", {}-{} UTC, {} rank(s)", wall_text(w.start_wall_ns, false),
                      w.end_wall_ns > 0 ? wall_text(w.end_wall_ns, false) : "(not closed)",
                      w.spans.size());
  return text;
}

nlohmann::json window_json(const CaptureWindow& w, std::size_t index) {
  using nlohmann::json;
  const auto step = [](uint64_t s) { return s == format::kNoStep ? json(nullptr) : json(s); };
  return {{"index", index + 1},
          {"id", fmt::format("{:#x}", w.id)},
          {"trigger", trace::window_trigger_name(static_cast<uint8_t>(w.trigger))},
          {"text", w.text},
          {"first_step", step(w.first_step)},
          {"end_step", step(w.end_step)},
          {"start_realtime_ns", w.start_wall_ns},
          {"end_realtime_ns", w.end_wall_ns > 0 ? json(w.end_wall_ns) : json(nullptr)},
          {"requested_realtime_ns",
           w.requested_realtime_ns > 0 ? json(w.requested_realtime_ns) : json(nullptr)},
          {"ranks", w.spans.size()},
          {"ranks_closed", w.closed()},
          {"detail_records", w.detail_records}};
}

}  // namespace ncclwatch::history
