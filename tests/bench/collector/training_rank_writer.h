// Realistic full-mode (CUPTI) trace files of a simulated DDP training job at scale, written
// straight from format.h one rank after another (memory: a few MB whatever the job's size), for
// the scale benchmark: what the real shim writes for fake_train with NCCLWATCH_DETAIL=all, in its
// drain order -- identity, comm, clock anchors, a whole-run capture window; per step the host's
// launches and all-reduce calls (with their kernel links) in time order, the previous step's GPU
// kernels and its ProfilerStep#N NVTX range as CUPTI hands them over (a step late), and the step
// summaries (StepRecord) a step after that, as the drain thread summarizes them. The timeline is
// TrainingTimeline's (per-rank jitter, a straggler, a periodic host stall).
#pragma once

#include <cstdint>
#include <string>

#include "ncclwatch/format.h"
#include "trace_file_writer.h"
#include "training_timeline.h"

namespace ncclwatch::bench {

struct TrainingJobFiles {
  uint64_t bytes = 0;
  uint64_t records = 0;
  int files = 0;
};

class TrainingRankWriter {
 public:
  TrainingRankWriter(const TrainingTimeline& timeline, int rank);
  // Writes the rank's file into the job's directory; its size and records.
  TrainingJobFiles write();

  // The rank's file name: ncclwatch.<host>.<pid>.trace, as the shim names it.
  std::string path() const;

 private:
  void put(const format::Record& r);
  void put_start();
  // A clock anchor at true time `t`.
  void put_clock(int64_t t);
  // A kernel of TrainingTimeline's `name` (its name's string first, the first time it is seen).
  void put_kernel(int64_t start, int64_t end, uint32_t correlation, uint32_t name, bool nccl);
  void put_host_records(RankStep& st);
  // A collective's host records in the order the drain thread gets them: its kernel link (made
  // inside the launch), its launch, then the call when it returns.
  void put_collective(format::Func func, const BucketSlot& b, uint32_t seq, uint64_t count,
                      int32_t peer);
  void put_gpu_batch(const RankStep& st);
  void put_step_range(const RankStep& st);
  format::Record step_summary(const RankStep& st, bool last) const;
  void put_end(int64_t last_ns);
  uint32_t name_id(uint32_t name);
  int64_t host_clock(int64_t t) const { return t + clock_shift_; }

  const TrainingTimeline& timeline_;
  const TrainingJob& job_;
  int rank_;
  int host_;
  uint32_t tid_;
  int64_t clock_shift_;  // this host's CLOCK_MONOTONIC minus true time
  int64_t wall_offset_;  // CLOCK_REALTIME minus true time (NTP: off by tens of us per host)
  TraceFileWriter* out_ = nullptr;
  uint64_t detail_records_ = 0;
  uint32_t next_correlation_ = 1;
  uint32_t next_string_ = 1;
  std::vector<uint32_t> name_ids_;  // per TrainingTimeline::kernel_names(), then the NCCL ones
  int64_t next_clock_ns_ = 0;
  uint64_t on_cpu_ns_ = 0, wait_ns_ = 0, timeslices_ = 0;
};

// Every rank's file of `timeline`'s job into its dir (which must exist).
TrainingJobFiles write_training_job(const TrainingTimeline& timeline);

}  // namespace ncclwatch::bench
