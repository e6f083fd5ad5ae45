// The fake NCCL's cross-process rendezvous for one communicator: a small shared-memory file
// ("/fakenccl.<uid>.<comm hash>") every rank of the comm maps. Ranks "arrive" at barrier number k
// with a value (a kernel start time, or a split color/key) and wait until all nranks arrived, so
// a late rank makes the others wait, as on a GPU. Point-to-point operations use per-(src,dst)
// counters instead. Every wait gives up after FAKE_NCCL_TIMEOUT_S seconds (default 60) so a test
// can never hang forever; init and the comm's first barrier wait at least 60 s whatever it says
// (a rank slow to start on a loaded machine is not the hang a short timeout is meant to end).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace fakenccl {

inline constexpr int kMaxRanks = 64;
inline constexpr int kSlotsPerRank = 4;  // barrier k uses slot k % 4 (see arrive())

struct alignas(64) RankSlot {
  std::atomic<uint64_t> arrived;  // k + 1 after arriving at barrier k
  int64_t start[kSlotsPerRank];
  int64_t a[kSlotsPerRank];
  int64_t b[kSlotsPerRank];
};

struct SharedComm {
  std::atomic<int> attached;
  std::atomic<int> detached;
  int nranks;
  RankSlot ranks[kMaxRanks];
  std::atomic<uint64_t> sent[kMaxRanks][kMaxRanks];   // sends posted src -> dst
  std::atomic<uint64_t> recvd[kMaxRanks][kMaxRanks];  // receives posted by dst from src
};

struct BarrierResult {
  int64_t max_start = 0;
  int64_t a[kMaxRanks] = {};
  int64_t b[kMaxRanks] = {};
};

class CommShm {
 public:
  // Maps (creating if first) the shared file of comm `key`. Empty name on failure.
  bool attach(uint64_t key, int nranks, std::string* error);
  // Waits until all ranks attached (init).
  bool wait_all_attached();
  // Last rank out removes the name.
  void detach();

  void arrive(int rank, uint64_t k, int64_t start, int64_t a = 0, int64_t b = 0);
  bool wait(uint64_t k, BarrierResult* out);

  void post_send(int src, int dst) { shared_->sent[src][dst].fetch_add(1); }
  void post_recv(int src, int dst) { shared_->recvd[src][dst].fetch_add(1); }
  // Waits until the partner posted at least `n` matching operations.
  bool wait_recvd(int src, int dst, uint64_t n);
  bool wait_sent(int src, int dst, uint64_t n);

 private:
  template <typename Pred>
  bool wait_until(Pred pred, const char* what, int64_t timeout_ns);
  SharedComm* shared_ = nullptr;
  std::string name_;
  int nranks_ = 0;
};

int64_t monotonic_ns();

}  // namespace fakenccl
