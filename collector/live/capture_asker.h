// `ncclwatch capture`: asks a running job for a capture window (docs/always-on.md, "Capture
// windows") -- into the segment of every rank of this node (their drain threads read it within a
// drain period) and into the control file of the job's trace directory (every node's drain
// threads look at it once a second). The window starts at a step every rank can still catch:
// the newest step a rank of this node (or a trace file in the directory) has started, plus the
// steps of the time another node needs to notice the request. When the ranks' step times
// disagree (their steps were found differently), the same seconds on every rank instead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ncclwatch/capture_control.h"

namespace ncclwatch::live {

struct CaptureOptions {
  std::string job;     // "" = the one job with segments on this node
  std::string dir;     // the job's trace directory ("" = the one this node's segments name)
  uint64_t steps = 0;  // window length in steps (0 and seconds 0: 20 steps)
  double seconds = 0;  // window length in seconds (wall clock, no step alignment)
  std::string shm_dir = "/dev/shm";
  std::string asker;  // who asks, for the window's text ("" = user@host)
};

struct CaptureOutcome {
  bool ok = false;
  std::string error;  // why not (one line)
  format::CaptureAsk ask;
  std::string job;
  std::string dir;
  std::size_t local_ranks = 0;  // segments the request was written into
  std::string control_path;     // "" if not written
  int64_t step_ns = 0;          // the step time it planned with (0: unknown)
  uint64_t last_step = format::kNoStep;
  // The ranks' step times differ by 1.5x or more: the window was asked for in seconds.
  bool step_rates_disagree = false;
  std::vector<std::string> warnings;
};

CaptureOutcome ask_capture(const CaptureOptions& options);

// One line for the CLI ("capture window 0x...: steps 1200-1219 (in about 3.1 s) on 4 ranks of
// this node and every node reading DIR").
std::string describe(const CaptureOutcome& outcome);

}  // namespace ncclwatch::live
