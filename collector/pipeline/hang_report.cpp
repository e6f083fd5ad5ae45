// The hang verdict in the report: the first line of the findings, and JSON `hang`.
#include <time.h>

#include <algorithm>

#include <fmt/format.h>

#include "match/func_name.h"
#include "match/hang_finder.h"
#include "pipeline/collector_parts.h"
#include "trace/python_stack.h"
#include "trace/stack_file.h"

namespace ncclwatch::pipeline {
namespace {

using nlohmann::json;

// "2026-12-04T15:00:00Z" -> ns since the epoch; 0 if it is not that.
int64_t wall_ns_of(const std::string& taken) {
  tm t{};
  const char* end = ::strptime(taken.c_str(), "%Y-%m-%dT%H:%M:%SZ", &t);
  if (end == nullptr || *end != '\0') return 0;
  return static_cast<int64_t>(::timegm(&t)) * 1'000'000'000;
}

// Where a rank that never came is in its Python code, from the stack `ncclwatch status --stacks`
// or `ncclwatch run` saved next to its trace (trace/stack_file.h): JSON `python` of its entry
// (null without one), said in the verdict's text; a file that cannot be used is a note.
json python_where(const model::JobTrace& job, const model::HangVerdict& v,
                  const model::MissingRankState& m, const std::string& dir, std::string& text,
                  std::vector<std::string>& notes) {
  if (dir.empty() || !m.has_trace) return nullptr;
  const auto rank = std::find_if(job.ranks.begin(), job.ranks.end(),
                                 [&m](const model::RankTrace& r) { return r.info.rank == m.rank; });
  if (rank == job.ranks.end()) return nullptr;
  const trace::SavedStack saved =
      trace::read_stack_file(dir, rank->info.host, rank->info.pid, job.job);
  if (!saved.usable) {
    if (saved.present)
      notes.push_back(fmt::format("rank {}: saved Python stack not used: {}", m.rank, saved.note));
    return nullptr;
  }
  const trace::StackLocation loc = trace::locate(trace::parse_py_spy_dump(saved.dump));
  if (!loc.found) return nullptr;
  const int64_t taken_ns = wall_ns_of(saved.header.taken);
  const bool before = taken_ns != 0 && v.since_wall_ns != 0 && taken_ns < v.since_wall_ns;
  text += fmt::format("; rank {} stuck in {} (py-spy at {}{})", m.rank, trace::describe(loc),
                      saved.header.taken.empty() ? "an unknown time" : saved.header.taken,
                      before ? ", before this hang began" : "");
  return {{"where", loc.where},
          {"line", loc.line > 0 ? json(loc.line) : json(nullptr)},
          {"caller", loc.caller.empty() ? json(nullptr) : json(loc.caller)},
          {"innermost", loc.innermost.empty() ? json(nullptr) : json(loc.innermost)},
          {"thread", loc.thread},
          {"taken", saved.header.taken},
          {"taken_before_hang", before},
          {"file", trace::stack_file_name(rank->info.host, rank->info.pid)}};
}

}  // namespace

void add_hang_verdict(const model::JobTrace& job, const model::MatchResult& match,
                      const std::string& stack_dir, model::Report& report) {
  model::HangVerdict v = match::find_hang(job, match);
  if (!v.hung) {
    report.json["hang"] = nullptr;
    return;
  }
  std::vector<json> pythons;
  std::vector<std::string> notes;
  for (const auto& m : v.last_call_of_missing)
    pythons.push_back(python_where(job, v, m, stack_dir, v.text, notes));
  // First: nothing else matters as much while hundreds of GPUs wait.
  report.findings.insert(report.findings.begin(),
                         model::Finding{model::Severity::kCritical, "hang", v.text});
  for (const std::string& n : notes)
    report.findings.insert(report.findings.begin() + 1,
                           model::Finding{model::Severity::kInfo, "hang", n});
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
      e["python"] = pythons[missing.size()];
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
