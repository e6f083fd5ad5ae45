// kineto_synth_trace OUT.json MB [RANK]: writes a synthetic PyTorch-profiler trace of about MB
// megabytes (the benchmark's input; scripts/hta_compare.py --time runs HTA on the same file).
#include <cstdio>
#include <cstdlib>

#include "synthetic_trace.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kineto_synth_trace OUT.json MB [RANK]\n");
    return 2;
  }
  std::FILE* f = std::fopen(argv[1], "wb");
  if (f == nullptr) {
    std::perror(argv[1]);
    return 1;
  }
  ncclwatch::kineto::testing::SyntheticTraceSpec spec;
  spec.compute_kernels_per_step = 200;
  spec.allreduces_per_step = 8;
  if (argc > 3) spec.rank = std::atoi(argv[3]);
  const auto mb = std::strtoull(argv[2], nullptr, 10);
  const auto bytes = ncclwatch::kineto::testing::write_synthetic_trace(f, spec, mb * 1000 * 1000);
  std::fclose(f);
  std::printf("%s: %llu bytes, overlap %.3f %%\n", argv[1], static_cast<unsigned long long>(bytes),
              ncclwatch::kineto::testing::synthetic_overlap_pct(spec));
  return 0;
}
