// One Nsight Systems SQLite export (`nsys export --type sqlite`) into ranks: every (process, CUDA
// device) that ran a kernel is one rank — several processes and devices in one file (nsys
// profile torchrun ...) or one per file (torchrun ... nsys profile ...). Rows are streamed: what
// is kept is what the model holds (GPU activities, their launches, step ranges), never a table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/job_trace.h"

namespace ncclwatch::nsys {

struct NsysFile {
  std::string path;
  // One per (process, device), in (device, pid) order; info.rank not set yet (the loader
  // numbers ranks over all files), info.device, pid, host, wall offset, source set.
  std::vector<model::RankTrace> ranks;
  // The launched process's rank and node as its recorded environment says (RANK,
  // OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, MV2_COMM_WORLD_RANK, SLURM_PROCID; GROUP_RANK,
  // NODE_RANK, SLURM_NODEID), -1 when absent; which variable gave the rank.
  int32_t env_rank = -1;
  std::string env_rank_variable;
  int32_t env_world_size = -1;
  int32_t env_node = -1;
  bool step_ranges = false;  // an NVTX range whose name looks like a step
  uint64_t rows = 0;         // rows read
};

// Limits on what one untrusted file may make the reader hold.
struct NsysLimits {
  std::size_t max_ranks_per_file = 4096;  // (process, device) pairs
  std::size_t max_name_bytes = 4096;      // a kernel or range name is cut there
};

// Reads `path`; nullopt with one problem line when the file cannot be used at all, else the
// ranks with any problem lines (rows with unusable times, ...) appended.
std::optional<NsysFile> read_nsys_file(const std::string& path,
                                       std::vector<model::InputProblem>& problems,
                                       const NsysLimits& limits = {});

}  // namespace ncclwatch::nsys
