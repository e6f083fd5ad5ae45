// How the fake ranks share an ncclUniqueId, as torchrun's store does for real jobs: rank 0
// writes it to $FAKE_RDZV_DIR/<name>.uid (atomically, through a rename), the other ranks poll
// for it. Shared by fake_rank and fake_train.
#pragma once

#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace ncclwatch::fakes {

inline std::string unique_id_path(const std::string& name) {
  const char* dir = std::getenv("FAKE_RDZV_DIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name + ".uid";
}

inline void publish_unique_id(const std::string& name, const ncclUniqueId& id) {
  const std::string path = unique_id_path(name);
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp, std::ios::binary).write(id.internal, sizeof id.internal);
  std::rename(tmp.c_str(), path.c_str());
}

// Waits up to 60 s for rank 0's id; false if it never came.
inline bool wait_for_unique_id(const std::string& name, ncclUniqueId& id) {
  const std::string path = unique_id_path(name);
  for (int i = 0; i < 60000; ++i) {
    std::ifstream in(path, std::ios::binary);
    if (in && in.read(id.internal, sizeof id.internal)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

}  // namespace ncclwatch::fakes
