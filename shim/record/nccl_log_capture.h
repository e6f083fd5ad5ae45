// Capture of NCCL's own view of the topology (NCCL_DEBUG=INFO logs and the topology/graph XML
// dumps) into the trace directory, without changing what the user sees on stdout.
#pragma once

namespace ncclwatch::shim {

// Sets NCCL's debug environment variables the user has not set, so that NCCL writes its INFO log
// into `trace_dir` (one file per process) and one rank per node dumps its topology and graphs.
// Call once, before NCCL reads its environment (at the first NCCL call). Never prints, never
// fails the job; a null or empty trace_dir does nothing.
//
// Rules (the user's settings always win):
//  - NCCL_DEBUG and NCCL_DEBUG_FILE both unset: NCCL_DEBUG=INFO, NCCL_DEBUG_FILE=
//    <trace_dir>/nccl-debug.%h.%p.log, and NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV,NET unless set.
//  - NCCL_DEBUG or NCCL_DEBUG_FILE set by the user: the debug variables are left alone (INFO
//    without a file would print to the user's stdout; a user's file is the user's).
//  - NCCL_TOPO_DUMP_FILE / NCCL_GRAPH_DUMP_FILE, each if unset, on the first process of each
//    node (LOCAL_RANK 0, or no local rank known): <trace_dir>/nccl-topo.<host>.xml and
//    nccl-graph.<host>.xml, with NCCL_*_DUMP_FILE_RANK = the global RANK when known.
void prepare_nccl_logging(const char* trace_dir) noexcept;

}  // namespace ncclwatch::shim
