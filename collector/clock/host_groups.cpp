#include "clock/host_groups.h"

#include "model/median.h"

#include <algorithm>
#include <unordered_map>

namespace ncclwatch::clock {

HostGroups group_hosts(const model::JobTrace& job) {
  HostGroups g;
  std::unordered_map<std::string, uint32_t> index;
  std::vector<std::vector<int64_t>> walls;
  for (std::size_t r = 0; r < job.ranks.size(); ++r) {
    const model::RankInfo& info = job.ranks[r].info;
    std::string name = info.host.empty() ? "?rank" + std::to_string(r) : info.host;
    auto [it, fresh] = index.try_emplace(name, static_cast<uint32_t>(g.names.size()));
    if (fresh) {
      g.names.push_back(name);
      walls.emplace_back();
    }
    g.host_of_rank.push_back(it->second);
    // 0 means the reader found no clock anchor (a Kineto trace, a file cut before the first one).
    if (info.wall_offset_ns != 0) walls[it->second].push_back(info.wall_offset_ns);
  }
  for (auto& w : walls) {
    g.wall_known.push_back(!w.empty());
    if (w.empty()) {
      g.wall_offset.push_back(0);
      continue;
    }
    g.wall_offset.push_back(model::median_in_place(std::span<int64_t>(w)));
  }
  return g;
}

}  // namespace ncclwatch::clock
