#include "comm_shm.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fakenccl {
namespace {

int64_t timeout_ns() {
  static const int64_t value = [] {
    const char* v = std::getenv("FAKE_NCCL_TIMEOUT_S");
    double s = v != nullptr ? std::atof(v) : 0;
    return static_cast<int64_t>((s > 0 ? s : 60.0) * 1e9);
  }();
  return value;
}

// Setup (init, and the comm's first collective) waits at least a minute whatever
// FAKE_NCCL_TIMEOUT_S says: ranks start at very different times on a loaded machine (exec, the
// preloaded shim, CUPTI), and a short timeout meant to end an injected hang (ncclwatch demo hang,
// the e2e hang tests) must not fire on a rank that is merely slow to start. Once every rank has
// been through one collective, all of them are running and a missing rank is the hang.
int64_t setup_timeout_ns() {
  return std::max<int64_t>(timeout_ns(), int64_t{60} * 1'000'000'000);
}

}  // namespace

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

bool CommShm::attach(uint64_t key, int nranks, std::string* error) {
  char name[96];
  std::snprintf(name, sizeof name, "/fakenccl.%u.%016llx", static_cast<unsigned>(getuid()),
                static_cast<unsigned long long>(key));
  name_ = name;
  nranks_ = nranks;
  int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
  if (fd < 0) {
    *error = std::string("shm_open ") + name + ": " + std::strerror(errno);
    return false;
  }
  // ftruncate to the same size from every rank is harmless; the file starts zero-filled.
  if (ftruncate(fd, sizeof(SharedComm)) != 0) {
    *error = std::string("ftruncate ") + name + ": " + std::strerror(errno);
    close(fd);
    return false;
  }
  void* p = mmap(nullptr, sizeof(SharedComm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    *error = std::string("mmap ") + name + ": " + std::strerror(errno);
    return false;
  }
  shared_ = static_cast<SharedComm*>(p);
  shared_->attached.fetch_add(1);
  return true;
}

template <typename Pred>
bool CommShm::wait_until(Pred pred, const char* what, int64_t timeout) {
  int64_t deadline = monotonic_ns() + timeout;
  for (int spins = 0; !pred(); ++spins) {
    if (spins < 200) {
      sched_yield();
      continue;
    }
    if (monotonic_ns() > deadline) {
      std::fprintf(stderr, "fake-nccl: timeout waiting for %s on %s\n", what, name_.c_str());
      return false;
    }
    timespec ts{0, 20000};
    nanosleep(&ts, nullptr);
  }
  return true;
}

bool CommShm::wait_all_attached() {
  if (!wait_until([&] { return shared_->attached.load() >= nranks_; }, "all ranks to init",
                  setup_timeout_ns())) {
    return false;
  }
  // Everyone has it mapped: the name is no longer needed, and removing it now means a rank
  // killed later (the tests do that) leaves nothing behind in /dev/shm.
  shm_unlink(name_.c_str());
  return true;
}

void CommShm::detach() {
  if (shared_ == nullptr) return;
  // The name went at init (wait_all_attached); only a comm whose init failed still has one.
  if (shared_->detached.fetch_add(1) + 1 >= nranks_) shm_unlink(name_.c_str());
  munmap(shared_, sizeof(SharedComm));
  shared_ = nullptr;
}

void CommShm::arrive(int rank, uint64_t k, int64_t start, int64_t a, int64_t b) {
  // Slot k % 4 is safe to overwrite: a rank reaches barrier k + 4 only after every rank arrived
  // at k + 3, i.e. after every rank finished reading the results of barrier k.
  RankSlot& slot = shared_->ranks[rank];
  slot.start[k % kSlotsPerRank] = start;
  slot.a[k % kSlotsPerRank] = a;
  slot.b[k % kSlotsPerRank] = b;
  slot.arrived.store(k + 1, std::memory_order_release);
}

bool CommShm::wait(uint64_t k, BarrierResult* out) {
  bool ok = wait_until(
      [&] {
        for (int r = 0; r < nranks_; ++r) {
          if (shared_->ranks[r].arrived.load(std::memory_order_acquire) < k + 1) return false;
        }
        return true;
      },
      "a collective", k == 0 ? setup_timeout_ns() : timeout_ns());
  if (!ok) return false;
  out->max_start = 0;
  for (int r = 0; r < nranks_; ++r) {
    const RankSlot& slot = shared_->ranks[r];
    if (slot.start[k % kSlotsPerRank] > out->max_start)
      out->max_start = slot.start[k % kSlotsPerRank];
    out->a[r] = slot.a[k % kSlotsPerRank];
    out->b[r] = slot.b[k % kSlotsPerRank];
  }
  return true;
}

bool CommShm::wait_recvd(int src, int dst, uint64_t n) {
  return wait_until([&] { return shared_->recvd[src][dst].load() >= n; }, "a matching recv",
                    timeout_ns());
}

bool CommShm::wait_sent(int src, int dst, uint64_t n) {
  return wait_until([&] { return shared_->sent[src][dst].load() >= n; }, "a matching send",
                    timeout_ns());
}

}  // namespace fakenccl
