// A tiny DDP simulator for the analysis tests: ranks run forward, a backward split into one
// segment per gradient bucket, an all-reduce per bucket and an optimizer step, on a virtual
// GPU clock. Every all-reduce ends for all ranks `transfer_ns` after its last member arrived
// (NCCL's ring cannot finish before everyone joined), so stragglers make peers wait exactly as
// on a real cluster, and every expected figure can be derived by hand from the parameters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/clock_alignment.h"
#include "model/job_trace.h"
#include "model/match_result.h"

namespace ncclwatch::analysis::testing {

struct SimRank {
  std::string host = "node-a";
  double compute_scale = 1.0;  // > 1: slow GPU
  int64_t host_stall_ns = 0;   // every step, before the input copy (data loading)
  int64_t spike_ns = 0;        // extra stall on steps s with (s + 1) % spike_every == 0
  int spike_every = 0;
  int spike_phase = 0;         // spikes on steps s with (s + 1 + spike_phase) % spike_every == 0
  int extra_spike_step = -1;   // one more stall on this (0-based) step ...
  int64_t extra_spike_ns = 0;  // ... of this long (0: spike_ns)
  int64_t clock_skew_ns = 0;   // this rank's clock reads true time + skew
};

// Delays on every rank, none of them a straggler (ground truth: clean). Amplitude A =
// noise_frac x the nominal step (memcpy + forward + backward + one transfer + optimizer).
enum class Noise : uint8_t {
  kNone,
  kJitter,      // each step each rank's host starts U(0, A) late (OS jitter)
  kGc,          // 10% of rank-steps: a Pareto(1.5) pause from A/10, capped at A (Python GC)
  kContention,  // each rank-step an Exp(A/4) delay capped at A, and 20% of NCCL calls enter
                // Exp(A/8) late (capped at A): a CPU shared with DataLoader workers
};
const char* to_string(Noise n);

struct SimParams {
  std::vector<SimRank> ranks;
  int steps = 12;
  int buckets = 4;
  int64_t forward_ns = 5'000'000;
  int64_t segment_ns = 2'000'000;   // backward per bucket
  int64_t transfer_ns = 1'000'000;  // all-reduce once everyone is there
  int64_t optimizer_ns = 1'000'000;
  int64_t memcpy_ns = 500'000;  // input batch H2D: neither comm nor compute
  uint64_t bucket_bytes = 25u << 20;
  bool after_backward = false;      // all-reduces only after the whole backward (no overlap)
  int64_t jitter_ns = 0;            // uniform [0, jitter) on every kernel and stall
  bool host_only = false;           // no GPU records: calls only
  bool lite = false;                // collectives' GPU intervals only (CUDA events), no kernels
  bool step_ranges = false;         // emit ProfilerStep#N ranges
  int64_t launch_lead_ns = 40'000;  // host call entry precedes the kernel start by this
  uint64_t seed = 1;
  Noise noise = Noise::kNone;
  double noise_frac = 0;  // amplitude of `noise` as a share of the nominal step

  // Layout. false: one communicator of all ranks (DDP). true, "pair links" (needs >= 2 hosts):
  // per bucket two all-reduces, each on a cross-node communicator of one local rank index and
  // a group of adjacent nodes — partition A groups nodes (0,1), (2,3), ..., partition B
  // (1,2), (3,4), ..., (last,0); an odd node left over joins the previous group — each
  // communicator on its own stream (PyTorch gives every process group its own NCCL stream);
  // after the optimizer a 4-byte all-reduce of the loss on the global communicator that every
  // host syncs on. Communicators over different node sets are what localizes a slow NIC.
  bool pair_links = false;
  int slow_link_host = -1;     // host index whose NIC slows the transfers of its comms
  double link_slowdown = 1.0;  // ... by this factor
  int64_t loss_transfer_ns = 30'000;

  int64_t nominal_step_ns() const {
    return memcpy_ns + forward_ns + buckets * segment_ns + transfer_ns + optimizer_ns;
  }
};

struct SimJob {
  model::JobTrace job;
  model::MatchResult match;
  model::ClockAlignment clocks;  // undoes the skews
};

SimJob simulate(const SimParams& p);

// A params helper: n ranks, `per_host` ranks per host named node-a, node-b, ... (node-27,
// node-28, ... beyond 26 hosts).
SimParams sim_params(int nranks, int per_host);
// Pair links: the host indices that share a cross-node communicator with `host` (itself
// included), out of `hosts` hosts.
std::vector<int> hosts_sharing_links(int hosts, int host);
std::string host_name(int index);

}  // namespace ncclwatch::analysis::testing
