// The GPU records' digest (analysis/rank_digest.h) and the collector's part of them
// (model/dropped_gpu_records.h) in a node file. Interval sets are written as gaps and lengths
// (a few bytes a span instead of 16); the reader checks they are sorted and disjoint.
#pragma once

#include "analysis/rank_digest.h"
#include "model/dropped_gpu_records.h"
#include "reduce/byte_codec.h"

namespace ncclwatch::reduce {

void write_intervals(ByteWriter& w, const std::vector<analysis::Interval>& spans);
// Any intervals in order (windows may touch or repeat); false when the bytes are bad.
bool read_intervals(ByteReader& r, std::vector<analysis::Interval>& out);

// The coarsest grid compute spans may be written on (ReduceOptions::compute_resolution_ns).
inline constexpr int64_t kMaxComputeResolutionNs = 1'000'000'000;

// `compute_resolution_ns` > 1: the compute spans' edges rounded to that grid (lossy: see
// ReduceOptions); 1: exact. The reader says which.
void write_digest(ByteWriter& w, const analysis::RankDigest& d, int64_t compute_resolution_ns);
bool read_digest(ByteReader& r, analysis::RankDigest& d, int64_t& compute_resolution_ns);

void write_dropped(ByteWriter& w, const model::DroppedGpuRecords& d);
bool read_dropped(ByteReader& r, model::DroppedGpuRecords& d);

}  // namespace ncclwatch::reduce
