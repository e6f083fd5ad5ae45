#include "topology/topology_report.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "model/vocabulary.h"
#include "topology/checks.h"
#include "topology/log_parser.h"
#include "topology/nccl_warning_report.h"

namespace ncclwatch::topology {
namespace fs = std::filesystem;

namespace {

bool looks_like_nccl_log(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return head.find(" NCCL INFO ") != std::string::npos ||
         head.find(" NCCL WARN ") != std::string::npos;
}

using model::severity_name;

nlohmann::json comm_json(const LogSet& logs, const CommContext& c) {
  nlohmann::json j;
  j["comm"] = c.name;
  j["nranks"] = c.nranks;
  j["nnodes"] = c.nnodes;
  std::set<std::string> hosts;
  for (const auto& [r, h] : c.host_of) hosts.insert(h);
  j["hosts"] = hosts;
  if (c.job_comm != 0) j["job_comm"] = c.job_comm;
  if (c.group == nullptr) return j;
  std::map<std::string, int> via;
  std::set<std::string> nets;
  int coll = -1, rings = 0;
  std::vector<int> ranks;
  for (std::size_t m : c.group->members) {
    const RankView& r = logs.ranks[m];
    ranks.push_back(r.rank);
    coll = std::max(coll, r.coll_channels);
    rings += static_cast<int>(r.rings.size());
    for (const Transport& t : r.transports) {
      ++via[via_name(t.via)];
      if (!t.net.empty()) nets.insert(t.net);
    }
  }
  j["ranks_logged"] = rank_list(ranks);
  j["coll_channels"] = coll;
  j["ring_lines"] = rings;
  j["transports"] = via;
  j["nets"] = nets;
  return j;
}

}  // namespace

std::vector<std::string> find_logs(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    std::string name = it->path().filename().string();
    auto starts = [&](const char* p) { return name.rfind(p, 0) == 0; };
    auto ends = [&](const std::string& s) {
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    bool ours = starts("nccl-debug.") || (starts("nccl-topo.") && ends(".xml")) ||
                (starts("nccl-graph.") && ends(".xml"));
    if (ours || ((ends(".log") || ends(".txt") || ends(".out") || ends(".err")) &&
                 looks_like_nccl_log(it->path())))
      out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool add_to_report(const std::vector<std::string>& logs, const model::JobTrace& job,
                   const model::MatchResult& match, model::Report& report) {
  LogParser parser;
  for (const auto& path : logs) parser.add_file(path);
  LogSet set = parser.take();
  std::vector<CommGroup> groups = group_comms(set);
  std::vector<CommContext> comms = build_contexts(set, groups, job, match);

  std::vector<TopoFinding> found;
  check_node_count(set, comms, found);
  check_transports(set, comms, found);
  check_rings(set, comms, found);
  check_agreement(set, comms, found);
  check_bus_bandwidth(set, comms, job, match, found);
  std::stable_sort(found.begin(), found.end(), [](const TopoFinding& a, const TopoFinding& b) {
    return a.severity > b.severity;
  });

  nlohmann::json j;
  j["findings"] = nlohmann::json::array();
  std::string body;
  if (logs.empty()) {
    body +=
        "No NCCL logs in the trace directory. If NCCL_DEBUG was set by you (ncclwatch then leaves "
        "NCCL's logging\n"
        "alone), pass its output in: `ncclwatch topo LOG...` or `ncclwatch report --nccl-log "
        "LOG`.\n";
  } else {
    body += std::to_string(set.stats.files) + " file(s), " + std::to_string(set.stats.nccl_lines) +
            " NCCL INFO lines (" + std::to_string(set.stats.used) + " used, " +
            std::to_string(set.stats.unknown) + " skipped, " + std::to_string(set.stats.malformed) +
            " malformed), " + std::to_string(set.topo_dumps.size()) + " topology dump(s), " +
            std::to_string(set.graph_dumps.size()) + " graph dump(s)";
    if (set.stats.warn_lines > 0)
      body += ", " + std::to_string(set.stats.warn_lines) + " WARN lines";
    if (!set.versions.empty()) {
      body += "; NCCL";
      for (const auto& v : set.versions) body += " " + v;
    }
    for (int v : set.driver_versions)
      body += "; CUDA driver " + std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
    body += "\n";
    if (!set.settings.empty()) {
      body += "  NCCL settings:";
      for (const auto& [name, values] : set.settings) {
        for (const auto& v : values) body += " " + name + "=" + v;
      }
      body += "\n";
    }
  }
  for (const CommContext& c : comms) {
    if (c.group == nullptr) continue;
    nlohmann::json cj = comm_json(set, c);
    // A log without comm lines does not say how many ranks the comm has.
    body += "  comm " + c.name + ": " + (c.nranks > 0 ? std::to_string(c.nranks) : "?") + " ranks";
    if (c.nnodes > 0) body += ", " + std::to_string(c.nnodes) + " node(s)";
    body += ", " + std::to_string(cj["hosts"].size()) + " host(s)";
    if (cj["coll_channels"].get<int>() >= 0)
      body += ", " + std::to_string(cj["coll_channels"].get<int>()) + " channels";
    for (const auto& [k, v] : cj["transports"].items())
      body += ", " + k + " x" + std::to_string(v.get<int>());
    body += "\n";
  }
  for (const TopoFinding& f : found) {
    nlohmann::json fj;
    fj["kind"] = f.kind;
    fj["severity"] = severity_name(f.severity);
    fj["comm"] = f.comm;
    fj["ranks"] = f.ranks;
    fj["message"] = f.message;
    fj["evidence"] = f.evidence;
    fj["advice"] = f.advice;
    j["findings"].push_back(std::move(fj));
    report.findings.push_back(
        {f.severity, "topology", f.kind + ": " + f.message + " [comm " + f.comm + "]"});
    body += std::string("  ") + severity_name(f.severity) + " " + f.kind + " (comm " + f.comm +
            "): " + f.message + "\n";
    if (!f.evidence.empty()) body += "      evidence: " + f.evidence + "\n";
    body += "      try: " + f.advice + "\n";
  }
  // Files that held nothing NCCL wrote (random bytes, another program's log, unreadable) are not
  // a healthy topology: say so instead of "no problem found".
  const bool topology_input =
      set.stats.nccl_lines > 0 || !set.topo_dumps.empty() || !set.graph_dumps.empty();
  const bool recognised = topology_input || set.stats.warn_lines > 0;
  if (!logs.empty() && recognised && !topology_input) {
    body += "  nothing to check the topology against: NCCL WARN lines only (NCCL_DEBUG=WARN?)\n";
  } else if (!logs.empty() && !recognised) {
    body += "  no NCCL log recognised: none of the " + std::to_string(logs.size()) +
            " input(s) holds an NCCL INFO line or an NCCL topology/graph XML dump (is it the "
            "output of NCCL_DEBUG=INFO?)\n";
    report.findings.push_back(
        {model::Severity::kInfo, "topology",
         "no NCCL log recognised in " + std::to_string(logs.size()) + " input(s)"});
  } else if (found.empty() && !logs.empty()) {
    body += "  no topology problem found\n";
  }
  nlohmann::json problems = nlohmann::json::array();
  for (const auto& p : set.problems) {
    body += "  input: " + model::problem_line(p) + "\n";
    problems.push_back(model::problem_line(p));
  }

  j["comms"] = nlohmann::json::array();
  for (const CommContext& c : comms)
    if (c.group != nullptr) j["comms"].push_back(comm_json(set, c));
  j["parse"] = {{"files", set.stats.files},
                {"lines", set.stats.lines},
                {"nccl_lines", set.stats.nccl_lines},
                {"used", set.stats.used},
                {"skipped", set.stats.unknown},
                {"malformed", set.stats.malformed},
                {"warn_lines", set.stats.warn_lines},
                {"xml_elements", set.stats.xml_elements},
                {"recognised", recognised || logs.empty()},
                {"versions", set.versions},
                {"problems", std::move(problems)}};
  nlohmann::json dumps = nlohmann::json::array();
  for (const TopoDump& d : set.topo_dumps)
    dumps.push_back({{"file", d.file},
                     {"kind", "topology"},
                     {"gpus", d.gpus},
                     {"nics", d.nics},
                     {"nvlinks", d.nvlinks}});
  for (const GraphDump& d : set.graph_dumps) {
    nlohmann::json gs = nlohmann::json::array();
    for (const GraphSearch& g : d.graphs)
      gs.push_back({{"pattern", g.pattern},
                    {"nchannels", g.nchannels},
                    {"bw_intra", g.bw_intra},
                    {"bw_inter", g.bw_inter},
                    {"type_intra", g.type_intra},
                    {"type_inter", g.type_inter}});
    dumps.push_back({{"file", d.file}, {"kind", "graph"}, {"graphs", gs}});
  }
  j["dumps"] = dumps;
  j["logs"] = logs;
  nlohmann::json drivers = nlohmann::json::array();
  for (int v : set.driver_versions)
    drivers.push_back(std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10));
  j["environment"] = {{"nccl_settings", set.settings}, {"cuda_driver_versions", drivers}};
  report.json["topology"] = std::move(j);
  report.sections.push_back({"Topology", body});
  add_nccl_warnings(set.warnings, job, report);
  return recognised;
}

}  // namespace ncclwatch::topology
