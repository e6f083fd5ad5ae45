#include "topology/busbw_table.h"

#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include "model/func_names.h"
#include "model/median.h"
#include "model/robust_spread.h"
#include "topology/checks.h"

namespace ncclwatch::topology {
namespace {

// Whether a communicator's members sit on more than one host (cached per comm id).
class CrossNode {
 public:
  explicit CrossNode(const model::JobTrace& job, const model::MatchResult& match)
      : job_(job), match_(match) {}
  bool operator()(const model::CollectiveInstance& inst) {
    const auto [it, inserted] = known_.try_emplace(inst.comm_id, false);
    if (!inserted) return it->second;
    const std::string* first = nullptr;
    for (uint32_t k = 0; k < inst.nmembers; ++k) {
      const std::size_t m = std::size_t{inst.first_member} + k;
      if (m >= match_.members.size() || match_.members[m].rank_index >= job_.ranks.size()) break;
      const std::string& host = job_.ranks[match_.members[m].rank_index].info.host;
      if (first == nullptr) first = &host;
      if (host != *first) return it->second = true;
    }
    return false;
  }

 private:
  const model::JobTrace& job_;
  const model::MatchResult& match_;
  std::unordered_map<uint64_t, bool> known_;
};

double standard_error(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  const double n = static_cast<double>(v.size()), mean = sum / n;
  for (double x : v) sq += (x - mean) * (x - mean);
  // The median's standard error is ~1.25 x the mean's for normal data.
  return 1.2533 * std::sqrt(sq / (n - 1)) / std::sqrt(n);
}

}  // namespace

bool instance_busbw(const model::CollectiveInstance& inst, const model::JobTrace& job,
                    const model::MatchResult& match, InstanceBusbw& out) {
  if (inst.nmembers < 2) return false;
  const int n = static_cast<int>(inst.expected > 0 ? inst.expected : inst.nmembers);
  const double factor = busbw_factor(inst.func, n);
  if (factor <= 0) return false;
  int64_t best_ns = 0;
  for (uint32_t k = 0; k < inst.nmembers; ++k) {
    const std::size_t m = std::size_t{inst.first_member} + k;
    if (m >= match.members.size()) break;
    const model::InstanceMember& mem = match.members[m];
    if (mem.rank_index >= job.ranks.size()) continue;
    const auto& calls = job.ranks[mem.rank_index].calls;
    if (mem.call_index >= calls.size() || !calls[mem.call_index].has_gpu()) continue;
    const int64_t d = calls[mem.call_index].gpu_end_ns - calls[mem.call_index].gpu_start_ns;
    if (d > 0 && (best_ns == 0 || d < best_ns)) best_ns = d;
  }
  if (best_ns <= 0) return false;
  out.nranks = n;
  out.size = algbw_bytes(inst.func, inst.bytes, n);
  out.gbs = out.size / static_cast<double>(best_ns) * factor;  // bytes/ns == GB/s
  return out.size > 0;
}

void add_busbw_table(const model::JobTrace& job, const model::MatchResult& match,
                     model::Report& report) {
  using Key = std::tuple<int, int, bool>;  // func, log2 of the size, cross-node
  std::map<Key, std::vector<double>> classes;
  std::map<Key, double> sizes;  // sum of the instances' sizes
  CrossNode cross(job, match);
  for (const model::CollectiveInstance& inst : match.instances) {
    InstanceBusbw b;
    if (!instance_busbw(inst, job, match, b)) continue;
    const int log2 = static_cast<int>(std::floor(std::log2(b.size)));
    const Key key{static_cast<int>(inst.func), log2, cross(inst)};
    classes[key].push_back(b.gbs);
    sizes[key] += b.size;
  }
  nlohmann::json rows = nlohmann::json::array();
  for (auto& [key, v] : classes) {
    const auto [func, log2, cross_node] = key;
    const double med = model::median(v);
    double best = 0;
    for (double x : v) best = std::max(best, x);
    rows.push_back({{"op", model::func_name(static_cast<model::Func>(func))},
                    {"size_min", std::ldexp(1.0, log2)},
                    {"size_max", std::ldexp(1.0, log2 + 1)},
                    {"scope", cross_node ? "cross-node" : "intra-node"},
                    {"calls", v.size()},
                    {"mean_bytes", sizes[key] / static_cast<double>(v.size())},
                    {"busbw_gbs", med},
                    {"spread_gbs", model::robust_spread(v)},
                    {"sem_gbs", standard_error(v)},
                    {"best_gbs", best},
                    {"latency_bound", std::ldexp(1.0, log2 + 1) <= kBandwidthBoundBytes}});
  }
  report.json["bus_bandwidth"] = std::move(rows);
}

}  // namespace ncclwatch::topology
