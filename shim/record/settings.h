// Settings of the shim, read from the environment at load (to point NCCL's logs at the trace
// dir, see nccl_log_capture.h) and again at the first NCCL call (the recorder's own).
//
//   NCCLWATCH=off            record nothing (also "0", "false", "no")
//   NCCLWATCH_DIR            trace directory (default ./ncclwatch-<job>; a relative one is taken
//                            from the directory the process started in, see remember_start_dir)
//   NCCLWATCH_JOB            job id (default: TORCHELASTIC_RUN_ID unless "none", SLURM_JOB_ID,
//                            PBS_JOBID, LSB_JOBID, PMIX_NAMESPACE, OMPI_MCA_orte_ess_jobid, else
//                            "local-<parent pid>": the ranks of one torchrun/mpirun share a parent)
//   NCCLWATCH_RING_MB        upper bound of the shared-memory segment in MiB (default 16; decimals
//                            allowed, e.g. 0.01 for tests). The ring holds the largest power of two
//                            of 80-byte slots that fits: 16 MiB -> 131072 records.
//   NCCLWATCH_HOST           host name to record (default gethostname): for tests and for
//                            containers whose host names mean nothing
//   NCCLWATCH_DRAIN_MS       drain period in ms (default 2)
//   NCCLWATCH_HANG_S         watchdog: when a call has been in flight this many seconds, flush
//                            the trace and print one `ncclwatch:` line naming it (default 0 =
//                            off; 1..1000000)
//   NCCLWATCH_TEST_DRAIN_HOLD=1  testing only: the drain thread writes nothing until exit, so a
//                            tiny ring overflows deterministically
// A bad value gets one `ncclwatch:` line on stderr and the default. Job and host are reduced to
// [A-Za-z0-9._-] (others become '_') because they go into file and shared-memory names.
#pragma once

#include <cstdint>
#include <string>

#include "ncclwatch/names.h"

namespace ncclwatch::shim {

struct Settings {
  bool enabled = true;
  std::string dir;   // absolute
  std::string job;   // sanitized, < 64 chars
  std::string host;  // sanitized, < 64 chars
  double ring_mb = 16.0;
  int drain_ms = 2;
  int hang_s = 0;  // 0 = watchdog off
  bool test_drain_hold = false;
};

inline constexpr double kDefaultRingMb = 16.0;

// getenv-like lookup, injectable for tests.
using EnvLookup = const char* (*)(const char* name);

// `warn`: one `ncclwatch:` line per bad value (off for the silent read at load: the first NCCL
// call reads and warns again, and a process that never calls NCCL prints nothing).
Settings read_settings(EnvLookup env, bool warn = true);
// Remembers the current directory as the one relative NCCLWATCH_DIR values are taken from
// (called at load, so a chdir before the first NCCL call moves neither the trace nor NCCL's logs).
// Without it, read_settings uses the current directory.
void remember_start_dir() noexcept;
// The process environment (std::getenv) as an EnvLookup.
const char* process_env(const char* name);
using format::sanitize_name;  // ncclwatch/names.h

}  // namespace ncclwatch::shim
