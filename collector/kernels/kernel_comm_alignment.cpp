// align_kernel_comms (kernel_calls.h): one numbering of kernel-made calls across ranks.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>

#include "kernels/kernel_calls.h"
#include "model/median.h"
#include "model/saturating.h"

namespace ncclwatch::kernels {
namespace {

using model::CallEvent;
using model::RankTrace;

// Shifts tried: a capture that began or ended a few collectives apart on different ranks, not a
// different program; compared over the first calls only (the shift is the same all along).
constexpr int64_t kMaxShift = 64;
constexpr std::size_t kWindow = 256;

// One rank's calls of one communicator, in seq order.
struct Member {
  std::size_t rank_index;
  std::vector<uint32_t> calls;
  int64_t shift = 0;  // this rank's call k is the reference's call k + shift
};

struct ShiftScore {
  double agree = 0;    // share of compared pairs with the same collective and kernel name
  int64_t spread = 0;  // MAD of the (wall-clock) difference of kernel ends
  int64_t offset = 0;  // |median| of that difference
  std::size_t pairs = 0;
};

ShiftScore score(const model::JobTrace& job, const Member& ref, const Member& m, int64_t d) {
  const RankTrace& a = job.ranks[ref.rank_index];
  const RankTrace& b = job.ranks[m.rank_index];
  ShiftScore s;
  std::vector<int64_t> diffs;
  std::size_t same = 0;
  for (std::size_t k = 0; k < m.calls.size() && k < kWindow; ++k) {
    const int64_t j = static_cast<int64_t>(k) + d;
    if (j < 0 || j >= static_cast<int64_t>(ref.calls.size())) continue;
    const CallEvent& x = a.calls[ref.calls[static_cast<std::size_t>(j)]];
    const CallEvent& y = b.calls[m.calls[k]];
    const auto name = [](const RankTrace& t, const CallEvent& c) -> const std::string& {
      return c.kernel >= 0 ? t.name_of(t.kernels[static_cast<std::size_t>(c.kernel)].name)
                           : t.names[0];
    };
    same += x.func == y.func && name(a, x) == name(b, y);
    diffs.push_back(model::sat_sub(model::sat_add(x.gpu_end_ns, a.info.wall_offset_ns),
                                   model::sat_add(y.gpu_end_ns, b.info.wall_offset_ns)));
  }
  s.pairs = diffs.size();
  if (s.pairs == 0) return s;
  s.agree = static_cast<double>(same) / static_cast<double>(s.pairs);
  const int64_t med = model::median(diffs);
  s.offset = model::sat_abs(med);
  for (int64_t& v : diffs) v = model::sat_abs(model::sat_sub(v, med));
  s.spread = model::median(diffs);
  return s;
}

// The shift of `m` against `ref`: the most names and collectives in agreement; among those, the
// steadiest end-time difference (the same collective ends at nearly the same time on every
// rank, the next one a gap later); among similar ones, the smallest difference (clocks of one
// host agree, of several hosts within NTP's error).
int64_t best_shift(const model::JobTrace& job, const Member& ref, const Member& m) {
  const std::size_t want = std::min({ref.calls.size(), m.calls.size(), kWindow});
  std::vector<std::pair<int64_t, ShiftScore>> scores;
  double best_agree = -1;
  for (int64_t d = -kMaxShift; d <= kMaxShift; ++d) {
    ShiftScore s = score(job, ref, m, d);
    if (s.pairs == 0 || 2 * s.pairs < want) continue;  // too little overlap to judge
    best_agree = std::max(best_agree, s.agree);
    scores.emplace_back(d, s);
  }
  if (scores.empty()) return 0;
  int64_t best_spread = INT64_MAX;
  for (const auto& [d, s] : scores)
    if (s.agree >= best_agree - 1e-9) best_spread = std::min(best_spread, s.spread);
  int64_t best = 0;
  int64_t best_offset = INT64_MAX;
  for (const auto& [d, s] : scores) {
    if (s.agree < best_agree - 1e-9 ||
        s.spread > model::sat_add(model::sat_add(best_spread, best_spread), 1000))
      continue;
    if (s.offset < best_offset || (s.offset == best_offset && std::llabs(d) < std::llabs(best))) {
      best_offset = s.offset;
      best = d;
    }
  }
  return best;
}

std::string comm_name(const model::JobTrace& job, const Member& m, uint64_t id) {
  for (const auto& c : job.ranks[m.rank_index].comms)
    if (c.id == id) return c.name;
  return model::comm_family_name(model::CommFamily::kNone);
}

}  // namespace

void align_kernel_comms(model::JobTrace& job, std::vector<model::InputProblem>& notes) {
  std::map<uint64_t, std::vector<Member>> comms;
  for (std::size_t r = 0; r < job.ranks.size(); ++r) {
    RankTrace& t = job.ranks[r];
    std::set<uint64_t> mine;
    for (const auto& c : t.comms)
      if (c.from_kernels) mine.insert(c.id);
    if (mine.empty()) continue;
    std::map<uint64_t, Member> members;
    for (uint32_t i = 0; i < t.calls.size(); ++i) {
      if (!mine.count(t.calls[i].comm_id)) continue;
      auto [it, fresh] = members.try_emplace(t.calls[i].comm_id, Member{r, {}, 0});
      it->second.calls.push_back(i);
    }
    for (auto& [id, m] : members) {
      std::stable_sort(m.calls.begin(), m.calls.end(),
                       [&t](uint32_t a, uint32_t b) { return t.calls[a].seq < t.calls[b].seq; });
      comms[id].push_back(std::move(m));
    }
  }

  std::vector<std::vector<bool>> drop(job.ranks.size());
  for (std::size_t r = 0; r < job.ranks.size(); ++r)
    drop[r].assign(job.ranks[r].calls.size(), false);

  for (auto& [id, members] : comms) {
    std::size_t ref = 0;
    for (std::size_t i = 1; i < members.size(); ++i)
      if (members[i].calls.size() > members[ref].calls.size()) ref = i;
    std::vector<std::string> moved;
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (i == ref) continue;
      members[i].shift = best_shift(job, members[ref], members[i]);
      if (members[i].shift != 0)
        moved.push_back(fmt::format("rank {} by {:+d}", job.ranks[members[i].rank_index].info.rank,
                                    members[i].shift));
    }
    // Common part: reference numbers [lo, hi] that every member has.
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    for (const Member& m : members) {
      lo = std::max(lo, m.shift);
      hi = std::min(hi, m.shift + static_cast<int64_t>(m.calls.size()) - 1);
    }
    uint64_t cut = 0;
    for (std::size_t i = 0; i < members.size(); ++i) {
      const Member& m = members[i];
      RankTrace& t = job.ranks[m.rank_index];
      for (std::size_t k = 0; k < m.calls.size(); ++k) {
        const int64_t seq = static_cast<int64_t>(k) + m.shift;
        if (lo <= hi && (seq < lo || seq > hi)) {
          drop[m.rank_index][m.calls[k]] = true;
          ++cut;
          continue;
        }
        t.calls[m.calls[k]].seq = static_cast<uint64_t>(lo <= hi ? seq - lo : seq - m.shift);
      }
      for (auto& c : t.comms) {
        if (c.id != id) continue;
        c.nranks = static_cast<int32_t>(members.size());
        c.rank = static_cast<int32_t>(i);
      }
    }
    if (moved.empty() && cut == 0) continue;
    std::string line = comm_name(job, members[ref], id) +
                       ": calls made from kernels, numbered by "
                       "their order on the stream";
    if (!moved.empty()) {
      line +=
          "; shifted to line up with the other ranks (the capture began or ended at another "
          "collective there): ";
      for (std::size_t i = 0; i < moved.size() && i < 8; ++i) line += (i ? ", " : "") + moved[i];
      if (moved.size() > 8) line += fmt::format(" and {} more", moved.size() - 8);
    }
    if (cut > 0)
      line += fmt::format(
          "; {} calls at the ends of the capture that not every rank has left out of "
          "matching (their kernels still count)",
          cut);
    if (lo > hi) line += "; no collective is on every rank";
    notes.push_back({job.ranks[members[ref].rank_index].info.source, line});
  }

  // Drop the calls cut at the edges; kernels keep their time but lose the call.
  for (std::size_t r = 0; r < job.ranks.size(); ++r) {
    RankTrace& t = job.ranks[r];
    if (std::find(drop[r].begin(), drop[r].end(), true) == drop[r].end()) continue;
    std::vector<int32_t> new_index(t.calls.size(), -1);
    std::size_t kept = 0;
    for (std::size_t i = 0; i < t.calls.size(); ++i) {
      if (drop[r][i]) continue;
      new_index[i] = static_cast<int32_t>(kept);
      t.calls[kept++] = t.calls[i];
    }
    t.calls.resize(kept);
    for (auto& k : t.kernels)
      if (k.call >= 0) k.call = new_index[static_cast<std::size_t>(k.call)];
  }
}

}  // namespace ncclwatch::kernels
