#include "nsys/nsys_meta.h"

#include <array>
#include <climits>
#include <cstdlib>
#include <unordered_map>

#include "record/launcher_variables.h"

namespace ncclwatch::nsys {
namespace {

// Variables that name a process's node in its job: torchrun's GROUP_RANK, NODE_RANK, Slurm's.
constexpr std::array kNode = {"GROUP_RANK", "NODE_RANK", "SLURM_NODEID"};

bool wanted(const std::string& name) {
  auto in = [&name](const auto& list) {
    for (const char* n : list)
      if (name == n) return true;
    return false;
  };
  return in(shim::launcher::kRank) || in(shim::launcher::kWorldSize) || in(kNode);
}

// The environment entries the rank numbering needs, from the launched process's recorded
// environment (META_DATA_CAPTURE), else the environment of the nsys CLI itself.
std::unordered_map<std::string, std::string> environment(const SqliteFile& db,
                                                         const ExportSchema& s) {
  std::unordered_map<std::string, std::string> env;
  std::string name, value;
  if (s.capture_meta) {
    Query q = db.query(
        "SELECT value FROM META_DATA_CAPTURE WHERE name LIKE 'PROCESS_%:ENVIRONMENT_VARIABLE' "
        "LIMIT 100000");
    while (q.step()) {
      if (parse_environment_entry(q.text(0), name, value) && wanted(name))
        env.try_emplace(name, value);
    }
  }
  if (env.empty() && s.system_env) {
    Query q = db.query(
        "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'DeviceEnvironment' LIMIT 1");
    if (q.step()) {
      std::string_view all = q.text(0);
      while (!all.empty()) {
        const std::size_t semi = all.find(';');
        if (parse_environment_entry(all.substr(0, semi), name, value) && wanted(name))
          env.try_emplace(name, value);
        if (semi == std::string_view::npos) break;
        all.remove_prefix(semi + 1);
      }
    }
  }
  return env;
}

}  // namespace

bool parse_environment_entry(std::string_view entry, std::string& name, std::string& value) {
  const std::size_t eq = entry.find('=');
  if (eq == 0 || eq == std::string_view::npos || eq > 256) return false;
  name.assign(entry.substr(0, eq));
  std::string_view v = entry.substr(eq + 1);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  value.assign(v.substr(0, 256));
  return true;
}

FileMeta read_meta(const SqliteFile& db, const ExportSchema& s) {
  FileMeta m;
  if (s.system_env) {
    Query q = db.query("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname' LIMIT 1");
    if (q.step()) m.host = std::string(q.text(0).substr(0, 255));
  }
  if (s.session_start) {
    Query q =
        db.query("SELECT utcEpochNs, systemClockNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1");
    if (q.step()) {
      const int64_t utc = q.integer(0), clock = q.integer(1);
      // Both plausible (after 2001, within 2^62 ns): the timestamps' wall clock is then known.
      if (utc > 1'000'000'000'000'000'000 && utc < (int64_t{1} << 62) && clock >= 0 &&
          clock < (int64_t{1} << 62))
        m.wall_offset_ns = utc - clock;
    }
  }
  if (s.gpu_info) {
    Query q = db.query("SELECT id, busLocation FROM TARGET_INFO_GPU LIMIT 4096");
    while (q.step()) {
      const int64_t id = q.integer(0);
      if (id >= 0 && id < 32768 && !q.is_null(1))
        m.bus_ids.emplace(static_cast<int32_t>(id), std::string(q.text(1).substr(0, 64)));
    }
  }
  const auto env = environment(db, s);
  const auto lookup = [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  m.env_rank = shim::launcher::first_int(lookup, shim::launcher::kRank);
  if (m.env_rank >= 0) {
    for (const char* n : shim::launcher::kRank) {
      if (lookup(n) != nullptr && shim::launcher::first_int(lookup, std::array{n}) == m.env_rank) {
        m.env_rank_variable = n;
        break;
      }
    }
  }
  m.env_world_size = shim::launcher::first_int(lookup, shim::launcher::kWorldSize);
  m.env_node = shim::launcher::first_int(lookup, kNode);
  return m;
}

}  // namespace ncclwatch::nsys
