// Host calls made from communication kernels that no NCCL call (or PyTorch collective op) is
// known to have launched: DeepEP's all-to-all, custom all-reduce kernels, NVSHMEM collectives,
// and NCCL kernels in traces that record no NCCL calls (Nsight Systems). Each such kernel whose
// collective its name tells becomes one CallEvent, so matching, clock alignment, stragglers and
// the wait/transfer split work on them as on NCCL's calls:
//   - communicator: one per (family, stream), numbered by the stream's first launch (every rank
//     of an SPMD job starts its streams in the same order); id = FNV-1a of both;
//   - seq: the kernel's place on that stream, in launch order (host order, else GPU start);
//   - enter/exit: the launch (runtime call with the kernel's correlation id), else the kernel's
//     start; GPU interval: the kernel.
// Streams on which any kernel already belongs to a call are left alone (mixing the two
// numberings would break both). Kernels whose collective is unknown (NCCL's Generic and
// SendRecv kernels, barriers) stay communication time without a call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/job_trace.h"

namespace ncclwatch::kernels {

struct KernelCallStats {
  uint64_t calls = 0;          // calls made
  uint64_t comms = 0;          // communicators made
  uint64_t no_collective = 0;  // communication kernels left without a call (collective unknown)
};

// What a reader knows of a kernel's call beyond its name and launch: the NCCL API range around
// the launch (Nsight Systems' NVTX ranges of NCCL), which names the collective of a Generic
// kernel and gives the call's host interval.
struct KernelCallHint {
  format::Func func = format::Func::kUnknown;
  bool has_host = false;
  int64_t enter_ns = 0;
  int64_t exit_ns = 0;
};

// Adds the calls to `t` (calls stay sorted by enter time; KernelEvent::call follows). `hints`,
// when given, has one entry per kernel of `t` (same order).
KernelCallStats add_kernel_calls(model::RankTrace& t,
                                 const std::vector<KernelCallHint>* hints = nullptr);

// The communicator id of stream number `ordinal` of `family` (the same on every rank).
uint64_t kernel_comm_id(model::CommFamily family, uint32_t ordinal);

// Across ranks, per communicator made from kernels: the sequence numbers of each rank are
// shifted so the same collective has the same number everywhere (a capture that began one
// collective later on one rank numbers all of them one lower), then calls at either end that
// not every member rank has (cut by the start or end of the capture) are dropped, and nranks /
// rank are set from the ranks that have the communicator. One line per communicator whose
// numbering moved or whose ends were cut goes to `notes`.
void align_kernel_comms(model::JobTrace& job, std::vector<model::InputProblem>& notes);

}  // namespace ncclwatch::kernels
