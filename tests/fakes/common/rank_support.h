// What the fake rank programs (fake_rank, fake_train) do alike as ranks of a fake job: read the
// launcher's environment, fail loudly on an NCCL error, share the ncclUniqueId as torchrun's
// store does for real jobs (rank 0 writes it to $FAKE_RDZV_DIR/<name>.uid atomically, through a
// rename; the other ranks poll for it), and create a blocking or non-blocking communicator.
// Exit statuses: 4 an NCCL error, 5 rank 0's unique id never came.
#pragma once

#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace ncclwatch::fakes {

// Who is speaking in messages ("fake_rank 3: ..."): set by main.
inline const char* g_program = "fake";
inline int g_rank = 0;

inline void check_nccl(ncclResult_t result, const char* call) {
  if (result == ncclSuccess || result == ncclInProgress) return;
  std::fprintf(stderr, "%s %d: %s failed: %d\n", g_program, g_rank, call, static_cast<int>(result));
  std::exit(4);
}

}  // namespace ncclwatch::fakes

#define FAKE_NCCL_CHECK(call) ::ncclwatch::fakes::check_nccl((call), #call)

namespace ncclwatch::fakes {

inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}

inline std::string unique_id_path(const std::string& name) {
  const char* dir = std::getenv("FAKE_RDZV_DIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name + ".uid";
}

// Rank 0 makes the id and publishes it as `name`; the others wait up to 60 s for it.
inline ncclUniqueId exchange_unique_id(const std::string& name) {
  ncclUniqueId id{};
  const std::string path = unique_id_path(name);
  if (g_rank == 0) {
    FAKE_NCCL_CHECK(ncclGetUniqueId(&id));
    const std::string tmp = path + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(id.internal, sizeof id.internal);
    std::rename(tmp.c_str(), path.c_str());
    return id;
  }
  for (int i = 0; i < 60000; ++i) {
    std::ifstream in(path, std::ios::binary);
    if (in && in.read(id.internal, sizeof id.internal)) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::fprintf(stderr, "%s %d: no unique id at %s\n", g_program, g_rank, path.c_str());
  std::exit(5);
}

// Polls a non-blocking communicator until its last operation completed.
inline void wait_ready(ncclComm_t comm) {
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) {
    FAKE_NCCL_CHECK(ncclCommGetAsyncError(comm, &state));
    if (state == ncclInProgress) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  if (state != ncclSuccess) {
    std::fprintf(stderr, "%s %d: async error %d\n", g_program, g_rank, static_cast<int>(state));
    std::exit(4);
  }
}

// ncclCommInitRank, or ncclCommInitRankConfig with config.blocking = 0 then waiting for it.
inline ncclComm_t init_comm(int nranks, const ncclUniqueId& id, bool nonblocking) {
  ncclComm_t comm = nullptr;
  if (nonblocking) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    FAKE_NCCL_CHECK(ncclCommInitRankConfig(&comm, nranks, id, g_rank, &config));
    wait_ready(comm);
  } else {
    FAKE_NCCL_CHECK(ncclCommInitRank(&comm, nranks, id, g_rank));
  }
  return comm;
}

}  // namespace ncclwatch::fakes
