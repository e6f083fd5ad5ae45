#include "analysis/packed_activity.h"

namespace ncclwatch::analysis {

IntervalSet busy_of(const IntervalSet& comm, const IntervalSet& compute, const IntervalSet& extra,
                    const IntervalSet& missing) {
  // (U − (U − busy)) ∪ (busy − U) = (U ∩ busy) ∪ (busy − U) = busy, U = comm ∪ compute.
  IntervalSet kernels = comm.unite(compute);
  if (!missing.empty()) kernels = kernels.subtract(missing);
  return extra.empty() ? kernels : kernels.unite(extra);
}

PackedActivity PackedActivity::pack(const RankActivity& a) {
  PackedActivity p;
  const IntervalSet kernels = a.comm.unite(a.compute);
  p.comm = PackedIntervalSet(a.comm);
  p.compute = PackedIntervalSet(a.compute);
  p.busy_extra = PackedIntervalSet(a.busy.subtract(kernels));
  p.busy_missing = PackedIntervalSet(kernels.subtract(a.busy));
  p.source = a.source;
  p.has_compute = a.has_compute;
  p.first_ns = a.first_ns;
  p.last_ns = a.last_ns;
  return p;
}

namespace {

RankActivity with_sets(const PackedActivity& p, IntervalSet comm, IntervalSet compute,
                       const IntervalSet& extra, const IntervalSet& missing) {
  RankActivity a;
  a.busy = busy_of(comm, compute, extra, missing);
  a.comm = std::move(comm);
  a.compute = std::move(compute);
  a.source = p.source;
  a.has_compute = p.has_compute;
  a.first_ns = p.first_ns;
  a.last_ns = p.last_ns;
  return a;
}

}  // namespace

RankActivity PackedActivity::unpack() const {
  return with_sets(*this, comm.unpack(), compute.unpack(), busy_extra.unpack(),
                   busy_missing.unpack());
}

RankActivity PackedActivity::clip(int64_t from, int64_t to) const {
  // Clipping distributes over union and difference: the clipped busy is busy's clip.
  return with_sets(*this, comm.clip(from, to), compute.clip(from, to), busy_extra.clip(from, to),
                   busy_missing.clip(from, to));
}

std::size_t PackedActivity::heap_bytes() const {
  return comm.heap_bytes() + compute.heap_bytes() + busy_extra.heap_bytes() +
         busy_missing.heap_bytes();
}

}  // namespace ncclwatch::analysis
