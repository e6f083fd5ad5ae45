#include "pipeline/pipeline.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "pipeline/collector_parts.h"

// Parts built in parallel by other components: compiled in when their library exists (CMake
// defines NCCLWATCH_HAVE_<PART>) and their header is there.
#if defined(NCCLWATCH_HAVE_TIMELINE) && __has_include("timeline/gpu_linker.h")
#include "timeline/gpu_linker.h"
#define NCCLWATCH_USE_TIMELINE 1
#endif
#if defined(NCCLWATCH_HAVE_ANALYSIS) && __has_include("analysis/analyze.h")
#include "analysis/analyze.h"
#define NCCLWATCH_USE_ANALYSIS 1
#endif
#if defined(NCCLWATCH_HAVE_TOPOLOGY) && __has_include("topology/topology_report.h")
#include "topology/topology_report.h"
#define NCCLWATCH_USE_TOPOLOGY 1
#endif

namespace ncclwatch::pipeline {

namespace {
void stage(const PipelineOptions& o, const char* name) {
  if (o.progress) o.progress(name);
}
}  // namespace

PipelineResult run_pipeline(model::JobTrace& job, const PipelineOptions& options) {
  PipelineResult out;
#ifdef NCCLWATCH_USE_TIMELINE
  if (options.link_gpu) {
    stage(options, "linking GPU work");
    // Ranks are independent: one worker per core takes the next rank.
    std::atomic<std::size_t> next{0};
    auto worker = [&job, &next] {
      for (std::size_t i = next++; i < job.ranks.size(); i = next++) {
        model::RankTrace& rank = job.ranks[i];
        // A host-only trace has nothing to link (and a million calls cost the linker a second).
        if (rank.kernels.empty() && rank.links.empty() && rank.coll_gpu.empty()) continue;
        timeline::link_calls_to_gpu(rank);
      }
    };
    unsigned threads =
        options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
    threads = static_cast<unsigned>(std::min<std::size_t>(threads, job.ranks.size()));
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
  }
#endif
  stage(options, "matching");
  out.match = match::match_job(job, options.match);
  stage(options, "aligning clocks");
  out.clock = clock::align_clocks(job, out.match, options.clock);

  model::Report& report = out.report;
  add_collector_json(job, out.match, out.clock, report);
  add_collector_findings(job, out.match, out.clock, report);
  add_collector_sections(job, out.match, out.clock, options.max_rank_rows, report);
#ifdef NCCLWATCH_USE_ANALYSIS
  if (options.analyses) {
    stage(options, "analysing");
    analysis::analyze(job, out.match, out.clock, report);
  }
#endif
#ifdef NCCLWATCH_USE_TOPOLOGY
  std::vector<std::string> logs = options.topology_logs;
  if (!options.topology_dir.empty()) {
    for (auto& l : topology::find_logs(options.topology_dir)) logs.push_back(std::move(l));
  }
  if (!logs.empty()) {
    stage(options, "checking topology");
    topology::add_to_report(logs, job, out.match, report);
  }
#endif
  add_input_problems_section(job, report);
  return out;
}

}  // namespace ncclwatch::pipeline
