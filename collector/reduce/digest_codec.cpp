#include "reduce/digest_codec.h"

#include <algorithm>

namespace ncclwatch::reduce {
namespace {

// An interval set's spans: sorted, disjoint, not touching (IntervalSet's invariant). Written as
// columns: the first begin, then every gap after the previous end, then every length (all
// positive), each column as byte planes (ByteWriter::planes). Columns of alike numbers compress
// better than the two interleaved (the section's zstd frame: ~15 % less where kernels run apart),
// and planes better than varints (~16 % less again).
void write_set(ByteWriter& w, const analysis::IntervalSet& set) {
  const std::vector<analysis::Interval>& spans = set.spans();
  w.varint(spans.size());
  if (spans.empty()) return;
  w.svarint(spans.front().begin);
  std::vector<uint64_t> column(spans.size() - 1);
  for (std::size_t i = 1; i < spans.size(); ++i)
    column[i - 1] = static_cast<uint64_t>(spans[i].begin - spans[i - 1].end);
  w.planes(column);
  column.resize(spans.size());
  for (std::size_t i = 0; i < spans.size(); ++i)
    column[i] = static_cast<uint64_t>(spans[i].end - spans[i].begin);
  w.planes(column);
}

bool read_set(ByteReader& r, analysis::IntervalSet& set) {
  const std::size_t n = r.count(2);
  if (n == 0) {
    set = analysis::IntervalSet();
    return r.ok();
  }
  const int64_t first = r.svarint();
  std::vector<uint64_t> gaps, lengths;
  if (!r.planes(n - 1, gaps) || !r.planes(n, lengths)) return false;
  std::vector<analysis::Interval> spans(n);
  int64_t prev = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const uint64_t gap = i > 0 ? gaps[i - 1] : 0;
    const uint64_t length = lengths[i];
    int64_t begin = first;
    if (i > 0 && (gap == 0 || gap > INT64_MAX / 2 ||
                  __builtin_add_overflow(prev, static_cast<int64_t>(gap), &begin)))
      begin = INT64_MAX;
    if (length == 0 || length > INT64_MAX / 2 || begin > INT64_MAX - static_cast<int64_t>(length)) {
      r.fail("an interval set whose spans are not sorted and disjoint");
      return false;
    }
    spans[i] = {begin, begin + static_cast<int64_t>(length)};
    prev = spans[i].end;
  }
  set = analysis::IntervalSet::from_sorted(spans);
  return true;
}

// x on a grid of `step` ns, to the nearest point (halves up), as a count of steps.
int64_t to_grid(int64_t x, int64_t step) {
  int64_t q = x / step, rem = x % step;
  if (rem < 0) --q, rem += step;
  return rem >= step - rem ? q + 1 : q;
}

// `set` with its edges moved to the nearest point of a grid of `step` ns, in steps: spans
// shorter than half a step vanish, spans whose gap closes merge. Still sorted and disjoint.
analysis::IntervalSet on_grid(const analysis::IntervalSet& set, int64_t step) {
  std::vector<analysis::Interval> out;
  out.reserve(set.size());
  for (const analysis::Interval& s : set.spans()) {
    const int64_t begin = to_grid(s.begin, step), end = to_grid(s.end, step);
    if (end <= begin) continue;
    if (!out.empty() && begin <= out.back().end) {
      out.back().end = std::max(out.back().end, end);
    } else {
      out.push_back({begin, end});
    }
  }
  return analysis::IntervalSet::from_sorted(out);
}

// A set written in steps of `step` ns back in ns; false when a time would pass 64 bits.
bool off_grid(ByteReader& r, analysis::IntervalSet& set, int64_t step) {
  if (step == 1) return true;
  std::vector<analysis::Interval> spans(set.spans().begin(), set.spans().end());
  const int64_t limit = INT64_MAX / step;
  for (analysis::Interval& s : spans) {
    if (s.begin < -limit || s.end > limit) {
      r.fail("a time past the range of 64 bits");
      return false;
    }
    s.begin *= step;
    s.end *= step;
  }
  set = analysis::IntervalSet::from_sorted(spans);
  return true;
}

void write_step_kernels(ByteWriter& w, const analysis::StepKernels& k) {
  write_intervals(w, k.step_windows);
  w.varint(k.per_step.size());
  for (int64_t n : k.per_step) w.svarint(n);
  write_intervals(w, k.table_windows);
  w.varint(k.table.windows);
  w.varint(k.table.kernels.size());
  for (const analysis::RankKernel& rk : k.table.kernels) {
    w.str(rk.name);
    w.u8(rk.nccl ? 1 : 0);
    w.svarint(rk.total_ns);
    w.varint(rk.calls);
    w.f64(rk.sum_sq);
    w.svarint(rk.window_ns);
    w.varint(rk.window == SIZE_MAX ? 0 : rk.window + 1);
  }
}

bool read_step_kernels(ByteReader& r, analysis::StepKernels& k) {
  if (!read_intervals(r, k.step_windows)) return false;
  k.per_step.resize(r.count(1));
  for (int64_t& n : k.per_step) n = r.svarint();
  if (!read_intervals(r, k.table_windows)) return false;
  k.table.windows = r.varint();
  k.table.kernels.resize(r.count(13));
  for (analysis::RankKernel& rk : k.table.kernels) {
    rk.name = r.str();
    rk.nccl = r.u8() != 0;
    rk.total_ns = r.svarint();
    rk.calls = r.varint();
    rk.sum_sq = r.f64();
    rk.window_ns = r.svarint();
    const uint64_t window = r.varint();
    rk.window = window == 0 ? SIZE_MAX : static_cast<std::size_t>(window - 1);
  }
  return r.ok();
}

}  // namespace

void write_intervals(ByteWriter& w, const std::vector<analysis::Interval>& spans) {
  w.varint(spans.size());
  int64_t prev = 0;
  for (const analysis::Interval& s : spans) {
    w.svarint(s.begin - prev);
    w.svarint(s.end - s.begin);
    prev = s.end;
  }
}

bool read_intervals(ByteReader& r, std::vector<analysis::Interval>& out) {
  out.resize(r.count(2));
  int64_t prev = 0;
  for (analysis::Interval& s : out) {
    const int64_t gap = r.svarint();
    const int64_t length = r.svarint();
    // Bounded so that no sum below overflows: timestamps are far below 2^62 ns.
    constexpr int64_t kLimit = INT64_C(1) << 62;
    if (gap < -kLimit || gap > kLimit || length < -kLimit || length > kLimit || prev < -kLimit ||
        prev > kLimit) {
      r.fail("a window beyond any clock");
      return false;
    }
    s.begin = prev + gap;
    s.end = s.begin + length;
    prev = s.end;
  }
  return r.ok();
}

void write_digest(ByteWriter& w, const analysis::RankDigest& d, int64_t compute_resolution_ns) {
  // busy as the digest holds it: what it adds to comm ∪ compute (packed_activity.h).
  const analysis::PackedActivity& a = d.activity;
  write_set(w, a.comm.unpack());
  w.varint(static_cast<uint64_t>(compute_resolution_ns));
  if (compute_resolution_ns == 1) {
    write_set(w, a.compute.unpack());
  } else {
    write_set(w, on_grid(a.compute.unpack(), compute_resolution_ns));
  }
  write_set(w, a.busy_extra.unpack());
  write_set(w, a.busy_missing.unpack());
  w.u8(static_cast<uint8_t>(a.source));
  w.u8(a.has_compute ? 1 : 0);
  w.svarint(a.first_ns);
  w.svarint(a.last_ns - a.first_ns);
  w.u8(d.compute_windows ? 1 : 0);
  if (d.compute_windows) write_set(w, *d.compute_windows);
  write_step_kernels(w, d.step_kernels);
  w.varint(d.kernel_sample.size());
  for (int64_t ns : d.kernel_sample) w.svarint(ns);
}

bool read_digest(ByteReader& r, analysis::RankDigest& d, int64_t& compute_resolution_ns) {
  analysis::PackedActivity& a = d.activity;
  {
    analysis::IntervalSet comm, compute, extra, missing;
    if (!read_set(r, comm)) return false;
    const uint64_t step = r.varint();
    if (step == 0 || step > kMaxComputeResolutionNs) {
      r.fail("a resolution of compute times of 0 or past a second");
      return false;
    }
    compute_resolution_ns = static_cast<int64_t>(step);
    if (!read_set(r, compute) || !off_grid(r, compute, compute_resolution_ns) ||
        !read_set(r, extra) || !read_set(r, missing))
      return false;
    a.comm = analysis::PackedIntervalSet(comm);
    a.compute = analysis::PackedIntervalSet(compute);
    a.busy_extra = analysis::PackedIntervalSet(extra);
    a.busy_missing = analysis::PackedIntervalSet(missing);
  }
  const uint8_t source = r.u8();
  if (source > static_cast<uint8_t>(analysis::CommSource::kNoCommKernels)) {
    r.fail("an unknown source of communication times");
    return false;
  }
  a.source = static_cast<analysis::CommSource>(source);
  a.has_compute = r.u8() != 0;
  a.first_ns = r.svarint();
  a.last_ns = r.svarint_after(a.first_ns);
  if (r.u8() != 0) {
    analysis::IntervalSet windows;
    if (!read_set(r, windows)) return false;
    d.compute_windows = std::move(windows);
  }
  if (!read_step_kernels(r, d.step_kernels)) return false;
  const std::size_t samples = r.count(1);
  if (samples > analysis::kKernelSamplePerRank) {
    r.fail("a kernel sample larger than a digest takes");
    return false;
  }
  d.kernel_sample.resize(samples);
  for (int64_t& ns : d.kernel_sample) ns = r.svarint();
  return r.ok();
}

void write_dropped(ByteWriter& w, const model::DroppedGpuRecords& d) {
  w.varint(d.kernels);
  w.varint(d.comm_kernels.size());
  for (uint64_t n : d.comm_kernels) w.varint(n);
  w.varint(d.launched_without_kernel.size());
  uint64_t prev_comm = 0;
  for (const auto& [comm, seq] : d.launched_without_kernel) {
    w.fixed64(comm ^ prev_comm);  // sorted by comm: mostly 0, but ids are hashes (8 bytes)
    w.varint(seq);
    prev_comm = comm;
  }
}

bool read_dropped(ByteReader& r, model::DroppedGpuRecords& d) {
  d.kernels = r.varint();
  const std::size_t families = r.count(1);
  if (families != d.comm_kernels.size()) {
    r.fail("a different number of communication-kernel families");
    return false;
  }
  for (uint64_t& n : d.comm_kernels) n = r.varint();
  d.launched_without_kernel.resize(r.count(9));
  uint64_t prev_comm = 0;
  for (auto& [comm, seq] : d.launched_without_kernel) {
    comm = r.fixed64() ^ prev_comm;
    const uint64_t s = r.varint();
    if (s > UINT32_MAX) r.fail("a 32-bit sequence number beyond 32 bits");
    seq = static_cast<uint32_t>(s);
    prev_comm = comm;
  }
  if (r.ok() && !std::is_sorted(d.launched_without_kernel.begin(), d.launched_without_kernel.end()))
    r.fail("launches without a kernel out of order");
  return r.ok();
}

}  // namespace ncclwatch::reduce
