#include "match/hang_finder.h"

#include <time.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "match/func_name.h"
#include "match/rank_list.h"
#include "model/vocabulary.h"

namespace ncclwatch::match {
namespace {

using format::Func;

// One rank stuck in one call (a call inside a group stuck in ncclGroupEnd counts as that call).
struct Waiter {
  std::size_t rank_index = 0;
  int32_t rank = -1;
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  bool has_seq = false;
  Func func = Func::kUnknown;
  Func via = Func::kUnknown;
  uint64_t bytes = 0;
  uint64_t count = 0;
  int32_t peer = -1;
  uint32_t group_id = 0;
  int64_t enter_ns = 0;
  int64_t seen_ns = 0;
};

// Waiters that wait for the same thing: a collective by (comm, seq), a comm call by (comm, func).
using Key = std::tuple<uint64_t, bool, uint64_t, int>;
Key key_of(const Waiter& w) {
  const bool coll = w.has_seq && format::is_collective(w.func);
  return {w.comm_id, w.has_seq, w.seq, coll ? 0 : static_cast<int>(w.func)};
}

std::vector<Waiter> collect_waiters(const model::JobTrace& job) {
  std::vector<Waiter> out;
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    const auto& r = job.ranks[i];
    for (const auto& h : r.never_returned) {
      Waiter w;
      w.rank_index = i;
      w.rank = r.info.rank;
      w.enter_ns = h.enter_ns;
      w.seen_ns = h.exit_ns;
      w.func = h.func;
      w.comm_id = h.comm_id;
      w.count = h.count;
      w.peer = h.peer;
      w.group_id = h.group_id;
      if (format::is_collective(h.func) || format::is_p2p(h.func)) {
        w.seq = h.seq;
        w.has_seq = true;
        w.bytes = h.bytes();
        out.push_back(w);
      } else if (h.func == Func::kGroupEnd && h.group_id != 0) {
        // The group's calls returned at once (queued); the group end is where they wait.
        bool any = false;
        for (const auto& c : r.calls) {
          if (c.group_id != h.group_id || (c.flags & model::kCallNeverReturned)) continue;
          Waiter g = w;
          g.func = c.func;
          g.via = Func::kGroupEnd;
          g.comm_id = c.comm_id;
          g.seq = c.seq;
          g.has_seq = true;
          g.bytes = c.bytes();
          g.peer = c.peer;
          out.push_back(g);
          any = true;
        }
        if (!any) out.push_back(w);
      } else {
        out.push_back(w);
      }
    }
  }
  return out;
}

const model::CommSummary* comm_summary(const model::MatchResult& match, uint64_t id) {
  for (const auto& c : match.comms)
    if (c.id == id) return &c;
  return nullptr;
}

// Highest collective seq + 1 each rank entered on `comm` (0: none).
uint64_t entered_up_to(const model::RankTrace& r, uint64_t comm) {
  uint64_t top = 0;
  for (const auto& c : r.calls)
    if (c.comm_id == comm && format::is_collective(c.func)) top = std::max(top, c.seq + 1);
  return top;
}

std::string wall_clock(int64_t wall_ns) {
  if (wall_ns <= 0) return "";
  const time_t secs = static_cast<time_t>(wall_ns / 1'000'000'000);
  tm t{};
  gmtime_r(&secs, &t);
  return fmt::format(" since {:02}:{:02}:{:02} UTC", t.tm_hour, t.tm_min, t.tm_sec);
}

std::string seconds(int64_t ns) {
  return fmt::format("{:.1f} s", static_cast<double>(ns) / 1e9);
}

std::string call_name(Func func, uint64_t comm, uint64_t seq, bool has_seq) {
  std::string s = func_name(func);
  if (has_seq) s += fmt::format(" #{}", seq);
  if (comm != 0) s += " on comm " + model::comm_hex(comm);
  return s;
}

std::string describe_missing(const model::MissingRankState& m) {
  std::string s = fmt::format("rank {}: ", m.rank);
  if (!m.has_trace)
    return s + "no trace at all (never called NCCL under ncclwatch, or its trace is elsewhere)";
  if (m.waiting_elsewhere) {
    s += fmt::format("itself waiting in {} (entered, never returned)",
                     call_name(m.func, m.comm_id, m.seq, m.has_seq));
  } else if (m.func == Func::kUnknown) {
    s += "no NCCL call recorded";
  } else {
    s += fmt::format("last call {} returned", call_name(m.func, m.comm_id, m.seq, m.has_seq));
    if (m.idle_ns >= 0)
      s += fmt::format(
          "; no NCCL call for {} after it: host-side — stuck in data loading, a "
          "checkpoint, or dead",
          seconds(m.idle_ns));
  }
  if (m.process_dead) s += " (its process died or was killed: trace salvaged)";
  return s;
}

}  // namespace

std::string format_bytes(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < (1u << 20)) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
  if (bytes < (1u << 30))
    return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024));
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
}

namespace {

using RankIndex = std::unordered_map<int32_t, std::size_t>;  // global rank -> job.ranks index

// The waiters of the call most ranks wait in (ties: the one entered first); empty when none.
std::vector<const Waiter*> most_waited_call(const std::vector<Waiter>& waiters) {
  std::map<Key, std::vector<const Waiter*>> by_key;
  for (const auto& w : waiters) by_key[key_of(w)].push_back(&w);
  const std::vector<const Waiter*>* chosen = nullptr;
  std::size_t best_ranks = 0;
  int64_t best_enter = 0;
  for (const auto& [key, list] : by_key) {
    std::set<int32_t> ranks;
    int64_t first = INT64_MAX;
    for (const auto* w : list) {
      ranks.insert(w->rank);
      first = std::min(first, w->enter_ns);
    }
    if (chosen == nullptr || ranks.size() > best_ranks ||
        (ranks.size() == best_ranks && first < best_enter)) {
      chosen = &list;
      best_ranks = ranks.size();
      best_enter = first;
    }
  }
  return chosen != nullptr ? *chosen : std::vector<const Waiter*>{};
}

// Global ranks expected in the stuck call of `v` (sorted, unique); sets v.comm_size.
std::vector<int32_t> expected_members(model::HangVerdict& v,
                                      const std::vector<const Waiter*>& chosen,
                                      const model::JobTrace& job, const model::MatchResult& match) {
  std::vector<int32_t> members;
  const Waiter& w0 = *chosen.front();
  if (const auto* c = comm_summary(match, v.comm_id); c != nullptr && !c->ranks.empty()) {
    v.comm_size = c->nranks;
    if (format::is_p2p(v.func)) {
      // Send/recv: the peers of the waiting calls are the ones expected.
      for (const auto* w : chosen)
        if (w->peer >= 0 && static_cast<std::size_t>(w->peer) < c->ranks.size())
          members.push_back(c->ranks[static_cast<std::size_t>(w->peer)]);
    } else {
      members = c->ranks;
      // Members with no trace at all are expected too; their global ranks are unknown unless
      // the comm spans the world (then comm rank == global rank is the usual layout).
      if (c->untraced > 0 && c->nranks == job.ranks.front().info.world_size)
        for (int32_t r = 0; r < c->nranks; ++r) members.push_back(r);
    }
  } else if (w0.count > 0 && !w0.has_seq) {
    // An init that never returned: the comm does not exist yet; its size and each waiting
    // rank's place in it come from the entry (count = nranks, peer = rank in the comm).
    v.comm_size = static_cast<int32_t>(w0.count);
    for (int32_t r = 0; r < v.comm_size; ++r) members.push_back(r);
  }
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  return members;
}

// The verdict's `since` is the earliest entry into the stuck call: `enter_ns` on `rank`'s clock.
void take_entry(model::HangVerdict& v, const model::RankTrace& rank, int64_t enter_ns) {
  if (enter_ns >= v.since_ns) return;
  v.since_ns = enter_ns;
  const int64_t off = rank.info.wall_offset_ns;
  v.since_wall_ns = off != 0 ? enter_ns + off : 0;
}

// 1. Entry evidence: the ranks inside the call most of them wait in, and who never entered it.
void hang_from_entry_evidence(model::HangVerdict& v, const std::vector<const Waiter*>& chosen,
                              const model::JobTrace& job, const model::MatchResult& match,
                              const RankIndex& index) {
  const Waiter& w0 = *chosen.front();
  v.hung = true;
  v.comm_id = w0.comm_id;
  v.seq = w0.seq;
  v.has_seq = w0.has_seq;
  v.func = w0.func;
  v.via = w0.via;
  v.bytes = w0.bytes;
  v.since_ns = INT64_MAX;
  std::set<int32_t> waiting;
  for (const auto* w : chosen) {
    waiting.insert(w->rank);
    take_entry(v, job.ranks[w->rank_index], w->enter_ns);
    v.waited_ns = std::max(v.waited_ns, w->seen_ns - w->enter_ns);
  }
  // Ranks that entered the same unfinished instance and came back out of it (NCCL's timeout
  // returned an error, an asynchronous call returned at enqueue) waited there too; a rank whose
  // process was killed while inside is the one with entry evidence. Which of them is which
  // depends on who the launcher killed first, so both count.
  if (v.has_seq && format::is_collective(v.func)) {
    for (const auto& run : match.incomplete) {
      if (run.comm_id != v.comm_id || v.seq < run.seq || v.seq > run.seq_last) continue;
      for (int32_t r : run.present_ranks) {
        auto it = index.find(r);
        if (waiting.contains(r) || it == index.end()) continue;
        waiting.insert(r);
        for (const auto& c : job.ranks[it->second].calls) {
          if (c.comm_id != v.comm_id || c.seq != v.seq || !format::is_collective(c.func)) continue;
          v.waited_ns = std::max(v.waited_ns, c.exit_ns - c.enter_ns);
          take_entry(v, job.ranks[it->second], c.enter_ns);
        }
      }
    }
  }
  v.waiting_ranks.assign(waiting.begin(), waiting.end());
  for (int32_t m : expected_members(v, chosen, job, match)) {
    if (waiting.contains(m)) continue;
    auto it = index.find(m);
    // A member that entered the instance (and got through it, or waits on another thread)
    // is not missing.
    if (it != index.end() && v.has_seq && format::is_collective(v.func) &&
        entered_up_to(job.ranks[it->second], v.comm_id) > v.seq)
      continue;
    v.missing_ranks.push_back(m);
  }
}

// 2. No entry evidence (older traces, or ranks that stopped between calls): the last
// incomplete collective run of a comm says where the ranks stopped.
void hang_from_incomplete_runs(model::HangVerdict& v, const model::JobTrace& job,
                               const model::MatchResult& match, const RankIndex& index) {
  std::unordered_map<uint64_t, uint64_t> complete_top;
  for (const auto& inst : match.instances)
    if (format::is_collective(inst.func))
      complete_top[inst.comm_id] = std::max(complete_top[inst.comm_id], inst.seq + 1);
  const model::IncompleteInstance* last = nullptr;
  for (const auto& run : match.incomplete) {
    if (!format::is_collective(run.func) || run.seq < complete_top[run.comm_id]) continue;
    if (last == nullptr || run.present_ranks.size() > last->present_ranks.size()) last = &run;
  }
  if (last == nullptr) return;
  v.hung = true;
  v.waiting_from_entry_evidence = false;
  v.comm_id = last->comm_id;
  v.seq = last->seq;
  v.has_seq = true;
  v.func = last->func;
  v.waiting_ranks = last->present_ranks;
  v.missing_ranks = last->missing_ranks;
  if (const auto* c = comm_summary(match, v.comm_id)) v.comm_size = c->nranks;
  v.since_ns = INT64_MAX;
  for (int32_t r : v.waiting_ranks) {
    auto it = index.find(r);
    if (it == index.end()) continue;
    for (const auto& c : job.ranks[it->second].calls) {
      if (c.comm_id != v.comm_id || c.seq != v.seq || !format::is_collective(c.func)) continue;
      v.bytes = c.bytes();
      take_entry(v, job.ranks[it->second], c.enter_ns);
    }
  }
  if (v.since_ns == INT64_MAX) v.since_ns = 0;
}

// What a missing rank was last doing.
model::MissingRankState missing_rank_state(int32_t m, const model::JobTrace& job,
                                           const RankIndex& index) {
  model::MissingRankState s;
  s.rank = m;
  auto it = index.find(m);
  if (it == index.end()) return s;
  const auto& r = job.ranks[it->second];
  s.has_trace = true;
  s.process_dead = r.info.salvaged;
  s.wall_offset_ns = r.info.wall_offset_ns;
  if (!r.never_returned.empty()) {
    const auto& h = r.never_returned.front();
    s.waiting_elsewhere = true;
    s.func = h.func;
    s.comm_id = h.comm_id;
    s.seq = h.seq;
    s.has_seq = format::is_collective(h.func) || format::is_p2p(h.func);
    s.call_end_ns = h.enter_ns;
  } else if (r.last_returned.func != Func::kUnknown) {
    const auto& h = r.last_returned;
    s.func = h.func;
    s.comm_id = h.comm_id;
    s.seq = h.seq;
    s.has_seq = format::is_collective(h.func) || format::is_p2p(h.func);
    s.call_end_ns = h.exit_ns;
    if (r.info.alive_until_ns >= h.exit_ns) s.idle_ns = r.info.alive_until_ns - h.exit_ns;
  }
  return s;
}

// CUPTI: waiting ranks whose kernel of the stuck call launched with no activity record.
std::vector<int32_t> kernel_never_finished(const model::HangVerdict& v, const model::JobTrace& job,
                                           const RankIndex& index) {
  std::vector<int32_t> out;
  for (int32_t wr : v.waiting_ranks) {
    auto it = index.find(wr);
    if (it == index.end() || !v.has_seq) continue;
    const auto& r = job.ranks[it->second];
    if (r.dropped) {  // the loader dropped the GPU records and kept this answer
      if (r.dropped->launched_without_kernel_at(v.comm_id, static_cast<uint32_t>(v.seq)))
        out.push_back(wr);
      continue;
    }
    std::unordered_set<uint32_t> launched;
    for (const auto& l : r.links)
      if (l.comm_id == v.comm_id && l.seq == static_cast<uint32_t>(v.seq))
        launched.insert(l.correlation);
    if (launched.empty()) continue;
    for (const auto& k : r.kernels) launched.erase(k.correlation);
    if (!launched.empty()) out.push_back(wr);
  }
  return out;
}

// The verdict's one line.
std::string hang_text(const model::HangVerdict& v) {
  std::string where = call_name(v.func, v.comm_id, v.seq, v.has_seq);
  if (v.bytes > 0) where += fmt::format(" ({})", format_bytes(v.bytes));
  if (v.via == Func::kGroupEnd) where += " inside ncclGroupEnd";
  if (v.comm_size > 0 && !v.has_seq) where += fmt::format(" ({} ranks)", v.comm_size);
  std::string text =
      fmt::format("job hung in {}: {} {}", where, v.waiting_ranks.size() == 1 ? "rank" : "ranks",
                  format_rank_list(v.waiting_ranks));
  if (v.waiting_from_entry_evidence) {
    text += fmt::format(" waiting{}", wall_clock(v.since_wall_ns));
    if (v.waited_ns > 0) text += fmt::format(" ({} when last seen)", seconds(v.waited_ns));
  } else {
    text += " entered it";
  }
  if (!v.kernel_never_finished.empty())
    text += fmt::format("; NCCL kernel launched, never finished on {} {}",
                        v.kernel_never_finished.size() == 1 ? "rank" : "ranks",
                        format_rank_list(v.kernel_never_finished));
  if (v.missing_ranks.empty()) {
    text += "; every expected rank entered it";
  } else {
    text += fmt::format("; {} {} never entered it", v.missing_ranks.size() == 1 ? "rank" : "ranks",
                        format_rank_list(v.missing_ranks));
    for (const auto& m : v.last_call_of_missing) text += " — " + describe_missing(m);
  }
  return text;
}

}  // namespace

model::HangVerdict find_hang(const model::JobTrace& job, const model::MatchResult& match) {
  model::HangVerdict v;
  RankIndex index;
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    index.emplace(job.ranks[i].info.rank, i);
    if (job.ranks[i].info.salvaged) v.dead_ranks.push_back(job.ranks[i].info.rank);
  }
  const std::vector<Waiter> waiters = collect_waiters(job);
  const std::vector<const Waiter*> chosen = most_waited_call(waiters);
  if (!chosen.empty()) {
    hang_from_entry_evidence(v, chosen, job, match, index);
  } else {
    hang_from_incomplete_runs(v, job, match, index);
  }
  if (!v.hung) return v;
  for (int32_t m : v.missing_ranks)
    v.last_call_of_missing.push_back(missing_rank_state(m, job, index));
  v.kernel_never_finished = kernel_never_finished(v, job, index);
  v.text = hang_text(v);
  return v;
}

}  // namespace ncclwatch::match
