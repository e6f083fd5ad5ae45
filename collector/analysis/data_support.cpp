#include "analysis/data_support.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "analysis/rank_digest.h"

namespace ncclwatch::analysis {
namespace {

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// The 1 s sampling windows (format::kKernelSampleWindowNs) where this rank's compute kernels
// were kept: w % every == 0 over the rank's recorded time, or, with `every` unknown (0), the
// windows that hold a compute kernel.
IntervalSet sampled_windows(const model::RankTrace& rank, uint32_t every) {
  constexpr int64_t kWindow = format::kKernelSampleWindowNs;
  std::vector<Interval> out;
  if (every == 0) {
    for (const model::KernelEvent& k : rank.kernels) {
      if (k.nccl) continue;
      const int64_t w = floor_div(k.start_ns, kWindow);
      if (out.empty() || out.back().begin != w * kWindow)
        out.push_back({w * kWindow, (w + 1) * kWindow});
    }
    return IntervalSet::from_unsorted(std::move(out));
  }
  int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  for (const model::CallEvent& c : rank.calls) {
    first = std::min(first, c.enter_ns);
    last = std::max(last, c.exit_ns);
  }
  for (const model::KernelEvent& k : rank.kernels) {
    first = std::min(first, k.start_ns);
    last = std::max(last, k.end_ns);
  }
  if (first > last) return {};
  const int64_t n = static_cast<int64_t>(every);
  // At most one window per second of the trace: a bounded loop for any real trace; a trace
  // claiming to span centuries gets no windows past a million.
  const int64_t w_first = floor_div(first, kWindow), w_last = floor_div(last, kWindow);
  for (int64_t w = w_first + ((n - w_first % n) % n); w <= w_last && out.size() < 1'000'000;
       w += n) {
    out.push_back({w * kWindow, (w + 1) * kWindow});
  }
  return IntervalSet::from_unsorted(std::move(out));
}

std::string grouped(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

// Losses by accident (not on request): what a rank's verdicts may be missing.
void measure_losses(const model::RankTrace& rank, RankSupport& out) {
  const model::Losses& l = rank.info.losses;
  const uint64_t records_lost =
      l.ring_full + l.cupti_dropped + l.counts.ring_holes + l.counts.ring_overwritten;
  const double kept = static_cast<double>(rank.info.records);
  double share =
      records_lost ? static_cast<double>(records_lost) / (kept + static_cast<double>(records_lost))
                   : 0.0;
  // Lite mode: calls left without their GPU interval.
  if (l.counts.lite_untimed > 0 && !rank.calls.empty()) {
    share = std::max(share, static_cast<double>(l.counts.lite_untimed) /
                                static_cast<double>(rank.calls.size() + l.counts.lite_untimed));
  }
  out.loss_share = std::min(1.0, share);
  const std::pair<const char*, uint64_t> kinds[] = {
      {"ring full", l.ring_full},
      {"CUPTI dropped", l.cupti_dropped},
      {"ring holes", l.counts.ring_holes},
      {"overwritten before salvage", l.counts.ring_overwritten}};
  for (const auto& [what, n] : kinds) {
    if (n == 0) continue;
    if (!out.loss_words.empty()) out.loss_words += ", ";
    out.loss_words += fmt::format("{} {} records", what, grouped(n));
  }
  if (l.counts.lite_untimed > 0) {
    if (!out.loss_words.empty()) out.loss_words += ", ";
    out.loss_words += fmt::format("lite mode untimed {} calls", grouped(l.counts.lite_untimed));
  }
}

}  // namespace

std::optional<IntervalSet> DataSupport::compute_windows_of(const model::RankTrace& rank) {
  if (rank.info.kernels == model::KernelScope::kSampled)
    return sampled_windows(rank, rank.info.kernel_sample_every);
  if (rank.info.kernels == model::KernelScope::kNcclOnly) return IntervalSet();
  return std::nullopt;
}

DataSupport DataSupport::of(const model::JobTrace& job, const model::MatchResult& match) {
  DataSupport d;
  d.ranks.resize(job.ranks.size());
  std::size_t sampled = 0, nccl_only = 0;
  std::string scope;
  for (std::size_t r = 0; r < job.ranks.size(); ++r) {
    const model::RankTrace& rank = job.ranks[r];
    RankSupport& s = d.ranks[r];
    measure_losses(rank, s);
    if (s.loss_share >= kHeavyLossShare) d.lossy.push_back(r);
    s.compute_windows = rank.digest ? rank.digest->compute_windows : compute_windows_of(rank);
    sampled += rank.info.kernels == model::KernelScope::kSampled;
    nccl_only += rank.info.kernels == model::KernelScope::kNcclOnly;
    if (rank.info.kernels != model::KernelScope::kAll && scope.empty())
      scope = model::kernel_scope_name(rank.info.kernels, rank.info.kernel_sample_every);
  }
  if (sampled + nccl_only > 0) {
    d.any_sampled = sampled > 0;
    d.kernel_scope = fmt::format("NCCLWATCH_KERNELS={} on {} of {} ranks", scope,
                                 sampled + nccl_only, job.ranks.size());
  }
  for (std::size_t i = 0; i < d.lossy.size() && i < 4; ++i) {
    const std::size_t r = d.lossy[i];
    if (!d.lossy_note.empty()) d.lossy_note += "; ";
    d.lossy_note += fmt::format("rank {} lost {:.0f}% of its records ({})", job.ranks[r].info.rank,
                                100 * d.ranks[r].loss_share, d.ranks[r].loss_words);
  }
  if (d.lossy.size() > 4) d.lossy_note += fmt::format("; {} more ranks", d.lossy.size() - 4);
  d.any_instance = !match.instances.empty();
  for (const model::CollectiveInstance& inst : match.instances) {
    if (inst.nmembers >= 2) {
      d.cross_rank = true;
      break;
    }
  }
  return d;
}

bool DataSupport::lossy_rank(std::size_t rank_index) const {
  return std::binary_search(lossy.begin(), lossy.end(), rank_index);
}

void DataSupport::gate(std::vector<Straggler>& stragglers) const {
  for (Straggler& s : stragglers) {
    if (!s.warning || !lossy_rank(s.rank_index)) continue;
    const RankSupport& rs = ranks[s.rank_index];
    s.warning = false;
    s.unsupported = fmt::format(
        " — information only, not a warning: this rank lost {:.0f}% of its records ({}); raise "
        "NCCLWATCH_RING_MB",
        100 * rs.loss_share, rs.loss_words);
  }
}

std::string DataSupport::unsupported_by_losses() const {
  if (lossy_note.empty()) return "";
  return " — information only, not a warning: " + lossy_note +
         "; a verdict needs the records it rests on (raise NCCLWATCH_RING_MB)";
}

}  // namespace ncclwatch::analysis
