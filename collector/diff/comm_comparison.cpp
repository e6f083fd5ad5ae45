// Overlap per gradient bucket (buckets[]) and bus bandwidth per op, size class and scope
// (bus_bandwidth[]). Communicator ids are random per run, so buckets are matched by their place
// in the step and their size; several communicators with the same bucket (one per rail or
// pipeline stage) are merged into one row, weighted by their occurrences.
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "analysis/units.h"
#include "diff/comparisons.h"

namespace ncclwatch::diff {
namespace {

using BucketKey = std::pair<std::size_t, double>;  // ordinal, bytes

struct MergedBucket {
  double n = 0;
  double overlap = 0, overlap_sd = 0, exposed = 0, exposed_sd = 0;
};

std::map<BucketKey, MergedBucket> merge(const std::vector<BucketFigures>& list) {
  std::map<BucketKey, MergedBucket> out;
  for (const BucketFigures& b : list) {
    MergedBucket& m = out[{b.ordinal, b.bytes}];
    m.n += b.occurrences;
    m.overlap += b.overlap_pct.value * b.occurrences;
    m.exposed += b.exposed_us.value * b.occurrences;
    m.overlap_sd = std::max(m.overlap_sd, b.overlap_pct.spread);
    m.exposed_sd = std::max(m.exposed_sd, b.exposed_us.spread);
  }
  for (auto& [key, m] : out) {
    m.overlap /= m.n;
    m.exposed /= m.n;
  }
  return out;
}

void buckets(DiffResult& r) {
  if (r.base.buckets.empty() || r.now.buckets.empty()) return;
  const auto base = merge(r.base.buckets), now = merge(r.now.buckets);
  for (const auto& [key, b] : base) {
    const auto it = now.find(key);
    if (it == now.end()) continue;
    const MergedBucket& n = it->second;
    const std::string what = fmt::format("bucket #{} ({})", key.first,
                                         analysis::human_bytes(static_cast<uint64_t>(key.second)));
    Compared overlap;
    overlap.key = fmt::format("bucket_overlap:{}:{:.0f}", key.first, key.second);
    overlap.label = what + " overlap";
    overlap.unit = "pct";
    overlap.base = Figure{b.overlap, b.overlap_sd, b.overlap_sd / std::sqrt(b.n)};
    overlap.now = Figure{n.overlap, n.overlap_sd, n.overlap_sd / std::sqrt(n.n)};
    overlap.floor = 5.0;  // percentage points
    overlap.judge();
    Compared exposed;
    exposed.key = fmt::format("bucket_exposed:{}:{:.0f}", key.first, key.second);
    exposed.label = what + " exposed";
    exposed.unit = "us";
    exposed.base = Figure{b.exposed, b.exposed_sd, b.exposed_sd / std::sqrt(b.n)};
    exposed.now = Figure{n.exposed, n.exposed_sd, n.exposed_sd / std::sqrt(n.n)};
    exposed.floor = time_floor_us(r);
    exposed.judge();
    r.buckets.push_back(std::move(overlap));
    r.buckets.push_back(std::move(exposed));
  }
}

std::string size_class(double lo, double hi) {
  return fmt::format("{}-{}", analysis::human_bytes(static_cast<uint64_t>(lo)),
                     analysis::human_bytes(static_cast<uint64_t>(hi)));
}

void bus_bandwidth(DiffResult& r) {
  using Key = std::tuple<std::string, double, std::string>;  // op, size_min, scope
  std::map<Key, const BusbwFigures*> base;
  for (const BusbwFigures& b : r.base.busbw) base[{b.op, b.size_min, b.scope}] = &b;
  for (const BusbwFigures& n : r.now.busbw) {
    const auto it = base.find({n.op, n.size_min, n.scope});
    if (it == base.end() || n.latency_bound || it->second->latency_bound) continue;
    Compared c;
    c.key = busbw_key(n);
    c.label = fmt::format("{} {} {} busbw", n.op, size_class(n.size_min, n.size_max), n.scope);
    c.unit = "gbs";
    c.base = it->second->busbw_gbs;
    c.now = n.busbw_gbs;
    c.floor = 0.05 * std::fabs(c.base->value);  // a 5 % change
    c.judge();
    r.busbw.push_back(std::move(c));
  }
}

}  // namespace

std::string busbw_key(const BusbwFigures& b) {
  return fmt::format("busbw:{}:{:.0f}:{}", b.op, b.size_min, b.scope);
}

void compare_communication(DiffResult& r) {
  buckets(r);
  bus_bandwidth(r);
}

}  // namespace ncclwatch::diff
