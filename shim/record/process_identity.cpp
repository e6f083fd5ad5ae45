#include "record/process_identity.h"

#include "record/launcher_variables.h"

namespace ncclwatch::shim {

EnvIdentity identity_from_env(EnvLookup env) {
  EnvIdentity id;
  id.rank = launcher::first_int(env, launcher::kRank);
  id.world_size = launcher::first_int(env, launcher::kWorldSize);
  id.local_rank = launcher::first_int(env, launcher::kLocalRank);
  return id;
}

}  // namespace ncclwatch::shim
