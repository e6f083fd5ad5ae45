// Salvage: the segment of a process that died (or hung and was killed) still holds every record
// it committed after the last one its drain thread wrote. Its trace file holds ring positions
// [0, K); salvage appends the committed positions [K, write_pos) in order (holes -- positions
// claimed by a producer that never published -- are skipped and counted), rewrites the header
// (state salvaged, counts, identity) and removes the segment. No duplicates, no gaps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ncclwatch::trace {

// Who may be salvaged and where it is written (docs/threat-model.md): only segments owned by the
// invoking user (root included: other users' segments are left for them), never through a
// symlink, and only into the file ncclwatch.<host>.<pid>.trace derived from the segment's own
// name, in the directory the segment names (or --dir) once that directory has passed
// TraceDir's ownership checks. Nothing else read from a segment becomes a path.
struct SalvageOptions {
  // Where to write when the segment's trace path is empty or not writable (and where the
  // file then lives). Empty: such segments fail with a line saying to give --dir.
  std::string dir;
  // Salvage even if the owner process is alive (it may still be writing: only for hung or
  // orphaned processes whose pid was reused).
  bool force = false;
  // Where the segments are (tests use a private directory).
  std::string shm_dir = "/dev/shm";
};

enum class SalvageStatus {
  kSalvaged,         // records joined, segment removed
  kAlreadySalvaged,  // the trace file says salvaged already: segment removed, nothing appended
  kSkippedLive,      // owner alive and still recording; not touched
  kSkippedForeign,   // another user's segment (or name): left for its owner, not an error
  kSkippedUnusable,  // not a usable segment (symlink, FIFO, bad header): not touched, not an error
  kFailed,           // our segment, but it could not be written out: not touched (message says why)
};

struct SalvageResult {
  std::string segment;     // shm name
  std::string trace_path;  // file written (or that would have been)
  SalvageStatus status = SalvageStatus::kFailed;
  std::string message;  // why it failed / was skipped
  std::vector<std::string> warnings;
  int64_t pid = 0;
  int32_t rank = -1;
  uint64_t in_file = 0;      // records the trace file held before (positions [0, K))
  uint64_t appended = 0;     // records recovered from the ring
  uint64_t holes = 0;        // positions claimed but never committed
  uint64_t overwritten = 0;  // positions no longer in the ring (lost)
  uint64_t dropped = 0;      // ring drops counted by the shim
  uint64_t in_flight = 0;    // InFlightRecords appended for calls the process never returned from
};

// Salvages one segment by shm name ("ncclwatch.<job>.<host>.<pid>").
SalvageResult salvage_segment(const std::string& name, const SalvageOptions& options);

// Salvages every segment of `job` on this host (every ncclwatch segment when job is empty).
std::vector<SalvageResult> salvage_job(const std::string& job, const SalvageOptions& options);

// One line for the CLI: "ncclwatch.J.h.12 -> /dir/ncclwatch.h.12.trace: salvaged, 100 in file + 40
// recovered, 1 hole, 0 overwritten, 0 dropped".
std::string describe(const SalvageResult& result);

// True if `pid` is a running process on this machine.
bool process_alive(int64_t pid);

}  // namespace ncclwatch::trace
