#include "sim_reports.h"

#include "pipeline/pipeline.h"
#include "report/json_renderer.h"

namespace ncclwatch::diff::testing {

nlohmann::json sim_report(const SimParams& p, const std::string& compute_kernel) {
  analysis::testing::SimJob sim = analysis::testing::simulate(p);
  if (!compute_kernel.empty()) {
    for (model::RankTrace& r : sim.job.ranks) r.names[1] = compute_kernel;  // "compute_kernel"
  }
  pipeline::PipelineOptions options;
  options.link_gpu = false;  // the simulator ties calls to their kernels itself
  options.threads = 1;
  const pipeline::PipelineResult result = pipeline::run_pipeline(sim.job, options);
  return report::render_json(result.report);
}

SimParams noisy_job(uint64_t seed, double noise_frac) {
  SimParams p = analysis::testing::sim_params(8, 4);
  p.steps = 16;
  p.seed = seed;
  p.noise = analysis::testing::Noise::kJitter;
  p.noise_frac = noise_frac;
  p.jitter_ns = 20'000;
  return p;
}

}  // namespace ncclwatch::diff::testing
