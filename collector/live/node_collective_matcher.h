// Matches the collectives of this node's ranks by (comm id, seq) and splits each rank's GPU time
// into waiting and transfer the way nvidia-resiliency-ext and NCCL Inspector reason: every rank's
// NCCL kernel runs until the last rank has arrived plus the transfer, so the fastest kernel of a
// matched collective is (at most) the transfer, and the rest of each rank's kernel time is waiting
// for peers. All ranks of a node share one host clock, so kernel starts also give each rank's
// lateness (start minus the earliest start on the node) without clock alignment.
//
// A node only sees its own members of a comm: when the late rank lives on another node, every
// local rank waits about equally and the local split shows no waiting; the fleet-wide view comes
// from comparing the GPU-time counters of all ranks in Prometheus (docs/metrics.md).
//
// Bounded: a collective is decided as soon as every local member reported it, or with the members
// present once its comm has moved `seq_window` past it (a rank whose records were dropped or that
// died); at most `max_pending` collectives wait, the oldest are decided first.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

namespace ncclwatch::live {

class NodeCollectiveMatcher {
 public:
  struct Share {
    std::size_t member;  // the caller's index of the rank
    double wait_s;
    double transfer_s;
    double lateness_s;
  };

  explicit NodeCollectiveMatcher(uint64_t seq_window = 4096, std::size_t max_pending = 16384);

  // One more rank of this node is a member of `comm` (its comm record was seen).
  void add_member(uint64_t comm);
  // Rank `member` ran collective (comm, seq) on the GPU from start to end (host clock).
  // Decided collectives append one Share per member present to `out`.
  void add(std::size_t member, uint64_t comm, uint64_t seq, int64_t start_ns, int64_t end_ns,
           std::vector<Share>& out);

  uint64_t decided() const { return decided_; }
  uint64_t partial() const { return partial_; }      // decided without every local member
  uint64_t unmatched() const { return unmatched_; }  // only one member ever reported it
  std::size_t pending() const { return pending_.size(); }

 private:
  struct Arrival {
    std::size_t member;
    int64_t start, end;
  };
  using Key = std::pair<uint64_t, uint64_t>;  // (comm, seq)
  void decide(std::map<Key, std::vector<Arrival>>::iterator it, std::vector<Share>& out);

  uint64_t seq_window_;
  std::size_t max_pending_;
  std::unordered_map<uint64_t, uint32_t> members_;  // comm -> local members
  std::unordered_map<uint64_t, uint64_t> max_seq_;  // comm -> highest seq reported
  std::map<Key, std::vector<Arrival>> pending_;
  uint64_t decided_ = 0, partial_ = 0, unmatched_ = 0;
};

}  // namespace ncclwatch::live
