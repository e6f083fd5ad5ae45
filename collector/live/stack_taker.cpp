#include "live/stack_taker.h"

#include <time.h>

#include <algorithm>

#include <fmt/format.h>

#include "live/py_spy.h"
#include "match/func_name.h"
#include "match/rank_list.h"
#include "model/vocabulary.h"
#include "ncclwatch/names.h"
#include "trace/stack_file.h"
#include "trace/trace_dir.h"

namespace ncclwatch::live {
namespace {

std::string ranks_text(const std::vector<int32_t>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + match::format_rank_list(ranks);
}

std::string who(int32_t rank, int64_t pid) {
  return rank >= 0 ? fmt::format("rank {}", rank) : fmt::format("pid {}", pid);
}

std::string now_utc() {
  const time_t now = ::time(nullptr);
  tm t{};
  gmtime_r(&now, &t);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", t.tm_year + 1900, t.tm_mon + 1,
                     t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec);
}

// The directory of a rank's trace as its segment names it, used only when the path is
// `<absolute dir>/ncclwatch.<host>.<pid>.trace` (docs/threat-model.md, the rule salvage follows).
std::string trace_dir_of(const RankStatus& r) {
  const std::string& path = r.trace_path;
  const auto slash = path.rfind('/');
  if (path.empty() || path[0] != '/' || slash == std::string::npos || !trace::is_name_part(r.host))
    return "";
  if (path.substr(slash + 1) != format::trace_file_name(r.host, r.pid, 0)) return "";  // part 0
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Why a live rank of this node is behind on a comm ("" if it is not); `hold` says which call.
std::string behind_on(const JobStatus& st, const RankStatus& r, std::string& hold) {
  for (const CommStatus& c : st.comms) {
    if (std::find(c.behind.begin(), c.behind.end(), r.rank) == c.behind.end()) continue;
    const auto it = r.comms.find(c.id);
    const int64_t entered = it != r.comms.end() ? it->second.entered : -1;
    std::string why = fmt::format(
        "never entered {} #{} on comm {} (entered {})", match::func_name(c.max_func), c.max_entered,
        model::comm_hex(c.id), entered >= 0 ? fmt::format("#{}", entered) : "none");
    if (!c.waiting.empty()) why += fmt::format("; {} waiting in it", ranks_text(c.waiting));
    hold = fmt::format("comm {} #{}", model::comm_hex(c.id), c.max_entered);
    return why;
  }
  return "";
}

}  // namespace

std::vector<StackTarget> stack_targets(const JobStatus& st, std::chrono::nanoseconds host_stall) {
  bool someone_in_init = false;
  for (const CommStatus& c : st.comms) someone_in_init = someone_in_init || !c.in_init.empty();
  std::vector<StackTarget> out;
  for (const RankStatus& r : st.ranks) {
    if (!r.live || r.pid <= 0) continue;
    std::string hold;
    std::string why = r.rank >= 0 ? behind_on(st, r, hold) : "";
    const bool outside_nccl = r.open_calls.empty();
    if (why.empty() && outside_nccl && r.idle_ns >= host_stall.count()) {
      why = fmt::format("no NCCL call for {:.1f} s (stalled on the host)",
                        static_cast<double>(r.idle_ns) / 1e9);
      hold = fmt::format("idle since {}", r.last_return_ns);
    }
    if (why.empty() && outside_nccl && someone_in_init && r.last_func == format::Func::kUnknown) {
      why = "no NCCL call yet while others wait in a comm's init";
      hold = "init";
    }
    if (why.empty()) continue;
    const bool seen = std::any_of(out.begin(), out.end(), [&](const StackTarget& t) {
      return t.pid == r.pid && t.host == r.host;
    });
    if (seen) continue;
    out.push_back({r.rank, r.host, r.pid, why, trace_dir_of(r), hold});
  }
  return out;
}

TakenStack take_stack(const StackTarget& target, const TakeOptions& options) {
  TakenStack t;
  t.target = target;
  const PySpyResult res = run_py_spy(options.py_spy, target.pid, options.timeout);
  if (!res.ok) {
    t.error = res.error;
    return t;
  }
  t.ok = true;
  std::string dump = res.dump;
  // Room for the header within a stack file's size (whole lines only: the reader still reads it).
  if (const std::size_t room = trace::kMaxStackFileBytes - 8192; dump.size() > room)
    dump.resize(dump.rfind('\n', room) == std::string::npos ? 0 : dump.rfind('\n', room) + 1);
  t.where = trace::locate(trace::parse_py_spy_dump(dump));
  const std::string dir = !options.dir.empty() ? options.dir : target.trace_dir;
  if (dir.empty()) {
    t.save_error = "no trace directory known for it (give --dir DIR)";
    return t;
  }
  trace::StackFileHeader h;
  h.job = options.job;
  h.rank = target.rank;
  h.host = target.host;
  h.pid = target.pid;
  h.taken = now_utc();
  h.why = target.why;
  const std::string name = trace::stack_file_name(target.host, target.pid);
  if (trace::write_stack_file(dir, name, trace::render_stack_file(h, dump), &t.save_error))
    t.saved = dir + "/" + name;
  return t;
}

std::string render_taken(const TakenStack& t) {
  const std::string name = who(t.target.rank, t.target.pid);
  if (!t.ok) return fmt::format("{} (pid {}): no Python stack: {}", name, t.target.pid, t.error);
  std::string line =
      t.where.found
          ? fmt::format("{} stuck in {}", name, trace::describe(t.where))
          : fmt::format("{} (pid {}): py-spy found no Python frame (not a Python process?)", name,
                        t.target.pid);
  line += " — " + t.target.why;
  if (!t.saved.empty()) line += "; stack saved to " + t.saved;
  if (!t.save_error.empty()) line += "; stack not saved: " + t.save_error;
  return line;
}

}  // namespace ncclwatch::live
