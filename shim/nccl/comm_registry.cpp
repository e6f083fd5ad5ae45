#include "nccl/comm_registry.h"

#include <pthread.h>

#include <cstdio>
#include <new>

namespace ncclwatch::shim {
namespace {
pthread_mutex_t g_insert_mutex = PTHREAD_MUTEX_INITIALIZER;
}

CommRegistry& CommRegistry::instance() {
  static CommRegistry* registry = new CommRegistry();  // never destroyed: used until exit
  return *registry;
}

std::size_t CommRegistry::home(uintptr_t key) noexcept {
  uint64_t z = key * 0x9e3779b97f4a7c15ULL;
  return static_cast<std::size_t>(z >> 51) & (kSlots - 1);
}

CommInfo* CommRegistry::find(const void* handle) const noexcept {
  auto key = reinterpret_cast<uintptr_t>(handle);
  if (key == 0) return nullptr;
  std::size_t i = home(key);
  for (std::size_t probe = 0; probe < kSlots; ++probe, i = (i + 1) & (kSlots - 1)) {
    uintptr_t k = slots_[i].key.load(std::memory_order_acquire);
    if (k == key) return slots_[i].value.load(std::memory_order_acquire);
    if (k == 0) return nullptr;
  }
  return nullptr;
}

CommInfo* CommRegistry::add(const void* handle, uint64_t id, uint64_t parent_id, int nranks,
                            int rank, int device, bool non_blocking) noexcept {
  auto key = reinterpret_cast<uintptr_t>(handle);
  if (key == 0) return nullptr;
  auto* info = new (std::nothrow) CommInfo();
  if (info == nullptr) return nullptr;
  info->id = id;
  info->parent_id = parent_id;
  info->nranks = nranks;
  info->rank = rank;
  info->device = device;
  info->non_blocking = non_blocking;
  if (nranks > 0 && nranks <= (1 << 20)) {
    info->send_seq.reset(new (std::nothrow) std::atomic<uint32_t>[nranks]());
    info->recv_seq.reset(new (std::nothrow) std::atomic<uint32_t>[nranks]());
  }
  pthread_mutex_lock(&g_insert_mutex);
  std::size_t i = home(key);
  CommInfo* result = nullptr;
  for (std::size_t probe = 0; probe < kSlots; ++probe, i = (i + 1) & (kSlots - 1)) {
    uintptr_t k = slots_[i].key.load(std::memory_order_relaxed);
    if (k == key || k == 0) {
      retire(slots_[i].value.exchange(info, std::memory_order_acq_rel));
      if (k == 0) slots_[i].key.store(key, std::memory_order_release);
      result = info;
      break;
    }
  }
  pthread_mutex_unlock(&g_insert_mutex);
  if (result == nullptr) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      std::fprintf(stderr, "ncclwatch: more than %zu communicators; new ones get comm id 0\n",
                   kSlots);
    }
    delete info;
  }
  return result;
}

void CommRegistry::retire(CommInfo* info) noexcept {
  if (info == nullptr) return;
  info->retired_next = retired_;
  retired_ = info;
}

void CommRegistry::remove(const void* handle) noexcept {
  auto key = reinterpret_cast<uintptr_t>(handle);
  if (key == 0) return;
  pthread_mutex_lock(&g_insert_mutex);
  std::size_t i = home(key);
  for (std::size_t probe = 0; probe < kSlots; ++probe, i = (i + 1) & (kSlots - 1)) {
    uintptr_t k = slots_[i].key.load(std::memory_order_relaxed);
    if (k == key) {
      // The key stays (a tombstone); the entry stays allocated for readers still holding it.
      retire(slots_[i].value.exchange(nullptr, std::memory_order_acq_rel));
      break;
    }
    if (k == 0) break;
  }
  pthread_mutex_unlock(&g_insert_mutex);
}

}  // namespace ncclwatch::shim
