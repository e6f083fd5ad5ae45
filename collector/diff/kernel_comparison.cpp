// Compute kernels whose time per step changed most, by normalized name (kernels[] of each
// run). A name missing from one run's table counts as 0 there only when that table lists every
// kernel the run had; otherwise it may just have fallen below the table's cut and is skipped.
// NCCL kernels are left to the communication figures (their time is exposed + hidden comm).
#include <algorithm>
#include <cmath>
#include <map>

#include "diff/comparisons.h"

namespace ncclwatch::diff {
namespace {

constexpr std::size_t kMaxKernelRows = 10;

}  // namespace

void compare_kernels(DiffResult& r) {
  if (!r.base.has_kernels || !r.now.has_kernels || r.compute_differs) return;
  std::map<std::string, const KernelFigures*> base, now;
  for (const KernelFigures& k : r.base.kernels) {
    if (!k.nccl) base[k.name] = &k;
  }
  for (const KernelFigures& k : r.now.kernels) {
    if (!k.nccl) now[k.name] = &k;
  }
  std::vector<Compared> all;
  auto add = [&](const std::string& name, const KernelFigures* b, const KernelFigures* n) {
    if ((!b && !r.base.kernels_complete) || (!n && !r.now.kernels_complete)) return;
    Compared c;
    c.key = "kernel:" + name;
    c.label = name;
    c.unit = "us";
    c.base = b ? b->us_per_step : Figure{};
    c.now = n ? n->us_per_step : Figure{};
    c.floor = time_floor_us(r);
    c.judge();
    all.push_back(std::move(c));
  };
  for (const auto& [name, b] : base) {
    const auto it = now.find(name);
    add(name, b, it == now.end() ? nullptr : it->second);
  }
  for (const auto& [name, n] : now) {
    if (!base.count(name)) add(name, nullptr, n);
  }
  std::stable_sort(all.begin(), all.end(), [](const Compared& a, const Compared& b) {
    return std::fabs(a.delta()) > std::fabs(b.delta());
  });
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i < kMaxKernelRows || all[i].significant) r.kernels.push_back(std::move(all[i]));
  }
}

}  // namespace ncclwatch::diff
