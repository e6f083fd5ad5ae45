// The collector's part of the JSON report (schema: docs/report-schema.md).
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "match/func_name.h"
#include "model/vocabulary.h"
#include "pipeline/collector_parts.h"

namespace ncclwatch::pipeline {

namespace {

using nlohmann::json;

using model::us;

json ranks_json(const model::JobTrace& job, const model::ClockAlignment& clock) {
  json list = json::array();
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    const auto& r = job.ranks[i];
    uint64_t colls = 0, p2p = 0, gpu = 0;
    for (const auto& c : r.calls) {
      colls += format::is_collective(c.func);
      p2p += format::is_p2p(c.func);
      gpu += c.has_gpu();
    }
    list.push_back(
        {{"rank", r.info.rank},
         {"host", r.info.host},
         {"pid", r.info.pid},
         {"device", r.info.device},
         {"local_rank", r.info.local_rank},
         {"calls", r.calls.size()},
         {"collectives", colls},
         {"p2p", p2p},
         {"gpu_timed", gpu},
         {"timing", model::timing_name(r.info.timing)},
         {"kernels", model::kernel_scope_name(r.info.kernels, r.info.kernel_sample_every)},
         {"dropped", r.info.losses.ring_full},
         {"cupti_dropped", r.info.losses.cupti_dropped},
         {"lost", r.info.losses.lost()},
         {"losses", losses_json(r.info.losses)},
         {"skipped", r.info.skipped},
         {"salvaged", r.info.salvaged},
         {"complete", r.info.complete},
         {"clock_offset_us", us(clock.at(i))},
         {"source", r.info.source}});
  }
  return list;
}

// What the traces say about the run's size, timing and software: what `ncclwatch diff` sets side
// by side (the NCCL logs add theirs under topology.environment).
json environment_json(const model::JobTrace& job) {
  std::set<std::string> hosts, nccl, gpus;
  std::map<std::string, int> timing;
  int32_t world = -1;
  for (const model::RankTrace& r : job.ranks) {
    hosts.insert(r.info.host);
    ++timing[model::timing_name(r.info.timing)];
    world = std::max(world, r.info.world_size);
    if (!r.info.nccl_version.empty()) nccl.insert(r.info.nccl_version);
    if (!r.info.gpu_name.empty()) gpus.insert(r.info.gpu_name);
  }
  return {{"ranks", job.ranks.size()}, {"world_size", world},   {"hosts", hosts.size()},
          {"timing", timing},          {"nccl_versions", nccl}, {"gpus", gpus}};
}

}  // namespace

void add_collector_json(const model::JobTrace& job, const model::MatchResult& match,
                        const model::ClockAlignment& clock, model::Report& report) {
  json& j = report.json;
  j["schema_version"] = kSchemaVersion;
  j["job"] = job.job;
  j["ranks"] = ranks_json(job, clock);
  j["environment"] = environment_json(job);
  add_loss_json(job, report);
  json comms = json::array();
  for (const auto& c : match.comms) {
    comms.push_back({{"id", comm_hex(c.id)},
                     {"nranks", c.nranks},
                     {"ranks", c.ranks},
                     {"size_disagreement", c.size_disagreement},
                     {"untraced", c.untraced},
                     {"instances", c.instances},
                     {"incomplete", c.incomplete},
                     {"desyncs", c.desyncs}});
  }
  j["comms"] = comms;
  json incomplete = json::array();
  for (const auto& run : match.incomplete) {
    incomplete.push_back({{"comm", comm_hex(run.comm_id)},
                          {"seq", run.seq},
                          {"seq_last", run.seq_last},
                          {"count", run.count},
                          {"op", match::func_name(run.func)},
                          {"missing_ranks", run.missing_ranks},
                          {"present_ranks", run.present_ranks}});
  }
  j["incomplete"] = incomplete;
  json desync = json::array();
  for (const auto& d : match.desyncs) {
    desync.push_back(
        {{"comm", comm_hex(d.comm_id)}, {"seq", d.seq}, {"ranks", d.ranks}, {"what", d.what}});
  }
  j["desync"] = desync;
  json offsets = json::array();
  for (const auto& h : clock.hosts) {
    offsets.push_back({{"host", h.host},
                       {"offset_us", us(h.offset_ns)},
                       {"residual_us", us(h.residual_ns)},
                       {"samples", h.samples},
                       {"method", h.method}});
  }
  j["clock"] = {{"reference", clock.hosts.empty() ? std::string() : clock.hosts[0].host},
                {"offsets", offsets},
                {"residual_us", us(clock.residual_ns)}};
  json problems = json::array();
  for (const auto& p : job.problems)
    problems.push_back({{"source", p.source}, {"message", p.message}});
  j["problems"] = problems;
  json notes = json::array();
  for (const auto& n : job.notes) notes.push_back({{"source", n.source}, {"message", n.message}});
  j["notes"] = notes;
  json families = json::array();
  for (const auto& c : comm_kernel_counts(job)) {
    families.push_back({{"family", model::comm_family_name(c.family)},
                        {"kernels", c.kernels},
                        {"ranks", c.ranks}});
  }
  j["comm_kernels"] = families;
  // Filled by the analyses and the topology check when they run; present (empty) either way so
  // that consumers can rely on the keys.
  if (!j.contains("overlap")) j["overlap"] = json::array();
  if (!j.contains("stragglers")) j["stragglers"] = json::array();
  if (!j.contains("topology")) j["topology"] = {{"findings", json::array()}};
}

}  // namespace ncclwatch::pipeline
