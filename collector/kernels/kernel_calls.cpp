#include "kernels/kernel_calls.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "kernels/comm_kernel_table.h"
#include "ncclwatch/fnv1a.h"

namespace ncclwatch::kernels {
namespace {

using model::CallEvent;
using model::CommFamily;
using model::KernelEvent;
using model::RankTrace;

struct Candidate {
  uint32_t kernel;
  format::Func func;
  int64_t order;  // launch enter, else GPU start
  int64_t enter;
  int64_t exit;
};

// Sorts calls by enter time and points every kernel's `call` at its call's new index.
void sort_calls(RankTrace& t) {
  std::vector<uint32_t> order(t.calls.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&t](uint32_t a, uint32_t b) {
    return t.calls[a].enter_ns < t.calls[b].enter_ns;
  });
  std::vector<int32_t> new_index(t.calls.size());
  std::vector<CallEvent> sorted;
  sorted.reserve(t.calls.size());
  for (uint32_t i = 0; i < order.size(); ++i) {
    new_index[order[i]] = static_cast<int32_t>(i);
    sorted.push_back(t.calls[order[i]]);
  }
  t.calls = std::move(sorted);
  for (KernelEvent& k : t.kernels)
    if (k.call >= 0) k.call = new_index[static_cast<std::size_t>(k.call)];
}

}  // namespace

uint64_t kernel_comm_id(CommFamily family, uint32_t ordinal) {
  uint64_t h = format::kFnv1aOffset;
  for (char c : std::string_view("kernel-order:"))
    h = format::fnv1a64_byte(h, static_cast<unsigned char>(c));
  h = format::fnv1a64_byte(h, static_cast<unsigned char>(family));
  for (int k = 0; k < 4; ++k)
    h = format::fnv1a64_byte(h, static_cast<unsigned char>(ordinal >> (8 * k)));
  return h == 0 ? 1 : h;
}

KernelCallStats add_kernel_calls(RankTrace& t, const std::vector<KernelCallHint>* hints) {
  if (hints != nullptr && hints->size() != t.kernels.size()) hints = nullptr;
  KernelCallStats stats;
  // Streams (per family) on which a kernel already has its call: left alone.
  std::set<std::pair<CommFamily, uint32_t>> linked;
  for (const KernelEvent& k : t.kernels)
    if (k.nccl && k.call >= 0) linked.emplace(k.family, k.stream);
  std::unordered_map<uint32_t, std::size_t> launch_of;  // correlation -> launch
  for (std::size_t i = 0; i < t.launches.size(); ++i)
    if (t.launches[i].correlation != 0) launch_of.emplace(t.launches[i].correlation, i);
  std::unordered_map<uint32_t, format::Func> func_of_name;  // classify each name once

  std::map<std::pair<CommFamily, uint32_t>, std::vector<Candidate>> by_stream;
  for (uint32_t i = 0; i < t.kernels.size(); ++i) {
    const KernelEvent& k = t.kernels[i];
    if (!k.nccl || k.call >= 0 || k.kind != format::ActivityKind::kKernel) continue;
    if (linked.count({k.family, k.stream}) != 0) continue;
    auto [it, fresh] = func_of_name.try_emplace(k.name, format::Func::kUnknown);
    if (fresh) it->second = classify_kernel(t.name_of(k.name)).func;
    const KernelCallHint* hint = hints != nullptr ? &(*hints)[i] : nullptr;
    const format::Func func =
        format::is_collective(it->second) || hint == nullptr ? it->second : hint->func;
    if (!format::is_collective(func)) {
      ++stats.no_collective;
      continue;
    }
    Candidate c{i, func, k.start_ns, k.start_ns, k.start_ns};
    if (auto l = launch_of.find(k.correlation); k.correlation != 0 && l != launch_of.end()) {
      c.order = c.enter = t.launches[l->second].enter_ns;
      c.exit = t.launches[l->second].exit_ns;
    }
    if (hint != nullptr && hint->has_host) {
      c.order = c.enter = hint->enter_ns;
      c.exit = hint->exit_ns;
    }
    by_stream[{k.family, k.stream}].push_back(c);
  }
  if (by_stream.empty()) return stats;

  // Stream ordinals per family, by each stream's first launch.
  std::map<CommFamily, std::vector<std::pair<int64_t, uint32_t>>> firsts;
  for (auto& [key, list] : by_stream) {
    std::stable_sort(list.begin(), list.end(),
                     [](const Candidate& a, const Candidate& b) { return a.order < b.order; });
    firsts[key.first].emplace_back(list.front().order, key.second);
  }
  for (auto& [family, streams] : firsts) {
    std::sort(streams.begin(), streams.end());
    for (uint32_t ordinal = 0; ordinal < streams.size(); ++ordinal) {
      const auto& list = by_stream.at({family, streams[ordinal].second});
      model::CommInfo comm;
      comm.id = kernel_comm_id(family, ordinal);
      comm.name = fmt::format("{} kernels, stream #{}", model::comm_family_name(family), ordinal);
      comm.nranks = t.info.world_size;
      comm.rank = t.info.rank;
      comm.created_ns = list.front().enter;
      comm.from_kernels = true;
      t.comms.push_back(comm);
      ++stats.comms;
      uint64_t seq = 0;
      for (const Candidate& c : list) {
        KernelEvent& k = t.kernels[c.kernel];
        CallEvent call;
        call.enter_ns = c.enter;
        call.exit_ns = std::max(c.exit, c.enter);
        call.comm_id = comm.id;
        call.seq = seq++;
        call.stream = k.stream;
        call.func = c.func;
        call.kernel = static_cast<int32_t>(c.kernel);
        call.gpu_start_ns = k.start_ns;
        call.gpu_end_ns = k.end_ns;
        k.call = static_cast<int32_t>(t.calls.size());
        t.calls.push_back(call);
        ++stats.calls;
      }
    }
  }
  sort_calls(t);
  return stats;
}

}  // namespace ncclwatch::kernels
