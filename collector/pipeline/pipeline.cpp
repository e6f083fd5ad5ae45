#include "pipeline/pipeline.h"

#include <algorithm>
#include <vector>

#include "pipeline/collector_parts.h"
#include "trace/parallel_for.h"

#include "analysis/analyze.h"
#include "timeline/gpu_linker.h"
#include "topology/topology_report.h"

namespace ncclwatch::pipeline {

namespace {
void stage(const PipelineOptions& o, const char* name) {
  if (o.progress) o.progress(name);
}
}  // namespace

PipelineResult run_pipeline(model::JobTrace& job, const PipelineOptions& options) {
  PipelineResult out;
  if (options.link_gpu) {
    stage(options, "linking GPU work");
    // Ranks are independent: one worker per core takes the next rank.
    trace::parallel_for(job.ranks.size(), trace::worker_count(options.threads),
                        [&job](std::size_t i) {
                          model::RankTrace& rank = job.ranks[i];
                          // A host-only trace has nothing to link (and a million calls cost the
                          // linker a second).
                          if (rank.kernels.empty() && rank.links.empty() && rank.coll_gpu.empty())
                            return;
                          timeline::link_calls_to_gpu(rank);
                        });
  }
  stage(options, "matching");
  out.match = match::match_job(job, options.match);
  stage(options, "aligning clocks");
  out.clock = clock::align_clocks(job, out.match, options.clock);

  model::Report& report = out.report;
  add_collector_json(job, out.match, out.clock, report);
  add_collector_findings(job, out.match, out.clock, report);
  add_hang_verdict(job, out.match, report);
  add_collector_sections(job, out.match, out.clock, options.max_rank_rows, report);
  if (options.analyses) {
    stage(options, "analysing");
    analysis::analyze(job, out.match, out.clock, report, trace::worker_count(options.threads));
  }
  std::vector<std::string> logs = options.topology_logs;
  if (!options.topology_dir.empty()) {
    for (auto& l : topology::find_logs(options.topology_dir)) logs.push_back(std::move(l));
  }
  if (!logs.empty()) {
    stage(options, "checking topology");
    topology::add_to_report(logs, job, out.match, report);
  }
  add_input_problems_section(job, report);
  return out;
}

}  // namespace ncclwatch::pipeline
