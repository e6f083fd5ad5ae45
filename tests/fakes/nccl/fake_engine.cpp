// Executes fake collectives: a cross-process barrier per comm and, when a fake CUDA is loaded
// (tests/fakes/cuda, found with dlsym(RTLD_DEFAULT)), one virtual GPU kernel per comm through the
// seam of fake_gpu_seam.h: start times are exchanged through the barrier and every rank ends the
// kernel at max(starts) + transfer time (FAKE_NCCL_GBPS GB/s, default 10, plus 5 us).
#include <dlfcn.h>
#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "fake_comm.h"
#include "fake_gpu_seam.h"

namespace fakenccl {
namespace {

struct Seam {
  ncclwatch_fake_gpu_launch_fn launch = nullptr;
  ncclwatch_fake_gpu_complete_fn complete = nullptr;
};

Seam seam() {
  // Looked up on every use (cheap enough for a fake) so a fake CUDA loaded later is found.
  Seam s;
  s.launch = reinterpret_cast<ncclwatch_fake_gpu_launch_fn>(
      dlsym(RTLD_DEFAULT, NCCLWATCH_FAKE_GPU_LAUNCH_SYMBOL));
  s.complete = reinterpret_cast<ncclwatch_fake_gpu_complete_fn>(
      dlsym(RTLD_DEFAULT, NCCLWATCH_FAKE_GPU_COMPLETE_SYMBOL));
  if (s.launch == nullptr || s.complete == nullptr) s = Seam{};
  return s;
}

int64_t transfer_ns(uint64_t bytes) {
  static const double gbps = [] {
    const char* v = std::getenv("FAKE_NCCL_GBPS");
    double g = v != nullptr ? std::atof(v) : 0;
    return g > 0 ? g : 10.0;
  }();
  return static_cast<int64_t>(static_cast<double>(bytes) / gbps) + 5000;  // GB/s == bytes/ns
}

struct CommWork {
  ncclComm* comm;
  std::vector<const Op*> ops;
  bool has_collective = false;
  uint64_t bytes = 0;
  uint64_t barrier = 0;
  uint64_t token = 0;
  int64_t start = 0;
  bool launched = false;
};

}  // namespace

namespace {

std::mutex& names_mutex() {
  static std::mutex mutex;
  return mutex;
}

// A rank that forks (a data-loader worker, fake_rank --fork) while another of its threads names a
// kernel would leave the child a copy of the names' mutex locked for good: its first collective
// then hung (seen once in CI's ASan run: the parent waited for the child, its peer timed out
// after 20 s). The mutex is held across fork, so both sides get it unlocked.
[[maybe_unused]] const bool g_names_fork_safe = [] {
  pthread_atfork([] { names_mutex().lock(); }, [] { names_mutex().unlock(); },
                 [] { names_mutex().unlock(); });
  return true;
}();

}  // namespace

const char* kernel_name(const char* op, int redop, int datatype) {
  std::mutex& mutex = names_mutex();
  static std::set<std::string>* names = new std::set<std::string>();  // never freed: names escape
  static const char* kRedops[] = {"Sum", "Prod", "MinMax", "MinMax", "SumPostDiv"};
  static const char* kTypes[] = {"i8",  "u8",  "i32", "u32",  "i64",    "u64",
                                 "f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2"};
  std::string name = std::string("ncclDevKernel_") + op;
  if (redop >= 0) name += std::string("_") + (redop < 5 ? kRedops[redop] : "PreMulSum");
  if (redop >= 0 && datatype >= 0 && datatype < 12) name += std::string("_") + kTypes[datatype];
  if (std::string(op) != "SendRecv") name += "_RING_LL";
  std::lock_guard<std::mutex> lock(mutex);
  return names->insert(name).first->c_str();
}

ncclResult_t execute(std::vector<Op>& ops) {
  std::vector<CommWork> work;
  for (const Op& op : ops) {
    CommWork* w = nullptr;
    for (CommWork& existing : work) {
      if (existing.comm == op.comm) w = &existing;
    }
    if (w == nullptr) {
      work.push_back(CommWork{op.comm, {}, false, 0, 0, 0, 0, false});
      w = &work.back();
    }
    w->ops.push_back(&op);
    w->bytes += op.bytes;
    if (op.kind == OpKind::kCollective) w->has_collective = true;
  }
  Seam gpu = seam();
  // Phase 1: launch and arrive everywhere.
  for (CommWork& w : work) {
    ncclComm* c = w.comm;
    if (c->nranks <= 1) continue;  // a one-rank comm launches no kernel (as real NCCL may)
    if (gpu.launch != nullptr) {
      w.start = gpu.launch(w.ops.front()->stream, w.ops.front()->kernel, &w.token);
      w.launched = true;
    }
    if (w.has_collective) {
      w.barrier = c->next_barrier++;
      c->shm.arrive(c->rank, w.barrier, w.start);
    }
    for (const Op* op : w.ops) {
      if (op->kind == OpKind::kSend) {
        c->shm.post_send(c->rank, op->peer);
        ++c->sent_to[op->peer];
      } else if (op->kind == OpKind::kRecv) {
        c->shm.post_recv(op->peer, c->rank);
        ++c->recvd_from[op->peer];
      }
    }
  }
  // Phase 2: wait for the partners, then complete the kernels.
  ncclResult_t result = ncclSuccess;
  for (CommWork& w : work) {
    ncclComm* c = w.comm;
    if (c->nranks <= 1) continue;
    int64_t latest = w.start;
    if (w.has_collective) {
      BarrierResult r;
      if (!c->shm.wait(w.barrier, &r)) result = ncclSystemError;
      if (r.max_start > latest) latest = r.max_start;
    }
    for (const Op* op : w.ops) {
      bool ok = true;
      if (op->kind == OpKind::kSend)
        ok = c->shm.wait_recvd(c->rank, op->peer, c->sent_to[op->peer]);
      if (op->kind == OpKind::kRecv)
        ok = c->shm.wait_sent(op->peer, c->rank, c->recvd_from[op->peer]);
      if (!ok) result = ncclSystemError;
    }
    if (w.launched) gpu.complete(w.token, latest + transfer_ns(w.bytes));
  }
  return result;
}

void start_worker(ncclComm* comm, bool with_init) {
  comm->async_state.store(with_init ? ncclInProgress : ncclSuccess);
  comm->worker = std::thread([comm, with_init] {
    if (with_init) {
      comm->async_state.store(comm->shm.wait_all_attached() ? ncclSuccess : ncclSystemError);
    }
    std::unique_lock<std::mutex> lock(comm->mutex);
    for (;;) {
      comm->cv.wait(lock, [&] { return comm->stopping || !comm->queue.empty(); });
      if (comm->queue.empty()) break;
      std::vector<Op> ops = std::move(comm->queue.front());
      comm->queue.pop_front();
      lock.unlock();
      ncclResult_t r = execute(ops);
      lock.lock();
      --comm->busy;
      if (r != ncclSuccess) comm->async_state.store(r);
      comm->cv.notify_all();
    }
  });
}

void stop_worker(ncclComm* comm) {
  if (!comm->worker.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(comm->mutex);
    comm->stopping = true;
  }
  comm->cv.notify_all();
  comm->worker.join();
}

ncclResult_t submit(std::vector<Op>& ops) {
  std::vector<Op> now;
  bool queued = false;
  std::vector<ncclComm*> async_comms;
  for (const Op& op : ops) {
    if (op.comm->blocking) {
      now.push_back(op);
      continue;
    }
    bool seen = false;
    for (ncclComm* c : async_comms) seen |= c == op.comm;
    if (!seen) async_comms.push_back(op.comm);
  }
  for (ncclComm* c : async_comms) {
    std::vector<Op> mine;
    for (const Op& op : ops) {
      if (op.comm == c) mine.push_back(op);
    }
    std::lock_guard<std::mutex> lock(c->mutex);
    c->queue.push_back(std::move(mine));
    ++c->busy;
    c->cv.notify_all();
    queued = true;
  }
  ncclResult_t r = now.empty() ? ncclSuccess : execute(now);
  if (r != ncclSuccess) return r;
  return queued ? ncclInProgress : ncclSuccess;
}

}  // namespace fakenccl
