#include "kineto/hta_kernel_filter.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace ncclwatch::kineto {

namespace {

int64_t ceil_us(int64_t ns) {
  return ns >= 0 ? (ns + 999) / 1000 * 1000 : -((-ns) / 1000 * 1000);
}
int64_t floor_us(int64_t ns) {
  return ns >= 0 ? ns / 1000 * 1000 : -((-ns + 999) / 1000 * 1000);
}

// HTA only rounds when pandas read the timestamps as floats, i.e. some are fractional µs.
bool has_sub_us(const model::RankTrace& t) {
  for (const auto& k : t.kernels)
    if (k.start_ns % 1000 != 0 || k.end_ns % 1000 != 0) return true;
  for (const auto& l : t.launches)
    if (l.enter_ns % 1000 != 0) return true;
  return false;
}

}  // namespace

model::RankTrace with_hta_kernel_selection(const model::RankTrace& rank, HtaSelection how) {
  const bool round = how.round_to_us && has_sub_us(rank);
  auto start_of = [round](int64_t ns) { return round ? ceil_us(ns) : ns; };
  auto end_of = [round](int64_t ns) { return round ? floor_us(ns) : ns; };
  model::RankTrace out;
  out.info = rank.info;
  out.names = rank.names;
  out.ranges = rank.ranges;
  out.comms = rank.comms;
  out.launches = rank.launches;

  std::set<uint32_t> step_names;
  int64_t last_start = INT64_MIN;
  int64_t last_end = INT64_MIN;
  for (const auto& r : rank.ranges) {
    if (rank.name_of(r.name).find("ProfilerStep") == std::string::npos) continue;
    step_names.insert(r.name);
    last_start = std::max(last_start, start_of(r.start_ns));
    last_end = std::max(last_end, end_of(r.end_ns));
  }
  auto keep_kernel = [&](const model::KernelEvent& k) {
    model::KernelEvent c = k;
    c.call = -1;
    c.start_ns = start_of(k.start_ns);
    c.end_ns = end_of(k.end_ns);
    if (c.end_ns > c.start_ns || (!round && c.end_ns == c.start_ns)) out.kernels.push_back(c);
  };
  if (step_names.size() < 2) {  // HTA warns and keeps everything
    for (const auto& k : rank.kernels) keep_kernel(k);
    return out;
  }
  std::unordered_map<uint32_t, int64_t> launch_at;  // correlation -> earliest launch start
  for (const auto& l : rank.launches) {
    auto [it, fresh] = launch_at.emplace(l.correlation, start_of(l.enter_ns));
    if (!fresh) it->second = std::min(it->second, start_of(l.enter_ns));
  }
  for (const auto& k : rank.kernels) {
    auto it = launch_at.find(k.correlation);
    if (it == launch_at.end()) continue;
    const bool keep =
        how.include_last_profiler_step ? it->second <= last_end : it->second < last_start;
    if (keep) keep_kernel(k);
  }
  return out;
}

}  // namespace ncclwatch::kineto
