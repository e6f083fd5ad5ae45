// The variables launchers set to announce a process's place in the job: one table for every
// reader in the shim (the rank identity in the trace header, the process that asks NCCL for its
// XML topology dumps). Listed by precedence: torchrun's own first (it may run under any of the
// others), then MPI launchers, Slurm last — under `mpirun` or Intel MPI's hydra inside a Slurm
// allocation, SLURM_PROCID/SLURM_LOCALID describe the launcher's proxy on the node, not the rank.
#pragma once

#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>

namespace ncclwatch::shim::launcher {

// torchrun, Open MPI, MPICH/Intel MPI (PMI), PMIx, MVAPICH2, Slurm.
inline constexpr std::array kRank = {"RANK",      "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                     "PMIX_RANK", "MV2_COMM_WORLD_RANK",  "SLURM_PROCID"};
inline constexpr std::array kWorldSize = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                          "MV2_COMM_WORLD_SIZE", "SLURM_NTASKS"};
inline constexpr std::array kLocalRank = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                          "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                                          "SLURM_LOCALID"};

// The value of the first of `names` that `lookup` (getenv, or a test's table) finds set to a
// whole number in [0, INT_MAX); -1 when none is. No allocation: called at load time.
template <typename Lookup, std::size_t N>
int first_int(Lookup lookup, const std::array<const char*, N>& names) {
  for (const char* name : names) {
    const char* v = lookup(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    errno = 0;
    const long value = std::strtol(v, &end, 10);
    if (errno == 0 && end != v && *end == '\0' && value >= 0 && value < INT_MAX) {
      return static_cast<int>(value);
    }
  }
  return -1;
}

}  // namespace ncclwatch::shim::launcher
