#include "record/process_identity.h"

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace ncclwatch::shim {
namespace {

int first_int(EnvLookup env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* v = env(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    errno = 0;
    long value = std::strtol(v, &end, 10);
    if (errno == 0 && end != v && *end == '\0' && value >= 0 && value < INT_MAX) {
      return static_cast<int>(value);
    }
  }
  return -1;
}

}  // namespace

EnvIdentity identity_from_env(EnvLookup env) {
  EnvIdentity id;
  id.rank = first_int(env, {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"});
  id.world_size =
      first_int(env, {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"});
  id.local_rank = first_int(
      env, {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"});
  return id;
}

}  // namespace ncclwatch::shim
