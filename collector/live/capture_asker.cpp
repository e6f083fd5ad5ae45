#include "live/capture_asker.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "ncclwatch/names.h"
#include "trace/job_loader.h"
#include "trace/salvage.h"
#include "trace/segment_view.h"
#include "trace/trace_file_reader.h"
#include "trace/trace_header_check.h"

namespace ncclwatch::live {
namespace {

constexpr int64_t kSecondNs = 1'000'000'000;
constexpr uint64_t kDefaultSteps = 20;
constexpr std::size_t kTailRecords = 4096;  // where a trace file's last step summary is looked for
// The ranks of a synchronous job run at one step rate; when the slowest rank's step time is this
// many times the fastest one's, their steps were found differently (one learned sub-steps from
// gaps a busy machine blurred, one took seconds of the clock: step_learner.h) and the same step
// numbers would be different moments: the window is asked for in seconds instead.
constexpr double kStepRatesDisagree = 1.5;

int64_t realtime_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string this_host() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return format::sanitize_name(buf);
}

uint64_t random_id() {
  std::random_device rd;
  uint64_t id = 0;
  while (id == 0) id = (uint64_t{rd()} << 32) ^ rd();
  return id;
}

// The newest step summary a trace file holds (from its last records), on the wall clock, and
// how fast its steps were numbered over those records.
struct FileStep {
  bool found = false;
  uint64_t step = 0;
  uint32_t steps_from = 0;  // 1 + StepSource of `step` (format::checkpoint_steps_from)
  int64_t end_realtime_ns = 0;
  int64_t step_ns = 0;  // time per step number: the span of the summaries read / the steps in it
};

FileStep last_step_of(const std::string& path) {
  FileStep out;
  trace::TraceFileReader reader(1024);
  if (!reader.open(path)) return out;
  const auto& p = reader.header().process;
  const int64_t offset = p.start_realtime_ns - p.start_monotonic_ns;
  reader.seek(reader.record_count() > kTailRecords ? reader.record_count() - kTailRecords : 0);
  // A rank that counted seconds of the clock while it learned restarts its numbers at its
  // learned steps (shim/record/step_summarizer.h): those come after any second.
  auto order = [](const format::StepRecord& st) {
    const bool clock = st.prefix.u8a == static_cast<uint8_t>(format::StepSource::kInterval);
    return (uint64_t{clock ? 0u : 1u} << 32) | st.step;
  };
  std::vector<format::StepRecord> steps;
  for (auto chunk = reader.next(); !chunk.empty(); chunk = reader.next()) {
    for (const auto& r : chunk)
      if (r.prefix.kind == format::RecordKind::kStep) steps.push_back(r.step);
  }
  uint64_t newest = 0;
  for (const auto& st : steps) newest = std::max(newest, order(st));
  uint64_t first_step = 0;
  int64_t first_start = 0, last_duration = 0;
  for (const auto& st : steps) {
    if (order(st) >> 32 != newest >> 32) continue;  // counted otherwise than the newest
    if (!out.found || st.step < first_step) {
      first_step = st.step;
      first_start = st.start_ns;
    }
    if (out.found && st.step < out.step) continue;
    out.found = true;
    out.step = st.step;
    out.steps_from = format::checkpoint_steps_from(static_cast<format::StepSource>(st.prefix.u8a));
    last_duration = int64_t{st.duration_us} * 1000;
    out.end_realtime_ns = st.start_ns + last_duration + offset;
  }
  // Not the newest step's own duration: a step the learner cut short (a sub-step of a few us on a
  // busy machine) would make the steps since it look like hundreds of thousands.
  const int64_t span = out.end_realtime_ns - offset - first_start;
  out.step_ns = out.found && out.step > first_step && span > 0
                    ? span / static_cast<int64_t>(out.step - first_step + 1)
                    : last_duration;
  return out;
}

}  // namespace

CaptureOutcome ask_capture(const CaptureOptions& o) {
  CaptureOutcome out;
  const std::string host = this_host();
  // This node's live ranks: their segments (this user's only; others' are left alone).
  std::vector<std::unique_ptr<trace::SegmentView>> segments;
  std::set<std::string> jobs;
  for (const std::string& name : trace::list_segments(o.job, o.shm_dir)) {
    auto view = std::make_unique<trace::SegmentView>();
    if (!view->open(name, o.shm_dir)) {
      if (!view->foreign()) out.warnings.push_back(name + ": " + view->error());
      continue;
    }
    if (view->header().state != format::kSegmentStateLive ||
        !trace::process_alive(view->header().process.pid))
      continue;
    if (!o.job.empty() && view->job() != o.job) continue;
    jobs.insert(view->job());
    segments.push_back(std::move(view));
  }
  if (o.job.empty() && jobs.size() > 1) {
    std::string list;
    for (const auto& j : jobs) list += (list.empty() ? "" : ", ") + j;
    out.error = "several jobs run on this node (" + list + "): choose one with --job ID";
    return out;
  }
  out.job = !o.job.empty() ? o.job : jobs.empty() ? "" : *jobs.begin();
  out.dir = o.dir;
  if (out.dir.empty() && !segments.empty()) {
    const std::string path = segments.front()->trace_path();
    const auto slash = path.rfind('/');
    if (!path.empty() && path[0] == '/' && slash != std::string::npos)
      out.dir = slash == 0 ? "/" : path.substr(0, slash);
  }
  if (segments.empty() && out.dir.empty()) {
    out.error = "no running job under ncclwatch on this node" +
                std::string(o.job.empty() ? "" : " with job id " + o.job) +
                "; on another node, give the job's trace directory with --dir DIR";
    return out;
  }
  // Where the job is: the drain checkpoints of this node's ranks, else the trace files.
  std::vector<int64_t> step_times;
  std::set<uint32_t> counted_by;  // how the ranks counted their steps, where they say
  bool remote = segments.empty();
  for (const auto& s : segments) {
    const format::DrainCheckpoint cp = s->drain_checkpoint();
    if (cp.last_step != format::kNoStep &&
        (out.last_step == format::kNoStep || cp.last_step > out.last_step))
      out.last_step = cp.last_step;
    if (cp.step_ns > 0) step_times.push_back(cp.step_ns);
    if (cp.steps_from != 0) counted_by.insert(cp.steps_from);
  }
  if (!out.dir.empty()) {
    trace::JobLoadOptions load;
    load.job = out.job;
    const trace::JobIndex index = trace::index_job(out.dir, load);
    if (out.job.empty()) out.job = index.job;
    const int64_t now = realtime_now();
    for (const auto& f : index.files) {
      if (trace::bounded_string(f.header.process.host, sizeof f.header.process.host) != host)
        remote = true;
      if (!segments.empty()) continue;
      const FileStep last = last_step_of(f.parts.back());  // the newest part
      if (!last.found || last.step_ns <= 0) continue;
      // Summaries are written a little after their step: count the steps since.
      const uint64_t since =
          now > last.end_realtime_ns
              ? static_cast<uint64_t>((now - last.end_realtime_ns) / last.step_ns)
              : 0;
      const uint64_t current = last.step + since;
      if (out.last_step == format::kNoStep || current > out.last_step) out.last_step = current;
      step_times.push_back(last.step_ns);
      counted_by.insert(last.steps_from);
    }
  }
  if (out.job.empty()) {
    out.error = "no job found in " + out.dir + "; give --job ID";
    return out;
  }
  if (!step_times.empty()) {
    std::sort(step_times.begin(), step_times.end());
    out.step_ns = step_times[step_times.size() / 2];
    if (static_cast<double>(step_times.back()) >=
        kStepRatesDisagree * static_cast<double>(step_times.front())) {
      out.step_rates_disagree = true;
      out.warnings.push_back(fmt::format(
          "the ranks' step times disagree ({:.3f} to {:.3f} ms: their steps were found "
          "differently); asking for the seconds of {} steps at the median step time instead",
          static_cast<double>(step_times.front()) / 1e6,
          static_cast<double>(step_times.back()) / 1e6, o.steps ? o.steps : kDefaultSteps));
    }
  }
  if (counted_by.size() > 1 && !out.step_rates_disagree) {
    // Alike step times, yet one rank counts seconds of the clock (its gaps still unclear) and
    // another learned steps: one step number is two moments (steps of about a second).
    out.step_rates_disagree = true;
    out.warnings.push_back(fmt::format(
        "the ranks count their steps differently (some by seconds of the clock while they learn "
        "their steps); asking for the seconds of {} steps at the median step time instead",
        o.steps ? o.steps : kDefaultSteps));
  }

  format::CaptureAsk& ask = out.ask;
  ask.id = random_id();
  ask.trigger = format::WindowTrigger::kOnDemand;
  ask.requested_realtime_ns = realtime_now();
  ask.text = "ncclwatch capture (asked by " + (o.asker.empty() ? host : o.asker) + ")";
  // Another node notices within its polling period (1 s) plus the file system's delay; this
  // node's ranks within a drain period, given a second on a busy machine.
  const int64_t notice_ns = remote ? 3 * kSecondNs : kSecondNs;
  if (o.seconds > 0 || out.last_step == format::kNoStep || out.step_ns <= 0 ||
      out.step_rates_disagree) {
    const double seconds =
        o.seconds > 0 ? o.seconds
                      : (out.step_ns > 0 ? static_cast<double>(o.steps ? o.steps : kDefaultSteps) *
                                               static_cast<double>(out.step_ns) / 1e9
                                         : 10.0);
    ask.unit = format::kCaptureSeconds;
    ask.first = static_cast<uint64_t>(ask.requested_realtime_ns + notice_ns);
    ask.count = static_cast<uint64_t>(std::max(seconds, 0.001) * 1e9);
  } else {
    ask.unit = format::kCaptureSteps;
    const auto margin = static_cast<uint64_t>(std::ceil(static_cast<double>(notice_ns) /
                                                        static_cast<double>(out.step_ns))) +
                        2;
    ask.first = out.last_step + margin;
    ask.count = o.steps ? o.steps : kDefaultSteps;
  }
  for (const auto& s : segments) {
    std::string why;
    if (s->post_capture(ask, why)) {
      ++out.local_ranks;
    } else {
      out.warnings.push_back(s->name() + ": " + why);
    }
  }
  if (!out.dir.empty()) {
    const int dir_fd = ::open(out.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    std::string why;
    const std::string name = format::control_file_name(out.job);
    if (dir_fd < 0) {
      out.warnings.push_back("cannot open " + out.dir + ": " + std::strerror(errno));
    } else if (format::write_control_file(
                   dir_fd, name, "cli." + host + "." + std::to_string(getpid()), ask, &why)) {
      out.control_path = out.dir + "/" + name;
    } else {
      out.warnings.push_back(why);
    }
    if (dir_fd >= 0) ::close(dir_fd);
  }
  out.ok = out.local_ranks > 0 || !out.control_path.empty();
  if (!out.ok) out.error = "the request reached no rank (see the lines above)";
  return out;
}

std::string describe(const CaptureOutcome& o) {
  const format::CaptureAsk& a = o.ask;
  std::string what;
  if (a.unit == format::kCaptureSteps) {
    what = fmt::format("steps {}-{}", a.first, a.first + a.count - 1);
    if (o.step_ns > 0 && o.last_step != format::kNoStep)
      what += fmt::format(
          " (from about {:.1f} s from now)",
          static_cast<double>(a.first - o.last_step) * static_cast<double>(o.step_ns) / 1e9);
  } else {
    what = fmt::format("{:.1f} s of wall time ({})", static_cast<double>(a.count) / 1e9,
                       o.step_rates_disagree ? "the ranks' steps disagree"
                       : o.last_step == format::kNoStep || o.step_ns <= 0 ? "no step numbers known"
                                                                          : "as asked");
  }
  std::string where;
  if (o.local_ranks > 0)
    where = fmt::format("{} ranks of this node (their segments)", o.local_ranks);
  if (!o.control_path.empty())
    where += fmt::format("{}every node reading {}", where.empty() ? "" : " and ", o.control_path);
  return fmt::format("capture window {:#x} of job {}: {} on {}; then `ncclwatch report {}`", a.id,
                     o.job, what, where, o.dir.empty() ? "DIR" : o.dir);
}

}  // namespace ncclwatch::live
