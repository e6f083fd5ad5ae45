// The merged, clock-aligned timeline of a job as Chrome-trace / Kineto-style JSON, for
// ui.perfetto.dev, chrome://tracing, TensorBoard's trace viewer and HolisticTraceAnalysis.
//
// One process per rank (pid = global rank, named "rank R (host)"), with
//   - the host thread (tid 0): NCCL calls, cat "cpu_op", name "nccl:<op>", args comm, seq, bytes
//     and "External id" (shared with the call's kernel, as Kineto links an op to its kernels);
//     and for each kernel with a correlation id its launch, cat "cuda_runtime"
//     ("cudaLaunchKernel"), which HTA needs to keep the kernel;
//   - a steps track (tid 1): "ProfilerStep#N" ranges, cat "user_annotation" (each 1 ns short of
//     the next: slices on one track must not intersect, even after a reader's float rounding);
//   - one track per stream (tid = stream id): kernels cat "kernel", memcpy "gpu_memcpy", memset
//     "gpu_memset", args stream, correlation, device; NCCL kernels carry a name HTA and Kineto
//     readers recognise (^nccl.*Kernel);
//   - flow events (cat "collective", one id per matched instance) from each member's kernel to
//     the next member's, in rank order, so a viewer draws one collective across ranks.
// Times are µs (3 decimals) on the reference host's clock (ClockAlignment), counted from the
// earliest aligned timestamp of the job (baseTimeNanoseconds). distributedInfo carries the
// world size and the first exported rank; every process_labels' args carry its own rank, world
// size and ncclwatch_overlap_pct (ncclwatch's HTA-style overlap over the exported kernels a
// reader ties to a launch in the file, launched before the last exported step ends). A run of
// `ncclwatch demo` says so in the top-level key "simulated" (the JSON report's key and line).
//
// Written as it goes (one event at a time to a FILE*): memory stays bounded by the job model the
// collector already holds. An optional window of steps [first, last] (1-based, each rank's own
// step plan; write_file takes the report's: the calls per step agreed across ranks) keeps the
// file small.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/step_plan.h"
#include "model/clock_alignment.h"
#include "model/job_trace.h"
#include "model/match_result.h"

namespace ncclwatch::exporter {

struct StepWindow {
  std::size_t first = 0;  // 1-based; 0 = no window (everything)
  std::size_t last = 0;   // inclusive
  // "A:B", "A:" (to the end), "A" (one step); false when malformed.
  static bool parse(const std::string& text, StepWindow& out);
  std::string text() const;  // as parse() reads it ("" for no window)
};

struct ChromeTraceStats {
  uint64_t events = 0;
  uint64_t kernels = 0;
  uint64_t calls = 0;
  uint64_t flows = 0;
  uint64_t steps = 0;
  uint64_t steps_in_job = 0;  // the most steps any rank has (what a StepWindow can select from)
};

class ChromeTraceWriter {
 public:
  // `plans` per JobTrace::ranks index (steps for the ProfilerStep ranges and the window).
  // Returns false (and `error`) when writing fails. write_file also refuses, without creating the
  // file, a window that selects no step of any rank (stats.steps_in_job says how many there are).
  // `simulated`: not "" for a run of `ncclwatch demo` (the report's line that says so): written
  // as the top-level key "simulated", as in the JSON report, ahead of the events.
  static bool write(std::FILE* out, const model::JobTrace& job, const model::MatchResult& match,
                    const model::ClockAlignment& clocks,
                    const std::vector<analysis::StepPlan>& plans, StepWindow window,
                    ChromeTraceStats& stats, std::string& error, std::string_view simulated = {});
  static bool write_file(const std::string& path, const model::JobTrace& job,
                         const model::MatchResult& match, const model::ClockAlignment& clocks,
                         StepWindow window, ChromeTraceStats& stats, std::string& error,
                         std::string_view simulated = {});
};

}  // namespace ncclwatch::exporter
