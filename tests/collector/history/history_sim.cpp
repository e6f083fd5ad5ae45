#include "history_sim.h"

#include <algorithm>

#include "record_builder.h"

namespace ncclwatch::history::testing {
namespace {

constexpr int64_t kMs = 1'000'000;

int64_t mono_shift(int host) {
  return -static_cast<int64_t>(host) * 1000 * 1'000'000'000LL;
}

class SimSource : public StepSource {
 public:
  SimSource(const SimJob& job, int rank) : job_(job), rank_(rank) {}
  bool next(format::StepRecord& out) override {
    if (at_ >= job_.steps) return false;
    out = sim_step(job_, rank_, job_.first_step + at_++);
    return true;
  }

 private:
  const SimJob& job_;
  int rank_;
  uint64_t at_ = 0;
};

uint32_t us(double ms) {
  return static_cast<uint32_t>(std::max(0.0, ms) * 1000.0 + 0.5);
}

}  // namespace

std::vector<RankSource> sim_ranks(const SimJob& job) {
  std::vector<RankSource> out;
  for (int r = 0; r < job.ranks; ++r) {
    const int h = r % job.hosts;
    RankSource s;
    s.rank = r;
    s.host = "host" + std::to_string(h);
    // realtime = monotonic + offset; the offset is wrong by the host's NTP error.
    s.wall_offset_ns = job.start_realtime_ns - mono_shift(h) - 1'000'000'000'000LL +
                       static_cast<int64_t>(job.ntp_error_ms * h * kMs);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::unique_ptr<StepSource>> sim_sources(const SimJob& job) {
  std::vector<std::unique_ptr<StepSource>> out;
  for (int r = 0; r < job.ranks; ++r) out.push_back(std::make_unique<SimSource>(job, r));
  return out;
}

// Every rank's step s starts at the same true time; a step lasts the base plus the largest
// slowdown of any rank (everyone waits for the slowest at the collective). A rank's own extra
// compute or host delay makes it arrive late; the others wait for it (exposed communication).
format::StepRecord sim_step(const SimJob& job, int rank, uint64_t step) {
  double my_compute = job.compute_ms, my_exposed = job.exposed_ms;
  double my_late = 0, worst_late = 0, all_exposed = 0;
  for (const Slowdown& d : job.slowdowns) {
    if (step < d.first || step >= d.end) continue;
    const double late = d.compute_ms + d.host_ms;
    worst_late = std::max(worst_late, late);
    all_exposed += d.exposed_ms;
    if (d.rank == rank || d.rank < 0) {
      my_compute += d.compute_ms;
      my_late = std::max(my_late, late);
    }
  }
  my_exposed += all_exposed + (worst_late - my_late);  // waiting inside the NCCL kernel
  const double base = job.compute_ms + job.exposed_ms + job.idle_ms;
  const int h = rank % job.hosts;
  // True time (ns since the job's start) of step 0 is 0; step boundaries drift with the slowdowns
  // only through `duration`, so a constant-time grid is close enough for the tests: steps are
  // placed at step x (base + worst slowdown) of their own.
  const double step_ms = base + worst_late + all_exposed;
  const int64_t start_true =
      static_cast<int64_t>(static_cast<double>(step - job.first_step) * base * kMs) +
      static_cast<int64_t>(1000.0 * kMs);
  const int64_t to_mono = mono_shift(h) + 1'000'000'000'000LL;
  uint8_t flags = 0;
  for (const auto& [first, end] : job.windows)
    if (step >= first && step < end) flags |= format::kStepDetail;
  const int64_t arrive = start_true + static_cast<int64_t>((job.compute_ms + my_late) * kMs);
  const int64_t sync =
      start_true +
      static_cast<int64_t>((job.compute_ms + worst_late + job.exposed_ms + all_exposed) * kMs);
  return test_support::step_record(
             {.ref_seq = static_cast<uint32_t>(step * 4),
              .source = format::StepSource::kCollectives,
              .timing = job.gpu ? format::StepTiming::kCupti : format::StepTiming::kNone,
              .flags = flags,
              .step = static_cast<uint32_t>(step),
              .calls = 4,
              .start_ns = start_true + to_mono,
              .arrive_ns = arrive + to_mono,
              .sync_ns = job.gpu ? sync + to_mono : 0,
              .duration_us = us(step_ms),
              .compute_us = job.gpu ? us(my_compute) : format::kStepUnknownUs,
              .exposed_us = job.gpu ? us(my_exposed) : format::kStepUnknownUs,
              .idle_us = job.gpu ? us(step_ms - my_compute - my_exposed) : format::kStepUnknownUs,
              .bytes = 4 << 20})
      .step;
}

}  // namespace ncclwatch::history::testing
