#include "topology/nccl_warning_report.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "topology/checks.h"
#include "topology/log_parser.h"

namespace ncclwatch::topology {

namespace {

// The message of a finding or a listed line, cut where a log line ran on (the JSON has it all).
constexpr std::size_t kShownMessage = 400;

std::string shown(const std::string& message) {
  if (message.size() <= kShownMessage) return message;
  std::size_t cut = kShownMessage;
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
  return message.substr(0, cut) + "...";
}

// NCCL's host field is the host name up to its first '.'; the trace header has the whole name.
bool same_host(const std::string& traced, const std::string& nccl) {
  return traced == nccl || traced.substr(0, traced.find('.')) == nccl;
}

// Global ranks of the job by the (host, pid) NCCL printed; -1 for a process not traced.
class RankLookup {
 public:
  explicit RankLookup(const model::JobTrace& job) : job_(job) {}
  int operator()(const std::string& host, int64_t pid) const {
    for (const model::RankTrace& r : job_.ranks) {
      if (r.info.pid == pid && r.info.rank >= 0 && same_host(r.info.host, host)) return r.info.rank;
    }
    return -1;
  }

 private:
  const model::JobTrace& job_;
};

std::string who(const RankLookup& rank_of, const std::string& host, int64_t pid) {
  const int rank = rank_of(host, pid);
  if (rank >= 0) return "rank " + std::to_string(rank) + " (" + host + ")";
  return host + " pid " + std::to_string(pid);
}

// "6 such lines from ranks 1,3,5 and 2 other processes" (empty for a line alone).
std::string spread(const WarnGroup& g, const RankLookup& rank_of) {
  std::vector<int> ranks;
  std::size_t others = 0;
  for (const auto& [host, pid] : g.processes) {
    const int rank = rank_of(host, pid);
    if (rank >= 0) {
      ranks.push_back(rank);
    } else {
      ++others;
    }
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  if (g.count == 1) return "";
  std::string out = std::to_string(g.count) + " such lines from ";
  if (!ranks.empty()) out += (ranks.size() == 1 ? "rank " : "ranks ") + rank_list(ranks);
  if (others > 0) {
    out += std::string(ranks.empty() ? "" : " and ") + std::to_string(others) +
           (ranks.empty() ? "" : " other") + (others == 1 ? " process" : " processes");
  }
  if (g.more_processes) out += " and more";
  return out;
}

std::string finding_text(const WarnGroup& g, const RankLookup& rank_of) {
  const WarnLine& f = g.first;
  std::string text = who(rank_of, f.host, f.pid) + ": NCCL WARN " + shown(f.message);
  if (!f.site.empty()) text += " [" + f.site + "]";
  if (const std::string s = spread(g, rank_of); !s.empty()) text += " — " + s;
  return text;
}

nlohmann::json group_json(const WarnGroup& g, const RankLookup& rank_of) {
  const WarnLine& f = g.first;
  const int first_rank = rank_of(f.host, f.pid);
  nlohmann::json ranks = nlohmann::json::array(), others = nlohmann::json::array();
  std::set<int> seen;
  for (const auto& [host, pid] : g.processes) {
    const int rank = rank_of(host, pid);
    if (rank < 0) {
      others.push_back({{"host", host}, {"pid", pid}});
    } else if (seen.insert(rank).second) {
      ranks.push_back(rank);
    }
  }
  return {{"site", f.site},
          {"message", f.message},
          {"line", f.line},
          {"count", g.count},
          {"first",
           {{"rank", first_rank >= 0 ? nlohmann::json(first_rank) : nlohmann::json()},
            {"host", f.host},
            {"pid", f.pid},
            {"dev", f.dev},
            {"file", f.file}}},
          {"ranks", std::move(ranks)},
          {"other_processes", std::move(others)},
          {"more_processes", g.more_processes}};
}

std::string section_body(const NcclWarnings& w, const RankLookup& rank_of) {
  std::string body = std::to_string(w.lines) + " WARN line(s) from NCCL, " +
                     std::to_string(w.groups.size()) +
                     " distinct (the same place in NCCL and the same words, numbers aside); the "
                     "first in " +
                     (w.groups.empty() ? std::string("?") : w.groups.front().first.file) + ":\n";
  for (std::size_t i = 0; i < w.groups.size() && i < kWarningListed; ++i) {
    const WarnGroup& g = w.groups[i];
    const std::string s = spread(g, rank_of);
    body += "  " + who(rank_of, g.first.host, g.first.pid) + ": " + shown(g.first.message) +
            (g.first.site.empty() ? "" : " [" + g.first.site + "]") + (s.empty() ? "" : " — " + s) +
            "\n";
  }
  if (w.groups.size() > kWarningListed) {
    body += "  ... and " + std::to_string(w.groups.size() - kWarningListed) +
            " more distinct (JSON nccl_warnings)\n";
  }
  if (w.ungrouped > 0) {
    body += "  ... and " + std::to_string(w.ungrouped) + " line(s) of more than " +
            std::to_string(NcclWarnings::kMaxGroups) + " distinct kinds, counted only\n";
  }
  return body;
}

}  // namespace

void add_nccl_warnings(const NcclWarnings& warnings, const model::JobTrace& job,
                       model::Report& report) {
  if (warnings.lines == 0) return;
  const RankLookup rank_of(job);
  std::vector<model::Finding> findings;
  for (std::size_t i = 0; i < warnings.groups.size() && i < kWarningFindings; ++i) {
    findings.push_back(
        {model::Severity::kWarning, "nccl", finding_text(warnings.groups[i], rank_of)});
  }
  const std::size_t more = warnings.groups.size() - findings.size();
  if (more > 0 || warnings.ungrouped > 0) {
    findings.push_back({model::Severity::kWarning, "nccl",
                        "and " + std::to_string(more) + (warnings.ungrouped > 0 ? "+" : "") +
                            " more distinct NCCL WARN line(s) (" + std::to_string(warnings.lines) +
                            " lines in all): section 'NCCL warnings', JSON nccl_warnings"});
  }
  report.findings.insert(report.findings.begin(), findings.begin(), findings.end());
  report.sections.push_back({"NCCL warnings", section_body(warnings, rank_of)});
  nlohmann::json groups = nlohmann::json::array();
  for (const WarnGroup& g : warnings.groups) groups.push_back(group_json(g, rank_of));
  report.json["nccl_warnings"] = {{"lines", warnings.lines},
                                  {"distinct", warnings.groups.size()},
                                  {"ungrouped_lines", warnings.ungrouped},
                                  {"groups", std::move(groups)}};
}

std::vector<std::string> captured_warning_lines(const std::string& dir,
                                                std::chrono::system_clock::time_point since) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    struct stat st {};
    // lstat: a planted link is not followed; a log older than the job is another run's.
    if (name.rfind("nccl-debug.", 0) != 0 || ::lstat(it->path().c_str(), &st) != 0 ||
        !S_ISREG(st.st_mode))
      continue;
    const auto changed = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(st.st_mtim.tv_sec) +
            std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
    if (changed + std::chrono::seconds(1) >= since) files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  LogParser parser;
  for (const std::string& f : files) parser.add_file(f);
  const LogSet set = parser.take();
  const NcclWarnings& w = set.warnings;
  std::vector<std::string> out;
  if (w.lines == 0) return out;
  out.push_back("NCCL wrote " + std::to_string(w.lines) + " WARN line(s), " +
                std::to_string(w.groups.size()) + " distinct, to its debug logs in " + dir +
                " (nccl-debug.*):");
  for (std::size_t i = 0; i < w.groups.size() && i < kWarningsEchoed; ++i) {
    const WarnGroup& g = w.groups[i];
    const std::size_t start = std::min(g.first.line.find_first_not_of(' '), g.first.line.size());
    std::string line = "  " + g.first.line.substr(start);
    if (g.count > 1) {
      line += " (" + std::to_string(g.count) + " such lines from " +
              std::to_string(g.processes.size()) + (g.more_processes ? "+" : "") +
              (g.processes.size() == 1 ? " process)" : " processes)");
    }
    out.push_back(std::move(line));
  }
  if (w.groups.size() > kWarningsEchoed) {
    out.push_back("  ... and " + std::to_string(w.groups.size() - kWarningsEchoed) +
                  " more distinct (the report's section 'NCCL warnings')");
  }
  return out;
}

}  // namespace ncclwatch::topology
