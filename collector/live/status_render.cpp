#include "live/status_render.h"

#include <time.h>

#include <fmt/format.h>

#include "match/func_name.h"
#include "match/rank_list.h"
#include "model/vocabulary.h"

namespace ncclwatch::live {
namespace {

using format::Func;
using model::comm_hex;

std::string seconds(int64_t ns) {
  return fmt::format("{:.1f} s", static_cast<double>(ns) / 1e9);
}

std::string seq_text(int64_t seq) {
  return seq < 0 ? "-" : fmt::format("#{}", seq);
}

std::string call_text(const OpenCall& c) {
  std::string s = match::func_name(c.func);
  if (c.has_seq) s += fmt::format(" #{}", c.seq);
  if (c.comm_id != 0) s += " on comm " + comm_hex(c.comm_id);
  return s;
}

std::string state_of(const RankStatus& r) {
  if (r.live) return "live";
  if (r.trace_closed) return "exited";
  if (r.from_segment) return "dead";  // segment left behind, owner gone
  return "?";                         // trace only: another node, or died without a segment here
}

nlohmann::ordered_json losses_json(const model::Losses& losses) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& e : losses.entries()) j[e.key] = e.count;
  return j;
}

std::string ranks_text(const std::vector<int32_t>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + match::format_rank_list(ranks);
}

}  // namespace

std::string render_status_text(const JobStatus& st) {
  std::string out;
  const time_t secs = static_cast<time_t>(st.now_wall_ns / 1'000'000'000);
  tm t{};
  gmtime_r(&secs, &t);
  int live = 0;
  for (const auto& r : st.ranks) live += r.live ? 1 : 0;
  out += fmt::format("job {} at {:02}:{:02}:{:02} UTC: {} rank(s), {} live on this node\n",
                     st.job.empty() ? "?" : st.job, t.tm_hour, t.tm_min, t.tm_sec, st.ranks.size(),
                     live);
  if (st.ranks.empty()) {  // no table without rows
    out += "no segment in /dev/shm and no trace file found (yet)\n";
    for (const auto& n : st.notes) out += "note: " + n + "\n";
    return out;
  }
  out += fmt::format("{:>5}  {:<16} {:>8}  {:<6}  {}\n", "rank", "host", "pid", "state",
                     "inside NCCL now (oldest call, age)");
  for (const auto& r : st.ranks) {
    std::string now;
    if (!r.open_calls.empty()) {
      const auto& c = r.open_calls.front();
      now = fmt::format("{} for {}{}", call_text(c), seconds(c.age_ns),
                        r.live ? "" : " (when last seen)");
      if (r.open_calls.size() > 1) now += fmt::format(" (+{} more)", r.open_calls.size() - 1);
    } else if (r.last_func != Func::kUnknown) {
      now = fmt::format("- (last returned from {}", match::func_name(r.last_func));
      if (r.idle_ns >= 0) now += fmt::format("; no NCCL call for {}", seconds(r.idle_ns));
      now += ")";
    } else {
      now = "-";
    }
    out +=
        fmt::format("{:>5}  {:<16} {:>8}  {:<6}  {}\n", r.rank >= 0 ? std::to_string(r.rank) : "?",
                    r.host.substr(0, 16), r.pid, state_of(r), now);
  }
  // Losses under the table: the progress above may be missing calls the ring could not hold.
  for (const auto& r : st.ranks) {
    std::string lost;
    for (const auto& e : r.losses.entries()) {
      if (e.count > 0)
        lost += fmt::format("{}{} {} {}", lost.empty() ? "" : "; ", e.label, e.count, e.unit);
    }
    if (!lost.empty())
      out += fmt::format("  rank {} lost: {}\n", r.rank >= 0 ? std::to_string(r.rank) : "?", lost);
  }
  for (const auto& c : st.comms) {
    out += fmt::format("\ncomm {} ({} ranks", comm_hex(c.id),
                       c.nranks > 0 ? std::to_string(c.nranks) : "?");
    if (c.unseen > 0) out += fmt::format(", {} not seen here", c.unseen);
    out += fmt::format("): highest entered {} {}\n",
                       c.max_entered >= 0 ? match::func_name(c.max_func) : "collective",
                       seq_text(c.max_entered));
    if (!c.in_init.empty())
      out += fmt::format("  {} inside its init, waiting for the other member(s)\n",
                         ranks_text(c.in_init));
    if (c.max_entered < 0) continue;
    out += fmt::format("  {:>5}  {:>9}  {:>9}  {:>6}\n", "rank", "entered", "returned", "behind");
    for (const auto& m : c.members) {
      out += fmt::format("  {:>5}  {:>9}  {:>9}  {:>6}\n",
                         m.rank >= 0 ? std::to_string(m.rank) : "?", seq_text(m.entered),
                         seq_text(m.returned), m.behind > 0 ? std::to_string(m.behind) : "-");
    }
    if (!c.behind.empty()) {
      out += fmt::format("  => {} never entered {} {}", ranks_text(c.behind),
                         match::func_name(c.max_func), seq_text(c.max_entered));
      if (!c.waiting.empty()) out += fmt::format("; {} waiting in it", ranks_text(c.waiting));
      out += "\n";
    }
  }
  for (const auto& n : st.notes) out += "note: " + n + "\n";
  return out;
}

nlohmann::ordered_json render_status_json(const JobStatus& st) {
  using json = nlohmann::ordered_json;
  json j;
  j["job"] = st.job;
  j["now_us"] = st.now_wall_ns / 1000;
  json ranks = json::array();
  for (const auto& r : st.ranks) {
    json open = json::array();
    for (const auto& c : r.open_calls) {
      open.push_back({{"op", match::func_name(c.func)},
                      {"comm", c.comm_id != 0 ? json(comm_hex(c.comm_id)) : json(nullptr)},
                      {"seq", c.has_seq ? json(c.seq) : json(nullptr)},
                      {"age_s", static_cast<double>(c.age_ns) / 1e9},
                      {"tid", c.tid}});
    }
    ranks.push_back(
        {{"rank", r.rank},
         {"host", r.host},
         {"pid", r.pid},
         {"state", state_of(r)},
         {"in_flight", open},
         {"last_returned_op",
          r.last_func != Func::kUnknown ? json(match::func_name(r.last_func)) : json(nullptr)},
         {"idle_s", r.idle_ns >= 0 ? json(static_cast<double>(r.idle_ns) / 1e9) : json(nullptr)},
         {"losses", losses_json(r.losses)}});
  }
  j["ranks"] = ranks;
  json comms = json::array();
  for (const auto& c : st.comms) {
    json members = json::array();
    for (const auto& m : c.members) {
      members.push_back({{"rank", m.rank},
                         {"entered", m.entered >= 0 ? json(m.entered) : json(nullptr)},
                         {"returned", m.returned >= 0 ? json(m.returned) : json(nullptr)},
                         {"behind", m.behind}});
    }
    comms.push_back(
        {{"comm", comm_hex(c.id)},
         {"nranks", c.nranks},
         {"max_entered", c.max_entered >= 0 ? json(c.max_entered) : json(nullptr)},
         {"op", c.max_entered >= 0 ? json(match::func_name(c.max_func)) : json(nullptr)},
         {"members", members},
         {"behind_ranks", c.behind},
         {"waiting_ranks", c.waiting},
         {"in_init_ranks", c.in_init},
         {"unseen", c.unseen}});
  }
  j["comms"] = comms;
  j["notes"] = st.notes;
  return j;
}

}  // namespace ncclwatch::live
