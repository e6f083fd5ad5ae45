#include "timeline/gpu_linker.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <unordered_map>
#include <vector>

namespace ncclwatch::timeline {
namespace {

using format::Func;
using model::CallEvent;
using model::KernelEvent;
using model::RankTrace;

// NCCL's own kernels (a communication kernel without a family is NCCL's, as every reader
// flagged them before the other families were known).
bool runs_nccl_calls(const KernelEvent& k) {
  return k.nccl && (k.family == model::CommFamily::kNccl || k.family == model::CommFamily::kNone);
}

bool wants_gpu(const CallEvent& c) {
  return format::is_collective(c.func) || format::is_p2p(c.func);
}

uint64_t call_key(uint64_t comm, uint64_t seq) {
  return comm * 0x9E3779B97F4A7C15ull ^ (seq & 0xffffffffull);
}

// Calls by (comm, low 32 bits of seq); several when p2p seqs repeat across peers.
class CallIndex {
 public:
  explicit CallIndex(const RankTrace& t) : t_(t) {
    for (std::size_t i = 0; i < t.calls.size(); ++i) {
      if (wants_gpu(t.calls[i])) by_key_[call_key(t.calls[i].comm_id, t.calls[i].seq)].push_back(i);
      if (t.calls[i].group_id != 0) by_group_[t.calls[i].group_id].push_back(i);
    }
  }
  // The call (comm, seq[, func]) best matching a launch at host time t: the one whose
  // [enter, exit] contains t, else the nearest.
  int find(uint64_t comm, uint32_t seq, Func func, int64_t t) const {
    auto it = by_key_.find(call_key(comm, seq));
    if (it == by_key_.end()) return -1;
    int best = -1;
    int64_t best_distance = std::numeric_limits<int64_t>::max();
    for (std::size_t i : it->second) {
      const CallEvent& c = t_.calls[i];
      if (c.comm_id != comm || (c.seq & 0xffffffffull) != seq) continue;
      if (func != Func::kUnknown && func != Func::kGroupEnd && c.func != func) continue;
      int64_t d = t < c.enter_ns ? c.enter_ns - t : (t > c.exit_ns ? t - c.exit_ns : 0);
      if (d < best_distance) {
        best_distance = d;
        best = static_cast<int>(i);
      }
    }
    return best;
  }
  const std::vector<std::size_t>* group(uint32_t id) const {
    auto it = by_group_.find(id);
    return it == by_group_.end() ? nullptr : &it->second;
  }

 private:
  const RankTrace& t_;
  std::unordered_map<uint64_t, std::vector<std::size_t>> by_key_;
  std::unordered_map<uint32_t, std::vector<std::size_t>> by_group_;
};

void widen(CallEvent& c, int64_t start, int64_t end) {
  if (c.gpu_start_ns == 0 && c.gpu_end_ns == 0) {
    c.gpu_start_ns = start;
    c.gpu_end_ns = end;
  } else {
    c.gpu_start_ns = std::min(c.gpu_start_ns, start);
    c.gpu_end_ns = std::max(c.gpu_end_ns, end);
  }
}

void attach(RankTrace& t, std::size_t call, std::size_t kernel) {
  CallEvent& c = t.calls[call];
  KernelEvent& k = t.kernels[kernel];
  if (c.kernel < 0) c.kernel = static_cast<int32_t>(kernel);
  widen(c, k.start_ns, k.end_ns);
  if (k.call < 0) k.call = static_cast<int32_t>(call);
}

// The four ways a call gets its GPU time, tried in this order on what is still unlinked.
class GpuLinker {
 public:
  explicit GpuLinker(RankTrace& t)
      : t_(t),
        calls_(t),
        preset_(t.calls.size()),
        linked_(t.calls.size(), false),
        kernel_claimed_(t.kernels.size(), false) {
    for (std::size_t i = 0; i < t.calls.size(); ++i)
      preset_[i] = t.calls[i].kernel >= 0 || t.calls[i].has_gpu();
    by_correlation_.reserve(t.kernels.size());
    for (std::size_t i = 0; i < t.kernels.size(); ++i) {
      if (t.kernels[i].correlation != 0) by_correlation_.emplace_back(t.kernels[i].correlation, i);
    }
    // By correlation, then kernel index: a repeated id finds its first kernel, as before.
    if (!std::is_sorted(by_correlation_.begin(), by_correlation_.end()))
      std::sort(by_correlation_.begin(), by_correlation_.end());
  }

  LinkStats run() {
    link_by_correlation();
    time_by_events();
    pair_by_stream_order();
    count_unlinked();
    return stats_;
  }

 private:
  // 1. Captured calls and correlation links (launch link -> CUPTI kernel record).
  void link_by_correlation() {
    for (const auto& l : t_.links) {
      auto func = static_cast<Func>(l.prefix.u8a);
      if (l.correlation == 0) {
        if (l.prefix.flags & format::kCallGraphCaptured) {
          int c = calls_.find(l.comm_id, l.seq, func, l.t_ns);
          if (c >= 0 && !(t_.calls[c].flags & format::kCallGraphCaptured)) {
            t_.calls[c].flags |= format::kCallGraphCaptured;
            ++stats_.captured;
          }
        }
        continue;
      }
      const auto kit = std::lower_bound(by_correlation_.begin(), by_correlation_.end(),
                                        std::pair<uint32_t, std::size_t>{l.correlation, 0});
      if (kit == by_correlation_.end() || kit->first != l.correlation) continue;
      std::size_t k = kit->second;
      kernel_claimed_[k] = true;
      if (l.stream != 0) stream_of_cupti_id_.emplace(t_.kernels[k].stream, l.stream);
      if (l.comm_id != 0) {
        int c = calls_.find(l.comm_id, l.seq, func, l.t_ns);
        if (c >= 0 && !preset_[c]) {
          attach(t_, static_cast<std::size_t>(c), k);
          linked_[c] = true;
        }
      } else if (l.group_id != 0) {
        if (const auto* members = calls_.group(l.group_id)) {
          for (std::size_t c : *members) {
            if (preset_[c] || !wants_gpu(t_.calls[c])) continue;
            if (l.stream != 0 && t_.calls[c].stream != model::fold_stream(l.stream)) continue;
            attach(t_, c, k);
            linked_[c] = true;
          }
        }
      } else if (runs_nccl_calls(t_.kernels[k])) {
        orphans_[l.stream].push_back(k);
      }
    }
    for (std::size_t i = 0; i < t_.calls.size(); ++i) stats_.by_correlation += linked_[i];
  }

  // 2. CUDA-event intervals (lite mode).
  void time_by_events() {
    for (const auto& g : t_.coll_gpu) {
      auto func = static_cast<Func>(g.prefix.u8a);
      auto time = [&](std::size_t c) {
        if (preset_[c] || linked_[c]) return;
        widen(t_.calls[c], g.start_ns, g.end_ns);
        linked_[c] = true;
        ++stats_.by_events;
      };
      if (func != Func::kGroupEnd && g.comm_id != 0) {
        int c = calls_.find(g.comm_id, g.seq, func, g.start_ns);
        if (c >= 0) time(static_cast<std::size_t>(c));
      } else if (const auto* members = calls_.group(g.group_id)) {
        for (std::size_t c : *members) {
          if (wants_gpu(t_.calls[c]) &&
              (g.stream == 0 || t_.calls[c].stream == model::fold_stream(g.stream)))
            time(c);
        }
      }
    }
  }

  // 3. Order on the stream: orphan launches plus NCCL kernels nobody linked, on a stream we
  // can name, paired in order with the calls on that stream still without GPU time.
  void pair_by_stream_order() {
    for (std::size_t k = 0; k < t_.kernels.size(); ++k) {
      // Only NCCL's own kernels run NCCL calls: a DeepEP or custom all-reduce kernel on the
      // same stream is communication, but no NCCL call's.
      if (kernel_claimed_[k] || !runs_nccl_calls(t_.kernels[k])) continue;
      auto s = stream_of_cupti_id_.find(t_.kernels[k].stream);
      if (s != stream_of_cupti_id_.end()) orphans_[s->second].push_back(k);
    }
    for (auto& [stream, kernels] : orphans_) {
      std::sort(kernels.begin(), kernels.end(), [&](std::size_t a, std::size_t b) {
        return t_.kernels[a].start_ns < t_.kernels[b].start_ns;
      });
      kernels.erase(std::unique(kernels.begin(), kernels.end()), kernels.end());
      std::vector<std::size_t> waiting;
      for (std::size_t c = 0; c < t_.calls.size(); ++c) {
        const CallEvent& call = t_.calls[c];
        if (preset_[c] || linked_[c] || !wants_gpu(call) ||
            call.stream != model::fold_stream(stream))
          continue;
        if (call.flags & (format::kCallNoKernel | format::kCallGraphCaptured)) continue;
        waiting.push_back(c);
      }
      std::sort(waiting.begin(), waiting.end(), [&](std::size_t a, std::size_t b) {
        return t_.calls[a].enter_ns < t_.calls[b].enter_ns;
      });
      std::size_t next = 0;
      for (std::size_t c : waiting) {
        while (next < kernels.size() && t_.kernels[kernels[next]].start_ns < t_.calls[c].enter_ns)
          ++next;
        if (next == kernels.size()) break;
        attach(t_, c, kernels[next++]);
        linked_[c] = true;
        ++stats_.by_order;
      }
    }
  }

  void count_unlinked() {
    for (std::size_t c = 0; c < t_.calls.size(); ++c) {
      if (wants_gpu(t_.calls[c]) && !t_.calls[c].has_gpu()) ++stats_.calls_without_gpu;
    }
    for (const auto& k : t_.kernels) {
      if (runs_nccl_calls(k) && k.call < 0) ++stats_.nccl_kernels_without_call;
    }
  }

  RankTrace& t_;
  CallIndex calls_;
  std::vector<bool> preset_;  // GPU time from the trace itself
  std::vector<bool> linked_;  // GPU time from this linker
  // Kernels by CUPTI correlation id, sorted (a hash map's node per kernel was a tenth of the
  // reduce's time).
  std::vector<std::pair<uint32_t, std::size_t>> by_correlation_;
  // CUPTI stream id <-> cudaStream_t, learned from any link whose kernel is known.
  std::unordered_map<uint32_t, uint64_t> stream_of_cupti_id_;
  std::vector<bool> kernel_claimed_;
  std::map<uint64_t, std::vector<std::size_t>> orphans_;  // by cudaStream_t, launched outside calls
  LinkStats stats_;
};

}  // namespace

LinkStats link_calls_to_gpu(RankTrace& t) {
  return GpuLinker(t).run();
}

void link_recorded_gpu_work(model::RankTrace& trace) {
  if (trace.kernels.empty() && trace.links.empty() && trace.coll_gpu.empty()) return;
  link_calls_to_gpu(trace);
}

}  // namespace ncclwatch::timeline
