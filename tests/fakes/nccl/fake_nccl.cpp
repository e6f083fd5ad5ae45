// A fake libnccl.so.2 with NCCL 2.28's ABI, for tests without a GPU. Like the real library it
// exports a strong pnccl<X> and a weak nccl<X> alias for each function, and ncclBcast calls
// ncclBroadcast through the dynamic symbol (so an interposer sees the nested call).
//
// Behaviour: collectives block across processes until every rank of the comm arrived (see
// comm_shm.h); groups run each comm's operations as one "kernel" at the outermost GroupEnd;
// non-blocking comms (config->blocking == 0) initialise and run operations on an internal
// thread, report progress through ncclCommGetAsyncError, and GroupEnd returns ncclInProgress.
// Buffers are never touched (they would be device pointers). At most kMaxRanks ranks per comm.
#include <nccl.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fake_comm.h"
#include "fake_debug_log.h"

using fakenccl::Op;
using fakenccl::OpKind;

namespace {

thread_local int t_group_depth = 0;
thread_local std::vector<Op>* t_group_ops = nullptr;

uint64_t hash_bytes(const void* data, size_t size, uint64_t h = 0xcbf29ce484222325ULL) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

int default_device() {
  const char* v = std::getenv("LOCAL_RANK");
  return v != nullptr ? std::atoi(v) : 0;
}

bool blocking_config(const ncclConfig_t* config) {
  return config == nullptr || config->blocking == NCCL_CONFIG_UNDEF_INT || config->blocking != 0;
}

// Creates a comm and joins its rendezvous. Blocking comms wait for all ranks here.
ncclResult_t make_comm(ncclComm_t* out, uint64_t id, int nranks, int rank, int device,
                       bool blocking) {
  if (out == nullptr || nranks < 1 || nranks > fakenccl::kMaxRanks || rank < 0 || rank >= nranks) {
    return ncclInvalidArgument;
  }
  auto* c = new ncclComm();
  c->id = id;
  c->nranks = nranks;
  c->rank = rank;
  c->device = device;
  c->blocking = blocking;
  c->sent_to.assign(nranks, 0);
  c->recvd_from.assign(nranks, 0);
  std::string error;
  if (!c->shm.attach(id, nranks, &error)) {
    std::fprintf(stderr, "fake-nccl: %s\n", error.c_str());
    delete c;
    return ncclSystemError;
  }
  *out = c;
  fakenccl::warn_at_init(rank, device);
  if (!blocking) {
    fakenccl::start_worker(c, true);
    return ncclInProgress;
  }
  if (!c->shm.wait_all_attached()) return ncclSystemError;
  return ncclSuccess;
}

ncclResult_t enqueue(Op op) {
  if (op.comm == nullptr) return ncclInvalidArgument;
  if (op.kind == OpKind::kNothing) return ncclSuccess;
  if (op.kind != OpKind::kCollective && (op.peer < 0 || op.peer >= op.comm->nranks)) {
    return ncclInvalidArgument;
  }
  if (t_group_depth > 0) {
    t_group_ops->push_back(op);
    return ncclSuccess;
  }
  std::vector<Op> ops{op};
  ncclResult_t r = fakenccl::submit(ops);
  return r == ncclInProgress ? ncclSuccess : r;
}

Op coll(ncclComm_t comm, const char* name, int redop, ncclDataType_t type, size_t count,
        cudaStream_t stream) {
  Op op;
  op.comm = comm;
  // A one-rank blocking comm outside a group does nothing (no kernel, no partner): skip the
  // kernel-name work so the recorder benchmark measures the shim, not the fake.
  if (comm != nullptr && comm->nranks == 1 && comm->blocking && t_group_depth == 0) {
    op.kind = OpKind::kNothing;
    return op;
  }
  op.kind = OpKind::kCollective;
  op.comm = comm;
  op.kernel = fakenccl::kernel_name(name, redop, static_cast<int>(type));
  size_t elem =
      type == ncclInt8 || type == ncclUint8 || type == ncclFloat8e4m3 || type == ncclFloat8e5m2 ? 1
      : type == ncclFloat16 || type == ncclBfloat16                                             ? 2
      : type == ncclInt64 || type == ncclUint64 || type == ncclFloat64                          ? 8
                                                                                                : 4;
  op.bytes = count * elem;
  op.stream = stream;
  return op;
}

void destroy_comm(ncclComm_t comm) {
  fakenccl::stop_worker(comm);
  comm->shm.detach();
  delete comm;
}

}  // namespace

#define FAKE_ALIAS(name) extern "C" decltype(p##name) name __attribute__((weak, alias("p" #name)));

extern "C" {

ncclResult_t pncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (uniqueId == nullptr) return ncclInvalidArgument;
  if (getrandom(uniqueId->internal, sizeof uniqueId->internal, 0) !=
      static_cast<ssize_t>(sizeof uniqueId->internal)) {
    return ncclSystemError;
  }
  return ncclSuccess;
}

const char* pncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error";
    case ncclSystemError:
      return "unhandled system error (fake-nccl timeout or shm failure)";
    case ncclInternalError:
      return "internal error";
    case ncclInvalidArgument:
      return "invalid argument";
    case ncclInvalidUsage:
      return "invalid usage";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

const char* pncclGetLastError(ncclComm_t) {
  return "";
}

ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config) {
  return make_comm(comm, hash_bytes(&commId, sizeof commId), nranks, rank, default_device(),
                   blocking_config(config));
}

ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return make_comm(comm, hash_bytes(&commId, sizeof commId), nranks, rank, default_device(), true);
}

ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                       ncclUniqueId* commIds, ncclConfig_t* config) {
  if (nId < 1 || commIds == nullptr) return ncclInvalidArgument;
  return make_comm(newcomm, hash_bytes(&commIds[0], sizeof(ncclUniqueId)), nranks, myrank,
                   default_device(), blocking_config(config));
}

ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  if (comm == nullptr || ndev < 1) return ncclInvalidArgument;
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return ncclSystemError;
  uint64_t key = hash_bytes(&id, sizeof id);
  // Like real NCCL: one init per device inside a group. Here every comm attaches first and the
  // attach barrier is satisfied once all ndev comms exist.
  for (int i = 0; i < ndev; ++i) {
    auto* c = new ncclComm();
    c->id = key;
    c->nranks = ndev;
    c->rank = i;
    c->device = devlist != nullptr ? devlist[i] : i;
    c->sent_to.assign(ndev, 0);
    c->recvd_from.assign(ndev, 0);
    std::string error;
    if (!c->shm.attach(key, ndev, &error)) {
      delete c;
      return ncclSystemError;
    }
    comm[i] = c;
  }
  comm[0]->shm.wait_all_attached();  // all attached: removes the name
  return ncclSuccess;
}

ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                            ncclConfig_t* config) {
  if (comm == nullptr || newcomm == nullptr) return ncclInvalidArgument;
  // Every parent rank takes part: exchange (color, key) through the parent's barrier.
  uint64_t k = comm->next_barrier++;
  uint32_t index = comm->splits++;
  comm->shm.arrive(comm->rank, k, 0, color, key);
  fakenccl::BarrierResult r;
  if (!comm->shm.wait(k, &r)) return ncclSystemError;
  if (color == NCCL_SPLIT_NOCOLOR) {
    *newcomm = nullptr;
    return ncclSuccess;
  }
  std::vector<std::pair<int64_t, int>> members;  // (key, parent rank) of my color
  for (int i = 0; i < comm->nranks; ++i) {
    if (r.a[i] == color) members.emplace_back(r.b[i], i);
  }
  std::sort(members.begin(), members.end());
  int new_rank = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].second == comm->rank) new_rank = static_cast<int>(i);
  }
  uint64_t id = comm->id;
  id = hash_bytes(&index, sizeof index, id);
  id = hash_bytes(&color, sizeof color, id);
  bool blocking = config != nullptr ? blocking_config(config) : comm->blocking;
  ncclResult_t res =
      make_comm(newcomm, id, static_cast<int>(members.size()), new_rank, comm->device, blocking);
  return res;
}

ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                             ncclComm_t* newcomm, ncclConfig_t* config, int) {
  if (comm == nullptr || newcomm == nullptr || excludeRanksCount < 0 ||
      (excludeRanksCount > 0 && excludeRanksList == nullptr)) {
    return ncclInvalidArgument;
  }
  std::vector<int> excluded(excludeRanksList, excludeRanksList + excludeRanksCount);
  std::sort(excluded.begin(), excluded.end());
  uint32_t index = comm->splits++;
  int below = 0;
  for (int e : excluded) {
    if (e == comm->rank) return ncclInvalidArgument;  // an excluded rank must not call shrink
    if (e < comm->rank) ++below;
  }
  uint64_t id = hash_bytes("shrink", 6, comm->id);
  id = hash_bytes(&index, sizeof index, id);
  id = hash_bytes(excluded.data(), excluded.size() * sizeof(int), id);
  bool blocking = config != nullptr ? blocking_config(config) : comm->blocking;
  return make_comm(newcomm, id, comm->nranks - static_cast<int>(excluded.size()),
                   comm->rank - below, comm->device, blocking);
}

ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  if (comm == nullptr) return ncclInvalidArgument;
  // Wait for queued work of a non-blocking comm.
  std::unique_lock<std::mutex> lock(comm->mutex);
  comm->cv.wait(lock, [&] { return comm->busy == 0; });
  return ncclSuccess;
}

ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclInvalidArgument;
  destroy_comm(comm);
  return ncclSuccess;
}

ncclResult_t pncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclInvalidArgument;
  destroy_comm(comm);
  return ncclSuccess;
}

ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  if (comm == nullptr || revokeFlags != NCCL_REVOKE_DEFAULT) return ncclInvalidArgument;
  comm->revoked = true;
  return ncclSuccess;
}

ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (comm == nullptr || asyncError == nullptr) return ncclInvalidArgument;
  ncclResult_t state = comm->async_state.load();
  if (state == ncclSuccess) {
    std::lock_guard<std::mutex> lock(comm->mutex);
    if (comm->busy > 0) state = ncclInProgress;
  }
  *asyncError = state;
  return ncclSuccess;
}

ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  if (comm == nullptr || count == nullptr) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (comm == nullptr || device == nullptr) return ncclInvalidArgument;
  *device = comm->device;
  return ncclSuccess;
}

ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm == nullptr || rank == nullptr) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t pncclAllReduce(const void*, void*, size_t count, ncclDataType_t datatype,
                            ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(coll(comm, "AllReduce", op, datatype, count, stream));
}

ncclResult_t pncclBroadcast(const void*, void*, size_t count, ncclDataType_t datatype, int root,
                            ncclComm_t comm, cudaStream_t stream) {
  if (comm != nullptr && (root < 0 || root >= comm->nranks)) return ncclInvalidArgument;
  return enqueue(coll(comm, "Broadcast", -1, datatype, count, stream));
}

ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  // As in real NCCL: in-place broadcast through the public entry point.
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

ncclResult_t pncclReduce(const void*, void*, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                         int root, ncclComm_t comm, cudaStream_t stream) {
  if (comm != nullptr && (root < 0 || root >= comm->nranks)) return ncclInvalidArgument;
  return enqueue(coll(comm, "Reduce", op, datatype, count, stream));
}

ncclResult_t pncclAllGather(const void*, void*, size_t sendcount, ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream) {
  Op op = coll(comm, "AllGather", -1, datatype, sendcount, stream);
  if (comm != nullptr) op.bytes *= static_cast<uint64_t>(comm->nranks);
  return enqueue(op);
}

ncclResult_t pncclReduceScatter(const void*, void*, size_t recvcount, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  Op o = coll(comm, "ReduceScatter", op, datatype, recvcount, stream);
  if (comm != nullptr) o.bytes *= static_cast<uint64_t>(comm->nranks);
  return enqueue(o);
}

ncclResult_t pncclAlltoAll(const void*, void*, size_t count, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  Op op = coll(comm, "SendRecv", -1, datatype, count, stream);
  if (comm != nullptr) op.bytes *= static_cast<uint64_t>(comm->nranks);
  return enqueue(op);
}

ncclResult_t pncclGather(const void*, void*, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream) {
  if (comm != nullptr && (root < 0 || root >= comm->nranks)) return ncclInvalidArgument;
  return enqueue(coll(comm, "SendRecv", -1, datatype, count, stream));
}

ncclResult_t pncclScatter(const void*, void*, size_t count, ncclDataType_t datatype, int root,
                          ncclComm_t comm, cudaStream_t stream) {
  if (comm != nullptr && (root < 0 || root >= comm->nranks)) return ncclInvalidArgument;
  return enqueue(coll(comm, "SendRecv", -1, datatype, count, stream));
}

ncclResult_t pncclSend(const void*, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream) {
  Op op = coll(comm, "SendRecv", -1, datatype, count, stream);
  if (op.kind == OpKind::kNothing) return peer == 0 ? ncclSuccess : ncclInvalidArgument;
  op.kind = OpKind::kSend;
  op.peer = peer;
  return enqueue(op);
}

ncclResult_t pncclRecv(void*, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream) {
  Op op = coll(comm, "SendRecv", -1, datatype, count, stream);
  if (op.kind == OpKind::kNothing) return peer == 0 ? ncclSuccess : ncclInvalidArgument;
  op.kind = OpKind::kRecv;
  op.peer = peer;
  return enqueue(op);
}

ncclResult_t pncclGroupStart() {
  if (t_group_depth++ == 0) {
    if (t_group_ops == nullptr) t_group_ops = new std::vector<Op>();
    t_group_ops->clear();
  }
  return ncclSuccess;
}

ncclResult_t pncclGroupEnd() {
  if (t_group_depth == 0) return ncclInvalidUsage;
  if (--t_group_depth > 0) return ncclSuccess;
  std::vector<Op> ops;
  ops.swap(*t_group_ops);
  if (ops.empty()) return ncclSuccess;
  return fakenccl::submit(ops);
}

}  // extern "C"

FAKE_ALIAS(ncclGetVersion)
FAKE_ALIAS(ncclGetUniqueId)
FAKE_ALIAS(ncclGetErrorString)
FAKE_ALIAS(ncclGetLastError)
FAKE_ALIAS(ncclCommInitRankConfig)
FAKE_ALIAS(ncclCommInitRank)
FAKE_ALIAS(ncclCommInitRankScalable)
FAKE_ALIAS(ncclCommInitAll)
FAKE_ALIAS(ncclCommSplit)
FAKE_ALIAS(ncclCommShrink)
FAKE_ALIAS(ncclCommFinalize)
FAKE_ALIAS(ncclCommDestroy)
FAKE_ALIAS(ncclCommAbort)
FAKE_ALIAS(ncclCommRevoke)
FAKE_ALIAS(ncclCommGetAsyncError)
FAKE_ALIAS(ncclCommCount)
FAKE_ALIAS(ncclCommCuDevice)
FAKE_ALIAS(ncclCommUserRank)
FAKE_ALIAS(ncclAllReduce)
FAKE_ALIAS(ncclBroadcast)
FAKE_ALIAS(ncclBcast)
FAKE_ALIAS(ncclReduce)
FAKE_ALIAS(ncclAllGather)
FAKE_ALIAS(ncclReduceScatter)
FAKE_ALIAS(ncclAlltoAll)
FAKE_ALIAS(ncclGather)
FAKE_ALIAS(ncclScatter)
FAKE_ALIAS(ncclSend)
FAKE_ALIAS(ncclRecv)
FAKE_ALIAS(ncclGroupStart)
FAKE_ALIAS(ncclGroupEnd)
