// Writes a synthetic Kineto trace (synthetic_trace.h) for checks run outside the unit tests
// (the `hta_kineto_lag_check`: HTA on the --trace export of a trace whose GPU runs behind):
//   kineto_trace_writer OUT.json [--steps N] [--gpu-step-annotations] [--gpu-lag-us US]
//                       [--compute-kernels N] [--unlaunched-steps N]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "synthetic_trace.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: kineto_trace_writer OUT.json [--steps N] [--gpu-step-annotations] "
                 "[--gpu-lag-us US] [--compute-kernels N] [--unlaunched-steps N]\n");
    return 2;
  }
  ncclwatch::kineto::testing::SyntheticTraceSpec spec;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--gpu-step-annotations") {
      spec.gpu_step_annotations = true;
    } else if (a == "--steps" && i + 1 < argc) {
      spec.steps = std::atoi(argv[++i]);
    } else if (a == "--unlaunched-steps" && i + 1 < argc) {
      spec.unlaunched_steps = std::atoi(argv[++i]);
    } else if (a == "--compute-kernels" && i + 1 < argc) {
      spec.compute_kernels_per_step = std::atoi(argv[++i]);
    } else if (a == "--gpu-lag-us" && i + 1 < argc) {
      spec.gpu_lag_us = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr, "kineto_trace_writer: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  std::FILE* out = std::fopen(argv[1], "w");
  if (out == nullptr) {
    std::perror(argv[1]);
    return 1;
  }
  ncclwatch::kineto::testing::write_synthetic_trace(out, spec);
  return std::fclose(out) == 0 ? 0 : 1;
}
