#include "analysis/pattern_report.h"

#include <fmt/format.h>

#include "analysis/units.h"
#include "model/vocabulary.h"

namespace ncclwatch::analysis {

std::string PatternReport::cross_node_line(const CrossNodeComm& c) {
  return fmt::format(
      "comm {} ({} ranks, {} nodes) carries {:.0f} small {} per step across nodes (median {}, "
      "{:.0f}% hidden by compute, {:.0f}% issued between compute kernels): every layer blocks on "
      "the inter-node link — keep tensor parallelism inside a node",
      model::comm_hex(c.comm_id), c.nranks, c.hosts, c.per_step, c.what,
      human_bytes(c.median_bytes), c.overlap_pct, c.interleaved_pct);
}

void PatternReport::write(const PatternVerdict& v, const std::vector<CrossNodeComm>& comms,
                          model::Report& report) {
  if (!v.text.empty()) report.findings.push_back({v.severity, "pattern", v.text});
  nlohmann::json tp = nlohmann::json::array();
  for (const CrossNodeComm& c : comms) {
    if (c.tensor_parallel_like) {
      report.findings.push_back({model::Severity::kWarning, "pattern", cross_node_line(c)});
    }
    tp.push_back({{"comm_id", model::comm_hex(c.comm_id)},
                  {"nranks", c.nranks},
                  {"hosts", c.hosts},
                  {"gpu_ranks", c.gpu_ranks},
                  {"per_step", c.per_step},
                  {"median_bytes", c.median_bytes},
                  {"overlap_pct", c.overlap_pct},
                  {"interleaved_pct", c.interleaved_pct},
                  {"what", c.what},
                  {"tensor_parallel_like", c.tensor_parallel_like}});
  }
  report.json["cross_node_comms"] = std::move(tp);
  nlohmann::json p = {{"row", v.row},
                      {"text", v.text},
                      {"gpu_ranks", v.gpu_ranks},
                      {"spike_steps", v.spike_steps},
                      {"period_steps", v.period_steps}};
  if (v.gpu_ranks > 0) {
    p["smi_util_pct"] = v.smi_pct;
    p["useful_compute_pct"] = v.useful_pct;
    p["idle_step_boundary_pct"] = v.boundary_idle_pct;
    p["comm_drop_pct"] = v.comm_drop_pct;
  }
  report.json["pattern"] = std::move(p);
}

}  // namespace ncclwatch::analysis
