// See nccl_log_capture.h. Runs once, off the hot path: plain libc, no exceptions escape.
#include "nccl_log_capture.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ncclwatch::shim {
namespace {

bool is_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0';
}

// First of the launchers' variables that is set to a non-negative integer, or -1.
long first_int_env(const char* const* names) {
  for (const char* const* n = names; *n != nullptr; ++n) {
    const char* v = std::getenv(*n);
    if (v == nullptr || v[0] == '\0') continue;
    char* end = nullptr;
    long x = std::strtol(v, &end, 10);
    if (end != v && *end == '\0' && x >= 0) return x;
  }
  return -1;
}

// setenv only when the variable is unset (or empty) and the value fit its buffer.
void set_default(const char* name, const char* value, int printed, std::size_t size) {
  if (printed <= 0 || static_cast<std::size_t>(printed) >= size) return;  // truncated: skip
  if (is_set(name)) return;
  ::setenv(name, value, 1);
}

}  // namespace

void prepare_nccl_logging(const char* trace_dir) noexcept {
  if (trace_dir == nullptr || trace_dir[0] == '\0') return;
  char buf[4096];

  // The INFO log. NCCL_DEBUG=INFO without a file would print into the user's output, so the
  // two are set together or not at all.
  if (!is_set("NCCL_DEBUG") && !is_set("NCCL_DEBUG_FILE")) {
    int n = std::snprintf(buf, sizeof buf, "%s/nccl-debug.%%h.%%p.log", trace_dir);
    if (n > 0 && static_cast<std::size_t>(n) < sizeof buf) {
      ::setenv("NCCL_DEBUG_FILE", buf, 1);
      ::setenv("NCCL_DEBUG", "INFO", 1);
      // INIT: comm lines and transports; GRAPH: rings, trees, patterns; NET: NICs in use.
      if (!is_set("NCCL_DEBUG_SUBSYS")) ::setenv("NCCL_DEBUG_SUBSYS", "INIT,GRAPH,ENV,NET", 1);
    }
  }

  // The XML dumps: one process per node writes them (NCCL writes them for one comm rank).
  static const char* const kLocalRank[] = {
      "LOCAL_RANK",      "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
      "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",  nullptr};
  static const char* const kRank[] = {
      "RANK",      "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK",
      "PMIX_RANK", "MV2_COMM_WORLD_RANK",  nullptr};
  long local_rank = first_int_env(kLocalRank);
  if (local_rank > 0) return;
  char host[256] = "unknown";
  if (::gethostname(host, sizeof host) != 0) std::strcpy(host, "unknown");
  host[sizeof host - 1] = '\0';
  // A host name with '/' would escape the directory; keep the file name plain.
  for (char* c = host; *c != '\0'; ++c)
    if (*c == '/') *c = '_';
  long rank = first_int_env(kRank);
  char rank_text[32];
  std::snprintf(rank_text, sizeof rank_text, "%ld", rank);

  if (!is_set("NCCL_TOPO_DUMP_FILE")) {
    int n = std::snprintf(buf, sizeof buf, "%s/nccl-topo.%s.xml", trace_dir, host);
    set_default("NCCL_TOPO_DUMP_FILE", buf, n, sizeof buf);
    if (rank >= 0 && is_set("NCCL_TOPO_DUMP_FILE"))
      ::setenv("NCCL_TOPO_DUMP_FILE_RANK", rank_text, 0);
  }
  if (!is_set("NCCL_GRAPH_DUMP_FILE")) {
    int n = std::snprintf(buf, sizeof buf, "%s/nccl-graph.%s.xml", trace_dir, host);
    set_default("NCCL_GRAPH_DUMP_FILE", buf, n, sizeof buf);
    if (rank >= 0 && is_set("NCCL_GRAPH_DUMP_FILE"))
      ::setenv("NCCL_GRAPH_DUMP_FILE_RANK", rank_text, 0);
  }
}

}  // namespace ncclwatch::shim
