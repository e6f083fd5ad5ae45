// See nccl_log_capture.h. Runs once, at load, off the hot path: plain libc, no exceptions escape.
#include "nccl_log_capture.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "launcher_variables.h"
#include "ncclwatch/names.h"

namespace ncclwatch::shim {
namespace {

// Every variable prepare_nccl_logging may set (and so may find inherited from an ancestor).
const char* const kManaged[] = {"NCCL_DEBUG",
                                "NCCL_DEBUG_FILE",
                                "NCCL_DEBUG_SUBSYS",
                                "NCCL_TOPO_DUMP_FILE",
                                "NCCL_TOPO_DUMP_FILE_RANK",
                                "NCCL_GRAPH_DUMP_FILE",
                                "NCCL_GRAPH_DUMP_FILE_RANK"};

bool is_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0';
}

bool is_managed(const std::string& name) {
  for (const char* m : kManaged)
    if (name == m) return true;
  return false;
}

// Removes the values an ancestor's shim set and the user left unchanged, and the marker itself.
void drop_inherited(const char* marker) {
  if (marker == nullptr) return;
  std::string list = marker;  // copied: the caller's pointer may be into the environment
  std::size_t start = 0;
  while (start < list.size()) {
    std::size_t end = list.find('\n', start);
    if (end == std::string::npos) end = list.size();
    std::string line = list.substr(start, end - start);
    start = end + 1;
    std::size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string name = line.substr(0, eq);
    if (!is_managed(name)) continue;  // never remove anything else a marker names
    const char* now = std::getenv(name.c_str());
    if (now != nullptr && line.compare(eq + 1, std::string::npos, now) == 0)
      ::unsetenv(name.c_str());
  }
  ::unsetenv(kNcclEnvMarker);
}

// The variables set here, remembered for the marker.
class Setter {
 public:
  // setenv unless the variable is set (non-empty); skips a value truncated by snprintf.
  void set_default(const char* name, const char* value, int printed, std::size_t size) {
    if (printed <= 0 || static_cast<std::size_t>(printed) >= size) return;
    if (is_set(name)) return;
    if (::setenv(name, value, 1) != 0) return;
    list_ += name;
    list_ += '=';
    list_ += value;
    list_ += '\n';
  }
  void set_default(const char* name, const char* value) {
    set_default(name, value, static_cast<int>(std::strlen(value)), std::strlen(value) + 1);
  }
  void write_marker() {
    if (!list_.empty()) ::setenv(kNcclEnvMarker, list_.c_str(), 1);
  }

 private:
  std::string list_;
};

// "<host>.<pid>", as in the trace's name (ncclwatch.<host>.<pid>.trace): NCCL opens the dump
// paths as given (it expands %h and %p in NCCL_DEBUG_FILE only), so without the pid the
// processes of containers that share a host name overwrite each other's dumps in a shared dir.
std::string dump_name_part(const char* host) {
  std::string name = host != nullptr ? host : "";
  if (name.empty()) {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) == 0) name = buf;
  }
  // A '/' would leave the directory, anything else odd makes a name hard to handle.
  return format::sanitize_name(name) + "." + std::to_string(static_cast<long>(::getpid()));
}

void set_variables(const char* trace_dir, const char* host) {
  char buf[4096];
  Setter set;

  // The INFO log. NCCL_DEBUG=INFO without a file would print into the user's output, so the
  // two are set together or not at all.
  if (!is_set("NCCL_DEBUG") && !is_set("NCCL_DEBUG_FILE")) {
    int n = std::snprintf(buf, sizeof buf, "%s/nccl-debug.%%h.%%p.log", trace_dir);
    if (n > 0 && static_cast<std::size_t>(n) < sizeof buf) {
      set.set_default("NCCL_DEBUG_FILE", buf, n, sizeof buf);
      set.set_default("NCCL_DEBUG", "INFO");
      // INIT: comm lines and transports; GRAPH: rings, trees, patterns; NET: NICs in use.
      set.set_default("NCCL_DEBUG_SUBSYS", "INIT,GRAPH,ENV,NET");
    }
  }

  // The XML dumps: one process per node writes them (NCCL writes them for one comm rank).
  const auto getenv = [](const char* name) -> const char* { return std::getenv(name); };
  const int local_rank = launcher::first_int(getenv, launcher::kLocalRank);
  if (local_rank <= 0) {
    const std::string name = dump_name_part(host);
    const int rank = launcher::first_int(getenv, launcher::kRank);
    char rank_text[32];
    std::snprintf(rank_text, sizeof rank_text, "%d", rank);

    if (!is_set("NCCL_TOPO_DUMP_FILE")) {
      int n = std::snprintf(buf, sizeof buf, "%s/nccl-topo.%s.xml", trace_dir, name.c_str());
      set.set_default("NCCL_TOPO_DUMP_FILE", buf, n, sizeof buf);
      if (rank >= 0 && is_set("NCCL_TOPO_DUMP_FILE"))
        set.set_default("NCCL_TOPO_DUMP_FILE_RANK", rank_text);
    }
    if (!is_set("NCCL_GRAPH_DUMP_FILE")) {
      int n = std::snprintf(buf, sizeof buf, "%s/nccl-graph.%s.xml", trace_dir, name.c_str());
      set.set_default("NCCL_GRAPH_DUMP_FILE", buf, n, sizeof buf);
      if (rank >= 0 && is_set("NCCL_GRAPH_DUMP_FILE"))
        set.set_default("NCCL_GRAPH_DUMP_FILE_RANK", rank_text);
    }
  }
  set.write_marker();
}

}  // namespace

void prepare_nccl_logging(const char* trace_dir, const char* host,
                          const char* inherited_marker) noexcept {
  try {
    drop_inherited(inherited_marker);
    // A newline would make the marker ambiguous; such a directory gets no NCCL logs.
    if (trace_dir == nullptr || trace_dir[0] == '\0' || std::strchr(trace_dir, '\n') != nullptr)
      return;
    set_variables(trace_dir, host);
  } catch (...) {
    // Out of memory at load: leave NCCL's logging as the user has it.
  }
}

}  // namespace ncclwatch::shim
