// Ties each NCCL call of one rank to the GPU work it caused (CallEvent::kernel, gpu_start_ns,
// gpu_end_ns) and each NCCL kernel back to its call (KernelEvent::call), from the raw records a
// reader left in RankTrace::links and RankTrace::coll_gpu. Sources, strongest first:
//  1. correlation: a KernelLinkRecord (launch inside a call) names the CUPTI correlation id of
//     the kernel. A launch inside ncclGroupEnd belongs to every call of that group issued on the
//     launch's stream; the calls' GPU interval is the union of the group's kernels there.
//  2. CUDA events (lite mode): a CollGpuRecord gives the interval of one call, or of every call
//     of a group on that stream.
//  3. order on the stream: NCCL kernels launched outside any call (non-blocking communicators
//     launch from NCCL's own thread), or with no link at all, are paired in order with the
//     still-unlinked calls on the same stream (a kernel never starts before its call entered).
// Calls marked kCallNoKernel (one-rank comms) or graph-captured (a link with correlation 0 and
// kCallGraphCaptured, which also sets that flag on the call) get no kernel: none is invented.
// Calls and kernels already linked by the reader (e.g. Kineto) are left as they are.
#pragma once

#include <cstddef>

#include "model/rank_trace.h"

namespace ncclwatch::timeline {

struct LinkStats {
  std::size_t by_correlation = 0;     // calls tied through a launch link
  std::size_t by_events = 0;          // calls timed by CUDA events (lite mode)
  std::size_t by_order = 0;           // calls paired by order on their stream
  std::size_t captured = 0;           // calls marked graph-captured
  std::size_t calls_without_gpu = 0;  // collective / p2p calls left without GPU time
  std::size_t nccl_kernels_without_call = 0;
};

LinkStats link_calls_to_gpu(model::RankTrace& trace);

// link_calls_to_gpu when the rank has GPU records to link: a host-only trace has none (and a
// million calls cost the linker a second). The pipeline's linking stage and the report's lean
// load (which links each rank as it is read) both call this.
void link_recorded_gpu_work(model::RankTrace& trace);

}  // namespace ncclwatch::timeline
