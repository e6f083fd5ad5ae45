// ncclComm_t handle -> what the shim knows about the communicator. Lookups are lock-free (open
// addressing over a fixed table, no allocation: the hot path uses them); insertion happens at
// comm creation, which is not hot, under a mutex. Entries are never freed: a thread may still be
// reading one while another destroys the comm (a few hundred bytes per communicator ever made).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace ncclwatch::shim {

struct CommInfo {
  uint64_t id = 0;
  uint64_t parent_id = 0;
  int nranks = -1;
  int rank = -1;
  int device = -1;
  bool non_blocking = false;
  std::atomic<uint32_t> coll_seq{0};     // next collective's seq
  std::atomic<uint32_t> split_index{0};  // next split/shrink index on this comm
  // Per-peer p2p counters (nranks entries each; null when nranks is unknown).
  std::unique_ptr<std::atomic<uint32_t>[]> send_seq;
  std::unique_ptr<std::atomic<uint32_t>[]> recv_seq;
  CommInfo* retired_next = nullptr;  // keeps replaced entries reachable (see CommRegistry)
};

class CommRegistry {
 public:
  static CommRegistry& instance();

  // Hot path: nullptr if the handle is unknown.
  CommInfo* find(const void* handle) const noexcept;
  // Registers (or re-registers a reused handle). Returns the entry, nullptr if the table is full.
  CommInfo* add(const void* handle, uint64_t id, uint64_t parent_id, int nranks, int rank,
                int device, bool non_blocking) noexcept;
  void remove(const void* handle) noexcept;

  static constexpr std::size_t kSlots = 8192;

 private:
  struct Slot {
    std::atomic<uintptr_t> key{0};
    std::atomic<CommInfo*> value{nullptr};
  };
  static std::size_t home(uintptr_t key) noexcept;
  void retire(CommInfo* info) noexcept;
  Slot slots_[kSlots];
  CommInfo* retired_ = nullptr;  // guarded by the insert mutex
};

}  // namespace ncclwatch::shim
