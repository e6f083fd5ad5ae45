// HTA's choice of kernels, to compare like with like. HolisticTraceAnalysis's TraceAnalysis
// (include_last_profiler_step=False, its default) keeps only GPU activities whose launch (the
// CPU runtime event with the same correlation id) starts before the last ProfilerStep begins,
// so the last, often cut-short, step is left out; activities with no launch in the trace are
// dropped too. It does this only when the trace has two or more ProfilerStep ranges.
// ncclwatch's own report uses every kernel; this exists for the comparison and its test.
#pragma once

#include "model/rank_trace.h"

namespace ncclwatch::kineto {

struct HtaSelection {
  // HTA's TraceAnalysis flag of that name: true keeps launches up to the end of the last step.
  bool include_last_profiler_step = false;
  // HTA rounds traces with sub-µs timestamps to whole µs before any analysis (start up, end
  // down: trace_parser.py round_down_time_stamps, off with HTA_DISABLE_NS_ROUNDING=1). true
  // does the same when the trace has sub-µs timestamps; intervals left empty are dropped.
  bool round_to_us = false;
};

// A copy of `rank` whose kernels are those HTA analyses (the calls' kernel links are cleared:
// indices would not hold).
model::RankTrace with_hta_kernel_selection(const model::RankTrace& rank, HtaSelection how = {});

}  // namespace ncclwatch::kineto
