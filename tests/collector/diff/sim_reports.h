// Report JSONs of simulated jobs (tests/collector/analysis/ddp_sim.h) made by the same pipeline
// `ncclwatch report` runs, for the diff tests: pairs of runs that differ by one injected cause,
// each run with its own noise (another seed).
#pragma once

#include <nlohmann/json.hpp>

#include "ddp_sim.h"

namespace ncclwatch::diff::testing {

using analysis::testing::SimParams;

// The report JSON of the simulated job (pipeline::run_pipeline + report::render_json);
// `compute_kernel` names the simulator's compute kernels (another model's kernels).
nlohmann::json sim_report(const SimParams& p, const std::string& compute_kernel = "");

// 8 ranks on 2 hosts, 16 steps, jitter of `noise_frac` of a step on every rank (host starts),
// and kernel jitter: a healthy job with run-to-run noise; `seed` makes another run of it.
SimParams noisy_job(uint64_t seed, double noise_frac = 0.05);

}  // namespace ncclwatch::diff::testing
