// fake_rank: a scriptable NCCL-only rank for multi-process tests (run it under fake_launcher).
//
// Options (all optional):
//   --steps N            training steps (default 3)
//   --colls K            collectives per step on the world comm (default 2)
//   --kinds a,b,...      collective kinds cycled within a step: allreduce broadcast bcast reduce
//                        allgather reducescatter alltoall gather scatter (default allreduce)
//   --count C            elements per collective (default 1024, float32)
//   --group              issue each step's collectives inside one ncclGroupStart/End
//   --split C            split the world comm by color rank % C; one allreduce per step on it
//   --sendrecv           each step, a ring exchange (send to rank+1, recv from rank-1) in a group
//   --sleep R:K:MS       rank R sleeps MS ms before its K-th collective (0-based, world comm)
//   --exit R:K[:kill]    rank R exits with status 3 (or SIGKILLs itself) at the start of step K
//   --desync R:K         rank R uses count+1 at step K
//   --spin R:K           rank R stops calling NCCL at the start of step K and loops on the host
//                        until killed (a rank stuck in data loading; the others wait in NCCL)
//   --skip-init R        rank R never calls ncclCommInitRank: it loops on the host until killed
//   --threads            a second thread runs the same steps on its own comm at the same time
//   --fork K             at step K fork a child that makes its own 1-rank comm and allreduce
//   --nonblocking        init the world comm with config.blocking = 0 and poll for completion
//   --no-nccl            never call NCCL at all (the process must leave nothing behind)
//   --probe              print ncclGetVersion, ncclGetUniqueId and ncclCommInitRank's results
//                        (1 rank, for pass-through checks with the real libnccl)
// Rank 0 writes the unique id to $FAKE_RDZV_DIR/<name>.uid; the others wait for it.
#include <nccl.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common/rank_support.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  int steps = 3, colls = 2, split = 0, fork_step = -1;
  size_t count = 1024;
  std::vector<std::string> kinds{"allreduce"};
  bool group = false, sendrecv = false, threads = false, nonblocking = false, no_nccl = false,
       probe = false;
  int sleep_rank = -1, sleep_coll = -1, sleep_ms = 0;
  int exit_rank = -1, exit_step = -1;
  bool exit_kill = false;
  int desync_rank = -1, desync_step = -1;
  int spin_rank = -1, spin_step = -1;
  int skip_init_rank = -1;
};

[[noreturn]] void spin_forever() {
  std::fflush(nullptr);
  for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

using ncclwatch::fakes::env_int;
using ncclwatch::fakes::g_rank;
using ncclwatch::fakes::wait_ready;
int g_world = 1;

std::vector<int> parse_ints(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ':')) out.push_back(part == "kill" ? -1 : std::atoi(part.c_str()));
  return out;
}

void collective(const std::string& kind, size_t count, ncclComm_t comm, int step) {
  static float send[1], recv[1];  // the fake never touches buffers
  (void)step;
  int root = 0;
  if (kind == "allreduce")
    FAKE_NCCL_CHECK(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, nullptr));
  else if (kind == "broadcast")
    FAKE_NCCL_CHECK(ncclBroadcast(send, recv, count, ncclFloat32, root, comm, nullptr));
  else if (kind == "bcast")
    FAKE_NCCL_CHECK(ncclBcast(recv, count, ncclFloat32, root, comm, nullptr));
  else if (kind == "reduce")
    FAKE_NCCL_CHECK(ncclReduce(send, recv, count, ncclFloat32, ncclMax, root, comm, nullptr));
  else if (kind == "allgather")
    FAKE_NCCL_CHECK(ncclAllGather(send, recv, count, ncclFloat32, comm, nullptr));
  else if (kind == "reducescatter")
    FAKE_NCCL_CHECK(ncclReduceScatter(send, recv, count, ncclFloat32, ncclSum, comm, nullptr));
  else if (kind == "alltoall")
    FAKE_NCCL_CHECK(ncclAlltoAll(send, recv, count, ncclFloat32, comm, nullptr));
  else if (kind == "gather")
    FAKE_NCCL_CHECK(ncclGather(send, recv, count, ncclFloat32, root, comm, nullptr));
  else if (kind == "scatter")
    FAKE_NCCL_CHECK(ncclScatter(send, recv, count, ncclFloat32, root, comm, nullptr));
  else {
    std::fprintf(stderr, "fake_rank: unknown kind %s\n", kind.c_str());
    std::exit(2);
  }
}

void run_steps(const Options& o, ncclComm_t world, ncclComm_t split, bool main_thread) {
  int coll_index = 0;
  static float buf[1];
  for (int step = 0; step < o.steps; ++step) {
    if (main_thread && g_rank == o.exit_rank && step == o.exit_step) {
      std::fflush(nullptr);
      if (o.exit_kill) raise(SIGKILL);
      std::exit(3);
    }
    if (main_thread && g_rank == o.spin_rank && step == o.spin_step) spin_forever();
    if (main_thread && step == o.fork_step) {
      pid_t pid = fork();
      if (pid == 0) {
        ncclUniqueId id;
        ncclComm_t solo;
        FAKE_NCCL_CHECK(ncclGetUniqueId(&id));
        FAKE_NCCL_CHECK(ncclCommInitRank(&solo, 1, id, 0));
        FAKE_NCCL_CHECK(ncclAllReduce(buf, buf, 8, ncclFloat32, ncclSum, solo, nullptr));
        FAKE_NCCL_CHECK(ncclCommDestroy(solo));
        std::exit(0);
      }
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::exit(6);
    }
    size_t count = o.count;
    if (g_rank == o.desync_rank && step == o.desync_step) count += 1;
    if (o.group) FAKE_NCCL_CHECK(ncclGroupStart());
    for (int k = 0; k < o.colls; ++k, ++coll_index) {
      if (main_thread && g_rank == o.sleep_rank && coll_index == o.sleep_coll) {
        std::this_thread::sleep_for(std::chrono::milliseconds(o.sleep_ms));
      }
      collective(o.kinds[k % o.kinds.size()], count, world, step);
    }
    if (o.group) FAKE_NCCL_CHECK(ncclGroupEnd());
    if (split != nullptr)
      FAKE_NCCL_CHECK(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, split, nullptr));
    if (o.sendrecv && g_world > 1) {
      FAKE_NCCL_CHECK(ncclGroupStart());
      FAKE_NCCL_CHECK(ncclSend(buf, count, ncclFloat32, (g_rank + 1) % g_world, world, nullptr));
      FAKE_NCCL_CHECK(
          ncclRecv(buf, count, ncclFloat32, (g_rank + g_world - 1) % g_world, world, nullptr));
      FAKE_NCCL_CHECK(ncclGroupEnd());
    }
    if (o.nonblocking) wait_ready(world);
  }
}

int probe() {
  int version = 0;
  ncclResult_t rv = ncclGetVersion(&version);
  ncclUniqueId id{};
  ncclResult_t ru = ncclGetUniqueId(&id);
  ncclComm_t comm = nullptr;
  ncclResult_t ri = ncclCommInitRank(&comm, 1, id, 0);
  std::printf("version_rc=%d version=%d uniqueid_rc=%d init_rc=%d\n", (int)rv, version, (int)ru,
              (int)ri);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ncclwatch::fakes::g_program = "fake_rank";
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "fake_rank: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--steps")
      o.steps = std::atoi(next().c_str());
    else if (a == "--colls")
      o.colls = std::atoi(next().c_str());
    else if (a == "--count")
      o.count = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--kinds") {
      o.kinds.clear();
      std::stringstream ss(next());
      std::string k;
      while (std::getline(ss, k, ',')) o.kinds.push_back(k);
    } else if (a == "--group")
      o.group = true;
    else if (a == "--split")
      o.split = std::atoi(next().c_str());
    else if (a == "--sendrecv")
      o.sendrecv = true;
    else if (a == "--sleep") {
      auto v = parse_ints(next());
      if (v.size() == 3) o.sleep_rank = v[0], o.sleep_coll = v[1], o.sleep_ms = v[2];
    } else if (a == "--exit") {
      auto v = parse_ints(next());
      if (v.size() >= 2) o.exit_rank = v[0], o.exit_step = v[1];
      o.exit_kill = v.size() == 3 && v[2] == -1;
    } else if (a == "--desync") {
      auto v = parse_ints(next());
      if (v.size() == 2) o.desync_rank = v[0], o.desync_step = v[1];
    } else if (a == "--spin") {
      auto v = parse_ints(next());
      if (v.size() == 2) o.spin_rank = v[0], o.spin_step = v[1];
    } else if (a == "--skip-init") {
      o.skip_init_rank = std::atoi(next().c_str());
    } else if (a == "--threads")
      o.threads = true;
    else if (a == "--fork")
      o.fork_step = std::atoi(next().c_str());
    else if (a == "--nonblocking")
      o.nonblocking = true;
    else if (a == "--no-nccl")
      o.no_nccl = true;
    else if (a == "--probe")
      o.probe = true;
    else {
      std::fprintf(stderr, "fake_rank: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (o.probe) return probe();
  g_rank = env_int("RANK", 0);
  g_world = env_int("WORLD_SIZE", 1);
  if (o.no_nccl) {
    std::printf("rank %d did no NCCL\n", g_rank);
    return 0;
  }

  ncclUniqueId id = ncclwatch::fakes::exchange_unique_id("world");
  if (g_rank == o.skip_init_rank) spin_forever();
  ncclComm_t world = ncclwatch::fakes::init_comm(g_world, id, o.nonblocking);
  ncclComm_t split = nullptr;
  if (o.split > 0) FAKE_NCCL_CHECK(ncclCommSplit(world, g_rank % o.split, g_rank, &split, nullptr));

  std::thread second;
  ncclComm_t other = nullptr;
  if (o.threads) {
    other = ncclwatch::fakes::init_comm(g_world, ncclwatch::fakes::exchange_unique_id("thread2"),
                                        /*nonblocking=*/false);
    second = std::thread([&] { run_steps(o, other, nullptr, false); });
  }
  run_steps(o, world, split, true);
  if (second.joinable()) second.join();

  if (other != nullptr) FAKE_NCCL_CHECK(ncclCommDestroy(other));
  if (split != nullptr) FAKE_NCCL_CHECK(ncclCommDestroy(split));
  FAKE_NCCL_CHECK(ncclCommFinalize(world));
  FAKE_NCCL_CHECK(ncclCommDestroy(world));
  return 0;
}
