// Capture of NCCL's own view of the topology (NCCL_DEBUG=INFO logs and the topology/graph XML
// dumps) into the trace directory, without changing what the user sees on stdout.
#pragma once

#include "ncclwatch/settings_table.h"

namespace ncclwatch::shim {

// The environment variable (NCCLWATCH_SET_NCCL_ENV) that lists, as "NAME=VALUE" lines, the NCCL
// variables this process's shim set. A child process inherits both; its own shim recognises the
// values as an ancestor's (not the user's) and replaces them with its own (its trace dir, job and
// local rank can differ: the torchrun launcher under LD_PRELOAD is such an ancestor of every
// worker).
inline constexpr const char* kNcclEnvMarker = settings::name(settings::Id::kSetNcclEnv);

// Sets NCCL's debug environment variables the user has not set, so that NCCL writes its INFO log
// into `trace_dir` (one file per process) and one rank per node dumps its topology and graphs.
//
// MODIFIES THE ENVIRONMENT: call only from the library's load-time constructor (before main,
// single-threaded). setenv while another thread runs getenv crashes that thread (glibc frees or
// moves the array it reads); after load, application threads may be reading it at any time.
// Never prints, never fails the job.
//
// `inherited_marker`: kNcclEnvMarker's value at load (Settings::inherited_nccl_env), nullptr if
// unset.
//
// Rules (the user's settings always win):
//  - Values an ancestor's shim set (listed in the inherited marker and unchanged) count as unset:
//    they are removed first, then set again for this process below.
//  - A null or empty trace_dir (recording off), or one containing a newline: nothing is set.
//  - NCCL_DEBUG and NCCL_DEBUG_FILE both unset: NCCL_DEBUG=INFO, NCCL_DEBUG_FILE=
//    <trace_dir>/nccl-debug.%h.%p.log, and NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV,NET unless set.
//  - NCCL_DEBUG or NCCL_DEBUG_FILE set by the user: the debug variables are left alone (INFO
//    without a file would print to the user's stdout; a user's file is the user's).
//  - NCCL_TOPO_DUMP_FILE / NCCL_GRAPH_DUMP_FILE, each if unset, on the first process of each
//    node (local rank 0, or no local rank known): <trace_dir>/nccl-topo.<host>.<pid>.xml and
//    nccl-graph.<host>.<pid>.xml, named like the process's trace (`host`: the sanitized host name
//    the trace uses; null or empty: gethostname, sanitized), with NCCL_*_DUMP_FILE_RANK = the
//    global RANK when known. NCCL does not expand %h/%p in these two, so the shim writes them.
//    The ranks
//    come from the launchers' variables present at load (launcher_variables.h: LOCAL_RANK,
//    OMPI_COMM_WORLD_LOCAL_RANK, ..., SLURM_LOCALID): a script that sets them itself after
//    start-up is not seen.
//  - What was set is listed in kNcclEnvMarker (removed when nothing was).
void prepare_nccl_logging(const char* trace_dir, const char* host,
                          const char* inherited_marker) noexcept;

}  // namespace ncclwatch::shim
