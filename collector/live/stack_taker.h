// Where the ranks that hold a job up are in their Python code (docs/always-on.md, "Where a stuck
// rank is"), for `ncclwatch status --stacks` and `ncclwatch run`'s watchdog: which ranks of this
// node to look at (from the live status), their stacks taken with py-spy (live/py_spy.h), read
// (trace/python_stack.h), saved next to the traces for the report's hang verdict
// (trace/stack_file.h), and one line per rank saying where it is.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "live/job_status.h"
#include "trace/python_stack.h"

namespace ncclwatch::live {

// A rank of this node that holds the job up.
struct StackTarget {
  int32_t rank = -1;
  std::string host;
  int64_t pid = 0;
  std::string why;        // "never entered all_reduce #4 on comm 0x...; ranks 0-2 waiting in it"
  std::string trace_dir;  // where its segment says its trace is ("" if it names none)
  std::string hold;       // what it holds up, the same while the hang lasts ("comm 0x..#4")
};

// The live ranks of this node that are behind: on some comm they entered fewer collectives than
// its furthest rank (they never entered the one the others wait in), or they are outside NCCL and
// have made no call for `host_stall` (stalled on the host: a data loader, a checkpoint), or they
// never made a call while others wait in a comm's init. Each process once, by rank.
std::vector<StackTarget> stack_targets(const JobStatus& st, std::chrono::nanoseconds host_stall);

struct TakenStack {
  StackTarget target;
  bool ok = false;    // py-spy answered
  std::string error;  // why not
  trace::StackLocation where;
  std::string saved;       // the file it was saved to, "" if not
  std::string save_error;  // why not, when it could have been
};

struct TakeOptions {
  std::string py_spy;                         // the executable
  std::string dir;                            // save here; "" = each rank's trace directory
  std::string job;                            // for the file's header
  std::chrono::milliseconds timeout{20'000};  // per process
};

TakenStack take_stack(const StackTarget& target, const TakeOptions& options);

// "rank 3 stuck in torch/utils/data/dataloader.py:__next__, called from train.py:88 (train) — never
// entered all_reduce #4 ...; stack saved to DIR/ncclwatch.h.123.stack.txt"
std::string render_taken(const TakenStack& taken);

}  // namespace ncclwatch::live
