#include "record/settings.h"

#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ncclwatch::shim {
namespace {

bool is_off(const char* v) {
  return std::strcmp(v, "off") == 0 || std::strcmp(v, "0") == 0 || std::strcmp(v, "false") == 0 ||
         std::strcmp(v, "no") == 0 || std::strcmp(v, "OFF") == 0;
}
bool is_on(const char* v) {
  return std::strcmp(v, "on") == 0 || std::strcmp(v, "1") == 0 || std::strcmp(v, "true") == 0 ||
         std::strcmp(v, "yes") == 0 || std::strcmp(v, "ON") == 0;
}

void warn_bad(bool warn, const char* name, const char* value, const char* fallback) {
  if (!warn) return;
  std::fprintf(stderr, "ncclwatch: bad %s=%s, using %s\n", name, value, fallback);
}

std::string default_job(EnvLookup env) {
  const char* run_id = env("TORCHELASTIC_RUN_ID");
  if (run_id != nullptr && *run_id != '\0' && std::strcmp(run_id, "none") != 0) return run_id;
  for (const char* name :
       {"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid"}) {
    const char* v = env(name);
    if (v != nullptr && *v != '\0') return v;
  }
  return "local-" + std::to_string(static_cast<long>(getppid()));
}

std::string host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown-host";
  return buf;
}

char g_start_dir[PATH_MAX] = {};  // written once at load, before any thread exists

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX] = {};
  if (g_start_dir[0] != '\0') {
    std::memcpy(cwd, g_start_dir, sizeof cwd);
  } else if (getcwd(cwd, sizeof cwd) == nullptr) {
    return path;
  }
  std::string p = path;
  if (p.rfind("./", 0) == 0) p = p.substr(2);
  return std::string(cwd) + "/" + p;
}

}  // namespace

void remember_start_dir() noexcept {
  if (getcwd(g_start_dir, sizeof g_start_dir) == nullptr) g_start_dir[0] = '\0';
}

const char* process_env(const char* name) {
  return std::getenv(name);
}

Settings read_settings(EnvLookup env, bool warn) {
  Settings s;
  if (const char* v = env("NCCLWATCH"); v != nullptr && *v != '\0') {
    if (is_off(v)) {
      s.enabled = false;
    } else if (!is_on(v)) {
      warn_bad(warn, "NCCLWATCH", v, "on");
    }
  }
  const char* job = env("NCCLWATCH_JOB");
  s.job = sanitize_name(job != nullptr && *job != '\0' ? std::string(job) : default_job(env));
  const char* host = env("NCCLWATCH_HOST");
  s.host = sanitize_name(host != nullptr && *host != '\0' ? std::string(host) : host_name());
  const char* dir = env("NCCLWATCH_DIR");
  s.dir = absolute(dir != nullptr && *dir != '\0' ? std::string(dir) : "ncclwatch-" + s.job);
  while (s.dir.size() > 1 && s.dir.back() == '/') s.dir.pop_back();

  if (const char* v = env("NCCLWATCH_RING_MB"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    errno = 0;
    double mb = std::strtod(v, &end);
    // At least 4 KiB (a few dozen records); at most 1 TiB.
    if (errno != 0 || end == v || *end != '\0' || !(mb >= 4.0 / 1024) || mb > 1024.0 * 1024) {
      warn_bad(warn, "NCCLWATCH_RING_MB", v, "16");
    } else {
      s.ring_mb = mb;
    }
  }
  if (const char* v = env("NCCLWATCH_DRAIN_MS"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    errno = 0;
    long ms = std::strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || ms < 1 || ms > 10000) {
      warn_bad(warn, "NCCLWATCH_DRAIN_MS", v, "2");
    } else {
      s.drain_ms = static_cast<int>(ms);
    }
  }
  if (const char* v = env("NCCLWATCH_HANG_S"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    errno = 0;
    long seconds = std::strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || seconds < 0 || seconds > 1'000'000) {
      warn_bad(warn, "NCCLWATCH_HANG_S", v, "0 (off)");
    } else {
      s.hang_s = static_cast<int>(seconds);
    }
  }
  if (const char* v = env("NCCLWATCH_TEST_DRAIN_HOLD"); v != nullptr && *v != '\0') {
    s.test_drain_hold = is_on(v);
  }
  return s;
}

}  // namespace ncclwatch::shim
