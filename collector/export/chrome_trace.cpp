#include "export/chrome_trace.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/overlap.h"
#include "analysis/rank_activity.h"
#include "model/func_names.h"
#include "model/vocabulary.h"

namespace ncclwatch::exporter {
namespace {

constexpr int64_t kHostTid = 0;
constexpr int64_t kStepsTid = 1;
// Stream tracks: tid = stream + this, so that stream ids never collide with the tracks above.
constexpr int64_t kStreamTidBase = 16;

struct Window {
  int64_t lo = std::numeric_limits<int64_t>::min();
  int64_t hi = std::numeric_limits<int64_t>::max();
  // Touching is not overlapping; a zero-length event counts where it lies.
  bool overlaps(int64_t b, int64_t e) const { return b < hi && (e > lo || b >= lo); }
};

Window window_of(const analysis::StepPlan& plan, StepWindow w) {
  Window out;
  if (w.first == 0) return out;
  if (plan.steps.size() < w.first) {
    out.lo = 0;
    out.hi = -1;  // nothing
    return out;
  }
  const std::size_t last = std::min(w.last == 0 ? plan.steps.size() : w.last, plan.steps.size());
  out.lo = plan.steps[w.first - 1].begin;
  out.hi = plan.steps[last - 1].end;
  return out;
}

std::string json_string(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool is_hta_nccl_name(const std::string& n) {
  return n.rfind("ncclSymk", 0) == 0 ||
         (n.rfind("nccl", 0) == 0 && n.find("Kernel") != std::string::npos);
}

class Emitter {
 public:
  Emitter(std::FILE* out, int64_t base_ns, ChromeTraceStats& stats)
      : out_(out), base_(base_ns), stats_(stats) {}

  void raw(const std::string& event) {
    std::fputs(first_ ? "\n" : ",\n", out_);
    first_ = false;
    std::fputs(event.c_str(), out_);
    ++stats_.events;
  }
  std::string ts(int64_t aligned_ns) const {
    const int64_t rel = aligned_ns - base_;
    return fmt::format("{}.{:03d}", rel / 1000 - (rel < 0 && rel % 1000 ? 1 : 0),
                       static_cast<int>(((rel % 1000) + 1000) % 1000));
  }
  static std::string dur(int64_t ns) {
    ns = std::max<int64_t>(0, ns);
    return fmt::format("{}.{:03d}", ns / 1000, static_cast<int>(ns % 1000));
  }
  void meta(const char* what, int64_t pid, int64_t tid, const std::string& args) {
    raw(fmt::format(R"({{"ph":"M","name":"{}","pid":{},"tid":{},"args":{}}})", what, pid, tid,
                    args));
  }

 private:
  std::FILE* out_;
  int64_t base_;
  ChromeTraceStats& stats_;
  bool first_ = true;
};

// Where a member of a collective is drawn: its kernel on its stream, else its host call.
struct FlowPoint {
  bool ok = false;
  int64_t tid = 0;
  int64_t ns = 0;  // aligned
};

FlowPoint flow_point(const model::RankTrace& rank, std::size_t call_index, int64_t offset,
                     const Window& w) {
  FlowPoint p;
  if (call_index >= rank.calls.size()) return p;
  const model::CallEvent& c = rank.calls[call_index];
  if (c.kernel >= 0 && static_cast<std::size_t>(c.kernel) < rank.kernels.size()) {
    const model::KernelEvent& k = rank.kernels[static_cast<std::size_t>(c.kernel)];
    if (!w.overlaps(k.start_ns, k.end_ns) || k.end_ns < k.start_ns) return p;
    p = {true, kStreamTidBase + static_cast<int64_t>(k.stream), k.start_ns + offset};
    return p;
  }
  if (!w.overlaps(c.enter_ns, c.exit_ns)) return p;
  p = {true, kHostTid, c.enter_ns + offset};
  return p;
}

int64_t base_of(const model::JobTrace& job, const model::ClockAlignment& clocks,
                const std::vector<Window>& windows) {
  int64_t base = std::numeric_limits<int64_t>::max();
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    const model::RankTrace& r = job.ranks[i];
    const Window& w = windows[i];
    const int64_t off = clocks.at(i);
    for (const auto& k : r.kernels) {
      if (w.overlaps(k.start_ns, k.end_ns)) {
        base = std::min(base, k.start_ns + off);
        break;
      }
    }
    for (const auto& c : r.calls) {
      if (w.overlaps(c.enter_ns, c.exit_ns)) {
        base = std::min(base, c.enter_ns + off);
        break;
      }
    }
    for (const auto& l : r.launches) {
      if (w.overlaps(l.enter_ns, l.exit_ns)) base = std::min(base, l.enter_ns + off);
    }
    if (w.lo != std::numeric_limits<int64_t>::min() && w.hi >= w.lo)
      base = std::min(base, w.lo + off);
  }
  return base == std::numeric_limits<int64_t>::max() ? 0 : base;
}

// ncclwatch's overlap over the kernels a Kineto reader keeps from this file, HTA's way: a kernel
// counts when its launch (same correlation) is in the file and starts no later than the last
// exported ProfilerStep ends (HTA with include_last_profiler_step); with fewer than 2 steps
// every kernel counts (HTA then filters nothing). A GPU running behind the host runs kernels in
// the window that were launched before it: they are exported, but no reader can tie them to a
// launch. Ranks without kernels (lite mode: collectives timed by CUDA events) keep the figure of
// everything exported.
double reader_overlap(const model::RankTrace& r, const Window& w, const analysis::StepPlan& plan) {
  if (r.kernels.empty()) return analysis::overlap_fraction(r, w.lo, w.hi);
  std::size_t steps = 0;
  int64_t last_step_end = std::numeric_limits<int64_t>::min();
  for (const analysis::Interval& st : plan.steps) {
    if (!w.overlaps(st.begin, st.end)) continue;
    ++steps;
    last_step_end = std::max(last_step_end, st.begin + std::max<int64_t>(0, st.length() - 1));
  }
  std::unordered_map<uint32_t, int64_t> launch_at;  // correlation -> earliest exported launch
  for (const model::LaunchEvent& l : r.launches) {
    if (!w.overlaps(l.enter_ns, l.exit_ns)) continue;
    auto [it, fresh] = launch_at.emplace(l.correlation, l.enter_ns);
    if (!fresh) it->second = std::min(it->second, l.enter_ns);
  }
  model::RankTrace kept;
  for (const model::KernelEvent& k : r.kernels) {
    if (k.end_ns < k.start_ns || !w.overlaps(k.start_ns, k.end_ns)) continue;
    if (steps >= 2) {
      const auto it = launch_at.find(k.correlation);
      if (it == launch_at.end() || it->second > last_step_end) continue;
    }
    kept.kernels.push_back(k);
  }
  return analysis::overlap_fraction(kept, w.lo, w.hi);
}

void write_rank(Emitter& e, const model::RankTrace& r, std::size_t index, int64_t off,
                const Window& w, const analysis::StepPlan& plan, std::size_t world,
                ChromeTraceStats& stats) {
  const int64_t pid = r.info.rank >= 0 ? r.info.rank : static_cast<int64_t>(index);
  e.meta(
      "process_name", pid, 0,
      fmt::format(R"({{"name":{}}})", json_string(fmt::format("rank {} ({})", pid, r.info.host))));
  e.meta("process_sort_index", pid, 0, fmt::format(R"({{"sort_index":{}}})", pid));
  // ncclwatch's own comm/compute overlap over the kernels exported here that a reader keeps
  // (HTA's definition and selection), for checking a reader of this file against it.
  const double overlap = reader_overlap(r, w, plan);
  e.meta("process_labels", pid, 0,
         fmt::format(
             R"({{"labels":{},"rank":{},"world_size":{},"ncclwatch_overlap_pct":{}}})",
             json_string(fmt::format("rank {} of {}", pid, world)), pid, world,
             std::isnan(overlap) ? std::string("null") : fmt::format("{:.6f}", 100 * overlap)));
  e.meta("thread_name", pid, kHostTid, R"({"name":"host thread: NCCL calls, launches"})");
  e.meta("thread_sort_index", pid, kHostTid, R"({"sort_index":0})");
  e.meta("thread_name", pid, kStepsTid, R"({"name":"steps"})");
  e.meta("thread_sort_index", pid, kStepsTid, R"({"sort_index":1})");

  for (std::size_t s = 0; s < plan.steps.size(); ++s) {
    const analysis::Interval& st = plan.steps[s];
    if (!w.overlaps(st.begin, st.end)) continue;
    // Steps are contiguous; each ends 1 ns early so that a reader adding ts + dur (µs with 3
    // decimals, as doubles) never lands past the next step's ts: TensorBoard's profiler plugin
    // and Perfetto reject or misplace slices that intersect on one track.
    e.raw(fmt::format(
        R"({{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"step":{},"warmup":{}}}}})",
        s + 1, pid, kStepsTid, e.ts(st.begin + off), Emitter::dur(st.length() - 1), s + 1,
        s < plan.warmup ? "true" : "false"));
    ++stats.steps;
  }
  // "External id" links an NCCL call to its kernel, as Kineto links an op to what it launched:
  // TensorBoard's profiler plugin counts a kernel as communication when its External id is an
  // NCCL op's (compute kernels carry none). Ids are the call's index + 1 (0 is Kineto's "none").
  std::vector<int64_t> external_of_kernel(r.kernels.size(), 0);
  for (std::size_t i = 0; i < r.calls.size(); ++i) {
    const model::CallEvent& c = r.calls[i];
    if (c.kernel >= 0 && static_cast<std::size_t>(c.kernel) < r.kernels.size() &&
        external_of_kernel[static_cast<std::size_t>(c.kernel)] == 0) {
      external_of_kernel[static_cast<std::size_t>(c.kernel)] = static_cast<int64_t>(i) + 1;
    }
    if (!w.overlaps(c.enter_ns, c.exit_ns)) continue;
    e.raw(fmt::format(
        R"({{"ph":"X","cat":"cpu_op","name":"nccl:{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"External id":{},"comm":"{}","seq":{},"bytes":{},"peer":{}}}}})",
        model::func_name(c.func), pid, kHostTid, e.ts(c.enter_ns + off),
        Emitter::dur(c.exit_ns - c.enter_ns), i + 1, model::comm_hex(c.comm_id), c.seq, c.bytes(),
        c.peer));
    ++stats.calls;
  }
  for (const model::LaunchEvent& l : r.launches) {
    if (!w.overlaps(l.enter_ns, l.exit_ns)) continue;
    e.raw(fmt::format(
        R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"correlation":{}}}}})",
        pid, kHostTid, e.ts(l.enter_ns + off), Emitter::dur(l.exit_ns - l.enter_ns),
        l.correlation));
  }
  std::vector<uint32_t> streams;
  for (std::size_t ki = 0; ki < r.kernels.size(); ++ki) {
    const model::KernelEvent& k = r.kernels[ki];
    if (k.end_ns < k.start_ns || !w.overlaps(k.start_ns, k.end_ns)) continue;
    if (std::find(streams.begin(), streams.end(), k.stream) == streams.end()) {
      streams.push_back(k.stream);
      const int64_t tid = kStreamTidBase + static_cast<int64_t>(k.stream);
      e.meta("thread_name", pid, tid, fmt::format(R"({{"name":"stream {}"}})", k.stream));
      e.meta("thread_sort_index", pid, tid, fmt::format(R"({{"sort_index":{}}})", tid));
    }
    const char* cat = "kernel";
    std::string name = r.name_of(k.name);
    if (k.kind == format::ActivityKind::kMemcpy) {
      cat = "gpu_memcpy";
      if (name.empty()) name = "Memcpy";
    } else if (k.kind == format::ActivityKind::kMemset) {
      cat = "gpu_memset";
      if (name.empty()) name = "Memset";
    } else if (k.nccl && !is_hta_nccl_name(name)) {
      name = "ncclDevKernel_" + name;
    } else if (name.empty()) {
      name = "kernel";
    }
    const std::string external = external_of_kernel[ki] > 0
                                     ? fmt::format(R"("External id":{},)", external_of_kernel[ki])
                                     : std::string();
    e.raw(fmt::format(
        R"({{"ph":"X","cat":"{}","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}"stream":{},"correlation":{},"device":{}}}}})",
        cat, json_string(name), pid, kStreamTidBase + static_cast<int64_t>(k.stream),
        e.ts(k.start_ns + off), Emitter::dur(k.end_ns - k.start_ns), external, k.stream,
        k.correlation, k.device));
    ++stats.kernels;
  }
}

}  // namespace

bool StepWindow::parse(const std::string& text, StepWindow& out) {
  out = {};
  const auto colon = text.find(':');
  auto number = [](const std::string& s, std::size_t& v) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
      return false;
    v = static_cast<std::size_t>(std::stoul(s));
    return v > 0;
  };
  if (colon == std::string::npos) {
    if (!number(text, out.first)) return false;
    out.last = out.first;
    return true;
  }
  if (!number(text.substr(0, colon), out.first)) return false;
  const std::string tail = text.substr(colon + 1);
  if (tail.empty()) return true;  // to the end
  return number(tail, out.last) && out.last >= out.first;
}

std::string StepWindow::text() const {
  if (first == 0) return "";
  if (last == 0) return fmt::format("{}:", first);
  return first == last ? fmt::format("{}", first) : fmt::format("{}:{}", first, last);
}

bool ChromeTraceWriter::write(std::FILE* out, const model::JobTrace& job,
                              const model::MatchResult& match, const model::ClockAlignment& clocks,
                              const std::vector<analysis::StepPlan>& plans, StepWindow window,
                              ChromeTraceStats& stats, std::string& error,
                              std::string_view simulated) {
  stats = {};
  std::vector<Window> windows;
  windows.reserve(job.ranks.size());
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    windows.push_back(i < plans.size() ? window_of(plans[i], window) : Window{});
  }
  const int64_t base = base_of(job, clocks, windows);
  std::size_t world = job.ranks.size();
  int32_t first_rank = job.ranks.empty() ? 0 : job.ranks.front().info.rank;
  for (const auto& r : job.ranks)
    world = std::max<std::size_t>(world, std::max(0, r.info.world_size));
  std::fputs(fmt::format(R"({{"schemaVersion":1,"displayTimeUnit":"ms","baseTimeNanoseconds":{},)"
                         R"("distributedInfo":{{"backend":"nccl","rank":{},"world_size":{}}},)"
                         R"("producer":"ncclwatch",{}"traceEvents":[)",
                         base, std::max(0, first_rank), world,
                         simulated.empty()
                             ? std::string()
                             : fmt::format(R"("simulated":{},)", nlohmann::json(simulated).dump()))
                 .c_str(),
             out);
  Emitter e(out, base, stats);
  static const analysis::StepPlan kNoSteps;
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    write_rank(e, job.ranks[i], i, clocks.at(i), windows[i], i < plans.size() ? plans[i] : kNoSteps,
               world, stats);
  }
  // Flow arrows: one chain per matched instance, through its members in rank order.
  std::vector<std::pair<int64_t, FlowPoint>> points;
  for (std::size_t n = 0; n < match.instances.size(); ++n) {
    const model::CollectiveInstance& inst = match.instances[n];
    points.clear();
    bool all = true;
    for (uint32_t m = 0; m < inst.nmembers && all; ++m) {
      const std::size_t at = static_cast<std::size_t>(inst.first_member) + m;
      if (at >= match.members.size()) {
        all = false;
        break;
      }
      const model::InstanceMember& mem = match.members[at];
      if (mem.rank_index >= job.ranks.size()) {
        all = false;
        break;
      }
      const model::RankTrace& r = job.ranks[mem.rank_index];
      const FlowPoint p =
          flow_point(r, mem.call_index, clocks.at(mem.rank_index), windows[mem.rank_index]);
      all = p.ok;
      const int64_t pid = r.info.rank >= 0 ? r.info.rank : static_cast<int64_t>(mem.rank_index);
      points.emplace_back(pid, p);
    }
    if (!all || points.size() < 2) continue;
    std::sort(points.begin(), points.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    const std::string name = model::func_name(inst.func);
    for (std::size_t k = 0; k < points.size(); ++k) {
      const char* ph = k == 0 ? "s" : (k + 1 == points.size() ? "f" : "t");
      e.raw(fmt::format(
          R"({{"ph":"{}","cat":"collective","name":"{}","id":{},"pid":{},"tid":{},"ts":{}{}}})", ph,
          name, n + 1, points[k].first, points[k].second.tid, e.ts(points[k].second.ns),
          k == 0 ? "" : R"(,"bp":"e")"));
    }
    ++stats.flows;
  }
  std::fputs("\n]}\n", out);
  if (std::ferror(out)) {
    error = "write failed";
    return false;
  }
  return true;
}

bool ChromeTraceWriter::write_file(const std::string& path, const model::JobTrace& job,
                                   const model::MatchResult& match,
                                   const model::ClockAlignment& clocks, StepWindow window,
                                   ChromeTraceStats& stats, std::string& error,
                                   std::string_view simulated) {
  // The report's steps: each rank's, then the calls per step the ranks agree on (a rank
  // stalling every Nth step would otherwise number its steps N times too long).
  std::vector<analysis::StepPlan> plans;
  std::vector<analysis::Interval> bounds;
  plans.reserve(job.ranks.size());
  bounds.reserve(job.ranks.size());
  for (const model::RankTrace& r : job.ranks) {
    const analysis::RankActivity a = analysis::RankActivity::of(r);
    bounds.push_back({a.first_ns, a.last_ns});
    plans.push_back(analysis::StepDetector::detect(r, a.first_ns, a.last_ns));
  }
  analysis::StepDetector::agree(job, bounds, plans);
  uint64_t steps_in_job = 0;
  for (const analysis::StepPlan& plan : plans)
    steps_in_job = std::max<uint64_t>(steps_in_job, plan.steps.size());
  stats = {};
  stats.steps_in_job = steps_in_job;
  // An empty window is a mistake to say, not an empty timeline to write.
  if (window.first > steps_in_job) {
    error = steps_in_job == 0
                ? fmt::format("--steps {} selects nothing: no steps were found in this job",
                              window.text())
                : fmt::format("--steps {} selects nothing: the job has {} steps (1-{})",
                              window.text(), steps_in_job, steps_in_job);
    return false;
  }
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    error = fmt::format("{}: {}", path, std::strerror(errno));
    return false;
  }
  bool ok = write(f, job, match, clocks, plans, window, stats, error, simulated);
  stats.steps_in_job = steps_in_job;
  if (std::fclose(f) != 0 && ok) {
    error = fmt::format("{}: {}", path, std::strerror(errno));
    ok = false;
  }
  if (!ok && error.rfind(path, 0) != 0) error = path + ": " + error;
  return ok;
}

}  // namespace ncclwatch::exporter
