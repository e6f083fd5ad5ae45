// Builds small JobTraces by hand for the matching, clock, pipeline and report tests: ranks,
// comms and calls with exactly the fields under test (no trace files involved).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/job_trace.h"

namespace ncclwatch::testing {

class JobBuilder {
 public:
  // `nranks` ranks, global rank = index, host "node<r % nhosts>" unless set otherwise.
  explicit JobBuilder(int nranks, int nhosts = 1) {
    for (int r = 0; r < nranks; ++r) {
      model::RankTrace t;
      t.info.rank = r;
      t.info.world_size = nranks;
      t.info.local_rank = r / nhosts;
      t.info.device = r / nhosts;
      t.info.host = "node" + std::to_string(r % nhosts);
      t.info.pid = 1000 + r;
      t.info.wall_offset_ns = 1'700'000'000'000'000'000;
      job.ranks.push_back(std::move(t));
    }
    job.job = "synthetic";
  }

  // A comm over `members` (global ranks); comm rank = position in the list.
  void comm(uint64_t id, const std::vector<int>& members) {
    for (std::size_t i = 0; i < members.size(); ++i) {
      model::CommInfo c;
      c.id = id;
      c.nranks = static_cast<int32_t>(members.size());
      c.rank = static_cast<int32_t>(i);
      c.device = job.ranks[members[i]].info.device;
      c.created_by = format::Func::kCommInitRank;
      job.ranks[members[i]].comms.push_back(c);
    }
  }

  model::CallEvent& call(int rank, uint64_t comm, uint64_t seq, format::Func f, uint64_t count,
                         int64_t enter, int64_t exit) {
    model::CallEvent c;
    c.comm_id = comm;
    c.seq = seq;
    c.func = f;
    c.count = count;
    c.datatype = 7;  // float32
    c.enter_ns = enter;
    c.exit_ns = exit;
    auto& calls = job.ranks[rank].calls;
    calls.push_back(c);
    return calls.back();
  }

  // `n` all_reduces on `comm` by every rank in `members`, seq first_seq.., one per `period` ns;
  // all leave together at the end of each (a blocking collective), on a common true clock.
  void all_reduces(uint64_t comm, const std::vector<int>& members, uint64_t first_seq, int n,
                   int64_t t0, int64_t period, uint64_t count = 1024) {
    for (int i = 0; i < n; ++i) {
      int64_t start = t0 + i * period;
      for (int r : members) {
        call(r, comm, first_seq + i, format::Func::kAllReduce, count, start + 1000 * r,
             start + period / 2);
      }
    }
  }

  // Shifts every timestamp of `rank` by `delta` (a host whose clock reads differently).
  void shift_clock(int rank, int64_t delta) {
    for (auto& c : job.ranks[rank].calls) {
      c.enter_ns += delta;
      c.exit_ns += delta;
      if (c.has_gpu()) {
        c.gpu_start_ns += delta;
        c.gpu_end_ns += delta;
      }
    }
  }

  model::JobTrace job;
};

}  // namespace ncclwatch::testing
