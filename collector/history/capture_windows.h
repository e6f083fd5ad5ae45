// Capture windows of a job (docs/always-on.md): every rank's WindowMarks joined by id, and the
// job restricted to one window -- each rank's records inside its own span of the window, ranks
// that never took part left out -- so today's analysis runs on a window as on a short run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/job_trace.h"

namespace ncclwatch::history {

struct CaptureWindow {
  uint64_t id = 0;
  format::WindowTrigger trigger = format::WindowTrigger::kWholeRun;
  std::string text;  // what triggered it, "" if nothing said
  // The steps every rank that took part captured: the latest first step, the earliest end
  // (format::kNoStep where not step-aligned).
  uint64_t first_step = format::kNoStep, end_step = format::kNoStep;
  int64_t start_wall_ns = 0, end_wall_ns = 0;  // CLOCK_REALTIME; end 0: never closed anywhere
  int64_t requested_realtime_ns = 0;
  uint64_t detail_records = 0;  // summed over its ranks (written at close)
  struct Span {
    std::size_t rank = 0;              // index into JobTrace::ranks
    int64_t start_ns = 0, end_ns = 0;  // host clock; end INT64_MAX: never closed on this rank
    bool closed = false;
  };
  std::vector<Span> spans;  // by rank index
  std::size_t closed() const;
};

// Every window of the job, oldest first (by start).
std::vector<CaptureWindow> join_windows(const model::JobTrace& job);

// A run that is one whole-run window (NCCLWATCH_DETAIL=all, a short `ncclwatch run`), or has no
// window at all (layout versions 1-4): reported as one run, as before windows existed.
bool one_whole_run(const std::vector<CaptureWindow>& windows);

// The job as captured by window `w`: per rank its calls, GPU activity, launches, ranges, links,
// CUDA-event intervals, scheduling samples and calls never returned from inside its span; the
// collectives only some ranks captured at the window's edges (it opens and closes at slightly
// different moments on each rank) left out -- at its end only when every rank closed it (a hang
// window keeps what each rank was last doing). `end_evidence` (the newest window): the calls
// never returned from (always-tier in-flight records: a hang) are kept wherever they are, so a
// hang after the last window is still the report's first line.
model::JobTrace window_job(const model::JobTrace& job, const CaptureWindow& w,
                           bool end_evidence = false);

// "window 3 of 10, on-demand: steps 1200-1219, 03:12:05-03:12:07 UTC, 8 rank(s)" (the trigger's
// text, CaptureWindow::text, goes on a line of its own).
std::string describe_window(const CaptureWindow& w, std::size_t index, std::size_t count);

// The JSON of a window (docs/report-schema.md, `windows`), without its report.
nlohmann::json window_json(const CaptureWindow& w, std::size_t index);

}  // namespace ncclwatch::history
