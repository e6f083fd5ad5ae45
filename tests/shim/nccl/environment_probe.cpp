// Probe for the environment tests: a program linked against (fake) NCCL, run with the shim
// preloaded.
//
//   environment_probe race [--threads N]
//       N threads (default 3) read the environment (getenv of many names, and walks of environ)
//       without pause while the main thread makes the process's first NCCL calls: a setenv in the
//       shim at that moment crashes a reader. Exits 0 when it got through.
//   environment_probe unchanged [--chdir DIR]
//       Snapshots environ (the array pointer, every entry's pointer and text), optionally chdir()s,
//       makes the first NCCL calls, compares. Exits 0 and prints the NCCL variables when nothing
//       changed; prints the difference and exits 1 otherwise.
//   environment_probe late NAME=VALUE
//       Sets NAME in its own environment after start-up (single-threaded, as a script may before
//       it initialises NCCL), then makes the first NCCL calls.
//   environment_probe none
//       Never calls NCCL; prints the NCCL variables.
#include <nccl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace {

const char* const kShown[] = {"NCCL_DEBUG",
                              "NCCL_DEBUG_FILE",
                              "NCCL_DEBUG_SUBSYS",
                              "NCCL_TOPO_DUMP_FILE",
                              "NCCL_TOPO_DUMP_FILE_RANK",
                              "NCCL_GRAPH_DUMP_FILE",
                              "NCCL_GRAPH_DUMP_FILE_RANK",
                              "NVTX_INJECTION64_PATH"};

void print_nccl_variables() {
  for (const char* name : kShown) {
    const char* v = std::getenv(name);
    std::printf("%s=%s\n", name, v == nullptr ? "<unset>" : v);
  }
}

int first_nccl_calls() {
  ncclUniqueId id{};
  ncclComm_t comm = nullptr;
  int r1 = ncclGetUniqueId(&id);
  int r2 = ncclCommInitRank(&comm, 1, id, 0);
  int r3 = r2 == 0 ? ncclCommDestroy(comm) : 0;
  if (r1 || r2 || r3) std::printf("nccl failed: %d %d %d\n", r1, r2, r3);
  return r1 || r2 || r3 ? 1 : 0;
}

int race(int threads) {
  std::atomic<bool> stop{false};
  std::atomic<int> started{0};
  std::atomic<unsigned long> sink{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < threads; ++t) {
    readers.emplace_back([&] {
      static const char* const names[] = {"NCCL_DEBUG",          "NCCL_DEBUG_FILE",  "HOME", "PATH",
                                          "NCCL_TOPO_DUMP_FILE", "NOT_SET_ANYWHERE", "LANG"};
      bool counted = false;
      unsigned long local = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (const char* n : names) {
          const char* v = std::getenv(n);
          if (v != nullptr) local += std::strlen(v);
        }
        for (char** e = environ; *e != nullptr; ++e) local += static_cast<unsigned char>(**e);
        if (!counted) {
          counted = true;
          started.fetch_add(1);
        }
      }
      sink.fetch_add(local);
    });
  }
  while (started.load() < threads) std::this_thread::yield();
  int rc = first_nccl_calls();
  stop.store(true);
  for (auto& t : readers) t.join();
  return rc;
}

int unchanged(const char* chdir_to) {
  char** array = environ;
  std::vector<std::pair<const char*, std::string>> before;
  for (char** e = environ; *e != nullptr; ++e) before.emplace_back(*e, *e);
  if (chdir_to != nullptr && chdir(chdir_to) != 0) return 2;
  if (first_nccl_calls() != 0) return 3;
  std::vector<std::pair<const char*, std::string>> after;
  for (char** e = environ; *e != nullptr; ++e) after.emplace_back(*e, *e);
  bool same = array == environ && before == after;
  if (!same) {
    std::printf("environment changed by the first NCCL call (array %s)\n",
                array == environ ? "same" : "moved");
    for (const auto& [p, text] : after) {
      bool found = false;
      for (const auto& b : before) found = found || b.second == text;
      if (!found) std::printf("  new: %s\n", text.c_str());
    }
  }
  print_nccl_variables();
  return same ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::string mode = argv[1];
  if (mode == "race") {
    int threads = argc >= 4 && std::strcmp(argv[2], "--threads") == 0 ? std::atoi(argv[3]) : 3;
    return race(threads);
  }
  if (mode == "unchanged") {
    return unchanged(argc >= 4 && std::strcmp(argv[2], "--chdir") == 0 ? argv[3] : nullptr);
  }
  if (mode == "late" && argc >= 3) {
    std::string setting = argv[2];
    const auto eq = setting.find('=');
    if (eq == std::string::npos) return 2;
    setenv(setting.substr(0, eq).c_str(), setting.substr(eq + 1).c_str(), 1);
    return first_nccl_calls();
  }
  if (mode == "none") {
    print_nccl_variables();
    return 0;
  }
  return 2;
}
