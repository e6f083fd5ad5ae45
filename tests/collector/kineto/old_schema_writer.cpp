// kineto_old_schema_trace DIR RANKS [LATE_RANK LATE_US]: writes worker<r>.pt.trace.json in the
// 2021 Kineto schema (old_schema_trace.h) for RANKS ranks, 12 steps each, for the TensorBoard
// check (scripts/tb_old_schema_check.py).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "old_schema_trace.h"
#include "trace_files.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kineto_old_schema_trace DIR RANKS [LATE_RANK LATE_US]\n");
    return 2;
  }
  const int ranks = std::atoi(argv[2]);
  const int late = argc > 3 ? std::atoi(argv[3]) : -1;
  const long late_us = argc > 4 ? std::atol(argv[4]) : 0;
  for (int r = 0; r < ranks; ++r) {
    ncclwatch::kineto::testing::OldSchemaSpec spec;
    spec.steps = 12;
    spec.nccl_delay_us = r == late ? late_us : 0;
    spec.string_tids = r % 2 == 0;
    ncclwatch::kineto::testing::write_file(
        std::string(argv[1]) + "/worker" + std::to_string(r) + ".pt.trace.json",
        ncclwatch::kineto::testing::old_schema_trace(spec));
  }
  return 0;
}
