#include "pipeline/pipeline.h"

#include <algorithm>
#include <vector>

#include "pipeline/collector_parts.h"
#include "trace/parallel_for.h"

#include "analysis/analyze.h"
#include "timeline/gpu_linker.h"
#include "topology/busbw_table.h"
#include "topology/topology_report.h"

namespace ncclwatch::pipeline {

namespace {
void stage(const PipelineOptions& o, const char* name) {
  if (o.progress) o.progress(name);
}

// Workers for the analyses: one more per 50 k records, up to the option's count. Each of the
// analyses' ~10 parallel passes starts and joins its threads: ~0.1 ms on an idle machine, a
// scheduler time slice on a busy one, which a small job (a few ms of analysis) would pay
// for nothing — an 8-rank job of 6 k records took 1.5 x as long on 2 threads as on 1.
unsigned analysis_threads(const model::JobTrace& job, const PipelineOptions& o) {
  constexpr std::size_t kRecordsPerWorker = 50'000;
  std::size_t records = 0;
  for (const model::RankTrace& r : job.ranks)
    records += r.calls.size() + (r.dropped ? r.dropped->kernels : r.kernels.size());
  const std::size_t by_size = std::max<std::size_t>(1, records / kRecordsPerWorker);
  return static_cast<unsigned>(std::min<std::size_t>(trace::worker_count(o.threads), by_size));
}
}  // namespace

PipelineResult run_pipeline(model::JobTrace& job, const PipelineOptions& options) {
  PipelineResult out;
  if (options.link_gpu) {
    stage(options, "linking GPU work");
    // Ranks are independent: one worker per core takes the next rank.
    trace::parallel_for(job.ranks.size(), trace::worker_count(options.threads),
                        [&job](std::size_t i) { timeline::link_recorded_gpu_work(job.ranks[i]); });
  }
  stage(options, "matching");
  out.match = match::match_job(job, options.match);
  stage(options, "aligning clocks");
  out.clock = clock::align_clocks(job, out.match, options.clock);

  model::Report& report = out.report;
  add_collector_json(job, out.match, out.clock, report);
  add_collector_findings(job, out.match, out.clock, report);
  add_hang_verdict(job, out.match, options.stack_dir, report);
  add_collector_sections(job, out.match, out.clock, options.max_rank_rows, report);
  if (options.analyses) {
    stage(options, "analysing");
    analysis::analyze(job, out.match, out.clock, report, analysis_threads(job, options));
  }
  topology::add_busbw_table(job, out.match, report);
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
