// The hang verdict in the report: the first line of the findings, and JSON `hang`.
#include <algorithm>

#include <fmt/format.h>

#include "match/func_name.h"
#include "match/hang_finder.h"
#include "pipeline/collector_parts.h"

namespace ncclwatch::pipeline {

void add_hang_verdict(const model::JobTrace& job, const model::MatchResult& match,
                      model::Report& report) {
  using nlohmann::json;
  const model::HangVerdict v = match::find_hang(job, match);
  if (!v.hung) {
    report.json["hang"] = nullptr;
    return;
  }
  // First: nothing else matters as much while hundreds of GPUs wait.
  report.findings.insert(report.findings.begin(),
                         model::Finding{model::Severity::kCritical, "hang", v.text});
  json missing = json::array();
  for (const auto& m : v.last_call_of_missing) {
    json e = {{"rank", m.rank}, {"has_trace", m.has_trace}};
    if (m.has_trace) {
      const char* state = m.waiting_elsewhere                ? "waiting_in_other_call"
                          : m.func == format::Func::kUnknown ? "no_call"
                                                             : "host_side";
      e["state"] = state;
      if (m.func != format::Func::kUnknown) {
        e["op"] = match::func_name(m.func);
        e["comm"] = m.comm_id != 0 ? json(comm_hex(m.comm_id)) : json(nullptr);
        e["seq"] = m.has_seq ? json(m.seq) : json(nullptr);
        const int64_t t = m.call_end_ns + m.wall_offset_ns;
        e[m.waiting_elsewhere ? "entered_us" : "returned_us"] =
            m.wall_offset_ns != 0 ? json(t / 1000) : json(nullptr);
      }
      e["idle_s"] = m.idle_ns >= 0 ? json(static_cast<double>(m.idle_ns) / 1e9) : json(nullptr);
      e["process_dead"] = m.process_dead;
    }
    missing.push_back(std::move(e));
  }
  report.json["hang"] = {
      {"comm", v.comm_id != 0 ? json(comm_hex(v.comm_id)) : json(nullptr)},
      {"seq", v.has_seq ? json(v.seq) : json(nullptr)},
      {"op", match::func_name(v.func)},
      {"via", v.via == format::Func::kGroupEnd ? json(match::func_name(v.via)) : json(nullptr)},
      {"bytes", v.bytes},
      {"comm_size", v.comm_size},
      {"waiting_ranks", v.waiting_ranks},
      {"missing_ranks", v.missing_ranks},
      {"evidence", v.waiting_from_entry_evidence ? "entered_never_returned" : "last_incomplete"},
      {"since_us", v.since_wall_ns != 0 ? json(v.since_wall_ns / 1000) : json(nullptr)},
      {"waited_s", static_cast<double>(v.waited_ns) / 1e9},
      {"kernel_never_finished_ranks", v.kernel_never_finished},
      {"dead_ranks", v.dead_ranks},
      {"last_call_of_missing", missing},
      {"text", v.text}};
}

}  // namespace ncclwatch::pipeline
