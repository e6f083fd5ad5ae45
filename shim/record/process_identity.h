// The global rank, world size and local rank a launcher announces in the environment (the
// variables and their precedence: launcher_variables.h). -1 where none is set or the value is
// bad.
#pragma once

#include "record/settings.h"

namespace ncclwatch::shim {

struct EnvIdentity {
  int rank = -1;
  int world_size = -1;
  int local_rank = -1;
};

EnvIdentity identity_from_env(EnvLookup env);

}  // namespace ncclwatch::shim
