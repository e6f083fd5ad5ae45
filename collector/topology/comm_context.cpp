// Joins NCCL's per-rank log views to the job: the shim records each comm's ncclComm_t value
// (CommInfo::handle), which is the "comm 0x..." NCCL prints, so (host, pid, handle) names the
// same communicator on both sides.
#include <algorithm>
#include <cstdio>
#include <set>

#include "model/vocabulary.h"
#include "topology/checks.h"

namespace ncclwatch::topology {

std::string rank_list(const std::vector<int>& ranks) {
  std::vector<int> r = ranks;
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  std::string out;
  for (std::size_t i = 0; i < r.size();) {
    std::size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(r[i]);
    if (j > i) out += (j == i + 1 ? "," : "-") + std::to_string(r[j]);
    i = j + 1;
  }
  return out;
}

namespace {

uint64_t parse_hex(const std::string& s) {
  if (s.size() < 3 || s.size() > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return 0;
  uint64_t v = 0;
  for (std::size_t i = 2; i < s.size(); ++i) {
    char c = s[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return 0;
    v = v * 16 + static_cast<uint64_t>(d);
  }
  return v;
}

}  // namespace

// Host names are not trustworthy for comms whose host count disagrees with NCCL's
bool hosts_trusted(const CommContext& c) {
  if (c.nnodes <= 0) return true;
  std::set<std::string> hosts;
  for (const auto& [r, h] : c.host_of) hosts.insert(h);
  int n = static_cast<int>(hosts.size());
  if (n > c.nnodes) return false;
  if (n < c.nnodes && static_cast<int>(c.host_of.size()) >= c.nranks) return false;
  return true;
}

std::vector<CommContext> build_contexts(const LogSet& logs, const std::vector<CommGroup>& groups,
                                        const model::JobTrace& job,
                                        const model::MatchResult& match) {
  std::vector<CommContext> out;
  // global rank -> host, from the job
  std::map<int, std::string> host_of_global;
  for (const auto& rt : job.ranks)
    if (rt.info.rank >= 0 && !rt.info.host.empty()) host_of_global[rt.info.rank] = rt.info.host;

  std::set<uint64_t> joined;
  for (const auto& g : groups) {
    CommContext c;
    c.group = &g;
    c.name = g.key;
    c.nranks = g.nranks;
    for (std::size_t m : g.members) {
      const RankView& r = logs.ranks[m];
      if (!r.host.empty()) c.host_of.emplace(r.rank, r.host);
      c.nnodes = std::max(c.nnodes, r.nnodes);
      if (c.job_comm != 0) continue;
      uint64_t ptr = parse_hex(r.comm_ptr);
      for (const auto& rt : job.ranks) {
        if (ptr == 0 || rt.info.host != r.host || rt.info.pid != r.pid) continue;
        for (const auto& ci : rt.comms)
          if (ci.handle == ptr && ci.id != 0) c.job_comm = ci.id;
      }
    }
    if (c.job_comm != 0) {
      joined.insert(c.job_comm);
      for (const auto& cs : match.comms) {
        if (cs.id != c.job_comm) continue;
        for (std::size_t i = 0; i < cs.ranks.size(); ++i) {
          auto h = host_of_global.find(cs.ranks[i]);
          if (h == host_of_global.end()) continue;
          c.job_host_of[static_cast<int>(i)] = h->second;
          c.host_of.emplace(static_cast<int>(i), h->second);
        }
      }
    }
    out.push_back(std::move(c));
  }
  // Job comms NCCL logged nothing about still get the bandwidth check.
  for (const auto& cs : match.comms) {
    if (joined.count(cs.id) != 0) continue;
    CommContext c;
    c.name = model::comm_hex(cs.id);
    c.nranks = cs.nranks;
    c.job_comm = cs.id;
    for (std::size_t i = 0; i < cs.ranks.size(); ++i) {
      auto h = host_of_global.find(cs.ranks[i]);
      if (h == host_of_global.end()) continue;
      c.job_host_of[static_cast<int>(i)] = h->second;
      c.host_of[static_cast<int>(i)] = h->second;
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace ncclwatch::topology
