// The fake NCCL's debug log, for the one thing tests need of it: NCCL WARN lines in the file
// NCCL_DEBUG_FILE names (the shim points it into the trace directory), in the shape of NCCL's
// debug.cc ("\n<host>:<pid>:<tid> [<dev>] <file>:<line> NCCL WARN <message>\n").
#pragma once

namespace fakenccl {

// At the end of a comm's init: FAKE_NCCL_WARN=<message> writes that WARN line (only on comm rank
// FAKE_NCCL_WARN_RANK when set), when NCCL_DEBUG is WARN, INFO or TRACE — to NCCL_DEBUG_FILE
// (%h: the host name up to its first '.', %p: the pid, %%: '%'), else to stdout, as NCCL does.
void warn_at_init(int rank, int device);

}  // namespace fakenccl
