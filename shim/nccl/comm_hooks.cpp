// Hooks that create, end or identify communicators: GetUniqueId, the inits, Split, Shrink,
// Finalize/Destroy/Abort/Revoke. Comm ids follow format.h (see comm_id.h).
#include <unistd.h>

#include <atomic>
#include <climits>

#include "nccl/call_recording.h"
#include "nccl/comm_id.h"
#include "nccl/comm_registry.h"
#include "nccl/hooks.h"
#include "record/recorder.h"
#include "record/recorder_control.h"

namespace ncclwatch::shim {
namespace {

using format::Func;

template <typename Fn>
Fn resolve_once(std::atomic<void*>& cache, const char* name) {
  void* p = cache.load(std::memory_order_acquire);
  if (p == nullptr) {
    p = resolve_real_extra(name);
    cache.store(p, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(p);
}

// Asks NCCL (unhooked query functions) for what init did not tell us. -1 when unknown, e.g.
// while a non-blocking comm is still initialising.
int query_int(ncclComm_t comm, const char* name, std::atomic<void*>& cache) {
  using QueryFn = ncclResult_t (*)(const ncclComm_t, int*);
  auto fn = resolve_once<QueryFn>(cache, name);
  int value = -1;
  if (fn == nullptr || comm == nullptr || fn(comm, &value) != ncclSuccess) return -1;
  return value;
}
std::atomic<void*> g_count_fn, g_rank_fn, g_device_fn;
int comm_count(ncclComm_t c) {
  return query_int(c, "CommCount", g_count_fn);
}
int comm_rank(ncclComm_t c) {
  return query_int(c, "CommUserRank", g_rank_fn);
}
int comm_device(ncclComm_t c) {
  return query_int(c, "CommCuDevice", g_device_fn);
}

bool blocking_of(const ncclConfig_t* config) {
  return config == nullptr || config->blocking == NCCL_CONFIG_UNDEF_INT || config->blocking != 0;
}

// The handle NCCL wrote, read only when the call says it wrote one (on failure *out may be the
// caller's uninitialised variable).
ncclComm_t created_handle(const ncclComm_t* out, ncclResult_t result) {
  bool wrote = result == ncclSuccess || result == ncclInProgress;
  return wrote && out != nullptr ? *out : nullptr;
}

struct CommEvent {
  Func func;
  int64_t t_enter;
  ncclResult_t result;
  ncclComm_t handle;
  uint64_t id;
  uint64_t parent;
  int nranks;
  int rank;
  int device;
  int color;
  bool non_blocking;
};

// Entry evidence of a comm call (see format::CallEntry): for inits count = nranks and peer =
// the rank in the new comm.
void enter_comm_call(Func func, int64_t t_enter, uint64_t comm_id, int nranks = 0,
                     int rank = -1) noexcept {
  format::CallEntry e{};
  e.t_enter_ns = t_enter;
  e.comm_id = comm_id;
  e.count = nranks > 0 ? static_cast<uint64_t>(nranks) : 0;
  e.peer = rank;
  e.func = static_cast<uint8_t>(func);
  mark_entered(e);
}

// Registers a created comm, learns identity from it, and records it.
void comm_created(const CommEvent& e) {
  bool ok = e.result == ncclSuccess || e.result == ncclInProgress;
  int device = e.device;
  if (ok && e.handle != nullptr) {
    if (device < 0 && e.result == ncclSuccess) device = comm_device(e.handle);
    CommRegistry::instance().add(e.handle, e.id, e.parent, e.nranks, e.rank, device,
                                 e.non_blocking);
    if (e.rank >= 0 && e.nranks > 0) note_communicator(e.rank, e.nranks, device);
  }
  format::Record rec{};
  format::CommRecord& c = rec.comm;
  stamp_api_call(c, format::RecordKind::kComm, e.func, e.result, e.t_enter);
  c.comm_id = e.id;
  c.parent_id = e.parent;
  c.handle = reinterpret_cast<uint64_t>(e.handle);
  c.nranks = e.nranks;
  c.rank = e.rank;
  c.device = device;
  c.color = e.color;
  emit(rec);
}

ncclResult_t init_rank(Func func, ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank,
                       ncclConfig_t* config, ncclResult_t (*call)(void*), void* ctx) {
  bool on = ensure_recorder();
  int64_t t_enter = now_ns();
  const uint64_t comm_id = comm_id_from_unique_id(&id, sizeof id);
  enter_comm_call(func, t_enter, comm_id, nranks, rank);
  ncclResult_t result = call(ctx);
  mark_returned();
  if (on) {
    comm_created({func, t_enter, result, created_handle(comm, result), comm_id, 0, nranks, rank, -1,
                  0, !blocking_of(config)});
  }
  return result;
}

ncclResult_t comm_end(Func func, ncclComm_t comm, ncclResult_t (*call)(void*), void* ctx) {
  bool on = ensure_recorder();
  int64_t t_enter = now_ns();
  CommInfo* info = CommRegistry::instance().find(comm);
  uint64_t id = info != nullptr ? info->id : 0;
  enter_comm_call(func, t_enter, id);
  ncclResult_t result = call(ctx);
  mark_returned();
  // Destroy and abort free the handle (it may be reused by a later comm); finalize and revoke
  // leave it valid.
  if ((func == Func::kCommDestroy || func == Func::kCommAbort) && result == ncclSuccess) {
    CommRegistry::instance().remove(comm);
  }
  if (on) {
    format::Record rec{};
    stamp_api_call(rec.comm_end, format::RecordKind::kCommEnd, func, result, t_enter);
    rec.comm_end.comm_id = id;
    emit(rec);
  }
  return result;
}

std::atomic<uint32_t> g_init_all_counter{0};

}  // namespace

ncclResult_t hookGetUniqueId(ncclUniqueId* uniqueId) {
  bool on = ensure_recorder();
  int64_t t_enter = now_ns();
  enter_comm_call(Func::kGetUniqueId, t_enter, 0);
  ncclResult_t result = realGetUniqueId()(uniqueId);
  mark_returned();
  if (on) {
    format::Record rec{};
    stamp_api_call(rec.unique_id, format::RecordKind::kUniqueId, Func::kGetUniqueId, result,
                   t_enter);
    if (result == ncclSuccess && uniqueId != nullptr) {
      rec.unique_id.id_hash = unique_id_hash(uniqueId, sizeof *uniqueId);
    }
    emit(rec);
  }
  return result;
}

ncclResult_t hookCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  auto call = [&] { return realCommInitRank()(comm, nranks, commId, rank); };
  return init_rank(
      Func::kCommInitRank, comm, nranks, commId, rank, nullptr,
      [](void* c) { return (*static_cast<decltype(call)*>(c))(); }, &call);
}

ncclResult_t hookCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) {
  auto call = [&] { return realCommInitRankConfig()(comm, nranks, commId, rank, config); };
  return init_rank(
      Func::kCommInitRankConfig, comm, nranks, commId, rank, config,
      [](void* c) { return (*static_cast<decltype(call)*>(c))(); }, &call);
}

ncclResult_t hookCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config) {
  bool on = ensure_recorder();
  int64_t t_enter = now_ns();
  const uint64_t id = (nId > 0 && commIds != nullptr)
                          ? comm_id_from_unique_id(&commIds[0], sizeof(ncclUniqueId))
                          : 0;
  enter_comm_call(Func::kCommInitRankScalable, t_enter, id, nranks, myrank);
  ncclResult_t result = realCommInitRankScalable()(newcomm, nranks, myrank, nId, commIds, config);
  mark_returned();
  if (on) {
    comm_created({Func::kCommInitRankScalable, t_enter, result, created_handle(newcomm, result), id,
                  0, nranks, myrank, -1, 0, !blocking_of(config)});
  }
  return result;
}

ncclResult_t hookCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  bool on = ensure_recorder();
  int64_t t_enter = now_ns();
  uint32_t counter = g_init_all_counter.fetch_add(1);
  enter_comm_call(Func::kCommInitAll, t_enter, 0, ndev);
  ncclResult_t result = realCommInitAll()(comm, ndev, devlist);
  mark_returned();
  if (on) {
    uint64_t id = comm_id_for_init_all(getpid(), counter);
    for (int i = 0; i < ndev && comm != nullptr; ++i) {
      int device = devlist != nullptr ? devlist[i] : i;
      comm_created({Func::kCommInitAll, t_enter, result, result == ncclSuccess ? comm[i] : nullptr,
                    id, 0, ndev, i, device, 0, false});
    }
  }
  return result;
}

ncclResult_t hookCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config) {
  bool on = ensure_recorder();
  int64_t t_enter = now_ns();
  CommInfo* parent = CommRegistry::instance().find(comm);
  uint64_t parent_id = parent != nullptr ? parent->id : 0;
  uint32_t index = parent != nullptr ? parent->split_index.fetch_add(1) : 0;
  enter_comm_call(Func::kCommSplit, t_enter, parent_id);
  ncclResult_t result = realCommSplit()(comm, color, key, newcomm, config);
  mark_returned();
  if (on) {
    ncclComm_t child = created_handle(newcomm, result);
    uint64_t id = color == NCCL_SPLIT_NOCOLOR ? 0 : comm_id_for_split(parent_id, index, color);
    bool ready = result == ncclSuccess && child != nullptr;
    bool nb =
        parent != nullptr && (config == nullptr ? parent->non_blocking : !blocking_of(config));
    comm_created({Func::kCommSplit, t_enter, result, child, id, parent_id,
                  ready ? comm_count(child) : -1, ready ? comm_rank(child) : -1, -1, color, nb});
  }
  return result;
}

ncclResult_t hookCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  bool on = ensure_recorder();
  int64_t t_enter = now_ns();
  CommInfo* parent = CommRegistry::instance().find(comm);
  uint64_t parent_id = parent != nullptr ? parent->id : 0;
  uint32_t index = parent != nullptr ? parent->split_index.fetch_add(1) : 0;
  // Computed before the call: NCCL may not keep the list, and the id must not depend on it.
  uint64_t id = comm_id_for_shrink(parent_id, index, excludeRanksList, excludeRanksCount);
  enter_comm_call(Func::kCommShrink, t_enter, parent_id);
  ncclResult_t result =
      realCommShrink()(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  mark_returned();
  if (on) {
    ncclComm_t child = created_handle(newcomm, result);
    bool ready = result == ncclSuccess && child != nullptr;
    bool nb =
        parent != nullptr && (config == nullptr ? parent->non_blocking : !blocking_of(config));
    comm_created({Func::kCommShrink, t_enter, result, child, id, parent_id,
                  ready ? comm_count(child) : -1, ready ? comm_rank(child) : -1, -1, shrinkFlags,
                  nb});
  }
  return result;
}

ncclResult_t hookCommFinalize(ncclComm_t comm) {
  auto call = [&] { return realCommFinalize()(comm); };
  return comm_end(
      Func::kCommFinalize, comm, [](void* c) { return (*static_cast<decltype(call)*>(c))(); },
      &call);
}

ncclResult_t hookCommDestroy(ncclComm_t comm) {
  auto call = [&] { return realCommDestroy()(comm); };
  return comm_end(
      Func::kCommDestroy, comm, [](void* c) { return (*static_cast<decltype(call)*>(c))(); },
      &call);
}

ncclResult_t hookCommAbort(ncclComm_t comm) {
  auto call = [&] { return realCommAbort()(comm); };
  return comm_end(
      Func::kCommAbort, comm, [](void* c) { return (*static_cast<decltype(call)*>(c))(); }, &call);
}

ncclResult_t hookCommRevoke(ncclComm_t comm, int revokeFlags) {
  auto call = [&] { return realCommRevoke()(comm, revokeFlags); };
  return comm_end(
      Func::kCommRevoke, comm, [](void* c) { return (*static_cast<decltype(call)*>(c))(); }, &call);
}

}  // namespace ncclwatch::shim
