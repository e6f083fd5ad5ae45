// low-busbw: achieved bus bandwidth of the job's collectives. nccl-tests' definitions: algbw =
// size / time; busbw = algbw x factor, factor 2(n-1)/n for all-reduce, (n-1)/n for all-gather,
// reduce-scatter and all-to-all (whose size is the whole gathered buffer), 1 for broadcast and
// reduce. One instance's bus bandwidth: instance_busbw (busbw_table.h), the same measure as the
// report's bus_bandwidth table.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "model/func_names.h"
#include "model/median.h"
#include "topology/busbw_table.h"
#include "topology/checks.h"

namespace ncclwatch::topology {

double busbw_factor(model::Func f, int n) {
  if (n <= 0) return 0;
  double nn = n;
  switch (f) {
    case model::Func::kAllReduce:
      return 2.0 * (nn - 1) / nn;
    case model::Func::kAllGather:
    case model::Func::kReduceScatter:
    case model::Func::kAlltoAll:
      return (nn - 1) / nn;
    case model::Func::kBroadcast:
    case model::Func::kBcast:
    case model::Func::kReduce:
      return 1.0;
    default:
      return 0;
  }
}

double algbw_bytes(model::Func f, uint64_t call_bytes, int n) {
  // The shim records AllGather's sendcount and ReduceScatter's recvcount (one rank's share).
  if (f == model::Func::kAllGather || f == model::Func::kReduceScatter ||
      f == model::Func::kAlltoAll)
    return static_cast<double>(call_bytes) * n;
  return static_cast<double>(call_bytes);
}

namespace {

std::string gbs(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f GB/s", v);
  return b;
}

std::string size_text(double bytes) {
  char b[32];
  if (bytes >= 1 << 30)
    std::snprintf(b, sizeof b, "%.0f GiB", bytes / (1 << 30));
  else if (bytes >= 1 << 20)
    std::snprintf(b, sizeof b, "%.0f MiB", bytes / (1 << 20));
  else
    std::snprintf(b, sizeof b, "%.0f KiB", bytes / 1024);
  return b;
}

struct SizeClass {
  model::Func func = model::Func::kUnknown;
  int log2 = 0;  // size class: bytes in [2^log2, 2^(log2+1))
  int nranks = 0;
  std::vector<double> busbw;  // GB/s
};

constexpr double kMinBytes = kBandwidthBoundBytes;
constexpr double kFar = 3.0;  // "far below": a third or less

}  // namespace

void check_bus_bandwidth(const LogSet& logs, const std::vector<CommContext>& comms,
                         const model::JobTrace& job, const model::MatchResult& match,
                         std::vector<TopoFinding>& out) {
  for (const CommContext& c : comms) {
    if (c.job_comm == 0) continue;
    std::map<std::pair<int, int>, SizeClass> classes;  // (func, log2)
    for (const auto& inst : match.instances) {
      if (inst.comm_id != c.job_comm) continue;
      InstanceBusbw b;
      if (!instance_busbw(inst, job, match, b) || b.size < kMinBytes) continue;
      const int log2 = static_cast<int>(std::floor(std::log2(b.size)));
      SizeClass& sc = classes[{static_cast<int>(inst.func), log2}];
      sc.func = inst.func;
      sc.log2 = log2;
      sc.nranks = b.nranks;
      sc.busbw.push_back(b.gbs);
    }
    if (classes.empty()) continue;

    // What the links should give: NCCL's ring graph, nChannels x per-channel bandwidth.
    double expected = 0;
    std::string expected_evidence;
    if (c.group != nullptr)
      for (std::size_t m : c.group->members)
        for (const GraphSearch& g : logs.ranks[m].graphs) {
          if (g.pattern != 4 || g.nchannels <= 0) continue;
          double bw = (c.nnodes > 1 ? g.bw_inter : g.bw_intra) * g.nchannels;
          if (bw > expected) {
            expected = bw;
            expected_evidence = logs.ranks[m].host + ": " + g.evidence;
          }
        }

    for (const auto& [key, sc] : classes) {
      double med = model::median(sc.busbw);
      double best_in_class = *std::max_element(sc.busbw.begin(), sc.busbw.end());
      // Best median of the same function at this size or smaller: larger messages should not be
      // slower.
      double best_smaller = 0;
      int best_log2 = 0;
      for (const auto& [k2, other] : classes)
        if (other.func == sc.func && other.log2 < sc.log2) {
          double m2 = model::median(other.busbw);
          if (m2 > best_smaller) best_smaller = m2, best_log2 = other.log2;
        }
      std::string what = std::string(model::func_name(sc.func)) + " of " +
                         size_text(std::ldexp(1.0, sc.log2)) + "-" +
                         size_text(std::ldexp(1.0, sc.log2 + 1)) + " (" +
                         std::to_string(sc.busbw.size()) + " calls)";
      std::string msg, evidence;
      if (best_smaller > kFar * med) {
        msg = what + ": median bus bandwidth " + gbs(med) + ", while smaller ones (" +
              size_text(std::ldexp(1.0, best_log2)) + ") reached " + gbs(best_smaller);
        evidence = "measured: busbw median " + gbs(med) + " vs " + gbs(best_smaller);
      } else if (sc.busbw.size() >= 5 && best_in_class > kFar * med) {
        msg = what + ": median bus bandwidth " + gbs(med) +
              ", a third or less of the best call of that size (" + gbs(best_in_class) + ")";
        evidence = "measured: busbw median " + gbs(med) + ", best " + gbs(best_in_class);
      } else if (expected > 0 && sc.log2 >= 26 && expected > 4.0 * med) {
        msg = what + ": median bus bandwidth " + gbs(med) +
              ", under a quarter of what NCCL's ring graph gives (" + gbs(expected) + ")";
        evidence = expected_evidence;
      } else {
        continue;
      }
      TopoFinding f;
      f.kind = "low-busbw";
      f.severity = model::Severity::kWarning;
      f.comm = c.name;
      for (const auto& [r, h] : c.job_host_of) f.ranks.push_back(r);
      f.message = msg;
      f.evidence = evidence;
      f.advice =
          "something else shares the links or the GPUs (other jobs, overlapping compute starving "
          "NCCL's SMs, "
          "a slow or degraded link): compare with nccl-tests on the same nodes, check the NIC and "
          "NVLink "
          "counters, and the transport findings above";
      out.push_back(std::move(f));
    }
  }
}

}  // namespace ncclwatch::topology
