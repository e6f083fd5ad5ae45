// An IntervalSet held between a rank's load and the analyses (RankDigest, issue 24), packed:
// each span is two LEB128 varints, its gap after the previous span's end and its length. Compute
// kernels microseconds apart take 4-5 bytes a span instead of IntervalSet's 16, and a digest's
// sets are most of what a report of a long run holds (~900 bytes a rank-step at 40 kernels a step
// before they were packed). Every kSpansPerMark-th span's begin and byte offset are kept, so that
// one window (a step's swimlane) is read without decoding the spans before it.
//
// Lossless: unpack() returns the set packed, span for span (IntervalSet's invariant holds for
// it), so a report from packed sets is the report from the sets, byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/interval_set.h"

namespace ncclwatch::analysis {

class PackedIntervalSet {
 public:
  static constexpr std::size_t kSpansPerMark = 64;

  PackedIntervalSet() = default;
  explicit PackedIntervalSet(const IntervalSet& set);

  IntervalSet unpack() const;
  // unpack().clip(from, to), decoding only from the mark before `from`.
  IntervalSet clip(int64_t from, int64_t to) const;

  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  // The first span's begin and the last span's end (0 when empty).
  int64_t front_begin() const { return marks_.empty() ? 0 : marks_.front().begin; }
  int64_t back_end() const { return back_end_; }
  // Bytes held on the heap (the bench's and the tests' measure of what packing saves).
  std::size_t heap_bytes() const;

  bool operator==(const PackedIntervalSet&) const = default;

 private:
  struct Mark {
    int64_t begin = 0;    // of span k * kSpansPerMark
    uint64_t offset = 0;  // where its gap (0) begins in bytes_
    bool operator==(const Mark&) const = default;
  };
  // Decodes spans from mark `m` on, calling f(Interval) until it returns false.
  template <class F>
  void decode_from(std::size_t m, F&& f) const;

  std::vector<uint8_t> bytes_;
  std::vector<Mark> marks_;
  std::size_t count_ = 0;
  int64_t back_end_ = 0;
};

}  // namespace ncclwatch::analysis
