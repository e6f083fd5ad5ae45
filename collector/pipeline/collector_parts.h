// The collector's own contribution to the report (internal to ncclwatch_pipeline).
#pragma once

#include <string>
#include <vector>

#include "model/clock_alignment.h"
#include "model/job_trace.h"
#include "model/match_result.h"
#include "model/report.h"
#include "model/vocabulary.h"
#include "pipeline/collector_schema.h"

namespace ncclwatch::pipeline {

using model::comm_hex;  // "0x%016x", collector/model/vocabulary.h

// Findings: hangs (incomplete instances), desyncs, comm size disagreements, untraced members,
// dropped records, cut-short traces, clock support.
void add_collector_findings(const model::JobTrace& job, const model::MatchResult& match,
                            const model::ClockAlignment& clock, model::Report& report);

// The hang verdict (collector/match/hang_finder.h): a critical finding put first, JSON `hang`
// (null when the job did not hang). A rank that never came is named where it is in its Python
// code when `stack_dir` holds its saved stack (trace/stack_file.h; "" = none).
void add_hang_verdict(const model::JobTrace& job, const model::MatchResult& match,
                      const std::string& stack_dir, model::Report& report);

// Sections "Ranks", "Communicators", "Clocks" (first, in this order).
void add_collector_sections(const model::JobTrace& job, const model::MatchResult& match,
                            const model::ClockAlignment& clock, std::size_t max_rank_rows,
                            model::Report& report);

// Section "Input problems" (last).
void add_input_problems_section(const model::JobTrace& job, model::Report& report);

// JSON: schema_version, job, ranks[], comms[], incomplete[], desync[], clock, problems[], and
// empty overlap[], stragglers[], topology.findings[] for the analyses to fill.
void add_collector_json(const model::JobTrace& job, const model::MatchResult& match,
                        const model::ClockAlignment& clock, model::Report& report);

// Losses (collector_losses.cpp): the first warning, the section "Losses" (empty text when no
// rank lost anything), the JSON `losses` object and `ranks[].losses`.
void add_loss_finding(const model::JobTrace& job, model::Report& report);
void add_loss_json(const model::JobTrace& job, model::Report& report);
std::string losses_table(const model::JobTrace& job);
nlohmann::json losses_json(const model::Losses& losses);
std::string describe_losses(const model::Losses& losses);  // "ring full 12 records; ..."

// Communication kernels per family over the job (families in enum order, only those present):
// the info line when a family other than NCCL ran, and JSON `comm_kernels`.
struct CommKernelCount {
  model::CommFamily family = model::CommFamily::kNone;
  uint64_t kernels = 0;
  uint32_t ranks = 0;  // ranks that ran at least one
};
std::vector<CommKernelCount> comm_kernel_counts(const model::JobTrace& job);

}  // namespace ncclwatch::pipeline
