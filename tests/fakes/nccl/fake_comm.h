// The fake NCCL's communicator and operations (see fake_nccl.cpp for the API).
#pragma once

#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "comm_shm.h"

namespace fakenccl {

enum class OpKind { kCollective, kSend, kRecv, kNothing };

struct Op {
  OpKind kind = OpKind::kCollective;
  ncclComm* comm = nullptr;
  const char* kernel = "";
  uint64_t bytes = 0;
  int peer = -1;
  cudaStream_t stream = nullptr;
};

}  // namespace fakenccl

struct ncclComm {
  uint64_t id = 0;
  int nranks = 0;
  int rank = 0;
  int device = 0;
  bool blocking = true;
  bool revoked = false;
  fakenccl::CommShm shm;
  uint64_t next_barrier = 0;                  // barriers used so far (same sequence on every rank)
  uint32_t splits = 0;                        // splits/shrinks made from this comm
  std::vector<uint64_t> sent_to, recvd_from;  // p2p operations this rank posted per peer

  // Non-blocking comms: a worker thread runs init and queued operations.
  std::atomic<ncclResult_t> async_state{ncclSuccess};
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::vector<fakenccl::Op>> queue;
  int busy = 0;
  bool stopping = false;
  std::thread worker;
};

namespace fakenccl {

// Runs one group's operations (or a single operation): per comm one "kernel". Arrives on every
// comm's barrier first, then waits on all, so comms of one process (InitAll) work in one group.
ncclResult_t execute(std::vector<Op>& ops);

// Submits ops: blocking comms run now; non-blocking comms queue them to their worker.
// Returns ncclInProgress if something was queued.
ncclResult_t submit(std::vector<Op>& ops);

void start_worker(ncclComm* comm, bool with_init);
void stop_worker(ncclComm* comm);

const char* kernel_name(const char* op, int redop, int datatype);

}  // namespace fakenccl
